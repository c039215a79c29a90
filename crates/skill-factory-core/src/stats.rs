//! Statistics of noisy scores: a skill scored on `n` tasks, each task sampled one or more
//! times.
//!
//! The samples of one task are not independent draws (they share the task's difficulty), so
//! every standard error here is clustered by task, as "Adding Error Bars to Evals" (Miller,
//! 2024) recommends: with the task means `m_1 … m_n`, the score is their average and its
//! standard error `sd(m) / √n`. Two skills are compared through per-task paired differences
//! `d_i = m_i(B) − m_i(A)` over the same tasks and the same samples, whose standard error
//! `sd(d) / √n` leaves out the difficulty both skills share. Intervals use Student's t with
//! `n − 1` degrees of freedom. `docs/statistics.md` explains the formulas for users.
//!
//! Tasks may count unequally (a skill-mode run with a trigger set weighs its queries apart
//! from its tasks): with weights `w_i`, the score is `Σ w_i m_i / Σ w_i`, its standard error
//! the linearized one of a weighted mean, `√(n/(n−1) · Σ w_i² (m_i − m̄)²) / Σ w_i`, on the
//! degrees of freedom of Kish's effective number of tasks `(Σ w_i)² / Σ w_i²`. With equal
//! weights every formula is the unweighted one.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// How the samples of one task make its score.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    /// The mean of the samples' scores.
    #[default]
    Mean,
    /// 1 when any sample passes, else 0 (`pass@k`: the agent gets k tries).
    PassAtK,
    /// 1 when every sample passes, else 0 (`pass^k`: the agent must succeed every time).
    PassAllK,
}

impl Aggregate {
    /// The score of a task from its samples' scores; a sample passes at `pass_score` or
    /// above. 0 for a task without samples.
    pub fn of(self, samples: &[f64], pass_score: f64) -> f64 {
        if samples.is_empty() {
            return 0.0;
        }
        let passes = |s: &&f64| **s >= pass_score - 1e-9;
        match self {
            Aggregate::Mean => samples.iter().sum::<f64>() / samples.len() as f64,
            Aggregate::PassAtK => f64::from(u8::from(samples.iter().any(|s| passes(&s)))),
            Aggregate::PassAllK => f64::from(u8::from(samples.iter().all(|s| passes(&s)))),
        }
    }

    /// The name users see: `mean`, `pass@k`, `pass^k`.
    pub fn label(self) -> &'static str {
        match self {
            Aggregate::Mean => "mean",
            Aggregate::PassAtK => "pass@k",
            Aggregate::PassAllK => "pass^k",
        }
    }
}

/// A mean with its clustered standard error and a two-sided interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The mean over tasks (of scores, or of paired differences).
    pub mean: f64,
    /// The standard error clustered by task; `None` with fewer than two tasks, where nothing
    /// can be said about the spread.
    pub se: Option<f64>,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
    /// The interval's confidence (0.95 for a 95% interval).
    pub confidence: f64,
    /// Tasks the mean is over.
    pub tasks: usize,
    /// Samples the tasks' scores are over, all tasks together (pairs, for a difference).
    pub samples: usize,
    /// Degrees of freedom of the t quantiles of its interval and bounds (`tasks − 1` for a
    /// standard error clustered by task).
    pub df: usize,
}

/// How much each task counts, by task index; a task past the end counts 1, so an empty
/// slice weighs every task alike.
pub type Weights<'a> = &'a [f64];

/// The weight of task `index`.
fn weight_of(weights: Weights<'_>, index: usize) -> f64 {
    weights.get(index).copied().unwrap_or(1.0)
}

/// The mean of `values` (one per task), each by its weight; 0 when there are none.
pub fn mean(values: &[f64], weights: Weights<'_>) -> f64 {
    let (sum, total) =
        values
            .iter()
            .enumerate()
            .fold((0.0, 0.0), |(sum, total), (index, value)| {
                let weight = weight_of(weights, index);
                (sum + value * weight, total + weight)
            });
    if total <= 0.0 { 0.0 } else { sum / total }
}

