//! YAML text → a typed config, with every serde error turned into a [`ConfigError`] that
//! names the key path, the line and the fix: the one parser of skill-mode and classifier-mode
//! configs.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_saphyr::{Error as YamlError, MessageFormatter, SnippetMode, UserMessageFormatter};

use crate::error::{ConfigError, Place};
use crate::locate::{Locator, Step, render_path};
use crate::suggest::closest;

/// What a block that is present but null (`optimizer:` with nothing under it) reports; the
/// parser turns it into [`ConfigError::NullBlock`].
pub const NULL_BLOCK: &str = "skill-factory: block is null";

/// What a value that deserialized but cannot be read as what its key takes (a check naming
/// no check) reports, before its problem; the parser turns it into
/// [`ConfigError::UnreadableValue`] at the value's line.
pub const INVALID_VALUE: &str = "skill-factory: invalid value: ";

/// A block that must be a mapping when present: `optimizer: null` is an error, not the
/// defaults, because it usually means the lines under it lost their indentation.
pub fn block<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer)?.ok_or_else(|| serde::de::Error::custom(NULL_BLOCK))
}

/// An optional block whose presence matters (`metric.golden`): present but null is an error.
pub fn optional_block<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    block(deserializer).map(Some)
}

/// How to add a missing top-level key, by key (`("dataset", "add e.g. 'dataset: ...'")`).
pub type MissingFixes<'a> = &'a [(&'a str, &'a str)];

/// Parses a config's text into `T`. `file` is used in messages only; `fixes` says how to add
/// each required top-level key.
pub fn parse<T: DeserializeOwned>(
    text: &str,
    file: &Path,
    fixes: MissingFixes<'_>,
) -> Result<T, ConfigError> {
    let locator = Locator::new(text);
    let mut steps: Vec<Step> = Vec::new();
    let parsed = serde_saphyr::with_deserializer_from_str(text, |deserializer| {
        serde_path_to_error::deserialize::<_, T>(deserializer).map_err(|e| {
            steps = path_steps(e.path());
            e.into_inner()
        })
    });
    parsed.map_err(|error| describe(&error, steps, file, text, &locator, fixes))
}

fn path_steps(path: &serde_path_to_error::Path) -> Vec<Step> {
    path.iter()
        .filter_map(|segment| match segment {
            serde_path_to_error::Segment::Map { key } => Some(Step::Key(key.clone())),
            serde_path_to_error::Segment::Seq { index } => Some(Step::Index(*index)),
            _ => None,
        })
        .collect()
}

/// The innermost error, past snippet and alias wrappers.
fn innermost(error: &YamlError) -> &YamlError {
    let mut current = error.without_snippet();
    while let YamlError::AliasError { error, .. } = current {
        current = error.without_snippet();
    }
    current
}

