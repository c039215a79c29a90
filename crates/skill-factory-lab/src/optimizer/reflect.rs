//! Reflective rounds: what the proposer model is shown (the failure digest, inside the
//! proposal prompt) and how its reply becomes new questions and framings.
//!
//! The digest puts system-level causes first: a positive the questions never had a chance on
//! (over the state budget, skipped when collected, unanswered) is not a wording problem, and
//! which larger budget would admit it is the most useful thing to say about it. Then how each
//! pool question separates on train, then the judged misses and the false flags with their
//! answers. Only training examples are shown.
//!
//! A reply is read leniently (a fenced block, comments and trailing commas are fine) and
//! strictly at the same time (no question about one example can be told apart, so none is
//! checked; but a frame that changes an existing one's text, or a reply with no usable
//! question and no pipeline change, is unusable, with the reason kept).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;
use skill_factory_pycompat::float::thousands;
use skill_factory_pycompat::repr;

use crate::LabError;
use crate::answers::table::AnswerTable;
use crate::data::dataset::{Example, Status};
use crate::data::split::Split;
use crate::measure::evaluate::QuestionStats;
use crate::probe::probeset::ProbeSet;
use crate::probe::question::{Bank, QuestionSpec};

/// The proposer's system prompt.
pub const SYSTEM: &str = "You improve a classifier made of yes/no questions that a decision model answers with calibrated probabilities. You propose NEW questions and framings that separate the classes, and pipeline changes when failures are not about wording at all. You never write questions that name specific examples, and you prefer asking about intent and about mismatch between what something claims and what it does over asking whether it has a capability that benign examples also have. Reply with one JSON object only.";

/// The goal shown when the config gives none.
pub const DEFAULT_GOAL: &str = "separate positives from negatives at a low false-positive rate";

/// The proposer's temperature and most output tokens.
pub const TEMPERATURE: f64 = 0.4;
/// Most output tokens of a proposal.
pub const MAX_TOKENS: u32 = 4096;

/// Characters of an example's state shown in the proposer's digest.
pub const EXCERPT_CHARS: usize = 1200;
/// Judged misses shown to the proposer; false flags get half as many.
pub const MOST_SHOWN: usize = 10;
/// Answers shown per example beyond the score's questions.
const MORE_ANSWERS: usize = 5;

/// What the digest is made from.
pub struct DigestInput<'a> {
    /// The current best.
    pub probeset: &'a ProbeSet,
    /// The examples whose failures are shown (train, for the proposer).
    pub train: &'a [Example],
    /// Their split's name as the digest writes it (`TRAINING`).
    pub label: &'a str,
    /// Their answers (every pool question).
    pub table: &'a AnswerTable,
    /// Every pool question on train, best training AUC first.
    pub stats: &'a [QuestionStats],
    /// The largest state budget a proposal may ask for.
    pub max_state_budget: Option<usize>,
    /// Judged misses shown (false flags: half as many, at least one).
    pub shown: usize,
    /// Characters of each example's state shown.
    pub excerpt: usize,
}

