//! What every optimizer works with: the harness and metric, one in-flight cap shared by all
//! of a run's model work, the budget ledger, the cancel token and the event sink; and the
//! evaluation of a candidate on a set of tasks under all of them.
//!
//! Evaluations remember what they scored: a sample of a task already scored for the same
//! skill (its description and body, [`identity`]) in this run (the incumbent on a minibatch
//! task it met in an earlier round, a body proposed twice, the incumbent's samples a gate
//! drew before) is reused instead of run again, so the run never makes more model calls than
//! the reference tool for the same config. Failed rollouts and results of an interrupted
//! evaluation are not remembered, so they are retried when needed again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use skill_factory_core::trigger::TriggerCounts;
use skill_factory_core::{Evaluation, MetricResult, Rollout, Skill, Task, TaskEvaluation};
use skill_factory_llm::Ledger;
use tokio::sync::Semaphore;

use super::StopReason;
use super::event::{Event, EventSink, RolloutRecord};
use super::honest::Honesty;
use super::protect::Protected;
use crate::cancel::CancelToken;
use crate::evaluate::{EvalObserver, evaluate_shared};
use crate::harness::Harness;
use crate::metric::Metric;
use crate::noise::Noise;

/// What a result is remembered by: the skill's [`identity`], the task's id and the sample.
type MemoKey = (String, String, u32);

/// An evaluation and whether every task in it really ran.
#[derive(Debug, Clone)]
pub struct Scored {
    /// The task results, in task order.
    pub evaluation: Evaluation,
    /// False when the run stopped (cancel, budget) during the evaluation: some tasks may not
    /// have run, so the score must not decide anything.
    pub complete: bool,
}

impl Scored {
    /// The mean score.
    pub fn score(&self) -> f64 {
        self.evaluation.score()
    }

    /// [`Evaluation::measured_nothing`](skill_factory_core::Evaluation::measured_nothing) of a
    /// complete evaluation.
    pub fn all_failed(&self) -> Option<String> {
        self.complete
            .then(|| self.evaluation.measured_nothing())
            .flatten()
    }

    /// [`StopReason::RolloutsFailed`] for `what` when [`Scored::all_failed`].
    pub fn failure(&self, what: impl FnOnce() -> String) -> Option<StopReason> {
        self.all_failed().map(|error| StopReason::RolloutsFailed {
            what: what(),
            error,
        })
    }
}

/// The machinery of one run, shared by the optimizer and the final test scoring.
pub struct RunContext {
    /// Runs a skill on a task.
    pub harness: Arc<dyn Harness>,
    /// Scores a rollout.
    pub metric: Arc<dyn Metric>,
    /// One permit per model-bound step in flight (a rollout with its scoring, or a proposal
    /// request), shared by every evaluation and proposal of the run.
    pub permits: Arc<Semaphore>,
    /// The number of permits.
    pub max_workers: usize,
    /// What the run has spent, and its limits.
    pub ledger: Arc<Ledger>,
    /// Set by Ctrl-C.
    pub cancel: CancelToken,
    /// Where events go.
    pub events: Arc<dyn EventSink>,
    /// The files bundled with the seed skill (paths relative to its folder), which a
    /// candidate's links may point at.
    pub skill_files: Vec<String>,
    /// What no candidate may copy: the answers and inputs of the tasks the optimizer sees.
    pub honesty: Honesty,
    /// The most tokens a candidate skill may have (`optimizer.max_skill_tokens`), so a search
    /// cannot win by bloating the skill.
    pub max_skill_tokens: Option<usize>,
    /// The sections and files no candidate may change (`optimizer.protected`).
    pub protected: Protected,
    /// The most rollouts the search may score (`optimizer.max_metric_calls`), for every
    /// optimizer; checked between steps, so a step under way finishes.
    pub max_metric_calls: Option<u64>,
    /// Over several targets, whether an edit that loses on any of them is refused
    /// (`objective.aggregate: min`): the gate then holds every target.
    pub holds_every_target: bool,
    /// Whether rollouts can vary, and how comparisons deal with it.
    noise: Mutex<Noise>,
    /// Rollouts run and scored so far (reused results are free), GEPA's `max_metric_calls`.
    metric_calls: AtomicU64,
    memo: Mutex<HashMap<MemoKey, TaskEvaluation>>,
}

