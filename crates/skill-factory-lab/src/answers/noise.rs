//! Re-ask determinism: the same questions about the same examples asked again, into another
//! replicate of the cache, and how far the answers and the verdicts moved.
//!
//! A System One model is meant to be deterministic; re-asking measures how much it is. Answers
//! of replicate `r` are cached apart from the first ones (`"r": r` on their lines), so a re-ask
//! costs once and can be compared any number of times.

use crate::LabError;
use crate::answers::lab::{Asked, Lab};
use crate::answers::table::AnswerTable;
use crate::data::dataset::Example;
use crate::probe::probeset::ProbeSet;

/// How the answers of two asks of the same questions compare.
#[derive(Debug, Clone, PartialEq)]
pub struct Determinism {
    /// Answers present in both asks.
    pub compared: usize,
    /// Of those, how many are exactly equal.
    pub identical: usize,
    /// The mean absolute difference of P(true).
    pub mean_change: f64,
    /// The largest absolute difference.
    pub max_change: f64,
    /// Examples with an answer in both asks.
    pub examples: usize,
    /// The examples whose verdict at the probe set's threshold differs, in order.
    pub flipped: Vec<String>,
    /// Requests that failed while asking.
    pub failed: usize,
}

impl Determinism {
    /// The share of identical answers (1 when nothing was compared).
    pub fn identical_rate(&self) -> f64 {
        if self.compared == 0 {
            1.0
        } else {
            self.identical as f64 / self.compared as f64
        }
    }

    /// One line for the terminal.
    pub fn summary(&self) -> String {
        let mut text = format!(
            "{} answers re-asked: {:.0}% identical, mean |diff| {:.4}, max {:.2}; {} of {} verdicts flipped at the threshold",
            self.compared,
            self.identical_rate() * 100.0,
            self.mean_change,
            self.max_change,
            self.flipped.len(),
            self.examples
        );
        if self.failed > 0 {
            text.push_str(&format!(
                " (WARNING: {} requests failed; their examples are left out)",
                self.failed
            ));
        }
        text
    }
}

/// Compares the answers `first` and `again` gave to the probe set's questions.
pub fn compare(
    probeset: &ProbeSet,
    examples: &[&Example],
    first: &AnswerTable,
    again: &AnswerTable,
) -> Determinism {
    let mut result = Determinism {
        compared: 0,
        identical: 0,
        mean_change: 0.0,
        max_change: 0.0,
        examples: 0,
        flipped: Vec::new(),
        failed: 0,
    };
    let mut total = 0.0;
    for example in examples {
        let (a, b) = (first.answers(&example.id), again.answers(&example.id));
        if a.is_empty() || b.is_empty() {
            continue;
        }
        result.examples += 1;
        for (id, p) in a {
            if let Some(q) = b.get(id) {
                let change = (p - q).abs();
                result.compared += 1;
                result.identical += usize::from(change == 0.0);
                total += change;
                result.max_change = result.max_change.max(change);
            }
        }
        if probeset.flags(a) != probeset.flags(b) {
            result.flipped.push(example.id.clone());
        }
    }
    if result.compared > 0 {
        result.mean_change = total / result.compared as f64;
    }
    result
}

/// Asks the probe set's questions about `examples` again into `replicate` (1 or more), asking
/// the first answers too when they are missing, and compares the two.
pub async fn reask(
    lab: &Lab,
    probeset: &ProbeSet,
    examples: &[&Example],
    replicate: u32,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Determinism, LabError> {
    if replicate == 0 {
        return Err(LabError::invalid(
            "--replicate must be 1 or more: replicate 0 holds the first answers",
        ));
    }
    let asked = Asked::all(probeset.compiled_questions()?);
    let budget = probeset.state_budget;
    let first = lab.ask(examples, &asked, budget, 0, progress).await?;
    let again = lab
        .ask(examples, &asked, budget, replicate, progress)
        .await?;
    let mut result = compare(
        probeset,
        examples,
        &lab.table(examples, &asked, budget, 0),
        &lab.table(examples, &asked, budget, replicate),
    );
    result.failed = first.failed + again.failed;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use skill_factory_llm::systemone::{AnswerCache, FakeSystemOne};

    use super::*;
    use crate::answers::lab::LabSettings;
    use crate::data::world;

    fn probeset() -> ProbeSet {
        // Low intent answers (about 0.02 to 0.07) cross 0.3 when they wobble up by 0.3.
        world::intent_probeset(0.3)
    }

    fn quiet(_: usize, _: usize) {}

    #[tokio::test]
    async fn a_wobbly_model_moves_some_answers_and_flips_some_verdicts() {
        // Every 7th answer comes back 0.3 higher, capped at 1: enough to cross the threshold.
        // (7 does not divide the 240 answers of one ask, so the two asks wobble apart.)
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&calls);
        let model = FakeSystemOne::new("fake-jev", move |state, id, q| {
            let p = world::responder(state, id, q);
            if counter.fetch_add(1, Ordering::SeqCst) % 7 == 6 {
                (p + 0.3).min(1.0)
            } else {
                p
            }
        });
        let lab = Lab::online(
            Arc::new(model),
            Arc::new(AnswerCache::in_memory()),
            LabSettings {
                concurrency: 1,
                ..LabSettings::default()
            },
        );
        let examples = world::examples(60);
        let examples: Vec<&Example> = examples.iter().collect();
        let result = reask(&lab, &probeset(), &examples, 1, &quiet)
            .await
            .unwrap();
        let rate = result.identical_rate();
        assert!(rate > 0.5 && rate < 1.0, "{result:?}");
        assert!((result.max_change - 0.3).abs() < 0.05, "{result:?}");
        assert!(!result.flipped.is_empty(), "{result:?}");
        assert!(
            result.summary().contains("verdicts flipped"),
            "{}",
            result.summary()
        );
        let error = reask(&lab, &probeset(), &examples, 0, &quiet)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("--replicate"), "{error}");
    }

    #[test]
    fn a_table_compared_with_itself_is_identical_and_flips_nothing() {
        let examples = world::examples(30);
        let table = crate::measure::evaluate::world_table(&examples, 10_000);
        let refs: Vec<&Example> = examples.iter().collect();
        let result = compare(&probeset(), &refs, &table, &table);
        assert_eq!(result.identical_rate(), 1.0);
        assert!(result.flipped.is_empty());
        assert!(result.compared > 0);
        assert!(result.summary().starts_with(&format!(
            "{} answers re-asked: 100% identical",
            result.compared
        )));
    }
}
