//! The three wire formats, from the server's side: reading a request into a [`Conversation`]
//! and writing a [`Reply`] and errors in the shapes the official OpenAI and Anthropic SDKs
//! accept (streamed replies are in [`crate::stream`]).

use serde_json::{Value, json};

/// Which API a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAI chat completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses (what the Codex CLI speaks).
    Responses,
}

/// What the responder and the router need from a request, whichever format it came in.
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
    /// The request's cap on output tokens (`max_tokens`, `max_completion_tokens` or
    /// `max_output_tokens`), if any.
    pub max_tokens: Option<u64>,
    /// The request's sampling temperature, if any.
    pub temperature: Option<f64>,
    /// Every system, developer and user text, in order: where a skill listing may be.
    pub context: Vec<String>,
    /// The last user text part that does not start with `<` ("" when none): agents put
    /// reminders and environment notes in parts of their own, before the request itself.
    pub query: String,
    /// The names of the tools the request offers.
    pub tools: Vec<String>,
    /// Whether a tool's result is in the conversation (the agent already ran a tool call).
    pub tool_result: bool,
    /// Whether the request asks for a streamed reply.
    pub stream: bool,
}

/// The text parts of a `content` value: a string, or the `text` of every part in a list of
/// parts (tool calls and results have none).
fn text_parts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// Text of a `content` value: its text parts, one per line.
fn content_text(content: &Value) -> String {
    text_parts(content).join("\n")
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
    /// No `messages` list, in a chat format.
    #[error("`messages` must be a list")]
    NoMessages,
    /// No `input` string or list, in the Responses format.
    #[error("`input` must be a string or a list")]
    NoInput,
}

/// A conversation being read, message by message.
#[derive(Default)]
struct Reading {
    system_parts: Vec<String>,
    conversation: Conversation,
}

impl Reading {
    /// Takes in one message; `system_roles` says whether its format keeps system and
    /// developer messages as the system prompt (OpenAI's formats do, Anthropic's has a
    /// top-level `system` and counts a system-role message as one more message).
    fn message(&mut self, role: &str, content: Option<&Value>, system_roles: bool) {
        let parts = content.map(text_parts).unwrap_or_default();
        let text = parts.join("\n");
        let conversation = &mut self.conversation;
        if content.is_some_and(holds_tool_result) {
            conversation.tool_result = true;
        }
        match role {
            "system" | "developer" => {
                conversation.context.push(text.clone());
                if system_roles {
                    self.system_parts.push(text);
                } else {
                    conversation.prompt_words += words(&text);
                }
            }
            "user" => {
                conversation.prompt_words += words(&text);
                if let Some(query) = parts
                    .iter()
                    .rev()
                    .find(|p| !p.trim_start().starts_with('<'))
                {
                    conversation.query = query.clone();
                }
                conversation.context.push(text.clone());
                conversation.user = text;
            }
            "tool" => {
                conversation.tool_result = true;
                conversation.prompt_words += words(&text);
            }
            _ => conversation.prompt_words += words(&text),
        }
    }

    /// The conversation, with the request's own settings.
    fn finish(mut self, body: &Value) -> Conversation {
        let system = self.system_parts.join("\n");
        let conversation = &mut self.conversation;
        conversation.prompt_words += words(&system);
        conversation.system = system;
        conversation.model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("mock")
            .to_string();
        conversation.max_tokens = ["max_tokens", "max_completion_tokens", "max_output_tokens"]
            .iter()
            .find_map(|key| body.get(*key).and_then(Value::as_u64));
        conversation.temperature = body.get("temperature").and_then(Value::as_f64);
        conversation.tools = body
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| tools.iter().filter_map(tool_name).collect())
            .unwrap_or_default();
        conversation.stream = body.get("stream").and_then(Value::as_bool) == Some(true);
        self.conversation
    }
}

