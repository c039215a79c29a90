//! Drafting a trigger set for a skill: the optimizer model is asked for requests that should
//! load the skill and for near misses (requests that share its keywords but belong to
//! something else, the hard negatives that tell a good description from a keyword list).
//! What comes back is a draft for the user to read, fix and trim, never data to optimize on
//! unread.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use skill_factory_core::Skill;
use skill_factory_llm::{ChatModel, ChatRequest, LlmError};

use crate::metric::text::clip;

/// One drafted query, in skill-creator's eval-set shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drafted {
    /// The user's request.
    pub query: String,
    /// Whether the skill should load for it.
    pub should_trigger: bool,
}

/// Why no draft came.
#[derive(Debug, thiserror::Error)]
pub enum DraftError {
    /// The model could not be asked.
    #[error("the optimizer model could not be asked: {0}")]
    Model(#[from] LlmError),
    /// The reply held no usable list.
    #[error(
        "the optimizer model's reply holds no JSON list of {{\"query\": ..., \"should_trigger\": ...}} items (it began: {0:?}); try again, or a stronger optimizer model"
    )]
    Unreadable(String),
}

/// The prompt for `count` queries about `skill`.
pub fn prompt(skill: &Skill, count: usize) -> String {
    let positives = count.div_ceil(2);
    let negatives = count - positives;
    format!(
        "An agent decides from a skill's name and description alone whether to load the skill for a user's request. Write a trigger set to measure whether it loads this skill when it should.\n\n\
         SKILL NAME: {}\nDESCRIPTION: {}\n\nWHAT THE SKILL SAYS (for context):\n{}\n\n\
         Write {positives} realistic requests a user would type that this skill should handle, varied in wording, length and detail (not all using the description's words), and {negatives} near misses: requests that share its keywords or topic but that the skill does not serve, which a keyword match would wrongly load it for.\n\n\
         Reply with a JSON list only, one object per request: [{{\"query\": \"...\", \"should_trigger\": true}}, {{\"query\": \"...\", \"should_trigger\": false}}]",
        skill.name,
        skill
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        clip(&skill.body, 3000),
    )
}

/// Asks `client` for `count` queries about `skill`; the queries come in the model's order,
/// duplicates and blank ones left out.
pub async fn draft(
    client: &dyn ChatModel,
    skill: &Skill,
    count: usize,
) -> Result<Vec<Drafted>, DraftError> {
    let request = ChatRequest::single(None, prompt(skill, count), 0.7, 4096);
    let reply = client.chat(&request).await?;
    read(&reply.text)
}

/// The drafted queries of a reply: the first JSON list in it (a fenced block included).
pub fn read(reply: &str) -> Result<Vec<Drafted>, DraftError> {
    let unreadable = || DraftError::Unreadable(reply.chars().take(80).collect());
    let start = reply.find('[').ok_or_else(unreadable)?;
    let end = reply.rfind(']').ok_or_else(unreadable)?;
    let list: Vec<Value> = reply
        .get(start..=end)
        .and_then(|text| serde_json::from_str(text).ok())
        .ok_or_else(unreadable)?;
    let mut drafted: Vec<Drafted> = Vec::new();
    for item in list {
        let Ok(item) = serde_json::from_value::<Drafted>(item) else {
            continue;
        };
        let query = item.query.trim();
        if query.is_empty() || drafted.iter().any(|d| d.query == query) {
            continue;
        }
        drafted.push(Drafted {
            query: query.to_owned(),
            should_trigger: item.should_trigger,
        });
    }
    if drafted.is_empty() {
        return Err(unreadable());
    }
    Ok(drafted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_list_is_read_and_bad_items_are_left_out() {
        let reply = "Here you go:\n```json\n[{\"query\": \"sum my bill\", \"should_trigger\": true},\n {\"query\": \" \", \"should_trigger\": true},\n {\"query\": \"sum my bill\", \"should_trigger\": false},\n {\"q\": 1},\n {\"query\": \"design a receipt\", \"should_trigger\": false}]\n```";
        let drafted = read(reply).unwrap();
        assert_eq!(
            drafted,
            [
                Drafted {
                    query: "sum my bill".into(),
                    should_trigger: true
                },
                Drafted {
                    query: "design a receipt".into(),
                    should_trigger: false
                }
            ]
        );
        let error = read("I cannot help with that.").unwrap_err().to_string();
        assert!(error.contains("no JSON list"), "{error}");
    }

    #[test]
    fn the_prompt_asks_for_both_kinds() {
        let skill = Skill::new("receipt-total", "Reads a receipt.", "Say the total.");
        let prompt = prompt(&skill, 5);
        assert!(prompt.contains("Write 3 realistic requests"), "{prompt}");
        assert!(prompt.contains("and 2 near misses"), "{prompt}");
    }
}
