//! The answer cache: every answer ever bought, one JSON line each, so that asking again is
//! free.
//!
//! A line is `{"s": state hash, "q": question hash, "m": model asked, "p": P(true)}` plus
//! `"v"` (the version that answered) when known and `"r"` (the replicate) when not 0; the
//! key is (s, q, m, r). The format is the Python tool's and skill-scanner's, written with the
//! same spacing, so one file serves all three.
//!
//! The file is append-only. A run killed mid-write leaves a last line without its newline:
//! such a line is dropped (the file is cut back to the last newline) and loading goes on. Any
//! other line that is not an answer stops loading with its line number, because silently
//! skipping it would silently re-buy answers. Later lines win over earlier ones with the same
//! key. Writes from one process are serialized; there is no locking across processes.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

use super::SystemOneError;

/// What identifies one answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AnswerKey {
    /// State hash (sha24 of the state text).
    pub state: String,
    /// Question hash ([`super::Question::hash`]).
    pub question: String,
    /// The model asked (not the version that answered).
    pub model: String,
    /// Which repetition of the same question (0 for the first).
    pub replicate: u32,
}

impl AnswerKey {
    /// The key of the first answer (replicate 0).
    pub fn new(
        state: impl Into<String>,
        question: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        AnswerKey {
            state: state.into(),
            question: question.into(),
            model: model.into(),
            replicate: 0,
        }
    }
}

/// One cached answer.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedAnswer {
    /// P(true).
    pub p: f64,
    /// The model version that answered, when known.
    pub version: Option<String>,
}

#[derive(Debug, Default)]
struct Entries {
    answers: HashMap<AnswerKey, CachedAnswer>,
    /// Whether the file ends with a newline (or is empty), so the next append need not add one.
    ends_clean: bool,
}

/// Cached answers, in memory and (unless in-memory only) in a JSONL file.
#[derive(Debug)]
pub struct AnswerCache {
    path: Option<PathBuf>,
    entries: Mutex<Entries>,
}

impl AnswerCache {
    /// A cache that lives only as long as the process.
    pub fn in_memory() -> Self {
        AnswerCache {
            path: None,
            entries: Mutex::new(Entries {
                answers: HashMap::new(),
                ends_clean: true,
            }),
        }
    }

