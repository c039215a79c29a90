//! `result.json` of a skill-mode run: the reference tool's fields, byte for byte in its format
//! (Python's `json.dumps(indent=2)`: two-space indent, non-ASCII escaped as `\uXXXX`, scores
//! rounded to 4 decimals, no final newline), followed by ours. The file's shape is
//! [`skill_factory_runfolder::result::RunResult`] with a
//! [`SkillRecord`]; this module fills it from
//! the optimization and the run.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde_json::Value;
use skill_factory_core::Estimate;
use skill_factory_llm::Spend;
use skill_factory_llm::batch::BatchCounts;
use skill_factory_pycompat::float::round;
use skill_factory_pycompat::json::dumps_pretty_ascii;
use skill_factory_runfolder::result::{
    Batches, BestSkill, ComparisonRecord, HeadlineRecord, HistoryRecord, NoiseRecord, Record,
    RunResult, ScoreEstimate, SkillRecord, Splits, TargetRecord, TestRecord, TriggerRecord, Usage,
    round4,
};

use super::headline::Headline;
use crate::noise::Noise;
use crate::optimizer::OptimizationResult;

/// Held-out test scores of the seed and the best skill.
#[derive(Debug, Clone, PartialEq)]
pub struct TestScores {
    /// Test tasks.
    pub size: usize,
    /// The seed's test score, when it was scored.
    pub seed_score: Option<f64>,
    /// The best skill's test score, when it was scored.
    pub best_score: Option<f64>,
    /// Both scores with their intervals, and the paired gain, when they were scored.
    pub estimates: Option<TestEstimates>,
    /// Why the test split was not scored, if it was not.
    pub skipped: Option<String>,
}

/// The held-out test's scores with their intervals.
#[derive(Debug, Clone, PartialEq)]
pub struct TestEstimates {
    /// Samples of every test task, the same ones for both skills.
    pub samples: u32,
    /// The seed's.
    pub seed: Estimate,
    /// The best skill's.
    pub best: Estimate,
    /// The best's gain over the seed, paired by task and sample.
    pub improvement: Estimate,
}

/// What a run adds to the reference's result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunInfo {
    /// The run folder's name.
    pub run_id: String,
    /// The config's short name.
    pub config_name: String,
    /// UTC start, RFC 3339.
    pub started_at: String,
    /// UTC end, RFC 3339 (`None` while running).
    pub finished_at: Option<String>,
    /// Task counts: train, val, test.
    pub splits: (usize, usize, usize),
    /// Held-out scores (`None` without a test split).
    pub test: Option<TestScores>,
    /// Spending per role.
    pub by_role: BTreeMap<String, Spend>,
    /// Models without a known price.
    pub unpriced_models: Vec<String>,
    /// Wall time in seconds.
    pub elapsed_secs: f64,
    /// Rollouts that failed (scored 0) over the whole run.
    pub failed_rollouts: usize,
    /// Candidates refused unscored for copying a task's answer or input, by number.
    pub refused_copies: Vec<usize>,
    /// Candidates whose repeated paragraphs were removed before scoring, by number.
    pub cleaned_repeats: Vec<usize>,
    /// What the run's provider batches did (`None` when no call was batched).
    pub batches: Option<BatchCounts>,
    /// The run's regime and noise settings (`None` for results written before the run had
    /// them).
    pub noise: Option<Noise>,
    /// The headline's figures, once measured after the search.
    pub headline: Option<Headline>,
    /// A trigger run's loads on the held-out split, once measured after the search.
    pub trigger: Option<TriggerRecord>,
    /// A run over several targets: the seed and the best on each, once measured after the
    /// search.
    pub targets: BTreeMap<String, TargetRecord>,
}

impl RunInfo {
    /// Spending of every role together.
    pub fn total(&self) -> Spend {
        let mut total = Spend::default();
        for spend in self.by_role.values() {
            total.add(spend);
        }
        total
    }

    /// The run's cost in dollars, or `None` when some call's model has no price.
    pub fn cost_usd(&self) -> Option<f64> {
        let total = self.total();
        (total.unpriced_calls == 0).then_some(total.usd)
    }
}

fn usage(spend: &Spend) -> Usage {
    Usage {
        calls: spend.calls,
        cached_calls: spend.cached_calls,
        failed_calls: spend.failed_calls,
        input_tokens: spend.input_tokens,
        output_tokens: spend.output_tokens,
        cost_usd: (spend.unpriced_calls == 0).then_some(round(spend.usd, 6)),
    }
}

