//! Recalibration: a probe set's threshold was measured on one model (version); when the model
//! changes, the same questions are asked of the new one on train and validation, and the
//! threshold is fitted again on train at the probe set's recorded false-positive budget.
//!
//! A refit on partial answers would silently move the threshold, so any failed request refuses
//! it. The new probe set records where it came from under `calibration.recalibrated_from`.

use serde_json::json;

use crate::LabError;
use crate::answers::lab::{Asked, Lab};
use crate::answers::table::most_served;
use crate::data::dataset::Example;
use crate::data::split::Split;
use crate::measure::evaluate::{Policy, Reports, evaluate_split};
use crate::measure::metrics::{fit_threshold, pct};
use crate::probe::probeset::ProbeSet;

/// A probe set before and after recalibration, with both scored on train and validation.
#[derive(Debug, Clone)]
pub struct Recalibration {
    /// The probe set as it was.
    pub before: ProbeSet,
    /// Refitted on the new model.
    pub after: ProbeSet,
    /// `before` on the old model's answers.
    pub old: Reports,
    /// `after` on the new model's answers.
    pub new: Reports,
}

impl Recalibration {
    /// What changed, for the terminal: the threshold, then recall and FPR per split.
    pub fn summary(&self) -> String {
        let threshold = |p: &ProbeSet| {
            p.threshold
                .map_or_else(|| "none".into(), |t| format!("{t:.4}"))
        };
        let mut text = format!(
            "threshold {} ({}) -> {} ({})",
            threshold(&self.before),
            self.before.model,
            threshold(&self.after),
            self.after.model
        );
        for split in [Split::Train, Split::Val] {
            let rates =
                |reports: &Reports| reports.get(&split).and_then(|r| r.rates(None)).copied();
            if let (Some(old), Some(new)) = (rates(&self.old), rates(&self.new)) {
                text.push_str(&format!(
                    "\n{}: recall {} -> {}, false positives {} -> {}",
                    split.label(),
                    pct(old.recall()),
                    pct(new.recall()),
                    pct(old.fpr()),
                    pct(new.fpr())
                ));
            }
        }
        text
    }
}

