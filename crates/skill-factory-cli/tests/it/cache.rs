//! The model cache, the scheduler and record/replay through the real binary, against a
//! loopback model server: reruns that cost nothing, a storm of 429s, 500s, hangs and broken
//! bodies, two processes on one cache, `kill -9` in the middle of writes, and `cache`
//! stats/clear/prune.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use skill_factory_llm::{CacheMode, CacheStore};
use skill_factory_mock::{FaultPlan, MockConfig, MockServer};
use tempfile::TempDir;

use crate::common::{self, LABEL_SKILL, bin, labelled_mock};

/// `skill-factory evaluate -c CONFIG` as a child process that can be waited for or killed;
/// its output is kept when `keep_output`, else thrown away.
fn spawn_evaluate(config: &Path, keep_output: bool) -> std::process::Child {
    let mut cmd = crate::common::process();
    let output = || {
        if keep_output {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        }
    };
    cmd.arg("evaluate")
        .arg("-c")
        .arg(config)
        .stdout(output())
        .stderr(output());
    cmd.spawn().unwrap()
}

/// A config against `base` (the mock) with `extra` YAML appended.
fn write_config(dir: &Path, base: &str, workers: usize, extra: &str) -> PathBuf {
    write_provider_config(
        dir,
        base,
        "",
        &format!("harness:\n  max_workers: {workers}\n{extra}"),
    )
}