/// Kish's effective number of tasks of these weights: `(Σ w)² / Σ w²` (their count when
/// equal), rounded down but for a rounding error.
fn effective_tasks(weights: impl Iterator<Item = f64>) -> usize {
    let (sum, squares) = weights.fold((0.0, 0.0), |(s, q), w| (s + w, q + w * w));
    if squares <= 0.0 {
        return 0;
    }
    (sum * sum / squares + 1e-9).floor() as usize
}

/// The range a value can take: scores lie in [0, 1], differences of scores in [−1, 1].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Range {
    Score,
    Difference,
}

impl Range {
    fn clamp(self, x: f64) -> f64 {
        match self {
            Range::Score => x.clamp(0.0, 1.0),
            Range::Difference => x.clamp(-1.0, 1.0),
        }
    }

    fn whole(self) -> (f64, f64) {
        match self {
            Range::Score => (0.0, 1.0),
            Range::Difference => (-1.0, 1.0),
        }
    }
}

/// The Wilson score interval of the share `p` of `n` passes. The interval of a score whose
/// tasks each passed or failed is never narrower than it: near 0 and 1 the spread of a few
/// tasks says little (eight tasks all failed have a standard error of 0, yet a true rate of
/// a third would fail all eight one time in forty).
fn wilson(p: f64, n: usize, confidence: f64) -> (f64, f64) {
    let z = z_quantile(1.0 - (1.0 - confidence) / 2.0);
    let n = n as f64;
    let z2 = z * z / n;
    let center = (p + z2 / 2.0) / (1.0 + z2);
    let half = z / (1.0 + z2) * (p * (1.0 - p) / n + z2 / (4.0 * n)).sqrt();
    (
        (center - half).clamp(0.0, 1.0),
        (center + half).clamp(0.0, 1.0),
    )
}

/// The quantile `p` of Student's t with `df` degrees of freedom (the normal's for `df = 0`,
/// which only a caller with no spread to scale asks for).
pub fn t_quantile(p: f64, df: usize) -> f64 {
    // Past this the t and the normal agree to four decimals (and statrs's t grows slow).
    if df > 100_000 {
        return z_quantile(p);
    }
    let df = df.max(1) as f64;
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |t| t.inverse_cdf(p))
}

/// The quantile `p` of the standard normal.
fn z_quantile(p: f64) -> f64 {
    Normal::standard().inverse_cdf(p)
}

impl Estimate {
    /// The estimate of the weighted mean of `values` (one per task, with its weight), each
    /// over `samples` in all.
    fn of(values: &[(f64, f64)], samples: usize, confidence: f64, range: Range) -> Estimate {
        let tasks = values.len();
        let total: f64 = values.iter().map(|(_, w)| w).sum();
        let mean = if total <= 0.0 {
            0.0
        } else {
            values.iter().map(|(v, w)| v * w).sum::<f64>() / total
        };
        let effective = effective_tasks(values.iter().map(|(_, w)| *w));
        let se = (tasks >= 2 && total > 0.0).then(|| {
            let squares = values
                .iter()
                .map(|(v, w)| (w * (v - mean)).powi(2))
                .sum::<f64>();
            (squares * tasks as f64 / (tasks - 1) as f64).sqrt() / total
        });
        let mut estimate = Estimate::with_se(
            mean,
            se,
            effective.saturating_sub(1),
            (tasks, samples),
            confidence,
            range,
        );
        let binary = values.iter().all(|(v, _)| *v == 0.0 || *v == 1.0);
        if range == Range::Score && binary && effective > 0 {
            let (low, high) = wilson(mean, effective, confidence);
            estimate.low = estimate.low.min(low);
            estimate.high = estimate.high.max(high);
        }
        estimate
    }

    /// The estimate of `mean` with standard error `se` on `df` degrees of freedom.
    fn with_se(
        mean: f64,
        se: Option<f64>,
        df: usize,
        (tasks, samples): (usize, usize),
        confidence: f64,
        range: Range,
    ) -> Estimate {
        let (low, high) = match se {
            Some(se) => {
                let half = se * t_quantile(1.0 - (1.0 - confidence) / 2.0, df);
                (range.clamp(mean - half), range.clamp(mean + half))
            }
            None => range.whole(),
        };
        Estimate {
            mean,
            se,
            low,
            high,
            confidence,
            tasks,
            samples,
            df,
        }
    }