    /// Loads the cache file at `path` (a missing file is an empty cache, created on the first
    /// answer). A half-written last line is cut off the file; any other bad line is an error.
    pub fn open(path: &Path) -> Result<Self, SystemOneError> {
        let io_error = |e: std::io::Error| SystemOneError::CacheIo {
            path: path.to_path_buf(),
            detail: e.to_string(),
        };
        let bytes = match fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_error(e)),
        };
        let mut answers = HashMap::new();
        let ends_with_newline = bytes.is_empty() || bytes.ends_with(b"\n");
        let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
        // `split` yields an empty piece after a final newline; it is not a line.
        let count = if ends_with_newline {
            lines.len() - 1
        } else {
            lines.len()
        };
        for (index, line) in lines.iter().take(count).enumerate() {
            let last_unterminated = !ends_with_newline && index + 1 == count;
            match parse_line(line) {
                Ok(None) => {}
                Ok(Some((key, answer))) => {
                    answers.insert(key, answer);
                }
                Err(_) if last_unterminated => {
                    let keep = bytes.len() - line.len();
                    tracing::warn!(path = %path.display(), line = index + 1, "dropping a half-written last line of the answer cache");
                    let file = OpenOptions::new()
                        .write(true)
                        .open(path)
                        .map_err(io_error)?;
                    file.set_len(keep as u64).map_err(io_error)?;
                    return Ok(AnswerCache {
                        path: Some(path.to_path_buf()),
                        entries: Mutex::new(Entries {
                            answers,
                            ends_clean: true,
                        }),
                    });
                }
                Err(detail) => {
                    return Err(SystemOneError::CorruptCache {
                        path: path.to_path_buf(),
                        line: index + 1,
                        detail,
                    });
                }
            }
        }
        Ok(AnswerCache {
            path: Some(path.to_path_buf()),
            entries: Mutex::new(Entries {
                answers,
                ends_clean: ends_with_newline,
            }),
        })
    }

    /// The cache file, unless the cache is in memory only.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// How many answers are cached.
    pub fn len(&self) -> usize {
        self.lock().answers.len()
    }

    /// True when no answer is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The cached answer for `key`, if any.
    pub fn get(&self, key: &AnswerKey) -> Option<CachedAnswer> {
        self.lock().answers.get(key).cloned()
    }

    /// Adds answers, appending them to the file in one write. They are kept in memory even
    /// when the write fails (the error says why).
    pub fn insert_all(&self, rows: &[(AnswerKey, CachedAnswer)]) -> Result<(), SystemOneError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut entries = self.lock();
        for (key, answer) in rows {
            entries.answers.insert(key.clone(), answer.clone());
        }
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut text = String::new();
        if !entries.ends_clean {
            text.push('\n');
        }
        for (key, answer) in rows {
            text.push_str(&format_line(key, answer));
            text.push('\n');
        }
        let io_error = |e: std::io::Error| SystemOneError::CacheIo {
            path: path.clone(),
            detail: e.to_string(),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(io_error)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io_error)?;
        file.write_all(text.as_bytes()).map_err(io_error)?;
        entries.ends_clean = true;
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        // A panic while holding the lock cannot leave the map half-updated in a way that
        // matters (each insert is whole), so a poisoned lock is still usable.
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One line: `Ok(None)` for a blank line, else the answer or what is wrong with it.
fn parse_line(line: &[u8]) -> Result<Option<(AnswerKey, CachedAnswer)>, String> {
    let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_string())?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let text_field = |name: &str| {
        value
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("'{name}' is missing or not text"))
    };
    let p = value
        .get("p")
        .filter(|p| p.is_number())
        .and_then(Value::as_f64)
        .ok_or_else(|| "'p' is missing or not a number".to_string())?;
    let version = match value.get("v") {
        None | Some(Value::Null) => None,
        Some(Value::String(v)) => Some(v.clone()),
        Some(_) => return Err("'v' is not text".to_string()),
    };
    let replicate = match value.get("r") {
        None | Some(Value::Null) => 0,
        Some(r) => r
            .as_u64()
            .and_then(|r| u32::try_from(r).ok())
            .ok_or_else(|| "'r' is not a replicate number".to_string())?,
    };
    let key = AnswerKey {
        state: text_field("s")?,
        question: text_field("q")?,
        model: text_field("m")?,
        replicate,
    };
    Ok(Some((key, CachedAnswer { p, version })))
}

/// A line as Python's `json.dumps` writes it: `, ` and `: ` separators, non-ASCII escaped.
fn format_line(key: &AnswerKey, answer: &CachedAnswer) -> String {
    let mut line = format!(
        "{{\"s\": {}, \"q\": {}, \"m\": {}, \"p\": {}",
        py_str(&key.state),
        py_str(&key.question),
        py_str(&key.model),
        py_float(answer.p)
    );
    if let Some(version) = &answer.version {
        line.push_str(&format!(", \"v\": {}", py_str(version)));
    }
    if key.replicate != 0 {
        line.push_str(&format!(", \"r\": {}", key.replicate));
    }
    line.push('}');
    line
}

