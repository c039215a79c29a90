//! The `systemone` metric: weighted P(true) of rubric checks, answered by a decision model and
//! cached; here against the in-process fake, and wired from a config against a loopback HTTP
//! stub.

use std::path::Path;
use std::sync::Arc;

use skill_factory::config::SystemOneCheck;
use skill_factory::harness;
use skill_factory::metric::systemone::PREAMBLE;
use skill_factory::metric::{self, Metric, SystemOneMetric};
use skill_factory::session::{Session, SessionOptions};
use skill_factory_core::{MetricResult, Rollout, Task};
use skill_factory_llm::systemone::{AnswerCache, FakeSystemOne, Question, sha24};
use skill_factory_mock::SystemOneStub;

/// strict_json: 0.97 when the output is a JSON object, else 0.1; correct: always 0.9.
fn responder(state: &str, id: &str, _question: &Question) -> f64 {
    match id {
        "strict_json" if state.contains("=== OUTPUT ===\n{") => 0.97,
        "strict_json" => 0.1,
        _ => 0.9,
    }
}

fn checks() -> Vec<SystemOneCheck> {
    vec![
        SystemOneCheck::new(
            "strict_json",
            "Is the output only a JSON object?",
            Some("Yes: only JSON".into()),
            Some("No: the output is prose".into()),
            1.0,
        ),
        SystemOneCheck::new("correct", "Is the answer correct?", None, None, 3.0),
    ]
}

fn metric_with(
    fake: Arc<FakeSystemOne>,
    checks: Vec<SystemOneCheck>,
    threshold: Option<f64>,
    include_expected: bool,
) -> SystemOneMetric {
    SystemOneMetric::new(
        fake,
        Arc::new(AnswerCache::in_memory()),
        checks,
        threshold,
        include_expected,
    )
    .unwrap()
}

fn task() -> Task {
    Task::new("t1", "Extract the total.").with_expected("{\"total\": 7}")
}

async fn score(metric: &SystemOneMetric, output: &str) -> MetricResult {
    metric
        .score(&task(), &Rollout::success("t1", output))
        .await
        .unwrap()
}

#[tokio::test]
async fn score_is_the_weighted_p_true_and_failing_checks_are_explained() {
    let fake = Arc::new(FakeSystemOne::new("fake-jev", responder));
    let metric = metric_with(fake.clone(), checks(), None, false);
    let good = score(&metric, "{\"total\": 7}").await;
    assert!(
        (good.score - (0.97 + 3.0 * 0.9) / 4.0).abs() < 1e-12,
        "{}",
        good.score
    );
    assert_eq!(good.feedback, "all checks pass");
    assert_eq!(good.breakdown["strict_json"], 0.97);
    assert_eq!(good.breakdown["correct"], 0.9);
    let state = "=== INPUT ===\nExtract the total.\n\n=== OUTPUT ===\n{\"total\": 7}";
    assert_eq!(good.usage.input_tokens, state.chars().count() as u64 / 4);

    let prose = score(&metric, "The total is 7.").await;
    assert!(prose.score < good.score);
    assert_eq!(
        prose.feedback,
        "strict_json: P(true)=0.10 (No: the output is prose)"
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].ids, vec!["strict_json", "correct"]);
}

#[tokio::test]
async fn threshold_mode_counts_a_check_as_passed_or_failed() {
    let fake = Arc::new(FakeSystemOne::new("fake-jev", responder));
    let metric = metric_with(fake, checks(), Some(0.5), false);
    assert_eq!(score(&metric, "{\"total\": 7}").await.score, 1.0);
    let prose = score(&metric, "The total is 7.").await;
    assert_eq!(prose.score, 0.75);
    assert_eq!(prose.breakdown["strict_json"], 0.0);
}

