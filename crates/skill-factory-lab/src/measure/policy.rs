//! Declarative policies: ordered levels (the first means "not detected") and rules, first
//! match wins, that turn (example, answers, score, threshold) into a level, written in the
//! config (`policy:`) or in a YAML file of their own; no Python needed. The same rules are
//! compiled into the TypeScript and Python exports ([`crate::ship::export`]), so production applies
//! exactly the policy the lab measured.
//!
//! ```yaml
//! name: triage
//! levels: [allow, warn, block]
//! rules:
//!   - level: block
//!     when: {score: {gte: 0.9}}
//!   - level: block
//!     when: {all: [{flagged: true}, {metadata: {field: source, equals: public}}]}
//!   - level: warn
//!     when: {any: [{flagged: true}, {answer: {question: touches_ci, gte: 0.8}}]}
//! # no rule matched: the first level
//! ```
//!
//! For anything rules cannot say, `command: [program, args...]` (instead of `rules`) runs a
//! program once and asks it about every example: one JSON line on its standard input
//! (`{"id", "group", "source", "metadata", "answers", "score", "threshold"}`, a missing score
//! `null`), one level name back on its standard output. A relative program path is found
//! beside the file that names it; a program that exits, answers something else than a level
//! or gives no answer within `timeout` seconds (a key of the policy, default 60) fails the
//! command that used it, with the reason. A command policy cannot be compiled into an export.
//!
//! Conditions: `flagged: true|false` (score at or above the threshold), `scored: true|false`
//! (the example has a score), `score: {OP: x}`, `margin: {OP: x}` (the score against the
//! threshold plus x: `margin: {gte: 0.1}` is `score >= threshold + 0.1`),
//! `answer: {question: ID, OP: x}`, `missing: ID` (that question has no answer), `metadata:
//! {field: NAME, equals: v | in: [v, ...] | OP: x}` (`id`, `group` and `source` are the
//! example's own fields, anything else its `metadata`), and `all: [...]`, `any: [...]`,
//! `not: {...}`. OP is `gte`, `gt`, `lte`, `lt` or `eq`; several in one map must all hold. A
//! comparison with a value that is missing (no score, no answer, no such field) is false.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use skill_factory_io::process::{LineChild, LineError};

use crate::LabError;
use crate::data::dataset::Example;
use crate::measure::evaluate::Policy;

/// A policy file (YAML or JSON) as a value.
pub fn read_file(path: &Path) -> Result<Value, LabError> {
    let raw = crate::files::read_text(
        path,
        skill_factory_io::input::CONFIG,
        ": the policy file (levels and rules); check the path",
    )?;
    serde_saphyr::from_str(&raw)
        .map_err(|e| LabError::invalid(format!("{}: not valid YAML: {e}", path.display())))
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// At least.
    Gte,
    /// Above.
    Gt,
    /// At most.
    Lte,
    /// Below.
    Lt,
    /// Equal.
    Eq,
}

const OPS: &[(&str, Op)] = &[
    ("gte", Op::Gte),
    ("gt", Op::Gt),
    ("lte", Op::Lte),
    ("lt", Op::Lt),
    ("eq", Op::Eq),
];

impl Op {
    /// Whether `value OP bound`.
    pub fn holds(self, value: f64, bound: f64) -> bool {
        match self {
            Op::Gte => value >= bound,
            Op::Gt => value > bound,
            Op::Lte => value <= bound,
            Op::Lt => value < bound,
            Op::Eq => value == bound,
        }
    }

    /// The operator as TypeScript and Python write it.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Gte => ">=",
            Op::Gt => ">",
            Op::Lte => "<=",
            Op::Lt => "<",
            Op::Eq => "==",
        }
    }
}

