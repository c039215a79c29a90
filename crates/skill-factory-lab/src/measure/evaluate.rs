//! A probe set scored on a split, through a policy, from cached answers; and how well each
//! question separates on its own.
//!
//! Recall is over every positive of the split: an example the pipeline never sent (over
//! budget, skipped, failed, no state) is a miss, never excluded. AUC is over the examples that
//! have a score, since an unjudged example has nothing to rank.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use skill_factory_pycompat::float::round;

use crate::LabError;
use crate::answers::table::AnswerTable;
use crate::data::dataset::Example;
use crate::data::split::Split;
use crate::measure::metrics::{Rates, auc, fit_threshold};
use crate::probe::probeset::ProbeSet;

/// How a policy reads one example: (example, its answers, its score if it has one, the
/// threshold if there is one) -> the index of the level it assigns.
pub type Rule =
    dyn Fn(&Example, &HashMap<String, f64>, Option<f64>, Option<f64>) -> usize + Send + Sync;

/// A policy: ordered levels, the first meaning "not detected", and the rule that assigns one
/// to an example. Every later level is a *detect level*: an example is detected at level L
/// when its verdict is L or a later one, so rates are kept per detect level.
#[derive(Clone)]
pub struct Policy {
    /// Its name, as reports and calibration notes show it.
    pub name: String,
    /// The levels, lowest first; at least two, all distinct.
    pub levels: Vec<String>,
    rule: Arc<Rule>,
    /// Where a rule that can fail (an external command) records its first failure.
    failure: Option<Arc<std::sync::Mutex<Option<String>>>>,
}

impl Policy {
    /// The default policy `threshold`, levels `pass` and `flag`: flag when the example has a
    /// score, the probe set a threshold, and the score reaches it.
    pub fn threshold() -> Policy {
        Policy {
            name: "threshold".to_owned(),
            levels: vec!["pass".to_owned(), "flag".to_owned()],
            rule: Arc::new(|_, _, score, threshold| match (score, threshold) {
                (Some(s), Some(t)) if s >= t => 1,
                _ => 0,
            }),
            failure: None,
        }
    }

    /// A policy named `name` over `levels` (lowest first) whose `rule` returns a level index.
    pub fn from_rule(
        name: impl Into<String>,
        levels: Vec<String>,
        rule: impl Fn(&Example, &HashMap<String, f64>, Option<f64>, Option<f64>) -> usize
        + Send
        + Sync
        + 'static,
    ) -> Result<Policy, LabError> {
        let name = name.into();
        if levels.len() < 2 {
            return Err(LabError::invalid(format!(
                "policy '{name}' needs at least two levels (the first means not detected), not {}",
                levels.len()
            )));
        }
        if let Some((i, level)) = levels
            .iter()
            .enumerate()
            .find(|(i, level)| levels[..*i].contains(level))
        {
            return Err(LabError::invalid(format!(
                "policy '{name}' lists level '{level}' twice (levels {} and {})",
                levels[..i].iter().position(|l| l == level).unwrap_or(0) + 1,
                i + 1
            )));
        }
        Ok(Policy {
            name,
            levels,
            rule: Arc::new(rule),
            failure: None,
        })
    }

    /// The same policy, whose rule records its failures in `failure` (the rule then answers
    /// level 0 and the caller reads [`Policy::failure`] afterwards).
    pub fn failing_into(mut self, failure: Arc<std::sync::Mutex<Option<String>>>) -> Policy {
        self.failure = Some(failure);
        self
    }

    /// The first failure of the rule, if it can fail and did: every verdict given since is
    /// meaningless.
    pub fn failure(&self) -> Option<String> {
        self.failure
            .as_ref()
            .and_then(|slot| slot.lock().unwrap_or_else(|p| p.into_inner()).clone())
    }

    /// The levels that count as a detection: all but the first.
    pub fn detect_levels(&self) -> &[String] {
        self.levels.get(1..).unwrap_or_default()
    }

    /// The index of the level `example` gets.
    pub fn verdict(
        &self,
        example: &Example,
        answers: &HashMap<String, f64>,
        score: Option<f64>,
        threshold: Option<f64>,
    ) -> usize {
        // A rule can only name a level that exists: an index past the end is read as the top.
        (self.rule)(example, answers, score, threshold).min(self.levels.len().saturating_sub(1))
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.name)
            .field("levels", &self.levels)
            .finish_non_exhaustive()
    }
}