    /// The one-sided lower bound with `tail` probability below it (`tail` = 0.025 is the
    /// lower end of a 95% interval); the range's bottom without a standard error.
    pub fn lower(&self, tail: f64) -> f64 {
        match self.se {
            Some(se) => self.mean - se * t_quantile(1.0 - tail, self.df),
            None => f64::NEG_INFINITY,
        }
    }

    /// The one-sided upper bound with `tail` probability above it.
    pub fn upper(&self, tail: f64) -> f64 {
        match self.se {
            Some(se) => self.mean + se * t_quantile(1.0 - tail, self.df),
            None => f64::INFINITY,
        }
    }

    /// The `±` of `0.72 ± 0.05`: the t quantile times the standard error, before the
    /// interval is clamped to the range scores can take (0 without a standard error).
    pub fn half_width(&self) -> f64 {
        self.se.map_or(0.0, |se| {
            se * t_quantile(1.0 - (1.0 - self.confidence) / 2.0, self.df)
        })
    }
}

/// What the interval of a difference B − A says about B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The whole interval is above 0.
    Better,
    /// The whole interval is below 0.
    Worse,
    /// The interval holds 0: no difference is detectable at this sample size.
    NoDetectableDifference,
}

impl Verdict {
    /// `better`, `worse`, `no detectable difference`.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoDetectableDifference => "no detectable difference",
        }
    }
}

impl Estimate {
    /// What this interval of a difference says.
    pub fn verdict(&self) -> Verdict {
        if self.low > 0.0 {
            Verdict::Better
        } else if self.high < 0.0 {
            Verdict::Worse
        } else {
            Verdict::NoDetectableDifference
        }
    }
}

/// The score of a skill over tasks whose samples' scores are `per_task` (one list per task;
/// tasks without a sample are left out), each task's score its `aggregate` over its samples,
/// counted by its weight.
pub fn estimate(
    per_task: &[Vec<f64>],
    weights: Weights<'_>,
    aggregate: Aggregate,
    pass_score: f64,
    confidence: f64,
) -> Estimate {
    let mut values = Vec::with_capacity(per_task.len());
    let mut samples = 0;
    for (index, scores) in per_task.iter().enumerate() {
        if !scores.is_empty() {
            values.push((aggregate.of(scores, pass_score), weight_of(weights, index)));
            samples += scores.len();
        }
    }
    Estimate::of(&values, samples, confidence, Range::Score)
}

/// The paired difference B − A over the tasks both were scored on: per task, the
/// `aggregate` of B's samples minus A's over the samples both have (the first `min` of each,
/// so that the same sample indices are compared).
pub fn paired(
    a: &[Vec<f64>],
    b: &[Vec<f64>],
    weights: Weights<'_>,
    aggregate: Aggregate,
    pass_score: f64,
    confidence: f64,
) -> Estimate {
    differences((a, b, weights), (aggregate, pass_score), confidence, true)
}

