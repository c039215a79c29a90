//! The metric of trigger runs ([`crate::harness::trigger`]): trigger accuracy; beside a
//! skill-mode run's own metric when the run carries a trigger set ([`Beside`]).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use skill_factory_core::trigger::{LOADED_KEY, LOADED_SKILLS, should_trigger};
use skill_factory_core::{MetricResult, Rollout, Task};

use super::{Metric, NotApplicable, rollout_failed};

/// Trigger accuracy: 1 for the right decision, 0 for the wrong one, with feedback that says
/// which way it went.
pub struct TriggerMetric;

/// The metric's name.
pub const TRIGGER: &str = "trigger";

#[async_trait]
impl Metric for TriggerMetric {
    fn name(&self) -> &str {
        TRIGGER
    }

    async fn score(&self, task: &Task, rollout: &Rollout) -> Result<MetricResult, NotApplicable> {
        let Some(should) = should_trigger(task) else {
            return Err(NotApplicable(format!(
                "task {} has no should_trigger",
                task.id
            )));
        };
        if let Some(error) = &rollout.error {
            return Ok(rollout_failed(TRIGGER, error));
        }
        let loaded = rollout
            .metadata
            .get(LOADED_KEY)
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let others: Vec<&str> = rollout
            .metadata
            .get(LOADED_SKILLS)
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let (score, feedback) = match (should, loaded) {
            (true, true) => (1.0, "loaded, as it should".to_owned()),
            (false, false) => (1.0, "did not load, as it should".to_owned()),
            (true, false) if !others.is_empty() => (
                0.0,
                format!(
                    "should have loaded, did not: the agent loaded {} instead",
                    others.join(", ")
                ),
            ),
            (true, false) => (
                0.0,
                "should have loaded, did not: the description did not make the agent load it for this request"
                    .to_owned(),
            ),
            (false, true) => (
                0.0,
                "loaded for a query it should not: the description claims this request, which the skill does not serve"
                    .to_owned(),
            ),
        };
        Ok(MetricResult::new(TRIGGER, score, feedback))
    }
}

/// A skill-mode run's metric when it carries a trigger set: trigger accuracy for the queries
/// ([`should_trigger`]), the run's own metric for the tasks.
pub struct Beside {
    tasks: Arc<dyn Metric>,
}

impl Beside {
    /// The metric of `tasks`, with [`TriggerMetric`] for the trigger set.
    pub fn new(tasks: Arc<dyn Metric>) -> Self {
        Beside { tasks }
    }
}

#[async_trait]
impl Metric for Beside {
    fn name(&self) -> &str {
        self.tasks.name()
    }

    async fn score(&self, task: &Task, rollout: &Rollout) -> Result<MetricResult, NotApplicable> {
        if should_trigger(task).is_some() {
            TriggerMetric.score(task, rollout).await
        } else {
            self.tasks.score(task, rollout).await
        }
    }
}
