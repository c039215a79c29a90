//! Whole runs from a config file: budgets stop a run cleanly and say why, the held-out test
//! split is scored once after the search, and the run folder holds the config as it ran
//! without secrets. Every model is the scripted fake, so nothing leaves the machine.

use std::path::{Path, PathBuf};

use serde_json::Value;
use skill_factory::run::{self, RunOptions, RunOutcome};
use skill_factory::session::{Session, SessionOptions};

/// Writes a small run: 10 tasks whose target answers right only for a body that says
/// `PRECISE`, and an optimizer that proposes such a body.
fn fixture(dir: &Path, extra: &str) -> PathBuf {
    std::fs::write(
        dir.join("seed.md"),
        "---\nname: echo\ndescription: Answer questions.\n---\n\nAnswer vaguely.\n",
    )
    .unwrap();
    let data: String = (0..10)
        .map(|i| {
            format!(
                "{{\"id\": \"t{i}\", \"input\": \"question {i}\", \"expected\": \"answer {i}\"}}\n"
            )
        })
        .collect();
    std::fs::write(dir.join("data.jsonl"), data).unwrap();
    let mut target = String::from("rules:\n");
    for i in 0..10 {
        target.push_str(&format!(
            "  - {{system_contains: PRECISE, user_contains: \"question {i}\", reply: \"answer {i}\"}}\n"
        ));
    }
    target.push_str("responses: [\"no idea\"]\n");
    std::fs::write(dir.join("target.yaml"), target).unwrap();
    std::fs::write(
        dir.join("optimizer.yaml"),
        "rules:\n  - user_contains: \"<NEW_SKILL_BODY>\"\n    reply: \"<RATIONALE>Be precise.</RATIONALE><NEW_SKILL_BODY>Be PRECISE.</NEW_SKILL_BODY>\"\n",
    )
    .unwrap();
    let config = format!(
        "skill: seed.md\ndataset: data.jsonl\nval_fraction: 0.3\nseed: 1\n\
         provider: {{name: fake, script: target.yaml}}\n\
         optimizer_provider: {{name: fake, script: optimizer.yaml, api_key: sk-secret-value-123}}\n\
         metric: {{golden: {{mode: exact}}}}\n{extra}"
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

async fn run(config: &Path) -> RunOutcome {
    let options = SessionOptions {
        budgeted: true,
        ..SessionOptions::default()
    };
    let session = Session::open(config, options).unwrap();
    let runs_dir = config.parent().unwrap().join("runs");
    run::optimize(
        &session,
        RunOptions {
            runs_dir: Some(runs_dir),
            ..RunOptions::default()
        },
    )
    .await
    .unwrap()
}

fn result_json(outcome: &RunOutcome) -> Value {
    serde_json::from_str(&std::fs::read_to_string(outcome.folder.file("result.json")).unwrap())
        .unwrap()
}

fn report(outcome: &RunOutcome) -> String {
    std::fs::read_to_string(outcome.folder.file("report.md")).unwrap()
}

fn events(outcome: &RunOutcome) -> Vec<Value> {
    std::fs::read_to_string(outcome.folder.file("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A run of the fixture with `budget` as its `optimizer.budget`; with `priced`, every token
/// of the target costs a dollar.
async fn stopped_by(budget: &str, priced: bool) -> (tempfile::TempDir, RunOutcome) {
    let tmp = tempfile::tempdir().unwrap();
    let extra =
        format!("optimizer: {{rounds: 5, minibatch_size: 2, patience: 5, budget: {{{budget}}}}}\n");
    let config = fixture(tmp.path(), &extra);
    if priced {
        let text = std::fs::read_to_string(&config).unwrap().replace(
            "provider: {name: fake, script: target.yaml}",
            "provider: {name: fake, script: target.yaml, pricing: {input_per_mtok: 1000000, output_per_mtok: 1000000}}",
        );
        std::fs::write(&config, text).unwrap();
    }
    let outcome = run(&config).await;
    (tmp, outcome)
}

fn assert_budget_stop(outcome: &RunOutcome, limit: &str) {
    let result = result_json(outcome);
    assert_eq!(result["stop_reason"], "budget", "{result}");
    let detail = result["stop_detail"].as_str().unwrap();
    assert!(detail.contains(&format!("{limit} reached")), "{detail}");
    let report = report(outcome);
    assert!(
        report.contains("## Why the run stopped\n\n**budget**: budget limit reached"),
        "{report}"
    );
    assert!(report.contains(limit), "{report}");
    assert!(outcome.folder.file("best_skill.md").is_file());
}

#[tokio::test]
async fn max_calls_stops_the_run_at_exactly_that_many_calls() {
    let (_tmp, outcome) = stopped_by("max_calls: 5", false).await;
    assert_budget_stop(&outcome, "max_calls");
    assert_eq!(result_json(&outcome)["usage"]["total"]["calls"], 5);
    // The baseline (3 val calls) finished; the round's minibatch took the last 2 calls, so its
    // proposals were refused and nothing was accepted.
    assert_eq!(outcome.result.history.len(), 1);
}

#[tokio::test]
async fn max_calls_stops_gepa_and_skillopt_too_with_a_readable_run_folder() {
    for name in ["gepa", "skillopt"] {
        let tmp = tempfile::tempdir().unwrap();
        let extra = format!(
            "optimizer: {{name: {name}, rounds: 5, minibatch_size: 2, patience: 5, budget: {{max_calls: 7}}}}\n"
        );
        let outcome = run(&fixture(tmp.path(), &extra)).await;
        assert_budget_stop(&outcome, "max_calls");
        let result = result_json(&outcome);
        assert_eq!(result["optimizer"], name);
        assert_eq!(result["usage"]["total"]["calls"], 7, "{name}: {result}");
        assert_eq!(result["metadata"]["backend"], name);
    }
}

#[tokio::test]
async fn max_metric_calls_ends_every_optimizers_search_between_steps() {
    for name in ["llm_loop", "gepa", "skillopt"] {
        let tmp = tempfile::tempdir().unwrap();
        // The baseline scores the 3 validation tasks, which spends the budget: no step runs.
        let extra = format!(
            "optimizer: {{name: {name}, rounds: 5, minibatch_size: 2, patience: 5, max_metric_calls: 3}}\n"
        );
        let outcome = run(&fixture(tmp.path(), &extra)).await;
        let result = result_json(&outcome);
        assert_eq!(result["stop_reason"], "metric_calls", "{name}: {result}");
        let detail = result["stop_detail"].as_str().unwrap();
        assert!(detail.starts_with("3 rollouts scored"), "{name}: {detail}");
        assert_eq!(outcome.result.history.len(), 1, "{name}: the seed only");
        assert_eq!(result["usage"]["total"]["calls"], 3, "{name}: {result}");
    }
}

#[tokio::test]
async fn a_selection_split_is_carved_from_train_and_only_scored_for_the_final_pick() {
    let tmp = tempfile::tempdir().unwrap();
    let extra = "selection_fraction: 0.2\noptimizer: {rounds: 2, minibatch_size: 2}\n";
    let outcome = run(&fixture(tmp.path(), extra)).await;
    let result = result_json(&outcome);
    let selection = &result["metadata"]["selection"];
    assert_eq!(selection["tasks"], 2, "{result}");
    assert_eq!(
        selection["picked"],
        result["metadata"]["selection"]["candidates"][0]["candidate"]
    );
    assert_eq!(result["best_skill"]["body"], "Be PRECISE.");
    // 10 tasks: 3 validation, 2 selection, 5 train.
    assert_eq!(outcome.info.splits, (5, 3, 0));
    let rollouts = |split: &str| -> Vec<String> {
        events(&outcome)
            .iter()
            .filter(|e| e["event"] == "rollout" && e["split"] == split)
            .map(|e| e["task_id"].as_str().unwrap().to_string())
            .collect()
    };
    let picked_on = rollouts("selection");
    assert!(!picked_on.is_empty());
    for split in ["train", "val"] {
        assert!(
            rollouts(split).iter().all(|t| !picked_on.contains(t)),
            "a selection task was scored on {split}"
        );
    }
    assert!(report(&outcome).contains("## Final pick on the selection split"));
}

#[tokio::test]
async fn a_seed_folder_with_references_gives_a_best_skill_folder_with_them() {
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture(tmp.path(), "optimizer: {rounds: 1, minibatch_size: 2}\n");
    let folder = tmp.path().join("echo");
    std::fs::create_dir_all(folder.join("references")).unwrap();
    std::fs::rename(tmp.path().join("seed.md"), folder.join("SKILL.md")).unwrap();
    std::fs::write(folder.join("references/guide.md"), "How to answer.\n").unwrap();
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("skill: seed.md", "skill: echo/SKILL.md");
    std::fs::write(&config, text).unwrap();
    let outcome = run(&config).await;
    assert_eq!(
        std::fs::read_to_string(outcome.folder.file("best_skill/references/guide.md")).unwrap(),
        "How to answer.\n"
    );
    let best = std::fs::read_to_string(outcome.folder.file("best_skill/SKILL.md")).unwrap();
    assert_eq!(
        best,
        std::fs::read_to_string(outcome.folder.file("best_skill.md")).unwrap()
    );
    let result = result_json(&outcome);
    assert_eq!(
        result["best_skill"]["files"]["references/guide.md"],
        "How to answer.\n"
    );
}

#[tokio::test]
async fn max_tokens_stops_the_run_once_that_many_tokens_are_used() {
    let (_tmp, outcome) = stopped_by("max_tokens: 40", false).await;
    assert_budget_stop(&outcome, "max_tokens");
    let spent = result_json(&outcome)["usage"]["total"]["input_tokens"]
        .as_u64()
        .unwrap()
        + result_json(&outcome)["usage"]["total"]["output_tokens"]
            .as_u64()
            .unwrap();
    assert!(spent >= 40, "{spent}");
}

#[tokio::test]
async fn max_usd_stops_the_run_using_the_configured_price() {
    let (_tmp, outcome) = stopped_by("max_usd: 10", true).await;
    assert_budget_stop(&outcome, "max_usd");
    let cost = result_json(&outcome)["cost_usd"].as_f64().unwrap();
    assert!(cost >= 10.0, "{cost}");
}

#[tokio::test]
async fn max_minutes_stops_the_run_once_the_time_is_up() {
    let (_tmp, outcome) = stopped_by("max_minutes: 0.000001", false).await;
    assert_budget_stop(&outcome, "max_minutes");
    assert_eq!(result_json(&outcome)["usage"]["total"]["calls"], 0);
}

#[tokio::test]
async fn the_test_split_is_scored_once_after_the_search_and_reported_with_the_gap() {
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture(
        tmp.path(),
        "test_fraction: 0.2\noptimizer: {rounds: 2, minibatch_size: 2, patience: 2}\n",
    );
    let outcome = run(&config).await;
    let events = events(&outcome);
    let stopped = events.iter().position(|e| e["event"] == "stopped").unwrap();
    let test_rollouts: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["event"] == "rollout" && e["split"] == "test")
        .map(|(i, _)| i)
        .collect();
    // Seed and best differ: 2 test tasks each, all after the search ended.
    assert_eq!(test_rollouts.len(), 4);
    assert!(test_rollouts.iter().all(|i| *i > stopped));
    let test_ids: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "rollout" && e["split"] == "test")
        .map(|e| e["task_id"].as_str().unwrap())
        .collect();
    assert!(
        events
            .iter()
            .filter(|e| e["event"] == "rollout" && e["split"] != "test")
            .all(|e| !test_ids.contains(&e["task_id"].as_str().unwrap()))
    );
    let result = result_json(&outcome);
    assert_eq!(result["test"]["size"], 2);
    assert_eq!(result["test"]["seed_score"], 0.0);
    assert_eq!(result["test"]["best_score"], 1.0);
    assert_eq!(result["test"]["val_test_gap"], 0.0);
    assert_eq!(result["splits"]["test"], 2);
    // tasks.jsonl names every task once with its split, in the split sizes of result.json.
    let tasks: Vec<Value> = std::fs::read_to_string(outcome.folder.file("tasks.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    for split in ["train", "val", "test"] {
        let count = tasks.iter().filter(|t| t["split"] == split).count();
        assert_eq!(
            Some(count as u64),
            result["splits"][split].as_u64(),
            "{split}"
        );
    }
    let listed: Vec<&str> = tasks
        .iter()
        .filter(|t| t["split"] == "test")
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert!(test_ids.iter().all(|id| listed.contains(id)), "{tasks:?}");
    assert!(tasks.iter().all(|t| t["input"].is_string()));
    let report = report(&outcome);
    assert!(report.contains("## Held-out test"), "{report}");
    assert!(report.contains("| best | 1.000 | 1.000 |"), "{report}");
}

#[tokio::test]
async fn the_config_snapshot_has_no_api_key_and_runs_again_from_anywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture(tmp.path(), "optimizer: {rounds: 1, minibatch_size: 2}\n");
    let outcome = run(&config).await;
    let snapshot = outcome.folder.file("config.yaml");
    let text = std::fs::read_to_string(&snapshot).unwrap();
    assert!(!text.contains("sk-secret-value-123"), "{text}");
    assert!(!text.contains("api_key"), "{text}");
    let reloaded = Session::open(&snapshot, SessionOptions::default()).unwrap();
    assert_eq!(reloaded.dataset.len(), 10);
    assert_eq!(reloaded.skill.name, "echo");
}

#[tokio::test]
async fn a_failing_judge_is_dropped_for_the_task_and_the_reason_recorded_not_a_crashed_run() {
    let tmp = tempfile::tempdir().unwrap();
    // The judge's script answers nothing it is asked: every judge call fails.
    std::fs::write(
        tmp.path().join("judge.yaml"),
        "rules:\n  - {user_contains: \"no judge prompt says this\", reply: \"{}\"}\n",
    )
    .unwrap();
    let config = fixture(
        tmp.path(),
        "judge_provider: {name: fake, script: judge.yaml}\n\
         optimizer: {rounds: 1, minibatch_size: 2}\n\
         noise: {regime: deterministic}\n",
    );
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "metric: {golden: {mode: exact}}",
        "metric: {golden: {mode: exact}, judge: {criteria: [{name: correctness}]}}",
    );
    std::fs::write(&config, text).unwrap();
    let outcome = run(&config).await;
    assert_eq!(result_json(&outcome)["stop_reason"], "rounds");
    // The golden metric alone decides: the PRECISE body is perfect.
    assert_eq!(outcome.result.best_score, 1.0);
    let rollouts = std::fs::read_to_string(outcome.folder.file("rollouts.jsonl")).unwrap();
    let first: Value = serde_json::from_str(rollouts.lines().next().unwrap()).unwrap();
    let feedback = first["feedback"].as_str().unwrap();
    assert!(
        feedback.contains("[llm_judge] skipped: judge failed: fake provider: no rule matched"),
        "{feedback}"
    );
    // One failed judge call per rollout, each booked as a failed call of the judge role.
    let usage = &result_json(&outcome)["usage"];
    assert_eq!(usage["judge"]["failed_calls"], usage["target"]["calls"]);
    assert_eq!(usage["judge"]["failed_calls"], 8);
}

#[tokio::test]
async fn failed_rollouts_are_counted_in_the_result_and_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture(tmp.path(), "optimizer: {rounds: 1, minibatch_size: 2}\n");
    // Without the fallback answer the vague seed gets no reply at all: each of its rollouts
    // (3 validation tasks, 2 of the minibatch) fails; the PRECISE body's all succeed.
    let target = std::fs::read_to_string(tmp.path().join("target.yaml")).unwrap();
    std::fs::write(
        tmp.path().join("target.yaml"),
        target.replace("responses: [\"no idea\"]\n", ""),
    )
    .unwrap();
    let outcome = run(&config).await;
    let result = result_json(&outcome);
    assert_eq!(result["failed_rollouts"], 5, "{result:#}");
    let rollouts = std::fs::read_to_string(outcome.folder.file("rollouts.jsonl")).unwrap();
    let failed = rollouts
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).unwrap()["error"].is_string())
        .count();
    assert_eq!(failed, 5);
    assert!(
        report(&outcome)
            .contains("Failed rollouts: 5 (scored 0; each one's reason is in rollouts.jsonl)."),
        "{}",
        report(&outcome)
    );
    assert_eq!(outcome.result.best_score, 1.0);
}
