//! Finds the line of a key path in the config text, for errors found after parsing
//! (`metric.judge.criteria[1].weight` must be > 0) and for telling a null block from a
//! wrong type.
//!
//! The typed parse already knows lines for its own errors; this second, untyped read of the
//! same text is only consulted when an error needs a place. A text that cannot be read this
//! way simply yields no line.

use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use crate::error::{ConfigError, Place};

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A mapping key.
    Key(String),
    /// A list index.
    Index(usize),
}

/// Renders a key path the way a person writes it: `metric.judge.criteria[1].weight`.
pub fn render_path(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// Reads a key path written as [`render_path`] writes it (`metric.judge.criteria[1].weight`).
pub fn parse_path(key: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for part in key.split('.') {
        let (name, indexes) = part
            .split_once('[')
            .map_or((part, ""), |(n, rest)| (n, rest));
        if !name.is_empty() {
            steps.push(Step::Key(name.to_owned()));
        }
        for index in indexes.split('[') {
            if let Ok(i) = index.trim_end_matches(']').parse() {
                steps.push(Step::Index(i));
            }
        }
    }
    steps
}

/// The untyped shape of a YAML document, with the line of every value.
#[derive(Debug)]
pub enum Node {
    /// A mapping, keys in document order (non-text keys are rendered as text).
    Map(Vec<(String, Spanned<Node>)>),
    /// A list.
    Seq(Vec<Spanned<Node>>),
    /// A null value (`key:` with nothing after it, `~`, `null`).
    Null,
    /// Any other scalar.
    Scalar,
}

/// A parsed document to look lines up in.
pub struct Locator {
    root: Option<Spanned<Node>>,
}

impl Locator {
    /// Reads the text; a text that is not valid YAML gives a locator that knows nothing.
    pub fn new(text: &str) -> Self {
        // `.nan` must not make the whole document unreadable: the checks report it.
        let mut options = serde_saphyr::Options::default();
        options.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::PassThrough;
        Self {
            root: serde_saphyr::from_str_with_options::<Spanned<Node>>(text, options).ok(),
        }
    }

    /// The node at a path, if the document has it.
    pub fn node(&self, path: &[Step]) -> Option<&Spanned<Node>> {
        let mut current = self.root.as_ref()?;
        for step in path {
            current = match (&current.value, step) {
                (Node::Map(entries), Step::Key(key)) => entries
                    .iter()
                    .rev()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v)?,
                (Node::Seq(items), Step::Index(i)) => items.get(*i)?,
                _ => return None,
            };
        }
        Some(current)
    }

    /// The line (1-based) of the value at a path or, when the document does not have that
    /// key (a default was used), of the nearest block above it that it has.
    pub fn line(&self, path: &[Step]) -> Option<u32> {
        (1..=path.len()).rev().find_map(|depth| {
            self.node(&path[..depth])
                .map(|n| n.referenced.line())
                .and_then(|line| u32::try_from(line).ok())
                .filter(|&line| line > 0)
        })
    }

    /// What the document root is, for "the root must be a mapping" errors.
    pub fn root_kind(&self) -> Option<&'static str> {
        self.root.as_ref().map(|root| match root.value {
            Node::Map(_) => "a mapping",
            Node::Seq(_) => "a list",
            Node::Null => "nothing",
            Node::Scalar => "a single value",
        })
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

/// A mapping key as written: `true:` in a System One check stays the text "true".
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(KeyText)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Scalar)
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }

    fn visit_i128<E: serde::de::Error>(self, _: i128) -> Result<Node, E> {
        Ok(Node::Scalar)
    }

    fn visit_u128<E: serde::de::Error>(self, _: u128) -> Result<Node, E> {
        Ok(Node::Scalar)
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Node, E> {
        Ok(Node::Scalar)
    }

    fn visit_bytes<E: serde::de::Error>(self, _: &[u8]) -> Result<Node, E> {
        Ok(Node::Scalar)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        Node::deserialize(deserializer)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<KeyText>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            entries.push((key.0, value));
        }
        Ok(Node::Map(entries))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }
}

/// A value of a config block that deserialized but cannot be used: where it is (the key path
/// from the config's root, like `objective.constraints[0].split`) and why. The block's own
/// reader returns it without knowing the file; [`Located::unusable`] puts it at its line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct Unusable {
    /// The key path of the value.
    pub key: String,
    /// What is wrong with it and what it must be.
    pub message: String,
}

impl Unusable {
    /// The value at `key` cannot be used, because `message`.
    pub fn at(key: impl Into<String>, message: impl Into<String>) -> Self {
        Unusable {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// A config file and its locator: errors found after the parse, each at the line of its key.
pub struct Located<'a> {
    /// The config file, as the user named it.
    pub file: &'a Path,
    /// Lines of its keys.
    pub locator: &'a Locator,
}

impl Located<'_> {
    /// Where `path` is written.
    pub fn place(&self, path: &[Step]) -> Place {
        Place {
            file: self.file.to_path_buf(),
            line: self.locator.line(path),
        }
    }

    /// The value at `path` is wrong: `problem`, and what to write instead.
    pub fn invalid(&self, path: &[Step], problem: String, fix: &str) -> ConfigError {
        ConfigError::InvalidValue {
            place: self.place(path),
            key: render_path(path),
            problem,
            fix: fix.to_owned(),
        }
    }

    /// The value at `path` reads but cannot be used: `message` says why and what to do.
    pub fn unreadable(&self, path: &[Step], message: impl Into<String>) -> ConfigError {
        ConfigError::UnreadableValue {
            place: self.place(path),
            key: render_path(path),
            message: message.into(),
        }
    }

    /// [`Located::unreadable`] for an [`Unusable`] value, at its key path.
    pub fn unusable(&self, unusable: Unusable) -> ConfigError {
        self.unreadable(&parse_path(&unusable.key), unusable.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_paths_read_back_as_written() {
        for key in ["provider", "metric.judge.criteria[1].weight", "a[0][2].b"] {
            assert_eq!(render_path(&parse_path(key)), key);
        }
        let text = "skill: s\nmetric:\n  programmatic:\n    checks:\n      - is_valid_json\n      - {max_length: 3}\n";
        let line = Locator::new(text).line(&parse_path("metric.programmatic.checks[1]"));
        assert_eq!(line, Some(6));
    }
}