/// Refits `probeset`'s threshold on `new_lab`'s answers about `train` (at `fpr_budget`, else
/// the one in its calibration notes) and scores both on train and validation.
pub async fn recalibrate(
    probeset: &ProbeSet,
    old_lab: &Lab,
    new_lab: &Lab,
    train: &[Example],
    val: &[Example],
    fpr_budget: Option<f64>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Recalibration, LabError> {
    let budget = match fpr_budget.or_else(|| {
        probeset
            .calibration
            .get("fpr_budget")
            .and_then(|b| b.as_f64())
    }) {
        Some(budget) => budget,
        None => {
            return Err(LabError::invalid(format!(
                "probe set '{}' records no fpr_budget in its calibration notes: give the false-positive budget to refit at (--fpr)",
                probeset.name
            )));
        }
    };
    let asked = Asked::all(probeset.compiled_questions()?);
    let state_budget = probeset.state_budget;
    let examples: Vec<&Example> = train.iter().chain(val).collect();
    let report = new_lab
        .ask(&examples, &asked, state_budget, 0, progress)
        .await?;
    if report.failed > 0 {
        return Err(LabError::RequestsFailed(format!(
            "{} request(s) to {} failed (first: {}); the threshold is not refitted on partial answers: run the command again",
            report.failed,
            new_lab.model(),
            report.errors.first().map_or("unknown", String::as_str)
        )));
    }
    let table = new_lab.table(&examples, &asked, state_budget, 0);
    let scores = train
        .iter()
        .map(|ex| (ex.label, probeset.score_of(table.answers(&ex.id))));
    let threshold = fit_threshold(scores, budget, true)?;
    let mut after = probeset.clone();
    after.threshold = Some(threshold);
    after.model = new_lab.model().to_string();
    after.pinned_version = most_served(&table.served()).or(after.pinned_version);
    after.calibration.insert("fpr_budget".into(), json!(budget));
    after.calibration.insert(
        "recalibrated_from".into(),
        json!({
            "model": probeset.model,
            "version": probeset.pinned_version,
            "threshold": probeset.threshold,
        }),
    );
    let old_table = old_lab.table(&examples, &asked, state_budget, 0);
    let policy = Policy::threshold();
    let score = |p: &ProbeSet, t: &crate::answers::table::AnswerTable| -> Reports {
        [(Split::Train, train), (Split::Val, val)]
            .into_iter()
            .map(|(split, examples)| (split, evaluate_split(split, examples, t, p, &policy)))
            .collect()
    };
    Ok(Recalibration {
        old: score(probeset, &old_table),
        new: score(&after, &table),
        before: probeset.clone(),
        after,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use skill_factory_llm::systemone::{AnswerCache, FakeSystemOne};

    use super::*;
    use crate::answers::lab::LabSettings;
    use crate::data::world;

    fn quiet(_: usize, _: usize) {}

    #[tokio::test]
    async fn a_model_answering_half_as_high_gets_a_lower_threshold_and_a_record_of_the_old_one() {
        let cache = Arc::new(AnswerCache::in_memory());
        let old = Lab::online(
            Arc::new(FakeSystemOne::new("fake-jev", world::responder)),
            Arc::clone(&cache),
            LabSettings::default(),
        );
        let new = Lab::online(
            Arc::new(
                FakeSystemOne::new("m2", |s, id, q| world::responder(s, id, q) / 2.0)
                    .serving("m2.0"),
            ),
            Arc::clone(&cache),
            LabSettings::default(),
        );
        let examples = world::examples(120);
        let splits = world::default_splits(&examples);
        let mut probeset = world::intent_probeset(0.3);
        let (train, val) = (splits.get(Split::Train), splits.get(Split::Val));
        let refs: Vec<&Example> = train.iter().chain(val).collect();
        old.ask(
            &refs,
            &Asked::all(probeset.compiled_questions().unwrap()),
            10_000,
            0,
            &quiet,
        )
        .await
        .unwrap();
        let error = recalibrate(&probeset, &old, &new, train, val, None, &quiet)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("fpr_budget"), "{error}");
        probeset
            .calibration
            .insert("fpr_budget".into(), json!(0.05));
        let result = recalibrate(&probeset, &old, &new, train, val, None, &quiet)
            .await
            .unwrap();
        assert_eq!(result.after.model, "m2");
        assert_eq!(result.after.pinned_version.as_deref(), Some("m2.0"));
        assert!(
            result.after.threshold.unwrap() < 0.3,
            "{:?}",
            result.after.threshold
        );
        assert_eq!(
            result.after.calibration["recalibrated_from"]["model"],
            "fake-jev"
        );
        assert!(
            result
                .summary()
                .starts_with("threshold 0.3000 (fake-jev) -> "),
            "{}",
            result.summary()
        );
        assert!(
            result.summary().contains("validation: recall"),
            "{}",
            result.summary()
        );
    }

    #[tokio::test]
    async fn a_failed_request_refuses_the_refit() {
        let cache = Arc::new(AnswerCache::in_memory());
        let lab = |model: FakeSystemOne| {
            Lab::online(Arc::new(model), Arc::clone(&cache), LabSettings::default())
        };
        let old = lab(FakeSystemOne::new("fake-jev", world::responder));
        let new =
            lab(FakeSystemOne::new("m2", world::responder).fail_when(|s| s.contains("item 3 ")));
        let examples = world::examples(30);
        let probeset = world::intent_probeset(0.3);
        let error = recalibrate(
            &probeset,
            &old,
            &new,
            &examples[..20],
            &examples[20..],
            Some(0.05),
            &quiet,
        )
        .await
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("not refitted on partial answers"),
            "{error}"
        );
    }
}
