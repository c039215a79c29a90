//! Reading and writing the lab's files: every read through the one bounded reader
//! ([`skill_factory_io::input`]: regular files only, a size limit per kind, UTF-8 with the
//! line of a bad byte), JSON read with the file named in every error, and writes that never
//! leave half a file behind.

use std::path::Path;

use serde_json::Value;
use skill_factory_io::input::{self, InputError, Limit};

use crate::LabError;

const MIB: u64 = 1024 * 1024;

/// A workspace file the lab wrote (probe set, question bank, seal, result, policy): 64 MiB.
pub(crate) const WORKSPACE_FILE: Limit = Limit {
    what: "workspace file",
    max_bytes: 64 * MIB,
};
/// An exported classifier (JSON, TypeScript, JavaScript, Python): 16 MiB.
pub(crate) const EXPORT: Limit = Limit {
    what: "exported classifier",
    max_bytes: 16 * MIB,
};
/// An answer cache copied whole (a skill-scanner lab's `answers.jsonl`): 1 GiB.
pub(crate) const ANSWERS: Limit = Limit {
    what: "answers file",
    max_bytes: 1024 * MIB,
};

/// The text of `path`, read through the bounded reader: [`LabError::NotFound`] (with `hint`,
/// which starts with `: `) when it does not exist.
pub(crate) fn read_text(path: &Path, limit: Limit, hint: &str) -> Result<String, LabError> {
    input::read_text(path, limit).map_err(|error| not_found(error, hint))
}

/// The bytes of `path`, read through the bounded reader, as [`read_text`].
pub(crate) fn read_bytes(path: &Path, limit: Limit, hint: &str) -> Result<Vec<u8>, LabError> {
    input::read_bytes(path, limit).map_err(|error| not_found(error, hint))
}

fn not_found(error: InputError, hint: &str) -> LabError {
    match error {
        InputError::Missing { path, .. } => LabError::NotFound {
            path,
            hint: hint.to_owned(),
        },
        other => LabError::Input(other),
    }
}

/// Reads a JSON file: [`LabError::NotFound`] (with `hint`, which starts with `: `) when it does
/// not exist, [`LabError::Invalid`] with "invalid JSON" and the line when it does not parse.
pub(crate) fn read_json(path: &Path, hint: &str) -> Result<Value, LabError> {
    let text = read_text(path, WORKSPACE_FILE, hint)?;
    serde_json::from_str(&text).map_err(|error| {
        LabError::invalid(format!(
            "{}: invalid JSON: {error}; fix the file or restore it from a saved copy",
            path.display()
        ))
    })
}

/// Writes `text` to `path` whole ([`skill_factory_io::output::write_atomic`]), the error
/// naming the file.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<(), LabError> {
    skill_factory_io::output::write_atomic(path, text.as_bytes())
        .map_err(|error| LabError::io(path, error))
}
