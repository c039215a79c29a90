//! A skill split into components, for optimizers that rewrite one part at a time (GEPA's
//! "system" of modules): the frontmatter description, the preamble (the body before its first
//! `## ` section, when it holds anything), each `## ` section of the body, heading line
//! included, and each text file under `references/` the skill carries ([`Skill::files`]).
//!
//! Rewriting a whole body at once lets a model drop or reword instructions it was not asked
//! about; rewriting one component keeps every other one byte for byte, so a score change can
//! be credited to the part that changed, and two descendants that improved different parts
//! can be merged.
//!
//! A line is a section heading when it starts with exactly `## ` (not `###`, not indented)
//! outside a fenced code block and outside an HTML comment, so an example that shows Markdown
//! headings inside ``` or ~~~ fences stays part of its section, and a heading an edit wrapped
//! in `<!--` ... `-->` (which hides it from a rendered page) is no section any more.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use skill_factory_core::Skill;

/// What a component is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentKind {
    /// The frontmatter description (what an agent reads to decide whether to load the skill).
    Description,
    /// The body before its first `## ` section.
    Preamble,
    /// One `## ` section, from its heading line to the next heading or the end of the body.
    Section,
    /// A text file under `references/`, named by its path in the skill folder.
    Reference,
}

/// One component of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    /// What it is.
    pub kind: ComponentKind,
    /// `description`, `preamble`, the trimmed heading line (`## Output format`), or a
    /// reference file's path (`references/guide.md`).
    pub name: String,
    /// The description or the reference file as written; for a body component its slice of
    /// the body without the blank lines around it (a section's includes its heading line).
    pub text: String,
}

/// The components of one skill, in order, with where each body component lies in the body.
#[derive(Debug, Clone, PartialEq)]
pub struct Components {
    parts: Vec<Component>,
    /// Per part, the byte range of its text in the body; `None` for the description and the
    /// reference files.
    spans: Vec<Option<Range<usize>>>,
}

impl Components {
    /// The components of `skill`: the description, the preamble when it is not blank, the
    /// sections in body order, then the reference files by path.
    pub fn of(skill: &Skill) -> Components {
        let body = skill.body.as_str();
        let mut parts = vec![Component {
            kind: ComponentKind::Description,
            name: "description".to_owned(),
            text: skill.description.clone(),
        }];
        let mut spans = vec![None];
        let starts = heading_starts(body);
        let first = starts.first().copied().unwrap_or(body.len());
        let preamble = content(body, 0..first);
        if !preamble.is_empty() {
            parts.push(Component {
                kind: ComponentKind::Preamble,
                name: "preamble".to_owned(),
                text: body[preamble.clone()].to_owned(),
            });
            spans.push(Some(preamble));
        }
        for (k, &start) in starts.iter().enumerate() {
            let end = starts.get(k + 1).copied().unwrap_or(body.len());
            let span = content(body, start..end);
            let text = &body[span.clone()];
            parts.push(Component {
                kind: ComponentKind::Section,
                name: text.lines().next().unwrap_or_default().trim().to_owned(),
                text: text.to_owned(),
            });
            spans.push(Some(span));
        }
        for (path, text) in &skill.files {
            parts.push(Component {
                kind: ComponentKind::Reference,
                name: path.clone(),
                text: text.clone(),
            });
            spans.push(None);
        }
        Components { parts, spans }
    }

