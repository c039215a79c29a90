//! `result.json` of every kind, written and read through one type, [`RunResult`].
//!
//! The reference tool's fields come first, in its order: `optimizer`, `baseline_score`,
//! `best_score`, `improvement`, `candidates` (history length, seed included), `accepted` (seed
//! included), `metadata`, `best_skill` (`name`, `description`, `body`, `markdown`, and ours,
//! `files`, for a skill with reference files) and `history` (per record: `iteration`,
//! `train_score`, `val_score`, `accepted`, `note`, `skill_name`, `body`, and ours,
//! `val_interval` and the `comparison` of the gate that decided it). What follows them is the
//! [`Record`] of the run's kind: a skill-mode run's ([`SkillRecord`]), a classifier
//! workspace's ([`ClassifierRecord`], which also writes `kind: classifier` first), or nothing,
//! for the Python tool's runs. Scores are rounded as Python's `round(x, 4)` by the writers
//! ([`round4`]).

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use skill_factory_core::stats::{Aggregate, Estimate};
use skill_factory_core::trigger::TriggerFigures;
use skill_factory_pycompat::float::round;

use crate::event::{Comparison, Regime};

/// Python's `round(x, 4)`, as result files round scores.
pub fn round4(x: f64) -> f64 {
    round(x, 4)
}

/// A run's `result.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// `classifier` for a classifier workspace; absent for skill-mode runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Optimizer name.
    pub optimizer: String,
    /// The seed's validation score.
    pub baseline_score: f64,
    /// The best skill's validation score (the headline, once measured).
    pub best_score: f64,
    /// `best_score − baseline_score`.
    #[serde(default)]
    pub improvement: f64,
    /// History records, the seed's included.
    #[serde(default)]
    pub candidates: usize,
    /// Accepted records, the seed's included.
    #[serde(default)]
    pub accepted: usize,
    /// The optimizer's own figures.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The best skill.
    #[serde(default)]
    pub best_skill: BestSkill,
    /// Every scored candidate, in order.
    #[serde(default)]
    pub history: Vec<HistoryRecord>,
    /// What the run's kind adds.
    #[serde(flatten)]
    pub record: Record,
}

impl RunResult {
    /// Reads the text of a `result.json`.
    pub fn parse(text: &str) -> Result<RunResult, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The skill-mode record, when the run is one of ours in skill mode.
    pub fn skill_run(&self) -> Option<&SkillRecord> {
        match &self.record {
            Record::Skill(record) => Some(record),
            _ => None,
        }
    }
}

/// What a run's kind adds after the reference's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Record {
    /// A skill-mode run of ours.
    Skill(Box<SkillRecord>),
    /// A classifier workspace.
    Classifier(ClassifierRecord),
    /// The Python tool's run: the reference's fields alone.
    Reference {},
}

/// The best skill.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BestSkill {
    /// Its name.
    pub name: String,
    /// Its description.
    #[serde(default)]
    pub description: String,
    /// Its body.
    #[serde(default)]
    pub body: String,
    /// Its SKILL.md.
    #[serde(default)]
    pub markdown: String,
    /// Its reference files by path (ours, only for a skill that has some).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
}

/// One scored candidate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryRecord {
    /// The round (or candidate number) it belongs to.
    pub iteration: usize,
    /// Its train score.
    #[serde(default)]
    pub train_score: f64,
    /// Its validation score.
    #[serde(default)]
    pub val_score: f64,
    /// Whether it became the best.
    #[serde(default)]
    pub accepted: bool,
    /// What it changed.
    #[serde(default)]
    pub note: String,
    /// The skill's name.
    #[serde(default)]
    pub skill_name: String,
    /// The skill's body.
    #[serde(default)]
    pub body: String,
    /// The interval of its validation score (ours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub val_interval: Option<[f64; 2]>,
    /// The gate that decided it (ours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<ComparisonRecord>,
}

