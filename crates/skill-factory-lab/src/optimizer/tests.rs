use std::sync::Arc;

use serde_json::{Value, json};
use skill_factory_llm::systemone::{AnswerCache, FakeSystemOne};

use super::*;
use crate::answers::lab::LabSettings;
use crate::data::split::Split;
use crate::data::world;
use crate::optimizer::history;
use crate::probe::question::test_bank;

fn quiet(_: usize, _: usize) {}

fn lab() -> Lab {
    Lab::online(
        Arc::new(FakeSystemOne::new("fake-jev", world::responder)),
        Arc::new(AnswerCache::in_memory()),
        LabSettings::default(),
    )
}

fn seed(ids: &[&str], score: &str) -> ProbeSet {
    let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    let mut seed = ProbeSet::new(
        "seed",
        test_bank().subset(&ids).unwrap(),
        crate::probe::score::ScoreExpr::parse(&json!(score)).unwrap(),
        None,
    )
    .unwrap();
    seed.model = "fake-jev".into();
    seed.state_budget = 10_000;
    seed
}

fn objective(constraints: Value) -> Objective {
    crate::optimizer::objective::parsed(json!({"fpr_budget": 0.05, "constraints": constraints}))
        .unwrap()
}

async fn run(seed: &ProbeSet, objective: &Objective, keep: Option<&[String]>) -> Outcome {
    let examples = world::examples(120);
    let splits = world::default_splits(&examples);
    optimize(
        &lab(),
        Inputs {
            seed,
            train: splits.get(Split::Train),
            val: splits.get(Split::Val),
            pool: &test_bank(),
            objective,
            policy: &Policy::threshold(),
            settings: &OptimizerSettings::default(),
            keep,
            proposer: None,
        },
        &quiet,
    )
    .await
    .unwrap()
}

/// A run whose pool is only the seed's questions, with `proposer` answering `replies` in
/// order (the last repeating).
async fn reflective(
    seed: &ProbeSet,
    replies: &[&str],
    settings: OptimizerSettings,
    keep: Option<&[String]>,
) -> (Outcome, usize) {
    let examples = world::examples(120);
    let splits = world::default_splits(&examples);
    let proposer = skill_factory_llm::FakeModel::new("proposer")
        .with_responses(replies.iter().map(|r| r.to_string()).collect());
    let objective = objective(json!([]));
    let outcome = optimize(
        &lab(),
        Inputs {
            seed,
            train: splits.get(Split::Train),
            val: splits.get(Split::Val),
            pool: &Bank::default(),
            objective: &objective,
            policy: &Policy::threshold(),
            settings: &settings,
            keep,
            proposer: Some(&proposer),
        },
        &quiet,
    )
    .await
    .unwrap();
    let asked = proposer.received().len();
    (outcome, asked)
}

const INTENT_PROPOSAL: &str = r#"The misses share bad intent. ```json
{"rationale": "misses share a bad intent the capability question cannot see",
 "frames": {"careful": "You read an item carefully."},
 "questions": [{"id": "intent_check", "question": "Does the item show bad intent?", "true": "Yes: bad intent.", "false": "No: none.", "frames": ["careful"]}]}
