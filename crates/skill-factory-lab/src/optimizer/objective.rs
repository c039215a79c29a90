//! The objective (recall on a selection split at a false-positive budget), its constraints, and
//! the validation gate a candidate must pass to replace the incumbent.
//!
//! A scalar alone does not keep a classifier honest: a candidate that wins on recall and
//! breaks a constraint (a new false block, a validation false-positive rate the training fit
//! did not carry over) is refused, and the reasons say which.
//!
//! ```yaml
//! objective:
//!   fpr_budget: 0.005          # thresholds are fitted on train at this rate
//!   split: val                 # recall on this split decides
//!   min_delta: 0.0
//!   constraints:
//!     - {split: val, level: flag, max_fpr: 0.01}
//!     - {split: val, level: block, max_added_false: 0}
//! ```
//!
//! The objective is recall alone and the gain must be strict: a candidate with equal recall and
//! fewer false positives is refused (false positives are held by constraints instead). Test and
//! held-out can never be read here: they stay sealed until `lab freeze`.

use serde::Deserialize;
use skill_factory_config::scalar::ScalarText;

use crate::data::split::Split;
use crate::measure::evaluate::{Policy, Reports, SplitReport};
use crate::measure::metrics::{Rates, pct};
use skill_factory_config::locate::Unusable;

/// The `objective` block: what the optimizer maximizes, under which constraints.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectiveFile {
    /// False-positive rate at which thresholds are fitted on train, at least 0 and below 1
    /// (default 0.01).
    #[serde(default)]
    fpr_budget: Option<f64>,
    /// The split whose recall decides: `train` or `val`; test and held-out are sealed (default
    /// `val`).
    #[serde(default)]
    split: Option<ScalarText>,
    /// The policy level whose recall decides (default: the policy's first level after the
    /// "not detected" one).
    #[serde(default)]
    level: Option<ScalarText>,
    /// Recall a candidate must gain over the incumbent on top of a strict gain, at least 0
    /// (default 0).
    #[serde(default)]
    min_delta: Option<f64>,
    /// Bounds every candidate must respect (default: the val false-positive rate at most twice
    /// `fpr_budget`; `[]` for none).
    #[serde(default)]
    constraints: Option<Vec<ConstraintFile>>,
}

/// One entry of `objective.constraints`: bounds on one split at one level, at least one given.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ConstraintFile {
    /// The split it reads: `train` or `val` (default `val`).
    #[serde(default)]
    split: Option<ScalarText>,
    /// The policy level it reads (default: the policy's first level after the "not detected"
    /// one).
    #[serde(default)]
    level: Option<ScalarText>,
    /// Highest false-positive rate allowed, e.g. 0.02 (default: no bound).
    #[serde(default)]
    max_fpr: Option<f64>,
    /// Lowest recall allowed, e.g. 0.8 (default: no bound).
    #[serde(default)]
    min_recall: Option<f64>,
    /// How many more false positives than the incumbent are allowed, at least 0 (default: no
    /// bound).
    #[serde(default)]
    max_added_false: Option<i64>,
    /// How many fewer true positives than the incumbent are allowed, at least 0 (default: no
    /// bound).
    #[serde(default)]
    max_lost_true: Option<i64>,
}

/// Why the objective cannot be read on a run's reports: a configuration that names what the
/// policy or the run does not have.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ObjectiveError {
    /// A level the objective or a constraint names is not a detect level of the policy.
    #[error("level '{level}' is not one of the policy's detect levels: {}", detect.join(", "))]
    UnknownLevel {
        /// The level named.
        level: String,
        /// The policy's detect levels.
        detect: Vec<String>,
    },
    /// The policy has no detect level to read.
    #[error("the policy has no detect level")]
    NoDetectLevel,
    /// The objective's split was not scored in this run.
    #[error("the objective reads {0}, which was not scored")]
    NotScored(Split),
}

/// Rates are ratios of counts: a bound equal to the rate must hold despite float error.
const RATE_TOLERANCE: f64 = 1e-12;