/// Whether a message's content holds an Anthropic `tool_result` part.
fn holds_tool_result(content: &Value) -> bool {
    content.as_array().is_some_and(|parts| {
        parts
            .iter()
            .any(|p| p.get("type").and_then(Value::as_str) == Some("tool_result"))
    })
}

/// A tool's name, where each format puts it: Anthropic and Responses at the top of the tool,
/// chat completions under `function`.
fn tool_name(tool: &Value) -> Option<String> {
    tool.get("name")
        .or_else(|| tool.get("function").and_then(|f| f.get("name")))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Reads a request body; `Err` says what is wrong with it, for a 400 answer.
pub fn parse_request(format: Format, body: &Value) -> Result<Conversation, RequestError> {
    if format == Format::Responses {
        return parse_responses(body);
    }
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or(RequestError::NoMessages)?;
    let mut reading = Reading::default();
    if format == Format::Anthropic
        && let Some(system) = body.get("system")
    {
        let text = content_text(system);
        reading.conversation.context.push(text.clone());
        reading.system_parts.push(text);
    }
    for message in messages {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        reading.message(role, message.get("content"), format == Format::OpenAi);
    }
    Ok(reading.finish(body))
}

/// Reads a Responses request: `instructions` is the system prompt, `input` a string (one
/// user message) or a list of items (messages, function calls and their outputs).
fn parse_responses(body: &Value) -> Result<Conversation, RequestError> {
    let mut reading = Reading::default();
    if let Some(instructions) = body.get("instructions").and_then(Value::as_str) {
        reading.conversation.context.push(instructions.to_string());
        reading.system_parts.push(instructions.to_string());
    }
    match body.get("input") {
        Some(text @ Value::String(_)) => reading.message("user", Some(text), true),
        Some(Value::Array(items)) => {
            for item in items {
                // An item without a type is a message, as the API's short form has it.
                match item
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("message")
                {
                    "message" => {
                        let role = item.get("role").and_then(Value::as_str).unwrap_or("");
                        reading.message(role, item.get("content"), true);
                    }
                    kind if kind.ends_with("_call_output") => {
                        reading.conversation.tool_result = true;
                        let output = item.get("output").map(content_text).unwrap_or_default();
                        reading.conversation.prompt_words += words(&output);
                    }
                    _ => {
                        let arguments = item.get("arguments").and_then(Value::as_str);
                        reading.conversation.prompt_words += words(arguments.unwrap_or(""));
                    }
                }
            }
        }
        _ => return Err(RequestError::NoInput),
    }
    Ok(reading.finish(body))
}

/// One part of a reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Text for the user.
    Text(String),
    /// A call of the tool `name` with `input` (a JSON object).
    ToolCall {
        /// The tool's name, as the request offered it.
        name: String,
        /// Its arguments.
        input: Value,
    },
}

/// What the mock answers, whichever format carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The parts, in order.
    pub blocks: Vec<Block>,
    /// Whether the reply was cut at the request's max_tokens.
    pub truncated: bool,
}

