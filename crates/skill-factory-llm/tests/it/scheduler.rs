//! The run-wide scheduler against a loopback server: the run-wide cap across clients, the
//! adaptive cut on 429s, the requests-per-minute pace and the per-call timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use skill_factory_llm::{
    ApiKey, ChatModel, ChatRequest, ClientOptions, LlmError, OpenAiClient, RetryPolicy, Scheduler,
};
use skill_factory_mock::{Fault, FaultPlan, MockConfig, MockServer};

fn ask(text: &str) -> ChatRequest {
    ChatRequest::single(None, text, 0.0, 16)
}

fn client(mock: &MockServer, provider: &str, options: ClientOptions) -> Arc<OpenAiClient> {
    let base = format!("{}/v1", mock.base_url());
    Arc::new(OpenAiClient::new(provider, &base, ApiKey::new("k", "test"), "m", options).unwrap())
}

fn quick_retries(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(10),
        max_retry_after: Duration::from_millis(50),
    }
}

async fn burst(clients: &[Arc<OpenAiClient>], calls: usize) {
    let mut running = tokio::task::JoinSet::new();
    for i in 0..calls {
        let client = clients[i % clients.len()].clone();
        running.spawn(async move { client.chat(&ask(&format!("q{i}"))).await });
    }
    for result in running.join_all().await {
        assert!(result.is_ok(), "{result:?}");
    }
}

#[tokio::test]
async fn the_run_wide_cap_bounds_requests_in_flight_across_clients() {
    let mock = MockServer::start(MockConfig {
        latency: Duration::from_millis(80),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let scheduler = Scheduler::new(Some(3));
    let options = ClientOptions {
        scheduler: scheduler.clone(),
        ..ClientOptions::default()
    };
    // Two clients of different providers: no provider cap applies, only the run's.
    let clients = [
        client(&mock, "openai", options.clone()),
        client(&mock, "vllm", options),
    ];
    burst(&clients, 12).await;
    assert_eq!(mock.max_in_flight(), 3);
    assert_eq!(scheduler.requests_sent(), 12);
}

#[tokio::test]
async fn a_429_cuts_the_providers_concurrency_and_successes_grow_it_back() {
    let mock = MockServer::start(MockConfig {
        fault_sequence: vec![Fault::RateLimit],
        faults: FaultPlan {
            retry_after_secs: 0,
            ..FaultPlan::default()
        },
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let scheduler = Scheduler::new(None);
    let options = ClientOptions {
        scheduler: scheduler.clone(),
        max_concurrency: Some(8),
        retry: quick_retries(3),
        ..ClientOptions::default()
    };
    let client = client(&mock, "openai", options);
    let gate = scheduler.gate("openai", client.endpoint(), None, None);
    client.chat(&ask("first")).await.unwrap();
    assert_eq!(gate.current_limit(), Some(4), "one 429 halves the cap");
    // Four successes at cap 4 give one slot back, then five more another.
    for i in 0..9 {
        client.chat(&ask(&format!("q{i}"))).await.unwrap();
    }
    assert_eq!(gate.current_limit(), Some(6));
    assert_eq!(mock.request_count(), 11);
}

#[tokio::test]
async fn clients_of_one_endpoint_share_its_cap() {
    let mock = MockServer::start(MockConfig {
        latency: Duration::from_millis(80),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let scheduler = Scheduler::new(None);
    let options = |max| ClientOptions {
        scheduler: scheduler.clone(),
        max_concurrency: max,
        ..ClientOptions::default()
    };
    // A target with a cap of 2 and a judge on the same endpoint without one.
    let clients = [
        client(&mock, "openai", options(Some(2))),
        client(&mock, "openai", options(None)),
    ];
    burst(&clients, 10).await;
    assert_eq!(mock.max_in_flight(), 2);
}

#[tokio::test]
async fn requests_per_minute_paces_the_requests() {
    let mock = MockServer::start(MockConfig::default()).await.unwrap();
    let client = client(
        &mock,
        "openai",
        ClientOptions {
            requests_per_minute: Some(600),
            ..ClientOptions::default()
        },
    );
    let started = Instant::now();
    burst(&[client], 15).await;
    let elapsed = started.elapsed();
    // 600 a minute is 10 a second with a burst of 10: the last 5 take half a second.
    assert!(
        elapsed >= Duration::from_millis(450),
        "15 requests at 600/min came too fast: {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[tokio::test]
async fn the_call_timeout_bounds_a_call_with_all_its_retries() {
    let mock = MockServer::start(MockConfig {
        faults: FaultPlan {
            hang: 1.0,
            ..FaultPlan::default()
        },
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let client = client(
        &mock,
        "openai",
        ClientOptions {
            timeout: Duration::from_millis(200),
            call_timeout: Some(Duration::from_millis(500)),
            retry: quick_retries(100),
            ..ClientOptions::default()
        },
    );
    let started = Instant::now();
    let error = client.chat(&ask("hello")).await.unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        matches!(error, LlmError::Timeout { seconds, .. } if seconds == 0.5),
        "{error:?}"
    );
    assert!(
        elapsed >= Duration::from_millis(450) && elapsed < Duration::from_secs(2),
        "{elapsed:?}"
    );
    assert!(
        mock.request_count() >= 2,
        "attempts time out and are retried until the call's own limit"
    );
    mock.stop().await;
}
