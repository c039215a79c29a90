//! Edit patches: the bounded edits the native `skillopt` optimizer asks its model for, instead
//! of a whole rewrite of the skill body.
//!
//! A reply holds a `<RATIONALE>` and an `<EDITS>` block with a JSON list of edits (`append`,
//! `insert_after`, `replace`, `delete`), each quoting the exact text it acts on. [`parse`]
//! reads a reply, and says in one sentence what is wrong with one it cannot read, because that
//! sentence is shown to the model later and must tell it what to do instead. [`apply`] applies
//! the edits one after another and refuses, each with its reason, those whose target is
//! missing or ambiguous, that would change a protected `## ` section, or that change nothing:
//! a quoted target is what keeps an edit small and reviewable, so a target the body does not
//! hold exactly once is never guessed at.

use std::ops::Range;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::component::{Unclosed, newly_unclosed};
use super::protect::Protected;

/// The reply's opening tag of the edit list (used by the prompt too).
pub const EDITS_OPEN: &str = "<EDITS>";

/// The reply's closing tag of the edit list (used by the prompt too, and as a stop sequence).
pub const EDITS_CLOSE: &str = "</EDITS>";

const RATIONALE_OPEN: &str = "<RATIONALE>";
const RATIONALE_CLOSE: &str = "</RATIONALE>";

/// The ops, as a model is told to use them.
const OPS: &str = "append, insert_after, replace or delete";

/// The keys an edit object may have.
const KEYS: [&str; 3] = ["op", "target", "text"];

/// Characters kept of each quoted part of a description or a refusal.
const QUOTE_CHARS: usize = 80;

/// What an edit does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Adds `text` at the end of the body (before any trailing protected sections).
    Append,
    /// Adds `text` on its own line(s) after the line on which `target` ends.
    InsertAfter,
    /// Replaces `target` with `text`.
    Replace,
    /// Removes `target`.
    Delete,
}

impl Op {
    /// The op's name in a reply (its serde name).
    fn name(self) -> &'static str {
        match self {
            Op::Append => "append",
            Op::InsertAfter => "insert_after",
            Op::Replace => "replace",
            Op::Delete => "delete",
        }
    }
}

/// One edit of a patch.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Edit {
    /// What the edit does.
    pub op: Op,
    /// The exact text of the body it acts on (none for `append`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The text it adds or puts in the target's place (none for `delete`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl Edit {
    /// One line for prompts and reports, e.g. `replace «target…» with «text…»`, each quoted
    /// part cut to 80 characters with an ellipsis and its line breaks shown as `⏎`.
    pub fn describe(&self) -> String {
        let target = quote(self.target.as_deref().unwrap_or_default());
        let text = quote(self.text.as_deref().unwrap_or_default());
        match self.op {
            Op::Append => format!("append {text}"),
            Op::InsertAfter => format!("insert {text} after {target}"),
            Op::Replace => format!("replace {target} with {text}"),
            Op::Delete => format!("delete {target}"),
        }
    }
}

/// A reply read: its edits and rationale.
#[derive(Debug, Clone, PartialEq)]
pub struct Patch {
    /// The edits, in the reply's order.
    pub edits: Vec<Edit>,
    /// What the model said it changed and why (empty when the reply gave no rationale).
    pub rationale: String,
}

/// Reads a reply: the JSON list of its (last) `<EDITS>` block and its `<RATIONALE>`.
///
/// A ```` ```json ```` code fence inside the block is tolerated, and so is a missing closing
/// tag when the reply ends right after the JSON (providers drop the stop sequence). An error
/// is one sentence a person, and the optimizer model shown it later, can act on; an error in
/// one edit names its number (from 1) and fails the whole reply, since the other edits were
/// written together with it.
pub fn parse(reply: &str) -> Result<Patch, PatchError> {
    // The last block: a model that mentions the tag in its rationale still writes the real
    // block after it.
    let Some(open) = reply.rfind(EDITS_OPEN) else {
        return Err(PatchError::NoBlock);
    };
    let after = &reply[open + EDITS_OPEN.len()..];
    let (block, closed) = match after.find(EDITS_CLOSE) {
        Some(end) => (&after[..end], true),
        None => (after, false),
    };
    let value: Value = serde_json::from_str(unfence(block))
        .map_err(|source| PatchError::NotJson { source, closed })?;
    let items = match value {
        Value::Array(items) => items,
        other => return Err(PatchError::NotAnArray(kind(&other))),
    };
    if items.is_empty() {
        return Err(PatchError::NoEdits);
    }
    let edits = items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            read_edit(item).map_err(|source| PatchError::Edit {
                number: index + 1,
                source,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Patch {
        edits,
        rationale: rationale(&reply[..open]),
    })
}

/// The outcome of applying edits to a body.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The body after every applicable edit.
    pub body: String,
    /// Indices (into the edits) of the edits applied, in order.
    pub applied: Vec<usize>,
    /// Edits not applied: index and the reason.
    pub rejected: Vec<(usize, EditError)>,
}