/// One condition of a rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// The score reaches the threshold (or does not).
    Flagged(bool),
    /// The example has a score (or has none: a question it reads was not answered).
    Scored(bool),
    /// The score compares so with each bound.
    Score(Vec<(Op, f64)>),
    /// The score compares so with the threshold plus each offset (`margin: {gte: 0.1}` is
    /// `score >= threshold + 0.1`); false without a threshold.
    Margin(Vec<(Op, f64)>),
    /// A question's answer compares so with each bound.
    Answer(String, Vec<(Op, f64)>),
    /// A question has no answer.
    Missing(String),
    /// An example field or metadata value equals one of these values.
    MetadataIn(String, Vec<Value>),
    /// A numeric example field or metadata value compares so with each bound.
    MetadataCompare(String, Vec<(Op, f64)>),
    /// Every condition holds.
    All(Vec<Condition>),
    /// Some condition holds.
    Any(Vec<Condition>),
    /// The condition does not hold.
    Not(Box<Condition>),
}

/// What a condition reads of one example.
pub struct Facts<'a> {
    /// The example.
    pub example: &'a Example,
    /// Its answers.
    pub answers: &'a HashMap<String, f64>,
    /// Its score, if it has one.
    pub score: Option<f64>,
    /// The threshold, if there is one.
    pub threshold: Option<f64>,
}

impl Facts<'_> {
    /// The example's own field or metadata value called `field`.
    pub fn field(&self, field: &str) -> Option<Value> {
        match field {
            "id" => Some(Value::from(self.example.id.as_str())),
            "group" => Some(Value::from(self.example.group.as_str())),
            "source" => Some(Value::from(self.example.source.as_str())),
            other => self.example.metadata.get(other).cloned(),
        }
    }
}

fn compare(value: Option<f64>, bounds: &[(Op, f64)]) -> bool {
    value.is_some_and(|v| bounds.iter().all(|(op, bound)| op.holds(v, *bound)))
}

impl Condition {
    /// Whether the condition holds for `facts`.
    pub fn holds(&self, facts: &Facts) -> bool {
        match self {
            Condition::Flagged(wanted) => {
                let flagged =
                    matches!((facts.score, facts.threshold), (Some(s), Some(t)) if s >= t);
                flagged == *wanted
            }
            Condition::Scored(wanted) => facts.score.is_some() == *wanted,
            Condition::Score(bounds) => compare(facts.score, bounds),
            Condition::Margin(offsets) => match (facts.score, facts.threshold) {
                (Some(s), Some(t)) => offsets.iter().all(|(op, x)| op.holds(s, t + x)),
                _ => false,
            },
            Condition::Answer(question, bounds) => {
                compare(facts.answers.get(question).copied(), bounds)
            }
            Condition::Missing(question) => !facts.answers.contains_key(question),
            Condition::MetadataIn(field, values) => {
                facts.field(field).is_some_and(|v| values.contains(&v))
            }
            Condition::MetadataCompare(field, bounds) => {
                compare(facts.field(field).and_then(|v| v.as_f64()), bounds)
            }
            Condition::All(all) => all.iter().all(|c| c.holds(facts)),
            Condition::Any(any) => any.iter().any(|c| c.holds(facts)),
            Condition::Not(inner) => !inner.holds(facts),
        }
    }

    /// Every question id the condition reads.
    pub fn questions(&self, into: &mut Vec<String>) {
        match self {
            Condition::Answer(q, _) | Condition::Missing(q) => into.push(q.clone()),
            Condition::All(all) | Condition::Any(all) => all.iter().for_each(|c| c.questions(into)),
            Condition::Not(inner) => inner.questions(into),
            _ => {}
        }
    }
}

/// One rule: the level it assigns and when.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyRule {
    /// The level's index.
    pub level: usize,
    /// When the rule matches.
    pub when: Condition,
}

/// A declarative policy, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySpec {
    /// Its name.
    pub name: String,
    /// The levels, lowest (not detected) first.
    pub levels: Vec<String>,
    /// The rules, first match wins; no match is the first level.
    pub rules: Vec<PolicyRule>,
    /// The program that gives the level instead of rules, and the folder it runs in.
    pub command: Option<(Vec<String>, PathBuf)>,
    /// How long the command may take to answer about one example (`timeout`, seconds).
    pub timeout: Duration,
}

