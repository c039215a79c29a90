//! The Python tool's own example configs (all five, with their datasets and seeds, byte for
//! byte) run through `skill-factory evaluate` and `optimize` unchanged apart from a `base_url`
//! that points each provider block at a loopback mock server.
//!
//! The fixtures are shared with the engine's config tests
//! (`crates/skill-factory/tests/fixtures/reference-configs`). For `evaluate` the mock answers
//! every task with its expected answer, so a config that is read the way the reference tool
//! reads it scores 1.000: golden, programmatic checks and the judge (which scores 10 when the
//! output equals the reference answer) all pass. For `optimize` the mock is skill sensitive
//! (it answers more tasks right the more rules its optimizer has added), so the search has
//! edits to accept and to reject.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use skill_factory_mock::{Answering, MockConfig, MockServer, ReceivedRequest, load_answers};

use crate::common::artifacts;
use crate::common::bin;

/// The top-level keys that hold a provider block in a skill-mode config.
const PROVIDER_KEYS: &[&str] = &["provider", "target", "optimizer_provider", "judge_provider"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../skill-factory/tests/fixtures/reference-configs")
}

/// Where a provider of this name should be sent on the mock: Anthropic clients append
/// `/v1/messages` themselves, OpenAI-style clients expect the `/v1` in the base URL.
fn mock_url_for(provider_name: &str, base: &str) -> String {
    if provider_name == "anthropic" {
        base.to_string()
    } else {
        format!("{base}/v1")
    }
}

/// The value of `name:` in a flow mapping such as `{name: lmstudio, model: m}`.
fn flow_name(flow: &str) -> Option<&str> {
    flow.trim_start_matches('{')
        .split([',', '}'])
        .find_map(|entry| entry.trim().strip_prefix("name:"))
        .map(|name| name.trim().trim_matches(['"', '\'']))
}

/// `config` with `base_url` added to every provider block and nothing else changed: a flow
/// block gets `, base_url: "<url>"` before its closing brace, a block mapping gets a
/// `base_url: "<url>"` line right after its key, indented like its first entry.
fn point_providers_at(config: &str, base: &str) -> String {
    let lines: Vec<&str> = config.split_inclusive('\n').collect();
    let mut out = String::with_capacity(config.len() + 256);
    for (index, line) in lines.iter().enumerate() {
        let provider_value = PROVIDER_KEYS.iter().find_map(|key| {
            line.strip_prefix(key)
                .and_then(|rest| rest.strip_prefix(':'))
        });
        let Some(value) = provider_value else {
            out.push_str(line);
            continue;
        };
        // A trailing comment (`provider:   # the target`) is not part of the value.
        let value = value.split(" #").next().unwrap_or_default().trim();
        if value.starts_with('{') {
            let name = flow_name(value).unwrap_or("anthropic");
            let close = line
                .rfind('}')
                .expect("a flow mapping on one line ends with }");
            out.push_str(&line[..close]);
            out.push_str(&format!(", base_url: \"{}\"", mock_url_for(name, base)));
            out.push_str(&line[close..]);
            continue;
        }
        assert!(value.is_empty(), "unexpected provider value in {line:?}");
        let block: Vec<&str> = lines[index + 1..]
            .iter()
            .take_while(|l| l.starts_with(' '))
            .copied()
            .collect();
        let indent: String = block.first().map_or("  ".to_string(), |l| {
            l.chars().take_while(|c| *c == ' ').collect()
        });
        let name = block
            .iter()
            .find_map(|l| l.trim().strip_prefix("name:"))
            .map_or("anthropic", |n| n.trim().trim_matches(['"', '\'']));
        out.push_str(line);
        out.push_str(&format!(
            "{indent}base_url: \"{}\"\n",
            mock_url_for(name, base)
        ));
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The last user message of a recorded request, in either wire format.
fn user_message(request: &ReceivedRequest) -> String {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].clone())
        .unwrap_or(Value::Null);
    match last_user {
        Value::String(text) => text,
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Task inputs of a dataset, in file order.
fn task_inputs(dataset: &Path) -> Vec<String> {
    std::fs::read_to_string(dataset)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let record: Value = serde_json::from_str(l).unwrap();
            record["input"].as_str().unwrap().to_string()
        })
        .collect()
}

