//! One run folder, read for its page: the candidates with their lineage, scores and the
//! reason each was refused, the score timeline, and the texts the diffs and the blame use.
//!
//! Our runs are read from `events.jsonl` (every proposal, gate, score and decision as it
//! happened, typed by `skill_factory_runfolder::event`, so an event the engine renames fails
//! to compile here) and `candidates/NNN.md`; the Python tool's runs, which have neither, from
//! the `history` of their `result.json`. A line of `events.jsonl` that is not an event (the
//! last one of a run still writing it) is skipped and counted, never a failed page.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};
use skill_factory_io::input;
use skill_factory_io::path::resolve;
use skill_factory_io::secrets::Scrubber;
use skill_factory_runfolder::event::{Comparison, Event, EventLine};
use skill_factory_runfolder::names::{
    BEST_SKILL_FILE, EVENTS_FILE, HISTORY_FILE, REPORT_FILE, RESULT_FILE, SEAL_FILE, candidate_file,
};
use skill_factory_runfolder::result::{ComparisonRecord, HistoryRecord, RunResult};
use skill_factory_runfolder::workspace::{RoundRecord, SealRecord};

use crate::index::RunSummary;

/// Why a run page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The folder has no `result.json`.
    #[error("no run at {0:?}: the folder has no result.json")]
    NotARun(String),
    /// The `result.json` is unreadable.
    #[error("{0}")]
    Unreadable(String),
}

/// One candidate as its page shows it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Candidate {
    /// Its number (0 is the seed).
    pub id: usize,
    /// The round that proposed it.
    pub round: usize,
    /// The candidates it was made from (two for a merge).
    pub parents: Vec<usize>,
    /// The part of the skill it rewrote (`body`, a section, a reference file).
    pub component: Option<String>,
    /// How it was made (`rewrite`, `merge`, `patch`, ...).
    pub operation: Option<String>,
    /// Why the optimizer model says it made this edit.
    pub rationale: String,
    /// `seed`, `accepted`, `rejected`, `gate_failed`, `invalid`, `superseded` or `pending`.
    pub status: &'static str,
    /// Why it was not kept, in words.
    pub why: Option<String>,
    /// Its minibatch score at its gate, when it had one.
    pub gate_score: Option<f64>,
    /// Its parent's score on the same minibatch.
    pub gate_parent_score: Option<f64>,
    /// Its validation score, when it was validated.
    pub val_score: Option<f64>,
    /// The interval of its validation score, at the run's confidence.
    pub val_interval: Option<[f64; 2]>,
    /// Its gate against the best (`compared` events): the paired gain with its interval, the
    /// samples and looks it took, and the decision.
    pub gain: Option<Gain>,
    /// Warnings the proposal check gave.
    pub warnings: Vec<String>,
    /// Its document under the run folder (`candidates/NNN.md`), when written.
    pub file: Option<String>,
    /// Tokens of the proposal request.
    pub tokens: u64,
}

/// A challenger's gate against the best, as its page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gain {
    /// The mean paired gain.
    pub mean: f64,
    /// Its interval.
    pub interval: [f64; 2],
    /// Samples of each task the decision rested on.
    pub samples: u32,
    /// Looks taken.
    pub looks: usize,
    /// Whether the challenger was kept.
    pub accepted: bool,
    /// Why, in words.
    pub reason: String,
    /// Over several targets: the paired gain on each, by target name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub per_target: BTreeMap<String, f64>,
}

impl From<&Comparison> for Gain {
    fn from(comparison: &Comparison) -> Gain {
        Gain {
            mean: comparison.difference.mean,
            interval: [comparison.difference.low, comparison.difference.high],
            samples: comparison.samples,
            looks: comparison.looks,
            accepted: comparison.accepted,
            reason: comparison.reason.clone(),
            per_target: comparison.per_target.clone(),
        }
    }
}

/// The gate a `result.json` history record keeps (a run folder without its events).
impl From<&ComparisonRecord> for Gain {
    fn from(comparison: &ComparisonRecord) -> Gain {
        Gain {
            mean: comparison.difference.mean,
            interval: comparison.difference.interval,
            samples: comparison.samples,
            looks: comparison.looks,
            accepted: comparison.accepted,
            reason: comparison.reason.clone(),
            per_target: comparison.per_target.clone(),
        }
    }
}

