//! What an optimization reports while it works: one [`Event`] per step (evaluation, rollout,
//! proposal, score, decision, round), written by the engine to `events.jsonl` as an
//! [`EventLine`] (with its sequence number, time and what the run had spent) and read back by
//! the dashboard, the gallery and the CLI's live display.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use skill_factory_core::TaskEvaluation;
use skill_factory_core::stats::Estimate;

/// A word from a fixed set (`train`, `val`; `rewrite`, `merge`; a stop reason's code): written
/// from the engine's constants, read back as owned text.
pub type Label = Cow<'static, str>;

/// One line of `events.jsonl`: read as an `EventLine`, written as an `EventLine<&Event>` (no
/// copy of the event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventLine<E = Event> {
    /// The line's number in the file, from 1.
    pub seq: u64,
    /// When it was written: `2026-03-04T05:06:07.123Z`.
    pub ts: String,
    /// The event.
    #[serde(flatten)]
    pub event: E,
    /// What the run had spent when it was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent: Option<Spent>,
    /// The candidate's file (`candidates/NNN.md`), on a `candidate_proposed` line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// What a run had spent at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// Model calls, cached ones included.
    pub calls: u64,
    /// Of those, answered from the cache.
    pub cached_calls: u64,
    /// Tokens, in and out.
    pub tokens: u64,
    /// Dollars (to six places).
    pub usd: f64,
}

/// A run's hard limits (`optimizer.budget`), as the run started with them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Most model calls.
    pub max_calls: Option<u64>,
    /// Most tokens.
    pub max_tokens: Option<u64>,
    /// Most dollars.
    pub max_usd: Option<f64>,
    /// Most minutes.
    pub max_minutes: Option<f64>,
}

/// Whether rollouts of a run can vary, which decides how its gates compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Regime {
    /// Rollouts cannot vary.
    Deterministic,
    /// Rollouts can vary.
    Noisy,
}

/// A gate's comparison of a challenger with the best skill, paired by task and sample: with
/// the raw estimate in events, and rounded in `result.json`
/// ([`ComparisonRecord`](crate::result::ComparisonRecord)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison<D = Estimate> {
    /// The incumbent's candidate number.
    pub incumbent: usize,
    /// The challenger's. The seed is never a challenger, so 0 stands for "named by where the
    /// comparison is": a `result.json` history record, which is the challenger, leaves it out.
    #[serde(default, skip_serializing_if = "named_by_place")]
    pub challenger: usize,
    /// The regime it was decided in.
    pub regime: Regime,
    /// The challenger's paired gain over the incumbent (B − A per task), with its interval.
    pub difference: D,
    /// The bound the decision compared with `min_delta`: the one-sided lower bound, corrected
    /// for the looks and rivals (noisy runs); the plain difference of means (deterministic).
    pub bound: f64,
    /// The margin the gain had to clear.
    pub min_delta: f64,
    /// Whether the challenger was kept.
    pub accepted: bool,
    /// Looks taken (chunks of the first look count one each).
    pub looks: usize,
    /// Samples of each task the decision rested on.
    pub samples: u32,
    /// Why, in words.
    pub reason: String,
    /// Over several targets: the challenger's paired gain on each, by target name.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub per_target: std::collections::BTreeMap<String, f64>,
}

/// One step of an optimization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
        /// Most rounds; 0 when the search has no round limit (`gepa`, whose metric-call
        /// budget ends it).
        rounds: usize,
        /// Model calls allowed in flight at once.
        max_workers: usize,
        /// The run's hard limits (`optimizer.budget`), so a watcher can show what is left.
        budget: Budget,
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
        split: Label,
        /// Which sample of each task (0 for the first).
        #[serde(default, skip_serializing_if = "is_first")]
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
        split: Label,
        /// Which sample of each task (0 for the first).
        #[serde(default, skip_serializing_if = "is_first")]
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
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// A usable proposal whose body is its parent's: the parent (nothing is scored).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unchanged_from: Option<usize>,
        /// Agent Skills guidance a valid proposal does not follow (see
        /// `skill_factory_package::spec::validate_candidate`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
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
        #[serde(default, skip_serializing_if = "Option::is_none")]
        interval: Option<[f64; 2]>,
        /// When the body equals an earlier candidate of the run, that candidate (its score is
        /// reused, nothing is run again).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        same_as: Option<usize>,
    },
    /// A challenger was compared with the best skill (a gate's decision), paired by task
    /// and sample.
    Compared {
        /// The round.
        round: usize,
        /// The split it was compared on.
        split: Label,
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
        operation: Label,
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
        #[serde(default, skip_serializing_if = "Option::is_none")]
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
        reason: Label,
        /// A sentence saying why.
        detail: String,
    },
    /// The best skill's headline score was measured (the engine's `run::headline`).
    HeadlineScored {
        /// `fresh_samples` or `validation`.
        source: Label,
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

/// Whether a comparison's challenger is left to the record that holds it (see
/// [`Comparison::challenger`]).
fn named_by_place(challenger: &usize) -> bool {
    *challenger == 0
}

/// Whether a sample number is a task's first, which events do not spell out.
fn is_first(sample: &u32) -> bool {
    *sample == 0
}

/// One task's result within an evaluation, with where it belongs. The line of
/// `events.jsonl` carries its summary; `rollouts.jsonl` the rollout whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutRecord {
    /// The round.
    pub round: usize,
    /// Candidate number.
    pub candidate: usize,
    /// `train`, `val`, `selection` or `test`.
    pub split: Label,
    /// True when the result was reused from an earlier evaluation of the same body.
    pub reused: bool,
    /// The task.
    pub task_id: String,
    /// Which sample of the task (0 for the first).
    #[serde(default, skip_serializing_if = "is_first")]
    pub sample: u32,
    /// Its score.
    pub score: f64,
    /// Whether the rollout failed (no output to score).
    pub failed: bool,
    /// Tokens of the rollout and of its scoring.
    pub tokens: u64,
    /// The rollout and its score, in the process that ran it (kept whole in
    /// `rollouts.jsonl`, not in the event).
    #[serde(skip)]
    pub item: TaskEvaluation,
}

impl RolloutRecord {
    /// The record of `item`, with its summary.
    pub fn new(
        round: usize,
        candidate: usize,
        split: impl Into<Label>,
        reused: bool,
        item: TaskEvaluation,
    ) -> RolloutRecord {
        RolloutRecord {
            round,
            candidate,
            split: split.into(),
            reused,
            task_id: item.task_id().to_string(),
            sample: item.rollout.sample,
            score: item.score(),
            failed: !item.rollout.ok(),
            tokens: item.rollout.usage.total() + item.result.usage.total(),
            item,
        }
    }
}