/// The per-task differences of `b` and `a` and their estimate: over the samples both have
/// (`same_samples`), or each side over all of its own.
fn differences(
    (a, b, weights): (&[Vec<f64>], &[Vec<f64>], Weights<'_>),
    (aggregate, pass_score): (Aggregate, f64),
    confidence: f64,
    same_samples: bool,
) -> Estimate {
    let mut diffs = Vec::with_capacity(a.len().min(b.len()));
    let mut samples = 0;
    for (index, (a, b)) in a.iter().zip(b).enumerate() {
        let both = a.len().min(b.len());
        if both == 0 {
            continue;
        }
        samples += both;
        let (a, b) = if same_samples {
            (&a[..both], &b[..both])
        } else {
            (&a[..], &b[..])
        };
        diffs.push((
            aggregate.of(b, pass_score) - aggregate.of(a, pass_score),
            weight_of(weights, index),
        ));
    }
    Estimate::of(&diffs, samples, confidence, Range::Difference)
}

/// The noise the gate assumes before repeated samples show it: one imagined task whose
/// paired samples differ by the variance of a fair coin's outcome, pooled with the real
/// ones. It keeps a handful of agreeing samples from proving that a target never varies,
/// and weighs next to nothing once dozens of tasks have been sampled twice.
const PRIOR_VARIANCE: f64 = 0.25;

/// The paired difference B − A on these very tasks, its uncertainty the sampling noise
/// alone: per task the differences of its paired samples (sample k of B minus sample k of
/// A), their variance pooled over the tasks (with a prior of 0.25, a fair coin's, as one
/// more degree of freedom), and the standard error of the mean of the tasks' mean
/// differences,
/// `√(Σ v / m_t) / n` (with weights, `√(v Σ w_t² / m_t) / Σ w_t` around the weighted mean).
/// Unlike [`paired`], it does not count how differently the tasks
/// respond to the edit (the tasks are these, not a sample of others): it answers whether B
/// would score higher than A on these tasks if each were sampled without end, which is the
/// question a gate asks. `None` until some task has two paired samples. Means only: a
/// `pass@k` is not a mean of samples.
pub fn paired_on_these_tasks(
    a: &[Vec<f64>],
    b: &[Vec<f64>],
    weights: Weights<'_>,
    confidence: f64,
) -> Option<Estimate> {
    let mut means = Vec::new();
    let (mut squares, mut df, mut inverse, mut samples) = (0.0, 0usize, 0.0, 0usize);
    for (index, (a, b)) in a.iter().zip(b).enumerate() {
        let m = a.len().min(b.len());
        if m == 0 {
            continue;
        }
        let diffs: Vec<f64> = b[..m].iter().zip(&a[..m]).map(|(b, a)| b - a).collect();
        let mean = diffs.iter().sum::<f64>() / m as f64;
        squares += diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>();
        df += m - 1;
        let weight = weight_of(weights, index);
        inverse += weight * weight / m as f64;
        samples += m;
        means.push((mean, weight));
    }
    let total: f64 = means.iter().map(|(_, w)| w).sum();
    if df == 0 || total <= 0.0 {
        return None;
    }
    let variance = (squares + PRIOR_VARIANCE) / (df + 1) as f64;
    let se = (variance * inverse).sqrt() / total;
    let mean = means.iter().map(|(m, w)| m * w).sum::<f64>() / total;
    Some(Estimate::with_se(
        mean,
        Some(se),
        df + 1,
        (means.len(), samples),
        confidence,
        Range::Difference,
    ))
}

/// The difference B − A paired by task only: per task, the `aggregate` of all of B's samples
/// minus that of all of A's. For samples drawn apart (the best skill's fresh samples against
/// the seed's from the search), where sample numbers mean nothing to each other.
pub fn paired_by_task(
    a: &[Vec<f64>],
    b: &[Vec<f64>],
    weights: Weights<'_>,
    aggregate: Aggregate,
    pass_score: f64,
    confidence: f64,
) -> Estimate {
    differences((a, b, weights), (aggregate, pass_score), confidence, false)
}

/// How the variance of single samples splits between tasks (some are harder than others)
/// and within tasks (a task's samples disagree: sampling noise).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Variance {
    /// The variance of one sample around its task's mean, averaged over tasks.
    pub within: f64,
    /// The variance of the tasks' true means, with the part sampling noise adds to the
    /// observed task means taken out (at least 0).
    pub between: f64,
}

impl Variance {
    /// The share of the variance that is sampling noise (0 when there is none at all).
    pub fn within_share(&self) -> f64 {
        let total = self.within + self.between;
        if total <= 0.0 {
            0.0
        } else {
            self.within / total
        }
    }
}

