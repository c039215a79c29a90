//! Labelled examples, one JSON object per line, and what an example's status is at a state
//! budget.
//!
//! A record reads as the reference reads it: `state` (or its alias `input`) is the text sent,
//! a non-string state becomes pretty JSON, `group` defaults to the id and `source` to empty,
//! the state hash is given or computed, and the length is counted in Unicode code points.
//! Where the reference would crash or accept nonsense (an array as an id, a `state_hash` that
//! is a number, `"chars": "many"`), the loader stops with the line and the fix instead.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};
use skill_factory_llm::systemone::sha24;
use skill_factory_pycompat::{json, repr};

use skill_factory_core::dataset::json_kind;

use crate::LabError;
use crate::data::split::Split;

/// One labelled example.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// Unique, non-blank id.
    pub id: String,
    /// True for the positive class (what the probe set must flag).
    pub label: bool,
    /// The text sent to the model; `None` for a hash-only example (rescored from the cache,
    /// never asked).
    pub state: Option<String>,
    /// sha24 of the state (given, or computed from it).
    pub state_hash: Option<String>,
    /// The state's length in Unicode code points.
    pub chars: Option<usize>,
    /// Examples of one group always land in one split (default: the id).
    pub group: String,
    /// Where the example came from (default empty); held-out sources are kept out.
    pub source: String,
    /// An explicit split, which wins over the hash.
    pub split: Option<Split>,
    /// Why the example was skipped when it was collected, if it was.
    pub skipped: Option<String>,
    /// Anything else the record carried under `metadata`.
    pub metadata: Map<String, Value>,
}

/// What happens to an example at a state budget.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// It can be (or was) asked.
    Judged,
    /// Its state is longer than the budget: skipped, never truncated.
    OverBudget,
    /// It has no state hash: nothing can be asked or looked up.
    NoState,
    /// It was skipped when collected, for this reason.
    Skipped(String),
}

impl Status {
    /// The status as reports and failure digests print it: `judged`, `over budget`,
    /// `no state` or `skipped: <reason>`.
    pub fn name(&self) -> String {
        match self {
            Status::Skipped(reason) => format!("skipped: {reason}"),
            other => other.bucket().to_string(),
        }
    }

    /// The coverage column the status is counted in: [`Status::name`] with every skip
    /// reason collapsed into `skipped`.
    pub fn bucket(&self) -> &'static str {
        match self {
            Status::Judged => "judged",
            Status::OverBudget => "over budget",
            Status::NoState => "no state",
            Status::Skipped(_) => "skipped",
        }
    }
}

/// The class names a dataset's `label` values are written with: the `labels:` section of the
/// config, from which it deserializes (a missing name keeps its default, an unknown key is an
/// error).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Labels {
    /// The class the probe set must flag.
    pub positive: String,
    /// The other class.
    pub negative: String,
}

impl Default for Labels {
    fn default() -> Self {
        Labels {
            positive: "positive".to_string(),
            negative: "negative".to_string(),
        }
    }
}

/// Spellings read as the positive class when the value is not one of the class names.
const TRUE_WORDS: [&str; 4] = ["1", "true", "yes", "positive"];
/// Spellings read as the negative class when the value is not one of the class names.
const FALSE_WORDS: [&str; 4] = ["0", "false", "no", "negative"];

impl Labels {
    /// Reads a `label` value: a boolean as is, the numbers 0 and 1, else the trimmed text
    /// compared with the class names (case-sensitively), then with `1/true/yes/positive` and
    /// `0/false/no/negative` (case-insensitively).
    pub fn parse(&self, value: &Value) -> Result<bool, LabError> {
        match value {
            Value::Bool(flag) => return Ok(*flag),
            Value::Number(number) => match number.as_f64() {
                Some(0.0) => return Ok(false),
                Some(1.0) => return Ok(true),
                _ => {}
            },
            _ => {}
        }
        let text = match value {
            Value::String(text) => text.trim().to_string(),
            other => repr::str_json(other),
        };
        if text == self.positive {
            return Ok(true);
        }
        if text == self.negative {
            return Ok(false);
        }
        let lower = text.to_lowercase();
        if TRUE_WORDS.contains(&lower.as_str()) {
            return Ok(true);
        }
        if FALSE_WORDS.contains(&lower.as_str()) {
            return Ok(false);
        }
        Err(LabError::invalid(format!(
            "label {} is neither {} nor {}; write one of the two class names of `labels:` \
             (they are case-sensitive), or true/false",
            repr::repr_json(value),
            repr::repr_str(&self.positive),
            repr::repr_str(&self.negative)
        )))
    }

