//! Behaviour of the metrics: the reference tool's own test cases (spec §9 test_metrics.py and
//! test_examples.py), its feedback text byte for byte (data/metric_reference.json, recorded
//! from the Python tool by data/metric_reference.py), the deliberate fixes, and the error
//! messages of `Check::from_spec`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use proptest::prelude::*;
use serde_json::{Value, json};
use skill_factory::config::{Check, Criterion, GoldenMode};
use skill_factory::metric::golden::token_f1;
use skill_factory::metric::{
    CompositeMetric, GoldenMetric, LlmJudgeMetric, Metric, NotApplicable, ProgrammaticMetric,
};
use skill_factory_core::{MetricResult, Rollout, Task, Usage};
use skill_factory_llm::{ChatModel, ChatRequest, ChatResponse, LlmError, StopReason, TokenUsage};

// ---------------------------------------------------------------------------------------------
// Helpers

/// A judge model that answers every request with the same canned reply and records requests.
struct CannedJudge {
    reply: Result<String, LlmError>,
    usage: TokenUsage,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
}

impl CannedJudge {
    fn replying(reply: &str) -> Self {
        CannedJudge {
            reply: Ok(reply.to_string()),
            usage: TokenUsage {
                input_tokens: 120,
                output_tokens: 30,
            },
            requests: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn failing(error: LlmError) -> Self {
        CannedJudge {
            reply: Err(error),
            ..CannedJudge::replying("")
        }
    }

    fn recording_into(mut self, requests: &Arc<Mutex<Vec<ChatRequest>>>) -> Self {
        self.requests = Arc::clone(requests);
        self
    }
}

#[async_trait]
impl ChatModel for CannedJudge {
    fn provider(&self) -> &str {
        "fake"
    }

    fn model(&self) -> &str {
        "canned-judge"
    }

    fn endpoint(&self) -> &str {
        ""
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(request.clone());
        }
        let text = self.reply.clone()?;
        Ok(ChatResponse {
            text,
            usage: self.usage,
            stop_reason: StopReason::End,
            model: "canned-judge".to_string(),
            latency: Duration::ZERO,
            cached: false,
            batch: false,
        })
    }
}

fn task(expected: Option<&str>) -> Task {
    let task = Task::new("t1", "in");
    match expected {
        Some(expected) => task.with_expected(expected),
        None => task,
    }
}

fn ok(output: &str) -> Rollout {
    Rollout::success("t1", output)
}

async fn score(metric: &dyn Metric, task: &Task, rollout: &Rollout) -> MetricResult {
    match metric.score(task, rollout).await {
        Ok(result) => result,
        Err(NotApplicable(reason)) => panic!("{} was not applicable: {reason}", metric.name()),
    }
}

async fn golden(mode: GoldenMode, output: &str, expected: &str) -> MetricResult {
    score(&GoldenMetric::new(mode), &task(Some(expected)), &ok(output)).await
}

fn checks(specs: Value) -> ProgrammaticMetric {
    let specs = specs.as_array().cloned().unwrap_or_default();
    let checks: Vec<Check> = specs
        .iter()
        .map(|spec| Check::from_spec(spec).unwrap_or_else(|e| panic!("{spec}: {e}")))
        .collect();
    ProgrammaticMetric::new(checks).unwrap_or_else(|e| panic!("{e}"))
}

async fn programmatic(specs: Value, output: &str) -> MetricResult {
    score(&checks(specs), &task(Some("E")), &ok(output)).await
}

fn criteria_3_1() -> Vec<Criterion> {
    vec![
        Criterion::new("correctness", "Is it right?", 3.0),
        Criterion::new("format", "Bare label only.", 1.0),
    ]
}

fn judge(reply: &str, criteria: Vec<Criterion>) -> LlmJudgeMetric {
    LlmJudgeMetric::new(Arc::new(CannedJudge::replying(reply)), criteria)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn spec_error(spec: Value) -> String {
    match Check::from_spec(&spec) {
        Ok(check) => panic!("{spec} was accepted as {check:?}"),
        Err(e) => e.to_string(),
    }
}

fn assert_close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() < 1e-9,
        "score {actual} != {expected}"
    );
}

// ---------------------------------------------------------------------------------------------
// The reference's recorded behaviour, replayed

/// Builds the metric a recorded case describes; judge requests are recorded into `requests`.
fn build(spec: &Value, requests: &Arc<Mutex<Vec<ChatRequest>>>) -> Box<dyn Metric> {
    match spec["kind"].as_str() {
        Some("golden") => {
            let mode: GoldenMode =
                serde_json::from_value(spec["mode"].clone()).unwrap_or_else(|e| panic!("{e}"));
            Box::new(GoldenMetric::new(mode))
        }
        Some("programmatic") => Box::new(checks(spec["checks"].clone())),
        Some("judge") => {
            let criteria = spec["criteria"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    Criterion::new(
                        c["name"].as_str().unwrap_or_default(),
                        c["description"].as_str().unwrap_or_default(),
                        c["weight"].as_f64().unwrap_or_default(),
                    )
                })
                .collect();
            let model = CannedJudge::replying(spec["reply"].as_str().unwrap_or_default())
                .recording_into(requests);
            Box::new(
                LlmJudgeMetric::new(Arc::new(model), criteria).unwrap_or_else(|e| panic!("{e}")),
            )
        }
        Some("composite") => {
            let parts = spec["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    (
                        build(&p["metric"], requests),
                        p["weight"].as_f64().unwrap_or_default(),
                    )
                })
                .collect();
            Box::new(CompositeMetric::new(parts).unwrap_or_else(|e| panic!("{e}")))
        }
        other => panic!("unknown metric kind {other:?}"),
    }
}

