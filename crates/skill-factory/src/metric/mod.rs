//! Metrics: score one rollout in [0, 1] and say why.
//!
//! Each metric is one module named after it; [`composite`] combines them with weights, dropping
//! (not penalizing) a metric that cannot apply to a task.

pub mod command;
pub mod composite;
pub mod golden;
pub mod json_text;
pub mod judge;
pub mod programmatic;
pub mod systemone;
pub mod text;
pub mod trigger;

pub use command::CommandMetric;
pub use composite::CompositeMetric;
pub use golden::GoldenMetric;
pub use judge::LlmJudgeMetric;
pub use programmatic::ProgrammaticMetric;
pub use systemone::SystemOneMetric;

use std::sync::Arc;

use async_trait::async_trait;
use skill_factory_core::{MetricResult, Rollout, Task};
use skill_factory_pycompat::repr::repr_float;

use crate::config::{CheckError, CommandSplitError, GoldenConfig, Role};
use crate::error::EngineError;
use crate::session::Session;

/// The signal a metric gives when it cannot score a task at all (a golden metric on a task
/// without an expected answer): the composite drops it instead of counting it as 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotApplicable(pub String);

/// What every metric gives a rollout that failed (an error instead of an output): 0, with the
/// error as feedback, as the reference tool scores it.
pub(crate) fn rollout_failed(metric: &str, error: &str) -> MetricResult {
    MetricResult::new(metric, 0.0, format!("rollout failed: {error}"))
}

/// The composite metric of the session's `metric` block, in the fixed order golden →
/// programmatic → judge → systemone → command. The judge client is built only when a judge is
/// configured, the System One client only with `metric.systemone`; a config without any metric
/// block scores with `golden` in `normalized` mode.
pub fn from_config(session: &Session) -> Result<Arc<dyn Metric>, EngineError> {
    if session.config.config.is_trigger() {
        return Ok(Arc::new(trigger::TriggerMetric));
    }
    let metric = &session.config.config.metric;
    let bad = |key: &str, detail: MetricSetupError| session.block_error(key, detail);
    let mut parts: Vec<(Box<dyn Metric>, f64)> = Vec::new();
    let default_golden = GoldenConfig::default();
    let golden = metric
        .golden
        .as_ref()
        .or(metric.is_empty().then_some(&default_golden));
    if let Some(golden) = golden {
        parts.push((Box::new(GoldenMetric::from_config(golden)), golden.weight));
    }
    if let Some(programmatic) = &metric.programmatic {
        let built = ProgrammaticMetric::from_config(programmatic)
            .map_err(|e| bad("metric.programmatic.checks", e))?;
        parts.push((Box::new(built), programmatic.weight));
    }
    if let Some(judge) = &metric.judge {
        let client = session.client(Role::Judge)?;
        let built = LlmJudgeMetric::from_config(judge, client)
            .map_err(|e| bad("metric.judge.criteria", e))?;
        parts.push((Box::new(built), judge.weight));
    }
    if let Some(systemone) = &metric.systemone {
        let built = SystemOneMetric::from_config(systemone, session)?;
        parts.push((Box::new(built), systemone.weight));
    }
    if let Some(command) = &metric.command {
        let built = CommandMetric::from_config(command, session.child_env(&command.env))
            .map_err(|e| bad("metric.command.command", e))?;
        parts.push((Box::new(built), command.weight));
    }
    let composite: Arc<dyn Metric> =
        Arc::new(CompositeMetric::new(parts).map_err(|e| bad("metric", e))?);
    if session.config.config.trigger.is_some() {
        return Ok(Arc::new(trigger::Beside::new(composite)));
    }
    Ok(composite)
}

/// Why a metric cannot be built as configured. The config's validation catches most of
/// these first; a metric built in code meets them here, with the same words.
#[derive(Debug, thiserror::Error)]
pub enum MetricSetupError {
    /// A metric with nothing to score by.
    #[error("the {metric} metric needs at least one check in 'checks'")]
    NoChecks {
        /// `programmatic` or `systemone`.
        metric: &'static str,
    },
    /// A judge without a rubric.
    #[error("the llm_judge metric needs at least one rubric criterion in 'criteria'")]
    NoCriteria,
    /// A composite of nothing.
    #[error("a composite metric needs at least one metric")]
    NoMetrics,
    /// A command metric with no program.
    #[error("the command metric needs a command: give 'command' at least a program name")]
    NoCommand,
    /// A weight that is zero, negative or not a number: the weighted mean would be
    /// meaningless.
    #[error(
        "{part} '{name}' has weight {}: a weight must be a number greater than 0",
        repr_float(*weight)
    )]
    BadWeight {
        /// What is weighted: `metric`, `criterion` or `check`.
        part: &'static str,
        /// Its name.
        name: String,
        /// The weight given.
        weight: f64,
    },
    /// Two System One checks with one name, which would share a breakdown entry.
    #[error("check name '{0}' is used twice: give every check its own name")]
    DuplicateCheck(String),
    /// A System One threshold that is not a probability.
    #[error("threshold {} is not a probability between 0 and 1", repr_float(*.0))]
    Threshold(f64),
    /// A programmatic check whose pattern or schema does not compile.
    #[error(transparent)]
    Check(#[from] CheckError),
    /// A command string that cannot be split into arguments.
    #[error(transparent)]
    Command(#[from] CommandSplitError),
}

/// Scores one rollout of one task.
#[async_trait]
pub trait Metric: Send + Sync {
    /// The metric's name, used in feedback (`[golden] ...`) and breakdowns.
    fn name(&self) -> &str;
    /// Scores the rollout, or says why this metric does not apply to the task.
    async fn score(&self, task: &Task, rollout: &Rollout) -> Result<MetricResult, NotApplicable>;
}

/// A metric that scores only rollouts that produced an output: a failed rollout gets
/// [`rollout_failed`] under the metric's name before [`ScoresOutput::score_output`] is asked.
/// The command, programmatic, judge and System One metrics share this guard through the one
/// [`Metric`] impl below, so none of them can drift from the reference tool's zero for a
/// failed rollout. (The golden metric first says whether it applies at all, so it implements
/// [`Metric`] itself.)
#[async_trait]
pub(crate) trait ScoresOutput: Send + Sync {
    /// The metric's name, used in feedback and breakdowns.
    const NAME: &'static str;
    /// Scores a rollout that has an output, or says why this metric does not apply.
    async fn score_output(&self, task: &Task, rollout: &Rollout) -> Scored;
}

/// What scoring one rollout gives: its result, or why the metric does not apply.
pub(crate) type Scored = Result<MetricResult, NotApplicable>;

#[async_trait]
impl<M: ScoresOutput> Metric for M {
    fn name(&self) -> &str {
        M::NAME
    }

    async fn score(&self, task: &Task, rollout: &Rollout) -> Result<MetricResult, NotApplicable> {
        if let Some(error) = &rollout.error {
            return Ok(rollout_failed(M::NAME, error));
        }
        self.score_output(task, rollout).await
    }
}
