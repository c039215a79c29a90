//! Behaviour of the native `skillopt` optimizer and of its bridge to an external command,
//! offline: edit patches applied and refused (a missing target, a protected section, more
//! edits than the round's limit), refused edits shown to later rounds, the strict gate, and
//! the reference's bridge files and placeholders.

use std::sync::Arc;

use skill_factory::cancel::CancelToken;
use skill_factory::config::{Command, OptimizerConfig};
use skill_factory::optimizer::bridge::Bridge;
use skill_factory::optimizer::{BackendSettings, Optimizer, OptimizerPlan, SkillOpt};

use super::gepa::{Halves, Reflective, Run, search, search_protecting, two_part_seed};

fn config(edit: impl FnOnce(&mut OptimizerConfig)) -> OptimizerConfig {
    let mut config = OptimizerConfig {
        name: "skillopt".into(),
        rounds: 4,
        minibatch_size: 4,
        patience: 2,
        ..OptimizerConfig::default()
    };
    edit(&mut config);
    config
}

async fn skillopt(config: &OptimizerConfig, model: Arc<Reflective>) -> Run {
    skillopt_protecting(config, model, &[]).await
}

/// [`skillopt`] in a run that protects `protected`.
async fn skillopt_protecting(
    config: &OptimizerConfig,
    model: Arc<Reflective>,
    protected: &[&str],
) -> Run {
    let plan = OptimizerPlan::from_config(config).unwrap();
    let BackendSettings::SkillOpt(settings) = plan.backend else {
        panic!("not a skillopt block: {:?}", plan.backend)
    };
    let optimizer = SkillOpt::new(model, plan.shared, settings);
    search_protecting(
        &two_part_seed(),
        &optimizer,
        Arc::new(Halves::default()),
        2,
        CancelToken::new(),
        protected,
    )
    .await
}

/// Adds `EVEN-RULE` while an even task fails, then `ODD-RULE` while an odd one does.
fn one_rule_at_a_time(_: &str, failing: &[u32]) -> Option<String> {
    if failing.iter().any(|n| n % 2 == 0) {
        Some("EVEN-RULE".into())
    } else if failing.iter().any(|n| n % 2 == 1) {
        Some("ODD-RULE".into())
    } else {
        None
    }
}

#[tokio::test]
async fn appended_rules_that_raise_validation_are_kept_until_the_skill_is_perfect() {
    let model = Arc::new(Reflective::new(one_rule_at_a_time));
    let run = skillopt(&config(|_| {}), model.clone()).await;
    let result = &run.result;
    assert_eq!(result.baseline_score, 0.0);
    assert_eq!(result.best_score, 1.0, "{:#?}", result.history);
    assert_eq!(result.stop.as_ref().unwrap().code(), "perfect");
    let accepted: Vec<f64> = result
        .history
        .iter()
        .skip(1)
        .filter(|r| r.accepted)
        .map(|r| r.val_score)
        .collect();
    assert_eq!(accepted, vec![0.5, 1.0]);
    assert_eq!(result.metadata["backend"], "skillopt");
    // Round 2 also keeps what its successes show (the success pass adds a line).
    assert_eq!(result.metadata["edits"]["applied"], 3);
    let prompt = &model.prompts()[0];
    assert!(
        prompt.contains("<EDITS>") && prompt.contains("at most 4 edits"),
        "{prompt}"
    );
}

#[tokio::test]
async fn an_edit_whose_target_is_missing_is_refused_and_shown_to_the_next_round() {
    let replace = Arc::new(Reflective::replying(
        "<RATIONALE>sharpen</RATIONALE>\n<EDITS>[{\"op\": \"replace\", \"target\": \"Handle all tasks.\", \"text\": \"EVEN-RULE\"}]</EDITS>",
    ));
    let run = skillopt(&config(|c| c.rounds = 2), replace.clone()).await;
    assert_eq!(run.result.best_candidate, 0);
    assert!(
        run.result.history[1].note.contains("target text not found"),
        "{:#?}",
        run.result.history
    );
    let later = &replace.prompts()[1];
    assert!(
        later.contains("EDITS ALREADY TRIED AND NOT KEPT")
            && later.contains("target text not found"),
        "{later}"
    );
}

