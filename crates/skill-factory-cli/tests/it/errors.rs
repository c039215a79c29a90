//! User errors: every one exits 2 with a message that names the file, line or key and the fix.

use std::path::{Path, PathBuf};

use predicates::prelude::*;

use crate::common::{self, Ran, bin};

fn write_run(dir: &Path, config: &str, skill: &str, dataset: &str) -> PathBuf {
    std::fs::write(dir.join("skill.md"), skill).unwrap();
    std::fs::write(dir.join("data.jsonl"), dataset).unwrap();
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

/// `config` as `config.yaml`, beside `skill` and `dataset`, in a new temporary folder; the
/// folder lives as long as the returned handle.
fn run_folder(config: &str, skill: &str, dataset: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_run(dir.path(), config, skill, dataset);
    (dir, path)
}

/// [`run_folder`] with the good skill and dataset.
fn good_run(config: &str) -> (tempfile::TempDir, PathBuf) {
    run_folder(config, GOOD_SKILL, GOOD_DATA)
}

/// Asserts that `command -c config`, with `env` set, exits 2 and says each of `says` on stderr.
fn assert_refused(command: &str, config: &Path, env: &[(&str, &str)], says: &[&str]) {
    let mut assert = common::with_config(command, config)
        .envs(env.iter().copied())
        .assert()
        .code(2);
    for said in says {
        assert = assert.stderr(predicate::str::contains(*said));
    }
}

/// Asserts that `evaluate` of `config` beside `skill` and `dataset` exits 2 and says each of
/// `says` on stderr.
fn evaluate_refuses(config: &str, skill: &str, dataset: &str, says: &[&str]) {
    let (_dir, config) = run_folder(config, skill, dataset);
    assert_refused("evaluate", &config, &[], says);
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
    evaluate_refuses(
        &format!("{FAKE}harness:\n  max_tokenz: 5\n"),
        GOOD_SKILL,
        GOOD_DATA,
        &["max_tokenz", "config.yaml", "did you mean 'max_tokens'"],
    );
}

#[test]
fn bad_dataset_line_names_the_file_and_line() {
    let data = format!("{GOOD_DATA}{{not json\n");
    evaluate_refuses(FAKE, GOOD_SKILL, &data, &["data.jsonl:3", "invalid JSON"]);
}

#[test]
fn skill_without_a_name_says_how_to_fix_it() {
    let nameless = "---\ndescription: d\n---\nBody\n";
    evaluate_refuses(FAKE, nameless, GOOD_DATA, &["skill.md", "name"]);
}

#[test]
fn hosted_provider_without_a_key_names_the_variable_before_anything_else() {
    let (dir, config) =
        good_run("skill: skill.md\ndataset: data.jsonl\nprovider: {name: groq, model: m}\n");
    // Neither command announces a run it cannot start.
    for command in ["evaluate", "optimize"] {
        common::with_config(command, &config)
            .current_dir(dir.path())
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::starts_with("error: "))
            .stderr(predicate::str::contains("GROQ_API_KEY"));
    }
}

#[test]
fn key_from_a_dotenv_file_beside_the_config_is_used() {
    let (dir, config) = good_run(
        "skill: skill.md\ndataset: data.jsonl\nprovider: {name: groq, model: m, base_url: \"http://127.0.0.1:9/v1\", max_retries: 1, timeout: 2}\n",
    );
    std::fs::write(dir.path().join(".env"), "GROQ_API_KEY=from-dotenv\n").unwrap();
    // With the key found, the run starts; the unreachable endpoint makes every rollout fail
    // with its reason, scored 0, and the evaluation ends with exit 3: nothing was measured.
    common::with_config("evaluate", &config)
        .env_remove("GROQ_API_KEY")
        .assert()
        .code(3)
        .stdout(predicate::str::starts_with("Score: 0.000 over 2 tasks"))
        .stdout(predicate::str::contains("rollout failed"));
}

