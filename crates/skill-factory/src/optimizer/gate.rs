//! The gate every optimizer keeps an edit by: a challenger against the incumbent (the best
//! skill so far) on the same tasks and the same samples, through per-task paired differences.
//!
//! **Deterministic runs** ([`crate::noise`]): the challenger's first sample on every task,
//! kept when its mean beats the incumbent's by more than `min_delta` — the Python tool's rule,
//! exact when rollouts cannot vary, at the Python tool's cost. The paired difference and its
//! interval are recorded too (they say how far the result carries to other tasks).
//!
//! **Noisy runs**: a sequential paired test. The first look scores `noise.samples` samples
//! of every task, in chunks of a quarter of the tasks (at least [`MIN_CHUNK`]); each further
//! look adds one sample of every task, up to `noise.max_samples`. After every look over all
//! tasks the challenger is kept when the lower end of the one-sided bound of its paired gain
//! clears `min_delta`, and turned down when its observed gain does not; after every chunk
//! it is turned down when even the upper end of its interval does not clear `min_delta`. A clear win or a clear loss is thus
//! decided on little data; only an open decision draws more samples. The error of keeping
//! an edit that does not help is at most `(1 − confidence) / 2` per decision (2.5% at the
//! default 0.95), however many looks it takes: it is split over the rivals the decision
//! chooses among, and over the looks that may keep the challenger, the later looks (which
//! know the most) getting more of it: look k of L gets `(2k − 1) / L²`.
//!
//! The question is whether the challenger beats the incumbent on these validation tasks,
//! were each sampled without end; so once every task has two samples, the bound's
//! uncertainty is the sampling noise measured by the disagreement of paired samples
//! ([`stats::paired_on_these_tasks`]); with one sample it is the spread of the tasks' paired
//! differences, which holds that noise and more. A target that never varies then needs a
//! few samples, not an act of faith, to have an edit kept. Once the search's metric-call
//! budget is spent, a gate draws no more samples, and a decision still open is a no.

use futures_util::future::join_all;
use std::collections::BTreeMap;

use skill_factory_core::stats::{self, Aggregate, Estimate};
use skill_factory_core::target::by_target;
use skill_factory_core::{Evaluation, Skill, Task, TaskEvaluation};

use super::context::{RunContext, Scored};
use crate::noise::{Noise, Regime};
pub use skill_factory_runfolder::event::Comparison;

/// The fewest tasks a chunk of a noisy gate's first look has.
pub const MIN_CHUNK: usize = 8;

/// One side of a comparison.
#[derive(Clone, Copy)]
pub struct Side<'s> {
    /// Its candidate number.
    pub id: usize,
    /// The skill.
    pub skill: &'s Skill,
}

/// What a gate found.
pub struct Gated {
    /// The decision, or `None` when the run stopped (Ctrl-C, budget) before it was taken.
    pub comparison: Option<Comparison>,
    /// The challenger's sample scores by task (a task it did not reach has none).
    pub challenger: Vec<Vec<f64>>,
    /// The incumbent's, with the samples this gate added.
    pub incumbent: Vec<Vec<f64>>,
    /// The challenger's first sample of every task, when the gate got that far.
    pub first: Option<Scored>,
    /// The tasks' weights ([`Task::weight`]), by task.
    pub weights: Vec<f64>,
}

impl Gated {
    /// The challenger's score over its tasks and samples, with its interval (the search's
    /// estimate).
    pub fn estimate(&self, noise: &Noise) -> Estimate {
        noise.estimate(&self.challenger, &self.weights)
    }

    /// The challenger's mean over its tasks and samples.
    pub fn score(&self, noise: &Noise) -> f64 {
        self.estimate(noise).mean
    }

    /// Whether the challenger was kept.
    pub fn accepted(&self) -> bool {
        self.comparison.as_ref().is_some_and(|c| c.accepted)
    }
}