#[tokio::test]
async fn a_cached_answer_is_not_asked_again() {
    let fake = Arc::new(FakeSystemOne::new("fake-jev", responder));
    let metric = metric_with(fake.clone(), checks(), Some(0.5), false);
    let first = score(&metric, "{\"total\": 7}").await;
    let second = score(&metric, "{\"total\": 7}").await;
    assert_eq!(
        first,
        MetricResult {
            usage: first.usage,
            ..second.clone()
        }
    );
    assert_eq!(second.usage.input_tokens, 0, "a cache hit costs nothing");
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn only_the_checks_missing_from_the_cache_are_asked() {
    let fake = Arc::new(FakeSystemOne::new("fake-jev", responder));
    let cache = Arc::new(AnswerCache::in_memory());
    let one = SystemOneMetric::new(
        fake.clone(),
        cache.clone(),
        checks()[..1].to_vec(),
        None,
        false,
    )
    .unwrap();
    let both = SystemOneMetric::new(fake.clone(), cache, checks(), None, false).unwrap();
    score(&one, "{}").await;
    score(&both, "{}").await;
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].ids, vec!["correct"]);
}

#[tokio::test]
async fn a_failed_rollout_scores_zero_without_a_request() {
    let fake = Arc::new(FakeSystemOne::new("fake-jev", responder));
    let metric = metric_with(fake.clone(), checks(), None, false);
    let result = metric
        .score(&task(), &Rollout::failure("t1", "exit 1: boom"))
        .await
        .unwrap();
    assert_eq!(
        (result.score, result.feedback.as_str()),
        (0.0, "rollout failed: exit 1: boom")
    );
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn a_failing_client_scores_zero_and_says_so() {
    let fake = Arc::new(FakeSystemOne::new("fake-jev", responder).fail_when(|_| true));
    let metric = metric_with(fake, checks(), None, false);
    let result = score(&metric, "{}").await;
    assert_eq!(result.score, 0.0);
    assert_eq!(
        result.feedback,
        "System One check failed: fake request failed: HTTP 503: the fake was told to fail"
    );
}

#[tokio::test]
async fn include_expected_adds_the_reference_to_the_state() {
    let fake = Arc::new(FakeSystemOne::new("fake-jev", responder));
    let with = metric_with(fake.clone(), checks(), None, true);
    score(&with, "out").await;
    assert_eq!(
        fake.requests()[0].state,
        "=== INPUT ===\nExtract the total.\n\n=== OUTPUT ===\nout\n\n=== REFERENCE ===\n{\"total\": 7}"
    );
    let without = metric_with(fake.clone(), checks(), None, false);
    score(&without, "").await;
    assert_eq!(
        fake.requests()[1].state,
        "=== INPUT ===\nExtract the total.\n\n=== OUTPUT ===\n(empty)"
    );
}

#[test]
fn empty_duplicate_and_weightless_checks_are_refused() {
    let fake = Arc::new(FakeSystemOne::new("fake-jev", responder));
    let cache = Arc::new(AnswerCache::in_memory());
    let build = |checks: Vec<SystemOneCheck>| {
        SystemOneMetric::new(fake.clone(), cache.clone(), checks, None, false)
            .err()
            .map(|e| e.to_string())
    };
    assert!(build(Vec::new()).unwrap().contains("at least one check"));
    let twice = vec![checks()[0].clone(), checks()[0].clone()];
    assert!(build(twice).unwrap().contains("used twice"));
    let mut weightless = checks();
    weightless[1].weight = 0.0;
    assert!(build(weightless).unwrap().contains("greater than 0"));
}

#[test]
fn default_criteria_are_yes_and_no_followed_by_the_question() {
    let check = SystemOneCheck::new("c", "Is it short?", None, None, 1.0);
    assert_eq!(
        (check.true_text(), check.false_text()),
        (
            "Yes: Is it short?".to_string(),
            "No: Is it short?".to_string()
        )
    );
    assert_eq!(
        check.compiled().instructions,
        format!("{PREAMBLE}\n\nIs it short?")
    );
}

/// Hashes and a cache file written by the Python `skill-factory` 0.2.0 (run as a black box
/// against a loopback stub): its cached answers are cache hits here.
#[tokio::test]
async fn answers_cached_by_the_python_tool_are_reused() {
    let state = "=== INPUT ===\nhello world\n\n=== OUTPUT ===\nHELLO WORLD\n\n=== REFERENCE ===\nHELLO WORLD";
    assert_eq!(sha24(state), "bcc8ad820ae4a4c13eed0e6c");
    let upper = SystemOneCheck::new("upper", "Is the output in upper case?", None, None, 1.0);
    // The Python tool's YAML reads an unquoted `true:` key as a boolean, so its run used the
    // default criteria for this check even though the config gave `true: Yes it is`.
    let quoted = SystemOneCheck::new("strict", "Is it \u{e9} \"quoted\"?", None, None, 2.0);
    assert_eq!(upper.compiled().hash(), "0119f4fa8fbe2a2d789e47ca");
    assert_eq!(quoted.compiled().hash(), "c03028ce2c7f3cb223971c34");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("answers.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"s": "bcc8ad820ae4a4c13eed0e6c", "q": "0119f4fa8fbe2a2d789e47ca", "m": "jev-latest", "p": 0.9, "v": "fake-jev-1.0"}"#,
            "\n",
            r#"{"s": "bcc8ad820ae4a4c13eed0e6c", "q": "c03028ce2c7f3cb223971c34", "m": "jev-latest", "p": 0.9, "v": "fake-jev-1.0"}"#,
            "\n"
        ),
    )
    .unwrap();
    let fake = Arc::new(FakeSystemOne::new("jev-latest", |_, _, _| 0.0));
    let metric = SystemOneMetric::new(
        fake.clone(),
        Arc::new(AnswerCache::open(&path).unwrap()),
        vec![upper, quoted],
        None,
        true,
    )
    .unwrap();
    let task = Task::new("t1", "hello world").with_expected("HELLO WORLD");
    let result = metric
        .score(&task, &Rollout::success("t1", "HELLO WORLD"))
        .await
        .unwrap();
    assert!((result.score - 0.9).abs() < 1e-12);
    assert!(
        fake.requests().is_empty(),
        "the cached answers were asked again"
    );
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// The echo skill and `dataset` (as `data.jsonl`) in a new temporary folder, kept as long as
/// the handle.
fn echo_run(dataset: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "skill.md",
        "---\nname: s\ndescription: d\n---\nEcho.\n",
    );
    write(dir.path(), "data.jsonl", dataset);
    dir
}

