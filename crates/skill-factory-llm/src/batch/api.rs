//! The HTTP client of the providers' batch APIs, which answer many requests at half price
//! within a day: Anthropic's Message Batches (`POST /v1/messages/batches`, then its status and results) and
//! OpenAI's Batch API (a JSONL file uploaded to `/v1/files`, `POST /v1/batches`, then the
//! output and error files).
//!
//! [`BatchApi`] submits requests in the wire format's own body (the same body a direct call
//! sends, so its answers match a direct call's), reports a batch's progress, and reads its
//! results back as [`ChatResponse`]s, each under the `custom_id` it was submitted with. A
//! request that errored or expired comes back as [`BatchAnswer::Failed`], for the caller to
//! ask directly. Redirects are not followed and the key is redacted, as for direct calls.

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use crate::http::{ApiKey, ResponseError, build_http_client, error_message};
use crate::request::{ChatRequest, ChatResponse, LlmError};
use crate::url::EndpointUrl;
use crate::{anthropic, openai};

/// The longest one exchange with a batch API may take (an upload of a large batch, or a
/// results file, takes a while; a look that hangs must not hold the run forever).
const EXCHANGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// Which provider's batch API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchWire {
    /// Anthropic's Message Batches.
    Anthropic,
    /// OpenAI's Files and Batches.
    OpenAi,
}

/// One request of a batch.
#[derive(Debug, Clone)]
pub struct BatchRequest {
    /// The id its answer comes back under (unique within the batch).
    pub custom_id: String,
    /// The request.
    pub request: ChatRequest,
}

/// How far a batch has got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchProgress {
    /// Still running: `done` of `total` requests have ended.
    Running {
        /// Requests that have ended.
        done: usize,
        /// Requests in the batch.
        total: usize,
    },
    /// Every request has ended (answered, errored or expired): the results can be read.
    Ended,
}

/// How [`BatchApi::wait`] polls: the first pause, the longest, and how many failed looks in a
/// row it puts up with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Polls {
    /// The pause after the first look.
    pub first: std::time::Duration,
    /// The longest pause.
    pub longest: std::time::Duration,
    /// Failed looks in a row that are tried again.
    pub failures: u32,
}

impl Default for Polls {
    /// A batch takes minutes to hours: from 5 s up to a minute between looks, and ten failed
    /// looks in a row put up with.
    fn default() -> Self {
        Polls {
            first: std::time::Duration::from_secs(5),
            longest: std::time::Duration::from_secs(60),
            failures: 10,
        }
    }
}

/// What became of one request of an ended batch.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchAnswer {
    /// The model's answer, as a direct call would have given it.
    Answered(ChatResponse),
    /// The request errored or expired; the reason, for a direct call to make up for it.
    Failed(String),
}

/// A client of one provider's batch API for one model.
#[derive(Debug)]
pub struct BatchApi {
    wire: BatchWire,
    provider: String,
    /// The provider's base, ending in `/v1` (shown with its credentials redacted).
    base: EndpointUrl,
    model: String,
    headers: HeaderMap,
    key: ApiKey,
    http: reqwest::Client,
}

impl BatchApi {
    /// A client for `base_url` (the base a direct client of the same provider is given; for
    /// Anthropic without or with `/v1`, for OpenAI with it).
    pub fn new(
        wire: BatchWire,
        provider: &str,
        base_url: &str,
        key: ApiKey,
        model: &str,
    ) -> Result<Self, LlmError> {
        let trimmed = base_url.trim_end_matches('/');
        let base = match wire {
            BatchWire::Anthropic if !trimmed.ends_with("/v1") => format!("{trimmed}/v1"),
            _ => trimmed.to_string(),
        };
        let mut headers = HeaderMap::new();
        match wire {
            BatchWire::Anthropic => {
                headers.insert(HeaderName::from_static("x-api-key"), key.header_value("")?);
                headers.insert(
                    HeaderName::from_static("anthropic-version"),
                    HeaderValue::from_static(anthropic::ANTHROPIC_VERSION),
                );
            }
            BatchWire::OpenAi => {
                headers.insert(AUTHORIZATION, key.header_value("Bearer ")?);
            }
        }
        Ok(BatchApi {
            wire,
            provider: provider.to_string(),
            base: EndpointUrl::new(base),
            model: model.to_string(),
            headers,
            key,
            http: build_http_client()?,
        })
    }