/// A point of the score timeline.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The round.
    pub round: usize,
    /// The candidate scored.
    pub candidate: Option<usize>,
    /// The score.
    pub score: f64,
    /// Its interval, when the run measured one.
    pub interval: Option<[f64; 2]>,
    /// Whether the candidate was kept.
    pub accepted: bool,
    /// What the candidate changed, for the hover.
    pub note: String,
}

/// A run folder read for its page.
#[derive(Debug, Clone)]
pub struct RunPage {
    /// The run folder.
    pub dir: PathBuf,
    /// Its summary, as the list shows it.
    pub summary: RunSummary,
    /// `result.json`, secrets removed.
    pub result: Value,
    /// Its history (what a run without events is read from).
    pub history: Vec<HistoryRecord>,
    /// Every candidate, by number.
    pub candidates: Vec<Candidate>,
    /// Validation scores per candidate, in the order they were scored.
    pub val: Vec<Point>,
    /// Minibatch (train) scores, in order.
    pub train: Vec<Point>,
    /// The number of the best candidate.
    pub best: usize,
    /// The seed's document and the best one's.
    pub seed_text: String,
    /// The best skill's document.
    pub best_text: String,
    /// The last event's `seq` (the live stream resumes after it).
    pub last_seq: u64,
    /// The last event's spending, the run's start event and the round under way.
    pub live: Value,
    /// Lines of `events.jsonl` that were not events.
    pub skipped_lines: usize,
}

impl RunPage {
    /// Reads the run folder `dir` (named `path` relative to the root).
    pub fn load(dir: &Path, path: &str, scrub: &Scrubber) -> Result<RunPage, RunError> {
        // Made canonical once, so that every file of the run is checked against it.
        let dir = &dir
            .canonicalize()
            .map_err(|_| RunError::NotARun(path.into()))?;
        let file = dir.join(RESULT_FILE);
        let text = input::read_text(&file, input::RUN_FILE).map_err(|error| match error {
            input::InputError::Missing { .. } => RunError::NotARun(path.into()),
            other => RunError::Unreadable(other.to_string()),
        })?;
        let mut result: Value = serde_json::from_str(&text).map_err(|e| {
            RunError::Unreadable(format!("{}: not valid JSON ({e})", file.display()))
        })?;
        scrub.json(&mut result);
        // Read after scrubbing, so the bodies it gives are the page's.
        let typed: RunResult = serde_json::from_value(result.clone()).map_err(|e| {
            RunError::Unreadable(format!(
                "{}: {e}; is this a Skill Factory result.json?",
                file.display()
            ))
        })?;
        let summary = RunSummary::of(path, &typed);
        let (events, skipped_lines) = read_events(&dir.join(EVENTS_FILE));
        let mut page = RunPage {
            dir: dir.to_path_buf(),
            summary,
            result,
            history: typed.history,
            candidates: Vec::new(),
            val: Vec::new(),
            train: Vec::new(),
            best: 0,
            seed_text: String::new(),
            best_text: String::new(),
            last_seq: events.last().map_or(0, |line| line.seq),
            live: Value::Null,
            skipped_lines,
        };
        page.best_text = read_text(dir, BEST_SKILL_FILE).unwrap_or(typed.best_skill.body);
        if events.is_empty() {
            page.read_history();
        } else {
            page.read_events_of(&events);
        }
        if page.summary.kind == "classifier" {
            page.live = classifier(dir, scrub);
        }
        page.seed_text = page
            .document(0)
            .or_else(|| page.history.first().map(|seed| seed.body.clone()))
            .unwrap_or_default();
        Ok(page)
    }

    /// The document of candidate `id` (`candidates/NNN.md`), or the body the history keeps.
    pub fn document(&self, id: usize) -> Option<String> {
        let named = self.candidates.iter().find(|c| c.id == id)?;
        match &named.file {
            Some(file) => read_text(&self.dir, file),
            None => self
                .history
                .iter()
                .find(|h| h.iteration == id)
                .map(|h| h.body.clone()),
        }
    }