/// One probe set, through one policy, on one split.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitReport {
    /// The split.
    pub split: Split,
    /// Positives of the split, judged or not.
    pub positives: usize,
    /// Negatives of the split, judged or not.
    pub negatives: usize,
    /// Positives that had a score.
    pub judged_positives: usize,
    /// Negatives that had a score.
    pub judged_negatives: usize,
    /// The rates at each detect level, in the policy's order.
    pub levels: Vec<(String, Rates)>,
    /// AUC of the score over the examples that had one.
    pub auc: f64,
}

impl SplitReport {
    /// The rates at detect level `level`, or at the first detect level when `None`; `None`
    /// when the policy has no such detect level.
    pub fn rates(&self, level: Option<&str>) -> Option<&Rates> {
        match level {
            None => self.levels.first(),
            Some(name) => self.levels.iter().find(|(l, _)| l == name),
        }
        .map(|(_, rates)| rates)
    }

    /// `{split, positives, negatives, judged_positives, judged_negatives, auc, levels:
    /// {level: rates}}`, AUC rounded to 4 decimals (the reference's layout).
    pub fn to_json(&self) -> Value {
        let levels: Map<String, Value> = self
            .levels
            .iter()
            .map(|(level, rates)| (level.clone(), rates.to_json()))
            .collect();
        json!({
            "split": self.split.name(),
            "positives": self.positives,
            "negatives": self.negatives,
            "judged_positives": self.judged_positives,
            "judged_negatives": self.judged_negatives,
            "auc": round(self.auc, 4),
            "levels": levels,
        })
    }
}

/// `probeset` on the `examples` of `split`, through `policy`, from the answers in `table`.
/// Recall and false-positive rate count every example of the split, judged or not.
pub fn evaluate_split(
    split: Split,
    examples: &[Example],
    table: &AnswerTable,
    probeset: &ProbeSet,
    policy: &Policy,
) -> SplitReport {
    let detect = policy.detect_levels();
    let mut rates = vec![Rates::default(); detect.len()];
    let (mut pos, mut neg) = (Vec::new(), Vec::new());
    for ex in examples {
        let answers = table.answers(&ex.id);
        let score = probeset.score_of(answers);
        let verdict = policy.verdict(ex, answers, score, probeset.threshold);
        // Detect level i (0-based) is policy level i + 1: detected there and at every later one.
        for (i, level) in rates.iter_mut().enumerate() {
            level.count(ex.label, verdict > i);
        }
        if let Some(s) = score {
            if ex.label { pos.push(s) } else { neg.push(s) }
        }
    }
    let positives = examples.iter().filter(|ex| ex.label).count();
    SplitReport {
        split,
        positives,
        negatives: examples.len() - positives,
        judged_positives: pos.len(),
        judged_negatives: neg.len(),
        levels: detect.iter().cloned().zip(rates).collect(),
        auc: auc(&pos, &neg),
    }
}

/// The reports of one configuration, by split (only the splits scored in this run).
pub type Reports = BTreeMap<Split, SplitReport>;

/// How well one question separates on its own, with its threshold fitted on train.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionStats {
    /// The question id.
    pub qid: String,
    /// The lowest threshold the budget allows on train (no margin: comparable with the jev
    /// write-up's per-question figures).
    pub threshold: f64,
    /// Per split listed: AUC over answered examples, and the rates of "answered and
    /// P(true) >= threshold" over every example of the split.
    pub splits: BTreeMap<Split, QuestionSplit>,
}

/// One question on one split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuestionSplit {
    /// AUC of P(true) over the examples that have an answer.
    pub auc: f64,
    /// Detections at the train threshold, over every example.
    pub rates: Rates,
}

impl QuestionStats {
    /// AUC on `split` (0.5, "no separation", when the split was not listed).
    pub fn auc(&self, split: Split) -> f64 {
        self.splits.get(&split).map_or(0.5, |s| s.auc)
    }
}