    /// How many components there are, the description included.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether there are no components (never for components of a skill, which always have
    /// a description).
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Component `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<&Component> {
        self.parts.get(index)
    }

    /// The components in order.
    pub fn iter(&self) -> impl Iterator<Item = &Component> {
        self.parts.iter()
    }

    /// The position of the first component named `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.parts.iter().position(|part| part.name == name)
    }

    /// `skill` (the skill these components were taken from) with component `index` replaced
    /// by `text`, trimmed.
    ///
    /// The description becomes the new text; a blank text leaves the skill as it is, since a
    /// skill must have a description. A reference file becomes the new text with one final
    /// line break; a blank text leaves it too (the body may link to it). A preamble or section replaces its span of the body and
    /// every other byte of the body stays; the new text is set off from its neighbours by the
    /// blank lines that were there, or by one blank line where there were none. A section's
    /// new text that does not start with `## ` keeps the old heading line in front of it, and
    /// a blank one removes the section. An index out of range, or a skill whose body does not
    /// hold the component where these components found it, gives the skill unchanged.
    ///
    /// Body text is trimmed of surrounding blank lines rather than of all whitespace: the
    /// indentation of a first line is Markdown (four spaces start a code block), and keeping
    /// it makes replacing a component by its own text give the skill back.
    pub fn with_text(&self, skill: &Skill, index: usize, text: &str) -> Skill {
        let (Some(part), Some(span)) = (self.parts.get(index), self.spans.get(index)) else {
            return skill.clone();
        };
        let Some(span) = span else {
            let text = text.trim();
            if text.is_empty() {
                return skill.clone();
            }
            let mut skill = skill.clone();
            if part.kind == ComponentKind::Reference {
                skill.files.insert(part.name.clone(), format!("{text}\n"));
            } else {
                skill.description = text.to_owned();
            }
            return skill;
        };
        let body = skill.body.as_str();
        if body.get(span.clone()) != Some(part.text.as_str()) {
            return skill.clone();
        }
        let reply = trim_blank_lines(text);
        let replacement = if part.kind == ComponentKind::Section
            && !reply.is_empty()
            && !reply.starts_with("## ")
        {
            // Models asked for a section's content often answer with the content alone.
            format!("{}\n\n{reply}", part.name)
        } else {
            reply.to_owned()
        };
        skill.with_body(splice(body, span.clone(), &replacement))
    }
}

/// An open fenced code block: its fence character and how many of them opened it.
struct Fence {
    marker: char,
    len: usize,
}

impl Fence {
    /// The fence `line` opens, if it is a fence line: three or more backticks or tildes after
    /// any indentation, where a backtick fence's info string holds no backtick (a line like
    /// ```` ```x``` ```` is inline code, not a fence).
    fn opened_by(line: &str) -> Option<Fence> {
        let rest = line.trim_start();
        let marker = rest.chars().next().filter(|c| ['`', '~'].contains(c))?;
        let info = rest.trim_start_matches(marker);
        let len = rest.len() - info.len();
        (len >= 3 && !(marker == '`' && info.contains('`'))).then_some(Fence { marker, len })
    }

    /// Whether `line` closes this fence: at least as many of the same character and nothing
    /// else, as in CommonMark, so a ``` line inside a ~~~ block stays code.
    fn is_closed_by(&self, line: &str) -> bool {
        let rest = line.trim_start();
        let after = rest.trim_start_matches(self.marker);
        rest.len() - after.len() >= self.len && after.trim().is_empty()
    }
}

/// Where a body is, read line by line from its top: inside a fenced code block, inside an
/// HTML comment, or in plain Markdown.
#[derive(Default)]
struct Blocks {
    fence: Option<Fence>,
    comment: bool,
}

impl Blocks {
    /// Reads the next line; returns whether it is a section heading.
    fn read(&mut self, line: &str) -> bool {
        if let Some(open) = &self.fence {
            if open.is_closed_by(line) {
                self.fence = None;
            }
            return false;
        }
        if !self.comment {
            self.fence = Fence::opened_by(line);
            if self.fence.is_some() {
                return false;
            }
        }
        let heading = !self.comment && line.starts_with("## ");
        self.comment = comment_after(line, self.comment);
        heading
    }
}

/// Whether an HTML comment is open after `line`, given whether one was open before it: every
/// `<!--` outside an inline code span opens one, and the first `-->` after it closes it.
fn comment_after(line: &str, mut inside: bool) -> bool {
    let mut rest = line;
    loop {
        let (mark, found) = if inside {
            ("-->", rest.find("-->"))
        } else {
            ("<!--", comment_opening(rest))
        };
        let Some(at) = found else {
            return inside;
        };
        inside = !inside;
        rest = &rest[at + mark.len()..];
    }
}

