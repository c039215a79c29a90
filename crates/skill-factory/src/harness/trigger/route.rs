//! The routing request of the `api` harness in a trigger run: any model, asked which skill
//! to load for a query, shown the skills the way agents show them.
//!
//! The shape follows what the agents send (checked against the real CLIs on loopback):
//! Claude Code lists project skills to its model as "The following skills are available for
//! use with the Skill tool:" followed by one `- name: description` line each, and Codex lists
//! them under "### Available skills" in the same `- name: description` form. An agent decides
//! from those lines alone, which is what a description is for (the Agent Skills specification:
//! the description "should describe both what the skill does and when to use it"). The
//! system prompt here is:
//!
//! ```text
//! You are an agent that helps a user with their request. A skill is a packaged set of
//! instructions for a particular kind of task; load a skill only when the request is one it
//! covers, and none when no skill covers it.
//!
//! The following skills are available:
//!
//! - <name>: <description>
//! - ...
//!
//! Reply with the exact name of the one skill to load for the user's request, or `none`.
//! Reply with the name alone.
//! ```
//!
//! and the user message is the query, as the user wrote it. The skills are listed by name,
//! so the candidate has no place of its own. The reply is read leniently: surrounding
//! quotes, backticks, a trailing period and case are ignored, and a reply that names no
//! listed skill loads none.

use skill_factory_llm::ChatRequest;

/// The line that opens the listing.
pub const LISTING_HEAD: &str = "The following skills are available:";

/// One listed skill: its name (as installed) and its description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The name an agent would load it by.
    pub name: String,
    /// Its frontmatter description.
    pub description: String,
}

/// The system prompt that lists `skills` (sorted by name).
pub fn system_prompt(skills: &[Listed]) -> String {
    let mut sorted: Vec<&Listed> = skills.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut lines = vec![
        "You are an agent that helps a user with their request. A skill is a packaged set of instructions for a particular kind of task; load a skill only when the request is one it covers, and none when no skill covers it.".to_owned(),
        String::new(),
        LISTING_HEAD.to_owned(),
        String::new(),
    ];
    for skill in sorted {
        let description = skill.description.split_whitespace().collect::<Vec<_>>();
        lines.push(format!("- {}: {}", skill.name, description.join(" ")));
    }
    lines.extend([
        String::new(),
        "Reply with the exact name of the one skill to load for the user's request, or `none`. Reply with the name alone.".to_owned(),
    ]);
    lines.join("\n")
}

/// The request for one query.
pub fn request(
    skills: &[Listed],
    query: &str,
    temperature: f64,
    max_tokens: u32,
    sample: u32,
) -> ChatRequest {
    let mut request = ChatRequest::single(
        Some(system_prompt(skills)),
        query.to_owned(),
        temperature,
        max_tokens,
    );
    request.sample_index = sample;
    request
}

/// The listed skill a reply names, if any.
pub fn chosen<'a>(reply: &str, skills: &'a [Listed]) -> Option<&'a Listed> {
    let first = reply.lines().find(|line| !line.trim().is_empty())?;
    let name = first
        .trim()
        .trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '*' | '.' | ' '))
        .trim_start_matches('/');
    skills.iter().find(|s| s.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skills() -> Vec<Listed> {
        vec![
            Listed {
                name: "receipt-total".into(),
                description: "Reads a receipt\nand reports its total.".into(),
            },
            Listed {
                name: "notes".into(),
                description: "Takes notes.".into(),
            },
        ]
    }

    #[test]
    fn the_listing_is_one_line_per_skill_sorted_by_name() {
        let prompt = system_prompt(&skills());
        assert!(prompt.contains(
            "The following skills are available:\n\n- notes: Takes notes.\n- receipt-total: Reads a receipt and reports its total.\n\nReply"
        ));
    }

    #[test]
    fn the_guide_shows_the_prompt_this_module_sends() {
        let guide = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/guide/triggering.md"),
        )
        .unwrap();
        let skills = [
            Listed {
                name: "receipt-total".into(),
                description: "Answers questions about receipts and bills.".into(),
            },
            Listed {
                name: "expense-report".into(),
                description: "Fills in expense reports and expense claims for trips and conferences, ready to submit for reimbursement.".into(),
            },
        ];
        let shown = format!("```text\n{}\n```", system_prompt(&skills));
        assert!(
            guide.contains(&shown),
            "docs/guide/triggering.md should show:\n{shown}"
        );
    }

    #[test]
    fn a_reply_is_read_leniently_and_an_unknown_name_loads_nothing() {
        let skills = skills();
        for reply in [
            "receipt-total",
            "`receipt-total`",
            "Receipt-Total.\n",
            "\"/receipt-total\"",
        ] {
            assert_eq!(
                chosen(reply, &skills).unwrap().name,
                "receipt-total",
                "{reply}"
            );
        }
        for reply in ["none", "", "I would load receipt-total"] {
            assert!(chosen(reply, &skills).is_none(), "{reply}");
        }
    }
}