    /// A one-line record with these class names, for error messages that show the format.
    fn sample_record(&self) -> String {
        format!(
            "{{\"id\": \"ex1\", \"label\": {}, \"state\": \"...\"}}",
            json::dumps(&Value::String(self.positive.clone()))
        )
    }
}

impl Example {
    /// An example with a state: its hash and length computed from it, in a group of its own,
    /// with no source, explicit split, skip reason or metadata.
    pub fn new(id: impl Into<String>, label: bool, state: impl Into<String>) -> Example {
        let id = id.into();
        let state = state.into();
        Example {
            group: id.clone(),
            id,
            label,
            state_hash: Some(sha24(&state)),
            chars: Some(state.chars().count()),
            state: Some(state),
            source: String::new(),
            split: None,
            skipped: None,
            metadata: Map::new(),
        }
    }

    /// Reads one dataset record (see the module documentation). The error says what is wrong
    /// with the record and how to fix it; the caller adds where the record is.
    pub fn from_record(record: &Map<String, Value>, labels: &Labels) -> Result<Example, LabError> {
        Example::from_owned_record(record.clone(), labels)
    }

    /// [`Example::from_record`] taking the record apart, so that loading moves every state
    /// into its example instead of copying it.
    fn from_owned_record(
        mut record: Map<String, Value>,
        labels: &Labels,
    ) -> Result<Example, LabError> {
        let id = match record.remove("id") {
            None | Some(Value::Null) => {
                return Err(LabError::invalid(format!(
                    "the record has no 'id'; give every example a unique id, e.g. {}",
                    labels.sample_record()
                )));
            }
            Some(Value::String(id)) => id,
            Some(number @ Value::Number(_)) => repr::str_json(&number),
            Some(other) => {
                return Err(LabError::invalid(format!(
                    "'id' must be a string, found {}; give every example a short unique id \
                     such as \"ex1\"",
                    json_kind(&other)
                )));
            }
        };
        if id.trim().is_empty() {
            return Err(LabError::invalid(
                "'id' is blank; give every example a non-empty unique id such as \"ex1\"",
            ));
        }
        let label = match record.get("label") {
            None => {
                return Err(LabError::invalid(format!(
                    "example {} has no 'label'; add \"label\": {} or {}",
                    repr::repr_str(&id),
                    json::dumps(&Value::String(labels.positive.clone())),
                    json::dumps(&Value::String(labels.negative.clone()))
                )));
            }
            Some(value) => labels.parse(value)?,
        };
        // A present `state` wins even when null, as in the reference: `input` is only an alias
        // for records that have no `state` key at all.
        let state = match record.remove("state").or_else(|| record.remove("input")) {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text),
            Some(other) => Some(json::dumps_pretty(&other)),
        };
        let given_hash = match record.remove("state_hash") {
            None | Some(Value::Null) => None,
            Some(Value::String(hash)) if hash.is_empty() => None,
            Some(Value::String(hash)) => Some(hash),
            Some(other) => {
                return Err(LabError::invalid(format!(
                    "'state_hash' must be a string (the sha24 of the state), found {}; \
                     remove it to have it computed from 'state'",
                    json_kind(&other)
                )));
            }
        };
        let given_chars = match record.remove("chars") {
            None | Some(Value::Null) => None,
            Some(value) => Some(count(&value).ok_or_else(|| {
                LabError::invalid(format!(
                    "'chars' must be a whole number of characters, found {}; remove it when \
                     the record has a 'state' (its length is counted from it)",
                    repr::repr_json(&value)
                ))
            })?),
        };
        let (state_hash, chars) = match &state {
            Some(text) => (
                Some(given_hash.unwrap_or_else(|| sha24(text))),
                Some(text.chars().count()),
            ),
            None => (given_hash, given_chars),
        };
        let split = match record.remove("split") {
            None | Some(Value::Null) => None,
            Some(value) => {
                let name = match &value {
                    Value::String(name) => Split::parse(name),
                    _ => None,
                };
                Some(name.ok_or_else(|| {
                    LabError::invalid(format!(
                        "unknown split {}; use one of train, val, test, held-out, or remove \
                         'split' to assign the example by the hash of its group",
                        repr::repr_json(&value)
                    ))
                })?)
            }
        };
        let metadata = match record.remove("metadata") {
            None => Map::new(),
            Some(Value::Object(metadata)) => metadata,
            Some(value) if !truthy(&value) => Map::new(),
            Some(other) => {
                return Err(LabError::invalid(format!(
                    "'metadata' must be a JSON object, found {}; write it as \
                     {{\"key\": \"value\"}} or remove it",
                    json_kind(&other)
                )));
            }
        };
        Ok(Example {
            group: text_field(record.remove("group")).unwrap_or_else(|| id.clone()),
            source: text_field(record.remove("source")).unwrap_or_default(),
            skipped: text_field(record.remove("skipped")),
            id,
            label,
            state,
            state_hash,
            chars,
            split,
            metadata,
        })
    }

    /// The record [`dataset_text`] writes for this example: `id`, `label` (its class name),
    /// `state` or else `state_hash` and `chars`, `group`, `source`, then `split`, `skipped`
    /// and `metadata` when set.
    ///
    /// Unlike the reference, a given state hash that is not the sha24 of the state is kept
    /// next to the state: it is the key of the example's cached answers, and reading the
    /// record back must not lose it.
    pub fn to_record(&self, labels: &Labels) -> Map<String, Value> {
        let mut record = Map::new();
        record.insert("id".to_string(), Value::String(self.id.clone()));
        let class = if self.label {
            &labels.positive
        } else {
            &labels.negative
        };
        record.insert("label".to_string(), Value::String(class.clone()));
        let optional = |text: &Option<String>| text.clone().map_or(Value::Null, Value::String);
        match &self.state {
            Some(state) => {
                record.insert("state".to_string(), Value::String(state.clone()));
                if let Some(hash) = &self.state_hash
                    && *hash != sha24(state)
                {
                    record.insert("state_hash".to_string(), Value::String(hash.clone()));
                }
            }
            None => {
                record.insert("state_hash".to_string(), optional(&self.state_hash));
                record.insert(
                    "chars".to_string(),
                    self.chars.map_or(Value::Null, Value::from),
                );
            }
        }
        record.insert("group".to_string(), Value::String(self.group.clone()));
        record.insert("source".to_string(), Value::String(self.source.clone()));
        if let Some(split) = self.split {
            record.insert("split".to_string(), Value::String(split.name().to_string()));
        }
        if let Some(reason) = self.skipped.as_ref().filter(|r| !r.is_empty()) {
            record.insert("skipped".to_string(), Value::String(reason.clone()));
        }
        if !self.metadata.is_empty() {
            record.insert("metadata".to_string(), Value::Object(self.metadata.clone()));
        }
        record
    }

    /// What happens to the example at `budget` characters; the first match wins: skipped
    /// when collected, state longer than the budget (also for a hash-only example whose size
    /// is known), no state hash, else judged.
    pub fn status(&self, budget: usize) -> Status {
        if let Some(reason) = self.skipped.as_ref().filter(|r| !r.is_empty()) {
            return Status::Skipped(reason.clone());
        }
        if self.chars.is_some_and(|chars| chars > budget) {
            return Status::OverBudget;
        }
        if self.state_hash.is_none() {
            return Status::NoState;
        }
        Status::Judged
    }
}

