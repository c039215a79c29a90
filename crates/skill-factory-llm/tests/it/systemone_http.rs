//! The System One client over HTTP, against loopback stubs: the request it sends, the answers
//! it reads, which failures it retries, and that a key never shows up in an error.

use std::time::Duration;

use serde_json::Value;
use skill_factory_llm::systemone::{
    Asked, DecisionModel, Question, SystemOneClient, SystemOneSettings,
};
use skill_factory_mock::{Fault, FaultPlan, MockConfig, MockServer, StubOptions, SystemOneStub};

const KEY: &str = "ts_secret_0123";

fn settings(url: &str, api_key: Option<&str>) -> SystemOneSettings {
    SystemOneSettings {
        provider: Some("custom".into()),
        model: Some("fake-jev".into()),
        api_key: api_key.map(str::to_string),
        base_url: Some(url.to_string()),
        timeout: Duration::from_secs(5),
        retry_delay: Duration::from_millis(1),
        ..SystemOneSettings::default()
    }
}

fn client(settings: &SystemOneSettings) -> SystemOneClient {
    SystemOneClient::new(settings, &|_| None).expect("client builds")
}

fn questions() -> Vec<(String, Question)> {
    vec![
        (
            "intent".to_string(),
            Question::new("Does the item show bad intent?", "Yes: bad", "No: fine"),
        ),
        (
            "noise".to_string(),
            Question::new("Is it noisy?", "Yes: noisy", "No: quiet"),
        ),
    ]
}

/// A stub of [`responder`] whose next requests fail with `statuses`, in order.
async fn stub_failing(statuses: &[u16]) -> SystemOneStub {
    let stub = SystemOneStub::start(responder).await.unwrap();
    stub.fail_next(statuses);
    stub
}

/// [`questions`] about the state `s`, asked of `stub` with `api_key`.
async fn ask_stub(stub: &SystemOneStub, api_key: Option<&str>) -> Asked {
    client(&settings(&stub.url(), api_key))
        .ask("s", &questions())
        .await
}

/// A chat mock (not a System One stub) whose first requests fail with `faults`, and its chat
/// completions URL.
async fn chat_mock_failing(faults: Vec<Fault>) -> (MockServer, String) {
    let server = MockServer::start(MockConfig {
        fault_sequence: faults,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let url = format!("{}/v1/chat/completions", server.base_url());
    (server, url)
}

/// 0.9 for intent questions about a state with `INTENT:bad`, 0.1 otherwise.
fn responder(state: &str, _id: &str, question: &Value) -> f64 {
    let instructions = question["instructions"].as_str().unwrap_or_default();
    if instructions.contains("intent") && state.contains("INTENT:bad") {
        0.9
    } else {
        0.1
    }
}

#[tokio::test]
async fn round_trip_sends_the_model_choice_questions_and_the_bearer_key() {
    let stub = SystemOneStub::start(responder).await.unwrap();
    let client = client(&settings(&stub.url(), Some(KEY)));
    let state = "item 3 CAP:yes INTENT:bad";
    let answers = client.ask(state, &questions()).await.unwrap();
    assert!(answers.probabilities["intent"] >= 0.9);
    assert_eq!(answers.probabilities["noise"], 0.1);
    assert_eq!(answers.served_model, "fake-jev-1.0");
    assert_eq!(answers.input_tokens, Some(state.len() as u64 / 4));

    let received = stub.received();
    assert_eq!(received.len(), 1);
    let body = &received[0].body;
    assert_eq!(body["model"], "fake-jev");
    assert_eq!(body["state"], state);
    assert_eq!(body["questions"]["intent"]["type"], "choice");
    assert_eq!(body["questions"]["intent"]["criteria"]["true"], "Yes: bad");
    assert_eq!(
        received[0].authorization.as_deref(),
        Some("Bearer ts_secret_0123")
    );
}

#[tokio::test]
async fn no_key_sends_no_authorization_header() {
    let stub = SystemOneStub::start(responder).await.unwrap();
    ask_stub(&stub, None).await.unwrap();
    assert_eq!(stub.received()[0].authorization, None);
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried() {
    let stub = stub_failing(&[429, 503]).await;
    let answers = ask_stub(&stub, Some(KEY)).await.unwrap();
    assert_eq!(answers.probabilities.len(), 2);
    assert_eq!(stub.request_count(), 3);
}

#[tokio::test]
async fn a_401_fails_at_once_without_leaking_the_key() {
    let stub = stub_failing(&[401, 401]).await;
    let error = ask_stub(&stub, Some(KEY)).await.unwrap_err();
    let text = error.to_string();
    assert_eq!(stub.request_count(), 1, "a 401 must not be retried");
    assert!(
        text.starts_with("custom request failed: HTTP 401"),
        "{text}"
    );
    assert!(!text.contains(KEY), "the key leaked: {text}");
    assert!(text.contains("systemone.api_key"), "{text}");
}

#[tokio::test]
async fn other_client_errors_are_not_retried() {
    let stub = stub_failing(&[400, 400, 400]).await;
    let error = ask_stub(&stub, None).await.unwrap_err();
    assert_eq!(stub.request_count(), 1);
    assert!(
        error.to_string().contains("HTTP 400: {\"error\":\"nope"),
        "{error}"
    );
}

#[tokio::test]
async fn retries_stop_after_max_retries_more_attempts() {
    let stub = SystemOneStub::start(responder).await.unwrap();
    stub.fail_next(&[500; 10]);
    let mut s = settings(&stub.url(), None);
    s.max_retries = 2;
    let error = client(&s).ask("s", &questions()).await.unwrap_err();
    assert_eq!(stub.request_count(), 3);
    assert!(error.to_string().contains("HTTP 500"), "{error}");
}

#[tokio::test]
async fn a_body_that_is_not_json_is_retried_then_reported() {
    let (server, url) = chat_mock_failing(vec![Fault::Malformed, Fault::Malformed]).await;
    let mut s = settings(&url, None);
    s.max_retries = 1;
    let error = client(&s).ask("s", &questions()).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid answer: the response is not JSON"
    );
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn a_body_cut_short_is_retried_like_a_lost_connection() {
    let stub = SystemOneStub::start_with(
        StubOptions {
            faults: FaultPlan {
                cut_body: 1.0,
                ..FaultPlan::default()
            },
            ..StubOptions::default()
        },
        responder,
    )
    .await
    .unwrap();
    let mut s = settings(&stub.url(), None);
    s.max_retries = 2;
    let error = client(&s).ask("s", &questions()).await.unwrap_err();
    assert_eq!(stub.request_count(), 3, "{error}");
}

#[tokio::test]
async fn a_host_that_does_not_answer_times_out_and_is_retried() {
    let (server, url) = chat_mock_failing(vec![Fault::Hang, Fault::Hang]).await;
    let mut s = settings(&url, None);
    s.timeout = Duration::from_millis(200);
    s.max_retries = 1;
    let error = client(&s).ask("s", &questions()).await.unwrap_err();
    assert!(
        error.to_string().contains("no answer within 0.2 s"),
        "{error}"
    );
    assert_eq!(server.request_count(), 2);
}