impl RunContext {
    /// A context with `max_workers` permits (at least 1).
    pub fn new(
        harness: Arc<dyn Harness>,
        metric: Arc<dyn Metric>,
        max_workers: usize,
        ledger: Arc<Ledger>,
        cancel: CancelToken,
        events: Arc<dyn EventSink>,
    ) -> Self {
        let max_workers = max_workers.max(1);
        RunContext {
            harness,
            metric,
            permits: Arc::new(Semaphore::new(max_workers)),
            max_workers,
            ledger,
            cancel,
            events,
            skill_files: Vec::new(),
            honesty: Honesty::default(),
            max_skill_tokens: None,
            protected: Protected::default(),
            max_metric_calls: None,
            holds_every_target: false,
            noise: Mutex::new(Noise::default()),
            metric_calls: AtomicU64::new(0),
            memo: Mutex::new(HashMap::new()),
        }
    }

    /// The same context refusing, when `holds` is set, an edit that loses on any target.
    pub fn holding_every_target(mut self, holds: bool) -> Self {
        self.holds_every_target = holds;
        self
    }

    /// The same context with `noise` as its regime and settings.
    pub fn with_noise(self, noise: Noise) -> Self {
        *lock(&self.noise) = noise;
        self
    }

    /// The run's noise: its regime (which a search may find noisy on the way, see
    /// [`RunContext::found_noisy`]) and settings.
    pub fn noise(&self) -> Noise {
        lock(&self.noise).clone()
    }

    /// Marks the run noisy for `reason` (repeated samples disagreed), unless its regime was
    /// set in the config.
    pub fn found_noisy(&self, reason: String) {
        let mut noise = lock(&self.noise);
        *noise = noise.found_noisy(reason);
    }

    /// The same context, knowing the files bundled with the seed skill.
    pub fn with_skill_files(mut self, files: Vec<String>) -> Self {
        self.skill_files = files;
        self
    }

    /// The same context refusing candidates that copy what `honesty` guards.
    pub fn with_honesty(mut self, honesty: Honesty) -> Self {
        self.honesty = honesty;
        self
    }

    /// The same context refusing candidates over `limit` tokens.
    pub fn with_max_skill_tokens(mut self, limit: Option<usize>) -> Self {
        self.max_skill_tokens = limit;
        self
    }

    /// The same context refusing candidates that change what `protected` names.
    pub fn with_protected(mut self, protected: Protected) -> Self {
        self.protected = protected;
        self
    }

    /// The same context stopping its search after `limit` metric calls.
    pub fn with_max_metric_calls(mut self, limit: Option<u64>) -> Self {
        self.max_metric_calls = limit;
        self
    }

    /// [`StopReason::MetricCalls`] once the search has scored `limit` rollouts.
    pub fn metric_calls_spent(&self, limit: Option<u64>) -> Option<StopReason> {
        let used = self.metric_calls();
        limit
            .filter(|&limit| used >= limit)
            .map(|limit| StopReason::MetricCalls { used, limit })
    }

    /// Rollouts run and scored so far in this run, each (skill, task) once: results reused
    /// from the run's memo are not counted, answers from the model cache are (the metric ran
    /// on them), and a failed rollout counts every time it is tried.
    pub fn metric_calls(&self) -> u64 {
        self.metric_calls.load(Ordering::Relaxed)
    }

    /// Why the run must stop now, if it must: cancelled, or out of budget.
    pub fn stop_reason(&self) -> Option<StopReason> {
        if self.cancel.is_cancelled() {
            return Some(StopReason::Cancelled);
        }
        self.ledger
            .exhausted()
            .map(|exhaustion| StopReason::Budget(exhaustion.clone()))
    }

    /// Sends an event to the sink.
    pub fn emit(&self, event: Event) {
        self.events.event(&event);
    }

