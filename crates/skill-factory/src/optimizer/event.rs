//! What an optimization reports while it works: one [`Event`] per step (evaluation, rollout,
//! proposal, score, decision, round), sent to an [`EventSink`] as it happens.
//!
//! The run folder appends every event to `events.jsonl` (rollouts in full to
//! `rollouts.jsonl`, proposals to `candidates/NNN.md`); the command line draws its live
//! display from the same stream. Events arrive in completion order, which varies with timing;
//! decisions never depend on it.

use serde::Serialize;
use skill_factory_core::TaskEvaluation;

use super::OptimizationResult;
use super::gate::Comparison;

/// One step of an optimization.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The run began.
    RunStarted {
        /// Optimizer name.
        optimizer: String,
        /// Name of the seed skill.
        skill: String,
        /// Tasks in each split.
        train: usize,
        /// Validation tasks.
        val: usize,
        /// Held-out test tasks (0: none).
        test: usize,
        /// Most rounds.
        rounds: usize,
        /// Model calls allowed in flight at once.
        max_workers: usize,
        /// The run's hard limits (`optimizer.budget`), so a watcher can show what is left.
        budget: crate::config::BudgetConfig,
        /// The search's metric-call limit (`optimizer.max_metric_calls`), if any.
        max_metric_calls: Option<u64>,
    },
    /// A candidate's evaluation on a split began.
    EvaluationStarted {
        /// The round (0 for the baseline and the final test).
        round: usize,
        /// Candidate number (0 is the seed).
        candidate: usize,
        /// `train`, `val`, `selection` or `test`.
        split: &'static str,
        /// Which sample of each task (0 for the first).
        #[serde(skip_serializing_if = "is_first")]
        sample: u32,
        /// Tasks to evaluate.
        tasks: usize,
        /// Of those, tasks whose result is reused from an earlier evaluation of the same body.
        reused: usize,
    },
    /// One task of an evaluation finished (reused results included).
    Rollout(RolloutRecord),
    /// A candidate's evaluation on a split finished.
    EvaluationFinished {
        /// The round.
        round: usize,
        /// Candidate number.
        candidate: usize,
        /// `train`, `val`, `selection` or `test`.
        split: &'static str,
        /// Which sample of each task (0 for the first).
        #[serde(skip_serializing_if = "is_first")]
        sample: u32,
        /// Mean score.
        score: f64,
        /// Tasks evaluated.
        tasks: usize,
        /// Rollouts that failed.
        failed: usize,
        /// False when the run stopped (Ctrl-C, budget) before every task ran: such a score
        /// decides nothing.
        complete: bool,
    },
    /// A round began.
    RoundStarted {
        /// The round, from 1.
        round: usize,
        /// Ids of the train tasks of its minibatch, in order.
        minibatch: Vec<String>,
    },
    /// The optimizer model answered one proposal request (or failed to).
    CandidateProposed {
        /// The round.
        round: usize,
        /// Candidate number given to the proposal.
        candidate: usize,
        /// Which of the round's proposals (0-based).
        index: usize,
        /// The candidate it edits.
        parent: usize,
        /// Sampling temperature of the request.
        temperature: f64,
        /// Whether it is a usable skill body.
        valid: bool,
        /// Why it was rejected without being scored, if it was.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// A usable proposal whose body is its parent's: the parent (nothing is scored).
        #[serde(skip_serializing_if = "Option::is_none")]
        unchanged_from: Option<usize>,
        /// Agent Skills guidance a valid proposal does not follow (see
        /// [`skill_factory_package::spec::validate_candidate`]).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
        /// The model's rationale.
        rationale: String,
        /// Characters of the proposed body (0 when there is none).
        body_chars: usize,
        /// Prompt tokens of the request.
        input_tokens: u64,
        /// Completion tokens of the answer.
        output_tokens: u64,
        /// The text kept in `candidates/NNN.md`: the candidate's SKILL.md, or the raw answer
        /// of an invalid proposal.
        #[serde(skip)]
        document: String,
    },
    /// A proposal was scored on the validation split.
    CandidateScored {
        /// The round.
        round: usize,
        /// Candidate number.
        candidate: usize,
        /// Mean validation score (over every sample it has, in a noisy run).
        val_score: f64,
        /// The interval of the score, at the run's confidence (`noise.confidence`).
        #[serde(skip_serializing_if = "Option::is_none")]
        interval: Option<[f64; 2]>,
        /// When the body equals an earlier candidate of the run, that candidate (its score is
        /// reused, nothing is run again).
        #[serde(skip_serializing_if = "Option::is_none")]
        same_as: Option<usize>,
    },
    /// A challenger was compared with the best skill (a gate's decision), paired by task
    /// and sample.
    Compared {
        /// The round.
        round: usize,
        /// The split it was compared on.
        split: &'static str,
        /// The difference, its interval, the bound and the decision.
        #[serde(flatten)]
        comparison: Comparison,
    },
    /// Where a candidate comes from, for lineage views.
    Lineage {
        /// The round (a `gepa` step).
        round: usize,
        /// Candidate number.
        candidate: usize,
        /// The candidate(s) it was made from: one parent, or the two of a merge.
        parents: Vec<usize>,
        /// The component it changed (`description`, `preamble`, a `## ` heading), or what the
        /// merge took from where; `body` for whole-body edits.
        component: String,
        /// `rewrite` (`llm_loop`), `mutation` or `merge` (`gepa`), `patch` (`skillopt`).
        operation: &'static str,
    },
    /// A child was compared with its parent on the same minibatch before any validation.
    Gate {
        /// The round.
        round: usize,
        /// The child's candidate number.
        candidate: usize,
        /// Its parent's.
        parent: usize,
        /// The parent's mean score on the gate's tasks.
        parent_score: f64,
        /// The child's.
        child_score: f64,
        /// Tasks compared (more than the minibatch when the gate was extended).
        tasks: usize,
        /// Whether the gate was extended because the difference was within noise.
        extended: bool,
        /// Whether the child goes on to validation.
        passed: bool,
    },
    /// The round's decision.
    Decision {
        /// The round.
        round: usize,
        /// The round's best candidate, if any was scored.
        #[serde(skip_serializing_if = "Option::is_none")]
        candidate: Option<usize>,
        /// Whether it replaced the best skill.
        accepted: bool,
        /// Its validation score (the best's when none was scored).
        val_score: f64,
        /// The best validation score before the decision.
        best_before: f64,
        /// The history note.
        note: String,
    },
    /// A round ended.
    RoundFinished {
        /// The round.
        round: usize,
        /// The best validation score after it.
        best_score: f64,
        /// Consecutive rounds without improvement.
        rounds_without_improvement: usize,
    },
    /// The search stopped.
    Stopped {
        /// `rounds`, `patience`, `budget` or `cancelled`.
        reason: &'static str,
        /// A sentence saying why.
        detail: String,
    },
    /// The best skill's headline score was measured (see `run::headline`).
    HeadlineScored {
        /// `fresh_samples` or `validation`.
        source: &'static str,
        /// Fresh samples of every validation task (0 for `validation`).
        samples: u32,
        /// The headline score.
        best_score: f64,
        /// Its interval.
        interval: [f64; 2],
        /// The best's score as the search saw it.
        search_best_score: f64,
    },
    /// The seed and the best skill were scored on the held-out test split.
    TestScored {
        /// The seed's test score.
        seed_score: f64,
        /// The best skill's test score.
        best_score: f64,
    },
    /// The run folder is complete.
    RunFinished {
        /// Validation score of the seed.
        baseline_score: f64,
        /// Validation score of the best skill.
        best_score: f64,
    },
}

