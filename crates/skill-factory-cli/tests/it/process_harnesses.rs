//! The binary with process harnesses and local metrics: the offline shell-agent example, an
//! agent CLI run with no provider and no key, and the key a System One metric does need.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use predicates::prelude::*;

use crate::common::{bin, repo_root};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn shell_agent_example_evaluates_offline_with_a_command_metric() {
    let config = repo_root().join("examples/shell-agent/config.yaml");
    bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .assert()
        .success()
        .stdout(predicate::str::starts_with("Score: 0.524 over 18 tasks\n"))
        .stdout(predicate::str::contains(
            "[command] score 0.32: expected 'c-vs-rust-a-comparison', got 'c++ vs. rust -- a comparison': replace spaces with hyphens; drop punctuation; collapse repeated hyphens",
        ));
}

#[test]
fn shell_agent_example_optimizes_offline_to_a_perfect_skill() {
    let config = repo_root().join("examples/shell-agent/config.yaml");
    let out = tempfile::tempdir().unwrap();
    bin()
        .args(["optimize", "-c"])
        .arg(&config)
        .arg("--out")
        .arg(out.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("best 1.000"));
}

#[test]
fn an_agent_cli_harness_with_local_checks_runs_without_any_provider_or_key() {
    let dir = tempfile::tempdir().unwrap();
    let claude = write(
        dir.path(),
        "claude",
        "#!/bin/sh\n[ \"$1\" = -p ] || exit 2\ncat | tr 'a-z' 'A-Z'\n",
    );
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    write(
        dir.path(),
        "skill.md",
        "---\nname: loud\ndescription: d\n---\nShout.\n",
    );
    write(
        dir.path(),
        "data.jsonl",
        "{\"id\": \"a\", \"input\": \"hi there\"}\n{\"id\": \"b\", \"input\": \"calm down\"}\n",
    );
    let config = write(
        dir.path(),
        "config.yaml",
        &format!(
            "skill: skill.md\ndataset: data.jsonl\nharness: {{type: claude_code, executable: {}}}\nmetric:\n  programmatic: {{checks: [{{matches_regex: '^[A-Z ]+$'}}]}}\n",
            claude.display()
        ),
    );
    bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .assert()
        .success()
        .stdout(predicate::str::starts_with("Score: 1.000 over 2 tasks\n"));
}

#[test]
fn a_systemone_metric_without_its_key_stops_before_the_run_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "skill.md",
        "---\nname: s\ndescription: d\n---\nB.\n",
    );
    write(
        dir.path(),
        "data.jsonl",
        "{\"id\": \"a\", \"input\": \"x\"}\n",
    );
    let config = write(
        dir.path(),
        "config.yaml",
        "skill: skill.md\ndataset: data.jsonl\nharness: {type: subprocess, command: [cat]}\nmetric:\n  systemone:\n    provider: typesafe\n    checks: [{name: ok, question: Is it fine?}]\n",
    );
    bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "metric.systemone: no key for typesafe: set TYPESAFE_API_KEY (or systemone.api_key)",
        ));
}

#[test]
fn list_shows_every_harness_and_the_new_metrics() {
    bin()
        .arg("list")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Harnesses:  api, subprocess, claude_code, codex, gemini_cli",
        ))
        .stdout(predicate::str::contains("systemone (typesafe, openrouter"))
        .stdout(predicate::str::contains(", command\n"));
}