#[test]
fn unknown_provider_suggests_the_closest_name() {
    let (_dir, config) =
        good_run("skill: skill.md\ndataset: data.jsonl\nprovider: {name: antropic}\n");
    let unknown = format!(
        "{} line 3: provider: Unknown provider 'antropic'",
        config.display()
    );
    assert_refused(
        "evaluate",
        &config,
        &[],
        &[unknown.as_str(), "Did you mean 'anthropic'?"],
    );
}

#[test]
fn a_bad_value_in_a_role_block_names_the_file_line_and_block() {
    assert_refused_at_line(
        "evaluate",
        "skill: skill.md\ndataset: data.jsonl\nprovider: {name: fake, responses: [a]}\njudge_provider:\n  name: openai\n  model: m\n  max_concurrency: 0\nmetric:\n  judge:\n    criteria: [{name: c, description: d}]\n",
        "line 5: judge_provider: provider key `max_concurrency` must be at least 1",
    );
}

#[test]
fn an_error_in_an_inherited_block_says_which_role_uses_it() {
    assert_refused_at_line(
        "optimize",
        "skill: skill.md\ndataset: data.jsonl\nprovider:\n  name: openai\n  model: m\noptimizer:\n  budget: {max_usd: 1}\nmetric:\n  golden: {mode: exact}\n",
        "line 4: provider: optimizer.budget.max_usd is set, but no price is known for openai/m",
    );
}

/// Asserts that `command` refuses `config` (beside the good skill and dataset, with an OpenAI
/// key set) with exit 2, naming the config file followed by `located` (`line N: block: ...`).
fn assert_refused_at_line(command: &str, config: &str, located: &str) {
    let (_dir, path) = good_run(config);
    let says = format!("{} {located}", path.display());
    assert_refused(command, &path, &[OPENAI_KEY], &[says.as_str()]);
}

/// A made-up OpenAI key: enough for a config naming OpenAI to get past the key check.
const OPENAI_KEY: (&str, &str) = ("OPENAI_API_KEY", "sk-test");

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
    let mut listed = bin().arg("list").assert().success();
    for says in [
        "Optimizers: llm_loop, gepa, skillopt",
        "  gepa      mutates one component at a time",
        "  skillopt  bounded edit patches",
        "anthropic, openai, openai-compatible, azure, openrouter, together, groq, deepseek, vllm, lmstudio, ollama",
        "(batch: anthropic, openai, openai-compatible)",
        "Harnesses:  api, subprocess, claude_code, codex, gemini_cli (skill_mode: prompt, installed; executor: local, ray)",
        "Metrics:    golden (exact, normalized, token_f1, json_equal, numeric), programmatic (is_valid_json, json_has_keys, matches_regex, contains, not_contains, max_length, json_schema), judge, systemone (",
    ] {
        listed = listed.stdout(predicate::str::contains(says));
    }
}

#[test]
fn an_error_that_quotes_its_cause_shows_the_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let ran = common::evaluate(dir.path());
    assert_eq!(ran.code, Some(2));
    let stderr = ran.stderr;
    assert!(stderr.contains("cannot read config file"), "{stderr}");
    assert_eq!(stderr.matches("it is a folder").count(), 1, "{stderr}");
}

