//! `skill-factory optimize` end to end: the real binary on the shipped offline example, the
//! run folder it leaves, `result.json` as a reader of the reference tool's file sees it, exit
//! codes, export and Ctrl-C. The reference tool's own configs are run in `reference_configs.rs`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use skill_factory_mock::{MockConfig, MockServer};

use artifacts::artifacts;

use crate::common::artifacts;
use crate::common::{bin, optimize, read_json, repo_root};

fn offline_invoice() -> PathBuf {
    repo_root().join("examples/invoice-extractor/config.offline.yaml")
}

/// What the seed breaks of the Agent Skills spec is said before the run (only the body is
/// optimized, so the best skill would break it too), without stopping the run.
#[test]
fn the_seeds_agent_skills_findings_are_reported_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let example = repo_root().join("examples/invoice-extractor");
    for file in [
        "config.offline.yaml",
        "dataset.jsonl",
        "fake_target.yaml",
        "fake_optimizer.yaml",
    ] {
        std::fs::copy(example.join(file), tmp.path().join(file)).unwrap();
    }
    let seed = std::fs::read_to_string(example.join("seed_skill.md")).unwrap();
    std::fs::write(
        tmp.path().join("seed_skill.md"),
        seed.replacen("name: invoice-extractor", "name: Invoice Extractor", 1),
    )
    .unwrap();
    let ran = optimize(
        &[],
        &tmp.path().join("config.offline.yaml"),
        &tmp.path().join("runs"),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(
        ran.stderr
            .starts_with("seed_skill.md: error [name-characters]: The name \"Invoice Extractor\""),
        "{}",
        ran.stderr
    );
}

/// Not on a terminal (a CI log, a pipe), the live display is one plain line per milestone on
/// stderr, with the spending so far, and no control characters.
#[test]
fn off_a_terminal_the_live_display_prints_one_line_per_milestone() {
    let tmp = tempfile::tempdir().unwrap();
    let ran = optimize(&[], &offline_invoice(), &tmp.path().join("runs"));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let lines: Vec<&str> = ran.stderr.lines().collect();
    assert!(
        lines[0].starts_with("Tasks: 11 train, 5 val, 0 test; up to 16 model calls in flight."),
        "{}",
        ran.stderr
    );
    assert!(
        lines[1].starts_with("Baseline: val 0.433 · 5 calls · "),
        "{}",
        ran.stderr
    );
    assert!(
        lines[2].starts_with("Round 1/4: candidate 1 val 0.733, accepted (Outputs were prose"),
        "{}",
        ran.stderr
    );
    assert!(
        lines.iter().any(|l| l.starts_with(
            "Round 2/4: candidate 3 val 1.000, accepted (The outputs kept localized dates"
        )),
        "{}",
        ran.stderr
    );
    // 1.000 is the metric's maximum: rounds 3 and 4 are not run.
    assert!(
        lines.contains(&"Stopped: the best skill scores 1.000 on validation, the metric's maximum: no edit can beat it."),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("Round 3/4"), "{}", ran.stderr);
    assert!(!ran.stderr.contains(['\r', '\u{1b}']), "{:?}", ran.stderr);
}

