//! The gate under noise, measured against a noise-free twin: a harness whose outcome is right
//! when the skill holds the rule of the task's group, then flipped with a probability drawn
//! from a hash of the seed, the body, the task and the sample (so every sample is its own
//! draw, and every run of the test the same). The twin is the same harness with no flips.
//! Edits that only reword the skill (decoys) must almost never be kept; a real gain must be;
//! and the plain comparison of means, which the deterministic regime makes, is shown keeping
//! decoys about half the time on the same draws.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use skill_factory::cancel::CancelToken;
use skill_factory::config::{GoldenMode, NoiseConfig, RegimeSetting, RunConfig};
use skill_factory::harness::Harness;
use skill_factory::metric::GoldenMetric;
use skill_factory::noise::Noise;
use skill_factory::optimizer::gate::{Gate, Gated, Side};
use skill_factory::optimizer::{NoEvents, RunContext};
use skill_factory_core::{Rollout, Skill, Task};
use skill_factory_llm::Ledger;

/// Right when the body holds `RULE <group>` for the task's group (its id modulo 4), then
/// flipped with probability `flips`. Counts the rollouts of bodies other than the
/// incumbent's (the challengers').
struct Flipping {
    flips: f64,
    seed: u64,
    runs: AtomicUsize,
}

/// Bodies that are not the incumbent's.
fn challenger(skill: &Skill) -> bool {
    skill.body != INCUMBENT
}

impl Flipping {
    fn new(flips: f64, seed: u64) -> Arc<Flipping> {
        Arc::new(Flipping {
            flips,
            seed,
            runs: AtomicUsize::new(0),
        })
    }

    /// The noise-free outcome: the twin.
    fn right(skill: &Skill, task: &Task) -> bool {
        let group: usize = task.id.trim_start_matches('t').parse::<usize>().unwrap() % 4;
        skill.body.contains(&format!("RULE {group}"))
    }
}

#[async_trait]
impl Harness for Flipping {
    fn name(&self) -> &str {
        "flipping"
    }

    async fn run_sample(&self, skill: &Skill, task: &Task, sample: u32) -> Rollout {
        if challenger(skill) {
            self.runs.fetch_add(1, Ordering::SeqCst);
        }
        let draw = Sha256::digest(format!(
            "{}\u{0}{}\u{0}{}\u{0}{sample}",
            self.seed, skill.body, task.id
        ));
        let u = f64::from(u32::from_be_bytes([draw[0], draw[1], draw[2], draw[3]]))
            / f64::from(u32::MAX);
        let right = Flipping::right(skill, task) != (u < self.flips);
        Rollout::success(&task.id, if right { "right" } else { "wrong" })
    }
}

fn tasks(n: usize) -> Vec<Task> {
    (0..n)
        .map(|i| Task::new(format!("t{i}"), format!("input {i}")).with_expected("right"))
        .collect()
}

fn noise(regime: RegimeSetting) -> Noise {
    let mut config: RunConfig = serde_saphyr::from_str("skill: s.md\ndataset: d.jsonl\n").unwrap();
    config.harness.temperature = 0.7;
    config.noise = NoiseConfig {
        regime,
        ..NoiseConfig::default()
    };
    Noise::of(&config)
}

fn context(harness: Arc<Flipping>, regime: RegimeSetting) -> RunContext {
    RunContext::new(
        harness,
        Arc::new(GoldenMetric::new(GoldenMode::Exact)),
        16,
        Arc::new(Ledger::unlimited()),
        CancelToken::new(),
        Arc::new(NoEvents),
    )
    .with_noise(noise(regime))
}

/// The incumbent's first sample on every task, as a search knows it from its baseline.
async fn baseline(context: &RunContext, skill: &Skill, tasks: &[Task]) -> Vec<Vec<f64>> {
    let scored = context.evaluate(skill, tasks, 0, 0, "val").await;
    scored
        .evaluation
        .items
        .iter()
        .map(|item| vec![item.score()])
        .collect()
}