/// Where the first `<!--` of `text` outside an inline code span starts: a skill that writes
/// about comments in backticks opens none.
fn comment_opening(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let run_at = |at: usize| bytes[at..].iter().take_while(|&&b| b == b'`').count();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at..].starts_with(b"<!--") {
            return Some(at);
        }
        if bytes[at] != b'`' {
            at += 1;
            continue;
        }
        // A code span closes at the next run of exactly as many backticks; an unmatched run
        // is text.
        let run = run_at(at);
        let mut next = at + run;
        let mut close = None;
        while next < bytes.len() {
            if bytes[next] != b'`' {
                next += 1;
                continue;
            }
            let length = run_at(next);
            if length == run {
                close = Some(next + length);
                break;
            }
            next += length;
        }
        at = close.unwrap_or(at + run);
    }
    None
}

/// The byte offset of each line of `body` that is a section heading, outside code fences and
/// HTML comments.
fn heading_starts(body: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut blocks = Blocks::default();
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        if blocks.read(line) {
            starts.push(offset);
        }
        offset += line.len();
    }
    starts
}

/// A block a body leaves open at its end, so that everything after its opening is hidden
/// from a reader (an HTML comment) or shown as code (a fence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unclosed {
    /// `<!--` without its `-->`.
    Comment,
    /// A ``` or ~~~ fence without its closing line.
    Fence,
}

impl std::fmt::Display for Unclosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unclosed::Comment => "an HTML comment (`<!--` without `-->`)",
            Unclosed::Fence => "a code fence (``` or ~~~ without its closing line)",
        })
    }
}

/// The block `text` leaves open at its end, if any.
pub fn unclosed(text: &str) -> Option<Unclosed> {
    let mut blocks = Blocks::default();
    for line in text.split_inclusive('\n') {
        blocks.read(line);
    }
    if blocks.fence.is_some() {
        Some(Unclosed::Fence)
    } else {
        blocks.comment.then_some(Unclosed::Comment)
    }
}

/// The block `after` leaves open that `before` did not: what an edit opened and never
/// closed. A block already open in `before` is not the edit's doing.
pub fn newly_unclosed(before: &str, after: &str) -> Option<Unclosed> {
    unclosed(after).filter(|open| unclosed(before) != Some(*open))
}

/// The part of `text[range]` from the start of its first non-blank line to the end of its
/// last non-blank line (line break excluded), as a range of `text`; empty at `range.start`
/// when every line is blank.
fn content(text: &str, range: Range<usize>) -> Range<usize> {
    let mut start = None;
    let mut end = range.start;
    let mut offset = range.start;
    for line in text[range.clone()].split_inclusive('\n') {
        if !line.trim().is_empty() {
            start.get_or_insert(offset);
            end = offset + line.trim_end_matches(['\n', '\r']).len();
        }
        offset += line.len();
    }
    start.map_or(range.start..range.start, |start| start..end)
}

/// `text` without its leading and trailing blank lines.
fn trim_blank_lines(text: &str) -> &str {
    &text[content(text, 0..text.len())]
}

/// `body` with `span` (a component's text) replaced by `replacement`. Every other byte stays:
/// the other components, the whitespace between them and around the body. Only a gap next to
/// the replacement that holds no blank line becomes one, so the new text cannot run into its
/// neighbour (a paragraph glued to a heading line would read as part of it).
fn splice(body: &str, span: Range<usize>, replacement: &str) -> String {
    let previous = content(body, 0..span.start);
    let next = content(body, span.end..body.len());
    let next_start = if next.is_empty() {
        body.len()
    } else {
        next.start
    };
    let (head, tail) = (&body[..previous.end], &body[next_start..]);
    let (gap_before, gap_after) = (&body[previous.end..span.start], &body[span.end..next_start]);
    if replacement.is_empty() {
        return match (head.is_empty(), tail.is_empty()) {
            (true, true) => String::new(),
            (true, false) => format!("{gap_before}{tail}"),
            (false, true) => format!("{head}{gap_after}"),
            (false, false) => format!("{head}{}{tail}", separator(gap_before)),
        };
    }
    let before = if head.is_empty() {
        gap_before
    } else {
        separator(gap_before)
    };
    let after = if tail.is_empty() {
        gap_after
    } else {
        separator(gap_after)
    };
    format!("{head}{before}{replacement}{after}{tail}")
}

