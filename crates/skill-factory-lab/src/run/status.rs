//! `lab status`: what a workspace holds and what a pass over it costs, read without a request.

use std::fmt;
use std::path::PathBuf;

use skill_factory_pycompat::float::thousands;

use super::report::{Coverage, coverage, coverage_table};
use super::{Opened, examples_of};
use crate::LabError;
use crate::data::split::Split;
use crate::measure::metrics::pct;
use crate::optimizer::objective::Objective;
use crate::probe::probeset::ProbeSet;

/// A workspace's state, for stdout.
pub struct Status {
    /// The workspace folder.
    pub workspace: PathBuf,
    /// Every split with its positives and negatives.
    pub counts: Vec<(Split, usize, usize)>,
    /// What the best's state budget does to each split's examples.
    pub coverage: Vec<Coverage>,
    /// Answers in the cache.
    pub answers: usize,
    /// The System One model the lab asks.
    pub model: String,
    /// Why the lab cannot ask, when it is offline.
    pub offline: Option<String>,
    /// The best probe set.
    pub best: ProbeSet,
    /// Questions in the pool.
    pub pool: usize,
    /// Dollars for one pass over train and val: the best's questions, then the pool's.
    pub pass_usd: (f64, f64),
    /// The seal's state.
    pub seal: String,
    /// What optimizing maximizes.
    pub objective: Objective,
}

/// The state of the workspace of `opened`.
pub fn status(opened: &Opened) -> Result<Status, LabError> {
    let Opened { project, lab, .. } = opened;
    let best = project.best()?;
    let pool = project.pool()?.len();
    let train_val = examples_of(project, &[Split::Train, Split::Val]);
    let pass = |questions| lab.cost_per_pass(&train_val, questions, best.state_budget);
    Ok(Status {
        workspace: project.dir().to_path_buf(),
        counts: Split::ALL
            .iter()
            .map(|&s| {
                let (positives, negatives) = project.splits.counts(s);
                (s, positives, negatives)
            })
            .collect(),
        coverage: coverage(
            &Split::ALL.map(|s| (s, project.split(s))),
            best.state_budget,
        ),
        answers: lab.cache().len(),
        model: lab.model().to_string(),
        offline: lab.offline_reason().map(str::to_string),
        pass_usd: (pass(best.bank.len()), pass(pool)),
        pool,
        best,
        seal: project.seal()?.summary(),
        objective: project.config.objective.clone(),
    })
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "workspace: {}", self.workspace.display())?;
        let counts: Vec<String> = self
            .counts
            .iter()
            .map(|(s, p, n)| format!("{} {p}+/{n}-", s.name()))
            .collect();
        writeln!(f, "splits: {}", counts.join(", "))?;
        writeln!(f, "{}", coverage_table(&self.coverage))?;
        match &self.offline {
            None => writeln!(
                f,
                "cache: {} answers; lab online: {}",
                self.answers, self.model
            )?,
            Some(reason) => writeln!(f, "cache: {} answers; lab offline: {reason}", self.answers)?,
        }
        let best = &self.best;
        writeln!(
            f,
            "probe set: {} ({}), {} questions, state budget {}",
            best.name,
            best.hash12(),
            best.bank.len(),
            thousands(best.state_budget as u64)
        )?;
        writeln!(f, "pool: {} questions", self.pool)?;
        writeln!(
            f,
            "one pass over train+val: ${:.4} for the probe set, ${:.4} for the pool",
            self.pass_usd.0, self.pass_usd.1
        )?;
        writeln!(f, "seal: {}", self.seal)?;
        write!(
            f,
            "objective: {} recall at {} false positives",
            self.objective.split,
            pct(self.objective.fpr_budget)
        )
    }
}