/// A copy of the fixture `example` in a temporary folder, its `config_file` pointed at a
/// fresh mock that knows the dataset's answers.
struct Pointed {
    dir: tempfile::TempDir,
    work: PathBuf,
    config: PathBuf,
    server: MockServer,
}

async fn pointed_at_a_mock(example: &str, config_file: &str, answering: Answering) -> Pointed {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join(example);
    copy_dir(&fixtures().join(example), &work);
    let server = MockServer::start(MockConfig {
        answers: load_answers(&work.join("dataset.jsonl")).unwrap(),
        answering,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let original = std::fs::read_to_string(work.join(config_file)).unwrap();
    let edited = point_providers_at(&original, &server.base_url());
    // Only base_url lines or entries were added: taking them out gives the original back.
    let mut restored = edited.clone();
    for url in [format!("{}/v1", server.base_url()), server.base_url()] {
        restored = restored.replace(&format!(", base_url: \"{url}\""), "");
        for indent in ["  ", "    "] {
            restored = restored.replace(&format!("{indent}base_url: \"{url}\"\n"), "");
        }
    }
    assert_eq!(restored, original, "the edit must only add base_url");
    assert_eq!(
        edited.matches("base_url").count(),
        3,
        "every role points at the mock: {edited}"
    );
    let config = work.join(config_file);
    std::fs::write(&config, &edited).unwrap();
    Pointed {
        dir,
        work,
        config,
        server,
    }
}

/// Runs `skill-factory <command> -c <config>` from the folder above the example, as a user
/// of the reference tool would.
async fn run(pointed: &Pointed, command: &str) -> std::process::Output {
    let cwd = pointed.dir.path().to_path_buf();
    let config = pointed.config.clone();
    let command = command.to_string();
    tokio::task::spawn_blocking(move || {
        bin()
            .current_dir(cwd)
            .env("ANTHROPIC_API_KEY", "sk-ant-dummy-for-the-mock")
            .env("OPENAI_API_KEY", "sk-dummy-for-the-mock")
            .args([command.as_str(), "-c"])
            .arg(&config)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// Runs `evaluate` on the fixture `example/config_file` pointed at a fresh mock; checks the
/// score line and that the mock saw one target call and one judge call per task, on
/// `expected_path`.
async fn evaluates_reference_config(example: &str, config_file: &str, expected_path: &str) {
    let pointed = pointed_at_a_mock(example, config_file, Answering::Always).await;
    let dataset = pointed.work.join("dataset.jsonl");
    let out = run(&pointed, "evaluate").await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{example}/{config_file}: exit {:?}\nstdout: {stdout}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let inputs = task_inputs(&dataset);
    assert_eq!(
        stdout.lines().next(),
        Some(format!("Score: 1.000 over {} tasks", inputs.len()).as_str()),
        "{example}/{config_file}: {stdout}"
    );

    let received = pointed.server.received();
    assert!(
        received.iter().all(|r| r.path == expected_path),
        "{example}/{config_file}: paths {:?}",
        received.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    let (judge, target): (Vec<String>, Vec<String>) = received
        .iter()
        .map(user_message)
        .partition(|user| user.starts_with("TASK INPUT:\n"));
    let expected: HashSet<&String> = inputs.iter().collect();
    assert_eq!(target.len(), inputs.len(), "one target call per task");
    assert_eq!(target.iter().collect::<HashSet<_>>(), expected);
    assert_eq!(judge.len(), inputs.len(), "one judge call per task");
    let judged: HashSet<&String> = inputs
        .iter()
        .filter(|input| {
            judge
                .iter()
                .any(|prompt| prompt.starts_with(&format!("TASK INPUT:\n{input}\n\n")))
        })
        .collect();
    assert_eq!(judged, expected, "every task judged once");
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_invoice_config_evaluates_against_an_anthropic_mock() {
    evaluates_reference_config("invoice-extractor", "config.yaml", "/v1/messages").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_invoice_lmstudio_config_evaluates_against_an_openai_style_mock() {
    evaluates_reference_config(
        "invoice-extractor",
        "config.lmstudio.yaml",
        "/v1/chat/completions",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_invoice_fast_config_evaluates_against_an_anthropic_mock() {
    evaluates_reference_config("invoice-extractor", "config.fast.yaml", "/v1/messages").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_ticket_config_evaluates_against_an_anthropic_mock() {
    evaluates_reference_config("ticket-classifier", "config.yaml", "/v1/messages").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_ticket_lmstudio_config_evaluates_against_an_openai_style_mock() {
    evaluates_reference_config(
        "ticket-classifier",
        "config.lmstudio.yaml",
        "/v1/chat/completions",
    )
    .await;
}

/// The model calls the Python tool makes for an `llm_loop` run of `rounds` rounds: target and
/// judge for each validation task of the baseline, then per round target and judge for each
/// minibatch task, one call per proposal, and target and judge for each validation task of
/// each proposal.
fn reference_calls(val: u64, minibatch: u64, edits: u64, rounds: u64) -> u64 {
    2 * val + rounds * (2 * minibatch + edits + edits * 2 * val)
}

/// Runs `optimize` on a reference config against a skill sensitive mock and checks what a
/// user of the reference tool expects to find: exit 0, the run under the config's
/// `output.dir`, edits accepted and rejected by the validation gate, the best skill exported
/// to `output.emit_skill_dir`, and never more model calls than the Python tool makes. The
/// configs grade with an LLM judge, which makes a run noisy; the Python tool's comparison of
/// means is what these runs are held to, so the regime is set to `deterministic` (one line
/// added); [`a_reference_config_with_a_judge_runs_noisy_and_says_why`] runs one as it is.
async fn optimizes_reference_config(
    example: &str,
    config_file: &str,
    expected_path: &str,
    (val, minibatch, edits): (u64, u64, u64),
    (output_dir, emit_dir): (&str, &str),
) -> Value {
    let pointed = pointed_at_a_mock(example, config_file, Answering::SkillSensitive).await;
    let mut text = std::fs::read_to_string(&pointed.config).unwrap();
    text.push_str("\nnoise: {regime: deterministic}\n");
    std::fs::write(&pointed.config, text).unwrap();
    let out = run(&pointed, "optimize").await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{example}/{config_file}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folder = artifacts::artifacts(&stdout);
    assert!(
        folder.starts_with(pointed.work.join(output_dir)),
        "output.dir is relative to the config: {}",
        folder.display()
    );
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("result.json")).unwrap())
            .unwrap();
    let history = result["history"].as_array().unwrap();
    let accepted = history
        .iter()
        .skip(1)
        .filter(|r| r["accepted"] == true)
        .count();
    assert!(accepted >= 1, "an edit beat the seed: {result:#}");
    assert!(
        crate::common::an_edit_was_turned_down(&folder),
        "an edit was turned down: {result:#}"
    );
    assert!(
        result["best_score"].as_f64() > result["baseline_score"].as_f64(),
        "{result:#}"
    );
    let skill = pointed.work.join(emit_dir).join(example).join("SKILL.md");
    let exported = std::fs::read_to_string(&skill).unwrap();
    assert!(
        exported.contains(result["best_skill"]["body"].as_str().unwrap().trim()),
        "the best skill is exported to {}",
        skill.display()
    );

    let received = pointed.server.received();
    assert!(received.iter().all(|r| r.path == expected_path));
    let rounds = result["metadata"]["rounds_run"].as_u64().unwrap();
    let limit = reference_calls(val, minibatch, edits, rounds);
    assert!(
        received.len() as u64 <= limit,
        "{} model calls, the Python tool makes {limit} for {rounds} rounds",
        received.len()
    );
    result
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_invoice_config_optimizes_against_an_anthropic_mock() {
    // 12 tasks at val_fraction 0.34: 4 validation tasks; minibatch 4, 2 proposals a round.
    let result = optimizes_reference_config(
        "invoice-extractor",
        "config.yaml",
        "/v1/messages",
        (4, 4, 2),
        ("runs/invoice-extractor", "dist"),
    )
    .await;
    assert_eq!(result["metadata"]["valset_size"], 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_ticket_lmstudio_config_optimizes_against_an_openai_style_mock() {
    // 15 tasks at val_fraction 0.34: 5 validation tasks; minibatch 3, 1 proposal a round.
    let result = optimizes_reference_config(
        "ticket-classifier",
        "config.lmstudio.yaml",
        "/v1/chat/completions",
        (5, 3, 1),
        ("runs/ticket-local", "dist-local"),
    )
    .await;
    assert_eq!(result["metadata"]["valset_size"], 5);
}

/// The reference invoice config with `optimizer.name` set to another of the names its
/// comment lists, pointed at a skill sensitive mock: `optimize` exits 0 and writes a run
/// folder whose `result.json` the Python tool's readers understand, with a best skill at
/// least as good as the seed.
async fn reference_config_runs_with_optimizer(name: &str) -> Value {
    let pointed = pointed_at_a_mock(
        "invoice-extractor",
        "config.yaml",
        Answering::SkillSensitive,
    )
    .await;
    let text = std::fs::read_to_string(&pointed.config).unwrap();
    let renamed = text.replace("name: llm_loop ", &format!("name: {name} "));
    assert_ne!(renamed, text);
    std::fs::write(&pointed.config, renamed).unwrap();
    let out = run(&pointed, "optimize").await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folder = artifacts::artifacts(&stdout);
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("result.json")).unwrap())
            .unwrap();
    for key in [
        "best_skill",
        "baseline_score",
        "best_score",
        "history",
        "optimizer",
    ] {
        assert!(result.get(key).is_some(), "{key} in {result:#}");
    }
    assert!(result["best_score"].as_f64() >= result["baseline_score"].as_f64());
    assert!(folder.join("report.md").is_file() && folder.join("events.jsonl").is_file());
    result
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_config_with_dspy_gepa_runs_the_native_gepa() {
    let result = reference_config_runs_with_optimizer("dspy_gepa").await;
    assert_eq!(result["optimizer"], "gepa");
    assert_eq!(result["metadata"]["backend"], "gepa");
    assert!(
        result["best_score"].as_f64() > result["baseline_score"].as_f64(),
        "{result:#}"
    );
    assert!(!result["metadata"]["lineage"].as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn reference_config_with_skillopt_runs_the_native_skillopt() {
    let result = reference_config_runs_with_optimizer("skillopt").await;
    assert_eq!(result["optimizer"], "skillopt");
    assert!(
        result["best_score"].as_f64() > result["baseline_score"].as_f64(),
        "{result:#}"
    );
    assert!(result["metadata"]["edits"]["applied"].as_u64() >= Some(1));
}

#[test]
fn provider_edit_adds_base_url_to_flow_and_block_mappings_only() {
    let config = "skill: s.md\nprovider:            {name: lmstudio, model: g}\njudge_provider:\n  name: anthropic\n  model: c\nmetric:\n  golden: {mode: exact}\n";
    assert_eq!(
        point_providers_at(config, "http://127.0.0.1:9"),
        "skill: s.md\nprovider:            {name: lmstudio, model: g, base_url: \"http://127.0.0.1:9/v1\"}\njudge_provider:\n  base_url: \"http://127.0.0.1:9\"\n  name: anthropic\n  model: c\nmetric:\n  golden: {mode: exact}\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reference_config_with_a_judge_runs_noisy_and_says_why() {
    let pointed = pointed_at_a_mock(
        "ticket-classifier",
        "config.lmstudio.yaml",
        Answering::SkillSensitive,
    )
    .await;
    let out = run(&pointed, "optimize").await;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let folder = artifacts::artifacts(&stdout);
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("result.json")).unwrap())
            .unwrap();
    assert_eq!(result["noise"]["regime"], "noisy", "{result:#}");
    assert_eq!(
        result["noise"]["reasons"],
        serde_json::json!(["an LLM judge grades (metric.judge)"])
    );
    // Every proposal was gated, and each gate says what it found.
    let gated = artifacts::comparisons(&result);
    assert!(!gated.is_empty(), "{result:#}");
    for comparison in gated {
        assert_eq!(comparison["regime"], "noisy");
        let [low, high] = [0, 1].map(|i| comparison["difference"]["interval"][i].as_f64().unwrap());
        assert!(low <= high, "{comparison}");
        assert!(
            comparison["reason"]
                .as_str()
                .unwrap()
                .contains("paired gain")
        );
    }
    let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(report.contains("## Scores with 95% intervals"), "{report}");
    assert!(
        report.contains("The run was noisy (an LLM judge grades"),
        "{report}"
    );
}
