//! The Agent Skills specification (agentskills.io) as checks on a skill: what an installer such
//! as `npx skills` and the agents that load skills expect of a `SKILL.md` and its folder.
//!
//! Every check returns [`Finding`]s. An error means some agent or installer will reject or
//! misfile the skill, so export and install refuse it; a warning is guidance (size, links,
//! agent-specific keys) that does not stop anything.
//!
//! Entry points, from the smallest to the largest unit:
//! - [`validate_body`]: the body alone. The optimizer only ever changes the body, so it can
//!   check each candidate with this and the frontmatter once.
//! - [`validate_skill`]: frontmatter and body of one skill, without its folder.
//! - [`validate_folder_name`] and [`validate_files`]: the parts that need the skill's folder.
//!   [`crate::bundle::SkillBundle::findings`] and [`crate::validate`] combine them.

use serde_json::Value;
use skill_factory_core::Skill;

/// The longest valid name, in characters.
pub const NAME_MAX_CHARS: usize = 64;
/// The longest valid description, in characters.
pub const DESCRIPTION_MAX_CHARS: usize = 1024;
/// The longest valid `compatibility`, in characters.
pub const COMPATIBILITY_MAX_CHARS: usize = 500;
/// Body length above which agents are advised to move material into `references/`.
pub const BODY_MAX_LINES: usize = 500;
/// Body size (estimated tokens, four characters each) above which the same advice applies.
pub const BODY_MAX_TOKENS: usize = 5000;

/// Frontmatter keys the Agent Skills spec defines.
pub const SPEC_KEYS: [&str; 6] = [
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];

/// Frontmatter keys Claude Code reads beyond the spec. Other agents ignore them, and strict
/// validators (Anthropic's `quick_validate.py`) reject them, so they are warnings, not errors.
pub const CLAUDE_CODE_KEYS: [&str; 8] = [
    "disable-model-invocation",
    "user-invocable",
    "model",
    "effort",
    "context",
    "agent",
    "argument-hint",
    "hooks",
];

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The skill breaks the spec: installers or agents reject or misfile it. Export refuses it.
    Error,
    /// The skill works, but something is advised against.
    Warning,
}

/// The rule a finding is about. [`Rule::code`] is the short name printed in brackets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The SKILL.md cannot be read (no frontmatter, bad YAML, no name).
    Frontmatter,
    /// `name` is 1-64 characters.
    NameLength,
    /// `name` uses only lowercase ASCII letters, digits and hyphens.
    NameCharacters,
    /// `name` neither starts nor ends with a hyphen and has no two in a row.
    NameHyphens,
    /// `name` equals the name of the folder holding the SKILL.md.
    NameMatchesFolder,
    /// Export replaced an invalid name by its slug.
    NameSlugged,
    /// `description` is present and not blank.
    DescriptionRequired,
    /// `description` is at most 1024 characters.
    DescriptionLength,
    /// `description` has no `<` or `>` (they read as markup in the prompt agents build).
    DescriptionAngleBrackets,
    /// Only the spec's frontmatter keys are used.
    UnknownKey,
    /// Export moved frontmatter keys the spec does not define under `metadata:`.
    MovedToMetadata,
    /// A Claude Code-only frontmatter key is used.
    AgentSpecificKey,
    /// `license` is text.
    License,
    /// `compatibility` is text of 1-500 characters.
    Compatibility,
    /// `metadata` maps text keys to text values.
    Metadata,
    /// `allowed-tools` is a space-separated string or a list of strings.
    AllowedTools,
    /// The body is not empty.
    BodyEmpty,
    /// The body stays under 500 lines.
    BodyLines,
    /// The body stays under about 5000 tokens.
    BodyTokens,
    /// A bundled file's path is relative, inside the skill folder, with `/` separators.
    FilePath,
    /// A symbolic link in the skill folder is not carried along.
    Symlink,
    /// Referenced files sit at most one folder below SKILL.md.
    ReferenceDepth,
    /// A relative link in the body points at a file the skill folder does not have.
    BrokenLink,
    /// A link in the body points outside the skill folder.
    LinkOutside,
    /// The description or the body holds a control character (an escape sequence a terminal
    /// would act on); only line breaks and tabs are text.
    ControlCharacters,
}

