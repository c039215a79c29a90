//! The mock's router: whether an agent loads a skill, and which, decided from the skill
//! listing the agent sends, so that trigger runs ("does an agent load skill X for query Q?")
//! can run the real Claude Code and Codex CLIs against the mock.
//!
//! # The listing
//!
//! A listing is found in any system, developer or user text of the request: a line starting
//! `The following skills are available` (Claude Code's "… for use with the Skill tool:", and
//! our own routing prompt's "The following skills are available:") or a line `### Available
//! skills` (Codex), then, blank lines allowed before the first, entry lines `- <name>:
//! <description>`, up to the first line that is not one. Codex ends an entry with `(file:
//! r1/<name>/SKILL.md)`: that is the skill's file, not part of its description, and a roots
//! table (lines ``- `r1` = `/abs/path` ``) in the same text expands `r1` into a directory.
//!
//! The query is the last user text part that does not start with `<` (Claude Code puts a
//! `<system-reminder>` part before it, Codex an `<environment_context>` message), without the
//! listing's lines when the listing is in that same part.
//!
//! # The decision
//!
//! Words are the lowercase runs of ASCII letters and digits of 4 characters or more, a
//! trailing `s` taken off those of 5 or more (receipts → receipt), and [`STOPWORDS`] left
//! out. A description's negative part is its sentences starting "Not for" or "Do not use"
//! (case aside; a sentence ends at `.`, `!`, `?` or the end); the rest is its positive
//! part. A skill is excluded when the query shares a word with its negative part; otherwise
//! it scores the number of distinct query words in its positive part. The router picks the
//! best non-excluded skill (the first listed on ties) when it scores 1 or more, else none.
//! With [`Variation::flips`](crate::Variation::flips) above 0 the decision flips, with that
//! chance, between that skill and none, as a sampled model's would.
//!
//! # The reply
//!
//! - Anthropic, with a `Skill` tool offered (Claude Code): a `Skill` tool call with
//!   `{"skill": <name>}`; once a tool result is in the conversation, `Done.`; `Done.` too
//!   when no skill is picked.
//! - Responses, with an `exec_command` function offered (Codex): an `exec_command` call with
//!   `{"cmd": "cat <the skill's SKILL.md>"}`; after a function call's output, a message
//!   `Done.`; a message `Done.` too when no skill is picked.
//! - Any other request: the picked skill's name alone, or `none`.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::json;

use crate::wire::{Conversation, Format, Reply};

/// What an agent is told once it has done what it was asked, and when it loads no skill.
pub const DONE: &str = "Done.";

/// The reply naming no skill, to a request that is not an agent's.
pub const NONE: &str = "none";

/// Words too common to tell skills apart. Apostrophes split words, so a contraction such as
/// "it's" never becomes a word and needs no entry.
pub const STOPWORDS: &[&str] = &[
    "this", "that", "what", "when", "with", "from", "have", "your", "they", "them", "there",
    "their", "about", "into", "does", "should", "would", "could", "which", "please", "need",
    "want", "help", "make", "using", "used", "user", "users", "asks", "request", "requests",
    "skill", "skills", "only", "other", "also", "some", "will", "just", "like", "more", "than",
    "then", "here", "were", "been", "each", "every", "over", "very", "much", "many", "such",
    "these", "those", "where", "while",
];

/// How Claude Code's listing begins (and our routing prompt's, which says less after it).
const LISTING_START: &str = "The following skills are available";
/// Codex's listing header.
const CODEX_LISTING: &str = "### Available skills";
/// How Codex ends an entry: the skill's file.
const FILE_MARK: &str = " (file: ";

/// One skill of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedSkill {
    /// Its name.
    pub name: String,
    /// Its description, without Codex's file note.
    pub description: String,
    /// Its SKILL.md as Codex lists it, expanded through the roots table when it names the
    /// root; `None` in listings without paths.
    pub path: Option<String>,
}

impl ListedSkill {
    /// The SKILL.md an agent reads to load it: the listed path, else `<name>/SKILL.md`.
    pub fn skill_file(&self) -> String {
        self.path
            .clone()
            .unwrap_or_else(|| format!("{}/SKILL.md", self.name))
    }
}

/// The first skill listing in the conversation's system, developer and user texts.
pub fn listing(conversation: &Conversation) -> Option<Vec<ListedSkill>> {
    conversation
        .context
        .iter()
        .find_map(|text| parse_listing(text))
}

