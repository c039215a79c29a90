//! The System One HTTP client.
//!
//! One request asks every question about one state:
//! `POST {"model", "state", "questions": {id: {"type": "choice", "instructions", "criteria":
//! {"true", "false"}}}}` with `Authorization: Bearer <key>` when a key is configured.
//!
//! Failures: 429, 5xx, timeouts, network errors and a 2xx body that is not JSON (cut short
//! by a proxy or a dropped connection) are retried (up to `max_retries` more attempts,
//! waiting `retry_delay × 2^n`, or longer when the host sends `Retry-After`); any other
//! status fails at once, and so does JSON that is not a full set of valid answers, since
//! asking again would get the same. Redirects are not followed: a redirected POST would carry the key to
//! wherever the redirect points. The key is redacted from every error text.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::SystemOneError;
use super::answer::{Answers, parse_answers};
use super::provider::{Endpoint, SystemOneSettings};
use super::question::Question;
use crate::http::{error_chain, truncate};
use crate::retry::retry_after;
use crate::url::EndpointUrl;

/// How many characters of an error body are quoted in a message.
const ERROR_BODY_CHARS: usize = 200;

/// The longest wait granted to a host's `Retry-After`.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Something that answers yes/no questions about a state with P(true).
#[async_trait]
pub trait DecisionModel: Send + Sync {
    /// The model asked: the `m` under which its answers are cached.
    fn model(&self) -> &str;

    /// Asks every question about `state` in one request; all answers or an error.
    async fn ask(&self, state: &str, questions: &[(String, Question)]) -> Asked;
}

/// What asking a [`DecisionModel`] gives: every answer, or why not.
pub type Asked = Result<Answers, SystemOneError>;

/// A System One model behind an HTTP endpoint.
#[derive(Debug)]
pub struct SystemOneClient {
    http: reqwest::Client,
    endpoint: Endpoint,
    /// The endpoint's URL, and how it may be shown.
    url: EndpointUrl,
    headers: HeaderMap,
    timeout: Duration,
    max_retries: u32,
    retry_delay: Duration,
}

/// One failed attempt, and whether another may succeed.
struct Failure {
    error: SystemOneError,
    retry: bool,
    wait: Option<Duration>,
}

impl SystemOneClient {
    /// A client for `settings`, reading keys and the Cloudflare account through `env`.
    pub fn new(
        settings: &SystemOneSettings,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, SystemOneError> {
        let endpoint = settings.resolve(env)?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(key) = &endpoint.key {
            let value = key
                .header_value("Bearer ")
                .map_err(|e| SystemOneError::Config(e.to_string()))?;
            headers.insert(AUTHORIZATION, value);
        }
        for (name, value) in endpoint.headers {
            headers.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("skill-factory/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| SystemOneError::Config(format!("could not start the HTTP client: {e}")))?;
        Ok(SystemOneClient {
            http,
            url: EndpointUrl::new(endpoint.url.clone()),
            endpoint,
            headers,
            timeout: settings.timeout,
            max_retries: settings.max_retries,
            retry_delay: settings.retry_delay,
        })
    }

    /// The provider's name.
    pub fn provider(&self) -> &str {
        self.endpoint.provider
    }

    /// The URL requests go to, as it may be shown (credentials redacted).
    pub fn url(&self) -> &str {
        self.url.shown()
    }

    fn redact(&self, text: &str) -> String {
        let text = match &self.endpoint.key {
            Some(key) => key.redact(text),
            None => text.to_string(),
        };
        self.url.redact(&text)
    }

    fn request_error(&self, detail: String) -> SystemOneError {
        SystemOneError::Request {
            provider: self.endpoint.provider.to_string(),
            detail: self.redact(&detail),
        }
    }

    async fn attempt(&self, body: &[u8], ids: &[String]) -> Result<Answers, Failure> {
        let exchange = async {
            let response = self
                .http
                .post(self.url.url())
                .headers(self.headers.clone())
                .body(body.to_vec())
                .send()
                .await?;
            let status = response.status();
            let wait = retry_after(response.headers(), SystemTime::now());
            let location = crate::http::location(response.headers());
            let text = response.text().await?;
            Ok::<_, reqwest::Error>((status, wait, location, text))
        };
        let (status, wait, location, text) =
            match tokio::time::timeout(self.timeout, exchange).await {
                Err(_) => {
                    return Err(Failure {
                        error: self.request_error(format!(
                            "no answer within {} s",
                            self.timeout.as_secs_f64()
                        )),
                        retry: true,
                        wait: None,
                    });
                }
                Ok(Err(error)) => {
                    return Err(Failure {
                        error: self.request_error(error_chain(&error)),
                        retry: true,
                        wait: None,
                    });
                }
                Ok(Ok(exchange)) => exchange,
            };
        let code = status.as_u16();
        if status.is_success() {
            let json: Value = serde_json::from_str(&text).map_err(|_| Failure {
                error: SystemOneError::InvalidAnswer("the response is not JSON".to_string()),
                retry: true,
                wait: None,
            })?;
            return parse_answers(&json, ids, &self.endpoint.model).map_err(|problem| Failure {
                error: SystemOneError::InvalidAnswer(self.redact(&problem.to_string())),
                retry: false,
                wait: None,
            });
        }
        let detail = if status.is_redirection() {
            format!(
                "HTTP {code}: {}",
                crate::http::redirect_refused(location.as_deref())
            )
        } else {
            let mut detail = format!("HTTP {code}: {}", truncate(text.trim(), ERROR_BODY_CHARS));
            if code == 401 || code == 403 {
                let source = self
                    .endpoint
                    .key
                    .as_ref()
                    .map_or("no key was sent", |k| k.source());
                detail.push_str(&format!(" (check the key: {source})"));
            }
            detail
        };
        Err(Failure {
            error: self.request_error(detail),
            retry: code == 429 || code >= 500,
            wait,
        })
    }
}

#[async_trait]
impl DecisionModel for SystemOneClient {
    fn model(&self) -> &str {
        &self.endpoint.model
    }

    async fn ask(&self, state: &str, questions: &[(String, Question)]) -> Asked {
        let mut wire = Map::new();
        for (id, question) in questions {
            wire.insert(id.clone(), question.wire());
        }
        let body = json!({"model": self.endpoint.model, "state": state, "questions": wire});
        let body = serde_json::to_vec(&body)
            .map_err(|e| SystemOneError::Config(format!("could not encode the request: {e}")))?;
        let ids: Vec<String> = questions.iter().map(|(id, _)| id.clone()).collect();
        let mut retries_made = 0;
        loop {
            let failure = match self.attempt(&body, &ids).await {
                Ok(answers) => return Ok(answers),
                Err(failure) => failure,
            };
            if !failure.retry || retries_made >= self.max_retries {
                return Err(failure.error);
            }
            let backoff = self
                .retry_delay
                .saturating_mul(1u32 << retries_made.min(16));
            let wait = failure
                .wait
                .map_or(backoff, |asked| asked.min(MAX_RETRY_AFTER).max(backoff));
            tracing::debug!(provider = self.endpoint.provider, retry = retries_made + 1, wait_ms = wait.as_millis() as u64, error = %failure.error, "retrying System One request");
            tokio::time::sleep(wait).await;
            retries_made += 1;
        }
    }
}
