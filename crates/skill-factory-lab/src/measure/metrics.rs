//! Dataset-level metrics: the counts and rates of a detection rule, AUC, and threshold fitting.
//!
//! "Calibration" in classifier mode means choosing a threshold at a false-positive budget: the
//! model's P(true) is taken as calibrated, so nothing here reshapes probabilities.
//!
//! Recall and the false-positive rate are over *every* example of a split, judged or not (an
//! example never sent is a miss, never excluded); AUC is over the examples that have a score,
//! because an unjudged example has nothing to rank.

use crate::LabError;
use serde_json::{Value, json};
use skill_factory_pycompat::float::round;

/// Added to a score so the threshold sits just above it: `score >= threshold` no longer holds
/// for that score. Absolute, as in skill-scanner: a positive tied with that negative is not
/// caught either.
const ABOVE: f64 = 1e-9;

/// The confusion counts of one detection rule against the labels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rates {
    /// Positives detected.
    pub tp: usize,
    /// Negatives detected.
    pub fp: usize,
    /// Positives missed.
    pub fn_: usize,
    /// Negatives not detected.
    pub tn: usize,
}

impl Rates {
    /// The counts of `detected` against `labels`, example by example.
    pub fn from_detections(labels: &[bool], detected: &[bool]) -> Result<Rates, LabError> {
        if labels.len() != detected.len() {
            return Err(LabError::invalid(format!(
                "{} labels but {} detections: they must be paired one to one",
                labels.len(),
                detected.len()
            )));
        }
        let mut rates = Rates::default();
        for (&label, &hit) in labels.iter().zip(detected) {
            rates.count(label, hit);
        }
        Ok(rates)
    }

    /// Counts one example with this `label`, `detected` or not.
    pub fn count(&mut self, label: bool, detected: bool) {
        match (label, detected) {
            (true, true) => self.tp += 1,
            (true, false) => self.fn_ += 1,
            (false, true) => self.fp += 1,
            (false, false) => self.tn += 1,
        }
    }

    /// The number of positives.
    pub fn positives(&self) -> usize {
        self.tp + self.fn_
    }

    /// The number of negatives.
    pub fn negatives(&self) -> usize {
        self.fp + self.tn
    }

    /// tp / (tp + fn), 0 without positives.
    pub fn recall(&self) -> f64 {
        ratio(self.tp, self.positives())
    }

    /// fp / (fp + tn), 0 without negatives.
    pub fn fpr(&self) -> f64 {
        ratio(self.fp, self.negatives())
    }

    /// tp / (tp + fp), 0 when nothing is detected.
    pub fn precision(&self) -> f64 {
        ratio(self.tp, self.tp + self.fp)
    }

    /// tn / (fp + tn), 0 without negatives.
    pub fn specificity(&self) -> f64 {
        ratio(self.tn, self.negatives())
    }

    /// The harmonic mean of precision and recall, 0 when both are 0.
    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }

    /// The mean of recall and specificity.
    pub fn balanced_accuracy(&self) -> f64 {
        (self.recall() + self.specificity()) / 2.0
    }

    /// `{tp, fp, fn, tn, recall, fpr, precision}`, the rates rounded to 4 decimals the way
    /// Python rounds (reports are compared with the reference's).
    pub fn to_json(&self) -> Value {
        json!({
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn_,
            "tn": self.tn,
            "recall": round(self.recall(), 4),
            "fpr": round(self.fpr(), 4),
            "precision": round(self.precision(), 4),
        })
    }
}

fn ratio(num: usize, den: usize) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// The area under the ROC curve of scores `pos` (positives) against `neg` (negatives), by the
/// Mann-Whitney rank sum: a tie between a positive and a negative counts one half. 0.5 when
/// either side is empty (nothing to rank).
pub fn auc(pos: &[f64], neg: &[f64]) -> f64 {
    if pos.is_empty() || neg.is_empty() {
        return 0.5;
    }
    let mut all: Vec<(f64, bool)> = pos
        .iter()
        .map(|&s| (s, true))
        .chain(neg.iter().map(|&s| (s, false)))
        .collect();
    all.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank_sum = 0.0;
    let mut start = 0;
    while start < all.len() {
        let value = all[start].0;
        let end = start
            + all[start..]
                .iter()
                .take_while(|e| e.0 == value)
                .count()
                .max(1);
        // Ranks start+1 ..= end share their average; every sum here is a multiple of 1/2 far
        // below 2^53, so the result is exact whatever the order of additions.
        let average = (start + 1 + end) as f64 / 2.0;
        let positives = all[start..end].iter().filter(|e| e.1).count();
        rank_sum += average * positives as f64;
        start = end;
    }
    let (n_pos, n_neg) = (pos.len() as f64, neg.len() as f64);
    (rank_sum - n_pos * (n_pos + 1.0) / 2.0) / (n_pos * n_neg)
}