/// Starts `skill-factory <command>` on a subprocess harness whose every rollout leaves a
/// background `sleep` (a grandchild, in the rollout's own process group) and records its pid;
/// returns the running binary and the file of pids once at least one rollout is running.
#[cfg(unix)]
fn start_with_lingering_rollouts(dir: &Path, command: &str) -> (std::process::Child, PathBuf) {
    let pids = dir.join("pids");
    write(
        dir,
        "skill.md",
        "---\nname: s\ndescription: d\n---\nWait.\n",
    );
    let tasks: String = (0..4)
        .map(|i| format!("{{\"id\": \"t{i}\", \"input\": \"x\", \"expected\": \"y\"}}\n"))
        .collect();
    write(dir, "data.jsonl", &tasks);
    let script = format!("sleep 60 & echo $! >> '{}'; wait", pids.display());
    let config = write(
        dir,
        "config.yaml",
        &format!(
            "skill: skill.md\ndataset: data.jsonl\nval_fraction: 0.5\nharness:\n  type: subprocess\n  command: [sh, -c, \"{script}\"]\n  timeout: 120\n  max_workers: 2\nprovider: {{name: fake, responses: [\"<NEW_SKILL_BODY>x</NEW_SKILL_BODY>\"]}}\nmetric:\n  golden: {{mode: exact}}\n"
        ),
    );
    let child = crate::common::process()
        .arg(command)
        .arg("-c")
        .arg(&config)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&pids).is_ok_and(|t| t.lines().count() >= 2) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "no rollout started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    (child, pids)
}

/// Every pid in `pids` is gone within a few seconds.
#[cfg(unix)]
fn assert_all_gone(pids: &Path) {
    let pids: Vec<i32> = std::fs::read_to_string(pids)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    // SAFETY: signal 0 only asks whether a process exists; an orphan killed a moment ago may
    // linger as a zombie until it is reaped, hence the wait.
    let alive = |pid: i32| unsafe { libc::kill(pid, 0) } == 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while pids.iter().any(|&pid| alive(pid)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let left: Vec<i32> = pids.into_iter().filter(|&pid| alive(pid)).collect();
    assert!(
        left.is_empty(),
        "rollout processes outlived skill-factory: {left:?}"
    );
}

#[cfg(unix)]
fn signal(child: &std::process::Child, signal: libc::c_int) {
    // SAFETY: kill(2) only sends a signal to the child we started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
}

#[cfg(unix)]
#[test]
fn sigterm_during_evaluate_kills_the_rollouts_and_exits_143() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, pids) = start_with_lingering_rollouts(dir.path(), "evaluate");
    signal(&child, libc::SIGTERM);
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert_all_gone(&pids);
}

#[cfg(unix)]
#[test]
fn ctrl_c_during_evaluate_kills_the_rollouts_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, pids) = start_with_lingering_rollouts(dir.path(), "evaluate");
    signal(&child, libc::SIGINT);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_all_gone(&pids);
}

#[cfg(unix)]
#[test]
fn a_second_ctrl_c_during_optimize_kills_the_rollouts_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, pids) = start_with_lingering_rollouts(dir.path(), "optimize");
    signal(&child, libc::SIGINT);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first Ctrl-C waits for the rollouts"
    );
    signal(&child, libc::SIGINT);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_all_gone(&pids);
}

#[test]
fn a_program_that_fails_every_task_alike_measures_nothing_and_stops_with_exit_3() {
    // `sh ./agent.sh` starts (sh runs), but the script is missing: every rollout fails with
    // the same "cannot open", before the task or the skill could matter.
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "skill.md",
        "---\nname: s\ndescription: d\n---\nAnswer.\n",
    );
    write(
        dir.path(),
        "data.jsonl",
        "{\"id\": \"a\", \"input\": \"1\", \"expected\": \"1\"}\n{\"id\": \"b\", \"input\": \"2\", \"expected\": \"2\"}\n{\"id\": \"c\", \"input\": \"3\", \"expected\": \"3\"}\n{\"id\": \"d\", \"input\": \"4\", \"expected\": \"4\"}\n",
    );
    let config = write(
        dir.path(),
        "config.yaml",
        "skill: skill.md\ndataset: data.jsonl\nval_fraction: 0.5\nharness: {type: subprocess, command: [sh, ./agent.sh]}\noptimizer_provider: {name: fake, responses: [\"<NEW_SKILL_BODY>x</NEW_SKILL_BODY>\"]}\noptimizer: {rounds: 3}\nmetric: {golden: {mode: exact}}\ncache: {mode: off}\n",
    );
    for command in ["evaluate", "optimize"] {
        let out = bin()
            .args([command, "-c"])
            .arg(&config)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{command}: {stderr}");
        assert!(
            stderr.contains("cannot open ./agent.sh"),
            "{command}: {stderr}"
        );
    }
}
