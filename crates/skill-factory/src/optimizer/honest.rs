//! What every candidate must be, whatever optimizer proposed it: a rule for the task, not the
//! task's answer. A body that copies a training or validation task's expected answer, or a long
//! span of its input, scores by memory and says nothing about the tasks it has not seen; it is
//! refused unscored. A body that says a paragraph twice is cleaned to the first time.
//!
//! The rule for answers, in full (texts compared after Unicode case folding and whitespace
//! collapsing, [`normalize`]):
//!
//! * an expected answer counts when exactly one of the tasks the optimizer sees has it, and it
//!   is distinctive: at least [`MIN_ANSWER_CHARS`] characters, or a number with at least
//!   [`MIN_NUMBER_DIGITS`] digits. A label many tasks share (`billing`, `yes`) is a class, and
//!   a skill may name its classes; `4` or `ok` is too common to mean one task;
//! * an answer that is a JSON object or list counts as a whole, and so does each of its string
//!   and number leaves that is distinctive by the same rule (a vendor's name, a date, a total);
//! * it is copied when it stands in the body as whole words (not inside a longer word or
//!   number) and the seed's body does not already hold it.
//!
//! An input is copied when the body holds [`INPUT_SPAN_CHARS`] or more consecutive characters
//! of it that the seed's body does not. The held-out test split is never given to this check:
//! the optimizer never reads it, and the check is the optimizer's.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use skill_factory_core::Task;

use crate::metric::text::normalize;

/// The shortest answer (in characters, normalized) that counts as one task's own.
pub const MIN_ANSWER_CHARS: usize = 4;

/// The fewest digits a number needs to count as one task's own answer.
pub const MIN_NUMBER_DIGITS: usize = 3;

/// The shortest span of an input (in characters, normalized) that counts as copied.
pub const INPUT_SPAN_CHARS: usize = 40;

/// The fewest words a whole input needs to count as copied into a description.
pub const MIN_QUERY_WORDS: usize = 3;

/// The start of every refusal reason, for the report's count.
pub const COPIES: &str = "copies task ";

/// The start of the warning of a body cleaned of repeated paragraphs, for the report's count.
pub const REPEATS_REMOVED: &str = "repeated paragraphs removed";

/// Inputs are indexed by windows of this many characters at every multiple of it: a copied span
/// of [`INPUT_SPAN_CHARS`] always holds one whole window.
const WINDOW: usize = INPUT_SPAN_CHARS / 2;

/// What the candidates of one run must not copy.
#[derive(Debug, Default)]
pub struct Honesty {
    /// Distinctive answers of one task each that the seed does not hold: (normalized answer,
    /// task id).
    answers: Vec<(String, String)>,
    /// Normalized inputs by task id.
    inputs: Vec<(String, Vec<char>)>,
    /// Windows of the inputs: (window, input index, position).
    windows: HashMap<Vec<char>, Vec<(usize, usize)>>,
    /// The seed's body, normalized.
    seed: String,
}

