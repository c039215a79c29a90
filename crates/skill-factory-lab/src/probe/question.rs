//! Questions, framings and the question bank.
//!
//! A *compiled* question is exactly what the decision model receives:
//! [`skill_factory_llm::systemone::Question`] (instructions and the `true` / `false`
//! criteria), whose hash keys its answers in the cache. Users write *specs*, either whole or
//! *framed*: a named framing text (the `frame`) followed by one blank line and the question.
//! The same question under two framings is two questions, by convention `<base>@<frame>`
//! (`undisclosed_change@reviewer`), because the model answers them differently.
//!
//! A [`Bank`] keeps frames and specs in the order they were written: that order is the order
//! of every output and breaks ties in selection.

use std::collections::HashSet;
use std::path::Path;

use indexmap::IndexMap;
use serde_json::{Map, Value};
use skill_factory_llm::systemone::Question;
use skill_factory_pycompat::{json, repr};

use crate::LabError;
use crate::files::{read_json, write_atomic};

/// The longest question id, in characters.
const MAX_ID_CHARS: usize = 100;

/// How many ids an error message lists before it cuts the list short.
const IDS_SHOWN: usize = 10;

/// Whether `id` can name a question: a letter, digit or `_`, then up to 99 letters, digits or
/// `_ . @ : -` (ASCII only). The ids end up in file names, exports and cache reports, hence
/// the narrow alphabet.
pub fn valid_question_id(id: &str) -> bool {
    let mut chars = id.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    // Every accepted character is ASCII, so the byte length is the character count.
    id.len() <= MAX_ID_CHARS
        && (first.is_ascii_alphanumeric() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '@' | ':' | '-'))
}

/// The written question an id stands for: the part before the first `@` (`intent` for
/// `intent@reviewer`), so that selection can keep one framing per written question.
pub fn question_base(id: &str) -> &str {
    id.split_once('@').map_or(id, |(base, _)| base)
}

/// Checks that a compiled question can be sent: its instructions and both criteria must say
/// something (blank text gives the model nothing to decide on).
pub fn check_question(question: &Question) -> Result<(), LabError> {
    for (text, what) in [
        (&question.instructions, "instructions are"),
        (&question.if_true, "'true' criterion is"),
        (&question.if_false, "'false' criterion is"),
    ] {
        if text.trim().is_empty() {
            return Err(LabError::invalid(format!(
                "the question's {what} empty: write what the model decides and what 'true' \
                 and 'false' mean"
            )));
        }
    }
    Ok(())
}

/// A question as written in a bank file: whole, or a framed question that compiles to the
/// frame's text, a blank line and the question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionSpec {
    /// `{"instructions", "true", "false"}`.
    Whole {
        /// What the model decides.
        instructions: String,
        /// The criterion of the `true` answer.
        if_true: String,
        /// The criterion of the `false` answer.
        if_false: String,
    },
    /// `{"frame", "question", "true", "false"}`.
    Framed {
        /// The name of a frame of the bank.
        frame: String,
        /// The question, written after the frame's text and a blank line.
        question: String,
        /// The criterion of the `true` answer.
        if_true: String,
        /// The criterion of the `false` answer.
        if_false: String,
    },
}

