//! The HTTP server: routes, fault injection, recording of what was received, and start/stop.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::LOCATION;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::MockError;
use crate::batch::{self, Batches};
use crate::config::{Fault, MockConfig};
use crate::fault::{EVENT_STREAM, FaultCounts, JSON, deliver, refusal};
use crate::responder::respond;
use crate::routing::routed_reply;
use crate::stream::{event_stream, events};
use crate::wire::{
    Conversation, ErrorKind, Format, Reply, RequestError, error_body, parse_request, reply_body,
};

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedRequest {
    /// The path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The query string, if any (without `?`).
    pub query: Option<String>,
    /// Every header, names lower-cased (values that are not text are left out).
    pub headers: BTreeMap<String, String>,
    /// The JSON body (`Null` when it was not JSON).
    pub body: Value,
}

impl ReceivedRequest {
    /// A header's value by lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// What every route of one server shares.
pub(crate) struct Shared {
    pub(crate) config: MockConfig,
    /// Chat answers given (a batch's included), numbering each answer's id.
    pub(crate) count: AtomicU64,
    pub(crate) batches: Mutex<Batches>,
    faults: FaultCounts,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    received: Mutex<Vec<ReceivedRequest>>,
    stopping: watch::Receiver<bool>,
}

impl Shared {
    fn received(&self) -> std::sync::MutexGuard<'_, Vec<ReceivedRequest>> {
        self.received
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Counts a request as in flight for as long as it lives.
struct InFlight(Arc<Shared>);

impl InFlight {
    fn enter(shared: &Arc<Shared>) -> Self {
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(Arc::clone(shared))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A running mock server on 127.0.0.1; dropping it stops it.
pub struct MockServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Binds 127.0.0.1 (on `config.port`, or a free port for 0) and starts serving.
    pub async fn start(config: MockConfig) -> Result<MockServer, MockError> {
        config.faults.validate()?;
        config.batches.validate()?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.port))
            .await
            .map_err(|source| MockError::Bind {
                port: config.port,
                source,
            })?;
        let address = listener.local_addr().map_err(|source| MockError::Bind {
            port: config.port,
            source,
        })?;
        let (stop, stopping) = watch::channel(false);
        let shared = Arc::new(Shared {
            config,
            count: AtomicU64::new(0),
            batches: Mutex::new(Batches::default()),
            faults: FaultCounts::default(),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            received: Mutex::new(Vec::new()),
            stopping: stopping.clone(),
        });
        let router = Router::new()
            .route("/v1/chat/completions", chat(Format::OpenAi))
            .route("/chat/completions", chat(Format::OpenAi))
            .route(
                "/openai/deployments/{deployment}/chat/completions",
                chat(Format::OpenAi),
            )
            .route("/v1/messages", chat(Format::Anthropic))
            .route("/v1/responses", chat(Format::Responses))
            .route("/responses", chat(Format::Responses))
            .merge(batch::routes(Arc::clone(&shared)))
            .route(
                "/health",
                get(|| async { axum::Json(json!({"status": "ok"})) }),
            )
            .route("/stats", get(stats))
            .route("/stats/reset", post(reset_stats))
            .fallback(|uri: Uri| async move {
                (
                    StatusCode::NOT_FOUND,
                    axum::Json(json!({"error": {"message": format!("no route {}", uri.path())}})),
                )
            })
            .with_state(Arc::clone(&shared));
        let mut until_stopped = stopping;
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = until_stopped.wait_for(|stopped| *stopped).await;
            };
            if let Err(error) = axum::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .await
            {
                eprintln!("mock server stopped: {error}");
            }
        });
        Ok(MockServer {
            address,
            shared,
            stop,
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:<port>`: append `/v1` for OpenAI-style clients.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// Chat requests received so far (health checks not counted).
    pub fn request_count(&self) -> usize {
        self.shared.received().len()
    }

    /// Every chat request received so far, oldest first.
    pub fn received(&self) -> Vec<ReceivedRequest> {
        self.shared.received().clone()
    }

    /// Batches created so far (both wire formats) and the requests in them.
    pub fn batch_counts(&self) -> (u64, u64) {
        crate::batch::counts(&self.shared.batches)
    }

    /// The most chat requests in flight at once since the start (or the last
    /// `POST /stats/reset`).
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }

    /// Stops serving: hanging requests are released, open connections closed.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }

    /// Serves until the server task ends (it ends only through [`MockServer::stop`] or an
    /// accept error); for the binary, which is killed rather than stopped.
    pub async fn serve_forever(mut self) {
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// `GET /stats`: chat requests received since the start, in flight now, and the most in
/// flight at once since the start or the last reset. Benchmark scripts read it to show how
/// many requests a client really had in flight, and how many requests each fault spoiled.
async fn stats(State(shared): State<Arc<Shared>>) -> axum::Json<Value> {
    axum::Json(json!({
        "requests": shared.count.load(Ordering::SeqCst),
        "faults": shared.faults.to_json(),
        "batches": crate::batch::lock_stats(&shared.batches),
        "in_flight": shared.in_flight.load(Ordering::SeqCst),
        "max_in_flight": shared.max_in_flight.load(Ordering::SeqCst),
    }))
}

/// `POST /stats/reset`: starts a new peak, so that one server can measure several runs.
async fn reset_stats(State(shared): State<Arc<Shared>>) -> axum::Json<Value> {
    shared
        .max_in_flight
        .store(shared.in_flight.load(Ordering::SeqCst), Ordering::SeqCst);
    stats(State(shared)).await
}

/// The chat route of one wire format: every request goes to [`handle`] with that format.
fn chat(format: Format) -> MethodRouter<Arc<Shared>> {
    post(
        move |State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes| {
            handle(format, shared, uri, headers, body)
        },
    )
}

fn error(format: Format, status: StatusCode, kind: ErrorKind, message: &str) -> Response {
    (status, axum::Json(error_body(format, kind, message))).into_response()
}

/// The 401 for a request without the key the server requires, if it lacks it.
pub(crate) fn refuse_key(
    format: Format,
    config: &MockConfig,
    headers: &HeaderMap,
) -> Option<Response> {
    let expected = config.require_api_key.as_ref()?;
    let presented = presented_key(headers).unwrap_or_default();
    if &presented == expected {
        return None;
    }
    // The presented key is echoed on purpose: clients must redact it themselves.
    let message = format!("Incorrect API key provided: {presented}");
    Some(error(
        format,
        StatusCode::UNAUTHORIZED,
        ErrorKind::Authentication,
        &message,
    ))
}

/// The key a client presented, in whichever header its format uses.
fn presented_key(headers: &HeaderMap) -> Option<String> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    text("authorization")
        .map(|v| v.strip_prefix("Bearer ").unwrap_or(&v).to_string())
        .or_else(|| text("x-api-key"))
        .or_else(|| text("api-key"))
}

async fn handle(
    format: Format,
    shared: Arc<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let _in_flight = InFlight::enter(&shared);
    let number = shared.count.fetch_add(1, Ordering::SeqCst);
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.received().push(ReceivedRequest {
        path: uri.path().to_string(),
        query: uri.query().map(str::to_string),
        headers: headers
            .iter()
            .filter_map(|(name, value)| {
                Some((name.as_str().to_string(), value.to_str().ok()?.to_string()))
            })
            .collect(),
        body: json.clone(),
    });
    let config = &shared.config;
    let fault = usize::try_from(number)
        .ok()
        .and_then(|n| config.fault_sequence.get(n).copied())
        .or_else(|| config.faults.choose(number));
    shared.faults.record(fault);
    if fault != Some(Fault::Hang) && !config.latency.is_zero() {
        tokio::time::sleep(config.latency).await;
    }
    if let Some(refused) = refuse_key(format, config, &headers) {
        return refused;
    }
    if let Some(target) = &config.redirect_to {
        let location = format!("{}{}", target.trim_end_matches('/'), uri.path());
        return (
            StatusCode::TEMPORARY_REDIRECT,
            [(LOCATION, location)],
            "redirected (mock)",
        )
            .into_response();
    }
    let refuse = |status, kind, message: &str| error(format, status, kind, message);
    if let Some(answer) = refusal(
        fault,
        config.faults.retry_after_secs,
        &shared.stopping,
        &refuse,
    )
    .await
    {
        return answer;
    }
    match reply(format, &json, config) {
        Ok((conversation, reply)) => {
            let streamed = events(format, number, &conversation, &reply)
                .filter(|_| conversation.stream)
                .map(|events| event_stream(&events));
            match streamed {
                Some(body) => deliver(fault, body, EVENT_STREAM, &shared.stopping),
                None => {
                    let body = reply_body(format, number, &conversation, &reply);
                    deliver(fault, body.to_string(), JSON, &shared.stopping)
                }
            }
        }
        Err(problem) => error(
            format,
            StatusCode::BAD_REQUEST,
            ErrorKind::InvalidRequest,
            &problem.to_string(),
        ),
    }
}

/// The answer body of the format to the request `json` (request number `number`), or why the
/// request is invalid; the same for a direct call and a request of a batch (never streamed).
pub(crate) fn answer(
    format: Format,
    number: u64,
    json: &Value,
    config: &MockConfig,
) -> Result<Value, RequestError> {
    let (conversation, reply) = reply(format, json, config)?;
    Ok(reply_body(format, number, &conversation, &reply))
}

/// The request `json` read, and the mock's reply to it: the router's to a request carrying a
/// skill listing, else the responder's text, cut at the request's max_tokens.
fn reply(
    format: Format,
    json: &Value,
    config: &MockConfig,
) -> Result<(Conversation, Reply), RequestError> {
    if json.is_null() {
        return Err(RequestError::NotJson);
    }
    let conversation = parse_request(format, json)?;
    let reply = routed_reply(format, &conversation, config.variation.flips).unwrap_or_else(|| {
        Reply::text(respond(
            &conversation,
            &config.answers,
            &config.answering,
            &config.variation,
        ))
    });
    let reply = reply.cut_to(conversation.max_tokens);
    Ok((conversation, reply))
}