/// A skill-mode run's fields after the reference's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillRecord {
    /// The run folder's name.
    pub run_id: String,
    /// The config's short name.
    pub config_name: String,
    /// UTC start, RFC 3339.
    pub started_at: String,
    /// UTC end; `None` while the run goes on (or after it was killed).
    pub finished_at: Option<String>,
    /// Why the search stopped (`running` while it goes on).
    pub stop_reason: String,
    /// The reason in a sentence.
    pub stop_detail: Option<String>,
    /// Task counts.
    #[serde(default)]
    pub splits: Splits,
    /// Held-out test scores; `None` without a test split.
    pub test: Option<TestRecord>,
    /// Calls and tokens per role, then `total`.
    #[serde(default)]
    pub usage: IndexMap<String, Usage>,
    /// Dollars spent; `None` when a model has no known price.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Models without a known price.
    #[serde(default)]
    pub unpriced_models: Vec<String>,
    /// Wall time in seconds.
    #[serde(default)]
    pub elapsed_seconds: f64,
    /// Rollouts that failed and were scored 0.
    #[serde(default)]
    pub failed_rollouts: usize,
    /// Candidates refused for copying a task's answer or input, by number.
    #[serde(default)]
    pub refused_copies: Vec<usize>,
    /// Candidates whose repeated paragraphs were removed, by number.
    #[serde(default)]
    pub cleaned_repeats: Vec<usize>,
    /// The regime and the noise settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<NoiseRecord>,
    /// Where `best_score` was measured, with its interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<HeadlineRecord>,
    /// What provider batches did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<Batches>,
    /// A trigger run's loads on the held-out split: the seed's and the best skill's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<TriggerRecord>,
    /// A run over several targets: the seed's and the best skill's score on each, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub targets: BTreeMap<String, TargetRecord>,
}

/// The seed's and the best skill's score on one target of a run over several, on the
/// held-out split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetRecord {
    /// Whether the search optimized for it (`optimize: false` targets are measured only).
    pub optimize: bool,
    /// The split they were measured on: `test` when the run holds one out, else `val`.
    pub split: String,
    /// The seed's score, with its interval.
    pub seed: ScoreEstimate,
    /// The best skill's.
    pub best: ScoreEstimate,
    /// The best's gain over the seed on it, paired by task.
    pub improvement: ScoreEstimate,
}

/// A trigger run's precision, recall and false-trigger rate, with their counts, for the seed
/// and the best skill on one split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerRecord {
    /// The split they were measured on: `test` when the run holds one out, else `val`.
    pub split: String,
    /// The seed's.
    pub seed: TriggerFigures,
    /// The best skill's.
    pub best: TriggerFigures,
}

impl SkillRecord {
    /// Whether the run finished (it was not still running, or killed, when it was written).
    pub fn finished(&self) -> bool {
        self.finished_at.is_some() && self.stop_reason != "running"
    }
}

/// A classifier workspace's fields after the reference's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassifierRecord {
    /// The config's name.
    pub config_name: String,
    /// UTC start.
    pub started_at: String,
    /// UTC end.
    pub finished_at: String,
    /// `done`.
    pub stop_reason: String,
    /// Example counts.
    pub splits: Splits,
}

/// Task (or example) counts of the splits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Splits {
    /// Train.
    pub train: usize,
    /// Validation.
    pub val: usize,
    /// Held-out test.
    pub test: usize,
    /// A classifier's held-out sources and groups.
    #[serde(rename = "held-out", default, skip_serializing_if = "Option::is_none")]
    pub held_out: Option<usize>,
}

impl Splits {
    /// Tasks in all splits together: the dataset's size.
    pub fn total(&self) -> usize {
        self.train + self.val + self.test + self.held_out.unwrap_or(0)
    }
}

/// Held-out test scores of the seed and the best skill.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestRecord {
    /// Test tasks.
    pub size: usize,
    /// The seed's score, when it was scored.
    pub seed_score: Option<f64>,
    /// The best skill's score, when it was scored.
    pub best_score: Option<f64>,
    /// The best's score minus the seed's.
    #[serde(default)]
    pub improvement: Option<f64>,
    /// The best's validation score minus its test score.
    #[serde(default)]
    pub val_test_gap: Option<f64>,
    /// Why the test split was not scored.
    #[serde(default)]
    pub skipped: Option<String>,
    /// Samples of every test task, in a noisy run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u32>,
    /// The seed's score with its interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<ScoreEstimate>,
    /// The best's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<ScoreEstimate>,
    /// The best's gain over the seed, paired by task and sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_improvement: Option<ScoreEstimate>,
}

/// Calls and tokens of one role (or of all of them, `total`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Model calls.
    pub calls: u64,
    /// Of them, answered from the cache.
    #[serde(default)]
    pub cached_calls: u64,
    /// Of them, failed.
    #[serde(default)]
    pub failed_calls: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Dollars; `None` when a model of the role has no known price.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// A score with its interval, rounded as result files write it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScoreEstimate {
    /// The mean.
    pub mean: f64,
    /// Its interval.
    pub interval: [f64; 2],
    /// The standard error clustered by task, with two tasks or more.
    pub se: Option<f64>,
    /// The interval's confidence.
    pub confidence: f64,
    /// Tasks it is over.
    pub tasks: usize,
    /// Samples it is over.
    pub samples: usize,
}