impl QuestionSpec {
    /// Reads one question of a bank file.
    ///
    /// `true` and `false` must be present and non-empty; `instructions` excludes `frame` and
    /// `question`, which come together. A JSON `null` counts as absent, and other non-string
    /// values are read as Python's `str()` writes them (`1`, `True`), as the reference does.
    pub fn from_json(value: &Value) -> Result<QuestionSpec, LabError> {
        let Value::Object(map) = value else {
            return Err(LabError::invalid(format!(
                "a question is a JSON object with \"instructions\", \"true\" and \"false\" (or \
                 \"frame\" and \"question\" instead of \"instructions\"), not {}",
                shown(value)
            )));
        };
        let text = |key: &str| map.get(key).filter(|v| !v.is_null()).map(repr::str_json);
        let criterion = |key: &str| match map.get(key) {
            Some(value) if truthy(value) => Ok(repr::str_json(value)),
            _ => Err(LabError::invalid(format!(
                "question is missing '{key}': give the criterion of the {key} answer \
                 (e.g. \"{}\")",
                if key == "true" {
                    "Yes: it does."
                } else {
                    "No: it does not."
                }
            ))),
        };
        let if_true = criterion("true")?;
        let if_false = criterion("false")?;
        match (text("instructions"), text("frame"), text("question")) {
            (Some(instructions), None, None) => Ok(QuestionSpec::Whole {
                instructions,
                if_true,
                if_false,
            }),
            (None, Some(frame), Some(question)) => Ok(QuestionSpec::Framed {
                frame,
                question,
                if_true,
                if_false,
            }),
            (Some(_), _, _) => Err(LabError::invalid(
                "question has both 'instructions' and 'frame'/'question': \
                 it needs either 'instructions' or both 'frame' and 'question', so keep one form",
            )),
            (None, _, _) => Err(LabError::invalid(
                "question needs either 'instructions' or both 'frame' and \
                 'question': write the whole question under \"instructions\", or name a frame \
                 under \"frame\" and write the question under \"question\"",
            )),
        }
    }

    /// The spec as saved: `{instructions, true, false}` or `{frame, question, true, false}`.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        let (if_true, if_false) = match self {
            QuestionSpec::Whole {
                instructions,
                if_true,
                if_false,
            } => {
                map.insert("instructions".into(), instructions.as_str().into());
                (if_true, if_false)
            }
            QuestionSpec::Framed {
                frame,
                question,
                if_true,
                if_false,
            } => {
                map.insert("frame".into(), frame.as_str().into());
                map.insert("question".into(), question.as_str().into());
                (if_true, if_false)
            }
        };
        map.insert("true".into(), if_true.as_str().into());
        map.insert("false".into(), if_false.as_str().into());
        Value::Object(map)
    }

    /// The question as sent, with `frames` giving the framing texts: a framed spec becomes
    /// `frame text + "\n\n" + question`. Fails on an unknown frame or blank text.
    pub fn compile(&self, frames: &IndexMap<String, String>) -> Result<Question, LabError> {
        let question = match self {
            QuestionSpec::Whole {
                instructions,
                if_true,
                if_false,
            } => Question::new(instructions, if_true, if_false),
            QuestionSpec::Framed {
                frame,
                question,
                if_true,
                if_false,
            } => {
                let Some(text) = frames.get(frame) else {
                    return Err(unknown_frame(frame, frames));
                };
                Question::new(format!("{text}\n\n{question}"), if_true, if_false)
            }
        };
        check_question(&question)?;
        Ok(question)
    }

    /// The frame this spec is written under, if it is framed.
    pub fn frame(&self) -> Option<&str> {
        match self {
            QuestionSpec::Whole { .. } => None,
            QuestionSpec::Framed { frame, .. } => Some(frame),
        }
    }
}

/// The error for a frame name the bank does not define, listing those it does.
fn unknown_frame(frame: &str, frames: &IndexMap<String, String>) -> LabError {
    let defined = if frames.is_empty() {
        "no frames are defined".to_owned()
    } else {
        format!("defined: {}", listed(frames.keys()))
    };
    LabError::invalid(format!(
        "unknown frame {}: define it under \"frames\" or fix the name ({defined})",
        repr::repr_str(frame)
    ))
}

/// Python truthiness of a decoded JSON value: `null`, `false`, `0`, `""`, `[]` and `{}` are
/// false.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

/// A value as a message shows it: compact JSON, cut short when long.
pub(crate) fn shown(value: &Value) -> String {
    const MAX_CHARS: usize = 80;
    let text = value.to_string();
    if text.chars().count() <= MAX_CHARS {
        text
    } else {
        let cut: String = text.chars().take(MAX_CHARS).collect();
        format!("{cut}…")
    }
}

/// Names for a message, Python-quoted (`'a', 'b'`), the first few only.
fn listed<'a>(names: impl IntoIterator<Item = &'a String>) -> String {
    let names: Vec<&String> = names.into_iter().collect();
    let mut parts: Vec<String> = names
        .iter()
        .take(IDS_SHOWN)
        .map(|name| repr::repr_str(name))
        .collect();
    if names.len() > IDS_SHOWN {
        parts.push(format!("… ({} in all)", names.len()));
    }
    parts.join(", ")
}

