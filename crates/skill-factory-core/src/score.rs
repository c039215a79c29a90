//! Scores: of one metric on one rollout, of one task, and of a whole evaluation.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::rollout::{Rollout, Usage};
use crate::summary::Summary;

/// The verdict of a metric on one rollout: a score in [0, 1] and the reason for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricResult {
    /// Name of the metric that produced this result (`golden`, `programmatic`, `llm_judge`, ...).
    pub name: String,
    /// Score in [0, 1].
    pub score: f64,
    /// Text that says why, written for the optimizer and for people.
    pub feedback: String,
    /// Sub-scores by component (check label, criterion, metric name).
    #[serde(default)]
    pub breakdown: BTreeMap<String, f64>,
    /// Tokens the metric itself spent (an LLM judge, for instance).
    #[serde(default)]
    pub usage: Usage,
}

impl MetricResult {
    /// A result with no breakdown. The score is clamped into [0, 1]; NaN becomes 0.
    pub fn new(name: impl Into<String>, score: f64, feedback: impl Into<String>) -> Self {
        MetricResult {
            name: name.into(),
            score: clamp_unit(score),
            feedback: feedback.into(),
            breakdown: BTreeMap::new(),
            usage: Usage::default(),
        }
    }

    /// The same result with a breakdown entry added.
    pub fn with_part(mut self, label: impl Into<String>, score: f64) -> Self {
        self.breakdown.insert(label.into(), score);
        self
    }
}

/// Clamps a score into [0, 1], mapping NaN to 0.
pub fn clamp_unit(score: f64) -> f64 {
    if score.is_nan() {
        0.0
    } else {
        score.clamp(0.0, 1.0)
    }
}

/// One task's rollout together with its score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskEvaluation {
    /// The rollout that was scored.
    pub rollout: Rollout,
    /// The metric's verdict.
    pub result: MetricResult,
    /// The task's weight ([`crate::Task::weight`]).
    #[serde(
        default = "crate::task::one",
        skip_serializing_if = "crate::task::is_one"
    )]
    pub weight: f64,
}

impl Default for TaskEvaluation {
    fn default() -> Self {
        TaskEvaluation::new(Rollout::default(), MetricResult::default())
    }
}

impl TaskEvaluation {
    /// A rollout with its verdict, of a task that counts like any other.
    pub fn new(rollout: Rollout, result: MetricResult) -> Self {
        TaskEvaluation {
            rollout,
            result,
            weight: 1.0,
        }
    }

    /// The task's score.
    pub fn score(&self) -> f64 {
        self.result.score
    }

    /// The task's id.
    pub fn task_id(&self) -> &str {
        &self.rollout.task_id
    }
}

/// All task evaluations of one skill on a set of tasks, in dataset order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Evaluation {
    /// One entry per task, in the order of the tasks evaluated.
    pub items: Vec<TaskEvaluation>,
}

impl Evaluation {
    /// The report figures of the whole evaluation, keeping its `k` worst tasks; the samples
    /// of a task (items with its id) count as that task's.
    pub fn summary(&self, k: usize) -> Summary {
        let mut summary = Summary::new(k);
        let mut index: HashMap<&str, usize> = HashMap::new();
        for item in &self.items {
            let next = index.len();
            let task = *index.entry(item.task_id()).or_insert(next);
            summary.add(task, item);
        }
        summary
    }

    /// Mean of the item scores, each by its task's weight (0 when empty): the weighted mean
    /// of the task scores when every task has as many samples.
    pub fn score(&self) -> f64 {
        let total: f64 = self.items.iter().map(|item| item.weight).sum();
        if total <= 0.0 {
            return 0.0;
        }
        self.items
            .iter()
            .map(|item| item.score() * item.weight)
            .sum::<f64>()
            / total
    }

    /// Number of items evaluated (tasks times their samples).
    pub fn size(&self) -> usize {
        self.items.len()
    }

    /// Number of rollouts that failed (harness or model error).
    pub fn failed(&self) -> usize {
        self.summary(0).failed()
    }

    /// The first rollout's error when the evaluation measured nothing
    /// ([`Summary::measured_nothing`]).
    pub fn measured_nothing(&self) -> Option<String> {
        self.summary(0).measured_nothing().map(str::to_owned)
    }

    /// The `k` lowest-scoring items, lowest first; ties keep dataset order.
    pub fn worst(&self, k: usize) -> Vec<&TaskEvaluation> {
        let mut sorted: Vec<&TaskEvaluation> = self.items.iter().collect();
        sorted.sort_by(|a, b| a.score().total_cmp(&b.score()));
        sorted.truncate(k);
        sorted
    }

    /// One line per worst item: `- task <id> (score <s>): <feedback>`.
    pub fn feedback_digest(&self, k: usize) -> String {
        self.summary(k).feedback_digest()
    }

    /// Tokens spent by rollouts and metrics together.
    pub fn usage(&self) -> Usage {
        self.summary(0).usage()
    }
}