    fn read_events_of(&mut self, events: &[EventLine]) {
        let mut by_id: BTreeMap<usize, Candidate> = BTreeMap::new();
        by_id.insert(
            0,
            Candidate {
                status: "seed",
                rationale: "the seed".into(),
                file: Some(candidate_file(0)),
                ..Candidate::default()
            },
        );
        let mut live = json!({});
        let mut last_accepted = 0;
        let mut notes: BTreeMap<usize, String> = BTreeMap::new();
        for line in events {
            match &line.event {
                Event::RunStarted { .. } => live["started"] = json!(line),
                Event::RoundStarted { round, .. } => live["round"] = json!(round),
                Event::Stopped { .. } => live["stopped"] = json!(line),
                Event::CandidateProposed {
                    round,
                    candidate: id,
                    parent,
                    valid,
                    reason,
                    unchanged_from,
                    warnings,
                    rationale,
                    input_tokens,
                    output_tokens,
                    ..
                } => {
                    let candidate = by_id.entry(*id).or_default();
                    candidate.id = *id;
                    candidate.round = *round;
                    if candidate.parents.is_empty() {
                        candidate.parents = vec![*parent];
                    }
                    candidate.rationale = rationale.clone();
                    candidate.file = Some(candidate_file(*id));
                    candidate.tokens = input_tokens + output_tokens;
                    candidate.warnings = warnings.clone();
                    candidate.status = "pending";
                    if !valid {
                        candidate.status = "invalid";
                        candidate.why = Some(reason.clone().unwrap_or_default());
                    } else if let Some(same) = unchanged_from {
                        candidate.status = "invalid";
                        candidate.why = Some(format!("the same skill as candidate {same}"));
                    }
                }
                Event::Lineage {
                    round,
                    candidate: id,
                    parents,
                    component,
                    operation,
                } => {
                    let candidate = by_id.entry(*id).or_default();
                    candidate.id = *id;
                    candidate.round = *round;
                    candidate.parents = parents.clone();
                    candidate.component = Some(component.clone());
                    candidate.operation = Some(operation.to_string());
                }
                Event::Gate {
                    candidate: id,
                    parent_score,
                    child_score,
                    tasks,
                    passed,
                    ..
                } => {
                    let candidate = by_id.entry(*id).or_default();
                    candidate.gate_score = Some(*child_score);
                    candidate.gate_parent_score = Some(*parent_score);
                    if !passed {
                        candidate.status = "gate_failed";
                        candidate.why = Some(format!(
                            "on its minibatch of {tasks} tasks it scored {child_score:.3}, not above its parent's {parent_score:.3}",
                        ));
                    }
                }
                Event::CandidateScored {
                    round,
                    candidate: id,
                    val_score,
                    interval,
                    ..
                } => {
                    let candidate = by_id.entry(*id).or_default();
                    candidate.val_score = Some(*val_score);
                    candidate.val_interval = *interval;
                    self.val.push(Point {
                        round: *round,
                        candidate: Some(*id),
                        score: *val_score,
                        interval: *interval,
                        accepted: *id == 0,
                        note: String::new(),
                    });
                }
                Event::Compared { comparison, .. } => {
                    by_id.entry(comparison.challenger).or_default().gain =
                        Some(Gain::from(comparison));
                }
                Event::EvaluationFinished {
                    round,
                    candidate: id,
                    split,
                    score,
                    ..
                } if split == "train" => self.train.push(Point {
                    round: *round,
                    candidate: Some(*id),
                    score: *score,
                    interval: None,
                    accepted: false,
                    note: String::new(),
                }),
                Event::Decision {
                    candidate: Some(id),
                    accepted,
                    best_before,
                    note,
                    ..
                } => {
                    let candidate = by_id.entry(*id).or_default();
                    notes.insert(*id, note.clone());
                    if *accepted {
                        candidate.status = "accepted";
                        last_accepted = *id;
                    } else if let Some(score) = candidate.val_score {
                        candidate.status = "rejected";
                        // A gate's own reason says what it measured (a paired gain and its
                        // interval, in a noisy run); else the plain comparison of means.
                        candidate.why = Some(candidate.gain.as_ref().map_or_else(
                            || {
                                format!(
                                    "validation {score:.3} did not beat the best so far, {best_before:.3}",
                                )
                            },
                            |gain| gain.reason.clone(),
                        ));
                    } else {
                        // Not validated: the decision's note says why (a deeper child was
                        // validated in its place, or a check refused it).
                        let passed_gate =
                            candidate.gate_score.is_some() && candidate.status != "gate_failed";
                        if candidate.status != "gate_failed" && candidate.status != "invalid" {
                            candidate.status = if passed_gate {
                                "superseded"
                            } else {
                                "rejected"
                            };
                        }
                        if candidate.why.is_none() {
                            candidate.why = Some(note.clone());
                        }
                    }
                }
                _ => {}
            }
            if let Some(spent) = &line.spent {
                live["spent"] = json!(spent);
            }
        }
        let finished = live.get("stopped").is_some();
        for candidate in by_id.values_mut() {
            if candidate.status == "pending" && candidate.gate_score.is_some() && finished {
                candidate.status = "superseded";
                candidate.why = Some(
                    "it passed its gate, and a deeper edit made from it was validated in its place"
                        .into(),
                );
            }
        }
        for point in &mut self.val {
            if let Some(candidate) = point.candidate.and_then(|id| by_id.get(&id)) {
                point.accepted = matches!(candidate.status, "accepted" | "seed");
                point.note = notes
                    .get(&candidate.id)
                    .cloned()
                    .unwrap_or_else(|| candidate.rationale.clone());
            }
        }
        self.live = live;
        self.candidates = by_id.into_values().collect();
        self.best = self.find_best().unwrap_or(last_accepted);
    }