/// A JSON string with every non-ASCII character escaped (`ensure_ascii=True`).
fn py_str(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

/// A probability as Python writes a float: shortest round-trip digits, `1.0` not `1`.
fn py_float(p: f64) -> String {
    if p.is_finite() {
        format!("{p:?}")
    } else {
        // Probabilities are checked to lie in [0, 1] before they are cached.
        "0.0".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str, q: &str) -> AnswerKey {
        AnswerKey::new(s, q, "jev-latest")
    }

    fn answer(p: f64, v: Option<&str>) -> CachedAnswer {
        CachedAnswer {
            p,
            version: v.map(str::to_string),
        }
    }

    #[test]
    fn lines_are_written_as_python_writes_them() {
        let mut k = key("bcc8ad820ae4a4c13eed0e6c", "0119f4fa8fbe2a2d789e47ca");
        assert_eq!(
            format_line(&k, &answer(0.9, Some("fake-jev-1.0"))),
            r#"{"s": "bcc8ad820ae4a4c13eed0e6c", "q": "0119f4fa8fbe2a2d789e47ca", "m": "jev-latest", "p": 0.9, "v": "fake-jev-1.0"}"#
        );
        k.replicate = 2;
        k.model = "jév".into();
        assert_eq!(
            format_line(&k, &answer(1.0, None)),
            r#"{"s": "bcc8ad820ae4a4c13eed0e6c", "q": "0119f4fa8fbe2a2d789e47ca", "m": "j\u00e9v", "p": 1.0, "r": 2}"#
        );
    }

    #[test]
    fn answers_round_trip_through_the_file_with_versions_and_replicates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/answers.jsonl");
        let cache = AnswerCache::open(&path).unwrap();
        assert!(cache.is_empty());
        let mut second = key("s1", "q1");
        second.replicate = 1;
        cache
            .insert_all(&[
                (key("s1", "q1"), answer(0.25, Some("jev-1.13.0"))),
                (second.clone(), answer(0.75, None)),
            ])
            .unwrap();
        let reopened = AnswerCache::open(&path).unwrap();
        assert_eq!(reopened.len(), 2);
        assert_eq!(
            reopened.get(&key("s1", "q1")),
            Some(answer(0.25, Some("jev-1.13.0")))
        );
        assert_eq!(reopened.get(&second), Some(answer(0.75, None)));
        assert_eq!(reopened.get(&key("s1", "q2")), None);
    }

    #[test]
    fn reference_lines_without_version_or_replicate_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        fs::write(
            &path,
            "{\"s\":\"a\",\"q\":\"b\",\"m\":\"jev-latest\",\"p\":1}\n\n{\"s\": \"a\", \"q\": \"b\", \"m\": \"jev-latest\", \"p\": 0.5, \"v\": null}\n",
        )
        .unwrap();
        let cache = AnswerCache::open(&path).unwrap();
        assert_eq!(cache.len(), 1, "the later duplicate wins");
        assert_eq!(cache.get(&key("a", "b")), Some(answer(0.5, None)));
    }

    #[test]
    fn a_truncated_last_line_is_dropped_and_cut_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        let good = "{\"s\": \"a\", \"q\": \"b\", \"m\": \"jev-latest\", \"p\": 0.5}\n";
        fs::write(&path, format!("{good}{{\"s\": \"a\", \"q\"")).unwrap();
        let cache = AnswerCache::open(&path).unwrap();
        assert_eq!(cache.len(), 1);
        assert_eq!(fs::read_to_string(&path).unwrap(), good);
        cache
            .insert_all(&[(key("c", "d"), answer(0.1, None))])
            .unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert_eq!(AnswerCache::open(&path).unwrap().len(), 2);
    }

    #[test]
    fn a_valid_last_line_without_newline_is_kept_and_the_next_append_adds_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        fs::write(
            &path,
            "{\"s\": \"a\", \"q\": \"b\", \"m\": \"jev-latest\", \"p\": 0.5}",
        )
        .unwrap();
        let cache = AnswerCache::open(&path).unwrap();
        assert_eq!(cache.len(), 1);
        cache
            .insert_all(&[(key("c", "d"), answer(0.1, None))])
            .unwrap();
        assert_eq!(AnswerCache::open(&path).unwrap().len(), 2);
    }

    #[test]
    fn a_corrupt_line_in_the_middle_is_refused_with_its_line_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        let good = "{\"s\": \"a\", \"q\": \"b\", \"m\": \"jev-latest\", \"p\": 0.5}";
        for bad in [
            "not json",
            "{\"s\": \"a\", \"q\": \"b\", \"m\": \"x\"}",
            "{\"s\": 1, \"q\": \"b\", \"m\": \"x\", \"p\": 0.5}",
            "{\"s\": \"a\", \"q\": \"b\", \"m\": \"x\", \"p\": true}",
        ] {
            fs::write(&path, format!("{good}\n{bad}\n{good}\n")).unwrap();
            let error = AnswerCache::open(&path).unwrap_err();
            assert!(
                matches!(error, SystemOneError::CorruptCache { line: 2, .. }),
                "{bad}: {error}"
            );
            assert!(
                error.to_string().contains(":2: corrupt answer line"),
                "{error}"
            );
        }
        // A bad last line that does end with a newline was written whole: refused too.
        fs::write(&path, format!("{good}\nnot json\n")).unwrap();
        assert!(AnswerCache::open(&path).is_err());
    }

    #[test]
    fn in_memory_cache_writes_no_file() {
        let cache = AnswerCache::in_memory();
        cache
            .insert_all(&[(key("a", "b"), answer(0.5, None))])
            .unwrap();
        assert_eq!(cache.len(), 1);
        assert!(cache.path().is_none());
    }
}
