//! The mock optimizer of skill descriptions: the reply to a reflection prompt that rewrites
//! the part `description` (it holds the line `THE PART TO REWRITE: description`), revised
//! from the trigger examples it shows, in the router's own words ([`crate::routing`]), so
//! that an optimization of a description makes the router load the skill more rightly.
//!
//! Each example shows a query (`INPUT:`) and, in its `FEEDBACK:`, whether the skill loaded
//! rightly: a miss ("should have loaded, did not"), a false trigger ("loaded for a query it
//! should not"), or a right case ("loaded, as it should", "did not load, as it should").
//!
//! The revision, deterministic: the router words of the missed queries that the
//! description's positive part lacks extend one sentence `Use it for requests about w1, w2.`
//! (made at the end when absent); the router words of the false-triggered queries found in
//! no query shown as one to load for (misses, and "loaded, as it should") nor in the
//! positive part extend one sentence `Not for requests about x, y.` the same way. A word of
//! a missed query that this `Not for` sentence lists is taken out of it, since it is what
//! kept the skill from loading. Words keep the order they first appear in, each once; a word
//! is left out when it would take the description past 1,024 characters or make it hold a
//! whole query shown. A prompt showing neither misses nor false triggers gets the description back
//! unchanged.

use crate::routing::{router_words, sentences, split_description, word_forms};

/// The line that names the part a reflection prompt rewrites, for a description.
const PART_LINE: &str = "THE PART TO REWRITE: description";
const CURRENT_OPEN: &str = "<CURRENT_SKILL_BODY>";
const CURRENT_CLOSE: &str = "</CURRENT_SKILL_BODY>";
const NEW_OPEN: &str = "<NEW_SKILL_BODY>";
/// How an example block begins (after a newline).
const EXAMPLE_START: &str = "\n--- example (";
/// The sentence listing what the skill is for.
const USE_LEAD: &str = "Use it for requests about ";
/// The sentence listing what the skill is not for.
const NOT_LEAD: &str = "Not for requests about ";

/// The longest description agents accept, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Whether a user message asks to rewrite a skill's description: a reflection prompt (the
/// current text between `<CURRENT_SKILL_BODY>` lines, the answer asked in `<NEW_SKILL_BODY>`
/// tags) whose part to rewrite is `description`.
pub fn is_description_prompt(prompt: &str) -> bool {
    let has_line = |wanted: &str| prompt.lines().any(|line| line.trim() == wanted);
    has_line(PART_LINE) && has_line(CURRENT_OPEN) && prompt.contains(NEW_OPEN)
}

/// How a shown example went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The skill should have loaded and did not.
    Missed,
    /// The skill loaded for a query it should not have.
    FalseTrigger,
    /// The skill loaded, as it should.
    Loaded,
    /// Anything else (a right skip, or feedback of another kind).
    Other,
}

/// The examples a prompt shows: each query with its outcome.
fn examples(prompt: &str) -> Vec<(String, Outcome)> {
    format!("\n{prompt}")
        .split(EXAMPLE_START)
        .skip(1)
        .filter_map(|block| {
            let (_, rest) = block.split_once("\nINPUT:")?;
            let (query, rest) = rest.split_once("\nSKILL OUTPUT:")?;
            let (_, feedback) = rest.split_once("\nFEEDBACK:")?;
            let feedback = feedback.trim_start().to_lowercase();
            let outcome = if feedback.starts_with("should have loaded, did not") {
                Outcome::Missed
            } else if feedback.starts_with("loaded for a query it should not") {
                Outcome::FalseTrigger
            } else if feedback.starts_with("loaded, as it should") {
                Outcome::Loaded
            } else {
                Outcome::Other
            };
            Some((query.trim().to_string(), outcome))
        })
        .collect()
}

