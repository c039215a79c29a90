//! Datasets in JSONL: one task per line, read exactly as the Python tool reads them.
//!
//! Compatibility decides the details: non-string `input`/`expected` values become the same
//! pretty JSON text, ids are coerced to the same strings, and the default id is the same record
//! index, so the same file gives the same tasks (and therefore the same split) in both tools.
//! Where the Python tool crashes or misreads a file, this module gives an error that names the
//! line and the fix instead.
//!
//! Deliberate differences. Accepted here though Python fails: a leading UTF-8 BOM (skipped),
//! raw U+0085, U+2028 and U+2029 inside strings (Python splits the line there), and
//! `"metadata": null` (no metadata). Clearer errors where Python also fails: a line that is not
//! an object (Python reports a missing `input`). Rejected here though Python reads them: an
//! array or object `id` (Python uses its `repr`), and `NaN`, `Infinity` or numbers beyond the
//! double range.

use serde_json::{Map, Value};

use crate::task::Task;
use skill_factory_pycompat::{json, repr};

/// An ordered set of tasks with unique ids.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dataset {
    /// The tasks, in file order.
    pub tasks: Vec<Task>,
}

/// A task id that occurs more than once, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateId {
    /// The repeated id.
    pub id: String,
    /// Every 1-based line (record position for in-memory records) where it appears.
    pub lines: Vec<usize>,
}

/// Why a dataset could not be read. `origin` is the path (or other name) the caller gave for
/// the data; `line` is a 1-based physical line of the file, or the 1-based position of a record
/// when the records did not come from a file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DatasetError {
    /// A non-blank line is not valid JSON.
    #[error(
        "{origin}:{line}: invalid JSON: {detail}; each non-blank line must hold one complete JSON object, e.g. {{\"id\": \"t1\", \"input\": \"...\"}}"
    )]
    InvalidJson {
        /// Where the data came from.
        origin: String,
        /// The offending line.
        line: usize,
        /// The parser's description of the problem.
        detail: String,
    },
    /// A record is valid JSON but not an object.
    #[error(
        "{origin}:{line}: expected a JSON object, found {found}; write each task as one object per line, e.g. {{\"id\": \"t1\", \"input\": \"...\"}}"
    )]
    NotAnObject {
        /// Where the data came from.
        origin: String,
        /// The offending line.
        line: usize,
        /// The kind of JSON value found instead (`an array`, `a string`, ...).
        found: &'static str,
    },
    /// A record has no `input` key.
    #[error(
        "{origin}:{line}: the task is missing the required 'input' field; add \"input\": \"<text given to the skill>\" to this line"
    )]
    MissingInput {
        /// Where the data came from.
        origin: String,
        /// The offending line.
        line: usize,
    },
    /// A record's `id` is an array or an object, which cannot name a task.
    #[error(
        "{origin}:{line}: 'id' must be a string or a number, found {found}; use a short unique string such as \"t1\", or remove 'id' to number the task by its position"
    )]
    InvalidId {
        /// Where the data came from.
        origin: String,
        /// The offending line.
        line: usize,
        /// The kind of JSON value found instead.
        found: &'static str,
    },
    /// A task of a skill-mode run that carries a trigger set holds the metadata key that marks
    /// the set's queries, so it would be taken for one.
    #[error(
        "{origin}: task '{id}' has a 'should_trigger' key in its metadata, which marks the queries of the trigger set in a run with a `trigger` block; rename the key in the dataset, or move the task into the trigger set"
    )]
    TriggerKey {
        /// Where the data came from.
        origin: String,
        /// The task.
        id: String,
    },
    /// A record's `id` is empty or only whitespace.
    #[error(
        "{origin}:{line}: 'id' is blank; give the task a non-empty unique id, or remove 'id' to number the task by its position"
    )]
    BlankId {
        /// Where the data came from.
        origin: String,
        /// The offending line.
        line: usize,
    },
    /// A record's `metadata` is not an object.
    #[error(
        "{origin}:{line}: 'metadata' must be a JSON object, found {found}; write it as {{\"key\": \"value\"}} or remove it"
    )]
    MetadataNotObject {
        /// Where the data came from.
        origin: String,
        /// The offending line.
        line: usize,
        /// The kind of JSON value found instead.
        found: &'static str,
    },
    /// The data holds no task at all.
    #[error(
        "{origin}: the dataset has no tasks; add one JSON object per line with at least an \"input\" field"
    )]
    Empty {
        /// Where the data came from.
        origin: String,
    },
    /// Several tasks share an id.
    #[error(
        "{origin}: duplicate task ids: {}; every task needs a unique 'id'",
        describe_duplicates(duplicates)
    )]
    DuplicateIds {
        /// Where the data came from.
        origin: String,
        /// The repeated ids, sorted, each with the lines where it appears.
        duplicates: Vec<DuplicateId>,
    },
}