/// The skills `text` lists (its first listing with at least one entry), if it has a listing.
pub fn parse_listing(text: &str) -> Option<Vec<ListedSkill>> {
    find_listing(text).map(|(skills, _)| skills)
}

/// The first listing of `text` with at least one entry, and the lines it takes (its header
/// to its last entry).
fn find_listing(text: &str) -> Option<(Vec<ListedSkill>, Range<usize>)> {
    let lines: Vec<&str> = text.lines().collect();
    let roots = roots(&lines);
    lines.iter().enumerate().find_map(|(header, line)| {
        let line = line.trim();
        if !line.starts_with(LISTING_START) && line != CODEX_LISTING {
            return None;
        }
        let mut skills = Vec::new();
        let mut end = header + 1;
        for (at, line) in lines.iter().enumerate().skip(header + 1) {
            let line = line.trim();
            if line.is_empty() && skills.is_empty() {
                continue;
            }
            let Some(skill) = entry(line, &roots) else {
                break;
            };
            skills.push(skill);
            end = at + 1;
        }
        (!skills.is_empty()).then_some((skills, header..end))
    })
}

/// Codex's roots table: ``- `r1` = `/abs/path` `` lines, root name → directory.
fn roots(lines: &[&str]) -> HashMap<String, String> {
    lines
        .iter()
        .filter_map(|line| {
            let (root, directory) = line
                .trim()
                .strip_prefix("- `")?
                .strip_suffix('`')?
                .split_once("` = `")?;
            Some((
                root.to_string(),
                directory.trim_end_matches('/').to_string(),
            ))
        })
        .collect()
}

/// A listing's entry line `- <name>: <description>`, Codex's file note taken off the
/// description (and its root expanded).
fn entry(line: &str, roots: &HashMap<String, String>) -> Option<ListedSkill> {
    let rest = line.strip_prefix("- ")?;
    // Plugin skills are named `plugin:skill`, so a name ends at the first colon and space.
    let (name, description) = rest
        .split_once(": ")
        .or_else(|| rest.strip_suffix(':').map(|name| (name, "")))?;
    if name.is_empty() || name.contains(char::is_whitespace) || name.starts_with('`') {
        return None;
    }
    let description = description.trim();
    let (description, path) = match description
        .strip_suffix(')')
        .and_then(|d| d.rsplit_once(FILE_MARK))
    {
        Some((description, path)) => (description.trim_end(), Some(expand(path.trim(), roots))),
        None => (description, None),
    };
    Some(ListedSkill {
        name: name.to_string(),
        description: description.to_string(),
        path,
    })
}

/// `r1/<name>/SKILL.md` with `r1` replaced by its directory, when the roots table has it.
fn expand(path: &str, roots: &HashMap<String, String>) -> String {
    path.split_once('/')
        .and_then(|(root, rest)| roots.get(root).map(|dir| format!("{dir}/{rest}")))
        .unwrap_or_else(|| path.to_string())
}

/// The query the router reads: [`Conversation::query`], without the lines of a listing it
/// holds (a routing prompt may list the skills and ask in one message).
pub fn query_of(conversation: &Conversation) -> String {
    let query = &conversation.query;
    match find_listing(query) {
        Some((_, listed)) => query
            .lines()
            .enumerate()
            .filter(|(at, _)| !listed.contains(at))
            .map(|(_, line)| line)
            .collect::<Vec<_>>()
            .join("\n"),
        None => query.clone(),
    }
}

/// The words of `text` the router compares, each once, in order of first appearance: for
/// each, the word as written (lowercase) and its stem (what is compared).
pub fn word_forms(text: &str) -> Vec<(String, String)> {
    let lower = text.to_lowercase();
    let mut forms: Vec<(String, String)> = Vec::new();
    for word in lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 4)
    {
        let stem = match word.strip_suffix('s') {
            Some(stem) if word.len() >= 5 => stem,
            _ => word,
        };
        if STOPWORDS.contains(&word) || STOPWORDS.contains(&stem) {
            continue;
        }
        if !forms.iter().any(|(_, known)| known == stem) {
            forms.push((word.to_string(), stem.to_string()));
        }
    }
    forms
}

/// The router's words of `text` (stems), each once, in order of first appearance.
pub fn router_words(text: &str) -> Vec<String> {
    word_forms(text).into_iter().map(|(_, stem)| stem).collect()
}

