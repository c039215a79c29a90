//! `result.json`: the reference tool's fields, byte for byte in its format (Python's
//! `json.dumps(indent=2)`: two-space indent, non-ASCII escaped as `\uXXXX`, scores rounded to
//! 4 decimals, no final newline), followed by ours.
//!
//! Reference fields, in order: `optimizer`, `baseline_score`, `best_score`, `improvement`,
//! `candidates` (history length, seed included), `accepted` (seed included), `metadata`,
//! `best_skill` (`name`, `description`, `body`, `markdown`, and ours, `files`, for a skill
//! with reference files) and `history` (per record:
//! `iteration`, `train_score`, `val_score`, `accepted`, `note`, `skill_name`, `body`).
//!
//! Ours, after them (never renaming theirs): `run_id`, `config_name`, `started_at`,
//! `finished_at` (null while running), `stop_reason` (`running`, `rounds`, `patience`,
//! `budget`, `cancelled`), `stop_detail`, `splits` (task counts), `test` (held-out scores
//! and the val→test gap, or null without a test split), `usage` (calls and tokens per role
//! and in total), `cost_usd` (null when a model has no known price), `unpriced_models`,
//! `elapsed_seconds`, `failed_rollouts` (rollouts that failed and were scored 0),
//! `refused_copies` (the numbers of the candidates refused for copying a task's answer or
//! input) and `cleaned_repeats` (those whose repeated paragraphs were removed), `noise` (the
//! regime, why, and the noise settings) and `headline` (where `best_score` was measured, the
//! best's, the seed's and the gain's estimates with their intervals, and the search's own
//! score). History records add `val_interval` and the `comparison` of the gate that decided
//! them; `test` adds the samples, both estimates and the gain paired by task and sample.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use skill_factory_core::Estimate;
use skill_factory_llm::Spend;
use skill_factory_llm::batch::BatchCounts;
use skill_factory_pycompat::json::dumps_pretty_ascii;

use super::headline::Headline;
use crate::noise::Noise;
use crate::optimizer::OptimizationResult;
use crate::optimizer::gate::Comparison;

/// Python's `round(x, 4)`: the nearest 4-decimal number (ties to even, on the exact value).
pub fn round4(x: f64) -> f64 {
    round_to(x, 4)
}

fn round_to(x: f64, places: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.places$}").parse().unwrap_or(x)
}

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

fn usage_json(spend: &Spend) -> Value {
    json!({
        "calls": spend.calls,
        "cached_calls": spend.cached_calls,
        "failed_calls": spend.failed_calls,
        "input_tokens": spend.input_tokens,
        "output_tokens": spend.output_tokens,
        "cost_usd": (spend.unpriced_calls == 0).then_some(round_to(spend.usd, 6)),
    })
}