/// [`QuestionStats`] of every question of `qids`, in that order, for every split of
/// `by_split`; thresholds are fitted on its train entry at `fpr_budget`.
pub fn question_stats(
    qids: &[String],
    by_split: &[(Split, &[Example])],
    table: &AnswerTable,
    fpr_budget: f64,
) -> Result<Vec<QuestionStats>, LabError> {
    let Some((_, train)) = by_split.iter().find(|(split, _)| *split == Split::Train) else {
        return Err(LabError::invalid(
            "question statistics fit their thresholds on train, which is missing",
        ));
    };
    let answer = |ex: &Example, qid: &str| table.answers(&ex.id).get(qid).copied();
    qids.iter()
        .map(|qid| {
            let scores = train.iter().map(|ex| (ex.label, answer(ex, qid)));
            let threshold = fit_threshold(scores, fpr_budget, false)?;
            let splits = by_split
                .iter()
                .map(|(split, examples)| {
                    let (mut pos, mut neg, mut rates) = (Vec::new(), Vec::new(), Rates::default());
                    for ex in examples.iter() {
                        let p = answer(ex, qid);
                        if let Some(p) = p {
                            if ex.label { pos.push(p) } else { neg.push(p) }
                        }
                        rates.count(ex.label, p.is_some_and(|p| p >= threshold));
                    }
                    let stats = QuestionSplit {
                        auc: auc(&pos, &neg),
                        rates,
                    };
                    (*split, stats)
                })
                .collect();
            Ok(QuestionStats {
                qid: qid.clone(),
                threshold,
                splits,
            })
        })
        .collect()
}

/// [`question_stats`], best training AUC first: the order tables and the proposer read the
/// pool in, the strongest question on top.
pub fn question_stats_by_auc(
    qids: &[String],
    by_split: &[(Split, &[Example])],
    table: &AnswerTable,
    fpr_budget: f64,
) -> Result<Vec<QuestionStats>, LabError> {
    let mut stats = question_stats(qids, by_split, table, fpr_budget)?;
    stats.sort_by(|a, b| b.auc(Split::Train).total_cmp(&a.auc(Split::Train)));
    Ok(stats)
}

