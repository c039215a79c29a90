//! What the mock answers: a known answer for the user message, else a deterministic judge
//! verdict for LLM-judge prompts, else a canned line picked by a hash of the request.
//! Identical requests always get identical answers.

use std::collections::HashMap;

use serde_json::{Map, json};
use sha2::{Digest, Sha256};

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

const OUTPUT_HEADER: &str = "ASSISTANT OUTPUT:";
const REFERENCE_HEADER: &str = "REFERENCE ANSWER (for grading only):";
const RUBRIC_HEADER: &str = "RUBRIC:";

/// The reply to a conversation.
pub fn respond(conversation: &Conversation, answers: &HashMap<String, String>) -> String {
    if let Some(answer) = answers
        .get(&conversation.user)
        .or_else(|| answers.get(conversation.user.trim()))
    {
        return answer.clone();
    }
    if conversation.system.to_lowercase().contains("judge") {
        return judge_reply(&conversation.user);
    }
    let digest = sha256(&format!("{}\n{}", conversation.system, conversation.user));
    CANNED[usize::from(digest[0]) % CANNED.len()].to_string()
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
            "TASK INPUT:\nWhat is 2+2?\n\n{OUTPUT_HEADER}\n{output}\n\n{REFERENCE_HEADER}\n{reference}\n\n{RUBRIC_HEADER}\n\
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

    #[test]
    fn known_answers_win() {
        let answers = HashMap::from([("2+2?".to_string(), "4".to_string())]);
        assert_eq!(
            respond(&conversation("You are a judge", "2+2?"), &answers),
            "4"
        );
    }

    #[test]
    fn a_judge_scores_every_rubric_criterion_ten_when_output_equals_reference() {
        let reply = respond(
            &conversation(
                "You are a strict evaluation judge.",
                &judge_prompt("4", "4"),
            ),
            &HashMap::new(),
        );
        let verdict: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(verdict["scores"], json!({"correctness": 10, "format": 10}));
        assert!(verdict["rationale"].is_string());
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
        let a = respond(&conversation("sys", "anything"), &HashMap::new());
        assert_eq!(
            a,
            respond(&conversation("sys", "anything"), &HashMap::new())
        );
        assert!(CANNED.contains(&a.as_str()));
    }
}
