//! The routes agents use, over real HTTP: Anthropic Messages streamed as Claude Code asks
//! for it, OpenAI Responses streamed and whole as Codex asks for it, and the router's replies
//! to a request carrying a skill listing.

use std::collections::HashMap;

use serde_json::{Value, json};
use skill_factory_mock::{FaultPlan, MockConfig, MockServer};

/// The listing Claude Code sends, in a system-role message after the user's turn.
const CLAUDE_LISTING: &str = "The following skills are available for use with the Skill tool:\n\n\
    - receipt-totals: Add up receipts into a monthly expense report.\n\
    - pdf-forms: Fill in PDF forms field by field. Not for receipts.\n";

fn claude_request(query: &str) -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "tools": [{"name": "Bash", "input_schema": {}}, {"name": "Skill", "input_schema": {}}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>\nNotes.\n</system-reminder>"},
                {"type": "text", "text": query}]},
            {"role": "system", "content": CLAUDE_LISTING}]})
}

fn codex_request(query: &str, stream: bool) -> Value {
    let developer = "## Skills\n- `r1` = `/srv/proj/.agents/skills`\n### Available skills\n\
        - receipt-totals: Add up receipts into a monthly expense report. (file: r1/receipt-totals/SKILL.md)\n\
        - pdf-forms: Fill in PDF forms field by field. (file: r1/pdf-forms/SKILL.md)\n";
    json!({"model": "gpt-5-codex", "instructions": "You are Codex.", "stream": stream,
        "tools": [{"type": "function", "name": "exec_command", "parameters": {}}],
        "input": [
            {"type": "message", "role": "developer",
             "content": [{"type": "input_text", "text": developer}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "<environment_context>\n</environment_context>"}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": query}]}]})
}

/// The status, content type and body of a POST of `body` to `path`.
async fn post(mock: &MockServer, path: &str, body: &Value) -> (u16, String, String) {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", mock.base_url()))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    (status, kind, response.text().await.unwrap())
}

/// The events of a `text/event-stream` body: each event's type and data, checking that the
/// data's `type` names the event again.
fn events(body: &str) -> Vec<(String, Value)> {
    body.split_terminator("\n\n")
        .map(|event| {
            let (kind, data) = event
                .strip_prefix("event: ")
                .and_then(|rest| rest.split_once("\ndata: "))
                .unwrap_or_else(|| panic!("not an event: {event:?}"));
            let data: Value = serde_json::from_str(data).unwrap();
            assert_eq!(data["type"], kind, "{event}");
            (kind.to_string(), data)
        })
        .collect()
}

fn kinds(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(kind, _)| kind.as_str()).collect()
}

#[tokio::test]
async fn claude_code_gets_a_streamed_skill_call_on_its_beta_path_and_is_recorded() {
    let mock = MockServer::start(MockConfig::default()).await.unwrap();
    let (status, kind, body) = post(
        &mock,
        "/v1/messages?beta=true",
        &claude_request("Total my March receipts"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(kind, "text/event-stream");
    let events = events(&body);
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
    assert_eq!(events[0].1["message"]["model"], "claude-sonnet-4-5");
    assert_eq!(events[1].1["content_block"]["type"], "tool_use");
    assert_eq!(events[1].1["content_block"]["name"], "Skill");
    let input: Value =
        serde_json::from_str(events[2].1["delta"]["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(input, json!({"skill": "receipt-totals"}));
    assert_eq!(events[4].1["delta"]["stop_reason"], "tool_use");
    let received = mock.received();
    assert_eq!(received[0].path, "/v1/messages");
    assert_eq!(received[0].query.as_deref(), Some("beta=true"));
}

#[tokio::test]
async fn a_streamed_request_without_a_listing_streams_the_responders_text() {
    let answers = HashMap::from([("2+2?".to_string(), "4".to_string())]);
    let mock = MockServer::start(MockConfig {
        answers,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let request = json!({"model": "m", "max_tokens": 10, "stream": true,
                         "messages": [{"role": "user", "content": "2+2?"}]});
    let (status, kind, body) = post(&mock, "/v1/messages", &request).await;
    assert_eq!((status, kind.as_str()), (200, "text/event-stream"));
    let events = events(&body);
    assert_eq!(
        events[2].1["delta"],
        json!({"type": "text_delta", "text": "4"})
    );
    assert_eq!(events[4].1["delta"]["stop_reason"], "end_turn");
    // The same request not streamed is answered whole, as before.
    let mut whole = request.clone();
    whole["stream"] = json!(false);
    let (_, kind, body) = post(&mock, "/v1/messages", &whole).await;
    assert_eq!(kind, "application/json");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["content"], json!([{"type": "text", "text": "4"}]));
}

#[tokio::test]
async fn a_fault_applies_before_the_stream_starts() {
    let mock = MockServer::start(MockConfig {
        faults: FaultPlan {
            rate_limit: 1.0,
            ..FaultPlan::default()
        },
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let (status, _, body) = post(&mock, "/v1/messages", &claude_request("receipts")).await;
    assert_eq!(status, 429);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["type"],
        "error"
    );
    let (status, _, body) = post(&mock, "/v1/responses", &codex_request("receipts", true)).await;
    assert_eq!(status, 429);
    assert!(serde_json::from_str::<Value>(&body).unwrap()["error"].is_object());
}

#[tokio::test]
async fn codex_gets_a_streamed_command_reading_the_chosen_skill() {
    let mock = MockServer::start(MockConfig::default()).await.unwrap();
    let (status, kind, body) = post(
        &mock,
        "/v1/responses",
        &codex_request("Make my monthly expense report", true),
    )
    .await;
    assert_eq!(
        (status, kind.as_str()),
        (200, "text/event-stream"),
        "{body}"
    );
    let events = events(&body);
    assert_eq!(
        kinds(&events),
        [
            "response.created",
            "response.output_item.added",
            "response.output_item.done",
            "response.completed"
        ]
    );
    assert_eq!(events[0].1["response"]["status"], "in_progress");
    let item = &events[2].1["item"];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["name"], "exec_command");
    let arguments: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(
        arguments,
        json!({"cmd": "cat /srv/proj/.agents/skills/receipt-totals/SKILL.md"})
    );
    let response = &events[3].1["response"];
    assert_eq!(response["status"], "completed");
    assert_eq!(response["output"][0], *item);
    assert_eq!(mock.received()[0].path, "/v1/responses");
}

#[tokio::test]
async fn responses_answer_whole_and_streamed_with_a_message() {
    let mock = MockServer::start(MockConfig::default()).await.unwrap();
    // Codex after it ran the command: told it is done.
    let mut request = codex_request("Make my monthly expense report", false);
    request["input"].as_array_mut().unwrap().extend([
        json!({"type": "function_call", "call_id": "call_1", "name": "exec_command",
               "arguments": "{\"cmd\":\"cat x\"}"}),
        json!({"type": "function_call_output", "call_id": "call_1", "output": "# Receipts"}),
    ]);
    let (status, kind, body) = post(&mock, "/v1/responses", &request).await;
    assert_eq!((status, kind.as_str()), (200, "application/json"));
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert!(body["id"].as_str().unwrap().starts_with("resp_"));
    let message = &body["output"][0];
    assert_eq!(
        (&message["type"], &message["role"], &message["status"]),
        (&json!("message"), &json!("assistant"), &json!("completed"))
    );
    assert_eq!(
        message["content"],
        json!([{"type": "output_text", "text": "Done.", "annotations": []}])
    );
    let usage = &body["usage"];
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap())
    );
    assert_eq!(usage["input_tokens_details"], json!({"cached_tokens": 0}));
    assert_eq!(
        usage["output_tokens_details"],
        json!({"reasoning_tokens": 0})
    );
    // A plain string input, streamed: the responder's text as one message.
    let (_, _, body) = post(
        &mock,
        "/responses",
        &json!({"model": "m", "input": "hello", "stream": true}),
    )
    .await;
    let events = events(&body);
    assert_eq!(
        kinds(&events),
        [
            "response.created",
            "response.output_item.added",
            "response.output_text.delta",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let text = events[2].1["delta"].as_str().unwrap();
    assert_eq!(events[3].1["item"]["content"][0]["text"], text);
    // No input at all: a 400 in OpenAI's shape.
    let (status, _, body) = post(&mock, "/v1/responses", &json!({"model": "m"})).await;
    assert_eq!(status, 400);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn a_plain_routing_prompt_gets_a_name_or_none() {
    let mock = MockServer::start(MockConfig::default()).await.unwrap();
    let ask = |query: &str| {
        json!({"model": "m", "messages": [
            {"role": "system", "content": format!("The following skills are available:\n{}",
                CLAUDE_LISTING.lines().skip(2).collect::<Vec<_>>().join("\n"))},
            {"role": "user", "content": query}]})
    };
    for (query, name) in [
        ("fill the fields of this PDF form", "pdf-forms"),
        ("fill in the receipts form", "receipt-totals"),
        ("book a flight", "none"),
    ] {
        let (status, _, body) = post(&mock, "/v1/chat/completions", &ask(query)).await;
        assert_eq!(status, 200);
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["choices"][0]["message"]["content"], name, "{query}");
    }
}