/// Whether a sample number is a task's first, which events do not spell out.
fn is_first(sample: &u32) -> bool {
    *sample == 0
}

/// One task's result within an evaluation, with where it belongs.
#[derive(Debug, Clone, Serialize)]
pub struct RolloutRecord {
    /// The round.
    pub round: usize,
    /// Candidate number.
    pub candidate: usize,
    /// `train`, `val` or `test`.
    pub split: &'static str,
    /// True when the result was reused from an earlier evaluation of the same body.
    pub reused: bool,
    /// The rollout and its score (kept whole in `rollouts.jsonl`).
    #[serde(skip)]
    pub item: TaskEvaluation,
}

/// Receives events as they happen.
pub trait EventSink: Send + Sync {
    /// One event; called from many tasks at once.
    fn event(&self, event: &Event);
    /// The result as it stands after the baseline and after each round, so that a run
    /// folder stays readable even when the process is killed.
    fn checkpoint(&self, _partial: &OptimizationResult) {}
}

/// A sink that drops everything.
pub struct NoEvents;

impl EventSink for NoEvents {
    fn event(&self, _event: &Event) {}
}

/// Forwards every event to several sinks in order (the run folder, then the display).
pub struct Fanout(pub Vec<std::sync::Arc<dyn EventSink>>);

impl EventSink for Fanout {
    fn event(&self, event: &Event) {
        for sink in &self.0 {
            sink.event(event);
        }
    }

    fn checkpoint(&self, partial: &OptimizationResult) {
        for sink in &self.0 {
            sink.checkpoint(partial);
        }
    }
}