/// A bound a candidate must respect on one split, at one detect level; the `max_added_false`
/// and `max_lost_true` bounds compare with the incumbent (so they read "no new false block",
/// "lose no catch").
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// The split it reads: train or val.
    pub split: Split,
    /// The detect level it reads (`None`: the policy's first).
    pub level: Option<String>,
    /// The highest false-positive rate allowed.
    pub max_fpr: Option<f64>,
    /// The lowest recall allowed.
    pub min_recall: Option<f64>,
    /// How many more false positives than the incumbent are allowed.
    pub max_added_false: Option<usize>,
    /// How many fewer true positives than the incumbent are allowed.
    pub max_lost_true: Option<usize>,
}

impl Constraint {
    /// Reads one entry of `objective.constraints`; `key` is where it sits in the config.
    fn from_file(file: ConstraintFile, key: &str) -> Result<Constraint, Unusable> {
        let split = match file.split {
            None => Split::Val,
            Some(split) => selection_split("a constraint", &split.0, &format!("{key}.split"))?,
        };
        let count = |value: Option<i64>, name: &str| -> Result<Option<usize>, Unusable> {
            value
                .map(|n| {
                    usize::try_from(n).map_err(|_| {
                        Unusable::at(
                            format!("{key}.{name}"),
                            format!(
                                "constraint {name} must be a whole number of at least 0, not {n}"
                            ),
                        )
                    })
                })
                .transpose()
        };
        let finite = |value: Option<f64>, name: &str| -> Result<Option<f64>, Unusable> {
            match value {
                Some(x) if !x.is_finite() => Err(Unusable::at(
                    format!("{key}.{name}"),
                    format!("constraint {name} must be a finite number, not {x}"),
                )),
                other => Ok(other),
            }
        };
        let constraint = Constraint {
            split,
            level: file.level.map(|level| level.0),
            max_fpr: finite(file.max_fpr, "max_fpr")?,
            min_recall: finite(file.min_recall, "min_recall")?,
            max_added_false: count(file.max_added_false, "max_added_false")?,
            max_lost_true: count(file.max_lost_true, "max_lost_true")?,
        };
        if constraint.max_fpr.is_none()
            && constraint.min_recall.is_none()
            && constraint.max_added_false.is_none()
            && constraint.max_lost_true.is_none()
        {
            return Err(Unusable::at(
                key,
                "a constraint bounds nothing: give it one of max_fpr, min_recall, \
                 max_added_false, max_lost_true",
            ));
        }
        Ok(constraint)
    }

    /// One line for reports, e.g. `val/block: at most 0 new false positives` (`detect` for the
    /// policy's first detect level).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(max) = self.max_fpr {
            parts.push(format!("FPR <= {}", pct2(max)));
        }
        if let Some(min) = self.min_recall {
            parts.push(format!("recall >= {}", pct2(min)));
        }
        if let Some(max) = self.max_added_false {
            parts.push(format!("at most {max} new false positives"));
        }
        if let Some(max) = self.max_lost_true {
            parts.push(format!("at most {max} lost catches"));
        }
        format!(
            "{}/{}: {}",
            self.split,
            self.level.as_deref().unwrap_or("detect"),
            parts.join(", ")
        )
    }

    /// Why `candidate` breaks this constraint (the first bound it breaks), or `None`. A split
    /// not scored in this run passes; the bounds relative to the incumbent apply only when
    /// `incumbent` has the split. A level the policy does not have is an error.
    pub fn check(
        &self,
        candidate: &Reports,
        incumbent: Option<&Reports>,
    ) -> Result<Option<String>, ObjectiveError> {
        let Some(report) = candidate.get(&self.split) else {
            return Ok(None);
        };
        let (level, cand) = at_level(report, self.level.as_deref())?;
        let place = format!("{}/{level}", self.split);
        if let Some(max) = self.max_fpr
            && cand.fpr() > max + RATE_TOLERANCE
        {
            return Ok(Some(format!(
                "{place}: false-positive rate {} > {}",
                pct2(cand.fpr()),
                pct2(max)
            )));
        }
        if let Some(min) = self.min_recall
            && cand.recall() < min - RATE_TOLERANCE
        {
            return Ok(Some(format!(
                "{place}: recall {} < {}",
                pct2(cand.recall()),
                pct2(min)
            )));
        }
        let Some(inc_report) = incumbent.and_then(|reports| reports.get(&self.split)) else {
            return Ok(None);
        };
        let (_, inc) = at_level(inc_report, self.level.as_deref())?;
        if let Some(max) = self.max_added_false {
            let added = cand.fp.saturating_sub(inc.fp);
            if added > max {
                return Ok(Some(format!(
                    "{place}: {added} more false positives (at most {max})"
                )));
            }
        }
        if let Some(max) = self.max_lost_true {
            let lost = inc.tp.saturating_sub(cand.tp);
            if lost > max {
                return Ok(Some(format!(
                    "{place}: {lost} fewer true positives (at most {max})"
                )));
            }
        }
        Ok(None)
    }
}

