//! The engine's error: everything that stops a run before it starts, written for the person
//! at the terminal (what, where, how to fix).

use std::path::PathBuf;

use skill_factory_core::trigger::TriggerSetError;
use skill_factory_core::{DatasetError, SkillError, SplitError};
use skill_factory_io::input::InputError;
use skill_factory_llm::{CacheError, LlmError, RecordError};

use crate::config::{ConfigError, Place};

/// Why a run could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The run config is missing, unreadable or invalid.
    #[error(transparent)]
    Config(Box<ConfigError>),
    /// A file named by the config (or the command line) cannot be read: missing, not a
    /// regular file, too large, not UTF-8.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The skill file is not a valid SKILL.md.
    #[error("{}: {cause}", path.display())]
    Skill {
        /// The skill file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        cause: SkillError,
    },
    /// The dataset is not valid JSONL.
    #[error(transparent)]
    Dataset(Box<DatasetError>),
    /// The trigger set of a trigger run cannot be read.
    #[error(transparent)]
    TriggerSet(Box<TriggerSetError>),
    /// The dataset cannot be split as configured.
    #[error("{} (dataset {}): {cause}", config.display(), dataset.display())]
    Split {
        /// The config whose split settings do not fit the dataset.
        config: PathBuf,
        /// The dataset.
        dataset: PathBuf,
        /// Why.
        #[source]
        cause: SplitError,
    },
    /// A model client cannot be built as configured (unknown provider, no key, ...).
    #[error(transparent)]
    Provider(Box<ProviderFailure>),
    /// A block of the config cannot be built as written (a harness whose program cannot be
    /// run, a System One provider without a key, an optimizer this build lacks).
    #[error("{place}: {key}: {detail}")]
    Block {
        /// The config file and the line of the block.
        place: Place,
        /// The key path of the block (`harness.command`, `metric.programmatic.checks[1]`).
        key: String,
        /// What is wrong and how to fix it.
        detail: String,
    },
    /// An output of the run is one of its inputs (`cache.path: dataset.jsonl`), which writing
    /// it would destroy.
    #[error("{}{key} {} is the run's {what} ({}); writing there would destroy it: point {key} at another path", place.as_ref().map(|p| format!("{p}: ")).unwrap_or_default(), path.display(), input.display())]
    OutputIsInput {
        /// The config file and line, when a config key names the output.
        place: Option<Place>,
        /// The config key, variable or flag that names the output (`cache.path`, `--emit`).
        key: String,
        /// The output as given.
        path: PathBuf,
        /// What the input is (`dataset`, `skill`, ...).
        what: &'static str,
        /// The input it is, resolved.
        input: PathBuf,
    },
    /// The model cache file cannot be used (damaged, from a newer build, not writable).
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// The model recording to write or replay cannot be used.
    #[error(transparent)]
    Recording(#[from] RecordError),
    /// The run folder cannot be created or written.
    #[error(
        "cannot write the run folder {}: {source}; {}, or pick another folder with -o DIR",
        path.display(),
        skill_factory_io::hint::write_hint(source)
    )]
    RunFolder {
        /// The folder or file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
}

impl From<ConfigError> for EngineError {
    fn from(error: ConfigError) -> Self {
        EngineError::Config(Box::new(error))
    }
}

impl From<TriggerSetError> for EngineError {
    fn from(error: TriggerSetError) -> Self {
        EngineError::TriggerSet(Box::new(error))
    }
}

impl From<DatasetError> for EngineError {
    fn from(error: DatasetError) -> Self {
        EngineError::Dataset(Box::new(error))
    }
}

/// ` (used by the judge, which has no block of its own)` when a role's settings come from the
/// target's block, so the message says why that block is named.
fn inherited_text(role: &str, key: &str) -> String {
    if role == "target" || key.starts_with(role) {
        String::new()
    } else {
        format!(" (used by the {role}, which has no block of its own)")
    }
}

/// Why a role's model client cannot be built, placed at the config block it comes from.
#[derive(Debug, thiserror::Error)]
#[error("{place}: {key}{}: {cause}", inherited_text(role, key))]
pub struct ProviderFailure {
    /// The config file and the line of the block.
    pub place: Place,
    /// The block's top-level key (`provider`, `optimizer_provider`, ...).
    pub key: &'static str,
    /// Which role (`target`, `judge`, `optimizer`).
    pub role: &'static str,
    /// Why.
    #[source]
    pub cause: LlmError,
}
