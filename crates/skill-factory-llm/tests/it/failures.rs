//! Retries, timeouts, error reports and the concurrency cap, against failures the mock
//! injects on purpose. Every failure is tried through both wire formats (OpenAI chat
//! completions and Anthropic Messages), each against a fresh mock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use skill_factory_llm::{
    AnthropicClient, ApiKey, ChatModel, ChatRequest, ChatResponse, ClientOptions, LlmError,
    OpenAiClient, RetryPolicy,
};
use skill_factory_mock::{Fault, FaultPlan, MockConfig, MockServer};

const KEY: &str = "sk-test-secret-0123456789";

/// Retries with tiny back-offs, so that tests measure behaviour rather than waiting.
fn options(max_attempts: u32, timeout: Duration) -> ClientOptions {
    ClientOptions {
        timeout,
        retry: RetryPolicy {
            max_attempts,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(20),
            ..RetryPolicy::default()
        },
        ..ClientOptions::default()
    }
}

fn openai(mock: &MockServer, options: ClientOptions) -> OpenAiClient {
    let base = format!("{}/v1", mock.base_url());
    OpenAiClient::new(
        "openai",
        &base,
        ApiKey::new(KEY, "OPENAI_API_KEY"),
        "gpt-test",
        options,
    )
    .unwrap()
}

/// The two wire formats a client can speak.
#[derive(Debug, Clone, Copy)]
enum Wire {
    OpenAi,
    Anthropic,
}

const WIRES: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

fn client(wire: Wire, mock: &MockServer, options: ClientOptions) -> Box<dyn ChatModel> {
    match wire {
        Wire::OpenAi => Box::new(openai(mock, options)),
        Wire::Anthropic => Box::new(
            AnthropicClient::new(
                &mock.base_url(),
                ApiKey::new(KEY, "ANTHROPIC_API_KEY"),
                "claude-test",
                options,
            )
            .unwrap(),
        ),
    }
}

async fn mock(config: MockConfig) -> MockServer {
    MockServer::start(config).await.expect("mock server starts")
}

/// A mock whose every request fails: `fail` sets one fault's rate (to 1.0) in a plan of none.
async fn failing_mock(fail: impl FnOnce(&mut FaultPlan)) -> MockServer {
    let mut faults = FaultPlan::default();
    fail(&mut faults);
    mock(MockConfig {
        faults,
        ..MockConfig::default()
    })
    .await
}

/// A mock that answers its first requests with `faults`, in order, and then answers well.
async fn sequenced_mock(faults: Vec<Fault>) -> MockServer {
    mock(MockConfig {
        fault_sequence: faults,
        ..MockConfig::default()
    })
    .await
}

fn ask() -> ChatRequest {
    ChatRequest::single(Some("Be brief.".into()), "hello", 0.0, 32)
}

/// [`ask`] through `wire` to `mock`, with `options`.
async fn ask_through(
    wire: Wire,
    mock: &MockServer,
    options: ClientOptions,
) -> Result<ChatResponse, LlmError> {
    client(wire, mock, options).chat(&ask()).await
}

/// [`ask`] through `wire`, with three attempts, to a mock whose every request fails as `fail`
/// sets ([`failing_mock`]): asserts that all three were made, and returns the error.
async fn error_after_three_attempts(wire: Wire, fail: impl FnOnce(&mut FaultPlan)) -> LlmError {
    let mock = failing_mock(fail).await;
    let error = ask_through(wire, &mock, options(3, Duration::from_secs(5)))
        .await
        .unwrap_err();
    assert_eq!(mock.request_count(), 3, "{wire:?}");
    error
}

/// Asserts that [`ask`] through `wire` gets an answer, after `requests` requests to `mock`.
async fn assert_answered(wire: Wire, mock: &MockServer, options: ClientOptions, requests: usize) {
    let response = ask_through(wire, mock, options).await.unwrap();
    assert!(!response.text.is_empty(), "{wire:?}");
    assert_eq!(mock.request_count(), requests, "{wire:?}");
}