/// What selection maximizes, and what it must respect.
#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    /// The false-positive rate thresholds are fitted at, on train: in [0, 1).
    pub fpr_budget: f64,
    /// The split whose recall decides: train or val.
    pub split: Split,
    /// The detect level whose recall decides (`None`: the policy's first).
    pub level: Option<String>,
    /// How much a candidate must beat the incumbent's recall by, on top of a strict gain.
    pub min_delta: f64,
    /// Every constraint a candidate must respect.
    pub constraints: Vec<Constraint>,
}

impl Default for Objective {
    fn default() -> Self {
        Objective::with_budget(0.01)
    }
}

impl Objective {
    /// Validation recall at `fpr_budget`, with the default constraint.
    fn with_budget(fpr_budget: f64) -> Objective {
        Objective {
            fpr_budget,
            split: Split::Val,
            level: None,
            min_delta: 0.0,
            constraints: vec![default_constraint(fpr_budget)],
        }
    }

    /// Reads `objective:` (`None`: every default). Without a `constraints` key, validation
    /// false positives are held to twice the budget (a threshold fitted on train that does not
    /// carry over to validation is the commonest overfit); an explicit `[]` means none.
    pub fn from_file(file: Option<ObjectiveFile>) -> Result<Objective, Unusable> {
        let Some(file) = file else {
            return Ok(Objective::default());
        };
        let fpr_budget = match file.fpr_budget {
            None => 0.01,
            Some(budget) if (0.0..1.0).contains(&budget) => budget,
            Some(budget) => {
                return Err(Unusable::at(
                    "objective.fpr_budget",
                    format!(
                        "fpr_budget must be at least 0 and below 1 (a rate, like 0.01), not {budget}"
                    ),
                ));
            }
        };
        let mut objective = Objective::with_budget(fpr_budget);
        if let Some(split) = file.split {
            objective.split = selection_split("the objective", &split.0, "objective.split")?;
        }
        objective.level = file.level.map(|level| level.0);
        if let Some(delta) = file.min_delta {
            if delta < 0.0 || !delta.is_finite() {
                return Err(Unusable::at(
                    "objective.min_delta",
                    format!(
                        "min_delta must be a number of at least 0 (the gain required on top of a \
                         strict one), not {delta}"
                    ),
                ));
            }
            objective.min_delta = delta;
        }
        if let Some(items) = file.constraints {
            objective.constraints = items
                .into_iter()
                .enumerate()
                .map(|(i, item)| {
                    Constraint::from_file(item, &format!("objective.constraints[{i}]"))
                })
                .collect::<Result<_, _>>()?;
        }
        Ok(objective)
    }

    /// Fails unless every level the objective and its constraints name is a detect level of
    /// `policy`: a configuration check to run once, before any candidate is scored.
    pub fn check_levels(&self, policy: &Policy) -> Result<(), ObjectiveError> {
        let named = std::iter::once(&self.level)
            .chain(self.constraints.iter().map(|c| &c.level))
            .flatten();
        for level in named {
            if !policy.detect_levels().contains(level) {
                return Err(unknown_level(level, policy.detect_levels().iter()));
            }
        }
        Ok(())
    }

    /// Recall on the objective's split, at its level.
    pub fn value(&self, reports: &Reports) -> Result<f64, ObjectiveError> {
        let report = reports
            .get(&self.split)
            .ok_or(ObjectiveError::NotScored(self.split))?;
        Ok(at_level(report, self.level.as_deref())?.1.recall())
    }

