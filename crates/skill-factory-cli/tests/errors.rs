//! User errors: every one exits 2 with a message that names the file, line or key and the fix.

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

fn bin() -> Command {
    Command::cargo_bin("skill-factory").expect("binary is built")
}

fn write_run(dir: &Path, config: &str, skill: &str, dataset: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("skill.md"), skill).unwrap();
    std::fs::write(dir.join("data.jsonl"), dataset).unwrap();
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

const GOOD_SKILL: &str = "---\nname: s\ndescription: d\n---\nBody.\n";
const GOOD_DATA: &str = "{\"id\": \"a\", \"input\": \"x\", \"expected\": \"y\"}\n{\"id\": \"b\", \"input\": \"x2\", \"expected\": \"y\"}\n";
const FAKE: &str = "skill: skill.md\ndataset: data.jsonl\nprovider: {name: fake, responses: [y]}\n";

#[test]
fn missing_config_file_exits_2() {
    bin()
        .args(["evaluate", "-c", "/nonexistent/config.yaml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("config file not found"));
}

#[test]
fn misspelt_key_names_the_key_the_file_and_the_closest_valid_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_run(
        dir.path(),
        &format!("{FAKE}harness:\n  max_tokenz: 5\n"),
        GOOD_SKILL,
        GOOD_DATA,
    );
    bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("max_tokenz"))
        .stderr(predicate::str::contains("config.yaml"))
        .stderr(predicate::str::contains("did you mean 'max_tokens'"));
}

#[test]
fn bad_dataset_line_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = format!("{GOOD_DATA}{{not json\n");
    let config = write_run(dir.path(), FAKE, GOOD_SKILL, &data);
    bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("data.jsonl:3"))
        .stderr(predicate::str::contains("invalid JSON"));
}

#[test]
fn skill_without_a_name_says_how_to_fix_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_run(
        dir.path(),
        FAKE,
        "---\ndescription: d\n---\nBody\n",
        GOOD_DATA,
    );
    bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("skill.md"))
        .stderr(predicate::str::contains("name"));
}

#[test]
fn hosted_provider_without_a_key_names_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_run(
        dir.path(),
        "skill: skill.md\ndataset: data.jsonl\nprovider: {name: groq, model: m}\n",
        GOOD_SKILL,
        GOOD_DATA,
    );
    bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .env_remove("GROQ_API_KEY")
        .current_dir(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("GROQ_API_KEY"));
}

#[test]
fn key_from_a_dotenv_file_beside_the_config_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_run(
        dir.path(),
        "skill: skill.md\ndataset: data.jsonl\nprovider: {name: groq, model: m, base_url: \"http://127.0.0.1:9/v1\", max_retries: 1, timeout: 2}\n",
        GOOD_SKILL,
        GOOD_DATA,
    );
    std::fs::write(dir.path().join(".env"), "GROQ_API_KEY=from-dotenv\n").unwrap();
    // With the key found, the run starts; the unreachable endpoint makes every rollout fail
    // with its reason, scored 0, and the run still finishes.
    bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .env_remove("GROQ_API_KEY")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("Score: 0.000 over 2 tasks"))
        .stdout(predicate::str::contains("rollout failed"));
}

#[test]
fn unknown_provider_suggests_the_closest_name() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_run(
        dir.path(),
        "skill: skill.md\ndataset: data.jsonl\nprovider: {name: antropic}\n",
        GOOD_SKILL,
        GOOD_DATA,
    );
    bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{} line 3: provider: Unknown provider 'antropic'",
            config.display()
        )))
        .stderr(predicate::str::contains("Did you mean 'anthropic'?"));
}

#[test]
fn a_bad_value_in_a_role_block_names_the_file_line_and_block() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_run(
        dir.path(),
        "skill: skill.md\ndataset: data.jsonl\nprovider: {name: fake, responses: [a]}\njudge_provider:\n  name: openai\n  model: m\n  max_concurrency: 0\nmetric:\n  judge:\n    criteria: [{name: c, description: d}]\n",
        GOOD_SKILL,
        GOOD_DATA,
    );
    bin()
        .args(["evaluate", "-c"])
        .arg(&config)
        .env("OPENAI_API_KEY", "sk-test")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{} line 5: judge_provider: provider key `max_concurrency` must be at least 1",
            config.display()
        )));
}

#[test]
fn an_error_in_an_inherited_block_says_which_role_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_run(
        dir.path(),
        "skill: skill.md\ndataset: data.jsonl\nprovider:\n  name: openai\n  model: m\noptimizer:\n  budget: {max_usd: 1}\nmetric:\n  golden: {mode: exact}\n",
        GOOD_SKILL,
        GOOD_DATA,
    );
    bin()
        .args(["optimize", "-c"])
        .arg(&config)
        .env("OPENAI_API_KEY", "sk-test")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{} line 4: provider: optimizer.budget.max_usd is set, but no price is known for openai/m",
            config.display()
        )));
}

#[test]
fn no_subcommand_prints_help_and_exits_1() {
    bin()
        .assert()
        .code(1)
        .stdout(predicate::str::contains("evaluate"));
}

#[test]
fn version_prints_the_program_name() {
    bin()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("skill-factory "));
}

#[test]
fn list_shows_optimizers_and_every_provider() {
    bin()
        .arg("list")
        .assert()
        .success()
        .stdout(predicate::str::contains("Optimizers: llm_loop"))
        .stdout(predicate::str::contains("anthropic, openai, openai-compatible, azure, openrouter, together, groq, deepseek, vllm, lmstudio, ollama"))
        .stdout(predicate::str::contains(
            "Harnesses:  api, subprocess, claude_code, codex, gemini_cli (skill_mode: prompt, installed)",
        ))
        .stdout(predicate::str::contains(
            "Metrics:    golden (exact, normalized, token_f1, json_equal, numeric), programmatic (is_valid_json, json_has_keys, matches_regex, contains, not_contains, max_length, json_schema), judge, systemone (",
        ));
}

#[test]
fn an_error_that_quotes_its_cause_shows_the_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["evaluate", "-c"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot read config file"), "{stderr}");
    assert_eq!(stderr.matches("(os error").count(), 1, "{stderr}");
}