fn describe_duplicates(duplicates: &[DuplicateId]) -> String {
    duplicates
        .iter()
        .map(|duplicate| {
            let lines: Vec<String> = duplicate.lines.iter().map(usize::to_string).collect();
            format!("'{}' (lines {})", duplicate.id, lines.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Dataset {
    /// Parses JSONL text: one JSON object per line, blank lines skipped, a leading UTF-8 BOM
    /// ignored. `origin` is the path to name in errors.
    ///
    /// Lines end at `\n`, `\r\n`, `\r` and the other ASCII separators Python's `splitlines`
    /// honours (`\x0b`, `\x0c`, `\x1c`–`\x1e`); U+0085, U+2028 and U+2029 do not end a line here
    /// (the Python tool splits on them too, which breaks JSON strings that contain them).
    pub fn from_jsonl(text: &str, origin: &str) -> Result<Dataset, DatasetError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        // Each record becomes its task at once, so that a big file never holds every line as
        // JSON at the same time. A line that is not JSON is still reported before a record
        // that is not a task, wherever the two are: the first record error waits.
        let mut tasks = Vec::new();
        let mut lines = Vec::new();
        let mut record_error = None;
        for (index, line) in physical_lines(text).enumerate() {
            let line_number = index + 1;
            let content = line.trim_matches(is_python_whitespace);
            if content.is_empty() {
                continue;
            }
            let value: Value =
                serde_json::from_str(content).map_err(|error| DatasetError::InvalidJson {
                    origin: origin.to_owned(),
                    line: line_number,
                    detail: describe_json_error(&error),
                })?;
            if record_error.is_some() {
                continue;
            }
            match task_from_record(value, tasks.len(), line_number, origin) {
                Ok(task) => {
                    tasks.push(task);
                    lines.push(line_number);
                }
                Err(error) => record_error = Some(error),
            }
        }
        if let Some(error) = record_error {
            return Err(error);
        }
        Self::validated(tasks, &lines, origin)
    }

    /// Builds a dataset from already parsed records, read with the same rules as
    /// [`Dataset::from_jsonl`]; errors give each record's 1-based position as its line.
    pub fn from_records(records: Vec<Value>, origin: &str) -> Result<Dataset, DatasetError> {
        let numbered = records
            .into_iter()
            .enumerate()
            .map(|(index, record)| (index + 1, record))
            .collect();
        Self::from_numbered_records(numbered, origin)
    }

    /// Builds a dataset from tasks, checking what every dataset guarantees: at least one task,
    /// no blank id, no id used twice. Errors give each task's 1-based position as its line.
    pub fn from_tasks(tasks: Vec<Task>, origin: &str) -> Result<Dataset, DatasetError> {
        let lines: Vec<usize> = (1..=tasks.len()).collect();
        Self::validated(tasks, &lines, origin)
    }

    fn from_numbered_records(
        records: Vec<(usize, Value)>,
        origin: &str,
    ) -> Result<Dataset, DatasetError> {
        let mut tasks = Vec::with_capacity(records.len());
        let mut lines = Vec::with_capacity(records.len());
        for (index, (line, record)) in records.into_iter().enumerate() {
            tasks.push(task_from_record(record, index, line, origin)?);
            lines.push(line);
        }
        Self::validated(tasks, &lines, origin)
    }

    /// Checks the dataset-wide rules; `lines[i]` is where `tasks[i]` came from.
    fn validated(tasks: Vec<Task>, lines: &[usize], origin: &str) -> Result<Dataset, DatasetError> {
        if tasks.is_empty() {
            return Err(DatasetError::Empty {
                origin: origin.to_owned(),
            });
        }
        for (task, &line) in tasks.iter().zip(lines) {
            if is_blank(&task.id) {
                return Err(DatasetError::BlankId {
                    origin: origin.to_owned(),
                    line,
                });
            }
        }
        let mut seen: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
        for (task, &line) in tasks.iter().zip(lines) {
            seen.entry(task.id.as_str()).or_default().push(line);
        }
        let duplicates: Vec<DuplicateId> = seen
            .into_iter()
            .filter(|(_, lines)| lines.len() > 1)
            .map(|(id, lines)| DuplicateId {
                id: id.to_owned(),
                lines,
            })
            .collect();
        if !duplicates.is_empty() {
            return Err(DatasetError::DuplicateIds {
                origin: origin.to_owned(),
                duplicates,
            });
        }
        Ok(Dataset { tasks })
    }

    /// The number of tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the dataset has no task (never true for a dataset that was read or validated).
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// The task with this id. A linear scan: datasets are small next to the model calls made
    /// for each task.
    pub fn get(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|task| task.id == id)
    }

    /// The tasks in file order.
    pub fn iter(&self) -> std::slice::Iter<'_, Task> {
        self.tasks.iter()
    }
}

impl<'a> IntoIterator for &'a Dataset {
    type Item = &'a Task;
    type IntoIter = std::slice::Iter<'a, Task>;

    fn into_iter(self) -> Self::IntoIter {
        self.tasks.iter()
    }
}

/// One record → one task. `index` is the 0-based record number (the default id), `line` where
/// the record came from.
fn task_from_record(
    record: Value,
    index: usize,
    line: usize,
    origin: &str,
) -> Result<Task, DatasetError> {
    let Value::Object(mut fields) = record else {
        return Err(DatasetError::NotAnObject {
            origin: origin.to_owned(),
            line,
            found: json_kind(&record),
        });
    };
    let Some(input) = fields.remove("input") else {
        return Err(DatasetError::MissingInput {
            origin: origin.to_owned(),
            line,
        });
    };
    let id = match fields.remove("id") {
        None => index.to_string(),
        Some(value) => python_str(&value).ok_or_else(|| DatasetError::InvalidId {
            origin: origin.to_owned(),
            line,
            found: json_kind(&value),
        })?,
    };
    if is_blank(&id) {
        return Err(DatasetError::BlankId {
            origin: origin.to_owned(),
            line,
        });
    }
    let expected = match fields.remove("expected") {
        None | Some(Value::Null) => None,
        Some(value) => Some(as_text(value)),
    };
    let metadata = match fields.remove("metadata") {
        // null is read as "no metadata": the Python tool crashes on it, so no working
        // dataset depends on another meaning.
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(DatasetError::MetadataNotObject {
                origin: origin.to_owned(),
                line,
                found: json_kind(&other),
            });
        }
    };
    Ok(Task {
        id,
        input: as_text(input),
        expected,
        metadata,
        weight: 1.0,
    })
}

