//! Reflection: the prompt that shows the optimizer model how the current skill did, and the
//! parsing and checking of what it proposes.
//!
//! The prompt follows the reference tool's (§7.1 of the spec): the goal, the minibatch score,
//! the current body between `<CURRENT_SKILL_BODY>` tags, every minibatch rollout from worst to
//! best with its input, output, expected answer and feedback (each field cut at
//! [`FIELD_CHARS`]), the rewriting rules and the answer format (`<RATIONALE>` then
//! `<NEW_SKILL_BODY>`). Ours adds, after the rollouts, the edits already rejected in this run
//! and why (the [`REJECTED_SHOWN`] most recent, newest first), and keeps the whole prompt
//! under [`MAX_PROMPT_CHARS`] by leaving out the best-scoring rollouts first.
//!
//! The compact style ([`ReflectionStyle::Compact`]) is for small models that cannot follow
//! that format: the current instructions, the worst rollout with its feedback, the goal, and a
//! request for the new instructions alone, whose whole reply is the body.
//!
//! A proposal is rejected, with its reason, and never evaluated, when the call failed, the
//! answer was cut off at the token limit, it is empty, it lacks the body tags (full style), or
//! the body is not a skill body: empty, a whole SKILL.md with frontmatter, one that contains
//! the prompt's tags or repeats its answer-format placeholders, or longer than
//! [`body_limits`] allows.

use skill_factory_core::{Evaluation, Task};
use skill_factory_llm::{ChatRequest, ChatResponse, LlmError, StopReason};
use skill_factory_package::spec::{self, Finding, Rule};
use skill_factory_pycompat::repr::repr_str;

use crate::config::ReflectionStyle;
use crate::metric::text::{clip, py_strip};

/// The name of the description component ([`super::component`]).
const DESCRIPTION: &str = "description";

/// The rules of a prompt that rewrites the description: what agents read it for, and the
/// Agent Skills limits and honesty rule every candidate is held to.
const DESCRIPTION_RULES: [&str; 4] = [
    "- This is the skill's frontmatter description: the only text an agent reads to decide whether to load the skill. Say what the skill does and when to use it, in the words users use for such requests, and name the near misses it is not for.",
    "- Keep it general: describe kinds of request, never copy a request from the examples above.",
    "- Write one paragraph of plain text in the third person: at most 1024 characters, no angle brackets (< or >), no YAML.",
    "- Rows that say \"should have loaded, did not\" are requests it must claim; rows that say \"loaded for a query it should not\" are near misses it must rule out.",
];

/// The rule a blamed-component prompt adds: one part changed, the others kept.
pub const ONE_PART_RULE: &str = "- Change only the ONE part of the body most responsible for these failures (the text before the first `## ` heading, or one `## ` section) and copy every other part word for word.";

/// Output token limit of a proposal request (as the reference).
pub const PROPOSAL_MAX_TOKENS: u32 = 4096;

/// Output token limit of a compact proposal: new instructions, not a whole document.
pub const COMPACT_MAX_TOKENS: u32 = 512;

/// Characters kept of each rollout field in a compact prompt.
pub const COMPACT_FIELD_CHARS: usize = 300;

/// The answer format's placeholders: a body that repeats one copied the format, not a skill.
const FORMAT_PLACEHOLDERS: [&str; 4] = [
    "one or two sentences on what you changed and why",
    "the full improved skill body, in Markdown",
    "the full improved text of this part, in Markdown",
    "the new description",
];

/// Characters kept of each rollout field (input, output, expected, feedback) in the prompt.
pub const FIELD_CHARS: usize = 800;

pub use crate::metric::text::TRUNCATION_MARK;

/// Characters of a rationale kept as a history note.
pub const NOTE_CHARS: usize = 200;

/// Rejected edits shown in the prompt.
pub const REJECTED_SHOWN: usize = 5;

/// Upper bound on the prompt's length in characters (about 15k tokens): rollouts beyond it are
/// left out, best-scoring first, and always at least one is kept.
pub const MAX_PROMPT_CHARS: usize = 60_000;

/// Characters a proposed body may have at least (see [`body_limits`]).
pub const MAX_BODY_CHARS: usize = 20_000;

/// Lines a proposed body may have at least (the Agent Skills guidance: under 500 lines).
pub const MAX_BODY_LINES: usize = 500;

/// What the optimizer model is told about its role.
pub const SYSTEM_PROMPT: &str = "You optimize prompts. Your job is to improve a reusable \
SKILL document that an AI agent follows, so that the agent scores higher on an evaluation. \
Make targeted edits that generalize: never tailor the skill to the examples you are shown \
and never hard-code their answers. Keep the skill usable by any agent or harness. Keep \
what the skill is for, and fix the failure modes that the feedback reveals.";

/// Sampling temperature of the round's `index`-th proposal: 0.2 for the first, then 0.6,
/// 0.8 and 1.0 from the fourth on (as the reference).
pub fn proposal_temperature(index: usize) -> f64 {
    if index == 0 {
        0.2
    } else {
        (0.4 + 0.2 * index as f64).min(1.0)
    }
}

/// The goal when the config gives none.
pub fn default_goal(skill_name: &str) -> String {
    format!(
        "Improve the skill {} so that an agent following it scores higher on the evaluation metric.",
        repr_str(skill_name)
    )
}

