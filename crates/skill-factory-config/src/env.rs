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
    let text = skill_factory_io::input::read_text(file, skill_factory_io::input::CONFIG)
        .map_err(|e| error(None, e.to_string()))?;
    // Some editors start a file with a byte-order mark; it is no part of the first key, and
    // left in, the parse error would quote an invisible character.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut values = BTreeMap::new();
    for item in dotenvy::from_read_iter(text.as_bytes()) {
        match item {
            Ok((key, value)) => {
                values.insert(key, value);
            }
            Err(dotenvy::Error::LineParse(content, _)) => {
                let line = line_of(text, &content);
                return Err(error(line, format!("cannot parse '{}'", content.trim())));
            }
            Err(other) => return Err(error(None, other.to_string())),
        }
    }
    Ok(values)
}

/// The 1-based line of `content` in the file's `text`, for the error message.
fn line_of(text: &str, content: &str) -> Option<u32> {
    let first = content.lines().next()?.trim();
    let index = text.lines().position(|l| l.trim() == first)?;
    u32::try_from(index + 1).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dotenv(text: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".env");
        std::fs::write(&file, text).unwrap();
        (dir, file)
    }

    #[test]
    fn a_byte_order_mark_is_no_part_of_the_first_key() {
        let (_dir, file) = dotenv(b"\xef\xbb\xbfOPENAI_API_KEY=sk-1\nOTHER=2\n");
        let values = read_dotenv_files(&[file]).unwrap();
        assert_eq!(
            values.get("OPENAI_API_KEY").map(String::as_str),
            Some("sk-1")
        );
        assert_eq!(values.get("OTHER").map(String::as_str), Some("2"));
    }

    #[test]
    fn a_broken_line_is_quoted_at_its_line_without_the_byte_order_mark() {
        let (_dir, file) = dotenv(b"\xef\xbb\xbfOK=1\nnot a line\n");
        let error = read_dotenv_files(&[file]).unwrap_err().to_string();
        assert!(error.contains("line 2"), "{error}");
        assert!(error.contains("cannot parse 'not a line'"), "{error}");
        let (_dir, file) = dotenv(b"\xef\xbb\xbfbroken\n");
        let error = read_dotenv_files(&[file]).unwrap_err().to_string();
        assert!(!error.contains('\u{feff}'), "{error:?}");
        assert!(error.contains("cannot parse 'broken'"), "{error}");
    }
}