/// The result, fields in order.
pub fn run_result(result: &OptimizationResult, info: &RunInfo) -> RunResult {
    let best = &result.best_skill;
    let history = result
        .history
        .iter()
        .map(|r| HistoryRecord {
            iteration: r.iteration,
            train_score: round4(r.train_score),
            val_score: round4(r.val_score),
            accepted: r.accepted,
            note: r.note.clone(),
            skill_name: r.skill.name.clone(),
            body: r.skill.body.clone(),
            val_interval: r.interval.map(|[low, high]| [round4(low), round4(high)]),
            comparison: r.comparison.as_ref().map(ComparisonRecord::from),
        })
        .collect();
    let (train, val, test_tasks) = info.splits;
    let test = info.test.as_ref().map(|scores| {
        let estimates = scores.estimates.as_ref();
        TestRecord {
            size: scores.size,
            seed_score: scores.seed_score.map(round4),
            best_score: scores.best_score.map(round4),
            improvement: scores
                .seed_score
                .zip(scores.best_score)
                .map(|(s, b)| round4(b - s)),
            val_test_gap: scores.best_score.map(|b| round4(result.best_score - b)),
            skipped: scores.skipped.clone(),
            samples: estimates.map(|e| e.samples),
            seed: estimates.map(|e| ScoreEstimate::from(&e.seed)),
            best: estimates.map(|e| ScoreEstimate::from(&e.best)),
            paired_improvement: estimates.map(|e| ScoreEstimate::from(&e.improvement)),
        }
    });
    let mut usages: IndexMap<String, Usage> = info
        .by_role
        .iter()
        .map(|(role, spend)| (role.clone(), usage(spend)))
        .collect();
    usages.insert("total".into(), usage(&info.total()));
    let record = SkillRecord {
        run_id: info.run_id.clone(),
        config_name: info.config_name.clone(),
        started_at: info.started_at.clone(),
        finished_at: info.finished_at.clone(),
        stop_reason: result
            .stop
            .as_ref()
            .map_or("running", |s| s.code())
            .to_string(),
        stop_detail: result.stop.as_ref().map(|s| s.detail()),
        splits: Splits {
            train,
            val,
            test: test_tasks,
            held_out: None,
        },
        test,
        usage: usages,
        cost_usd: info.cost_usd().map(|c| round(c, 6)),
        unpriced_models: info.unpriced_models.clone(),
        elapsed_seconds: round(info.elapsed_secs, 3),
        failed_rollouts: info.failed_rollouts,
        refused_copies: info.refused_copies.clone(),
        cleaned_repeats: info.cleaned_repeats.clone(),
        noise: info.noise.as_ref().map(|noise| NoiseRecord {
            regime: noise.regime,
            reasons: noise.reasons.clone(),
            samples: noise.samples,
            max_samples: noise.max_samples,
            confidence: noise.confidence,
            aggregate: noise.aggregate,
            pass_score: noise.pass_score,
        }),
        headline: info.headline.as_ref().map(|headline| HeadlineRecord {
            source: headline.source.code().to_string(),
            samples: headline.samples,
            best: ScoreEstimate::from(&headline.best),
            seed: ScoreEstimate::from(&headline.seed),
            improvement: ScoreEstimate::from(&headline.improvement),
            search_best_score: round4(headline.search_best_score),
            note: headline.note.clone(),
        }),
        batches: info.batches.as_ref().map(|batches| Batches {
            submitted: batches.submitted,
            resumed: batches.resumed,
            answered: batches.answered,
            asked_directly: batches.direct,
        }),
        trigger: info.trigger.clone(),
        targets: info.targets.clone(),
    };
    RunResult {
        kind: None,
        optimizer: result.optimizer.clone(),
        baseline_score: round4(result.baseline_score),
        best_score: round4(result.best_score),
        improvement: round4(result.improvement()),
        candidates: result.history.len(),
        accepted: result.accepted(),
        metadata: result.metadata.clone(),
        best_skill: BestSkill {
            name: best.name.clone(),
            description: best.description.clone(),
            body: best.body.clone(),
            markdown: best.to_markdown(),
            // Ours, only for a skill with reference files: their text by path.
            files: best.files.clone(),
        },
        history,
        record: Record::Skill(Box::new(record)),
    }
}

/// The result as a JSON value, fields in order.
pub fn result_value(result: &OptimizationResult, info: &RunInfo) -> Value {
    serde_json::to_value(run_result(result, info)).unwrap_or(Value::Null)
}

/// The text of `result.json`.
pub fn result_json(result: &OptimizationResult, info: &RunInfo) -> String {
    dumps_pretty_ascii(&result_value(result, info))
}
