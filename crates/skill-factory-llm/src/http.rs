//! The HTTP side shared by every wire format: one pooled client, API keys that never show up
//! in messages, and one POST attempt turned into a body or an error a person can act on.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use skill_factory_io::secrets::Scrubber;

use crate::limit::Outcome;
use crate::request::{ChatResponse, LlmError, StopReason, TokenUsage};
use crate::retry::{AttemptError, RetryPolicy, retry_after, with_retries};
use crate::schedule::{ProviderGate, Scheduler};
use crate::url::EndpointUrl;

/// The key sent to servers that need none (local vLLM, LM Studio, Ollama, llama-server).
pub const PLACEHOLDER_KEY: &str = "not-needed";

/// An API key and where it came from. It prints as `***` so that it cannot leak through
/// `Debug`, logs or errors; only the HTTP layer reads the value.
#[derive(Clone)]
pub struct ApiKey {
    value: String,
    source: String,
}

impl ApiKey {
    /// A key, and a description of its origin for error hints (e.g. `OPENAI_API_KEY`, or
    /// `api_key in the provider block`).
    pub fn new(value: impl Into<String>, source: impl Into<String>) -> Self {
        ApiKey {
            value: value.into(),
            source: source.into(),
        }
    }

    /// The dummy key for local servers that check none.
    pub fn placeholder() -> Self {
        ApiKey::new(
            PLACEHOLDER_KEY,
            "no key set; the placeholder `not-needed` was sent",
        )
    }

    /// Where the key came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    #[cfg(test)]
    pub(crate) fn value(&self) -> &str {
        &self.value
    }

    /// Refuses `base_url` when it is another known provider's host than the one that issued
    /// the key (see [`crate::key_host`]).
    pub(crate) fn check_host(&self, base_url: &str) -> Result<(), LlmError> {
        crate::key_host::check(&self.value, &self.source, base_url)
    }

    /// `text` with every occurrence of the key (and every key-shaped word) replaced by `***`.
    pub(crate) fn redact(&self, text: &str) -> String {
        let key = (self.value != PLACEHOLDER_KEY).then(|| self.value.clone());
        Scrubber::of(key).text(text)
    }

    /// An HTTP header value holding `prefix` + the key, marked sensitive so that reqwest
    /// never prints it.
    pub(crate) fn header_value(&self, prefix: &str) -> Result<HeaderValue, LlmError> {
        let mut value = HeaderValue::from_str(&format!("{prefix}{}", self.value)).map_err(|_| {
            LlmError::Config(format!(
                "the API key from {} contains characters not allowed in an HTTP header (a line break or a non-ASCII character?); copy it again",
                self.source
            ))
        })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey(*** from {})", self.source)
    }
}

/// How patiently and how widely one client calls its provider.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Longest wait for one HTTP attempt, connection and body included.
    pub timeout: Duration,
    /// Longest wait for one call, every attempt and back-off included; `None`: only the
    /// attempts and their timeouts bound it.
    pub call_timeout: Option<Duration>,
    /// Attempts and back-off.
    pub retry: RetryPolicy,
    /// Most requests in flight at once to this endpoint; it adapts to 429s (see
    /// [`crate::limit`]). `None` leaves it unlimited until the first 429.
    pub max_concurrency: Option<usize>,
    /// Most requests a minute to this endpoint, evenly paced.
    pub requests_per_minute: Option<u32>,
    /// The run's scheduler: its run-wide cap and the per-endpoint gates shared with the other
    /// clients of the run. The default is a scheduler of this client's own.
    pub scheduler: Scheduler,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(120),
            call_timeout: None,
            retry: RetryPolicy::default(),
            max_concurrency: None,
            requests_per_minute: None,
            scheduler: Scheduler::default(),
        }
    }
}