/// The most characters and lines a proposed body may have: [`MAX_BODY_CHARS`] and
/// [`MAX_BODY_LINES`], or twice the seed's size when the seed is already larger.
pub fn body_limits(seed_body: &str) -> (usize, usize) {
    (
        MAX_BODY_CHARS.max(2 * seed_body.chars().count()),
        MAX_BODY_LINES.max(2 * seed_body.lines().count()),
    )
}

/// An edit tried in this run that did not become the best, for the prompt's memory.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectedEdit {
    /// The round it was proposed in.
    pub round: usize,
    /// Its candidate number.
    pub candidate: usize,
    /// What the model said it changed.
    pub rationale: String,
    /// Why it was rejected.
    pub reason: String,
}

/// What a reflection prompt is built from.
pub struct Reflection<'a> {
    /// The goal sentence (configured, or [`default_goal`]).
    pub goal: &'a str,
    /// The current skill body.
    pub body: &'a str,
    /// The current skill's evaluation on the minibatch.
    pub batch: &'a Evaluation,
    /// The minibatch tasks (for inputs and expected answers), by id.
    pub tasks: &'a [Task],
    /// Edits already rejected, most recent first.
    pub rejected: &'a [RejectedEdit],
    /// The body size limits, told to the model.
    pub limits: (usize, usize),
    /// When one component is rewritten: its name and the whole skill body it belongs to
    /// (`body` is then the component's text).
    pub component: Option<(&'a str, &'a str)>,
    /// Whether the model is to change one part of the body only, the one it blames for the
    /// failures (`gepa` with `component_selector: blamed`).
    pub one_part: bool,
    /// The protected names (`optimizer.protected`, normalized): a prompt for a whole body
    /// asks for their sections word for word, since a candidate that changes one is refused.
    pub protected: &'a [String],
}

