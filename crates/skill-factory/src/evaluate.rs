//! Evaluating a skill on a set of tasks: every task runs through the harness and the metric,
//! many at once, and the results come back in task order.

use std::sync::Arc;

use skill_factory_core::{Evaluation, MetricResult, Rollout, Skill, Summary, Task, TaskEvaluation};
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

/// Runs `skill` on every task with at most `max_workers` rollouts in flight and scores each
/// rollout, with at most `max_workers` rollouts being scored at once.
///
/// Running and scoring are two stages with a cap each: a rollout's slot is handed to the next
/// task as soon as the rollout ends, while its score (an LLM-judge call, when there is one) is
/// worked out in the scoring stage. So a judge call never holds a rollout slot, and with a
/// judge up to `2 × max_workers` model calls can be in flight.
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
    let mut slots: Vec<Option<TaskEvaluation>> = vec![None; tasks.len()];
    Stages::own(skill, harness, metric, max_workers, observer)
        .run(tasks, |index, item| slots[index] = Some(item))
        .await;
    collected(slots, tasks)
}

/// [`evaluate`] that keeps no item but the `worst` it reports: its memory stays flat however
/// many tasks it runs (`skill-factory evaluate` of a dataset of any size).
pub async fn evaluate_summary(
    skill: Arc<Skill>,
    tasks: &[Task],
    harness: Arc<dyn Harness>,
    metric: Arc<dyn Metric>,
    max_workers: usize,
    observer: Arc<dyn EvalObserver>,
    worst: usize,
) -> Summary {
    let mut summary = Summary::new(worst);
    Stages::own(skill, harness, metric, max_workers, observer)
        .run(tasks, |index, item| summary.add(index, &item))
        .await;
    summary
}

/// Tells a shared evaluation to start no new task (a run was cancelled or is out of budget).
pub type StopCheck = Arc<dyn Fn() -> bool + Send + Sync>;

/// The reason given to tasks that were never run because the evaluation was told to stop.
pub const NOT_RUN: &str = "not run: the run was stopped before this task started";

/// [`evaluate`] under a cap shared with other work: a task runs only while it holds one of
/// `permits`, so several evaluations (and other model calls) of one run share one in-flight
/// limit. Once `stop` returns true no new task starts; tasks not started become failed
/// rollouts saying [`NOT_RUN`], and the tasks already running finish normally.
pub async fn evaluate_shared(
    skill: Arc<Skill>,
    tasks: &[Task],
    harness: Arc<dyn Harness>,
    metric: Arc<dyn Metric>,
    permits: Arc<Semaphore>,
    observer: Arc<dyn EvalObserver>,
    stop: StopCheck,
) -> Evaluation {
    let mut slots: Vec<Option<TaskEvaluation>> = vec![None; tasks.len()];
    let stages = Stages {
        skill,
        harness,
        metric,
        caps: StageCaps {
            rollouts: permits,
            scoring: None,
        },
        observer,
        stop,
    };
    stages
        .run(tasks, |index, item| slots[index] = Some(item))
        .await;
    collected(slots, tasks)
}

/// The items in task order; a task whose worker never reported becomes a failed rollout.
fn collected(slots: Vec<Option<TaskEvaluation>>, tasks: &[Task]) -> Evaluation {
    let items = slots
        .into_iter()
        .zip(tasks)
        .map(|(slot, task)| slot.unwrap_or_else(|| unscored(task, LOST)))
        .collect();
    Evaluation { items }
}

/// The reason given to a task whose worker stopped without an answer (a panic).
const LOST: &str = "evaluation worker stopped unexpectedly";

/// The in-flight caps of an evaluation's two stages.
struct StageCaps {
    /// Slots a task holds while its rollout runs.
    rollouts: Arc<Semaphore>,
    /// Slots a task trades its rollout slot for while it is scored; without them it keeps its
    /// rollout slot until it is scored.
    scoring: Option<Arc<Semaphore>>,
}