/// A description's positive part and negative part (its sentences starting "Not for" or "Do
/// not use").
pub fn split_description(description: &str) -> (String, String) {
    let mut positive = String::new();
    let mut negative = String::new();
    for sentence in sentences(description) {
        let lower = sentence.trim_start().to_lowercase();
        if lower.starts_with("not for") || lower.starts_with("do not use") {
            negative.push_str(sentence);
        } else {
            positive.push_str(sentence);
        }
    }
    (positive, negative)
}

/// `text` cut after each `.`, `!` and `?`, the rest as the last sentence.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    let mut sentences = Vec::new();
    let mut start = 0;
    for (at, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '?') {
            sentences.push(&text[start..at + 1]);
            start = at + 1;
        }
    }
    if start < text.len() {
        sentences.push(&text[start..]);
    }
    sentences
}

/// The best candidate for `query` and whether the router picks it: the non-excluded skill
/// with the highest score (the first listed on ties; the first listed when all are
/// excluded), picked when it scores 1 or more. `None` for an empty list.
fn best(skills: &[ListedSkill], query: &str) -> Option<(usize, bool)> {
    let query = router_words(query);
    let rank = |skill: &ListedSkill| {
        let (positive, negative) = split_description(&skill.description);
        let negative = router_words(&negative);
        if query.iter().any(|word| negative.contains(word)) {
            return None;
        }
        let positive = router_words(&positive);
        Some(query.iter().filter(|word| positive.contains(word)).count())
    };
    let mut best: Option<(usize, Option<usize>)> = None;
    for (index, skill) in skills.iter().enumerate() {
        let score = rank(skill);
        if best.is_none_or(|(_, top)| score > top) {
            best = Some((index, score));
        }
    }
    best.map(|(index, score)| (index, score.is_some_and(|s| s >= 1)))
}

/// The skill the router picks for `query` (its index in `skills`), without noise.
pub fn route(skills: &[ListedSkill], query: &str) -> Option<usize> {
    best(skills, query).and_then(|(index, picked)| picked.then_some(index))
}

/// [`route`] with noise: with the chance `flips` (drawn afresh, unseeded) the decision flips
/// between the best candidate and none.
pub fn decide(skills: &[ListedSkill], query: &str, flips: f64) -> Option<usize> {
    let (index, picked) = best(skills, query)?;
    let flipped = flips > 0.0 && fastrand::f64() < flips;
    (picked != flipped).then_some(index)
}

/// The agents whose skill loading the mock plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agent {
    /// Claude Code: loads a skill through its `Skill` tool.
    ClaudeCode,
    /// Codex: loads a skill by reading its SKILL.md through `exec_command`.
    Codex,
}

/// The tool Claude Code loads skills with.
const CLAUDE_TOOL: &str = "Skill";
/// The tool Codex runs commands with.
const CODEX_TOOL: &str = "exec_command";

/// The router's reply to a request carrying a skill listing (see the module docs); `None`
/// when it carries none, for the responder to answer.
pub fn routed_reply(format: Format, conversation: &Conversation, flips: f64) -> Option<Reply> {
    let skills = listing(conversation)?;
    let offers = |tool: &str| conversation.tools.iter().any(|t| t == tool);
    let agent = match format {
        Format::Anthropic if offers(CLAUDE_TOOL) => Some(Agent::ClaudeCode),
        Format::Responses if offers(CODEX_TOOL) => Some(Agent::Codex),
        _ => None,
    };
    if agent.is_some() && conversation.tool_result {
        return Some(Reply::text(DONE));
    }
    let chosen = decide(&skills, &query_of(conversation), flips).map(|index| &skills[index]);
    Some(match (agent, chosen) {
        (Some(Agent::ClaudeCode), Some(skill)) => {
            Reply::tool_call(CLAUDE_TOOL, json!({"skill": skill.name}))
        }
        (Some(Agent::Codex), Some(skill)) => Reply::tool_call(
            CODEX_TOOL,
            json!({"cmd": format!("cat {}", shell_word(&skill.skill_file()))}),
        ),
        (Some(_), None) => Reply::text(DONE),
        (None, chosen) => Reply::text(chosen.map_or(NONE, |skill| skill.name.as_str())),
    })
}

