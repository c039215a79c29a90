//! Record and replay of model traffic, for bug reports and tests.
//!
//! [`RecordingModel`] appends every exchange of a client (the request, and the answer or the
//! error) as one JSON line to a file ([`Recorder`]); cache hits are recorded too, marked
//! `cached`. [`ReplayModel`] answers only from such a file ([`Replay`]) and fails a request it
//! has no recording for, saying so. A replayed answer carries the recorded usage and cache
//! mark, so the replayed run counts its calls, tokens and cost, and meets its budget, at the
//! same points as the recorded one. A recording is matched on provider, model and the whole
//! request, not on the endpoint, so that a recording made against one server (or port) replays
//! wherever the config points now. When one request was recorded with several answers, they
//! are replayed in order, the last one repeating.
//!
//! A line looks like this (one line in the file):
//!
//! ```json
//! {"at":"2026-11-30T10:00:00Z","provider":"openai","endpoint":"http://127.0.0.1:8080/v1/chat/completions",
//!  "model":"m","request":{"system":"...","messages":[{"role":"user","content":"..."}],
//!  "temperature":0.0,"max_tokens":2048,"sample_index":0},
//!  "response":{"text":"...","usage":{"input_tokens":12,"output_tokens":3},"stop_reason":"end",
//!  "model":"m","cached":false}}
//! ```
//!
//! A failed call has `"error": "<message>"` instead of `response`; replay skips such lines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use skill_factory_io::append::Appender;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::cache::CacheKey;
use crate::http::truncate;
use crate::request::{
    ChatModel, ChatRequest, ChatResponse, LlmError, Role, StopReason, TokenUsage,
};

/// The environment variable naming a file to record model traffic to.
pub const RECORD_ENV: &str = "SKILL_FACTORY_RECORD";
/// The environment variable naming a recording to answer from, instead of the models.
pub const REPLAY_ENV: &str = "SKILL_FACTORY_REPLAY";

/// Why a recording cannot be written or read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RecordError {
    /// The recording to replay does not exist.
    #[error("cannot use the model recording {}: no such file; record one first by running with {RECORD_ENV}={}", path.display(), path.display())]
    Missing {
        /// The recording.
        path: PathBuf,
    },
    /// The file cannot be opened, created or read.
    #[error("cannot use the model recording {}: {source}", path.display())]
    Access {
        /// The recording.
        path: PathBuf,
        /// What the operating system said (shared, so the error stays cheap to clone).
        source: Arc<std::io::Error>,
    },
    /// A line of a recording is not a recorded exchange.
    #[error(
        "{}:{line}: not a recorded model exchange ({detail}); record the run again with {RECORD_ENV}",
        path.display()
    )]
    BadLine {
        /// The recording.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        detail: String,
    },
}

/// One line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Exchange {
    at: String,
    provider: String,
    endpoint: String,
    model: String,
    request: ChatRequest,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    response: Option<RecordedResponse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// An answer as recorded: [`ChatResponse`] without the latency, which replay does not repeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct RecordedResponse {
    text: String,
    usage: TokenUsage,
    stop_reason: StopReason,
    model: String,
    #[serde(default)]
    cached: bool,
}

/// A file that model exchanges are appended to, one JSON line each. Several clients (and
/// processes) may share one: each line is appended whole under the file's lock
/// ([`Appender`]).
///
/// A recorder can also be made before its file is named ([`Recorder::pending`]) and be given
/// it later ([`Recorder::start`]): `optimize --record` records into the run folder, which is
/// made after every client is built and before any of them is asked anything.
#[derive(Debug, Default)]
pub struct Recorder {
    file: OnceLock<Appender>,
}

impl Recorder {
    /// Opens (or creates) `path` for appending.
    pub fn open(path: impl Into<PathBuf>) -> Result<Recorder, RecordError> {
        let recorder = Recorder::pending();
        recorder.start(path)?;
        Ok(recorder)
    }

    /// A recorder whose file is named later, with [`Recorder::start`].
    pub fn pending() -> Recorder {
        Recorder::default()
    }

    /// Gives a pending recorder its file; a recorder that has its file already keeps it.
    pub fn start(&self, path: impl Into<PathBuf>) -> Result<(), RecordError> {
        if self.file.get().is_some() {
            return Ok(());
        }
        let path = path.into();
        let file = Appender::open(&path, |line| {
            serde_json::from_slice::<Exchange>(line).is_ok()
        })
        .map_err(|e| RecordError::Access {
            path,
            source: Arc::new(e),
        })?;
        // Another caller may have won the race: its file stays, this one is closed unused.
        let _ = self.file.set(file);
        Ok(())
    }