#[tokio::test]
async fn a_429_is_retried_after_the_servers_retry_after() {
    for wire in WIRES {
        let mock = mock(MockConfig {
            fault_sequence: vec![Fault::RateLimit],
            faults: FaultPlan {
                retry_after_secs: 1,
                ..FaultPlan::default()
            },
            ..MockConfig::default()
        })
        .await;
        // The default policy's back-off would be at most 0.5 s: a wait of about 1 s shows
        // that Retry-After was read.
        let client = client(wire, &mock, ClientOptions::default());
        let started = Instant::now();

        let response = client.chat(&ask()).await.unwrap();

        let waited = started.elapsed();
        assert!(!response.text.is_empty(), "{wire:?}");
        assert_eq!(mock.request_count(), 2, "{wire:?}");
        assert!(
            waited >= Duration::from_millis(950),
            "{wire:?} retried after {waited:?}"
        );
        assert!(
            waited < Duration::from_secs(3),
            "{wire:?} retried after {waited:?}"
        );
    }
}

#[tokio::test]
async fn a_500_is_retried_then_succeeds() {
    for wire in WIRES {
        let mock = sequenced_mock(vec![Fault::ServerError, Fault::ServerError]).await;
        assert_answered(wire, &mock, options(4, Duration::from_secs(5)), 3).await;
    }
}

#[tokio::test]
async fn a_persistent_500_fails_naming_the_attempts_and_the_last_error() {
    for wire in WIRES {
        let error = error_after_three_attempts(wire, |plan| plan.server_error = 1.0).await;
        assert!(
            matches!(error, LlmError::Exhausted { attempts: 3, .. }),
            "{wire:?}: {error:?}"
        );
        assert!(matches!(error.last(), LlmError::Status { status: 500, .. }));
        let text = error.to_string();
        assert!(
            text.contains("after 3 attempts") && text.contains("HTTP 500"),
            "{wire:?}: {text}"
        );
    }
}

#[tokio::test]
async fn a_401_fails_at_once_without_leaking_the_key() {
    let mock = mock(MockConfig {
        require_api_key: Some("the-right-key-000000".into()),
        ..MockConfig::default()
    })
    .await;
    for client in WIRES.map(|wire| client(wire, &mock, options(4, Duration::from_secs(5)))) {
        let before = mock.request_count();
        let error = client.chat(&ask()).await.unwrap_err();
        assert_eq!(
            mock.request_count() - before,
            1,
            "{} must not retry a 401",
            client.provider()
        );
        assert!(
            matches!(error, LlmError::Status { status: 401, .. }),
            "{error:?}"
        );
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains(KEY), "the key leaked: {shown}");
        // The mock echoes the presented key; the client must have replaced it.
        assert!(shown.contains("Incorrect API key provided: ***"), "{shown}");
        assert!(
            shown.contains("_API_KEY"),
            "the error should say where the key came from: {shown}"
        );
    }
}

#[tokio::test]
async fn a_hanging_server_hits_the_per_attempt_timeout() {
    for wire in WIRES {
        let mock = failing_mock(|plan| plan.hang = 1.0).await;
        let started = Instant::now();
        let error = ask_through(wire, &mock, options(2, Duration::from_millis(300)))
            .await
            .unwrap_err();
        let waited = started.elapsed();
        assert!(
            matches!(error.last(), LlmError::Timeout { .. }),
            "{wire:?}: {error:?}"
        );
        assert!(
            error.to_string().contains("after 2 attempts"),
            "{wire:?}: {error}"
        );
        assert_eq!(mock.request_count(), 2, "{wire:?}");
        assert!(
            waited >= Duration::from_millis(600) && waited < Duration::from_secs(3),
            "{wire:?}: {waited:?}"
        );
        mock.stop().await;
    }
}

