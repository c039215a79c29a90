//! The `command` metric: a user's program scores each rollout from a JSON object on stdin.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skill_factory::metric::{CommandMetric, CompositeMetric, Metric};
use skill_factory_core::{MetricResult, Rollout, Task};

fn metric(script: &str) -> CommandMetric {
    CommandMetric::new(
        vec!["sh".into(), "-c".into(), script.into()],
        Duration::from_secs(20),
    )
    .unwrap()
}

fn task() -> Task {
    let mut task = Task::new("inv-7", "total of 3 + 4").with_expected("7");
    task.metadata.insert("difficulty".into(), json!("easy"));
    task
}

async fn score(metric: &dyn Metric, rollout: &Rollout) -> MetricResult {
    metric
        .score(&task(), rollout)
        .await
        .expect("the command metric always applies")
}

#[tokio::test]
async fn the_program_reads_the_rollout_as_json_and_its_verdict_is_the_score() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "cat > {}/stdin; echo '{{\"score\": 0.75, \"feedback\": \"close, but show the sum\"}}'",
        dir.path().display()
    );
    let result = score(&metric(&script), &Rollout::success("inv-7", "7")).await;
    assert_eq!(result.name, "command");
    assert_eq!(result.score, 0.75);
    assert_eq!(result.feedback, "close, but show the sum");
    let sent: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("stdin")).unwrap()).unwrap();
    assert_eq!(
        sent,
        json!({
            "task_id": "inv-7",
            "input": "total of 3 + 4",
            "output": "7",
            "expected": "7",
            "metadata": {"difficulty": "easy"},
        })
    );
}

#[tokio::test]
async fn the_verdict_depends_on_the_output() {
    let script = r#"if grep -q '"output":"7"'; then echo '{"score": 1, "feedback": "right"}'; else echo '{"score": 0, "feedback": "wrong sum"}'; fi"#;
    let m = metric(script);
    assert_eq!(score(&m, &Rollout::success("inv-7", "7")).await.score, 1.0);
    let wrong = score(&m, &Rollout::success("inv-7", "8")).await;
    assert_eq!((wrong.score, wrong.feedback.as_str()), (0.0, "wrong sum"));
}

#[tokio::test]
async fn a_failed_rollout_scores_zero_without_running_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let m = metric(&format!(
        "touch {}; echo '{{\"score\": 1}}'",
        marker.display()
    ));
    let result = score(&m, &Rollout::failure("inv-7", "exit 3: boom")).await;
    assert_eq!(result.score, 0.0);
    assert_eq!(result.feedback, "rollout failed: exit 3: boom");
    assert!(!marker.exists());
}

#[tokio::test]
async fn a_crashing_program_scores_zero_with_its_stderr() {
    let m = metric("echo 'Traceback: KeyError output' >&2; exit 1");
    let result = score(&m, &Rollout::success("inv-7", "7")).await;
    assert_eq!(result.score, 0.0);
    assert_eq!(
        result.feedback,
        "metric command failed: 'sh' exited with 1: Traceback: KeyError output"
    );
}

#[tokio::test]
async fn a_program_past_its_timeout_is_stopped_and_scores_zero() {
    let m = CommandMetric::new(
        vec!["sh".into(), "-c".into(), "sleep 30".into()],
        Duration::from_millis(300),
    )
    .unwrap();
    let started = Instant::now();
    let result = score(&m, &Rollout::success("inv-7", "7")).await;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(result.score, 0.0);
    assert_eq!(
        result.feedback,
        "metric command failed: 'sh' did not answer within 0.3s"
    );
}

#[tokio::test]
async fn a_bad_verdict_is_a_clear_per_task_error() {
    let cases = [
        ("echo looks good to me", "printed no JSON object"),
        ("true", "printed nothing"),
        ("echo '{\"score\": 1.5}'", "outside 0..1"),
        ("echo '{\"score\": \"high\"}'", "which is not a number"),
        ("echo '{\"feedback\": \"x\"}'", "gave no \"score\""),
    ];
    for (script, part) in cases {
        let result = score(&metric(script), &Rollout::success("inv-7", "7")).await;
        assert_eq!(result.score, 0.0, "{script}");
        assert!(
            result.feedback.starts_with("metric command failed: 'sh' ")
                && result.feedback.contains(part),
            "{script}: {}",
            result.feedback
        );
    }
}

#[tokio::test]
async fn a_missing_program_is_reported_per_task() {
    let m = CommandMetric::new(vec!["no-such-scorer-sf".into()], Duration::from_secs(5)).unwrap();
    let result = score(&m, &Rollout::success("inv-7", "7")).await;
    assert_eq!(result.score, 0.0);
    assert!(
        result
            .feedback
            .starts_with("metric command failed: cannot launch 'no-such-scorer-sf': "),
        "{}",
        result.feedback
    );
}

#[tokio::test]
async fn cwd_and_env_reach_the_program() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("weight.txt"), "0.5").unwrap();
    let m = metric(r#"cat > /dev/null; printf '{"score": %s, "feedback": "%s"}' "$(cat weight.txt)" "$SF_NOTE""#)
        .in_dir(Some(dir.path().to_path_buf()))
        .with_env(BTreeMap::from([("SF_NOTE".to_string(), "from env".to_string())]));
    let result = score(&m, &Rollout::success("inv-7", "7")).await;
    assert_eq!((result.score, result.feedback.as_str()), (0.5, "from env"));
}

#[tokio::test]
async fn in_a_composite_the_command_metric_is_weighted_like_any_other() {
    let composite = CompositeMetric::new(vec![(
        Box::new(metric(
            r#"cat > /dev/null; echo '{"score": 0.25, "feedback": "meh"}'"#,
        )),
        2.0,
    )])
    .unwrap();
    let result = score(&composite, &Rollout::success("inv-7", "7")).await;
    assert_eq!(result.score, 0.25);
    assert_eq!(result.feedback, "[command] score 0.25: meh");
    assert_eq!(result.breakdown["command"], 0.25);
}

#[test]
fn an_empty_command_is_refused() {
    assert!(
        CommandMetric::new(Vec::new(), Duration::from_secs(1))
            .unwrap_err()
            .to_string()
            .contains("command")
    );
}

#[test]
fn debug_output_names_env_variables_but_hides_their_values() {
    let m = metric("true").with_env(BTreeMap::from([(
        "SCORER_TOKEN".to_string(),
        "tok-secret".to_string(),
    )]));
    let shown = format!("{m:?}");
    assert!(
        shown.contains("SCORER_TOKEN") && !shown.contains("tok-secret"),
        "{shown}"
    );
}