/// The `reqwest::Client` of one model client. Every worker of a run shares it, and with it
/// its connection pool, so hundreds of concurrent calls to one provider reuse kept-alive
/// connections (and HTTP/2 where the server offers it) instead of opening a TLS session
/// each. It is not shared across model clients: pooled connections belong to the tokio
/// runtime that opened them. Redirects are not followed: reqwest drops `Authorization` on a
/// redirect to another host but keeps `x-api-key` and `api-key`, so a followed redirect
/// would hand an Anthropic or Azure key to wherever the endpoint points. The engine's other
/// HTTP clients (a Ray cluster's dashboard) are built here too, under the same policy.
pub fn build_http_client() -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .user_agent(concat!("skill-factory/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(512)
        .tcp_nodelay(true)
        .tcp_keepalive(Duration::from_secs(60))
        .build()
        .map_err(|e| {
            LlmError::Config(format!(
                "could not start the HTTP client: {}",
                error_chain(&e)
            ))
        })
}

/// Where and how one client POSTs its JSON: the URL, the headers (auth included), the
/// timeouts, the retry policy and the provider's gate in the run's scheduler.
#[derive(Debug)]
pub(crate) struct Transport {
    client: reqwest::Client,
    provider: String,
    endpoint: EndpointUrl,
    headers: HeaderMap,
    key: ApiKey,
    options: ClientOptions,
    gate: Arc<ProviderGate>,
}

impl Transport {
    /// A transport that sends `key` in header `auth_header` as `auth_prefix` + key, plus `extra`.
    pub(crate) fn new(
        provider: &str,
        endpoint: EndpointUrl,
        key: ApiKey,
        auth: (HeaderName, &str),
        extra: &[(HeaderName, &str)],
        options: ClientOptions,
    ) -> Result<Self, LlmError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(auth.0, key.header_value(auth.1)?);
        for (name, value) in extra {
            let value = HeaderValue::from_str(value).map_err(|_| {
                LlmError::Config(format!(
                    "header {name} has a value not allowed in HTTP: {value:?}"
                ))
            })?;
            headers.insert(name.clone(), value);
        }
        let gate = options.scheduler.gate(
            provider,
            endpoint.shown(),
            options.max_concurrency,
            options.requests_per_minute,
        );
        Ok(Transport {
            client: build_http_client()?,
            provider: provider.to_string(),
            endpoint,
            headers,
            key,
            options,
            gate,
        })
    }

    /// The URL requests are POSTed to, as it may be shown (credentials redacted).
    pub(crate) fn url(&self) -> &str {
        self.endpoint.shown()
    }

    /// `text` with the key and the endpoint's credentials redacted.
    fn redact(&self, text: &str) -> String {
        self.endpoint.redact(&self.key.redact(text))
    }

    /// POSTs `body` with retries and parses a 2xx body with `parse`; a parse failure counts as
    /// a malformed response, which is retried like a server error.
    pub(crate) async fn call<T>(
        &self,
        body: &serde_json::Value,
        parse: impl Fn(&str) -> Result<T, ResponseError>,
    ) -> Result<T, LlmError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| LlmError::Config(format!("could not encode the request: {e}")))?;
        let client = &self.client;
        let call = with_retries(&self.options.retry, &self.provider, || async {
            let slot = self.options.scheduler.acquire(&self.gate).await;
            let answer = self.post_once(client, bytes.clone()).await;
            slot.finish(match &answer {
                Ok(_) => Outcome::Answered,
                Err(AttemptError {
                    error: LlmError::Status { status: 429, .. },
                    retry_after,
                }) => Outcome::RateLimited(*retry_after),
                Err(_) => Outcome::Failed,
            });
            parse(&answer?).map_err(|problem| {
                AttemptError::from(LlmError::Malformed {
                    provider: self.provider.clone(),
                    detail: self.redact(&problem.to_string()),
                })
            })
        });
        let Some(limit) = self.options.call_timeout else {
            return call.await;
        };
        tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
            Err(LlmError::Timeout {
                provider: self.provider.clone(),
                seconds: limit.as_secs_f64(),
            })
        })
    }

    /// [`Transport::call`] for a chat answer, with the latency of the whole call (retries
    /// included) filled in.
    pub(crate) async fn chat(
        &self,
        body: &serde_json::Value,
        parse: impl Fn(&str) -> Result<ChatResponse, ResponseError>,
    ) -> Result<ChatResponse, LlmError> {
        let started = std::time::Instant::now();
        let mut response = self.call(body, parse).await?;
        response.latency = started.elapsed();
        Ok(response)
    }

    async fn post_once(
        &self,
        client: &reqwest::Client,
        body: Vec<u8>,
    ) -> Result<String, AttemptError> {
        let exchange = async {
            let response = client
                .post(self.endpoint.url())
                .headers(self.headers.clone())
                .body(body)
                .send()
                .await?;
            let status = response.status();
            let wait = retry_after(response.headers(), SystemTime::now());
            let location = location(response.headers());
            let text = response.text().await?;
            Ok::<_, reqwest::Error>((status, wait, location, text))
        };
        let (status, wait, location, text) =
            match tokio::time::timeout(self.options.timeout, exchange).await {
                Err(_) => {
                    return Err(AttemptError::from(LlmError::Timeout {
                        provider: self.provider.clone(),
                        seconds: self.options.timeout.as_secs_f64(),
                    }));
                }
                Ok(Err(error)) => {
                    return Err(AttemptError::from(LlmError::Connect {
                        provider: self.provider.clone(),
                        url: self.endpoint.shown().to_string(),
                        detail: self.redact(&error_chain(&error)),
                    }));
                }
                Ok(Ok(exchange)) => exchange,
            };
        if status.is_success() {
            return Ok(text);
        }
        let code = status.as_u16();
        let message = if status.is_redirection() {
            redirect_refused(location.as_deref())
        } else {
            format!("{}{}", error_message(&text), self.hint(code))
        };
        Err(AttemptError {
            error: LlmError::Status {
                provider: self.provider.clone(),
                status: code,
                body: self.redact(&message),
            },
            retry_after: wait,
        })
    }

    /// What to check for the statuses whose cause is usually on our side.
    fn hint(&self, status: u16) -> String {
        match status {
            401 | 403 => format!(
                " (API key: {}; check it, or set api_key in the provider block)",
                self.key.source()
            ),
            404 => format!(
                " (POST {}; check the model name and base_url)",
                self.endpoint.shown()
            ),
            _ => String::new(),
        }
    }
}

