//! Classifier mode end to end: `optimize` of a `kind: classifier` config and the `lab`
//! commands, against a System One stub on loopback (and the pr-mismatch example against the
//! scripted model).

use std::path::{Path, PathBuf};

use serde_json::Value;
use skill_factory_mock::SystemOneStub;

use crate::common::{self, Ran, bin, repo_root};

/// P(true) of the stub: intent questions read the intent marker, capability questions the
/// capability marker (present in both classes), anything else a low constant.
pub(crate) fn responder(state: &str, _id: &str, question: &Value) -> f64 {
    let asks = question["instructions"]
        .as_str()
        .unwrap_or("")
        .to_lowercase();
    if asks.contains("intent") {
        if state.contains("INTENT:bad") {
            0.9
        } else {
            0.05
        }
    } else if asks.contains("capability") {
        if state.contains("CAP:yes") { 0.8 } else { 0.1 }
    } else {
        0.1
    }
}

/// A workspace of 120 examples (a third positive; the last 12 from a held-out source), a
/// seed reading only the capability question, and a pool with the intent question.
pub(crate) fn workspace(dir: &Path, base_url: &str) -> PathBuf {
    let mut dataset = String::new();
    for i in 0..120 {
        let positive = i % 3 == 0;
        let state = format!(
            "item {i} {} {}",
            if i % 2 == 0 { "CAP:yes" } else { "CAP:no" },
            if positive {
                "INTENT:bad"
            } else {
                "INTENT:good"
            }
        );
        let source = if i >= 108 { "src-b" } else { "src-a" };
        dataset.push_str(&format!(
            "{{\"id\": \"ex{i:03}\", \"state\": \"{state}\", \"label\": \"{}\", \"group\": \"g{}\", \"source\": \"{source}\"}}\n",
            if positive { "bad" } else { "good" },
            i / 2
        ));
    }
    std::fs::write(dir.join("data.jsonl"), dataset).unwrap();
    let questions = r#"{
 "capability": {"instructions": "Does this item have the capability?", "true": "Yes", "false": "No"},
 "intent@reviewer": {"frame": "reviewer", "question": "Does the item show bad intent?", "true": "Yes", "false": "No"},
 "noise": {"instructions": "Is it noisy?", "true": "Yes", "false": "No"}
}"#;
    std::fs::write(
        dir.join("seed.json"),
        r#"{"name": "seed", "model": "fake-jev", "state_budget": 10000,
 "questions": {"capability": {"instructions": "Does this item have the capability?", "true": "Yes", "false": "No"}},
 "score": "capability", "threshold": null}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("pool.json"),
        format!(
            "{{\"frames\": {{\"reviewer\": \"You review an item before it is used.\"}}, \"questions\": {questions}}}"
        ),
    )
    .unwrap();
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "kind: classifier\nname: demo\ndataset: data.jsonl\nlabels: {{positive: bad, negative: good}}\n\
             probeset: seed.json\npool: pool.json\nworkspace: ws\n\
             splits: {{held_out_sources: [src-b]}}\n\
             systemone: {{provider: custom, base_url: '{base_url}', model: fake-jev, concurrency: 4, max_usd: 1.0}}\n\
             objective: {{fpr_budget: 0.05, constraints: [{{split: val, max_fpr: 0.1}}]}}\n\
             optimizer: {{rounds: 0}}\n"
        ),
    )
    .unwrap();
    config
}

/// Asserts that `text` holds `part`, showing the whole text when it does not.
pub(crate) fn has(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} not in:\n{text}");
}

/// Runs `skill-factory <args>` off the async runtime (the stub serves on it meanwhile).
pub(crate) async fn sf(args: Vec<String>) -> Ran {
    tokio::task::spawn_blocking(move || common::run(bin().args(&args)))
        .await
        .unwrap()
}

pub(crate) fn args(items: &[&str], config: &Path) -> Vec<String> {
    let mut out: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    out.push("-c".into());
    out.push(config.display().to_string());
    out
}

