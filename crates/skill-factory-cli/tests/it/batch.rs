//! Batch mode (`--batch`, `provider.batch: true`) through the real binary, against the mock's
//! batch routes in both wire formats: the same scores as direct calls at half the cost, every
//! answer in the cache, a run killed while it polls resuming the same batch, requests a batch
//! did not answer asked directly, and `optimize --batch` finding what a direct run finds.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;
use skill_factory_mock::{BatchPlan, MockConfig, MockServer};

use crate::common::{self, bin};

/// A config of the labelled tasks in `dir` against `server` in `wire`'s format, batching
/// nothing unless a flag or `extra` (more keys of the provider block) says so.
fn write_config(dir: &Path, server: &MockServer, wire: &str, extra: &str) -> PathBuf {
    let base = match wire {
        "anthropic" => server.base_url(),
        _ => format!("{}/v1", server.base_url()),
    };
    let config = format!(
        "skill: skill.md\ndataset: data.jsonl\nval_fraction: 0.3\n\
         provider: {{name: {wire}, model: m, base_url: \"{base}\", api_key: k, batch_poll: 0.05, \
         pricing: {{input_per_mtok: 3, output_per_mtok: 15}}{extra}}}\n\
         metric:\n  golden: {{mode: exact}}\nharness:\n  max_workers: 8\n"
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

async fn mock(dir: &Path, tasks: usize, batches: BatchPlan) -> MockServer {
    let config = MockConfig {
        batches,
        ..MockConfig::default()
    };
    common::labelled_mock(dir, common::LABEL_SKILL, tasks, config).await
}

/// `evaluate --json` with `flags`, which must succeed: its report and its stderr.
async fn evaluate(config: &Path, flags: &[&str]) -> (Value, String) {
    let mut cmd = bin();
    cmd.arg("evaluate")
        .arg("--json")
        .args(flags)
        .arg("-c")
        .arg(config);
    let out: Output = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "exit {:?}\nstderr: {stderr}",
        out.status.code()
    );
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

/// Each task's id and score, in dataset order.
fn scores(report: &Value) -> Vec<(String, f64)> {
    report["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["id"].as_str().unwrap().to_string(),
                item["score"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// The batch journal beside the config's runs (`runs/<config name>/`, the name of a
/// `config.yaml` being its folder's).
fn journal(dir: &Path) -> String {
    let name = dir.file_name().unwrap();
    std::fs::read_to_string(dir.join("runs").join(name).join("batches.jsonl")).unwrap_or_default()
}

/// The score of `n` labelled tasks, every third one answered wrong.
fn expected(n: usize) -> f64 {
    (n - n.div_ceil(3)) as f64 / n as f64
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_tasks_in_batch_mode_score_as_direct_calls_at_half_the_cost() {
    for wire in ["openai", "anthropic"] {
        let direct_dir = tempfile::tempdir().unwrap();
        let batch_dir = tempfile::tempdir().unwrap();
        let plan = BatchPlan {
            delay: Duration::from_millis(300),
            ..BatchPlan::default()
        };
        let server = mock(direct_dir.path(), 1000, plan).await;
        common::labelled_tasks(batch_dir.path(), "Answer with the label.", 1000);
        let direct_config = write_config(direct_dir.path(), &server, wire, "");
        let batch_config = write_config(batch_dir.path(), &server, wire, "");

        let (direct, _) = evaluate(&direct_config, &[]).await;
        assert_eq!(server.request_count(), 1000, "{wire}: direct calls");
        let (batched, stderr) = evaluate(&batch_config, &["--batch"]).await;
        assert_eq!(
            server.request_count(),
            1000,
            "{wire}: no direct call in batch mode"
        );
        assert_eq!(server.batch_counts(), (1, 1000), "{wire}: one batch");
        assert_eq!(scores(&batched), scores(&direct), "{wire}");
        assert_eq!(batched["score"], direct["score"], "{wire}");
        assert!((direct["score"].as_f64().unwrap() - expected(1000)).abs() < 1e-9);
        let (direct_usd, batch_usd) = (
            direct["cost_usd"].as_f64().unwrap(),
            batched["cost_usd"].as_f64().unwrap(),
        );
        assert!(direct_usd > 0.0, "{wire}: {direct_usd}");
        assert!(
            (batch_usd - direct_usd / 2.0).abs() < 1e-9,
            "{wire}: batch ${batch_usd} against direct ${direct_usd}"
        );
        assert!(
            stderr.contains(
                "Batches: 1 submitted; 1000 requests answered by a batch at half price, 0 asked directly"
            ),
            "{wire}: {stderr}"
        );
        assert!(
            stderr.contains("requests done"),
            "{wire}: the progress line: {stderr}"
        );

        // Every answer went into the cache as a direct one would: the rerun asks nothing.
        let (again, stderr) = evaluate(&batch_config, &["--batch"]).await;
        assert_eq!(server.batch_counts(), (1, 1000), "{wire}: {stderr}");
        assert_eq!(server.request_count(), 1000, "{wire}");
        assert!(
            stderr.contains("1000 answered from the cache, 0 asked"),
            "{wire}: {stderr}"
        );
        assert_eq!(scores(&again), scores(&direct), "{wire}");
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_judge_batches_too_and_grades_as_it_does_directly() {
    let direct_dir = tempfile::tempdir().unwrap();
    let batch_dir = tempfile::tempdir().unwrap();
    let server = mock(direct_dir.path(), 150, BatchPlan::default()).await;
    common::labelled_tasks(batch_dir.path(), "Answer with the label.", 150);
    let judge = "  judge:\n    criteria:\n      - {name: correctness, description: \"Is it right?\", weight: 1}\n";
    let with_judge = |dir: &Path| {
        let config = write_config(dir, &server, "openai", "");
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(
            &config,
            text.replace("metric:\n", &format!("metric:\n{judge}")),
        )
        .unwrap();
        config
    };
    let (direct, _) = evaluate(&with_judge(direct_dir.path()), &[]).await;
    assert_eq!(server.request_count(), 300, "a rollout and a grade each");
    let (batched, stderr) = evaluate(&with_judge(batch_dir.path()), &["--batch"]).await;
    assert_eq!(
        server.request_count(),
        300,
        "nothing asked directly: {stderr}"
    );
    assert_eq!(
        server.batch_counts(),
        (2, 300),
        "one batch of rollouts, then one of grades: {stderr}"
    );
    assert_eq!(scores(&batched), scores(&direct));
    let feedback = |report: &Value| report["items"][0]["feedback"].clone();
    assert_eq!(feedback(&batched), feedback(&direct));
    assert!(feedback(&direct).to_string().contains("judge"), "{direct}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mixed_run_batches_only_what_direct_calls_did_not_cache() {
    let dir = tempfile::tempdir().unwrap();
    let server = mock(dir.path(), 120, BatchPlan::default()).await;
    let config = write_config(dir.path(), &server, "openai", "");
    let (val, _) = evaluate(&config, &["--split", "val"]).await;
    let asked = server.request_count() as u64;
    assert_eq!(asked, val["tasks"].as_u64().unwrap());
    let (all, stderr) = evaluate(&config, &["--batch"]).await;
    assert_eq!(server.batch_counts(), (1, 120 - asked), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{asked} answered from the cache, {} asked",
            120 - asked
        )),
        "{stderr}"
    );
    assert!((all["score"].as_f64().unwrap() - expected(120)).abs() < 1e-9);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_killed_while_it_polls_resumes_the_same_batch_without_paying_again() {
    for wire in ["openai", "anthropic"] {
        let dir = tempfile::tempdir().unwrap();
        let plan = BatchPlan {
            delay: Duration::from_secs(3),
            ..BatchPlan::default()
        };
        let server = mock(dir.path(), 200, plan).await;
        let config = write_config(dir.path(), &server, wire, ", batch: true");

        let mut child = common::process()
            .arg("evaluate")
            .arg("-c")
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !journal(dir.path()).contains("\"submitted\"") {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{wire}: no batch noted"
            );
            assert!(
                child.try_wait().unwrap().is_none(),
                "{wire}: it ended early"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // SIGKILL while the batch is still running (it ends 3 s after its creation).
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(server.batch_counts(), (1, 200), "{wire}");
        assert!(!journal(dir.path()).contains("\"read\""), "{wire}");

        let (report, stderr) = evaluate(&config, &[]).await;
        assert_eq!(
            server.batch_counts(),
            (1, 200),
            "{wire}: the rerun submitted nothing: {stderr}"
        );
        assert_eq!(
            server.request_count(),
            0,
            "{wire}: and asked nothing directly"
        );
        assert!(
            stderr.contains("submitted by an earlier run, 200 requests; polling it again"),
            "{wire}: {stderr}"
        );
        assert!(
            stderr.contains(
                "Batches: 0 submitted, 1 of an earlier run polled again; 200 requests answered"
            ),
            "{wire}: {stderr}"
        );
        assert!((report["score"].as_f64().unwrap() - expected(200)).abs() < 1e-9);
        assert!(journal(dir.path()).contains("\"read\""), "{wire}");
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_a_batch_did_not_answer_are_asked_directly_and_counted() {
    for wire in ["openai", "anthropic"] {
        let dir = tempfile::tempdir().unwrap();
        let plan = BatchPlan {
            delay: Duration::from_millis(100),
            errored: 0.1,
            expired: 0.2,
        };
        let server = mock(dir.path(), 300, plan).await;
        let config = write_config(dir.path(), &server, wire, "");
        let (report, stderr) = evaluate(&config, &["--batch"]).await;
        let direct = server.request_count();
        assert!(
            direct > 30 && direct < 150,
            "{wire}: {direct} asked directly"
        );
        assert!(
            stderr.contains(&format!(
                "Batches: 1 submitted; {} requests answered by a batch at half price, {direct} asked directly",
                300 - direct
            )),
            "{wire}: {stderr}"
        );
        assert_eq!(report["failed"], 0, "{wire}: every task answered");
        assert!((report["score"].as_f64().unwrap() - expected(300)).abs() < 1e-9);
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_mode_where_no_provider_has_a_batch_api_is_refused_before_any_request() {
    let cases = [
        // A block that asks for it on a provider without one.
        (
            "groq",
            ", batch: true",
            &[][..],
            [
                "groq has no batch API that batch mode speaks",
                "remove `batch`",
            ],
        ),
        // The flag, when neither the target nor the judge could batch.
        (
            "ollama",
            "",
            &["--batch"][..],
            [
                "--batch, but neither the target's provider (ollama)",
                "run without --batch",
            ],
        ),
    ];
    for (provider, extra, flags, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let server = mock(dir.path(), 3, BatchPlan::default()).await;
        let config = write_config(dir.path(), &server, provider, extra);
        let out = bin()
            .arg("evaluate")
            .args(flags)
            .arg("-c")
            .arg(&config)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            says.iter().all(|said| stderr.contains(said)) && stderr.contains("config.yaml"),
            "{stderr}"
        );
        assert_eq!(server.request_count(), 0);
    }
}