    /// Whether `candidate` may replace `incumbent`, and every reason it may not: each broken
    /// constraint, and "`<split> recall A% does not beat B%`" unless its recall is strictly
    /// higher (by more than `min_delta`). Equal recall is refused: a strict gain is required.
    pub fn gate(
        &self,
        candidate: &Reports,
        incumbent: &Reports,
    ) -> Result<(bool, Vec<String>), ObjectiveError> {
        let mut reasons = Vec::new();
        for constraint in &self.constraints {
            reasons.extend(constraint.check(candidate, Some(incumbent))?);
        }
        let (new, old) = (self.value(candidate)?, self.value(incumbent)?);
        if new <= old + self.min_delta {
            reasons.push(format!(
                "{} recall {} does not beat {}",
                self.split,
                pct(new),
                pct(old)
            ));
        }
        Ok((reasons.is_empty(), reasons))
    }
}

fn default_constraint(fpr_budget: f64) -> Constraint {
    Constraint {
        split: Split::Val,
        level: None,
        max_fpr: Some(2.0 * fpr_budget),
        min_recall: None,
        max_added_false: None,
        max_lost_true: None,
    }
}

/// The rates of `report` at `level` (the first detect level when `None`), with that level's
/// name.
fn at_level<'r>(
    report: &'r SplitReport,
    level: Option<&str>,
) -> Result<(&'r str, &'r Rates), ObjectiveError> {
    let found = match level {
        None => report.levels.first(),
        Some(name) => report.levels.iter().find(|(l, _)| l == name),
    };
    found
        .map(|(name, rates)| (name.as_str(), rates))
        .ok_or_else(|| match level {
            Some(name) => unknown_level(name, report.levels.iter().map(|(l, _)| l)),
            None => ObjectiveError::NoDetectLevel,
        })
}

fn unknown_level<'a>(level: &str, detect: impl Iterator<Item = &'a String>) -> ObjectiveError {
    ObjectiveError::UnknownLevel {
        level: level.to_owned(),
        detect: detect.cloned().collect(),
    }
}

