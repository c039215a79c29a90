//! `skill-factory evaluate` end to end: the real binary on the shipped offline examples, and
//! against a loopback model server in both wire formats.

use std::path::{Path, PathBuf};

use assert_cmd::assert::Assert;
use predicates::prelude::*;
use skill_factory_mock::MockConfig;

use crate::common::{self, bin, repo_root};

fn example(name: &str) -> PathBuf {
    repo_root().join("examples").join(name)
}

/// `evaluate <flags> -c <the example's config.offline.yaml>`, run to its end.
fn evaluate_example(name: &str, flags: &[&str]) -> Assert {
    bin()
        .arg("evaluate")
        .args(flags)
        .arg("-c")
        .arg(example(name).join("config.offline.yaml"))
        .assert()
}

#[test]
fn offline_invoice_example_prints_score_first_then_worst_tasks() {
    let out = evaluate_example("invoice-extractor", &[]).success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("Score: 0.475 over 16 tasks"));
    assert!(stdout.contains("\nWorst tasks:\n- task "), "{stdout}");
    assert_eq!(
        stdout.matches("\n- task ").count(),
        5,
        "five worst tasks: {stdout}"
    );
}

#[test]
fn offline_ticket_example_scores_the_scripted_answers() {
    evaluate_example("ticket-classifier", &[])
        .success()
        .stdout(predicate::str::starts_with("Score: 0.250 over 20 tasks\n"));
}

#[test]
fn split_option_evaluates_only_that_split() {
    // 20 tasks at val_fraction 0.3: round(6.0) = 6 validation tasks, 14 train.
    for (split, says) in [("val", "over 6 tasks"), ("train", "over 14 tasks")] {
        evaluate_example("ticket-classifier", &["--split", split])
            .success()
            .stdout(predicate::str::contains(says));
    }
}

#[test]
fn test_split_without_test_fraction_is_a_user_error() {
    evaluate_example("ticket-classifier", &["--split", "test"])
        .code(2)
        .stderr(predicate::str::contains("test_fraction"));
}

#[test]
fn json_output_has_score_and_one_item_per_task_in_dataset_order() {
    let out = evaluate_example("invoice-extractor", &["--json"]).success();
    let value: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(value["tasks"], 16);
    assert!((value["score"].as_f64().unwrap() - 0.475).abs() < 0.0005);
    let ids = common::strings(&value["items"], "id");
    let expected: Vec<String> = (1..=16).map(|i| format!("inv-{i:03}")).collect();
    assert_eq!(ids, expected);
    assert!(
        value["items"][0]["feedback"]
            .as_str()
            .unwrap()
            .contains("[golden]")
    );
}

#[test]
fn skill_flag_evaluates_another_skill_file() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("better.md");
    std::fs::write(
        &skill,
        "---\nname: ticket-classifier\ndescription: d\n---\nReply with ONLY the label.\nCategory boundaries: sign-in is account.\n",
    )
    .unwrap();
    let config = example("ticket-classifier").join("config.offline.yaml");
    common::with_config("evaluate", &config)
        .arg("--skill")
        .arg(&skill)
        .assert()
        .success()
        .stdout(predicate::str::starts_with("Score: 1.000 over 20 tasks\n"));
}

fn write_config(dir: &Path, provider: &str, judge: bool) -> PathBuf {
    let judge_block = if judge {
        "  judge:\n    criteria:\n      - {name: correctness, weight: 3}\n"
    } else {
        ""
    };
    let config = format!(
        "skill: skill.md\ndataset: data.jsonl\n{provider}\nmetric:\n  golden: {{mode: exact}}\n{judge_block}harness:\n  max_workers: 8\n"
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

/// Evaluates 12 labelled tasks against a mock through `provider` (a provider name) with the
/// mock's address plus `path` as its base URL, with a judge when `judge`: what it printed and
/// how many requests the mock received.
async fn run_against_mock(provider: &str, path: &str, judge: bool) -> (String, usize) {
    let dir = tempfile::tempdir().unwrap();
    let server =
        common::labelled_mock(dir.path(), common::LABEL_SKILL, 12, MockConfig::default()).await;
    let base = server.base_url();
    let block =
        format!("provider: {{name: {provider}, model: m, base_url: \"{base}{path}\", api_key: k}}");
    let config = write_config(dir.path(), &block, judge);
    let out = tokio::task::spawn_blocking(move || {
        common::with_config("evaluate", &config).output().unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let count = server.request_count();
    server.stop().await;
    (String::from_utf8(out.stdout).unwrap(), count)
}

#[tokio::test(flavor = "multi_thread")]
async fn evaluates_through_the_openai_wire_format() {
    let (stdout, requests) = run_against_mock("openai", "/v1", false).await;
    // 4 of 12 answers are wrong: 8/12.
    assert!(
        stdout.starts_with("Score: 0.667 over 12 tasks\n"),
        "{stdout}"
    );
    assert_eq!(requests, 12);
}

#[tokio::test(flavor = "multi_thread")]
async fn evaluates_through_the_anthropic_wire_format_with_a_judge() {
    let (stdout, requests) = run_against_mock("anthropic", "", true).await;
    assert!(stdout.starts_with("Score: "), "{stdout}");
    assert!(stdout.contains("[llm_judge] score"), "{stdout}");
    // One target call and one judge call per task; the judge inherits the target's block.
    assert_eq!(requests, 24);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_groq_block_without_its_key_uses_openai_api_key_as_the_python_tool_did_with_one_warning()
{
    let dir = tempfile::tempdir().unwrap();
    let keyed = MockConfig {
        require_api_key: Some("sk-the-openai-key".into()),
        ..MockConfig::default()
    };
    let server = common::labelled_mock(dir.path(), common::LABEL_SKILL, 4, keyed).await;
    // The judge inherits the block, so two clients are built for groq: still one warning.
    let block = format!(
        "provider: {{name: groq, model: m, base_url: \"{}/v1\"}}",
        server.base_url()
    );
    let config = write_config(dir.path(), &block, true);
    let out = tokio::task::spawn_blocking(move || {
        common::with_config("evaluate", &config)
            .env("OPENAI_API_KEY", "sk-the-openai-key")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert_eq!(
        stderr.matches("GROQ_API_KEY is not set").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "provider 'groq': GROQ_API_KEY is not set, so OPENAI_API_KEY is sent to 127.0.0.1"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("sk-the-openai-key"), "{stderr}");
    let received = server.received();
    assert_eq!(received.len(), 8);
    assert!(
        received
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer sk-the-openai-key"))
    );
    server.stop().await;
}

#[test]
fn worst_zero_prints_the_score_alone() {
    evaluate_example("invoice-extractor", &["--worst", "0"])
        .success()
        .stdout(predicates::str::starts_with(
            "Score: 0.475 over 16 tasks\n95% interval: 0.308 – 0.642",
        ))
        .stdout(predicates::str::contains("Worst tasks").not());
}
