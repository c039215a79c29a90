//! The OpenAI chat-completions wire format: OpenAI itself, Azure OpenAI, and every compatible
//! server (OpenRouter, Together, Groq, DeepSeek, vLLM, LM Studio, Ollama, llama-server, ...).

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, HeaderName};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::{ApiKey, ClientOptions, ResponseError, Transport};
use crate::request::{ChatModel, ChatRequest, ChatResponse, LlmError, StopReason, TokenUsage};
use crate::url::EndpointUrl;

/// The Azure OpenAI API version used when a provider block names none.
pub const DEFAULT_AZURE_API_VERSION: &str = "2024-10-21";

/// A client for `POST .../chat/completions`.
#[derive(Debug)]
pub struct OpenAiClient {
    provider: String,
    model: String,
    transport: Transport,
}

impl OpenAiClient {
    /// A client for `{base_url}/chat/completions` (the base includes `/v1`) authenticating
    /// with `Authorization: Bearer <key>`; `provider` names it in messages and cache keys.
    pub fn new(
        provider: &str,
        base_url: &str,
        key: ApiKey,
        model: &str,
        options: ClientOptions,
    ) -> Result<Self, LlmError> {
        let endpoint = EndpointUrl::join(base_url, "chat/completions", &[]);
        let transport = Transport::new(
            provider,
            endpoint,
            key,
            (AUTHORIZATION, "Bearer "),
            &[],
            options,
        )?;
        Ok(OpenAiClient {
            provider: provider.to_string(),
            model: model.to_string(),
            transport,
        })
    }

    /// An Azure OpenAI client: `{endpoint}/openai/deployments/{deployment}/chat/completions?
    /// api-version={api_version}`, authenticating with the `api-key` header.
    pub fn azure(
        endpoint: &str,
        deployment: &str,
        api_version: &str,
        key: ApiKey,
        model: &str,
        options: ClientOptions,
    ) -> Result<Self, LlmError> {
        let url = EndpointUrl::join(
            endpoint,
            &format!("openai/deployments/{deployment}/chat/completions"),
            &[("api-version", api_version)],
        );
        let transport = Transport::new(
            "azure",
            url,
            key,
            (HeaderName::from_static("api-key"), ""),
            &[],
            options,
        )?;
        Ok(OpenAiClient {
            provider: "azure".to_string(),
            model: model.to_string(),
            transport,
        })
    }
}

#[async_trait]
impl ChatModel for OpenAiClient {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn endpoint(&self) -> &str {
        self.transport.url()
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = request_body(&self.model, request);
        self.transport
            .chat(&body, |text| parse_response(text, &self.model))
            .await
    }
}

/// The JSON body: model, messages (system first when non-empty), temperature, max_tokens,
/// and stop only when there are stop sequences.
pub(crate) fn request_body(model: &str, request: &ChatRequest) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        messages.push(json!({"role": message.role.as_str(), "content": message.content}));
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
    });
    if !request.stop.is_empty() {
        body["stop"] = json!(request.stop);
    }
    body
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    model: Option<String>,
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<ChoiceMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// Reads the first choice's content (null → ""), trimmed, the usage and the finish reason.
pub fn parse_response(text: &str, requested_model: &str) -> Result<ChatResponse, ResponseError> {
    let completion: Completion = crate::http::parse_body(text, "a chat completion object")?;
    let choice = completion
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| ResponseError::NoChoices {
            body: crate::http::truncate(text, 200),
        })?;
    let content = choice.message.and_then(|m| m.content).unwrap_or_default();
    let stop_reason = match choice.finish_reason.as_deref() {
        Some("length") => StopReason::MaxTokens,
        Some("stop") => StopReason::End,
        _ => StopReason::Other,
    };
    let usage = completion
        .usage
        .map_or_else(TokenUsage::default, |u| TokenUsage {
            input_tokens: u.prompt_tokens.unwrap_or(0),
            output_tokens: u.completion_tokens.unwrap_or(0),
        });
    Ok(crate::http::wire_response(
        &content,
        usage,
        stop_reason,
        completion.model,
        requested_model,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Message, Role};

    #[test]
    fn body_puts_a_non_empty_system_prompt_first() {
        let mut request = ChatRequest::single(Some("Be brief.".into()), "Hi", 0.0, 64);
        request.messages.push(Message {
            role: Role::Assistant,
            content: "Hello".into(),
        });
        let body = request_body("gpt-x", &request);
        assert_eq!(
            body,
            json!({
                "model": "gpt-x",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": "Hello"}
                ],
                "temperature": 0.0,
                "max_tokens": 64
            })
        );
    }

    #[test]
    fn body_omits_an_empty_system_prompt_and_sends_stop_sequences() {
        let mut request = ChatRequest::single(Some(String::new()), "Hi", 0.5, 10);
        request.stop = vec!["END".into()];
        let body = request_body("m", &request);
        assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
        assert_eq!(body["stop"], json!(["END"]));
    }

    #[test]
    fn null_content_reads_as_empty_and_length_as_max_tokens() {
        let response = parse_response(
            r#"{"choices":[{"message":{"role":"assistant","content":null},"finish_reason":"length"}]}"#,
            "asked",
        )
        .unwrap();
        assert_eq!(response.text, "");
        assert_eq!(response.stop_reason, StopReason::MaxTokens);
        assert_eq!(response.model, "asked");
        assert_eq!(response.usage, TokenUsage::default());
    }

    #[test]
    fn content_is_trimmed_and_usage_read() {
        let response = parse_response(
            r#"{"model":"served","choices":[{"message":{"content":"  Paris \n"},"finish_reason":"stop"}],
                "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#,
            "asked",
        )
        .unwrap();
        assert_eq!(response.text, "Paris");
        assert_eq!(response.stop_reason, StopReason::End);
        assert_eq!(response.model, "served");
        assert_eq!(
            response.usage,
            TokenUsage {
                input_tokens: 12,
                output_tokens: 3
            }
        );
    }

    #[test]
    fn debug_output_never_shows_the_key() {
        let key = ApiKey::new("sk-debug-secret-42", "OPENAI_API_KEY");
        let client = OpenAiClient::new(
            "openai",
            "https://x.example/v1",
            key,
            "m",
            ClientOptions::default(),
        )
        .unwrap();
        let shown = format!("{client:?}");
        assert!(!shown.contains("sk-debug-secret-42"), "{shown}");
    }

    #[test]
    fn bodies_without_choices_are_malformed() {
        assert!(
            parse_response(r#"{"choices":[]}"#, "m")
                .unwrap_err()
                .to_string()
                .contains("no choices")
        );
        assert!(
            parse_response("<html>", "m")
                .unwrap_err()
                .to_string()
                .contains("expected a chat completion")
        );
    }
}
