//! The Anthropic Messages wire format (`POST /v1/messages`), spoken by Anthropic's API and by
//! llama.cpp's `llama-server`.

use async_trait::async_trait;
use reqwest::header::HeaderName;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::{ApiKey, ClientOptions, ResponseError, Transport};
use crate::request::{ChatModel, ChatRequest, ChatResponse, LlmError, StopReason, TokenUsage};
use crate::url::EndpointUrl;

/// Anthropic's own endpoint, used when a provider block gives no `base_url`.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The API version header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A client for the Messages API.
#[derive(Debug)]
pub struct AnthropicClient {
    model: String,
    transport: Transport,
}

impl AnthropicClient {
    /// A client for `{base_url}/v1/messages`. A base that already ends in `/v1` is accepted
    /// too, since OpenAI-style bases carry it and people copy them over.
    pub fn new(
        base_url: &str,
        key: ApiKey,
        model: &str,
        options: ClientOptions,
    ) -> Result<Self, LlmError> {
        let ends_in_v1 = reqwest::Url::parse(base_url).map_or_else(
            |_| base_url.trim_end_matches('/').ends_with("/v1"),
            |url| url.path().trim_end_matches('/').ends_with("/v1"),
        );
        let path = if ends_in_v1 {
            "messages"
        } else {
            "v1/messages"
        };
        let url = EndpointUrl::join(base_url, path, &[]);
        let transport = Transport::new(
            "anthropic",
            url,
            key,
            (HeaderName::from_static("x-api-key"), ""),
            &[(
                HeaderName::from_static("anthropic-version"),
                ANTHROPIC_VERSION,
            )],
            options,
        )?;
        Ok(AnthropicClient {
            model: model.to_string(),
            transport,
        })
    }
}

#[async_trait]
impl ChatModel for AnthropicClient {
    fn provider(&self) -> &str {
        "anthropic"
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

/// The JSON body: model, max_tokens, messages, temperature, `system` only when non-empty and
/// `stop_sequences` only when there are some.
pub(crate) fn request_body(model: &str, request: &ChatRequest) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": messages,
        "temperature": request.temperature,
    });
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        body["system"] = json!(system);
    }
    if !request.stop.is_empty() {
        body["stop_sequences"] = json!(request.stop);
    }
    body
}

#[derive(Deserialize)]
struct MessageResponse {
    #[serde(default)]
    model: Option<String>,
    content: Vec<ContentBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

/// Concatenates every `text` block, trimmed; reads usage and the stop reason.
pub fn parse_response(text: &str, requested_model: &str) -> Result<ChatResponse, ResponseError> {
    let message: MessageResponse = crate::http::parse_body(text, "a Messages API object")?;
    let reply: String = message
        .content
        .iter()
        .filter(|block| block.kind == "text")
        .filter_map(|block| block.text.as_deref())
        .collect();
    let stop_reason = match message.stop_reason.as_deref() {
        Some("max_tokens") => StopReason::MaxTokens,
        Some("end_turn") | Some("stop_sequence") => StopReason::End,
        _ => StopReason::Other,
    };
    let usage = message
        .usage
        .map_or_else(TokenUsage::default, |u| TokenUsage {
            input_tokens: u.input_tokens.unwrap_or(0),
            output_tokens: u.output_tokens.unwrap_or(0),
        });
    Ok(crate::http::wire_response(
        &reply,
        usage,
        stop_reason,
        message.model,
        requested_model,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_carries_system_top_level_only_when_non_empty() {
        let with = request_body(
            "claude-x",
            &ChatRequest::single(Some("Judge.".into()), "Hi", 0.0, 1024),
        );
        assert_eq!(
            with,
            json!({
                "model": "claude-x",
                "max_tokens": 1024,
                "messages": [{"role": "user", "content": "Hi"}],
                "temperature": 0.0,
                "system": "Judge."
            })
        );
        let without = request_body(
            "claude-x",
            &ChatRequest::single(Some(String::new()), "Hi", 0.0, 10),
        );
        assert!(without.get("system").is_none());
        assert!(without.get("stop_sequences").is_none());
    }

    #[test]
    fn reply_concatenates_text_blocks_and_skips_others() {
        let response = parse_response(
            r#"{"type":"message","model":"claude-x","content":[
                {"type":"thinking","thinking":"hmm"},{"type":"text","text":" Hello, "},{"type":"text","text":"world \n"}],
                "stop_reason":"max_tokens","usage":{"input_tokens":9,"output_tokens":4}}"#,
            "asked",
        )
        .unwrap();
        assert_eq!(response.text, "Hello, world");
        assert_eq!(response.stop_reason, StopReason::MaxTokens);
        assert_eq!(
            response.usage,
            TokenUsage {
                input_tokens: 9,
                output_tokens: 4
            }
        );
        assert_eq!(response.model, "claude-x");
    }

    #[test]
    fn end_turn_and_stop_sequence_both_mean_finished() {
        for reason in ["end_turn", "stop_sequence"] {
            let body = format!(r#"{{"content":[],"stop_reason":"{reason}"}}"#);
            assert_eq!(
                parse_response(&body, "m").unwrap().stop_reason,
                StopReason::End
            );
        }
    }

    #[test]
    fn bodies_without_content_are_malformed() {
        assert!(parse_response(r#"{"type":"error"}"#, "m").is_err());
    }
}