/// Loads a JSONL dataset: one example per line, blank lines skipped. Every error names the
/// file and line and says what to fix; ids must be unique and the file must hold at least one
/// example.
pub fn load_dataset(path: &Path, labels: &Labels) -> Result<Vec<Example>, LabError> {
    let text = crate::files::read_text(
        path,
        skill_factory_io::input::DATASET,
        ": check `dataset:` in the config; it names a JSONL file with one example per line",
    )?;
    let at = |line: usize, message: &str| {
        LabError::invalid(format!("{}:{line}: {message}", path.display()))
    };
    // A BOM is what some editors put first; it is no part of the first record.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut examples = Vec::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for (index, line) in text.split('\n').enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let record = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(record)) => record,
            Ok(other) => {
                return Err(at(
                    number,
                    &format!(
                        "expected a JSON object, found {}; write each example as one object \
                         per line, e.g. {}",
                        json_kind(&other),
                        labels.sample_record()
                    ),
                ));
            }
            Err(error) => {
                // serde_json's message ends in "at line 1 column N", which on a one-line
                // document only the column says anything in.
                let message = error.to_string();
                let message = message
                    .rsplit_once(" at line ")
                    .map_or(message.as_str(), |(head, _)| head);
                return Err(at(
                    number,
                    &format!(
                        "invalid JSON (column {}): {message}; each non-blank line must hold one \
                         complete JSON object, e.g. {}",
                        error.column(),
                        labels.sample_record()
                    ),
                ));
            }
        };
        let example = Example::from_owned_record(record, labels)
            .map_err(|e| e.within(&format!("{}:{number}", path.display())))?;
        if let Some(first) = first_line.get(&example.id) {
            return Err(at(
                number,
                &format!(
                    "duplicate example id {} (first on line {first}); ids must be unique, \
                     rename one of the two",
                    repr::repr_str(&example.id)
                ),
            ));
        }
        first_line.insert(example.id.clone(), number);
        examples.push(example);
    }
    if examples.is_empty() {
        return Err(LabError::invalid(format!(
            "{}: the dataset is empty; add one JSON object per line, e.g. {}",
            path.display(),
            labels.sample_record()
        )));
    }
    Ok(examples)
}

