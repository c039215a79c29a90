//! `skill-factory optimize` and the model cache: a rerun costs nothing, and a run killed with
//! SIGKILL resumes to the same result without repeating a finished call (the storms of faults
//! are in `chaos.rs`).
//!
//! The mock is skill sensitive (it answers more tasks right the more rules its optimizer has
//! added to the skill), so runs accept and reject edits and "the same best skill and scores"
//! compares real searches, not a seed that nothing can beat.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;
use skill_factory_llm::{CacheMode, CacheStore};
use skill_factory_mock::{Answering, FaultPlan, MockConfig, MockServer, load_answers};

/// The ticket-classifier example.
fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/ticket-classifier")
}

/// The ticket-classifier example with every model at the mock, three rounds.
fn write_config(dir: &Path, base: &str, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let config = format!(
        "skill: \"{}\"\ndataset: \"{}\"\nval_fraction: 0.3\nseed: 3\n\
         provider: {{name: openai-compatible, model: m, base_url: \"{base}/v1\", api_key: k{extra}}}\n\
         optimizer: {{rounds: 3, minibatch_size: 3, max_edits_per_round: 2, patience: 3}}\n\
         harness: {{max_workers: 2}}\n",
        example().join("seed_skill.md").display(),
        example().join("dataset.jsonl").display(),
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

fn optimize_command(config: &Path) -> std::process::Command {
    let mut cmd = crate::common::process();
    let runs = config.parent().unwrap().join("runs");
    cmd.arg("optimize")
        .arg("-c")
        .arg(config)
        .arg("-o")
        .arg(runs);
    cmd
}

async fn optimize(config: &Path) -> Output {
    let mut cmd = optimize_command(config);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The newest run's `result.json` without what differs between equal runs.
fn result_without_timestamps(config: &Path) -> Value {
    crate::common::artifacts::comparable_result(&config.parent().unwrap().join("runs/latest"))
}

/// Asserts that the search of the newest run of `config` went somewhere: an edit beat the
/// seed, and a scored edit was turned down (a round's losing proposal, in `events.jsonl`).
fn assert_edits_were_accepted_and_rejected(config: &Path) {
    let result = result_without_timestamps(config);
    let history = result["history"].as_array().unwrap();
    assert!(
        history.iter().skip(1).any(|r| r["accepted"] == true),
        "{result:#}"
    );
    assert!(
        result["best_score"].as_f64() > result["baseline_score"].as_f64(),
        "{result:#}"
    );
    assert_ne!(result["best_skill"]["body"], history[0]["body"]);
    let folder = config.parent().unwrap().join("runs/latest");
    assert!(
        crate::common::an_edit_was_turned_down(&folder),
        "no scored edit was turned down in {}",
        folder.display()
    );
}

fn cache_of(config: &Path) -> PathBuf {
    config.parent().unwrap().join(".skill-factory/cache.sqlite")
}

fn entries(path: &Path) -> usize {
    CacheStore::open(path, CacheMode::ReadOnly)
        .unwrap()
        .stats()
        .unwrap()
        .entries as usize
}

async fn mock(latency: Duration, faults: FaultPlan) -> MockServer {
    MockServer::start(MockConfig {
        answers: load_answers(&example().join("dataset.jsonl")).unwrap(),
        answering: Answering::SkillSensitive,
        latency,
        faults,
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_optimize_sends_no_requests_and_finds_the_same_best_skill_and_scores() {
    let dir = tempfile::tempdir().unwrap();
    let server = mock(Duration::ZERO, FaultPlan::default()).await;
    let config = write_config(dir.path(), &server.base_url(), "");
    let first_run = optimize(&config).await;
    let first = result_without_timestamps(&config);
    assert_edits_were_accepted_and_rejected(&config);
    let asked = server.request_count();
    assert!(asked > 20, "three rounds ask the models: {asked}");

    let second_run = optimize(&config).await;
    assert_eq!(server.request_count(), asked, "the rerun sent nothing");
    assert_eq!(result_without_timestamps(&config), first);
    let scores = |out: &Output| -> Vec<String> {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("Baseline "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(scores(&second_run), scores(&first_run));
    assert_eq!(scores(&first_run).len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_gepa_or_skillopt_run_sends_no_requests_and_finds_the_same_result() {
    for (name, keys) in [("gepa", "max_metric_calls: 60, "), ("skillopt", "")] {
        let dir = tempfile::tempdir().unwrap();
        let server = mock(Duration::ZERO, FaultPlan::default()).await;
        let config = write_config(dir.path(), &server.base_url(), "");
        let text = std::fs::read_to_string(&config).unwrap();
        let named = text.replace(
            "optimizer: {rounds: 3,",
            &format!("optimizer: {{name: {name}, {keys}rounds: 3,"),
        );
        assert_ne!(named, text);
        std::fs::write(&config, named).unwrap();
        optimize(&config).await;
        let first = result_without_timestamps(&config);
        assert_eq!(first["optimizer"], name);
        assert!(
            first["best_score"].as_f64() > first["baseline_score"].as_f64(),
            "{name}: {first:#}"
        );
        let asked = server.request_count();
        optimize(&config).await;
        assert_eq!(
            server.request_count(),
            asked,
            "{name}: the rerun sent nothing"
        );
        assert_eq!(result_without_timestamps(&config), first, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_optimize_reruns_to_the_same_result_without_repeating_a_finished_call() {
    let root = tempfile::tempdir().unwrap();
    let server = mock(Duration::from_millis(100), FaultPlan::default()).await;

    // The reference: one uninterrupted run on an empty cache.
    // Both configs live in a folder of the same name: the run's name comes from it.
    let straight = write_config(
        &root.path().join("straight/tickets"),
        &server.base_url(),
        "",
    );
    optimize(&straight).await;
    let expected = result_without_timestamps(&straight);
    assert_edits_were_accepted_and_rejected(&straight);
    let all_calls = server.request_count();

    // The same run, killed with SIGKILL once part of its answers are in, then rerun.
    let killed = write_config(&root.path().join("killed/tickets"), &server.base_url(), "");
    let cache = cache_of(&killed);
    let mut child = optimize_command(&killed)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let wanted = all_calls / 3;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(cache.exists() && entries(&cache) >= wanted) {
        assert!(
            Instant::now() < deadline,
            "the run never stored {wanted} answers"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run finished before it could be killed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = entries(&cache);
    assert!(kept >= wanted && kept < all_calls, "{kept} of {all_calls}");

    let before = server.request_count();
    optimize(&killed).await;
    assert_eq!(
        server.request_count() - before,
        all_calls - kept,
        "the rerun asked exactly the calls that had not finished"
    );
    assert_eq!(result_without_timestamps(&killed), expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn optimize_in_batch_mode_finds_what_direct_calls_find() {
    let server = mock(Duration::ZERO, FaultPlan::default()).await;
    let direct_dir = tempfile::tempdir().unwrap();
    let priced = ", pricing: {input_per_mtok: 3, output_per_mtok: 15}";
    let direct = write_config(direct_dir.path(), &server.base_url(), priced);
    optimize(&direct).await;
    let direct_calls = server.request_count();
    let batch_dir = tempfile::tempdir().unwrap();
    let batched = write_config(
        batch_dir.path(),
        &server.base_url(),
        &format!("{priced}, batch_poll: 0.05"),
    );
    let mut cmd = optimize_command(&batched);
    cmd.arg("--batch");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The configs' folders (and so their names) differ; nothing else may.
    let unnamed = |config: &Path| {
        let mut result = result_without_timestamps(config);
        result.as_object_mut().unwrap().remove("config_name");
        result
    };
    let mut batched_result = unnamed(&batched);
    let batches = batched_result
        .as_object_mut()
        .unwrap()
        .remove("batches")
        .expect("result.json counts the batches");
    assert_eq!(batched_result, unnamed(&direct));
    assert!(batches["submitted"].as_u64() > Some(1), "{batches}");
    assert_eq!(batches["asked_directly"], 0, "{batches}");
    let report =
        std::fs::read_to_string(batched.parent().unwrap().join("runs/latest/report.md")).unwrap();
    assert!(report.contains("Provider batches: "), "{report}");
    assert_edits_were_accepted_and_rejected(&batched);
    // The optimizer's proposals are asked directly; the rollouts and their scoring go in
    // batches, so the direct requests are the optimizer's alone.
    let proposals = server.request_count() - direct_calls;
    assert!(
        proposals > 0 && proposals < direct_calls / 2,
        "{proposals} of {direct_calls}"
    );
    assert!(
        stderr.contains("Batches: ") && stderr.contains(" submitted; "),
        "{stderr}"
    );
    let result =
        crate::common::read_json(&batched.parent().unwrap().join("runs/latest/result.json"));
    let direct_result =
        crate::common::read_json(&direct.parent().unwrap().join("runs/latest/result.json"));
    assert!(
        result["cost_usd"].as_f64() < direct_result["cost_usd"].as_f64(),
        "batched {} against direct {}",
        result["cost_usd"],
        direct_result["cost_usd"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_ctrl_c_stops_waiting_for_a_batch_and_leaves_it_to_the_rerun() {
    let server = MockServer::start(MockConfig {
        answers: load_answers(&example().join("dataset.jsonl")).unwrap(),
        answering: Answering::SkillSensitive,
        batches: skill_factory_mock::BatchPlan {
            delay: Duration::from_secs(600),
            ..Default::default()
        },
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &server.base_url(),
        ", batch: true, batch_poll: 0.05",
    );
    let journal = dir
        .path()
        .join("runs")
        .join(dir.path().file_name().unwrap())
        .join("batches.jsonl");
    let child = optimize_command(&config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !std::fs::read_to_string(&journal)
        .unwrap_or_default()
        .contains("\"submitted\"")
    {
        assert!(start.elapsed() < Duration::from_secs(30), "no batch noted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) sends SIGINT to the child this test spawned.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let stopped = Instant::now();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(
        stopped.elapsed() < Duration::from_secs(20),
        "it did not wait for the batch: {:?}",
        stopped.elapsed()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let result = result_without_timestamps(&config);
    assert_eq!(result["stop_reason"], "cancelled", "{result:#}");
    // The batch is still owed: a rerun polls it instead of paying again.
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(!text.contains("\"read\""), "{text}");
    assert_eq!(server.batch_counts().0, 1);
}