/// The failure digest of the current best on train.
pub fn failure_digest(input: &DigestInput) -> String {
    let DigestInput {
        probeset,
        train,
        label,
        table,
        stats,
        max_state_budget,
        shown,
        excerpt,
    } = input;
    let (shown, excerpt) = (*shown, *excerpt);
    let budget = probeset.state_budget;
    let flagged = |ex: &Example| probeset.flags(table.answers(&ex.id));
    let positives: Vec<&Example> = train.iter().filter(|ex| ex.label).collect();
    let negatives: Vec<&Example> = train.iter().filter(|ex| !ex.label).collect();
    let misses: Vec<&Example> = positives
        .iter()
        .copied()
        .filter(|ex| !flagged(ex))
        .collect();
    let false_flags: Vec<&Example> = negatives.iter().copied().filter(|ex| flagged(ex)).collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "PROBE SET: score = {}, threshold {}, state budget {} characters",
        probeset.score.describe(),
        probeset
            .threshold
            .map_or_else(|| "none".to_string(), repr::repr_float),
        thousands(budget as u64)
    );
    let _ = writeln!(
        out,
        "{label}: {}/{} positives detected; {}/{} negatives falsely flagged.",
        positives.len() - misses.len(),
        positives.len(),
        false_flags.len(),
        negatives.len()
    );
    out.push('\n');

    out.push_str("SYSTEM-LEVEL CAUSES (misses the questions never had a chance on):\n");
    if misses.is_empty() {
        out.push_str("- none: every positive was detected\n");
    } else {
        let cause = |ex: &Example| match ex.status(budget) {
            Status::Judged if probeset.score_of(table.answers(&ex.id)).is_none() => {
                Some("not answered (a request failed or a question was never asked)".to_string())
            }
            Status::Judged => None,
            Status::Skipped(_) => Some("skipped".to_string()),
            other => Some(other.name()),
        };
        let causes: Vec<(String, &Example)> = misses
            .iter()
            .filter_map(|ex| cause(ex).map(|c| (c, *ex)))
            .collect();
        let _ = writeln!(
            out,
            "- {} of {} misses were never judged by the model.",
            causes.len(),
            misses.len()
        );
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for (c, _) in &causes {
            *counts.entry(c.as_str()).or_default() += 1;
        }
        let mut counts: Vec<(&str, usize)> = counts.into_iter().collect();
        counts.sort_by_key(|c| std::cmp::Reverse(c.1));
        for (c, n) in counts {
            let _ = writeln!(out, "  - {n}: {c}");
        }
        let sizes: Vec<usize> = causes
            .iter()
            .filter(|(_, ex)| ex.status(budget) == Status::OverBudget)
            .filter_map(|(_, ex)| ex.chars)
            .collect();
        if let (Some(least), Some(most)) = (sizes.iter().min(), sizes.iter().max()) {
            let _ = writeln!(
                out,
                "  - over-budget sizes: {} to {} characters",
                thousands(*least as u64),
                thousands(*most as u64)
            );
            let mut budgets: Vec<usize> = [2 * budget, 4 * budget]
                .into_iter()
                .map(|b| max_state_budget.map_or(b, |cap| b.min(cap)))
                .chain(*max_state_budget)
                .filter(|b| *b > budget)
                .collect();
            budgets.sort_unstable();
            budgets.dedup();
            for candidate in budgets {
                let admitted = sizes.iter().filter(|s| **s <= candidate).count();
                if admitted > 0 {
                    let _ = writeln!(
                        out,
                        "  - a state_budget of {} would admit {admitted} of them",
                        thousands(candidate as u64)
                    );
                }
            }
        }
    }
    out.push('\n');

    out.push_str("QUESTION SEPARATION ON TRAINING (AUC; recall at the false-positive budget, threshold fitted on train):\n");
    let in_set = probeset.bank.ids();
    for s in stats.iter() {
        let rates = s
            .splits
            .get(&Split::Train)
            .map(|q| q.rates)
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "- {}{}: AUC {:.3}, recall {:.0}% at t={:.3}",
            s.qid,
            if in_set.contains(&s.qid) {
                " [in probe set]"
            } else {
                ""
            },
            s.auc(Split::Train),
            rates.recall() * 100.0,
            s.threshold
        );
    }
    out.push('\n');

    let shown_ids: Vec<String> = {
        let mut ids = probeset.score.referenced();
        let more: Vec<String> = stats
            .iter()
            .map(|s| s.qid.clone())
            .filter(|id| !ids.contains(id))
            .take(MORE_ANSWERS)
            .collect();
        ids.extend(more);
        ids
    };
    let show = |out: &mut String, title: &str, examples: &[&Example], most: usize| {
        let _ = writeln!(out, "{title} ({}):", examples.len());
        if examples.is_empty() {
            out.push_str("- none\n");
        }
        for ex in examples.iter().take(most) {
            let _ = writeln!(out, "--- {} (group {}) ---", ex.id, ex.group);
            match &ex.state {
                Some(state) => {
                    let cut: String = state.chars().take(excerpt).collect();
                    out.push_str(&cut);
                    if state.chars().count() > excerpt {
                        out.push_str(" ...[truncated]");
                    }
                    out.push('\n');
                }
                None => out.push_str("(only its cached answers exist: no text)\n"),
            }
            let answers = table.answers(&ex.id);
            let parts: Vec<String> = shown_ids
                .iter()
                .map(|id| match answers.get(id) {
                    Some(p) => format!("{id}={p:.2}"),
                    None => format!("{id}=?"),
                })
                .collect();
            let _ = writeln!(out, "P(true): {}", parts.join(", "));
        }
        if examples.len() > most {
            let _ = writeln!(out, "... and {} more", examples.len() - most);
        }
    };
    let judged_misses: Vec<&Example> = misses
        .iter()
        .copied()
        .filter(|ex| {
            ex.status(budget) == Status::Judged
                && probeset.score_of(table.answers(&ex.id)).is_some()
        })
        .collect();
    show(
        &mut out,
        "MISSED POSITIVES THAT WERE JUDGED",
        &judged_misses,
        shown,
    );
    out.push('\n');
    show(&mut out, "FALSE FLAGS", &false_flags, (shown / 2).max(1));
    out
}

