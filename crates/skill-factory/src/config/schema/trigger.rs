//! The `trigger` block of a skill-mode run: a trigger set scored beside the tasks, so that an
//! optimized body never ships with a description that stopped loading the skill.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A trigger set carried by a skill-mode run (ours; the Python tool has no such key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerConfig {
    /// The trigger set: skill-creator's eval-set format, as JSON or JSONL
    /// ([`skill_factory_core::trigger`]), relative to the config file.
    pub dataset: PathBuf,
    /// The share of the score its queries make together, strictly between 0 and 1 (default
    /// 0.5); the tasks make the rest. Every split holds queries and tasks in its fractions.
    #[serde(default = "default_weight")]
    pub weight: f64,
}

/// Queries and tasks count alike by default.
fn default_weight() -> f64 {
    0.5
}