    /// The recording, once it has its file.
    pub fn path(&self) -> Option<&Path> {
        self.file.get().map(Appender::path)
    }

    fn append(&self, exchange: &Exchange) {
        let Some(file) = self.file.get() else {
            // No client is asked anything before the run folder exists; if one ever is, the
            // replay will say which request it lacks.
            tracing::warn!("model recording: an exchange came before the recording had a file");
            return;
        };
        let mut line = match serde_json::to_string(exchange) {
            Ok(line) => line,
            Err(error) => {
                tracing::warn!("model recording: cannot encode an exchange: {error}");
                return;
            }
        };
        line.push('\n');
        if let Err(error) = file.append(&line) {
            tracing::warn!(
                "model recording {}: cannot append: {error}",
                file.path().display()
            );
        }
    }
}

/// A client whose every exchange is appended to a [`Recorder`].
pub struct RecordingModel {
    inner: Arc<dyn ChatModel>,
    recorder: Arc<Recorder>,
}

impl RecordingModel {
    /// `inner`, recorded to `recorder`.
    pub fn new(inner: Arc<dyn ChatModel>, recorder: Arc<Recorder>) -> Self {
        RecordingModel { inner, recorder }
    }
}

#[async_trait]
impl ChatModel for RecordingModel {
    crate::request::delegate_identity!(inner);

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let answer = self.inner.chat(request).await;
        let (response, error) = match &answer {
            Ok(r) => (
                Some(RecordedResponse {
                    text: r.text.clone(),
                    usage: r.usage,
                    stop_reason: r.stop_reason,
                    model: r.model.clone(),
                    cached: r.cached,
                }),
                None,
            ),
            Err(e) => (None, Some(e.to_string())),
        };
        self.recorder.append(&Exchange {
            at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            provider: self.inner.provider().to_string(),
            endpoint: self.inner.endpoint().to_string(),
            model: self.inner.model().to_string(),
            request: request.clone(),
            response,
            error,
        });
        answer
    }
}

/// The recorded answers of a file, by request.
#[derive(Debug)]
pub struct Replay {
    path: PathBuf,
    answers: HashMap<CacheKey, Recorded>,
}

#[derive(Debug)]
struct Recorded {
    responses: Vec<RecordedResponse>,
    next: AtomicUsize,
}

/// Recordings match on provider, model and request; the endpoint is left out on purpose.
fn replay_key(provider: &str, model: &str, request: &ChatRequest) -> CacheKey {
    CacheKey::new(provider, "", model, request)
}

impl Replay {
    /// Reads the recording at `path`.
    pub fn load(path: impl Into<PathBuf>) -> Result<Replay, RecordError> {
        let path = path.into();
        let text = std::fs::read_to_string(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => RecordError::Missing { path: path.clone() },
            _ => RecordError::Access {
                path: path.clone(),
                source: Arc::new(e),
            },
        })?;
        let mut answers: HashMap<CacheKey, Recorded> = HashMap::new();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let exchange: Exchange =
                serde_json::from_str(line).map_err(|e| RecordError::BadLine {
                    path: path.clone(),
                    line: index + 1,
                    detail: e.to_string(),
                })?;
            let Some(response) = exchange.response else {
                continue;
            };
            answers
                .entry(replay_key(
                    &exchange.provider,
                    &exchange.model,
                    &exchange.request,
                ))
                .or_insert_with(|| Recorded {
                    responses: Vec::new(),
                    next: AtomicUsize::new(0),
                })
                .responses
                .push(response);
        }
        Ok(Replay { path, answers })
    }

    /// The recording.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Distinct requests with a recorded answer.
    pub fn len(&self) -> usize {
        self.answers.len()
    }

    /// True when the recording holds no answer at all.
    pub fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }

    fn answer(&self, provider: &str, model: &str, request: &ChatRequest) -> Option<ChatResponse> {
        let recorded = self.answers.get(&replay_key(provider, model, request))?;
        let turn = recorded.next.fetch_add(1, Ordering::Relaxed);
        let response = recorded
            .responses
            .get(turn)
            .or_else(|| recorded.responses.last())?;
        Some(ChatResponse {
            text: response.text.clone(),
            usage: response.usage,
            stop_reason: response.stop_reason,
            model: response.model.clone(),
            latency: Duration::ZERO,
            // As recorded, so a replayed run books (and is budgeted) exactly as the original.
            cached: response.cached,
            batch: false,
        })
    }
}

