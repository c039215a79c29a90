//! Chaos runs: every optimizer against a mock that fails about 30% of requests in every way
//! it knows (`common::chaos::storm`) ends with a complete run folder that accounts for every
//! rollout, and says why each failed one failed. The evaluate storm is in `cache.rs`, the
//! lab's in `classifier.rs`.

use std::path::{Path, PathBuf};

use skill_factory_mock::{Answering, MockConfig, MockServer, load_answers};

use crate::common::{self, chaos};

fn example() -> PathBuf {
    common::repo_root().join("examples/ticket-classifier")
}

/// The ticket-classifier example with `optimizer` and every model at the mock, with a
/// two-second timeout and three retries.
fn write_config(dir: &Path, base: &str, optimizer: &str) -> PathBuf {
    let config = format!(
        "skill: \"{}\"\ndataset: \"{}\"\nval_fraction: 0.3\nseed: 3\n\
         provider: {{name: openai-compatible, model: m, base_url: \"{base}/v1\", api_key: k, timeout: 2, max_retries: 3}}\n\
         optimizer: {{name: {optimizer}, rounds: 3, minibatch_size: 3, max_edits_per_round: 2, patience: 3}}\n\
         harness: {{max_workers: 8}}\n",
        example().join("seed_skill.md").display(),
        example().join("dataset.jsonl").display(),
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

async fn storm_run(optimizer: &str, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(MockConfig {
        answers: load_answers(&example().join("dataset.jsonl")).unwrap(),
        answering: Answering::SkillSensitive,
        faults: chaos::storm(seed),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let config = write_config(dir.path(), &server.base_url(), optimizer);
    let runs = dir.path().join("runs");
    let ran = {
        let config = config.clone();
        let runs = runs.clone();
        tokio::task::spawn_blocking(move || common::optimize(&[], &config, &runs))
            .await
            .unwrap()
    };
    assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
    assert_eq!(
        ran.code,
        Some(0),
        "{optimizer}: {}{}",
        ran.stdout,
        ran.stderr
    );
    let folder = runs.join("latest");
    let result = common::read_json(&folder.join("result.json"));
    assert_eq!(result["optimizer"], optimizer, "{result}");
    assert!(result["best_skill"]["body"].is_string(), "{result}");
    let (rollouts, failed) = chaos::assert_accounted(&folder);
    assert!(rollouts > 10, "{optimizer}: {rollouts} rollouts");
    let requests = server.request_count();
    assert!(
        requests > rollouts,
        "{optimizer}: faults made some calls take several attempts: {requests} requests"
    );
    eprintln!(
        "storm {optimizer}: {rollouts} rollouts, {failed} failed, {requests} requests, stop {}",
        result["stop_reason"]
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn llm_loop_survives_the_storm_with_every_rollout_accounted_for() {
    storm_run("llm_loop", 9).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gepa_survives_the_storm_with_every_rollout_accounted_for() {
    storm_run("gepa", 10).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn skillopt_survives_the_storm_with_every_rollout_accounted_for() {
    storm_run("skillopt", 11).await;
}
