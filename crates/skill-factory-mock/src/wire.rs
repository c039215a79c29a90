//! The two wire formats, from the server's side: reading a request into a [`Conversation`]
//! and writing replies and errors in the shapes the official OpenAI and Anthropic SDKs accept.

use serde_json::{Value, json};

/// Which API a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAI chat completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

/// What the responder needs from a request, whichever format it came in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    /// Model named by the request (echoed back).
    pub model: String,
    /// System prompt ("" when none).
    pub system: String,
    /// The last user message ("" when none).
    pub user: String,
    /// Words in the system prompt and every message: the mock's prompt token count.
    pub prompt_words: u64,
    /// The request's max_tokens, if any.
    pub max_tokens: Option<u64>,
    /// The request's sampling temperature, if any.
    pub temperature: Option<f64>,
}

/// Text of a `content` value: a string, or the `text` of every part in a list of parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Number of whitespace-separated words: the mock's token count.
pub fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// Why a request cannot be answered: the message of the 400 answer (or of the errored result
/// of a batch request), in the wording a real provider's client would show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The body did not parse as JSON.
    #[error("the body is not JSON")]
    NotJson,
    /// No `messages` list, in either format.
    #[error("`messages` must be a list")]
    NoMessages,
}

/// Reads a request body; `Err` says what is wrong with it, for a 400 answer.
pub fn parse_request(format: Format, body: &Value) -> Result<Conversation, RequestError> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or(RequestError::NoMessages)?;
    let mut system_parts = Vec::new();
    if format == Format::Anthropic
        && let Some(system) = body.get("system")
    {
        system_parts.push(content_text(system));
    }
    let mut user = String::new();
    let mut prompt_words = 0;
    for message in messages {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let text = message.get("content").map(content_text).unwrap_or_default();
        match role {
            "system" | "developer" if format == Format::OpenAi => system_parts.push(text),
            "user" => {
                prompt_words += words(&text);
                user = text;
            }
            _ => prompt_words += words(&text),
        }
    }
    let system = system_parts.join("\n");
    prompt_words += words(&system);
    let max_tokens = ["max_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|key| body.get(*key).and_then(Value::as_u64));
    Ok(Conversation {
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("mock")
            .to_string(),
        system,
        user,
        prompt_words,
        max_tokens,
        temperature: body.get("temperature").and_then(Value::as_f64),
    })
}

/// A successful reply; `truncated` means it was cut at max_tokens.
pub fn reply_body(
    format: Format,
    number: u64,
    conversation: &Conversation,
    text: &str,
    truncated: bool,
) -> Value {
    let output_words = words(text);
    match format {
        Format::OpenAi => json!({
            "id": format!("chatcmpl-mock-{number}"),
            "object": "chat.completion",
            "created": unix_now(),
            "model": conversation.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": null},
                "logprobs": null,
                "finish_reason": if truncated { "length" } else { "stop" },
            }],
            "usage": {
                "prompt_tokens": conversation.prompt_words,
                "completion_tokens": output_words,
                "total_tokens": conversation.prompt_words + output_words,
            },
            "system_fingerprint": null,
        }),
        Format::Anthropic => json!({
            "id": format!("msg_mock_{number}"),
            "type": "message",
            "role": "assistant",
            "model": conversation.model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": if truncated { "max_tokens" } else { "end_turn" },
            "stop_sequence": null,
            "usage": {"input_tokens": conversation.prompt_words, "output_tokens": output_words},
        }),
    }
}

/// The kinds of error the mock answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 400.
    InvalidRequest,
    /// 401.
    Authentication,
    /// 429.
    RateLimit,
    /// 500.
    Server,
}

/// An error body in the format's own shape.
pub fn error_body(format: Format, kind: ErrorKind, message: &str) -> Value {
    let (openai_type, anthropic_type) = match kind {
        ErrorKind::InvalidRequest => ("invalid_request_error", "invalid_request_error"),
        ErrorKind::Authentication => ("invalid_request_error", "authentication_error"),
        ErrorKind::RateLimit => ("rate_limit_exceeded", "rate_limit_error"),
        ErrorKind::Server => ("server_error", "api_error"),
    };
    match format {
        Format::OpenAi => {
            json!({"error": {"message": message, "type": openai_type, "param": null, "code": null}})
        }
        Format::Anthropic => {
            json!({"type": "error", "error": {"type": anthropic_type, "message": message}})
        }
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_requests_take_system_from_system_messages() {
        let body = json!({"model": "m", "max_tokens": 9, "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "an answer"},
            {"role": "user", "content": [{"type": "text", "text": "second"}]}
        ]});
        let conversation = parse_request(Format::OpenAi, &body).unwrap();
        assert_eq!(conversation.system, "Be brief.");
        assert_eq!(conversation.user, "second");
        assert_eq!(conversation.prompt_words, 7);
        assert_eq!(conversation.max_tokens, Some(9));
    }

    #[test]
    fn anthropic_requests_take_the_top_level_system() {
        let body = json!({"model": "c", "system": [{"type": "text", "text": "Judge."}],
                          "messages": [{"role": "user", "content": "hi"}]});
        let conversation = parse_request(Format::Anthropic, &body).unwrap();
        assert_eq!(
            (conversation.system.as_str(), conversation.user.as_str()),
            ("Judge.", "hi")
        );
    }

    #[test]
    fn requests_without_messages_are_refused() {
        assert_eq!(
            parse_request(Format::OpenAi, &json!({"model": "m"})),
            Err(RequestError::NoMessages)
        );
    }
}
