//! `skill-factory evaluate` end to end: the real binary on the shipped offline examples, and
//! against a loopback model server in both wire formats.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use skill_factory_mock::{MockConfig, MockServer};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(name: &str) -> PathBuf {
    repo_root().join("examples").join(name)
}

fn bin() -> Command {
    let mut cmd = Command::cargo_bin("skill-factory").expect("binary is built");
    // A developer's real keys or model overrides must not leak into the tests.
    for key in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "SKILL_FACTORY_TARGET_MODEL",
        "SKILL_FACTORY_JUDGE_MODEL",
    ] {
        cmd.env_remove(key);
    }
    cmd
}

#[test]
fn offline_invoice_example_prints_score_first_then_worst_tasks() {
    let config = example("invoice-extractor").join("config.offline.yaml");
    let out = bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
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
    let config = example("ticket-classifier").join("config.offline.yaml");
    bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .assert()
        .success()
        .stdout(predicate::str::starts_with("Score: 0.250 over 20 tasks\n"));
}

#[test]
fn split_option_evaluates_only_that_split() {
    let config = example("ticket-classifier").join("config.offline.yaml");
    // 20 tasks at val_fraction 0.3: round(6.0) = 6 validation tasks, 14 train.
    bin()
        .args(["evaluate", "--split", "val", "-c"])
        .arg(&config)
        .assert()
        .success()
        .stdout(predicate::str::contains("over 6 tasks"));
    bin()
        .args(["evaluate", "--split", "train", "-c"])
        .arg(&config)
        .assert()
        .success()
        .stdout(predicate::str::contains("over 14 tasks"));
}

#[test]
fn test_split_without_test_fraction_is_a_user_error() {
    let config = example("ticket-classifier").join("config.offline.yaml");
    bin()
        .args(["evaluate", "--split", "test", "-c"])
        .arg(&config)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("test_fraction"));
}

#[test]
fn json_output_has_score_and_one_item_per_task_in_dataset_order() {
    let config = example("invoice-extractor").join("config.offline.yaml");
    let out = bin()
        .args(["evaluate", "--json", "-c"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(out.status.success());
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["tasks"], 16);
    assert!((value["score"].as_f64().unwrap() - 0.475).abs() < 0.0005);
    let ids: Vec<&str> = value["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
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
    bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .arg("--skill")
        .arg(&skill)
        .assert()
        .success()
        .stdout(predicate::str::starts_with("Score: 1.000 over 20 tasks\n"));
}

/// Writes a seed skill and a dataset of `n` tasks into `dir` and returns the answers the mock
/// should give: every third one wrong, so the expected score is known.
fn write_skill_and_dataset(dir: &Path, n: usize) -> HashMap<String, String> {
    std::fs::write(
        dir.join("skill.md"),
        "---\nname: echo\ndescription: Echo.\n---\nAnswer with the label.\n",
    )
    .unwrap();
    let mut dataset = String::new();
    let mut answers = HashMap::new();
    for i in 0..n {
        let input = format!("message number {i}");
        dataset.push_str(&format!(
            "{{\"id\": \"t{i}\", \"input\": \"{input}\", \"expected\": \"label{i}\"}}\n"
        ));
        let answer = if i % 3 == 0 {
            "wrong".to_string()
        } else {
            format!("label{i}")
        };
        answers.insert(input, answer);
    }
    std::fs::write(dir.join("data.jsonl"), dataset).unwrap();
    answers
}

/// Writes a config with the given provider block and returns its path.
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

async fn run_against_mock(provider_block: impl Fn(&str) -> String, judge: bool) -> (String, usize) {
    let dir = tempfile::tempdir().unwrap();
    let answers = write_skill_and_dataset(dir.path(), 12);
    let server = MockServer::start(MockConfig {
        answers,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let config = write_config(dir.path(), &provider_block(&server.base_url()), judge);
    let out = tokio::task::spawn_blocking(move || {
        bin()
            .args(["evaluate", "-c"])
            .arg(&config)
            .output()
            .unwrap()
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
    let (stdout, requests) = run_against_mock(
        |base| format!("provider: {{name: openai, model: m, base_url: \"{base}/v1\", api_key: k}}"),
        false,
    )
    .await;
    // 4 of 12 answers are wrong: 8/12.
    assert!(
        stdout.starts_with("Score: 0.667 over 12 tasks\n"),
        "{stdout}"
    );
    assert_eq!(requests, 12);
}

#[tokio::test(flavor = "multi_thread")]
async fn evaluates_through_the_anthropic_wire_format_with_a_judge() {
    let (stdout, requests) = run_against_mock(
        |base| format!("provider: {{name: anthropic, model: m, base_url: \"{base}\", api_key: k}}"),
        true,
    )
    .await;
    assert!(stdout.starts_with("Score: "), "{stdout}");
    assert!(stdout.contains("[llm_judge] score"), "{stdout}");
    // One target call and one judge call per task; the judge inherits the target's block.
    assert_eq!(requests, 24);
}
