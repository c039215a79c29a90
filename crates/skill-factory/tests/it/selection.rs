//! The final pick on a selection split (`selection_fraction`): the search's last bests are
//! scored once on tasks it never saw, and the best there becomes the run's best skill.

use std::sync::Arc;

use serde_json::Value;
use skill_factory::cancel::CancelToken;
use skill_factory::config::GoldenMode;
use skill_factory::metric::GoldenMetric;
use skill_factory::optimizer::{CandidateRecord, OptimizationResult, RunContext};
use skill_factory::run::selection;
use skill_factory_core::{Skill, Task};
use skill_factory_llm::Ledger;

use super::gepa::{Halves, tasks};
use super::llm_loop::Events;

fn record(candidate: usize, body: &str, val: f64, accepted: bool) -> CandidateRecord {
    CandidateRecord {
        iteration: candidate,
        skill: Skill::new("halves", "Answers tasks.", body),
        train_score: val,
        val_score: val,
        accepted,
        candidate: Some(candidate),
        note: String::new(),
        interval: None,
        comparison: None,
    }
}

fn result(history: Vec<CandidateRecord>) -> OptimizationResult {
    let best = history.iter().rev().find(|r| r.accepted).unwrap().clone();
    OptimizationResult {
        best_score: best.val_score,
        best_candidate: best.candidate.unwrap(),
        history,
        ..OptimizationResult::starting("gepa", &best.skill)
    }
}

fn context(cancel: CancelToken) -> RunContext {
    RunContext::new(
        Arc::new(Halves::default()),
        Arc::new(GoldenMetric::new(GoldenMode::Exact)),
        2,
        Arc::new(Ledger::unlimited()),
        cancel,
        Arc::new(Events::default()),
    )
}

#[tokio::test]
async fn the_best_on_the_selection_split_wins_over_the_best_on_validation() {
    // The last best learned the odd rule only, the one before it the even rule only; the
    // selection tasks are all even, so the earlier best is the pick.
    let mut result = result(vec![
        record(0, "Seed.", 0.0, true),
        record(2, "EVEN-RULE", 0.5, true),
        record(3, "EVEN-RULE and more", 0.5, false),
        record(5, "ODD-RULE", 0.75, true),
    ]);
    let even: Vec<Task> = tasks(10..16).into_iter().step_by(2).collect();
    selection::pick(&context(CancelToken::new()), &mut result, &even).await;
    assert_eq!(result.best_skill.body, "EVEN-RULE");
    assert_eq!(result.best_candidate, 2);
    assert_eq!(result.best_score, 0.5, "the pick's validation score");
    let meta = &result.metadata["selection"];
    assert_eq!(meta["picked"], 2);
    assert_eq!(meta["tasks"], 3);
    let scored: Vec<(Value, f64)> = meta["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["candidate"].clone(), c["selection"].as_f64().unwrap()))
        .collect();
    // The three last bests, newest first; the rejected record does not compete.
    assert_eq!(
        scored,
        [(5.into(), 0.0), (2.into(), 1.0), (0.into(), 0.0)],
        "{meta}"
    );
    let report = selection::report(&result);
    assert!(
        report.contains("## Final pick on the selection split"),
        "{report}"
    );
    assert!(report.contains("candidate 2 scored highest"), "{report}");
}

#[tokio::test]
async fn a_tie_on_selection_keeps_the_higher_validation_score() {
    let mut result = result(vec![
        record(0, "Seed.", 0.0, true),
        record(1, "EVEN-RULE", 0.5, true),
        record(4, "EVEN-RULE, ODD-RULE", 1.0, true),
    ]);
    let even: Vec<Task> = tasks(10..14).into_iter().step_by(2).collect();
    selection::pick(&context(CancelToken::new()), &mut result, &even).await;
    assert_eq!(result.best_candidate, 4);
}

#[tokio::test]
async fn a_stopped_run_keeps_the_best_on_validation_and_says_why() {
    let cancel = CancelToken::new();
    cancel.cancel();
    let mut result = result(vec![
        record(0, "EVEN-RULE", 0.0, true),
        record(1, "ODD-RULE", 0.5, true),
    ]);
    selection::pick(&context(cancel), &mut result, &tasks(10..12)).await;
    assert_eq!(result.best_candidate, 1);
    let skipped = result.metadata["selection"]["skipped"].as_str().unwrap();
    assert!(skipped.contains("cancel"), "{skipped}");
    assert!(selection::report(&result).contains("were not scored"));
}