/// A string as it is; anything else as the pretty JSON the Python tool produces.
fn as_text(value: Value) -> String {
    match value {
        Value::String(text) => text,
        other => json::dumps_pretty(&other),
    }
}

/// Python `str(value)` for the scalar JSON values an id can hold (`None`, `True`, `1.0`, ...);
/// `None` for arrays and objects, whose Python form no one would choose as an id.
fn python_str(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Null => Some("None".to_owned()),
        Value::Bool(true) => Some("True".to_owned()),
        Value::Bool(false) => Some("False".to_owned()),
        Value::Number(number) => Some(if let Some(u) = number.as_u64() {
            u.to_string()
        } else if let Some(i) = number.as_i64() {
            i.to_string()
        } else {
            repr::repr_float(number.as_f64().unwrap_or(f64::NAN))
        }),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// What kind of JSON value this is, for error messages ("a string", "an array", ...).
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Python's `str.isspace`: Unicode whitespace plus the ASCII separators U+001C–U+001F.
fn is_python_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `not s.strip()`.
fn is_blank(text: &str) -> bool {
    text.chars().all(is_python_whitespace)
}

/// The text's lines without their terminators (a final terminator does not start a new line).
fn physical_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        match current.find(['\n', '\r', '\u{0b}', '\u{0c}', '\u{1c}', '\u{1d}', '\u{1e}']) {
            Some(end) => {
                let after = if current[end..].starts_with("\r\n") {
                    end + 2
                } else {
                    end + 1
                };
                rest = if after < current.len() {
                    Some(&current[after..])
                } else {
                    None
                };
                Some(&current[..end])
            }
            None => {
                rest = None;
                (!current.is_empty()).then_some(current)
            }
        }
    })
}