const POLICY_KEYS: &[&str] = &["name", "levels", "rules", "command", "timeout"];

/// How long a command policy may take to answer about one example unless its `timeout`
/// says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest `timeout` accepted: a day, so that a typo cannot make a hung program wait
/// for ever (and the value fits a `Duration`).
const LONGEST_TIMEOUT: f64 = 86_400.0;
const RULE_KEYS: &[&str] = &["level", "when"];
const CONDITIONS: &[&str] = &[
    "flagged", "scored", "score", "margin", "answer", "missing", "metadata", "all", "any", "not",
];

/// `at`: what the error names (file and key path).
fn bad(at: &str, what: impl std::fmt::Display) -> LabError {
    LabError::invalid(format!("{at}: {what}"))
}

fn bounds(at: &str, map: &Map<String, Value>, skip: &[&str]) -> Result<Vec<(Op, f64)>, LabError> {
    let mut found = Vec::new();
    for (key, value) in map {
        if skip.contains(&key.as_str()) {
            continue;
        }
        let Some((_, op)) = OPS.iter().find(|(name, _)| name == key) else {
            return Err(bad(
                at,
                format!(
                    "unknown operator '{key}'; use one of {} (several in one map must all hold)",
                    OPS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ),
            ));
        };
        let Some(number) = value.as_f64().filter(|_| !value.is_boolean()) else {
            return Err(bad(
                &format!("{at}.{key}"),
                format!("{value} is not a number"),
            ));
        };
        found.push((*op, number));
    }
    if found.is_empty() {
        return Err(bad(
            at,
            "no comparison: give gte, gt, lte, lt or eq with a number",
        ));
    }
    Ok(found)
}

fn question_id(
    at: &str,
    value: Option<&Value>,
    known: &dyn Fn(&str) -> bool,
) -> Result<String, LabError> {
    let Some(id) = value.and_then(Value::as_str) else {
        return Err(bad(
            at,
            "needs `question: <id>`, the id of a question of the probe set",
        ));
    };
    if !known(id) {
        return Err(bad(
            at,
            format!("no question '{id}' in the probe set; name one of its questions"),
        ));
    }
    Ok(id.to_string())
}

/// Reads a condition at key path `at`; `known` says whether a question id exists.
pub fn condition(
    at: &str,
    value: &Value,
    known: &dyn Fn(&str) -> bool,
) -> Result<Condition, LabError> {
    let Some(map) = value.as_object().filter(|m| m.len() == 1) else {
        return Err(bad(
            at,
            format!(
                "a condition is a map of exactly one of {}",
                CONDITIONS.join(", ")
            ),
        ));
    };
    let (key, inner) = map.iter().next().expect("one entry");
    let here = format!("{at}.{key}");
    let list = |value: &Value| -> Result<Vec<Condition>, LabError> {
        let Some(items) = value.as_array().filter(|items| !items.is_empty()) else {
            return Err(bad(&here, "needs a non-empty list of conditions"));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| condition(&format!("{here}[{i}]"), item, known))
            .collect()
    };
    Ok(match key.as_str() {
        "flagged" => Condition::Flagged(
            inner
                .as_bool()
                .ok_or_else(|| bad(&here, "is true or false"))?,
        ),
        "scored" => Condition::Scored(
            inner
                .as_bool()
                .ok_or_else(|| bad(&here, "is true or false"))?,
        ),
        "score" => Condition::Score(bounds(
            &here,
            inner
                .as_object()
                .ok_or_else(|| bad(&here, "is a map such as {gte: 0.5}"))?,
            &[],
        )?),
        "margin" => Condition::Margin(bounds(
            &here,
            inner.as_object().ok_or_else(|| {
                bad(
                    &here,
                    "is a map of offsets from the threshold such as {gte: 0.1}",
                )
            })?,
            &[],
        )?),
        "answer" => {
            let map = inner
                .as_object()
                .ok_or_else(|| bad(&here, "is a map such as {question: q, gte: 0.8}"))?;
            let id = question_id(&here, map.get("question"), known)?;
            Condition::Answer(id, bounds(&here, map, &["question"])?)
        }
        "missing" => Condition::Missing(question_id(&here, Some(inner), known)?),
        "metadata" => {
            let map = inner
                .as_object()
                .ok_or_else(|| bad(&here, "is a map such as {field: source, equals: public}"))?;
            let Some(field) = map.get("field").and_then(Value::as_str) else {
                return Err(bad(
                    &here,
                    "needs `field: <name>` (id, group, source or a metadata key)",
                ));
            };
            if let Some(value) = map.get("equals") {
                if map.len() > 2 {
                    return Err(bad(&here, "`equals` stands alone beside `field`"));
                }
                Condition::MetadataIn(field.to_string(), vec![value.clone()])
            } else if let Some(values) = map.get("in") {
                let values = values
                    .as_array()
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| bad(&format!("{here}.in"), "is a non-empty list of values"))?;
                Condition::MetadataIn(field.to_string(), values.clone())
            } else {
                Condition::MetadataCompare(field.to_string(), bounds(&here, map, &["field"])?)
            }
        }
        "all" => Condition::All(list(inner)?),
        "any" => Condition::Any(list(inner)?),
        "not" => Condition::Not(Box::new(condition(&here, inner, known)?)),
        other => {
            return Err(bad(
                at,
                format!(
                    "unknown condition '{other}'; use one of {}",
                    CONDITIONS.join(", ")
                ),
            ));
        }
    })
}

