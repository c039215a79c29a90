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
pub mod pyregex;
pub mod systemone;
pub mod text;

pub use command::CommandMetric;
pub use composite::CompositeMetric;
pub use golden::{GoldenMetric, GoldenMode};
pub use judge::{Criterion, LlmJudgeMetric};
pub use programmatic::{Check, ProgrammaticMetric};
pub use systemone::{SystemOneCheck, SystemOneMetric};

use async_trait::async_trait;
use skill_factory_core::{MetricResult, Rollout, Task};

/// The signal a metric gives when it cannot score a task at all (a golden metric on a task
/// without an expected answer): the composite drops it instead of counting it as 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotApplicable(pub String);

/// What every metric gives a rollout that failed (an error instead of an output): 0, with the
/// error as feedback, as the reference tool scores it.
pub(crate) fn rollout_failed(metric: &str, error: &str) -> MetricResult {
    MetricResult::new(metric, 0.0, format!("rollout failed: {error}"))
}

/// Scores one rollout of one task.
#[async_trait]
pub trait Metric: Send + Sync {
    /// The metric's name, used in feedback (`[golden] ...`) and breakdowns.
    fn name(&self) -> &str;
    /// Scores the rollout, or says why this metric does not apply to the task.
    async fn score(&self, task: &Task, rollout: &Rollout) -> Result<MetricResult, NotApplicable>;
}