fn describe(
    error: &YamlError,
    steps: Vec<Step>,
    file: &Path,
    text: &str,
    locator: &Locator,
    fixes: MissingFixes<'_>,
) -> ConfigError {
    let inner = innermost(error);
    let location = inner.location();
    let line = location
        .map(|l| l.line())
        .and_then(|l| u32::try_from(l).ok())
        .filter(|&l| l > 0);
    let place = Place {
        file: file.to_path_buf(),
        line,
    };
    let found = location.and_then(|l| source_text(text, l));
    let key = render_path(&steps);
    if let Some(opened) = location.and_then(|l| unclosed_bracket(text, l)) {
        return opened.error(file, text, key);
    }
    match inner {
        YamlError::SerdeUnknownField {
            field, expected, ..
        } => {
            let mut section = steps;
            if section.last() == Some(&Step::Key(field.clone())) {
                section.pop();
            }
            ConfigError::UnknownKey {
                place,
                key: field.clone(),
                section: render_path(&section),
                suggestion: closest(field, expected),
                valid: expected.clone().into(),
            }
        }
        YamlError::SerdeMissingField { field, .. } => missing_key(place, &steps, field, fixes),
        YamlError::SerdeUnknownVariant {
            variant, expected, ..
        } => ConfigError::UnknownChoice {
            key,
            place,
            value: variant.clone(),
            choices: expected.clone(),
            suggestion: closest(variant, expected),
        },
        YamlError::Message { msg, .. } if msg == NULL_BLOCK => {
            ConfigError::NullBlock { place, key }
        }
        YamlError::Message { msg, .. } if msg.starts_with(INVALID_VALUE) => {
            ConfigError::UnreadableValue {
                // The entry's own line: the parser reports the end of the value.
                place: Place {
                    line: locator.line(&steps).or(place.line),
                    ..place
                },
                key,
                message: msg[INVALID_VALUE.len()..].to_owned(),
            }
        }
        YamlError::DuplicateMappingKey { key: dup, .. } => {
            let mut steps = steps;
            if let Some(dup) = dup {
                steps.push(Step::Key(dup.clone()));
            }
            ConfigError::DuplicateKey {
                place,
                key: render_path(&steps),
            }
        }
        YamlError::Eof { .. } | YamlError::Unexpected { .. } if steps.is_empty() => {
            not_a_mapping(file, locator)
        }
        YamlError::InvalidScalar { ty, .. } => wrong_type(place, key, ty, found),
        YamlError::SerdeInvalidType {
            unexpected,
            expected,
            ..
        }
        | YamlError::SerdeInvalidValue {
            unexpected,
            expected,
            ..
        } => wrong_type(
            place,
            key,
            expected,
            found.or_else(|| Some(unexpected.clone())),
        ),
        YamlError::Unexpected { expected, .. } => wrong_type(place, key, expected, found),
        YamlError::NullIntoString { .. } => ConfigError::WrongType {
            place,
            key,
            expected: "a text value, but it is empty".to_owned(),
            found: None,
        },
        YamlError::InvalidBooleanStrict { .. } => wrong_type(place, key, "boolean", found),
        YamlError::NonFiniteFloat { value, .. } => {
            wrong_type(place, key, "a finite number", Some(value.clone()))
        }
        YamlError::ExternallyTaggedEnumExpectedScalarOrMapping { .. } => {
            wrong_type(place, key, "name", found)
        }
        _ => {
            // A tab the parser trips over is shown where it is: it may sit lines earlier.
            let tab = UserMessageFormatter.format_message(inner).contains("tab");
            match tab
                .then(|| tab_spot(text, place.line.map_or(1, |l| l as usize)))
                .flatten()
            {
                Some(spot) => spot.error(file, text, String::new()),
                None => syntax_error(error, inner, place, location.map(|l| l.column())),
            }
        }
    }
}

fn missing_key(
    mut place: Place,
    steps: &[Step],
    field: &str,
    fixes: MissingFixes<'_>,
) -> ConfigError {
    // serde reports a missing top-level key at line 1, which points nowhere useful.
    if steps.is_empty() {
        place.line = None;
    }
    let fix = fixes
        .iter()
        .find(|(key, _)| steps.is_empty() && *key == field)
        .map_or_else(
            || format!("add '{field}: ...' to {}", render_path(steps)),
            |(_, fix)| (*fix).to_owned(),
        );
    let mut key = steps.to_vec();
    key.push(Step::Key(field.to_owned()));
    ConfigError::MissingKey {
        place,
        key: render_path(&key),
        fix,
    }
}

fn not_a_mapping(file: &Path, locator: &Locator) -> ConfigError {
    let found = match locator.root_kind() {
        Some("nothing") | None => "nothing (the file is empty)",
        Some(kind) => kind,
    };
    ConfigError::NotAMapping {
        path: file.to_path_buf(),
        found: found.to_owned(),
    }
}

/// `expected` in words a config author uses.
fn expected_in_words(expected: &str) -> String {
    let e = expected.trim();
    let words = match e {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number (0 or more)",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "floating point" | "f32" | "f64" => "a number",
        "boolean" | "bool" | "a boolean" => "true or false",
        "string" | "string scalar" | "a string" | "path string" => "a text value",
        "mapping start" | "a map" | "map" => "a mapping (key: value pairs)",
        "sequence start" | "a sequence" | "sequence" => "a list",
        "name" => "one of the documented names",
        _ if e.starts_with("struct ") => "a mapping (key: value pairs)",
        _ => e,
    };
    words.to_owned()
}

fn wrong_type(place: Place, key: String, expected: &str, found: Option<String>) -> ConfigError {
    ConfigError::WrongType {
        place,
        key,
        expected: expected_in_words(expected),
        found,
    }
}

/// The value as written at a location: the scalar's own span, or for a flow collection the
/// text up to its closing bracket, shortened.
fn source_text(text: &str, location: serde_saphyr::Location) -> Option<String> {
    let span = location.span();
    let start = usize::try_from(span.byte_offset()?).ok()?;
    let len = usize::try_from(span.byte_len()?).ok()?;
    let rest = text.get(start..)?;
    let value = if len > 1 {
        rest.get(..len)?
    } else {
        let line = rest.lines().next()?;
        match line.chars().next() {
            Some('[' | '{') => balanced_prefix(line),
            // A trailing comment is not part of the value.
            _ => line.split(" #").next().unwrap_or(line),
        }
    };
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let shortened: String = value.chars().take(60).collect();
    Some(if shortened.len() < value.len() {
        format!("{shortened}...")
    } else {
        shortened
    })
}