impl PolicySpec {
    /// Reads a policy from `value` (its map), `at` naming where it was written; `known` says
    /// whether a question id is one of the probe set's. A command runs in the working
    /// directory ([`PolicySpec::from_json_in`] names another).
    pub fn from_json(
        at: &str,
        value: &Value,
        known: &dyn Fn(&str) -> bool,
    ) -> Result<PolicySpec, LabError> {
        PolicySpec::from_json_in(at, value, known, Path::new("."))
    }

    /// The policy in the file at `path`; a command of it runs beside the file.
    pub fn load(path: &Path, known: &dyn Fn(&str) -> bool) -> Result<PolicySpec, LabError> {
        let value = read_file(path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        PolicySpec::from_json_in(&path.display().to_string(), &value, known, dir)
    }

    /// [`PolicySpec::from_json`] for a policy written in a file of folder `dir`: a command's
    /// relative program path and its working directory are there.
    pub fn from_json_in(
        at: &str,
        value: &Value,
        known: &dyn Fn(&str) -> bool,
        dir: &Path,
    ) -> Result<PolicySpec, LabError> {
        // The parent of a bare file name is empty: that is the working directory.
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let map = value
            .as_object()
            .ok_or_else(|| bad(at, "a policy is a map with name, levels and rules"))?;
        if let Some(key) = map.keys().find(|k| !POLICY_KEYS.contains(&k.as_str())) {
            let hint = match skill_factory_config::closest(key, POLICY_KEYS) {
                Some(near) => format!("did you mean '{near}'?"),
                None => format!("a policy has {}", POLICY_KEYS.join(", ")),
            };
            return Err(bad(at, format!("unknown key '{key}' ({hint})")));
        }
        let name = match map.get("name") {
            None => "policy".to_string(),
            Some(v) => v
                .as_str()
                .filter(|n| !n.trim().is_empty())
                .ok_or_else(|| bad(&format!("{at}.name"), "is a non-empty text"))?
                .to_string(),
        };
        let levels: Vec<String> = map
            .get("levels")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                bad(
                    &format!("{at}.levels"),
                    "is a list such as [allow, warn, block], lowest first",
                )
            })?
            .iter()
            .map(|l| l.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| bad(&format!("{at}.levels"), "holds level names (text)"))?;
        // Two levels at least, no repeats: the checks of every policy.
        Policy::from_rule(&name, levels.clone(), |_, _, _, _| 0)
            .map_err(|e| bad(&format!("{at}.levels"), e))?;
        let command = match map.get("command") {
            None => None,
            Some(value) => {
                let argv: Option<Vec<String>> = value
                    .as_array()
                    .filter(|argv| !argv.is_empty())
                    .and_then(|argv| {
                        argv.iter()
                            .map(|a| a.as_str().map(str::to_string))
                            .collect()
                    });
                let Some(mut argv) = argv else {
                    return Err(bad(
                        &format!("{at}.command"),
                        "is a list of text, the program and its arguments, such as [python3, policy.py]",
                    ));
                };
                if map.contains_key("rules") {
                    return Err(bad(at, "give either `rules` or `command`, not both"));
                }
                if argv[0].contains('/') && Path::new(&argv[0]).is_relative() {
                    argv[0] = dir.join(&argv[0]).display().to_string();
                }
                Some((argv, dir.to_path_buf()))
            }
        };
        let timeout = match (map.get("timeout"), &command) {
            (None, _) => DEFAULT_TIMEOUT,
            (Some(_), None) => {
                return Err(bad(
                    &format!("{at}.timeout"),
                    "is how long a `command` may take to answer; a policy of rules has no \
                     program to wait for, so remove it",
                ));
            }
            (Some(value), Some(_)) => match value.as_f64() {
                Some(seconds) if seconds > 0.0 && seconds <= LONGEST_TIMEOUT => {
                    Duration::from_secs_f64(seconds)
                }
                _ => {
                    return Err(bad(
                        &format!("{at}.timeout"),
                        format!(
                            "is a number of seconds above 0 and at most {LONGEST_TIMEOUT} (the \
                             command's deadline per example, default {}), not {value}",
                            DEFAULT_TIMEOUT.as_secs()
                        ),
                    ));
                }
            },
        };
        let empty = Vec::new();
        let rules = match (map.get("rules"), &command) {
            (None, Some(_)) => &empty,
            (rules, _) => rules.and_then(Value::as_array).ok_or_else(|| {
                bad(
                    &format!("{at}.rules"),
                    "is a list of {level, when}, first match wins (or give `command`)",
                )
            })?,
        };
        let rules = rules
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                let here = format!("{at}.rules[{i}]");
                let rule = rule
                    .as_object()
                    .ok_or_else(|| bad(&here, "is a map with level and when"))?;
                if let Some(key) = rule.keys().find(|k| !RULE_KEYS.contains(&k.as_str())) {
                    return Err(bad(
                        &here,
                        format!("unknown key '{key}' (a rule has level and when)"),
                    ));
                }
                let level = rule
                    .get("level")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let Some(index) = levels.iter().position(|l| l == level) else {
                    return Err(bad(
                        &format!("{here}.level"),
                        format!("'{level}' is not one of the levels [{}]", levels.join(", ")),
                    ));
                };
                let when = rule
                    .get("when")
                    .ok_or_else(|| bad(&here, "needs `when:`, the condition"))?;
                Ok(PolicyRule {
                    level: index,
                    when: condition(&format!("{here}.when"), when, known)?,
                })
            })
            .collect::<Result<Vec<_>, LabError>>()?;
        Ok(PolicySpec {
            name,
            levels,
            rules,
            command,
            timeout,
        })
    }

    /// The level index `facts` gets: the first matching rule's, else 0.
    pub fn level(&self, facts: &Facts) -> usize {
        self.rules
            .iter()
            .find(|rule| rule.when.holds(facts))
            .map_or(0, |rule| rule.level)
    }

    /// The policy that applies these rules (or asks the command).
    pub fn policy(&self) -> Policy {
        if let Some((argv, dir)) = &self.command {
            let failure = Arc::new(Mutex::new(None));
            let runner = Arc::new(Runner {
                argv: argv.clone(),
                timeout: self.timeout,
                dir: dir.clone(),
                live: Mutex::new(None),
                failure: failure.clone(),
            });
            let levels = self.levels.clone();
            return Policy::from_rule(
                &self.name,
                self.levels.clone(),
                move |example, answers, score, threshold| {
                    runner.ask(
                        &Facts {
                            example,
                            answers,
                            score,
                            threshold,
                        },
                        &levels,
                    )
                },
            )
            .expect("levels checked when read")
            .failing_into(failure);
        }
        let spec = self.clone();
        Policy::from_rule(
            &self.name,
            self.levels.clone(),
            move |example, answers, score, threshold| {
                spec.level(&Facts {
                    example,
                    answers,
                    score,
                    threshold,
                })
            },
        )
        .expect("levels checked when read")
    }

    /// Every question id the rules read.
    pub fn questions(&self) -> Vec<String> {
        let mut ids = Vec::new();
        for rule in &self.rules {
            rule.when.questions(&mut ids);
        }
        ids.sort();
        ids.dedup();
        ids
    }

    /// A one-line description, for reports: `triage (allow < warn < block; 3 rules)`.
    pub fn describe(&self) -> String {
        let mut text = format!("{} ({}", self.name, self.levels.join(" < "));
        match &self.command {
            Some((argv, _)) => {
                let _ = write!(text, "; command {})", argv.join(" "));
            }
            None => {
                let _ = write!(
                    text,
                    "; {} rule{})",
                    self.rules.len(),
                    if self.rules.len() == 1 { "" } else { "s" }
                );
            }
        }
        text
    }
}

