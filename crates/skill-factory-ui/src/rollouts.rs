//! The per-task view of a run: its rollouts (`rollouts.jsonl`) joined with its tasks
//! (`tasks.jsonl`: input and expected answer), paged and filtered for the table, sorted for a
//! comparison of two candidates or two runs, and laid out as a task x candidate heatmap.
//!
//! A run is read once into a [`Rollouts`] and kept while its files are unchanged, so the pages
//! of a 10,000-rollout table are slices of one parse, not 10,000-line reads per page.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use skill_factory_core::{Task, trigger};
use skill_factory_io::input;
use skill_factory_runfolder::lines::{RolloutLine, TaskLine};
use skill_factory_runfolder::names::{ROLLOUTS_FILE, TASKS_FILE};

/// A rollout line as read back: owning its texts.
type Line = RolloutLine<'static>;

/// A score at or above this is a pass (every metric of ours scores in [0, 1]).
const PASS: f64 = 1.0 - 1e-9;

/// One row of the per-task table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The task.
    pub task_id: String,
    /// Its split.
    pub split: String,
    /// What the skill was given.
    pub input: String,
    /// The gold answer, when the dataset has one.
    pub expected: Option<String>,
    /// What the agent answered.
    pub output: String,
    /// Why the rollout failed, if it did.
    pub error: Option<String>,
    /// The score: the mean over its samples.
    pub score: f64,
    /// Samples of the task the score is over.
    pub samples: usize,
    /// The metric's feedback.
    pub feedback: String,
    /// The other candidate's score on the same task, when comparing.
    pub other_score: Option<f64>,
    /// The other candidate's output, when comparing.
    pub other_output: Option<String>,
    /// `regressed`, `fixed`, `still_failing` or `unchanged`, when comparing.
    pub change: Option<&'static str>,
    /// A trigger task's answer: whether its request should load the skill.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub should_trigger: Option<bool>,
    /// A trigger task's decision: every skill the agent loaded (the candidate or another).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded_skills: Option<Vec<String>>,
}

/// Which rows of a table to give.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Query {
    /// The run folder, relative to the runs root (the API's `path`; the table ignores it).
    #[serde(default)]
    pub path: String,
    /// The candidate (default: the run's best).
    pub candidate: Option<usize>,
    /// The split (default `val`).
    pub split: Option<String>,
    /// A second candidate to compare with.
    pub against: Option<usize>,
    /// `failures` (below the maximum) or `changed` (scored differently from `against`).
    pub only: Option<String>,
    /// Text every shown row contains in its task id, input, output or feedback.
    pub search: Option<String>,
    /// Rows skipped.
    #[serde(default)]
    pub offset: usize,
    /// Rows given (default 50, at most 500).
    pub limit: Option<usize>,
}

/// The rollouts of one candidate on one task of a split: the first sample's in full (its
/// output and feedback show), and every sample's score (a sample logged again, reused, counts
/// once).
#[derive(Debug, Clone)]
struct Sampled {
    first: Line,
    scores: BTreeMap<u32, f64>,
}

impl Sampled {
    /// The mean over the samples.
    fn score(&self) -> f64 {
        self.scores.values().sum::<f64>() / self.scores.len().max(1) as f64
    }
}

/// A run's rollouts and tasks, read once.
#[derive(Debug, Default)]
pub struct Rollouts {
    /// The rollouts of each (candidate, split, task).
    latest: HashMap<(usize, String, String), Sampled>,
    /// The tasks, in dataset order.
    tasks: Vec<Task>,
    /// Lines that were not rollouts.
    pub skipped_lines: usize,
}