/// What the prompt says around the digest.
pub struct PromptInput<'a> {
    /// The config's goal (empty: the default).
    pub goal: &'a str,
    /// Every question and framing of the pool.
    pub pool: &'a Bank,
    /// The current best.
    pub probeset: &'a ProbeSet,
    /// The digest.
    pub digest: &'a str,
    /// Most new questions taken.
    pub max_new: usize,
    /// The largest state budget a proposal may set.
    pub max_state_budget: Option<usize>,
}

/// The user message of a proposal request.
pub fn proposal_prompt(input: &PromptInput) -> String {
    let mut out = String::new();
    let goal = if input.goal.trim().is_empty() {
        DEFAULT_GOAL
    } else {
        input.goal.trim()
    };
    let _ = writeln!(out, "GOAL: {goal}\n");
    out.push_str("EXISTING FRAMINGS (a framing is the preamble sent before a question):\n");
    if input.pool.frames.is_empty() {
        out.push_str("- none\n");
    }
    for (name, text) in &input.pool.frames {
        let _ = writeln!(out, "- \"{name}\": {text}");
    }
    out.push('\n');
    out.push_str("CURRENT QUESTIONS (last line of each):\n");
    for (id, question) in input.probeset.compiled_questions().unwrap_or_default() {
        let last = question.instructions.lines().last().unwrap_or_default();
        let _ = writeln!(out, "- {id}: {last}");
    }
    out.push('\n');
    out.push_str(input.digest);
    out.push('\n');
    let _ = writeln!(
        out,
        "Propose up to {} new questions. Each is a yes/no question with a 'true' and a 'false' criterion written as full sentences ('Yes: ...', 'No: ...'). Ask what the failures above have in common, not about any one example. You may add framings and ask a question under several.",
        input.max_new
    );
    match input.max_state_budget {
        Some(cap) => {
            let _ = writeln!(
                out,
                "You may set \"pipeline\": {{\"state_budget\": N}} with N <= {} if misses were never sent.",
                thousands(cap as u64)
            );
        }
        None => out.push_str("The state budget is fixed.\n"),
    }
    out.push_str("\nReply with exactly one JSON object:\n{\"rationale\": \"what the failures share and why these questions catch it\",\n \"frames\": {\"<new_frame_name>\": \"<framing text>\"},\n \"questions\": [{\"id\": \"<snake_case>\", \"question\": \"<question>\", \"true\": \"Yes: ...\", \"false\": \"No: ...\", \"frames\": [\"<frame name>\"]}],\n \"pipeline\": {}}");
    out
}

/// A usable proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// Why, as the model says.
    pub rationale: String,
    /// The new questions, with the frames they use.
    pub bank: Bank,
    /// The state budget it asks for, when it asks for one (clamped to the cap).
    pub state_budget: Option<usize>,
}

/// The JSON object of a reply.
fn reply_object(reply: &str) -> Result<serde_json::Map<String, Value>, LabError> {
    let mut text = reply;
    if let Some(start) = reply.find("```") {
        let after = &reply[start + 3..];
        let after = after.strip_prefix("json").unwrap_or(after);
        if let Some(end) = after.find("```") {
            text = &after[..end];
        }
    }
    let (Some(first), Some(last)) = (text.find('{'), text.rfind('}')) else {
        return Err(LabError::invalid("no JSON object in the reply"));
    };
    if last < first {
        return Err(LabError::invalid("no JSON object in the reply"));
    }
    let body = &text[first..=last];
    let parsed = serde_json::from_str::<Value>(body).or_else(|_| {
        // Models write JSON with comments and trailing commas: one more try without them.
        let uncommented: Vec<&str> = body
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect();
        let mut cleaned = uncommented.join("\n");
        for closer in ['}', ']'] {
            while let Some(at) = trailing_comma(&cleaned, closer) {
                cleaned.remove(at);
            }
        }
        serde_json::from_str::<Value>(&cleaned)
    });
    match parsed {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(LabError::invalid("the reply's JSON is not an object")),
        Err(_) => Err(LabError::invalid("invalid JSON in the reply")),
    }
}

