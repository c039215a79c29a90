//! Tracking in MLflow, against the real `mlflow server` on 127.0.0.1 (scripts/setup-mlflow.sh
//! installs it outside the clone; `SKILL_FACTORY_MLFLOW` names its `mlflow` command): an
//! `optimize` run becomes an MLflow run with its parameters, metrics by step, tags and
//! artifacts, read back through MLflow's own REST API; and a server killed in the middle of a
//! run loses nothing, because `track push` sends what the run folder's journal kept, once.
//!
//! The server starts about fifteen processes (uvicorn's workers, a job runner): it runs in a
//! process group of its own, killed whole when the test ends.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use skill_factory_mock::{MockConfig, MockServer};

use crate::common::external_tool::external_tool;
use crate::common::{copy_example, free_port, process, read_json, repo_root};

/// One MLflow server at a time: each keeps the machine's cores busy while it starts.
static ONE_SERVER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The `mlflow` command of scripts/setup-mlflow.sh.
fn mlflow() -> PathBuf {
    external_tool(
        "SKILL_FACTORY_MLFLOW",
        "skill-factory-ci/mlflow/bin/mlflow",
        "MLflow (its tracking server)",
        "scripts/setup-mlflow.sh   (needs Python 3 with venv; from PyPI)",
    )
}

/// `mlflow server` on 127.0.0.1:`port`, its runs in `store`/mlflow.db and its artifacts in
/// `store`/artifacts (served through its artifact proxy); its whole process group is killed
/// when dropped.
struct Server {
    child: Child,
    url: String,
    log: PathBuf,
    /// Whether its group was killed already (its number may then be another group's).
    killed: bool,
}