impl Reflection<'_> {
    /// The prompt of `style`.
    pub fn prompt_for(&self, style: ReflectionStyle) -> String {
        match style {
            ReflectionStyle::Full => self.prompt(),
            ReflectionStyle::Compact => self.compact_prompt(),
        }
    }

    /// The compact prompt: the current instructions, the worst rollout with its expected
    /// answer and feedback, the goal, and what to reply.
    pub fn compact_prompt(&self) -> String {
        let lead = match self.component {
            Some((name, _)) => {
                format!("An assistant follows instructions; this is their part {name}:")
            }
            None => "An assistant follows these instructions:".to_string(),
        };
        let mut lines = vec![lead, format!("\"{}\"", py_strip(self.body)), String::new()];
        if let Some(item) = self.batch.worst(1).first() {
            let task = self.tasks.iter().find(|t| t.id == item.task_id());
            lines.push(format!("It answered badly (score {:.2}):", item.score()));
            lines.push("Input:".to_string());
            lines.push(clip(
                task.map_or("", |t| t.input.as_str()),
                COMPACT_FIELD_CHARS,
            ));
            lines.push(format!(
                "Its answer: {}",
                clip(&item.rollout.output, COMPACT_FIELD_CHARS)
            ));
            if let Some(expected) = task
                .and_then(|t| t.expected.as_deref())
                .filter(|e| !e.is_empty())
            {
                lines.push(format!(
                    "Correct answer: {}",
                    clip(expected, COMPACT_FIELD_CHARS)
                ));
            }
            lines.push(format!(
                "Why it is wrong: {}",
                clip(&item.result.feedback, COMPACT_FIELD_CHARS)
            ));
            lines.push(String::new());
        }
        lines.push(format!("Goal: {}", py_strip(self.goal)));
        lines.push(String::new());
        lines.push(
            "Write new instructions for the assistant that work for every input, not only this \
             one: never put this input's answer in them. Reply with the instructions only."
                .to_string(),
        );
        lines.join("\n")
    }

    /// The prompt's text.
    pub fn prompt(&self) -> String {
        let mut head = vec![
            format!("GOAL: {}", self.goal),
            format!(
                "CURRENT MEAN SCORE ON THIS BATCH: {:.3}",
                self.batch.score()
            ),
            String::new(),
        ];
        if let Some((name, whole)) = self.component {
            head.extend([
                "THE WHOLE SKILL BODY, FOR CONTEXT (only one part of it is rewritten now):"
                    .to_string(),
                "<WHOLE_SKILL>".to_string(),
                py_strip(whole).to_string(),
                "</WHOLE_SKILL>".to_string(),
                String::new(),
                format!("THE PART TO REWRITE: {name}"),
            ]);
        } else {
            head.push("CURRENT SKILL BODY:".to_string());
        }
        head.extend([
            "<CURRENT_SKILL_BODY>".to_string(),
            py_strip(self.body).to_string(),
            "</CURRENT_SKILL_BODY>".to_string(),
            String::new(),
            "LOWEST-SCORING ROLLOUTS AND THEIR FEEDBACK:".to_string(),
        ]);
        let mut tail = Vec::new();
        if !self.rejected.is_empty() {
            tail.push(String::new());
            tail.push(
                "EDITS ALREADY TRIED AND REJECTED (most recent first; do not propose them again):"
                    .to_string(),
            );
            for edit in self.rejected.iter().take(REJECTED_SHOWN) {
                let rationale = clip(&edit.rationale, NOTE_CHARS);
                let rationale = if rationale.is_empty() {
                    "(no rationale given)".to_string()
                } else {
                    rationale
                };
                tail.push(format!(
                    "- round {}, candidate {}: {rationale} -> rejected: {}",
                    edit.round, edit.candidate, edit.reason
                ));
            }
        }
        let (max_chars, max_lines) = self.limits;
        let (task, placeholder) = match self.component {
            Some((name, _)) => (
                format!(
                    "Rewrite only the part {name} to fix these failure modes; the rest of the skill stays as it is. Rules:"
                ),
                FORMAT_PLACEHOLDERS[2],
            ),
            None => (
                "Rewrite the skill body to fix these failure modes. Rules:".to_string(),
                FORMAT_PLACEHOLDERS[1],
            ),
        };
        let description = matches!(self.component, Some((DESCRIPTION, _)));
        tail.extend([String::new(), task]);
        if description {
            tail.extend(DESCRIPTION_RULES.iter().map(|rule| rule.to_string()));
        } else {
            tail.push(
                "- Keep it a general, reusable SKILL.md body: no answers or details specific to the examples above."
                    .to_string(),
            );
        }
        if self.one_part {
            tail.push(ONE_PART_RULE.to_string());
        }
        let sections: Vec<&str> = self
            .protected
            .iter()
            .map(String::as_str)
            .filter(|name| name.starts_with("## "))
            .collect();
        if self.component.is_none() && !sections.is_empty() {
            tail.push(format!(
                "- Copy these protected sections word for word, heading included: {}",
                sections.join(", ")
            ));
        }
        if !description {
            tail.extend([
                "- Prefer clear, imperative instructions: add the rules, steps or output-format guidance that would have prevented these failures."
                    .to_string(),
                format!(
                    "- Keep it concise: at most {max_chars} characters and {max_lines} lines, and no YAML frontmatter."
                ),
            ]);
        }
        tail.extend([
            String::new(),
            "Answer in exactly this format:".to_string(),
            "<RATIONALE>one or two sentences on what you changed and why</RATIONALE>".to_string(),
            "<NEW_SKILL_BODY>".to_string(),
            placeholder.to_string(),
            "</NEW_SKILL_BODY>".to_string(),
        ]);
        let fixed: usize = head
            .iter()
            .chain(&tail)
            .map(|line| line.chars().count() + 1)
            .sum();
        let mut room = MAX_PROMPT_CHARS.saturating_sub(fixed);
        let worst = self.batch.worst(self.batch.size());
        let mut shown = 0;
        for item in &worst {
            let block = self.example(item);
            let size: usize = block.iter().map(|line| line.chars().count() + 1).sum();
            if shown > 0 && size > room {
                break;
            }
            room = room.saturating_sub(size);
            head.extend(block);
            shown += 1;
        }
        if shown < worst.len() {
            head.push(format!(
                "({} more rollouts with higher scores were left out to keep this prompt short.)",
                worst.len() - shown
            ));
        }
        head.extend(tail);
        head.join("\n")
    }

    /// The prompt lines of one rollout: its score, input, output, expected answer and
    /// feedback, each field cut at [`FIELD_CHARS`].
    pub fn example(&self, item: &skill_factory_core::TaskEvaluation) -> Vec<String> {
        let task = self.tasks.iter().find(|t| t.id == item.task_id());
        let mut lines = vec![
            format!("--- example (score {:.2}) ---", item.score()),
            format!(
                "INPUT: {}",
                clip(task.map_or("", |t| t.input.as_str()), FIELD_CHARS)
            ),
            format!("SKILL OUTPUT: {}", clip(&item.rollout.output, FIELD_CHARS)),
        ];
        if let Some(expected) = task
            .and_then(|t| t.expected.as_deref())
            .filter(|e| !e.is_empty())
        {
            lines.push(format!("EXPECTED: {}", clip(expected, FIELD_CHARS)));
        }
        lines.push(format!(
            "FEEDBACK: {}",
            clip(&item.result.feedback, FIELD_CHARS)
        ));
        lines
    }
}

/// The tag that closes a proposal's body, and the request's stop sequence: whatever a
/// model would write after the body is never used, so it is never paid for.
const BODY_CLOSE: &str = "</NEW_SKILL_BODY>";

/// The request for a round's `index`-th proposal: the same prompt each time, with the
/// index's temperature, and the index as the sample number so that caches keep them apart.
/// A full-style request stops at the closing body tag; a compact one is the body whole.
pub fn proposal_request(prompt: &str, index: usize, style: ReflectionStyle) -> ChatRequest {
    let max_tokens = match style {
        ReflectionStyle::Full => PROPOSAL_MAX_TOKENS,
        ReflectionStyle::Compact => COMPACT_MAX_TOKENS,
    };
    let mut request = ChatRequest::single(
        Some(SYSTEM_PROMPT.to_string()),
        prompt,
        proposal_temperature(index),
        max_tokens,
    );
    request.sample_index = u32::try_from(index).unwrap_or(u32::MAX);
    if style == ReflectionStyle::Full {
        request.stop = vec![BODY_CLOSE.to_string()];
    }
    request
}