```"#;

#[tokio::test]
async fn a_reflective_round_adds_the_proposed_question_and_keeps_it_when_it_wins() {
    let settings = OptimizerSettings {
        rounds: 2,
        patience: 1,
        goal: "find bad intent".into(),
        ..OptimizerSettings::default()
    };
    let seed = seed(&["capability"], "capability");
    let (outcome, asked) = reflective(&seed, &[INTENT_PROPOSAL], settings, None).await;
    let round = &outcome.history[2];
    assert_eq!(round.change, "+1 question");
    assert_eq!(round.new_questions, ["intent_check@careful"]);
    assert!(round.accepted, "{round:?}");
    assert!(outcome.pool.contains("intent_check@careful"));
    assert!(
        outcome.best.score.describe().contains("intent_check"),
        "{}",
        outcome.best.score.describe()
    );
    let prompt = round.prompt.as_deref().unwrap();
    assert!(prompt.starts_with("GOAL: find bad intent\n"), "{prompt}");
    assert!(
        prompt.contains("SYSTEM-LEVEL CAUSES") && prompt.contains("P(true): capability="),
        "{prompt}"
    );
    assert!(asked >= 1);
}

#[tokio::test]
async fn a_proposal_that_only_raises_the_state_budget_is_a_round_of_its_own() {
    let settings = OptimizerSettings {
        rounds: 1,
        max_state_budget: Some(8000),
        ..OptimizerSettings::default()
    };
    let mut seed = seed(&["intent@reviewer", "lure"], "intent@reviewer");
    seed.state_budget = 1000;
    let (outcome, _) = reflective(
        &seed,
        &[r#"{"rationale": "misses were never sent", "pipeline": {"state_budget": 5000}}"#],
        settings,
        Some(&[]),
    )
    .await;
    let last = outcome.history.last().unwrap();
    assert_eq!(last.change, "state budget 1,000 -> 5,000", "{last:?}");
    assert!(last.accepted, "{last:?}");
    assert_eq!(outcome.best.state_budget, 5000);
}

#[tokio::test]
async fn unusable_replies_are_refused_rounds_until_patience_runs_out() {
    let settings = OptimizerSettings {
        rounds: 5,
        patience: 2,
        ..OptimizerSettings::default()
    };
    let (outcome, asked) = reflective(
        &seed(&["capability"], "capability"),
        &["not json"],
        settings,
        None,
    )
    .await;
    let proposals: Vec<&Round> = outcome
        .history
        .iter()
        .filter(|r| r.change == "proposal")
        .collect();
    assert_eq!(proposals.len(), 2);
    assert_eq!(asked, 2);
    for round in proposals {
        assert!(!round.accepted);
        assert_eq!(
            round.rationale,
            "unusable proposal: no JSON object in the reply"
        );
        assert_eq!(round.raw_reply.as_deref(), Some("not json"));
        let record = history::record(round);
        assert_eq!(record.raw_reply.as_deref(), Some("not json"));
        assert!(record.state_budget.is_none());
    }
}

#[tokio::test]
async fn selection_alone_finds_the_intent_question_fitted_on_train() {
    let outcome = run(
        &seed(&["capability"], "capability"),
        &objective(json!([{"split": "val", "max_fpr": 0.1}])),
        None,
    )
    .await;
    assert_eq!(outcome.history[0].change, "seed");
    assert_eq!(outcome.history[1].change, "selection");
    assert!(
        outcome.history[1].accepted,
        "{:?}",
        outcome.history[1].reasons
    );
    assert!(
        outcome
            .best
            .score_ids()
            .contains(&"intent@reviewer".to_string())
    );
    let recall = |r: &Reports| r[&Split::Val].rates(None).unwrap().recall();
    assert!(recall(&outcome.after) - recall(&outcome.before) > 0.5);
    assert_eq!(outcome.best.calibration["fitted_on"], "train");
    assert_eq!(outcome.best.pinned_version.as_deref(), Some("fake-jev"));
    assert!(
        outcome.seed.threshold.is_some(),
        "the seed's threshold is fitted"
    );
    assert!(!outcome.stats.is_empty() && !outcome.front.is_empty());
    assert_eq!(
        outcome.stats[0].qid, "intent@reviewer",
        "best training AUC first"
    );
}

#[tokio::test]
async fn constraints_refuse_better_recall_and_keep_the_seed() {
    let seed = seed(&["capability"], "capability");
    let outcome = run(
        &seed,
        &objective(json!([{"split": "val", "max_fpr": -1}])),
        None,
    )
    .await;
    let round = &outcome.history[1];
    assert!(!round.accepted);
    assert!(
        round
            .reasons
            .iter()
            .any(|r| r.contains("false-positive rate")),
        "{:?}",
        round.reasons
    );
    assert_eq!(outcome.best.score, seed.score);
}

#[tokio::test]
async fn kept_questions_stay_in_every_candidate_and_are_never_selected() {
    // The seed bank has noise, which its score does not read: it is kept for policies.
    let outcome = run(
        &seed(&["capability", "noise"], "capability"),
        &objective(json!([])),
        None,
    )
    .await;
    assert!(outcome.best.bank.contains("noise"));
    assert!(!outcome.best.score_ids().contains(&"noise".to_string()));
}

#[tokio::test]
async fn the_optimizer_needs_train_and_val_and_checks_its_settings() {
    let examples = world::examples(30);
    let seed = seed(&["capability"], "capability");
    let error = optimize(
        &lab(),
        Inputs {
            seed: &seed,
            train: &examples,
            val: &[],
            pool: &test_bank(),
            objective: &Objective::default(),
            policy: &Policy::threshold(),
            settings: &OptimizerSettings::default(),
            keep: None,
            proposer: None,
        },
        &quiet,
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("train and val"), "{error}");
    let zero = serde_json::from_value(json!({"patience": 0})).unwrap();
    let error = OptimizerSettings::from_file(Some(zero)).unwrap_err();
    assert_eq!(error.key, "optimizer.patience");
    assert!(error.message.contains("at least 1, not 0"), "{error}");
}

#[tokio::test]
async fn answers_from_two_versions_are_counted_and_the_most_frequent_is_pinned() {
    let cache = Arc::new(AnswerCache::in_memory());
    let lab_serving = |version: &str| {
        Lab::online(
            Arc::new(FakeSystemOne::new("fake-jev", world::responder).serving(version)),
            Arc::clone(&cache),
            LabSettings::default(),
        )
    };
    let examples = world::examples(120);
    let splits = world::default_splits(&examples);
    let seed = seed(&["capability"], "capability");
    let objective = Objective::default();
    let policy = Policy::threshold();
    let settings = OptimizerSettings::default();
    let inputs = |pool| Inputs {
        seed: &seed,
        train: splits.get(Split::Train),
        val: splits.get(Split::Val),
        pool,
        objective: &objective,
        policy: &policy,
        settings: &settings,
        keep: None,
        proposer: None,
    };
    // The seed's question is answered by one version, the pool's three others later by
    // another: a threshold fitted now reads both.
    let first = optimize(&lab_serving("jev-1.13.0"), inputs(&seed.bank), &quiet)
        .await
        .unwrap();
    assert_eq!(first.served.keys().collect::<Vec<_>>(), ["jev-1.13.0"]);
    let pool = test_bank();
    let second = optimize(&lab_serving("jev-1.14.0"), inputs(&pool), &quiet)
        .await
        .unwrap();
    assert_eq!(second.served.len(), 2, "{:?}", second.served);
    assert_eq!(second.served["jev-1.14.0"], 3 * second.served["jev-1.13.0"]);
    assert_eq!(second.best.pinned_version.as_deref(), Some("jev-1.14.0"));
}

#[tokio::test]
async fn round_records_serialize_with_their_reports() {
    let outcome = run(
        &seed(&["capability"], "capability"),
        &Objective::default(),
        None,
    )
    .await;
    let record = serde_json::to_value(history::record(&outcome.history[0])).unwrap();
    assert_eq!(record["round"], 0);
    assert!(
        record["reports"]["train"]["levels"]["flag"]["tp"]
            .as_u64()
            .is_some()
    );
    let text = serde_json::to_string(
        &outcome
            .history
            .iter()
            .map(history::record)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(text.contains("\"change\":\"selection\""), "{text}");
}
