//! The headline of a run: the best skill's score, measured where the search did not select
//! on it.
//!
//! In a noisy run the best skill won its gates partly on lucky draws (the winner's curse):
//! its score as the search saw it is optimistic. So once the search is over, the best skill
//! is scored again on samples the search never drew ([`Noise::final_samples`] of every
//! validation task), and that is `best_score`; the search's own figure stays in the history
//! and in `headline.search_best_score`. The gain over the seed is paired by task against the
//! seed's validation samples, which nobody selected (the seed was given). In a deterministic
//! run fresh samples would repeat the same answers: the headline is the search's validation
//! score, and the held-out test (or the selection split) is the unbiased figure.

use serde::Serialize;
use skill_factory_core::stats::Estimate;
use skill_factory_core::{Skill, Task, task};

use crate::noise::Noise;
use crate::optimizer::event::Event;
use crate::optimizer::{OptimizationResult, RunContext, StopReason, identity};

/// What the headline rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The best skill scored again on samples the search never drew.
    FreshSamples,
    /// The search's own validation scores (deterministic runs, a best that is the seed, or a
    /// run that stopped before the fresh samples were drawn).
    Validation,
}

/// The headline's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Headline {
    /// What `best` rests on.
    pub source: Source,
    /// Fresh samples of every validation task (0 for [`Source::Validation`]).
    pub samples: u32,
    /// The best skill's score: `best_score`.
    pub best: Estimate,
    /// The seed's score on validation: `baseline_score`.
    pub seed: Estimate,
    /// The best's gain over the seed, paired by task.
    pub improvement: Estimate,
    /// The best skill's score as the search saw it (optimistic in a noisy run).
    pub search_best_score: f64,
    /// Why the fresh samples were not drawn, when they should have been.
    pub note: Option<String>,
}

/// Measures the headline of `result` on `val` (see the module doc) and sets
/// `result.best_score` to it.
pub async fn measure(
    context: &RunContext,
    seed: &Skill,
    result: &mut OptimizationResult,
    val: &[Task],
) -> Headline {
    let noise = context.noise();
    let weights = task::weights(val);
    let seed_samples = context.samples_of(seed, val);
    let search_best_score = result.best_score;
    let best = result.best_skill.clone();
    let same = identity(&best) == identity(seed);
    let mut note = None;
    if noise.is_noisy() && !same {
        match fresh(context, &best, result.best_candidate, val, &noise).await {
            Ok(samples) => {
                let headline = Headline {
                    source: Source::FreshSamples,
                    samples: noise.final_samples(),
                    best: noise.estimate(&samples, &weights),
                    seed: noise.estimate(&seed_samples, &weights),
                    improvement: noise.paired_by_task(&seed_samples, &samples, &weights),
                    search_best_score,
                    note: None,
                };
                result.best_score = headline.best.mean;
                emit(context, &headline);
                return headline;
            }
            Err(why) => note = Some(why.to_string()),
        }
    }
    let best_samples = if same {
        seed_samples.clone()
    } else {
        context.samples_of(&best, val)
    };
    let headline = Headline {
        source: Source::Validation,
        samples: 0,
        best: noise.estimate(&best_samples, &weights),
        seed: noise.estimate(&seed_samples, &weights),
        improvement: noise.paired(&seed_samples, &best_samples, &weights),
        search_best_score,
        note,
    };
    emit(context, &headline);
    headline
}

/// `noise.final_samples()` samples of `best` on every task of `val` that the search never
/// drew; why not, when the run stopped.
async fn fresh(
    context: &RunContext,
    best: &Skill,
    candidate: usize,
    val: &[Task],
    noise: &Noise,
) -> Result<Vec<Vec<f64>>, Unscored> {
    if let Some(stop) = context.stop_reason() {
        return Err(Unscored::Before(Some(stop)));
    }
    let from = context.next_sample(best, val);
    let drawn = from..from + noise.final_samples();
    context
        .sample_scores(best, val, drawn, (candidate, "val"))
        .await
        .ok_or_else(|| Unscored::During(context.stop_reason()))
}

/// Why the best skill was not scored on fresh samples: the run stopped, for the reason
/// given when it has one. Kept as the headline's note.
#[derive(Debug, thiserror::Error)]
enum Unscored {
    #[error("{} before the best skill was scored on fresh samples", stopped(.0.as_ref()))]
    Before(Option<StopReason>),
    #[error("{} while the best skill was scored on fresh samples", stopped(.0.as_ref()))]
    During(Option<StopReason>),
}

/// Why the run stopped, as a sentence.
fn stopped(stop: Option<&StopReason>) -> String {
    stop.map_or_else(|| "the run stopped".to_string(), StopReason::detail)
}

impl Source {
    /// Its name in events and result files.
    pub fn code(self) -> &'static str {
        match self {
            Source::FreshSamples => "fresh_samples",
            Source::Validation => "validation",
        }
    }
}

fn emit(context: &RunContext, headline: &Headline) {
    context.emit(Event::HeadlineScored {
        source: headline.source.code().into(),
        samples: headline.samples,
        best_score: headline.best.mean,
        interval: [headline.best.low, headline.best.high],
        search_best_score: headline.search_best_score,
    });
}