impl Reply {
    /// A reply of one text.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply {
            blocks: vec![Block::Text(text.into())],
            truncated: false,
        }
    }

    /// A reply of one tool call.
    pub fn tool_call(name: &str, input: Value) -> Reply {
        Reply {
            blocks: vec![Block::ToolCall {
                name: name.to_string(),
                input,
            }],
            truncated: false,
        }
    }

    /// The reply cut at `max_tokens` words of text, if it has more: the text that fits, and
    /// nothing after the block where the words ran out.
    pub fn cut_to(self, max_tokens: Option<u64>) -> Reply {
        let Some(mut room) = max_tokens else {
            return self;
        };
        let mut blocks = Vec::new();
        for block in self.blocks {
            match block {
                Block::Text(text) if words(&text) > room => {
                    let kept = text
                        .split_whitespace()
                        .take(usize::try_from(room).unwrap_or(usize::MAX))
                        .collect::<Vec<_>>()
                        .join(" ");
                    blocks.push(Block::Text(kept));
                    return Reply {
                        blocks,
                        truncated: true,
                    };
                }
                Block::Text(text) => {
                    room -= words(&text);
                    blocks.push(Block::Text(text));
                }
                call => blocks.push(call),
            }
        }
        Reply {
            blocks,
            truncated: self.truncated,
        }
    }

    /// The text blocks, one after the other.
    pub fn text_of(&self) -> String {
        self.blocks
            .iter()
            .filter_map(|block| match block {
                Block::Text(text) => Some(text.as_str()),
                Block::ToolCall { .. } => None,
            })
            .collect()
    }

    /// The mock's output token count: the words of every text and tool input.
    pub fn output_words(&self) -> u64 {
        self.blocks
            .iter()
            .map(|block| match block {
                Block::Text(text) => words(text),
                Block::ToolCall { input, .. } => words(&input.to_string()),
            })
            .sum()
    }

    /// Why the reply ended, in Anthropic's words.
    pub fn stop_reason(&self) -> &'static str {
        if self.truncated {
            "max_tokens"
        } else if self
            .blocks
            .iter()
            .any(|block| matches!(block, Block::ToolCall { .. }))
        {
            "tool_use"
        } else {
            "end_turn"
        }
    }
}

/// The id of reply `number`'s Anthropic message.
pub(crate) fn message_id(number: u64) -> String {
    format!("msg_mock_{number}")
}

/// The id of the tool_use block at `index` of reply `number`.
pub(crate) fn tool_use_id(number: u64, index: usize) -> String {
    format!("toolu_mock_{number}_{index}")
}

/// A successful reply (not streamed). A chat completion carries the text blocks only: the
/// mock calls tools on the Anthropic and Responses routes alone, where agents run.
pub fn reply_body(
    format: Format,
    number: u64,
    conversation: &Conversation,
    reply: &Reply,
) -> Value {
    let output_words = reply.output_words();
    match format {
        Format::OpenAi => json!({
            "id": format!("chatcmpl-mock-{number}"),
            "object": "chat.completion",
            "created": unix_now(),
            "model": conversation.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": reply.text_of(), "refusal": null},
                "logprobs": null,
                "finish_reason": if reply.truncated { "length" } else { "stop" },
            }],
            "usage": {
                "prompt_tokens": conversation.prompt_words,
                "completion_tokens": output_words,
                "total_tokens": conversation.prompt_words + output_words,
            },
            "system_fingerprint": null,
        }),
        Format::Anthropic => {
            let content: Vec<Value> = reply
                .blocks
                .iter()
                .enumerate()
                .map(|(index, block)| match block {
                    Block::Text(text) => json!({"type": "text", "text": text}),
                    Block::ToolCall { name, input } => json!({"type": "tool_use",
                        "id": tool_use_id(number, index), "name": name, "input": input}),
                })
                .collect();
            json!({
                "id": message_id(number),
                "type": "message",
                "role": "assistant",
                "model": conversation.model,
                "content": content,
                "stop_reason": reply.stop_reason(),
                "stop_sequence": null,
                "usage": {"input_tokens": conversation.prompt_words, "output_tokens": output_words},
            })
        }
        Format::Responses => {
            response_object(number, conversation, reply, response_items(number, reply))
        }
    }
}

