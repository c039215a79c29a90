//! The composite metric: a weighted mean of other metrics, dropping (not penalizing) those
//! that cannot apply to a task.
//!
//! Every part scores the rollout (concurrently: a judge call does not wait for the others).
//! A part that is not applicable adds `[<name>] skipped: <reason>` to the feedback and counts
//! in neither the numerator nor the denominator; every other part adds
//! `[<name>] score <s>: <its feedback>` and its score to the breakdown under its name. The
//! feedback lines keep the order the parts were given in. When no part applies the score is 0
//! with the feedback `no metric was applicable to this task`. Token usage is the sum of the
//! parts'.

use async_trait::async_trait;
use futures_util::future::join_all;
use skill_factory_core::{MetricResult, Rollout, Task, Usage};

use super::{Metric, MetricSetupError, NotApplicable};

/// The metric's name in feedback and breakdowns.
pub const NAME: &str = "composite";

/// The feedback when every part was dropped.
pub const NOTHING_APPLICABLE: &str = "no metric was applicable to this task";

/// A weighted mean of metrics.
pub struct CompositeMetric {
    parts: Vec<(Box<dyn Metric>, f64)>,
}

impl CompositeMetric {
    /// A composite of `(metric, weight)` parts, in the order their feedback should appear.
    /// Fails without parts or when a weight is not a positive number.
    pub fn new(parts: Vec<(Box<dyn Metric>, f64)>) -> Result<Self, MetricSetupError> {
        if parts.is_empty() {
            return Err(MetricSetupError::NoMetrics);
        }
        if let Some((metric, weight)) = parts.iter().find(|(_, w)| !(w.is_finite() && *w > 0.0)) {
            return Err(MetricSetupError::BadWeight {
                part: "metric",
                name: metric.name().to_string(),
                weight: *weight,
            });
        }
        Ok(CompositeMetric { parts })
    }

    /// The parts and their weights, in order.
    pub fn parts(&self) -> impl Iterator<Item = (&dyn Metric, f64)> {
        self.parts
            .iter()
            .map(|(metric, weight)| (metric.as_ref(), *weight))
    }
}

#[async_trait]
impl Metric for CompositeMetric {
    fn name(&self) -> &str {
        NAME
    }

    async fn score(&self, task: &Task, rollout: &Rollout) -> Result<MetricResult, NotApplicable> {
        let outcomes = join_all(
            self.parts
                .iter()
                .map(|(metric, _)| metric.score(task, rollout)),
        )
        .await;
        let mut weighted = 0.0;
        let mut total_weight = 0.0;
        let mut lines = Vec::with_capacity(self.parts.len());
        let mut parts = Vec::new();
        let mut usage = Usage::default();
        for ((metric, weight), outcome) in self.parts.iter().zip(outcomes) {
            match outcome {
                Err(NotApplicable(reason)) => {
                    lines.push(format!("[{}] skipped: {reason}", metric.name()))
                }
                Ok(result) => {
                    weighted += weight * result.score;
                    total_weight += weight;
                    usage.add(result.usage);
                    lines.push(format!(
                        "[{}] score {:.2}: {}",
                        metric.name(),
                        result.score,
                        result.feedback
                    ));
                    parts.push((metric.name().to_string(), result.score));
                }
            }
        }
        let mut result = if total_weight == 0.0 {
            MetricResult::new(NAME, 0.0, NOTHING_APPLICABLE)
        } else {
            let scored = MetricResult::new(NAME, weighted / total_weight, lines.join("\n"));
            parts
                .into_iter()
                .fold(scored, |r, (name, score)| r.with_part(name, score))
        };
        result.usage = usage;
        Ok(result)
    }
}