    /// Submits `requests` as one batch and returns its id.
    pub async fn submit(&self, requests: &[BatchRequest]) -> Result<String, LlmError> {
        let created = match self.wire {
            BatchWire::Anthropic => {
                let requests: Vec<Value> = requests
                    .iter()
                    .map(|r| {
                        json!({"custom_id": r.custom_id,
                               "params": anthropic::request_body(&self.model, &r.request)})
                    })
                    .collect();
                let body = json!({"requests": requests}).to_string();
                self.send(self.post_json("messages/batches", body)).await?
            }
            BatchWire::OpenAi => {
                let mut lines = String::new();
                for r in requests {
                    let line = json!({"custom_id": r.custom_id, "method": "POST",
                                      "url": "/v1/chat/completions",
                                      "body": openai::request_body(&self.model, &r.request)});
                    lines.push_str(&line.to_string());
                    lines.push('\n');
                }
                let (content_type, form) = multipart_upload(&lines);
                let file = self
                    .send(
                        self.http
                            .post(self.url("files"))
                            .header(CONTENT_TYPE, content_type)
                            .body(form),
                    )
                    .await?;
                let file_id = self.field(&file, "id")?;
                let body = json!({"input_file_id": file_id, "endpoint": "/v1/chat/completions",
                                  "completion_window": "24h"});
                self.send(self.post_json("batches", body.to_string()))
                    .await?
            }
        };
        self.field(&created, "id")
    }

    /// How far the batch `id` has got.
    pub async fn progress(&self, id: &str) -> Result<BatchProgress, LlmError> {
        let status = self.status(id).await?;
        let count = |pointer: &str| {
            status
                .pointer(pointer)
                .and_then(Value::as_u64)
                .map_or(0, |n| n as usize)
        };
        Ok(match self.wire {
            BatchWire::Anthropic => {
                if status["processing_status"] == "ended" {
                    BatchProgress::Ended
                } else {
                    let done = ["succeeded", "errored", "canceled", "expired"]
                        .iter()
                        .map(|k| count(&format!("/request_counts/{k}")))
                        .sum();
                    BatchProgress::Running {
                        done,
                        total: done + count("/request_counts/processing"),
                    }
                }
            }
            BatchWire::OpenAi => match status["status"].as_str() {
                Some("completed" | "expired" | "failed" | "cancelled") => BatchProgress::Ended,
                _ => BatchProgress::Running {
                    done: count("/request_counts/completed") + count("/request_counts/failed"),
                    total: count("/request_counts/total"),
                },
            },
        })
    }

    /// Polls the batch `id` until it has ended, waiting `polls.first` after the first look and
    /// half as long again after each next one, up to `polls.longest`, and telling `seen` the
    /// progress of every look. A look that fails to reach the provider (a connection, a
    /// timeout, a 5xx or 429) is tried again at the next poll, up to `polls.failures` in a
    /// row; any other error ends the wait.
    pub async fn wait(
        &self,
        id: &str,
        polls: Polls,
        mut seen: impl FnMut(&BatchProgress),
    ) -> Result<(), LlmError> {
        let mut pause = polls.first;
        let mut failures = 0;
        loop {
            match self.progress(id).await {
                Ok(BatchProgress::Ended) => {
                    seen(&BatchProgress::Ended);
                    return Ok(());
                }
                Ok(progress) => {
                    failures = 0;
                    seen(&progress);
                }
                Err(error) if error.is_retryable() && failures < polls.failures => {
                    failures += 1;
                    tracing::debug!("batch {id}: a poll failed ({error}); trying again");
                }
                Err(error) => return Err(error),
            }
            tokio::time::sleep(pause).await;
            pause = pause.mul_f64(1.5).min(polls.longest);
        }
    }