    /// The candidate whose document is the best skill's (the final pick may not be the last
    /// accepted one).
    fn find_best(&self) -> Option<usize> {
        let best = self.best_text.trim();
        self.candidates
            .iter()
            .rev()
            .filter(|c| matches!(c.status, "accepted" | "seed"))
            .find(|c| self.document(c.id).is_some_and(|text| text.trim() == best))
            .map(|c| c.id)
    }

    /// The Python tool's runs: one candidate per history record, each the child of the last
    /// accepted one before it.
    fn read_history(&mut self) {
        let history = self.history.clone();
        let mut parent = 0;
        for (index, record) in history.iter().enumerate() {
            let accepted = record.accepted;
            let round = record.iteration;
            let note = record.note.clone();
            let val = Some(record.val_score);
            let gain = record.comparison.as_ref().map(Gain::from);
            self.candidates.push(Candidate {
                id: round,
                round,
                parents: if index == 0 { vec![] } else { vec![parent] },
                rationale: note.clone(),
                status: match (index, accepted) {
                    (0, _) => "seed",
                    (_, true) => "accepted",
                    _ => "rejected",
                },
                why: (!accepted).then(|| {
                    gain.as_ref().map_or_else(
                        || "it did not beat the best on validation".into(),
                        |gain| gain.reason.clone(),
                    )
                }),
                val_score: val,
                gain,
                ..Candidate::default()
            });
            if let Some(score) = val {
                self.val.push(Point {
                    round,
                    candidate: Some(round),
                    score,
                    interval: record.val_interval,
                    accepted,
                    note: note.clone(),
                });
            }
            self.train.push(Point {
                round,
                candidate: Some(round),
                score: record.train_score,
                interval: None,
                accepted,
                note,
            });
            if accepted {
                parent = round;
                self.best = round;
            }
        }
    }

    /// The chain of candidates from the seed to the best (first parents).
    pub fn lineage_of_best(&self) -> Vec<usize> {
        let mut chain = vec![self.best];
        let mut at = self.best;
        while let Some(parent) = self
            .candidates
            .iter()
            .find(|c| c.id == at)
            .and_then(|c| c.parents.first().copied())
        {
            if chain.contains(&parent) {
                break;
            }
            chain.push(parent);
            at = parent;
        }
        chain.reverse();
        chain
    }

    /// The page's JSON: everything but the per-task rows, which are paged.
    pub fn to_json(&self) -> Value {
        let mut result = self.result.clone();
        if let Some(history) = result.get_mut("history").and_then(Value::as_array_mut) {
            for record in history {
                if let Some(map) = record.as_object_mut() {
                    map.remove("body");
                }
            }
        }
        let report = read_text(&self.dir, REPORT_FILE).unwrap_or_default();
        json!({
            "summary": self.summary,
            "result": result,
            "candidates": self.candidates,
            "timeline": {"val": self.val, "train": self.train},
            "best": self.best,
            "lineage_of_best": self.lineage_of_best(),
            "seed_text": self.seed_text,
            "best_text": self.best_text,
            "report": report,
            "live": self.live,
            "last_seq": self.last_seq,
            "skipped_lines": self.skipped_lines,
        })
    }
}