/// A usable proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// The new body, trimmed.
    pub body: String,
    /// What the model said it changed (may be empty).
    pub rationale: String,
    /// Agent Skills guidance the body does not follow (too long, deep links), for the record.
    pub warnings: Vec<String>,
}

/// A proposal that cannot be used, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// The reason, a sentence fragment (`the reply was cut off at the token limit`).
    pub reason: String,
    /// The rationale, if the reply had one.
    pub rationale: String,
}

/// The text between the first `open` tag and the first `close` tag after it, trimmed.
fn tagged<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(py_strip(&text[start..end]))
}

/// The history note of an edit: its rationale cut at [`NOTE_CHARS`], or `edit`.
pub fn note_for(rationale: &str) -> String {
    let trimmed = py_strip(rationale);
    if trimmed.is_empty() {
        "edit".to_string()
    } else {
        trimmed.chars().take(NOTE_CHARS).collect()
    }
}

/// True when the body opens with a YAML frontmatter block (`---`, `key: value` lines, `---`).
fn has_frontmatter(body: &str) -> bool {
    let mut lines = body.lines();
    if lines.next().map(str::trim) != Some("---") {
        return false;
    }
    let block: Vec<&str> = lines.take_while(|line| line.trim() != "---").collect();
    let closed = body.lines().nth(1 + block.len()).is_some();
    closed
        && block.iter().any(|line| {
            line.split_once(':').is_some_and(|(key, _)| {
                !key.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
            })
        })
}

/// Checks one answer of the optimizer model and extracts the proposal from it.
pub fn read_proposal(
    answer: &Result<ChatResponse, LlmError>,
    limits: (usize, usize),
    style: ReflectionStyle,
) -> Result<Proposal, Rejected> {
    read_reply(answer, limits, style, style == ReflectionStyle::Compact)
}

/// [`read_proposal`] for a new description: a reply without the body tags that is nothing
/// but the new description is read as it, whatever the style (a description is one
/// paragraph, which models often give bare).
pub fn read_description(
    answer: &Result<ChatResponse, LlmError>,
    limits: (usize, usize),
    style: ReflectionStyle,
) -> Result<Proposal, Rejected> {
    read_reply(answer, limits, style, true)
}

/// A reply's new text, tagged or bare, and its rationale: how a description that came
/// whole is read where edits were asked for.
pub fn whole_text(reply: &str) -> Option<(String, String)> {
    let rationale = tagged(reply, "<RATIONALE>", "</RATIONALE>").unwrap_or("");
    let text = match tagged(reply, "<NEW_SKILL_BODY>", BODY_CLOSE) {
        Some(text) => text.to_string(),
        None if !reply.contains('<') => compact_body(reply),
        None => return None,
    };
    (!text.is_empty() && !FORMAT_PLACEHOLDERS.contains(&text.as_str()))
        .then(|| (text, rationale.to_string()))
}

fn read_reply(
    answer: &Result<ChatResponse, LlmError>,
    limits: (usize, usize),
    style: ReflectionStyle,
    bare: bool,
) -> Result<Proposal, Rejected> {
    let reject = |reason: String, rationale: &str| Rejected {
        reason,
        rationale: rationale.to_string(),
    };
    let response = match answer {
        Ok(response) => response,
        Err(error) => return Err(reject(format!("the optimizer call failed: {error}"), "")),
    };
    let text = response.text.as_str();
    let rationale = tagged(text, "<RATIONALE>", "</RATIONALE>").unwrap_or("");
    if response.stop_reason == StopReason::MaxTokens {
        // Small models often say their instructions once and then repeat them until the
        // limit: such a loop is read as the paragraph it repeats.
        if let Some(body) = (style == ReflectionStyle::Compact)
            .then(|| looped_paragraph(text))
            .flatten()
        {
            check_body(&body, limits).map_err(|reason| reject(reason.to_string(), rationale))?;
            return Ok(Proposal {
                body,
                rationale: rationale.to_string(),
                warnings: Vec::new(),
            });
        }
        let limit = match style {
            ReflectionStyle::Full => PROPOSAL_MAX_TOKENS,
            ReflectionStyle::Compact => COMPACT_MAX_TOKENS,
        };
        return Err(reject(
            format!("the reply was cut off at the {limit}-token limit"),
            rationale,
        ));
    }
    if py_strip(text).is_empty() {
        return Err(reject("the reply was empty".to_string(), rationale));
    }
    // Providers drop the stop sequence from the text, so a reply that ended there has an
    // open body block running to its end.
    let stopped_at_close = || {
        let start = text.find("<NEW_SKILL_BODY>")? + "<NEW_SKILL_BODY>".len();
        (response.stop_reason == StopReason::End).then(|| py_strip(&text[start..]))
    };
    let tagged_body = tagged(text, "<NEW_SKILL_BODY>", BODY_CLOSE).or_else(stopped_at_close);
    let body = match (tagged_body, bare) {
        (Some(body), _) => body.to_string(),
        // A small model's whole reply is the new instructions.
        (None, true) => compact_body(text),
        (None, false) => {
            return Err(reject(
                "the reply has no <NEW_SKILL_BODY>...</NEW_SKILL_BODY> block".to_string(),
                rationale,
            ));
        }
    };
    check_body(&body, limits).map_err(|reason| reject(reason.to_string(), rationale))?;
    Ok(Proposal {
        body,
        rationale: rationale.to_string(),
        warnings: Vec::new(),
    })
}