/// On a terminal the live display is one progress line, redrawn in place: round, proposals,
/// best score against the seed's, and the spending. `script` gives the run a pseudo-terminal;
/// the mock's latency keeps each state on screen long enough to be drawn.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_the_live_display_redraws_one_progress_line() {
    let (_server, tmp, config) = slow_mock_run(150, "metric: {golden: {mode: normalized}}\n").await;
    let command = format!(
        "'{}' optimize -c '{}' -o '{}' >/dev/null",
        env!("CARGO_BIN_EXE_skill-factory"),
        config.display(),
        tmp.path().join("runs").display()
    );
    let out = tokio::task::spawn_blocking(move || {
        crate::common::scrub(&mut std::process::Command::new("script"))
            .args(["-qec", &command, "/dev/null"])
            .env("OPENAI_API_KEY", "test-key-for-the-mock")
            .output()
            .expect("script (util-linux) runs a command on a pseudo-terminal")
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let drawn = String::from_utf8_lossy(&out.stdout);
    assert!(
        drawn.contains("\u{1b}[2K"),
        "the line is redrawn in place: {drawn:?}"
    );
    assert!(
        drawn.contains("round 0/3 · 0 proposals · scoring the seed"),
        "{drawn:?}"
    );
    assert!(drawn.contains("round 1/3 · "), "{drawn:?}");
    assert!(drawn.contains(" proposals · best "), "{drawn:?}");
    assert!(
        !drawn.contains("Baseline: val"),
        "no plain lines on a terminal: {drawn:?}"
    );
}

#[test]
fn the_offline_example_improves_and_writes_every_file_of_the_run_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let ran = optimize(&[], &offline_invoice(), &runs);
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    let mut lines = ran.stdout.lines();
    assert_eq!(
        lines.next(),
        Some("Optimizing seed_skill.md with 'llm_loop'…")
    );
    assert_eq!(lines.next(), Some("# Skill optimization report — llm_loop"));
    assert!(
        ran.stdout
            .contains("\nBaseline 0.433 → best 1.000 (+56.7 pts)\nArtifacts: "),
        "{}",
        ran.stdout
    );

    let folder = artifacts(&ran.stdout);
    assert_eq!(folder.parent(), Some(runs.as_path()));
    // The last line says where the report is, as a user would `cat` it: through `latest`.
    let latest_report = runs.join("latest/report.md");
    assert!(
        ran.stdout
            .ends_with(&format!("\nReport: {}\n", latest_report.display())),
        "{}",
        ran.stdout
    );
    assert_eq!(
        std::fs::read_to_string(&latest_report).unwrap(),
        std::fs::read_to_string(folder.join("report.md")).unwrap()
    );
    for file in [
        "report.md",
        "best_skill.md",
        "result.json",
        "config.yaml",
        "events.jsonl",
        "rollouts.jsonl",
        "scores.svg",
        "candidates/000.md",
    ] {
        assert!(folder.join(file).is_file(), "missing {file}");
    }
    let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(ran.stdout.contains(&report), "stdout holds the report");
    assert!(report.contains("![Validation score per round](scores.svg)"));
    assert!(report.contains("## Tokens and cost"));
    assert!(report.contains("**perfect**"), "{report}");
    let best = std::fs::read_to_string(folder.join("best_skill.md")).unwrap();
    assert!(best.starts_with("---\nname: invoice-extractor\n") && best.contains("YYYY-MM-DD"));
    let svg = std::fs::read_to_string(folder.join("scores.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("(accepted)"),
        "{svg}"
    );

    // Every line of both logs is a complete JSON object; every proposal has its file.
    let events: Vec<Value> = std::fs::read_to_string(folder.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["event"], "run_started");
    assert_eq!(events.last().unwrap()["event"], "run_finished");
    for kind in [
        "rollout",
        "candidate_proposed",
        "candidate_scored",
        "decision",
    ] {
        assert!(events.iter().any(|e| e["event"] == kind), "no {kind} event");
    }
    assert!(
        events
            .iter()
            .all(|e| e["ts"].is_string() && e["spent"]["calls"].is_u64())
    );
    let proposals: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "candidate_proposed")
        .collect();
    for proposal in &proposals {
        let file = proposal["file"].as_str().unwrap();
        assert!(folder.join(file).is_file(), "missing {file}");
    }
    let rollouts = std::fs::read_to_string(folder.join("rollouts.jsonl")).unwrap();
    let first: Value = serde_json::from_str(rollouts.lines().next().unwrap()).unwrap();
    for key in [
        "candidate",
        "split",
        "task_id",
        "output",
        "error",
        "score",
        "feedback",
        "input_tokens",
        "output_tokens",
    ] {
        assert!(first.get(key).is_some(), "rollout lacks {key}: {first}");
    }

    #[cfg(unix)]
    assert_eq!(
        std::fs::read_link(runs.join("latest")).unwrap(),
        PathBuf::from(folder.file_name().unwrap())
    );
}

#[test]
fn a_second_run_gets_its_own_folder_and_latest_points_at_it() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let first = artifacts(&optimize(&[], &offline_invoice(), &runs).stdout);
    let second = artifacts(&optimize(&[], &offline_invoice(), &runs).stdout);
    assert_ne!(first, second);
    assert!(first.join("result.json").is_file() && second.join("result.json").is_file());
    assert_eq!(
        std::fs::canonicalize(runs.join("latest")).unwrap(),
        std::fs::canonicalize(&second).unwrap()
    );
}