impl Rule {
    /// The short name printed in brackets, e.g. `name-characters`.
    pub fn code(self) -> &'static str {
        match self {
            Rule::Frontmatter => "frontmatter",
            Rule::NameLength => "name-length",
            Rule::NameCharacters => "name-characters",
            Rule::NameHyphens => "name-hyphens",
            Rule::NameMatchesFolder => "name-matches-folder",
            Rule::NameSlugged => "name-slugged",
            Rule::DescriptionRequired => "description-required",
            Rule::DescriptionLength => "description-length",
            Rule::DescriptionAngleBrackets => "description-angle-brackets",
            Rule::UnknownKey => "unknown-key",
            Rule::MovedToMetadata => "moved-to-metadata",
            Rule::AgentSpecificKey => "agent-specific-key",
            Rule::License => "license",
            Rule::Compatibility => "compatibility",
            Rule::Metadata => "metadata",
            Rule::AllowedTools => "allowed-tools",
            Rule::BodyEmpty => "body-empty",
            Rule::BodyLines => "body-lines",
            Rule::BodyTokens => "body-tokens",
            Rule::FilePath => "file-path",
            Rule::Symlink => "symlink",
            Rule::ReferenceDepth => "reference-depth",
            Rule::BrokenLink => "broken-link",
            Rule::LinkOutside => "link-outside",
            Rule::ControlCharacters => "control-characters",
        }
    }
}

/// One problem found in a skill: the rule, what is wrong and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// The rule broken.
    pub rule: Rule,
    /// What is wrong, naming the key or file.
    pub message: String,
    /// What to change.
    pub fix: String,
}

impl Finding {
    /// An error finding.
    pub fn error(rule: Rule, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Finding {
            severity: Severity::Error,
            rule,
            message: message.into(),
            fix: fix.into(),
        }
    }

    /// A warning finding.
    pub fn warning(rule: Rule, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Finding {
            severity: Severity::Warning,
            rule,
            message: message.into(),
            fix: fix.into(),
        }
    }

    /// Whether this finding stops export and install.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl std::fmt::Display for Finding {
    /// `error [name-characters]: <message> Fix: <fix>` (no `Fix:` when the message says it).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{severity} [{}]: {}", self.rule.code(), self.message)?;
        if !self.fix.is_empty() {
            write!(f, " Fix: {}", self.fix)?;
        }
        Ok(())
    }
}

/// Whether any finding is an error.
pub fn has_errors(findings: &[Finding]) -> bool {
    findings.iter().any(Finding::is_error)
}

/// Checks a skill's frontmatter and body against the Agent Skills spec: name rules (not the
/// folder, see [`validate_folder_name`]), description, frontmatter keys and their types, and
/// body size guidance. Errors come first, then warnings, each group in frontmatter order.
///
/// Cheap enough to call on every candidate an optimizer proposes.
pub fn validate_skill(skill: &Skill) -> Vec<Finding> {
    let mut findings = validate_name(&skill.name);
    findings.extend(validate_description(&skill.description));
    findings.extend(control_characters("description", &skill.description));
    for (key, value) in &skill.extra {
        findings.extend(validate_key(key, value));
    }
    findings.extend(validate_body(&skill.body));
    findings.sort_by_key(|finding| finding.severity);
    findings
}

/// Checks `name` against the spec's name rules.
pub fn validate_name(name: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    let suggestion = suggest_name(name);
    let length = name.chars().count();
    if length == 0 || length > NAME_MAX_CHARS {
        findings.push(Finding::error(
            Rule::NameLength,
            format!(
                "The name {name:?} is {length} characters long; it must be 1 to {NAME_MAX_CHARS}."
            ),
            "Shorten the name to a few hyphenated words, e.g. `name: pdf-form-filler`.",
        ));
    }
    let mut bad: Vec<char> = Vec::new();
    for c in name.chars() {
        let allowed = c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
        if !allowed && !bad.contains(&c) {
            bad.push(c);
        }
    }
    if !bad.is_empty() {
        let shown: Vec<String> = bad.iter().map(|c| format!("{c:?}")).collect();
        findings.push(Finding::error(
            Rule::NameCharacters,
            format!(
                "The name {name:?} has characters other than lowercase letters a-z, digits and \
                 hyphens: {}.",
                shown.join(", ")
            ),
            suggestion.clone(),
        ));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        findings.push(Finding::error(
            Rule::NameHyphens,
            format!("The name {name:?} starts or ends with a hyphen or has two hyphens in a row."),
            suggestion,
        ));
    }
    findings
}

/// The fix line of a bad name: its slug when it has one.
fn suggest_name(name: &str) -> String {
    match slugify(name) {
        Ok(slug) if slug.chars().count() <= NAME_MAX_CHARS => format!(
            "Write `name: {slug}` (export does this for you and names the folder the same)."
        ),
        _ => "Write a name of lowercase words joined by single hyphens, e.g. `name: my-skill`."
            .to_owned(),
    }
}

