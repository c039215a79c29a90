//! Building process harnesses and the command metric from a config file: no model client
//! (and so no key) for a role the run does not use, `.env` values and paths handed to the
//! child, and a whole evaluation through a subprocess harness.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use skill_factory::evaluate::{Quiet, evaluate};
use skill_factory::session::{Session, SessionOptions};
use skill_factory::{harness, metric};

const SKILL: &str = "---\nname: echo\ndescription: Echoes.\n---\nReturn the input unchanged.\n";
const DATA: &str = "{\"id\": \"t0\", \"input\": \"input 0\", \"expected\": \"input 0\"}\n{\"id\": \"t1\", \"input\": \"input 1\", \"expected\": \"input 1\"}\n";

/// Providers that cannot be built: a run that builds one fails with "Unknown provider".
const UNBUILDABLE_ROLES: &str =
    "provider: {name: no-such-provider}\njudge_provider: {name: no-such-provider}\n";

fn project(config_tail: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("skill.md"), SKILL).unwrap();
    std::fs::write(dir.path().join("data.jsonl"), DATA).unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!("skill: skill.md\ndataset: data.jsonl\n{config_tail}"),
    )
    .unwrap();
    (dir, config)
}

/// [`evaluate_all`] of a [`project`] with `config_tail`.
async fn evaluate_project(config_tail: &str) -> skill_factory_core::Evaluation {
    let (_dir, config) = project(config_tail);
    let session = Session::open(&config, SessionOptions::default()).unwrap();
    evaluate_all(&session).await
}

async fn evaluate_all(session: &Session) -> skill_factory_core::Evaluation {
    evaluate(
        Arc::new(session.skill.clone()),
        &session.dataset.tasks,
        1,
        harness::from_config(session).unwrap(),
        metric::from_config(session).unwrap(),
        4,
        Arc::new(Quiet),
    )
    .await
}

#[tokio::test]
async fn process_harnesses_with_local_metrics_build_no_model_client() {
    let metrics = "metric:\n  programmatic: {checks: [{contains: input}]}\n  command: {command: [sh, -c, \"cat >/dev/null; echo '{\\\"score\\\": 1}'\"]}\n";
    for harness in [
        "{type: subprocess, command: [cat]}",
        "{type: claude_code}",
        "{type: codex, skill_mode: installed}",
        "{type: gemini_cli, model: gemini-2.5-flash}",
    ] {
        let (_dir, config) = project(&format!("{UNBUILDABLE_ROLES}harness: {harness}\n{metrics}"));
        let session = Session::open(&config, SessionOptions::default()).unwrap();
        let built = harness::from_config(&session);
        assert!(
            built.is_ok(),
            "{harness}: {:?}",
            built.err().map(|e| e.to_string())
        );
        let metric = metric::from_config(&session);
        assert!(
            metric.is_ok(),
            "{harness}: {:?}",
            metric.err().map(|e| e.to_string())
        );
    }
}

#[tokio::test]
async fn the_api_harness_is_the_one_that_needs_the_target_client() {
    let (_dir, config) = project(&format!("{UNBUILDABLE_ROLES}harness: {{type: api}}\n"));
    let session = Session::open(&config, SessionOptions::default()).unwrap();
    let error = harness::from_config(&session)
        .err()
        .expect("the api harness builds the target client")
        .to_string();
    assert!(
        error.contains("Unknown provider 'no-such-provider'"),
        "{error}"
    );
}

#[tokio::test]
async fn a_subprocess_echo_harness_scores_a_perfect_baseline_without_any_model() {
    let evaluation = evaluate_project(&format!(
        "{UNBUILDABLE_ROLES}harness: {{type: subprocess, command: [cat]}}\nmetric: {{golden: {{mode: exact}}}}\n"
    ))
    .await;
    assert_eq!(evaluation.score(), 1.0);
    assert_eq!(
        evaluation.items[0].rollout.metadata["harness"],
        "subprocess"
    );
}

#[tokio::test]
async fn metrics_combine_in_the_fixed_order_with_the_command_metric_last() {
    let evaluation = evaluate_project(
        "harness: {type: subprocess, command: [cat]}\nmetric:\n  command: {command: [sh, -c, \"cat >/dev/null; echo '{\\\"score\\\": 0.5, \\\"feedback\\\": \\\"half\\\"}'\"], weight: 2}\n  golden: {mode: exact}\n",
    )
    .await;
    let item = &evaluation.items[0];
    assert!((item.score() - (1.0 + 2.0 * 0.5) / 3.0).abs() < 1e-12);
    assert_eq!(
        item.result.feedback,
        "[golden] score 1.00: [exact] exact match. expected: 'input 0'; got: 'input 0'\n[command] score 0.50: half"
    );
}

#[tokio::test]
async fn a_command_string_runs_split_into_words_not_characters() {
    let evaluation = evaluate_project(
        "harness: {type: subprocess, command: \"printf '%s|%s' 'two words' {input}\", input_via: arg}\n",
    )
    .await;
    assert_eq!(evaluation.items[0].rollout.output, "two words|input 0");
}

#[tokio::test]
async fn children_get_dotenv_values_under_their_own_env_and_relative_cwd() {
    let (dir, config) = project(
        "harness:\n  type: subprocess\n  command: [sh, -c, 'printf \"%s %s %s\" \"$SF_PROBE_DOTENV\" \"$SF_PROBE_OWN\" \"$(pwd -P)\"']\n  cwd: work\n  env: {SF_PROBE_OWN: own}\n",
    );
    std::fs::create_dir(dir.path().join("work")).unwrap();
    std::fs::write(
        dir.path().join(".env"),
        "SF_PROBE_DOTENV=from-dotenv\nSF_PROBE_OWN=loses\n",
    )
    .unwrap();
    let session = Session::open(&config, SessionOptions::default()).unwrap();
    let evaluation = evaluate_all(&session).await;
    let work: &Path = &dir.path().join("work").canonicalize().unwrap();
    assert_eq!(
        evaluation.items[0].rollout.output,
        format!("from-dotenv own {}", work.display())
    );
}
