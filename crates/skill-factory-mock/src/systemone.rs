//! A loopback System One host at `/v1/systemone`, for tests of the decision-model client and
//! of everything built on it (the `systemone` metric, classifier mode).
//!
//! It answers every question of a request with P(true) from a responder function, as
//! `{"type": "choice", "probabilities": {"true": p, "false": 1 - p}}`, reports the model
//! `fake-jev-1.0` and `len(state) / 4` input tokens, records each request's body and
//! `Authorization` header, and can fail the next requests with given status codes (their body
//! echoes the presented `Authorization` header, as careless hosts do, so that tests can check
//! that clients redact keys).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::MockError;

/// The version the stub reports serving.
pub const STUB_MODEL: &str = "fake-jev-1.0";

/// Gives P(true) for (state, question id, question as sent).
pub type StubResponder = Arc<dyn Fn(&str, &str, &Value) -> f64 + Send + Sync>;

/// One request the stub received.
#[derive(Debug, Clone, PartialEq)]
pub struct StubRequest {
    /// The JSON body (`Null` when it was not JSON).
    pub body: Value,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
}

struct Shared {
    responder: StubResponder,
    failures: Mutex<Vec<u16>>,
    received: Mutex<Vec<StubRequest>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running System One stub on 127.0.0.1; dropping it stops it.
pub struct SystemOneStub {
    address: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl SystemOneStub {
    /// Starts a stub on a free port answering with `responder`.
    pub async fn start(
        responder: impl Fn(&str, &str, &Value) -> f64 + Send + Sync + 'static,
    ) -> Result<SystemOneStub, MockError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|source| MockError::Bind { port: 0, source })?;
        let address = listener
            .local_addr()
            .map_err(|source| MockError::Bind { port: 0, source })?;
        let shared = Arc::new(Shared {
            responder: Arc::new(responder),
            failures: Mutex::new(Vec::new()),
            received: Mutex::new(Vec::new()),
        });
        let router = Router::new()
            .route("/v1/systemone", post(answer))
            .with_state(Arc::clone(&shared));
        let (stop, mut stopping) = watch::channel(false);
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopping.wait_for(|stopped| *stopped).await;
            };
            if let Err(error) = axum::serve(listener, router)
                .with_graceful_shutdown(shutdown)
                .await
            {
                eprintln!("System One stub stopped: {error}");
            }
        });
        Ok(SystemOneStub {
            address,
            shared,
            stop,
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:<port>/v1/systemone`: the URL to give a client as `base_url`.
    pub fn url(&self) -> String {
        format!("http://{}/v1/systemone", self.address)
    }

    /// Makes the next requests fail with these statuses, in order, before answering again.
    pub fn fail_next(&self, statuses: &[u16]) {
        lock(&self.shared.failures).extend_from_slice(statuses);
    }

    /// Every request received so far, oldest first (failed ones included).
    pub fn received(&self) -> Vec<StubRequest> {
        lock(&self.shared.received).clone()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        lock(&self.shared.received).len()
    }
}

impl Drop for SystemOneStub {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn answer(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    lock(&shared.received).push(StubRequest {
        body: json.clone(),
        authorization: authorization.clone(),
    });
    let failure = {
        let mut failures = lock(&shared.failures);
        (!failures.is_empty()).then(|| failures.remove(0))
    };
    if let Some(status) = failure {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let message = format!(
            "nope (presented {})",
            authorization.as_deref().unwrap_or("no key")
        );
        return (status, axum::Json(json!({"error": message}))).into_response();
    }
    let state = json
        .get("state")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(questions) = json.get("questions").and_then(Value::as_object) else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "the body has no 'questions' object"})),
        )
            .into_response();
    };
    let mut answers = Map::new();
    for (id, question) in questions {
        let p = (shared.responder)(state, id, question).clamp(0.0, 1.0);
        answers.insert(
            id.clone(),
            json!({"type": "choice", "choice": if p >= 0.5 { "true" } else { "false" },
                   "probabilities": {"true": p, "false": 1.0 - p}}),
        );
    }
    axum::Json(json!({
        "model": STUB_MODEL,
        "answers": answers,
        "usage": {"input_tokens": state.chars().count() / 4},
    }))
    .into_response()
}
