//! Trigger sets and trigger counts: does an agent load the skill when it should?
//!
//! A trigger set is Anthropic skill-creator's eval-set format, read as it is: a JSON array of
//! `{"query": "...", "should_trigger": true|false}`, an object whose `evals` array holds
//! `{"prompt": "...", "should_trigger": ...}` (skill-creator's `evals.json`, whose other keys
//! are left alone), or the same objects one per line (JSONL). Each query becomes a [`Task`]
//! whose input is the query, whose expected answer is [`LOADED`] or [`NOT_LOADED`] and whose
//! metadata holds `should_trigger`; its id is the item's `id` when it has one, else its
//! 0-based position, as skill mode numbers its tasks.
//!
//! A trigger rollout's output is [`LOADED`] or [`NOT_LOADED`], and its metadata says the same
//! as the boolean [`LOADED_KEY`]; [`TriggerCounts`] tallies them against what should have
//! happened.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dataset::{Dataset, DatasetError, json_kind};
use crate::rollout::Rollout;
use crate::score::Evaluation;
use crate::task::Task;

/// The output of a rollout whose agent loaded the skill, and a should-trigger query's
/// expected answer.
pub const LOADED: &str = "loaded";

/// The output of a rollout whose agent did not load the skill, and a near miss's expected
/// answer.
pub const NOT_LOADED: &str = "not loaded";

/// The task metadata key that says whether the query should load the skill.
pub const SHOULD_TRIGGER: &str = "should_trigger";

/// The rollout metadata key that says whether the agent loaded the skill.
pub const LOADED_KEY: &str = "loaded";

/// The rollout metadata key listing every skill the agent loaded (the candidate or not).
pub const LOADED_SKILLS: &str = "loaded_skills";

/// Why a trigger set cannot be read. Every message names the file, the item and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TriggerSetError {
    /// The text is neither a JSON array, an object with `evals`, nor JSONL.
    #[error(
        "{origin}:{line}: invalid JSON: {detail}; a trigger set is a JSON array of {{\"query\": \"...\", \"should_trigger\": true}}, an object with an \"evals\" array, or one such object per line"
    )]
    InvalidJson {
        /// The file.
        origin: String,
        /// The 1-based line of the error.
        line: usize,
        /// The parser's words.
        detail: String,
    },
    /// An object that is not a trigger set (no `evals` array).
    #[error(
        "{origin}: a JSON object needs an \"evals\" array of {{\"prompt\": \"...\", \"should_trigger\": true}} (skill-creator's evals.json), or write the queries as a JSON array"
    )]
    NoEvals {
        /// The file.
        origin: String,
    },
    /// An item that is not usable.
    #[error("{origin}: {place}: {problem}")]
    BadItem {
        /// The file.
        origin: String,
        /// `item 3` (1-based) or `line 7`.
        place: String,
        /// What is wrong and the fix.
        problem: String,
    },
    /// The queries read, as a dataset, break a dataset rule (none, a duplicate id).
    #[error(transparent)]
    Dataset(#[from] DatasetError),
}

/// Reads a trigger set (see the module documentation); `origin` names the file in errors.
pub fn parse_trigger_set(text: &str, origin: &str) -> Result<Dataset, TriggerSetError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let trimmed = text.trim_start();
    let whole: Option<Value> = if trimmed.starts_with('[') || trimmed.starts_with('{') {
        serde_json::from_str(text).ok()
    } else {
        None
    };
    let items: Vec<(String, Value)> = match whole {
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (format!("item {}", i + 1), v))
            .collect(),
        Some(Value::Object(mut object)) if !object.contains_key("query") => {
            match object.remove("evals") {
                Some(Value::Array(items)) => items
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| (format!("evals item {}", i + 1), v))
                    .collect(),
                _ => {
                    return Err(TriggerSetError::NoEvals {
                        origin: origin.to_owned(),
                    });
                }
            }
        }
        None if trimmed.starts_with('[') => {
            let error = serde_json::from_str::<Value>(text)
                .err()
                .map(|e| (e.line(), e.to_string()))
                .unwrap_or((1, "not a JSON array".to_owned()));
            return Err(TriggerSetError::InvalidJson {
                origin: origin.to_owned(),
                line: error.0,
                detail: error.1,
            });
        }
        _ => lines(text, origin)?,
    };
    let mut tasks = Vec::with_capacity(items.len());
    for (index, (place, item)) in items.into_iter().enumerate() {
        tasks.push(
            task(index, item).map_err(|problem| TriggerSetError::BadItem {
                origin: origin.to_owned(),
                place,
                problem,
            })?,
        );
    }
    Ok(Dataset::from_tasks(tasks, origin)?)
}