/// The position of a comma followed only by whitespace and then `closer`.
fn trailing_comma(text: &str, closer: char) -> Option<usize> {
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b',' {
            let rest = text[i + 1..].trim_start();
            if rest.starts_with(closer) {
                return Some(i);
            }
        }
    }
    None
}

/// `id` as a question id: lower case, every run of other characters than `a-z0-9_` one `_`,
/// no `_` at either end; `q` when nothing is left.
fn base_id(id: &str) -> String {
    let mut out = String::new();
    let mut gap = false;
    for c in id.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
            out.push(c);
            gap = false;
        } else if !gap {
            out.push('_');
            gap = true;
        }
    }
    let trimmed = out.trim_matches('_');
    if trimmed.is_empty() {
        "q".into()
    } else {
        trimmed.into()
    }
}

fn truthy_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Null | Value::Bool(false) => None,
        Value::String(_) => None,
        other => Some(repr::str_json(other)),
    }
}

/// Reads a reply against the pool; `budget` is the current state budget.
pub fn parse_proposal(
    reply: &str,
    pool: &Bank,
    max_new: usize,
    max_state_budget: Option<usize>,
    budget: usize,
) -> Result<Proposal, LabError> {
    let object = reply_object(reply)?;
    let mut frames = pool.frames.clone();
    if let Some(Value::Object(given)) = object.get("frames") {
        for (name, text) in given {
            let Some(text) = text.as_str().filter(|t| !t.trim().is_empty()) else {
                continue;
            };
            match frames.get(name) {
                Some(existing) if existing != text => {
                    return Err(LabError::invalid(format!(
                        "frame {} already exists with different text",
                        repr::repr_str(name)
                    )));
                }
                Some(_) => {}
                None => {
                    frames.insert(name.clone(), text.to_string());
                }
            }
        }
    }
    let mut specs: Vec<(String, QuestionSpec)> = Vec::new();
    let items = object
        .get("questions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for item in items.iter().take(max_new) {
        let Some(item) = item.as_object() else {
            continue;
        };
        let (Some(if_true), Some(if_false)) = (
            truthy_text(item.get("true")),
            truthy_text(item.get("false")),
        ) else {
            continue;
        };
        let base = base_id(item.get("id").and_then(Value::as_str).unwrap_or("q"));
        let wanted: Vec<&str> = item
            .get("frames")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|name| frames.contains_key(*name))
                    .collect()
            })
            .unwrap_or_default();
        let question = truthy_text(item.get("question"));
        let instructions = truthy_text(item.get("instructions"));
        let expanded: Vec<(String, String, QuestionSpec)> = match (&question, &instructions) {
            (Some(q), _) if !wanted.is_empty() => {
                Bank::expand(&base, q, &if_true, &if_false, &wanted)
                    .into_iter()
                    .zip(wanted.iter())
                    .map(|((_, spec), frame)| (base.clone(), format!("@{frame}"), spec))
                    .collect()
            }
            (q, i) if q.is_some() || i.is_some() => vec![(
                base.clone(),
                String::new(),
                QuestionSpec::Whole {
                    instructions: i.clone().or_else(|| q.clone()).unwrap_or_default(),
                    if_true: if_true.clone(),
                    if_false: if_false.clone(),
                },
            )],
            _ => continue,
        };
        for (base, suffix, spec) in expanded {
            let compiled = spec
                .compile(&frames)
                .map_err(|e| e.within(&format!("question {base}{suffix}")))?;
            let mut n = 1;
            loop {
                let id = if n == 1 {
                    format!("{base}{suffix}")
                } else {
                    format!("{base}_{n}{suffix}")
                };
                let taken = specs.iter().any(|(other, _)| *other == id);
                match pool.compile_one(&id) {
                    // The same question under the same id: not new.
                    Ok(existing) if existing == compiled => break,
                    Ok(_) => {}
                    Err(_) if !taken => {
                        specs.push((id, spec.clone()));
                        break;
                    }
                    Err(_) => {}
                }
                n += 1;
            }
        }
    }
    let used: Vec<&str> = specs.iter().filter_map(|(_, spec)| spec.frame()).collect();
    let bank = Bank {
        frames: frames
            .iter()
            .filter(|(name, _)| used.contains(&name.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        specs: specs.into_iter().collect(),
    };
    let state_budget = match (
        max_state_budget,
        object.get("pipeline").and_then(|p| p.get("state_budget")),
    ) {
        (Some(cap), Some(value)) => value.as_f64().map(|n| (n.max(1.0) as usize).clamp(1, cap)),
        _ => None,
    };
    let changes_budget = state_budget.is_some_and(|b| b != budget);
    if bank.is_empty() && !changes_budget {
        return Err(LabError::invalid(
            "the proposal has no usable question and no pipeline change",
        ));
    }
    Ok(Proposal {
        rationale: object
            .get("rationale")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        bank,
        state_budget: state_budget.filter(|_| changes_budget),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pool() -> Bank {
        Bank::from_json(&json!({
            "frames": {"reviewer": "You review."},
            "questions": {"claims@reviewer": {"frame": "reviewer", "question": "Claims?", "true": "Yes: t", "false": "No: f"}},
        }))
        .unwrap()
    }

    #[test]
    fn a_reply_with_fences_comments_and_trailing_commas_is_read() {
        let reply = "Here:\n```json\n{\n  // the idea\n  \"rationale\": \"r\",\n  \"frames\": {\"auditor\": \"You audit.\"},\n  \"questions\": [{\"id\": \"Hidden Change!\", \"question\": \"Hidden?\", \"true\": \"Yes: h\", \"false\": \"No: n\", \"frames\": [\"reviewer\", \"auditor\", \"nope\"]},],\n}\n```";
        let p = parse_proposal(reply, &pool(), 6, None, 1000).unwrap();
        assert_eq!(p.rationale, "r");
        assert_eq!(
            p.bank.ids(),
            ["hidden_change@reviewer", "hidden_change@auditor"]
        );
        assert_eq!(
            p.bank.frames.keys().collect::<Vec<_>>(),
            ["reviewer", "auditor"]
        );
        assert_eq!(p.state_budget, None);
    }

    #[test]
    fn ids_stay_unique_and_an_identical_question_is_not_new() {
        let same = json!({"questions": [
            {"id": "claims", "question": "Claims?", "true": "Yes: t", "false": "No: f", "frames": ["reviewer"]},
            {"id": "claims", "question": "Other?", "true": "Yes: t", "false": "No: f", "frames": ["reviewer"]},
            {"id": "claims", "question": "Third?", "true": "Yes: t", "false": "No: f", "frames": ["reviewer"]},
            {"id": "whole", "question": "Unframed?", "true": "Yes", "false": "No", "frames": ["unknown"]},
            {"id": "bad", "question": "No criteria"},
        ]});
        let p = parse_proposal(&same.to_string(), &pool(), 6, None, 1000).unwrap();
        assert_eq!(
            p.bank.ids(),
            ["claims_2@reviewer", "claims_3@reviewer", "whole"]
        );
        assert!(matches!(p.bank.specs["whole"], QuestionSpec::Whole { .. }));
    }

    #[test]
    fn unusable_replies_say_why() {
        let parse = |reply: &str| {
            parse_proposal(reply, &pool(), 6, Some(2400), 1000)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            parse("I think you should ask better questions."),
            "no JSON object in the reply"
        );
        assert_eq!(
            parse("{\"questions\": [oops]}"),
            "invalid JSON in the reply"
        );
        assert_eq!(
            parse("{\"questions\": []}"),
            "the proposal has no usable question and no pipeline change"
        );
        assert!(
            parse("{\"frames\": {\"reviewer\": \"Different.\"}}")
                .to_string()
                .contains("already exists with different text")
        );
        let budget = parse_proposal(
            "{\"pipeline\": {\"state_budget\": 9000}}",
            &pool(),
            6,
            Some(2400),
            1000,
        )
        .unwrap();
        assert_eq!(budget.state_budget, Some(2400), "clamped to the cap");
        let ignored = parse_proposal(
            "{\"pipeline\": {\"state_budget\": 9000}}",
            &pool(),
            6,
            None,
            1000,
        );
        assert!(ignored.is_err(), "no cap: the budget is fixed");
    }
}