/// The result as a JSON value, fields in order.
pub fn result_value(result: &OptimizationResult, info: &RunInfo) -> Value {
    let best = &result.best_skill;
    let mut map = Map::new();
    map.insert("optimizer".into(), json!(result.optimizer));
    map.insert(
        "baseline_score".into(),
        json!(round4(result.baseline_score)),
    );
    map.insert("best_score".into(), json!(round4(result.best_score)));
    map.insert("improvement".into(), json!(round4(result.improvement())));
    map.insert("candidates".into(), json!(result.history.len()));
    map.insert("accepted".into(), json!(result.accepted()));
    map.insert("metadata".into(), Value::Object(result.metadata.clone()));
    let mut best_skill = json!({
        "name": best.name,
        "description": best.description,
        "body": best.body,
        "markdown": best.to_markdown(),
    });
    if !best.files.is_empty() {
        // Ours, only for a skill with reference files: their text by path.
        best_skill["files"] = json!(best.files);
    }
    map.insert("best_skill".into(), best_skill);
    map.insert(
        "history".into(),
        Value::Array(
            result
                .history
                .iter()
                .map(|r| {
                    let mut record = json!({
                        "iteration": r.iteration,
                        "train_score": round4(r.train_score),
                        "val_score": round4(r.val_score),
                        "accepted": r.accepted,
                        "note": r.note,
                        "skill_name": r.skill.name,
                        "body": r.skill.body,
                    });
                    // Ours, after the reference's keys.
                    if let Some([low, high]) = r.interval {
                        record["val_interval"] = json!([round4(low), round4(high)]);
                    }
                    if let Some(comparison) = &r.comparison {
                        record["comparison"] = comparison_json(comparison);
                    }
                    record
                })
                .collect(),
        ),
    );
    map.insert("run_id".into(), json!(info.run_id));
    map.insert("config_name".into(), json!(info.config_name));
    map.insert("started_at".into(), json!(info.started_at));
    map.insert("finished_at".into(), json!(info.finished_at));
    map.insert(
        "stop_reason".into(),
        json!(result.stop.as_ref().map_or("running", |s| s.code())),
    );
    map.insert(
        "stop_detail".into(),
        json!(result.stop.as_ref().map(|s| s.detail())),
    );
    let (train, val, test) = info.splits;
    map.insert(
        "splits".into(),
        json!({"train": train, "val": val, "test": test}),
    );
    map.insert(
        "test".into(),
        match &info.test {
            None => Value::Null,
            Some(scores) => {
                let mut test = json!({
                    "size": scores.size,
                    "seed_score": scores.seed_score.map(round4),
                    "best_score": scores.best_score.map(round4),
                    "improvement": scores.seed_score.zip(scores.best_score).map(|(s, b)| round4(b - s)),
                    "val_test_gap": scores.best_score.map(|b| round4(result.best_score - b)),
                    "skipped": scores.skipped,
                });
                if let Some(estimates) = &scores.estimates {
                    test["samples"] = json!(estimates.samples);
                    test["seed"] = estimate_json(&estimates.seed);
                    test["best"] = estimate_json(&estimates.best);
                    test["paired_improvement"] = estimate_json(&estimates.improvement);
                }
                test
            }
        },
    );
    let mut usage = Map::new();
    for (role, spend) in &info.by_role {
        usage.insert(role.clone(), usage_json(spend));
    }
    usage.insert("total".into(), usage_json(&info.total()));
    map.insert("usage".into(), Value::Object(usage));
    map.insert(
        "cost_usd".into(),
        json!(info.cost_usd().map(|c| round_to(c, 6))),
    );
    map.insert("unpriced_models".into(), json!(info.unpriced_models));
    map.insert(
        "elapsed_seconds".into(),
        json!(round_to(info.elapsed_secs, 3)),
    );
    map.insert("failed_rollouts".into(), json!(info.failed_rollouts));
    map.insert("refused_copies".into(), json!(info.refused_copies));
    map.insert("cleaned_repeats".into(), json!(info.cleaned_repeats));
    if let Some(noise) = &info.noise {
        map.insert(
            "noise".into(),
            json!({
                "regime": noise.regime,
                "reasons": noise.reasons,
                "samples": noise.samples,
                "max_samples": noise.max_samples,
                "confidence": noise.confidence,
                "aggregate": noise.aggregate,
                "pass_score": noise.pass_score,
            }),
        );
    }
    if let Some(headline) = &info.headline {
        map.insert(
            "headline".into(),
            json!({
                "source": headline.source.code(),
                "samples": headline.samples,
                "best": estimate_json(&headline.best),
                "seed": estimate_json(&headline.seed),
                "improvement": estimate_json(&headline.improvement),
                "search_best_score": round4(headline.search_best_score),
                "note": headline.note,
            }),
        );
    }
    if let Some(batches) = &info.batches {
        map.insert(
            "batches".into(),
            json!({"submitted": batches.submitted, "resumed": batches.resumed,
                   "answered": batches.answered, "asked_directly": batches.direct}),
        );
    }
    Value::Object(map)
}

/// An estimate as result files write it: the mean, its interval, the standard error and
/// what it is over, rounded as the reference rounds scores.
pub fn estimate_json(estimate: &Estimate) -> Value {
    json!({
        "mean": round4(estimate.mean),
        "interval": [round4(estimate.low), round4(estimate.high)],
        "se": estimate.se.map(round4),
        "confidence": estimate.confidence,
        "tasks": estimate.tasks,
        "samples": estimate.samples,
    })
}

/// A gate's decision as result files write it.
pub fn comparison_json(comparison: &Comparison) -> Value {
    json!({
        "incumbent": comparison.incumbent,
        "regime": comparison.regime,
        "difference": estimate_json(&comparison.difference),
        "bound": round4(comparison.bound),
        "min_delta": comparison.min_delta,
        "accepted": comparison.accepted,
        "looks": comparison.looks,
        "samples": comparison.samples,
        "reason": comparison.reason,
    })
}

/// The text of `result.json`.
pub fn result_json(result: &OptimizationResult, info: &RunInfo) -> String {
    dumps_pretty_ascii(&result_value(result, info))
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
}