/// Applies `edits` in order, each to the body as the edits before it left it, refusing any
/// that would change text inside a protected section.
///
/// * `replace`, `delete` and `insert_after` need their `target` to occur exactly once in the
///   current body (exact, case-sensitive); otherwise they are refused with
///   `target text not found: «…»` or `target text occurs N times; quote more of it so it is
///   unique`.
/// * `replace` puts `text` in the occurrence's place. `delete` removes it; when it was a whole
///   line the line goes too, and a run of 3 or more newlines left behind collapses to 2.
///   `insert_after` puts `text` on its own line(s) after the end of the line on which the
///   target ends. `append` puts `text` at the end after one blank line, or, when the body's
///   last `## ` sections are protected, before the first of them so it never lands inside one.
/// * A protected section (its heading line, trimmed, is one of `protected`, e.g. `## Safety`)
///   spans from its heading line to the next `## ` heading line or the end; a heading line
///   starts with exactly `## `, outside fenced code blocks. An edit whose target overlaps one,
///   whose insertion point is inside one, or whose result changes one in any other way (a
///   heading merged into the line before it, a fence left open) is refused with
///   `touches the protected section «## Safety»`.
/// * An edit that leaves the body unchanged is refused with `changes nothing`.
///
/// The body never ends with more than one trailing newline.
pub fn apply(body: &str, edits: &[Edit], protected: &Protected) -> Applied {
    let mut current = settle(body.to_string());
    let mut applied = Vec::new();
    let mut rejected = Vec::new();
    for (index, edit) in edits.iter().enumerate() {
        match step(&current, edit, protected) {
            Ok(next) => {
                current = next;
                applied.push(index);
            }
            Err(reason) => rejected.push((index, reason)),
        }
    }
    Applied {
        body: current,
        applied,
        rejected,
    }
}

/// Why a reply's patch cannot be read. The sentence is shown to the optimizer model later,
/// so it says what to write instead.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// No edit list at all.
    #[error("the reply has no {EDITS_OPEN}...{EDITS_CLOSE} block")]
    NoBlock,
    /// The edit list does not parse; an unclosed block is named, as the likely cause.
    #[error(
        "the {EDITS_OPEN} block is not valid JSON: {source}{}",
        if *closed { String::new() } else { format!(" (and the block has no closing {EDITS_CLOSE} tag)") }
    )]
    NotJson {
        /// What the parser said.
        source: serde_json::Error,
        /// Whether the block had its closing tag.
        closed: bool,
    },
    /// The block holds JSON other than a list.
    #[error("the {EDITS_OPEN} block holds {0}, not a JSON array of edits")]
    NotAnArray(&'static str),
    /// An empty list.
    #[error("the reply proposes no edits")]
    NoEdits,
    /// One edit is malformed, which fails the whole reply: the others were written with it.
    #[error("edit {number}: {source}")]
    Edit {
        /// Its position in the list, from 1.
        number: usize,
        /// What is wrong with it.
        source: EditError,
    },
}

/// Why one edit is malformed, or is refused when applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The edit is not a JSON object.
    #[error("expected a JSON object, found {0}")]
    NotAnObject(&'static str),
    /// No `op`.
    #[error("needs an `op`; use {OPS}")]
    NoOp,
    /// An `op` that is not one of the four.
    #[error("unknown op `{0}`; use {OPS}")]
    UnknownOp(String),
    /// An `op` that is not a string.
    #[error("`op` must be a string; use {OPS}")]
    OpNotAString,
    /// Keys other than `op`, `target` and `text`.
    #[error(
        "unknown key{} {}; an edit has only `op`, `target` and `text`",
        if .0.len() == 1 { "" } else { "s" },
        .0.iter().map(|key| format!("`{key}`")).collect::<Vec<_>>().join(", ")
    )]
    UnknownKeys(Vec<String>),
    /// `target` or `text` given as another kind of value.
    #[error("`{key}` must be a string, not {kind}")]
    NotAString {
        /// `target` or `text`.
        key: &'static str,
        /// What it is instead.
        kind: &'static str,
    },
    /// A field the op needs is missing or blank.
    #[error("`{}` needs a non-empty `{field}`", op.name())]
    Needs {
        /// The op.
        op: Op,
        /// The field.
        field: &'static str,
    },
    /// An `append` that quotes a target, as if it meant `insert_after`.
    #[error("`append` takes no `target`; use insert_after to add after a given text")]
    AppendTarget,
    /// A `replace` without `text`.
    #[error("`replace` needs a `text`")]
    ReplaceWithout,
    /// A `replace` with a blank `text`, which is a `delete`.
    #[error("`replace` needs a non-empty `text`; use delete to remove the target")]
    ReplaceWithNothing,
    /// A `delete` with a `text`, as if it meant `replace`.
    #[error("`delete` takes no `text`; use replace to change the target")]
    DeleteText,
    /// The target is not in the body.
    #[error("target text not found: {}", quote(.0))]
    NotFound(String),
    /// The target is in the body more than once: which one is meant is never guessed.
    #[error("target text occurs {0} times; quote more of it so it is unique")]
    Ambiguous(usize),
    /// The edit would change a protected section.
    #[error("touches the protected section «{0}»")]
    Protected(String),
    /// The edit opens an HTML comment or a code fence it does not close, which would hide
    /// or turn into code the rest of the body.
    #[error("leaves {0} open")]
    LeavesOpen(Unclosed),
    /// The edit leaves the body as it was.
    #[error("changes nothing")]
    NoChange,
}

