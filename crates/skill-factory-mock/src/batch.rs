//! The providers' batch APIs on the mock: Anthropic's Message Batches
//! (`POST /v1/messages/batches`, `GET /v1/messages/batches/{id}` and its `/results`) and
//! OpenAI's Files and Batches (`POST /v1/files`, `POST /v1/batches`, `GET /v1/batches/{id}`,
//! `GET /v1/files/{id}/content`).
//!
//! A batch answers each of its requests as a direct call would (the same answers, the same
//! body), once [`BatchPlan::delay`] has passed since it was created. Until then it is in
//! progress. Some requests can fail on purpose, reproducibly by their `custom_id`: errored (an
//! invalid-request error) or expired (never processed, as when a batch outlives its window).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::Request;
use axum::extract::{Multipart, Path, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::server::{Shared, answer, refuse_key};
use crate::wire::{ErrorKind, Format, error_body};

/// How batches behave: how long one takes, and which of its requests fail.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchPlan {
    /// Time from a batch's creation until it has ended.
    pub delay: Duration,
    /// Fraction of requests that end errored.
    pub errored: f64,
    /// Fraction of requests that end expired.
    pub expired: f64,
}

impl BatchPlan {
    /// Checks that both fractions are within [0, 1] and together stay within 1.
    pub fn validate(&self) -> Result<(), crate::MockError> {
        let fine = |f: f64| (0.0..=1.0).contains(&f);
        if !fine(self.errored) || !fine(self.expired) || self.errored + self.expired > 1.0 + 1e-9 {
            return Err(crate::MockError::Config(format!(
                "batch fractions (--batch-errored {}, --batch-expired {}) must each be between 0 and 1 and add up to at most 1",
                self.errored, self.expired
            )));
        }
        Ok(())
    }