/// The reference's slug (§3.4): trim, lowercase, each run of characters outside `[a-z0-9]`
/// becomes one `-`, leading and trailing `-` removed; non-ASCII letters are dropped
/// (`Café` → `caf`). A valid Agent Skills name is its own slug.
pub fn slugify(name: &str) -> Result<String, SlugError> {
    let mut slug = String::new();
    let mut pending_hyphen = false;
    for c in name.trim().to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if pending_hyphen && !slug.is_empty() {
                slug.push('-');
            }
            pending_hyphen = false;
            slug.push(c);
        } else {
            pending_hyphen = true;
        }
    }
    if slug.is_empty() {
        return Err(SlugError {
            name: name.to_owned(),
        });
    }
    Ok(slug)
}

/// A name that has no ASCII letter or digit to make a slug of.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the skill name {name:?} has no letters a-z or digits to make a folder name from. Give the \
     skill a name such as `name: my-skill`."
)]
pub struct SlugError {
    /// The name as written.
    pub name: String,
}

/// Checks that the skill's `name` equals the name of its folder, as installers and agents
/// expect (the folder is what they look up; the name is what they show and match).
pub fn validate_folder_name(skill: &Skill, folder: &str) -> Option<Finding> {
    (skill.name != folder).then(|| {
        Finding::error(
            Rule::NameMatchesFolder,
            format!(
                "The name {:?} differs from the folder name {folder:?}.",
                skill.name
            ),
            format!(
                "Rename the folder to match the name, or set `name: {folder}`; \
                 `skill-factory export` writes a folder that matches."
            ),
        )
    })
}

fn validate_description(description: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    if description.trim().is_empty() {
        findings.push(Finding::error(
            Rule::DescriptionRequired,
            "The frontmatter has no 'description' (or it is blank); agents pick a skill by its \
             description, so without one the skill is never used.",
            "Add `description: <what the skill does>. Use when <situations that should trigger \
             it>.`",
        ));
        return findings;
    }
    let length = description.chars().count();
    if length > DESCRIPTION_MAX_CHARS {
        findings.push(Finding::error(
            Rule::DescriptionLength,
            format!(
                "The description is {length} characters long; it must be at most \
                 {DESCRIPTION_MAX_CHARS}."
            ),
            "Keep what the skill does and when to use it; move details into the body.",
        ));
    }
    if description.contains(['<', '>']) {
        findings.push(Finding::error(
            Rule::DescriptionAngleBrackets,
            "The description contains '<' or '>'; agents place it inside markup, where angle \
             brackets break the prompt.",
            "Replace them with words ('less than', 'greater than') or quotes.",
        ));
    }
    findings
}

fn validate_key(key: &str, value: &Value) -> Option<Finding> {
    match key {
        "license" => {
            (!matches!(value, Value::String(text) if !text.trim().is_empty())).then(|| {
                Finding::error(
                    Rule::License,
                    format!("'license' is {}, but it must be text.", describe(value)),
                    "Write a licence name or the name of a bundled licence file, e.g. \
                 `license: Apache-2.0` or `license: LICENSE.txt`.",
                )
            })
        }
        "compatibility" => validate_compatibility(value),
        "metadata" => validate_metadata(value),
        "allowed-tools" => validate_allowed_tools(value),
        _ if CLAUDE_CODE_KEYS.contains(&key) => Some(Finding::warning(
            Rule::AgentSpecificKey,
            format!(
                "'{key}' is a Claude Code extension: Claude Code reads it, other agents ignore \
                 it, and strict validators reject it."
            ),
            format!("Keep it if the skill targets Claude Code; otherwise remove '{key}'."),
        )),
        _ => Some(Finding::error(
            Rule::UnknownKey,
            format!(
                "'{key}' is not an Agent Skills frontmatter key (allowed: {}).",
                SPEC_KEYS.join(", ")
            ),
            unknown_key_fix(key),
        )),
    }
}

/// The known frontmatter key (the spec's or Claude Code's) an unknown `key` is a misspelling
/// of, if it looks like one.
pub fn misspelled_key(key: &str) -> Option<&'static str> {
    SPEC_KEYS
        .iter()
        .chain(CLAUDE_CODE_KEYS.iter())
        .map(|known| (strsim::jaro_winkler(key, known), *known))
        .filter(|(similarity, _)| *similarity >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, known)| known)
}

/// Whether `key` is a frontmatter key of its own that the spec does not define (`version`,
/// `author`, `tags`): neither a known key nor a misspelling of one. `metadata:` is its place.
pub fn is_foreign_key(key: &str) -> bool {
    !SPEC_KEYS.contains(&key) && !CLAUDE_CODE_KEYS.contains(&key) && misspelled_key(key).is_none()
}

