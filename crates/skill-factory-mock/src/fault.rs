//! How a chosen [`Fault`] turns an answer into a failure, the same way on the chat routes and
//! the System One route: HTTP faults answer in place of the handler, transport faults spoil
//! the delivery of the answer the handler made.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use axum::response::{IntoResponse, Response};
use tokio::sync::watch;

use crate::config::Fault;
use crate::wire::ErrorKind;

/// How many requests each fault was injected into, for `GET /stats`.
#[derive(Default)]
pub(crate) struct FaultCounts([AtomicU64; 8]);

impl FaultCounts {
    /// Counts one injection of `fault`.
    pub(crate) fn record(&self, fault: Option<Fault>) {
        if let Some(fault) = fault {
            let slot = Fault::ALL.iter().position(|f| *f == fault).unwrap_or(0);
            self.0[slot].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `{"rate_limit": n, ...}`, every fault named.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let counts = Fault::ALL
            .iter()
            .zip(&self.0)
            .map(|(fault, count)| {
                (
                    fault.name().to_string(),
                    count.load(Ordering::Relaxed).into(),
                )
            })
            .collect();
        serde_json::Value::Object(counts)
    }
}

/// An error answer in the route's own body shape.
pub(crate) type ErrorAnswer<'a> = &'a (dyn Fn(StatusCode, ErrorKind, &str) -> Response + Sync);

/// The answer an HTTP fault gives instead of the route's (a hang waits for the server to
/// stop first); `None` for no fault and for transport faults, which [`deliver`] applies.
pub(crate) async fn refusal(
    fault: Option<Fault>,
    retry_after_secs: u64,
    stopping: &watch::Receiver<bool>,
    error: ErrorAnswer<'_>,
) -> Option<Response> {
    let fault = fault?;
    Some(match fault {
        Fault::RateLimit | Fault::RateLimitBare => {
            let mut response = error(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorKind::RateLimit,
                "Rate limit reached (mock)",
            );
            if fault == Fault::RateLimit {
                response
                    .headers_mut()
                    .insert(RETRY_AFTER, retry_after_secs.into());
            }
            response
        }
        Fault::ServerError => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::Server,
            "Internal server error (mock)",
        ),
        Fault::Hang => {
            let _ = stopping.clone().wait_for(|stopped| *stopped).await;
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorKind::Server,
                "mock server stopping",
            )
        }
        Fault::Malformed => (
            StatusCode::OK,
            [(CONTENT_TYPE, JSON)],
            "{\"id\": \"truncated",
        )
            .into_response(),
        Fault::Reset | Fault::CutBody | Fault::Slowloris => return None,
    })
}

/// The content type of a JSON answer.
pub(crate) const JSON: &str = "application/json";
/// The content type of a streamed answer (server-sent events).
pub(crate) const EVENT_STREAM: &str = "text/event-stream";

/// `body` (of `content_type`) as a 200 answer, spoiled by a transport fault: none of it
/// (`Reset`), half of it after a `Content-Length` promising all (`CutBody`), or a byte a
/// second until the server stops (`Slowloris`). A body stream's error makes the server drop
/// the connection.
pub(crate) fn deliver(
    fault: Option<Fault>,
    body: String,
    content_type: &'static str,
    stopping: &watch::Receiver<bool>,
) -> Response {
    type Chunk = Result<Bytes, std::io::Error>;
    let cut = || std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut (mock)");
    let body = body.into_bytes();
    let length = body.len();
    let stream: futures_util::stream::BoxStream<'static, Chunk> = match fault {
        Some(Fault::Reset) => Box::pin(futures_util::stream::iter([Err(cut())])),
        Some(Fault::CutBody) => {
            let half = Bytes::from(body[..length / 2].to_vec());
            Box::pin(futures_util::stream::iter([Ok(half), Err(cut())]))
        }
        Some(Fault::Slowloris) => Box::pin(futures_util::stream::unfold(
            (body, 0usize, stopping.clone()),
            move |(body, sent, mut stopping)| async move {
                let byte = *body.get(sent)?;
                let stopped = tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => false,
                    _ = stopping.wait_for(|stopped| *stopped) => true,
                };
                if stopped {
                    return Some((Err(cut()), (body, usize::MAX, stopping)));
                }
                Some((Ok(Bytes::from(vec![byte])), (body, sent + 1, stopping)))
            },
        )),
        _ => {
            return (StatusCode::OK, [(CONTENT_TYPE, content_type)], body).into_response();
        }
    };
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        axum::http::HeaderValue::from_static(content_type),
    );
    headers.insert(CONTENT_LENGTH, length.into());
    response
}
