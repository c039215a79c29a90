//! `.env` files: read into a map, never into the process environment.
//!
//! Two files are read: `.env` in the working directory, then `.env` beside the config, whose
//! values win. Variables already set in the process environment win over both (see
//! the loaded config's lookup).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::ConfigError;

/// The variables of the `.env` files a config at `path` reads: `.env` in the working
/// directory, then `.env` beside the config (whose values win). Both modes read their keys
/// through these files.
pub fn beside(path: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
    beside_in(path, std::env::current_dir().ok().as_deref())
}

/// [`beside`] with the working directory made explicit, so tests need not change it.
pub fn beside_in(path: &Path, cwd: Option<&Path>) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut files = Vec::new();
    if let Some(cwd) = cwd {
        files.push(cwd.join(".env"));
    }
    files.push(path.parent().unwrap_or(Path::new("")).join(".env"));
    read_dotenv_files(&files)
}

/// A variable as a run sees it: the process environment first, then `dotenv` (the files of
/// [`beside`]); empty values count as unset.
pub fn variable(dotenv: &BTreeMap<String, String>, key: &str) -> Option<String> {
    std::env::var(key)
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| dotenv.get(key).filter(|v| !v.is_empty()).cloned())
}

/// [`variable`] as a lookup that owns its `.env` values.
pub fn lookup(dotenv: BTreeMap<String, String>) -> impl Fn(&str) -> Option<String> {
    move |key: &str| variable(&dotenv, key)
}

/// Reads the `.env` files that exist among `files` (later files win) into one map.
pub fn read_dotenv_files(files: &[PathBuf]) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut values = BTreeMap::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for file in files {
        if !file.is_file() {
            continue;
        }
        // The config may sit in the working directory: read that file once.
        let identity = file.canonicalize().unwrap_or_else(|_| file.clone());
        if seen.contains(&identity) {
            continue;
        }
        seen.push(identity);
        values.extend(read_dotenv(file)?);
    }
    Ok(values)
}

fn read_dotenv(file: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
    let error = |line: Option<u32>, message: String| ConfigError::DotEnv {
        path: file.to_path_buf(),
        line,
        message,
    };
    let iter = dotenvy::from_path_iter(file).map_err(|e| error(None, e.to_string()))?;
    let mut values = BTreeMap::new();
    for item in iter {
        match item {
            Ok((key, value)) => {
                values.insert(key, value);
            }
            Err(dotenvy::Error::LineParse(content, _)) => {
                let line = line_of(file, &content);
                return Err(error(line, format!("cannot parse '{}'", content.trim())));
            }
            Err(other) => return Err(error(None, other.to_string())),
        }
    }
    Ok(values)
}

/// The 1-based line of `content` in the file, for the error message.
fn line_of(file: &Path, content: &str) -> Option<u32> {
    let text = std::fs::read_to_string(file).ok()?;
    let first = content.lines().next()?.trim();
    let index = text.lines().position(|l| l.trim() == first)?;
    u32::try_from(index + 1).ok()
}