fn unknown_key_fix(key: &str) -> String {
    match misspelled_key(key) {
        Some(known) => format!("Did you mean '{known}'? Rename the key."),
        None => format!(
            "Move it under `metadata:` as text (`metadata:` then `  {key}: \"...\"`), or remove \
             it; `skill-factory export` moves it there for you."
        ),
    }
}

fn validate_compatibility(value: &Value) -> Option<Finding> {
    let fix = "Describe what the skill needs in one short sentence, e.g. `compatibility: \
               Requires git and network access`.";
    match value {
        Value::String(text) => {
            let length = text.chars().count();
            (text.trim().is_empty() || length > COMPATIBILITY_MAX_CHARS).then(|| {
                Finding::error(
                    Rule::Compatibility,
                    format!(
                        "'compatibility' is {length} characters long; it must be 1 to \
                         {COMPATIBILITY_MAX_CHARS}."
                    ),
                    fix,
                )
            })
        }
        other => Some(Finding::error(
            Rule::Compatibility,
            format!(
                "'compatibility' is {}, but it must be text.",
                describe(other)
            ),
            fix,
        )),
    }
}

fn validate_metadata(value: &Value) -> Option<Finding> {
    let Value::Object(map) = value else {
        return Some(Finding::error(
            Rule::Metadata,
            format!(
                "'metadata' is {}, but it must be a mapping of text keys to text values.",
                describe(value)
            ),
            "Write it as `metadata:` followed by indented lines such as `  author: me`.",
        ));
    };
    let not_text: Vec<&String> = map
        .iter()
        .filter(|(_, value)| !value.is_string())
        .map(|(key, _)| key)
        .collect();
    let first = not_text.first()?;
    let keys: Vec<String> = not_text
        .iter()
        .map(|key| format!("metadata.{key}"))
        .collect();
    Some(Finding::error(
        Rule::Metadata,
        format!(
            "{} must be text, but {} not.",
            keys.join(", "),
            if keys.len() == 1 { "it is" } else { "they are" }
        ),
        format!(
            "Quote the value, e.g. `  {first}: \"{}\"`.",
            plain_value(&map[first.as_str()])
        ),
    ))
}

fn validate_allowed_tools(value: &Value) -> Option<Finding> {
    let valid = match value {
        Value::String(_) => true,
        Value::Array(items) => items.iter().all(Value::is_string),
        _ => false,
    };
    (!valid).then(|| {
        Finding::error(
            Rule::AllowedTools,
            format!(
                "'allowed-tools' is {}, but it must be a space-separated string or a list of \
                 strings.",
                describe(value)
            ),
            "Write e.g. `allowed-tools: Bash(git:*) Read`.",
        )
    })
}

/// Body size guidance (agents load the whole body when the skill triggers, so a long body
/// costs context on every use) and the body's links.
pub fn validate_body(body: &str) -> Vec<Finding> {
    let mut findings = body_size(body);
    findings.extend(control_characters("body", body));
    if !body.trim().is_empty() {
        findings.extend(validate_links(body, None));
    }
    findings
}

/// The rules an optimizer's candidate must keep, given the files bundled with the skill
/// (relative paths): the body's size guidance, and links that stay inside the skill folder and
/// point at files it has. Only the body of a candidate changes, so its frontmatter is not
/// checked again. A link that leaves the folder or points at a file the skill does not have
/// is an error here, not a warning: the model invented it, and the deployed skill would send
/// the agent looking for nothing.
pub fn validate_candidate(body: &str, files: &[&str]) -> Vec<Finding> {
    let mut findings = body_size(body);
    findings.extend(control_characters("body", body));
    for mut finding in validate_links(body, Some(files)) {
        if matches!(finding.rule, Rule::BrokenLink | Rule::LinkOutside) {
            finding.severity = Severity::Error;
        }
        findings.push(finding);
    }
    findings.sort_by_key(|finding| finding.severity);
    findings
}

/// Whether a character is a control character that is not text: C0 controls but the line
/// feed and the tab (a carriage return only before a line feed), DEL, and C1 controls.
fn is_control(c: char, next: Option<char>) -> bool {
    match c {
        '\n' | '\t' => false,
        '\r' => next != Some('\n'),
        c => c.is_control(),
    }
}

/// An error naming the first control character of `text` (`field` is `body` or
/// `description`) and its line, if it has one.
fn control_characters(field: &str, text: &str) -> Option<Finding> {
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while let Some(c) = chars.next() {
        if is_control(c, chars.peek().copied()) {
            return Some(Finding::error(
                Rule::ControlCharacters,
                format!(
                    "The {field} holds the control character U+{:04X} (line {line} of it): an escape sequence a terminal acts on (clearing the screen, planting a link), not text.",
                    u32::from(c)
                ),
                "Remove it; write what it stood for in plain words.",
            ));
        }
        if c == '\n' {
            line += 1;
        }
    }
    None
}