#[test]
fn control_characters_from_data_and_models_reach_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    // A task id, the judge-free golden feedback and the optimizer's rationale all carry
    // escape sequences: a window title, a screen clear and an OSC-8 link.
    let dataset = "{\"id\": \"t\\u001b]0;owned\\u0007\", \"input\": \"x\", \"expected\": \"y\"}\n\
                   {\"id\": \"u\", \"input\": \"x2\", \"expected\": \"y\"}\n\
                   {\"id\": \"v\", \"input\": \"x3\", \"expected\": \"y\"}\n";
    let optimizer = "optimizer_provider: {name: fake, responses: [\"<RATIONALE>Cleared \\u001b[2J the \\u001b]8;;https://evil.example\\u0007screen\\u001b]8;;\\u0007.</RATIONALE><NEW_SKILL_BODY>Answer y.</NEW_SKILL_BODY>\"]}\n";
    let config = write_run(
        dir.path(),
        &format!(
            "skill: skill.md\ndataset: data.jsonl\nprovider: {{name: fake, responses: [\"n\\u001b[31m\"]}}\n{optimizer}optimizer: {{rounds: 1, minibatch_size: 2}}\n"
        ),
        GOOD_SKILL,
        dataset,
    );
    let runs = dir.path().join("runs");
    let evaluate = common::with_config("evaluate", &config).output().unwrap();
    let optimize = common::with_config("optimize", &config)
        .arg("-o")
        .arg(&runs)
        .output()
        .unwrap();
    for (command, out) in [("evaluate", evaluate), ("optimize", optimize)] {
        let printed = common::printed(&out);
        assert!(out.status.success(), "{printed}");
        assert!(
            !printed.contains('\u{1b}') && !printed.contains('\u{7}'),
            "{command} printed a raw control character: {printed:?}"
        );
        assert!(printed.contains("\\u001b"), "{command}: {printed}");
    }
}

/// Asserts that `optimize` of `config` (beside the good skill and dataset) exits 3, says each
/// of `says` on stderr, and stops with `stop_reason` before any round ran.
fn assert_optimize_stops_with_exit_3(config: &str, says: &[&str], stop_reason: &str) {
    let (dir, config) = good_run(config);
    let runs = dir.path().join("runs");
    let ran = common::optimize(&[], &config, &runs);
    let result = runs.join("latest/result.json");
    let result = if result.is_file() {
        common::read_json(&result)
    } else {
        serde_json::Value::Null
    };
    let stderr = ran.stderr;
    assert_eq!(ran.code, Some(3), "{stderr}");
    assert!(says.iter().all(|said| stderr.contains(said)), "{stderr}");
    assert_eq!(result["stop_reason"], stop_reason);
    assert_eq!(result["metadata"]["rounds_run"], 0, "{result}");
}

/// A provider block nobody answers: connection refused on a closed loopback port, one attempt.
const UNREACHABLE: &str = "{name: openai-compatible, model: m, base_url: \"http://127.0.0.1:1/v1\", api_key: k, max_retries: 1}";

#[test]
fn an_evaluation_in_which_every_rollout_failed_exits_3_and_says_so() {
    let (_dir, config) = good_run(&format!(
        "skill: skill.md\ndataset: data.jsonl\nprovider: {UNREACHABLE}\ncache: {{mode: off}}\n"
    ));
    let Ran { code, stderr, .. } = common::evaluate(&config);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("The evaluation measured nothing: no rollout of the evaluation reached its model or program")
            && stderr.contains("127.0.0.1:1"),
        "{stderr}"
    );
}

#[test]
fn an_optimization_whose_target_is_unreachable_stops_at_the_baseline_with_exit_3() {
    assert_optimize_stops_with_exit_3(
        &format!(
            "skill: skill.md\ndataset: data.jsonl\nprovider: {UNREACHABLE}\noptimizer_provider: {{name: fake, responses: [\"<NEW_SKILL_BODY>y</NEW_SKILL_BODY>\"]}}\noptimizer: {{rounds: 5}}\ncache: {{mode: off}}\n"
        ),
        &["no rollout of the baseline", "run the same command again"],
        "rollouts_failed",
    );
}

#[test]
fn an_optimization_whose_optimizer_is_unreachable_stops_after_one_round_with_exit_3() {
    assert_optimize_stops_with_exit_3(
        &format!(
            // The target answers wrong, so there is a failure for the optimizer to read.
            "skill: skill.md\ndataset: data.jsonl\nval_fraction: 0.5\nprovider: {{name: fake, responses: [n]}}\noptimizer_provider: {UNREACHABLE}\noptimizer: {{rounds: 5, patience: 5, minibatch_size: 1}}\ncache: {{mode: off}}\n"
        ),
        &["no request reached the optimizer model"],
        "optimizer_unreachable",
    );
}