/// The `Location` of a response, for the message that says a redirect was not followed.
pub(crate) fn location(headers: &HeaderMap) -> Option<String> {
    headers
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Why a redirect answer is an error, and what to set instead.
pub(crate) fn redirect_refused(location: Option<&str>) -> String {
    format!(
        "the endpoint redirects to {}; redirects are not followed so that the key cannot leak: set base_url to the final URL",
        location.unwrap_or("(no location)")
    )
}

/// The message of an error body in the OpenAI (`{"error": {"message"}}`) or Anthropic
/// (`{"type": "error", "error": {"message"}}`) shape, else the start of the raw body.
pub(crate) fn error_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(body) {
        let candidates = [
            json.pointer("/error/message"),
            json.get("error"),
            json.get("message"),
            json.get("detail"),
        ];
        if let Some(text) = candidates.into_iter().flatten().find_map(|v| v.as_str()) {
            return text.trim().to_string();
        }
    }
    let body = body.trim();
    if body.is_empty() {
        "(empty body)".to_string()
    } else {
        truncate(body, 300)
    }
}

/// Why a 2xx body of a wire format is not an answer. A direct call reports it as
/// [`LlmError::Malformed`] (and retries), a batch as a failed request; both show its text with
/// the key redacted, which is why the start of the body is kept as text.
#[derive(Debug, thiserror::Error)]
pub enum ResponseError {
    /// The body is not the JSON object of the wire format.
    #[error("expected {expected} ({source}); body: {body}")]
    Shape {
        /// What the wire format answers with (`a chat completion object`, ...).
        expected: &'static str,
        /// What the JSON reader said.
        source: serde_json::Error,
        /// The start of the body.
        body: String,
    },
    /// A chat completion without a single choice to read the answer from.
    #[error("the completion has no choices; body: {body}")]
    NoChoices {
        /// The start of the body.
        body: String,
    },
}

