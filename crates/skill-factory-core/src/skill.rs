//! SKILL.md: YAML frontmatter and a Markdown body.
//!
//! The format is the Python `skill-factory`'s (reference spec §3.2): an optional `---`-fenced
//! YAML mapping with a required `name`, an optional `description` and any other keys, then the
//! body. Reading follows the Python tool's quirks where a file written for it would otherwise
//! read differently (line splitting, whitespace trimming, `str()` of non-text names); writing is
//! byte-identical to it (see [`skill_factory_pycompat::yaml`]).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};
use serde_saphyr::{DuplicateKeyPolicy, MessageFormatter, NonFiniteFloatPolicy};

use skill_factory_pycompat::{repr, yaml};

/// A skill: the document an agent loads, and the reference files it carries that a search may
/// rewrite.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// The skill's name (required, non-blank).
    pub name: String,
    /// What the skill does and when to use it.
    pub description: String,
    /// Other frontmatter keys, in their original order.
    pub extra: Map<String, Value>,
    /// The Markdown body, trimmed.
    pub body: String,
    /// The text files under the skill folder's `references/`, by path relative to the folder
    /// (`references/guide.md`): the ones a search may rewrite, and a harness that gives the
    /// agent a skill folder writes beside the SKILL.md. Empty for a skill read from its text
    /// alone.
    pub files: BTreeMap<String, String>,
}

/// Why a SKILL.md could not be read.
///
/// Messages are full sentences without the file's path: callers prefix `<path>: `.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SkillError {
    /// The text starts with `---` but no later line is `---`.
    #[error(
        "The frontmatter opened with '---' on line 1 is never closed. Add a line containing \
         only '---' after the last frontmatter line."
    )]
    NeverClosed,
    /// The frontmatter is not valid YAML.
    #[error(
        "The frontmatter is not valid YAML at line {line}, column {column}: {message}. Fix the \
         YAML between the two '---' lines."
    )]
    Yaml {
        /// Line in the whole file (1-based; the opening `---` is line 1). When the parser
        /// gives no position, the frontmatter's first line.
        line: usize,
        /// Column in that line (1-based).
        column: usize,
        /// The YAML parser's description of the problem.
        message: String,
    },
    /// The frontmatter is valid YAML but not a mapping, e.g. a list.
    #[error(
        "The frontmatter is {found}, but it must be a YAML mapping of `key: value` lines, such \
         as `name: my-skill`."
    )]
    NotAMapping {
        /// What the frontmatter is instead ("a list", "a string", ...).
        found: &'static str,
    },
    /// There is no frontmatter, or it has no usable `name` (absent, null, empty, `false`, `0`,
    /// as in the Python tool).
    #[error(
        "The skill has no 'name'. Start the file with a frontmatter header such as:\n---\nname: \
         my-skill\ndescription: What the skill does and when to use it.\n---"
    )]
    MissingName,
    /// `name` is present but only whitespace.
    #[error("The frontmatter 'name' is blank. Give the skill a name such as `name: my-skill`.")]
    BlankName,
    /// `name` or `description` is a list or a mapping instead of text.
    #[error(
        "The frontmatter '{field}' is {found}, but it must be text. Write it as one string, such \
         as `{field}: {example}`.",
        example = example_text(field)
    )]
    NotText {
        /// The offending key (`name` or `description`).
        field: &'static str,
        /// What it is instead ("a list" or "a mapping").
        found: &'static str,
    },
}