impl Honesty {
    /// The check for a run whose seed body is `seed_body` and whose optimizer sees `tasks`
    /// (training and validation, never test).
    pub fn new<'t>(seed_body: &str, tasks: impl IntoIterator<Item = &'t Task>) -> Honesty {
        let tasks: Vec<&Task> = tasks.into_iter().collect();
        let seed = normalize(seed_body);
        let mut owners: HashMap<String, HashSet<&str>> = HashMap::new();
        for task in &tasks {
            for answer in task.expected.iter().flat_map(|e| answer_parts(e)) {
                owners.entry(answer).or_default().insert(task.id.as_str());
            }
        }
        let mut answers: Vec<(String, String)> = owners
            .into_iter()
            .filter(|(answer, owners)| {
                owners.len() == 1 && distinctive(answer) && !holds_words(&seed, answer)
            })
            .map(|(answer, tasks)| {
                let id = tasks.into_iter().next().unwrap_or_default().to_string();
                (answer, id)
            })
            .collect();
        // The longest first: a whole answer is named before one of its leaves.
        answers.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.1.cmp(&b.1)));
        let inputs: Vec<(String, Vec<char>)> = tasks
            .iter()
            .map(|task| (task.id.clone(), normalize(&task.input).chars().collect()))
            .collect();
        let mut windows: HashMap<Vec<char>, Vec<(usize, usize)>> = HashMap::new();
        for (index, (_, chars)) in inputs.iter().enumerate() {
            let mut at = 0;
            while at + WINDOW <= chars.len() {
                windows
                    .entry(chars[at..at + WINDOW].to_vec())
                    .or_default()
                    .push((index, at));
                at += WINDOW;
            }
        }
        Honesty {
            answers,
            inputs,
            windows,
            seed,
        }
    }

    /// Why `body` is refused, if it copies a task's answer or input.
    pub fn copied(&self, body: &str) -> Option<String> {
        let text = normalize(body);
        for (answer, id) in &self.answers {
            if holds_words(&text, answer) {
                return Some(format!("{COPIES}{id}'s expected answer ({answer:?})"));
            }
        }
        self.copied_input(&text).map(|id| {
            format!("{COPIES}{id}'s input (a span of {INPUT_SPAN_CHARS} characters or more)")
        })
    }

    /// Why a new `description` is refused, if it copies what [`Honesty::copied`] refuses in
    /// a body, or a whole task input of [`MIN_QUERY_WORDS`] words or more (a trigger set's
    /// queries are shorter than an input span) that `parent` (the description it rewrites)
    /// does not hold: a description that lists the training queries loads for them by memory.
    pub fn copied_description(&self, description: &str, parent: &str) -> Option<String> {
        let text = normalize(description);
        let parent = normalize(parent);
        let whole = self.inputs.iter().find(|(_, chars)| {
            let input: String = chars.iter().collect();
            // The query's own closing `?` or `.` is not what makes it a copy.
            let input = input.trim_matches(|c: char| !c.is_alphanumeric());
            input.split_whitespace().count() >= MIN_QUERY_WORDS
                && holds_words(&text, input)
                && !holds_words(&parent, input)
        });
        if let Some((id, _)) = whole {
            return Some(format!("{COPIES}{id}'s input word for word"));
        }
        self.copied(description)
            .filter(|_| self.copied(&parent).is_none())
    }

    /// The id of a task whose input shares a span of [`INPUT_SPAN_CHARS`] characters with
    /// `text` (normalized) that the seed does not hold.
    fn copied_input(&self, text: &str) -> Option<&str> {
        let chars: Vec<char> = text.chars().collect();
        if chars.len() < INPUT_SPAN_CHARS {
            return None;
        }
        for start in 0..=chars.len() - WINDOW {
            let Some(places) = self.windows.get(&chars[start..start + WINDOW]) else {
                continue;
            };
            for &(index, at) in places {
                let input = &self.inputs[index].1;
                let before = common_before(&chars, start, input, at);
                let after = common_after(&chars, start + WINDOW, input, at + WINDOW);
                if before + WINDOW + after >= INPUT_SPAN_CHARS {
                    let span: String = chars[start - before..start + WINDOW + after]
                        .iter()
                        .collect();
                    if !self.seed.contains(&span) {
                        return Some(&self.inputs[index].0);
                    }
                }
            }
        }
        None
    }
}

/// The body with every paragraph (a block between blank lines) that repeats an earlier one,
/// compared normalized, left out; and how many were left out.
pub fn without_repeated_paragraphs(body: &str) -> (String, usize) {
    let mut seen: HashSet<String> = HashSet::new();
    let mut kept: Vec<&str> = Vec::new();
    let mut removed = 0;
    for paragraph in body.split("\n\n") {
        let key = normalize(paragraph);
        if key.is_empty() || seen.insert(key) {
            kept.push(paragraph);
        } else {
            removed += 1;
        }
    }
    if removed == 0 {
        return (body.to_string(), 0);
    }
    (kept.join("\n\n"), removed)
}