/// The variance split of `per_task`, from the tasks with at least two samples; `None`
/// when no task has two.
pub fn variance(per_task: &[Vec<f64>]) -> Option<Variance> {
    let repeated: Vec<&Vec<f64>> = per_task.iter().filter(|s| s.len() >= 2).collect();
    if repeated.is_empty() {
        return None;
    }
    let mean_of = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let within = repeated
        .iter()
        .map(|s| {
            let m = mean_of(s);
            s.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (s.len() - 1) as f64
        })
        .sum::<f64>()
        / repeated.len() as f64;
    let means: Vec<f64> = repeated.iter().map(|s| mean_of(s)).collect();
    let samples_per_task =
        repeated.iter().map(|s| s.len()).sum::<usize>() as f64 / repeated.len() as f64;
    let between = if means.len() >= 2 {
        let m = mean_of(&means);
        let observed =
            means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (means.len() - 1) as f64;
        (observed - within / samples_per_task).max(0.0)
    } else {
        0.0
    };
    Some(Variance { within, between })
}

/// What the noise floor rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FloorBasis {
    /// Repeated samples measured the sampling noise; the floor is that of a paired comparison
    /// of two skills of about this one's noise.
    Sampling,
    /// Repeated samples all agreed: rollouts do not vary, and a difference of one task is
    /// real.
    NoSampling,
    /// One sample per task: the sampling noise is not separable from the tasks' differences,
    /// so the floor is that of an unpaired comparison, an upper bound.
    Unpaired,
}

/// The smallest difference a comparison on this dataset detects.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NoiseFloor {
    /// The difference, in score points (0.05 = 5 points).
    pub difference: f64,
    /// The power it is detected with (0.8).
    pub power: f64,
    /// What it rests on.
    pub basis: FloorBasis,
}

/// The smallest difference between two skills that a paired comparison on the tasks and
/// samples of `per_task` detects with probability `power` at two-sided `confidence`:
/// `(t(1 − α/2) + t(power)) · SE`, where SE is that of the paired difference of two skills
/// with this one's sampling noise, `√(2 σ²_within / (K n))`. With one sample per task the
/// noise cannot be separated from the tasks' differences, and the unpaired `√2 · SE` of the
/// score is used instead (an upper bound). When repeated samples never disagree, one task's
/// difference (1/n) is the floor.
pub fn noise_floor(per_task: &[Vec<f64>], confidence: f64, power: f64) -> Option<NoiseFloor> {
    let tasks = per_task.iter().filter(|s| !s.is_empty()).count();
    if tasks < 2 {
        return None;
    }
    let z = t_quantile(1.0 - (1.0 - confidence) / 2.0, tasks - 1) + t_quantile(power, tasks - 1);
    let (difference, basis) = match variance(per_task) {
        Some(split) if split.within <= 0.0 => (1.0 / tasks as f64, FloorBasis::NoSampling),
        Some(split) => {
            let samples: usize = per_task.iter().map(Vec::len).sum();
            let per_task_samples = samples as f64 / tasks as f64;
            let se = (2.0 * split.within / (per_task_samples * tasks as f64)).sqrt();
            (z * se, FloorBasis::Sampling)
        }
        None => {
            let score = estimate(per_task, &[], Aggregate::Mean, 1.0, confidence);
            (
                z * std::f64::consts::SQRT_2 * score.se.unwrap_or(0.0),
                FloorBasis::Unpaired,
            )
        }
    };
    Some(NoiseFloor {
        difference: difference.min(1.0),
        power,
        basis,
    })
}

