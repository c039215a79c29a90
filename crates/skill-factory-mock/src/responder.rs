//! What the mock answers: a known answer for the user message, else a deterministic judge
//! verdict for LLM-judge prompts, else a well-formed skill-body proposal for optimizer
//! reflection prompts (a revised description for those rewriting a description, from
//! [`crate::description`]), else a canned line picked by a hash of the request.
//! Requests carrying a skill listing never get here: the router answers them
//! ([`crate::routing`]).
//! Identical requests always get identical answers.
//!
//! With [`Answering::SkillSensitive`] a known answer is given only to some requests, more of
//! them the more rules the mock optimizer has added to the skill (the system prompt), so that
//! a skill's score depends on its text and an optimization has edits to accept and reject.
//! With [`Answering::Needs`] a known answer needs its task's rule in the skill, and the mock
//! optimizer adds the rule the failures it is shown need ([`crate::needs`]).
//!
//! A judge prompt is recognised, and its verdict derived, from the user message alone: two
//! tools that send the same judge user prompt under differently worded system prompts (ours
//! and the Python tool's) get the same verdict, so their scores can be compared.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, json};
use sha2::{Digest, Sha256};

use crate::description::{description_reply, is_description_prompt};
use crate::needs::{Needs, Revision};
use crate::wire::Conversation;

/// Canned answers for requests the mock knows nothing about.
const CANNED: &[&str] = &[
    "I am a mock model and this is a deterministic answer.",
    "The answer is 42.",
    "I could not determine that from the input.",
    "Yes.",
    "No.",
    "Here is a short summary of the input.",
    "{\"answer\": \"mock\"}",
    "Done.",
];

const TASK_HEADER: &str = "TASK INPUT:";
const OUTPUT_HEADER: &str = "ASSISTANT OUTPUT:";
const REFERENCE_HEADER: &str = "REFERENCE ANSWER (for grading only):";
const RUBRIC_HEADER: &str = "RUBRIC:";
const CURRENT_BODY_OPEN: &str = "<CURRENT_SKILL_BODY>";
const CURRENT_BODY_CLOSE: &str = "</CURRENT_SKILL_BODY>";
const NEW_BODY_OPEN: &str = "<NEW_SKILL_BODY>";
const WHOLE_SKILL_OPEN: &str = "<WHOLE_SKILL>";
const WHOLE_SKILL_CLOSE: &str = "</WHOLE_SKILL>";
const EDITS_OPEN: &str = "<EDITS>";

/// Rule lines the mock optimizer adds to a skill body.
const RULES: &[&str] = &[
    "Answer with the requested format only, without any preamble.",
    "Check every field against the input before answering.",
    "When a value is missing from the input, leave it out rather than guessing.",
    "Normalize dates to YYYY-MM-DD and amounts to plain numbers.",
    "Prefer the most specific category that fits.",
    "Keep the answer on a single line.",
];

/// Phrasings of a decoy edit: each says again what any skill already implies.
const REWORDINGS: &[&str] = &[
    "Read the whole request before you answer it.",
    "Follow the instructions above exactly as written.",
    "Make sure the answer addresses what was asked.",
    "Take the input as given and answer it directly.",
];

/// How far the mock's answers stray on purpose: the noise of a sampled model, and an
/// optimizer whose edits often change nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Variation {
    /// The chance that a known-answer request's outcome flips (right becomes a canned wrong
    /// line, wrong becomes the right answer), drawn afresh for every request, unseeded: what
    /// a model sampled at a temperature above 0 does.
    pub flips: f64,
    /// The share of optimizer replies that only reword the skill (a line that changes no
    /// task's outcome), chosen by a hash of the prompt and the temperature.
    pub decoys: f64,
    /// The share of optimizer replies that drop a rule line the skill holds (with
    /// [`Answering::Needs`]: the tasks of its group then fail), chosen by the same hash.
    pub regressions: f64,
}