#[tokio::test]
async fn a_config_wires_the_metric_to_the_http_host_and_its_cache_file() {
    let stub = SystemOneStub::start(|state, _id, question| {
        let asks_intent = question["instructions"]
            .as_str()
            .is_some_and(|i| i.contains("bad intent"));
        if asks_intent && state.contains("INTENT:bad") {
            0.95
        } else {
            0.05
        }
    })
    .await
    .unwrap();
    let dir = echo_run(
        "{\"id\": \"a\", \"input\": \"item 1 INTENT:bad\"}\n{\"id\": \"b\", \"input\": \"item 2 INTENT:good\"}\n",
    );
    write(
        dir.path(),
        "config.yaml",
        &format!(
            "skill: skill.md\ndataset: data.jsonl\nharness: {{type: subprocess, command: [cat]}}\nmetric:\n  systemone:\n    provider: custom\n    base_url: {}\n    cache: cache/answers.jsonl\n    checks:\n      - {{name: intent, question: Does the item show bad intent?}}\n",
            stub.url()
        ),
    );
    let config = dir.path().join("config.yaml");
    let session = Session::open(&config, SessionOptions::default()).unwrap();
    let metric = metric::from_config(&session).unwrap();
    let harness = harness::from_config(&session).unwrap();
    let bad = &session.dataset.tasks[0];
    let rollout = harness.run(&session.skill, bad).await;
    let result = metric.score(bad, &rollout).await.unwrap();
    assert!(result.score > 0.5, "{result:?}");
    assert_eq!(result.feedback, "[systemone] score 0.95: all checks pass");
    let body = &stub.received()[0].body;
    assert_eq!(body["model"], "jev-latest");
    assert_eq!(
        body["questions"]["intent"]["criteria"]["true"],
        "Yes: Does the item show bad intent?"
    );
    let cache = std::fs::read_to_string(dir.path().join("cache/answers.jsonl")).unwrap();
    assert!(
        cache.contains("\"m\": \"jev-latest\", \"p\": 0.95, \"v\": \"fake-jev-1.0\""),
        "{cache}"
    );

    // A new session reads the cache file: the same rollout costs no request.
    let again =
        metric::from_config(&Session::open(&config, SessionOptions::default()).unwrap()).unwrap();
    again.score(bad, &rollout).await.unwrap();
    assert_eq!(stub.request_count(), 1);
}

