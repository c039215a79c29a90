//! `lab report`: a baseline and a probe set side by side on any split, test and held-out
//! included once frozen (every opening logged in `seal.json`), optionally asking first.
//!
//! Writing `report-splits.md` and its chart is a step of its own, after the table is shown:
//! a sealed split opened is logged whether or not the copy on disk can be written.

use std::fmt;
use std::path::{Path, PathBuf};

use super::report::before_after_table;
use super::svg::splits_svg;
use super::workspace::Project;
use super::{
    Opened, asked_of, examples_of, policy_held, reports_of, svg_rows, table_rows, unanswered,
};
use crate::LabError;
use crate::answers::lab::AskReport;
use crate::answers::table::AnswerTable;
use crate::data::dataset::Example;
use crate::data::seal::Seal;
use crate::data::split::Split;
use crate::measure::evaluate::Reports;
use crate::probe::probeset::ProbeSet;

/// What `lab report` is told to compare.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    /// The "before" probe set (else the baseline, `seed.json`).
    pub before: Option<PathBuf>,
    /// The "after" probe set (else the best, `probeset.json`).
    pub after: Option<PathBuf>,
    /// The splits to report; those without examples are left out.
    pub splits: Vec<Split>,
    /// Buy missing answers first, rather than count their examples as misses.
    pub ask: bool,
}

/// Two probe sets measured side by side, for stdout, a note for stderr, and the spend of
/// asking first.
pub struct Compared {
    /// The baseline.
    pub before: ProbeSet,
    /// The probe set compared with it.
    pub after: ProbeSet,
    /// The baseline's report on each split.
    pub before_reports: Reports,
    /// The other's report on each split.
    pub after_reports: Reports,
    /// The before-and-after table, rendered.
    pub table: String,
    /// The seal's state after this opening.
    pub seal: String,
    /// What asking first bought, when it was asked to.
    pub spend: Option<AskReport>,
    /// Judged examples the cache lacks answers for, when not asking: they count as misses.
    pub note: Option<String>,
}

/// Compares the probe sets `request` names in the workspace of `opened`, opening (and
/// logging) the sealed splits it reports. `progress` hears of the requests asked.
pub async fn compare(
    opened: &Opened,
    request: &CompareRequest,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Compared, LabError> {
    let project = &opened.project;
    let splits: Vec<Split> = request
        .splits
        .iter()
        .copied()
        .filter(|&s| !project.split(s).is_empty())
        .collect();
    let before = project.given_or_baseline(request.before.as_deref())?;
    let after = project.given_or_best(request.after.as_deref())?;
    let seal = open_seal(project, &splits, &before, &after)?;
    let examples = examples_of(project, &splits);
    let mut spend = request.ask.then(AskReport::default);
    let before_answers = answers(opened, &examples, &before, spend.as_mut(), progress).await?;
    let after_answers = answers(opened, &examples, &after, spend.as_mut(), progress).await?;
    let note = match unanswered(&examples, after.state_budget, &after_answers).1 {
        n if n > 0 && !request.ask => Some(format!(
            "{n} judged example(s) have no cached answers and count as misses; rerun with --ask to buy them"
        )),
        _ => None,
    };
    let (policy, _) = project.policy()?;
    let before_reports = reports_of(project, &splits, &before_answers, &before, &policy);
    let after_reports = reports_of(project, &splits, &after_answers, &after, &policy);
    policy_held(&policy)?;
    let table = before_after_table(
        Some(&before_reports),
        &after_reports,
        policy.detect_levels(),
        &table_rows(project, &splits, &after_reports),
    );
    Ok(Compared {
        before,
        after,
        before_reports,
        after_reports,
        table,
        seal: seal.summary(),
        spend,
        note,
    })
}

/// The seal of the workspace, with the sealed ones of `splits` opened for `after` against
/// `before`: refused unless `after` is the frozen probe set, and logged when it is.
fn open_seal(
    project: &Project,
    splits: &[Split],
    before: &ProbeSet,
    after: &ProbeSet,
) -> Result<Seal, LabError> {
    let sealed: Vec<Split> = splits.iter().copied().filter(|s| s.is_sealed()).collect();
    let mut seal = project.seal()?;
    if !sealed.is_empty() {
        seal.open(&after.sha256(), &sealed, Some(&before.sha256()))?;
    }
    Ok(seal)
}

/// The cached answers of `probeset` about `examples`, the missing ones bought first (into
/// `spend`) when there is a `spend` to count them in.
async fn answers(
    opened: &Opened,
    examples: &[&Example],
    probeset: &ProbeSet,
    spend: Option<&mut AskReport>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<AnswerTable, LabError> {
    let asked = asked_of(&probeset.bank)?;
    let budget = probeset.state_budget;
    if let Some(spend) = spend {
        spend.absorb(
            &opened
                .lab
                .ask(examples, &asked, budget, 0, progress)
                .await?,
        );
    }
    Ok(opened.lab.table(examples, &asked, budget, 0))
}

impl Compared {
    /// Requests that failed while asking first: their examples count as misses above.
    pub fn failed(&self) -> usize {
        self.spend.as_ref().map_or(0, |spend| spend.failed)
    }

    /// Writes `report-splits.md` and `report-splits.svg` into `dir`, and returns the first.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, LabError> {
        let markdown = dir.join("report-splits.md");
        let text = format!(
            "# Report: {} against {}\n\n![before and after](report-splits.svg)\n\n{}\n\nseal: {}\n",
            self.after.name, self.before.name, self.table, self.seal
        );
        write_whole(&markdown, &text)?;
        let svg = splits_svg(
            &self.after.name,
            &svg_rows(Some(&self.before_reports), &self.after_reports, None),
        );
        write_whole(&dir.join("report-splits.svg"), &svg)?;
        Ok(markdown)
    }
}

/// Writes a report file whole (a killed run leaves the previous one). The folder is the
/// user's `--out`, not the workspace, so the error says only what the system said.
fn write_whole(path: &Path, text: &str) -> Result<(), LabError> {
    skill_factory_io::output::write_atomic(path, text.as_bytes())
        .map_err(|error| LabError::invalid(format!("cannot write {}: {error}", path.display())))
}

impl fmt::Display for Compared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (before, after) = (&self.before, &self.after);
        writeln!(
            f,
            "before: {} ({}); after: {} ({})",
            before.name,
            before.hash12(),
            after.name,
            after.hash12()
        )?;
        writeln!(f, "{}", self.table)?;
        write!(f, "seal: {}", self.seal)?;
        match &self.spend {
            Some(spend) if spend.planned > 0 => write!(f, "\n{}", spend.summary()),
            _ => Ok(()),
        }
    }
}
