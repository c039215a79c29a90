//! How many rollouts and scorings an evaluation keeps in flight: `evaluate` caps running and
//! scoring separately (a judge call never holds a rollout slot), `evaluate_shared` keeps one
//! slot per task for both.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use skill_factory::evaluate::{Quiet, evaluate, evaluate_shared};
use skill_factory::harness::Harness;
use skill_factory::metric::{Metric, NotApplicable};
use skill_factory_core::{MetricResult, Rollout, Skill, Task};
use tokio::sync::Semaphore;

/// Counts work in flight: per stage, and both stages together.
#[derive(Default)]
struct Gauge {
    rollouts: AtomicUsize,
    scorings: AtomicUsize,
    max_rollouts: AtomicUsize,
    max_scorings: AtomicUsize,
    max_total: AtomicUsize,
}

impl Gauge {
    fn enter(&self, stage: &AtomicUsize, max: &AtomicUsize) {
        let now = stage.fetch_add(1, Ordering::SeqCst) + 1;
        max.fetch_max(now, Ordering::SeqCst);
        let total = self.rollouts.load(Ordering::SeqCst) + self.scorings.load(Ordering::SeqCst);
        self.max_total.fetch_max(total, Ordering::SeqCst);
    }
}

/// A model call of 20 ms that echoes the input.
struct SlowHarness(Arc<Gauge>);

#[async_trait]
impl Harness for SlowHarness {
    fn name(&self) -> &str {
        "slow"
    }

    async fn run_sample(&self, _skill: &Skill, task: &Task, _sample: u32) -> Rollout {
        let gauge = &self.0;
        gauge.enter(&gauge.rollouts, &gauge.max_rollouts);
        tokio::time::sleep(Duration::from_millis(20)).await;
        gauge.rollouts.fetch_sub(1, Ordering::SeqCst);
        Rollout::success(&task.id, task.input.clone())
    }
}

/// A judge-like metric: a 40 ms call, then 1.0 when the output is the input.
struct SlowJudge(Arc<Gauge>);

#[async_trait]
impl Metric for SlowJudge {
    fn name(&self) -> &str {
        "slow_judge"
    }

    async fn score(&self, task: &Task, rollout: &Rollout) -> Result<MetricResult, NotApplicable> {
        let gauge = &self.0;
        gauge.enter(&gauge.scorings, &gauge.max_scorings);
        tokio::time::sleep(Duration::from_millis(40)).await;
        gauge.scorings.fetch_sub(1, Ordering::SeqCst);
        let score = if rollout.output == task.input {
            1.0
        } else {
            0.0
        };
        Ok(MetricResult::new("slow_judge", score, "checked"))
    }
}

fn tasks(n: usize) -> Vec<Task> {
    (0..n)
        .map(|i| Task::new(format!("t{i}"), format!("input {i}")))
        .collect()
}

fn skill() -> Arc<Skill> {
    Arc::new(Skill::new("s", "d", "b"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_scores_while_the_next_rollouts_run_each_stage_within_max_workers() {
    let gauge = Arc::new(Gauge::default());
    let tasks = tasks(12);
    let evaluation = evaluate(
        skill(),
        &tasks,
        1,
        Arc::new(SlowHarness(gauge.clone())),
        Arc::new(SlowJudge(gauge.clone())),
        2,
        Arc::new(Quiet),
    )
    .await;
    assert_eq!(gauge.max_rollouts.load(Ordering::SeqCst), 2);
    assert_eq!(gauge.max_scorings.load(Ordering::SeqCst), 2);
    // A task being scored no longer holds its rollout slot.
    assert!(gauge.max_total.load(Ordering::SeqCst) > 2);
    let ids: Vec<&str> = evaluation
        .items
        .iter()
        .map(|i| i.rollout.task_id.as_str())
        .collect();
    let expected: Vec<String> = (0..12).map(|i| format!("t{i}")).collect();
    assert_eq!(ids, expected);
    assert!((evaluation.score() - 1.0).abs() < 1e-12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_shared_keeps_one_slot_per_task_until_it_is_scored() {
    let gauge = Arc::new(Gauge::default());
    let tasks = tasks(8);
    let evaluation = evaluate_shared(
        skill(),
        &tasks,
        0,
        Arc::new(SlowHarness(gauge.clone())),
        Arc::new(SlowJudge(gauge.clone())),
        Arc::new(Semaphore::new(2)),
        Arc::new(Quiet),
        Arc::new(|| false),
    )
    .await;
    assert_eq!(gauge.max_total.load(Ordering::SeqCst), 2);
    assert_eq!(evaluation.items.len(), 8);
}
