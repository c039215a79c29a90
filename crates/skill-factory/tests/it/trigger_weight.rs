//! A skill-mode run that carries a trigger set (`trigger: {dataset, weight}`) gates every
//! edit on the weighted score, so an edit that helps the tasks by breaking the description
//! is refused where the plain mean over tasks and queries would keep it. The harness is its
//! own noise-free twin: a task is right when the body holds its group's rule, a query when
//! the description still says what the skill reads.

use std::sync::Arc;

use async_trait::async_trait;
use skill_factory::cancel::CancelToken;
use skill_factory::config::{GoldenMode, NoiseConfig, RegimeSetting, RunConfig};
use skill_factory::harness::Harness;
use skill_factory::metric::GoldenMetric;
use skill_factory::noise::Noise;
use skill_factory::optimizer::gate::{Gate, Side};
use skill_factory::optimizer::{NoEvents, RunContext};
use skill_factory_core::trigger::{SHOULD_TRIGGER, beside};
use skill_factory_core::{Rollout, Skill, Task};
use skill_factory_llm::Ledger;

/// Tasks `t<i>` are right when the body holds `RULE <i mod 2>`; queries are right (the agent
/// loaded the skill) while the description says "receipts".
struct Twin;

#[async_trait]
impl Harness for Twin {
    fn name(&self) -> &str {
        "twin"
    }

    async fn run_sample(&self, skill: &Skill, task: &Task, _sample: u32) -> Rollout {
        let right = if task.metadata.contains_key(SHOULD_TRIGGER) {
            skill.description.contains("receipts")
        } else {
            let group = task.id.trim_start_matches('t').parse::<usize>().unwrap() % 2;
            skill.body.contains(&format!("RULE {group}"))
        };
        Rollout::success(&task.id, if right { "right" } else { "wrong" })
    }
}

/// Twelve tasks, then four queries that should load the skill.
fn data(weight: Option<f64>) -> Vec<Task> {
    let task = |id: String| Task::new(id, "input").with_expected("right");
    let tasks: Vec<Task> = (0..12).map(|i| task(format!("t{i}"))).collect();
    let queries: Vec<Task> = (0..4)
        .map(|i| {
            let mut query = task(format!("q{i}"));
            query
                .metadata
                .insert(SHOULD_TRIGGER.into(), serde_json::Value::Bool(true));
            query
        })
        .collect();
    match weight {
        Some(weight) => beside(tasks, queries, weight),
        None => tasks.into_iter().chain(queries).collect(),
    }
}

fn context(regime: RegimeSetting) -> RunContext {
    let mut config: RunConfig = serde_saphyr::from_str("skill: s.md\ndataset: d.jsonl\n").unwrap();
    config.noise = NoiseConfig {
        regime,
        ..NoiseConfig::default()
    };
    RunContext::new(
        Arc::new(Twin),
        Arc::new(GoldenMetric::new(GoldenMode::Exact)),
        16,
        Arc::new(Ledger::unlimited()),
        CancelToken::new(),
        Arc::new(NoEvents),
    )
    .with_noise(Noise::of(&config))
}

/// Whether the gate keeps `challenger` over `incumbent` on `tasks`.
async fn kept(
    regime: RegimeSetting,
    tasks: &[Task],
    incumbent: &Skill,
    challenger: &Skill,
) -> bool {
    let context = context(regime);
    let scored = context.evaluate(incumbent, tasks, 0, 0, "val").await;
    let known: Vec<Vec<f64>> = scored
        .evaluation
        .items
        .iter()
        .map(|item| vec![item.score()])
        .collect();
    let gate = Gate {
        context: &context,
        tasks,
        split: "val",
        round: 1,
        min_delta: 0.0,
        rivals: 1,
    };
    let gated = gate
        .compare(
            Side {
                id: 0,
                skill: incumbent,
            },
            Side {
                id: 1,
                skill: challenger,
            },
            &known,
        )
        .await;
    gated.comparison.expect("decided").accepted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_breaks_triggering_is_refused_once_the_queries_carry_their_weight() {
    let incumbent = Skill::new("receipt-total", "Reads receipts.", "Sum the lines.");
    // Half the tasks fixed, every query lost: 4/16 → 6/16 unweighted, 0.5 → 0.25 at 0.5.
    let breaks = Skill::new(
        "receipt-total",
        "Reads documents.",
        "Sum the lines.\nRULE 0",
    );
    // Half the tasks fixed, the description kept: better either way.
    let holds = Skill::new("receipt-total", "Reads receipts.", "Sum the lines.\nRULE 0");
    for regime in [RegimeSetting::Deterministic, RegimeSetting::Noisy] {
        assert!(
            kept(regime, &data(None), &incumbent, &breaks).await,
            "{regime:?}: the plain mean keeps the edit that stops the skill loading"
        );
        assert!(
            !kept(regime, &data(Some(0.5)), &incumbent, &breaks).await,
            "{regime:?}: weighted, it is refused"
        );
        assert!(
            kept(regime, &data(Some(0.5)), &incumbent, &holds).await,
            "{regime:?}: an edit that keeps triggering is kept"
        );
    }
}