    fn memo(&self) -> MutexGuard<'_, HashMap<MemoKey, TaskEvaluation>> {
        lock(&self.memo)
    }

    /// The results of the first sample already known for `skill` on `tasks` (those it was
    /// scored on in this run), in task order: free evidence, as no rollout runs.
    pub fn known<'t>(
        &self,
        skill: &Skill,
        tasks: impl IntoIterator<Item = &'t Task>,
    ) -> Vec<(&'t Task, TaskEvaluation)> {
        let memo = self.memo();
        let id = identity(skill);
        tasks
            .into_iter()
            .filter_map(|task| {
                memo.get(&(id.clone(), task.id.clone(), 0))
                    .filter(|known| known.rollout.ok())
                    .map(|known| (task, known.clone()))
            })
            .collect()
    }

    /// The scores of every sample of `skill` on each of `tasks` this run drew (failed ones
    /// as 0), by task, in sample order.
    pub fn samples_of(&self, skill: &Skill, tasks: &[Task]) -> Vec<Vec<f64>> {
        let memo = self.memo();
        let id = identity(skill);
        tasks
            .iter()
            .map(|task| {
                (0..)
                    .map_while(|sample| memo.get(&(id.clone(), task.id.clone(), sample)))
                    .map(TaskEvaluation::score)
                    .collect()
            })
            .collect()
    }

    /// The scores of samples `samples` (in order) of `skill` on every task of `tasks`, by
    /// task, each evaluation labelled round 0, `candidate` and `split`; `None` when the run
    /// stopped during them.
    pub async fn sample_scores(
        &self,
        skill: &Skill,
        tasks: &[Task],
        samples: std::ops::Range<u32>,
        (candidate, split): (usize, &'static str),
    ) -> Option<Vec<Vec<f64>>> {
        let mut scores = vec![Vec::new(); tasks.len()];
        for sample in samples {
            let scored = self
                .evaluate_sample(skill, tasks, sample, 0, candidate, split)
                .await;
            if !scored.complete {
                return None;
            }
            for (task, item) in scores.iter_mut().zip(&scored.evaluation.items) {
                task.push(item.score());
            }
        }
        Some(scores)
    }

    /// How often `skill` loaded on `tasks` against how often it should have, over every
    /// sample already scored (a trigger run's; `None` for other runs or nothing scored). It
    /// reads remembered results only: it costs no rollout and logs no event.
    pub fn trigger_counts(&self, skill: &Skill, tasks: &[Task]) -> Option<TriggerCounts> {
        let memo = self.memo();
        let id = identity(skill);
        let mut counts = TriggerCounts::default();
        let mut any = false;
        for task in tasks {
            let mut sample = 0;
            while let Some(item) = memo.get(&(id.clone(), task.id.clone(), sample)) {
                any |= counts.add(&item.rollout);
                sample += 1;
            }
        }
        any.then_some(counts)
    }

    /// The first sample number at which no task of `tasks` has a remembered result for
    /// `skill` (samples are drawn in order): where fresh samples start.
    pub fn next_sample(&self, skill: &Skill, tasks: &[Task]) -> u32 {
        let memo = self.memo();
        let id = identity(skill);
        let mut next = 0;
        for task in tasks {
            while memo.contains_key(&(id.clone(), task.id.clone(), next)) {
                next += 1;
            }
        }
        next
    }

    /// Scores the first sample of `skill` on `tasks` ([`RunContext::evaluate_sample`]).
    pub async fn evaluate(
        &self,
        skill: &Skill,
        tasks: &[Task],
        round: usize,
        candidate: usize,
        split: &'static str,
    ) -> Scored {
        self.evaluate_sample(skill, tasks, 0, round, candidate, split)
            .await
    }

    /// Scores sample number `sample` of `skill` on `tasks` under the shared cap, reusing
    /// results already known for the same body and sample. `round`, `candidate` and `split`
    /// label the events.
    pub async fn evaluate_sample(
        &self,
        skill: &Skill,
        tasks: &[Task],
        sample: u32,
        round: usize,
        candidate: usize,
        split: &'static str,
    ) -> Scored {
        let key = |task: &Task| (identity(skill), task.id.clone(), sample);
        let known: Vec<Option<TaskEvaluation>> = {
            let memo = self.memo();
            tasks
                .iter()
                .map(|task| memo.get(&key(task)).filter(|k| k.rollout.ok()).cloned())
                .collect()
        };
        let to_run: Vec<Task> = tasks
            .iter()
            .zip(&known)
            .filter(|(_, known)| known.is_none())
            .map(|(task, _)| task.clone())
            .collect();
        self.emit(Event::EvaluationStarted {
            round,
            candidate,
            split: split.into(),
            sample,
            tasks: tasks.len(),
            reused: tasks.len() - to_run.len(),
        });
        let was_known: Vec<bool> = known.iter().map(Option::is_some).collect();
        for item in known.iter().flatten() {
            self.emit(Event::Rollout(RolloutRecord::new(
                round,
                candidate,
                split,
                true,
                item.clone(),
            )));
        }
        let observer = Arc::new(Forward {
            events: self.events.clone(),
            round,
            candidate,
            split,
        });
        let cancel = self.cancel.clone();
        let ledger = self.ledger.clone();
        let ran = if to_run.is_empty() {
            Evaluation::default()
        } else {
            evaluate_shared(
                Arc::new(skill.clone()),
                &to_run,
                sample,
                self.harness.clone(),
                self.metric.clone(),
                self.permits.clone(),
                observer,
                Arc::new(move || cancel.is_cancelled() || ledger.exhausted().is_some()),
            )
            .await
        };
        // Conservative: once the run is stopping, any task of this evaluation may have been
        // skipped or refused a call, so the whole evaluation is marked incomplete.
        let complete = self.stop_reason().is_none();
        let ran_count = ran.items.len() as u64;
        let mut fresh = ran.items.into_iter();
        // `evaluate_shared` returns one item per task it was given, in order, so the fresh
        // items fill the unknown slots one for one.
        let items: Vec<TaskEvaluation> = known
            .into_iter()
            .zip(tasks)
            .map(|(known, task)| {
                known.or_else(|| fresh.next()).unwrap_or_else(|| {
                    let mut rollout =
                        Rollout::failure(&task.id, "the evaluation returned no result");
                    rollout.sample = sample;
                    TaskEvaluation {
                        rollout,
                        result: MetricResult::new("evaluate", 0.0, "rollout failed: no result"),
                        weight: task.weight,
                    }
                })
            })
            .collect();
        // A result counts once per (skill, task): when two evaluations ran the same one at the
        // same time, the second to finish finds it remembered, so the count, and every
        // decision taken on it, does not depend on timing. Failed rollouts count each time.
        let counted = if complete {
            let mut memo = self.memo();
            let mut counted = 0;
            for (item, known) in items.iter().zip(&was_known) {
                if *known {
                    continue;
                }
                // A failed rollout is remembered only for the record (it is retried when needed
                // again, and counts each time); a success is never replaced.
                let key = (identity(skill), item.task_id().to_string(), sample);
                let was_ok = memo.get(&key).is_some_and(|known| known.rollout.ok());
                if !item.rollout.ok() || !was_ok {
                    counted += 1;
                }
                if !was_ok {
                    memo.insert(key, item.clone());
                }
            }
            counted
        } else {
            ran_count
        };
        self.metric_calls.fetch_add(counted, Ordering::Relaxed);
        let evaluation = Evaluation { items };
        self.emit(Event::EvaluationFinished {
            round,
            candidate,
            split: split.into(),
            sample,
            score: evaluation.score(),
            tasks: evaluation.size(),
            failed: evaluation.failed(),
            complete,
        });
        Scored {
            evaluation,
            complete,
        }
    }
}

/// What makes two candidates the same skill for scoring: the description, the body and the
/// reference files (the name and the other frontmatter keys never change during a search).
pub fn identity(skill: &Skill) -> String {
    let mut key = format!("{}\u{0}{}", skill.description, skill.body);
    for (path, text) in &skill.files {
        key.push_str(&format!("\u{0}{path}\u{0}{text}"));
    }
    key
}

/// Turns finished tasks into rollout events.
struct Forward {
    events: Arc<dyn EventSink>,
    round: usize,
    candidate: usize,
    split: &'static str,
}

impl EvalObserver for Forward {
    fn task_done(&self, item: &TaskEvaluation) {
        self.events.event(&Event::Rollout(RolloutRecord::new(
            self.round,
            self.candidate,
            self.split,
            false,
            item.clone(),
        )));
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data consistent, so a poisoned lock is still usable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