impl Rollouts {
    /// Reads the rollouts and tasks of the run folder `dir`.
    pub fn load(dir: &Path) -> Rollouts {
        let mut rollouts = Rollouts::default();
        let read =
            |name: &str| input::read_text(&dir.join(name), input::ROLLOUTS).unwrap_or_default();
        let text = read(ROLLOUTS_FILE);
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            match serde_json::from_str::<Line>(line) {
                Ok(line) => {
                    let key = (
                        line.candidate,
                        line.split.to_string(),
                        line.task_id.to_string(),
                    );
                    let sample = line.sample;
                    let score = line.score;
                    let sampled = rollouts.latest.entry(key).or_insert_with(|| Sampled {
                        first: line.clone(),
                        scores: BTreeMap::new(),
                    });
                    // The latest rollout of a sample stands (a failed one retried, say); the
                    // first sample's is the one shown.
                    if sample <= sampled.first.sample {
                        sampled.first = line;
                    }
                    sampled.scores.insert(sample, score);
                }
                Err(_) => rollouts.skipped_lines += 1,
            }
        }
        let tasks = read(TASKS_FILE);
        rollouts.tasks = tasks
            .lines()
            .filter_map(|line| serde_json::from_str::<TaskLine>(line).ok())
            .map(|line| line.task)
            .collect();
        if rollouts.tasks.is_empty() {
            // A run from before `tasks.jsonl` (or the Python tool's): the ids the rollouts name.
            let mut seen: Vec<String> = rollouts
                .latest
                .keys()
                .map(|(_, _, id)| id.clone())
                .collect();
            seen.sort();
            seen.dedup();
            rollouts.tasks = seen.into_iter().map(|id| Task::new(id, "")).collect();
        }
        rollouts
    }

    /// How many (candidate, split, task) the run holds rollouts of.
    pub fn len(&self) -> usize {
        self.latest.len()
    }

    /// Whether the run has no rollouts.
    pub fn is_empty(&self) -> bool {
        self.latest.is_empty()
    }

    /// The rows of candidate `candidate` on `split`, compared with `against` (of `other`, a
    /// second run, or of this one), in dataset order.
    fn rows(&self, candidate: usize, split: &str, against: Option<(&Rollouts, usize)>) -> Vec<Row> {
        let mut rows = Vec::new();
        for task in &self.tasks {
            let key = (candidate, split.to_string(), task.id.clone());
            let Some(sampled) = self.latest.get(&key) else {
                continue;
            };
            let line = &sampled.first;
            let score = sampled.score();
            let other = against
                .and_then(|(run, id)| run.latest.get(&(id, split.to_string(), task.id.clone())));
            rows.push(Row {
                task_id: task.id.clone(),
                split: split.to_string(),
                input: task.input.clone(),
                expected: task.expected.clone(),
                output: line.output.to_string(),
                error: line.error.as_deref().map(str::to_string),
                score,
                samples: sampled.scores.len(),
                feedback: line.feedback.to_string(),
                other_score: other.map(Sampled::score),
                other_output: other.map(|o| o.first.output.to_string()),
                change: other.map(|o| change(o.score(), score)),
                should_trigger: trigger::should_trigger(task).or_else(|| {
                    line.metadata
                        .get(trigger::SHOULD_TRIGGER)
                        .and_then(Value::as_bool)
                }),
                loaded_skills: line
                    .metadata
                    .get(trigger::LOADED_SKILLS)
                    .and_then(Value::as_array)
                    .map(|skills| {
                        skills
                            .iter()
                            .filter_map(|skill| skill.as_str().map(str::to_string))
                            .collect()
                    }),
            });
        }
        rows
    }

    /// One page of the table `query` asks for; `best` is the default candidate.
    pub fn page(&self, query: &Query, best: usize) -> Value {
        let candidate = query.candidate.unwrap_or(best);
        let split = query.split.as_deref().unwrap_or("val");
        let mut rows = self.rows(candidate, split, query.against.map(|id| (self, id)));
        match query.only.as_deref() {
            Some("failures") => rows.retain(|row| row.score < PASS),
            Some("changed") => rows.retain(|row| {
                row.other_score
                    .is_some_and(|other| (other - row.score).abs() > 1e-9)
            }),
            _ => {}
        }
        if let Some(needle) = query.search.as_deref().filter(|s| !s.is_empty()) {
            let needle = needle.to_lowercase();
            rows.retain(|row| {
                [&row.task_id, &row.input, &row.output, &row.feedback]
                    .iter()
                    .any(|field| field.to_lowercase().contains(&needle))
            });
        }
        let limit = query.limit.unwrap_or(50).clamp(1, 500);
        let total = rows.len();
        let shown: Vec<Row> = rows.into_iter().skip(query.offset).take(limit).collect();
        serde_json::json!({
            "candidate": candidate, "split": split, "against": query.against,
            "total": total, "offset": query.offset, "limit": limit, "rows": shown,
        })
    }

    /// Every task of `split` sorted into regressed, fixed, still failing and unchanged between
    /// `before` (candidate of `self`) and `after` (candidate of `other`), regressions first.
    pub fn compare(&self, before: usize, other: &Rollouts, after: usize, split: &str) -> Value {
        let mut rows = other.rows(after, split, Some((self, before)));
        let order = |change: Option<&str>| match change {
            Some("regressed") => 0,
            Some("fixed") => 1,
            Some("still_failing") => 2,
            Some("unchanged") => 3,
            _ => 4,
        };
        rows.sort_by_key(|row| order(row.change));
        let count = |name: &str| rows.iter().filter(|row| row.change == Some(name)).count();
        serde_json::json!({
            "split": split,
            "counts": {
                "regressed": count("regressed"), "fixed": count("fixed"),
                "still_failing": count("still_failing"), "unchanged": count("unchanged"),
                "only_after": rows.iter().filter(|row| row.change.is_none()).count(),
            },
            "rows": rows,
        })
    }

    /// The validation score of every (task, candidate) the run scored: candidates in number
    /// order, tasks in dataset order.
    pub fn heatmap(&self, split: &str) -> Value {
        let mut candidates: Vec<usize> = self
            .latest
            .keys()
            .filter(|(_, s, _)| s == split)
            .map(|(candidate, _, _)| *candidate)
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        let tasks: Vec<&Task> = self
            .tasks
            .iter()
            .filter(|task| {
                candidates.iter().any(|c| {
                    self.latest
                        .contains_key(&(*c, split.to_string(), task.id.clone()))
                })
            })
            .collect();
        let scores: Vec<Vec<Option<f64>>> = tasks
            .iter()
            .map(|task| {
                candidates
                    .iter()
                    .map(|c| {
                        self.latest
                            .get(&(*c, split.to_string(), task.id.clone()))
                            .map(Sampled::score)
                    })
                    .collect()
            })
            .collect();
        serde_json::json!({
            "split": split,
            "candidates": candidates,
            "tasks": tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            "scores": scores,
        })
    }
}