/// Without an `answers.jsonl`, System One answers still land in the run's SQLite model cache:
/// a later session asks nothing again, each request is booked in the ledger (a hit for free),
/// `--no-cache` asks again, and `max_usd` is refused because System One has no price here.
#[tokio::test]
async fn system_one_goes_through_the_model_cache_and_the_budget_like_any_model() {
    let stub = SystemOneStub::start(
        |state, _id, _question| {
            if state.contains("good") { 0.9 } else { 0.1 }
        },
    )
    .await
    .unwrap();
    let dir = echo_run(
        "{\"id\": \"a\", \"input\": \"a good item\"}\n{\"id\": \"b\", \"input\": \"a bad item\"}\n",
    );
    let systemone = format!(
        "metric:\n  systemone:\n    provider: custom\n    base_url: {}\n    checks:\n      - {{name: good, question: Is the item good?}}\n",
        stub.url()
    );
    write(
        dir.path(),
        "config.yaml",
        &format!(
            "skill: skill.md\ndataset: data.jsonl\nharness: {{type: subprocess, command: [cat]}}\n{systemone}"
        ),
    );
    let config = dir.path().join("config.yaml");
    let scores = |cache_off: bool| {
        let config = config.clone();
        async move {
            let options = SessionOptions {
                no_cache: cache_off,
                ..SessionOptions::default()
            };
            let session = Session::open(&config, options).unwrap();
            let metric = metric::from_config(&session).unwrap();
            let harness = harness::from_config(&session).unwrap();
            let mut scores = Vec::new();
            for task in &session.dataset.tasks {
                let rollout = harness.run(&session.skill, task).await;
                scores.push(metric.score(task, &rollout).await.unwrap().score);
            }
            (scores, session.ledger().by_role()["systemone"])
        }
    };
    let (first, spend) = scores(false).await;
    assert_eq!(first, [0.9, 0.1]);
    assert_eq!((spend.calls, spend.cached_calls), (2, 0));
    assert_eq!(stub.request_count(), 2);
    let (second, spend) = scores(false).await;
    assert_eq!(second, first);
    assert_eq!((spend.calls, spend.cached_calls), (0, 2));
    assert_eq!(stub.request_count(), 2, "the second session asked nothing");
    scores(true).await;
    assert_eq!(
        stub.request_count(),
        4,
        "without the cache every request goes out"
    );

    write(
        dir.path(),
        "config.yaml",
        &format!(
            "skill: skill.md\ndataset: data.jsonl\nharness: {{type: subprocess, command: [cat]}}\noptimizer: {{budget: {{max_usd: 1}}}}\n{systemone}"
        ),
    );
    let options = SessionOptions {
        budgeted: true,
        ..SessionOptions::default()
    };
    let session = Session::open(&config, options).unwrap();
    let refused = metric::from_config(&session)
        .err()
        .expect("max_usd is refused")
        .to_string();
    assert!(
        refused.contains("metric.systemone: optimizer.budget.max_usd is set"),
        "{refused}"
    );
}