/// The whitespace `gap` between two components when it holds a blank line, else one blank
/// line.
fn separator(gap: &str) -> &str {
    if gap.matches('\n').count() >= 2 {
        gap
    } else {
        "\n\n"
    }
}

/// A component's identity across versions of one skill: its name and how many earlier
/// components share that name, so that two `## Example` sections are told apart by order.
type Key<'c> = (&'c str, usize);

/// The components with their keys, in order.
fn keyed(components: &Components) -> Vec<(Key<'_>, &Component)> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    components
        .iter()
        .map(|component| {
            let count = seen.entry(component.name.as_str()).or_insert(0);
            let key = (component.name.as_str(), *count);
            *count += 1;
            (key, component)
        })
        .collect()
}

/// The text of each keyed component.
fn texts<'c>(keyed: &[(Key<'c>, &'c Component)]) -> HashMap<Key<'c>, &'c str> {
    keyed
        .iter()
        .map(|&(key, component)| (key, component.text.as_str()))
        .collect()
}

/// The names of the components whose text differs between `before` and `after`, matched by
/// name (a component present in only one of them counts as changed): in `after`'s order,
/// then the removed ones, each name once.
pub fn changed(before: &Skill, after: &Skill) -> Vec<String> {
    let (old, new) = (Components::of(before), Components::of(after));
    let (old, new) = (keyed(&old), keyed(&new));
    let (old_texts, new_texts) = (texts(&old), texts(&new));
    let edited = new
        .iter()
        .filter(|(key, component)| old_texts.get(key) != Some(&component.text.as_str()));
    let removed = old.iter().filter(|(key, _)| !new_texts.contains_key(key));
    let mut names: Vec<String> = Vec::new();
    for (_, component) in edited.chain(removed) {
        if !names.contains(&component.name) {
            names.push(component.name.clone());
        }
    }
    names
}

/// GEPA's system-aware merge of `a` and `b`, two descendants of `ancestor`: each component,
/// matched by name, from the side that changed it from the ancestor; from `a` when both did
/// and `prefer_a`, else from `b`. A component one side added is kept; one a side removed is
/// dropped unless the other side changed it. The name, the extra frontmatter keys, the
/// description and each reference file follow the same rule.
///
/// The body is the preamble, then the sections in `a`'s order, then those only `b` has,
/// separated by one blank line. `None` when the merge has the components of `a` or of `b`
/// (nothing gained), which includes neither side having changed anything.
pub fn merge(ancestor: &Skill, a: &Skill, b: &Skill, prefer_a: bool) -> Option<Skill> {
    let (base, ours, theirs) = (
        Components::of(ancestor),
        Components::of(a),
        Components::of(b),
    );
    let (base, ours, theirs) = (keyed(&base), keyed(&ours), keyed(&theirs));
    let (base_texts, our_texts, their_texts) = (texts(&base), texts(&ours), texts(&theirs));
    let order = ours.iter().chain(
        theirs
            .iter()
            .filter(|(key, _)| !our_texts.contains_key(key)),
    );
    let mut description = a.description.as_str();
    let mut preamble = None;
    let mut sections = Vec::new();
    let mut files = BTreeMap::new();
    for (key, component) in order {
        let Some(text) = pick_text(
            base_texts.get(key).copied(),
            our_texts.get(key).copied(),
            their_texts.get(key).copied(),
            prefer_a,
        ) else {
            continue;
        };
        match component.kind {
            ComponentKind::Description => description = text,
            ComponentKind::Preamble => preamble = Some(text),
            ComponentKind::Section => sections.push(text),
            ComponentKind::Reference => {
                files.insert(component.name.clone(), text.to_owned());
            }
        }
    }
    // The preamble goes first whichever side brought it: after a section it would read as
    // part of that section.
    let mut body = preamble
        .into_iter()
        .chain(sections)
        .collect::<Vec<_>>()
        .join("\n\n");
    body.push_str(&a.body[a.body.trim_end().len()..]);
    let merged = Skill {
        name: pick(&ancestor.name, &a.name, &b.name, prefer_a).clone(),
        description: description.to_owned(),
        extra: pick(&ancestor.extra, &a.extra, &b.extra, prefer_a).clone(),
        body,
        files,
    };
    let same = |x: &Skill, y: &Skill| {
        x.name == y.name && x.extra == y.extra && Components::of(x).parts == Components::of(y).parts
    };
    (!same(&merged, a) && !same(&merged, b)).then_some(merged)
}

