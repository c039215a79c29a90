//! The batch client against the mock's batch routes, in both wire formats: a batch's answers
//! are a direct call's, its failed requests come back as failures to make up for, and the
//! key stays out of every error. Then the batching layer: calls gathered into batches within
//! their caps, identical calls sharing a request, and the journal's owed batches polled again
//! (or forgotten when the provider has lost them).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use skill_factory_llm::batch::{
    BatchAnswer, BatchApi, BatchBoard, BatchOptions, BatchProgress, BatchRequest, BatchWire,
    BatchedModel, Journal, Polls,
};
use skill_factory_llm::{
    AnthropicClient, ApiKey, ChatModel, ChatRequest, ChatResponse, ClientOptions, LlmError,
    OpenAiClient,
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

/// Batched calls of the OpenAI client to `mock`, gathered for 50 ms, polled every 10 ms.
fn batched(
    mock: &MockServer,
    journal: Option<Journal>,
    max_requests: usize,
    max_bytes: usize,
) -> (Arc<BatchedModel>, Arc<BatchBoard>) {
    let board = BatchBoard::new();
    let direct: Arc<dyn ChatModel> = Arc::from(direct(BatchWire::OpenAi, mock));
    let options = BatchOptions {
        gather: Duration::from_millis(50),
        max_requests,
        max_bytes,
        polls: Polls {
            first: Duration::from_millis(10),
            longest: Duration::from_millis(50),
            failures: 3,
        },
    };
    let model = BatchedModel::new(
        direct,
        api(BatchWire::OpenAi, mock),
        journal,
        None,
        board.clone(),
        options,
    );
    (Arc::new(model), board)
}

/// Asks every request of `requests` at once (twice each when `twice`), in dataset order.
async fn ask_all(model: &Arc<BatchedModel>, requests: &[BatchRequest], twice: bool) -> Vec<String> {
    let calls = requests.iter().flat_map(|r| {
        let copies = if twice { 2 } else { 1 };
        std::iter::repeat_n(r.request.clone(), copies)
    });
    let handles: Vec<_> = calls
        .map(|request| {
            let model = model.clone();
            tokio::spawn(async move { model.chat(&request).await.unwrap() })
        })
        .collect();
    let mut texts = Vec::new();
    for handle in handles {
        let response = handle.await.unwrap();
        assert!(response.batch && !response.cached);
        texts.push(response.text);
    }
    texts
}

#[tokio::test]
async fn concurrent_calls_make_one_batch_and_identical_ones_share_a_request() {
    let mock = mock(BatchPlan::default()).await;
    let (model, board) = batched(&mock, None, 10_000, usize::MAX);
    let texts = ask_all(&model, &requests(), true).await;
    assert_eq!(mock.batch_counts(), (1, 20), "40 calls, 20 distinct");
    assert_eq!(texts[0], texts[1]);
    assert!(texts[0].contains("answer 0"), "{}", texts[0]);
    assert_eq!(board.counts().answered, 20);
    assert_eq!(mock.request_count(), 0, "nothing asked directly");
}

#[tokio::test]
async fn a_batch_holds_at_most_max_requests_and_max_bytes() {
    let mock = mock(BatchPlan::default()).await;
    let (model, _) = batched(&mock, None, 8, usize::MAX);
    ask_all(&model, &requests(), false).await;
    assert_eq!(mock.batch_counts(), (3, 20), "8 + 8 + 4");
    let mock = self::mock(BatchPlan::default()).await;
    // "Be brief." and "question N" are 19 or 20 bytes: three fit in 60.
    let (model, _) = batched(&mock, None, 10_000, 60);
    ask_all(&model, &requests(), false).await;
    let (batches, requests) = mock.batch_counts();
    assert_eq!(requests, 20);
    assert!((7..=10).contains(&batches), "{batches} batches");
}

#[tokio::test]
async fn an_owed_batch_is_polled_again_and_one_the_provider_lost_is_forgotten() {
    let mock = mock(BatchPlan::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::in_folder(dir.path());
    let (first, _) = batched(&mock, Some(journal.clone()), 10_000, usize::MAX);
    let expected = ask_all(&first, &requests(), false).await;
    assert_eq!(mock.batch_counts(), (1, 20));
    // As if the first run had been killed before reading its batch: the read line goes.
    let text = std::fs::read_to_string(journal.path()).unwrap();
    let submitted = text.lines().next().unwrap().to_string();
    std::fs::write(journal.path(), format!("{submitted}\n")).unwrap();

    let (second, board) = batched(&mock, Some(journal.clone()), 10_000, usize::MAX);
    assert_eq!(ask_all(&second, &requests(), false).await, expected);
    assert_eq!(mock.batch_counts(), (1, 20), "nothing submitted again");
    assert_eq!(board.counts().resumed, 1);
    assert_eq!(mock.request_count(), 0);

    // A batch id the provider does not know: its requests are asked directly, and the
    // journal owes it no more.
    let lost = submitted.replace("batch_mock", "batch_gone");
    std::fs::write(journal.path(), format!("{lost}\n")).unwrap();
    let (third, board) = batched(&mock, Some(journal.clone()), 10_000, usize::MAX);
    let calls: Vec<_> = requests()
        .into_iter()
        .map(|r| {
            let third = third.clone();
            tokio::spawn(async move { third.chat(&r.request).await.unwrap() })
        })
        .collect();
    for call in calls {
        assert!(!call.await.unwrap().batch, "asked directly");
    }
    assert_eq!(board.counts().direct, 20);
    assert_eq!(mock.request_count(), 20);
    let owed = journal.owed(third.provider(), third.endpoint(), third.model());
    assert!(owed.is_empty(), "{owed:?}");
}

/// What [`under_a_budget`] saw: the answers (or errors), the sizes of the batches submitted,
/// and what the ledger booked, in units of the most one request may cost.
type Budgeted = (Vec<Result<ChatResponse, LlmError>>, Vec<usize>, f64);

/// The first `calls` requests asked at once through `model`, held to a ledger with room for
/// `room` times the most one of them may cost.
async fn under_a_budget(
    model: Arc<BatchedModel>,
    board: &Arc<BatchBoard>,
    room: f64,
    calls: usize,
) -> Budgeted {
    use skill_factory_llm::batch::BatchEvent;
    use skill_factory_llm::{BudgetLimits, BudgetedModel, Ledger, Pricing, Reserve};
    let sizes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = sizes.clone();
    board.watch(move |event| {
        if let BatchEvent::Submitted { requests, .. } = event {
            seen.lock().unwrap().push(*requests);
        }
    });
    let price = Pricing {
        input_per_mtok: 1_000.0,
        output_per_mtok: 1_000.0,
    };
    let most = Reserve::of(&requests()[0].request, Some(price)).usd;
    let ledger = Arc::new(Ledger::new(BudgetLimits {
        max_usd: Some(most * room),
        ..BudgetLimits::default()
    }));
    board.hold_to(ledger.clone());
    let budgeted =
        Arc::new(BudgetedModel::new(model, ledger.clone(), "target", Some(price)).reserving());
    let handles: Vec<_> = requests()
        .into_iter()
        .take(calls)
        .map(|r| {
            let budgeted = budgeted.clone();
            tokio::spawn(async move { budgeted.chat(&r.request).await })
        })
        .collect();
    let mut answers = Vec::new();
    for handle in handles {
        answers.push(handle.await.unwrap());
    }
    let sizes = sizes.lock().unwrap().clone();
    (answers, sizes, ledger.total().usd / most)
}

#[tokio::test]
async fn a_budget_with_room_for_one_request_at_a_time_asks_directly_instead_of_batching() {
    let mock = mock(BatchPlan::default()).await;
    let (model, board) = batched(&mock, None, 10_000, usize::MAX);
    let started = std::time::Instant::now();
    // Room for one call's worst case, and for several calls' real cost.
    let (answers, sizes, _) = under_a_budget(model, &board, 1.5, 20).await;
    assert_eq!(sizes, Vec::<usize>::new(), "no batch of one went out");
    assert_eq!(mock.batch_counts(), (0, 0));
    let answered: Vec<&ChatResponse> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
    assert!(answered.len() >= 2, "{answers:?}");
    assert!(answered.iter().all(|a| !a.batch), "asked directly");
    assert!(
        answers
            .iter()
            .filter_map(|a| a.as_ref().err())
            .all(|e| matches!(e, LlmError::Budget(_))),
        "{answers:?}"
    );
    assert!(board.is_direct());
    assert_eq!(board.counts().direct, answered.len() as u64);
    assert_eq!(mock.request_count(), answered.len());
    // One gathering's wait (50 ms here), not one batch after another.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_single_call_that_waits_for_nobody_is_still_batched() {
    let mock = mock(BatchPlan::default()).await;
    let (model, board) = batched(&mock, None, 10_000, usize::MAX);
    let (answers, sizes, _) = under_a_budget(model, &board, 1.5, 1).await;
    assert_eq!(sizes, [1]);
    assert!(answers[0].as_ref().unwrap().batch);
    assert!(!board.is_direct());
}

#[tokio::test]
async fn a_budget_with_room_for_several_requests_keeps_batching_them() {
    let mock = mock(BatchPlan::default()).await;
    let (model, board) = batched(&mock, None, 10_000, usize::MAX);
    // Room for five calls' worst case at a time, and for the twenty calls' real cost: no batch
    // holds more than the budget has room for, and the rest wait for the next batch.
    let (answers, sizes, spent) = under_a_budget(model, &board, 5.5, 20).await;
    assert!(
        sizes.len() >= 2 && sizes.iter().all(|n| (2..=5).contains(n)),
        "{sizes:?}"
    );
    assert!(answers.iter().all(|a| a.as_ref().is_ok_and(|a| a.batch)));
    assert_eq!(answers.len(), sizes.iter().sum::<usize>());
    assert!(spent <= 5.5, "{spent} times the most a request may cost");
    assert!(!board.is_direct());
    assert_eq!(board.counts().direct, 0);
}