/// A challenger against an incumbent on `tasks`.
pub struct Gate<'a> {
    /// The run.
    pub context: &'a RunContext,
    /// The tasks both are compared on.
    pub tasks: &'a [Task],
    /// Labels the events.
    pub split: &'static str,
    /// Labels the events.
    pub round: usize,
    /// The margin a gain must clear.
    pub min_delta: f64,
    /// How many challengers the decision chooses among (at least 1): their gates share the
    /// error of a false keep.
    pub rivals: usize,
}

/// The per-task scores of one sample of an evaluation, in task order.
fn scores(evaluation: &Evaluation) -> impl Iterator<Item = f64> + '_ {
    evaluation.items.iter().map(|item| item.score())
}

impl Gate<'_> {
    /// Compares `challenger` with `incumbent`, whose scores on the tasks so far are
    /// `known` (by task, by sample; the samples this gate lacks are drawn).
    pub async fn compare(
        &self,
        incumbent: Side<'_>,
        challenger: Side<'_>,
        known: &[Vec<f64>],
    ) -> Gated {
        let noise = self.context.noise();
        let mut known: Vec<Vec<f64>> = known.to_vec();
        known.resize(self.tasks.len(), Vec::new());
        match noise.regime {
            Regime::Deterministic => self.exact(incumbent, challenger, known, &noise).await,
            Regime::Noisy => self.sequential(incumbent, challenger, known, &noise).await,
        }
    }

    /// The deterministic gate: the first sample of every task, means compared.
    async fn exact(
        &self,
        incumbent: Side<'_>,
        challenger: Side<'_>,
        mut known: Vec<Vec<f64>>,
        noise: &Noise,
    ) -> Gated {
        let first = self
            .context
            .evaluate(
                challenger.skill,
                self.tasks,
                self.round,
                challenger.id,
                self.split,
            )
            .await;
        let mine: Vec<Vec<f64>> = scores(&first.evaluation).map(|s| vec![s]).collect();
        if !first.complete {
            return Gated {
                comparison: None,
                challenger: mine,
                incumbent: known,
                first: Some(first),
                weights: self.weights(),
            };
        }
        let missing: Vec<usize> = (0..self.tasks.len())
            .filter(|&t| known[t].is_empty())
            .collect();
        if !missing.is_empty() {
            let tasks: Vec<Task> = missing.iter().map(|&t| self.tasks[t].clone()).collect();
            let theirs = self
                .context
                .evaluate(
                    incumbent.skill,
                    &tasks,
                    self.round,
                    incumbent.id,
                    self.split,
                )
                .await;
            if !theirs.complete {
                return Gated {
                    comparison: None,
                    challenger: mine,
                    incumbent: known,
                    first: Some(first),
                    weights: self.weights(),
                };
            }
            for (&t, score) in missing.iter().zip(scores(&theirs.evaluation)) {
                known[t].push(score);
            }
        }
        let first_of = |per_task: &[Vec<f64>]| -> Vec<Vec<f64>> {
            per_task
                .iter()
                .map(|s| s.iter().take(1).copied().collect())
                .collect()
        };
        let (a, b) = (first_of(&known), mine.clone());
        let weights = self.weights();
        let difference = noise.paired(&a, &b, &weights);
        let mean = |per_task: &[Vec<f64>]| noise.estimate(per_task, &weights).mean;
        let (theirs, ours) = (mean(&a), mean(&b));
        let accepted = ours > theirs + self.min_delta;
        let per_target = self.per_target(&a, &b, noise);
        let reason = if accepted {
            format!(
                "scored {ours:.3}, above the best's {theirs:.3}{}",
                margin(self.min_delta)
            )
        } else {
            format!(
                "scored {ours:.3}, not above the best's {theirs:.3}{}",
                margin(self.min_delta)
            )
        };
        let (accepted, reason) = self.held(accepted, reason, &per_target);
        Gated {
            comparison: Some(Comparison {
                incumbent: incumbent.id,
                challenger: challenger.id,
                regime: Regime::Deterministic,
                difference,
                bound: ours - theirs,
                min_delta: self.min_delta,
                accepted,
                looks: 1,
                samples: 1,
                reason,
                per_target,
            }),
            challenger: mine,
            incumbent: known,
            first: Some(first),
            weights: self.weights(),
        }
    }

    /// The noisy gate: looks of more tasks, then of more samples, while the decision is open.
    async fn sequential(
        &self,
        incumbent: Side<'_>,
        challenger: Side<'_>,
        mut known: Vec<Vec<f64>>,
        noise: &Noise,
    ) -> Gated {
        let n = self.tasks.len();
        let start = noise.samples.max(1);
        // pass@k and pass^k are defined for k samples: only the mean takes more.
        let last = match noise.aggregate {
            Aggregate::Mean => noise.max_samples.max(start),
            _ => start,
        };
        // The looks that may keep the challenger: the end of the first look, then one per
        // further sample. The gate's error is spent more at later looks, where the most is
        // known: look k of L may err (2k − 1)/L² of it (the shares add up to the whole).
        let keeping_looks = 1 + (last - start) as usize;
        let tail = noise.tail() / self.rivals.max(1) as f64;
        let share = |k: usize| tail * (2 * k - 1) as f64 / (keeping_looks * keeping_looks) as f64;
        let chunk = n.div_ceil(4).max(MIN_CHUNK).min(n.max(1));
        let mut mine: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut first_items: Vec<Option<TaskEvaluation>> = vec![None; n];
        let mut looks = 0;
        let mut covered = 0;
        let stopped = |mine: Vec<Vec<f64>>, known: Vec<Vec<f64>>| Gated {
            comparison: None,
            challenger: mine,
            incumbent: known,
            first: None,
            weights: self.weights(),
        };
        // The first look, chunk by chunk.
        while covered < n {
            let end = (covered + chunk).min(n);
            for sample in 0..start {
                if !self
                    .draw(
                        incumbent,
                        challenger,
                        covered..end,
                        sample,
                        &mut mine,
                        &mut known,
                        &mut first_items,
                    )
                    .await
                {
                    return stopped(mine, known);
                }
            }
            covered = end;
            looks += 1;
            let difference = self.difference(&known, &mine, noise);
            if covered < n && difference.upper(tail) <= self.min_delta {
                return self.decided(
                    incumbent,
                    challenger,
                    (known, mine),
                    (difference, difference.upper(tail)),
                    (looks, start),
                    false,
                    format!(
                        "after {covered} of {n} tasks its gain {:+.3} is clearly below min_delta {}: even the upper end of its interval ({:+.3}) does not clear it",
                        difference.mean,
                        self.min_delta,
                        difference.upper(tail)
                    ),
                    None,
                );
            }
        }
        let first = Scored {
            evaluation: Evaluation {
                items: first_items.into_iter().flatten().collect(),
            },
            complete: true,
        };
        let mut samples = start;
        loop {
            let difference = self.difference(&known, &mine, noise);
            let lower = difference.lower(share(1 + (samples - start) as usize));
            let gain = format!(
                "paired gain {:+.3} over the best on {n} tasks × {samples} samples",
                difference.mean
            );
            let min_delta = self.min_delta;
            let out_of_calls = self
                .context
                .metric_calls_spent(self.context.max_metric_calls)
                .is_some();
            let verdict = if lower > min_delta {
                Some((
                    true,
                    format!(
                        "{gain}; the lower end of its interval ({lower:+.3}) clears min_delta {min_delta}"
                    ),
                ))
            } else if difference.mean <= min_delta || difference.upper(tail) <= min_delta {
                Some((
                    false,
                    format!("{gain} does not clear min_delta {min_delta}"),
                ))
            } else if samples >= last || out_of_calls {
                let why = if samples < last {
                    "the search's metric-call budget is spent with the decision still open"
                } else {
                    "no detectable gain after noise.max_samples samples"
                };
                Some((
                    false,
                    format!(
                        "{gain}, but the lower end of its interval ({lower:+.3}) does not clear min_delta {min_delta}: {why}"
                    ),
                ))
            } else {
                None
            };
            if let Some((accepted, reason)) = verdict {
                return self.decided(
                    incumbent,
                    challenger,
                    (known, mine),
                    (difference, lower),
                    (looks, samples),
                    accepted,
                    reason,
                    Some(first),
                );
            }
            if !self
                .draw(
                    incumbent,
                    challenger,
                    0..n,
                    samples,
                    &mut mine,
                    &mut known,
                    &mut [],
                )
                .await
            {
                return stopped(mine, known);
            }
            samples += 1;
            looks += 1;
        }
    }

    /// The paired difference over the tasks and samples both sides have: once tasks have
    /// two paired samples, with the sampling noise alone as its uncertainty (the gate asks
    /// about these tasks, [`stats::paired_on_these_tasks`]); before, clustered by task, which
    /// counts the tasks' differences too and so errs on the safe side.
    fn difference(&self, known: &[Vec<f64>], mine: &[Vec<f64>], noise: &Noise) -> Estimate {
        let weights = self.weights();
        let sampled = match noise.aggregate {
            Aggregate::Mean => {
                stats::paired_on_these_tasks(known, mine, &weights, noise.confidence)
            }
            _ => None,
        };
        sampled.unwrap_or_else(|| noise.paired(known, mine, &weights))
    }

    /// [`per_target`] of this gate's tasks.
    fn per_target(
        &self,
        known: &[Vec<f64>],
        mine: &[Vec<f64>],
        noise: &Noise,
    ) -> BTreeMap<String, f64> {
        per_target(self.tasks, (known, mine), noise)
    }

    /// The decision once every target is held (`objective.aggregate: min`): a challenger
    /// kept on the whole is refused when it loses on any target.
    fn held(
        &self,
        accepted: bool,
        reason: String,
        per_target: &BTreeMap<String, f64>,
    ) -> (bool, String) {
        if !accepted {
            return (accepted, reason);
        }
        match losses(self.context, per_target) {
            None => (true, reason),
            Some(losses) => (false, format!("{reason}, but {losses}")),
        }
    }

    /// The weights of the gate's tasks, by task.
    fn weights(&self) -> Vec<f64> {
        self.tasks.iter().map(|task| task.weight).collect()
    }

    /// Draws sample `sample` of the tasks `range` for the challenger, and for the incumbent
    /// where it lacks it; false when the run stopped during it.
    #[allow(clippy::too_many_arguments)]
    async fn draw(
        &self,
        incumbent: Side<'_>,
        challenger: Side<'_>,
        range: std::ops::Range<usize>,
        sample: u32,
        mine: &mut [Vec<f64>],
        known: &mut [Vec<f64>],
        first: &mut [Option<TaskEvaluation>],
    ) -> bool {
        let at = sample as usize;
        let lacking: Vec<usize> = range.clone().filter(|&t| known[t].len() <= at).collect();
        let lacking_tasks: Vec<Task> = lacking.iter().map(|&t| self.tasks[t].clone()).collect();
        let theirs = async {
            if lacking_tasks.is_empty() {
                None
            } else {
                Some(
                    self.context
                        .evaluate_sample(
                            incumbent.skill,
                            &lacking_tasks,
                            sample,
                            self.round,
                            incumbent.id,
                            self.split,
                        )
                        .await,
                )
            }
        };
        let ours = self.context.evaluate_sample(
            challenger.skill,
            &self.tasks[range.clone()],
            sample,
            self.round,
            challenger.id,
            self.split,
        );
        let (theirs, ours) = futures_util::join!(theirs, ours);
        if !ours.complete || theirs.as_ref().is_some_and(|t| !t.complete) {
            return false;
        }
        if let Some(theirs) = theirs {
            for (&t, score) in lacking.iter().zip(scores(&theirs.evaluation)) {
                // A sample is only ever added in order, so a task lacking sample `at` holds
                // exactly `at` samples here.
                known[t].push(score);
            }
        }
        for (t, item) in range.zip(ours.evaluation.items) {
            mine[t].push(item.score());
            if let Some(slot) = first.get_mut(t) {
                slot.get_or_insert(item);
            }
        }
        true
    }

    /// The record of a decision taken.
    #[allow(clippy::too_many_arguments)]
    fn decided(
        &self,
        incumbent: Side<'_>,
        challenger: Side<'_>,
        (known, mine): (Vec<Vec<f64>>, Vec<Vec<f64>>),
        (difference, bound): (Estimate, f64),
        (looks, samples): (usize, u32),
        accepted: bool,
        reason: String,
        first: Option<Scored>,
    ) -> Gated {
        let per_target = self.per_target(&known, &mine, &self.context.noise());
        let (accepted, reason) = self.held(accepted, reason, &per_target);
        Gated {
            comparison: Some(Comparison {
                incumbent: incumbent.id,
                challenger: challenger.id,
                regime: Regime::Noisy,
                difference,
                bound,
                min_delta: self.min_delta,
                accepted,
                looks,
                samples,
                reason,
                per_target,
            }),
            challenger: mine,
            incumbent: known,
            first,
            weights: self.weights(),
        }
    }
}