/// The side that changed a value from `old`; `a`'s when both did and `prefer_a`, else `b`'s.
fn pick<T: PartialEq>(old: T, a: T, b: T, prefer_a: bool) -> T {
    match (a != old, b != old) {
        (true, true) if prefer_a => a,
        (_, true) => b,
        _ => a,
    }
}

/// [`pick`] for a component's text, `None` where a skill lacks the component; when one side
/// removed it and the other edited it, the edit wins, since it is the only side that says
/// what the component should be.
fn pick_text<'t>(
    old: Option<&'t str>,
    a: Option<&'t str>,
    b: Option<&'t str>,
    prefer_a: bool,
) -> Option<&'t str> {
    match (a, b) {
        (None, Some(text)) | (Some(text), None) if a != old && b != old => Some(text),
        _ => pick(old, a, b, prefer_a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(body: &str) -> Skill {
        Skill::new("s", "Does things.", body)
    }

    const BODY: &str = "# Title\n\nIntro.\n\n\n## Steps\n\n1. Read.\n\n\
                        ```md\n## not a section\n```\n\n## Output\n\nJSON only.\n";

    fn names(skill: &Skill) -> Vec<String> {
        Components::of(skill)
            .iter()
            .map(|c| c.name.clone())
            .collect()
    }

    #[test]
    fn a_heading_inside_a_code_fence_is_not_a_section() {
        let components = Components::of(&skill(BODY));
        assert_eq!(
            names(&skill(BODY)),
            ["description", "preamble", "## Steps", "## Output"]
        );
        let kinds: Vec<ComponentKind> = components.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [
                ComponentKind::Description,
                ComponentKind::Preamble,
                ComponentKind::Section,
                ComponentKind::Section
            ]
        );
        assert_eq!(components.len(), 4);
        assert!(!components.is_empty());
        assert_eq!(components.get(0).unwrap().text, "Does things.");
        assert_eq!(components.get(1).unwrap().text, "# Title\n\nIntro.");
        assert_eq!(
            components.get(2).unwrap().text,
            "## Steps\n\n1. Read.\n\n```md\n## not a section\n```"
        );
        assert_eq!(components.get(3).unwrap().text, "## Output\n\nJSON only.");
        assert_eq!(components.index_of("## Output"), Some(3));
        assert_eq!(components.index_of("## not a section"), None);
        assert_eq!(components.get(4), None);
    }

    #[test]
    fn a_heading_inside_an_html_comment_is_not_a_section() {
        let body = "Intro.\n\n<!--\n## Hidden\n\nText.\n-->\n\n## Shown <!-- note -->\n\nMore.\n\n\
                    Write `<!--` to open a comment.\n\n## Last";
        assert_eq!(
            names(&skill(body)),
            [
                "description",
                "preamble",
                "## Shown <!-- note -->",
                "## Last"
            ]
        );
        // Inside a fence a comment mark is code; inside a comment a fence mark is text.
        let code = "```\n<!--\n```\n## After code";
        assert_eq!(names(&skill(code))[2..], ["## After code"]);
        let text = "<!-- a fence: ```\n-->\n## After comment";
        assert_eq!(names(&skill(text))[2..], ["## After comment"]);
        let open = "Intro. <!-- never closed\n\n## Hidden";
        assert_eq!(names(&skill(open)), ["description", "preamble"]);
    }

    #[test]
    fn what_a_body_leaves_open_is_found_and_what_its_parent_left_open_is_not_new() {
        assert_eq!(unclosed("Intro.\n\n## A\n\nText."), None);
        assert_eq!(unclosed("Text <!-- hidden"), Some(Unclosed::Comment));
        assert_eq!(unclosed("<!--\nx\n--> <!-- again"), Some(Unclosed::Comment));
        assert_eq!(unclosed("<!-- one --> and <!-- two -->"), None);
        assert_eq!(unclosed("```python\nprint()\n"), Some(Unclosed::Fence));
        assert_eq!(unclosed("~~~~\n~~~\n"), Some(Unclosed::Fence));
        assert_eq!(unclosed("```\ncode\n```\n"), None);
        // Backticks make a code span: one a span holds, or an unmatched run, opens nothing.
        assert_eq!(unclosed("Never write `<!--` or ``<!-- `x` -->``."), None);
        assert_eq!(
            unclosed("A lone ` then <!-- for real"),
            Some(Unclosed::Comment)
        );
        assert_eq!(
            newly_unclosed("Done.", "Done. <!-- todo"),
            Some(Unclosed::Comment)
        );
        assert_eq!(newly_unclosed("Seed <!-- open", "Child <!-- open"), None);
        assert_eq!(
            newly_unclosed("Seed <!-- open", "Child\n```"),
            Some(Unclosed::Fence)
        );
        assert_eq!(
            Unclosed::Comment.to_string(),
            "an HTML comment (`<!--` without `-->`)"
        );
    }

    #[test]
    fn a_fence_closes_only_with_its_own_characters() {
        let body =
            "~~~\n```\n## inside tildes\n~~~\n## After\n\n````\n```\n## inside four\n````\n## Last";
        assert_eq!(
            names(&skill(body)),
            ["description", "preamble", "## After", "## Last"]
        );
    }

    #[test]
    fn a_deeper_or_indented_heading_is_not_a_section() {
        let body = "## Steps\n\n### Detail\n\n ## indented\n\n##Tight\n\n#### Deep";
        let components = Components::of(&skill(body));
        assert_eq!(names(&skill(body)), ["description", "## Steps"]);
        assert_eq!(components.get(1).unwrap().text, body);
    }

    #[test]
    fn a_blank_preamble_is_not_a_component() {
        assert_eq!(
            names(&skill("\n  \n## Only\n\nText.")),
            ["description", "## Only"]
        );
        assert_eq!(names(&skill("")), ["description"]);
    }

    #[test]
    fn replacing_a_section_leaves_every_other_byte_as_it_was() {
        let seed = skill(BODY);
        let edited =
            Components::of(&seed).with_text(&seed, 3, "\n## Output\n\nJSON only, no prose.\n\n");
        assert_eq!(
            edited.body,
            BODY.replace("JSON only.", "JSON only, no prose.")
        );
        assert_eq!(edited.description, seed.description);
    }

    #[test]
    fn a_section_that_ran_into_the_next_is_set_off_by_one_blank_line() {
        let seed = skill("Intro.\n\n\n\n## A\n\nOld a.\n## B\n\nB.");
        let edited = Components::of(&seed).with_text(&seed, 2, "## A\n\nNew a.");
        assert_eq!(edited.body, "Intro.\n\n\n\n## A\n\nNew a.\n\n## B\n\nB.");
    }

    #[test]
    fn replacing_each_component_by_its_own_text_gives_the_skill_back() {
        let seed = skill("    indented code first\n\nIntro.\n\n## A\n\nA.\n\n\n## B\n\nB.\n");
        let components = Components::of(&seed);
        for (index, component) in components.iter().enumerate() {
            assert_eq!(
                components.with_text(&seed, index, &component.text),
                seed,
                "{}",
                component.name
            );
        }
    }

    #[test]
    fn a_section_reply_without_its_heading_keeps_the_heading() {
        let seed = skill(BODY);
        let edited = Components::of(&seed).with_text(&seed, 2, "1. Read twice.");
        assert_eq!(
            edited.body,
            "# Title\n\nIntro.\n\n\n## Steps\n\n1. Read twice.\n\n## Output\n\nJSON only.\n"
        );
    }

    #[test]
    fn a_blank_section_reply_removes_the_section() {
        let seed = skill(BODY);
        let components = Components::of(&seed);
        assert_eq!(
            components.with_text(&seed, 3, " \n").body,
            "# Title\n\nIntro.\n\n\n## Steps\n\n1. Read.\n\n```md\n## not a section\n```\n"
        );
        assert_eq!(
            components.with_text(&seed, 2, "").body,
            "# Title\n\nIntro.\n\n\n## Output\n\nJSON only.\n"
        );
        let lone = skill("## Only\n\nText.");
        assert_eq!(Components::of(&lone).with_text(&lone, 1, "").body, "");
    }

    #[test]
    fn the_description_is_replaced_but_never_blanked() {
        let seed = skill(BODY);
        let components = Components::of(&seed);
        let described = components.with_text(&seed, 0, "  Extracts totals.\n");
        assert_eq!(described.description, "Extracts totals.");
        assert_eq!(described.body, seed.body);
        assert_eq!(components.with_text(&seed, 0, " \n "), seed);
    }

    #[test]
    fn a_preamble_is_replaced_in_place() {
        let seed = skill(BODY);
        let edited = Components::of(&seed).with_text(&seed, 1, "# Title\n\nA better intro.");
        assert_eq!(edited.body, BODY.replace("Intro.", "A better intro."));
    }

    #[test]
    fn an_index_out_of_range_or_another_skill_leaves_the_skill_unchanged() {
        let seed = skill(BODY);
        let components = Components::of(&seed);
        assert_eq!(components.with_text(&seed, 9, "## X\n\nx"), seed);
        let other = skill("Something else entirely.");
        assert_eq!(components.with_text(&other, 3, "## X\n\nx"), other);
    }

    #[test]
    fn changed_names_the_section_edited() {
        let seed = skill(BODY);
        let edited = Components::of(&seed).with_text(&seed, 2, "1. Read twice.");
        assert_eq!(changed(&seed, &edited), ["## Steps"]);
        assert!(changed(&seed, &seed).is_empty());
    }

    #[test]
    fn changed_lists_added_components_in_order_then_removed_ones() {
        let before = skill("## A\n\nA.\n\n## B\n\nB.");
        let after = Skill::new("s", "New.", "## New\n\nN.\n\n## A\n\nA.");
        assert_eq!(changed(&before, &after), ["description", "## New", "## B"]);
    }

    #[test]
    fn sections_that_share_a_heading_are_told_apart_by_order() {
        let before = skill("## Example\n\nOne.\n\n## Example\n\nTwo.");
        let after = skill("## Example\n\nOne.\n\n## Example\n\nTwo, better.");
        assert_eq!(changed(&before, &after), ["## Example"]);
        let other = skill("## Example\n\nOne, better.\n\n## Example\n\nTwo.");
        assert_eq!(
            merge(&before, &after, &other, true).unwrap().body,
            "## Example\n\nOne, better.\n\n## Example\n\nTwo, better."
        );
    }

    #[test]
    fn merge_takes_each_sides_change() {
        let base = skill("Intro.\n\n## A\n\nDo a.\n\n## B\n\nDo b.");
        let a = skill("Intro.\n\n## A\n\nDo a. EVEN-RULE\n\n## B\n\nDo b.");
        let b = Skill::new(
            "s",
            "Does things well.",
            "Intro.\n\n## A\n\nDo a.\n\n## B\n\nDo b. ODD-RULE",
        );
        let merged = merge(&base, &a, &b, true).unwrap();
        assert_eq!(
            merged.body,
            "Intro.\n\n## A\n\nDo a. EVEN-RULE\n\n## B\n\nDo b. ODD-RULE"
        );
        assert_eq!(merged.description, "Does things well.");
        assert_eq!(merged.name, "s");
        assert_eq!(merge(&base, &b, &a, false), Some(merged));
    }

    #[test]
    fn merge_prefers_the_named_side_when_both_changed_a_component() {
        let base = skill("## A\n\nDo a.\n\n## B\n\nDo b.");
        let a = skill("## A\n\nA one.\n\n## B\n\nDo b.");
        let b = skill("## A\n\nA two.\n\n## B\n\nB two.");
        assert_eq!(
            merge(&base, &a, &b, true).unwrap().body,
            "## A\n\nA one.\n\n## B\n\nB two."
        );
        // Preferring b gives b itself.
        assert_eq!(merge(&base, &a, &b, false), None);
    }

    #[test]
    fn merge_returns_none_when_one_side_holds_the_others_changes_only() {
        let base = skill("## A\n\nDo a.");
        let a = skill("## A\n\nDo a. X");
        let b = skill("## A\n\nDo a. X\n\n## C\n\nNew.");
        assert_eq!(merge(&base, &a, &b, true), None);
        assert_eq!(merge(&base, &b, &a, true), None);
        assert_eq!(merge(&base, &base, &base, true), None);
    }

    #[test]
    fn merge_keeps_added_sections_and_an_edit_beats_a_removal() {
        let base = skill("## A\n\nA.\n\n## B\n\nB.\n\n## C\n\nC.");
        // a removes B and C; b edits B and adds D; C stays removed.
        let a = skill("## A\n\nA, sharper.");
        let b = skill("## A\n\nA.\n\n## B\n\nB, sharper.\n\n## C\n\nC.\n\n## D\n\nD.");
        assert_eq!(
            merge(&base, &a, &b, true).unwrap().body,
            "## A\n\nA, sharper.\n\n## B\n\nB, sharper.\n\n## D\n\nD."
        );
    }

    #[test]
    fn a_preamble_only_one_side_added_goes_before_the_sections() {
        let base = skill("## A\n\nA.");
        let a = skill("## A\n\nA, sharper.");
        let b = skill("Read this first.\n\n## A\n\nA.");
        let merged = merge(&base, &a, &b, true).unwrap();
        assert_eq!(merged.body, "Read this first.\n\n## A\n\nA, sharper.");
        assert_eq!(names(&merged), ["description", "preamble", "## A"]);
    }

    #[test]
    fn merge_takes_the_frontmatter_from_the_side_that_changed_it() {
        let base = skill("## A\n\nA.");
        let mut a = skill("## A\n\nA, sharper.");
        a.extra
            .insert("license".to_owned(), serde_json::Value::from("MIT"));
        let b = Skill::new("renamed", "Does things.", "## A\n\nA.\n\n## B\n\nB.");
        let merged = merge(&base, &a, &b, false).unwrap();
        assert_eq!(merged.name, "renamed");
        assert_eq!(merged.extra, a.extra);
        assert_eq!(merged.body, "## A\n\nA, sharper.\n\n## B\n\nB.");
    }

    fn with_guide(body: &str, guide: &str) -> Skill {
        skill(body).with_files(BTreeMap::from([(
            "references/guide.md".to_owned(),
            guide.to_owned(),
        )]))
    }

    #[test]
    fn a_reference_file_is_a_component_rewritten_alone() {
        let seed = with_guide("## A\n\nA.", "Old guide.\n");
        let parts = Components::of(&seed);
        assert_eq!(names(&seed), ["description", "## A", "references/guide.md"]);
        let index = parts.index_of("references/guide.md").unwrap();
        assert_eq!(parts.get(index).unwrap().kind, ComponentKind::Reference);
        let child = parts.with_text(&seed, index, "  New guide.  ");
        assert_eq!(child.files["references/guide.md"], "New guide.\n");
        assert_eq!(child.body, seed.body, "the body stays byte for byte");
        assert_eq!(changed(&seed, &child), ["references/guide.md"]);
        assert_eq!(
            parts.with_text(&seed, index, "  "),
            seed,
            "a blank reply keeps the file"
        );
    }

    #[test]
    fn merge_takes_each_reference_file_from_the_side_that_changed_it() {
        let base = with_guide("## A\n\nA.", "Guide.\n");
        let a = with_guide("## A\n\nA, sharper.", "Guide.\n");
        let b = with_guide("## A\n\nA.", "Guide, sharper.\n");
        let merged = merge(&base, &a, &b, true).unwrap();
        assert_eq!(merged.body, "## A\n\nA, sharper.");
        assert_eq!(merged.files["references/guide.md"], "Guide, sharper.\n");
    }
}
