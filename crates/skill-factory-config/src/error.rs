//! Config errors, written for the person at the terminal: each names the file, the line when
//! known, the key path, and what to do.

use std::fmt;
use std::path::PathBuf;

use skill_factory_io::input::InputError;

/// Where in a config file something is: the file as the user named it, and the line (1-based)
/// when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The config file.
    pub file: PathBuf,
    /// The line, when known.
    pub line: Option<u32>,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{} line {line}", self.file.display()),
            None => write!(f, "{}", self.file.display()),
        }
    }
}

/// Why a run config could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file does not exist.
    #[error("config file not found: {}; check the path given to --config", path.display())]
    NotFound {
        /// The path as given.
        path: PathBuf,
    },
    /// The config file exists but cannot be read: not a regular file, too large, not UTF-8,
    /// or refused by the operating system.
    #[error(transparent)]
    Unreadable(#[from] InputError),
    /// The text is not valid YAML.
    #[error("YAML syntax error in {place}{}: {message}\n{snippet}fix the YAML at that spot (indentation, a missing ':' and an unclosed quote or bracket are the usual causes)", column_text(*.column))]
    Syntax {
        /// File and line.
        place: Place,
        /// The column (1-based), when known.
        column: Option<u32>,
        /// The parser's message.
        message: String,
        /// The offending lines with a caret under the spot (may be empty).
        snippet: String,
    },
    /// The document root is not a mapping of keys.
    #[error("the config {} must be a mapping of keys (skill: ..., dataset: ...), but it holds {found}", path.display())]
    NotAMapping {
        /// The config file.
        path: PathBuf,
        /// What the root holds instead (`a list`, `nothing (the file is empty)`).
        found: String,
    },
    /// A key that the config format does not have, usually a typo.
    #[error("unknown key '{key}' in {} ({place}){}", section_text(section), hint_text(*suggestion, valid))]
    UnknownKey {
        /// File and line.
        place: Place,
        /// The unknown key as written.
        key: String,
        /// The key path of the block holding it; empty for the top level.
        section: String,
        /// The closest valid key, when one is close.
        suggestion: Option<&'static str>,
        /// Every valid key of that block.
        valid: Box<[&'static str]>,
    },
    /// A required key is absent.
    #[error("missing required key '{key}' ({place}): {fix}")]
    MissingKey {
        /// File and line of the block that lacks the key.
        place: Place,
        /// Full key path of the missing key.
        key: String,
        /// What to add.
        fix: String,
    },
    /// A value of the wrong type (`rounds: many`).
    #[error("wrong type for '{key}' ({place}): expected {expected}{}", found_text(found.as_deref()))]
    WrongType {
        /// File and line.
        place: Place,
        /// Key path of the value.
        key: String,
        /// What the key takes, in words.
        expected: String,
        /// The value as written, when it could be recovered.
        found: Option<String>,
    },
    /// A block written with nothing under it (`optimizer:` or `optimizer: null`).
    #[error(
        "'{key}' is empty ({place}): indent its keys under it, write '{}: {{}}' for the defaults, or remove the line",
        last_key(key)
    )]
    NullBlock {
        /// File and line.
        place: Place,
        /// Key path of the block.
        key: String,
    },
    /// A value of the right type that is out of range or inconsistent.
    #[error("invalid value for '{key}' ({place}): {problem}; {fix}")]
    InvalidValue {
        /// File and line.
        place: Place,
        /// Key path of the value.
        key: String,
        /// What is wrong with it.
        problem: String,
        /// What to write instead.
        fix: String,
    },
    /// A value that cannot be read as what its key takes (a check that names no check, a
    /// regular expression that does not compile).
    #[error("invalid value for '{key}' ({place}): {message}")]
    UnreadableValue {
        /// File and line.
        place: Place,
        /// Key path of the value.
        key: String,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// A name that is not one of a fixed set (`harness.type: x`).
    #[error("Unknown {} '{value}'. Supported: {} ('{key}', {place}){}", choice_kind(key), choices.join(", "), did_you_mean(*suggestion))]
    UnknownChoice {
        /// File and line.
        place: Place,
        /// Key path of the value.
        key: String,
        /// The value as written.
        value: String,
        /// The accepted names.
        choices: Vec<&'static str>,
        /// The closest accepted name, when one is close.
        suggestion: Option<&'static str>,
    },
    /// The same key twice in one block.
    #[error(
        "duplicate key '{key}' ({place}): a key may appear once per block; remove or merge one of them"
    )]
    DuplicateKey {
        /// File and line of the second occurrence.
        place: Place,
        /// Key path of the repeated key.
        key: String,
    },
    /// A classifier-mode config given to the skill-mode loader.
    #[error("{} is a classifier-mode config (kind: classifier); run it with 'skill-factory optimize -c {}' or the 'skill-factory lab' commands (ask, score, select, freeze, report, status)", path.display(), path.display())]
    ClassifierConfig {
        /// The config file.
        path: PathBuf,
    },
    /// A `.env` file beside the config or in the working directory could not be read.
    #[error("cannot read {}{}: {message}; lines must look like KEY=value", path.display(), line.map(|l| format!(" line {l}")).unwrap_or_default())]
    DotEnv {
        /// The `.env` file.
        path: PathBuf,
        /// The line, when known.
        line: Option<u32>,
        /// What is wrong.
        message: String,
    },
}