/// The objects of a JSONL trigger set, each with its line.
fn lines(text: &str, origin: &str) -> Result<Vec<(String, Value)>, TriggerSetError> {
    let mut items = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value = serde_json::from_str(line).map_err(|e| TriggerSetError::InvalidJson {
            origin: origin.to_owned(),
            line: index + 1,
            detail: e.to_string(),
        })?;
        items.push((format!("line {}", index + 1), value));
    }
    Ok(items)
}

/// The task of one item.
fn task(index: usize, item: Value) -> Result<Task, String> {
    let Value::Object(item) = item else {
        return Err(format!(
            "expected an object such as {{\"query\": \"...\", \"should_trigger\": true}}, found {}",
            json_kind(&item)
        ));
    };
    let query = match (item.get("query"), item.get("prompt")) {
        (Some(Value::String(query)), _) | (None, Some(Value::String(query))) => query,
        (None, None) => {
            return Err("has no \"query\" (or \"prompt\"): give the user's request".to_owned());
        }
        (Some(other), _) | (None, Some(other)) => {
            return Err(format!(
                "\"query\" must be a string, found {}",
                json_kind(other)
            ));
        }
    };
    if query.trim().is_empty() {
        return Err("\"query\" is blank: give the user's request".to_owned());
    }
    let should = match item.get(SHOULD_TRIGGER) {
        Some(Value::Bool(should)) => *should,
        Some(other) => {
            return Err(format!(
                "\"should_trigger\" must be true or false, found {}",
                json_kind(other)
            ));
        }
        None => {
            return Err(
                "has no \"should_trigger\": say true when the skill should load for this query, false for a near miss"
                    .to_owned(),
            );
        }
    };
    let id = match item.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(Value::Number(id)) => id.to_string(),
        _ => index.to_string(),
    };
    let mut metadata = Map::new();
    metadata.insert(SHOULD_TRIGGER.to_owned(), Value::Bool(should));
    Ok(Task {
        id,
        input: query.clone(),
        expected: Some(if should { LOADED } else { NOT_LOADED }.to_owned()),
        metadata,
        weight: 1.0,
    })
}

/// Refuses a task of a skill-mode dataset that holds the key marking a trigger query, when the
/// run carries a trigger set: the run would route it, and score it, as one.
pub fn check_tasks_beside(tasks: &[Task], origin: &str) -> Result<(), DatasetError> {
    match tasks
        .iter()
        .find(|task| task.metadata.contains_key(SHOULD_TRIGGER))
    {
        Some(task) => Err(DatasetError::TriggerKey {
            origin: origin.to_owned(),
            id: task.id.clone(),
        }),
        None => Ok(()),
    }
}

/// Whether a task says its query should load the skill (`None` for a task of no trigger set).
pub fn should_trigger(task: &Task) -> Option<bool> {
    task.metadata.get(SHOULD_TRIGGER).and_then(Value::as_bool)
}

/// How often the agent loaded the skill, against how often it should have: one count per
/// sample that ran (failed rollouts are counted apart).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerCounts {
    /// Loaded, and should have.
    pub true_positives: usize,
    /// Loaded for a query it should not.
    pub false_positives: usize,
    /// Not loaded, where it should have been.
    pub false_negatives: usize,
    /// Not loaded, and should not have been.
    pub true_negatives: usize,
    /// Rollouts that failed (no decision seen).
    pub failed: usize,
}

impl TriggerCounts {
    /// The counts of an evaluation on trigger tasks: each item's rollout metadata
    /// ([`LOADED_KEY`]) against its expected answer.
    pub fn of(evaluation: &Evaluation) -> TriggerCounts {
        let mut counts = TriggerCounts::default();
        for item in &evaluation.items {
            counts.add(&item.rollout);
        }
        counts
    }

    /// Counts one rollout of a trigger task (its metadata holds [`SHOULD_TRIGGER`]); says
    /// whether it was one.
    pub fn add(&mut self, rollout: &Rollout) -> bool {
        let Some(should) = rollout
            .metadata
            .get(SHOULD_TRIGGER)
            .and_then(Value::as_bool)
        else {
            return false;
        };
        let loaded = rollout.metadata.get(LOADED_KEY).and_then(Value::as_bool);
        match (rollout.ok(), loaded, should) {
            (true, Some(true), true) => self.true_positives += 1,
            (true, Some(true), false) => self.false_positives += 1,
            (true, Some(false), true) => self.false_negatives += 1,
            (true, Some(false), false) => self.true_negatives += 1,
            _ => self.failed += 1,
        }
        true
    }