/// `word` as one shell word: as is when it has nothing a shell would read, else quoted.
fn shell_word(word: &str) -> String {
    if word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Block, parse_request};
    use serde_json::{Value, json};

    const CLAUDE_LISTING: &str = "The following skills are available for use with the Skill tool:\n\n\
        - receipt-totals: Add up receipts and invoices into a monthly expense report.\n\
        - pdf-forms: Fill in PDF forms field by field.\n";

    /// A request shaped as Claude Code sends it: a reminder part before the query, then a
    /// system-role message holding `listing`, and the `Skill` tool among others.
    fn claude_request(query: &str, listing: &str) -> Value {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true,
            "system": [{"type": "text", "text": "You are Claude Code."}],
            "tools": [{"name": "Bash", "input_schema": {}}, {"name": "Skill", "input_schema": {}}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>\nContext follows.\n</system-reminder>"},
                    {"type": "text", "text": query}]},
                {"role": "system", "content": listing}]})
    }

    fn routed(format: Format, body: &Value) -> Reply {
        let conversation = parse_request(format, body).unwrap();
        routed_reply(format, &conversation, 0.0).unwrap()
    }

    fn skill(name: &str, description: &str) -> ListedSkill {
        ListedSkill {
            name: name.to_string(),
            description: description.to_string(),
            path: None,
        }
    }

    #[test]
    fn words_are_long_lowercase_runs_without_stopwords_and_plural_s() {
        assert_eq!(
            router_words("Please help me TOTAL my receipts, it's urgent! Receipt 2024 bus"),
            ["total", "receipt", "urgent", "2024"]
        );
        assert_eq!(
            word_forms("Invoices and invoice"),
            [("invoices".to_string(), "invoice".to_string())]
        );
    }

    #[test]
    fn a_description_splits_into_what_it_is_for_and_not_for() {
        let (positive, negative) =
            split_description("Sorts receipts. not for taxes! Do not use it for photos? Ends");
        assert_eq!(positive, "Sorts receipts. Ends");
        assert_eq!(negative, " not for taxes! Do not use it for photos?");
    }

    #[test]
    fn claude_codes_listing_is_read_up_to_the_first_line_that_is_no_entry() {
        let text = format!("{CLAUDE_LISTING}</system-reminder>\n- stray: not listed");
        let skills = parse_listing(&text).unwrap();
        assert_eq!(
            skills,
            [
                skill(
                    "receipt-totals",
                    "Add up receipts and invoices into a monthly expense report."
                ),
                skill("pdf-forms", "Fill in PDF forms field by field."),
            ]
        );
        assert_eq!(
            parse_listing("The following skills are available:\nnone here"),
            None
        );
    }

    #[test]
    fn codex_entries_lose_their_file_note_and_expand_their_root() {
        let text = "## Skills\n- `r1` = `/home/u/proj/.agents/skills/`\n### Available skills\n\
                    - receipt-totals: Add up receipts. (file: r1/receipt-totals/SKILL.md)\n\
                    - other: Elsewhere. (file: r9/other/SKILL.md)\n### How to use skills";
        let skills = parse_listing(text).unwrap();
        assert_eq!(skills[0].description, "Add up receipts.");
        assert_eq!(
            skills[0].skill_file(),
            "/home/u/proj/.agents/skills/receipt-totals/SKILL.md"
        );
        assert_eq!(skills[1].skill_file(), "r9/other/SKILL.md");
        assert_eq!(skill("bare", "").skill_file(), "bare/SKILL.md");
    }

    #[test]
    fn claude_code_loads_the_best_matching_skill_through_its_skill_tool() {
        let body = claude_request("Total my receipts for March", CLAUDE_LISTING);
        let reply = routed(Format::Anthropic, &body);
        assert_eq!(
            reply.blocks,
            [Block::ToolCall {
                name: "Skill".to_string(),
                input: json!({"skill": "receipt-totals"})
            }]
        );
        assert_eq!(reply.stop_reason(), "tool_use");
        // Once the tool ran, the agent is told it is done.
        let mut second = body.clone();
        second["messages"].as_array_mut().unwrap().extend([
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                       "name": "Skill", "input": {"skill": "receipt-totals"}}]}),
            json!({"role": "user", "content": [{"type": "tool_result",
                       "tool_use_id": "toolu_1", "content": "Launching skill"}]}),
        ]);
        assert_eq!(routed(Format::Anthropic, &second), Reply::text(DONE));
    }

    #[test]
    fn claude_code_loads_nothing_for_a_query_no_description_speaks_of() {
        let body = claude_request("What is the weather in Paris tomorrow?", CLAUDE_LISTING);
        assert_eq!(routed(Format::Anthropic, &body), Reply::text(DONE));
    }

    #[test]
    fn a_not_for_sentence_excludes_the_skill_that_would_have_won() {
        let query = "File my receipts with the tax filing";
        let listing = |first: &str| {
            format!(
                "The following skills are available for use with the Skill tool:\n\
                 - expenses: {first}\n- taxes: Prepares a tax filing.\n"
            )
        };
        let plain = listing("Sorts receipts into expense reports.");
        let tool = |reply: Reply| match &reply.blocks[..] {
            [Block::ToolCall { input, .. }] => input["skill"].clone(),
            _ => panic!("{reply:?}"),
        };
        // Without a negative part, the first of two equal scores wins.
        assert_eq!(
            tool(routed(Format::Anthropic, &claude_request(query, &plain))),
            "expenses"
        );
        let negative = listing("Sorts receipts into expense reports. Not for tax filings.");
        assert_eq!(
            tool(routed(Format::Anthropic, &claude_request(query, &negative))),
            "taxes"
        );
    }

    #[test]
    fn codex_reads_the_chosen_skills_file_by_its_expanded_path() {
        let developer = "## Skills\n- `r1` = `/projects/demo/.agents/skills`\n### Available skills\n\
            - receipt-totals: Add up receipts into a monthly expense report. (file: r1/receipt-totals/SKILL.md)\n\
            - pdf-forms: Fill in PDF forms. (file: r1/pdf-forms/SKILL.md)\n### How to use skills\n";
        let body = json!({"model": "gpt-5", "instructions": "You are Codex.", "stream": true,
            "tools": [{"type": "function", "name": "exec_command", "parameters": {}}],
            "input": [
                {"type": "message", "role": "developer",
                 "content": [{"type": "input_text", "text": developer}]},
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "<environment_context>\n<cwd>/projects/demo</cwd>\n</environment_context>"}]},
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "Make the monthly expense report"}]}]});
        let reply = routed(Format::Responses, &body);
        assert_eq!(
            reply,
            Reply::tool_call(
                "exec_command",
                json!({"cmd": "cat /projects/demo/.agents/skills/receipt-totals/SKILL.md"})
            )
        );
        let mut second = body.clone();
        second["input"].as_array_mut().unwrap().extend([
            json!({"type": "function_call", "call_id": "c1", "name": "exec_command",
                   "arguments": "{\"cmd\": \"cat x\"}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "# Skill"}),
        ]);
        assert_eq!(routed(Format::Responses, &second), Reply::text(DONE));
    }

    #[test]
    fn other_requests_get_the_name_alone_or_none() {
        let prompt = |query: &str| {
            json!({"model": "m", "messages": [{"role": "user", "content": format!(
                "The following skills are available:\n- receipt-totals: Totals receipts.\n- pdf-forms: Fills PDF forms.\n\nRequest: {query}\nAnswer with one name, or none.")}]})
        };
        let text = |body: Value| routed(Format::OpenAi, &body).text_of();
        assert_eq!(text(prompt("fill the forms of this PDF")), "pdf-forms");
        assert_eq!(text(prompt("book a flight to Rome")), NONE);
        // Claude Code's listing with no Skill tool offered: a name too.
        let mut body = claude_request("Total my receipts", CLAUDE_LISTING);
        body["tools"] = json!([]);
        assert_eq!(routed(Format::Anthropic, &body).text_of(), "receipt-totals");
    }

    #[test]
    fn requests_without_a_listing_are_left_to_the_responder() {
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let conversation = parse_request(Format::OpenAi, &body).unwrap();
        assert_eq!(routed_reply(Format::OpenAi, &conversation, 0.0), None);
    }

    #[test]
    fn noise_flips_the_decision_between_the_best_skill_and_none() {
        let skills = [skill("a", "Totals receipts."), skill("b", "Fills forms.")];
        assert_eq!(route(&skills, "total these receipts"), Some(0));
        assert_eq!(decide(&skills, "total these receipts", 1.0), None);
        assert_eq!(route(&skills, "fill the form"), Some(1));
        assert_eq!(route(&skills, "book a flight"), None);
        assert_eq!(
            decide(&skills, "book a flight", 1.0),
            Some(0),
            "the first on ties"
        );
        assert_eq!(decide(&[], "anything", 1.0), None);
    }

    #[test]
    fn a_path_a_shell_would_misread_is_quoted() {
        assert_eq!(shell_word("/a/b-c/SKILL.md"), "/a/b-c/SKILL.md");
        assert_eq!(shell_word("/my dir/it's"), r"'/my dir/it'\''s'");
    }
}
