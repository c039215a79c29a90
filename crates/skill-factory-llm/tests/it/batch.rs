//! The batch client against the mock's batch routes, in both wire formats: a batch's answers
//! are a direct call's, its failed requests come back as failures to make up for, and the
//! key stays out of every error.

use std::collections::HashMap;
use std::time::Duration;

use skill_factory_llm::batch::{
    BatchAnswer, BatchApi, BatchProgress, BatchRequest, BatchWire, Polls,
};
use skill_factory_llm::{
    AnthropicClient, ApiKey, ChatModel, ChatRequest, ClientOptions, OpenAiClient,
};
use skill_factory_mock::{BatchPlan, MockConfig, MockServer};

const KEY: &str = "sk-test-batch-secret-0123456789";

async fn mock(plan: BatchPlan) -> MockServer {
    let answers: HashMap<String, String> = (0..20)
        .map(|i| (format!("question {i}"), format!("answer {i}")))
        .collect();
    MockServer::start(MockConfig {
        answers,
        batches: plan,
        require_api_key: Some(KEY.to_string()),
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

fn requests() -> Vec<BatchRequest> {
    (0..20)
        .map(|i| BatchRequest {
            custom_id: format!("task-{i}"),
            request: ChatRequest::single(
                Some("Be brief.".into()),
                format!("question {i}"),
                0.0,
                64,
            ),
        })
        .collect()
}

fn api(wire: BatchWire, mock: &MockServer) -> BatchApi {
    let base = match wire {
        BatchWire::Anthropic => mock.base_url(),
        BatchWire::OpenAi => format!("{}/v1", mock.base_url()),
    };
    BatchApi::new(wire, "mock", &base, ApiKey::new(KEY, "KEY"), "m").unwrap()
}

fn direct(wire: BatchWire, mock: &MockServer) -> Box<dyn ChatModel> {
    let key = ApiKey::new(KEY, "KEY");
    match wire {
        BatchWire::Anthropic => Box::new(
            AnthropicClient::new(&mock.base_url(), key, "m", ClientOptions::default()).unwrap(),
        ),
        BatchWire::OpenAi => Box::new(
            OpenAiClient::new(
                "mock",
                &format!("{}/v1", mock.base_url()),
                key,
                "m",
                ClientOptions::default(),
            )
            .unwrap(),
        ),
    }
}

#[tokio::test]
async fn a_batch_answers_as_direct_calls_do_once_it_has_ended() {
    for wire in [BatchWire::Anthropic, BatchWire::OpenAi] {
        let mock = mock(BatchPlan {
            delay: Duration::from_millis(200),
            ..BatchPlan::default()
        })
        .await;
        let api = api(wire, &mock);
        let id = api.submit(&requests()).await.unwrap();
        assert!(
            matches!(
                api.progress(&id).await.unwrap(),
                BatchProgress::Running { done: 0, total: 20 }
            ),
            "{wire:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(
            api.progress(&id).await.unwrap(),
            BatchProgress::Ended,
            "{wire:?}"
        );
        let results = api.results(&id).await.unwrap();
        assert_eq!(results.len(), 20, "{wire:?}");
        let direct = direct(wire, &mock);
        for (custom_id, answer) in results {
            let i: usize = custom_id.strip_prefix("task-").unwrap().parse().unwrap();
            let BatchAnswer::Answered(batched) = answer else {
                panic!("{wire:?} {custom_id}: {answer:?}");
            };
            let alone = direct.chat(&requests()[i].request).await.unwrap();
            assert_eq!(batched.text, alone.text, "{wire:?} {custom_id}");
            assert_eq!(batched.usage, alone.usage, "{wire:?} {custom_id}");
        }
    }
}

#[tokio::test]
async fn errored_and_expired_requests_come_back_as_failures_to_make_up_for() {
    for wire in [BatchWire::Anthropic, BatchWire::OpenAi] {
        let mock = mock(BatchPlan {
            delay: Duration::ZERO,
            errored: 0.2,
            expired: 0.2,
        })
        .await;
        let api = api(wire, &mock);
        let id = api.submit(&requests()).await.unwrap();
        assert_eq!(api.progress(&id).await.unwrap(), BatchProgress::Ended);
        let results = api.results(&id).await.unwrap();
        assert_eq!(results.len(), 20, "{wire:?}: every request accounted for");
        let failed: Vec<&String> = results
            .iter()
            .filter_map(|(_, a)| match a {
                BatchAnswer::Failed(reason) => Some(reason),
                BatchAnswer::Answered(_) => None,
            })
            .collect();
        assert!(
            !failed.is_empty() && failed.len() < 20,
            "{wire:?}: {failed:?}"
        );
        assert!(failed.iter().all(|r| !r.contains(KEY)));
    }
}

#[tokio::test]
async fn a_wrong_key_is_an_error_that_does_not_show_it() {
    for wire in [BatchWire::Anthropic, BatchWire::OpenAi] {
        let mock = mock(BatchPlan::default()).await;
        let base = match wire {
            BatchWire::Anthropic => mock.base_url(),
            BatchWire::OpenAi => format!("{}/v1", mock.base_url()),
        };
        let wrong = "sk-wrong-key-that-must-not-show-0000";
        let api = BatchApi::new(wire, "mock", &base, ApiKey::new(wrong, "KEY"), "m").unwrap();
        let error = api.submit(&requests()).await.unwrap_err().to_string();
        assert!(error.contains("401"), "{wire:?}: {error}");
        assert!(!error.contains(wrong), "{wire:?}: {error}");
    }
}

#[tokio::test]
async fn waiting_polls_with_back_off_until_the_batch_has_ended() {
    for wire in [BatchWire::Anthropic, BatchWire::OpenAi] {
        let mock = mock(BatchPlan {
            delay: Duration::from_millis(400),
            ..BatchPlan::default()
        })
        .await;
        let api = api(wire, &mock);
        let id = api.submit(&requests()).await.unwrap();
        let started = std::time::Instant::now();
        let mut looks = Vec::new();
        let polls = Polls {
            first: Duration::from_millis(50),
            longest: Duration::from_millis(150),
            failures: 2,
        };
        api.wait(&id, polls, |progress| looks.push(progress.clone()))
            .await
            .unwrap();
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(400), "{wire:?}: {waited:?}");
        assert!(waited < Duration::from_secs(2), "{wire:?}: {waited:?}");
        assert_eq!(looks.last(), Some(&BatchProgress::Ended), "{wire:?}");
        // 50, 75, 112, 150, 150 ms: the pauses grow, so a few looks, not one per 50 ms.
        assert!((3..=8).contains(&looks.len()), "{wire:?}: {looks:?}");
        assert!(
            looks[..looks.len() - 1]
                .iter()
                .all(|p| *p == BatchProgress::Running { done: 0, total: 20 }),
            "{wire:?}: {looks:?}"
        );
    }
}

#[tokio::test]
async fn waiting_for_a_batch_that_does_not_exist_fails_at_once() {
    let mock = mock(BatchPlan::default()).await;
    let api = api(BatchWire::Anthropic, &mock);
    let error = api
        .wait("msgbatch_nope", Polls::default(), |_| {})
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("404") && error.contains("no such batch"),
        "{error}"
    );
}