/// An ordered set of frames and question specs, as read from and written to a bank file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bank {
    /// Framing texts by name, in the order they were written.
    pub frames: IndexMap<String, String>,
    /// Question specs by id, in the order they were written.
    pub specs: IndexMap<String, QuestionSpec>,
}

impl Bank {
    /// Reads a bank from either file format, then [validates](Bank::validate) it:
    /// `{"frames": {...}, "questions": {id: spec}}` when the top level has a `questions`
    /// object, else the lab's flat `{id: {instructions, true, false}}`.
    pub fn from_json(value: &Value) -> Result<Bank, LabError> {
        let Value::Object(top) = value else {
            return Err(LabError::invalid(format!(
                "a question bank is a JSON object, {{\"frames\": {{...}}, \"questions\": \
                 {{id: question}}}} or {{id: {{\"instructions\", \"true\", \"false\"}}}}, not {}",
                shown(value)
            )));
        };
        let mut bank = Bank::default();
        let questions = match top.get("questions") {
            Some(Value::Object(questions)) => {
                match top.get("frames") {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(frames)) => {
                        for (name, text) in frames {
                            let Value::String(text) = text else {
                                return Err(LabError::invalid(format!(
                                    "frame {} must be a text (a JSON string), not {}",
                                    repr::repr_str(name),
                                    shown(text)
                                )));
                            };
                            bank.frames.insert(name.clone(), text.clone());
                        }
                    }
                    Some(other) => {
                        return Err(LabError::invalid(format!(
                            "\"frames\" must be an object of name -> framing text, not {}",
                            shown(other)
                        )));
                    }
                }
                questions
            }
            // Read flat, this would fail on the entry "questions" with a puzzling message.
            Some(other) => {
                return Err(LabError::invalid(format!(
                    "\"questions\" must be an object of id -> question, not {}",
                    shown(other)
                )));
            }
            None => top,
        };
        for (id, spec) in questions {
            let spec = QuestionSpec::from_json(spec)
                .map_err(|e| e.within(&format!("question {}", repr::repr_str(id))))?;
            bank.specs.insert(id.clone(), spec);
        }
        bank.validate()?;
        Ok(bank)
    }

    /// Reads and validates a bank file. A missing file is [`LabError::NotFound`]; unreadable
    /// JSON and invalid content are [`LabError::Invalid`], naming the file.
    pub fn load(path: &Path) -> Result<Bank, LabError> {
        let value = read_json(path, ": check the path of the question bank")?;
        Bank::from_json(&value).map_err(|e| e.within(&path.display().to_string()))
    }

    /// The bank as saved: `{"frames": {...}, "questions": {id: spec}}`.
    pub fn to_json(&self) -> Value {
        let frames: Map<String, Value> = self
            .frames
            .iter()
            .map(|(name, text)| (name.clone(), Value::String(text.clone())))
            .collect();
        let questions: Map<String, Value> = self
            .specs
            .iter()
            .map(|(id, spec)| (id.clone(), spec.to_json()))
            .collect();
        let mut map = Map::new();
        map.insert("frames".into(), Value::Object(frames));
        map.insert("questions".into(), Value::Object(questions));
        Value::Object(map)
    }

    /// Writes the bank as Python's `json.dumps(indent=1, ensure_ascii=False)` plus a newline,
    /// atomically (a crash leaves the old file or the new one, never half of one).
    pub fn save(&self, path: &Path) -> Result<(), LabError> {
        write_atomic(path, &self.text())
    }

    /// The text [`Bank::save`] writes.
    pub fn text(&self) -> String {
        json::dumps_indent(&self.to_json(), 1) + "\n"
    }

    /// Checks every id's syntax, and that every spec compiles (its frame exists, no text is
    /// blank).
    pub fn validate(&self) -> Result<(), LabError> {
        for (id, spec) in &self.specs {
            check_id(id)?;
            spec.compile(&self.frames)
                .map_err(|e| e.within(&format!("question {}", repr::repr_str(id))))?;
        }
        Ok(())
    }

    /// Every question compiled, in bank order (the form the System One client takes).
    pub fn compiled(&self) -> Result<Vec<(String, Question)>, LabError> {
        self.specs
            .keys()
            .map(|id| Ok((id.clone(), self.compile_one(id)?)))
            .collect()
    }

    /// One question compiled.
    pub fn compile_one(&self, id: &str) -> Result<Question, LabError> {
        let Some(spec) = self.specs.get(id) else {
            return Err(LabError::invalid(format!(
                "unknown question id {}: the bank has {}",
                repr::repr_str(id),
                self.described_ids()
            )));
        };
        spec.compile(&self.frames)
            .map_err(|e| e.within(&format!("question {}", repr::repr_str(id))))
    }

    /// The questions `ids`, kept in bank order (not the order of `ids`), with only the frames
    /// they use. An id the bank does not have is an error.
    pub fn subset(&self, ids: &[String]) -> Result<Bank, LabError> {
        let unknown: Vec<&String> = ids
            .iter()
            .filter(|id| !self.specs.contains_key(id.as_str()))
            .collect();
        if !unknown.is_empty() {
            return Err(LabError::invalid(format!(
                "unknown question id(s) {}: the bank has {}",
                listed(unknown),
                self.described_ids()
            )));
        }
        let wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let specs: IndexMap<String, QuestionSpec> = self
            .specs
            .iter()
            .filter(|(id, _)| wanted.contains(id.as_str()))
            .map(|(id, spec)| (id.clone(), spec.clone()))
            .collect();
        let used: HashSet<&str> = specs.values().filter_map(QuestionSpec::frame).collect();
        let frames = self
            .frames
            .iter()
            .filter(|(name, _)| used.contains(name.as_str()))
            .map(|(name, text)| (name.clone(), text.clone()))
            .collect();
        Ok(Bank { frames, specs })
    }

    /// Adds `other`'s frames and questions that this bank lacks, and returns the ids added
    /// (in `other`'s order). Nothing is ever overwritten: a frame name or question id present
    /// in both must mean the same text (compiled text, for questions), or the merge fails and
    /// this bank is left unchanged.
    pub fn merge(&mut self, other: &Bank) -> Result<Vec<String>, LabError> {
        for (name, text) in &other.frames {
            if self.frames.get(name).is_some_and(|mine| mine != text) {
                return Err(LabError::invalid(format!(
                    "frame {} already exists with different text: rename one of the two \
                     frames, or make their texts identical",
                    repr::repr_str(name)
                )));
            }
        }
        let mut added = Vec::new();
        for (id, spec) in &other.specs {
            let theirs = spec
                .compile(&other.frames)
                .map_err(|e| e.within(&format!("question {}", repr::repr_str(id))))?;
            match self.specs.get(id) {
                Some(_) if self.compile_one(id)? != theirs => {
                    return Err(LabError::invalid(format!(
                        "question {} already exists with different text: give the new \
                         question another id, or keep the existing text",
                        repr::repr_str(id)
                    )));
                }
                Some(_) => {}
                None => {
                    check_id(id)?;
                    added.push((id, spec));
                }
            }
        }
        for (name, text) in &other.frames {
            if !self.frames.contains_key(name) {
                self.frames.insert(name.clone(), text.clone());
            }
        }
        Ok(added
            .into_iter()
            .map(|(id, spec)| {
                self.specs.insert(id.clone(), spec.clone());
                id.clone()
            })
            .collect())
    }

    /// One written question under several framings: ids `base@frame` for each frame, each a
    /// framed spec (the frames themselves must be in the bank the specs go into).
    pub fn expand(
        base: &str,
        question: &str,
        if_true: &str,
        if_false: &str,
        frames: &[&str],
    ) -> Vec<(String, QuestionSpec)> {
        frames
            .iter()
            .map(|frame| {
                (
                    format!("{base}@{frame}"),
                    QuestionSpec::Framed {
                        frame: (*frame).to_owned(),
                        question: question.to_owned(),
                        if_true: if_true.to_owned(),
                        if_false: if_false.to_owned(),
                    },
                )
            })
            .collect()
    }

    /// How many questions the bank holds.
    pub fn len(&self) -> usize {
        self.specs.len()
    }

    /// Whether the bank holds no question.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// The question ids, in bank order.
    pub fn ids(&self) -> Vec<String> {
        self.specs.keys().cloned().collect()
    }

    /// Whether the bank has a question with this id.
    pub fn contains(&self, id: &str) -> bool {
        self.specs.contains_key(id)
    }

    /// The ids for an error message.
    fn described_ids(&self) -> String {
        if self.specs.is_empty() {
            "no questions".to_owned()
        } else {
            listed(self.specs.keys())
        }
    }
}

