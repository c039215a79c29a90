//! The `noise` block (ours): repeated samples, intervals and statistically gated edits.

use serde::{Deserialize, Serialize};
use skill_factory_core::Aggregate;

/// How a run treats the variation of its rollouts: how many samples a task gets, how sure a
/// gate must be, and whether the run is noisy at all. Every key has a default, so a config
/// without the block (the Python tool's) gets noise-aware gates exactly when its rollouts can
/// vary.
// What the keys drive: `crate::noise`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoiseConfig {
    /// `auto` (default): noisy when rollouts can vary (a temperature above 0, a process
    /// harness, an LLM judge, or repeated samples that disagree); `noisy` or `deterministic`
    /// to say so.
    #[serde(default)]
    pub regime: RegimeSetting,
    /// Samples of every task in `evaluate`, of the baseline, and of a gate's first look
    /// (default 1; `--samples` overrides it).
    #[serde(default = "one")]
    pub samples: u32,
    /// Most samples of a task a gate draws while its decision is still open, in a noisy run
    /// (default 4).
    #[serde(default = "default_max_samples")]
    pub max_samples: u32,
    /// Confidence of every interval (default 0.95); a noisy run keeps an edit only when the
    /// lower end of this interval of its paired gain clears `min_delta`, so it keeps an edit
    /// that does not help at most `(1 − confidence) / 2` of the time.
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    /// How a task's samples make its score: `mean` (default), `pass_at_k` (any sample passes)
    /// or `pass_all_k` (every sample passes).
    #[serde(default)]
    pub aggregate: Aggregate,
    /// The score at which a sample passes, for `pass_at_k` and `pass_all_k` (default 1.0).
    #[serde(default = "default_pass_score")]
    pub pass_score: f64,
}

/// Whether a run is noisy: found out, or said.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RegimeSetting {
    /// Noisy when rollouts can vary.
    #[default]
    Auto,
    /// Always noisy: paired, sequential gates and fresh samples for the headline.
    Noisy,
    /// Never noisy: every comparison is the plain comparison of means (as the Python tool).
    Deterministic,
}

impl Default for NoiseConfig {
    fn default() -> Self {
        NoiseConfig {
            regime: RegimeSetting::default(),
            samples: one(),
            max_samples: default_max_samples(),
            confidence: default_confidence(),
            aggregate: Aggregate::default(),
            pass_score: default_pass_score(),
        }
    }
}

fn one() -> u32 {
    1
}

fn default_max_samples() -> u32 {
    4
}

fn default_confidence() -> f64 {
    0.95
}

fn default_pass_score() -> f64 {
    1.0
}