/// How a task's score moved from `before` to `after`.
fn change(before: f64, after: f64) -> &'static str {
    if after + 1e-9 < before {
        "regressed"
    } else if after > before + 1e-9 {
        "fixed"
    } else if after < PASS {
        "still_failing"
    } else {
        "unchanged"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of two candidates on four validation tasks: the seed fails t1 and t2, the best
    /// fixes t1, breaks t3 and still fails t2.
    fn run() -> (tempfile::TempDir, Rollouts) {
        let tmp = tempfile::tempdir().unwrap();
        let scores = [(0, [1.0, 0.0, 0.0, 1.0]), (1, [1.0, 1.0, 0.0, 0.0])];
        let mut lines = String::new();
        for (candidate, row) in scores {
            for (task, score) in row.iter().enumerate() {
                lines.push_str(&format!(
                    "{{\"candidate\":{candidate},\"split\":\"val\",\"task_id\":\"t{task}\",\"score\":{score},\"output\":\"o{candidate}\",\"feedback\":\"f\"}}\n"
                ));
            }
        }
        lines.push_str("not json\n");
        std::fs::write(tmp.path().join(ROLLOUTS_FILE), lines).unwrap();
        let tasks: String = (0..4)
            .map(|t| {
                format!(
                    "{{\"split\":\"val\",\"id\":\"t{t}\",\"input\":\"in{t}\",\"expected\":\"e\"}}\n"
                )
            })
            .collect();
        std::fs::write(tmp.path().join(TASKS_FILE), tasks).unwrap();
        let rollouts = Rollouts::load(tmp.path());
        (tmp, rollouts)
    }

    #[test]
    fn a_comparison_puts_regressions_first_and_counts_each_kind() {
        let (_tmp, rollouts) = run();
        let compared = rollouts.compare(0, &rollouts, 1, "val");
        let order: Vec<(&str, &str)> = compared["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["task_id"].as_str().unwrap(),
                    r["change"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                ("t3", "regressed"),
                ("t1", "fixed"),
                ("t2", "still_failing"),
                ("t0", "unchanged")
            ]
        );
        assert_eq!(rollouts.skipped_lines, 1);
    }

    #[test]
    fn a_page_filters_failures_and_changes_then_slices() {
        let (_tmp, rollouts) = run();
        let query = |only: &str, offset, limit| Query {
            candidate: Some(1),
            against: Some(0),
            only: Some(only.into()),
            offset,
            limit: Some(limit),
            ..Query::default()
        };
        let failures = rollouts.page(&query("failures", 0, 50), 1);
        assert_eq!(failures["total"], 2);
        let changed = rollouts.page(&query("changed", 1, 1), 1);
        assert_eq!(
            (
                changed["total"].as_u64(),
                changed["rows"][0]["task_id"].as_str()
            ),
            (Some(2), Some("t3"))
        );
        assert_eq!(changed["rows"][0]["input"], "in3");
        let map = rollouts.heatmap("val");
        assert_eq!(map["scores"][3], serde_json::json!([1.0, 0.0]));
    }

    #[test]
    fn a_task_sampled_several_times_shows_its_mean_and_its_first_sample() {
        let tmp = tempfile::tempdir().unwrap();
        let line = |sample: u32, score: f64, output: &str| {
            format!(
                "{{\"candidate\":0,\"split\":\"val\",\"task_id\":\"t0\",\"sample\":{sample},\"score\":{score},\"output\":\"{output}\"}}\n"
            )
        };
        // Sample 0 logged again (reused by a later evaluation) counts once.
        let lines = [
            line(1, 0.0, "second"),
            line(0, 1.0, "first"),
            line(2, 1.0, "third"),
            line(0, 1.0, "first"),
        ]
        .concat();
        std::fs::write(tmp.path().join(ROLLOUTS_FILE), lines).unwrap();
        std::fs::write(
            tmp.path().join(TASKS_FILE),
            "{\"split\":\"val\",\"id\":\"t0\",\"input\":\"in\"}\n",
        )
        .unwrap();
        let rollouts = Rollouts::load(tmp.path());
        let page = rollouts.page(&Query::default(), 0);
        let row = &page["rows"][0];
        assert_eq!(row["samples"], 3);
        assert!(
            (row["score"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12,
            "{row}"
        );
        assert_eq!(row["output"], "first");
    }

    #[test]
    fn a_trigger_task_row_says_whether_it_should_load_and_what_was_loaded() {
        let tmp = tempfile::tempdir().unwrap();
        let line = |task: &str, output: &str, skills: &str, should: bool| {
            format!(
                "{{\"candidate\":0,\"split\":\"test\",\"task_id\":\"{task}\",\"score\":0.0,\"output\":\"{output}\",\"metadata\":{{\"loaded\":{},\"loaded_skills\":{skills},\"should_trigger\":{should}}}}}\n",
                output == "loaded"
            )
        };
        let lines = [
            line("near", "loaded", "[\"receipt-total\"]", false),
            line("miss", "not loaded", "[\"expense-report\"]", true),
        ]
        .concat();
        std::fs::write(tmp.path().join(ROLLOUTS_FILE), lines).unwrap();
        // The task of `near` says it should not load; `miss` has no task metadata, so its
        // rollout's says.
        std::fs::write(
            tmp.path().join(TASKS_FILE),
            "{\"split\":\"test\",\"id\":\"near\",\"input\":\"a bill in the senate\",\"expected\":\"not loaded\",\"metadata\":{\"should_trigger\":false}}\n\
             {\"split\":\"test\",\"id\":\"miss\",\"input\":\"sum this receipt\",\"expected\":\"loaded\"}\n",
        )
        .unwrap();
        let rollouts = Rollouts::load(tmp.path());
        let query = Query {
            split: Some("test".into()),
            ..Query::default()
        };
        let rows = &rollouts.page(&query, 0)["rows"];
        assert_eq!(rows[0]["should_trigger"], false);
        assert_eq!(
            rows[0]["loaded_skills"],
            serde_json::json!(["receipt-total"])
        );
        assert_eq!(rows[1]["should_trigger"], true);
        assert_eq!(
            rows[1]["loaded_skills"],
            serde_json::json!(["expense-report"])
        );

        // A task of no trigger set has neither field.
        let (_tmp, plain) = run();
        let row = &plain.page(&Query::default(), 0)["rows"][0];
        assert!(
            row.get("should_trigger").is_none() && row.get("loaded_skills").is_none(),
            "{row}"
        );
    }
}
