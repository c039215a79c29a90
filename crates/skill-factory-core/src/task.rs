//! One unit of evaluation data.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One task of a dataset: the input handed to the skill and, optionally, the answer it should give.
///
/// `input` and `expected` are always text: non-string JSON values in the dataset are stored as
/// pretty-printed JSON, exactly as the reference tool does, so metrics see the same strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Unique id within its dataset (the record index when the dataset gives none).
    pub id: String,
    /// The text given to the skill.
    pub input: String,
    /// The gold answer, if the dataset has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// Free-form metadata carried along for harnesses, metrics and reports.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// How much the task counts in a score against the others of its evaluation (1; a
    /// skill-mode run with a trigger set weighs its queries apart, so that together they
    /// make `trigger.weight` of the score).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub weight: f64,
}

/// The weights of `tasks`, in their order, for the statistics of their scores
/// ([`crate::stats::Weights`]).
pub fn weights(tasks: &[Task]) -> Vec<f64> {
    tasks.iter().map(|task| task.weight).collect()
}

/// The weight of a task that counts like any other.
pub(crate) fn one() -> f64 {
    1.0
}

/// Whether `weight` is that of a task that counts like any other (left out of files).
#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
pub(crate) fn is_one(weight: &f64) -> bool {
    *weight == 1.0
}

impl Task {
    /// A task with no expected answer and no metadata.
    pub fn new(id: impl Into<String>, input: impl Into<String>) -> Self {
        Task {
            id: id.into(),
            input: input.into(),
            expected: None,
            metadata: Map::new(),
            weight: 1.0,
        }
    }

    /// The same task with a gold answer.
    pub fn with_expected(mut self, expected: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self
    }
}