impl Skill {
    /// A skill with no extra frontmatter keys. The name is not checked here: [`Skill::parse`]
    /// is where untrusted text is validated.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        body: impl Into<String>,
    ) -> Self {
        Skill {
            name: name.into(),
            description: description.into(),
            extra: Map::new(),
            body: body.into(),
            files: BTreeMap::new(),
        }
    }

    /// Reads a SKILL.md.
    ///
    /// A leading byte-order mark is ignored. If the text starts with `---`, the frontmatter runs
    /// to the first later line that is `---` once trimmed; the body is everything after that
    /// line, trimmed. Lines are split and re-joined with `\n` the way Python's `splitlines`
    /// does, so a CRLF file yields an LF body, as with the reference tool.
    pub fn parse(text: &str) -> Result<Skill, SkillError> {
        let text = text.trim_start_matches('\u{feff}');
        if !text.starts_with("---") {
            return Err(SkillError::MissingName);
        }
        let lines = python_splitlines(text);
        let closing = lines
            .iter()
            .skip(1)
            .position(|line| python_strip(line) == "---")
            .map(|offset| offset + 1)
            .ok_or(SkillError::NeverClosed)?;
        let frontmatter_text = lines[1..closing].join("\n");
        let body = python_strip(&lines[closing + 1..].join("\n")).to_owned();
        let mut frontmatter = parse_frontmatter(&frontmatter_text)?;

        let name = match field_text(&frontmatter_text, &frontmatter, "name")? {
            Some(text) if text.truthy => text.text,
            _ => return Err(SkillError::MissingName),
        };
        if python_strip(&name).is_empty() {
            return Err(SkillError::BlankName);
        }
        // The reference stores `str(None)`, i.e. "None", for `description:` left empty; an
        // empty description is what the author meant.
        let description = field_text(&frontmatter_text, &frontmatter, "description")?
            .map(|text| text.text)
            .unwrap_or_default();
        frontmatter.shift_remove("name");
        frontmatter.shift_remove("description");
        Ok(Skill {
            name,
            description,
            extra: frontmatter,
            body,
            files: BTreeMap::new(),
        })
    }

    /// Writes the SKILL.md text, byte-identical to the Python tool's `to_markdown`: `---`, the
    /// YAML frontmatter, `---`, an empty line, the trimmed body and a final newline.
    pub fn to_markdown(&self) -> String {
        let yaml = yaml::dump(&self.frontmatter());
        format!(
            "---\n{}\n---\n\n{}\n",
            python_rstrip(&yaml),
            python_strip(&self.body)
        )
    }

    /// The same skill carrying `files` (see [`Skill::files`]).
    pub fn with_files(mut self, files: BTreeMap<String, String>) -> Skill {
        self.files = files;
        self
    }

    /// The same skill with another body; `self` is left unchanged.
    pub fn with_body(&self, body: impl Into<String>) -> Skill {
        Skill {
            body: body.into(),
            ..self.clone()
        }
    }

    /// The frontmatter as written: `name`, `description`, then the extra keys in order.
    pub fn frontmatter(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("name".to_owned(), Value::String(self.name.clone()));
        map.insert(
            "description".to_owned(),
            Value::String(self.description.clone()),
        );
        // An extra `name`/`description` (only possible when built in code) overrides the field
        // in place, as Python's `{name, description, **extra}` does.
        for (key, value) in &self.extra {
            map.insert(key.clone(), value.clone());
        }
        map
    }

    /// A rough token count: characters of the whole SKILL.md and its reference files divided
    /// by four, at least 1.
    pub fn estimate_tokens(&self) -> usize {
        let chars = self.to_markdown().chars().count()
            + self
                .files
                .values()
                .map(|text| text.chars().count())
                .sum::<usize>();
        (chars / 4).max(1)
    }
}

/// A sample value for `field`, for error messages.
fn example_text(field: &str) -> &'static str {
    if field == "name" {
        "my-skill"
    } else {
        "What the skill does and when to use it"
    }
}

fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        // PyYAML keeps the last of repeated keys; so do we, to read its files the same way.
        duplicate_keys: DuplicateKeyPolicy::LastWins,
        // JSON cannot hold `.inf`/`.nan`; keeping the text beats rejecting the file.
        non_finite_float_policy: NonFiniteFloatPolicy::AsString,
        // YAML 1.1 (PyYAML) reads `0755` as octal.
        legacy_octal_numbers: true,
    }
}

fn parse_frontmatter(text: &str) -> Result<Map<String, Value>, SkillError> {
    let value: Value =
        serde_saphyr::from_str_with_options(text, yaml_options()).map_err(yaml_error)?;
    match value {
        Value::Object(map) => Ok(map),
        // An empty frontmatter (or only comments) is an empty mapping.
        Value::Null => Ok(Map::new()),
        other => Err(SkillError::NotAMapping {
            found: kind_of(&other),
        }),
    }
}