/// An edit with the fields its op needs, checked.
enum Action<'a> {
    Append { text: &'a str },
    InsertAfter { target: &'a str, text: &'a str },
    Replace { target: &'a str, text: &'a str },
    Delete { target: &'a str },
}

impl<'a> Action<'a> {
    /// Checks that `op` has the fields it needs and none that would make its intent unclear.
    /// A whitespace-only field counts as empty: it quotes nothing a model could mean.
    fn of(op: Op, target: Option<&'a str>, text: Option<&'a str>) -> Result<Self, EditError> {
        let given = |field: Option<&'a str>| field.filter(|value| !value.trim().is_empty());
        let needs = |field: Option<&'a str>, key: &'static str| {
            given(field).ok_or(EditError::Needs { op, field: key })
        };
        match op {
            Op::Append => {
                if given(target).is_some() {
                    return Err(EditError::AppendTarget);
                }
                Ok(Action::Append {
                    text: needs(text, "text")?,
                })
            }
            Op::InsertAfter => Ok(Action::InsertAfter {
                target: needs(target, "target")?,
                text: needs(text, "text")?,
            }),
            Op::Replace => {
                let target = needs(target, "target")?;
                match text {
                    None => Err(EditError::ReplaceWithout),
                    Some(text) if text.trim().is_empty() => Err(EditError::ReplaceWithNothing),
                    Some(text) => Ok(Action::Replace { target, text }),
                }
            }
            Op::Delete => {
                if given(text).is_some() {
                    return Err(EditError::DeleteText);
                }
                Ok(Action::Delete {
                    target: needs(target, "target")?,
                })
            }
        }
    }

    /// The edit, with the fields its op ignores left out.
    fn into_edit(self) -> Edit {
        let (op, target, text) = match self {
            Action::Append { text } => (Op::Append, None, Some(text)),
            Action::InsertAfter { target, text } => (Op::InsertAfter, Some(target), Some(text)),
            Action::Replace { target, text } => (Op::Replace, Some(target), Some(text)),
            Action::Delete { target } => (Op::Delete, Some(target), None),
        };
        Edit {
            op,
            target: target.map(str::to_string),
            text: text.map(str::to_string),
        }
    }
}

/// One edit of the list; the error is without the edit's number.
fn read_edit(item: &Value) -> Result<Edit, EditError> {
    let Value::Object(fields) = item else {
        return Err(EditError::NotAnObject(kind(item)));
    };
    let op = match fields.get("op") {
        None => return Err(EditError::NoOp),
        Some(value) => match value.as_str() {
            Some(name) => {
                Op::deserialize(value).map_err(|_| EditError::UnknownOp(name.to_string()))?
            }
            None => return Err(EditError::OpNotAString),
        },
    };
    let unknown: Vec<String> = fields
        .keys()
        .filter(|key| !KEYS.contains(&key.as_str()))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(EditError::UnknownKeys(unknown));
    }
    let target = string_field(fields, "target")?;
    let text = string_field(fields, "text")?;
    Ok(Action::of(op, target, text)?.into_edit())
}

/// A string field of an edit; `null` counts as absent, since some models write every key.
fn string_field<'a>(
    fields: &'a Map<String, Value>,
    key: &'static str,
) -> Result<Option<&'a str>, EditError> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value.as_str())),
        Some(other) => Err(EditError::NotAString {
            key,
            kind: kind(other),
        }),
    }
}

/// What a JSON value is, for an error.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The block without a Markdown code fence around the JSON, which models add by habit.
fn unfence(block: &str) -> &str {
    let block = block.trim();
    let block = match block.strip_prefix("```") {
        // The fence's language tag (`json`) is not JSON.
        Some(rest) => rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric()),
        None => block,
    };
    let block = block.trim();
    block.strip_suffix("```").unwrap_or(block).trim()
}

/// The rationale in `head` (the reply before its edits), trimmed; empty when there is none.
fn rationale(head: &str) -> String {
    let Some(start) = head.find(RATIONALE_OPEN) else {
        return String::new();
    };
    let rest = &head[start + RATIONALE_OPEN.len()..];
    rest.find(RATIONALE_CLOSE)
        .map_or(rest, |end| &rest[..end])
        .trim()
        .to_string()
}

/// `text` quoted in `«»` on one line, cut to [`QUOTE_CHARS`] characters with an ellipsis.
fn quote(text: &str) -> String {
    let mut chars = text
        .chars()
        .filter(|&c| c != '\r')
        .map(|c| if c == '\n' { '⏎' } else { c });
    let shown: String = chars.by_ref().take(QUOTE_CHARS).collect();
    let cut = if chars.next().is_some() { "…" } else { "" };
    format!("«{shown}{cut}»")
}

/// The refusal of an edit that would change the protected section `heading`.
fn touches(heading: &str) -> EditError {
    EditError::Protected(heading.to_string())
}

/// The body after one edit, or why the edit is refused.
fn step(body: &str, edit: &Edit, protected: &Protected) -> Result<String, EditError> {
    let action = Action::of(edit.op, edit.target.as_deref(), edit.text.as_deref())?;
    let sections = sections(body, protected);
    let next = settle(match action {
        Action::Append { text } => append(body, text, &sections),
        Action::InsertAfter { target, text } => insert_after(body, target, text, &sections)?,
        Action::Replace { target, text } => {
            let span = locate(body, target, &sections)?;
            format!("{}{text}{}", &body[..span.start], &body[span.end..])
        }
        Action::Delete { target } => delete(body, locate(body, target, &sections)?),
    });
    if next == body {
        return Err(EditError::NoChange);
    }
    // The target checks see only where an edit acts; this sees what it did, e.g. a replace
    // that swallows the line break before a protected heading and so unmakes the section.
    if let Some(change) = protected.changed_body(body, &next) {
        return Err(touches(&change.name));
    }
    if let Some(open) = newly_unclosed(body, &next) {
        return Err(EditError::LeavesOpen(open));
    }
    Ok(next)
}