/// A classifier run's rounds (`history.json`) and seal (`seal.json`): the test and held-out
/// splits' figures are left out of every round until the seal says the probe set was frozen.
fn classifier(dir: &Path, scrub: &Scrubber) -> Value {
    let seal: Option<SealRecord> =
        read_text(dir, SEAL_FILE).and_then(|text| serde_json::from_str(&text).ok());
    let frozen = seal.as_ref().is_some_and(|seal| seal.frozen.is_some());
    let mut rounds: Vec<RoundRecord> = read_text(dir, HISTORY_FILE)
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    if !frozen {
        for round in &mut rounds {
            round.retain_splits(&["train", "val"]);
        }
    }
    let mut value = json!({"classifier": {"rounds": rounds, "seal": seal, "frozen": frozen}});
    scrub.json(&mut value);
    value
}

/// The events of `file`, and how many of its lines were not JSON.
pub fn read_events(file: &Path) -> (Vec<EventLine>, usize) {
    let Ok(text) = input::read_text(file, input::RUN_FILE) else {
        return (Vec::new(), 0);
    };
    let mut skipped = 0;
    let events = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| {
            let parsed = serde_json::from_str::<EventLine>(line).ok();
            skipped += usize::from(parsed.is_none());
            parsed
        })
        .collect();
    (events, skipped)
}

