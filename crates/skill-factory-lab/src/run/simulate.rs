//! `lab simulate`: policies replayed offline on the cached answers, per split and level.

use std::fmt;
use std::path::{Path, PathBuf};

use super::{Measured, Opened, asked_of, examples_of, missing_answers, policy_held, reports_of};
use crate::LabError;
use crate::data::split::Split;
use crate::measure::evaluate::{Policy, Reports};
use crate::measure::policy::PolicySpec;

/// What `lab simulate` replays: which probe set, through which policies, on which splits.
pub struct SimulateRequest<'a> {
    /// The probe set (default: the workspace's best).
    pub probeset: Option<&'a Path>,
    /// Policy files; none: the config's policy (when it has one) and the plain threshold.
    pub policies: &'a [PathBuf],
    /// The splits, never a sealed one (the caller refuses those).
    pub splits: &'a [Split],
}

/// Every policy's reports on the splits, for stdout, and a note for stderr when judged
/// examples have no cached answer.
pub struct Simulated {
    /// Each policy with its reports, in the order asked.
    pub rows: Vec<(Policy, Reports)>,
    /// What the lines below cannot say yet, and which command buys it.
    pub note: Option<String>,
}

/// Replays the policies of `request` on the workspace of `opened`, from the cache alone.
pub fn simulate(opened: &Opened, request: &SimulateRequest<'_>) -> Result<Simulated, LabError> {
    let Opened { project, lab, .. } = opened;
    let probeset = project.given_or_best(request.probeset)?;
    // Policies may read pool questions the score does not: the table holds them all.
    let bank = project.pool_with(&probeset)?;
    let mut policies = Vec::new();
    if request.policies.is_empty() {
        let (policy, spec) = project.policy()?;
        if spec.is_some() {
            policies.push(policy);
        }
        policies.push(Policy::threshold());
    }
    for file in request.policies {
        let spec = PolicySpec::load(file, &|id| bank.contains(id))?;
        policies.push(spec.policy());
    }
    let examples = examples_of(project, request.splits);
    let table = lab.table(&examples, &asked_of(&bank)?, probeset.state_budget, 0);
    let names: Vec<&str> = request.splits.iter().map(|s| s.name()).collect();
    let note = missing_answers(
        &examples,
        probeset.state_budget,
        &table,
        &Measured {
            what: &format!("the policies' questions on {}", names.join(", ")),
            when_none: "the lines below say nothing yet",
            config: &project.config.path,
        },
    );
    let mut rows = Vec::with_capacity(policies.len());
    for policy in policies {
        let reports = reports_of(project, request.splits, &table, &probeset, &policy);
        policy_held(&policy)?;
        rows.push((policy, reports));
    }
    Ok(Simulated { rows, note })
}

/// One line per policy: each split's levels with their catches and false positives, counts of
/// that level or a higher one, recall to one decimal and the false-positive rate to two (the
/// reference's layout).
impl fmt::Display for Simulated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (policy, reports) in &self.rows {
            let per_split: Vec<String> = reports
                .iter()
                .map(|(split, report)| {
                    let levels: Vec<String> = report
                        .levels
                        .iter()
                        .map(|(level, r)| {
                            format!(
                                "{level} {}/{} ({:.1}%) fp {}/{} ({:.2}%)",
                                r.tp,
                                r.positives(),
                                r.recall() * 100.0,
                                r.fp,
                                r.negatives(),
                                r.fpr() * 100.0
                            )
                        })
                        .collect();
                    format!("{}: {}", split.name(), levels.join(", "))
                })
                .collect();
            writeln!(f, "{:<28} {}", policy.name, per_split.join("   "))?;
        }
        Ok(())
    }
}