#[tokio::test]
async fn an_edit_inside_a_protected_section_is_refused() {
    let model = || {
        Arc::new(Reflective::replying(
            "<RATIONALE>x</RATIONALE>\n<EDITS>[{\"op\": \"insert_after\", \"target\": \"Handle odd tasks.\", \"text\": \"ODD-RULE\"}]</EDITS>",
        ))
    };
    // The heading with or without its `## `.
    for name in ["## Odd", "Odd"] {
        let run = skillopt_protecting(&config(|c| c.rounds = 1), model(), &[name]).await;
        assert_eq!(run.result.best_candidate, 0, "{name}");
        assert!(
            run.result.history[1]
                .note
                .contains("touches the protected section «## Odd»"),
            "{name}: {:#?}",
            run.result.history
        );
    }
    let unprotected = skillopt(&config(|c| c.rounds = 1), model()).await;
    assert_eq!(unprotected.result.best_candidate, 1);
}

#[tokio::test]
async fn skillopt_refuses_an_edit_that_opens_a_comment_before_a_protected_section() {
    let hide = |text: &str| {
        Arc::new(Reflective::replying(&format!(
            "<RATIONALE>x</RATIONALE>\n<EDITS>[{{\"op\": \"insert_after\", \"target\": \"Handle even tasks.\", \"text\": \"{text}\"}}]</EDITS>"
        )))
    };
    let protected = skillopt_protecting(&config(|c| c.rounds = 1), hide("<!--"), &["Odd"]).await;
    assert_eq!(protected.result.best_candidate, 0);
    let note = &protected.result.history[1].note;
    assert!(
        note.contains("touches the protected section «## Odd»"),
        "{note}"
    );
    // Without protection the open comment is refused all the same; a closed one is text.
    let open = skillopt(&config(|c| c.rounds = 1), hide("EVEN-RULE <!-- draft")).await;
    let note = &open.result.history[1].note;
    assert!(
        note.contains("leaves an HTML comment (`<!--` without `-->`) open"),
        "{note}"
    );
    let closed = skillopt(&config(|c| c.rounds = 1), hide("EVEN-RULE <!-- note -->")).await;
    assert_eq!(
        closed.result.best_candidate, 1,
        "{:#?}",
        closed.result.history
    );
}

#[tokio::test]
async fn edits_beyond_the_rounds_limit_are_dropped_and_counted() {
    let edits: Vec<String> = (0..6)
        .map(|i| format!("{{\"op\": \"append\", \"text\": \"Rule {i}.\"}}"))
        .collect();
    let model = Arc::new(Reflective::replying(&format!(
        "<RATIONALE>many</RATIONALE>\n<EDITS>[{}]</EDITS>",
        edits.join(", ")
    )));
    let run = skillopt(&config(|c| c.rounds = 1), model).await;
    assert_eq!(run.result.metadata["edits"]["over_limit"], 2);
    assert_eq!(run.result.metadata["edits"]["applied"], 4);
}

#[tokio::test]
async fn the_bridge_runs_the_command_with_the_references_files_and_scores_its_skill() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    // The "external optimizer": checks its inputs exist, writes a skill with both rules.
    let script = "test -s {train} && test -s {val} && grep -q Handle {seed} && \
                  printf -- '---\\nname: halves\\ndescription: d\\n---\\n\\nEVEN-RULE ODD-RULE\\n' > {out_dir}/best_skill.md";
    let config = config(|c| {
        c.params.command = Some(Command::Argv(vec!["sh".into(), "-c".into(), script.into()]));
        c.params.work_dir = work.clone();
    });
    let bridge = Bridge::configured(&config.params).expect("a skillopt block with a command");
    let run = search(&bridge, Arc::new(Halves::default()), 2, CancelToken::new()).await;
    assert_eq!(run.result.best_score, 1.0, "{:#?}", run.result);
    assert_eq!(run.result.history[1].note, "SkillOpt best_skill.md");
    assert_eq!(run.result.metadata["backend"], "skillopt");
    let train = std::fs::read_to_string(work.join("train.jsonl")).unwrap();
    assert!(
        train.starts_with("{\"id\": \"t0\", \"input\": \"input 0\", \"expected\": \"MAGIC 0\"}\n"),
        "{train}"
    );
}

#[tokio::test]
async fn a_bridge_command_that_writes_nothing_stops_the_run_and_keeps_the_seed() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(|c| {
        c.params.command = Some(Command::Line("true".into()));
        c.params.work_dir = dir.path().join("work");
    });
    let bridge = Bridge::configured(&config.params).unwrap();
    assert_eq!(bridge.name(), "skillopt");
    let run = search(&bridge, Arc::new(Halves::default()), 2, CancelToken::new()).await;
    let stop = run.result.stop.as_ref().unwrap();
    assert_eq!(stop.code(), "optimizer_unreachable");
    assert!(
        stop.detail().contains("did not produce an output skill"),
        "{}",
        stop.detail()
    );
    assert_eq!(run.result.best_candidate, 0);
}
