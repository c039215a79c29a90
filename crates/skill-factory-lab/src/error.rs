//! The one error type of classifier mode.

use std::path::PathBuf;

use skill_factory_llm::systemone::SystemOneError;

/// Why a classifier-mode command could not do what it was asked. Every variant is the user's
/// to fix (exit code 2); failed System One requests are not errors but counts in a report.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// Bad input: the message names the file, line or key and says what to do.
    #[error("{0}")]
    Invalid(String),
    /// A file that must exist does not.
    #[error("{} not found{hint}", path.display())]
    NotFound {
        /// The missing file.
        path: PathBuf,
        /// What to do about it, starting with `: ` (or empty).
        hint: String,
    },
    /// A sealed split (test, held-out) was asked for outside `lab report` after a freeze.
    #[error("{0}")]
    Sealed(String),
    /// Requests are needed but no System One model can be reached.
    #[error("{0}")]
    Offline(String),
    /// Some System One requests failed, so the work that needed every answer was not done;
    /// a rerun asks only for the missing answers.
    #[error("{0}")]
    RequestsFailed(String),
    /// A file could not be read or written.
    #[error("{}: {source}{}", path.display(), io_hint(source))]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A file the user named cannot be read: not a regular file, too large, not UTF-8.
    #[error(transparent)]
    Input(#[from] skill_factory_io::input::InputError),
    /// The config cannot be read: the message names the file, line and key, and the fix.
    #[error(transparent)]
    Config(Box<skill_factory_config::ConfigError>),
    /// The objective names a level the policy does not have, or a split not scored.
    #[error(transparent)]
    Objective(#[from] crate::optimizer::objective::ObjectiveError),
    /// The System One client or the answer cache failed.
    #[error(transparent)]
    SystemOne(#[from] SystemOneError),
}

impl From<skill_factory_io::replace::Refusal> for LabError {
    fn from(refusal: skill_factory_io::replace::Refusal) -> Self {
        LabError::Invalid(refusal.0)
    }
}

impl From<skill_factory_config::ConfigError> for LabError {
    fn from(error: skill_factory_config::ConfigError) -> Self {
        LabError::Config(Box::new(error))
    }
}

impl LabError {
    /// An [`LabError::Invalid`] from anything printable.
    pub fn invalid(message: impl Into<String>) -> Self {
        LabError::Invalid(message.into())
    }

    /// This error, its message led by `place` (`question 'q1'`, a file) when it is one of bad
    /// input; other errors say where they are already.
    pub fn within(self, place: &str) -> Self {
        match self {
            LabError::Invalid(message) => LabError::Invalid(format!("{place}: {message}")),
            other => other,
        }
    }

    /// An [`LabError::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LabError::Io {
            path: path.into(),
            source,
        }
    }
}

/// The fix for a file the lab could not write; a file it could not read says what it says.
fn io_hint(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidData => String::new(),
        _ => format!(
            "; {}, or set another `workspace:`",
            skill_factory_io::hint::write_hint(error)
        ),
    }
}
