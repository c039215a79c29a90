//! The shape of a run config: serde structs with the reference tool's keys and defaults.
//!
//! Every struct denies unknown keys, so a typo at any level becomes an error that names the
//! key (see [`super::error`]). A block that later issues add (`cache:`, `optimizer.budget`) is
//! one more field with `#[serde(default, deserialize_with = "block")]` and a `Default` impl.

mod cache;
mod check;
mod harness;
mod metric;
mod noise;
mod optimizer;
mod optimizer_kind;
mod output;
mod targets;
mod tracking;
mod trigger;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use skill_factory_llm::ProviderSettings;

pub use cache::CacheConfig;
pub use check::{Check, CheckError};
pub(crate) use check::{compile_regex, compile_schema};
pub use harness::{
    Command, CommandSplitError, ExecutorConfig, ExecutorType, HarnessConfig, HarnessType, InputVia,
    SkillMode,
};
pub use metric::{
    CommandMetricConfig, Criterion, GoldenConfig, GoldenMode, JudgeConfig, MetricConfig,
    ProgrammaticConfig, SystemOneCheck, SystemOneConfig,
};
pub use noise::{NoiseConfig, RegimeSetting};
pub use optimizer::{
    BudgetConfig, ComponentSelector, OptimizerConfig, OptimizerParams, ReflectionStyle,
    protected_name,
};
pub use optimizer_kind::{OptimizerKind, UnknownOptimizer};
pub use output::OutputConfig;
pub use targets::{ObjectiveConfig, TargetAggregate, TargetConfig};
pub use tracking::{MlflowConfig, TrackingConfig};
pub use trigger::TriggerConfig;

/// One skill-mode run: what to optimize, on which data, with which models and metric.
///
/// After [`super::load_config`], every relative path in it is already joined to the config
/// file's directory, and `metric` holds at least one metric block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// The seed SKILL.md.
    pub skill: PathBuf,
    /// The JSONL dataset.
    pub dataset: PathBuf,
    /// Fraction of the tasks in the validation split, strictly between 0 and 1 (default 0.3).
    #[serde(default = "default_val_fraction")]
    pub val_fraction: f64,
    /// Fraction of the tasks held out as a test split the optimizer never reads (default 0:
    /// no test split, and the train/val split matches the Python tool's).
    #[serde(default)]
    pub test_fraction: f64,
    /// Fraction of the tasks moved from train into a selection split, on which the search's
    /// last bests are scored once to pick the final skill (default 0: the best on
    /// validation is the pick).
    #[serde(default)]
    pub selection_fraction: f64,
    /// Seed of the train/val(/test) split only; the optimizer has its own seed.
    #[serde(default)]
    pub seed: u64,
    /// Free text about the run, shown in reports and the dashboard.
    #[serde(default)]
    pub description: Option<String>,
    /// Which mode the config is for: `skill` (the default), `trigger` (the parameter is the
    /// description, the dataset a trigger set) or `classifier` (read by `skill-factory lab`,
    /// with the keys of its own table).
    #[serde(default)]
    pub kind: Option<ConfigKind>,
    /// `kind: trigger`, or a `trigger` block: other skills (SKILL.md files or skill folders)
    /// installed beside the candidate, or listed beside it to the router, as competitors:
    /// real routing is a choice among skills.
    #[serde(default)]
    pub distractors: Vec<PathBuf>,
    /// A skill-mode run's trigger set, scored beside the tasks ([`TriggerConfig`]).
    #[serde(default)]
    pub trigger: Option<TriggerConfig>,
    /// The target model, which runs the skill. When absent or empty, `target` is used.
    #[serde(default)]
    pub provider: Option<ProviderSettings>,
    /// Alias of `provider`, read only when `provider` is absent or empty.
    #[serde(default)]
    pub target: Option<ProviderSettings>,
    /// Several targets the skill is measured on, each its own model or harness
    /// ([`TargetConfig`]); none means the one of `provider` and `harness`.
    #[serde(default)]
    pub targets: Vec<TargetConfig>,
    /// How the targets' scores make the one optimized ([`ObjectiveConfig`]).
    #[serde(default, deserialize_with = "block")]
    pub objective: ObjectiveConfig,
    /// The model that proposes skill edits. Absent or empty, it copies the target's block;
    /// without a `name`, it uses the target's provider and connection settings; its model
    /// when none is given: `SKILL_FACTORY_OPTIMIZER_MODEL`, else the target's.
    #[serde(default)]
    pub optimizer_provider: Option<ProviderSettings>,
    /// The model behind `metric.judge`, inheriting from the target as `optimizer_provider`
    /// does; its model when none is given: `SKILL_FACTORY_JUDGE_MODEL`, else the target's.
    #[serde(default)]
    pub judge_provider: Option<ProviderSettings>,
    /// The optimizer and its hyper-parameters.
    #[serde(default, deserialize_with = "block")]
    pub optimizer: OptimizerConfig,
    /// The metric blocks, combined into one weighted score.
    #[serde(default, deserialize_with = "block")]
    pub metric: MetricConfig,
    /// How the skill is run on a task.
    #[serde(default, deserialize_with = "block")]
    pub harness: HarnessConfig,
    /// Where the run and the exported skill go.
    #[serde(default, deserialize_with = "block")]
    pub output: OutputConfig,
    /// The model cache (ours): its file and mode.
    #[serde(default, deserialize_with = "block")]
    pub cache: CacheConfig,
    /// Repeated samples, intervals and statistically gated edits (ours).
    #[serde(default, deserialize_with = "block")]
    pub noise: NoiseConfig,
    /// Experiment trackers the run reports to (ours): `tracking: {mlflow: {uri, experiment}}`.
    #[serde(default, deserialize_with = "block")]
    pub tracking: TrackingConfig,
}

impl RunConfig {
    /// Whether this is a trigger run (`kind: trigger`).
    pub fn is_trigger(&self) -> bool {
        self.kind == Some(ConfigKind::Trigger)
    }

    /// Whether the run asks whether agents load the skill: a trigger run, or a skill-mode run
    /// with a `trigger` block.
    pub fn measures_triggering(&self) -> bool {
        self.is_trigger() || self.trigger.is_some()
    }

    /// Model-bound steps allowed in flight at once during `optimize`: `harness.max_workers`
    /// (default 16), or `optimizer.max_workers` when a config sets it higher. The reference
    /// read only `optimizer.max_workers` (default 1) here; taking the larger keeps its configs'
    /// intent while letting ours run in parallel by default.
    pub fn max_workers(&self) -> usize {
        self.harness
            .max_workers
            .max(self.optimizer.max_workers)
            .max(1)
    }
}

/// The JSON Schema of a skill or trigger run's config file, from the structs that read it:
/// every key, its type, its default and what it is.
pub fn config_schema() -> schemars::Schema {
    schemars::schema_for!(RunConfig)
}

/// The mode a config is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConfigKind {
    /// Optimize a SKILL.md.
    Skill,
    /// Optimize a System One probe set (classifier mode, the keys of its own table).
    Classifier,
    /// Optimize the description, scored by whether agents load the skill.
    Trigger,
}

fn default_val_fraction() -> f64 {
    0.3
}

pub(crate) use skill_factory_config::yaml::{block, optional_block};

/// A number of seconds as a duration. Loading checks that every duration key is a positive
/// number a duration can hold, so the saturation never applies to a loaded config.
pub(crate) fn duration(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
}

/// serde's `default = "..."` needs a function; weights default to 1.
pub(crate) fn one() -> f64 {
    1.0
}