/// How the mock uses its known answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Answering {
    /// Every request whose user message is known gets its answer, whatever the skill.
    #[default]
    Always,
    /// A request whose user message is known gets its answer with a chance that grows with
    /// the rules in its system prompt (lines the mock optimizer adds, ending `(rule <tag>)`):
    /// 30% with none, 25 points more per rule, always from the third on. Which requests get
    /// it is a hash of the system prompt and the user message, so every skill has its own
    /// reproducible set of right answers; the others get a canned (wrong) line.
    SkillSensitive,
    /// A request whose user message is known gets its answer only when the system prompt
    /// holds the rule its task's group needs, and the mock optimizer adds the rule the
    /// failures it is shown need ([`Needs`]).
    Needs(Arc<Needs>),
}

/// The share of known answers, in percent, a skill sensitive mock gives a system prompt.
pub fn answer_rate(system: &str) -> usize {
    let rules = system.matches("(rule ").count();
    (30 + 25 * rules).min(100)
}

/// The reply to a conversation.
pub fn respond(
    conversation: &Conversation,
    answers: &HashMap<String, String>,
    answering: &Answering,
    variation: &Variation,
) -> String {
    if let Some(answer) = answers
        .get(&conversation.user)
        .or_else(|| answers.get(conversation.user.trim()))
    {
        let digest = sha256(&format!("{}\n{}", conversation.system, conversation.user));
        let right = match answering {
            Answering::Always => true,
            Answering::SkillSensitive => {
                let draw = usize::from(u16::from_be_bytes([digest[0], digest[1]])) % 100;
                draw < answer_rate(&conversation.system)
            }
            Answering::Needs(needs) => needs
                .answers_right(
                    &conversation.model,
                    &conversation.system,
                    &conversation.user,
                )
                .unwrap_or(true),
        };
        let flipped = variation.flips > 0.0 && fastrand::f64() < variation.flips;
        if right != flipped {
            return answer.clone();
        }
        return CANNED[usize::from(digest[2]) % CANNED.len()].to_string();
    }
    if is_judge_prompt(&conversation.user) {
        return judge_reply(&conversation.user);
    }
    let user = &conversation.user;
    let temperature = conversation.temperature;
    let optimizer = Optimizer {
        answering,
        decoys: variation.decoys,
        regressions: variation.regressions,
    };
    // A description prompt is also a reflection prompt, with the same tags.
    if is_description_prompt(user) {
        return description_reply(user);
    }
    if is_gepa_prompt(user) {
        return gepa_reply(user, temperature, &optimizer);
    }
    if is_patch_prompt(user) {
        return patch_reply(user, temperature, &optimizer);
    }
    if is_reflection_prompt(user) {
        return proposal_reply(user, temperature, &optimizer);
    }
    let digest = sha256(&format!("{}\n{}", conversation.system, user));
    CANNED[usize::from(digest[0]) % CANNED.len()].to_string()
}

/// How the mock optimizer revises a skill: by the answering mode, and with the share of its
/// replies that are decoys.
#[derive(Debug, Clone, Copy)]
pub struct Optimizer<'a> {
    /// The mock's answering mode.
    pub answering: &'a Answering,
    /// [`Variation::decoys`].
    pub decoys: f64,
    /// [`Variation::regressions`].
    pub regressions: f64,
}

impl<'a> From<&'a Answering> for Optimizer<'a> {
    fn from(answering: &'a Answering) -> Self {
        Optimizer {
            answering,
            decoys: 0.0,
            regressions: 0.0,
        }
    }
}

/// Whether a user message is an LLM-judge prompt: it has the `TASK INPUT:`, `ASSISTANT OUTPUT:`
/// and `RUBRIC:` sections, each header on its own line.
pub fn is_judge_prompt(user: &str) -> bool {
    let has_line = |header: &str| user.lines().any(|line| line == header);
    [TASK_HEADER, OUTPUT_HEADER, RUBRIC_HEADER]
        .iter()
        .all(|header| has_line(header))
}

/// Whether a user message asks an optimizer for a new skill body: it shows the current body
/// between `<CURRENT_SKILL_BODY>` tags and asks for the answer in `<NEW_SKILL_BODY>` tags (the
/// reflection prompt of both skill-factory tools).
pub fn is_reflection_prompt(user: &str) -> bool {
    user.contains(CURRENT_BODY_OPEN) && user.contains(NEW_BODY_OPEN)
}

