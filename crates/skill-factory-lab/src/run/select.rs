//! `lab select`: every candidate the pool's cached answers allow, fitted on train, the best
//! measured on val, and the Pareto front of recall, false positives and question count.

use std::fmt;
use std::path::{Path, PathBuf};

use super::{Measured, Opened, asked_of, check_rate, examples_of, missing_answers};
use crate::LabError;
use crate::data::dataset::Example;
use crate::data::split::Split;
use crate::measure::evaluate::evaluate_split;
use crate::measure::metrics::{Rates, pct};
use crate::optimizer::select::{Candidate, Selection, pareto};
use crate::probe::probeset::ProbeSet;

/// Candidates measured on val and listed, best on train first.
const CANDIDATES_SHOWN: usize = 15;

/// What `lab select` is told.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelectRequest {
    /// The false-positive budget thresholds are fitted at (else the objective's).
    pub fpr: Option<f64>,
    /// The most questions a candidate may read.
    pub max_questions: usize,
}

/// The candidates of a selection, for stdout, and the top one as a probe set.
pub struct Selected {
    /// The budget they were fitted at.
    pub fpr_budget: f64,
    /// Every candidate, best on train first.
    pub candidates: Vec<Candidate>,
    /// The rates on val of the first candidates shown (none when a split is empty).
    pub val: Vec<Option<Rates>>,
    /// The candidates no other beats on every one of train recall, false positives and
    /// question count.
    pub front: Vec<Candidate>,
    /// Judged train examples have no cached answer to any pool question (none at all, on an
    /// empty cache): the note says which command buys them.
    pub note: Option<String>,
    /// The top candidate as a probe set, to write.
    top: Option<ProbeSet>,
    /// The config, for the command that fills an empty pool.
    config: PathBuf,
}

/// Fits every candidate of the pool of `opened` on train and measures the best on val.
pub fn select(opened: &Opened, request: SelectRequest) -> Result<Selected, LabError> {
    let Opened { project, lab, .. } = opened;
    let budget = request.fpr.unwrap_or(project.config.objective.fpr_budget);
    check_rate(budget)?;
    if request.max_questions == 0 {
        return Err(LabError::invalid("--max-questions must be at least 1"));
    }
    let pool = project.pool()?;
    let best = project.best()?;
    let asked = asked_of(&pool)?;
    let train_val = examples_of(project, &[Split::Train, Split::Val]);
    let answers = lab.table(&train_val, &asked, best.state_budget, 0);
    let train: Vec<&Example> = project.split(Split::Train).iter().collect();
    let note = missing_answers(
        &train,
        best.state_budget,
        &answers,
        &Measured {
            what: "the pool's questions on train",
            when_none: "no candidate can be fitted",
            config: &project.config.path,
        },
    );
    let mut candidates =
        Selection::new(&pool.ids(), &train, &answers).candidates(budget, request.max_questions)?;
    candidates.sort_by_key(|c| std::cmp::Reverse(c.rank_key()));
    let (policy, _) = project.policy()?;
    // Measured anew here: the best's pinned version and notes do not carry over.
    let mut base = best;
    base.name.clone_from(&project.config.name);
    base.pinned_version = None;
    base.calibration = Default::default();
    let shown: Vec<ProbeSet> = candidates
        .iter()
        .take(CANDIDATES_SHOWN)
        .map(|c| c.probe_set(&base, &pool, &[]))
        .collect::<Result<_, _>>()?;
    let val = shown
        .iter()
        .map(|probeset| {
            let examples = project.split(Split::Val);
            let report = evaluate_split(Split::Val, examples, &answers, probeset, &policy);
            report.rates(None).copied()
        })
        .collect();
    Ok(Selected {
        fpr_budget: budget,
        front: pareto(&candidates),
        candidates,
        val,
        note,
        top: shown.into_iter().next(),
        config: project.config.path.clone(),
    })
}

impl Selected {
    /// Writes the top candidate as a probe set to `path`, and names it.
    pub fn write_top(&self, path: &Path) -> Result<&str, LabError> {
        let (Some(top), Some(candidate)) = (&self.top, self.candidates.first()) else {
            return Err(LabError::invalid(format!(
                "no candidate to write: the pool has no answered question on train (run `skill-factory lab ask -c {}` first)",
                self.config.display()
            )));
        };
        top.save(path)?;
        Ok(&candidate.name)
    }
}

impl fmt::Display for Selected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} candidates fitted on train at {:.2}% false positives",
            self.candidates.len(),
            self.fpr_budget * 100.0
        )?;
        writeln!(
            f,
            "| Candidate | Questions | Threshold | Train recall at FPR | Val recall at FPR |"
        )?;
        writeln!(f, "|---|---|---|---|---|")?;
        for (candidate, val) in self.candidates.iter().zip(&self.val) {
            let val = val.map_or_else(
                || "-".to_string(),
                |r| format!("{} at {}", pct(r.recall()), pct(r.fpr())),
            );
            writeln!(
                f,
                "| {} | {} | {:.4} | {} at {} | {val} |",
                candidate.name,
                candidate.questions.len(),
                candidate.threshold,
                pct(candidate.train.recall()),
                pct(candidate.train.fpr()),
            )?;
        }
        writeln!(f, "\nPareto front (train):")?;
        writeln!(f, "| Candidate | Questions | Train recall | Train FPR |")?;
        write!(f, "|---|---|---|---|")?;
        for candidate in &self.front {
            write!(
                f,
                "\n| {} | {} | {} | {} |",
                candidate.name,
                candidate.questions.len(),
                pct(candidate.train.recall()),
                pct(candidate.train.fpr())
            )?;
        }
        Ok(())
    }
}