/// The leading `[...]` or `{...}` of a line (the whole line if it never closes).
fn balanced_prefix(line: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in line.char_indices() {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return &line[..=i];
                }
            }
            _ => {}
        }
    }
    line
}

/// Where a syntax problem really is, when the parser reports it elsewhere.
struct Spot {
    /// 1-based line.
    line: usize,
    /// 1-based column, in characters.
    column: usize,
    /// What is wrong there.
    message: String,
}

impl Spot {
    fn error(self, file: &Path, text: &str, key: String) -> ConfigError {
        let message = if key.is_empty() {
            self.message
        } else {
            format!("{} (in '{key}')", self.message)
        };
        ConfigError::Syntax {
            place: Place {
                file: file.to_path_buf(),
                line: u32::try_from(self.line).ok(),
            },
            column: u32::try_from(self.column).ok(),
            snippet: caret_snippet(text, self.line, self.column),
            message,
        }
    }
}

/// A `[` or `{` at the start of the value at `location` that is never closed: the parser reads
/// `rounds: [4` as a scalar of the wrong type, where the fix is the bracket.
fn unclosed_bracket(text: &str, location: serde_saphyr::Location) -> Option<Spot> {
    let span = location.span();
    let start = usize::try_from(span.byte_offset()?).ok()?;
    let rest = text.get(start..)?;
    let opener = rest.chars().next().filter(|c| matches!(c, '[' | '{'))?;
    // A flow collection may span lines: only one the rest of the file never closes counts.
    if balanced_prefix(rest).len() < rest.len() || rest.trim_end().ends_with([']', '}']) {
        return None;
    }
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    let closer = if opener == '[' { ']' } else { '}' };
    Some(Spot {
        line,
        column,
        message: format!("the '{opener}' here is never closed; add its '{closer}'"),
    })
}

/// The first tab at or after `line` that stands in a line's indentation: the parser reports
/// a tab where it stopped reading, often the end of the line before.
fn tab_spot(text: &str, line: usize) -> Option<Spot> {
    text.lines()
        .enumerate()
        .skip(line.saturating_sub(1))
        .find_map(|(index, content)| {
            let indent: String = content
                .chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect();
            indent.find('\t').map(|at| Spot {
                line: index + 1,
                column: indent[..at].chars().count() + 1,
                message: "a tab in the indentation (YAML indentation must use spaces, not tabs)"
                    .to_owned(),
            })
        })
}

/// The line with a caret under the column, in the parser's snippet layout.
fn caret_snippet(text: &str, line: usize, column: usize) -> String {
    let Some(content) = text.lines().nth(line.saturating_sub(1)) else {
        return String::new();
    };
    let width = line.to_string().len();
    let pad = " ".repeat(width);
    // Tabs before the caret are kept so that it lines up under the same character.
    let lead: String = content
        .chars()
        .take(column.saturating_sub(1))
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    format!("{pad} |\n{line} | {content}\n{pad} | {lead}^\n")
}

fn syntax_error(
    error: &YamlError,
    inner: &YamlError,
    place: Place,
    column: Option<u64>,
) -> ConfigError {
    let message = match inner {
        YamlError::MultipleDocuments { .. } => {
            "the file holds more than one YAML document (a second '---'); keep one".to_owned()
        }
        _ => {
            let message = UserMessageFormatter.format_message(inner).into_owned();
            if message.contains("tab") {
                format!("{message} (YAML indentation must use spaces, not tabs)")
            } else {
                message
            }
        }
    };
    let file = place.file.display().to_string();
    let rendered = error.render_with_options(serde_saphyr::render_options! {
        source_name: Some(&file),
        snippets: SnippetMode::Auto,
    });
    // Keep the numbered source lines and the caret; the header and the text after the caret
    // repeat what the message says (in the parser's developer wording).
    let snippet: String = rendered
        .lines()
        .filter(|l| {
            l.trim_start()
                .starts_with(|c: char| c.is_ascii_digit() || c == '|')
        })
        .map(|l| match l.rfind('^') {
            Some(caret) if !l.trim_start().starts_with(|c: char| c.is_ascii_digit()) => {
                format!("{}\n", &l[..=caret])
            }
            _ => format!("{l}\n"),
        })
        .collect();
    ConfigError::Syntax {
        place,
        column: column
            .and_then(|c| u32::try_from(c).ok())
            .filter(|&c| c > 0),
        message,
        snippet,
    }
}