fn body_size(body: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    if body.trim().is_empty() {
        findings.push(Finding::warning(
            Rule::BodyEmpty,
            "The body is empty: the agent gets the description and no instructions.",
            "Write the instructions below the closing '---'.",
        ));
        return findings;
    }
    let lines = body.lines().count();
    if lines > BODY_MAX_LINES {
        findings.push(Finding::warning(
            Rule::BodyLines,
            format!("The body is {lines} lines long; the spec advises under {BODY_MAX_LINES}."),
            "Move detailed material into files under references/ and link them from the body.",
        ));
    }
    let tokens = body.chars().count() / 4;
    if tokens > BODY_MAX_TOKENS {
        findings.push(Finding::warning(
            Rule::BodyTokens,
            format!("The body is about {tokens} tokens; the spec advises under {BODY_MAX_TOKENS}."),
            "Move detailed material into files under references/ and link them from the body.",
        ));
    }
    findings
}

/// Checks the paths of the files bundled with a skill (relative to its folder, `/`-separated)
/// and the body's relative links against them.
pub fn validate_files(skill: &Skill, paths: &[&str]) -> Vec<Finding> {
    let mut findings: Vec<Finding> = paths
        .iter()
        .filter_map(|path| validate_file_path(path))
        .collect();
    for path in paths {
        let depth = path.split('/').count() - 1;
        if path.starts_with("references/") && depth > 1 {
            findings.push(Finding::warning(
                Rule::ReferenceDepth,
                format!("{path} is more than one folder below SKILL.md."),
                "Keep referenced files directly in references/ so agents find them from \
                 SKILL.md in one step.",
            ));
        }
    }
    findings.extend(
        validate_links(&skill.body, Some(paths))
            .into_iter()
            .filter(|finding| finding.rule == Rule::BrokenLink),
    );
    findings.sort_by_key(|finding| finding.severity);
    findings
}

/// Checks one bundled file path: relative, inside the folder, no `..`, `/` separators.
pub fn validate_file_path(path: &str) -> Option<Finding> {
    let fix = "Use a relative path inside the skill folder with '/' separators, e.g. \
               `references/guide.md`.";
    let problem = match skill_factory_io::path::check(path) {
        Err(problem) => Some(problem.to_string()),
        Ok(()) if path == "SKILL.md" => Some("would overwrite the skill's own SKILL.md".into()),
        Ok(()) => None,
    };
    problem.map(|problem| {
        Finding::error(
            Rule::FilePath,
            format!("The bundled file path {path:?} {problem}."),
            fix,
        )
    })
}

/// Relative link targets of Markdown links `[text](target)` in the body. With `files`, links
/// to files the bundle lacks are reported too.
fn validate_links(body: &str, files: Option<&[&str]>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for target in link_targets(body) {
        if target.contains("://")
            || target.starts_with('#')
            || target.starts_with("mailto:")
            || target.is_empty()
        {
            continue;
        }
        let path = target.split('#').next().unwrap_or_default();
        let path = path.strip_prefix("./").unwrap_or(path);
        if path.is_empty() {
            continue;
        }
        if path.starts_with('/') || path.starts_with('~') || path.split('/').any(|p| p == "..") {
            findings.push(Finding::warning(
                Rule::LinkOutside,
                format!(
                    "The body links to {target:?}, outside the skill folder; once installed \
                     elsewhere the link points at nothing."
                ),
                "Copy the file into the skill folder (e.g. references/) and link it relatively.",
            ));
            continue;
        }
        if path.split('/').count() > 2 {
            findings.push(Finding::warning(
                Rule::ReferenceDepth,
                format!("The body links to {path}, more than one folder below SKILL.md."),
                "Keep referenced files one level deep, e.g. references/<file>.",
            ));
        }
        if let Some(files) = files
            && !files.contains(&path)
            && !files
                .iter()
                .any(|file| file.starts_with(&format!("{path}/")))
        {
            findings.push(Finding::warning(
                Rule::BrokenLink,
                format!("The body links to {path}, which the skill folder does not have."),
                format!("Add {path} to the skill folder or fix the link."),
            ));
        }
    }
    findings
}

/// The targets of inline Markdown links: `](target)` or `](target "title")`.
fn link_targets(body: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        let end = after.find(')').unwrap_or(after.len());
        let inside = after[..end].trim();
        let target = inside
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .trim_start_matches('<')
            .trim_end_matches('>');
        if !target.is_empty() {
            targets.push(target);
        }
        rest = &after[end.min(after.len())..];
    }
    targets
}

