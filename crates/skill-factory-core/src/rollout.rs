//! What one run of a skill on one task produced.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Tokens a model call (or several) consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Sum of input and output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Adds another usage to this one.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// The metadata key that marks a rollout whose model or program could not be reached or
/// started (a refused connection, a timeout of every attempt, an agent CLI not installed): a
/// failure no skill could cause.
pub const UNREACHABLE: &str = "unreachable";

/// The result of running a skill on one task through a harness.
///
/// A harness never fails as a whole for one task: a failed call, a crash or a timeout becomes a
/// rollout whose `error` says why, and every metric scores it 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rollout {
    /// Id of the task this rollout ran.
    pub task_id: String,
    /// What the skill produced (empty on failure).
    pub output: String,
    /// Why the rollout failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the rollout in milliseconds.
    #[serde(default)]
    pub latency_ms: f64,
    /// Tokens spent by the rollout itself (not by its scoring).
    #[serde(default)]
    pub usage: Usage,
    /// Which sample of the task this is (0 for the first): repeated samples of one task are
    /// separate draws, each cached on its own.
    #[serde(default, skip_serializing_if = "is_first")]
    pub sample: u32,
    /// Harness-specific details (return code, stderr tail, model, ...).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

/// Whether a rollout is a task's first sample, which its record does not spell out (so a
/// rollout of a run without repeated samples reads as before).
fn is_first(sample: &u32) -> bool {
    *sample == 0
}

impl Rollout {
    /// A successful rollout with the given output.
    pub fn success(task_id: impl Into<String>, output: impl Into<String>) -> Self {
        Rollout {
            task_id: task_id.into(),
            output: output.into(),
            error: None,
            latency_ms: 0.0,
            usage: Usage::default(),
            sample: 0,
            metadata: Map::new(),
        }
    }

    /// A failed rollout with the reason it failed.
    pub fn failure(task_id: impl Into<String>, error: impl Into<String>) -> Self {
        Rollout {
            task_id: task_id.into(),
            output: String::new(),
            error: Some(error.into()),
            latency_ms: 0.0,
            usage: Usage::default(),
            sample: 0,
            metadata: Map::new(),
        }
    }

    /// A failed rollout whose model or program could not be reached or started
    /// ([`UNREACHABLE`]).
    pub fn unreachable(task_id: impl Into<String>, error: impl Into<String>) -> Self {
        let mut rollout = Rollout::failure(task_id, error);
        rollout
            .metadata
            .insert(UNREACHABLE.into(), Value::Bool(true));
        rollout
    }

    /// Whether the rollout failed because its model or program could not be reached.
    pub fn is_unreachable(&self) -> bool {
        self.metadata.get(UNREACHABLE) == Some(&Value::Bool(true))
    }

    /// True when the rollout produced an output.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}