/// The body of a compact reply: the reply without a lead-in line (`Here are the new
/// instructions:`) and without quotes around it, trimmed.
fn compact_body(text: &str) -> String {
    let text = py_strip(text);
    let mut lines: Vec<&str> = text.lines().collect();
    let lead_in = lines.first().is_some_and(|first| {
        lines.len() > 1 && first.trim_end().ends_with(':') && first.len() <= 100
    });
    if lead_in {
        lines.remove(0);
    }
    let body = py_strip(&lines.join("\n")).to_string();
    let unquoted = body
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .filter(|inner| !inner.contains('"'));
    py_strip(unquoted.unwrap_or(&body)).to_string()
}

/// The paragraphs of a compact reply up to the first one it repeats (a model looping until
/// its token limit), as a body; `None` when no paragraph comes twice.
fn looped_paragraph(text: &str) -> Option<String> {
    let body = compact_body(text);
    let mut seen: Vec<&str> = Vec::new();
    for paragraph in body.split("\n\n").map(py_strip) {
        if paragraph.is_empty() {
            continue;
        }
        if seen.contains(&paragraph) {
            return Some(seen.join("\n\n"));
        }
        seen.push(paragraph);
    }
    None
}

/// Why a proposed body is not a skill body. It becomes the proposal's rejection reason,
/// which the optimizer model is shown in later rounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum BodyError {
    #[error("the proposed body is empty")]
    Empty,
    #[error("the body starts with a YAML frontmatter block, but only the body may change")]
    Frontmatter,
    #[error("the body contains the prompt's own tags, so it is not a skill body")]
    PromptTags,
    #[error("the body repeats the answer format's placeholder text instead of writing a skill")]
    Placeholder,
    #[error("the body has {chars} characters, more than the limit of {limit}")]
    TooLong { chars: usize, limit: usize },
    #[error("the body has {lines} lines, more than the limit of {limit}")]
    TooManyLines { lines: usize, limit: usize },
}

/// Why a proposed body is not a skill body, if it is not.
fn check_body(body: &str, (max_chars, max_lines): (usize, usize)) -> Result<(), BodyError> {
    if body.is_empty() {
        return Err(BodyError::Empty);
    }
    if has_frontmatter(body) {
        return Err(BodyError::Frontmatter);
    }
    if [
        "<NEW_SKILL_BODY>",
        "<CURRENT_SKILL_BODY>",
        "</CURRENT_SKILL_BODY>",
        "<RATIONALE>",
        "</RATIONALE>",
    ]
    .iter()
    .any(|tag| body.contains(tag))
    {
        return Err(BodyError::PromptTags);
    }
    let lowered = body.to_lowercase();
    if FORMAT_PLACEHOLDERS
        .iter()
        .any(|placeholder| lowered.contains(&placeholder.to_lowercase()))
    {
        return Err(BodyError::Placeholder);
    }
    let chars = body.chars().count();
    if chars > max_chars {
        return Err(BodyError::TooLong {
            chars,
            limit: max_chars,
        });
    }
    let lines = body.lines().count();
    if lines > max_lines {
        return Err(BodyError::TooManyLines {
            lines,
            limit: max_lines,
        });
    }
    Ok(())
}

/// Checks a proposal against the Agent Skills rules a candidate must keep
/// ([`spec::validate_candidate`]), given the body of its parent: an error the proposal
/// introduced rejects it with the rule and the fix; warnings, and the errors its parent has
/// too (the seed's own broken link, say, which every child of a component rewrite keeps), are
/// kept with it.
pub fn keeps_the_spec(
    mut proposal: Proposal,
    parent_body: &str,
    skill_files: &[String],
) -> Result<Proposal, Rejected> {
    let files: Vec<&str> = skill_files.iter().map(String::as_str).collect();
    let findings = spec::validate_candidate(&proposal.body, &files);
    let inherited = spec::validate_candidate(parent_body, &files);
    if let Some(error) = introduced(&findings, &inherited) {
        return Err(Rejected {
            reason: format!("the body breaks the Agent Skills spec: {error}"),
            rationale: proposal.rationale,
        });
    }
    proposal.warnings = findings
        .iter()
        .map(|finding| match finding.is_error() {
            true => format!("{finding} (its parent has it too)"),
            false => finding.to_string(),
        })
        .collect();
    Ok(proposal)
}