/// Everything one evaluation loop needs.
struct Stages {
    skill: Arc<Skill>,
    harness: Arc<dyn Harness>,
    metric: Arc<dyn Metric>,
    caps: StageCaps,
    observer: Arc<dyn EvalObserver>,
    stop: StopCheck,
}

impl Stages {
    /// An evaluation with caps of its own, `max_workers` in each stage, that never stops early.
    fn own(
        skill: Arc<Skill>,
        harness: Arc<dyn Harness>,
        metric: Arc<dyn Metric>,
        max_workers: usize,
        observer: Arc<dyn EvalObserver>,
    ) -> Self {
        Stages {
            skill,
            harness,
            metric,
            caps: StageCaps {
                rollouts: Arc::new(Semaphore::new(max_workers.max(1))),
                scoring: Some(Arc::new(Semaphore::new(max_workers.max(1)))),
            },
            observer,
            stop: Arc::new(|| false),
        }
    }

    /// Runs every task, handing each finished item to `add` with its task's index. A task is
    /// spawned only once it holds a rollout slot, and finished tasks are collected as they
    /// end, so at most the slots' worth of tasks (plus those being scored) exist at once,
    /// whatever the number of tasks.
    async fn run(self, tasks: &[Task], mut add: impl FnMut(usize, TaskEvaluation)) {
        let Stages {
            skill,
            harness,
            metric,
            caps: StageCaps { rollouts, scoring },
            observer,
            stop,
        } = self;
        let mut seen = vec![false; tasks.len()];
        let mut running = JoinSet::new();
        let mut queue = tasks.iter().enumerate().peekable();
        while queue.peek().is_some() || !running.is_empty() {
            tokio::select! {
                biased;
                Some(joined) = running.join_next(), if !running.is_empty() => match joined {
                    Ok((index, item)) => {
                        seen[index] = true;
                        add(index, item);
                    }
                    Err(error) => {
                        tracing::error!("an evaluation worker stopped unexpectedly: {error}");
                    }
                },
                // The semaphores are never closed, so acquiring cannot fail; if it ever did,
                // running unthrottled is still correct.
                slot = rollouts.clone().acquire_owned(), if queue.peek().is_some() => {
                    let Some((index, task)) = queue.next() else {
                        continue;
                    };
                    let slot = slot.ok();
                    if stop() {
                        let item = unscored(task, NOT_RUN);
                        observer.task_done(&item);
                        seen[index] = true;
                        add(index, item);
                        continue;
                    }
                    let (task, skill, harness, metric, scoring, observer) = (
                        task.clone(),
                        skill.clone(),
                        harness.clone(),
                        metric.clone(),
                        scoring.clone(),
                        observer.clone(),
                    );
                    running.spawn(async move {
                        let rollout = harness.run(&skill, &task).await;
                        let _slot = match scoring {
                            Some(scoring) => {
                                drop(slot);
                                scoring.acquire_owned().await.ok()
                            }
                            None => slot,
                        };
                        let item = score_rollout(&task, rollout, metric.as_ref()).await;
                        observer.task_done(&item);
                        (index, item)
                    });
                }
            }
        }
        for (index, task) in tasks.iter().enumerate() {
            if !seen[index] {
                add(index, unscored(task, LOST));
            }
        }
    }
}

/// A task the evaluation did not run to the end: a failed rollout saying `reason`, scored 0.
fn unscored(task: &Task, reason: &str) -> TaskEvaluation {
    TaskEvaluation {
        rollout: Rollout::failure(&task.id, reason),
        result: crate::metric::rollout_failed("evaluate", reason),
    }
}

/// Runs and scores one task.
pub async fn evaluate_one(
    skill: &Skill,
    task: &Task,
    harness: &dyn Harness,
    metric: &dyn Metric,
) -> TaskEvaluation {
    let rollout = harness.run(skill, task).await;
    score_rollout(task, rollout, metric).await
}

/// Scores one rollout of `task`.
async fn score_rollout(task: &Task, rollout: Rollout, metric: &dyn Metric) -> TaskEvaluation {
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