/// Over several targets, the challenger's paired gain on each target's tasks (`known` the
/// incumbent's samples by task, `mine` the challenger's), over the samples both sides have;
/// empty for a run of one target.
pub fn per_target(
    tasks: &[Task],
    (known, mine): (&[Vec<f64>], &[Vec<f64>]),
    noise: &Noise,
) -> BTreeMap<String, f64> {
    by_target(tasks)
        .into_iter()
        .map(|(name, indices)| {
            let pick = |all: &[Vec<f64>]| -> Vec<Vec<f64>> {
                indices
                    .iter()
                    .map(|&i| all.get(i).cloned().unwrap_or_default())
                    .collect()
            };
            let weights: Vec<f64> = indices.iter().map(|&i| tasks[i].weight).collect();
            let gain = noise.paired(&pick(known), &pick(mine), &weights).mean;
            (name, gain)
        })
        .collect()
}

/// Why a challenger with these per-target gains may not be kept in `context`: under
/// `objective.aggregate: min`, the targets it loses on. `None` when nothing holds it back.
pub fn losses(context: &RunContext, per_target: &BTreeMap<String, f64>) -> Option<String> {
    if !context.holds_every_target {
        return None;
    }
    let lost: Vec<String> = per_target
        .iter()
        .filter(|(_, gain)| **gain < -1e-9)
        .map(|(name, gain)| format!("{name} {gain:+.3}"))
        .collect();
    (!lost.is_empty()).then(|| {
        format!(
            "it loses on target {}, and objective.aggregate min refuses an edit that loses on any target",
            lost.join(", ")
        )
    })
}

/// ` by more than min_delta 0.01` when there is a margin.
fn margin(min_delta: f64) -> String {
    if min_delta > 0.0 {
        format!(" by more than min_delta {min_delta}")
    } else {
        String::new()
    }
}

/// Gates every challenger against one incumbent at once, each a rival of the others.
pub async fn compare_all(
    gate: &Gate<'_>,
    incumbent: Side<'_>,
    challengers: &[Side<'_>],
    known: &[Vec<f64>],
) -> Vec<Gated> {
    join_all(
        challengers
            .iter()
            .map(|challenger| gate.compare(incumbent, *challenger, known)),
    )
    .await
}