/// How the reflection prompt of the `gepa` package from PyPI begins (its default adapter's
/// instruction proposal).
const GEPA_PROMPT_START: &str =
    "I provided an assistant with the following instructions to perform a task for me:";

/// Whether a user message is the `gepa` package's reflection prompt: the current instructions
/// in the first fenced block, and the new ones asked for within ``` blocks.
pub fn is_gepa_prompt(user: &str) -> bool {
    user.trim_start().starts_with(GEPA_PROMPT_START)
}

/// The `gepa` package's reply format: the instructions of the prompt's first fenced block,
/// revised as [`proposal_reply`] revises a body, within ``` fences.
pub fn gepa_reply(prompt: &str, temperature: Option<f64>, optimizer: &Optimizer<'_>) -> String {
    let instructions = prompt
        .split_once("```")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(inside, _)| {
            // A language tag on the opening fence's line is not part of the instructions.
            inside
                .split_once('\n')
                .map_or(inside, |(first, rest)| {
                    if first.trim().is_empty() {
                        rest
                    } else {
                        inside
                    }
                })
                .trim()
        })
        .unwrap_or("");
    let (revision, _) = revision(prompt, instructions, instructions, temperature, optimizer);
    format!("```\n{}\n```", revision.apply(instructions))
}

/// Whether a user message asks an optimizer for edit patches (our `skillopt`): it shows the
/// current body between `<CURRENT_SKILL_BODY>` tags and asks for the answer in `<EDITS>` tags.
pub fn is_patch_prompt(user: &str) -> bool {
    user.contains(CURRENT_BODY_OPEN) && user.contains(EDITS_OPEN)
}

/// A well-formed patch: one edit, `append` of the rule line [`proposal_reply`] would add, or
/// the `replace` of a conflicting rule (with [`Answering::Needs`]).
pub fn patch_reply(prompt: &str, temperature: Option<f64>, optimizer: &Optimizer<'_>) -> String {
    let (shown, whole) = shown_and_whole(prompt);
    let (revision, rationale) = revision(prompt, shown, whole, temperature, optimizer);
    let edits: Vec<_> = match &revision {
        Revision::Add(lines) => lines
            .iter()
            .map(|line| json!({"op": "append", "text": line}))
            .collect(),
        Revision::Filler(line) | Revision::Reword(line) => {
            vec![json!({"op": "append", "text": line})]
        }
        Revision::Swap(old, new) => vec![json!({"op": "replace", "target": old, "text": new})],
        Revision::Drop(line) => vec![json!({"op": "delete", "target": line})],
    };
    format!(
        "<RATIONALE>{}</RATIONALE>\n{EDITS_OPEN}\n{}\n</EDITS>",
        rationale,
        json!(edits)
    )
}

/// The text a body or patch prompt asks to rewrite (between `<CURRENT_SKILL_BODY>` tags), and
/// the whole skill (between `<WHOLE_SKILL>` tags when one part is rewritten, else the same).
fn shown_and_whole(prompt: &str) -> (&str, &str) {
    let between = |open: &str, close: &str| {
        prompt
            .find(open)
            .map(|at| &prompt[at + open.len()..])
            .and_then(|rest| rest.find(close).map(|end| rest[..end].trim()))
    };
    let shown = between(CURRENT_BODY_OPEN, CURRENT_BODY_CLOSE).unwrap_or("");
    let whole = between(WHOLE_SKILL_OPEN, WHOLE_SKILL_CLOSE).unwrap_or(shown);
    (shown, whole)
}

