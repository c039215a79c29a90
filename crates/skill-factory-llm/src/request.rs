//! The provider-neutral request and response, and the trait every model client implements.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person or program asking.
    User,
    /// The model.
    Assistant,
}

impl Role {
    /// The role as every wire format and chat template spells it: `user`, `assistant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: String,
}

impl Message {
    /// A user turn.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }
}

/// A chat request, independent of the wire format it is sent in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// System prompt; `None` or empty sends none.
    pub system: Option<String>,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// Sampling temperature.
    pub temperature: f64,
    /// Maximum output tokens.
    pub max_tokens: u32,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Which sample of the same request this is: lets temperature > 0 requests be cached and
    /// replayed deterministically yet stay distinct from one another.
    #[serde(default)]
    pub sample_index: u32,
}

impl ChatRequest {
    /// A single-turn request: optional system prompt and one user message.
    pub fn single(
        system: Option<String>,
        user: impl Into<String>,
        temperature: f64,
        max_tokens: u32,
    ) -> Self {
        ChatRequest {
            system,
            messages: vec![Message::user(user)],
            temperature,
            max_tokens,
            stop: Vec::new(),
            sample_index: 0,
        }
    }
}

/// Tokens one call consumed, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer (or hit a stop sequence).
    End,
    /// It ran into `max_tokens`: the text is truncated.
    MaxTokens,
    /// Anything else the provider reported, or nothing.
    Other,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The text of the answer, trimmed.
    pub text: String,
    /// Tokens consumed.
    pub usage: TokenUsage,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// The model that answered, as the provider named it.
    pub model: String,
    /// Wall time of the call, retries included.
    #[serde(default)]
    pub latency: Duration,
    /// True when the answer was replayed from the cache or a recording instead of asking
    /// the model: it cost nothing.
    #[serde(default)]
    pub cached: bool,
    /// True when a provider's batch API answered it, at the batch price (half the direct
    /// one); false for a direct call, and for a cached or replayed answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
}

/// Why a call failed, after any retries.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The provider answered with an HTTP error status.
    #[error("{provider} returned HTTP {status}: {body}")]
    Status {
        /// Provider name.
        provider: String,
        /// HTTP status code.
        status: u16,
        /// The start of the response body, for the person reading the error.
        body: String,
    },
    /// The call took longer than its timeout.
    #[error("{provider} did not answer within {seconds:.1}s")]
    Timeout {
        /// Provider name.
        provider: String,
        /// The timeout that expired.
        seconds: f64,
    },
    /// The connection could not be made or broke.
    #[error("could not reach {provider} at {url}: {detail}")]
    Connect {
        /// Provider name.
        provider: String,
        /// Endpoint that was called.
        url: String,
        /// What the network layer said, its causes joined, as text rather than a kept
        /// `reqwest::Error`: the API key is redacted from it, which a cause printed later
        /// would escape.
        detail: String,
    },
    /// The provider answered 2xx with a body that is not the expected format.
    #[error("{provider} returned a malformed response: {detail}")]
    Malformed {
        /// Provider name.
        provider: String,
        /// What was wrong with it, with the start of the body (the key redacted).
        detail: String,
    },
    /// The client is not usable as configured (no key, bad URL, ...).
    #[error("{0}")]
    Config(String),
    /// A scripted fake had no answer for this request.
    #[error("fake provider: {0}")]
    Script(String),
    /// A run budget refused the call before it was made.
    #[error("budget exhausted: {0}")]
    Budget(String),
    /// Replaying a recording (`SKILL_FACTORY_REPLAY`), and it holds no answer for this request.
    #[error("replay: {0}")]
    Replay(String),
    /// The run stopped waiting for the batch that holds this request (Ctrl-C); the batch is
    /// still owed, and a rerun polls it.
    #[error("{0}")]
    Abandoned(String),
    /// Every allowed attempt failed with a retryable error; `last` says how the final one failed.
    #[error("{provider} request failed after {attempts} {}: {last}", attempts_word(.attempts))]
    Exhausted {
        /// Provider name.
        provider: String,
        /// Attempts made, the first included.
        attempts: u32,
        /// The error of the last attempt.
        #[source]
        last: Box<LlmError>,
    },
}

/// "attempt" or "attempts", so a one-attempt failure reads naturally.
fn attempts_word(attempts: &u32) -> &'static str {
    if *attempts == 1 {
        "attempt"
    } else {
        "attempts"
    }
}

impl LlmError {
    /// True for errors worth retrying: 429, 5xx, timeouts, broken connections, malformed bodies.
    pub fn is_retryable(&self) -> bool {
        self.is_call_failure(crate::retry::retryable_status)
    }

    /// True when the model could not be reached or refused the client itself (connection,
    /// timeout, garbage, rate limits and server errors after every retry, a rejected key, an
    /// unknown model or path, a redirect not followed): no skill could have caused it, so a
    /// run in which every call ends so measures nothing.
    pub fn is_unreachable(&self) -> bool {
        self.last().is_call_failure(|status| {
            matches!(status, 300..=399 | 401 | 403 | 404 | 408 | 429) || status >= 500
        })
    }

    /// Whether the call itself failed in a way `by_status` counts: an HTTP status when
    /// `by_status` says so; a timeout, a broken connection or a malformed body always; an
    /// error of our own (config, script, budget, replay, abandoned) or spent retries never.
    /// The two questions above differ only in which statuses they count.
    fn is_call_failure(&self, by_status: impl Fn(u16) -> bool) -> bool {
        match self {
            LlmError::Status { status, .. } => by_status(*status),
            LlmError::Timeout { .. } | LlmError::Connect { .. } | LlmError::Malformed { .. } => {
                true
            }
            // Exhausted already spent the retries; retrying it again would multiply them.
            LlmError::Config(_)
            | LlmError::Script(_)
            | LlmError::Budget(_)
            | LlmError::Replay(_)
            | LlmError::Abandoned(_)
            | LlmError::Exhausted { .. } => false,
        }
    }

    /// The error of the final attempt: the error itself, or what `Exhausted` wraps.
    pub fn last(&self) -> &LlmError {
        match self {
            LlmError::Exhausted { last, .. } => last.last(),
            other => other,
        }
    }
}

/// A model that answers chat requests.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// The provider name (`openai`, `anthropic`, `fake`, ...), for messages and cache keys.
    fn provider(&self) -> &str;
    /// The model id requests are sent to.
    fn model(&self) -> &str;
    /// The endpoint, for cache keys and messages (empty for in-process models).
    fn endpoint(&self) -> &str;
    /// Sends one request, with the client's retries, and returns the answer or why it failed.
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;
}

/// The [`ChatModel`] identity methods of a layer that wraps another model (the budget, the
/// cache, the recorder, the batcher): each names the wrapped model's provider, model and
/// endpoint, so that cache keys, prices and messages see through the layers. Written once here
/// so that no layer can start reporting a name of its own.
macro_rules! delegate_identity {
    ($field:ident) => {
        fn provider(&self) -> &str {
            self.$field.provider()
        }

        fn model(&self) -> &str {
            self.$field.model()
        }

        fn endpoint(&self) -> &str {
            self.$field.endpoint()
        }
    };
}
pub(crate) use delegate_identity;
