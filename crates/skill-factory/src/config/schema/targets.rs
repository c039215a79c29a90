//! The `targets` list and the `objective` block: one skill run on several targets, each a
//! model or an agent, and how their scores make the one an optimizer climbs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use skill_factory_llm::ProviderSettings;

use super::harness::HarnessConfig;

/// One target of a run: where the skill is measured (ours; the Python tool has one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    /// The target's name in tables, `result.json`, `--targets` and `objective.weights`
    /// (letters, digits, `-`, `_` and `.`).
    pub name: String,
    /// The model that runs the skill on this target; the run's `provider` when absent.
    #[serde(default)]
    pub provider: Option<ProviderSettings>,
    /// How the skill runs on this target; the run's `harness` when absent (the whole block
    /// is replaced, not merged).
    #[serde(default)]
    pub harness: Option<HarnessConfig>,
    /// Whether the optimizer climbs this target's score (default true); a target with
    /// `optimize: false` is measured at the end only, seed and best, as a transfer check.
    #[serde(default = "yes")]
    pub optimize: bool,
}

fn yes() -> bool {
    true
}

/// How the scores of the optimized targets make one (ours).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectiveConfig {
    /// `mean` (default): the weighted mean of the targets' scores; `min`: the same mean, but
    /// an edit that loses on any target is refused, so the worst target never falls.
    #[serde(default)]
    pub aggregate: TargetAggregate,
    /// Each optimized target's weight in the mean, by name (1 when absent).
    #[serde(default)]
    pub weights: BTreeMap<String, f64>,
}

/// How the targets' scores are combined.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TargetAggregate {
    /// The weighted mean.
    #[default]
    Mean,
    /// The weighted mean, with no target allowed to fall.
    Min,
}

impl ObjectiveConfig {
    /// The weight of target `name`.
    pub fn weight(&self, name: &str) -> f64 {
        self.weights.get(name).copied().unwrap_or(1.0)
    }
}
