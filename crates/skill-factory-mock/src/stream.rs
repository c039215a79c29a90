//! Streamed replies: the server-sent events of Anthropic Messages (`"stream": true`, what the
//! Claude Code CLI asks for) and of OpenAI Responses (what the Codex CLI asks for). The mock
//! writes a reply's every event at once; a client reads them as it would read a model's.
//!
//! Each event is `event: <type>\ndata: <json>\n\n`, the data's `type` naming the event again.

use serde_json::{Value, json};

use crate::wire::{
    Block, Conversation, Format, Reply, message_id, response_items, response_object, tool_use_id,
};

/// One server-sent event: its type and its data.
pub type Event = (String, Value);

/// The events of reply `number` in `format`; `None` for chat completions, which the mock
/// always answers whole.
pub fn events(
    format: Format,
    number: u64,
    conversation: &Conversation,
    reply: &Reply,
) -> Option<Vec<Event>> {
    match format {
        Format::Anthropic => Some(anthropic_events(number, conversation, reply)),
        Format::Responses => Some(responses_events(number, conversation, reply)),
        Format::OpenAi => None,
    }
}

/// The body of a `text/event-stream` answer holding `events`.
pub fn event_stream(events: &[Event]) -> String {
    events
        .iter()
        .map(|(kind, data)| format!("event: {kind}\ndata: {data}\n\n"))
        .collect()
}

/// An event whose data is `fields` with the `type` added first.
fn event(kind: &str, fields: Value) -> Event {
    let mut data = serde_json::Map::new();
    data.insert("type".to_string(), json!(kind));
    if let Value::Object(fields) = fields {
        data.extend(fields);
    }
    (kind.to_string(), Value::Object(data))
}

/// `message_start`, then start, delta and stop of each content block, then `message_delta`
/// (the stop reason and output tokens) and `message_stop`.
fn anthropic_events(number: u64, conversation: &Conversation, reply: &Reply) -> Vec<Event> {
    let mut events = vec![event(
        "message_start",
        json!({"message": {
            "id": message_id(number),
            "type": "message",
            "role": "assistant",
            "model": conversation.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": {"input_tokens": conversation.prompt_words, "output_tokens": 1},
        }}),
    )];
    for (index, block) in reply.blocks.iter().enumerate() {
        let (start, delta) = match block {
            Block::Text(text) => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": text}),
            ),
            Block::ToolCall { name, input } => (
                json!({"type": "tool_use", "id": tool_use_id(number, index), "name": name,
                       "input": {}}),
                json!({"type": "input_json_delta", "partial_json": input.to_string()}),
            ),
        };
        events.extend([
            event(
                "content_block_start",
                json!({"index": index, "content_block": start}),
            ),
            event(
                "content_block_delta",
                json!({"index": index, "delta": delta}),
            ),
            event("content_block_stop", json!({"index": index})),
        ]);
    }
    events.extend([
        event(
            "message_delta",
            json!({"delta": {"stop_reason": reply.stop_reason(), "stop_sequence": null},
                   "usage": {"output_tokens": reply.output_words()}}),
        ),
        event("message_stop", json!({})),
    ]);
    events
}