/// What the mock optimizer does to `shown`, and the rationale it gives: a decoy (a rewording
/// that changes nothing) for [`Optimizer::decoys`] of the prompts, by a hash of the prompt and
/// the temperature; a regression (one of the shown rule lines dropped) for
/// [`Optimizer::regressions`] of the others that hold one; else with [`Answering::Needs`],
/// the rule the shown failures need;
/// otherwise one rule line picked by the same hash, so that the proposals of one round differ
/// and identical requests agree.
fn revision(
    prompt: &str,
    shown: &str,
    whole: &str,
    temperature: Option<f64>,
    optimizer: &Optimizer<'_>,
) -> (Revision, String) {
    let salt = temperature.map_or_else(|| "none".to_string(), |t| format!("{t:.2}"));
    let draw = sha256(&format!("{prompt}\u{0}{salt}\u{0}decoy"));
    let share = f64::from(u16::from_be_bytes([draw[0], draw[1]])) / f64::from(u16::MAX);
    if optimizer.decoys > 0.0 && share < optimizer.decoys {
        let phrase = REWORDINGS[usize::from(draw[2]) % REWORDINGS.len()];
        let tag: String = draw[3..6].iter().map(|b| format!("{b:02x}")).collect();
        let revision = Revision::Reword(format!("- {phrase} (wording {tag})"));
        let rationale = revision.rationale();
        return (revision, rationale);
    }
    let share = f64::from(u16::from_be_bytes([draw[6], draw[7]])) / f64::from(u16::MAX);
    let rules: Vec<&str> = shown
        .lines()
        .filter(|line| line.contains("(need ") || line.contains("(rule "))
        .collect();
    if optimizer.regressions > 0.0 && share < optimizer.regressions && !rules.is_empty() {
        let revision = Revision::Drop(rules[usize::from(draw[8]) % rules.len()].to_string());
        let rationale = revision.rationale();
        return (revision, rationale);
    }
    if let Answering::Needs(needs) = optimizer.answering {
        let revision = needs.revise(prompt, shown, whole, &salt);
        let rationale = revision.rationale();
        return (revision, rationale);
    }
    let digest = sha256(&format!("{prompt}\u{0}{salt}"));
    let rule = RULES[usize::from(digest[0]) % RULES.len()];
    let tag: String = digest[1..4].iter().map(|b| format!("{b:02x}")).collect();
    (
        Revision::Add(vec![format!("- {rule} (rule {tag})")]),
        format!("Mock optimizer: added one rule ({tag})."),
    )
}

/// A well-formed proposal: the current body (or part) revised by the mock optimizer: with
/// [`Answering::Needs`] the rules the shown failures need, otherwise one more rule line, so
/// that the proposals of one round (same prompt, different temperatures) differ from each
/// other and from the current body, and identical requests get identical answers.
pub fn proposal_reply(prompt: &str, temperature: Option<f64>, optimizer: &Optimizer<'_>) -> String {
    let (shown, whole) = shown_and_whole(prompt);
    let (revision, rationale) = revision(prompt, shown, whole, temperature, optimizer);
    format!(
        "<RATIONALE>{}</RATIONALE>\n{NEW_BODY_OPEN}\n{}\n</NEW_SKILL_BODY>",
        rationale,
        revision.apply(shown)
    )
}

/// A judge verdict: every rubric criterion scored 10 when the assistant output equals the
/// reference answer, else 0-10 from a hash of the prompt and the criterion.
pub fn judge_reply(prompt: &str) -> String {
    let output = section(prompt, OUTPUT_HEADER, &[REFERENCE_HEADER, RUBRIC_HEADER]);
    let reference = section(prompt, REFERENCE_HEADER, &[RUBRIC_HEADER]);
    let matches = matches!((output, reference), (Some(o), Some(r)) if o.trim() == r.trim());
    let mut scores = Map::new();
    for name in criteria(prompt) {
        let score = if matches {
            10
        } else {
            sha256(&format!("{prompt}\u{0}{name}"))[0] % 11
        };
        scores.insert(name, json!(score));
    }
    let rationale = if matches {
        "Mock judge: the output matches the reference answer."
    } else {
        "Mock judge: scores derived from a hash of the prompt."
    };
    json!({"scores": scores, "rationale": rationale}).to_string()
}

/// The text under `header` (on its own line), up to the first of `next` headers after it.
fn section<'a>(prompt: &'a str, header: &str, next: &[&str]) -> Option<&'a str> {
    let start = prompt.find(header)? + header.len();
    let rest = &prompt[start..];
    let end = next
        .iter()
        .filter_map(|h| rest.rfind(&format!("\n{h}")))
        .min()
        .unwrap_or(rest.len());
    Some(rest[..end].trim_matches('\n'))
}