/// The lowest threshold that keeps the false-positive rate within `rate`: with the scored
/// negatives sorted high to low and `allowed = floor(rate * total)`, just above the negative
/// at position `allowed` (the first one the budget cannot pay for), or 0.0 when the budget
/// covers every scored negative.
///
/// `n_neg_total` is the number of negatives of the split, judged or not (default: the scored
/// ones): unjudged negatives can never be flagged, but they stay in the denominator.
pub fn threshold_at_fpr(
    neg_scores: &[f64],
    rate: f64,
    n_neg_total: Option<usize>,
) -> Result<f64, LabError> {
    if !(0.0..1.0).contains(&rate) {
        return Err(LabError::invalid(format!(
            "the false-positive budget must be at least 0 and below 1, not {rate}"
        )));
    }
    let total = n_neg_total.unwrap_or(neg_scores.len());
    let allowed = (rate * total as f64).floor() as usize;
    if allowed >= neg_scores.len() {
        return Ok(0.0);
    }
    let mut ranked = neg_scores.to_vec();
    // Only the value at position `allowed` of the descending order is needed.
    let (_, nth, _) = ranked.select_nth_unstable_by(allowed, |a, b| b.total_cmp(a));
    Ok(*nth + ABOVE)
}

/// Moves threshold `t` down to the middle of the gap below the lowest positive it catches, so a
/// shipped threshold never spends false-positive budget for nothing: on the data it was fitted
/// on, recall can only rise and false positives only fall.
///
/// The midpoint is tidied to 6 decimals when the tidy value stays inside the gap (above the
/// highest negative below, at most the lowest caught positive). `t` comes back unchanged when
/// it catches no positive or no negative lies below the lowest caught one.
pub fn widest_margin(t: f64, pos: &[f64], neg: &[f64]) -> f64 {
    let Some(lowest_caught) = pos.iter().copied().filter(|&p| p >= t).reduce(f64::min) else {
        return t;
    };
    let Some(highest_below) = neg
        .iter()
        .copied()
        .filter(|&n| n < lowest_caught)
        .reduce(f64::max)
    else {
        return t;
    };
    let mid = (highest_below + lowest_caught) / 2.0;
    let tidy = round(mid, 6);
    if highest_below < tidy && tidy <= lowest_caught {
        tidy
    } else {
        mid
    }
}

/// The threshold at `fpr_budget` for `scores`, one `(label, score)` per example of the
/// fitting split (train), `None` for an example without a score: the lowest threshold the
/// budget allows ([`threshold_at_fpr`], every negative in the denominator), then, with
/// `margin`, moved to the middle of the gap ([`widest_margin`]).
pub fn fit_threshold(
    scores: impl Iterator<Item = (bool, Option<f64>)>,
    fpr_budget: f64,
    margin: bool,
) -> Result<f64, LabError> {
    let mut negatives = 0;
    let mut neg = Vec::new();
    let mut pos = Vec::new();
    for (label, score) in scores {
        if !label {
            negatives += 1;
        }
        if let Some(s) = score {
            if label { pos.push(s) } else { neg.push(s) }
        }
    }
    let t = threshold_at_fpr(&neg, fpr_budget, Some(negatives))?;
    Ok(if margin {
        widest_margin(t, &pos, &neg)
    } else {
        t
    })
}