/// A successful response body read as the wire format's JSON object; the error says what was
/// `expected` and shows the start of the body.
pub(crate) fn parse_body<T: serde::de::DeserializeOwned>(
    text: &str,
    expected: &'static str,
) -> Result<T, ResponseError> {
    serde_json::from_str(text).map_err(|source| ResponseError::Shape {
        expected,
        source,
        body: truncate(text, 200),
    })
}

/// The answer of a wire format as every client reports it: the text trimmed, and the model the
/// server says answered, or the one requested when it says none. The client sets the latency.
pub(crate) fn wire_response(
    text: &str,
    usage: TokenUsage,
    stop_reason: StopReason,
    answered_by: Option<String>,
    requested_model: &str,
) -> ChatResponse {
    ChatResponse {
        text: text.trim().to_string(),
        usage,
        stop_reason,
        model: answered_by
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| requested_model.to_string()),
        latency: Duration::default(),
        cached: false,
        batch: false,
    }
}

/// The first `max` characters of `text`, with an ellipsis when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// An error and its causes as one line, joined by `: `, a cause whose text an outer message
/// already quotes left out. Many errors quote their cause (`{error:#}` would show it twice);
/// some do not: reqwest's top-level message alone ("error sending request") does not say that
/// the connection was refused. Transport errors are flattened with it so that the key can be
/// redacted from all of it; the CLI prints every error with it.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in std::iter::successors(Some(error), |e| e.source()) {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    #[derive(Debug, thiserror::Error)]
    #[error("{message}")]
    struct Layer {
        message: &'static str,
        #[source]
        cause: Option<Box<Layer>>,
    }

    fn layer(message: &'static str, cause: Option<Layer>) -> Layer {
        Layer {
            message,
            cause: cause.map(Box::new),
        }
    }

    #[test]
    fn an_error_chain_shows_each_cause_once_and_only_when_not_quoted() {
        let refused = layer(
            "error sending request",
            Some(layer(
                "tcp connect error",
                Some(layer("Connection refused", None)),
            )),
        );
        assert_eq!(
            error_chain(&refused),
            "error sending request: tcp connect error: Connection refused"
        );
        let quoting = layer(
            "cannot read d.jsonl: Permission denied",
            Some(layer("Permission denied", None)),
        );
        assert_eq!(
            error_chain(&quoting),
            "cannot read d.jsonl: Permission denied"
        );
    }

    use super::*;

    #[test]
    fn api_keys_never_print() {
        let key = ApiKey::new("sk-very-secret-123", "OPENAI_API_KEY");
        let shown = format!("{key:?}");
        assert!(!shown.contains("sk-very"), "{shown}");
        assert!(shown.contains("OPENAI_API_KEY"));
    }

    #[test]
    fn redaction_removes_every_copy_of_the_key() {
        let key = ApiKey::new("sk-very-secret-123", "env");
        assert_eq!(
            key.redact("bad key sk-very-secret-123 (sk-very-secret-123)"),
            "bad key *** (***)"
        );
        assert_eq!(ApiKey::placeholder().redact("not-needed"), "not-needed");
    }

    #[test]
    fn error_messages_are_read_from_both_wire_formats() {
        assert_eq!(
            error_message(r#"{"error": {"message": "Invalid model", "type": "x"}}"#),
            "Invalid model"
        );
        assert_eq!(
            error_message(
                r#"{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}"#
            ),
            "invalid x-api-key"
        );
        assert_eq!(error_message(r#"{"detail": "Not Found"}"#), "Not Found");
        assert_eq!(error_message("  "), "(empty body)");
        assert_eq!(error_message(&"x".repeat(400)).chars().count(), 301);
    }

    #[test]
    fn keys_with_line_breaks_are_refused_without_showing_them() {
        let error = ApiKey::new("sk-abc\ndef-secret", "GROQ_API_KEY")
            .header_value("Bearer ")
            .unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("GROQ_API_KEY") && !text.contains("secret"),
            "{text}"
        );
    }
}
