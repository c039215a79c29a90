//! Optimizers: edit a skill's body to raise its score on the validation split.
//!
//! An [`Optimizer`] gets the seed skill, the train and validation tasks and a [`RunContext`]
//! (harness, metric, one shared in-flight cap, the budget ledger, the cancel token and the
//! event sink) and returns an [`OptimizationResult`] in the reference tool's shape: the best
//! skill, the seed's and the best's validation scores and one [`CandidateRecord`] per round.
//! It never reads the held-out test split; the run scores it once afterwards.
//!
//! * [`llm_loop`]: the reference's validation-gated reflective loop, with its proposals and
//!   their validations run concurrently.
//! * [`gepa`]: reflective mutation of one component at a time, parents drawn from the
//!   per-task Pareto frontier of a pool, a minibatch gate, racing validation and merges.
//! * [`skillopt`]: bounded edit patches from a failure pass and a success pass, at most a
//!   decaying number of edits a step, accepted on strict validation improvement; or the
//!   reference's bridge to an external command when `params.command` is set.
//! * [`reflection`], [`round`]: the reflection prompt, and the asking, parsing, checking and
//!   scoring of proposals that all three share; [`component`], [`pareto`] and [`patch`]: the
//!   parts of a skill, the frontier of a pool, and edit patches; [`protect`]: the sections no
//!   candidate of any optimizer may change.
//!
//! A run builds its optimizer through an [`OptimizerPlan`]: the `optimizer` block resolved
//! once into the settings every optimizer reads and those only the selected one reads.
//!
//! An optimizer never fails as a whole: model errors become invalid proposals or failed
//! rollouts, and a budget limit or a Ctrl-C ends the search with the best skill so far and a
//! [`StopReason`].

pub mod bridge;
pub mod component;
pub mod context;
pub mod event;
pub mod gate;
pub mod gepa;
pub mod honest;
pub mod llm_loop;
pub mod minibatch;
pub mod pareto;
pub mod patch;
pub mod plan;
pub mod progress;
pub mod protect;
pub mod reflection;
pub mod round;
pub mod skillopt;

pub use context::{RunContext, identity};
pub use event::{Event, EventSink, NoEvents, RolloutRecord};
pub use gepa::Gepa;
pub use llm_loop::LlmLoop;
pub use plan::{
    BackendSettings, GepaSettings, LlmLoopSettings, MetricCallBudget, OptimizerPlan,
    SharedSettings, SkillOptSettings,
};
pub use skillopt::SkillOpt;

use async_trait::async_trait;
use serde_json::{Map, Value};
use skill_factory_core::{Skill, Task};
use skill_factory_llm::Exhaustion;

/// One recorded candidate: the seed, then one per round (the round's best proposal, or the
/// unchanged best skill when the round produced nothing to score).
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateRecord {
    /// 0 for the seed, else the round.
    pub iteration: usize,
    /// The candidate.
    pub skill: Skill,
    /// Mean score of the round's parent on the round's minibatch (for the seed: its
    /// validation score), as the reference records it.
    pub train_score: f64,
    /// Mean validation score.
    pub val_score: f64,
    /// Whether it became the best skill.
    pub accepted: bool,
    /// Its candidate number (the seed is 0); `None` for a round that scored no new skill.
    pub candidate: Option<usize>,
    /// Why: the rationale of the edit, or what went wrong.
    pub note: String,
    /// The interval of `val_score`, at the run's confidence, when the candidate was scored.
    pub interval: Option<[f64; 2]>,
    /// The gate that decided it: its paired gain over the best and why it was kept or not.
    pub comparison: Option<gate::Comparison>,
}

/// Why the search ended.
#[derive(Debug, Clone, PartialEq)]
pub enum StopReason {
    /// Every configured round ran.
    RoundsDone {
        /// Rounds run.
        rounds: usize,
    },
    /// `patience` rounds in a row brought no improvement.
    Patience {
        /// The configured patience.
        patience: usize,
    },
    /// A budget limit was reached.
    Budget(Exhaustion),
    /// The run was cancelled (Ctrl-C).
    Cancelled,
    /// No rollout of an evaluation reached its model or program (an unreachable target, an
    /// agent CLI that does not start): nothing was measured, so the search stopped instead of
    /// spending its rounds.
    RolloutsFailed {
        /// Which evaluation (`the baseline`, `round 3's minibatch`, ...).
        what: String,
        /// The first rollout's error.
        error: String,
    },
    /// No request to the optimizer model of a round reached it, each after its retries.
    OptimizerFailed {
        /// The first request's error.
        error: String,
    },
    /// The search spent its metric-call budget (`optimizer.max_metric_calls`, or the `auto`
    /// preset's).
    MetricCalls {
        /// Rollouts scored.
        used: u64,
        /// The budget.
        limit: u64,
    },
    /// The best skill scores the metric's maximum on validation: no edit can beat it, so
    /// further rounds would only spend calls.
    Perfect {
        /// The best validation score (the maximum).
        score: f64,
    },
}