/// What a reader written for the reference tool's `result.json` (its dashboard, its
/// `load_run`/`list_runs`) relies on: every field, with its JSON type.
#[test]
fn result_json_reads_like_the_reference_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let ran = optimize(&[], &offline_invoice(), &tmp.path().join("runs"));
    let path = artifacts(&ran.stdout).join("result.json");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.is_ascii(),
        "non-ASCII must be escaped as in Python's json.dumps"
    );
    assert!(text.starts_with("{\n  \"optimizer\": \"llm_loop\",\n  \"baseline_score\": "));
    assert!(!text.ends_with('\n'));
    let result: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = result
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys[..9],
        [
            "optimizer",
            "baseline_score",
            "best_score",
            "improvement",
            "candidates",
            "accepted",
            "metadata",
            "best_skill",
            "history"
        ]
    );
    assert!(result["optimizer"].is_string());
    for key in ["baseline_score", "best_score", "improvement"] {
        assert!(result[key].is_number(), "{key}");
    }
    assert!(result["candidates"].is_u64() && result["accepted"].is_u64());
    assert!(result["metadata"]["rounds_run"].is_u64());
    assert!(result["metadata"]["valset_size"].is_u64());
    for key in ["name", "description", "body", "markdown"] {
        assert!(result["best_skill"][key].is_string(), "best_skill.{key}");
    }
    let history = result["history"].as_array().unwrap();
    assert_eq!(result["candidates"].as_u64(), Some(history.len() as u64));
    let accepted = history.iter().filter(|h| h["accepted"] == true).count();
    assert_eq!(result["accepted"].as_u64(), Some(accepted as u64));
    for record in history {
        assert!(record["iteration"].is_u64());
        assert!(record["train_score"].is_number() && record["val_score"].is_number());
        assert!(record["accepted"].is_boolean());
        for key in ["note", "skill_name", "body"] {
            assert!(record[key].is_string(), "history.{key}");
        }
    }
    assert_eq!(history[0]["iteration"], 0);
    assert_eq!(history[0]["note"], "seed (baseline)");
    assert_eq!(history[0]["accepted"], true);
    // Scores carry at most 4 decimals, as Python's round(x, 4) leaves them.
    assert_eq!(result["baseline_score"].as_f64(), Some(0.4333));
    // Ours come after, without renaming theirs.
    for key in [
        "run_id",
        "config_name",
        "started_at",
        "finished_at",
        "stop_reason",
        "usage",
        "cost_usd",
        "test",
    ] {
        assert!(result.get(key).is_some(), "missing {key}");
    }
    assert_eq!(result["stop_reason"], "perfect");
    assert_eq!(result["config_name"], "invoice-extractor");
}

#[test]
fn min_improvement_sets_the_exit_code_for_ci() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    // The offline run gains 56.7 points.
    let met = optimize(&["--min-improvement", "0.5"], &offline_invoice(), &runs);
    assert_eq!(met.code, Some(0), "{}", met.stderr);
    let missed = optimize(&["--min-improvement", "0.6"], &offline_invoice(), &runs);
    assert_eq!(missed.code, Some(1), "{}", missed.stderr);
    assert!(
        missed.stderr.contains("below --min-improvement 0.6"),
        "{}",
        missed.stderr
    );
    assert!(artifacts(&missed.stdout).join("report.md").is_file());
}

#[test]
fn user_errors_exit_2_with_a_message_and_leave_no_run_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let missing = optimize(&[], &tmp.path().join("nope.yaml"), &runs);
    assert_eq!(missing.code, Some(2));
    assert!(missing.stderr.starts_with("error: "), "{}", missing.stderr);

    for (name, expected) in [
        (
            "gepaa",
            "Unknown optimizer 'gepaa' (did you mean 'gepa'?). Available: llm_loop, gepa, skillopt",
        ),
        (
            "annealing",
            "Unknown optimizer 'annealing'. Available: llm_loop, gepa, skillopt",
        ),
    ] {
        let edited = offline_invoice_with_optimizer(name);
        let config = tmp.path().join(format!("{name}.yaml"));
        std::fs::write(&config, edited).unwrap();
        let ran = optimize(&[], &config, &runs);
        assert_eq!(ran.code, Some(2), "{}", ran.stderr);
        assert!(ran.stderr.contains(expected), "{}", ran.stderr);
        assert!(ran.stderr.contains("optimizer.name"), "{}", ran.stderr);
    }
    assert!(!runs.exists(), "a failed start must not leave a run folder");

    let bad = optimize(&["--min-improvement", "nan"], &offline_invoice(), &runs);
    assert_eq!(bad.code, Some(2));
}

/// The offline invoice config with `name` as its optimizer, its files named by absolute
/// path so that it runs from anywhere.
fn offline_invoice_with_optimizer(name: &str) -> String {
    let dir = repo_root().join("examples/invoice-extractor");
    std::fs::read_to_string(offline_invoice())
        .unwrap()
        .replace("name: llm_loop", &format!("name: {name}"))
        .replace(
            "skill: seed_skill.md",
            &format!("skill: {}", dir.join("seed_skill.md").display()),
        )
        .replace(
            "dataset: dataset.jsonl",
            &format!("dataset: {}", dir.join("dataset.jsonl").display()),
        )
        .replace("script: fake_", &format!("script: {}/fake_", dir.display()))
}