/// The parts of an expected answer that can be copied: the whole, and for JSON each string and
/// number leaf; all normalized.
fn answer_parts(expected: &str) -> Vec<String> {
    let mut parts = vec![normalize(expected)];
    if let Ok(value @ (Value::Object(_) | Value::Array(_))) =
        serde_json::from_str::<Value>(expected)
    {
        leaves(&value, &mut parts);
    }
    parts.retain(|part| !part.is_empty());
    parts.dedup();
    parts
}

fn leaves(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(normalize(text)),
        Value::Number(number) => out.push(number.to_string()),
        Value::Array(items) => items.iter().for_each(|item| leaves(item, out)),
        Value::Object(map) => map.values().for_each(|item| leaves(item, out)),
        Value::Null | Value::Bool(_) => {}
    }
}

/// Whether an answer is distinctive enough to mean one task (see the module doc).
fn distinctive(answer: &str) -> bool {
    let digits = answer.chars().filter(char::is_ascii_digit).count();
    let numeric = answer
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '-' | '+'));
    if numeric {
        digits >= MIN_NUMBER_DIGITS
    } else {
        answer.chars().count() >= MIN_ANSWER_CHARS
    }
}

/// Whether `needle` stands in `text` as whole words: neither directly after nor directly before
/// a letter or digit.
fn holds_words(text: &str, needle: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    text.match_indices(needle).any(|(at, _)| {
        !word(text[..at].chars().next_back()) && !word(text[at + needle.len()..].chars().next())
    })
}

/// How many characters before `a[a_at]` and `b[b_at]` are equal, going backwards.
fn common_before(a: &[char], a_at: usize, b: &[char], b_at: usize) -> usize {
    (1..=a_at.min(b_at))
        .take_while(|k| a[a_at - k] == b[b_at - k])
        .count()
}

