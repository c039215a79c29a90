//! The engine's error: everything that stops a run before it starts, written for the person
//! at the terminal (what, where, how to fix).

use std::path::PathBuf;

use skill_factory_core::{DatasetError, SkillError, SplitError};
use skill_factory_llm::{CacheError, LlmError, RecordError};

use crate::config::{ConfigError, Place};

/// Why a run could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The run config is missing, unreadable or invalid.
    #[error(transparent)]
    Config(Box<ConfigError>),
    /// A file named by the config (or the command line) could not be read.
    #[error("cannot read {what} {}: {detail}", path.display())]
    Read {
        /// What the file is (`skill file`, `dataset`).
        what: &'static str,
        /// The path that was tried.
        path: PathBuf,
        /// What the operating system said.
        detail: String,
    },
    /// The skill file is not a valid SKILL.md.
    #[error("{}: {cause}", path.display())]
    Skill {
        /// The skill file.
        path: PathBuf,
        /// What is wrong with it.
        cause: SkillError,
    },
    /// The dataset is not valid JSONL.
    #[error(transparent)]
    Dataset(Box<DatasetError>),
    /// The dataset cannot be split as configured.
    #[error("{}: {cause}", config.display())]
    Split {
        /// The config whose split settings do not fit the dataset.
        config: PathBuf,
        /// Why.
        cause: SplitError,
    },
    /// A model client cannot be built as configured (unknown provider, no key, ...).
    #[error(transparent)]
    Provider(Box<ProviderFailure>),
    /// The harness block cannot be built.
    #[error("{}: {key}: {detail}", config.display())]
    Harness {
        /// The config file.
        config: PathBuf,
        /// The key path (`harness.command`).
        key: String,
        /// What is wrong and how to fix it.
        detail: String,
    },
    /// The model cache file cannot be used (damaged, from a newer build, not writable).
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// The model recording to write or replay cannot be used.
    #[error(transparent)]
    Recording(#[from] RecordError),
    /// A metric block cannot be built.
    #[error("{}: {key}: {detail}", config.display())]
    Metric {
        /// The config file.
        config: PathBuf,
        /// The key path of the offending block (`metric.programmatic.checks[1]`).
        key: String,
        /// What is wrong and how to fix it.
        detail: String,
    },
    /// The config asks for something this version cannot do yet.
    #[error("{}: {key}: {detail}", config.display())]
    Unsupported {
        /// The config file.
        config: PathBuf,
        /// The key path.
        key: String,
        /// What is not available and what to use instead.
        detail: String,
    },
    /// The run folder cannot be created or written.
    #[error("cannot write the run folder {}: {detail}; check that the folder is writable, or pick another with -o DIR", path.display())]
    RunFolder {
        /// The folder or file.
        path: PathBuf,
        /// What the operating system said.
        detail: String,
    },
}

impl From<ConfigError> for EngineError {
    fn from(error: ConfigError) -> Self {
        EngineError::Config(Box::new(error))
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
    pub cause: LlmError,
}