/// The one occurrence of `target` in `body`, outside every protected section.
fn locate(body: &str, target: &str, sections: &[Section<'_>]) -> Result<Range<usize>, EditError> {
    let found = occurrences(body, target);
    let start = match found.as_slice() {
        [] => return Err(EditError::NotFound(target.to_string())),
        [start] => *start,
        many => return Err(EditError::Ambiguous(many.len())),
    };
    let span = start..start + target.len();
    if let Some(section) = sections
        .iter()
        .find(|s| s.protected && span.start < s.end && s.start < span.end)
    {
        return Err(touches(section.heading));
    }
    Ok(span)
}

/// Where `target` (not empty) starts in `body`, overlapping occurrences included: in `aaa`,
/// `aa` is as ambiguous as a text quoted twice.
fn occurrences(body: &str, target: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = body[from..].find(target) {
        let start = from + at;
        found.push(start);
        from = start + body[start..].chars().next().map_or(1, char::len_utf8);
    }
    found
}

/// `body` with `text` after one blank line at the end, or before its trailing protected
/// sections.
fn append(body: &str, text: &str, sections: &[Section<'_>]) -> String {
    // The separation is ours to make: the model's own leading or trailing newlines would
    // only add blank lines.
    let text = text.trim_matches('\n');
    let trailing = sections.iter().rev().take_while(|s| s.protected).last();
    match trailing {
        Some(section) => {
            let before = body[..section.start].trim_end_matches('\n');
            let gap = if before.is_empty() { "" } else { "\n\n" };
            format!("{before}{gap}{text}\n\n{}", &body[section.start..])
        }
        None => {
            let kept = body.trim_end_matches('\n');
            let gap = if kept.is_empty() { "" } else { "\n\n" };
            let end = if body.ends_with('\n') { "\n" } else { "" };
            format!("{kept}{gap}{text}{end}")
        }
    }
}

/// `body` with `text` on its own line(s) after the line on which `target` ends.
fn insert_after(
    body: &str,
    target: &str,
    text: &str,
    sections: &[Section<'_>],
) -> Result<String, EditError> {
    let span = locate(body, target, sections)?;
    // A target that ends with its line's break ends on that line, not the next.
    let line_end = if target.ends_with('\n') {
        span.end - 1
    } else {
        body[span.end..]
            .find('\n')
            .map_or(body.len(), |at| span.end + at)
    };
    if let Some(section) = sections
        .iter()
        .find(|s| s.protected && s.start <= line_end && (line_end < s.end || s.end == body.len()))
    {
        return Err(touches(section.heading));
    }
    // The line break after the inserted text is the one that ended the target's line, so a
    // trailing newline of the model's would open a blank line inside, say, a list.
    let text = text.trim_end_matches('\n');
    Ok(format!(
        "{}\n{text}{}",
        &body[..line_end],
        &body[line_end..]
    ))
}

/// `body` without `span`, and without the blank lines the removal leaves behind.
fn delete(body: &str, span: Range<usize>) -> String {
    let whole_line = body[..span.start].ends_with('\n') || span.start == 0;
    let whole_line = whole_line && (span.end == body.len() || body[span.end..].starts_with('\n'));
    let mut out = format!("{}{}", &body[..span.start], &body[span.end..]);
    let mut seam = span.start;
    if whole_line {
        // The emptied line's own break goes too, so a deleted list item leaves no blank line
        // that would split the list.
        if out[seam..].starts_with('\n') {
            out.replace_range(seam..=seam, "");
        } else if out[..seam].ends_with('\n') {
            seam -= 1;
            out.replace_range(seam..=seam, "");
        }
    }
    let bytes = out.as_bytes();
    let mut from = seam;
    while from > 0 && bytes[from - 1] == b'\n' {
        from -= 1;
    }
    let mut to = seam;
    while to < bytes.len() && bytes[to] == b'\n' {
        to += 1;
    }
    if from == 0 {
        out.replace_range(..to, "");
    } else if to - from >= 3 {
        out.replace_range(from..to, "\n\n");
    }
    out
}

/// `body` with at most one trailing newline.
fn settle(mut body: String) -> String {
    let kept = body.trim_end_matches('\n').len() + 1;
    if body.len() > kept {
        body.truncate(kept);
    }
    body
}

/// A `## ` section of a body: its trimmed heading line and its byte span.
struct Section<'a> {
    heading: &'a str,
    start: usize,
    end: usize,
    protected: bool,
}

/// The `## ` sections of `body` in order, each marked protected or not.
fn sections<'a>(body: &'a str, protected: &Protected) -> Vec<Section<'a>> {
    let mut found: Vec<Section<'a>> = Vec::new();
    let mut fence: Option<Fence> = None;
    let mut start = 0;
    for line in body.split_inclusive('\n') {
        let text = line.trim_end_matches(['\n', '\r']);
        match (fence, Fence::of(text)) {
            (None, Some(opening)) => fence = Some(opening),
            (Some(open), Some(closing)) if closing.closes(open) => fence = None,
            (None, None) if text.starts_with("## ") => {
                if let Some(last) = found.last_mut() {
                    last.end = start;
                }
                let heading = text.trim();
                found.push(Section {
                    heading,
                    start,
                    end: body.len(),
                    protected: protected.covers(heading),
                });
            }
            _ => {}
        }
        start += line.len();
    }
    found
}

/// A code fence line: its marker, how many of it, and whether nothing follows them (only
/// such a line can close a fence).
#[derive(Clone, Copy)]
struct Fence {
    marker: char,
    len: usize,
    bare: bool,
}