    /// What becomes of the request `custom_id`: by a hash of it, so every run agrees.
    fn fate(&self, custom_id: &str) -> Fate {
        let digest = Sha256::digest(custom_id.as_bytes());
        let draw = f64::from(u16::from_be_bytes([digest[0], digest[1]])) / 65536.0;
        if draw < self.errored {
            Fate::Errored
        } else if draw < self.errored + self.expired {
            Fate::Expired
        } else {
            Fate::Answered
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Answered,
    Errored,
    Expired,
}

/// One request of a batch once the batch ended.
#[derive(Debug, Clone)]
enum Outcome {
    Answered(Value),
    Errored(String),
    Expired,
}

struct Batch {
    format: Format,
    created: Instant,
    created_unix: u64,
    requests: Vec<(String, Value)>,
    /// Filled the first time the batch is looked at after its delay.
    outcomes: Option<Vec<Outcome>>,
    input_file: Option<String>,
}

/// Every batch and uploaded file of a server, and how many were created.
#[derive(Default)]
pub(crate) struct Batches {
    batches: HashMap<String, Batch>,
    files: HashMap<String, Vec<u8>>,
    created: u64,
    requests: u64,
}

/// Batches created and the requests in them.
pub(crate) fn counts(batches: &Mutex<Batches>) -> (u64, u64) {
    let batches = lock(batches);
    (batches.created, batches.requests)
}

/// `{"created": batches, "requests": requests in them}`, for `GET /stats`.
pub(crate) fn lock_stats(batches: &Mutex<Batches>) -> Value {
    let (created, requests) = counts(batches);
    json!({"created": created, "requests": requests})
}

fn lock(batches: &Mutex<Batches>) -> MutexGuard<'_, Batches> {
    batches
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn invalid(format: Format, status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(error_body(format, ErrorKind::InvalidRequest, message)),
    )
        .into_response()
}

/// Registers a batch and returns its id.
fn create(
    shared: &Shared,
    format: Format,
    requests: Vec<(String, Value)>,
    input: Option<String>,
) -> String {
    let mut batches = lock(&shared.batches);
    batches.created += 1;
    batches.requests += requests.len() as u64;
    let id = match format {
        Format::Anthropic => format!("msgbatch_mock{:06}", batches.created),
        Format::OpenAi | Format::Responses => format!("batch_mock{:06}", batches.created),
    };
    batches.batches.insert(
        id.clone(),
        Batch {
            format,
            created: Instant::now(),
            created_unix: unix_now(),
            requests,
            outcomes: None,
            input_file: input,
        },
    );
    id
}

/// The batch's outcomes once its delay has passed (worked out once), else `None`.
fn ended(shared: &Shared, batch: &mut Batch) -> Option<Vec<Outcome>> {
    let plan = &shared.config.batches;
    if batch.created.elapsed() < plan.delay {
        return None;
    }
    if batch.outcomes.is_none() {
        let outcomes = batch
            .requests
            .iter()
            .map(|(custom_id, body)| match plan.fate(custom_id) {
                Fate::Expired => Outcome::Expired,
                Fate::Errored => Outcome::Errored("request errored (mock)".to_string()),
                Fate::Answered => {
                    let number = shared
                        .count
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    match answer(batch.format, number, body, &shared.config) {
                        Ok(reply) => Outcome::Answered(reply),
                        Err(problem) => Outcome::Errored(problem.to_string()),
                    }
                }
            })
            .collect();
        batch.outcomes = Some(outcomes);
    }
    batch.outcomes.clone()
}

fn count(outcomes: &[Outcome], which: fn(&Outcome) -> bool) -> usize {
    outcomes.iter().filter(|o| which(o)).count()
}

/// The batch routes of both providers, each requiring the server's key (if it has one) as the
/// chat routes do, in the error shape of its provider.
pub(crate) fn routes(shared: Arc<Shared>) -> Router<Arc<Shared>> {
    Router::new()
        .route("/v1/messages/batches", post(anthropic_create))
        .route("/v1/messages/batches/{id}", get(anthropic_get))
        .route("/v1/messages/batches/{id}/results", get(anthropic_results))
        .route("/v1/files", post(upload))
        .route("/v1/files/{id}/content", get(file_content))
        .route("/v1/batches", post(openai_create))
        .route("/v1/batches/{id}", get(openai_get))
        .route_layer(middleware::from_fn_with_state(shared, require_key))
}

async fn require_key(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let format = if request.uri().path().starts_with("/v1/messages") {
        Format::Anthropic
    } else {
        Format::OpenAi
    };
    match refuse_key(format, &shared.config, request.headers()) {
        Some(refused) => refused,
        None => next.run(request).await,
    }
}

// ---------------------------------------------------------------- Anthropic Message Batches

/// `POST /v1/messages/batches`: `{"requests": [{"custom_id", "params"}]}`.
async fn anthropic_create(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let format = Format::Anthropic;
    let Ok(json) = serde_json::from_slice::<Value>(&body) else {
        return invalid(format, StatusCode::BAD_REQUEST, "the body is not JSON");
    };
    let Some(list) = json
        .get("requests")
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty())
    else {
        return invalid(
            format,
            StatusCode::BAD_REQUEST,
            "requests: give at least one",
        );
    };
    let mut requests = Vec::new();
    for request in list {
        let (Some(id), Some(params)) = (
            request.get("custom_id").and_then(Value::as_str),
            request.get("params"),
        ) else {
            return invalid(
                format,
                StatusCode::BAD_REQUEST,
                "each request needs custom_id and params",
            );
        };
        requests.push((id.to_string(), params.clone()));
    }
    let id = create(&shared, format, requests, None);
    anthropic_status(&shared, &id)
}