#[test]
fn a_skill_or_dataset_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.jsonl");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for (config, named) in [
        ("skill: /dev/zero\ndataset: data.jsonl\n", "/dev/zero"),
        ("skill: skill.md\ndataset: fifo.jsonl\n", "fifo.jsonl"),
    ] {
        let path = write_run(dir.path(), config, GOOD_SKILL, GOOD_DATA);
        let started = std::time::Instant::now();
        let Ran { code, stderr, .. } = common::evaluate(&path);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains(named) && stderr.contains("not a regular file"),
            "{stderr}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
}

#[test]
fn a_dataset_that_is_not_utf8_names_the_line_and_the_fix() {
    let (dir, config) = run_folder(FAKE, GOOD_SKILL, "");
    std::fs::write(
        dir.path().join("data.jsonl"),
        b"{\"input\": \"x\", \"expected\": \"y\"}\n{\"input\": \"caf\xe9\", \"expected\": \"y\"}\n",
    )
    .unwrap();
    let Ran { code, stderr, .. } = common::evaluate(&config);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("data.jsonl line 2") && stderr.contains("save the file as UTF-8"),
        "{stderr}"
    );
}

#[test]
fn a_skill_folder_is_taken_where_a_skill_file_is() {
    let (dir, config) = good_run(FAKE);
    let evaluate_skill = |folder: &str| {
        bin()
            .args(["evaluate", "--skill"])
            .arg(dir.path().join(folder))
            .arg("-c")
            .arg(&config)
            .assert()
    };
    std::fs::create_dir(dir.path().join("s")).unwrap();
    std::fs::write(dir.path().join("s/SKILL.md"), GOOD_SKILL).unwrap();
    evaluate_skill("s")
        .success()
        .stdout(predicate::str::starts_with("Score: 1.000 over 2 tasks"));
    // A folder without a SKILL.md says so, not "Is a directory".
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    evaluate_skill("empty")
        .code(2)
        .stderr(predicate::str::contains(
            "it is a folder, not a regular file",
        ))
        .stderr(predicate::str::contains("Is a directory").not());
}

#[test]
fn zero_edits_per_round_is_refused_like_a_zero_minibatch() {
    evaluate_refuses(
        &format!("{FAKE}optimizer: {{max_edits_per_round: 0}}\n"),
        GOOD_SKILL,
        GOOD_DATA,
        &["optimizer.max_edits_per_round", "use 1 or more"],
    );
}

#[test]
fn an_emit_target_that_cannot_be_written_is_refused_before_the_run() {
    let (dir, config) = good_run(FAKE);
    let file = dir.path().join("dist");
    std::fs::write(&file, "a file").unwrap();
    let runs = dir.path().join("runs");
    let emit_to = |target: &Path, says: &str| {
        common::with_config("optimize", &config)
            .arg("-o")
            .arg(&runs)
            .arg("--emit")
            .arg(target)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    };
    emit_to(&file, "is a file, not a folder");
    assert!(!runs.exists(), "no run started");
    emit_to(&dir.path().join("data.jsonl"), "is the run's dataset");
}

#[test]
fn a_file_named_latest_in_the_runs_folder_is_left_alone_and_the_warning_is_plain_text() {
    let (dir, config) = good_run(&format!(
        "{FAKE}optimizer_provider: {{name: fake, responses: [\"<NEW_SKILL_BODY>y</NEW_SKILL_BODY>\"]}}\noptimizer: {{rounds: 1}}\n"
    ));
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    std::fs::write(runs.join("latest"), "my notes").unwrap();
    let Ran { code, stderr, .. } = common::optimize(&[], &config, &runs);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(runs.join("latest")).unwrap(),
        "my notes"
    );
    assert!(
        stderr.contains("is a file, not the link to the newest run"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes on a pipe: {stderr:?}"
    );
}