/// A client that answers only from a [`Replay`], in place of the model it names.
pub struct ReplayModel {
    provider: String,
    model: String,
    endpoint: String,
    replay: Arc<Replay>,
}

impl ReplayModel {
    /// Replays the answers `replaced` (which is never called) gave when recorded.
    pub fn new(replaced: &dyn ChatModel, replay: Arc<Replay>) -> Self {
        ReplayModel::named(
            replaced.provider(),
            replaced.model(),
            replaced.endpoint(),
            replay,
        )
    }

    /// Replays the answers recorded for `provider` and `model`, with no client built at all.
    pub fn named(provider: &str, model: &str, endpoint: &str, replay: Arc<Replay>) -> Self {
        ReplayModel {
            provider: provider.to_string(),
            model: model.to_string(),
            endpoint: endpoint.to_string(),
            replay,
        }
    }
}

#[async_trait]
impl ChatModel for ReplayModel {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn endpoint(&self) -> &str {
        &self.endpoint
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        if let Some(mut response) = self.replay.answer(&self.provider, &self.model, request) {
            response.latency = started.elapsed();
            return Ok(response);
        }
        let last_user = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| truncate(&m.content, 60))
            .unwrap_or_default();
        Err(LlmError::Replay(format!(
            "{} holds no answer for this request to {} model '{}' (user message {last_user:?}); \
             the config, skill or dataset changed since it was recorded: record it again with {RECORD_ENV}",
            self.replay.path.display(),
            self.provider,
            self.model
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeModel;

    fn ask(text: &str) -> ChatRequest {
        ChatRequest::single(Some("Be brief.".into()), text, 0.0, 32)
    }

    #[tokio::test]
    async fn a_recording_replays_every_answer_and_fails_unknown_requests_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("traffic.jsonl");
        let fake: Arc<dyn ChatModel> =
            Arc::new(FakeModel::new("m").with_responses(vec!["one".into(), "two".into()]));
        let recording = RecordingModel::new(fake.clone(), Arc::new(Recorder::open(&path).unwrap()));
        assert_eq!(recording.chat(&ask("a")).await.unwrap().text, "one");
        assert_eq!(recording.chat(&ask("a")).await.unwrap().text, "two");
        assert_eq!(recording.chat(&ask("b")).await.unwrap().text, "two");

        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["request"]["messages"][0]["content"], "a");
        assert_eq!(first["response"]["text"], "one");

        let replay = Arc::new(Replay::load(&path).unwrap());
        assert_eq!(replay.len(), 2);
        let replayed = ReplayModel::new(fake.as_ref(), replay);
        // The same request's answers come back in order, the last repeating.
        let a1 = replayed.chat(&ask("a")).await.unwrap();
        assert_eq!((a1.text.as_str(), a1.cached), ("one", false));
        assert_eq!(replayed.chat(&ask("a")).await.unwrap().text, "two");
        assert_eq!(replayed.chat(&ask("a")).await.unwrap().text, "two");
        assert_eq!(replayed.chat(&ask("b")).await.unwrap().text, "two");
        let error = replayed.chat(&ask("never asked")).await.unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, LlmError::Replay(_)));
        assert!(
            message.contains("traffic.jsonl")
                && message.contains("never asked")
                && message.contains(RECORD_ENV),
            "{message}"
        );
        assert_eq!(fake.provider(), "fake");
    }

    #[tokio::test]
    async fn failed_calls_are_recorded_but_never_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("traffic.jsonl");
        let fake: Arc<dyn ChatModel> = Arc::new(FakeModel::new("m"));
        let recording = RecordingModel::new(fake.clone(), Arc::new(Recorder::open(&path).unwrap()));
        assert!(recording.chat(&ask("a")).await.is_err());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"error\":"), "{text}");
        let replay = Replay::load(&path).unwrap();
        assert!(replay.is_empty());
    }

    #[test]
    fn a_broken_recording_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("traffic.jsonl");
        std::fs::write(&path, "\n{\"not\": \"an exchange\"}\n").unwrap();
        let error = Replay::load(&path).unwrap_err().to_string();
        assert!(error.contains("traffic.jsonl:2:"), "{error}");
        let missing = Replay::load(dir.path().join("none.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains(RECORD_ENV), "{missing}");
    }
}
