//! Run configs: the YAML file that describes one skill-mode run.
//!
//! [`load_config`] reads a file into a [`LoadedConfig`]: the checked [`RunConfig`], the
//! file's directory, a short run name and the `.env` values. [`parse_config`] does the parse
//! and checks on a text alone, through the loader classifier mode shares
//! (`skill_factory_config`). [`is_classifier_config`] tells the CLI which mode a file is for.
//!
//! The keys and defaults are those of the reference tool (`skill-factory` 0.2.0), so its
//! configs load unchanged; ours adds `test_fraction`, `description` and the optional provider
//! keys of [`skill_factory_llm::ProviderSettings`].
//!
//! # Deliberate differences from the reference tool
//!
//! * **Unknown keys are errors**, at every level (provider and metric blocks included), with
//!   the closest valid key: `unknown key 'roundz' in optimizer (x/config.yaml line 12); did you
//!   mean 'rounds'?`. The reference silently ignores them, so a typo fell back to a default.
//! * **Every relative path resolves against the config file's directory**: `skill`, `dataset`,
//!   `output.dir`, `output.emit_skill_dir`, `harness.cwd`, `metric.systemone.cache`,
//!   `metric.command.cwd`, `optimizer.params.work_dir`, `optimizer.params.cwd`, `cache.path`,
//!   a fake provider's `script` and a local provider's `model` (a GGUF file). The reference does
//!   this for `skill` and `dataset` only, and the rest depended on the working directory. Paths in a [`LoadedConfig`] are already joined.
//! * **`.env` is read**: `.env` in the working directory, then `.env` beside the config (which
//!   wins). Values never override the process environment, and the process environment is not
//!   changed: look variables up with [`LoadedConfig::env`].
//! * **A block written with nothing under it** (`optimizer:` or `optimizer: null`, also
//!   `metric.golden:`) is an error that says so, where the reference crashed. Provider blocks
//!   are the exception: a null provider block counts as absent.
//! * **Duplicate keys are an error** (the reference kept the last one silently).
//! * **Values are checked when loading**: weights > 0, `val_fraction` in (0, 1), counts ≥ 1,
//!   non-empty judge criteria and checks with unique names, a `command` for a subprocess
//!   harness; each error names the key path (`metric.judge.criteria[1].weight`).
//! * `harness.max_workers` defaults to 16 (reference: 1).
//!
//! # Resolved roles
//!
//! A run uses up to three models, each described by a provider block. `provider` describes the
//! target; when it is absent or empty, `target` is read instead. [`ResolvedRoles`] (from
//! [`RunConfig::roles`]) holds all three, each a [`Role`], with a provider name and a model
//! always filled in. [`load_config`] resolves them once, with the environment and `.env` of
//! that moment, and every part of the run reads them from there
//! ([`LoadedConfig::role`]): the target, the judge and the optimizer cannot disagree about a
//! variable that changed while the run was going.
//!
//! | role | block | model when the block gives none |
//! |---|---|---|
//! | target | `provider` / `target` | `SKILL_FACTORY_TARGET_MODEL`, else `claude-sonnet-5` |
//! | optimizer | `optimizer_provider` | `SKILL_FACTORY_OPTIMIZER_MODEL`, else the target's model if the role inherits from a given target, else `claude-opus-4-8` |
//! | judge | `judge_provider` | `SKILL_FACTORY_JUDGE_MODEL`, else the target's resolved model |
//!
//! How the optimizer and judge blocks relate to the target (fixing the reference, where every
//! role defaulted to `anthropic` on its own, so an LM Studio target without a
//! `judge_provider` sent the LM Studio model name to Anthropic):
//!
//! * **Block absent or empty, target given**: the role copies the target's whole block
//!   (name, `base_url`, `api_key`, model, ...); only the role's own model variable, when set,
//!   replaces the model.
//! * **Block present without `name`**: the role uses the target's provider, and takes the
//!   target's connection settings (`base_url`, `api_key`, `api_version`, timeouts, limits,
//!   fake script) wherever the block leaves them out; its model is its own, else its variable,
//!   else (when a target block is given) the target's model, else the table's default.
//! * **Block with a `name`**: stands alone, as in the reference.
//! * **No block anywhere**: every role is `anthropic`, with the default models above.
//!
//! A target counts as given when `provider` or `target` holds anything. So a config with no
//! provider blocks resolves exactly as in the reference, while a config with an
//! `anthropic`/`claude-sonnet-5` target and no `optimizer_provider` now optimizes with
//! `claude-sonnet-5` (reference: `claude-opus-4-8`) unless `SKILL_FACTORY_OPTIMIZER_MODEL` says
//! otherwise.
//!
//! Provider names are compared case-insensitively with surrounding blanks ignored; resolved
//! names are lower-case. Empty variables count as unset.

mod load;
mod parse;
mod roles;
mod schema;
mod validate;

#[cfg(test)]
mod tests;

pub(crate) use load::resolve_paths;
pub use load::{LoadedConfig, config_name, load_config};
pub use parse::parse_config;
pub use roles::{
    DEFAULT_OPTIMIZER_MODEL, DEFAULT_PROVIDER, DEFAULT_TARGET_MODEL, EnvLookup, JUDGE_MODEL_ENV,
    OPTIMIZER_MODEL_ENV, ResolvedRoles, Role, TARGET_MODEL_ENV,
};
pub use schema::{
    BudgetConfig, CacheConfig, Check, CheckError, Command, CommandMetricConfig, CommandSplitError,
    ComponentSelector, ConfigKind, Criterion, ExecutorConfig, ExecutorType, GoldenConfig,
    GoldenMode, HarnessConfig, HarnessType, InputVia, JudgeConfig, MetricConfig, MlflowConfig,
    NoiseConfig, ObjectiveConfig, OptimizerConfig, OptimizerKind, OptimizerParams, OutputConfig,
    ProgrammaticConfig, ReflectionStyle, RegimeSetting, RunConfig, SkillMode, SystemOneCheck,
    SystemOneConfig, TargetAggregate, TargetConfig, TrackingConfig, TriggerConfig,
    UnknownOptimizer, config_schema, protected_name,
};
pub(crate) use schema::{compile_regex, compile_schema};
pub use skill_factory_config::{ConfigError, Place, closest, is_classifier_config};