/// The output items of reply `number` in the Responses format: a message per text block, a
/// function call per tool call.
pub(crate) fn response_items(number: u64, reply: &Reply) -> Vec<Value> {
    reply
        .blocks
        .iter()
        .enumerate()
        .map(|(index, block)| match block {
            Block::Text(text) => json!({
                "type": "message",
                "id": format!("msg_mock_{number}_{index}"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }),
            Block::ToolCall { name, input } => json!({
                "type": "function_call",
                "id": format!("fc_mock_{number}_{index}"),
                "call_id": format!("call_mock_{number}_{index}"),
                "name": name,
                "arguments": input.to_string(),
                "status": "completed",
            }),
        })
        .collect()
}

/// The Response object of reply `number` holding `output`: completed, or incomplete when the
/// reply was cut at max_output_tokens, as the API reports it.
pub(crate) fn response_object(
    number: u64,
    conversation: &Conversation,
    reply: &Reply,
    output: Vec<Value>,
) -> Value {
    let output_words = reply.output_words();
    let (status, incomplete) = if reply.truncated {
        ("incomplete", json!({"reason": "max_output_tokens"}))
    } else {
        ("completed", Value::Null)
    };
    json!({
        "id": format!("resp_mock_{number}"),
        "object": "response",
        "created_at": unix_now(),
        "status": status,
        "incomplete_details": incomplete,
        "model": conversation.model,
        "output": output,
        "usage": {
            "input_tokens": conversation.prompt_words,
            "output_tokens": output_words,
            "total_tokens": conversation.prompt_words + output_words,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    })
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
        Format::OpenAi | Format::Responses => {
            json!({"error": {"message": message, "type": openai_type, "param": null, "code": null}})
        }
        Format::Anthropic => {
            json!({"type": "error", "error": {"type": anthropic_type, "message": message}})
        }
    }
}

pub(crate) fn unix_now() -> u64 {
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

    #[test]
    fn anthropic_tool_parts_and_system_role_messages_are_read_without_trouble() {
        let body = json!({"model": "c", "stream": true, "tools": [{"name": "Skill"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"},
                                         {"type": "text", "text": "sum the receipts"}]},
            {"role": "system", "content": "Skills listed here."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Skill",
                                               "input": {"skill": "s"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": [{"type": "text", "text": "loaded"}]}]}
        ]});
        let conversation = parse_request(Format::Anthropic, &body).unwrap();
        assert_eq!(conversation.query, "sum the receipts");
        assert!(conversation.tool_result && conversation.stream);
        assert_eq!(conversation.tools, ["Skill"]);
        assert_eq!(conversation.system, "");
        assert!(
            conversation
                .context
                .contains(&"Skills listed here.".to_string())
        );
    }

    #[test]
    fn responses_requests_read_instructions_items_and_a_plain_string() {
        let body = json!({"model": "g", "instructions": "Be Codex.", "max_output_tokens": 50,
        "tools": [{"type": "function", "name": "exec_command"}],
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Dev note."}]},
            {"role": "user", "content": "first"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
            {"type": "function_call", "call_id": "c", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "two words"},
            {"type": "reasoning", "summary": []}
        ]});
        let conversation = parse_request(Format::Responses, &body).unwrap();
        assert_eq!(conversation.system, "Be Codex.\nDev note.");
        assert_eq!(
            (conversation.user.as_str(), conversation.query.as_str()),
            ("first", "first")
        );
        assert_eq!(conversation.max_tokens, Some(50));
        assert_eq!(conversation.tools, ["exec_command"]);
        assert!(conversation.tool_result);
        let plain =
            parse_request(Format::Responses, &json!({"model": "g", "input": "hello"})).unwrap();
        assert_eq!(plain.user, "hello");
        assert_eq!(
            parse_request(Format::Responses, &json!({"model": "g"})),
            Err(RequestError::NoInput)
        );
    }

    #[test]
    fn a_reply_cut_at_max_tokens_keeps_the_words_that_fit() {
        let reply = Reply::text("one two three").cut_to(Some(2));
        assert_eq!(
            (reply.text_of().as_str(), reply.truncated),
            ("one two", true)
        );
        assert_eq!(Reply::text("one").cut_to(Some(2)), Reply::text("one"));
        let body = reply_body(Format::Responses, 1, &Conversation::default(), &reply);
        assert_eq!(body["status"], "incomplete");
        let call = Reply::tool_call("Skill", json!({"skill": "s"}));
        let body = reply_body(Format::Anthropic, 2, &Conversation::default(), &call);
        assert_eq!(body["stop_reason"], "tool_use");
        assert_eq!(body["content"][0]["id"], "toolu_mock_2_0");
    }
}