/// The text between a line `<CURRENT_SKILL_BODY>` and a line `</CURRENT_SKILL_BODY>`.
fn current_description(prompt: &str) -> String {
    prompt
        .lines()
        .skip_while(|line| line.trim() != CURRENT_OPEN)
        .skip(1)
        .take_while(|line| line.trim() != CURRENT_CLOSE)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// The reply to a description prompt: `<RATIONALE>` then the revised description in
/// `<NEW_SKILL_BODY>` tags.
pub fn description_reply(prompt: &str) -> String {
    let (description, rationale) = revise(&current_description(prompt), &examples(prompt));
    format!("<RATIONALE>{rationale}</RATIONALE>\n{NEW_OPEN}\n{description}\n</NEW_SKILL_BODY>")
}

/// The two sentences the optimizer writes: what the skill is for, what it is not for.
const LEADS: [&str; 2] = [USE_LEAD, NOT_LEAD];

/// One of the sentences the optimizer writes: where it is in the description, and its words.
#[derive(Default)]
struct List {
    place: Option<usize>,
    words: Vec<String>,
}

/// A description as its sentences, with the two the optimizer writes picked out.
struct Sentences {
    /// Every sentence, leading whitespace included; the lists are rendered in place of
    /// theirs.
    all: Vec<String>,
    /// The `Use it for` list, then the `Not for` list (as [`LEADS`]).
    lists: [List; 2],
}

impl Sentences {
    fn read(description: &str) -> Sentences {
        let mut read = Sentences {
            all: Vec::new(),
            lists: Default::default(),
        };
        for (at, sentence) in sentences(description).into_iter().enumerate() {
            let body = sentence.trim_start();
            for (lead, list) in LEADS.iter().zip(&mut read.lists) {
                if list.place.is_none()
                    && let Some(items) = body.strip_prefix(lead)
                {
                    list.place = Some(at);
                    list.words = items
                        .trim_end_matches(['.', '!', '?'])
                        .split(',')
                        .map(|item| item.trim().to_string())
                        .filter(|item| !item.is_empty())
                        .collect();
                }
            }
            read.all.push(sentence.to_string());
        }
        read
    }

    /// The description: each sentence, the lists rendered where they were or, new, at the
    /// end (the `Use it for` sentence first); a list left empty is left out.
    fn render(&self) -> String {
        let written = |lead: &str, list: &List| format!("{lead}{}.", list.words.join(", "));
        let mut text = String::new();
        for (at, sentence) in self.all.iter().enumerate() {
            let space = &sentence[..sentence.len() - sentence.trim_start().len()];
            match LEADS
                .iter()
                .zip(&self.lists)
                .find(|(_, list)| list.place == Some(at))
            {
                Some((_, list)) if list.words.is_empty() => {}
                Some((lead, list)) => text.push_str(&format!("{space}{}", written(lead, list))),
                None => text.push_str(sentence),
            }
        }
        for (lead, list) in LEADS.iter().zip(&self.lists) {
            if list.place.is_some() || list.words.is_empty() {
                continue;
            }
            text.truncate(text.trim_end().len());
            if !text.is_empty() {
                if !text.ends_with(['.', '!', '?']) {
                    text.push('.');
                }
                text.push(' ');
            }
            text.push_str(&written(lead, list));
        }
        text.trim().to_string()
    }
}

/// `text` without `<` and `>`, cut at a space to fit [`MAX_DESCRIPTION_CHARS`].
fn tidy(text: &str) -> String {
    let text: String = text.chars().filter(|c| !matches!(c, '<' | '>')).collect();
    if text.chars().count() <= MAX_DESCRIPTION_CHARS {
        return text;
    }
    let cut: String = text.chars().take(MAX_DESCRIPTION_CHARS).collect();
    match cut.rfind(char::is_whitespace) {
        Some(space) => cut[..space].trim_end().to_string(),
        None => cut,
    }
}

/// The revised description and the rationale.
fn revise(current: &str, examples: &[(String, Outcome)]) -> (String, String) {
    let current = tidy(current);
    let queries = |wanted: &[Outcome]| -> Vec<&str> {
        examples
            .iter()
            .filter(|(_, outcome)| wanted.contains(outcome))
            .map(|(query, _)| query.as_str())
            .collect()
    };
    let misses = queries(&[Outcome::Missed]);
    let false_triggers = queries(&[Outcome::FalseTrigger]);
    if misses.is_empty() && false_triggers.is_empty() {
        let rationale = "Mock optimizer: no miss or false trigger shown, the description stays.";
        return (current, rationale.to_string());
    }
    let known = router_words(&split_description(&current).0);
    let wanted: Vec<String> = queries(&[Outcome::Missed, Outcome::Loaded])
        .iter()
        .flat_map(|query| router_words(query))
        .collect();
    let missed_stems: Vec<String> = misses.iter().flat_map(|q| router_words(q)).collect();
    let mut sentences = Sentences::read(&current);
    let nots = &mut sentences.lists[1].words;
    let before = nots.len();
    nots.retain(|word| {
        router_words(word)
            .iter()
            .all(|stem| !missed_stems.contains(stem))
    });
    let freed = before - nots.len();
    let fresh = |queries: &[&str], also_unwanted: bool| -> Vec<String> {
        let mut stems: Vec<String> = Vec::new();
        let mut words = Vec::new();
        for (word, stem) in queries.iter().flat_map(|query| word_forms(query)) {
            if known.contains(&stem)
                || stems.contains(&stem)
                || (also_unwanted && wanted.contains(&stem))
            {
                continue;
            }
            stems.push(stem);
            words.push(word);
        }
        words
    };
    let shown: Vec<String> = examples
        .iter()
        .map(|(query, _)| query.to_lowercase())
        .filter(|query| !query.is_empty())
        .collect();
    let copied = |text: &str| {
        let text = text.to_lowercase();
        shown
            .iter()
            .filter(|query| text.contains(query.as_str()))
            .count()
    };
    let mut added = [0, 0];
    for (slot, words) in [fresh(&misses, false), fresh(&false_triggers, true)]
        .into_iter()
        .enumerate()
    {
        for word in words {
            let stems = router_words(&word);
            if sentences.lists[slot]
                .words
                .iter()
                .any(|listed| router_words(listed) == stems)
            {
                continue;
            }
            let copies = copied(&sentences.render());
            sentences.lists[slot].words.push(word);
            let text = sentences.render();
            if text.chars().count() > MAX_DESCRIPTION_CHARS || copied(&text) > copies {
                sentences.lists[slot].words.pop();
            } else {
                added[slot] += 1;
            }
        }
    }
    let rationale = format!(
        "Mock optimizer: {} words of {} missed queries added to what it is for, {} words of {} false triggers added to what it is not for{}.",
        added[0],
        misses.len(),
        added[1],
        false_triggers.len(),
        if freed > 0 {
            format!(", {freed} words that kept it from loading taken out of what it is not for")
        } else {
            String::new()
        }
    );
    (tidy(&sentences.render()), rationale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::{ListedSkill, route};

    /// A description prompt showing `examples` (query, feedback) for `description`.
    fn prompt(description: &str, examples: &[(&str, &str)]) -> String {
        let mut lines = vec![
            "GOAL: load the skill when it helps.".to_string(),
            "THE WHOLE SKILL BODY, FOR CONTEXT (only one part of it is rewritten now):".to_string(),
            "<WHOLE_SKILL>\n# Receipts\n</WHOLE_SKILL>".to_string(),
            String::new(),
            PART_LINE.to_string(),
            CURRENT_OPEN.to_string(),
            description.to_string(),
            CURRENT_CLOSE.to_string(),
            String::new(),
            "LOWEST-SCORING ROLLOUTS AND THEIR FEEDBACK:".to_string(),
        ];
        for (query, feedback) in examples {
            let score = if feedback.contains("as it should") {
                "1.00"
            } else {
                "0.00"
            };
            lines.push(format!("--- example (score {score}) ---"));
            lines.push(format!("INPUT: {query}"));
            lines.push("SKILL OUTPUT: loaded: none".to_string());
            lines.push(format!("FEEDBACK: {feedback}"));
        }
        lines.push(String::new());
        lines.push(
            "Answer:\n<RATIONALE>...</RATIONALE>\n<NEW_SKILL_BODY>\n...\n</NEW_SKILL_BODY>"
                .to_string(),
        );
        lines.join("\n")
    }

    /// The description in a reply.
    fn proposed(reply: &str) -> &str {
        reply
            .split_once("<NEW_SKILL_BODY>\n")
            .and_then(|(_, rest)| rest.split_once("\n</NEW_SKILL_BODY>"))
            .map(|(description, _)| description)
            .unwrap()
    }

    const MISS: &str = "should have loaded, did not (expected receipt-totals)";
    const FALSE: &str = "loaded for a query it should not have";
    const RIGHT: &str = "loaded, as it should";

    #[test]
    fn only_a_prompt_rewriting_the_description_is_one() {
        let ask = prompt("Sorts receipts.", &[]);
        assert!(is_description_prompt(&ask));
        assert!(
            crate::responder::is_reflection_prompt(&ask),
            "it has the generic tags too"
        );
        assert!(!is_description_prompt(
            &ask.replace(PART_LINE, "THE PART TO REWRITE: ## Steps")
        ));
    }

    #[test]
    fn misses_add_their_words_to_what_the_skill_is_for() {
        let ask = prompt(
            "Sorts receipts.",
            &[
                ("Total my grocery receipts", MISS),
                ("Monthly grocery expenses please", MISS),
            ],
        );
        let reply = description_reply(&ask);
        assert!(reply.starts_with("<RATIONALE>Mock optimizer: "), "{reply}");
        assert!(reply.ends_with("\n</NEW_SKILL_BODY>"), "{reply}");
        let description = proposed(&reply);
        assert_eq!(
            description,
            "Sorts receipts. Use it for requests about total, grocery, monthly, expenses."
        );
        assert_eq!(reply, description_reply(&ask), "deterministic");
        // The router now loads the skill for both.
        let skills = [ListedSkill {
            name: "receipts".to_string(),
            description: description.to_string(),
            path: None,
        }];
        assert_eq!(route(&skills, "Monthly grocery expenses please"), Some(0));
    }

    #[test]
    fn false_triggers_add_the_words_no_wanted_query_has_to_what_it_is_not_for() {
        let ask = prompt(
            "Sorts receipts by date.",
            &[
                ("Sort my photo albums by date", FALSE),
                ("Sort vacation receipts by merchant", RIGHT),
                ("Vacation photo receipts", MISS),
            ],
        );
        let description = proposed(&description_reply(&ask)).to_string();
        assert_eq!(
            description,
            "Sorts receipts by date. Use it for requests about vacation, photo. \
             Not for requests about albums."
        );
        let skills = [ListedSkill {
            name: "receipts".to_string(),
            description,
            path: None,
        }];
        assert_eq!(route(&skills, "Sort my photo albums by date"), None);
        assert_eq!(
            route(&skills, "Sort vacation receipts by merchant"),
            Some(0)
        );
    }

    #[test]
    fn the_written_sentences_are_extended_in_place_without_repeating_a_word() {
        // "photos" kept the skill from a query it should load for: it leaves the not-for list.
        let current = "Sorts receipts. Use it for requests about grocery. Not for requests about photos. Keep it short.";
        let ask = prompt(
            current,
            &[
                ("grocery taxes and invoices", MISS),
                ("Photo albums", FALSE),
                ("photo receipts", MISS),
            ],
        );
        assert_eq!(
            proposed(&description_reply(&ask)),
            "Sorts receipts. Use it for requests about grocery, taxes, invoices, photo. \
             Not for requests about albums. Keep it short."
        );
        let ask = prompt(current, &[("Photo albums", FALSE)]);
        assert_eq!(
            proposed(&description_reply(&ask)),
            "Sorts receipts. Use it for requests about grocery. Not for requests about photos, albums. Keep it short."
        );
    }

    #[test]
    fn a_prompt_without_misses_or_false_triggers_leaves_the_description() {
        let ask = prompt(
            "Sorts receipts.",
            &[
                ("sort receipts", RIGHT),
                ("weather", "did not load, as it should"),
            ],
        );
        let reply = description_reply(&ask);
        assert_eq!(proposed(&reply), "Sorts receipts.");
        assert!(reply.contains("the description stays"), "{reply}");
    }

    #[test]
    fn the_description_stays_within_1024_characters_without_tags_or_whole_queries() {
        let misses: Vec<String> = (0..300)
            .map(|i| format!("quantity{i:03} measurement{i:03}"))
            .collect();
        let mut shown: Vec<(&str, &str)> = misses.iter().map(|q| (q.as_str(), MISS)).collect();
        shown.push(("invoices", MISS));
        let ask = prompt("Sorts <receipts>.", &shown);
        let description = proposed(&description_reply(&ask)).to_string();
        assert!(
            description.chars().count() <= MAX_DESCRIPTION_CHARS,
            "{description}"
        );
        assert!(
            description.chars().count() > 900,
            "filled up: {description}"
        );
        assert!(!description.contains(['<', '>']), "{description}");
        assert!(description.starts_with(
            "Sorts receipts. Use it for requests about quantity000, measurement000, "
        ));
        let alone = prompt("Sorts receipts.", &[("invoices", MISS)]);
        assert_eq!(proposed(&description_reply(&alone)), "Sorts receipts.");
        let long = "word ".repeat(300);
        let ask = prompt(&long, &[("quantity one", MISS)]);
        assert!(proposed(&description_reply(&ask)).chars().count() <= MAX_DESCRIPTION_CHARS);
    }
}