/// serde_json's message with the position reduced to a column: each line is parsed on its own,
/// so "line 1" would only mislead.
fn describe_json_error(error: &serde_json::Error) -> String {
    let full = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match full.strip_suffix(&position) {
        Some(message) => format!("{message} at column {}", error.column()),
        None => full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(text: &str) -> Result<Dataset, DatasetError> {
        Dataset::from_jsonl(text, "data.jsonl")
    }

    fn message(text: &str) -> String {
        match read(text) {
            Ok(dataset) => panic!("expected an error, got {dataset:?}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn jsonl_skips_blank_lines_and_leaves_missing_expected_empty() {
        let dataset = read("{\"id\": \"a\", \"input\": \"x\", \"expected\": \"y\"}\n\n   \n{\"id\": \"b\", \"input\": \"z\"}\n").unwrap();
        assert_eq!(dataset.len(), 2);
        assert_eq!(dataset.tasks[0].expected.as_deref(), Some("y"));
        assert_eq!(dataset.tasks[1].expected, None);
        assert_eq!(dataset.get("b").map(|t| t.input.as_str()), Some("z"));
        assert!(dataset.get("c").is_none());
    }

    #[test]
    fn default_id_is_the_record_index_not_the_line_number() {
        let dataset = read("\n{\"input\": \"a\"}\n\n{\"input\": \"b\"}").unwrap();
        let ids: Vec<&str> = dataset.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["0", "1"]);
    }

    #[test]
    fn object_input_and_expected_become_python_pretty_json() {
        let dataset = Dataset::from_records(
            vec![json!({"input": {"a": 1}, "expected": {"b": 2, "total": 262.50}})],
            "records",
        )
        .unwrap();
        let task = &dataset.tasks[0];
        assert_eq!(task.input, "{\n  \"a\": 1\n}");
        assert!(task.input.contains("\"a\": 1"));
        assert_eq!(
            task.expected.as_deref(),
            Some("{\n  \"b\": 2,\n  \"total\": 262.5\n}")
        );
    }

    #[test]
    fn scalar_values_become_their_json_text() {
        let dataset = Dataset::from_records(
            vec![
                json!({"input": null, "expected": false}),
                json!({"input": 1.5, "expected": 10.0}),
                json!({"input": "", "expected": ""}),
            ],
            "records",
        )
        .unwrap();
        let pairs: Vec<(&str, Option<&str>)> = dataset
            .iter()
            .map(|t| (t.input.as_str(), t.expected.as_deref()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("null", Some("false")),
                ("1.5", Some("10.0")),
                ("", Some(""))
            ]
        );
    }

    #[test]
    fn ids_are_coerced_like_python_str() {
        let dataset = Dataset::from_records(
            vec![
                json!({"id": 7, "input": "a"}),
                json!({"id": 1.0, "input": "b"}),
                json!({"id": true, "input": "c"}),
                json!({"id": null, "input": "d"}),
                json!({"id": " x ", "input": "e"}),
                json!({"id": -3, "input": "f"}),
                json!({"id": 1e16, "input": "g"}),
            ],
            "records",
        )
        .unwrap();
        let ids: Vec<&str> = dataset.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["7", "1.0", "True", "None", " x ", "-3", "1e+16"]);
    }

    #[test]
    fn metadata_is_kept_and_other_keys_ignored() {
        let dataset = read(
            "{\"input\": \"a\", \"metadata\": {\"lang\": \"fr\"}, \"notes\": 1}\n{\"input\": \"b\", \"metadata\": null}",
        )
        .unwrap();
        assert_eq!(dataset.tasks[0].metadata.get("lang"), Some(&json!("fr")));
        assert!(dataset.tasks[1].metadata.is_empty());
    }

    #[test]
    fn crlf_bom_and_unicode_whitespace_are_tolerated() {
        let dataset =
            read("\u{feff}{\"input\": \"a\"}\r\n\u{a0}{\"input\": \"b\"}\u{2028}\r\n\u{1f}\r\n")
                .unwrap();
        assert_eq!(dataset.len(), 2);
    }

    #[test]
    fn raw_line_separator_inside_a_string_is_kept() {
        let dataset = read("{\"input\": \"a\u{2028}b\"}").unwrap();
        assert_eq!(dataset.tasks[0].input, "a\u{2028}b");
    }

    #[test]
    fn bad_json_names_the_physical_line() {
        let text = "{\"input\": \"a\"}\n\n{bad\n";
        let error = read(text).unwrap_err();
        assert!(matches!(error, DatasetError::InvalidJson { line: 3, .. }));
        let message = error.to_string();
        assert!(
            message.starts_with("data.jsonl:3: invalid JSON: key must be a string at column 2"),
            "{message}"
        );
    }

    #[test]
    fn trailing_data_on_a_line_is_invalid_json() {
        assert!(
            message("{\"input\": \"a\"} {\"input\": \"b\"}").contains("data.jsonl:1: invalid JSON")
        );
    }

    #[test]
    fn a_line_that_is_not_an_object_is_rejected() {
        assert_eq!(
            message("{\"input\": \"a\"}\n[1, 2]"),
            "data.jsonl:2: expected a JSON object, found an array; write each task as one object per line, e.g. {\"id\": \"t1\", \"input\": \"...\"}"
        );
    }

    #[test]
    fn missing_input_mentions_input_and_the_line() {
        assert_eq!(
            message("{\"input\": \"a\"}\r\n{\"id\": \"b\"}"),
            "data.jsonl:2: the task is missing the required 'input' field; add \"input\": \"<text given to the skill>\" to this line"
        );
    }

    #[test]
    fn blank_id_is_rejected() {
        assert_eq!(
            message("{\"id\": \"  \", \"input\": \"a\"}"),
            "data.jsonl:1: 'id' is blank; give the task a non-empty unique id, or remove 'id' to number the task by its position"
        );
        assert!(message("{\"id\": \"\", \"input\": \"a\"}").contains("'id' is blank"));
    }

    #[test]
    fn array_id_is_rejected() {
        assert_eq!(
            message("{\"id\": [1], \"input\": \"a\"}"),
            "data.jsonl:1: 'id' must be a string or a number, found an array; use a short unique string such as \"t1\", or remove 'id' to number the task by its position"
        );
    }

    #[test]
    fn metadata_must_be_an_object() {
        assert_eq!(
            message("{\"input\": \"a\", \"metadata\": [1]}"),
            "data.jsonl:1: 'metadata' must be a JSON object, found an array; write it as {\"key\": \"value\"} or remove it"
        );
    }

    #[test]
    fn empty_dataset_is_rejected() {
        let expected = "data.jsonl: the dataset has no tasks; add one JSON object per line with at least an \"input\" field";
        assert_eq!(message(""), expected);
        assert_eq!(message("\n  \n\n"), expected);
        assert_eq!(
            Dataset::from_records(vec![], "data.jsonl")
                .unwrap_err()
                .to_string(),
            expected
        );
    }

    #[test]
    fn duplicate_ids_are_listed_sorted_with_their_lines() {
        let text = "{\"id\": \"b\", \"input\": \"1\"}\n{\"id\": \"a\", \"input\": \"2\"}\n\n{\"id\": \"b\", \"input\": \"3\"}\n{\"id\": \"a\", \"input\": \"4\"}\n{\"id\": \"c\", \"input\": \"5\"}\n{\"id\": \"a\", \"input\": \"6\"}";
        let error = read(text).unwrap_err();
        assert_eq!(
            error.to_string(),
            "data.jsonl: duplicate task ids: 'a' (lines 2, 5, 7), 'b' (lines 1, 4); every task needs a unique 'id'"
        );
    }

    #[test]
    fn explicit_id_can_collide_with_a_default_index() {
        let error = read("{\"input\": \"a\"}\n{\"id\": 0, \"input\": \"b\"}").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("duplicate task ids: '0' (lines 1, 2)")
        );
    }

    #[test]
    fn from_tasks_checks_ids() {
        let tasks = vec![Task::new("a", "x"), Task::new("a", "y")];
        assert!(
            Dataset::from_tasks(tasks, "inline")
                .unwrap_err()
                .to_string()
                .contains("duplicate")
        );
        let blank = vec![Task::new("a", "x"), Task::new(" ", "y")];
        assert_eq!(
            Dataset::from_tasks(blank, "inline").unwrap_err(),
            DatasetError::BlankId {
                origin: "inline".to_owned(),
                line: 2
            }
        );
        let fine = Dataset::from_tasks(vec![Task::new("a", "x")], "inline").unwrap();
        assert!(!fine.is_empty());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_gives_a_dataset_or_an_error_never_a_panic(text in "(?s).{0,200}") {
            let _ = read(&text);
        }

        #[test]
        fn any_string_input_survives_a_jsonl_round_trip(
            inputs in proptest::collection::vec(proptest::prelude::any::<String>(), 1..8),
        ) {
            let lines: Vec<String> = inputs
                .iter()
                .map(|input| json!({"input": input}).to_string())
                .collect();
            let dataset = read(&lines.join("\n"));
            proptest::prop_assert!(dataset.is_ok(), "{dataset:?}");
            let read_back: Vec<String> = dataset
                .map(|d| d.tasks.into_iter().map(|t| t.input).collect())
                .unwrap_or_default();
            proptest::prop_assert_eq!(read_back, inputs);
        }
    }

    #[test]
    fn physical_lines_follow_python_line_boundaries() {
        let lines: Vec<&str> = physical_lines("a\r\nb\rc\nd\u{0c}e\u{1c}f\n").collect();
        assert_eq!(lines, ["a", "b", "c", "d", "e", "f"]);
        let lines: Vec<&str> = physical_lines("a\n\nb").collect();
        assert_eq!(lines, ["a", "", "b"]);
    }
}