/// The longest answer line read from a command policy (a level name).
const LONGEST_ANSWER: usize = 64 * 1024;

/// A command policy's program, started on the first question and asked one line at a time
/// ([`LineChild`]: its own process group, stopped on exit and on Ctrl-C, a deadline and a
/// size limit per answer).
struct Runner {
    argv: Vec<String>,
    /// How long it may take to answer about one example.
    timeout: Duration,
    dir: PathBuf,
    live: Mutex<Option<LineChild>>,
    failure: Arc<Mutex<Option<String>>>,
}

impl Runner {
    /// The level the program gives `facts`; on a failure, 0, with the reason recorded.
    fn ask(&self, facts: &Facts, levels: &[String]) -> usize {
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        if failure.is_some() {
            return 0;
        }
        match self.exchange(facts, levels) {
            Ok(level) => level,
            Err(why) => {
                // The program is out of step once it failed: stop it now.
                self.live.lock().unwrap_or_else(|p| p.into_inner()).take();
                *failure = Some(format!(
                    "the policy command `{}` {why}",
                    self.argv.join(" ")
                ));
                0
            }
        }
    }

    fn exchange(&self, facts: &Facts, levels: &[String]) -> Result<usize, CommandFailure> {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        let child = match live.as_mut() {
            Some(child) => child,
            None => live.insert(
                LineChild::spawn(&self.argv, &self.dir, LONGEST_ANSWER)
                    .map_err(CommandFailure::Start)?,
            ),
        };
        let question = json!({
            "id": facts.example.id,
            "group": facts.example.group,
            "source": facts.example.source,
            "metadata": facts.example.metadata,
            "answers": facts.answers,
            "score": facts.score,
            "threshold": facts.threshold,
        });
        let id = facts.example.id.clone();
        let answer =
            child
                .ask(&question.to_string(), self.timeout)
                .map_err(|error| match error {
                    LineError::Exited => CommandFailure::Exited { id: id.clone() },
                    LineError::Timeout(waited) => CommandFailure::Slow {
                        seconds: waited.as_secs_f64(),
                        id: id.clone(),
                    },
                    error => CommandFailure::Answer {
                        error,
                        id: id.clone(),
                    },
                })?;
        let level = answer.trim();
        levels
            .iter()
            .position(|l| l == level)
            .ok_or_else(|| CommandFailure::NotALevel {
                shown: level.chars().take(80).collect(),
                id,
                levels: levels.join(", "),
            })
    }
}