impl Fence {
    fn of(line: &str) -> Option<Fence> {
        let trimmed = line.trim_start_matches(' ');
        // Four spaces of indentation make an indented code line, not a fence.
        if line.len() - trimmed.len() > 3 {
            return None;
        }
        let marker = trimmed.chars().next().filter(|&c| matches!(c, '`' | '~'))?;
        let len = trimmed.len() - trimmed.trim_start_matches(marker).len();
        if len < 3 {
            return None;
        }
        Some(Fence {
            marker,
            len,
            bare: trimmed[len..].trim().is_empty(),
        })
    }

    fn closes(self, open: Fence) -> bool {
        self.bare && self.marker == open.marker && self.len >= open.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(op: Op, target: Option<&str>, text: Option<&str>) -> Edit {
        Edit {
            op,
            target: target.map(str::to_string),
            text: text.map(str::to_string),
        }
    }

    fn replace(target: &str, text: &str) -> Edit {
        edit(Op::Replace, Some(target), Some(text))
    }

    fn insert_after(target: &str, text: &str) -> Edit {
        edit(Op::InsertAfter, Some(target), Some(text))
    }

    fn append(text: &str) -> Edit {
        edit(Op::Append, None, Some(text))
    }

    fn delete(target: &str) -> Edit {
        edit(Op::Delete, Some(target), None)
    }

    fn reply(edits: &str) -> String {
        format!("<RATIONALE>Why.</RATIONALE>\n<EDITS>\n{edits}\n</EDITS>")
    }

    fn parse_error(edits: &str) -> String {
        match parse(&reply(edits)) {
            Ok(patch) => panic!("parsed {patch:?}"),
            Err(error) => error.to_string(),
        }
    }

    /// The refusals as their messages, which models and reports read.
    fn refusals(applied: &Applied) -> Vec<(usize, String)> {
        applied
            .rejected
            .iter()
            .map(|(index, reason)| (*index, reason.to_string()))
            .collect()
    }

    fn protect(headings: &[&str]) -> Protected {
        let headings: Vec<String> = headings.iter().map(|h| h.to_string()).collect();
        Protected::new(&headings)
    }

    const BODY: &str =
        "# Tool\n\nIntro line.\n\n## Steps\n\n- one\n- two\n\n## Safety\n\nNever delete files.\n";

    #[test]
    fn a_well_formed_reply_gives_its_edits_in_order_and_its_rationale() {
        let patch = parse(
            "<RATIONALE> Sharper steps. </RATIONALE>\n<EDITS>\n\
             [{\"op\": \"replace\", \"target\": \"a\", \"text\": \"b\"},\n \
             {\"op\": \"insert_after\", \"target\": \"c\", \"text\": \"d\"},\n \
             {\"op\": \"append\", \"text\": \"e\"},\n \
             {\"op\": \"delete\", \"target\": \"f\"}]\n</EDITS>",
        )
        .expect("a good reply");
        assert_eq!(patch.rationale, "Sharper steps.");
        assert_eq!(
            patch.edits,
            vec![
                replace("a", "b"),
                insert_after("c", "d"),
                append("e"),
                delete("f")
            ]
        );
    }

    #[test]
    fn a_code_fence_inside_the_block_is_tolerated() {
        let patch = parse(&reply(
            "```json\n[{\"op\": \"append\", \"text\": \"x\"}]\n```",
        ))
        .expect("a fenced block");
        assert_eq!(patch.edits, vec![append("x")]);
    }

    #[test]
    fn a_reply_that_ends_after_the_json_without_its_closing_tag_is_read() {
        let patch = parse("<EDITS>\n[{\"op\": \"delete\", \"target\": \"x\"}]\n")
            .expect("a reply cut at the stop sequence");
        assert_eq!(patch.edits, vec![delete("x")]);
        assert_eq!(patch.rationale, "", "no rationale given");
    }

    #[test]
    fn text_after_an_unclosed_block_is_invalid_json_that_mentions_the_missing_tag() {
        let error = parse("<EDITS>\n[{\"op\": \"append\", \"text\": \"x\"}]\nThat is all.")
            .expect_err("trailing prose")
            .to_string();
        assert!(
            error.starts_with("the <EDITS> block is not valid JSON: trailing characters at line 2"),
            "{error}"
        );
        assert!(
            error.ends_with("(and the block has no closing </EDITS> tag)"),
            "{error}"
        );
    }

    #[test]
    fn the_last_edits_block_is_the_one_read() {
        let patch = parse(
            "<RATIONALE>I answer in an <EDITS> block.</RATIONALE>\n\
             <EDITS>[{\"op\": \"append\", \"text\": \"x\"}]</EDITS>",
        )
        .expect("the real block");
        assert_eq!(patch.edits, vec![append("x")]);
        assert_eq!(patch.rationale, "I answer in an <EDITS> block.");
    }

    #[test]
    fn a_reply_without_an_edits_block_is_rejected() {
        assert_eq!(
            parse("<RATIONALE>x</RATIONALE> I would append a rule.").map_err(|e| e.to_string()),
            Err("the reply has no <EDITS>...</EDITS> block".to_string())
        );
    }

    #[test]
    fn invalid_json_is_rejected_with_serdes_line_and_column() {
        let error = parse_error("[{\"op\": \"append\",\n  \"text\": }]");
        assert!(
            error.starts_with("the <EDITS> block is not valid JSON: "),
            "{error}"
        );
        assert!(error.contains("at line 2 column"), "{error}");
        assert!(!error.contains("closing"), "the block was closed: {error}");
    }

    #[test]
    fn a_block_that_is_not_an_array_is_rejected() {
        assert_eq!(
            parse_error(r#"{"op": "append", "text": "x"}"#),
            "the <EDITS> block holds an object, not a JSON array of edits"
        );
    }

    #[test]
    fn an_empty_list_is_rejected() {
        assert_eq!(parse_error("[]"), "the reply proposes no edits");
    }

    #[test]
    fn an_edit_that_is_not_an_object_is_rejected_with_its_number() {
        assert_eq!(
            parse_error(r#"[{"op": "append", "text": "x"}, "append y"]"#),
            "edit 2: expected a JSON object, found a string"
        );
    }

    #[test]
    fn an_unknown_op_is_rejected_with_its_number_and_the_ops_to_use() {
        assert_eq!(
            parse_error(r#"[{"op": "append", "text": "x"}, {"op": "rewrite", "text": "y"}]"#),
            "edit 2: unknown op `rewrite`; use append, insert_after, replace or delete"
        );
        assert_eq!(
            parse_error(r#"[{"text": "y"}]"#),
            "edit 1: needs an `op`; use append, insert_after, replace or delete"
        );
    }

    #[test]
    fn a_missing_or_empty_required_field_is_rejected_with_the_edit_number() {
        assert_eq!(
            parse_error(r#"[{"op": "replace", "text": "y"}]"#),
            "edit 1: `replace` needs a non-empty `target`"
        );
        assert_eq!(
            parse_error(
                r#"[{"op": "append", "text": "x"}, {"op": "insert_after", "target": "x"}]"#
            ),
            "edit 2: `insert_after` needs a non-empty `text`"
        );
        assert_eq!(
            parse_error(r#"[{"op": "append"}]"#),
            "edit 1: `append` needs a non-empty `text`"
        );
        assert_eq!(
            parse_error(r#"[{"op": "delete", "target": ""}]"#),
            "edit 1: `delete` needs a non-empty `target`"
        );
        assert_eq!(
            parse_error(r#"[{"op": "replace", "target": "x"}]"#),
            "edit 1: `replace` needs a `text`"
        );
    }

    #[test]
    fn a_replace_with_an_empty_text_is_rejected_in_favour_of_delete() {
        assert_eq!(
            parse_error(r#"[{"op": "replace", "target": "x", "text": ""}]"#),
            "edit 1: `replace` needs a non-empty `text`; use delete to remove the target"
        );
    }

    #[test]
    fn a_delete_needs_no_text_and_an_empty_or_null_one_is_dropped() {
        let patch = parse(&reply(
            r#"[{"op": "delete", "target": "x", "text": ""},
                {"op": "append", "target": null, "text": "y"}]"#,
        ))
        .expect("empty and null fields are absent");
        assert_eq!(patch.edits, vec![delete("x"), append("y")]);
    }

    #[test]
    fn fields_that_make_an_ops_intent_unclear_are_rejected() {
        assert_eq!(
            parse_error(r#"[{"op": "delete", "target": "x", "text": "y"}]"#),
            "edit 1: `delete` takes no `text`; use replace to change the target"
        );
        assert_eq!(
            parse_error(r#"[{"op": "append", "target": "x", "text": "y"}]"#),
            "edit 1: `append` takes no `target`; use insert_after to add after a given text"
        );
        assert_eq!(
            parse_error(r#"[{"op": "append", "text": 3}]"#),
            "edit 1: `text` must be a string, not a number"
        );
    }

    #[test]
    fn unknown_keys_in_an_edit_are_rejected_by_name() {
        assert_eq!(
            parse_error(r#"[{"op": "append", "text": "x", "why": "y"}]"#),
            "edit 1: unknown key `why`; an edit has only `op`, `target` and `text`"
        );
        assert_eq!(
            parse_error(r#"[{"op": "append", "text": "x", "why": 1, "where": 2}]"#),
            "edit 1: unknown keys `why`, `where`; an edit has only `op`, `target` and `text`"
        );
    }

    #[test]
    fn op_names_are_their_serde_names() {
        for op in [Op::Append, Op::InsertAfter, Op::Replace, Op::Delete] {
            assert_eq!(serde_json::to_value(op).ok(), Some(Value::from(op.name())));
        }
    }

    #[test]
    fn a_replace_puts_its_text_in_place_of_its_target() {
        let applied = apply(
            BODY,
            &[replace("Intro line.", "Read the task first.")],
            &Protected::default(),
        );
        assert_eq!(applied.applied, vec![0]);
        assert!(
            applied
                .body
                .contains("\n\nRead the task first.\n\n## Steps"),
            "{}",
            applied.body
        );
        assert!(!applied.body.contains("Intro line."));
    }

    #[test]
    fn an_insert_after_puts_its_text_on_a_new_line_after_the_line_the_target_ends_on() {
        let applied = apply(
            BODY,
            &[insert_after("- o", "- one and a half\n")],
            &Protected::default(),
        );
        assert_eq!(applied.applied, vec![0]);
        assert!(
            applied.body.contains("- one\n- one and a half\n- two\n"),
            "{}",
            applied.body
        );
    }

    #[test]
    fn an_insert_after_a_target_ending_with_its_line_break_goes_on_the_next_line() {
        let applied = apply("a\nb\n", &[insert_after("a\n", "x")], &Protected::default());
        assert_eq!(applied.body, "a\nx\nb\n");
        let at_end = apply("a\nb", &[insert_after("b", "x")], &Protected::default());
        assert_eq!(at_end.body, "a\nb\nx");
    }

    #[test]
    fn an_append_goes_at_the_end_after_one_blank_line() {
        let applied = apply(
            "Rules.\n\n\n",
            &[append("\nNew rule.\n")],
            &Protected::default(),
        );
        assert_eq!(applied.body, "Rules.\n\nNew rule.\n");
        assert_eq!(
            apply("Rules.", &[append("New rule.")], &Protected::default()).body,
            "Rules.\n\nNew rule."
        );
    }

    #[test]
    fn a_delete_removes_its_target_and_collapses_the_blank_lines_left_behind() {
        let applied = apply(
            "First.\n\nSecond.\n\nThird.\n",
            &[delete("Second.")],
            &Protected::default(),
        );
        assert_eq!(applied.body, "First.\n\nThird.\n");
        let with_break = apply(
            "First.\n\nSecond.\n\n\nThird.\n",
            &[delete("Second.\n")],
            &Protected::default(),
        );
        assert_eq!(with_break.body, "First.\n\nThird.\n");
    }

    #[test]
    fn deleting_a_list_item_leaves_no_blank_line_in_the_list() {
        let applied = apply("- a\n- b\n- c\n", &[delete("- b")], &Protected::default());
        assert_eq!(applied.body, "- a\n- c\n");
        let first = apply(
            "Intro.\n\nRest.\n",
            &[delete("Intro.")],
            &Protected::default(),
        );
        assert_eq!(first.body, "Rest.\n", "no blank lines left at the top");
    }

    #[test]
    fn a_delete_inside_a_line_keeps_the_rest_of_it() {
        let applied = apply(
            "Be brief. Be kind.\nNext.\n",
            &[delete(" Be kind.")],
            &Protected::default(),
        );
        assert_eq!(applied.body, "Be brief.\nNext.\n");
    }

    #[test]
    fn a_replace_whose_target_is_missing_is_rejected_with_the_target() {
        let applied = apply(
            BODY,
            &[replace("Handle all tasks.", "x")],
            &Protected::default(),
        );
        assert_eq!(applied.body, BODY);
        assert!(applied.applied.is_empty());
        assert_eq!(
            refusals(&applied),
            vec![(0, "target text not found: «Handle all tasks.»".to_string())]
        );
    }

    #[test]
    fn a_missing_target_is_quoted_cut_to_80_characters() {
        let long = "y".repeat(100);
        let applied = apply(BODY, &[delete(&long)], &Protected::default());
        let expected = format!("target text not found: «{}…»", "y".repeat(80));
        assert_eq!(refusals(&applied), vec![(0, expected)]);
    }

    #[test]
    fn a_target_that_occurs_more_than_once_is_rejected_with_its_count() {
        let applied = apply(
            "Do it. Do it well. Do it now.\n",
            &[replace("Do it", "x")],
            &Protected::default(),
        );
        assert_eq!(
            refusals(&applied),
            vec![(
                0,
                "target text occurs 3 times; quote more of it so it is unique".to_string()
            )]
        );
        let overlapping = apply("aaa\n", &[delete("aa")], &Protected::default());
        assert_eq!(
            refusals(&overlapping),
            vec![(
                0,
                "target text occurs 2 times; quote more of it so it is unique".to_string()
            )]
        );
    }

    #[test]
    fn the_match_is_exact_and_case_sensitive() {
        let applied = apply(BODY, &[replace("intro line.", "x")], &Protected::default());
        assert_eq!(applied.rejected.len(), 1);
        assert!(
            applied.rejected[0]
                .1
                .to_string()
                .starts_with("target text not found")
        );
    }

    #[test]
    fn a_replace_inside_a_protected_section_is_refused() {
        let protected = protect(&["## Safety"]);
        let applied = apply(
            BODY,
            &[replace("Never delete files.", "Delete freely.")],
            &protected,
        );
        assert_eq!(applied.body, BODY);
        assert_eq!(
            refusals(&applied),
            vec![(0, "touches the protected section «## Safety»".to_string())]
        );
        let heading = apply(BODY, &[replace("## Safety", "## Notes")], &protected);
        assert_eq!(
            heading.rejected[0].1.to_string(),
            "touches the protected section «## Safety»"
        );
    }

    #[test]
    fn protected_headings_are_compared_trimmed() {
        let applied = apply(
            "## Safety  \n\nKeep.\n",
            &[delete("Keep.")],
            &protect(&[" ## Safety"]),
        );
        assert_eq!(
            applied.rejected[0].1.to_string(),
            "touches the protected section «## Safety»"
        );
    }

    #[test]
    fn an_insert_after_inside_a_protected_section_is_refused() {
        let body = "## Even\n\nHandle even tasks.\n\n## Odd\n\nHandle odd tasks.";
        let applied = apply(
            body,
            &[insert_after("Handle odd tasks.", "ODD-RULE")],
            &protect(&["## Odd"]),
        );
        assert_eq!(applied.body, body);
        assert_eq!(
            refusals(&applied),
            vec![(0, "touches the protected section «## Odd»".to_string())]
        );
    }

    #[test]
    fn an_insert_after_the_line_before_a_protected_heading_stays_outside_it() {
        let applied = apply(
            "## Steps\nStep one.\n## Safety\nKeep.\n",
            &[insert_after("Step one.", "Step two.")],
            &protect(&["## Safety"]),
        );
        assert_eq!(
            applied.body,
            "## Steps\nStep one.\nStep two.\n## Safety\nKeep.\n"
        );
    }

    #[test]
    fn an_edit_that_would_unmake_a_protected_heading_is_refused() {
        let applied = apply(
            "Intro.\n## Safety\nKeep.\n",
            &[replace("Intro.\n", "Intro. ")],
            &protect(&["## Safety"]),
        );
        assert_eq!(
            applied.rejected[0].1.to_string(),
            "touches the protected section «## Safety»"
        );
        let fence = apply(
            "Intro.\n\n## Safety\nKeep.\n",
            &[replace("Intro.", "```")],
            &protect(&["## Safety"]),
        );
        assert_eq!(
            fence.rejected[0].1.to_string(),
            "touches the protected section «## Safety»"
        );
    }

    #[test]
    fn an_edit_that_opens_a_comment_or_a_fence_it_does_not_close_is_refused() {
        // Before a protected section, it hides that section: named with or without `## `.
        for name in ["## Safety", "Safety"] {
            let hidden = apply(BODY, &[insert_after("- two", "<!--")], &protect(&[name]));
            assert_eq!(
                refusals(&hidden),
                vec![(0, "touches the protected section «## Safety»".to_string())]
            );
        }
        let none = Protected::default();
        let open = apply(BODY, &[append("More <!-- later")], &none);
        assert_eq!(
            refusals(&open),
            vec![(
                0,
                "leaves an HTML comment (`<!--` without `-->`) open".to_string()
            )]
        );
        let fence = apply(BODY, &[insert_after("- two", "```")], &none);
        assert!(
            fence.rejected[0]
                .1
                .to_string()
                .starts_with("leaves a code fence"),
            "{:?}",
            refusals(&fence)
        );
        let closed = apply(BODY, &[append("More <!-- note -->")], &none);
        assert_eq!(closed.applied, vec![0]);
        // What the body already left open is not the edit's doing.
        let already = apply("Rules. <!-- open", &[append("More.")], &none);
        assert_eq!(already.applied, vec![0]);
    }

    #[test]
    fn an_append_goes_before_the_trailing_protected_sections() {
        let body = "Intro.\n\n## Steps\n\n- one\n\n## Safety\n\nKeep.\n\n## Legal\n\nMIT.\n";
        let applied = apply(
            body,
            &[append("New rule.")],
            &protect(&["## Safety", "## Legal"]),
        );
        assert_eq!(applied.applied, vec![0]);
        assert_eq!(
            applied.body,
            "Intro.\n\n## Steps\n\n- one\n\nNew rule.\n\n## Safety\n\nKeep.\n\n## Legal\n\nMIT.\n"
        );
    }

    #[test]
    fn an_append_after_an_unprotected_last_section_goes_at_the_end() {
        let body = "## Safety\n\nKeep.\n\n## Steps\n\n- one\n";
        let applied = apply(body, &[append("New rule.")], &protect(&["## Safety"]));
        assert_eq!(
            applied.body,
            "## Safety\n\nKeep.\n\n## Steps\n\n- one\n\nNew rule.\n"
        );
    }

    #[test]
    fn a_heading_inside_a_code_fence_starts_no_section() {
        let body = "## Steps\n\n```md\n## Safety\n```\n\nExample above.\n";
        let applied = apply(
            body,
            &[replace("Example above.", "Example.")],
            &protect(&["## Safety"]),
        );
        assert_eq!(applied.applied, vec![0]);
        assert!(applied.body.ends_with("\n\nExample.\n"), "{}", applied.body);
    }

    #[test]
    fn edits_apply_in_order_each_to_the_body_the_edits_before_it_left() {
        let edits = [
            insert_after("- two", "- three"),
            replace("- three", "- three, then check"),
            delete("- nine"),
        ];
        let applied = apply(BODY, &edits, &protect(&["## Safety"]));
        assert_eq!(applied.applied, vec![0, 1]);
        assert!(
            applied
                .body
                .contains("- two\n- three, then check\n\n## Safety"),
            "{}",
            applied.body
        );
        assert_eq!(applied.rejected.len(), 1);
        assert_eq!(applied.rejected[0].0, 2);
    }

    #[test]
    fn an_edit_that_changes_nothing_is_rejected() {
        let applied = apply(
            BODY,
            &[replace("Intro line.", "Intro line.")],
            &Protected::default(),
        );
        assert_eq!(refusals(&applied), vec![(0, "changes nothing".to_string())]);
    }

    #[test]
    fn an_edit_missing_a_field_its_op_needs_is_rejected_when_applied() {
        let applied = apply(
            BODY,
            &[edit(Op::Replace, None, Some("x"))],
            &Protected::default(),
        );
        assert_eq!(
            refusals(&applied),
            vec![(0, "`replace` needs a non-empty `target`".to_string())]
        );
    }

    #[test]
    fn the_body_never_ends_with_more_than_one_newline() {
        let applied = apply(
            "Rules.\n\n\n",
            &[replace("Rules.", "Rules:\n\n\n")],
            &Protected::default(),
        );
        assert_eq!(applied.body, "Rules:\n");
        let deleted = apply("A\n\nB\n", &[delete("B")], &Protected::default());
        assert_eq!(deleted.body, "A\n");
    }

    #[test]
    fn describe_names_each_op_with_its_quoted_parts() {
        assert_eq!(replace("a", "b").describe(), "replace «a» with «b»");
        assert_eq!(insert_after("a", "b").describe(), "insert «b» after «a»");
        assert_eq!(append("b").describe(), "append «b»");
        assert_eq!(delete("a\nb").describe(), "delete «a⏎b»");
    }

    #[test]
    fn describe_cuts_each_quoted_part_to_80_characters_with_an_ellipsis() {
        let long = "é".repeat(81);
        let exact = "x".repeat(80);
        let described = replace(&long, &exact).describe();
        assert_eq!(
            described,
            format!("replace «{}…» with «{exact}»", "é".repeat(80))
        );
    }
}
