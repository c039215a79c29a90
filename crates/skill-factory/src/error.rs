//! The engine's error: everything that stops a run before it starts, written for the person
//! at the terminal (what, where, how to fix).

use std::path::PathBuf;

use skill_factory_core::{DatasetError, SkillError, SplitError};
use skill_factory_llm::LlmError;

use crate::config::ConfigError;

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
    #[error("{}: {source}", path.display())]
    Skill {
        /// The skill file.
        path: PathBuf,
        /// What is wrong with it.
        source: SkillError,
    },
    /// The dataset is not valid JSONL.
    #[error(transparent)]
    Dataset(Box<DatasetError>),
    /// The dataset cannot be split as configured.
    #[error("{}: {source}", config.display())]
    Split {
        /// The config whose split settings do not fit the dataset.
        config: PathBuf,
        /// Why.
        source: SplitError,
    },
    /// A model client cannot be built as configured (unknown provider, no key, ...).
    #[error("{role} provider: {source}")]
    Provider {
        /// Which role (`target`, `judge`, `optimizer`).
        role: &'static str,
        /// Why.
        source: LlmError,
    },
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