/// Every difference between a recorded case and what the Rust metric does, as text.
async fn replay(case: &Value) -> Vec<String> {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let metric = build(&case["metric"], &requests);
    let mut task = Task::new(
        case["task"]["id"].as_str().unwrap_or_default(),
        case["task"]["input"].as_str().unwrap_or_default(),
    );
    task.expected = case["task"]["expected"].as_str().map(str::to_string);
    let output = case["output"].as_str().unwrap_or_default();
    let rollout = match case["error"].as_str() {
        Some(error) => Rollout::failure(&task.id, error),
        None => Rollout::success(&task.id, output),
    };
    let expect = &case["expect"];
    let mut problems = Vec::new();
    match (
        metric.score(&task, &rollout).await,
        expect.get("not_applicable"),
    ) {
        (Err(NotApplicable(reason)), Some(want)) => {
            if want.as_str() != Some(reason.as_str()) {
                problems.push(format!(
                    "not-applicable reason {reason:?}, reference {want}"
                ));
            }
        }
        (Err(NotApplicable(reason)), None) => problems.push(format!("not applicable: {reason}")),
        (Ok(result), Some(want)) => problems.push(format!(
            "scored {result:?}, reference not applicable: {want}"
        )),
        (Ok(result), None) => {
            let want_score = expect["score"].as_f64().unwrap_or(f64::NAN);
            if (result.score - want_score).abs() > 1e-9 {
                problems.push(format!("score {} != reference {want_score}", result.score));
            }
            if expect["feedback"].as_str() != Some(result.feedback.as_str()) {
                problems.push(format!(
                    "feedback {:?} != reference {}",
                    result.feedback, expect["feedback"]
                ));
            }
            let want_parts = expect["breakdown"].as_object().cloned().unwrap_or_default();
            let same_parts = want_parts.len() == result.breakdown.len()
                && want_parts.iter().all(|(k, v)| {
                    result
                        .breakdown
                        .get(k)
                        .is_some_and(|s| (s - v.as_f64().unwrap_or(f64::NAN)).abs() < 1e-9)
                });
            if !same_parts {
                problems.push(format!(
                    "breakdown {:?} != reference {}",
                    result.breakdown, expect["breakdown"]
                ));
            }
        }
    }
    if let Some(want_prompt) = case["prompt"].as_str() {
        let sent = requests
            .lock()
            .ok()
            .and_then(|r| r.first().map(|r| r.messages[0].content.clone()));
        if sent.as_deref() != Some(want_prompt) {
            problems.push(format!(
                "judge prompt {sent:?} != reference {want_prompt:?}"
            ));
        }
    }
    problems
}