/// The text of `relative` inside the run folder `dir`, if it is a file there: a run folder
/// may come from anyone (a cloned repository, a CI artifact), so a symlink that points
/// outside it is not followed (see [`resolve`]); a candidate's file is named by its number,
/// never by the `file` its event line claims.
/// `dir` is canonical ([`RunPage::load`] makes it so).
fn read_text(dir: &Path, relative: &str) -> Option<String> {
    input::read_text(&resolve(dir, relative).ok()?, input::RUN_FILE).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        let file = dir.join(name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }

    #[test]
    fn a_python_tool_run_reads_from_its_history_with_the_last_accepted_as_parent() {
        let tmp = tempfile::tempdir().unwrap();
        let result = json!({
            "optimizer": "llm_loop", "baseline_score": 0.2, "best_score": 0.6, "improvement": 0.4,
            "candidates": 3, "accepted": 2, "metadata": {},
            "best_skill": {"name": "s", "description": "d", "body": "B2"},
            "history": [
                {"iteration": 0, "train_score": 0.1, "val_score": 0.2, "accepted": true, "note": "seed", "body": "B0"},
                {"iteration": 1, "train_score": 0.3, "val_score": 0.6, "accepted": true, "note": "better", "body": "B2"},
                {"iteration": 2, "train_score": 0.2, "val_score": 0.4, "accepted": false, "note": "worse", "body": "B3"},
            ],
        });
        write(tmp.path(), RESULT_FILE, &result.to_string());
        let page = RunPage::load(tmp.path(), "x", &Scrubber::default()).unwrap();
        let statuses: Vec<(&str, Vec<usize>)> = page
            .candidates
            .iter()
            .map(|c| (c.status, c.parents.clone()))
            .collect();
        assert_eq!(
            statuses,
            [
                ("seed", vec![]),
                ("accepted", vec![0]),
                ("rejected", vec![1])
            ]
        );
        assert_eq!(page.best, 1);
        assert_eq!(
            (page.seed_text.as_str(), page.best_text.as_str()),
            ("B0", "B2")
        );
        assert_eq!(page.document(2).as_deref(), Some("B3"));
        assert_eq!(page.lineage_of_best(), [0, 1]);
        assert_eq!(page.val.len(), 3);
    }

    #[test]
    fn a_run_over_several_targets_keeps_their_figures_and_each_gates_gain_on_each() {
        let tmp = tempfile::tempdir().unwrap();
        let estimate = |mean: f64, low: f64, high: f64| json!({"mean": mean, "interval": [low, high], "se": 0.1, "confidence": 0.95, "tasks": 6, "samples": 6});
        let targets = json!({
            "a": {"optimize": true, "split": "test", "seed": estimate(0.25, 0.0, 0.6),
                "best": estimate(0.75, 0.4, 1.0), "improvement": estimate(0.5, 0.2, 0.8)},
            "b": {"optimize": false, "split": "test", "seed": estimate(1.0, 0.7, 1.0),
                "best": estimate(0.5, 0.1, 0.9), "improvement": estimate(-0.5, -0.9, -0.1)},
        });
        let comparison = json!({"incumbent": 0, "regime": "deterministic",
            "difference": estimate(0.125, -0.1, 0.35), "bound": 0.125, "min_delta": 0.0,
            "accepted": false, "looks": 1, "samples": 1,
            "reason": "it loses on target b", "per_target": {"a": 0.25, "b": -0.125}});
        let result = json!({
            "optimizer": "llm_loop", "baseline_score": 0.4, "best_score": 0.4, "candidates": 2,
            "accepted": 1, "best_skill": {"name": "s", "body": "B0"},
            "history": [
                {"iteration": 0, "val_score": 0.4, "accepted": true, "note": "seed", "body": "B0"},
                {"iteration": 1, "val_score": 0.5, "accepted": false, "note": "edit", "body": "B1",
                    "comparison": comparison},
            ],
            "run_id": "r", "config_name": "c", "started_at": "2026-12-07T00:00:00Z",
            "finished_at": "2026-12-07T00:01:00Z", "stop_reason": "rounds", "stop_detail": null,
            "test": null, "targets": targets,
        });
        write(tmp.path(), RESULT_FILE, &result.to_string());
        // Without events, the gate is read from the history record it decided.
        let page = RunPage::load(tmp.path(), "x", &Scrubber::default()).unwrap();
        assert_eq!(page.to_json()["result"]["targets"], targets);
        let gain = page.candidates[1]
            .gain
            .as_ref()
            .expect("the gate of candidate 1");
        let per_target: Vec<(&str, f64)> = gain
            .per_target
            .iter()
            .map(|(name, gain)| (name.as_str(), *gain))
            .collect();
        assert_eq!(per_target, [("a", 0.25), ("b", -0.125)]);
        assert_eq!(
            (gain.interval, page.candidates[1].why.as_deref()),
            ([-0.1, 0.35], Some("it loses on target b"))
        );
        assert_eq!(
            page.to_json()["candidates"][1]["gain"]["per_target"],
            json!({"a": 0.25, "b": -0.125})
        );

        // With events, from the `compared` event; a gate of one target says nothing per target.
        let compared = |challenger, per_target: &[(&str, f64)]| Event::Compared {
            round: 1,
            split: "val".into(),
            comparison: Comparison {
                incumbent: 0,
                challenger,
                regime: skill_factory_runfolder::event::Regime::Deterministic,
                difference: skill_factory_core::stats::Estimate {
                    mean: 0.125,
                    se: Some(0.1),
                    low: -0.1,
                    high: 0.35,
                    confidence: 0.95,
                    tasks: 12,
                    samples: 12,
                    df: 11,
                },
                bound: 0.125,
                min_delta: 0.0,
                accepted: false,
                looks: 1,
                samples: 1,
                reason: "no gain".into(),
                per_target: per_target
                    .iter()
                    .map(|(name, gain)| (name.to_string(), *gain))
                    .collect(),
            },
        };
        let lines: Vec<String> = [compared(1, &[("a", 0.5), ("b", -0.25)]), compared(2, &[])]
            .into_iter()
            .enumerate()
            .map(|(seq, event)| {
                serde_json::to_string(&EventLine {
                    seq: seq as u64 + 1,
                    ts: "2026-12-07T00:00:00.000Z".into(),
                    event,
                    spent: None,
                    file: None,
                })
                .unwrap()
            })
            .collect();
        write(tmp.path(), EVENTS_FILE, &(lines.join("\n") + "\n"));
        let page = RunPage::load(tmp.path(), "x", &Scrubber::default()).unwrap();
        let json = page.to_json();
        let gains: Vec<&Value> = json["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["gain"])
            .collect();
        assert_eq!(gains[1]["per_target"], json!({"a": 0.5, "b": -0.25}));
        assert!(gains[2].get("per_target").is_none(), "{}", gains[2]);
    }

    #[test]
    fn a_sealed_classifier_run_shows_no_test_figures_until_it_is_frozen() {
        let tmp = tempfile::tempdir().unwrap();
        let result = json!({"kind": "classifier", "optimizer": "classifier", "baseline_score": 0.0,
            "best_score": 0.8, "stop_reason": "done"});
        write(tmp.path(), RESULT_FILE, &result.to_string());
        let round = json!([{"round": 0, "change": "seed", "rationale": "the seed",
            "candidate": "seed", "score": "q", "threshold": 0.5, "state_budget": 4000,
            "accepted": true, "reasons": [], "new_questions": [], "usd": 0.0,
            "failed_requests": 0, "reports": {
            "train": {"levels": {"flag": {"recall": 0.5}}},
            "val": {"levels": {"flag": {"recall": 0.4}}},
            "test": {"levels": {"flag": {"recall": 0.9}}},
        }}]);
        write(tmp.path(), "history.json", &round.to_string());
        let load = || {
            RunPage::load(tmp.path(), "x", &Scrubber::default())
                .unwrap()
                .live
        };
        let sealed = load();
        let reports = &sealed["classifier"]["rounds"][0]["reports"];
        assert!(
            reports.get("test").is_none() && reports.get("val").is_some(),
            "{sealed}"
        );
        assert_eq!(sealed["classifier"]["frozen"], false);
        write(
            tmp.path(),
            "seal.json",
            &json!({"frozen": {"hash": "h", "at": "2026-12-02T00:00:00Z"}}).to_string(),
        );
        let frozen = load();
        assert_eq!(frozen["classifier"]["frozen"], true);
        assert!(
            frozen["classifier"]["rounds"][0]["reports"]
                .get("test")
                .is_some()
        );
    }

    fn fifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    }

    #[test]
    fn a_fifo_or_an_oversized_file_in_a_run_folder_is_refused_not_waited_on() {
        let tmp = tempfile::tempdir().unwrap();
        fifo(&tmp.path().join(RESULT_FILE));
        let Err(error) = RunPage::load(tmp.path(), "x", &Scrubber::default()) else {
            panic!("a FIFO result.json is no run");
        };
        assert!(error.to_string().contains("a FIFO"), "{error}");

        let tmp = tempfile::tempdir().unwrap();
        let result = json!({"optimizer": "gepa", "baseline_score": 0.0, "best_score": 0.0});
        write(tmp.path(), RESULT_FILE, &result.to_string());
        fifo(&tmp.path().join(EVENTS_FILE));
        let page = RunPage::load(tmp.path(), "x", &Scrubber::default()).unwrap();
        // The page loads without the events (none read, none counted as broken).
        assert_eq!((page.last_seq, page.skipped_lines), (0, 0));

        let big = tmp.path().join("big.json");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(input::RUN_FILE.max_bytes + 1).unwrap();
        std::fs::rename(&big, tmp.path().join(RESULT_FILE)).unwrap();
        let Err(error) = RunPage::load(tmp.path(), "x", &Scrubber::default()) else {
            panic!("an oversized result.json is refused");
        };
        assert!(error.to_string().contains("more than 64 MiB"), "{error}");
    }

    #[test]
    fn a_half_written_last_event_is_skipped_and_counted() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            RESULT_FILE,
            &json!({"optimizer": "gepa", "baseline_score": 0.0, "best_score": 0.0, "stop_reason": "running"}).to_string(),
        );
        let line = |seq, event| {
            serde_json::to_string(&EventLine {
                seq,
                ts: "2026-12-03T00:00:00.000Z".into(),
                event,
                spent: None,
                file: None,
            })
            .unwrap()
        };
        let started = Event::RunStarted {
            optimizer: "gepa".into(),
            skill: "s".into(),
            train: 4,
            val: 4,
            test: 0,
            rounds: 3,
            max_workers: 2,
            budget: Default::default(),
            max_metric_calls: None,
        };
        let round = Event::RoundStarted {
            round: 1,
            minibatch: vec!["a".into()],
        };
        write(
            tmp.path(),
            EVENTS_FILE,
            &format!("{}\n{}\n{{\"seq\":3,\"ev", line(1, started), line(2, round)),
        );
        let page = RunPage::load(tmp.path(), "x", &Scrubber::default()).unwrap();
        assert_eq!((page.skipped_lines, page.last_seq), (1, 2));
        assert_eq!(page.live["round"], 1);
        assert_eq!(page.live["started"]["rounds"], 3);
    }
}
