//! One pass of selection over the pool: every family fitted on train at each margin, the best
//! few of each gated on validation against the incumbent.

use crate::LabError;
use crate::answers::table::AnswerTable;
use crate::data::dataset::Example;
use crate::data::split::Split;
use crate::measure::evaluate::{Policy, Reports, evaluate_split};
use crate::optimizer::objective::Objective;
use crate::optimizer::select::{Candidate, Selection, best_per_family, name_at_margin};
use crate::probe::probeset::ProbeSet;
use crate::probe::question::Bank;

use super::{OptimizerSettings, Round};

/// What every pass of selection shares: the examples, the rules of the game, the kept
/// questions.
pub(super) struct Game<'a> {
    pub(super) train: &'a [Example],
    pub(super) val: &'a [Example],
    pub(super) objective: &'a Objective,
    pub(super) policy: &'a Policy,
    pub(super) settings: &'a OptimizerSettings,
    pub(super) keep: Vec<String>,
}

/// One pass of selection over the pool, as a round of the history.
pub(super) struct Pass<'a> {
    pub(super) round: usize,
    pub(super) change: String,
    pub(super) rationale: String,
    pub(super) new_questions: Vec<String>,
    /// The probe set a candidate is built on (name, model, notes; its state budget).
    pub(super) base: &'a ProbeSet,
    /// The reports a candidate must beat.
    pub(super) incumbent: &'a Reports,
    pub(super) pool: &'a Bank,
    pub(super) table: &'a AnswerTable,
    pub(super) budget: usize,
}

/// A pass: its round, the new best and its reports when one passed the gate, and every
/// candidate fitted (for the Pareto front).
pub(super) type Passed = (Round, Option<(ProbeSet, Reports)>, Vec<Candidate>);

impl Game<'_> {
    pub(super) fn score(&self, table: &AnswerTable, probeset: &ProbeSet) -> Reports {
        [(Split::Train, self.train), (Split::Val, self.val)]
            .into_iter()
            .map(|(split, examples)| {
                (
                    split,
                    evaluate_split(split, examples, table, probeset, self.policy),
                )
            })
            .collect()
    }

    /// Every family fitted on train at each margin, the best few of each gated on validation
    /// against the incumbent; the best that passes wins.
    pub(super) fn try_pool(&self, pass: Pass) -> Result<Passed, LabError> {
        let scored: Vec<String> = pass
            .pool
            .ids()
            .into_iter()
            .filter(|id| !self.keep.contains(id))
            .collect();
        let train_refs: Vec<&Example> = self.train.iter().collect();
        let selection = Selection::new(&scored, &train_refs, pass.table);
        let mut all = Vec::new();
        for &factor in &self.settings.margins {
            let mut fitted = selection.candidates(
                self.objective.fpr_budget * factor,
                self.settings.max_questions,
            )?;
            name_at_margin(&mut fitted, factor);
            all.extend(fitted);
        }
        let gate_list = best_per_family(&all, self.settings.gate_per_family);
        let mut tried = Vec::with_capacity(gate_list.len());
        for candidate in &gate_list {
            let probeset = candidate.probe_set(pass.base, pass.pool, &self.keep)?;
            let reports = self.score(pass.table, &probeset);
            let (accepted, reasons) = self.objective.gate(&reports, pass.incumbent)?;
            let value = if accepted {
                self.objective.value(&reports)?
            } else {
                -1.0
            };
            tried.push((value, candidate, probeset, reports, reasons));
        }
        // Stable: equal values keep the gate list's training rank.
        tried.sort_by(|a, b| b.0.total_cmp(&a.0));
        let round = |candidate: &str, score: String, threshold, accepted, reasons, reports| Round {
            round: pass.round,
            change: pass.change.clone(),
            rationale: pass.rationale.clone(),
            candidate: candidate.to_string(),
            score,
            threshold,
            state_budget: Some(pass.budget),
            accepted,
            reasons,
            new_questions: pass.new_questions.clone(),
            usd: 0.0,
            failed_requests: 0,
            reports,
            raw_reply: None,
            prompt: None,
        };
        let passed = match tried.first() {
            None => (
                round(
                    "-",
                    String::new(),
                    None,
                    false,
                    vec!["no candidate".to_string()],
                    Reports::new(),
                ),
                None,
            ),
            Some((value, candidate, probeset, reports, _)) if *value >= 0.0 => (
                round(
                    &candidate.name,
                    candidate.score.describe(),
                    Some(candidate.threshold),
                    true,
                    Vec::new(),
                    reports.clone(),
                ),
                Some((probeset.clone(), reports.clone())),
            ),
            Some(_) => {
                // Nothing passed: show the one that ranked best on train, with why it failed.
                let closest = tried
                    .iter()
                    .reduce(|a, b| {
                        if b.1.rank_key() > a.1.rank_key() {
                            b
                        } else {
                            a
                        }
                    })
                    .expect("tried is not empty");
                (
                    round(
                        &closest.1.name,
                        closest.1.score.describe(),
                        Some(closest.1.threshold),
                        false,
                        closest.4.clone(),
                        closest.3.clone(),
                    ),
                    None,
                )
            }
        };
        Ok((passed.0, passed.1, all))
    }
}
