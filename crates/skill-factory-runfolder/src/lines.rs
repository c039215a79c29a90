//! The lines of `rollouts.jsonl` (every rollout in full) and `tasks.jsonl` (every task with
//! its split), written by the engine and read by the dashboard's per-task table.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use skill_factory_core::Task;

use crate::event::Label;

/// One line of `rollouts.jsonl`: written borrowing the rollout's texts (no copy of an agent's
/// output), read back owning them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RolloutLine<'a> {
    /// The line's number in the file, from 1.
    #[serde(default)]
    pub seq: u64,
    /// When it was written.
    #[serde(default)]
    pub ts: String,
    /// The round.
    #[serde(default)]
    pub round: usize,
    /// Candidate number.
    #[serde(default)]
    pub candidate: usize,
    /// `train`, `val`, `selection` or `test`.
    #[serde(default)]
    pub split: Label,
    /// The task.
    pub task_id: Cow<'a, str>,
    /// Which sample of the task (0 for the first).
    #[serde(default)]
    pub sample: u32,
    /// Its score.
    #[serde(default)]
    pub score: f64,
    /// What the agent answered.
    #[serde(default)]
    pub output: Cow<'a, str>,
    /// Why the rollout failed, if it did.
    #[serde(default)]
    pub error: Option<Cow<'a, str>>,
    /// The metric's feedback.
    #[serde(default)]
    pub feedback: Cow<'a, str>,
    /// The metric's parts.
    #[serde(default)]
    pub breakdown: Cow<'a, BTreeMap<String, f64>>,
    /// Prompt tokens of the rollout.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens of the rollout.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens of its scoring.
    #[serde(default)]
    pub metric_input_tokens: u64,
    /// Completion tokens of its scoring.
    #[serde(default)]
    pub metric_output_tokens: u64,
    /// How long the rollout took.
    #[serde(default)]
    pub latency_ms: f64,
    /// True when the result was reused from an earlier evaluation of the same body.
    #[serde(default)]
    pub reused: bool,
    /// What the harness recorded.
    #[serde(default)]
    pub metadata: Cow<'a, Map<String, Value>>,
}

/// One line of `tasks.jsonl`: a task and its split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskLine {
    /// `train`, `val` or `test`.
    pub split: String,
    /// The task.
    #[serde(flatten)]
    pub task: Task,
}