/// Why a command policy gave no level: the rest of the sentence after "the policy command
/// `argv`".
#[derive(Debug, thiserror::Error)]
enum CommandFailure {
    /// The program could not be started.
    #[error("{0}")]
    Start(LineError),
    /// The program ended before it answered.
    #[error("exited before answering about example '{id}'")]
    Exited { id: String },
    /// The answer did not come within the policy's `timeout`.
    #[error(
        "gave no answer within {seconds} s about example '{id}' (the policy's `timeout`, in \
         seconds: raise it if the program needs longer)"
    )]
    Slow { seconds: f64, id: String },
    /// The answer was too long, or could not be read.
    #[error("{error} about example '{id}'")]
    Answer { error: LineError, id: String },
    /// The answer was not a level name (shown cut to 80 characters).
    #[error("answered '{shown}' about example '{id}', not one of the levels {levels}")]
    NotALevel {
        shown: String,
        id: String,
        levels: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn example(source: &str, metadata: Value) -> Example {
        Example {
            id: "e1".into(),
            label: true,
            state: None,
            state_hash: None,
            chars: None,
            group: "g".into(),
            source: source.into(),
            split: None,
            skipped: None,
            metadata: metadata.as_object().cloned().unwrap_or_default(),
        }
    }

    fn triage() -> PolicySpec {
        let known = |id: &str| ["a", "b"].contains(&id);
        PolicySpec::from_json(
            "p.yaml",
            &json!({
                "name": "triage", "levels": ["allow", "warn", "block"],
                "rules": [
                    {"level": "block", "when": {"score": {"gte": 0.9}}},
                    {"level": "block", "when": {"all": [{"flagged": true}, {"metadata": {"field": "source", "equals": "public"}}]}},
                    {"level": "warn", "when": {"any": [{"flagged": true}, {"answer": {"question": "b", "gte": 0.8}}]}},
                    {"level": "warn", "when": {"missing": "a"}},
                ],
            }),
            &known,
        )
        .unwrap()
    }

    #[test]
    fn the_first_matching_rule_gives_the_level_and_no_match_the_first() {
        let spec = triage();
        let level = |source: &str, answers: &[(&str, f64)], score: Option<f64>| {
            let answers: HashMap<String, f64> =
                answers.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            let example = example(source, json!({}));
            spec.levels[spec.level(&Facts {
                example: &example,
                answers: &answers,
                score,
                threshold: Some(0.5),
            })]
            .clone()
        };
        assert_eq!(level("x", &[("a", 0.95)], Some(0.95)), "block");
        assert_eq!(level("public", &[("a", 0.6)], Some(0.6)), "block");
        assert_eq!(level("x", &[("a", 0.6)], Some(0.6)), "warn");
        assert_eq!(level("x", &[("a", 0.1), ("b", 0.85)], Some(0.1)), "warn");
        assert_eq!(level("x", &[("b", 0.1)], None), "warn", "a missing answer");
        assert_eq!(level("x", &[("a", 0.1), ("b", 0.1)], Some(0.1)), "allow");
        assert_eq!(spec.questions(), ["a", "b"]);
        assert_eq!(spec.describe(), "triage (allow < warn < block; 4 rules)");
    }

    #[test]
    fn an_unknown_level_field_operator_or_question_names_the_place_and_the_fix() {
        let known = |id: &str| id == "a";
        let error = |value: Value| PolicySpec::from_json("p.yaml", &value, &known).unwrap_err();
        let levels = json!(["allow", "block"]);
        let e = error(
            json!({"levels": levels, "rules": [{"level": "deny", "when": {"flagged": true}}]}),
        );
        assert!(
            e.to_string().starts_with(
                "p.yaml.rules[0].level: 'deny' is not one of the levels [allow, block]"
            ),
            "{e}"
        );
        let e = error(
            json!({"levels": levels, "rules": [{"level": "block", "when": {"score": {"above": 1}}}]}),
        );
        assert!(
            e.to_string().contains(
                "rules[0].when.score: unknown operator 'above'; use one of gte, gt, lte, lt, eq"
            ),
            "{e}"
        );
        let e = error(
            json!({"levels": levels, "rules": [{"level": "block", "when": {"colour": "red"}}]}),
        );
        assert!(e.to_string().contains("unknown condition 'colour'"), "{e}");
        let e = error(
            json!({"levels": levels, "rules": [{"level": "block", "when": {"answer": {"question": "zz", "gte": 1}}}]}),
        );
        assert!(
            e.to_string().contains("no question 'zz' in the probe set"),
            "{e}"
        );
        let e = error(json!({"levels": levels, "rules": [], "extra": 1}));
        assert!(e.to_string().contains("unknown key 'extra'"), "{e}");
        let e = error(json!({"levels": ["only"], "rules": []}));
        assert!(e.to_string().contains("at least two levels"), "{e}");
        let e = error(
            json!({"levels": levels, "rules": [{"level": "block", "when": {"metadata": {"field": "n", "gte": true}}}]}),
        );
        assert!(e.to_string().contains("is not a number"), "{e}");
    }

    /// A policy running `script` under `sh`, with `timeout` when given.
    fn command_policy(script: &str, timeout: Option<Value>) -> Result<PolicySpec, LabError> {
        let mut value =
            json!({"name": "c", "levels": ["allow", "block"], "command": ["sh", "-c", script]});
        if let Some(timeout) = timeout {
            value["timeout"] = timeout;
        }
        PolicySpec::from_json("p.yaml", &value, &|_| true)
    }

    #[test]
    fn a_command_policys_timeout_is_read_in_seconds_and_checked() {
        let spec = command_policy("cat", None).unwrap();
        assert_eq!(spec.timeout, DEFAULT_TIMEOUT);
        let spec = command_policy("cat", Some(json!(0.5))).unwrap();
        assert_eq!(spec.timeout, Duration::from_millis(500));
        assert_eq!(
            command_policy("cat", Some(json!(120)))
                .unwrap()
                .timeout
                .as_secs(),
            120
        );
        for bad in [json!(0), json!(-1), json!("10"), json!(1e9), json!(null)] {
            let e = command_policy("cat", Some(bad.clone()))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("p.yaml.timeout: is a number of seconds above 0"),
                "{bad}: {e}"
            );
        }
        let rules = PolicySpec::from_json(
            "p.yaml",
            &json!({"levels": ["allow", "block"], "rules": [], "timeout": 5}),
            &|_| true,
        )
        .unwrap_err()
        .to_string();
        assert!(
            rules.contains("a policy of rules has no program"),
            "{rules}"
        );
        let typo = PolicySpec::from_json(
            "p.yaml",
            &json!({"levels": ["allow", "block"], "command": ["cat"], "timout": 5}),
            &|_| true,
        )
        .unwrap_err()
        .to_string();
        assert!(
            typo.contains("unknown key 'timout' (did you mean 'timeout'?)"),
            "{typo}"
        );
    }

    #[test]
    fn a_command_slower_than_its_timeout_fails_naming_the_key() {
        let policy = command_policy(
            "while read line; do sleep 5; echo allow; done",
            Some(json!(0.2)),
        )
        .unwrap()
        .policy();
        let started = std::time::Instant::now();
        policy.verdict(
            &example("s", json!({})),
            &HashMap::new(),
            Some(0.1),
            Some(0.5),
        );
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "waited past the timeout"
        );
        let failure = policy.failure().expect("failed");
        assert!(
            failure.contains("gave no answer within 0.2 s about example 'e1'")
                && failure.contains("the policy's `timeout`"),
            "{failure}"
        );
        let quick = command_policy("while read line; do echo block; done", Some(json!(5)))
            .unwrap()
            .policy();
        assert_eq!(
            quick.verdict(
                &example("s", json!({})),
                &HashMap::new(),
                Some(0.9),
                Some(0.5)
            ),
            1
        );
        assert_eq!(quick.failure(), None);
    }
}