/// The answer table of `examples` after asking them every question of the shared test bank at
/// `budget`, answered by the world's responder (spec §6.0).
#[cfg(test)]
pub(crate) fn world_table(examples: &[Example], budget: usize) -> AnswerTable {
    use crate::answers::table::Row;
    use crate::data::dataset::Status;

    let compiled = crate::probe::question::test_bank().compiled().unwrap();
    let rows = examples
        .iter()
        .map(|ex| {
            let status = ex.status(budget);
            let answers = match (&status, &ex.state) {
                (Status::Judged, Some(state)) => compiled
                    .iter()
                    .map(|(qid, q)| (qid.clone(), crate::data::world::responder(state, qid, q)))
                    .collect(),
                _ => HashMap::new(),
            };
            let row = Row {
                status,
                answers,
                versions: BTreeMap::new(),
            };
            (ex.id.clone(), row)
        })
        .collect();
    AnswerTable { rows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::dataset::Status;
    use crate::probe::score::ScoreExpr;

    #[test]
    fn threshold_policy_flags_a_score_at_or_above_the_threshold() {
        let policy = Policy::threshold();
        let ex = Example::new("a", true, "state");
        let none = HashMap::new();
        assert_eq!(policy.detect_levels(), ["flag"]);
        assert_eq!(policy.verdict(&ex, &none, Some(0.5), Some(0.5)), 1);
        assert_eq!(policy.verdict(&ex, &none, Some(0.4), Some(0.5)), 0);
        assert_eq!(policy.verdict(&ex, &none, None, Some(0.5)), 0);
        assert_eq!(policy.verdict(&ex, &none, Some(0.9), None), 0);
    }

    #[test]
    fn a_policy_needs_two_distinct_levels() {
        let rule = |_: &Example, _: &HashMap<String, f64>, _, _| 0;
        let levels = |names: &[&str]| names.iter().map(|s| s.to_string()).collect();
        assert!(Policy::from_rule("one", levels(&["pass"]), rule).is_err());
        let twice = Policy::from_rule("twice", levels(&["pass", "warn", "warn"]), rule);
        assert!(twice.unwrap_err().to_string().contains("'warn' twice"));
        assert!(Policy::from_rule("ok", levels(&["pass", "warn", "block"]), rule).is_ok());
    }

    #[test]
    fn split_report_reads_the_first_detect_level_by_default() {
        let warn = Rates {
            tp: 2,
            fp: 1,
            fn_: 0,
            tn: 1,
        };
        let block = Rates {
            tp: 1,
            fp: 0,
            fn_: 1,
            tn: 2,
        };
        let report = SplitReport {
            split: Split::Val,
            positives: 2,
            negatives: 2,
            judged_positives: 2,
            judged_negatives: 1,
            levels: vec![("warn".into(), warn), ("block".into(), block)],
            auc: 0.123456,
        };
        assert_eq!(report.rates(None), Some(&warn));
        assert_eq!(report.rates(Some("block")), Some(&block));
        assert_eq!(report.rates(Some("pass")), None);
        let json = report.to_json();
        assert_eq!(json["split"], "val");
        assert_eq!(json["auc"], 0.1235);
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "split",
                "positives",
                "negatives",
                "judged_positives",
                "judged_negatives",
                "auc",
                "levels"
            ]
        );
        assert_eq!(json["levels"]["block"]["tp"], 1);
    }

    fn intent_at(threshold: f64) -> ProbeSet {
        let qid = "intent@reviewer".to_owned();
        let bank = crate::probe::question::test_bank()
            .subset(std::slice::from_ref(&qid))
            .unwrap();
        ProbeSet::new("intent", bank, ScoreExpr::Question(qid), Some(threshold)).unwrap()
    }

    #[test]
    fn recall_counts_every_positive_of_the_split_judged_or_not() {
        let examples = crate::data::world::examples(120);
        // At 100 characters the padded states are over budget: never asked, never answered.
        let table = world_table(&examples, 100);
        let report = evaluate_split(
            Split::Train,
            &examples,
            &table,
            &intent_at(0.5),
            &Policy::threshold(),
        );
        let unjudged = |label: bool| {
            let over = |ex: &&Example| ex.label == label && ex.status(100) != Status::Judged;
            examples.iter().filter(over).count()
        };
        assert!(unjudged(true) > 0 && unjudged(false) > 0);
        assert_eq!((report.positives, report.negatives), (40, 80));
        assert_eq!(report.judged_positives, 40 - unjudged(true));
        assert_eq!(report.judged_negatives, 80 - unjudged(false));
        let rates = report.rates(None).unwrap();
        assert_eq!(rates.positives(), 40);
        assert_eq!(rates.negatives(), 80);
        assert!(rates.fn_ >= unjudged(true));
        assert_eq!(rates.fp, 0);
        assert!(report.auc > 0.9);
    }

    #[test]
    fn a_multi_level_policy_reports_every_detect_level() {
        let examples = crate::data::world::examples(120);
        let table = world_table(&examples, 10_000);
        let levels = ["pass", "warn", "block"].map(String::from).to_vec();
        // Block what is flagged and has a high-severity finding; warn about the rest flagged.
        let policy = Policy::from_rule("strict", levels, |ex, _, score, threshold| {
            let flagged = matches!((score, threshold), (Some(s), Some(t)) if s >= t);
            let severe = ex.metadata["findings"]
                .as_array()
                .is_some_and(|f| !f.is_empty());
            usize::from(flagged) + usize::from(flagged && severe)
        })
        .unwrap();
        let report = evaluate_split(Split::Train, &examples, &table, &intent_at(0.5), &policy);
        let names: Vec<&str> = report.levels.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(names, ["warn", "block"]);
        let (warn, block) = (
            report.rates(Some("warn")).unwrap(),
            report.rates(Some("block")).unwrap(),
        );
        assert!(block.tp > 0);
        assert!(warn.recall() > block.recall());
        assert_eq!(report.rates(None), Some(warn));
        let json = report.to_json();
        assert!(json["levels"]["warn"].is_object() && json["levels"]["block"].is_object());
    }

    #[test]
    fn question_stats_fit_the_lowest_threshold_on_train_and_rate_every_split() {
        let examples = crate::data::world::examples(120);
        let splits = crate::data::world::default_splits(&examples);
        let table = world_table(&examples, 100);
        let (train, val) = (splits.get(Split::Train), splits.get(Split::Val));
        let qids = vec!["intent@reviewer".to_owned()];
        let stats = question_stats(
            &qids,
            &[(Split::Train, train), (Split::Val, val)],
            &table,
            0.05,
        )
        .unwrap();
        let p = |ex: &Example| table.answers(&ex.id).get("intent@reviewer").copied();
        let lowest = fit_threshold(train.iter().map(|ex| (ex.label, p(ex))), 0.05, false);
        assert_eq!(Some(stats[0].threshold), lowest.ok());
        let on_val = stats[0].splits[&Split::Val].rates;
        assert_eq!(on_val.positives() + on_val.negatives(), val.len());
        assert!(question_stats(&qids, &[(Split::Val, val)], &table, 0.05).is_err());
    }
}