    /// Samples that gave a decision.
    pub fn decided(&self) -> usize {
        self.true_positives + self.false_positives + self.false_negatives + self.true_negatives
    }

    /// Right decisions over decided samples (`None` with none).
    pub fn accuracy(&self) -> Option<f64> {
        ratio(self.true_positives + self.true_negatives, self.decided())
    }

    /// Of the loads, the share that should have happened (`None` when it never loaded).
    pub fn precision(&self) -> Option<f64> {
        ratio(
            self.true_positives,
            self.true_positives + self.false_positives,
        )
    }

    /// Of the queries that should load it, the share that did (`None` with none such).
    pub fn recall(&self) -> Option<f64> {
        ratio(
            self.true_positives,
            self.true_positives + self.false_negatives,
        )
    }

    /// Of the near misses, the share that loaded it anyway (`None` with none such).
    pub fn false_trigger_rate(&self) -> Option<f64> {
        ratio(
            self.false_positives,
            self.false_positives + self.true_negatives,
        )
    }
}

impl TriggerCounts {
    /// The rates with the counts, as reports and `--json` give them.
    pub fn figures(&self) -> TriggerFigures {
        TriggerFigures {
            accuracy: self.accuracy(),
            precision: self.precision(),
            recall: self.recall(),
            false_trigger_rate: self.false_trigger_rate(),
            counts: *self,
        }
    }

    /// One line for a text report: `precision 0.800, recall 0.667, false-trigger rate 0.100
    /// (loaded for 4 of 6 queries that should load it and 1 of 10 near misses)`.
    pub fn line(&self) -> String {
        let rate = |value: Option<f64>| value.map_or("n/a".to_owned(), |v| format!("{v:.3}"));
        let mut line = format!(
            "precision {}, recall {}, false-trigger rate {} (loaded for {} of {} queries that should load it and {} of {} near misses",
            rate(self.precision()),
            rate(self.recall()),
            rate(self.false_trigger_rate()),
            self.true_positives,
            self.true_positives + self.false_negatives,
            self.false_positives,
            self.false_positives + self.true_negatives,
        );
        if self.failed > 0 {
            line.push_str(&format!("; {} failed", self.failed));
        }
        line.push(')');
        line
    }
}

/// Trigger counts with their rates (`None` where a rate has nothing to divide by).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TriggerFigures {
    /// [`TriggerCounts::accuracy`].
    pub accuracy: Option<f64>,
    /// [`TriggerCounts::precision`].
    pub precision: Option<f64>,
    /// [`TriggerCounts::recall`].
    pub recall: Option<f64>,
    /// [`TriggerCounts::false_trigger_rate`].
    pub false_trigger_rate: Option<f64>,
    /// The counts.
    #[serde(flatten)]
    pub counts: TriggerCounts,
}