/// `response.created`, then for each output item `response.output_item.added`, its text as
/// one `response.output_text.delta` (messages only) and `response.output_item.done`, then
/// `response.completed` (`response.incomplete` for a reply cut at max_output_tokens). Every
/// event carries its `sequence_number`, as the API's do.
fn responses_events(number: u64, conversation: &Conversation, reply: &Reply) -> Vec<Event> {
    let items = response_items(number, reply);
    let mut created = response_object(number, conversation, reply, Vec::new());
    created["status"] = json!("in_progress");
    created["incomplete_details"] = Value::Null;
    let mut events = vec![event("response.created", json!({"response": created}))];
    for (index, item) in items.iter().enumerate() {
        let mut open = item.clone();
        open["status"] = json!("in_progress");
        if item["type"] == "message" {
            open["content"] = json!([]);
        } else {
            open["arguments"] = json!("");
        }
        events.push(event(
            "response.output_item.added",
            json!({"output_index": index, "item": open}),
        ));
        if let Some(text) = item["content"][0]["text"].as_str() {
            events.push(event(
                "response.output_text.delta",
                json!({"output_index": index, "item_id": item["id"], "content_index": 0,
                       "delta": text}),
            ));
        }
        events.push(event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
    }
    let last = if reply.truncated {
        "response.incomplete"
    } else {
        "response.completed"
    };
    events.push(event(
        last,
        json!({"response": response_object(number, conversation, reply, items)}),
    ));
    for (sequence, (_, data)) in events.iter_mut().enumerate() {
        data["sequence_number"] = json!(sequence);
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation() -> Conversation {
        Conversation {
            model: "m".to_string(),
            prompt_words: 12,
            ..Conversation::default()
        }
    }

    fn kinds(events: &[Event]) -> Vec<&str> {
        events.iter().map(|(kind, _)| kind.as_str()).collect()
    }

    #[test]
    fn an_anthropic_text_reply_streams_as_one_text_block() {
        let events = events(
            Format::Anthropic,
            3,
            &conversation(),
            &Reply::text("All done."),
        )
        .unwrap();
        assert_eq!(
            kinds(&events),
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(
            events[0].1,
            json!({"type": "message_start", "message": {"id": "msg_mock_3", "type": "message",
                "role": "assistant", "model": "m", "content": [], "stop_reason": null,
                "stop_sequence": null, "usage": {"input_tokens": 12, "output_tokens": 1}}})
        );
        assert_eq!(
            events[1].1,
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}})
        );
        assert_eq!(
            events[2].1,
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": "All done."}})
        );
        assert_eq!(
            events[3].1,
            json!({"type": "content_block_stop", "index": 0})
        );
        assert_eq!(
            events[4].1,
            json!({"type": "message_delta",
                   "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                   "usage": {"output_tokens": 2}})
        );
        assert_eq!(events[5].1, json!({"type": "message_stop"}));
        let text = event_stream(&events[5..]);
        assert_eq!(
            text,
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
        );
    }

    #[test]
    fn an_anthropic_tool_call_streams_its_input_as_json_text() {
        let reply = Reply::tool_call("Skill", json!({"skill": "pdf"}));
        let events = events(Format::Anthropic, 4, &conversation(), &reply).unwrap();
        assert_eq!(
            events[1].1["content_block"],
            json!({"type": "tool_use", "id": "toolu_mock_4_0", "name": "Skill", "input": {}})
        );
        assert_eq!(
            events[2].1["delta"],
            json!({"type": "input_json_delta", "partial_json": "{\"skill\":\"pdf\"}"})
        );
        assert_eq!(events[4].1["delta"]["stop_reason"], "tool_use");
        let cut = Reply::text("one two three").cut_to(Some(2));
        let events = super::events(Format::Anthropic, 5, &conversation(), &cut).unwrap();
        assert_eq!(events[2].1["delta"]["text"], "one two");
        assert_eq!(events[4].1["delta"]["stop_reason"], "max_tokens");
    }

    #[test]
    fn a_responses_stream_opens_fills_and_closes_each_item_then_completes() {
        let mut reply = Reply::text("Hello there.");
        reply
            .blocks
            .extend(Reply::tool_call("exec_command", json!({"cmd": "cat a/SKILL.md"})).blocks);
        let streamed = events(Format::Responses, 7, &conversation(), &reply).unwrap();
        let events = &streamed;
        assert_eq!(
            kinds(events),
            [
                "response.created",
                "response.output_item.added",
                "response.output_text.delta",
                "response.output_item.done",
                "response.output_item.added",
                "response.output_item.done",
                "response.completed"
            ]
        );
        let created = &events[0].1["response"];
        assert_eq!(
            (created["status"].clone(), created["output"].clone()),
            (json!("in_progress"), json!([]))
        );
        assert_eq!(events[1].1["item"]["status"], "in_progress");
        assert_eq!(
            events[2].1,
            json!({"type": "response.output_text.delta", "output_index": 0,
                   "item_id": "msg_mock_7_0", "content_index": 0, "delta": "Hello there.",
                   "sequence_number": 2})
        );
        assert_eq!(
            events[5].1["item"],
            json!({"type": "function_call", "id": "fc_mock_7_1", "call_id": "call_mock_7_1",
                   "name": "exec_command", "arguments": "{\"cmd\":\"cat a/SKILL.md\"}",
                   "status": "completed"})
        );
        let done = &events[6].1["response"];
        assert_eq!(done["status"], "completed");
        assert_eq!(done["output"].as_array().map(Vec::len), Some(2));
        assert_eq!(done["usage"]["input_tokens"], 12);
        assert_eq!(
            super::events(Format::OpenAi, 1, &conversation(), &reply),
            None
        );
    }
}