/// A config against `base` (the mock) whose provider block also holds `provider_keys`
/// (`, key: value` pairs), with `rest` YAML after the metric block.
fn write_provider_config(dir: &Path, base: &str, provider_keys: &str, rest: &str) -> PathBuf {
    let config = format!(
        "skill: skill.md\ndataset: data.jsonl\nprovider: {{name: openai, model: m, base_url: \"{base}/v1\", api_key: k{provider_keys}}}\nmetric:\n  golden: {{mode: exact}}\n{rest}"
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

/// `n` labelled tasks in a new temporary folder, a mock that knows their answers
/// ([`labelled_mock`]), and a config against it with `workers` workers and `extra` YAML appended.
async fn labelled_run(n: usize, workers: usize, extra: &str) -> (TempDir, MockServer, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let server = labelled_mock(dir.path(), LABEL_SKILL, n, MockConfig::default()).await;
    let config = write_config(dir.path(), &server.base_url(), workers, extra);
    (dir, server, config)
}

/// Runs the binary off the async runtime (the mock serves on it meanwhile).
async fn run(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

async fn evaluate(config: &Path, flags: &[&str]) -> Output {
    evaluate_with(config, flags, &[]).await
}

/// `evaluate <flags> -c config` with the environment variables `env` set.
async fn evaluate_with(config: &Path, flags: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = bin();
    cmd.envs(env.iter().copied())
        .arg("evaluate")
        .args(flags)
        .arg("-c")
        .arg(config);
    run(cmd).await
}

/// `cache <args> <path>`, the path a config or the cache file itself.
async fn cache_command(args: &[&str], path: &Path) -> Output {
    let mut cmd = bin();
    cmd.arg("cache").args(args).arg(path);
    run(cmd).await
}

/// Asserts that the command succeeded and printed `says`.
fn assert_printed(out: &Output, says: &str) {
    assert_success(out);
    assert!(stdout(out).contains(says), "{}", stdout(out));
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        stdout(out),
        stderr(out)
    );
}

fn default_cache(dir: &Path) -> PathBuf {
    dir.join(".skill-factory").join("cache.sqlite")
}

fn entries(path: &Path) -> u64 {
    CacheStore::open(path, CacheMode::ReadOnly)
        .unwrap()
        .stats()
        .unwrap()
        .entries
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_evaluate_sends_no_requests_and_prints_the_same_score() {
    let (dir, server, config) = labelled_run(30, 8, "").await;

    let first = evaluate(&config, &[]).await;
    assert_success(&first);
    assert_eq!(server.request_count(), 30);
    assert!(
        stderr(&first).contains("0 answered from the cache, 30 asked"),
        "{}",
        stderr(&first)
    );
    assert_eq!(entries(&default_cache(dir.path())), 30);

    let second = evaluate(&config, &[]).await;
    assert_success(&second);
    assert_eq!(server.request_count(), 30, "the rerun sent nothing");
    assert_eq!(stdout(&second), stdout(&first));
    assert!(stdout(&first).starts_with("Score: 0.667 over 30 tasks\n"));
    assert!(
        stderr(&second).contains("30 answered from the cache, 0 asked (0 HTTP requests sent)"),
        "{}",
        stderr(&second)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_cache_read_only_and_off_each_keep_their_promise() {
    let dir = tempfile::tempdir().unwrap();
    let server = labelled_mock(dir.path(), LABEL_SKILL, 12, MockConfig::default()).await;
    let cache = default_cache(dir.path());
    let config_with = |extra: &str| write_config(dir.path(), &server.base_url(), 4, extra);
    const READ_ONLY: &str = "cache: {mode: read_only}\n";

    // read_only on an empty cache: everything is asked, nothing is written.
    let config = config_with(READ_ONLY);
    assert_success(&evaluate(&config, &[]).await);
    assert_eq!(server.request_count(), 12);
    assert!(!cache.exists(), "read_only created the cache");

    // read_write fills it.
    let config = config_with("");
    assert_success(&evaluate(&config, &[]).await);
    assert_eq!((server.request_count(), entries(&cache)), (24, 12));

    // --no-cache asks again and leaves the cache as it was.
    let modified = std::fs::metadata(&cache).unwrap().modified().unwrap();
    assert_success(&evaluate(&config, &["--no-cache"]).await);
    assert_eq!(server.request_count(), 36);
    assert_eq!(entries(&cache), 12);
    assert_eq!(
        std::fs::metadata(&cache).unwrap().modified().unwrap(),
        modified
    );

    // off never reads it either.
    assert_success(&evaluate(&config_with("cache: {mode: off}\n"), &[]).await);
    assert_eq!(server.request_count(), 48);

    // read_only reads it.
    assert_success(&evaluate(&config_with(READ_ONLY), &[]).await);
    assert_eq!(server.request_count(), 48);
}

#[tokio::test(flavor = "multi_thread")]
async fn cache_stats_prune_and_clear_manage_the_store() {
    let (dir, _server, config) = labelled_run(10, 4, "cache: {path: store/answers.sqlite}\n").await;
    let cache = dir.path().join("store/answers.sqlite");

    assert_printed(
        &cache_command(&["stats", "-c"], &config).await,
        "No cache file yet",
    );

    assert_success(&evaluate(&config, &[]).await);
    assert_success(&evaluate(&config, &[]).await);
    let out = cache_command(&["stats", "--path"], &cache).await;
    assert_success(&out);
    let text = stdout(&out);
    for line in [
        "Entries: 10\n",
        "Hits recorded: 10\n",
        "Misses recorded: 10\n",
        "Size on disk: ",
        "Oldest entry: 20",
        "Newest entry: 20",
    ] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }

    assert_printed(
        &cache_command(&["prune", "--older-than", "30d", "-c"], &config).await,
        "removed 0 entries not used in the last 30d; 10 remain",
    );

    assert_printed(
        &cache_command(&["clear", "-c"], &config).await,
        "removed 10 entries",
    );
    assert_eq!(entries(&cache), 0);

    let mut stats = bin();
    stats.args(["cache", "stats"]);
    let out = run(stats).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("-c CONFIG"), "{}", stderr(&out));
    let bad_age = ["prune", "--older-than", "a month", "--path"];
    let out = cache_command(&bad_age, &cache).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("for example 30d"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_at_the_cache_path_that_is_not_a_cache_stops_the_run_and_is_never_deleted() {
    let (dir, server, config) = labelled_run(5, 4, "").await;
    let cache = default_cache(dir.path());
    std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
    let garbage = "garbage, not SQLite ".repeat(500);
    std::fs::write(&cache, &garbage).unwrap();

    let out = evaluate(&config, &[]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(
        message.contains(&cache.display().to_string())
            && message.contains("is not a Skill Factory model cache")
            && !message.contains("cache clear"),
        "{message}"
    );
    assert!(!message.contains("panicked"), "{message}");
    assert_eq!(server.request_count(), 0);

    // --no-cache runs past it; `cache clear` refuses to delete it.
    assert_success(&evaluate(&config, &["--no-cache"]).await);
    let out = cache_command(&["clear", "-c"], &config).await;
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("is not a Skill Factory model cache"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&cache).unwrap(), garbage);
}

#[tokio::test(flavor = "multi_thread")]
async fn cache_clear_refuses_a_file_of_the_users_and_leaves_it_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "precious\n").unwrap();
    let out = cache_command(&["clear", "--path"], &notes).await;
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out)
            .contains("notes.txt is not a Skill Factory model cache (not an SQLite database)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "precious\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cache_path_that_is_the_dataset_is_refused_before_anything_is_written() {
    let (dir, server, config) = labelled_run(5, 4, "cache: {path: data.jsonl}\n").await;
    let dataset = std::fs::read_to_string(dir.path().join("data.jsonl")).unwrap();
    let out = evaluate(&config, &[]).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(
        message.contains("cache.path")
            && message.contains("is the run's dataset")
            && !message.contains("cache clear"),
        "{message}"
    );
    assert_eq!(server.request_count(), 0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("data.jsonl")).unwrap(),
        dataset
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_processes_write_one_cache_at_the_same_time() {
    let root = tempfile::tempdir().unwrap();
    let server = {
        let mut answers = HashMap::new();
        for name in ["a", "b"] {
            let dir = root.path().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            answers.extend(common::labelled_tasks(&dir, &format!("Skill {name}."), 150));
        }
        MockServer::start(MockConfig {
            answers,
            latency: Duration::from_millis(2),
            ..MockConfig::default()
        })
        .await
        .unwrap()
    };
    let shared = root.path().join("shared.sqlite");
    let extra = format!("cache: {{path: \"{}\"}}\n", shared.display());
    let configs: Vec<PathBuf> = ["a", "b"]
        .iter()
        .map(|name| write_config(&root.path().join(name), &server.base_url(), 16, &extra))
        .collect();

    let started: Vec<std::process::Child> = configs
        .iter()
        .map(|config| spawn_evaluate(config, true))
        .collect();
    let outputs = tokio::task::spawn_blocking(move || {
        started
            .into_iter()
            .map(|child| child.wait_with_output().unwrap())
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    for out in &outputs {
        assert_success(out);
    }
    assert_eq!(server.request_count(), 300);
    assert_eq!(entries(&shared), 300);
    CacheStore::open(&shared, CacheMode::ReadOnly)
        .unwrap()
        .verify()
        .unwrap();
    for config in &configs {
        assert_success(&evaluate(config, &[]).await);
    }
    assert_eq!(server.request_count(), 300, "both reruns were cache hits");
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_in_the_middle_of_writes_leaves_a_readable_cache_and_a_rerun_finishes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let n = 3000;
    let slow = MockConfig {
        latency: Duration::from_millis(50), // slow enough that a loaded machine cannot finish before the kill
        ..MockConfig::default()
    };
    let server = labelled_mock(dir.path(), LABEL_SKILL, n, slow).await;
    let config = write_config(dir.path(), &server.base_url(), 64, "");
    let cache = default_cache(dir.path());

    let mut child = spawn_evaluate(&config, false);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(cache.exists() && entries(&cache) >= 200) {
        assert!(Instant::now() < deadline, "the run never wrote 200 answers");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be killed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let store = CacheStore::open(&cache, CacheMode::ReadOnly).expect("the cache still opens");
    store.verify().expect("no damage");
    let kept = store.stats().unwrap().entries as usize;
    assert!(kept >= 200 && kept < n, "{kept} answers kept");
    drop(store);
    let before = server.request_count();

    let out = evaluate(&config, &[]).await;
    assert_success(&out);
    assert!(
        stdout(&out).starts_with(&format!("Score: 0.667 over {n} tasks\n")),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        server.request_count() - before,
        n - kept,
        "every answer stored before the kill was reused, every other one asked once"
    );
    assert_eq!(entries(&cache) as usize, n);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_storm_of_every_fault_still_completes_every_rollout() {
    let dir = tempfile::tempdir().unwrap();
    let n = 240;
    let stormy = MockConfig {
        faults: common::chaos::storm(4),
        ..MockConfig::default()
    };
    let server = labelled_mock(dir.path(), LABEL_SKILL, n, stormy).await;
    let config = write_provider_config(
        dir.path(),
        &server.base_url(),
        ", timeout: 2, max_retries: 3, max_concurrency: 16",
        "harness:\n  max_workers: 32\n",
    );

    let started = Instant::now();
    let out = evaluate(&config, &["--json"]).await;
    let elapsed = started.elapsed();
    assert_success(&out);
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = report["items"].as_array().unwrap();
    assert_eq!(items.len(), n);
    let mut failed = 0;
    for item in items {
        match item["error"].as_str() {
            Some(reason) => {
                failed += 1;
                assert!(
                    reason.contains("request failed after"),
                    "a failed rollout says why: {reason}"
                );
                assert_eq!(item["score"], 0.0);
            }
            None => {
                let output = item["output"].as_str().unwrap();
                assert!(
                    output == "wrong" || output.starts_with("label"),
                    "scored output {output:?}"
                );
            }
        }
    }
    assert_eq!(report["failed"], failed);
    // The faults hit about 29% of requests: some calls need several attempts, so more requests
    // than tasks were sent, and three attempts in a row fail for about 2.4% of the calls.
    assert!(server.request_count() > n, "{}", server.request_count());
    assert!(failed < 30, "{failed} of {n} rollouts failed");
    eprintln!(
        "storm: {n} tasks, {} requests, {failed} failed rollouts, {elapsed:?}",
        server.request_count()
    );
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");

    // Scored rollouts are cached; only the failed ones are asked again.
    let before = server.request_count();
    let rerun = evaluate(&config, &["--json"]).await;
    assert_success(&rerun);
    let asked = server.request_count() - before;
    assert!(
        asked >= failed as usize,
        "the failed rollouts are asked again"
    );
    assert!(
        asked <= failed as usize * 3,
        "nothing scored was asked again: {asked} requests for {failed} failed rollouts"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recording_replays_the_run_without_the_model_and_names_what_it_lacks() {
    let (dir, server, config) = labelled_run(9, 4, "").await;
    let recording = dir.path().join("traffic.jsonl");
    let replaying = [("SKILL_FACTORY_REPLAY", recording.as_path())];

    let recording_env = [("SKILL_FACTORY_RECORD", recording.as_path())];
    let recorded = evaluate_with(&config, &["--no-cache"], &recording_env).await;
    assert_success(&recorded);
    assert_eq!(server.request_count(), 9);
    assert_eq!(
        std::fs::read_to_string(&recording).unwrap().lines().count(),
        9
    );
    server.stop().await;

    // The model is gone: the replay answers everything, and nothing is cached.
    let replayed = evaluate_with(&config, &[], &replaying).await;
    assert_success(&replayed);
    assert_eq!(stdout(&replayed), stdout(&recorded));
    assert!(
        stderr(&replayed).contains("answered from the recording"),
        "{}",
        stderr(&replayed)
    );
    assert!(!default_cache(dir.path()).exists());

    // A changed skill asks questions the recording never saw: each rollout fails, saying so.
    std::fs::write(
        dir.path().join("skill.md"),
        "---\nname: echo\ndescription: Echo.\n---\nAnswer in French.\n",
    )
    .unwrap();
    let out = evaluate_with(&config, &["--json"], &replaying).await;
    assert_success(&out);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["failed"], 9);
    let reason = report["items"][0]["error"].as_str().unwrap();
    assert!(
        reason.contains("traffic.jsonl holds no answer") && reason.contains("SKILL_FACTORY_RECORD"),
        "{reason}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_that_keep_failing_become_failed_rollouts_with_their_reason_and_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let failing = MockConfig {
        faults: FaultPlan {
            server_error: 1.0,
            ..FaultPlan::default()
        },
        ..MockConfig::default()
    };
    let server = labelled_mock(dir.path(), LABEL_SKILL, 6, failing).await;
    let config = write_provider_config(dir.path(), &server.base_url(), ", max_retries: 2", "");
    let out = evaluate(&config, &[]).await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("The evaluation measured nothing"),
        "{}",
        stderr(&out)
    );
    let text = stdout(&out);
    assert!(text.starts_with("Score: 0.000 over 6 tasks\n"), "{text}");
    assert!(text.contains("Failed rollouts: 6"), "{text}");
    assert!(
        text.contains("request failed after 2 attempts") && text.contains("HTTP 500"),
        "{text}"
    );
    assert_eq!(server.request_count(), 12);
    assert!(
        !default_cache(dir.path()).exists(),
        "failures are never cached"
    );
}