fn ratio(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// A skill-mode run's tasks of one part of its split with the trigger queries of the same
/// part after them, weighted so that the queries make `weight` of the part's score and the
/// tasks the rest (the mean weight stays 1). A part without one or the other keeps its
/// weights.
pub fn beside(mut tasks: Vec<Task>, mut queries: Vec<Task>, weight: f64) -> Vec<Task> {
    let (n, m) = (tasks.len() as f64, queries.len() as f64);
    if n > 0.0 && m > 0.0 {
        let total = n + m;
        tasks
            .iter_mut()
            .for_each(|task| task.weight = (1.0 - weight) * total / n);
        queries
            .iter_mut()
            .for_each(|query| query.weight = weight * total / m);
    }
    tasks.append(&mut queries);
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::{MetricResult, TaskEvaluation};

    #[test]
    fn the_three_shapes_read_alike() {
        let array = r#"[{"query": "sum this bill", "should_trigger": true},
                        {"query": "design a receipt", "should_trigger": false}]"#;
        let evals = r#"{"skill_name": "x", "evals": [
            {"id": 7, "prompt": "sum this bill", "should_trigger": true, "expected_output": "…"},
            {"prompt": "design a receipt", "should_trigger": false}]}"#;
        let jsonl = "{\"query\": \"sum this bill\", \"should_trigger\": true}\n\n{\"query\": \"design a receipt\", \"should_trigger\": false}\n";
        for (text, first_id) in [(array, "0"), (evals, "7"), (jsonl, "0")] {
            let set = parse_trigger_set(text, "t.json").unwrap();
            assert_eq!(set.len(), 2);
            assert_eq!(set.tasks[0].id, first_id);
            assert_eq!(set.tasks[0].input, "sum this bill");
            assert_eq!(set.tasks[0].expected.as_deref(), Some(LOADED));
            assert_eq!(should_trigger(&set.tasks[1]), Some(false));
            assert_eq!(set.tasks[1].expected.as_deref(), Some(NOT_LOADED));
        }
    }

    #[test]
    fn a_bad_item_is_named_with_its_fix() {
        let cases = [
            ("[{\"query\": \"q\"}]", "item 1: has no \"should_trigger\""),
            (
                "[{\"query\": \"q\", \"should_trigger\": \"yes\"}]",
                "must be true or false, found a string",
            ),
            ("[{\"should_trigger\": true}]", "has no \"query\""),
            ("[\"q\"]", "expected an object"),
            ("{\"name\": 1}", "needs an \"evals\" array"),
            (
                "{\"query\": \"q\", \"should_trigger\": true}\n{bad",
                "t.json:2: invalid JSON",
            ),
            ("[{\"query\": 1,", "t.json:1: invalid JSON"),
            ("[]", "no tasks"),
        ];
        for (text, wanted) in cases {
            let error = parse_trigger_set(text, "t.json").unwrap_err().to_string();
            assert!(error.contains(wanted), "{text}: {error}");
            assert!(error.contains("t.json"), "{error}");
        }
    }

    fn item(should: bool, loaded: Option<bool>) -> TaskEvaluation {
        let mut rollout = match loaded {
            Some(true) => Rollout::success("t", LOADED),
            Some(false) => Rollout::success("t", NOT_LOADED),
            None => Rollout::failure("t", "timed out"),
        };
        rollout
            .metadata
            .insert(SHOULD_TRIGGER.into(), Value::Bool(should));
        if let Some(loaded) = loaded {
            rollout
                .metadata
                .insert(LOADED_KEY.into(), Value::Bool(loaded));
        }
        TaskEvaluation::new(rollout, MetricResult::new("trigger", 0.0, ""))
    }

    #[test]
    fn precision_recall_and_the_false_trigger_rate_follow_their_definitions() {
        let evaluation = Evaluation {
            items: vec![
                item(true, Some(true)),
                item(true, Some(true)),
                item(true, Some(false)),
                item(false, Some(true)),
                item(false, Some(false)),
                item(false, Some(false)),
                item(false, Some(false)),
                item(true, None),
            ],
        };
        let counts = TriggerCounts::of(&evaluation);
        assert_eq!(
            counts,
            TriggerCounts {
                true_positives: 2,
                false_positives: 1,
                false_negatives: 1,
                true_negatives: 3,
                failed: 1,
            }
        );
        assert_eq!(counts.accuracy(), Some(5.0 / 7.0));
        assert_eq!(counts.precision(), Some(2.0 / 3.0));
        assert_eq!(counts.recall(), Some(2.0 / 3.0));
        assert_eq!(counts.false_trigger_rate(), Some(0.25));
        assert_eq!(TriggerCounts::default().precision(), None);
        assert_eq!(
            counts.line(),
            "precision 0.667, recall 0.667, false-trigger rate 0.250 (loaded for 2 of 3 queries that should load it and 1 of 4 near misses; 1 failed)"
        );
        let json = serde_json::to_value(counts.figures()).unwrap();
        assert_eq!(json["false_trigger_rate"], 0.25);
        assert_eq!(json["true_positives"], 2);
    }

    #[test]
    fn queries_beside_tasks_make_their_share_of_the_score() {
        let tasks: Vec<Task> = (0..6).map(|i| Task::new(format!("t{i}"), "in")).collect();
        let queries: Vec<Task> = (0..2).map(|i| Task::new(format!("q{i}"), "in")).collect();
        let both = beside(tasks.clone(), queries.clone(), 0.25);
        assert_eq!(both.len(), 8);
        let weights = crate::task::weights(&both);
        // 6 tasks share 0.75 and 2 queries 0.25 of a total weight of 8.
        assert!((weights[0] - 1.0).abs() < 1e-12 && (weights[7] - 1.0).abs() < 1e-12);
        let both = beside(tasks.clone(), queries.clone(), 0.5);
        let weights = crate::task::weights(&both);
        let total: f64 = weights.iter().sum();
        assert!((total - 8.0).abs() < 1e-12);
        assert!((weights[6..].iter().sum::<f64>() / total - 0.5).abs() < 1e-12);
        // Alone, either keeps its weights.
        assert!(
            beside(tasks, Vec::new(), 0.5)
                .iter()
                .all(|t| t.weight == 1.0)
        );
        assert!(
            beside(Vec::new(), queries, 0.5)
                .iter()
                .all(|t| t.weight == 1.0)
        );
    }
}
