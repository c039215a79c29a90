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

/// Runs `skill` `samples` times on every task (samples 0 to `samples − 1`, each its own
/// draw) with at most `max_workers` rollouts in flight and scores each rollout, with at most
/// `max_workers` rollouts being scored at once. The items come task by task, each task's
/// samples in order.
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
    samples: u32,
    harness: Arc<dyn Harness>,
    metric: Arc<dyn Metric>,
    max_workers: usize,
    observer: Arc<dyn EvalObserver>,
) -> Evaluation {
    let jobs = Jobs::every(tasks, samples);
    let mut slots: Vec<Option<TaskEvaluation>> = vec![None; jobs.len()];
    Stages::own(skill, harness, metric, max_workers, observer)
        .run(&jobs, |job, item| slots[job] = Some(item))
        .await;
    collected(slots, &jobs)
}

/// [`evaluate`] that keeps no item but the `worst` it reports: its memory stays flat however
/// many tasks it runs (`skill-factory evaluate` of a dataset of any size).
#[allow(clippy::too_many_arguments)]
pub async fn evaluate_summary(
    skill: Arc<Skill>,
    tasks: &[Task],
    samples: u32,
    harness: Arc<dyn Harness>,
    metric: Arc<dyn Metric>,
    max_workers: usize,
    observer: Arc<dyn EvalObserver>,
    worst: usize,
) -> Summary {
    let jobs = Jobs::every(tasks, samples);
    let mut summary = Summary::new(worst);
    Stages::own(skill, harness, metric, max_workers, observer)
        .run(&jobs, |job, item| summary.add(jobs.task_index(job), &item))
        .await;
    summary
}

/// Tells a shared evaluation to start no new task (a run was cancelled or is out of budget).
pub type StopCheck = Arc<dyn Fn() -> bool + Send + Sync>;

/// The reason given to tasks that were never run because the evaluation was told to stop.
pub const NOT_RUN: &str = "not run: the run was stopped before this task started";

/// Sample `sample` of every task (one item per task, in task order) under a cap shared with
/// other work: a task runs only while it holds one of `permits`, so several evaluations (and
/// other model calls) of one run share one in-flight limit. Once `stop` returns true no new
/// task starts; tasks not started become failed rollouts saying [`NOT_RUN`], and the tasks
/// already running finish normally.
#[allow(clippy::too_many_arguments)]
pub async fn evaluate_shared(
    skill: Arc<Skill>,
    tasks: &[Task],
    sample: u32,
    harness: Arc<dyn Harness>,
    metric: Arc<dyn Metric>,
    permits: Arc<Semaphore>,
    observer: Arc<dyn EvalObserver>,
    stop: StopCheck,
) -> Evaluation {
    let jobs = Jobs::sample(tasks, sample);
    let mut slots: Vec<Option<TaskEvaluation>> = vec![None; jobs.len()];
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
    stages.run(&jobs, |job, item| slots[job] = Some(item)).await;
    collected(slots, &jobs)
}

/// The rollouts of an evaluation: which task, and which of its samples, each one is.
struct Jobs<'t> {
    tasks: &'t [Task],
    /// Samples per task.
    samples: u32,
    /// The sample number of the first (and, with one sample per task, only) job of a task.
    first: u32,
}

impl<'t> Jobs<'t> {
    /// Samples 0 to `samples − 1` of every task, task by task.
    fn every(tasks: &'t [Task], samples: u32) -> Self {
        Jobs {
            tasks,
            samples: samples.max(1),
            first: 0,
        }
    }

    /// Sample `sample` of every task.
    fn sample(tasks: &'t [Task], sample: u32) -> Self {
        Jobs {
            tasks,
            samples: 1,
            first: sample,
        }
    }

    fn len(&self) -> usize {
        self.tasks.len() * self.samples as usize
    }

    fn task_index(&self, job: usize) -> usize {
        job / self.samples as usize
    }

    /// Job number `job`: its task and its sample number.
    fn get(&self, job: usize) -> (&'t Task, u32) {
        let within = u32::try_from(job % self.samples as usize).unwrap_or(0);
        (&self.tasks[self.task_index(job)], self.first + within)
    }
}

/// The items in job order; a rollout whose worker never reported becomes a failed one.
fn collected(slots: Vec<Option<TaskEvaluation>>, jobs: &Jobs<'_>) -> Evaluation {
    let items = slots
        .into_iter()
        .enumerate()
        .map(|(job, slot)| {
            slot.unwrap_or_else(|| {
                let (task, sample) = jobs.get(job);
                unscored(task, sample, LOST)
            })
        })
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

    /// Runs every job, handing each finished item to `add` with its job's number. A job is
    /// spawned only once it holds a rollout slot, and finished jobs are collected as they
    /// end, so at most the slots' worth of rollouts (plus those being scored) exist at once,
    /// whatever the number of tasks.
    async fn run(self, jobs: &Jobs<'_>, mut add: impl FnMut(usize, TaskEvaluation)) {
        let Stages {
            skill,
            harness,
            metric,
            caps: StageCaps { rollouts, scoring },
            observer,
            stop,
        } = self;
        let mut seen = vec![false; jobs.len()];
        let mut running = JoinSet::new();
        let mut queue = (0..jobs.len()).map(|job| (job, jobs.get(job))).peekable();
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
                    let Some((index, (task, sample))) = queue.next() else {
                        continue;
                    };
                    let slot = slot.ok();
                    if stop() {
                        let item = unscored(task, sample, NOT_RUN);
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
                        let mut rollout = harness.run_sample(&skill, &task, sample).await;
                        rollout.sample = sample;
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
        for (job, seen) in seen.into_iter().enumerate() {
            if !seen {
                let (task, sample) = jobs.get(job);
                add(job, unscored(task, sample, LOST));
            }
        }
    }
}

/// A rollout the evaluation did not run to the end: a failed one saying `reason`, scored 0.
fn unscored(task: &Task, sample: u32, reason: &str) -> TaskEvaluation {
    let mut rollout = Rollout::failure(&task.id, reason);
    rollout.sample = sample;
    TaskEvaluation {
        rollout,
        result: crate::metric::rollout_failed("evaluate", reason),
        weight: task.weight,
    }
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
    TaskEvaluation {
        rollout,
        result,
        weight: task.weight,
    }
}