/// Samples per task that bring the noise floor of a paired comparison down to `difference`,
/// given the sampling noise `variance` measured on `tasks` tasks (rounded up, at least 1).
pub fn samples_for(
    difference: f64,
    variance: &Variance,
    tasks: usize,
    confidence: f64,
    power: f64,
) -> usize {
    if tasks < 2 || difference <= 0.0 {
        return 1;
    }
    let z = t_quantile(1.0 - (1.0 - confidence) / 2.0, tasks - 1) + t_quantile(power, tasks - 1);
    let k = 2.0 * variance.within * z * z / (tasks as f64 * difference * difference);
    (k.ceil() as usize).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-3
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        assert!(close(t_quantile(0.975, 1_000_000), 1.960));
        assert!(close(t_quantile(0.975, 10), 2.228));
        assert!(close(t_quantile(0.975, 63), 1.998));
        assert!(close(t_quantile(0.8, 30), 0.854));
        assert!(close(t_quantile(0.5, 5), 0.0));
    }

    #[test]
    fn the_standard_error_is_clustered_by_task() {
        // Two tasks, always right on one and always wrong on the other: 8 samples would look
        // like 8 independent draws unclustered (SE 0.19); clustered, they are two (SE 0.5).
        let per_task = vec![vec![1.0; 4], vec![0.0; 4]];
        let e = estimate(&per_task, &[], Aggregate::Mean, 1.0, 0.95);
        assert_eq!((e.mean, e.tasks, e.samples), (0.5, 2, 8));
        assert!(close(e.se.unwrap(), 0.5));
        assert_eq!((e.low, e.high), (0.0, 1.0), "clamped to the score range");
    }

    #[test]
    fn tasks_that_all_agree_still_leave_room_near_zero_and_one() {
        // Eight failures have a standard error of 0, not a certainty of 0.
        let failed = estimate(&vec![vec![0.0]; 8], &[], Aggregate::Mean, 1.0, 0.95);
        assert_eq!((failed.mean, failed.se, failed.low), (0.0, Some(0.0), 0.0));
        assert!(close(failed.high, 0.324), "{failed:?}");
        let passed = estimate(&vec![vec![1.0]; 8], &[], Aggregate::Mean, 1.0, 0.95);
        assert!(close(passed.low, 0.676) && passed.high == 1.0, "{passed:?}");
        // Where the tasks spread, the t interval is the wider and stands.
        let spread: Vec<Vec<f64>> = (0..10).map(|i| vec![f64::from(i % 2)]).collect();
        let e = estimate(&spread, &[], Aggregate::Mean, 1.0, 0.95);
        assert!(close(e.low, 0.5 - 0.377));
    }

    #[test]
    fn an_interval_covers_the_mean_with_t_quantiles() {
        let per_task: Vec<Vec<f64>> = (0..10).map(|i| vec![f64::from(i % 2)]).collect();
        let e = estimate(&per_task, &[], Aggregate::Mean, 1.0, 0.95);
        // sd of 0/1 alternating over 10 = 0.527, se = 0.1667, t(0.975, 9) = 2.262
        assert!(close(e.se.unwrap(), 0.1667), "{e:?}");
        assert!(
            close(e.low, 0.5 - 0.377) && close(e.high, 0.5 + 0.377),
            "{e:?}"
        );
        assert!(e.lower(0.025) < e.low + 1e-9 && close(e.lower(0.025), e.low));
        assert!(close(e.half_width(), 0.377));
    }

    #[test]
    fn one_task_says_nothing_about_the_spread() {
        let e = estimate(&[vec![1.0, 0.0]], &[], Aggregate::Mean, 1.0, 0.95);
        assert_eq!(e.se, None);
        assert_eq!((e.low, e.high), (0.0, 1.0));
        assert_eq!(e.lower(0.025), f64::NEG_INFINITY);
    }

    #[test]
    fn pairing_removes_the_difficulty_both_skills_share() {
        // B is right wherever A is, and on two tasks more: unpaired the spread of the tasks
        // hides it, paired it is clear.
        let a: Vec<Vec<f64>> = (0..20).map(|i| vec![f64::from(u8::from(i < 10))]).collect();
        let mut b = a.clone();
        b[10] = vec![1.0];
        b[11] = vec![1.0];
        let d = paired(&a, &b, &[], Aggregate::Mean, 1.0, 0.95);
        assert!(close(d.mean, 0.1), "{d:?}");
        assert!(d.low < 0.1 && d.low > -0.05, "{d:?}");
        assert_eq!(d.samples, 20);
        // The same samples of each task are compared: B's third sample has no partner.
        let d = paired(
            &[vec![0.0, 1.0]],
            &[vec![1.0, 1.0, 0.0]],
            &[],
            Aggregate::Mean,
            1.0,
            0.95,
        );
        assert!(close(d.mean, 0.5) && d.samples == 2);
    }

    #[test]
    fn on_these_tasks_only_the_sampling_noise_counts() {
        // B fixes half the tasks, always: the tasks differ a lot, the samples not at all.
        let a = vec![vec![0.0, 0.0]; 20];
        let b: Vec<Vec<f64>> = (0..20).map(|i| vec![f64::from(i % 2); 2]).collect();
        let population = paired(&a, &b, &[], Aggregate::Mean, 1.0, 0.95);
        let these = paired_on_these_tasks(&a, &b, &[], 0.95).unwrap();
        assert!(close(these.mean, 0.5) && close(population.mean, 0.5));
        // Only the prior's noise is left: (0 + 0.25) / 21 per sample, 20 tasks of 2.
        assert!(close(
            these.se.unwrap(),
            (0.25f64 / 21.0 * 10.0).sqrt() / 20.0
        ));
        assert!(these.se.unwrap() < population.se.unwrap() / 5.0);
        assert_eq!((these.df, these.tasks, these.samples), (21, 20, 40));
        // Coin flips on every task: the noise is measured, not assumed.
        let coin_a: Vec<Vec<f64>> = (0..40).map(|i| vec![f64::from(i % 2), 0.0]).collect();
        let coin_b: Vec<Vec<f64>> = (0..40).map(|i| vec![0.0, f64::from(i % 2)]).collect();
        let noisy = paired_on_these_tasks(&coin_a, &coin_b, &[], 0.95).unwrap();
        assert!(close(noisy.mean, 0.0));
        assert!(noisy.se.unwrap() > 0.07, "{noisy:?}");
        // One sample each: nothing measured yet.
        assert_eq!(
            paired_on_these_tasks(&[vec![1.0]], &[vec![0.0]], &[], 0.95),
            None
        );
    }

    #[test]
    fn samples_drawn_apart_are_paired_by_task() {
        let seed = vec![vec![0.0, 0.0, 1.0], vec![1.0]];
        let best = vec![vec![1.0, 1.0], vec![1.0, 1.0]];
        let d = paired_by_task(&seed, &best, &[], Aggregate::Mean, 1.0, 0.95);
        assert!(close(d.mean, (2.0 / 3.0 + 0.0) / 2.0), "{d:?}");
        assert_eq!((d.tasks, d.samples), (2, 3));
    }

    #[test]
    fn identical_differences_have_no_spread() {
        let a = vec![vec![0.0]; 5];
        let d = paired(&a, &a, &[], Aggregate::Mean, 1.0, 0.95);
        assert_eq!((d.mean, d.se, d.low, d.high), (0.0, Some(0.0), 0.0, 0.0));
    }

    #[test]
    fn pass_at_k_and_pass_all_k_aggregate_samples() {
        let samples = [1.0, 0.0, 1.0];
        assert!(close(Aggregate::Mean.of(&samples, 1.0), 2.0 / 3.0));
        assert_eq!(Aggregate::PassAtK.of(&samples, 1.0), 1.0);
        assert_eq!(Aggregate::PassAllK.of(&samples, 1.0), 0.0);
        assert_eq!(Aggregate::PassAllK.of(&[0.8, 0.9], 0.75), 1.0);
        assert_eq!(Aggregate::PassAtK.of(&[], 1.0), 0.0);
        assert_eq!(Aggregate::PassAtK.label(), "pass@k");
    }

    #[test]
    fn the_variance_splits_into_sampling_noise_and_task_differences() {
        // Every task's samples agree: no sampling noise at all.
        let fixed = vec![vec![1.0, 1.0], vec![0.0, 0.0], vec![1.0, 1.0]];
        let split = variance(&fixed).unwrap();
        assert_eq!(split.within, 0.0);
        assert!(split.between > 0.3);
        assert_eq!(split.within_share(), 0.0);
        // Every task a coin: all of it is noise.
        let coins = vec![vec![1.0, 0.0]; 6];
        let split = variance(&coins).unwrap();
        assert!(close(split.within, 0.5));
        assert_eq!(split.between, 0.0);
        assert_eq!(split.within_share(), 1.0);
        assert_eq!(variance(&[vec![1.0], vec![0.0]]), None);
    }

    #[test]
    fn the_noise_floor_says_what_it_rests_on() {
        let fixed: Vec<Vec<f64>> = (0..20).map(|i| vec![f64::from(i % 2); 2]).collect();
        let floor = noise_floor(&fixed, 0.95, 0.8).unwrap();
        assert_eq!(floor.basis, FloorBasis::NoSampling);
        assert!(close(floor.difference, 0.05));
        let coins: Vec<Vec<f64>> = (0..64).map(|i| vec![f64::from(i % 2), 0.0]).collect();
        let floor = noise_floor(&coins, 0.95, 0.8).unwrap();
        assert_eq!(floor.basis, FloorBasis::Sampling);
        // σ²_w = 0.25 (half the tasks 0/1, half 0/0, averaged), K = 2, n = 64:
        // SE = √(2·0.25/128) = 0.0625; (1.998 + 0.847) · 0.0625 = 0.178
        assert!(close(floor.difference, 0.178), "{floor:?}");
        let once: Vec<Vec<f64>> = (0..64).map(|i| vec![f64::from(i % 2)]).collect();
        assert_eq!(
            noise_floor(&once, 0.95, 0.8).unwrap().basis,
            FloorBasis::Unpaired
        );
        assert_eq!(noise_floor(&[vec![1.0]], 0.95, 0.8), None);
    }

    #[test]
    fn more_samples_bring_the_floor_down_as_the_formula_says() {
        let split = Variance {
            within: 0.25,
            between: 0.1,
        };
        let k = samples_for(0.1, &split, 64, 0.95, 0.8);
        // 2 · 0.25 · 2.845² / (64 · 0.01) = 6.3
        assert_eq!(k, 7);
        assert_eq!(samples_for(0.5, &split, 64, 0.95, 0.8), 1);
    }

    #[test]
    fn weights_give_each_group_its_share_and_equal_weights_change_nothing() {
        // Eight tasks at 1.0 and two queries at 0.0: unweighted 0.8; the queries given half
        // the score (each weighs 4 tasks' worth: 2 · 4 = 8) make it 0.5.
        let per_task: Vec<Vec<f64>> = (0..10).map(|i| vec![f64::from(u8::from(i < 8))]).collect();
        let plain = estimate(&per_task, &[], Aggregate::Mean, 1.0, 0.95);
        assert!(close(plain.mean, 0.8));
        let equal = estimate(&per_task, &[2.0; 10], Aggregate::Mean, 1.0, 0.95);
        assert_eq!(plain, equal, "scaling every weight alike changes nothing");
        let mut weights = vec![1.0; 8];
        weights.extend([4.0, 4.0]);
        let weighted = estimate(&per_task, &weights, Aggregate::Mean, 1.0, 0.95);
        assert!(close(weighted.mean, 0.5), "{weighted:?}");
        // Kish: (16)² / (8 + 32) = 6.4 effective tasks, so 5 degrees of freedom.
        assert_eq!((weighted.tasks, weighted.df), (10, 5));
        // √(10/9 · (8 · 0.5² + 2 · 4² · 0.5²)) / 16 = 0.2083
        assert!(close(weighted.se.unwrap(), 0.2083), "{weighted:?}");

        // The paired tests weigh the same way.
        let a = vec![vec![0.0, 0.0]; 10];
        let b: Vec<Vec<f64>> = per_task.iter().map(|s| vec![s[0]; 2]).collect();
        assert!(close(
            paired(&a, &b, &weights, Aggregate::Mean, 1.0, 0.95).mean,
            0.5
        ));
        assert!(close(
            paired_by_task(&a, &b, &weights, Aggregate::Mean, 1.0, 0.95).mean,
            0.5
        ));
        let these = paired_on_these_tasks(&a, &b, &weights, 0.95).unwrap();
        let these_plain = paired_on_these_tasks(&a, &b, &[], 0.95).unwrap();
        assert!(close(these.mean, 0.5) && close(these_plain.mean, 0.8));
        // √(v · Σ w²/m) / Σ w against √(v · Σ 1/m) / n: heavy weights on few tasks widen it.
        assert!(these.se.unwrap() > these_plain.se.unwrap());
        assert_eq!(
            paired_on_these_tasks(&a, &b, &[1.0; 10], 0.95),
            Some(these_plain)
        );
    }
}