    /// The answers of the ended batch `id`, each under its `custom_id`.
    pub async fn results(&self, id: &str) -> Result<Vec<(String, BatchAnswer)>, LlmError> {
        let mut answers = Vec::new();
        match self.wire {
            BatchWire::Anthropic => {
                let text = self
                    .text(
                        self.http
                            .get(self.url(&format!("messages/batches/{id}/results"))),
                    )
                    .await?;
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    let line = self.json(line)?;
                    let custom_id = self.field(&line, "custom_id")?;
                    let result = &line["result"];
                    let answer = if result["type"] == "succeeded" {
                        self.answered(anthropic::parse_response(
                            &result["message"].to_string(),
                            &self.model,
                        ))
                    } else {
                        BatchAnswer::Failed(format!(
                            "the batch request {}: {}",
                            result["type"].as_str().unwrap_or("failed"),
                            error_message(&result["error"].to_string())
                        ))
                    };
                    answers.push((custom_id, answer));
                }
            }
            BatchWire::OpenAi => {
                let status = self.status(id).await?;
                for file in ["output_file_id", "error_file_id"] {
                    let Some(file_id) = status[file].as_str() else {
                        continue;
                    };
                    let text = self
                        .text(self.http.get(self.url(&format!("files/{file_id}/content"))))
                        .await?;
                    for line in text.lines().filter(|l| !l.trim().is_empty()) {
                        let line = self.json(line)?;
                        let custom_id = self.field(&line, "custom_id")?;
                        let response = &line["response"];
                        let answer = if response["status_code"] == 200 {
                            self.answered(openai::parse_response(
                                &response["body"].to_string(),
                                &self.model,
                            ))
                        } else if line["error"].is_object() {
                            BatchAnswer::Failed(format!(
                                "the batch request failed: {}",
                                error_message(&json!({"error": line["error"]}).to_string())
                            ))
                        } else {
                            BatchAnswer::Failed(format!(
                                "the batch request got HTTP {}: {}",
                                response["status_code"],
                                error_message(&response["body"].to_string())
                            ))
                        };
                        answers.push((custom_id, answer));
                    }
                }
            }
        }
        Ok(answers)
    }

    fn answered(&self, parsed: Result<ChatResponse, ResponseError>) -> BatchAnswer {
        match parsed {
            Ok(response) => BatchAnswer::Answered(response),
            Err(problem) => BatchAnswer::Failed(self.key.redact(&problem.to_string())),
        }
    }

    async fn status(&self, id: &str) -> Result<Value, LlmError> {
        let path = match self.wire {
            BatchWire::Anthropic => format!("messages/batches/{id}"),
            BatchWire::OpenAi => format!("batches/{id}"),
        };
        self.send(self.http.get(self.url(&path))).await
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base.url())
    }

    fn post_json(&self, path: &str, body: String) -> reqwest::RequestBuilder {
        self.http
            .post(self.url(path))
            .header(CONTENT_TYPE, "application/json")
            .body(body)
    }

    /// A response body as text, or the error the status means.
    async fn text(&self, request: reqwest::RequestBuilder) -> Result<String, LlmError> {
        let connect = |e: reqwest::Error| LlmError::Connect {
            provider: self.provider.clone(),
            url: self.base.shown().to_string(),
            detail: self
                .base
                .redact(&self.key.redact(&crate::http::error_chain(&e))),
        };
        let response = request
            .headers(self.headers.clone())
            .timeout(EXCHANGE_TIMEOUT)
            .send()
            .await
            .map_err(connect)?;
        let status = response.status();
        let location = crate::http::location(response.headers());
        let text = response.text().await.map_err(connect)?;
        if status.is_success() {
            return Ok(text);
        }
        let message = if status.is_redirection() {
            crate::http::redirect_refused(location.as_deref())
        } else {
            error_message(&text)
        };
        Err(LlmError::Status {
            provider: self.provider.clone(),
            status: status.as_u16(),
            body: self.key.redact(&message),
        })
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<Value, LlmError> {
        let text = self.text(request).await?;
        self.json(&text)
    }

    fn json(&self, text: &str) -> Result<Value, LlmError> {
        serde_json::from_str(text).map_err(|e| LlmError::Malformed {
            provider: self.provider.clone(),
            detail: self.key.redact(&format!(
                "a batch answer that is not JSON ({e}): {}",
                crate::http::truncate(text, 200)
            )),
        })
    }

    fn field(&self, value: &Value, name: &str) -> Result<String, LlmError> {
        value[name]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| LlmError::Malformed {
                provider: self.provider.clone(),
                detail: format!("a batch answer without `{name}`"),
            })
    }
}

/// The multipart form of an OpenAI file upload for a batch: its content type and body. The
/// boundary is derived from the content, so it cannot be a line of it.
fn multipart_upload(lines: &str) -> (String, String) {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(lines.as_bytes());
    let boundary: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    let boundary = format!("skill-factory-{boundary}");
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"batch.jsonl\"\r\n\
         Content-Type: application/jsonl\r\n\r\n{lines}\r\n--{boundary}--\r\n"
    );
    (format!("multipart/form-data; boundary={boundary}"), body)
}