fn anthropic_status(shared: &Shared, id: &str) -> Response {
    let mut batches = lock(&shared.batches);
    let Some(batch) = batches.batches.get_mut(id) else {
        return invalid(Format::Anthropic, StatusCode::NOT_FOUND, "no such batch");
    };
    let outcomes = ended(shared, batch);
    let total = batch.requests.len();
    let (status, counts, results) = match &outcomes {
        None => (
            "in_progress",
            json!({"processing": total, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}),
            Value::Null,
        ),
        Some(outcomes) => (
            "ended",
            json!({
                "processing": 0,
                "succeeded": count(outcomes, |o| matches!(o, Outcome::Answered(_))),
                "errored": count(outcomes, |o| matches!(o, Outcome::Errored(_))),
                "canceled": 0,
                "expired": count(outcomes, |o| matches!(o, Outcome::Expired)),
            }),
            json!(format!("/v1/messages/batches/{id}/results")),
        ),
    };
    axum::Json(json!({
        "id": id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": counts,
        "created_at": batch.created_unix,
        "ended_at": outcomes.as_ref().map(|_| unix_now()),
        "results_url": results,
    }))
    .into_response()
}

/// `GET /v1/messages/batches/{id}`.
async fn anthropic_get(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    anthropic_status(&shared, &id)
}

/// `GET /v1/messages/batches/{id}/results`: one JSON line per request, once ended.
async fn anthropic_results(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let format = Format::Anthropic;
    let mut batches = lock(&shared.batches);
    let Some(batch) = batches.batches.get_mut(&id) else {
        return invalid(format, StatusCode::NOT_FOUND, "no such batch");
    };
    let Some(outcomes) = ended(&shared, batch) else {
        return invalid(
            format,
            StatusCode::BAD_REQUEST,
            "the batch has not ended yet",
        );
    };
    let mut lines = String::new();
    for ((custom_id, _), outcome) in batch.requests.iter().zip(outcomes) {
        let result = match outcome {
            Outcome::Answered(message) => json!({"type": "succeeded", "message": message}),
            Outcome::Errored(detail) => json!({"type": "errored",
                "error": error_body(format, ErrorKind::InvalidRequest, &detail)}),
            Outcome::Expired => json!({"type": "expired"}),
        };
        lines.push_str(&json!({"custom_id": custom_id, "result": result}).to_string());
        lines.push('\n');
    }
    ([(CONTENT_TYPE, "application/x-jsonl")], lines).into_response()
}

// ---------------------------------------------------------------- OpenAI Files and Batches

/// `POST /v1/files`: a multipart upload with `purpose` and `file`.
async fn upload(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    mut form: Multipart,
) -> Response {
    let format = Format::OpenAi;
    // Strict, as a real server may be: a body has one type.
    if headers.get_all(CONTENT_TYPE).iter().count() != 1 {
        return invalid(format, StatusCode::BAD_REQUEST, "give one Content-Type");
    }
    let mut file = None;
    let mut purpose = None;
    while let Ok(Some(field)) = form.next_field().await {
        match field.name() {
            Some("file") => file = field.bytes().await.ok(),
            Some("purpose") => purpose = field.text().await.ok(),
            _ => {}
        }
    }
    let (Some(file), Some(purpose)) = (file, purpose) else {
        return invalid(
            format,
            StatusCode::BAD_REQUEST,
            "give a `file` and a `purpose`",
        );
    };
    let mut batches = lock(&shared.batches);
    let id = format!("file-mock{:06}", batches.files.len() + 1);
    let size = file.len();
    batches.files.insert(id.clone(), file.to_vec());
    axum::Json(
        json!({"id": id, "object": "file", "bytes": size, "created_at": unix_now(),
                      "filename": "batch.jsonl", "purpose": purpose}),
    )
    .into_response()
}