/// Criterion names from rubric lines `- <name> (weight <w>): <description>`.
fn criteria(prompt: &str) -> Vec<String> {
    let rubric = prompt
        .rfind(RUBRIC_HEADER)
        .map_or(prompt, |at| &prompt[at..]);
    rubric
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("- "))
        .filter_map(|line| {
            line.find(" (weight")
                .map(|end| line[..end].trim().to_string())
        })
        .filter(|name| !name.is_empty())
        .collect()
}

fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn judge_prompt(output: &str, reference: &str) -> String {
        format!(
            "{TASK_HEADER}\nWhat is 2+2?\n\n{OUTPUT_HEADER}\n{output}\n\n{REFERENCE_HEADER}\n{reference}\n\n{RUBRIC_HEADER}\n\
             - correctness (weight 3.0): Is it right?\n- format (weight 1.0): Is it short?\n\n\
             Score each criterion from 0 (fails) to 10 (perfect) and reply with JSON only:\n\
             {{\"scores\": {{\"correctness\": <0-10>, \"format\": <0-10>}}, \"rationale\": \"<one paragraph>\"}}"
        )
    }

    fn conversation(system: &str, user: &str) -> Conversation {
        Conversation {
            system: system.to_string(),
            user: user.to_string(),
            ..Conversation::default()
        }
    }

    /// For each of the tasks `task 0` to `task {n - 1}`, asked under `system`: whether it got
    /// its answer `answer {i}`.
    fn rights(
        n: usize,
        system: &str,
        answers: &HashMap<String, String>,
        answering: &Answering,
        variation: &Variation,
    ) -> Vec<bool> {
        (0..n)
            .map(|i| {
                let asked = conversation(system, &format!("task {i}"));
                respond(&asked, answers, answering, variation) == format!("answer {i}")
            })
            .collect()
    }

    /// How many are true.
    fn count(rights: &[bool]) -> usize {
        rights.iter().filter(|right| **right).count()
    }

    /// [`respond`] with no known answers, always answering, without variation.
    fn plain(conversation: &Conversation) -> String {
        respond(
            conversation,
            &HashMap::new(),
            &Answering::Always,
            &Variation::default(),
        )
    }

    #[test]
    fn the_gepa_packages_reflection_prompt_gets_its_instructions_plus_a_rule_in_fences() {
        let prompt = "I provided an assistant with the following instructions to perform a task for me:\n```\nSort tickets.\n```\n\nThe following are examples...\nProvide the new instructions within ``` blocks.";
        assert!(is_gepa_prompt(prompt) && !is_reflection_prompt(prompt));
        let reply = gepa_reply(prompt, None, &(&Answering::SkillSensitive).into());
        assert!(reply.starts_with("```\nSort tickets.\n\n- "), "{reply}");
        assert!(
            reply.ends_with(")\n```") && reply.contains("(rule "),
            "{reply}"
        );
    }

    #[test]
    fn a_patch_prompt_gets_one_append_edit_in_edits_tags() {
        let prompt = "<CURRENT_SKILL_BODY>\nDo it.\n</CURRENT_SKILL_BODY>\nAnswer:\n<EDITS>\n[...]\n</EDITS>";
        assert!(is_patch_prompt(prompt) && !is_reflection_prompt(prompt));
        let reply = patch_reply(prompt, Some(0.2), &(&Answering::SkillSensitive).into());
        let edits = reply
            .split_once("<EDITS>\n")
            .and_then(|(_, rest)| rest.split_once("\n</EDITS>"))
            .map(|(json, _)| json)
            .unwrap();
        let edits: serde_json::Value = serde_json::from_str(edits).unwrap();
        assert_eq!(edits[0]["op"], "append");
        assert!(
            edits[0]["text"].as_str().unwrap().contains("(rule "),
            "{reply}"
        );
        assert_eq!(
            reply,
            patch_reply(prompt, Some(0.2), &(&Answering::SkillSensitive).into()),
            "reproducible"
        );
    }

    #[test]
    fn known_answers_win() {
        let answers = HashMap::from([("2+2?".to_string(), "4".to_string())]);
        assert_eq!(
            respond(
                &conversation("You are a judge", "2+2?"),
                &answers,
                &Answering::Always,
                &Variation::default()
            ),
            "4"
        );
    }

    #[test]
    fn a_judge_scores_every_rubric_criterion_ten_when_output_equals_reference() {
        let reply = plain(&conversation(
            "You are a strict evaluation judge.",
            &judge_prompt("4", "4"),
        ));
        let verdict: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(verdict["scores"], json!({"correctness": 10, "format": 10}));
        assert!(verdict["rationale"].is_string());
    }

    #[test]
    fn a_judge_verdict_depends_only_on_the_user_message() {
        let prompt = judge_prompt("{\"total\": 5}", "{\"total\": 4}");
        let replies: Vec<String> = [
            "You are a strict but fair evaluation judge.",
            "Grade the assistant's answer against the rubric. Reply with JSON only.",
            "",
        ]
        .iter()
        .map(|system| plain(&conversation(system, &prompt)))
        .collect();
        assert_eq!(replies[0], judge_reply(&prompt));
        assert!(replies.iter().all(|r| *r == replies[0]), "{replies:?}");
    }

    #[test]
    fn a_reflection_prompt_gets_a_proposal_extending_the_current_body() {
        let prompt = "GOAL: g\n<CURRENT_SKILL_BODY>\n# Skill\n\nDo it.\n</CURRENT_SKILL_BODY>\n\nAnswer:\n<RATIONALE>...</RATIONALE>\n<NEW_SKILL_BODY>\nbody\n</NEW_SKILL_BODY>";
        let mut request = conversation("You optimize prompts.", prompt);
        request.temperature = Some(0.2);
        let first = plain(&request);
        assert_eq!(first, plain(&request));
        assert!(first.starts_with("<RATIONALE>Mock optimizer"), "{first}");
        assert!(
            first.contains("<NEW_SKILL_BODY>\n# Skill\n\nDo it.\n\n- "),
            "{first}"
        );
        assert!(first.ends_with("</NEW_SKILL_BODY>"), "{first}");
        request.temperature = Some(0.6);
        assert_ne!(first, plain(&request));
    }

    #[test]
    fn a_description_prompt_gets_the_description_optimizer_not_a_rule_line() {
        let prompt = "THE PART TO REWRITE: description\n<CURRENT_SKILL_BODY>\nSorts receipts.\n</CURRENT_SKILL_BODY>\n\
                      --- example (score 0.00) ---\nINPUT: total the invoices\nSKILL OUTPUT: none\n\
                      FEEDBACK: should have loaded, did not\n<NEW_SKILL_BODY>\n...\n</NEW_SKILL_BODY>";
        let reply = plain(&conversation("You optimize prompts.", prompt));
        assert!(
            reply.ends_with("<NEW_SKILL_BODY>\nSorts receipts. Use it for requests about total, invoices.\n</NEW_SKILL_BODY>"),
            "{reply}"
        );
    }

    #[test]
    fn a_system_prompt_naming_a_judge_is_not_enough_to_get_a_verdict() {
        let reply = plain(&conversation("You are a judge.", "What is 2+2?"));
        assert!(CANNED.contains(&reply.as_str()), "{reply}");
    }

    #[test]
    fn a_judge_otherwise_scores_deterministically_within_range() {
        let prompt = judge_prompt("five", "4");
        let first = judge_reply(&prompt);
        assert_eq!(first, judge_reply(&prompt));
        let verdict: Value = serde_json::from_str(&first).unwrap();
        let scores = verdict["scores"].as_object().unwrap();
        assert_eq!(scores.keys().collect::<Vec<_>>(), ["correctness", "format"]);
        assert!(scores.values().all(|s| s.as_u64().is_some_and(|s| s <= 10)));
    }

    #[test]
    fn unknown_requests_get_a_stable_canned_line() {
        let a = plain(&conversation("sys", "anything"));
        assert_eq!(a, plain(&conversation("sys", "anything")));
        assert!(CANNED.contains(&a.as_str()));
    }

    #[test]
    fn noise_flips_outcomes_about_as_often_as_asked_and_unseeded() {
        let answers: HashMap<String, String> = (0..1000)
            .map(|i| (format!("task {i}"), format!("answer {i}")))
            .collect();
        let noisy = Variation {
            flips: 0.2,
            ..Variation::default()
        };
        let wrong = || {
            rights(1000, "Do it.", &answers, &Answering::Always, &noisy)
                .iter()
                .enumerate()
                .filter(|(_, right)| !**right)
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        };
        let (first, second) = (wrong(), wrong());
        assert!((140..260).contains(&first.len()), "{}", first.len());
        assert_ne!(first, second, "each request draws afresh");
        // A wrong outcome flips to the right answer just as often.
        let needs = Answering::Needs(Arc::new(Needs::new(&answers, HashMap::new(), Vec::new())));
        let right = count(&rights(1000, "No rules.", &answers, &needs, &noisy));
        assert!((140..260).contains(&right), "{right}");
    }

    /// Answering by the rules one task needs: `ticket one: refund please` is `billing`.
    fn billing_needs() -> Answering {
        let answers = HashMap::from([(
            "ticket one: refund please".to_string(),
            "billing".to_string(),
        )]);
        Answering::Needs(Arc::new(Needs::new(&answers, HashMap::new(), Vec::new())))
    }

    #[test]
    fn a_decoy_rewords_the_skill_without_any_rule_a_task_needs() {
        let needs = billing_needs();
        let prompt = "<CURRENT_SKILL_BODY>\nSort.\n</CURRENT_SKILL_BODY>\nINPUT: ticket one: refund please\n<NEW_SKILL_BODY>";
        let always = Optimizer {
            answering: &needs,
            decoys: 1.0,
            regressions: 0.0,
        };
        let decoy = proposal_reply(prompt, Some(0.2), &always);
        assert!(decoy.contains("(wording "), "{decoy}");
        assert!(!decoy.contains("(need "), "{decoy}");
        let never = proposal_reply(prompt, Some(0.2), &Optimizer::from(&needs));
        assert!(never.contains("(need "), "{never}");
        assert_eq!(
            decoy,
            proposal_reply(prompt, Some(0.2), &always),
            "reproducible"
        );
    }

    #[test]
    fn a_regression_drops_a_rule_the_skill_holds() {
        let needs = billing_needs();
        let rule = Needs::rule("billing");
        let prompt = format!(
            "<CURRENT_SKILL_BODY>\nSort.\n{rule}\n</CURRENT_SKILL_BODY>\nINPUT: other\n<NEW_SKILL_BODY>"
        );
        let sloppy = Optimizer {
            answering: &needs,
            decoys: 0.0,
            regressions: 1.0,
        };
        let reply = proposal_reply(&prompt, Some(0.2), &sloppy);
        assert!(
            reply.contains("<NEW_SKILL_BODY>\nSort.\n</NEW_SKILL_BODY>"),
            "{reply}"
        );
        // Nothing to drop: the reply is what it would have been.
        let bare = "<CURRENT_SKILL_BODY>\nSort.\n</CURRENT_SKILL_BODY>\nINPUT: ticket one: refund please\n<NEW_SKILL_BODY>";
        assert_eq!(
            proposal_reply(bare, Some(0.2), &sloppy),
            proposal_reply(bare, Some(0.2), &Optimizer::from(&needs))
        );
    }

    #[test]
    fn a_skill_sensitive_mock_answers_more_tasks_right_the_more_rules_the_skill_has() {
        let answers: HashMap<String, String> = (0..400)
            .map(|i| (format!("task {i}"), format!("answer {i}")))
            .collect();
        let right = |system: &str| {
            let sensitive = Answering::SkillSensitive;
            count(&rights(
                400,
                system,
                &answers,
                &sensitive,
                &Variation::default(),
            ))
        };
        let seed = right("# Skill\n\nDo it.");
        let one = right("# Skill\n\nDo it.\n\n- Check. (rule 0a0b0c)");
        let three = right("- a (rule 1)\n- b (rule 2)\n- c (rule 3)");
        assert!((90..150).contains(&seed), "about 30% of 400: {seed}");
        assert!((190..250).contains(&one), "about 55% of 400: {one}");
        assert_eq!(three, 400);
        assert_eq!(seed, right("# Skill\n\nDo it."), "reproducible");
        let always = count(&rights(
            400,
            "# Skill\n\nDo it.",
            &answers,
            &Answering::Always,
            &Variation::default(),
        ));
        assert_eq!(always, 400);
    }
}
