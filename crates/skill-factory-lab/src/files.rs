//! Reading and writing the lab's files: JSON read with the file named in every error, and
//! writes that never leave half a file behind.

use std::path::Path;

use serde_json::Value;

use crate::LabError;

/// A content error of `path`, naming it.
pub(crate) fn in_file(path: &Path, message: &str) -> LabError {
    LabError::invalid(format!("{}: {message}", path.display()))
}

/// Reads a JSON file: [`LabError::NotFound`] (with `hint`, which starts with `: `) when it does
/// not exist, [`LabError::Invalid`] with "invalid JSON" and the line when it does not parse.
pub(crate) fn read_json(path: &Path, hint: &str) -> Result<Value, LabError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(LabError::NotFound {
                path: path.to_path_buf(),
                hint: hint.to_owned(),
            });
        }
        Err(error) => return Err(LabError::io(path, error)),
    };
    serde_json::from_str(&text).map_err(|error| {
        in_file(
            path,
            &format!("invalid JSON: {error}; fix the file or restore it from a saved copy"),
        )
    })
}

/// Writes `text` to `path` whole ([`skill_factory_package::output::write_atomic`]), the error
/// naming the file.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<(), LabError> {
    skill_factory_package::output::write_atomic(path, text.as_bytes())
        .map_err(|error| LabError::io(path, error))
}