impl Server {
    async fn start(store: &Path, port: u16) -> Server {
        std::fs::create_dir_all(store).unwrap();
        let log = store.join(format!("server-{port}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(mlflow())
            .args(["server", "--host", "127.0.0.1", "--port", &port.to_string()])
            .arg("--backend-store-uri")
            .arg(format!("sqlite:///{}", store.join("mlflow.db").display()))
            .arg("--artifacts-destination")
            .arg(store.join("artifacts"))
            .args(["--workers", "1"])
            // Nothing leaves the machine, and no job runner is needed to track runs.
            .env("MLFLOW_DISABLE_TELEMETRY", "true")
            .env("DO_NOT_TRACK", "true")
            .env("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        let mut server = Server {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
            killed: false,
        };
        let started = Instant::now();
        loop {
            let health = reqwest::get(format!("{}/health", server.url)).await;
            if let Ok(answer) = health
                && answer.text().await.is_ok_and(|text| text.trim() == "OK")
            {
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("mlflow server ended ({status}): {}", server.log_tail());
            }
            assert!(
                started.elapsed() < Duration::from_secs(240),
                "mlflow server did not answer /health within 240 s: {}",
                server.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Kills every process of the server at once, as a crash would.
    fn kill(&mut self) {
        if std::mem::replace(&mut self.killed, true) {
            return;
        }
        // SAFETY: kill(2) on the group this server leads; no memory is involved.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    async fn get(&self, route: &str, query: &[(&str, &str)]) -> Value {
        let url = reqwest::Url::parse_with_params(&format!("{}{route}", self.url), query).unwrap();
        let answer = reqwest::get(url).await.unwrap();
        assert!(
            answer.status().is_success(),
            "GET {route}: {}",
            answer.status()
        );
        answer.json().await.unwrap()
    }

    /// The experiment's runs, as `runs/search` gives them.
    async fn runs(&self, experiment: &str) -> Vec<Value> {
        let found = self
            .get(
                "/api/2.0/mlflow/experiments/get-by-name",
                &[("experiment_name", experiment)],
            )
            .await;
        let id = found["experiment"]["experiment_id"].as_str().unwrap();
        let answer = reqwest::Client::new()
            .post(format!("{}/api/2.0/mlflow/runs/search", self.url))
            .json(&json!({ "experiment_ids": [id] }))
            .send()
            .await
            .unwrap();
        let runs: Value = answer.json().await.unwrap();
        runs["runs"].as_array().cloned().unwrap_or_default()
    }

    /// A metric's history: (step, value) in the order MLflow keeps them.
    async fn history(&self, run_id: &str, key: &str) -> Vec<(i64, f64)> {
        let answer = self
            .get(
                "/api/2.0/mlflow/metrics/get-history",
                &[("run_id", run_id), ("metric_key", key)],
            )
            .await;
        let mut points: Vec<(i64, f64)> = answer["metrics"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|m| {
                (
                    m["step"].as_i64().unwrap_or(0),
                    m["value"].as_f64().unwrap(),
                )
            })
            .collect();
        points.sort_by(|a, b| a.partial_cmp(b).unwrap());
        points
    }

    /// The names of a run's artifacts.
    async fn artifacts(&self, run_id: &str) -> Vec<String> {
        let listed = self
            .get("/api/2.0/mlflow/artifacts/list", &[("run_id", run_id)])
            .await;
        let mut names: Vec<String> = listed["files"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The `key: value` pairs of a run's `params` or `tags`.
fn pairs(run: &Value, what: &str) -> Vec<(String, String)> {
    run["data"][what]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|p| {
            (
                p["key"].as_str().unwrap().to_owned(),
                p["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn value_of<'a>(pairs: &'a [(String, String)], key: &str) -> &'a str {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("{key} missing from {pairs:?}"))
}

/// Every `candidate_scored` event of a run folder: (candidate, validation score).
fn scored(folder: &Path) -> Vec<(i64, f64)> {
    let mut points: Vec<(i64, f64)> = std::fs::read_to_string(folder.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["event"] == "candidate_scored")
        .map(|event| {
            (
                event["candidate"].as_i64().unwrap(),
                event["val_score"].as_f64().unwrap(),
            )
        })
        .collect();
    points.sort_by(|a, b| a.partial_cmp(b).unwrap());
    points
}

/// The journal's lines.
fn journal(folder: &Path) -> Vec<Value> {
    std::fs::read_to_string(folder.join("mlflow.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The calls of a journal after its last delivery mark.
fn undelivered(lines: &[Value]) -> Vec<Value> {
    let through = lines
        .iter()
        .filter(|line| line["line"] == "delivered")
        .filter_map(|line| line["through"].as_u64())
        .max()
        .unwrap_or(0);
    lines
        .iter()
        .filter(|line| line["line"] == "call" && line["seq"].as_u64() > Some(through))
        .cloned()
        .collect()
}

/// `optimize` of the offline invoice example (a copy under `dir`) tracked to `tracking` in the
/// experiment `invoices`, its runs under `dir/runs`: what it printed, and that folder.
fn offline_tracked_run(dir: &Path, tracking: &str) -> (std::process::Output, PathBuf) {
    let example = dir.join("invoice-extractor");
    copy_example("invoice-extractor", &example);
    let config = example.join("config.offline.yaml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\ntracking:\n  mlflow: {{uri: \"{tracking}\", experiment: invoices}}\n"
    ));
    std::fs::write(&config, text).unwrap();
    let runs = dir.join("runs");
    let out = process()
        .args(["optimize", "-c"])
        .arg(&config)
        .arg("-o")
        .arg(&runs)
        .output()
        .unwrap();
    (out, runs)
}

/// The folder `latest` points at under `runs`.
fn latest(runs: &Path) -> PathBuf {
    std::fs::canonicalize(runs.join("latest")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_optimize_run_becomes_an_mlflow_run_with_params_metrics_tags_and_artifacts() {
    let _one = ONE_SERVER.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(&tmp.path().join("store"), free_port()).await;
    let (out, runs) = offline_tracked_run(tmp.path(), &server.url);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("tracking"), "{stderr}");
    let folder = latest(&runs);
    let name = folder.file_name().unwrap().to_str().unwrap().to_owned();

    let found = server.runs("invoices").await;
    assert_eq!(found.len(), 1, "{found:#?}");
    let run = &found[0];
    let run_id = run["info"]["run_id"].as_str().unwrap();
    assert_eq!(run["info"]["run_name"], name.as_str());
    assert_eq!(run["info"]["status"], "FINISHED");

    let params = pairs(run, "params");
    assert_eq!(value_of(&params, "optimizer.name"), "llm_loop");
    assert_eq!(value_of(&params, "optimizer.rounds"), "4");
    assert_eq!(
        value_of(&params, "provider.model"),
        "scripted-invoice-model"
    );
    assert_eq!(value_of(&params, "val_fraction"), "0.34");
    assert!(
        !params.iter().any(|(key, _)| key.ends_with("api_key")),
        "{params:?}"
    );
    let tags = pairs(run, "tags");
    assert_eq!(value_of(&tags, "mlflow.runName"), name);
    assert_eq!(value_of(&tags, "skill_factory.kind"), "skill");
    assert_eq!(value_of(&tags, "skill_factory.optimizer"), "llm_loop");
    assert_eq!(
        value_of(&tags, "skill_factory.target"),
        "scripted-invoice-model"
    );
    assert_eq!(value_of(&tags, "skill_factory.stop_reason"), "perfect");

    // Every candidate's validation score at its number, once, as the run's events say.
    let history = server.history(run_id, "val_score").await;
    assert_eq!(history, scored(&folder));
    assert_eq!(
        history.iter().map(|(step, _)| *step).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    let low = server.history(run_id, "val_score_low").await;
    assert_eq!(low.len(), history.len());
    assert!(
        low.iter()
            .zip(&history)
            .all(|(l, h)| l.0 == h.0 && l.1 <= h.1)
    );
    assert!(!server.history(run_id, "train_score").await.is_empty());
    // Two edits went through the gate, and both were kept.
    let gates = server.history(run_id, "gate_accepted").await;
    assert_eq!(gates, [(1, 1.0), (3, 1.0)]);
    assert_eq!(server.history(run_id, "gate_gain").await.len(), 2);
    assert_eq!(server.history(run_id, "gate_bound").await.len(), 2);
    let result = read_json(&folder.join("result.json"));
    assert_eq!(
        server.history(run_id, "best_score").await,
        [(0, result["best_score"].as_f64().unwrap())]
    );
    let tokens = server.history(run_id, "tokens").await;
    assert_eq!(tokens.len(), 1);
    assert!(tokens[0].1 > 0.0, "{tokens:?}");
    assert_eq!(server.history(run_id, "usd").await.len(), 1);

    assert_eq!(
        server.artifacts(run_id).await,
        ["best_skill.md", "report.md", "result.json"]
    );
    let lines = journal(&folder);
    assert!(undelivered(&lines).is_empty(), "{lines:#?}");
    assert_eq!(lines[0]["uri"], server.url.as_str());
}

/// A config of the ticket classifier on the mock model at `base`, tracked by `tracking`.
fn slow_config(dir: &Path, base: &str, tracking: &str) -> PathBuf {
    let example = repo_root().join("examples/ticket-classifier");
    let config = format!(
        "skill: {}\ndataset: {}\nval_fraction: 0.3\nseed: 3\n\
         provider: {{name: openai-compatible, model: m, base_url: \"{base}/v1\"}}\n\
         optimizer: {{rounds: 3, minibatch_size: 3, max_edits_per_round: 2, patience: 3}}\n\
         tracking: {{mlflow: {{uri: \"{tracking}\", experiment: tickets}}}}\n",
        example.join("seed_skill.md").display(),
        example.join("dataset.jsonl").display(),
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

/// A slow `optimize` run tracked to `tracking`, started once the first of its calls reached the
/// server (the MLflow run exists, with its parameters): the model (each call takes a while, so
/// the run lasts seconds more), the child with its output piped, and the run folder.
async fn tracked_slow_run(
    dir: &Path,
    tracking: &str,
) -> (MockServer, std::process::Child, PathBuf) {
    let model = MockServer::start(MockConfig {
        latency: Duration::from_millis(120),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let config = slow_config(dir, &model.base_url(), tracking);
    let runs = dir.join("runs");
    let child = process()
        .args(["optimize", "-c"])
        .arg(&config)
        .arg("-o")
        .arg(&runs)
        .env("OPENAI_API_KEY", "test-key-for-the-mock")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let folder = loop {
        if let Ok(folder) = std::fs::canonicalize(runs.join("latest"))
            && journal(&folder)
                .iter()
                .any(|line| line["line"] == "delivered")
        {
            break folder;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the run's first calls did not reach MLflow"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    (model, child, folder)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_run_loses_nothing_and_track_push_completes_the_run_once() {
    let _one = ONE_SERVER.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let port = free_port();
    let mut server = Server::start(&store, port).await;
    // The server took the run's first calls...
    let (_model, child, folder) = tracked_slow_run(tmp.path(), &server.url).await;
    // ...and then died.
    server.kill();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("tracking") || line.contains("MLflow"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("track push"), "{stderr}");
    let result = read_json(&folder.join("result.json"));
    assert_ne!(result["stop_reason"], "running", "{result}");

    // What did not reach the server is in the journal, its end included.
    let left = undelivered(&journal(&folder));
    let kinds: Vec<&str> = left
        .iter()
        .filter_map(|line| line["call"].as_object()?.keys().next().map(String::as_str))
        .collect();
    assert!(kinds.contains(&"log_batch"), "{left:#?}");
    assert_eq!(
        kinds[kinds.len() - 4..],
        ["log_artifact", "log_artifact", "log_artifact", "end_run"]
    );

    // The server comes back on the same store; the push completes the same run.
    let server = Server::start(&store, port).await;
    let pushed = process()
        .args(["track", "push"])
        .arg(&folder)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&pushed.stdout);
    assert!(
        pushed.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    assert!(stdout.starts_with("Pushed "), "{stdout}");
    assert!(undelivered(&journal(&folder)).is_empty());

    let found = server.runs("tickets").await;
    assert_eq!(found.len(), 1, "{found:#?}");
    let run = &found[0];
    let run_id = run["info"]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(run["info"]["status"], "FINISHED");
    let history = server.history(&run_id, "val_score").await;
    assert_eq!(history, scored(&folder), "every score once");
    assert!(!history.is_empty());
    assert_eq!(
        server.artifacts(&run_id).await,
        ["best_skill.md", "report.md", "result.json"]
    );

    // Pushing again, even through another spelling of the address, sends nothing.
    let again = process()
        .args(["track", "push"])
        .arg(&folder)
        .arg("--uri")
        .arg(server.url.replace("127.0.0.1", "localhost"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success(), "{stdout}");
    assert!(stdout.starts_with("Nothing to push"), "{stdout}");
    assert_eq!(server.history(&run_id, "val_score").await, history);
    assert_eq!(server.runs("tickets").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_outright_is_marked_killed_by_track_push() {
    let _one = ONE_SERVER.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(&tmp.path().join("store"), free_port()).await;
    let (_model, mut child, folder) = tracked_slow_run(tmp.path(), &server.url).await;
    // SIGKILL: the run ends nothing, and MLflow shows it running.
    child.kill().unwrap();
    child.wait().unwrap();
    let found = server.runs("tickets").await;
    assert_eq!(found.len(), 1, "{found:#?}");
    let run_id = found[0]["info"]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(found[0]["info"]["status"], "RUNNING");

    // The push sees the run's process gone, and ends the run KILLED at its last sign of life.
    let pushed = process()
        .args(["track", "push"])
        .arg(&folder)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&pushed.stderr);
    assert!(pushed.status.success(), "{stderr}");
    assert!(stderr.contains("marked KILLED"), "{stderr}");
    let written = std::fs::metadata(folder.join("mlflow.jsonl"))
        .unwrap()
        .modified()
        .unwrap();
    let run = &server.runs("tickets").await[0];
    assert_eq!(run["info"]["run_id"], run_id.as_str());
    assert_eq!(run["info"]["status"], "KILLED");
    let end = run["info"]["end_time"].as_str().map_or_else(
        || run["info"]["end_time"].as_i64().unwrap(),
        |text| text.parse().unwrap(),
    );
    let written = i64::try_from(
        written
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    assert!(
        (0..=written).contains(&end) && written - end < 60_000,
        "end {end}, journal written {written}"
    );

    // Once ended, a second push sends nothing and says nothing more.
    let again = process()
        .args(["track", "push"])
        .arg(&folder)
        .output()
        .unwrap();
    assert!(again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stdout).starts_with("Nothing to push"),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
    assert!(
        !String::from_utf8_lossy(&again.stderr).contains("KILLED"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_made_by_a_create_that_was_never_answered_is_the_one_a_push_fills() {
    let _one = ONE_SERVER.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    // The run tracks to a server that is not up yet: every call stays in the journal.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let (out, runs) = offline_tracked_run(tmp.path(), &url);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folder = latest(&runs);
    let start = journal(&folder)
        .into_iter()
        .find_map(|line| line["call"]["start_run"].as_object().cloned())
        .expect("a start_run call in the journal");

    // The server comes up, and holds the run as a create whose answer was lost made it: same
    // experiment, name and start time.
    let server = Server::start(&tmp.path().join("store"), port).await;
    let client = reqwest::Client::new();
    let created: Value = client
        .post(format!("{url}/api/2.0/mlflow/experiments/create"))
        .json(&json!({"name": "invoices"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let made: Value = client
        .post(format!("{url}/api/2.0/mlflow/runs/create"))
        .json(&json!({
            "experiment_id": created["experiment_id"],
            "run_name": start["run_name"],
            "start_time": start["start_time"],
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run_id = made["run"]["info"]["run_id"].as_str().unwrap().to_owned();

    let pushed = process()
        .args(["track", "push"])
        .arg(&folder)
        .output()
        .unwrap();
    assert!(
        pushed.status.success(),
        "{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    // No second run: the push found that one and filled it.
    let found = server.runs("invoices").await;
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["info"]["run_id"], run_id.as_str());
    assert_eq!(found[0]["info"]["status"], "FINISHED");
    assert_eq!(server.history(&run_id, "val_score").await, scored(&folder));
}