/// 2-decimal percentage, as the constraint messages print rates (Python `f"{x:.2%}"`).
fn pct2(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

/// `split` of the objective or a constraint: train or val, never a sealed split.
fn selection_split(what: &str, name: &str, key: &str) -> Result<Split, Unusable> {
    let split = Split::parse(name)
        .ok_or_else(|| Unusable::at(key, format!("{what} reads split train or val, not {name}")))?;
    if split.is_sealed() {
        return Err(Unusable::at(
            key,
            format!(
                "{what} cannot read {split}: test and held-out are sealed and can never be used \
                 for selection (use train or val)"
            ),
        ));
    }
    Ok(split)
}

/// `objective:` read from JSON, as a test writes it.
#[cfg(test)]
pub(crate) fn parsed(value: serde_json::Value) -> Result<Objective, Unusable> {
    let file =
        serde_json::from_value(value).map_err(|e| Unusable::at("objective", e.to_string()))?;
    Objective::from_file(Some(file))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::measure::evaluate::{evaluate_split, world_table};
    use crate::probe::probeset::ProbeSet;
    use crate::probe::score::ScoreExpr;

    /// The intent question at `threshold`, on train and val of the world.
    fn intent_at(threshold: f64) -> Reports {
        let examples = crate::data::world::examples(120);
        let splits = crate::data::world::default_splits(&examples);
        let table = world_table(&examples, 10_000);
        let qid = "intent@reviewer".to_owned();
        let bank = crate::probe::question::test_bank()
            .subset(std::slice::from_ref(&qid))
            .unwrap();
        let probeset = ProbeSet::new("intent", bank, ScoreExpr::Question(qid), Some(threshold));
        let probeset = probeset.unwrap();
        [Split::Train, Split::Val]
            .into_iter()
            .map(|split| {
                let report = evaluate_split(
                    split,
                    splits.get(split),
                    &table,
                    &probeset,
                    &Policy::threshold(),
                );
                (split, report)
            })
            .collect()
    }

    fn report(split: Split, levels: &[(&str, Rates)]) -> SplitReport {
        let first = levels.first().map(|(_, r)| *r).unwrap_or_default();
        SplitReport {
            split,
            positives: first.positives(),
            negatives: first.negatives(),
            judged_positives: first.positives(),
            judged_negatives: first.negatives(),
            levels: levels.iter().map(|(l, r)| (l.to_string(), *r)).collect(),
            auc: 0.5,
        }
    }

    fn constraint(value: Value) -> Constraint {
        constrained(value).unwrap()
    }

    fn constrained(value: Value) -> Result<Constraint, Unusable> {
        let mut objective = parsed(json!({ "constraints": [value] }))?;
        Ok(objective.constraints.remove(0))
    }

    #[test]
    fn max_fpr_passes_the_strict_candidate_and_refuses_the_loose_one() {
        let (strict, loose) = (intent_at(0.5), intent_at(0.0));
        let c = constraint(json!({"split": "val", "max_fpr": 0.01}));
        assert_eq!(c.check(&strict, Some(&loose)), Ok(None));
        let why = c.check(&loose, Some(&strict)).unwrap().unwrap();
        assert_eq!(why, "val/flag: false-positive rate 100.00% > 1.00%");
    }

    #[test]
    fn max_added_false_compares_with_the_incumbent() {
        let (strict, loose) = (intent_at(0.5), intent_at(0.0));
        let c = constraint(json!({"max_added_false": 0}));
        let why = c.check(&loose, Some(&strict)).unwrap().unwrap();
        assert_eq!(why, "val/flag: 14 more false positives (at most 0)");
        assert_eq!(c.check(&strict, Some(&loose)), Ok(None));
        assert_eq!(c.check(&loose, None), Ok(None));
    }

    #[test]
    fn max_lost_true_compares_with_the_incumbent() {
        let (strict, loose) = (intent_at(0.5), intent_at(0.0));
        let c = constraint(json!({"max_lost_true": 0}));
        let why = c.check(&strict, Some(&loose)).unwrap().unwrap();
        assert_eq!(why, "val/flag: 1 fewer true positives (at most 0)");
        assert_eq!(c.check(&loose, Some(&strict)), Ok(None));
    }

    #[test]
    fn min_recall_above_one_always_fails() {
        let c = constraint(json!({"min_recall": 1.01}));
        let why = c.check(&intent_at(0.0), None).unwrap().unwrap();
        assert_eq!(why, "val/flag: recall 100.00% < 101.00%");
    }

    #[test]
    fn a_constraint_on_a_split_not_scored_passes() {
        // Sealed splits cannot be configured; one built by hand is simply not scored here.
        let on_test = Constraint {
            split: Split::Test,
            ..constraint(json!({"max_fpr": 0.0}))
        };
        let loose = intent_at(0.0);
        assert_eq!(on_test.check(&loose, Some(&loose)), Ok(None));
    }

    #[test]
    fn a_constraint_on_an_unknown_level_is_an_error_naming_the_levels() {
        let c = constraint(json!({"level": "block", "max_fpr": 0.5}));
        let err = c.check(&intent_at(0.5), None).unwrap_err();
        assert!(err.to_string().contains("levels"), "{err}");
        let objective = Objective {
            constraints: vec![c],
            ..Objective::default()
        };
        let err = objective.check_levels(&Policy::threshold()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "level 'block' is not one of the policy's detect levels: flag"
        );
        assert!(objective.gate(&intent_at(0.5), &intent_at(0.0)).is_err());
    }

    #[test]
    fn the_default_constraint_holds_validation_to_twice_the_budget() {
        let objective = parsed(json!({"fpr_budget": 0.02})).unwrap();
        assert_eq!(
            objective.constraints,
            vec![Constraint {
                split: Split::Val,
                level: None,
                max_fpr: Some(0.04),
                min_recall: None,
                max_added_false: None,
                max_lost_true: None,
            }]
        );
        let none = parsed(json!({"constraints": []})).unwrap();
        assert!(none.constraints.is_empty());
        let defaults = Objective::from_file(None).unwrap();
        assert_eq!(defaults, Objective::default());
        assert_eq!((defaults.fpr_budget, defaults.split), (0.01, Split::Val));
    }

    #[test]
    fn gate_accepts_a_strict_recall_gain_within_constraints() {
        let (good, weak) = (intent_at(0.5), intent_at(0.99));
        assert_eq!(Objective::default().gate(&good, &weak), Ok((true, vec![])));
    }

    #[test]
    fn gate_requires_a_strict_recall_gain() {
        let (good, weak) = (intent_at(0.5), intent_at(0.99));
        let objective = Objective::default();
        let (accepted, reasons) = objective.gate(&weak, &good).unwrap();
        assert!(!accepted);
        assert_eq!(reasons, ["val recall 0.0% does not beat 87.5%"]);
        let (accepted, reasons) = objective.gate(&good, &good).unwrap();
        assert!(!accepted);
        assert!(reasons[0].contains("does not beat"), "{reasons:?}");
    }

    #[test]
    fn gate_lists_a_broken_constraint_first() {
        let (good, weak) = (intent_at(0.5), intent_at(0.99));
        let objective = parsed(json!({"constraints": [{"max_fpr": -1}]})).unwrap();
        let (accepted, reasons) = objective.gate(&good, &weak).unwrap();
        assert!(!accepted);
        assert!(reasons[0].contains("false-positive rate"), "{reasons:?}");
    }

    #[test]
    fn objective_on_the_test_split_is_refused() {
        let err = parsed(json!({"split": "test"})).unwrap_err();
        assert!(err.message.contains("sealed"), "{err}");
        assert_eq!(err.key, "objective.split");
        assert!(parsed(json!({"split": "nope"})).is_err());
        let train = parsed(json!({"split": "train"})).unwrap();
        assert_eq!(train.split, Split::Train);
    }

    #[test]
    fn constraint_on_held_out_is_refused() {
        let err = constrained(json!({"split": "held-out", "max_fpr": 0.1})).unwrap_err();
        assert!(
            err.message.contains("can never be used for selection"),
            "{err}"
        );
        assert_eq!(err.key, "objective.constraints[0].split");
    }

    #[test]
    fn a_constraint_must_bound_something_with_numbers_of_its_kind() {
        let err = constrained(json!({"split": "val"})).unwrap_err();
        assert!(err.message.contains("bounds nothing"), "{err}");
        assert_eq!(err.key, "objective.constraints[0]");
        let err = constrained(json!({"max_added_false": -1})).unwrap_err();
        assert_eq!(err.key, "objective.constraints[0].max_added_false");
        assert!(constrained(json!({"max_fpr": true})).is_err());
    }

    #[test]
    fn fpr_budget_outside_zero_to_one_is_refused() {
        for budget in [json!(1.5), json!(1.0), json!(-0.1), json!("0.1")] {
            let objective = json!({ "fpr_budget": budget });
            assert!(parsed(objective).is_err(), "{budget}");
        }
        let zero = parsed(json!({"fpr_budget": 0})).unwrap();
        assert_eq!(zero.fpr_budget, 0.0);
        assert!(parsed(json!({"min_delta": -0.1})).is_err());
    }

    #[test]
    fn value_reads_recall_at_the_objective_level() {
        let warn = Rates {
            tp: 9,
            fp: 3,
            fn_: 1,
            tn: 17,
        };
        let block = Rates {
            tp: 8,
            fp: 0,
            fn_: 2,
            tn: 20,
        };
        let both = Reports::from([(
            Split::Val,
            report(Split::Val, &[("warn", warn), ("block", block)]),
        )]);
        let at_block = parsed(json!({"level": "block"})).unwrap();
        assert_eq!(at_block.value(&both), Ok(0.8));
        assert_eq!(Objective::default().value(&both), Ok(0.9));
        assert!(Objective::default().value(&Reports::new()).is_err());
    }

    #[test]
    fn describe_names_the_split_the_level_and_each_bound() {
        let block = constraint(json!({"level": "block", "max_added_false": 0}));
        assert_eq!(block.describe(), "val/block: at most 0 new false positives");
        let all = constraint(json!({
            "split": "train", "max_fpr": 0.02, "min_recall": 0.5, "max_lost_true": 1
        }));
        assert_eq!(
            all.describe(),
            "train/detect: FPR <= 2.00%, recall >= 50.00%, at most 1 lost catches"
        );
    }
}