/// `examples` as JSONL, one [`Example::to_record`] per line (labels as class names, text as
/// written: non-ASCII kept, as the Python tool writes it), for a whole-file write.
pub fn dataset_text(examples: &[Example], labels: &Labels) -> String {
    let mut text = String::new();
    for example in examples {
        text.push_str(&json::dumps_unicode(&Value::Object(
            example.to_record(labels),
        )));
        text.push('\n');
    }
    text
}

/// A whole, non-negative `chars` value (`12`, `12.0` or `"12"`, as Python's `int()` reads
/// them).
fn count(value: &Value) -> Option<usize> {
    match value {
        Value::Number(number) => match number.as_u64() {
            Some(n) => usize::try_from(n).ok(),
            None => number
                .as_f64()
                .filter(|x| *x >= 0.0 && x.fract() == 0.0 && *x < usize::MAX as f64)
                .map(|x| x as usize),
        },
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

/// A text field as the reference reads it with `str(value or "")`: absent and falsy values
/// (`null`, `false`, `0`, `""`, `[]`, `{}`) are no value, other non-strings are their
/// Python `str()`.
fn text_field(value: Option<Value>) -> Option<String> {
    match value {
        Some(Value::String(text)) if !text.is_empty() => Some(text),
        Some(value) if truthy(&value) => Some(repr::str_json(&value)),
        _ => None,
    }
}

/// Python's truth value of a decoded JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|x| x != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(positive: &str, negative: &str) -> Labels {
        Labels {
            positive: positive.to_string(),
            negative: negative.to_string(),
        }
    }

    fn record(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn example(value: Value) -> Result<Example, LabError> {
        Example::from_record(&record(value), &Labels::default())
    }

    /// Writes `text` to a fresh dataset file and loads it.
    fn load_text(text: &str, labels: &Labels) -> Result<Vec<Example>, LabError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dataset.jsonl");
        std::fs::write(&path, text).unwrap();
        load_dataset(&path, labels)
    }

    fn error_text(result: Result<Vec<Example>, LabError>) -> String {
        result.err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn label_class_names_are_case_sensitive() {
        let named = labels("malicious", "benign");
        assert_eq!(named.parse(&json!("malicious")).ok(), Some(true));
        assert_eq!(named.parse(&json!(" benign ")).ok(), Some(false));
        assert_eq!(named.parse(&json!(true)).ok(), Some(true));
        assert_eq!(named.parse(&json!(0)).ok(), Some(false));
        assert_eq!(named.parse(&json!(1.0)).ok(), Some(true));
        assert_eq!(named.parse(&json!("Yes")).ok(), Some(true));
        assert_eq!(named.parse(&json!("NEGATIVE")).ok(), Some(false));
        let error = named.parse(&json!("Malicious")).unwrap_err();
        assert!(error.to_string().contains("neither"), "{error}");
        assert!(
            error.to_string().contains("'malicious'") && error.to_string().contains("'benign'"),
            "{error}"
        );
        assert!(
            named
                .parse(&json!(2))
                .unwrap_err()
                .to_string()
                .contains("neither")
        );
    }

    #[test]
    fn labels_deserialize_from_the_config_section_with_defaults() {
        let named: Labels = serde_json::from_value(json!({"positive": "mismatch"})).unwrap();
        assert_eq!(named, labels("mismatch", "negative"));
        assert!(serde_json::from_value::<Labels>(json!({"postive": "x"})).is_err());
    }

    #[test]
    fn an_example_computes_its_state_hash_and_length_and_defaults_its_group_to_its_id() {
        let hello = example(json!({"id": "a", "label": "positive", "state": "hello"})).unwrap();
        assert_eq!(hello.state_hash.as_deref(), Some(sha24("hello").as_str()));
        assert_eq!(hello.chars, Some(5));
        assert_eq!(hello.group, "a");
        assert_eq!(hello.source, "");
        assert_eq!(hello, Example::new("a", true, "hello"));
        // Code points, not bytes; a given length is overridden, a given hash kept.
        let accented = example(
            json!({"id": "b", "label": 0, "state": "h\u{e9}llo", "chars": 99,
                           "state_hash": "given"}),
        )
        .unwrap();
        assert_eq!(accented.chars, Some(5));
        assert_eq!(accented.state_hash.as_deref(), Some("given"));
        let blank = example(json!({"id": "  ", "label": 1, "state": "x"})).unwrap_err();
        assert!(blank.to_string().contains("blank"), "{blank}");
    }

    #[test]
    fn status_is_skipped_then_over_budget_then_no_state_then_judged() {
        let judged = Example::new("a", true, "x".repeat(50));
        assert_eq!(judged.status(100), Status::Judged);
        assert_eq!(judged.status(49), Status::OverBudget);
        let mut no_state = judged.clone();
        no_state.state = None;
        no_state.state_hash = None;
        no_state.chars = None;
        assert_eq!(no_state.status(100), Status::NoState);
        let mut skipped = judged.clone();
        skipped.skipped = Some("truncated".to_string());
        assert_eq!(skipped.status(10), Status::Skipped("truncated".to_string()));
        assert_eq!(skipped.status(10).name(), "skipped: truncated");
        assert_eq!(skipped.status(10).bucket(), "skipped");
        let hash_only =
            example(json!({"id": "h", "label": 1, "state_hash": "abc", "chars": 50})).unwrap();
        assert_eq!(hash_only.state, None);
        assert_eq!(hash_only.status(100), Status::Judged);
        let big = example(json!({"id": "big", "label": 1, "chars": 500})).unwrap();
        assert_eq!(big.status(100), Status::OverBudget);
        assert_eq!(big.status(1000), Status::NoState);
        assert_eq!(Status::OverBudget.name(), "over budget");
        assert_eq!(Status::NoState.name(), "no state");
        assert_eq!(Status::Judged.name(), "judged");
    }

    #[test]
    fn record_validation_names_the_line_and_turns_non_string_input_into_json() {
        let plain = Labels::default();
        let no_id = error_text(load_text("{\"label\": 1, \"state\": \"x\"}\n", &plain));
        assert!(
            no_id.contains("dataset.jsonl:1: ") && no_id.contains("has no 'id'"),
            "{no_id}"
        );
        let no_label = error_text(load_text("\n{\"id\": \"a\", \"state\": \"x\"}\n", &plain));
        assert!(
            no_label.contains(":2: ") && no_label.contains("has no 'label'"),
            "{no_label}"
        );
        let duplicate = error_text(load_text(
            "{\"id\": \"a\", \"label\": 1}\n{\"id\": \"b\", \"label\": 1}\n{\"id\": \"a\", \"label\": 0}\n",
            &plain,
        ));
        assert!(
            duplicate.contains(":3: duplicate example id 'a' (first on line 1)"),
            "{duplicate}"
        );
        let empty = error_text(load_text("\n  \n", &plain));
        assert!(empty.contains("the dataset is empty"), "{empty}");
        let unknown = error_text(load_text(
            "{\"id\": \"a\", \"label\": 1, \"split\": \"dev\"}",
            &plain,
        ));
        assert!(unknown.contains(":1: unknown split 'dev'") && unknown.contains("held-out"));
        let input =
            example(json!({"id": "j", "label": true, "input": {"k": "\u{e9}", "n": [1, 2.5]}}))
                .unwrap();
        let text = input.state.unwrap();
        assert!(text.contains("\"k\""), "{text}");
        assert_eq!(
            text,
            "{\n  \"k\": \"\u{e9}\",\n  \"n\": [\n    1,\n    2.5\n  ]\n}"
        );
    }

    #[test]
    fn jsonl_round_trip_keeps_hash_only_examples_and_metadata() {
        let named = labels("mismatch", "consistent");
        let mut hash_only = example(
            json!({"id": "h", "label": 1, "state_hash": "abc", "chars": 7,
                                           "split": "test", "group": "g", "source": "s"}),
        )
        .unwrap();
        hash_only.skipped = Some("too big".to_string());
        let mut full = Example::new("f", false, "caf\u{e9}");
        full.metadata = record(json!({"findings": [{"severity": "high"}], "x": 1e-5}));
        let mut rehashed = Example::new("r", true, "text");
        rehashed.state_hash = Some("from-the-scanner".to_string());
        let examples = vec![hash_only, full, rehashed];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("dataset.jsonl");
        crate::files::write_atomic(&path, &dataset_text(&examples, &named)).unwrap();
        assert_eq!(load_dataset(&path, &named).unwrap(), examples);
        let text = std::fs::read_to_string(&path).unwrap();
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            "{\"id\": \"h\", \"label\": \"mismatch\", \"state_hash\": \"abc\", \"chars\": 7, \
             \"group\": \"g\", \"source\": \"s\", \"split\": \"test\", \"skipped\": \"too big\"}"
        );
        // No temporary is left beside the file.
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }

    #[test]
    fn load_errors_name_the_missing_file_and_the_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let missing = load_dataset(&dir.path().join("nope.jsonl"), &Labels::default());
        assert!(matches!(missing, Err(LabError::NotFound { .. })));
        assert!(error_text(missing).contains("nope.jsonl not found"));
        let bad = error_text(load_text(
            "{\"id\": \"a\", \"label\": 1}\n{\"id\": \"b\", \"label\": 1\n",
            &Labels::default(),
        ));
        assert!(bad.contains(":2: invalid JSON"), "{bad}");
        let array = error_text(load_text("[1]\n", &Labels::default()));
        assert!(
            array.contains(":1: expected a JSON object, found an array"),
            "{array}"
        );
        let count = error_text(load_text(
            "{\"id\": \"a\", \"label\": 1, \"chars\": \"many\"}",
            &Labels::default(),
        ));
        assert!(
            count.contains(":1: 'chars' must be a whole number"),
            "{count}"
        );
    }

    #[test]
    fn a_byte_order_mark_and_crlf_line_ends_are_no_part_of_the_records() {
        let loaded = load_text(
            "\u{feff}{\"id\": \"a\", \"label\": 1, \"state\": \"x\"}\r\n\r\n{\"id\": 7, \"label\": 0}\r\n",
            &Labels::default(),
        )
        .unwrap();
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded[0].id, "a");
        assert_eq!(loaded[1].id, "7");
    }
}