/// `POST /v1/batches`: `{"input_file_id", "endpoint", "completion_window"}`; the file holds one
/// `{"custom_id", "method", "url", "body"}` per line.
async fn openai_create(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let format = Format::OpenAi;
    let Ok(json) = serde_json::from_slice::<Value>(&body) else {
        return invalid(format, StatusCode::BAD_REQUEST, "the body is not JSON");
    };
    let Some(file_id) = json.get("input_file_id").and_then(Value::as_str) else {
        return invalid(format, StatusCode::BAD_REQUEST, "input_file_id is required");
    };
    let text = {
        let batches = lock(&shared.batches);
        let Some(bytes) = batches.files.get(file_id) else {
            return invalid(format, StatusCode::NOT_FOUND, "no such file");
        };
        String::from_utf8_lossy(bytes).into_owned()
    };
    let mut requests = Vec::new();
    for (n, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let parsed: Option<(String, Value)> =
            serde_json::from_str::<Value>(line).ok().and_then(|v| {
                Some((
                    v.get("custom_id")?.as_str()?.to_string(),
                    v.get("body")?.clone(),
                ))
            });
        let Some(request) = parsed else {
            return invalid(
                format,
                StatusCode::BAD_REQUEST,
                &format!("line {} of the input file is not a batch request", n + 1),
            );
        };
        requests.push(request);
    }
    let id = create(&shared, format, requests, Some(file_id.to_string()));
    openai_status(&shared, &id)
}

fn openai_status(shared: &Shared, id: &str) -> Response {
    let mut guard = lock(&shared.batches);
    let batches = &mut *guard;
    let Some(batch) = batches.batches.get_mut(id) else {
        return invalid(Format::OpenAi, StatusCode::NOT_FOUND, "no such batch");
    };
    let outcomes = ended(shared, batch);
    let total = batch.requests.len();
    let input = batch.input_file.clone();
    let (status, completed, failed, output, errors) = match &outcomes {
        None => ("in_progress", 0, 0, None, None),
        Some(outcomes) => {
            let mut output = String::new();
            let mut errors = String::new();
            for ((custom_id, _), outcome) in batch.requests.iter().zip(outcomes) {
                let line = match outcome {
                    Outcome::Answered(body) => json!({"id": format!("batch_req_{custom_id}"),
                        "custom_id": custom_id, "error": null,
                        "response": {"status_code": 200, "request_id": custom_id, "body": body}}),
                    Outcome::Errored(detail) => json!({"id": format!("batch_req_{custom_id}"),
                        "custom_id": custom_id, "error": null,
                        "response": {"status_code": 400, "request_id": custom_id,
                                     "body": error_body(Format::OpenAi, ErrorKind::InvalidRequest, detail)}}),
                    Outcome::Expired => json!({"id": format!("batch_req_{custom_id}"),
                        "custom_id": custom_id, "response": null,
                        "error": {"code": "batch_expired",
                                  "message": "This request could not be executed before the completion window expired."}}),
                };
                let target = if matches!(outcome, Outcome::Answered(_)) {
                    &mut output
                } else {
                    &mut errors
                };
                target.push_str(&line.to_string());
                target.push('\n');
            }
            let completed = count(outcomes, |o| matches!(o, Outcome::Answered(_)));
            let output_id = format!("file-{id}-output");
            let errors_id = (!errors.is_empty()).then(|| format!("file-{id}-errors"));
            batches.files.insert(output_id.clone(), output.into_bytes());
            if let Some(errors_id) = &errors_id {
                batches.files.insert(errors_id.clone(), errors.into_bytes());
            }
            let expired = outcomes.iter().any(|o| matches!(o, Outcome::Expired));
            (
                if expired { "expired" } else { "completed" },
                completed,
                total - completed,
                Some(output_id),
                errors_id,
            )
        }
    };
    axum::Json(json!({
        "id": id,
        "object": "batch",
        "endpoint": "/v1/chat/completions",
        "input_file_id": input,
        "completion_window": "24h",
        "status": status,
        "output_file_id": output,
        "error_file_id": errors,
        "created_at": batches.batches.get(id).map(|b| b.created_unix),
        "request_counts": {"total": total, "completed": completed, "failed": failed},
    }))
    .into_response()
}

/// `GET /v1/batches/{id}`.
async fn openai_get(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    openai_status(&shared, &id)
}

/// `GET /v1/files/{id}/content`.
async fn file_content(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    match lock(&shared.batches).files.get(&id) {
        Some(bytes) => ([(CONTENT_TYPE, "application/jsonl")], bytes.clone()).into_response(),
        None => invalid(Format::OpenAi, StatusCode::NOT_FOUND, "no such file"),
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
