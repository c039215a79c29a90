//! A question as the decision model receives it, and the hashes that key its answers.
//!
//! Both hashes are "sha24": the first 24 hex characters of a SHA-256. The question hash is
//! taken over the compact JSON array `[instructions, true, false]` exactly as JavaScript's
//! `JSON.stringify` writes it (no spaces, non-ASCII characters raw, `/` and U+2028 not
//! escaped), so the answer caches of the Python tool and of skill-scanner's lab are
//! interchangeable with ours.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use skill_factory_pycompat::json;

/// How many hex characters of a SHA-256 a hash keeps.
const HASH_HEX_CHARS: usize = 24;

/// A yes/no question as sent: what to decide, and what "true" and "false" mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// What the model decides about the state.
    pub instructions: String,
    /// The criterion of the `true` option.
    pub if_true: String,
    /// The criterion of the `false` option.
    pub if_false: String,
}

impl Question {
    /// A question from its three texts.
    pub fn new(
        instructions: impl Into<String>,
        if_true: impl Into<String>,
        if_false: impl Into<String>,
    ) -> Self {
        Question {
            instructions: instructions.into(),
            if_true: if_true.into(),
            if_false: if_false.into(),
        }
    }

    /// The question hash: sha24 of `JSON.stringify([instructions, true, false])`.
    pub fn hash(&self) -> String {
        sha24(&json::dumps_js(&json!([
            self.instructions,
            self.if_true,
            self.if_false
        ])))
    }

    /// The question in the request body: a `choice` between the criteria keyed `true` and
    /// `false`, whose `probabilities.true` is read as P(true).
    pub fn wire(&self) -> Value {
        json!({
            "type": "choice",
            "instructions": self.instructions,
            "criteria": {"true": self.if_true, "false": self.if_false},
        })
    }
}

/// The first 24 hex characters of the SHA-256 of `text` (UTF-8): the state hash, and the hash
/// behind [`Question::hash`].
pub fn sha24(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut hex = hex::encode(digest);
    hex.truncate(HASH_HEX_CHARS);
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_hash_matches_javascript_json_stringify_for_the_tricky_vector() {
        let instructions =
            "Is it \u{e9}vil? \u{2028} \"quoted\" \\ back/slash\n\ttab \u{1} ctl \u{1F600}";
        let question = Question::new(instructions, "Yes: it is.", "No: it is not.");
        assert_eq!(question.hash(), "ad03089c40eab5007ffc7a6a");
    }

    #[test]
    fn question_hash_changes_when_the_invisible_line_separator_is_missing() {
        let without = "Is it \u{e9}vil?  \"quoted\" \\ back/slash\n\ttab \u{1} ctl \u{1F600}";
        let question = Question::new(without, "Yes: it is.", "No: it is not.");
        assert_ne!(question.hash(), "ad03089c40eab5007ffc7a6a");
    }

    #[test]
    fn compact_json_keeps_non_ascii_slashes_and_line_separators_raw() {
        assert_eq!(
            json::dumps_js(&json!(["é/\u{2028}", "\u{1}\u{8}\u{c}"])),
            "[\"é/\u{2028}\",\"\\u0001\\b\\f\"]"
        );
    }

    #[test]
    fn sha24_is_the_first_24_hex_characters_of_sha256() {
        // sha256("hello") = 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
        assert_eq!(sha24("hello"), "2cf24dba5fb0a30e26e83b2a");
    }

    #[test]
    fn wire_form_is_a_choice_between_true_and_false() {
        let q = Question::new("Is it?", "Yes", "No");
        assert_eq!(
            serde_json::to_string(&q.wire()).unwrap(),
            r#"{"type":"choice","instructions":"Is it?","criteria":{"true":"Yes","false":"No"}}"#
        );
    }
}