/// The first error of `findings` that `inherited` (the parent's findings) does not have: a
/// candidate is refused only for what it broke, never for its seed's own defects, which it
/// could not help keeping and which were said before the run. A control character's finding
/// names its line, which an edit elsewhere moves, so that rule is matched alone.
pub fn introduced<'a>(findings: &'a [Finding], inherited: &[Finding]) -> Option<&'a Finding> {
    findings.iter().filter(|f| f.is_error()).find(|finding| {
        !inherited.iter().any(|old| {
            old.rule == finding.rule
                && (old.message == finding.message || finding.rule == Rule::ControlCharacters)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use skill_factory_core::{MetricResult, Rollout, TaskEvaluation};
    use skill_factory_llm::TokenUsage;
    use std::time::Duration;

    fn answer(text: &str, stop: StopReason) -> Result<ChatResponse, LlmError> {
        Ok(ChatResponse {
            text: text.to_string(),
            usage: TokenUsage::default(),
            stop_reason: stop,
            model: "m".into(),
            latency: Duration::ZERO,
            cached: false,
            batch: false,
        })
    }

    const LIMITS: (usize, usize) = (MAX_BODY_CHARS, MAX_BODY_LINES);

    fn read(text: &str) -> Result<Proposal, Rejected> {
        read_proposal(
            &answer(text, StopReason::End),
            LIMITS,
            ReflectionStyle::Full,
        )
    }

    fn read_compact(text: &str) -> Result<Proposal, Rejected> {
        read_proposal(
            &answer(text, StopReason::End),
            LIMITS,
            ReflectionStyle::Compact,
        )
    }

    fn reason(text: &str) -> String {
        read(text).map(|p| p.body).unwrap_err().reason
    }

    #[test]
    fn temperatures_follow_the_reference_schedule() {
        let t: Vec<f64> = (0..6).map(proposal_temperature).collect();
        assert_eq!(t[0], 0.2);
        assert!((t[1] - 0.6).abs() < 1e-12 && (t[2] - 0.8).abs() < 1e-12);
        assert_eq!((t[3], t[4], t[5]), (1.0, 1.0, 1.0));
    }

    #[test]
    fn a_well_formed_reply_gives_its_body_and_rationale() {
        let p = read("<RATIONALE> Added rules. </RATIONALE>\n<NEW_SKILL_BODY>\n# Skill\n\nDo it.\n</NEW_SKILL_BODY> trailing")
            .unwrap();
        assert_eq!(p.body, "# Skill\n\nDo it.");
        assert_eq!(p.rationale, "Added rules.");
    }

    #[test]
    fn a_reply_that_stopped_at_the_closing_tag_gives_the_rest_as_its_body() {
        let p = read(
            "<RATIONALE>Tighter.</RATIONALE>\n<NEW_SKILL_BODY>\n# Skill\n\nReply with the total.\n",
        )
        .unwrap();
        assert_eq!(p.body, "# Skill\n\nReply with the total.");
        let request = proposal_request("p", 0, ReflectionStyle::Full);
        assert_eq!(request.stop, vec![BODY_CLOSE.to_string()]);
        assert_eq!(request.max_tokens, PROPOSAL_MAX_TOKENS);
    }

    #[test]
    fn the_first_body_block_wins_and_a_missing_rationale_is_empty() {
        let p =
            read("<NEW_SKILL_BODY>a</NEW_SKILL_BODY><NEW_SKILL_BODY>b</NEW_SKILL_BODY>").unwrap();
        assert_eq!((p.body.as_str(), p.rationale.as_str()), ("a", ""));
    }

    #[test]
    fn truncated_empty_or_untagged_replies_are_rejected_with_a_reason() {
        let cut = read_proposal(
            &answer("<NEW_SKILL_BODY>x</NEW_SKILL_BODY>", StopReason::MaxTokens),
            LIMITS,
            ReflectionStyle::Full,
        )
        .unwrap_err();
        assert!(cut.reason.contains("cut off"), "{}", cut.reason);
        assert_eq!(reason("   "), "the reply was empty");
        assert!(reason("Here is the body: # Skill").contains("no <NEW_SKILL_BODY>"));
        let unclosed = read_proposal(
            &answer("<NEW_SKILL_BODY>unclosed", StopReason::Other),
            LIMITS,
            ReflectionStyle::Full,
        );
        assert!(unclosed.unwrap_err().reason.contains("no <NEW_SKILL_BODY>"));
        assert!(reason("<NEW_SKILL_BODY>  </NEW_SKILL_BODY>").contains("empty"));
        let failed = read_proposal(
            &Err(LlmError::Config("no key".into())),
            LIMITS,
            ReflectionStyle::Full,
        )
        .unwrap_err();
        assert_eq!(failed.reason, "the optimizer call failed: no key");
    }

    #[test]
    fn bodies_that_are_not_skill_bodies_are_rejected() {
        assert!(
            reason("<NEW_SKILL_BODY>---\nname: x\ndescription: y\n---\n# X</NEW_SKILL_BODY>")
                .contains("frontmatter")
        );
        assert!(
            reason("<NEW_SKILL_BODY>keep <CURRENT_SKILL_BODY> tags</NEW_SKILL_BODY>")
                .contains("own tags")
        );
        let long = format!(
            "<NEW_SKILL_BODY>{}</NEW_SKILL_BODY>",
            "x".repeat(MAX_BODY_CHARS + 1)
        );
        assert!(reason(&long).contains("more than the limit of 20000"));
        let tall = format!("<NEW_SKILL_BODY>{}</NEW_SKILL_BODY>", "x\n".repeat(600));
        assert!(reason(&tall).contains("lines"));
        // A horizontal rule at the top is not frontmatter.
        assert!(read("<NEW_SKILL_BODY>---\n# Title\n---\ntext</NEW_SKILL_BODY>").is_ok());
        // What small models do with the answer format: copy its placeholders or its tags.
        assert!(
            reason("<RATIONALE>x</RATIONALE><NEW_SKILL_BODY>\nthe full improved skill body, in Markdown\n</NEW_SKILL_BODY>")
                .contains("placeholder")
        );
        assert!(
            reason("<NEW_SKILL_BODY>\nthe body\n</RATIONALE>\n</NEW_SKILL_BODY>")
                .contains("own tags")
        );
    }

    #[test]
    fn a_compact_reply_is_the_body_whole_without_lead_in_or_quotes() {
        let request = proposal_request("p", 1, ReflectionStyle::Compact);
        assert!(request.stop.is_empty());
        assert_eq!(request.max_tokens, COMPACT_MAX_TOKENS);
        assert_eq!(request.temperature, proposal_temperature(1));
        let p = read_compact("  Reply with only the total, in digits.  ").unwrap();
        assert_eq!(
            (p.body.as_str(), p.rationale.as_str()),
            ("Reply with only the total, in digits.", "")
        );
        let p = read_compact("Here are the new instructions:\n\"Reply with the total alone.\"")
            .unwrap();
        assert_eq!(p.body, "Reply with the total alone.");
        let p = read_compact("Steps:\n1. Find the total line.\n2. Reply with its number.").unwrap();
        assert_eq!(p.body, "1. Find the total line.\n2. Reply with its number.");
        // A capable model that answers in the full format is read as such.
        let p = read_compact("<RATIONALE>r</RATIONALE><NEW_SKILL_BODY>Tagged.</NEW_SKILL_BODY>")
            .unwrap();
        assert_eq!((p.body.as_str(), p.rationale.as_str()), ("Tagged.", "r"));
        let cut = read_proposal(
            &answer("ramble", StopReason::MaxTokens),
            LIMITS,
            ReflectionStyle::Compact,
        )
        .unwrap_err();
        assert_eq!(cut.reason, "the reply was cut off at the 512-token limit");
        let looping = read_proposal(
            &answer(
                "Reply with the number.\n\nReply with the number.\n\nReply with the nu",
                StopReason::MaxTokens,
            ),
            LIMITS,
            ReflectionStyle::Compact,
        )
        .unwrap();
        assert_eq!(looping.body, "Reply with the number.");
        let settling = read_proposal(
            &answer(
                "Say the number.\n\nReply with the number.\n\nReply with the number.\n\nRep",
                StopReason::MaxTokens,
            ),
            LIMITS,
            ReflectionStyle::Compact,
        )
        .unwrap();
        assert_eq!(settling.body, "Say the number.\n\nReply with the number.");
        let full_loop = read_proposal(
            &answer("<NEW_SKILL_BODY>a\n\na\n\na", StopReason::MaxTokens),
            LIMITS,
            ReflectionStyle::Full,
        );
        assert!(
            full_loop.unwrap_err().reason.contains("cut off"),
            "only compact replies are read so"
        );
        assert!(
            read_compact("---\nname: x\n---\nbody")
                .unwrap_err()
                .reason
                .contains("frontmatter")
        );
    }

    #[test]
    fn a_proposal_is_refused_only_for_the_spec_errors_its_parent_does_not_have() {
        let proposal = |body: &str| Proposal {
            body: body.to_string(),
            rationale: "r".into(),
            warnings: Vec::new(),
        };
        let files = vec!["references/guide.md".to_string()];
        let parent = "Read [the notes](references/notes.md).";
        let kept =
            keeps_the_spec(proposal(&format!("Be brief.\n\n{parent}")), parent, &files).unwrap();
        assert_eq!(kept.warnings.len(), 1, "{:?}", kept.warnings);
        assert!(
            kept.warnings[0].starts_with("error [broken-link]")
                && kept.warnings[0].ends_with("(its parent has it too)"),
            "{:?}",
            kept.warnings
        );
        let invented = format!("{parent} And [more](references/more.md).");
        let refused = keeps_the_spec(proposal(&invented), parent, &files).unwrap_err();
        assert!(
            refused.reason.contains("references/more.md"),
            "{}",
            refused.reason
        );
        let outside = keeps_the_spec(proposal("See [x](../x.md)."), parent, &files).unwrap_err();
        assert!(
            outside.reason.contains("link-outside"),
            "{}",
            outside.reason
        );
        // A control character's finding names its line, which an edit above it moves.
        let bell = "Intro.\n\nRing \u{7}.";
        assert!(keeps_the_spec(proposal(&format!("New line.\n{bell}")), bell, &files).is_ok());
        assert!(keeps_the_spec(proposal(bell), "Intro.", &files).is_err());
    }

    #[test]
    fn limits_grow_with_a_large_seed() {
        assert_eq!(body_limits("short"), (MAX_BODY_CHARS, MAX_BODY_LINES));
        let big = "y\n".repeat(15_000);
        assert_eq!(body_limits(&big), (60_000, 30_000));
    }

    #[test]
    fn notes_are_the_rationale_cut_at_200_chars_or_edit() {
        assert_eq!(note_for("  "), "edit");
        assert_eq!(note_for(&"é".repeat(300)).chars().count(), 200);
    }

    fn item(id: &str, score: f64, output: &str) -> TaskEvaluation {
        TaskEvaluation::new(
            Rollout::success(id, output),
            MetricResult::new("m", score, format!("feedback {id}")),
        )
    }

    #[test]
    fn the_prompt_lists_rollouts_worst_first_then_rejected_edits_newest_first() {
        let batch = Evaluation {
            items: vec![item("a", 1.0, "ok"), item("b", 0.0, &"z".repeat(900))],
        };
        let tasks = vec![
            Task::new("a", "input a").with_expected("A"),
            Task::new("b", "input b"),
        ];
        let rejected = vec![
            RejectedEdit {
                round: 2,
                candidate: 4,
                rationale: "Shorter.".into(),
                reason: "val 0.500 did not beat the best 0.600".into(),
            },
            RejectedEdit {
                round: 1,
                candidate: 2,
                rationale: String::new(),
                reason: "the reply was empty".into(),
            },
        ];
        let prompt = Reflection {
            goal: "Be right.",
            body: "  # Body  ",
            batch: &batch,
            tasks: &tasks,
            rejected: &rejected,
            limits: (MAX_BODY_CHARS, MAX_BODY_LINES),
            component: None,
            one_part: false,
            protected: &[],
        }
        .prompt();
        assert!(prompt.starts_with(
            "GOAL: Be right.\nCURRENT MEAN SCORE ON THIS BATCH: 0.500\n\nCURRENT SKILL BODY:\n<CURRENT_SKILL_BODY>\n# Body\n</CURRENT_SKILL_BODY>\n\nLOWEST-SCORING ROLLOUTS AND THEIR FEEDBACK:\n--- example (score 0.00) ---\nINPUT: input b\nSKILL OUTPUT: "
        ), "{prompt}");
        assert!(prompt.contains(&format!("{}{TRUNCATION_MARK}\nFEEDBACK: feedback b\n--- example (score 1.00) ---\nINPUT: input a\nSKILL OUTPUT: ok\nEXPECTED: A\nFEEDBACK: feedback a\n", "z".repeat(800))));
        let memory = prompt
            .find("- round 2, candidate 4: Shorter. -> rejected: val 0.500")
            .unwrap();
        let older = prompt
            .find("- round 1, candidate 2: (no rationale given) -> rejected: the reply was empty")
            .unwrap();
        assert!(memory < older);
        assert!(prompt.ends_with(
            "<NEW_SKILL_BODY>\nthe full improved skill body, in Markdown\n</NEW_SKILL_BODY>"
        ));
    }

    #[test]
    fn without_rejected_edits_there_is_no_memory_section_and_long_batches_are_cut() {
        let many: Vec<TaskEvaluation> = (0..200)
            .map(|i| item(&format!("t{i}"), f64::from(i) / 200.0, &"o".repeat(800)))
            .collect();
        let tasks: Vec<Task> = (0..200)
            .map(|i| Task::new(format!("t{i}"), "i".repeat(800)).with_expected("e".repeat(800)))
            .collect();
        let batch = Evaluation { items: many };
        let prompt = Reflection {
            goal: "g",
            body: "b",
            batch: &batch,
            tasks: &tasks,
            rejected: &[],
            limits: (MAX_BODY_CHARS, MAX_BODY_LINES),
            component: None,
            one_part: false,
            protected: &[],
        }
        .prompt();
        assert!(!prompt.contains("REJECTED"));
        assert!(
            prompt.chars().count() <= MAX_PROMPT_CHARS,
            "{}",
            prompt.len()
        );
        assert!(prompt.contains("more rollouts with higher scores were left out"));
        assert!(prompt.contains("--- example (score 0.00) ---"));
    }

    #[test]
    fn the_compact_prompt_shows_the_worst_rollout_the_goal_and_asks_for_instructions_alone() {
        let batch = Evaluation {
            items: vec![item("a", 1.0, "ok"), item("b", 0.0, &"z".repeat(400))],
        };
        let tasks = vec![
            Task::new("a", "input a"),
            Task::new("b", "input b").with_expected("B"),
        ];
        let rejected = vec![RejectedEdit {
            round: 1,
            candidate: 1,
            rationale: "Tried this.".into(),
            reason: "no gain".into(),
        }];
        let prompt = Reflection {
            goal: "Reply with B.\n",
            body: "  Do it.  ",
            batch: &batch,
            tasks: &tasks,
            rejected: &rejected,
            limits: (MAX_BODY_CHARS, MAX_BODY_LINES),
            component: None,
            one_part: false,
            protected: &[],
        }
        .prompt_for(ReflectionStyle::Compact);
        assert_eq!(
            prompt,
            format!(
                "An assistant follows these instructions:\n\"Do it.\"\n\nIt answered badly (score 0.00):\nInput:\ninput b\nIts answer: {}{TRUNCATION_MARK}\nCorrect answer: B\nWhy it is wrong: feedback b\n\nGoal: Reply with B.\n\nWrite new instructions for the assistant that work for every input, not only this one: never put this input's answer in them. Reply with the instructions only.",
                "z".repeat(COMPACT_FIELD_CHARS)
            )
        );
    }
}