/// A value's kind, for messages.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "empty".to_owned(),
        Value::Bool(flag) => format!("the boolean {flag}"),
        Value::Number(number) => format!("the number {number}"),
        Value::String(_) => "text".to_owned(),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "a mapping".to_owned(),
    }
}

/// A scalar as the user would have typed it, for a quoting suggestion.
fn plain_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn skill(name: &str, description: &str, body: &str) -> Skill {
        Skill::new(name, description, body)
    }

    fn with_key(key: &str, value: Value) -> Skill {
        let mut skill = skill("my-skill", "Does a thing. Use when asked.", "Body.");
        skill.extra.insert(key.to_owned(), value);
        skill
    }

    fn rules(findings: &[Finding]) -> Vec<(Severity, &'static str)> {
        findings
            .iter()
            .map(|finding| (finding.severity, finding.rule.code()))
            .collect()
    }

    #[test]
    fn slug_follows_the_reference_rules() {
        assert_eq!(slugify("My Skill!").as_deref(), Ok("my-skill"));
        assert_eq!(slugify("Hello World 2!").as_deref(), Ok("hello-world-2"));
        assert_eq!(slugify("  a__b--c  ").as_deref(), Ok("a-b-c"));
        assert_eq!(slugify("Café").as_deref(), Ok("caf"));
        assert_eq!(slugify("my-skill").as_deref(), Ok("my-skill"));
    }

    #[test]
    fn slug_of_a_name_without_letters_or_digits_is_an_error() {
        let error = slugify("!!!").expect_err("no slug");
        assert_eq!(error.name, "!!!");
        assert!(error.to_string().contains("name: my-skill"));
    }

    #[test]
    fn valid_skill_has_no_findings() {
        let mut skill = skill(
            "pdf-form-filler-2",
            "Fills PDF forms. Use when...",
            "Do it.",
        );
        skill.extra.insert("license".into(), json!("MIT"));
        skill
            .extra
            .insert("compatibility".into(), json!("Requires poppler"));
        skill
            .extra
            .insert("metadata".into(), json!({"author": "me", "version": "1.0"}));
        skill
            .extra
            .insert("allowed-tools".into(), json!("Bash(git:*) Read"));
        assert_eq!(validate_skill(&skill), vec![]);
    }

    #[test]
    fn name_of_64_characters_is_valid_and_65_is_not() {
        assert!(validate_name(&"a".repeat(64)).is_empty());
        let findings = validate_name(&"a".repeat(65));
        assert_eq!(rules(&findings), vec![(Severity::Error, "name-length")]);
        assert!(findings[0].message.contains("65 characters"));
    }

    #[test]
    fn empty_name_breaks_the_length_rule() {
        assert_eq!(
            rules(&validate_name("")),
            vec![(Severity::Error, "name-length")]
        );
    }

    #[test]
    fn uppercase_and_punctuation_in_name_suggest_the_slug() {
        let findings = validate_name("My Skill!");
        assert_eq!(rules(&findings), vec![(Severity::Error, "name-characters")]);
        assert!(findings[0].message.contains("\"My Skill!\""));
        assert!(
            findings[0].message.contains("'M', ' ', 'S', '!'"),
            "{}",
            findings[0].message
        );
        assert!(
            findings[0].fix.contains("`name: my-skill`"),
            "{}",
            findings[0].fix
        );
    }

    #[test]
    fn underscore_and_non_ascii_letters_are_not_name_characters() {
        assert_eq!(
            rules(&validate_name("my_skill")),
            vec![(Severity::Error, "name-characters")]
        );
        assert_eq!(
            rules(&validate_name("café")),
            vec![(Severity::Error, "name-characters")]
        );
    }

    #[test]
    fn leading_trailing_and_double_hyphens_are_rejected() {
        for name in ["-skill", "skill-", "my--skill"] {
            let findings = validate_name(name);
            assert_eq!(
                rules(&findings),
                vec![(Severity::Error, "name-hyphens")],
                "{name}"
            );
            assert!(findings[0].fix.contains("name: "), "{name}");
        }
    }

    #[test]
    fn name_must_equal_the_folder_name() {
        let skill = skill("my-skill", "d", "b");
        assert_eq!(validate_folder_name(&skill, "my-skill"), None);
        let finding = validate_folder_name(&skill, "other").expect("mismatch is found");
        assert_eq!(finding.rule, Rule::NameMatchesFolder);
        assert!(finding.message.contains("\"other\""));
        assert!(finding.fix.contains("Rename the folder"));
    }

    #[test]
    fn missing_or_blank_description_is_an_error_saying_what_to_write() {
        for description in ["", "  \n "] {
            let findings = validate_skill(&skill("s", description, "b"));
            assert_eq!(
                rules(&findings),
                vec![(Severity::Error, "description-required")]
            );
            assert!(findings[0].message.contains("'description'"));
            assert!(findings[0].fix.contains("description: "));
        }
    }

    #[test]
    fn description_of_1024_characters_is_valid_and_1025_is_not() {
        assert!(validate_skill(&skill("s", &"d".repeat(1024), "b")).is_empty());
        let findings = validate_skill(&skill("s", &"d".repeat(1025), "b"));
        assert_eq!(
            rules(&findings),
            vec![(Severity::Error, "description-length")]
        );
        assert!(findings[0].message.contains("1025 characters"));
    }

    #[test]
    fn angle_brackets_in_description_are_an_error() {
        let findings = validate_skill(&skill("s", "Use for <html> pages", "b"));
        assert_eq!(
            rules(&findings),
            vec![(Severity::Error, "description-angle-brackets")]
        );
    }

    #[test]
    fn unknown_key_suggests_metadata_or_the_closest_key() {
        let findings = validate_skill(&with_key("version", json!("1.0")));
        assert_eq!(rules(&findings), vec![(Severity::Error, "unknown-key")]);
        assert!(findings[0].message.contains("'version'"));
        assert!(findings[0].fix.contains("metadata:"), "{}", findings[0].fix);

        let findings = validate_skill(&with_key("allowed_tools", json!("Read")));
        assert!(
            findings[0].fix.contains("Did you mean 'allowed-tools'?"),
            "{}",
            findings[0].fix
        );
    }

    #[test]
    fn claude_code_keys_are_warnings_not_errors() {
        for key in CLAUDE_CODE_KEYS {
            let findings = validate_skill(&with_key(key, json!(true)));
            assert_eq!(
                rules(&findings),
                vec![(Severity::Warning, "agent-specific-key")],
                "{key}"
            );
            assert!(!has_errors(&findings));
            assert!(findings[0].message.contains("Claude Code"));
        }
    }

    #[test]
    fn license_must_be_text() {
        let findings = validate_skill(&with_key("license", json!(2)));
        assert_eq!(rules(&findings), vec![(Severity::Error, "license")]);
        assert!(findings[0].message.contains("the number 2"));
    }

    #[test]
    fn compatibility_is_text_of_at_most_500_characters() {
        assert!(validate_skill(&with_key("compatibility", json!("x".repeat(500)))).is_empty());
        for value in [json!("x".repeat(501)), json!(""), json!(["a"])] {
            assert_eq!(
                rules(&validate_skill(&with_key("compatibility", value))),
                vec![(Severity::Error, "compatibility")]
            );
        }
    }

    #[test]
    fn metadata_values_must_be_text_and_the_fix_quotes_them() {
        let findings = validate_skill(&with_key("metadata", json!({"version": 1.5})));
        assert_eq!(rules(&findings), vec![(Severity::Error, "metadata")]);
        assert!(findings[0].message.contains("metadata.version"));
        assert!(
            findings[0].fix.contains("version: \"1.5\""),
            "{}",
            findings[0].fix
        );
        assert_eq!(
            rules(&validate_skill(&with_key("metadata", json!("author")))),
            vec![(Severity::Error, "metadata")]
        );
    }

    #[test]
    fn allowed_tools_is_a_string_or_a_list_of_strings() {
        assert!(validate_skill(&with_key("allowed-tools", json!(["Read", "Bash"]))).is_empty());
        assert_eq!(
            rules(&validate_skill(&with_key("allowed-tools", json!([1])))),
            vec![(Severity::Error, "allowed-tools")]
        );
    }

    #[test]
    fn long_body_warns_about_lines_and_tokens() {
        let lines = "step\n".repeat(BODY_MAX_LINES + 1);
        assert_eq!(
            rules(&validate_body(&lines)),
            vec![(Severity::Warning, "body-lines")]
        );
        assert!(validate_body(&"step\n".repeat(BODY_MAX_LINES)).is_empty());
        let words = "word ".repeat(BODY_MAX_TOKENS);
        let findings = validate_body(&words);
        assert_eq!(rules(&findings), vec![(Severity::Warning, "body-tokens")]);
        assert!(findings[0].fix.contains("references/"));
    }

    #[test]
    fn empty_body_is_a_warning() {
        assert_eq!(
            rules(&validate_body("  ")),
            vec![(Severity::Warning, "body-empty")]
        );
    }

    #[test]
    fn control_characters_in_the_description_or_the_body_are_errors() {
        let osc8 = "See \u{1b}]8;;https://evil.example\u{7}here\u{1b}]8;;\u{7} for details.";
        let described = skill("s", "Clears \u{1b}[2J the screen.", "Body.");
        assert!(
            validate_skill(&described)
                .iter()
                .any(|f| f.rule == Rule::ControlCharacters && f.message.contains("U+001B")),
            "{:?}",
            validate_skill(&described)
        );
        for findings in [
            validate_body(osc8),
            validate_candidate(osc8, &[]),
            validate_body("Line.\u{9b}31m"),
        ] {
            assert!(
                findings
                    .iter()
                    .any(|f| f.rule == Rule::ControlCharacters && f.severity == Severity::Error),
                "{findings:?}"
            );
        }
        for text in ["Tabs\tand lines\n", "Windows lines\r\nare text\r\n"] {
            assert!(
                !validate_body(text)
                    .iter()
                    .any(|f| f.rule == Rule::ControlCharacters),
                "{text:?}"
            );
        }
    }

    #[test]
    fn errors_come_before_warnings() {
        let mut skill = skill("Bad Name", "d", "");
        skill.extra.insert("model".into(), json!("x"));
        let severities: Vec<Severity> = validate_skill(&skill)
            .iter()
            .map(|finding| finding.severity)
            .collect();
        assert_eq!(
            severities,
            vec![Severity::Error, Severity::Warning, Severity::Warning]
        );
    }

    #[test]
    fn bundled_paths_that_escape_or_are_absolute_are_errors() {
        for (path, words) in [
            ("../secret", "'..'"),
            ("references/../../x", "'..'"),
            ("/etc/passwd", "absolute"),
            ("C:/x", "absolute"),
            ("references\\x.md", "'\\'"),
            ("a//b", "empty"),
            ("", "empty"),
            ("SKILL.md", "own SKILL.md"),
        ] {
            let finding = validate_file_path(path).unwrap_or_else(|| panic!("{path:?} refused"));
            assert_eq!(finding.rule, Rule::FilePath);
            assert!(
                finding.message.contains(words),
                "{path:?}: {}",
                finding.message
            );
            assert!(finding.fix.contains("relative path"));
        }
        assert_eq!(validate_file_path("references/guide.md"), None);
        assert_eq!(validate_file_path("scripts/run.py"), None);
    }

    #[test]
    fn deep_reference_files_and_broken_links_are_warnings() {
        let skill = skill(
            "s",
            "d",
            "See [guide](references/guide.md), [form](references/forms/a.md#top), \
             [gone](references/missing.md) and [site](https://example.com).",
        );
        let findings = validate_files(
            &skill,
            &[
                "references/guide.md",
                "references/forms/a.md",
                "scripts/x.sh",
            ],
        );
        assert_eq!(
            rules(&findings),
            vec![
                (Severity::Warning, "reference-depth"),
                (Severity::Warning, "broken-link")
            ]
        );
        assert!(findings[1].message.contains("references/missing.md"));
    }

    #[test]
    fn links_outside_the_skill_folder_are_warnings() {
        let findings = validate_body("Read [this](../other/SKILL.md) and [that](/etc/x).");
        assert_eq!(
            rules(&findings),
            vec![
                (Severity::Warning, "link-outside"),
                (Severity::Warning, "link-outside")
            ]
        );
    }

    #[test]
    fn a_candidate_may_link_only_to_files_the_skill_has() {
        let files = ["references/guide.md", "scripts/run.sh"];
        assert!(
            validate_candidate(
                "See [the guide](references/guide.md) and run [this](scripts/run.sh).",
                &files
            )
            .is_empty()
        );
        let findings = validate_candidate(
            "See [a](references/missing.md), [b](../x.md), [c](references/a/b.md), [web](https://x.y/z).",
            &files,
        );
        assert_eq!(
            rules(&findings),
            vec![
                (Severity::Error, "broken-link"),
                (Severity::Error, "link-outside"),
                (Severity::Error, "broken-link"),
                (Severity::Warning, "reference-depth"),
            ]
        );
        let long = "step\n".repeat(BODY_MAX_LINES + 1);
        assert_eq!(
            rules(&validate_candidate(&long, &files)),
            vec![(Severity::Warning, "body-lines")]
        );
    }

    #[test]
    fn finding_prints_severity_rule_message_and_fix() {
        let finding = Finding::error(Rule::NameHyphens, "Bad.", "Do this.");
        assert_eq!(
            finding.to_string(),
            "error [name-hyphens]: Bad. Fix: Do this."
        );
        let finding = Finding::warning(Rule::Frontmatter, "Says it all.", "");
        assert_eq!(finding.to_string(), "warning [frontmatter]: Says it all.");
    }
}