#[test]
fn optimizer_names_are_case_insensitive() {
    let tmp = tempfile::tempdir().unwrap();
    let edited = offline_invoice_with_optimizer("LLM_Loop");
    let config = tmp.path().join("upper.yaml");
    std::fs::write(&config, edited).unwrap();
    let ran = optimize(&[], &config, &tmp.path().join("runs"));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(
        ran.stdout
            .contains("# Skill optimization report — llm_loop")
    );
}

#[test]
fn emit_exports_the_best_skill_with_an_install_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let dist = tmp.path().join("dist");
    let ran = optimize(
        &["--emit", dist.to_str().unwrap(), "--collection"],
        &offline_invoice(),
        &tmp.path().join("runs"),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let exported = dist.join("skills/invoice-extractor/SKILL.md");
    let text = std::fs::read_to_string(&exported).unwrap();
    assert!(text.contains("YYYY-MM-DD"), "{text}");
    assert!(ran.stdout.contains("Emitted skill → "), "{}", ran.stdout);
    assert!(ran.stdout.contains("npx skills add "), "{}", ran.stdout);
}

/// A config whose every model is the mock at `base` (OpenAI wire format).
/// A mock answering after `latency_ms`, a temporary folder, and [`mock_config`] in it. Keep
/// the server: dropping it stops the mock.
async fn slow_mock_run(latency_ms: u64, extra: &str) -> (MockServer, tempfile::TempDir, PathBuf) {
    let server = MockServer::start(MockConfig {
        latency: Duration::from_millis(latency_ms),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let config = mock_config(tmp.path(), &server.base_url(), extra);
    (server, tmp, config)
}

fn mock_config(dir: &Path, base: &str, extra: &str) -> PathBuf {
    let example = repo_root().join("examples/ticket-classifier");
    let config = format!(
        "skill: {}\ndataset: {}\nval_fraction: 0.3\nseed: 3\n\
         provider: {{name: openai-compatible, model: m, base_url: \"{base}/v1\"}}\n\
         optimizer: {{rounds: 3, minibatch_size: 3, max_edits_per_round: 2, patience: 3}}\n\
         {extra}",
        example.join("seed_skill.md").display(),
        example.join("dataset.jsonl").display(),
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

/// `optimize -c config -o runs` against the mock (with the key it expects) as a child
/// process, its stdout and stderr each made by `output`.
#[cfg(unix)]
fn spawn_optimize(
    config: &Path,
    runs: &Path,
    output: fn() -> std::process::Stdio,
) -> std::process::Child {
    crate::common::process()
        .arg("optimize")
        .arg("-c")
        .arg(config)
        .arg("-o")
        .arg(runs)
        .env("OPENAI_API_KEY", "test-key-for-the-mock")
        .stdout(output())
        .stderr(output())
        .spawn()
        .unwrap()
}

/// Waits, looking every `poll_ms`, until `events` holds `marker`; fails with `failure` after
/// 30 seconds.
#[cfg(unix)]
async fn wait_for_log(events: &Path, marker: &str, failure: &str, poll_ms: u64) {
    let started = Instant::now();
    while !std::fs::read_to_string(events).is_ok_and(|t| t.contains(marker)) {
        assert!(started.elapsed() < Duration::from_secs(30), "{failure}");
        tokio::time::sleep(Duration::from_millis(poll_ms)).await;
    }
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_after_the_calls_in_flight_and_still_writes_report_and_result() {
    let (server, tmp, config) = slow_mock_run(
        400,
        "harness: {max_workers: 2}\nmetric: {golden: {mode: normalized}}\n",
    )
    .await;
    let runs = tmp.path().join("runs");
    let child = spawn_optimize(&config, &runs, std::process::Stdio::piped);
    // Wait until the first rollout is logged: the run is mid-flight.
    let events = runs.join("latest/events.jsonl");
    let rollout = "\"event\":\"rollout\"";
    wait_for_log(&events, rollout, "the run never started", 20).await;
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("Stopping after the calls in flight"),
        "{stderr}"
    );
    let folder = artifacts(&stdout);
    let result = read_json(&folder.join("result.json"));
    assert_eq!(result["stop_reason"], "cancelled", "{result}");
    let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(report.contains("**cancelled**"), "{report}");
    // The run stopped early: far fewer calls than its three rounds would need.
    assert!(
        server.request_count() < 12,
        "{} requests",
        server.request_count()
    );
}

/// `result.json` without what differs from run to run by nature (ids, times).
fn comparable(mut result: Value) -> Value {
    let map = result.as_object_mut().unwrap();
    for key in ["run_id", "started_at", "finished_at", "elapsed_seconds"] {
        map.remove(key);
    }
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_json_is_the_same_with_one_worker_or_sixteen() {
    let server = MockServer::start(MockConfig {
        latency: Duration::from_millis(5),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let mut results = Vec::new();
    for workers in [1, 16] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("same-name");
        std::fs::create_dir(&dir).unwrap();
        // Short canned answers pass, long ones fail: scores vary with the body, so some
        // edits are accepted and some rejected.
        let config = mock_config(
            &dir,
            &server.base_url(),
            &format!(
                "harness: {{max_workers: {workers}}}\nmetric: {{programmatic: {{checks: [{{max_length: 12}}]}}}}\n"
            ),
        );
        let runs = tmp.path().join("runs");
        let output = tokio::task::spawn_blocking(move || {
            bin()
                .env("OPENAI_API_KEY", "test-key-for-the-mock")
                .arg("optimize")
                .arg("-c")
                .arg(&config)
                .arg("-o")
                .arg(&runs)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{stdout}");
        results.push(comparable(read_json(
            &artifacts(&stdout).join("result.json"),
        )));
    }
    assert_eq!(results[0], results[1]);
    // The mock proposes a different body at each temperature, so rounds really had several
    // proposals scored at once, and the gate had decisions to make.
    assert_eq!(results[0]["candidates"], 4);
    let history = results[0]["history"].as_array().unwrap();
    assert!(
        history
            .iter()
            .any(|h| h["val_score"] != history[0]["val_score"]),
        "{history:?}"
    );
}

/// Killed without warning in the middle of a round, a run still leaves a folder that can be
/// read: the result, report and best skill of the last finished step, and complete log lines.
/// Starts `optimize` against a slow mock, kills it (SIGKILL) once `events.jsonl` holds
/// `marker`, and returns the run folder, after checking what every killed run must leave: a
/// `result.json` that says it was running, a report in the reference's layout, the best
/// skill, and logs of complete JSON lines.
#[cfg(unix)]
async fn killed_when_the_log_shows(marker: &str) -> (tempfile::TempDir, PathBuf) {
    let (_server, tmp, config) = slow_mock_run(150, "metric: {golden: {mode: normalized}}\n").await;
    let runs = tmp.path().join("runs");
    let mut child = spawn_optimize(&config, &runs, std::process::Stdio::null);
    let folder = runs.join("latest");
    let events = folder.join("events.jsonl");
    let failure = format!("the log never showed {marker}");
    wait_for_log(&events, marker, &failure, 10).await;
    child.kill().unwrap();
    child.wait().unwrap();

    let result = read_json(&folder.join("result.json"));
    assert_eq!(result["stop_reason"], "running");
    let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(
        report.starts_with("# Skill optimization report — llm_loop\n"),
        "{report}"
    );
    assert!(report.contains("**running**"), "{report}");
    assert!(folder.join("best_skill.md").is_file());
    assert!(folder.join("scores.svg").is_file());
    for log in ["events.jsonl", "rollouts.jsonl"] {
        let text = std::fs::read_to_string(folder.join(log)).unwrap_or_default();
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{log} ends mid-line"
        );
        for line in text.lines() {
            serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{log}: {e}: {line}"));
        }
    }
    (tmp, folder)
}

/// A run killed in the middle of a round leaves the result, report and best skill of the last
/// finished step.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_mid_round_leaves_a_readable_folder() {
    let (_tmp, folder) = killed_when_the_log_shows("\"event\":\"round_started\"").await;
    let result = read_json(&folder.join("result.json"));
    assert_eq!(result["history"][0]["note"], "seed (baseline)");
}

/// A run killed while the seed's baseline is being scored (before any score is known) still
/// leaves every file a reader lists a run by.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_during_the_baseline_leaves_a_readable_folder() {
    let (_tmp, folder) = killed_when_the_log_shows("\"event\":\"evaluation_started\"").await;
    let result = read_json(&folder.join("result.json"));
    assert_eq!(result["history"], serde_json::json!([]));
    assert_eq!(result["candidates"], 0);
    assert_eq!(result["best_skill"]["name"], "ticket-classifier");
    let report = std::fs::read_to_string(folder.join("report.md")).unwrap();
    assert!(report.contains("baseline is being scored"), "{report}");
}