impl From<&Estimate> for ScoreEstimate {
    fn from(estimate: &Estimate) -> ScoreEstimate {
        ScoreEstimate {
            mean: round4(estimate.mean),
            interval: [round4(estimate.low), round4(estimate.high)],
            se: estimate.se.map(round4),
            confidence: estimate.confidence,
            tasks: estimate.tasks,
            samples: estimate.samples,
        }
    }
}

/// A gate's decision as result files write it: rounded, and held by the history record of its
/// challenger.
pub type ComparisonRecord = Comparison<ScoreEstimate>;

impl From<&Comparison> for ComparisonRecord {
    fn from(comparison: &Comparison) -> ComparisonRecord {
        ComparisonRecord {
            incumbent: comparison.incumbent,
            challenger: 0,
            regime: comparison.regime,
            difference: ScoreEstimate::from(&comparison.difference),
            bound: round4(comparison.bound),
            min_delta: comparison.min_delta,
            accepted: comparison.accepted,
            looks: comparison.looks,
            samples: comparison.samples,
            reason: comparison.reason.clone(),
            per_target: comparison
                .per_target
                .iter()
                .map(|(name, gain)| (name.clone(), round4(*gain)))
                .collect(),
        }
    }
}

/// A run's regime and noise settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseRecord {
    /// The regime.
    pub regime: Regime,
    /// Why it is that regime.
    pub reasons: Vec<String>,
    /// Samples of every task at the first look.
    pub samples: u32,
    /// Most samples of a task.
    pub max_samples: u32,
    /// The intervals' confidence.
    pub confidence: f64,
    /// How a task's samples make its score.
    pub aggregate: Aggregate,
    /// The score at which a sample passes (for `pass@k`).
    pub pass_score: f64,
}

/// Where the headline `best_score` was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadlineRecord {
    /// `fresh_samples` or `validation`.
    pub source: String,
    /// Fresh samples of every validation task (0 for `validation`).
    pub samples: u32,
    /// The best's score.
    pub best: ScoreEstimate,
    /// The seed's.
    pub seed: ScoreEstimate,
    /// The best's gain over the seed.
    pub improvement: ScoreEstimate,
    /// The best's score as the search saw it.
    pub search_best_score: f64,
    /// Why the headline is what it is, when it needs saying.
    pub note: Option<String>,
}

/// What a run's provider batches did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batches {
    /// Batches submitted.
    pub submitted: u64,
    /// Batches of an earlier run picked up.
    pub resumed: u64,
    /// Calls a batch answered.
    pub answered: u64,
    /// Calls asked directly instead.
    pub asked_directly: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_matches_python_round_to_four_places() {
        assert_eq!(round4(0.03125), 0.0312);
        assert_eq!(round4(0.09375), 0.0938);
        assert_eq!(round4(2.0 / 3.0), 0.6667);
        assert_eq!(round4(1.0), 1.0);
    }

    #[test]
    fn each_kind_reads_as_its_record() {
        let reference = r#"{"optimizer": "llm_loop", "baseline_score": 0.5, "best_score": 0.75,
            "improvement": 0.25, "candidates": 2, "accepted": 2, "metadata": {},
            "best_skill": {"name": "s", "description": "d", "body": "b", "markdown": "m"},
            "history": []}"#;
        let result = RunResult::parse(reference).unwrap();
        assert_eq!(result.record, Record::Reference {});
        let mut classifier: Value = serde_json::from_str(reference).unwrap();
        classifier["kind"] = "classifier".into();
        for (key, value) in [
            ("config_name", "c".into()),
            ("started_at", "2026-12-03T00:00:00Z".into()),
            ("finished_at", "2026-12-03T00:01:00Z".into()),
            ("stop_reason", "done".into()),
            (
                "splits",
                serde_json::json!({"train": 1, "val": 1, "test": 1, "held-out": 2}),
            ),
        ] {
            classifier[key] = value;
        }
        let result = RunResult::parse(&classifier.to_string()).unwrap();
        let Record::Classifier(record) = &result.record else {
            panic!("{result:?}");
        };
        assert_eq!(record.splits.total(), 5);
        assert_eq!(serde_json::to_value(&result).unwrap(), classifier);
    }
}
