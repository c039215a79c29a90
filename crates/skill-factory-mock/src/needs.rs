//! The needs mock ([`Answering::Needs`](crate::Answering::Needs)): every known task belongs
//! to a group, and is answered right only when the skill (the system prompt) holds its
//! group's rule line, which ends `(need <tag>)`. Two groups can conflict: when both rules are
//! present, neither works, so no single skill serves every task and a search has to choose.
//!
//! Its optimizer reads the reflection prompt as a careful model would: it finds the known
//! tasks the prompt shows, works out which of them the current skill fails, and adds the rule
//! each of their groups needs (or, when every such rule is there and a conflicting one cancels
//! it, replaces the conflicting one). A prompt that shows no failing task gets a filler line
//! that helps nothing. So a search scores by what it shows its optimizer, not by luck: the
//! more distinct failures a reflection sees, the more rules one edit adds.

use std::collections::{BTreeMap, HashMap};

use sha2::{Digest, Sha256};

use crate::MockError;
use crate::config::for_each_record;

/// Generic instructions the optimizer adds when the prompt shows nothing to fix.
const FILLERS: &[&str] = &[
    "Answer with the requested format only, without any preamble.",
    "Check every field against the input before answering.",
    "Keep the answer on a single line.",
    "Prefer the most specific answer that fits.",
];

/// Known inputs shorter than this are not looked for in prompts, where they could match by
/// accident.
const MIN_INPUT_CHARS: usize = 8;

/// What each known task needs, and which needs cancel each other; a model named in
/// `by_model` needs otherwise, so that targets can disagree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// The user message of a known task → its group.
    groups: HashMap<String, String>,
    /// Pairs of groups whose rules cancel each other.
    conflicts: Vec<(String, String)>,
    /// The models that need otherwise, by the model name a request carries.
    by_model: HashMap<String, ModelNeeds>,
}

/// How one model's needs differ from the others'.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ModelNeeds {
    /// Groups this model answers right without their rule.
    free: Vec<String>,
    /// More pairs of groups whose rules cancel each other on this model.
    conflicts: Vec<(String, String)>,
}

/// How the needs optimizer changes the text it may rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revision {
    /// Append these rule lines, in this order.
    Add(Vec<String>),
    /// Replace the first line with the second (a conflicting rule with the needed one).
    Swap(String, String),
    /// Append this line, which no task needs.
    Filler(String),
    /// Append this rewording of what the skill already says, which changes nothing a task
    /// needs (a decoy: an edit that looks like progress).
    Reword(String),
    /// Remove this line, a rule the skill had (a regression: a rewrite that loses an
    /// instruction).
    Drop(String),
}