fn yaml_error(error: serde_saphyr::Error) -> SkillError {
    // Without a position, point at the frontmatter's first line rather than invent one.
    let (line, column) = error
        .location()
        .map(|at| (at.line() as usize, at.column() as usize))
        .unwrap_or((1, 1));
    let message = serde_saphyr::DefaultMessageFormatter.format_message(error.without_snippet());
    // The message may quote the file; keep control characters from reaching the terminal.
    let mut printable = String::new();
    for c in message.trim_end_matches('.').chars() {
        if c.is_control() {
            printable.extend(c.escape_debug());
        } else {
            printable.push(c);
        }
    }
    SkillError::Yaml {
        // The frontmatter starts on the line after the opening `---`.
        line: line + 1,
        column,
        message: printable,
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// A frontmatter field as the Python tool sees it after `str()`.
struct FieldText {
    text: String,
    /// Python truthiness of the loaded value (`0`, `false` and `""` are false).
    truthy: bool,
}

/// Reads `name` or `description` as text; `None` when absent or null.
///
/// Non-text scalars become what Python's `str()` gives for the value PyYAML would have loaded.
/// serde-saphyr follows YAML 1.2 and a few extensions, so it types some plain scalars that
/// PyYAML keeps as strings (`y`, `n`, `1e3`); those keep their source text, which is also what
/// makes `parse(to_markdown(skill))` give back the same name and description.
fn field_text(
    frontmatter_text: &str,
    frontmatter: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<FieldText>, SkillError> {
    let loaded = match frontmatter.get(field) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => return Ok(Some(FieldText::from_source(text.clone()))),
        Some(collection @ (Value::Array(_) | Value::Object(_))) => {
            return Err(SkillError::NotText {
                field,
                found: kind_of(collection),
            });
        }
        Some(Value::Bool(flag)) => FieldText {
            text: (if *flag { "True" } else { "False" }).to_owned(),
            truthy: *flag,
        },
        Some(Value::Number(number)) => FieldText {
            text: match number.as_f64() {
                Some(float) if number.is_f64() => repr::repr_float(float),
                _ => number.to_string(),
            },
            truthy: number.as_f64() != Some(0.0),
        },
    };
    Ok(Some(match scalar_source_text(frontmatter_text, field) {
        Some(source) if yaml::plain_scalar_is_string(&source) => FieldText::from_source(source),
        _ => loaded,
    }))
}

impl FieldText {
    /// A value that PyYAML loads as a string.
    fn from_source(text: String) -> Self {
        FieldText {
            truthy: !text.is_empty(),
            text,
        }
    }
}

/// The source text of a scalar field, read through a string target (serde-saphyr hands a
/// plain scalar's text over unchanged). `None` for tagged scalars it refuses to stringify.
fn scalar_source_text(frontmatter_text: &str, field: &'static str) -> Option<String> {
    #[derive(Deserialize)]
    struct Name {
        name: Option<String>,
    }
    #[derive(Deserialize)]
    struct Description {
        description: Option<String>,
    }
    let options = yaml_options();
    if field == "name" {
        serde_saphyr::from_str_with_options::<Name>(frontmatter_text, options)
            .ok()?
            .name
    } else {
        serde_saphyr::from_str_with_options::<Description>(frontmatter_text, options)
            .ok()?
            .description
    }
}

/// Python's `str.isspace`: Unicode whitespace plus the ASCII separators U+001C..U+001F.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()`.
fn python_strip(text: &str) -> &str {
    text.trim_matches(is_python_space)
}

/// Python's `str.rstrip()`.
fn python_rstrip(text: &str) -> &str {
    text.trim_end_matches(is_python_space)
}

/// Python's `str.splitlines()`: splits at `\n`, `\r\n`, `\r`, `\v`, `\f`, U+001C..U+001E,
/// U+0085, U+2028 and U+2029, dropping the separators; no trailing empty line.
fn python_splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\u{b}'
                | '\u{c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !is_break {
            continue;
        }
        lines.push(&text[start..at]);
        start = at + c.len_utf8();
        if c == '\r' && chars.peek().is_some_and(|&(_, next)| next == '\n') {
            chars.next();
            start += 1;
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitlines_matches_python() {
        assert_eq!(python_splitlines(""), Vec::<&str>::new());
        assert_eq!(python_splitlines("a\n"), vec!["a"]);
        assert_eq!(python_splitlines("a\n\nb"), vec!["a", "", "b"]);
        assert_eq!(
            python_splitlines("a\r\nb\rc\u{2028}d\u{b}e\u{1c}f"),
            vec!["a", "b", "c", "d", "e", "f"]
        );
        assert_eq!(python_splitlines("\r\n\r"), vec!["", ""]);
    }

    #[test]
    fn strip_removes_python_whitespace_only() {
        assert_eq!(python_strip("\u{1f}\u{a0} x \u{3000}\n"), "x");
        assert_eq!(python_strip("\u{200b}x"), "\u{200b}x");
    }
}