/// The error for an id [`valid_question_id`] refuses.
fn check_id(id: &str) -> Result<(), LabError> {
    if valid_question_id(id) {
        Ok(())
    } else {
        Err(LabError::invalid(format!(
            "invalid question id {}: an id starts with a letter, a digit or '_' and goes on \
             with letters, digits and '_.@:-', at most {MAX_ID_CHARS} characters \
             (e.g. intent@reviewer)",
            repr::repr_str(id)
        )))
    }
}

/// The bank of the shared test fixtures (spec §6.0): frame `reviewer`; questions
/// `capability`, `intent@reviewer` (framed), `lure` and `noise`. The fake responder keys on
/// the words "capability", "intent" and "lure" of the compiled instructions.
#[cfg(test)]
pub(crate) fn test_bank() -> Bank {
    let whole = |instructions: &str| QuestionSpec::Whole {
        instructions: instructions.to_owned(),
        if_true: "Yes".to_owned(),
        if_false: "No".to_owned(),
    };
    let mut bank = Bank::default();
    bank.frames.insert(
        "reviewer".to_owned(),
        "You review an item before it is used.".to_owned(),
    );
    bank.specs.insert(
        "capability".to_owned(),
        whole("Does this item have the capability?"),
    );
    bank.specs.insert(
        "intent@reviewer".to_owned(),
        QuestionSpec::Framed {
            frame: "reviewer".to_owned(),
            question: "Does the item show bad intent?".to_owned(),
            if_true: "Yes".to_owned(),
            if_false: "No".to_owned(),
        },
    );
    bank.specs
        .insert("lure".to_owned(), whole("Does it contain a lure?"));
    bank.specs.insert("noise".to_owned(), whole("Is it noisy?"));
    bank
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn whole(instructions: &str, if_true: &str, if_false: &str) -> QuestionSpec {
        QuestionSpec::Whole {
            instructions: instructions.to_owned(),
            if_true: if_true.to_owned(),
            if_false: if_false.to_owned(),
        }
    }

    fn err<T: std::fmt::Debug>(result: Result<T, LabError>) -> String {
        match result {
            Ok(value) => panic!("expected an error, got {value:?}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn question_hash_matches_node_for_the_tricky_vector() {
        // U+2028 between the two spaces, one backslash, U+0001, an astral emoji.
        let spec = whole(
            "Is it \u{e9}vil? \u{2028} \"quoted\" \\ back/slash\n\ttab \u{1} ctl \u{1F600}",
            "Yes: it is.",
            "No: it is not.",
        );
        let question = spec.compile(&IndexMap::new()).expect("compiles");
        assert_eq!(question.hash(), "ad03089c40eab5007ffc7a6a");
    }

    #[test]
    fn a_question_with_empty_instructions_is_rejected() {
        let message = err(check_question(&Question::new("  \n", "Yes", "No")));
        assert!(message.contains("instructions are empty"), "{message}");
        assert!(err(whole("Is it?", "Yes", " ").compile(&IndexMap::new())).contains("'false'"));
        let from_file = err(Bank::from_json(
            &json!({"q": {"instructions": "", "true": "Yes", "false": "No"}}),
        ));
        assert!(
            from_file.contains("'q'") && from_file.contains("empty"),
            "{from_file}"
        );
    }

    #[test]
    fn a_spec_needs_instructions_or_frame_and_question_but_not_both() {
        let neither = err(QuestionSpec::from_json(&json!({"true": "Y", "false": "N"})));
        assert!(neither.contains("needs either 'instructions' or both 'frame' and 'question'"));
        let half = err(QuestionSpec::from_json(
            &json!({"frame": "f", "true": "Y", "false": "N"}),
        ));
        assert!(half.contains("needs either"), "{half}");
        let both = err(QuestionSpec::from_json(&json!({
            "instructions": "Is it?", "frame": "f", "question": "Is it?", "true": "Y", "false": "N"
        })));
        assert!(
            both.contains("needs either") && both.contains("both"),
            "{both}"
        );
        // Null counts as absent; criteria must be truthy; other values are stringified.
        let spec = QuestionSpec::from_json(
            &json!({"instructions": "Is it?", "frame": null, "true": 1, "false": "N"}),
        )
        .expect("whole spec");
        assert_eq!(spec, whole("Is it?", "1", "N"));
        let missing = err(QuestionSpec::from_json(
            &json!({"instructions": "Is it?", "true": "", "false": "N"}),
        ));
        assert!(missing.contains("question is missing 'true'"), "{missing}");
    }

    #[test]
    fn framed_spec_compiles_frame_blank_line_question_and_unknown_frame_is_an_error() {
        let spec = QuestionSpec::Framed {
            frame: "f".into(),
            question: "Is it?".into(),
            if_true: "Yes".into(),
            if_false: "No".into(),
        };
        let mut frames = IndexMap::new();
        frames.insert("f".to_owned(), "Frame.".to_owned());
        let question = spec.compile(&frames).expect("compiles");
        assert_eq!(question.instructions, "Frame.\n\nIs it?");
        assert_eq!(
            (question.if_true.as_str(), question.if_false.as_str()),
            ("Yes", "No")
        );
        let message = err(spec.compile(&IndexMap::new()));
        assert!(message.contains("unknown frame 'f'"), "{message}");
    }

    #[test]
    fn expand_over_frames_yields_one_id_per_framing() {
        let expanded = Bank::expand("intent", "Is it bad?", "Yes", "No", &["a", "b"]);
        let ids: Vec<&str> = expanded.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["intent@a", "intent@b"]);
        assert_eq!(expanded[1].1.frame(), Some("b"));
        assert_eq!(question_base("intent@a"), "intent");
        assert_eq!(question_base("lure"), "lure");
    }

    #[test]
    fn bank_reads_the_flat_lab_format_and_round_trips_through_save_and_load() {
        let flat = json!({
            "a": {"instructions": "Is it A?", "true": "Yes", "false": "No"},
            "b": {"instructions": "Is it B?", "true": "Yes", "false": "No"},
        });
        let bank = Bank::from_json(&flat).expect("flat bank");
        assert_eq!(bank.ids(), ["a", "b"]);
        assert!(bank.frames.is_empty());

        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("sub").join("bank.json");
        let framed = test_bank();
        framed.save(&path).expect("saved");
        let text = std::fs::read_to_string(&path).expect("readable");
        assert!(
            text.starts_with("{\n \"frames\": {\n  \"reviewer\": "),
            "{text}"
        );
        assert!(text.ends_with("}\n"));
        let loaded = Bank::load(&path).expect("loads");
        assert_eq!(loaded.compiled().ok(), framed.compiled().ok());
        assert_eq!(loaded, framed);
        // Only the target is left in the directory: no temporary file.
        let names: Vec<_> = std::fs::read_dir(path.parent().expect("parent"))
            .expect("listable")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["bank.json"]);
    }

    #[test]
    fn merge_accepts_identical_duplicates_and_rejects_different_text() {
        let mut bank = test_bank();
        let before = bank.clone();
        assert_eq!(
            bank.merge(&before.clone()).expect("no-op merge"),
            Vec::<String>::new()
        );
        assert_eq!(bank, before);

        // The same compiled text written as a whole question is the same question.
        let mut same = Bank::default();
        same.specs.insert(
            "intent@reviewer".into(),
            whole(
                "You review an item before it is used.\n\nDoes the item show bad intent?",
                "Yes",
                "No",
            ),
        );
        same.specs
            .insert("extra".into(), whole("Is it extra?", "Yes", "No"));
        assert_eq!(bank.merge(&same).expect("merges"), ["extra"]);
        assert_eq!(bank.ids().last().map(String::as_str), Some("extra"));

        let mut changed = Bank::default();
        changed
            .specs
            .insert("lure".into(), whole("Does it lure?", "Yes", "No"));
        let message = err(bank.merge(&changed));
        assert!(message.contains("different text"), "{message}");

        let mut frame = Bank::default();
        frame
            .frames
            .insert("reviewer".into(), "Another text.".into());
        frame
            .specs
            .insert("new".into(), whole("Is it new?", "Yes", "No"));
        let snapshot = bank.clone();
        let message = err(bank.merge(&frame));
        assert!(message.contains("frame 'reviewer'") && message.contains("different text"));
        assert_eq!(bank, snapshot, "a failed merge changes nothing");
    }

    #[test]
    fn bank_rejects_invalid_ids_and_unknown_frames() {
        let bad_id = err(Bank::from_json(
            &json!({"-x": {"instructions": "Is it?", "true": "Y", "false": "N"}}),
        ));
        assert!(bad_id.contains("invalid question id"), "{bad_id}");
        let unknown = err(Bank::from_json(&json!({
            "frames": {"a": "A."},
            "questions": {"q@b": {"frame": "b", "question": "Is it?", "true": "Y", "false": "N"}}
        })));
        assert!(
            unknown.contains("unknown frame 'b'") && unknown.contains("'a'"),
            "{unknown}"
        );

        assert!(valid_question_id("undisclosed_change@reviewer"));
        assert!(valid_question_id("_a.b:c-d"));
        assert!(valid_question_id(&"a".repeat(100)));
        assert!(!valid_question_id(&"a".repeat(101)));
        assert!(!valid_question_id(""));
        assert!(!valid_question_id("@a"));
        assert!(!valid_question_id("a b"));
        assert!(!valid_question_id("é"));
        assert!(!valid_question_id("a\n"));
    }

    #[test]
    fn subset_keeps_only_the_frames_it_uses_and_rejects_unknown_ids() {
        let bank = test_bank();
        let plain = bank.subset(&["capability".into()]).expect("subset");
        assert_eq!(plain.ids(), ["capability"]);
        assert!(plain.frames.is_empty());
        let framed = bank
            .subset(&["lure".into(), "intent@reviewer".into()])
            .expect("subset");
        assert_eq!(framed.ids(), ["intent@reviewer", "lure"], "bank order");
        assert_eq!(framed.frames.keys().collect::<Vec<_>>(), ["reviewer"]);
        let message = err(bank.subset(&["nope".into()]));
        assert!(
            message.contains("'nope'") && message.contains("'capability'"),
            "{message}"
        );
    }

    #[test]
    fn bank_load_reports_a_missing_file_as_not_found_and_bad_json_as_invalid_json() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("missing.json");
        assert!(matches!(
            Bank::load(&missing),
            Err(LabError::NotFound { .. })
        ));
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\n \"a\": {\n}").expect("written");
        let message = Bank::load(&bad).expect_err("bad JSON").to_string();
        assert!(
            message.contains("bad.json") && message.contains("invalid JSON"),
            "{message}"
        );
        assert!(message.contains("line 3"), "{message}");
        std::fs::write(&bad, "[1]").expect("written");
        let message = Bank::load(&bad).expect_err("not a bank").to_string();
        assert!(
            message.contains("bad.json: a question bank is a JSON object"),
            "{message}"
        );
    }

    #[test]
    fn a_bank_whose_questions_key_is_not_an_object_is_refused_by_name() {
        let message = err(Bank::from_json(&json!({"frames": {}, "questions": ["a"]})));
        assert!(
            message.starts_with("\"questions\" must be an object"),
            "{message}"
        );
        let message = err(Bank::from_json(&json!({"frames": [], "questions": {}})));
        assert!(
            message.starts_with("\"frames\" must be an object"),
            "{message}"
        );
    }

    #[test]
    fn spec_json_keys_follow_the_saved_order() {
        let bank = test_bank();
        let saved = bank.to_json();
        let keys = |id: &str| -> Vec<String> {
            saved["questions"][id]
                .as_object()
                .map(|map| map.keys().cloned().collect())
                .unwrap_or_default()
        };
        assert_eq!(keys("capability"), ["instructions", "true", "false"]);
        assert_eq!(
            keys("intent@reviewer"),
            ["frame", "question", "true", "false"]
        );
        assert_eq!(Bank::from_json(&saved).expect("reloads"), bank);
    }
}