fn states_sent(stub: &SystemOneStub) -> Vec<String> {
    stub.received()
        .iter()
        .map(|r| r.body["state"].as_str().unwrap_or("").to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn optimize_writes_the_workspace_and_never_sends_a_sealed_state() {
    let stub = SystemOneStub::start(responder).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = workspace(dir.path(), &stub.url());
    let ran = sf(args(&["optimize"], &config)).await;
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    has(&ran.stdout, "classifier mode");
    has(&ran.stdout, "sealed");
    let ws = dir.path().join("ws");
    for file in [
        "answers.jsonl",
        "pool.json",
        "probeset.json",
        "seed.json",
        "report.md",
        "splits.svg",
        "history.json",
        "result.json",
    ] {
        assert!(ws.join(file).is_file(), "{file} missing");
    }
    let report = std::fs::read_to_string(ws.join("report.md")).unwrap();
    for part in [
        "| test | sealed",
        "| held-out | sealed",
        "## Rounds",
        "## Questions",
    ] {
        assert!(report.contains(part), "{part}:\n{report}");
    }
    let best = common::read_json(&ws.join("probeset.json"));
    assert_eq!(best["name"], "demo");
    assert!(
        best["score"].to_string().contains("intent@reviewer"),
        "{best}"
    );
    let result = common::read_json(&ws.join("result.json"));
    assert_eq!(result["kind"], "classifier");
    assert!(
        result["best_score"].as_f64() > result["baseline_score"].as_f64(),
        "{result}"
    );
    // Only train and validation states reach the model: held-out (items 108+) never, and
    // test never either.
    let sent = states_sent(&stub);
    assert!(!sent.is_empty());
    let status = sf(args(&["lab", "status"], &config)).await;
    assert_eq!(status.code, Some(0), "{}", status.stderr);
    for state in &sent {
        let item: usize = state.split(' ').nth(1).unwrap().parse().unwrap();
        assert!(item < 108, "a held-out state was sent: {state}");
    }
    let train_val = status
        .stdout
        .lines()
        .find(|l| l.starts_with("splits:"))
        .unwrap()
        .to_string();
    let sizes: Vec<usize> = train_val
        .split(", ")
        .take(2)
        .map(|part| {
            let counts = part.rsplit(' ').next().unwrap();
            let (p, n) = counts.trim_end_matches('-').split_once("+/").unwrap();
            p.parse::<usize>().unwrap() + n.parse::<usize>().unwrap()
        })
        .collect();
    let distinct: std::collections::HashSet<&String> = sent.iter().collect();
    assert_eq!(distinct.len(), sizes.iter().sum::<usize>(), "{train_val}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_identical_optimize_sends_no_request() {
    let stub = SystemOneStub::start(responder).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = workspace(dir.path(), &stub.url());
    assert_eq!(sf(args(&["optimize"], &config)).await.code, Some(0));
    let first = stub.received().len();
    let again = sf(args(&["optimize"], &config)).await;
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert_eq!(stub.received().len(), first, "the second run asked again");
    has(&again.stderr, "0 requests to send");
}

#[tokio::test(flavor = "multi_thread")]
async fn lab_commands_plan_ask_score_select_and_report_status() {
    let stub = SystemOneStub::start(responder).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = workspace(dir.path(), &stub.url());
    let dry = sf(args(&["lab", "ask", "--dry-run"], &config)).await;
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    has(&dry.stdout, "requests to send");
    assert!(stub.received().is_empty(), "a dry run sent requests");
    let ask = sf(args(&["lab", "ask"], &config)).await;
    assert_eq!(ask.code, Some(0), "{}", ask.stderr);
    has(&ask.stdout, "answers cached");
    let status = sf(args(&["lab", "status"], &config)).await;
    has(&status.stdout, "lab online");
    let score = sf(args(&["lab", "score", "--questions"], &config)).await;
    assert_eq!(score.code, Some(0), "{}", score.stderr);
    has(&score.stdout, "intent@reviewer");
    let picked = dir.path().join("picked.json");
    let mut select = args(&["lab", "select", "--out"], &config);
    select.insert(3, picked.display().to_string());
    let select = sf(select).await;
    assert_eq!(select.code, Some(0), "{}", select.stderr);
    has(&select.stdout, "Pareto front");
    let picked = common::read_json(&picked);
    assert!(picked["score"].to_string().contains("intent"), "{picked}");
    let lab = sf(vec!["lab".into()]).await;
    assert_eq!(lab.code, Some(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn sealed_splits_open_only_after_a_freeze_and_every_opening_is_logged() {
    let stub = SystemOneStub::start(responder).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = workspace(dir.path(), &stub.url());
    assert_eq!(sf(args(&["optimize"], &config)).await.code, Some(0));
    let early = sf(args(
        &["lab", "report", "--splits", "test,held-out", "--ask"],
        &config,
    ))
    .await;
    assert_eq!(early.code, Some(2), "{}", early.stdout);
    has(&early.stderr, "freeze");
    let score = sf(args(&["lab", "score", "--splits", "test"], &config)).await;
    assert_eq!(score.code, Some(2));
    has(&score.stderr, "lab report");
    let ask = sf(args(&["lab", "ask", "--splits", "held-out"], &config)).await;
    assert_eq!(ask.code, Some(2));
    let sent_before = stub.received().len();
    let freeze = sf(args(&["lab", "freeze", "--note", "final"], &config)).await;
    assert_eq!(freeze.code, Some(0), "{}", freeze.stderr);
    assert!(
        freeze.stdout.starts_with("frozen demo as "),
        "{}",
        freeze.stdout
    );
    let out = dir.path().join("final");
    let mut report = args(&["lab", "report", "--ask", "--out"], &config);
    report.insert(4, out.display().to_string());
    let report = sf(report).await;
    assert_eq!(report.code, Some(0), "{}{}", report.stdout, report.stderr);
    for part in ["test (", "held-out (", "opened 1 time", "-> **"] {
        assert!(report.stdout.contains(part), "{part}:\n{}", report.stdout);
    }
    assert!(
        stub.received().len() > sent_before,
        "the sealed states were never asked"
    );
    assert!(out.join("report-splits.svg").is_file());
    let unthresholded = dir.path().join("seed.json");
    let mut other = args(&["lab", "report", "--splits", "test", "--before"], &config);
    other.insert(5, unthresholded.display().to_string());
    let other = sf(other).await;
    assert_eq!(other.code, Some(2));
    has(&other.stderr, "baseline");
    let seal = common::read_json(&dir.path().join("ws/seal.json"));
    assert_eq!(seal["frozen"]["note"], "final");
    assert_eq!(seal["views"].as_array().unwrap().len(), 1, "{seal}");
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_requests_exit_3_with_a_lower_bound_warning_and_the_next_run_fills_the_cache() {
    let stub = SystemOneStub::start(responder).await.unwrap();
    stub.fail_next(&[400, 400, 400]);
    let dir = tempfile::tempdir().unwrap();
    let config = workspace(dir.path(), &stub.url());
    let ran = sf(args(&["optimize"], &config)).await;
    assert_eq!(ran.code, Some(3), "{}{}", ran.stdout, ran.stderr);
    has(&ran.stderr, "3 System One requests failed");
    let report = std::fs::read_to_string(dir.path().join("ws/report.md")).unwrap();
    assert!(report.contains("WARNING: 3 requests failed"), "{report}");
    assert!(report.contains("lower bound"), "{report}");
    let result = common::read_json(&dir.path().join("ws/result.json"));
    assert_eq!(result["metadata"]["failed_requests"], 3);
    let again = sf(args(&["optimize"], &config)).await;
    assert_eq!(again.code, Some(0), "{}", again.stderr);
}

#[test]
fn a_key_requiring_provider_without_its_key_names_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let config = workspace(dir.path(), "http://127.0.0.1:9/v1/systemone");
    let text = std::fs::read_to_string(&config).unwrap();
    let systemone = text.lines().find(|l| l.starts_with("systemone:")).unwrap();
    std::fs::write(
        &config,
        text.replace(systemone, "systemone: {provider: typesafe}"),
    )
    .unwrap();
    let ran = common::run(bin().args(["optimize", "-c"]).arg(&config));
    assert_eq!(ran.code, Some(2), "{}", ran.stdout);
    has(&ran.stderr, "no key for typesafe");
    has(&ran.stderr, "TYPESAFE_API_KEY");
}

fn example() -> PathBuf {
    repo_root().join("examples/pr-mismatch")
}

/// The example's offline config, its workspace moved into `dir`.
pub(crate) fn offline_example(dir: &Path) -> PathBuf {
    let source = example();
    for file in [
        "dataset.jsonl",
        "seed_probeset.json",
        "candidates.json",
        "fake_jev.yaml",
        "fake_proposer.yaml",
        "policy.yaml",
    ] {
        std::fs::copy(source.join(file), dir.join(file)).unwrap();
    }
    let text = std::fs::read_to_string(source.join("config.offline.yaml")).unwrap();
    let text = text.replace("../../runs/pr-mismatch-offline", "ws");
    let config = dir.join("config.offline.yaml");
    std::fs::write(&config, text).unwrap();
    config
}

/// The offline example in `dir`, optimized once.
pub(crate) fn optimized_example(dir: &Path) -> PathBuf {
    let config = offline_example(dir);
    let ran = common::run(bin().args(["optimize", "-c"]).arg(&config));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    config
}

#[test]
fn the_pr_mismatch_example_runs_offline_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let config = offline_example(dir.path());
    let status = common::run(bin().args(["lab", "status", "-c"]).arg(&config));
    assert_eq!(status.code, Some(0), "{}", status.stderr);
    assert!(
        status
            .stdout
            .contains("splits: train 10+/12-, val 5+/5-, test 3+/9-, held-out 0+/0-"),
        "{}",
        status.stdout
    );
    let ran = common::run(bin().args(["optimize", "-c"]).arg(&config));
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    let result = common::read_json(&dir.path().join("ws/result.json"));
    assert!(
        result["best_score"].as_f64() > result["baseline_score"].as_f64(),
        "{result}"
    );
    let best = common::read_json(&dir.path().join("ws/probeset.json"));
    let score = best["score"].to_string();
    assert!(
        score.contains("undisclosed") || score.contains("surprise"),
        "{score}"
    );
    // A reflective round: the scripted proposer's questions joined the pool and were tried.
    let history = common::read_json(&dir.path().join("ws/history.json"));
    let reflective = &history[2];
    assert_eq!(reflective["change"], "+2 questions", "{history}");
    assert_eq!(
        reflective["new_questions"],
        serde_json::json!(["unmentioned_effect@reviewer", "unmentioned_effect@auditor"])
    );
    assert!(
        reflective["prompt"]
            .as_str()
            .unwrap()
            .contains("SYSTEM-LEVEL CAUSES")
    );
    // The declarative policy: detection is the threshold, `block` a stricter tier.
    let simulated = common::run(bin().args(["lab", "simulate", "-c"]).arg(&config));
    assert_eq!(simulated.code, Some(0), "{}", simulated.stderr);
    assert!(
        simulated.stdout.starts_with("triage ") && simulated.stdout.contains(", block "),
        "{}",
        simulated.stdout
    );
    // Why the best misses what it misses on validation, as the proposer sees train.
    let failures = common::run(
        bin()
            .args(["lab", "score", "--failures", "val", "-c"])
            .arg(&config),
    );
    assert_eq!(failures.code, Some(0), "{}", failures.stderr);
    has(&failures.stdout, "VAL: 4/5 positives detected");
    has(&failures.stdout, "MISSED POSITIVES THAT WERE JUDGED (1):");
    let sealed = common::run(
        bin()
            .args(["lab", "score", "--failures", "test", "-c"])
            .arg(&config),
    );
    assert_eq!(sealed.code, Some(2), "{}", sealed.stdout);
    let seed = common::read_json(&dir.path().join("ws/seed.json"));
    assert!(
        seed["threshold"].is_f64(),
        "the seed's threshold is fitted on train: {seed}"
    );
    assert_eq!(
        common::run(bin().args(["lab", "freeze", "-c"]).arg(&config)).code,
        Some(0)
    );
    let report = common::run(bin().args(["lab", "report", "--ask", "-c"]).arg(&config));
    assert_eq!(report.code, Some(0), "{}", report.stderr);
    has(&report.stdout, "test (3 / 9)");
}

#[test]
fn the_pr_mismatch_configs_share_their_data_and_differ_in_model_and_workspace() {
    let dir = example();
    let real = std::fs::read_to_string(dir.join("config.yaml")).unwrap();
    let offline = std::fs::read_to_string(dir.join("config.offline.yaml")).unwrap();
    for key in [
        "dataset: dataset.jsonl",
        "probeset: seed_probeset.json",
        "pool: candidates.json",
        "salt: pr-11",
    ] {
        assert!(real.contains(key) && offline.contains(key), "{key}");
    }
    assert!(real.contains("provider: typesafe"));
    assert!(offline.contains("provider: scripted"));
}

#[test]
fn bad_input_exits_2_naming_the_file_and_line_and_writes_nothing() {
    type Case = (&'static str, fn(&Path), &'static str);
    let cases: [Case; 4] = [
        (
            "a score reading an unknown question",
            |dir| {
                edit(
                    &dir.join("seed_probeset.json"),
                    "\"max\": [",
                    "\"max\": [\"nope\",",
                )
            },
            "seed_probeset.json: score reads questions not in the probe set: ['nope']",
        ),
        (
            "a broken probe set",
            |dir| std::fs::write(dir.join("seed_probeset.json"), "{\"questions\": ").unwrap(),
            "seed_probeset.json: invalid JSON",
        ),
        (
            "a broken dataset line",
            |dir| add_example(dir, "{\"id\": \"x\", \"label\": "),
            "dataset.jsonl:45: invalid JSON",
        ),
        (
            "an unknown label",
            |dir| {
                add_example(
                    dir,
                    "{\"id\": \"x\", \"label\": \"maybe\", \"state\": \"s\"}",
                )
            },
            "dataset.jsonl:45:",
        ),
    ];
    for (what, break_it, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let config = offline_example(dir.path());
        break_it(dir.path());
        let ran = common::run(bin().args(["optimize", "-c"]).arg(&config));
        assert_eq!(ran.code, Some(2), "{what}: {}", ran.stdout);
        assert!(ran.stderr.contains(expected), "{what}: {}", ran.stderr);
        assert!(
            !dir.path().join("ws").exists(),
            "{what}: the workspace was written"
        );
    }
}

/// Appends `line` to the example's dataset (44 lines, so it is line 45).
fn add_example(dir: &Path, line: &str) {
    let path = dir.join("dataset.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(line);
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

pub(crate) fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from} not in {}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn a_corrupt_answer_line_and_a_hand_edited_probe_set_are_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let config = optimized_example(dir.path());
    let answers = dir.path().join("ws/answers.jsonl");
    let text = std::fs::read_to_string(&answers).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "garbage";
    std::fs::write(&answers, lines.join("\n") + "\n").unwrap();
    let ran = common::run(bin().args(["lab", "status", "-c"]).arg(&config));
    assert_eq!(ran.code, Some(2));
    has(&ran.stderr, "answers.jsonl:3: corrupt answer line");
    has(&ran.stderr, "repair or delete that line");
    std::fs::write(&answers, text).unwrap();
    let best = dir.path().join("ws/probeset.json");
    let edited = std::fs::read_to_string(&best).unwrap();
    let threshold = edited
        .lines()
        .find(|l| l.starts_with(" \"threshold\""))
        .unwrap();
    std::fs::write(&best, edited.replace(threshold, " \"threshold\": 0.9,")).unwrap();
    let ran = common::run(bin().args(["lab", "score", "-c"]).arg(&config));
    assert_eq!(ran.code, Some(2));
    has(&ran.stderr, "edited after it was measured");
    has(&ran.stderr, "delete the \"sha256\" field");
}

#[test]
fn a_torn_last_answer_line_is_repaired_and_nothing_is_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let config = optimized_example(dir.path());
    let answers = dir.path().join("ws/answers.jsonl");
    let whole = std::fs::read_to_string(&answers).unwrap();
    let lines = whole.lines().count();
    std::fs::write(&answers, format!("{whole}{{\"s\": \"abc\", \"q\"")).unwrap();
    let ran = common::run(bin().args(["optimize", "-c"]).arg(&config));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    has(&ran.stderr, ": 0 requests to send");
    assert_eq!(
        std::fs::read_to_string(&answers).unwrap().lines().count(),
        lines
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn offline_every_command_that_needs_no_new_answer_still_works() {
    let stub = SystemOneStub::start(responder).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = workspace(dir.path(), &stub.url());
    assert_eq!(sf(args(&["optimize"], &config)).await.code, Some(0));
    assert_eq!(sf(args(&["lab", "freeze"], &config)).await.code, Some(0));
    assert_eq!(
        sf(args(&["lab", "report", "--ask"], &config)).await.code,
        Some(0)
    );
    drop(stub);
    // No key and no server: the lab is offline, and everything is in the cache.
    let text = std::fs::read_to_string(&config).unwrap();
    let systemone = text.lines().find(|l| l.starts_with("systemone:")).unwrap();
    std::fs::write(
        &config,
        text.replace(
            systemone,
            "systemone: {provider: typesafe, model: fake-jev}",
        ),
    )
    .unwrap();
    for command in [
        vec!["optimize"],
        vec!["lab", "status"],
        vec!["lab", "score"],
        vec!["lab", "select"],
        vec!["lab", "ask"],
        vec!["lab", "report"],
    ] {
        let ran = sf(args(&command, &config)).await;
        assert_eq!(ran.code, Some(0), "{command:?}: {}", ran.stderr);
    }
    let status = sf(args(&["lab", "status"], &config)).await;
    has(&status.stdout, "lab offline: no key for typesafe");
}

#[test]
fn kind_classifier_on_the_command_line_runs_a_config_without_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = offline_example(dir.path());
    edit(&config, "kind: classifier\n", "");
    let ran = common::run(
        bin()
            .args(["optimize", "--kind", "classifier", "-c"])
            .arg(&config),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(ran.stdout.contains("classifier mode"));
}

#[tokio::test(flavor = "multi_thread")]
async fn two_processes_asking_into_one_cache_lose_no_answer() {
    let stub = SystemOneStub::start(responder).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = workspace(dir.path(), &stub.url());
    let children: Vec<_> = ["train", "val"]
        .into_iter()
        .map(|split| {
            common::process()
                .args(["lab", "ask", "--splits", split, "-c"])
                .arg(&config)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs = tokio::task::spawn_blocking(move || {
        children
            .into_iter()
            .map(|child| child.wait_with_output().unwrap())
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    for output in &outputs {
        assert!(output.status.success(), "{}", common::printed(output));
    }
    // Every request's answers are in the file, whole: the train and validation states with
    // their 3 questions each, and a plan over both splits has nothing left to ask.
    let answers = std::fs::read_to_string(dir.path().join("ws/answers.jsonl")).unwrap();
    assert_eq!(answers.lines().count(), stub.received().len() * 3);
    assert!(
        answers
            .lines()
            .all(|l| l.starts_with('{') && l.ends_with('}'))
    );
    let plan = sf(args(&["lab", "ask", "--dry-run"], &config)).await;
    has(&plan.stdout, ": 0 requests to send");
}

#[test]
fn optimize_warns_when_the_threshold_was_fitted_on_answers_of_several_versions() {
    let dir = tempfile::tempdir().unwrap();
    let config = optimized_example(dir.path());
    // The model is upgraded, and a new question is asked of it: the cache now mixes versions
    // (12 questions of the first run, the reflective round's two among them, on 32 examples).
    edit(
        &dir.path().join("fake_jev.yaml"),
        "model: fake-jev-1.0",
        "model: fake-jev-2.0",
    );
    let pool = dir.path().join("candidates.json");
    let mut bank: serde_json::Value = common::read_json(&pool);
    bank["questions"]["scope_creep@reviewer"] = serde_json::json!({
        "frame": "reviewer",
        "question": "Does the diff do more than the title says?",
        "true": "Yes: it does more.",
        "false": "No: it does what the title says."
    });
    std::fs::write(&pool, bank.to_string()).unwrap();
    let ran = common::run(bin().args(["optimize", "-c"]).arg(&config));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    has(
        &ran.stderr,
        "several model versions: fake-jev-1.0 (384), fake-jev-2.0 (32)",
    );
    has(&ran.stderr, "pinned to fake-jev-1.0");
}

#[tokio::test(flavor = "multi_thread")]
async fn reask_measures_determinism_and_recalibrate_refits_for_another_model() {
    let stub = SystemOneStub::start(responder).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = workspace(dir.path(), &stub.url());
    assert_eq!(sf(args(&["optimize"], &config)).await.code, Some(0));
    // The stub answers the same every time.
    let reask = sf(args(&["lab", "reask"], &config)).await;
    assert_eq!(reask.code, Some(0), "{}", reask.stderr);
    has(&reask.stdout, "100% identical");
    has(&reask.stdout, "0 of ");
    let answers = std::fs::read_to_string(dir.path().join("ws/answers.jsonl")).unwrap();
    assert!(
        answers.lines().any(|l| l.ends_with("\"r\": 1}")),
        "{answers}"
    );
    let sealed = sf(args(&["lab", "reask", "--split", "test"], &config)).await;
    assert_eq!(sealed.code, Some(2));
    let out = dir.path().join("recalibrated.json");
    let mut recalibrate = args(
        &["lab", "recalibrate", "--model", "fake-jev-2", "--out"],
        &config,
    );
    recalibrate.insert(5, out.display().to_string());
    // Requests that fail leave the threshold alone: exit 3, as every lab command whose
    // requests failed, and the rerun asks only for what is missing.
    stub.fail_next(&[400, 400]);
    let failed = sf(recalibrate.clone()).await;
    assert_eq!(failed.code, Some(3), "{}", failed.stderr);
    has(&failed.stderr, "2 request(s) to fake-jev-2 failed");
    has(&failed.stderr, "run the command again");
    assert!(!out.exists(), "nothing written on partial answers");
    let ran = sf(recalibrate).await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    has(&ran.stdout, "(fake-jev) -> ");
    has(&ran.stdout, "(fake-jev-2)");
    let refit = common::read_json(&out);
    assert_eq!(refit["model"], "fake-jev-2");
    assert_eq!(
        refit["calibration"]["recalibrated_from"]["model"],
        "fake-jev"
    );
    let bodies: Vec<String> = stub
        .received()
        .iter()
        .map(|r| r.body["model"].to_string())
        .collect();
    assert!(
        bodies.iter().any(|m| m == "\"fake-jev-2\""),
        "the new model was asked"
    );
}

/// `(state, question) → P(true)` of every line of a workspace's `answers.jsonl`.
fn answers_of(workspace: &Path) -> std::collections::BTreeMap<String, String> {
    std::fs::read_to_string(workspace.join("answers.jsonl"))
        .unwrap()
        .lines()
        .map(|line| {
            let answer: Value = serde_json::from_str(line).unwrap();
            (
                format!("{} {}", answer["s"], answer["q"]),
                answer["p"].to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lab_optimize_through_a_storm_of_faults_ends_as_a_calm_one_does() {
    let calm = SystemOneStub::start(responder).await.unwrap();
    let storm = SystemOneStub::start_with(
        skill_factory_mock::StubOptions {
            faults: common::chaos::storm(5),
            ..Default::default()
        },
        responder,
    )
    .await
    .unwrap();
    let mut outcomes = Vec::new();
    for stub in [&calm, &storm] {
        let dir = tempfile::tempdir().unwrap();
        let config = workspace(dir.path(), &stub.url());
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(
            &config,
            text.replace(
                "concurrency: 4,",
                "concurrency: 4, timeout: 2, max_retries: 4,",
            ),
        )
        .unwrap();
        let mut ran = sf(args(&["optimize"], &config)).await;
        // A request may still fail after every retry; the run then says so, keeps what it
        // got, and the rerun asks only for what is missing.
        let mut reruns = 0;
        while ran.code != Some(0) {
            assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
            assert!(reruns < 3, "{}{}", ran.stdout, ran.stderr);
            has(&ran.stderr, "run the same command again");
            reruns += 1;
            ran = sf(args(&["optimize"], &config)).await;
        }
        let ws = dir.path().join("ws");
        let result = common::read_json(&ws.join("result.json"));
        outcomes.push((
            common::read_json(&ws.join("probeset.json")),
            result["best_score"].clone(),
            result["baseline_score"].clone(),
            answers_of(&ws),
            reruns,
        ));
    }
    let (calm_run, storm_run) = (&outcomes[0], &outcomes[1]);
    assert_eq!(calm_run.0, storm_run.0, "the same best probe set");
    assert_eq!(calm_run.1, storm_run.1);
    assert_eq!(calm_run.2, storm_run.2);
    assert_eq!(
        calm_run.3, storm_run.3,
        "the same answers, every one of them"
    );
    assert!(
        storm.request_count() > calm.request_count(),
        "the faults cost retries: {} against {}",
        storm.request_count(),
        calm.request_count()
    );
    eprintln!(
        "lab storm: {} requests against {} calm, {} reruns",
        storm.request_count(),
        calm.request_count(),
        storm_run.4
    );
}

#[test]
fn a_workspace_left_without_its_grown_pool_reruns_to_the_same_outcome() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_example("pr-mismatch", dir.path());
    let config = dir.path().join("config.offline.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("workspace: ../../runs/pr-mismatch-offline", "workspace: ws"),
    )
    .unwrap();
    let ws = dir.path().join("ws");
    let outcome = || {
        let mut history = common::read_json(&ws.join("history.json"));
        // What was spent differs: the rerun's answers come from the cache.
        for round in history.as_array_mut().unwrap() {
            round.as_object_mut().unwrap().remove("usd");
        }
        (history, common::read_json(&ws.join("probeset.json")))
    };
    let first = common::run(bin().args(["optimize", "-c"]).arg(&config));
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let uninterrupted = outcome();
    // The grown pool is written last: a run killed before it leaves every other file of the
    // outcome, and must not read its own proposals back as the pool it started from.
    std::fs::remove_file(ws.join("pool.json")).unwrap();
    let rerun = common::run(bin().args(["optimize", "-c"]).arg(&config));
    assert_eq!(rerun.code, Some(0), "{}", rerun.stderr);
    assert_eq!(outcome(), uninterrupted);
}