/// How many of `trials` challengers made by `edit` the gate keeps over `incumbent`, each
/// trial on fresh draws (its own harness seed).
async fn kept(
    regime: RegimeSetting,
    incumbent: &str,
    edit: impl Fn(usize) -> String,
    trials: usize,
) -> (usize, usize) {
    let tasks = tasks(64);
    let incumbent = Skill::new("s", "d", incumbent);
    let mut kept = 0;
    let mut rollouts = 0;
    for trial in 0..trials {
        let harness = Flipping::new(0.15, trial as u64);
        let context = context(harness.clone(), regime);
        let known = baseline(&context, &incumbent, &tasks).await;
        let challenger = Skill::new("s", "d", edit(trial));
        let gated = decide(&context, &tasks, (&incumbent, 1, &challenger), &known).await;
        let comparison = gated.comparison.expect("decided");
        // The noise-free twin: whether the challenger really beats the incumbent.
        let better = tasks
            .iter()
            .filter(|t| Flipping::right(&challenger, t))
            .count()
            > tasks
                .iter()
                .filter(|t| Flipping::right(&incumbent, t))
                .count();
        if comparison.accepted {
            kept += 1;
            assert!(
                better || regime == RegimeSetting::Deterministic,
                "kept a decoy: {comparison:?}"
            );
        }
        rollouts += harness.runs.load(Ordering::SeqCst);
    }
    (kept, rollouts)
}

/// The gate of `challenger` (candidate `id`) against `incumbent` (candidate 0) on `tasks`.
async fn decide(
    context: &RunContext,
    tasks: &[Task],
    (incumbent, id, challenger): (&Skill, usize, &Skill),
    known: &[Vec<f64>],
) -> Gated {
    let gate = Gate {
        context,
        tasks,
        split: "val",
        round: 1,
        min_delta: 0.0,
        rivals: 1,
    };
    let sides = (
        Side {
            id: 0,
            skill: incumbent,
        },
        Side {
            id,
            skill: challenger,
        },
    );
    gate.compare(sides.0, sides.1, known).await
}

const INCUMBENT: &str = "Sort tickets.\nRULE 0";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decoys_are_not_kept_under_noise_where_a_comparison_of_means_keeps_many() {
    let decoy = |trial: usize| format!("{INCUMBENT}\nRead the request first (wording {trial}).");
    let (noisy, rollouts) = kept(RegimeSetting::Noisy, INCUMBENT, decoy, 60).await;
    assert_eq!(noisy, 0, "the paired gate kept {noisy} of 60 decoys");
    // A decoy is mostly turned down after one or two looks, not after every sample.
    let per_gate = rollouts as f64 / 60.0;
    eprintln!("{per_gate} challenger rollouts a decoy gate");
    assert!(
        per_gate < 64.0 * 2.0,
        "{per_gate} challenger rollouts a gate"
    );
    let (plain, _) = kept(RegimeSetting::Deterministic, INCUMBENT, decoy, 60).await;
    assert!(
        (15..=45).contains(&plain),
        "comparing means kept {plain} of 60 decoys"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_gain_is_kept_under_noise() {
    // RULE 1 fixes a quarter of the tasks: +0.25 noise-free, +0.175 through the flips.
    let gain = |trial: usize| format!("{INCUMBENT}\nRULE 1 (take {trial})");
    let (noisy, _) = kept(RegimeSetting::Noisy, INCUMBENT, gain, 30).await;
    assert!(noisy >= 28, "the paired gate kept {noisy} of 30 real gains");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_never_varies_gets_its_gain_kept_after_a_few_samples() {
    let tasks = tasks(8);
    let harness = Flipping::new(0.0, 0);
    let context = context(harness.clone(), RegimeSetting::Noisy);
    let incumbent = Skill::new("s", "d", INCUMBENT);
    let known = baseline(&context, &incumbent, &tasks).await;
    // Two tasks in 8 more (t1 and t5): +0.25, with samples that never disagree.
    let challenger = Skill::new("s", "d", "Sort tickets.\nRULE 0\nRULE 1");
    let gated = decide(&context, &tasks, (&incumbent, 1, &challenger), &known).await;
    let comparison = gated.comparison.unwrap();
    assert!(comparison.accepted, "{comparison:?}");
    assert!(
        comparison.samples >= 2,
        "one sample proves nothing: {comparison:?}"
    );
    // The same edit against itself: no gain, turned down at the first look.
    let same = decide(&context, &tasks, (&incumbent, 2, &incumbent), &known)
        .await
        .comparison
        .unwrap();
    assert!(!same.accepted && same.looks == 1, "{same:?}");
}