/// How many characters from `a[a_at]` and `b[b_at]` on are equal.
fn common_after(a: &[char], a_at: usize, b: &[char], b_at: usize) -> usize {
    a.get(a_at..)
        .unwrap_or_default()
        .iter()
        .zip(b.get(b_at..).unwrap_or_default())
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod description_tests {
    use super::*;

    #[test]
    fn a_description_may_not_list_a_query_word_for_word() {
        let tasks = [
            Task::new("q1", "What did I pay on this bill?"),
            Task::new("q2", "Total?"),
        ];
        let honesty = Honesty::new("Body.", tasks.iter());
        let reason = honesty
            .copied_description(
                "Use it for requests such as: what did I pay on this bill.",
                "Reads receipts.",
            )
            .unwrap();
        assert!(reason.contains("q1"), "{reason}");
        assert_eq!(
            honesty.copied_description("Use it for bills, payments and totals.", "Reads receipts."),
            None
        );
        // A query of one word is a word, not a copy; a query the parent held is not new.
        assert_eq!(honesty.copied_description("Total? Yes.", "x"), None);
        assert_eq!(
            honesty.copied_description(
                "What did I pay on this bill? Reads receipts.",
                "What did I pay on this bill?"
            ),
            None
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, input: &str, expected: &str) -> Task {
        Task::new(id, input).with_expected(expected)
    }

    fn receipts() -> Vec<Task> {
        vec![
            task(
                "r1",
                "CORNER CAFE\nLatte 4.20\nCroissant 3.10\nTotal 20.45\nThank you for visiting!",
                "20.45",
            ),
            task("r2", "BOOKS & CO\nNovel 12.00\nAmount due 12.00", "12.00"),
            task("r3", "GAS\nAmount due 4", "4"),
        ]
    }

    const SEED: &str = "Answer with the receipt's total.";

    #[test]
    fn a_body_that_states_one_tasks_answer_is_refused() {
        let honesty = Honesty::new(SEED, &receipts());
        let reason = honesty
            .copied("Answer with the total, in digits.\n\nThe correct answer is 20.45.")
            .expect("copied");
        assert_eq!(reason, "copies task r1's expected answer (\"20.45\")");
        assert!(reason.starts_with(COPIES));
    }

    #[test]
    fn rules_short_answers_and_numbers_inside_others_are_no_copies() {
        let honesty = Honesty::new(SEED, &receipts());
        for body in [
            // A rule with an example that is no task's answer.
            "Answer with the total in digits, for example 12.40, from the line Total or Amount due.",
            // `4` is too common to mean task r3.
            "Answer in at most 4 characters.",
            // 12.00 inside a longer number is not the answer standing alone.
            "Amounts look like 112.005 or 12.0050; write them as they appear.",
            // Yes/no rules.
            "Answer yes or no.",
        ] {
            assert_eq!(honesty.copied(body), None, "{body}");
        }
    }

    #[test]
    fn an_answer_the_seed_already_holds_or_many_tasks_share_is_allowed() {
        let seed = "Answer with the total. A receipt of 20.45 reads 20.45.";
        let honesty = Honesty::new(seed, &receipts());
        assert_eq!(honesty.copied("Say 20.45 when the total is 20.45."), None);
        let labels = vec![
            task("a", "My card was charged twice", "billing"),
            task("b", "Refund please", "billing"),
            task("c", "The app crashes", "bug"),
        ];
        let honesty = Honesty::new("Classify the ticket.", &labels);
        assert_eq!(
            honesty.copied("Answer billing for payment problems, bug for crashes."),
            None
        );
    }

    #[test]
    fn a_long_span_of_an_input_is_refused_and_a_short_one_is_not() {
        let mut tasks = receipts();
        tasks.push(task(
            "m1",
            "Please summarize the following meeting notes about the quarterly roadmap review.",
            "A summary.",
        ));
        let honesty = Honesty::new(SEED, &tasks);
        assert_eq!(
            honesty
                .copied(
                    "Summarize the following meeting notes about the quarterly roadmap, briefly."
                )
                .as_deref(),
            Some("copies task m1's input (a span of 40 characters or more)")
        );
        let copied = honesty.copied(
            "For a receipt like\n  Latte 4.20 Croissant 3.10 Total 20.45 Thank you\nanswer the total.",
        );
        assert!(copied.is_some_and(|reason| reason.starts_with("copies task r1")),);
        let copied = honesty.copied(
            "The line reads Latte 4.20 Croissant 3.10 TOTAL    20.45 thank you for visiting",
        );
        assert!(
            copied.as_deref().is_some_and(|r| r.contains("r1's")),
            "case and spacing do not hide a copy: {copied:?}"
        );
        assert_eq!(honesty.copied("Look for the line that says Total."), None);
    }

    #[test]
    fn json_answers_count_whole_and_by_their_distinctive_leaves() {
        let invoices = vec![
            task(
                "i1",
                "ACME Corp, total 262.50 USD",
                r#"{"vendor": "ACME Corp", "total": 262.5, "currency": "USD"}"#,
            ),
            task(
                "i2",
                "Globex, total 99.00 USD",
                r#"{"vendor": "Globex", "total": 99.0, "currency": "USD"}"#,
            ),
        ];
        let honesty = Honesty::new("Extract the fields as JSON.", &invoices);
        let reason = honesty
            .copied("If the vendor is ACME Corp the total is 262.5.")
            .expect("a leaf");
        assert!(reason.starts_with("copies task i1"), "{reason}");
        // `USD` is shared by both tasks, and too short anyway.
        assert_eq!(honesty.copied("Currencies are codes such as USD."), None);
    }

    #[test]
    fn a_repeated_paragraph_is_kept_once() {
        let body =
            "Answer with the total.\n\nUse digits.\n\nanswer   with THE total.\n\nUse digits.";
        assert_eq!(
            without_repeated_paragraphs(body),
            ("Answer with the total.\n\nUse digits.".to_string(), 2)
        );
        assert_eq!(
            without_repeated_paragraphs("One.\n\nTwo."),
            ("One.\n\nTwo.".to_string(), 0)
        );
    }
}