#[tokio::test]
async fn every_recorded_reference_case_gives_the_same_score_feedback_and_breakdown() {
    let cases: Vec<Value> = serde_json::from_str(include_str!("../data/metric_reference.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        cases.len() > 250,
        "the recording holds {} cases",
        cases.len()
    );
    let mut failures = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        for problem in replay(case).await {
            failures.push(format!(
                "case {index} ({} on {}): {problem}",
                case["metric"], case["output"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Spec §9 tests/test_metrics.py

#[tokio::test]
async fn exact_mode_requires_identical_trimmed_text() {
    assert_eq!(golden(GoldenMode::Exact, "hello", "hello").await.score, 1.0);
    assert_eq!(golden(GoldenMode::Exact, "Hello", "hello").await.score, 0.0);
}

#[tokio::test]
async fn normalized_mode_ignores_case_and_whitespace_runs() {
    assert_eq!(
        golden(GoldenMode::Normalized, "Hello World", "hello   world")
            .await
            .score,
        1.0
    );
}

#[tokio::test]
async fn token_f1_gives_partial_credit_for_word_overlap() {
    let result = golden(
        GoldenMode::TokenF1,
        "the quick brown fox",
        "the quick red fox",
    )
    .await;
    assert!(result.score > 0.0 && result.score < 1.0);
    assert_eq!(result.score, 0.75);
}

#[tokio::test]
async fn json_equal_gives_partial_credit_per_key() {
    let result = golden(
        GoldenMode::JsonEqual,
        r#"{"a":1,"b":99}"#,
        r#"{"a":1,"b":2}"#,
    )
    .await;
    assert!(result.score > 0.0 && result.score < 1.0);
    assert_eq!(
        result.feedback,
        "[json_equal] key-F1 0.50. wrong values: ['b']."
    );
    assert_eq!(result.breakdown.get("key_f1"), Some(&0.5));
}

#[tokio::test]
async fn json_equal_accepts_a_fenced_output() {
    let result = golden(
        GoldenMode::JsonEqual,
        "```json\n{\"a\": 1}\n```",
        r#"{"a": 1}"#,
    )
    .await;
    assert_eq!(result.score, 1.0);
    assert_eq!(result.feedback, "[json_equal] key-F1 1.00.");
}

#[tokio::test]
async fn numeric_mode_compares_the_first_numbers() {
    let result = golden(GoldenMode::Numeric, "Total: 10.00", "it is 10").await;
    assert_eq!(result.score, 1.0);
    assert_eq!(
        result.feedback,
        "[numeric] exact match. expected: 'it is 10'; got: 'Total: 10.00'"
    );
}

#[tokio::test]
async fn golden_without_expected_answer_is_not_applicable() {
    let outcome = GoldenMetric::new(GoldenMode::Normalized)
        .score(&task(None), &ok("x"))
        .await;
    assert_eq!(
        outcome,
        Err(NotApplicable("task t1 has no expected answer".to_string()))
    );
}

#[tokio::test]
async fn valid_json_with_all_keys_passes_both_checks() {
    let result = programmatic(
        json!(["is_valid_json", {"json_has_keys": ["a", "b"]}]),
        r#"{"a":1,"b":2}"#,
    )
    .await;
    assert_eq!(result.score, 1.0);
    assert_eq!(
        result.feedback,
        "[is_valid_json] pass: valid JSON\n[json_has_keys] pass: all keys present"
    );
}

#[tokio::test]
async fn json_has_keys_scores_the_fraction_present() {
    let result = programmatic(json!([{"json_has_keys": ["a", "b"]}]), r#"{"a":1}"#).await;
    assert_eq!(result.score, 0.5);
    assert_eq!(result.feedback, "[json_has_keys] 0.50: missing keys: ['b']");
}

#[tokio::test]
async fn regex_and_contains_checks_pass_and_fail_together() {
    let specs = json!([{"matches_regex": "\\d+"}, {"contains": "cat"}]);
    let pass = programmatic(specs.clone(), "a cat and 3 dogs").await;
    assert_eq!(pass.score, 1.0);
    assert_eq!(
        pass.feedback,
        "[matches_regex] pass: matched /\\d+/\n[contains] pass: contains 'cat'"
    );
    let fail = programmatic(specs, "no animals").await;
    assert_eq!(fail.score, 0.0);
    assert_eq!(
        fail.feedback,
        "[matches_regex] 0.00: did not match /\\d+/\n[contains] 0.00: missing 'cat'"
    );
}

#[tokio::test]
async fn not_contains_fails_when_the_text_appears() {
    let specs = json!([{"not_contains": "error"}]);
    let pass = programmatic(specs.clone(), "all good").await;
    assert_eq!(
        (pass.score, pass.feedback.as_str()),
        (1.0, "[not_contains] pass: must not contain missing 'error'")
    );
    let fail = programmatic(specs, "an error occurred").await;
    assert_eq!(
        (fail.score, fail.feedback.as_str()),
        (
            0.0,
            "[not_contains] 0.00: must not contain contains 'error'"
        )
    );
}

#[tokio::test]
async fn failed_rollout_scores_zero_in_every_metric() {
    let failed = Rollout::failure("t1", "boom");
    let expected = task(Some("x"));
    let metrics: Vec<Box<dyn Metric>> = vec![
        Box::new(GoldenMetric::new(GoldenMode::Exact)),
        Box::new(checks(json!(["is_valid_json"]))),
        Box::new(judge("{}", criteria_3_1())),
    ];
    for metric in &metrics {
        let result = score(metric.as_ref(), &expected, &failed).await;
        assert_eq!(
            (result.score, result.feedback.as_str()),
            (0.0, "rollout failed: boom"),
            "{}",
            metric.name()
        );
        assert!(result.breakdown.is_empty());
    }
}

#[tokio::test]
async fn judge_weights_criteria_scores() {
    let metric = judge(
        r#"{"scores":{"correctness":8,"format":10},"rationale":"good"}"#,
        criteria_3_1(),
    );
    let result = score(&metric, &task(Some("x")), &ok("x")).await;
    assert_close(result.score, 0.85);
    assert_eq!(
        result.feedback,
        "good (per-criterion: correctness=0.80, format=1.00)"
    );
    assert_eq!(result.breakdown.get("correctness"), Some(&0.8));
    assert_eq!(result.name, "llm_judge");
}

#[tokio::test]
async fn judge_unparseable_reply_scores_zero() {
    let result = score(
        &judge("nonsense", criteria_3_1()),
        &task(Some("x")),
        &ok("x"),
    )
    .await;
    assert_eq!(result.score, 0.0);
    assert_eq!(
        result.feedback,
        "judge returned unparseable output: 'nonsense'"
    );
}

#[tokio::test]
async fn composite_weights_applicable_metrics() {
    let composite = CompositeMetric::new(vec![
        (
            Box::new(GoldenMetric::new(GoldenMode::Exact)) as Box<dyn Metric>,
            3.0,
        ),
        (Box::new(checks(json!(["is_valid_json"]))), 1.0),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let result = score(&composite, &task(Some("hello")), &ok("hello")).await;
    assert_close(result.score, 0.75);
    assert_eq!(
        result.feedback,
        "[golden] score 1.00: [exact] exact match. expected: 'hello'; got: 'hello'\n\
         [programmatic] score 0.00: [is_valid_json] 0.00: invalid JSON: no JSON object found"
    );
    assert_eq!(result.breakdown.get("golden"), Some(&1.0));
    assert_eq!(result.breakdown.get("programmatic"), Some(&0.0));
}

#[tokio::test]
async fn composite_drops_a_metric_that_does_not_apply() {
    let composite = CompositeMetric::new(vec![
        (
            Box::new(GoldenMetric::new(GoldenMode::Exact)) as Box<dyn Metric>,
            3.0,
        ),
        (Box::new(checks(json!(["is_valid_json"]))), 1.0),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let result = score(&composite, &task(None), &ok("{}")).await;
    assert_eq!(result.score, 1.0);
    assert_eq!(
        result.feedback,
        "[golden] skipped: task t1 has no expected answer\n[programmatic] score 1.00: [is_valid_json] pass: valid JSON"
    );
    assert!(!result.breakdown.contains_key("golden"));
}

#[tokio::test]
async fn composite_with_nothing_applicable_scores_zero() {
    let composite = CompositeMetric::new(vec![(
        Box::new(GoldenMetric::default()) as Box<dyn Metric>,
        1.0,
    )])
    .unwrap_or_else(|e| panic!("{e}"));
    let result = score(&composite, &task(None), &ok("x")).await;
    assert_eq!(
        (result.score, result.feedback.as_str()),
        (0.0, "no metric was applicable to this task")
    );
    assert!(result.breakdown.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Spec §9 tests/test_examples.py and Appendix A.5

fn ticket_metric(judge_reply: &str) -> CompositeMetric {
    let criteria = vec![
        Criterion::new(
            "correctness",
            "Is the chosen category the best fit for the message?",
            3.0,
        ),
        Criterion::new(
            "format",
            "Is the output a single bare label with no extra text?",
            2.0,
        ),
    ];
    CompositeMetric::new(vec![
        (Box::new(GoldenMetric::new(GoldenMode::Normalized)) as Box<dyn Metric>, 2.0),
        (
            Box::new(checks(json!([{"matches_regex": "(?i)^\\s*(billing|bug|feature_request|account|other)\\s*$"}]))),
            1.0,
        ),
        (Box::new(judge(judge_reply, criteria)), 1.0),
    ])
    .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn ticket_example_bare_label_beats_a_sentence() {
    let perfect = r#"{"scores":{"correctness":10,"format":10},"rationale":"perfect"}"#;
    let ticket = Task::new("tk-01", "I was charged twice this month.").with_expected("billing");
    let bare = score(
        &ticket_metric(perfect),
        &ticket,
        &Rollout::success("tk-01", "billing"),
    )
    .await;
    let sentence = score(
        &ticket_metric(perfect),
        &ticket,
        &Rollout::success("tk-01", "This ticket is about billing."),
    )
    .await;
    assert_eq!(bare.score, 1.0);
    assert_close(sentence.score, 0.25);
    assert!(bare.score > sentence.score);
}

#[tokio::test]
async fn invoice_example_worked_numbers_and_feedback_shape() {
    let expected = "{\n  \"vendor\": \"Acme Corp\",\n  \"date\": \"2024-03-15\",\n  \"total\": 1234.5,\n  \"currency\": \"USD\"\n}";
    let criteria = vec![
        Criterion::new(
            "correctness",
            "Are vendor, date, total, currency all correct?",
            3.0,
        ),
        Criterion::new(
            "format",
            "Is the output strictly a single JSON object?",
            2.0,
        ),
    ];
    let composite = CompositeMetric::new(vec![
        (Box::new(GoldenMetric::new(GoldenMode::JsonEqual)) as Box<dyn Metric>, 2.0),
        (Box::new(checks(json!(["is_valid_json", {"json_has_keys": ["vendor", "date", "total", "currency"]}]))), 1.0),
        (Box::new(judge(r#"{"scores":{"correctness":9},"rationale":"ok"}"#, criteria)), 1.0),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let invoice = Task::new("inv-001", "ACME CORP ...").with_expected(expected);
    let result = score(&composite, &invoice, &Rollout::success("inv-001", expected)).await;
    assert_close(
        result
            .breakdown
            .get("llm_judge")
            .copied()
            .unwrap_or_default(),
        0.54,
    );
    assert_close(result.score, 0.885);
    assert_eq!(
        result.feedback,
        "[golden] score 1.00: [json_equal] key-F1 1.00.\n\
         [programmatic] score 1.00: [is_valid_json] pass: valid JSON\n\
         [json_has_keys] pass: all keys present\n\
         [llm_judge] score 0.54: ok (per-criterion: correctness=0.90, format=0.00)"
    );
}

// ---------------------------------------------------------------------------------------------
// Golden: modes, fixes and feedback

#[tokio::test]
async fn text_modes_quote_expected_and_trimmed_output_like_python_repr() {
    let result = golden(GoldenMode::Exact, " say \"hi\"\n", "it's \"x\"").await;
    assert_eq!(
        result.feedback,
        "[exact] partial/mismatch (score 0.00). expected: 'it\\'s \"x\"'; got: 'say \"hi\"'"
    );
    let result = golden(GoldenMode::Normalized, "  Straße ", "STRASSE").await;
    assert_eq!(
        result.feedback,
        "[normalized] exact match. expected: 'STRASSE'; got: 'Straße'"
    );
    let result = golden(GoldenMode::TokenF1, "a b", "a c").await;
    assert_eq!(
        result.feedback,
        "[token_f1] partial/mismatch (score 0.50). expected: 'a c'; got: 'a b'"
    );
}

#[tokio::test]
async fn numeric_accepts_european_decimal_comma() {
    let result = golden(GoldenMode::Numeric, "7,50", "7.5").await;
    assert_eq!(result.score, 1.0);
    assert_eq!(
        result.feedback,
        "[numeric] exact match. expected: '7.5'; got: '7,50'"
    );
}

#[tokio::test]
async fn numeric_accepts_thousands_separators_of_both_conventions() {
    for (output, expected) in [
        ("1,234.50", "1234.5"),
        ("1.469,13", "1469.13"),
        ("1,234", "1234"),
        ("EUR 1.234.567,89", "1234567.89"),
    ] {
        let result = golden(GoldenMode::Numeric, output, expected).await;
        assert_eq!(
            result.score, 1.0,
            "{output} vs {expected}: {}",
            result.feedback
        );
    }
}

#[tokio::test]
async fn numeric_keeps_a_single_dot_as_decimal_point() {
    assert_eq!(
        golden(GoldenMode::Numeric, "1.234", "1234").await.score,
        0.0
    );
    assert_eq!(
        golden(GoldenMode::Numeric, "1.234", "1.234").await.score,
        1.0
    );
}

#[tokio::test]
async fn numeric_without_a_number_scores_zero() {
    let result = golden(GoldenMode::Numeric, "no idea", "42").await;
    assert_eq!(
        result.feedback,
        "[numeric] partial/mismatch (score 0.00). expected: '42'; got: 'no idea'"
    );
}

#[tokio::test]
async fn json_equal_lists_missing_and_wrong_keys_sorted() {
    let result = golden(
        GoldenMode::JsonEqual,
        r#"{"z": 1, "b": 2}"#,
        r#"{"z": 2, "b": 2, "d": 1, "c": 1}"#,
    )
    .await;
    assert_close(result.score, 2.0 * 0.5 * 0.25 / 0.75);
    assert_eq!(
        result.feedback,
        "[json_equal] key-F1 0.33. missing/empty keys: ['c', 'd']. wrong values: ['z']."
    );
}

#[tokio::test]
async fn json_equal_compares_strings_normalized_and_numbers_pythonically() {
    let result = golden(
        GoldenMode::JsonEqual,
        r#"{"a": "X  Y", "b": true, "c": 2.0}"#,
        r#"{"a": "x y", "b": 1, "c": 2}"#,
    )
    .await;
    assert_eq!(
        (result.score, result.feedback.as_str()),
        (1.0, "[json_equal] key-F1 1.00.")
    );
}

#[tokio::test]
async fn json_equal_rejects_an_output_without_json() {
    let result = golden(GoldenMode::JsonEqual, "no json here", "{}").await;
    assert_eq!(
        (result.score, result.feedback.as_str()),
        (0.0, "output is not valid JSON: no JSON object found")
    );
}

#[tokio::test]
async fn json_equal_compares_non_objects_structurally() {
    assert_eq!(
        golden(GoldenMode::JsonEqual, "[1, 2]", "[1, 2]")
            .await
            .feedback,
        "[json_equal] structural match"
    );
    assert_eq!(
        golden(GoldenMode::JsonEqual, "[1, 2]", "[2, 1]")
            .await
            .feedback,
        "[json_equal] structural mismatch"
    );
}

// ---------------------------------------------------------------------------------------------
// Programmatic: every check, pass and fail notes

#[tokio::test]
async fn is_valid_json_notes() {
    assert_eq!(
        programmatic(json!(["is_valid_json"]), "5").await.feedback,
        "[is_valid_json] pass: valid JSON"
    );
    assert_eq!(
        programmatic(json!(["is_valid_json"]), "nope")
            .await
            .feedback,
        "[is_valid_json] 0.00: invalid JSON: no JSON object found"
    );
}

#[tokio::test]
async fn json_has_keys_names_the_type_of_a_non_object() {
    let result = programmatic(json!([{"json_has_keys": ["a"]}]), "[1]").await;
    assert_eq!(
        result.feedback,
        "[json_has_keys] 0.00: not a JSON object: list"
    );
    let result = programmatic(json!([{"json_has_keys": ["a"]}]), "nope").await;
    assert_eq!(
        result.feedback,
        "[json_has_keys] 0.00: not a JSON object: no JSON object found"
    );
}

#[tokio::test]
async fn matches_regex_searches_with_python_flags() {
    let result = programmatic(
        json!([{"matches_regex": {"pattern": "^B", "flags": 10}}]),
        "a\nb",
    )
    .await;
    assert_eq!(result.feedback, "[matches_regex] pass: matched /^B/");
    let result = programmatic(json!([{"matches_regex": "^B"}]), "a\nb").await;
    assert_eq!(result.feedback, "[matches_regex] 0.00: did not match /^B/");
}

#[tokio::test]
async fn contains_compares_unicode_case_folds() {
    let result = programmatic(json!([{"contains": "STRASSE"}]), "Die Straße").await;
    assert_eq!(
        (result.score, result.feedback.as_str()),
        (1.0, "[contains] pass: contains 'STRASSE'")
    );
    let result = programmatic(json!([{"not_contains": "ss"}]), "STRAẞE").await;
    assert_eq!(result.score, 0.0);
}

#[tokio::test]
async fn contains_can_be_case_sensitive() {
    let result = programmatic(
        json!([{"contains": {"substring": "cat", "case_sensitive": true}}]),
        "a CAT",
    )
    .await;
    assert_eq!(
        (result.score, result.feedback.as_str()),
        (0.0, "[contains] 0.00: missing 'cat'")
    );
}

#[tokio::test]
async fn max_length_counts_code_points() {
    assert_eq!(
        programmatic(json!([{"max_length": 2}]), "日本")
            .await
            .feedback,
        "[max_length] pass: 2 <= 2 chars"
    );
    assert_eq!(
        programmatic(json!([{"max_length": 3}]), "abcd")
            .await
            .feedback,
        "[max_length] 0.00: 4 > 3 chars"
    );
}

fn invoice_schema() -> Value {
    json!({"json_schema": {
        "type": "object",
        "required": ["vendor", "total"],
        "properties": {"total": {"type": "number"}, "date": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$"}}
    }})
}

#[tokio::test]
async fn json_schema_passes_a_conforming_output() {
    let result = programmatic(
        json!([invoice_schema()]),
        r#"```json
{"vendor": "Acme", "total": 12.5, "date": "2024-03-15"}
```"#,
    )
    .await;
    assert_eq!(
        (result.score, result.feedback.as_str()),
        (1.0, "[json_schema] pass: matches the schema")
    );
    assert_eq!(result.breakdown.get("json_schema"), Some(&1.0));
}

#[tokio::test]
async fn json_schema_lists_violations_with_their_pointer() {
    let result = programmatic(
        json!([invoice_schema()]),
        r#"{"total": "12.50", "date": "15/03/2024"}"#,
    )
    .await;
    assert_eq!(result.score, 0.0);
    assert!(
        result
            .feedback
            .starts_with("[json_schema] 0.00: schema violations: "),
        "{}",
        result.feedback
    );
    for part in [
        "(root): \"vendor\" is a required property",
        "/total: \"12.50\" is not of type \"number\"",
        "/date: ",
    ] {
        assert!(
            result.feedback.contains(part),
            "{part} not in {}",
            result.feedback
        );
    }
}

#[tokio::test]
async fn json_schema_summarizes_violations_beyond_the_first_three() {
    let schema =
        json!([{"json_schema": {"type": "object", "required": ["a", "b", "c", "d", "e"]}}]);
    let result = programmatic(schema, "{}").await;
    assert!(
        result.feedback.ends_with("; and 2 more"),
        "{}",
        result.feedback
    );
}

#[tokio::test]
async fn json_schema_reports_unparseable_output() {
    let result = programmatic(json!([invoice_schema()]), "no json").await;
    assert_eq!(
        result.feedback,
        "[json_schema] 0.00: invalid JSON: no JSON object found"
    );
}

#[tokio::test]
async fn programmatic_score_is_the_mean_of_its_checks() {
    let result = programmatic(
        json!([{"matches_regex": "\\d+"}, {"contains": "cat"}, "is_valid_json", {"max_length": 3}]),
        "no animals 5",
    )
    .await;
    assert_eq!(result.score, 0.25);
    assert_eq!(result.breakdown.len(), 4);
}

#[test]
fn programmatic_needs_at_least_one_check() {
    let err = ProgrammaticMetric::new(Vec::new())
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("the programmatic metric needs at least one check in 'checks'")
    );
}

#[test]
fn programmatic_rejects_a_directly_built_bad_regex() {
    let err = ProgrammaticMetric::new(vec![Check::MatchesRegex {
        pattern: "(".to_string(),
        flags: 0,
    }])
    .err()
    .map(|e| e.to_string());
    assert!(err.is_some_and(|e| e.starts_with("matches_regex: invalid regular expression /(/: ")));
}

// ---------------------------------------------------------------------------------------------
// Check::from_spec

#[test]
fn from_spec_reads_every_config_form() {
    let cases = [
        (json!("is_valid_json"), Check::IsValidJson),
        (json!({"is_valid_json": null}), Check::IsValidJson),
        (
            json!({"json_has_keys": ["a", "b"]}),
            Check::JsonHasKeys(vec!["a".into(), "b".into()]),
        ),
        (
            json!({"json_has_keys": "a"}),
            Check::JsonHasKeys(vec!["a".into()]),
        ),
        (json!("json_has_keys"), Check::JsonHasKeys(Vec::new())),
        (
            json!({"matches_regex": "\\d+"}),
            Check::MatchesRegex {
                pattern: "\\d+".into(),
                flags: 0,
            },
        ),
        (
            json!({"matches_regex": ["\\d+"]}),
            Check::MatchesRegex {
                pattern: "\\d+".into(),
                flags: 0,
            },
        ),
        (
            json!({"matches_regex": {"pattern": "x", "flags": 2}}),
            Check::MatchesRegex {
                pattern: "x".into(),
                flags: 2,
            },
        ),
        (
            json!({"contains": "cat"}),
            Check::Contains {
                substring: "cat".into(),
                case_sensitive: false,
            },
        ),
        (
            json!({"not_contains": {"substring": "x", "case_sensitive": true}}),
            Check::NotContains {
                substring: "x".into(),
                case_sensitive: true,
            },
        ),
        (json!({"max_length": 10}), Check::MaxLength(10)),
        (
            json!({"max_length": {"max_chars": 10}}),
            Check::MaxLength(10),
        ),
        (
            json!({"json_schema": {"type": "object"}}),
            Check::JsonSchema(json!({"type": "object"})),
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(
            Check::from_spec(&spec).map_err(|e| e.to_string()),
            Ok(want),
            "{spec}"
        );
    }
}

#[test]
fn from_spec_suggests_the_closest_name_for_an_unknown_bare_check() {
    assert_eq!(
        spec_error(json!("is_json")),
        "unknown programmatic check 'is_json' (did you mean 'is_valid_json'?); valid checks: is_valid_json, \
         json_has_keys, matches_regex, contains, not_contains, max_length, json_schema"
    );
}

#[test]
fn from_spec_suggests_the_closest_name_for_an_unknown_mapping_check() {
    assert_eq!(
        spec_error(json!({"regex": "x"})),
        "unknown programmatic check 'regex' (did you mean 'matches_regex'?); valid checks: is_valid_json, \
         json_has_keys, matches_regex, contains, not_contains, max_length, json_schema"
    );
}

#[test]
fn from_spec_lists_valid_checks_without_a_far_fetched_suggestion() {
    assert_eq!(
        spec_error(json!("frobnicate")),
        "unknown programmatic check 'frobnicate'; valid checks: is_valid_json, json_has_keys, matches_regex, \
         contains, not_contains, max_length, json_schema"
    );
}

#[test]
fn from_spec_rejects_entries_that_are_neither_a_name_nor_a_one_key_mapping() {
    let tail = ": write a check name such as is_valid_json, or a mapping with one key, the check name, such as \
                {json_has_keys: [vendor, total]}";
    assert_eq!(spec_error(json!(5)), format!("invalid check spec 5{tail}"));
    assert_eq!(
        spec_error(json!({})),
        format!("invalid check spec {{}}{tail}")
    );
    assert_eq!(
        spec_error(json!({"contains": "a", "max_length": 3})),
        format!("invalid check spec {{\"contains\":\"a\",\"max_length\":3}}{tail}")
    );
    assert_eq!(
        spec_error(json!(["is_valid_json"])),
        format!("invalid check spec [\"is_valid_json\"]{tail}")
    );
}

#[test]
fn from_spec_rejects_arguments_to_is_valid_json() {
    assert_eq!(
        spec_error(json!({"is_valid_json": ["x"]})),
        "is_valid_json takes no arguments: write - is_valid_json"
    );
}

#[test]
fn from_spec_explains_json_has_keys_shapes() {
    assert_eq!(
        spec_error(json!({"json_has_keys": {"a": 1}})),
        "json_has_keys expects a list of key names; write {json_has_keys: [vendor, total]}"
    );
    assert_eq!(
        spec_error(json!({"json_has_keys": [2024]})),
        "json_has_keys: key names must be strings, got 2024; quote it in YAML; write {json_has_keys: [vendor, total]}"
    );
}

const REGEX_USAGE: &str =
    "write {matches_regex: \"<pattern>\"} or {matches_regex: {pattern: \"<pattern>\", flags: 2}}";

#[test]
fn from_spec_explains_matches_regex_shapes() {
    assert_eq!(
        spec_error(json!({"matches_regex": {"flags": 2}})),
        format!("matches_regex: missing argument 'pattern'; {REGEX_USAGE}")
    );
    assert_eq!(
        spec_error(json!({"matches_regex": ["a", 2]})),
        format!("matches_regex: takes 1 positional argument(s) but 2 were given; {REGEX_USAGE}")
    );
    assert_eq!(
        spec_error(json!({"matches_regex": {"patern": "a"}})),
        format!(
            "matches_regex: unknown argument 'patern' (accepted: pattern, flags); {REGEX_USAGE}"
        )
    );
    assert_eq!(
        spec_error(json!({"matches_regex": 5})),
        format!("matches_regex: pattern must be a string, got 5; quote it in YAML; {REGEX_USAGE}")
    );
    assert_eq!(
        spec_error(json!({"matches_regex": {"pattern": "a", "flags": "i"}})),
        "matches_regex: flags must be an integer such as 2 (re.I), got \"i\""
    );
}

#[test]
fn from_spec_reports_a_regex_that_does_not_compile() {
    let err = spec_error(json!({"matches_regex": "(unclosed"}));
    assert!(
        err.starts_with("matches_regex: invalid regular expression /(unclosed/: "),
        "{err}"
    );
    assert!(
        err.len() > "matches_regex: invalid regular expression /(unclosed/: ".len(),
        "{err}"
    );
}

#[test]
fn from_spec_reports_unsupported_regex_flags() {
    assert_eq!(
        spec_error(json!({"matches_regex": {"pattern": "a", "flags": 4}})),
        "matches_regex: invalid regular expression /a/: unsupported regex flags 4: use a sum of re.I=2, re.M=8, \
         re.S=16, re.X=64, re.A=256 (re.U=32 is the default)"
    );
}

const CONTAINS_USAGE: &str =
    "write {contains: <text>} or {contains: {substring: <text>, case_sensitive: true}}";

#[test]
fn from_spec_explains_contains_shapes() {
    assert_eq!(
        spec_error(json!({"contains": 2024})),
        format!(
            "contains: substring must be a string, got 2024; quote it in YAML; {CONTAINS_USAGE}"
        )
    );
    assert_eq!(
        spec_error(json!({"contains": null})),
        format!("contains: missing argument 'substring'; {CONTAINS_USAGE}")
    );
    assert_eq!(
        spec_error(json!("contains")),
        format!("contains: missing argument 'substring'; {CONTAINS_USAGE}")
    );
    assert_eq!(
        spec_error(json!({"not_contains": {"substring": "x", "case_sensitive": "yes"}})),
        "not_contains: case_sensitive must be true or false, got \"yes\""
    );
}

#[test]
fn from_spec_explains_max_length_shapes() {
    let want = "max_length: max_chars must be a whole number >= 0; write {max_length: 200}";
    assert_eq!(spec_error(json!({"max_length": -1})), want);
    assert_eq!(spec_error(json!({"max_length": "10"})), want);
    assert_eq!(spec_error(json!({"max_length": 2.5})), want);
    assert_eq!(
        spec_error(json!("max_length")),
        "max_length: missing argument 'max_chars'; write {max_length: 200}"
    );
}

#[test]
fn from_spec_explains_json_schema_shapes() {
    assert_eq!(
        spec_error(json!({"json_schema": ["object"]})),
        "json_schema: expects a JSON Schema mapping, e.g. {json_schema: {type: object, required: [total]}}"
    );
    let err = spec_error(json!({"json_schema": {"type": "nonsense"}}));
    assert!(
        err.starts_with("json_schema: the schema is not valid: "),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// LLM judge

#[tokio::test]
async fn judge_request_is_deterministic_and_bounded() {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let model = CannedJudge::replying("{}").recording_into(&requests);
    let metric =
        LlmJudgeMetric::new(Arc::new(model), criteria_3_1()).unwrap_or_else(|e| panic!("{e}"));
    score(&metric, &task(Some("gold")), &ok("out")).await;
    let sent = requests.lock().map(|r| r.clone()).unwrap_or_default();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].temperature, 0.0);
    assert_eq!(sent[0].max_tokens, 1024);
    let system = sent[0].system.clone().unwrap_or_default();
    assert!(
        system.contains("ASSISTANT OUTPUT") && system.contains("minified JSON"),
        "{system}"
    );
    assert_eq!(
        sent[0].messages[0].content,
        "TASK INPUT:\nin\n\nASSISTANT OUTPUT:\nout\n\nREFERENCE ANSWER (for grading only):\ngold\n\nRUBRIC:\n\
         - correctness (weight 3.0): Is it right?\n- format (weight 1.0): Bare label only.\n\n\
         Score each criterion from 0 (fails) to 10 (perfect). Respond with JSON:\n\
         {\"scores\": {\"correctness\": <0-10>, \"format\": <0-10>}, \"rationale\": \"<one paragraph>\"}"
    );
}

#[tokio::test]
async fn judge_prompt_marks_an_empty_output_and_omits_a_missing_reference() {
    let metric = judge("{}", criteria_3_1());
    let request = metric.request(&task(None), "");
    let prompt = &request.messages[0].content;
    assert!(
        prompt.starts_with("TASK INPUT:\nin\n\nASSISTANT OUTPUT:\n(empty)\n\nRUBRIC:\n"),
        "{prompt}"
    );
}

#[tokio::test]
async fn judge_reads_a_fenced_reply() {
    let reply =
        "```json\n{\"scores\":{\"correctness\":10,\"format\":5},\"rationale\":\"fenced\"}\n```";
    let result = score(&judge(reply, criteria_3_1()), &task(Some("x")), &ok("x")).await;
    assert_close(result.score, 0.875);
    assert_eq!(
        result.feedback,
        "fenced (per-criterion: correctness=1.00, format=0.50)"
    );
}

#[tokio::test]
async fn judge_counts_boolean_scores_as_non_numeric() {
    let reply = r#"{"scores":{"correctness":true,"format":true},"rationale":"yes"}"#;
    let result = score(&judge(reply, criteria_3_1()), &task(Some("x")), &ok("x")).await;
    assert_eq!(result.score, 0.0);
    assert_eq!(
        result.feedback,
        "yes (per-criterion: correctness=0.00, format=0.00)"
    );
}

#[tokio::test]
async fn judge_counts_a_nan_score_as_zero() {
    let reply = r#"{"scores":{"correctness":"nan","format":"inf"}}"#;
    let result = score(&judge(reply, criteria_3_1()), &task(Some("x")), &ok("x")).await;
    assert_close(result.score, 0.25);
    assert_eq!(
        result.feedback,
        "(per-criterion: correctness=0.00, format=1.00)"
    );
}

#[tokio::test]
async fn judge_clamps_scores_to_the_scale() {
    let reply = r#"{"scores":{"correctness":15,"format":-3}}"#;
    let result = score(&judge(reply, criteria_3_1()), &task(Some("x")), &ok("x")).await;
    assert_close(result.score, 0.75);
}

#[tokio::test]
async fn judge_quotes_at_most_200_characters_of_an_unparseable_reply() {
    let reply = "x".repeat(300);
    let result = score(&judge(&reply, criteria_3_1()), &task(Some("x")), &ok("x")).await;
    assert_eq!(
        result.feedback,
        format!("judge returned unparseable output: '{}'", "x".repeat(200))
    );
}

#[tokio::test]
async fn judge_client_error_makes_the_judge_not_applicable() {
    let model = CannedJudge::failing(LlmError::Status {
        provider: "openai".to_string(),
        status: 503,
        body: "overloaded".to_string(),
    });
    let metric =
        LlmJudgeMetric::new(Arc::new(model), criteria_3_1()).unwrap_or_else(|e| panic!("{e}"));
    let outcome = metric.score(&task(Some("x")), &ok("x")).await;
    assert_eq!(
        outcome,
        Err(NotApplicable(
            "judge failed: openai returned HTTP 503: overloaded".to_string()
        ))
    );
}

#[tokio::test]
async fn judge_with_non_object_scores_is_not_applicable() {
    let outcome = judge(r#"{"scores": [8, 10]}"#, criteria_3_1())
        .score(&task(Some("x")), &ok("x"))
        .await;
    assert_eq!(
        outcome,
        Err(NotApplicable(
            "judge failed: its reply's \"scores\" is a list, not an object of criterion scores"
                .to_string()
        ))
    );
}

#[tokio::test]
async fn composite_skips_a_failed_judge_instead_of_aborting() {
    let model = CannedJudge::failing(LlmError::Script("no answer scripted".to_string()));
    let failing_judge =
        LlmJudgeMetric::new(Arc::new(model), criteria_3_1()).unwrap_or_else(|e| panic!("{e}"));
    let composite = CompositeMetric::new(vec![
        (
            Box::new(GoldenMetric::new(GoldenMode::Exact)) as Box<dyn Metric>,
            2.0,
        ),
        (Box::new(failing_judge), 1.0),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let result = score(&composite, &task(Some("x")), &ok("x")).await;
    assert_eq!(result.score, 1.0);
    assert_eq!(
        result.feedback,
        "[golden] score 1.00: [exact] exact match. expected: 'x'; got: 'x'\n\
         [llm_judge] skipped: judge failed: fake provider: no answer scripted"
    );
}

#[tokio::test]
async fn judge_usage_is_recorded_and_summed_by_the_composite() {
    let single = score(&judge("{}", criteria_3_1()), &task(Some("x")), &ok("x")).await;
    assert_eq!(
        single.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 30
        }
    );
    let composite = CompositeMetric::new(vec![
        (
            Box::new(judge("{}", criteria_3_1())) as Box<dyn Metric>,
            1.0,
        ),
        (Box::new(judge("not json", criteria_3_1())), 1.0),
        (Box::new(GoldenMetric::new(GoldenMode::Exact)), 1.0),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let result = score(&composite, &task(Some("x")), &ok("x")).await;
    assert_eq!(
        result.usage,
        Usage {
            input_tokens: 240,
            output_tokens: 60
        }
    );
}

#[tokio::test]
async fn judge_makes_no_call_for_a_failed_rollout() {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let model = CannedJudge::replying("{}").recording_into(&requests);
    let metric =
        LlmJudgeMetric::new(Arc::new(model), criteria_3_1()).unwrap_or_else(|e| panic!("{e}"));
    score(&metric, &task(Some("x")), &Rollout::failure("t1", "boom")).await;
    assert_eq!(requests.lock().map(|r| r.len()).unwrap_or(usize::MAX), 0);
}

#[test]
fn judge_construction_rejects_an_empty_rubric_and_bad_weights() {
    let model: Arc<dyn ChatModel> = Arc::new(CannedJudge::replying("{}"));
    let err = LlmJudgeMetric::new(Arc::clone(&model), Vec::new())
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("the llm_judge metric needs at least one rubric criterion in 'criteria'")
    );
    let err = LlmJudgeMetric::new(model, vec![Criterion::new("c", "d", 0.0)])
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("criterion 'c' has weight 0.0: a weight must be a number greater than 0")
    );
}

#[test]
fn composite_construction_rejects_no_parts_and_bad_weights() {
    assert_eq!(
        CompositeMetric::new(Vec::new())
            .err()
            .map(|e| e.to_string())
            .as_deref(),
        Some("a composite metric needs at least one metric")
    );
    let err = CompositeMetric::new(vec![(
        Box::new(GoldenMetric::default()) as Box<dyn Metric>,
        f64::NAN,
    )])
    .err()
    .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("metric 'golden' has weight nan: a weight must be a number greater than 0")
    );
}

// ---------------------------------------------------------------------------------------------
// Every score stays in [0, 1]

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime.block_on(future),
        Err(e) => panic!("no runtime: {e}"),
    }
}

fn all_metrics(judge_reply: &str) -> Vec<Box<dyn Metric>> {
    let mut metrics: Vec<Box<dyn Metric>> = GoldenMode::ALL
        .into_iter()
        .map(|mode| Box::new(GoldenMetric::new(mode)) as Box<dyn Metric>)
        .collect();
    metrics.push(Box::new(checks(json!([
        "is_valid_json",
        {"json_has_keys": ["a", "b", "c"]},
        {"matches_regex": "\\d+"},
        {"contains": "a"},
        {"not_contains": "b"},
        {"max_length": 5},
        {"json_schema": {"type": "object", "required": ["a"]}}
    ]))));
    metrics.push(Box::new(judge(judge_reply, criteria_3_1())));
    metrics
}

proptest! {
    #[test]
    fn token_f1_is_within_unit_interval(got in "\\PC{0,40}", want in "\\PC{0,40}") {
        let f1 = token_f1(&got, &want);
        prop_assert!((0.0..=1.0).contains(&f1), "{f1}");
    }

    #[test]
    fn every_metric_scores_within_unit_interval(
        output in "[ a-c0-9{}\\[\\]\":,.\\-]{0,30}",
        expected in "[ a-c0-9{}\\[\\]\":,.\\-]{0,30}",
        correctness in "\\PC{0,6}|-?[0-9]{1,3}(\\.[0-9]{1,3})?|nan|inf|-inf",
    ) {
        let reply = format!(r#"{{"scores": {{"correctness": "{}", "format": 7}}}}"#, correctness.replace(['"', '\\'], ""));
        let task = task(Some(&expected));
        let rollout = ok(&output);
        let mut parts = all_metrics(&reply);
        let composite = CompositeMetric::new(all_metrics(&reply).into_iter().map(|m| (m, 1.5)).collect())
            .unwrap_or_else(|e| panic!("{e}"));
        parts.push(Box::new(composite));
        for metric in &parts {
            let result = block_on(metric.score(&task, &rollout));
            let result = result.unwrap_or_else(|NotApplicable(reason)| panic!("{}: {reason}", metric.name()));
            prop_assert!((0.0..=1.0).contains(&result.score), "{} gave {}", metric.name(), result.score);
            prop_assert!(result.breakdown.values().all(|s| (0.0..=1.0).contains(s)), "{}: {:?}", metric.name(), result.breakdown);
        }
    }
}
