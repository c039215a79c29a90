//! Evaluating a skill on a set of tasks: every task runs through the harness and the metric,
//! many at once, and the results come back in task order.

use std::sync::Arc;

use skill_factory_core::{Evaluation, MetricResult, Rollout, Skill, Task, TaskEvaluation};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::harness::Harness;
use crate::metric::Metric;

/// Receives each task evaluation as it finishes (for progress bars and event logs).
pub trait EvalObserver: Send + Sync {
    /// Called once per finished task, in completion order.
    fn task_done(&self, item: &TaskEvaluation);
}

/// An observer that ignores everything.
pub struct Quiet;

impl EvalObserver for Quiet {
    fn task_done(&self, _item: &TaskEvaluation) {}
}

/// Runs `skill` on every task with at most `max_workers` tasks in flight and scores each rollout.
///
/// A metric that does not apply to a task scores it 0 with the reason as feedback, so that
/// the mean is always over every task (the composite metric is where "not applicable" parts
/// are dropped).
pub async fn evaluate(
    skill: Arc<Skill>,
    tasks: &[Task],
    harness: Arc<dyn Harness>,
    metric: Arc<dyn Metric>,
    max_workers: usize,
    observer: Arc<dyn EvalObserver>,
) -> Evaluation {
    let permits = Arc::new(Semaphore::new(max_workers.max(1)));
    let mut running = JoinSet::new();
    for (index, task) in tasks.iter().cloned().enumerate() {
        let (skill, harness, metric, permits, observer) = (
            skill.clone(),
            harness.clone(),
            metric.clone(),
            permits.clone(),
            observer.clone(),
        );
        running.spawn(async move {
            // The semaphore is never closed, so acquiring cannot fail; if it ever did, running
            // unthrottled is still correct.
            let _permit = permits.acquire_owned().await.ok();
            let item = evaluate_one(&skill, &task, harness.as_ref(), metric.as_ref()).await;
            observer.task_done(&item);
            (index, item)
        });
    }
    let mut slots: Vec<Option<TaskEvaluation>> = vec![None; tasks.len()];
    while let Some(joined) = running.join_next().await {
        match joined {
            Ok((index, item)) => slots[index] = Some(item),
            Err(error) => tracing::error!("an evaluation worker stopped unexpectedly: {error}"),
        }
    }
    let items = slots
        .into_iter()
        .zip(tasks)
        .map(|(slot, task)| {
            slot.unwrap_or_else(|| TaskEvaluation {
                rollout: Rollout::failure(&task.id, "evaluation worker stopped unexpectedly"),
                result: MetricResult::new(
                    "evaluate",
                    0.0,
                    "rollout failed: evaluation worker stopped unexpectedly",
                ),
            })
        })
        .collect();
    Evaluation { items }
}

/// Runs and scores one task.
pub async fn evaluate_one(
    skill: &Skill,
    task: &Task,
    harness: &dyn Harness,
    metric: &dyn Metric,
) -> TaskEvaluation {
    let rollout = harness.run(skill, task).await;
    let result = match metric.score(task, &rollout).await {
        Ok(result) => result,
        Err(not_applicable) => MetricResult::new(
            metric.name(),
            0.0,
            format!("not applicable: {}", not_applicable.0),
        ),
    };
    TaskEvaluation { rollout, result }
}