impl ConfigError {
    /// The key path the error is about (`metric.judge.criteria[1].weight`), if it is about one.
    pub fn key_path(&self) -> Option<String> {
        match self {
            ConfigError::UnknownKey { key, section, .. } if section.is_empty() => Some(key.clone()),
            ConfigError::UnknownKey { key, section, .. } => Some(format!("{section}.{key}")),
            ConfigError::MissingKey { key, .. }
            | ConfigError::WrongType { key, .. }
            | ConfigError::NullBlock { key, .. }
            | ConfigError::InvalidValue { key, .. }
            | ConfigError::UnreadableValue { key, .. }
            | ConfigError::UnknownChoice { key, .. }
            | ConfigError::DuplicateKey { key, .. } => Some(key.clone()),
            _ => None,
        }
    }

    /// The line (1-based) the error points at, when known.
    pub fn line(&self) -> Option<u32> {
        match self {
            ConfigError::Syntax { place, .. }
            | ConfigError::UnknownKey { place, .. }
            | ConfigError::MissingKey { place, .. }
            | ConfigError::WrongType { place, .. }
            | ConfigError::NullBlock { place, .. }
            | ConfigError::InvalidValue { place, .. }
            | ConfigError::UnreadableValue { place, .. }
            | ConfigError::UnknownChoice { place, .. }
            | ConfigError::DuplicateKey { place, .. } => place.line,
            ConfigError::DotEnv { line, .. } => *line,
            _ => None,
        }
    }
}

/// The last key of a path: what the user writes on the line (`golden` in `metric.golden`).
fn last_key(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

fn column_text(column: Option<u32>) -> String {
    column.map(|c| format!(" column {c}")).unwrap_or_default()
}

fn section_text(section: &str) -> String {
    if section.is_empty() {
        "the top level".to_owned()
    } else {
        section.to_owned()
    }
}

fn did_you_mean(suggestion: Option<&str>) -> String {
    suggestion
        .map(|s| format!("; did you mean '{s}'?"))
        .unwrap_or_default()
}

fn hint_text(suggestion: Option<&str>, valid: &[&str]) -> String {
    match suggestion {
        Some(s) => did_you_mean(Some(s)),
        None if valid.is_empty() => String::new(),
        None => format!("; valid keys there: {}", valid.join(", ")),
    }
}

/// What an unknown name is called in the message; the harness type keeps the reference
/// tool's wording (`Unknown harness type 'x'. Supported: ...`).
fn choice_kind(key: &str) -> &'static str {
    if key == "harness.type" {
        "harness type"
    } else {
        "value"
    }
}

fn found_text(found: Option<&str>) -> String {
    found.map(|f| format!(", found '{f}'")).unwrap_or_default()
}