/// The most any metric scores (scores are fractions of the tasks' worth, 0 to 1).
pub const METRIC_MAXIMUM: f64 = 1.0;

/// Whether `score` is the metric's maximum (within rounding of a mean).
pub fn is_perfect(score: f64) -> bool {
    score >= METRIC_MAXIMUM - 1e-9
}

impl StopReason {
    /// A short code for result files: `rounds`, `patience`, `budget`, `cancelled`,
    /// `rollouts_failed`, `optimizer_unreachable`, `perfect` or `metric_calls`.
    pub fn code(&self) -> &'static str {
        match self {
            StopReason::RoundsDone { .. } => "rounds",
            StopReason::Patience { .. } => "patience",
            StopReason::Budget(_) => "budget",
            StopReason::Cancelled => "cancelled",
            StopReason::RolloutsFailed { .. } => "rollouts_failed",
            StopReason::OptimizerFailed { .. } => "optimizer_unreachable",
            StopReason::Perfect { .. } => "perfect",
            StopReason::MetricCalls { .. } => "metric_calls",
        }
    }

    /// Whether the run stopped because nothing worked (exit 3), not because it ended or was
    /// told to stop.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            StopReason::RolloutsFailed { .. } | StopReason::OptimizerFailed { .. }
        )
    }

    /// A sentence for people.
    pub fn detail(&self) -> String {
        match self {
            StopReason::RoundsDone { rounds } => {
                format!("all {rounds} configured rounds ran")
            }
            StopReason::Patience { patience } => format!(
                "{patience} round{} in a row without improvement (optimizer.patience = {patience})",
                if *patience == 1 { "" } else { "s" }
            ),
            StopReason::Budget(exhaustion) => format!(
                "budget limit reached ({}); the best skill so far is kept",
                exhaustion.detail
            ),
            StopReason::Cancelled => {
                "cancelled (Ctrl-C); calls in flight finished and the best skill so far is kept"
                    .to_string()
            }
            StopReason::RolloutsFailed { what, error } => format!(
                "no rollout of {what} reached its model or program, so nothing was measured (first: {error}); {RESUME}"
            ),
            StopReason::OptimizerFailed { error } => {
                format!("no request reached the optimizer model (first: {error}); {RESUME}")
            }
            StopReason::MetricCalls { used, limit } => format!(
                "{used} rollouts scored, the search's budget of {limit} (optimizer.max_metric_calls, or the auto preset's)"
            ),
            StopReason::Perfect { score } => format!(
                "the best skill scores {score:.3} on validation, the metric's maximum: no edit can beat it"
            ),
        }
    }
}

/// How a run that stopped on failures is resumed.
const RESUME: &str = "fix the provider or the harness and run the same command again: the model cache keeps every answer already received";

/// What an optimization produced, in the reference tool's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizationResult {
    /// Optimizer name.
    pub optimizer: String,
    /// The best skill found (the seed when nothing beat it).
    pub best_skill: Skill,
    /// Validation score of the seed.
    pub baseline_score: f64,
    /// Validation score of the best skill.
    pub best_score: f64,
    /// The best skill's candidate number (0: the seed), as in the run folder's events.
    pub best_candidate: usize,
    /// The seed's record, then one per round.
    pub history: Vec<CandidateRecord>,
    /// Optimizer-specific facts (`llm_loop`: `rounds_run`, `valset_size`).
    pub metadata: Map<String, Value>,
    /// Why the search ended; `None` while it runs (checkpoints).
    pub stop: Option<StopReason>,
}

impl OptimizationResult {
    /// The result of a search that has not scored anything yet: the seed as the best skill,
    /// no history, no scores. A run folder holds it until the baseline is known.
    pub fn starting(optimizer: &str, seed: &Skill) -> Self {
        Self {
            optimizer: optimizer.to_string(),
            best_skill: seed.clone(),
            baseline_score: 0.0,
            best_score: 0.0,
            best_candidate: 0,
            history: Vec::new(),
            metadata: Map::new(),
            stop: None,
        }
    }

    /// Best minus baseline.
    pub fn improvement(&self) -> f64 {
        self.best_score - self.baseline_score
    }

    /// Records accepted, the seed's included.
    pub fn accepted(&self) -> usize {
        self.history.iter().filter(|r| r.accepted).count()
    }
}

/// Edits a skill to raise its validation score.
#[async_trait]
pub trait Optimizer: Send + Sync {
    /// The name recorded in reports (`llm_loop`).
    fn name(&self) -> &str;
    /// Searches from `seed`, learning from `train` and gating on `val`.
    async fn optimize(
        &self,
        seed: &Skill,
        train: &[Task],
        val: &[Task],
        context: &RunContext,
    ) -> OptimizationResult;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_have_codes_and_sentences() {
        assert_eq!(StopReason::Cancelled.code(), "cancelled");
        assert!(
            StopReason::Patience { patience: 2 }
                .detail()
                .starts_with("2 rounds in a row")
        );
    }
}