impl Revision {
    /// `text` revised.
    pub fn apply(&self, text: &str) -> String {
        match self {
            Revision::Add(lines) => append(text, &lines.join("\n")),
            Revision::Filler(line) | Revision::Reword(line) => append(text, line),
            Revision::Swap(old, new) => text.replacen(old.as_str(), new, 1),
            Revision::Drop(line) => text
                .lines()
                .filter(|l| l.trim() != line.trim())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// What was done, for the reply's rationale.
    pub fn rationale(&self) -> String {
        match self {
            Revision::Add(lines) => format!("Mock optimizer: added {}", lines.join(" ")),
            Revision::Swap(old, new) => {
                format!("Mock optimizer: replaced the conflicting rule {old} with {new}")
            }
            Revision::Filler(_) => {
                "Mock optimizer: no failure shown, added a general instruction.".to_string()
            }
            Revision::Reword(_) => {
                "Mock optimizer: reworded the instructions so the failing cases read them right."
                    .to_string()
            }
            Revision::Drop(_) => {
                "Mock optimizer: tightened the instructions, leaving out what seemed redundant."
                    .to_string()
            }
        }
    }
}

/// `text` with `lines` after a blank line.
fn append(text: &str, lines: &str) -> String {
    let text = text.trim_end();
    if text.is_empty() {
        lines.to_string()
    } else {
        format!("{text}\n\n{lines}")
    }
}

impl Needs {
    /// Groups from `answers` (each task's group is its answer) with `overrides` (input →
    /// group, from the `need` field of a dataset line) taking precedence; `conflicts` name
    /// groups.
    pub fn new(
        answers: &HashMap<String, String>,
        overrides: HashMap<String, String>,
        conflicts: Vec<(String, String)>,
    ) -> Needs {
        let mut groups: HashMap<String, String> = answers
            .iter()
            .map(|(input, answer)| (input.clone(), answer.trim().to_string()))
            .collect();
        groups.extend(overrides);
        Needs {
            groups,
            conflicts,
            by_model: HashMap::new(),
        }
    }

    /// The same needs, but `model` answers the groups `free` right without their rules, and
    /// on it the rules of each pair of `conflicts`, written together, cancel each other too
    /// (rules another model needs can then hurt it; one of them alone does not).
    pub fn with_model(mut self, model: &str, free: &[&str], conflicts: &[(&str, &str)]) -> Needs {
        self.by_model.insert(
            model.to_owned(),
            ModelNeeds {
                free: free.iter().map(|g| (*g).to_owned()).collect(),
                conflicts: conflicts
                    .iter()
                    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                    .collect(),
            },
        );
        self
    }

    /// The short tag of `group`'s rule, so that the rule does not spell out an answer.
    pub fn tag(group: &str) -> String {
        Sha256::digest(group.as_bytes())[..3]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The rule line of `group`.
    pub fn rule(group: &str) -> String {
        let tag = Needs::tag(group);
        format!("- Inputs of kind {tag} follow their own convention: apply it (need {tag}).")
    }

    fn has_rule(text: &str, group: &str) -> bool {
        text.contains(&format!("(need {})", Needs::tag(group)))
    }

    /// The groups whose rules cancel `group`'s.
    fn rivals<'a>(&'a self, group: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.conflicts.iter().filter_map(move |(a, b)| {
            if a == group {
                Some(b.as_str())
            } else if b == group {
                Some(a.as_str())
            } else {
                None
            }
        })
    }

    /// Whether a skill `text` serves `group`: its rule is there and no rival's is.
    pub fn served(&self, text: &str, group: &str) -> bool {
        Needs::has_rule(text, group) && !self.rivals(group).any(|r| Needs::has_rule(text, r))
    }

    /// For a known user message, whether the skill `system` answers it right on `model`.
    pub fn answers_right(&self, model: &str, system: &str, user: &str) -> Option<bool> {
        let group = self
            .groups
            .get(user)
            .or_else(|| self.groups.get(user.trim()))?;
        let Some(own) = self.by_model.get(model) else {
            return Some(self.served(system, group));
        };
        // A pair of this model's own cancels only where both rules are written.
        let cancelled = Needs::has_rule(system, group)
            && own
                .conflicts
                .iter()
                .filter_map(|(a, b)| match group.as_str() {
                    g if g == a => Some(b),
                    g if g == b => Some(a),
                    _ => None,
                })
                .any(|rival| Needs::has_rule(system, rival));
        let served = own.free.contains(group) || self.served(system, group);
        Some(served && !cancelled)
    }

    /// The revision of `shown` (the text the prompt asks to rewrite) for a `prompt` showing
    /// rollouts, where `whole` is the whole skill (the same as `shown` unless one part is
    /// rewritten): the rules of every group among the known tasks the prompt shows that
    /// `whole` fails, most failures first (ties broken by a hash of the prompt and `salt`, the
    /// temperature, so the proposals of one round differ); when all those rules are there but
    /// cancelled, the swap of a rival's rule for the most failing group's.
    pub fn revise(&self, prompt: &str, shown: &str, whole: &str, salt: &str) -> Revision {
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for (input, group) in &self.groups {
            if input.trim().chars().count() >= MIN_INPUT_CHARS
                && prompt.contains(input.trim())
                && !self.served(whole, group)
            {
                *votes.entry(group.as_str()).or_default() += 1;
            }
        }
        let draw = |key: &str| Sha256::digest(format!("{prompt}\u{0}{salt}\u{0}{key}").as_bytes());
        let mut failing: Vec<(&str, usize)> = votes.into_iter().collect();
        failing.sort_by(|(a, va), (b, vb)| vb.cmp(va).then_with(|| draw(a).cmp(&draw(b))));
        let missing: Vec<String> = failing
            .iter()
            .filter(|(group, _)| !Needs::has_rule(whole, group))
            .map(|(group, _)| Needs::rule(group))
            .collect();
        if !missing.is_empty() {
            return Revision::Add(missing);
        }
        let swap = failing.iter().find_map(|(group, _)| {
            self.rivals(group)
                .find(|r| shown.contains(&Needs::rule(r)))
                .map(|rival| Revision::Swap(Needs::rule(rival), Needs::rule(group)))
        });
        swap.unwrap_or_else(|| {
            let start = usize::from(draw("filler")[0]) % FILLERS.len();
            let filler = (0..FILLERS.len())
                .map(|i| FILLERS[(start + i) % FILLERS.len()])
                .find(|line| !shown.contains(line))
                .unwrap_or(FILLERS[start]);
            Revision::Filler(format!("- {filler}"))
        })
    }
}

/// Reads the `need` field of each line of a dataset (or answers) JSONL: input → group. Lines
/// without it are skipped; blank lines too.
pub fn parse_needs(text: &str, origin: &str) -> Result<HashMap<String, String>, MockError> {
    let mut needs = HashMap::new();
    for_each_record(text, origin, |record, bad| {
        let (Some(input), Some(need)) = (record.get("input"), record.get("need")) else {
            return Ok(());
        };
        let (Some(input), Some(need)) = (input.as_str(), need.as_str()) else {
            return Err(bad(
                "`input` and `need` must be strings for --needs".to_string()
            ));
        };
        needs.insert(input.to_string(), need.to_string());
        Ok(())
    })?;
    Ok(needs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(conflicts: &[(&str, &str)]) -> Needs {
        let answers = HashMap::from([
            (
                "ticket one: refund please".to_string(),
                "billing".to_string(),
            ),
            (
                "ticket two: card charged".to_string(),
                "billing".to_string(),
            ),
            ("ticket three: app crashes".to_string(), "bug".to_string()),
            ("ticket four: dark mode?".to_string(), "feature".to_string()),
        ]);
        let conflicts = conflicts
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        Needs::new(&answers, HashMap::new(), conflicts)
    }

    #[test]
    fn a_task_is_answered_right_only_with_its_groups_rule() {
        let needs = needs(&[]);
        let user = "ticket three: app crashes";
        assert_eq!(needs.answers_right("m", "Sort tickets.", user), Some(false));
        let skill = format!("Sort tickets.\n{}", Needs::rule("bug"));
        assert_eq!(needs.answers_right("m", &skill, user), Some(true));
        assert_eq!(needs.answers_right("m", &skill, "unknown"), None);
        assert!(
            !Needs::rule("billing").contains("billing"),
            "no answer in the rule"
        );
    }

    #[test]
    fn conflicting_rules_cancel_each_other() {
        let needs = needs(&[("billing", "bug")]);
        let both = format!("{}\n{}", Needs::rule("billing"), Needs::rule("bug"));
        assert!(!needs.served(&both, "billing") && !needs.served(&both, "bug"));
        assert!(needs.served(&Needs::rule("billing"), "billing"));
    }

    #[test]
    fn the_optimizer_adds_the_rules_the_shown_failures_need_most_failures_first() {
        let needs = needs(&[]);
        let prompt = "INPUT: ticket one: refund please\nINPUT: ticket two: card charged\n\
                      INPUT: ticket three: app crashes";
        let revision = needs.revise(prompt, "Sort.", "Sort.", "0.2");
        assert_eq!(
            revision,
            Revision::Add(vec![Needs::rule("billing"), Needs::rule("bug")])
        );
        let revised = revision.apply("Sort.");
        assert!(needs.served(&revised, "billing") && needs.served(&revised, "bug"));
        assert!(!needs.served(&revised, "feature"), "not shown, not added");
        // A rule already in another part of the skill is not added again.
        let whole = format!("{revised}\n## Part\nSort.");
        assert!(matches!(
            needs.revise(prompt, "Sort.", &whole, "0.2"),
            Revision::Filler(_)
        ));
    }

    #[test]
    fn a_prompt_without_failures_gets_a_filler_that_serves_nobody() {
        let needs = needs(&[]);
        let skill = Needs::rule("feature");
        let revision = needs.revise("INPUT: ticket four: dark mode?", &skill, &skill, "0.2");
        let Revision::Filler(line) = &revision else {
            panic!("{revision:?}");
        };
        assert!(!line.contains("(need"), "{line}");
    }

    #[test]
    fn a_cancelled_rule_is_fixed_by_swapping_out_its_rival() {
        let needs = needs(&[("billing", "bug")]);
        let skill = format!("Sort.\n{}\n{}", Needs::rule("billing"), Needs::rule("bug"));
        let prompt = "INPUT: ticket one: refund please\nINPUT: ticket two: card charged";
        let revision = needs.revise(prompt, &skill, &skill, "0.2");
        assert_eq!(
            revision,
            Revision::Swap(Needs::rule("bug"), Needs::rule("billing"))
        );
        let revised = revision.apply(&skill);
        assert!(needs.served(&revised, "billing") && !needs.served(&revised, "bug"));
    }

    #[test]
    fn need_fields_override_the_answer_as_the_group() {
        let text = "{\"input\": \"ticket one: refund please\", \"expected\": \"x\", \"need\": \"money\"}\n\n{\"input\": \"b\", \"expected\": \"y\"}\n";
        let overrides = parse_needs(text, "data.jsonl").unwrap();
        assert_eq!(overrides.len(), 1);
        let answers = HashMap::from([("ticket one: refund please".to_string(), "x".to_string())]);
        let needs = Needs::new(&answers, overrides, Vec::new());
        assert_eq!(
            needs.answers_right("m", &Needs::rule("money"), "ticket one: refund please"),
            Some(true)
        );
        let error = parse_needs("{\"input\": \"a\", \"need\": 3}", "d.jsonl").unwrap_err();
        assert!(error.to_string().contains("d.jsonl"), "{error}");
    }

    #[test]
    fn a_model_of_its_own_needs_otherwise() {
        let needs = needs(&[]).with_model("b", &["billing", "bug"], &[("billing", "bug")]);
        let billing = "ticket one: refund please";
        let bug = "ticket three: app crashes";
        // Model b answers both without rules; a needs each rule.
        assert_eq!(needs.answers_right("b", "Sort.", billing), Some(true));
        assert_eq!(needs.answers_right("a", "Sort.", billing), Some(false));
        // Both rules, which a needs, cancel each other on b alone.
        let both = format!("Sort.\n{}\n{}", Needs::rule("billing"), Needs::rule("bug"));
        assert_eq!(needs.answers_right("a", &both, bug), Some(true));
        assert_eq!(needs.answers_right("b", &both, bug), Some(false));
        assert_eq!(needs.answers_right("b", &both, billing), Some(false));
        // One of them alone is harmless there.
        let one = format!("Sort.\n{}", Needs::rule("billing"));
        assert_eq!(needs.answers_right("b", &one, billing), Some(true));
        assert_eq!(needs.answers_right("b", &one, bug), Some(true));
    }
}