#[tokio::test]
async fn a_malformed_body_is_retried_then_reported() {
    for wire in WIRES {
        let error = error_after_three_attempts(wire, |plan| plan.malformed = 1.0).await;
        assert!(
            matches!(error.last(), LlmError::Malformed { .. }),
            "{wire:?}: {error:?}"
        );
        assert!(error.to_string().contains("malformed"), "{wire:?}: {error}");
    }
}

#[tokio::test]
async fn a_malformed_body_once_is_recovered_by_the_retry() {
    for wire in WIRES {
        let mock = sequenced_mock(vec![Fault::Malformed]).await;
        let asked = ask_through(wire, &mock, options(2, Duration::from_secs(5))).await;
        assert!(asked.is_ok(), "{wire:?}");
        assert_eq!(mock.request_count(), 2, "{wire:?}");
    }
}

#[tokio::test]
async fn an_unreachable_server_is_a_connection_error_naming_the_url() {
    let free_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{free_port}/v1");
    let client = OpenAiClient::new(
        "vllm",
        &base,
        ApiKey::placeholder(),
        "m",
        options(2, Duration::from_secs(5)),
    )
    .unwrap();
    let error = client.chat(&ask()).await.unwrap_err();
    assert!(
        matches!(error.last(), LlmError::Connect { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains(&base), "{error}");
}

async fn max_in_flight(max_concurrency: Option<usize>) -> usize {
    let mock = mock(MockConfig {
        latency: Duration::from_millis(100),
        ..MockConfig::default()
    })
    .await;
    let client = Arc::new(openai(
        &mock,
        ClientOptions {
            max_concurrency,
            ..options(1, Duration::from_secs(5))
        },
    ));
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let client = Arc::clone(&client);
        calls.spawn(async move { client.chat(&ask()).await });
    }
    while let Some(result) = calls.join_next().await {
        assert!(result.unwrap().is_ok());
    }
    assert_eq!(mock.request_count(), 8);
    mock.max_in_flight()
}

#[tokio::test]
async fn the_concurrency_cap_bounds_requests_in_flight() {
    assert_eq!(max_in_flight(Some(2)).await, 2);
    // Without a cap the same burst overlaps more, so the check above can fail.
    assert!(max_in_flight(None).await > 2);
}

#[tokio::test]
async fn a_bare_429_a_reset_and_a_cut_body_are_retried_until_an_answer() {
    for wire in WIRES {
        let mock = sequenced_mock(vec![Fault::RateLimitBare, Fault::Reset, Fault::CutBody]).await;
        assert_answered(wire, &mock, options(4, Duration::from_secs(5)), 4).await;
    }
}

#[tokio::test]
async fn a_slowloris_body_is_cut_off_by_the_attempt_timeout_and_retried() {
    for wire in WIRES {
        let mock = sequenced_mock(vec![Fault::Slowloris]).await;
        let started = Instant::now();
        assert_answered(wire, &mock, options(2, Duration::from_millis(1500)), 2).await;
        let took = started.elapsed();
        let expected = Duration::from_millis(1500)..Duration::from_secs(4);
        assert!(expected.contains(&took), "{wire:?}: {took:?}");
    }
}

#[tokio::test]
async fn a_redirect_is_not_followed_so_the_key_never_reaches_its_target() {
    for wire in WIRES {
        let target = mock(MockConfig::default()).await;
        let redirecting = mock(MockConfig {
            redirect_to: Some(target.base_url()),
            ..MockConfig::default()
        })
        .await;
        let error = ask_through(wire, &redirecting, options(3, Duration::from_secs(5)))
            .await
            .unwrap_err()
            .to_string();
        assert_eq!(target.request_count(), 0, "{wire:?}: {error}");
        assert_eq!(redirecting.request_count(), 1, "{wire:?}: not retried");
        assert!(
            error.contains("307")
                && error.contains(&format!("redirects to {}", target.base_url()))
                && error.contains("set base_url to the final URL"),
            "{wire:?}: {error}"
        );
        assert!(!error.contains(KEY), "{error}");
    }
}
