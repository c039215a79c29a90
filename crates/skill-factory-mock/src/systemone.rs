//! A loopback System One host at `/v1/systemone`, for tests of the decision-model client and
//! of everything built on it (the `systemone` metric, classifier mode).
//!
//! It answers every question of a request with P(true) from a responder function, as
//! `{"type": "choice", "probabilities": {"true": p, "false": 1 - p}}`, reports the model
//! `fake-jev-1.0` and `len(state) / 4` input tokens, records each request's body and
//! `Authorization` header, and can fail the next requests with given status codes (their body
//! echoes the presented `Authorization` header, as careless hosts do, so that tests can check
//! that clients redact keys) or inject the chat routes' random faults ([`FaultPlan`]).
//!
//! `GET /stats` answers `{"requests": N, "questions": M, "faults": {...}}` (every request received, failed ones
//! included, and the questions they carried) and `GET /health` answers `{"status": "ok"}`, so a
//! script can check from outside that a run sent nothing. [`hashed_probability`] is a responder
//! that depends only on the state and the question's text, the same whichever client asks, in
//! which batches and under which ids: `sf-mock-server --systemone` serves it for benchmark
//! scripts that run two tools against one host.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::MockError;
use crate::config::FaultPlan;
use crate::fault::{FaultCounts, JSON, deliver, refusal};

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

/// Where and how a stub started with [`SystemOneStub::start_with`] serves.
#[derive(Debug, Clone, Default)]
pub struct StubOptions {
    /// Port on 127.0.0.1 (0 picks a free one).
    pub port: u16,
    /// Wait before every answer (failures included).
    pub latency: Duration,
    /// Random but reproducible faults, as the chat routes inject them (after the failures
    /// asked for with [`SystemOneStub::fail_next`]).
    pub faults: FaultPlan,
}

/// P(true) from the state and the question's `instructions` alone: the first 16 bits of
/// SHA-256(`state` + NUL + `instructions`) as a number from 0 to 65535, divided by 65535 and
/// rounded to 4 decimals. Instructions that are not a string (an object or array) are hashed
/// as their compact JSON.
///
/// The question id and the criteria play no part, so two clients that send the same state
/// and question text see the same answer whatever ids they give it and however they batch.
pub fn hashed_probability(state: &str, question: &Value) -> f64 {
    let instructions = match question.get("instructions") {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let mut hasher = Sha256::new();
    hasher.update(state.as_bytes());
    hasher.update([0u8]);
    hasher.update(instructions.as_bytes());
    let digest = hasher.finalize();
    let n = u16::from_be_bytes([digest[0], digest[1]]);
    (f64::from(n) / 65535.0 * 10_000.0).round() / 10_000.0
}

struct Shared {
    responder: StubResponder,
    latency: Duration,
    faults: FaultPlan,
    injected: FaultCounts,
    failures: Mutex<Vec<u16>>,
    received: Mutex<Vec<StubRequest>>,
    stopping: watch::Receiver<bool>,
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
        SystemOneStub::start_with(StubOptions::default(), responder).await
    }

    /// Starts a stub on `options.port` (0 for a free one) answering with `responder` after
    /// `options.latency`.
    pub async fn start_with(
        options: StubOptions,
        responder: impl Fn(&str, &str, &Value) -> f64 + Send + Sync + 'static,
    ) -> Result<SystemOneStub, MockError> {
        options.faults.validate()?;
        let port = options.port;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|source| MockError::Bind { port, source })?;
        let address = listener
            .local_addr()
            .map_err(|source| MockError::Bind { port, source })?;
        let (stop, mut stopping) = watch::channel(false);
        let shared = Arc::new(Shared {
            responder: Arc::new(responder),
            latency: options.latency,
            faults: options.faults,
            injected: FaultCounts::default(),
            failures: Mutex::new(Vec::new()),
            received: Mutex::new(Vec::new()),
            stopping: stopping.clone(),
        });
        let router = Router::new()
            .route("/v1/systemone", post(answer))
            .route("/stats", get(stats))
            .route(
                "/health",
                get(|| async { axum::Json(json!({"status": "ok"})) }),
            )
            .with_state(Arc::clone(&shared));
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

    /// `http://127.0.0.1:<port>`, where `/stats` and `/health` are.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.address.port()
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

    /// How many questions the received requests carried in all.
    pub fn question_count(&self) -> usize {
        question_count(&lock(&self.shared.received))
    }

    /// Serves until the server task ends (it ends only when the stub is dropped or on an
    /// accept error); for the binary, which is killed rather than stopped.
    pub async fn serve_forever(mut self) {
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

fn question_count(received: &[StubRequest]) -> usize {
    received
        .iter()
        .filter_map(|request| request.body.get("questions").and_then(Value::as_object))
        .map(Map::len)
        .sum()
}

/// `GET /stats`: requests received so far (failed ones included), the questions they
/// carried, and how many requests each injected fault spoiled.
async fn stats(State(shared): State<Arc<Shared>>) -> axum::Json<Value> {
    let received = lock(&shared.received);
    axum::Json(json!({
        "requests": received.len(),
        "questions": question_count(&received),
        "faults": shared.injected.to_json(),
    }))
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
    let number = {
        let mut received = lock(&shared.received);
        received.push(StubRequest {
            body: json.clone(),
            authorization: authorization.clone(),
        });
        received.len() as u64 - 1
    };
    if !shared.latency.is_zero() {
        tokio::time::sleep(shared.latency).await;
    }
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
    let fault = shared.faults.choose(number);
    shared.injected.record(fault);
    let refuse = |status, _kind, message: &str| {
        (status, axum::Json(json!({"error": message}))).into_response()
    };
    if let Some(answer) = refusal(
        fault,
        shared.faults.retry_after_secs,
        &shared.stopping,
        &refuse,
    )
    .await
    {
        return answer;
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
    let body = json!({
        "model": STUB_MODEL,
        "answers": answers,
        "usage": {"input_tokens": state.chars().count() / 4},
    });
    deliver(fault, body.to_string(), JSON, &shared.stopping)
}