/// `x` as a one-decimal percentage, the way Python's `f"{x:.1%}"` writes it: `12.3%`.
pub fn pct(x: f64) -> String {
    // Python multiplies by 100 in floating point, then rounds the exact binary value half to
    // even; Rust's fixed-precision formatting rounds the same exact value the same way.
    format!("{:.1}%", x * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEG: [f64; 4] = [0.9, 0.5, 0.4, 0.1];

    #[test]
    fn auc_is_one_when_every_positive_outranks_every_negative() {
        assert_eq!(auc(&[0.8, 0.9], &[0.1, 0.2]), 1.0);
    }

    #[test]
    fn auc_is_zero_when_the_ranking_is_inverted() {
        assert_eq!(auc(&[0.1, 0.2], &[0.8, 0.9]), 0.0);
    }

    #[test]
    fn auc_counts_ties_as_half() {
        assert_eq!(auc(&[0.5], &[0.5]), 0.5);
        assert_eq!(auc(&[0.5, 0.9], &[0.5, 0.1]), 0.875);
    }

    #[test]
    fn auc_is_one_half_when_a_side_is_empty() {
        assert_eq!(auc(&[], &[0.1]), 0.5);
        assert_eq!(auc(&[0.1], &[]), 0.5);
    }

    #[test]
    fn threshold_at_fpr_sits_just_above_the_first_negative_the_budget_cannot_pay_for() {
        assert_eq!(threshold_at_fpr(&NEG, 0.0, None).ok(), Some(0.9 + 1e-9));
        assert_eq!(threshold_at_fpr(&NEG, 0.25, None).ok(), Some(0.5 + 1e-9));
    }

    #[test]
    fn threshold_at_fpr_counts_unjudged_negatives_in_the_denominator() {
        // floor(0.01 * 200) = 2 negatives may be flagged: the third highest bounds it.
        assert_eq!(
            threshold_at_fpr(&NEG, 0.01, Some(200)).ok(),
            Some(0.4 + 1e-9)
        );
    }

    #[test]
    fn threshold_at_fpr_is_zero_when_the_budget_covers_every_scored_negative() {
        assert_eq!(threshold_at_fpr(&[0.3], 0.5, Some(10)).ok(), Some(0.0));
    }

    #[test]
    fn threshold_at_fpr_refuses_a_budget_outside_zero_to_one() {
        assert!(threshold_at_fpr(&NEG, 1.0, None).is_err());
        assert!(threshold_at_fpr(&NEG, -0.1, None).is_err());
        assert!(threshold_at_fpr(&NEG, f64::NAN, None).is_err());
    }

    #[test]
    fn widest_margin_moves_to_the_middle_of_the_gap_below_the_lowest_caught_positive() {
        let pos = [0.9, 0.8, 0.3];
        let neg = [0.5, 0.1, 0.05, 0.0];
        assert_eq!(widest_margin(0.1 + 1e-9, &pos, &neg), 0.2);
        assert_eq!(widest_margin(0.05 + 1e-9, &[0.9, 0.7], &[0.4, 0.05]), 0.55);
    }

    #[test]
    fn widest_margin_keeps_the_threshold_when_nothing_is_caught() {
        assert_eq!(widest_margin(0.95, &[0.9, 0.7], &[0.4]), 0.95);
    }

    #[test]
    fn widest_margin_keeps_the_threshold_when_no_negative_lies_below() {
        assert_eq!(widest_margin(0.5, &[0.9, 0.7], &[0.8]), 0.5);
    }

    #[test]
    fn widest_margin_tidies_to_six_decimals_inside_the_gap() {
        assert_eq!(widest_margin(0.21 + 1e-9, &[0.23], &[0.21]), 0.22);
    }

    #[test]
    fn widest_margin_keeps_the_exact_midpoint_when_the_tidy_value_leaves_the_gap() {
        let (low, high) = (0.1234561, 0.1234563);
        let t = widest_margin(low + 1e-9, &[high], &[low]);
        assert_eq!(t, (low + high) / 2.0);
        assert!(low < t && t <= high);
    }

    #[test]
    fn fit_threshold_counts_every_negative_and_moves_into_the_gap() {
        let scores = [
            (true, Some(0.9)),
            (true, Some(0.3)),
            (true, None),
            (false, Some(0.5)),
            (false, Some(0.1)),
            (false, None),
            (false, None),
        ];
        // floor(0.25 * 4) = 1 negative may be flagged: just above 0.1, then mid-gap.
        assert_eq!(
            fit_threshold(scores.into_iter(), 0.25, false).ok(),
            Some(0.1 + 1e-9)
        );
        assert_eq!(
            fit_threshold(scores.into_iter(), 0.25, true).ok(),
            Some(0.2)
        );
        assert!(fit_threshold(scores.into_iter(), 1.5, true).is_err());
    }

    #[test]
    fn rates_follow_their_definitions() {
        let r = Rates {
            tp: 1,
            fn_: 1,
            fp: 1,
            tn: 2,
        };
        assert_eq!(r.recall(), 0.5);
        assert_eq!(r.fpr(), 1.0 / 3.0);
        assert_eq!(r.precision(), 0.5);
        assert_eq!(r.f1(), 0.5);
        assert_eq!(r.balanced_accuracy(), (0.5 + 2.0 / 3.0) / 2.0);
        assert_eq!(
            r.to_json().to_string(),
            r#"{"tp":1,"fp":1,"fn":1,"tn":2,"recall":0.5,"fpr":0.3333,"precision":0.5}"#
        );
    }

    #[test]
    fn rates_are_zero_on_zero_denominators() {
        let r = Rates::default();
        assert_eq!(
            (r.recall(), r.fpr(), r.precision(), r.specificity(), r.f1()),
            (0.0, 0.0, 0.0, 0.0, 0.0)
        );
        assert_eq!(r.balanced_accuracy(), 0.0);
    }

    #[test]
    fn rates_from_detections_pair_labels_with_detections() {
        let r = Rates::from_detections(
            &[true, true, false, false, false],
            &[true, false, true, false, false],
        );
        assert_eq!(
            r.ok(),
            Some(Rates {
                tp: 1,
                fn_: 1,
                fp: 1,
                tn: 2
            })
        );
    }

    #[test]
    fn rates_refuse_labels_and_detections_of_different_lengths() {
        assert!(Rates::from_detections(&[true], &[]).is_err());
    }

    #[test]
    fn pct_writes_one_decimal() {
        assert_eq!(pct(0.1234), "12.3%");
        assert_eq!(pct(0.0), "0.0%");
        assert_eq!(pct(1.0), "100.0%");
    }
}
