//! The mock server over real HTTP: routes, error shapes, recording, stopping, and the binary.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skill_factory_mock::{FaultPlan, MockConfig, MockServer};

async fn post(url: &str, body: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn health_is_served_and_not_counted_as_a_chat_request() {
    let mock = MockServer::start(MockConfig::default()).await.unwrap();
    let health: Value = reqwest::get(format!("{}/health", mock.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health, json!({"status": "ok"}));
    assert_eq!(mock.request_count(), 0);
    let (status, _) = post(&format!("{}/v1/unknown", mock.base_url()), "{}").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn stats_report_requests_and_the_peak_in_flight_until_reset() {
    let mock = MockServer::start(MockConfig {
        latency: Duration::from_millis(100),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let url = format!("{}/v1/chat/completions", mock.base_url());
    let chat = r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#;
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { post(&url, chat).await })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().0, 200);
    }
    let stats: Value = reqwest::get(format!("{}/stats", mock.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        stats,
        json!({"requests": 3, "faults": crate::no_faults(), "batches": {"created": 0, "requests": 0}, "in_flight": 0, "max_in_flight": 3})
    );
    let (status, reset) = post(&format!("{}/stats/reset", mock.base_url()), "").await;
    assert_eq!(status, 200);
    assert_eq!(
        reset,
        json!({"requests": 3, "faults": crate::no_faults(), "batches": {"created": 0, "requests": 0}, "in_flight": 0, "max_in_flight": 0})
    );
    assert_eq!(mock.max_in_flight(), 0);
}

#[tokio::test]
async fn both_formats_answer_on_every_route_and_are_recorded() {
    let mock = MockServer::start(MockConfig::default()).await.unwrap();
    let chat = r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#;
    for path in [
        "/v1/chat/completions",
        "/chat/completions",
        "/openai/deployments/d/chat/completions",
    ] {
        let (status, body) = post(&format!("{}{path}", mock.base_url()), chat).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(body["object"], "chat.completion", "{path}");
    }
    let (status, body) = post(&format!("{}/v1/messages", mock.base_url()), chat).await;
    assert_eq!(status, 200);
    assert_eq!(body["type"], "message");
    assert_eq!(mock.request_count(), 4);
    assert_eq!(mock.received()[3].body["messages"][0]["content"], "hi");
}

#[tokio::test]
async fn bad_requests_get_400_in_the_formats_own_error_shape() {
    let mock = MockServer::start(MockConfig::default()).await.unwrap();
    let (status, body) = post(
        &format!("{}/v1/chat/completions", mock.base_url()),
        "not json",
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let (status, body) = post(
        &format!("{}/v1/messages", mock.base_url()),
        r#"{"model": "m"}"#,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn a_rate_limit_carries_the_configured_retry_after() {
    let config = MockConfig {
        faults: FaultPlan {
            rate_limit: 1.0,
            retry_after_secs: 7,
            ..FaultPlan::default()
        },
        ..MockConfig::default()
    };
    let mock = MockServer::start(config).await.unwrap();
    let response = reqwest::Client::new()
        .post(format!("{}/v1/messages", mock.base_url()))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
}

/// A valid chat request, so that transport faults have a real answer to spoil.
const CHAT: &str = r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#;

async fn start_with(faults: FaultPlan) -> MockServer {
    MockServer::start(MockConfig {
        faults,
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn a_bare_rate_limit_has_no_retry_after() {
    let mock = start_with(FaultPlan {
        rate_limit_bare: 1.0,
        ..FaultPlan::default()
    })
    .await;
    let response = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", mock.base_url()))
        .body(CHAT)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 429);
    assert!(response.headers().get("retry-after").is_none());
}

#[tokio::test]
async fn a_reset_or_a_cut_body_never_yields_a_whole_answer() {
    for faults in [
        FaultPlan {
            reset: 1.0,
            ..FaultPlan::default()
        },
        FaultPlan {
            cut_body: 1.0,
            ..FaultPlan::default()
        },
    ] {
        let mock = start_with(faults.clone()).await;
        let outcome = async {
            let response = reqwest::Client::new()
                .post(format!("{}/v1/chat/completions", mock.base_url()))
                .body(CHAT)
                .send()
                .await?;
            response.bytes().await
        }
        .await;
        assert!(outcome.is_err(), "{faults:?}: {outcome:?}");
    }
}

#[tokio::test]
async fn a_slowloris_body_trickles_until_the_client_gives_up() {
    let mock = start_with(FaultPlan {
        slowloris: 1.0,
        ..FaultPlan::default()
    })
    .await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(2500))
        .build()
        .unwrap();
    let response = client
        .post(format!("{}/v1/chat/completions", mock.base_url()))
        .body(CHAT)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let length: usize = response.headers()["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(length > 50, "{length}");
    let mut response = response;
    let mut received = 0;
    let error = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => received += chunk.len(),
            Ok(None) => panic!("the whole body arrived"),
            Err(error) => break error,
        }
    };
    assert!(error.is_timeout(), "{error:?}");
    assert!((1..=3).contains(&received), "{received} bytes in 2.5 s");
    let started = Instant::now();
    mock.stop().await;
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_redirecting_server_points_at_the_same_path_elsewhere() {
    let mock = MockServer::start(MockConfig {
        redirect_to: Some("http://127.0.0.1:9/".to_string()),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client
        .post(format!("{}/v1/messages", mock.base_url()))
        .body(CHAT)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 307);
    assert_eq!(
        response.headers()["location"],
        "http://127.0.0.1:9/v1/messages"
    );
}

#[tokio::test]
async fn stopping_releases_hanging_requests() {
    let config = MockConfig {
        faults: FaultPlan {
            hang: 1.0,
            ..FaultPlan::default()
        },
        ..MockConfig::default()
    };
    let mock = MockServer::start(config).await.unwrap();
    let url = format!("{}/v1/chat/completions", mock.base_url());
    let hanging = tokio::spawn(async move { post(&url, "{}").await });
    while mock.request_count() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!hanging.is_finished());
    let started = Instant::now();
    mock.stop().await;
    let (status, _) = tokio::time::timeout(Duration::from_secs(5), hanging)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status, 503);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn the_binary_prints_its_address_and_serves_until_killed() {
    let (mut child, line) = crate::spawn_binary(&["--port", "0", "--latency-ms", "1"]);
    let address = line
        .trim()
        .strip_prefix("listening on ")
        .map(str::to_string);
    let result = match &address {
        Some(base) if base.starts_with("http://127.0.0.1:") => {
            let chat = r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#;
            Ok(post(&format!("{base}/v1/chat/completions"), chat).await)
        }
        _ => Err(line.clone()),
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let (status, body) = result.unwrap_or_else(|line| panic!("unexpected first line: {line:?}"));
    assert_eq!(status, 200);
    assert_eq!(body["choices"][0]["index"], 0);
}

#[test]
fn the_binary_refuses_fractions_above_one() {
    let output = Command::new(env!("CARGO_BIN_EXE_sf-mock-server"))
        .args(["--fail-429", "0.7", "--fail-500", "0.7"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("more than 1"));
}
