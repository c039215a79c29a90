//! The binary with process harnesses and local metrics: the offline shell-agent example, an
//! agent CLI run with no provider and no key, and the key a System One metric does need.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The binary with no key, model override or System One variable of the developer's.
fn bin() -> Command {
    let mut cmd = Command::cargo_bin("skill-factory").expect("binary is built");
    for key in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "SKILL_FACTORY_TARGET_MODEL",
        "SKILL_FACTORY_JUDGE_MODEL",
        "SKILL_FACTORY_OPTIMIZER_MODEL",
        "SKILL_FACTORY_SYSTEMONE_KEY",
        "TYPESAFE_API_KEY",
        "SKILL_FACTORY_RECORD",
        "SKILL_FACTORY_REPLAY",
    ] {
        cmd.env_remove(key);
    }
    cmd
}

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
