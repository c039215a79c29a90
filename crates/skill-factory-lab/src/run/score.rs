//! `lab score`: a probe set measured through the config's policy on the open splits, from the
//! cache alone.
//!
//! The per-question table and the failure digest are built only when shown, after the split
//! table, so that table still shows when the pool they read cannot be.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use super::report::before_after_table;
use super::{
    Measured, Opened, asked_of, examples_of, missing_answers, policy_held, reports_of, table_rows,
};
use crate::LabError;
use crate::answers::table::AnswerTable;
use crate::data::seal::refuse_sealed;
use crate::data::split::Split;
use crate::measure::evaluate::{QuestionStats, Reports, question_stats_by_auc};
use crate::measure::metrics::pct;
use crate::optimizer::reflect::{self, DigestInput};
use crate::probe::probeset::ProbeSet;

/// Questions the per-question table lists, best training AUC first.
const QUESTIONS_SHOWN: usize = 200;
/// Judged misses the failure digest shows.
const FAILURES_SHOWN: usize = 50;
/// Characters of each state the failure digest shows.
const FAILURES_EXCERPT: usize = 300;

/// What `lab score` is told to measure.
#[derive(Debug, Clone)]
pub struct ScoreRequest {
    splits: Vec<Split>,
    probeset: Option<PathBuf>,
    questions: bool,
    failures: Option<Split>,
}

impl ScoreRequest {
    /// The probe set at `probeset` (else the best) on `splits`. Refused when a split is
    /// sealed, before the workspace is even read: only `lab report` reads test and held-out.
    pub fn new(splits: Vec<Split>, probeset: Option<PathBuf>) -> Result<ScoreRequest, LabError> {
        refuse_sealed(&splits, "lab score")?;
        Ok(ScoreRequest {
            splits,
            probeset,
            questions: false,
            failures: None,
        })
    }

    /// With `questions`, also every pool question's separation on train and val.
    pub fn with_questions(self, questions: bool) -> ScoreRequest {
        ScoreRequest { questions, ..self }
    }

    /// Also the failure digest on `split`, as the proposer reads it; refused when sealed.
    pub fn with_failures(self, split: Split) -> Result<ScoreRequest, LabError> {
        refuse_sealed(&[split], "lab score --failures")?;
        Ok(ScoreRequest {
            failures: Some(split),
            ..self
        })
    }
}

/// A probe set measured: the header and split table stdout shows, and a warning for stderr.
pub struct Scored<'a> {
    opened: &'a Opened,
    request: ScoreRequest,
    /// The probe set measured.
    pub probeset: ProbeSet,
    /// Its report on each asked split that has examples.
    pub reports: Reports,
    /// The split table, rendered.
    pub table: String,
    /// Answers came from another model version than the threshold is pinned to.
    pub drift: Option<String>,
    /// Judged examples have no cached answer (none at all, on an empty cache): they count
    /// as misses, and the note says which command buys them.
    pub note: Option<String>,
}

/// Measures what `request` names in the workspace of `opened`.
pub fn score(opened: &Opened, request: ScoreRequest) -> Result<Scored<'_>, LabError> {
    let project = &opened.project;
    let probeset = project.given_or_best(request.probeset.as_deref())?;
    let examples = examples_of(project, &request.splits);
    let asked = asked_of(&probeset.bank)?;
    let answers = opened
        .lab
        .table(&examples, &asked, probeset.state_budget, 0);
    let drift = drift_warning(&probeset, &answers);
    let names: Vec<&str> = request.splits.iter().map(|s| s.name()).collect();
    let note = missing_answers(
        &examples,
        probeset.state_budget,
        &answers,
        &Measured {
            what: &format!("the probe set's questions on {}", names.join(", ")),
            when_none: "the rates above say nothing yet",
            config: &project.config.path,
        },
    );
    let (policy, _) = project.policy()?;
    let reports = reports_of(project, &request.splits, &answers, &probeset, &policy);
    policy_held(&policy)?;
    let table = before_after_table(
        None,
        &reports,
        policy.detect_levels(),
        &table_rows(project, &request.splits, &reports),
    );
    Ok(Scored {
        opened,
        request,
        probeset,
        reports,
        table,
        drift,
        note,
    })
}

impl fmt::Display for Scored<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let probeset = &self.probeset;
        writeln!(
            f,
            "{} ({}, {} questions): {} >= {}",
            probeset.name,
            probeset.hash12(),
            probeset.bank.len(),
            probeset.score.describe(),
            probeset
                .threshold
                .map_or_else(|| "no threshold yet".to_string(), |t| format!("{t:.4}"))
        )?;
        write!(f, "{}", self.table)
    }
}

impl Scored<'_> {
    /// Every pool question's AUC on train and val and its recall alone on val, when asked for.
    pub fn questions(&self) -> Result<Option<String>, LabError> {
        if !self.request.questions {
            return Ok(None);
        }
        let project = &self.opened.project;
        let pool = project.pool()?;
        let asked = asked_of(&pool)?;
        let train_val = examples_of(project, &[Split::Train, Split::Val]);
        let answers = self
            .opened
            .lab
            .table(&train_val, &asked, self.probeset.state_budget, 0);
        let by_split = [
            (Split::Train, project.split(Split::Train)),
            (Split::Val, project.split(Split::Val)),
        ];
        let budget = project.config.objective.fpr_budget;
        let stats = question_stats_by_auc(&pool.ids(), &by_split, &answers, budget)?;
        let mut lines = vec![
            format!(
                "| Question | In set | Train AUC | Val AUC | Val recall at {} |",
                pct(budget)
            ),
            "|---|---|---|---|---|".to_string(),
        ];
        let rows = stats.iter().take(QUESTIONS_SHOWN);
        lines.extend(rows.map(|stat| self.question_row(stat)));
        Ok(Some(lines.join("\n")))
    }

    fn question_row(&self, stat: &QuestionStats) -> String {
        let val = stat.splits.get(&Split::Val).map_or_else(
            || "-".to_string(),
            |v| format!("{} at {}", pct(v.rates.recall()), pct(v.rates.fpr())),
        );
        format!(
            "| {} | {} | {:.3} | {:.3} | {val} |",
            stat.qid,
            if self.probeset.bank.contains(&stat.qid) {
                "yes"
            } else {
                ""
            },
            stat.auc(Split::Train),
            stat.auc(Split::Val),
        )
    }

    /// The failure digest on the split asked for, as the proposer of a reflective round
    /// reads it on train.
    pub fn failures(&self) -> Result<Option<String>, LabError> {
        let Some(split) = self.request.failures else {
            return Ok(None);
        };
        let project = &self.opened.project;
        // Every pool question answered for the split, and how each separates on train.
        let bank = project.pool_with(&self.probeset)?;
        let asked = asked_of(&bank)?;
        let shown = examples_of(project, &[Split::Train, split]);
        let answers = self
            .opened
            .lab
            .table(&shown, &asked, self.probeset.state_budget, 0);
        let train = [(Split::Train, project.split(Split::Train))];
        let budget = project.config.objective.fpr_budget;
        let stats = question_stats_by_auc(&bank.ids(), &train, &answers, budget)?;
        Ok(Some(reflect::failure_digest(&DigestInput {
            probeset: &self.probeset,
            train: project.split(split),
            label: &split.name().to_uppercase(),
            table: &answers,
            stats: &stats,
            max_state_budget: project.config.optimizer.max_state_budget,
            shown: FAILURES_SHOWN,
            excerpt: FAILURES_EXCERPT,
        })))
    }
}

/// Warns when answers came from another version than the one the threshold is pinned to: the
/// threshold was fitted on the pinned version's probabilities.
fn drift_warning(probeset: &ProbeSet, answers: &AnswerTable) -> Option<String> {
    let pinned = probeset.pinned_version.as_deref()?;
    let mut others: BTreeMap<&str, usize> = BTreeMap::new();
    for row in answers.rows.values() {
        for (version, n) in &row.versions {
            if version != pinned {
                *others.entry(version).or_default() += n;
            }
        }
    }
    if others.is_empty() {
        return None;
    }
    let list: Vec<String> = others.iter().map(|(v, n)| format!("{v} ({n})")).collect();
    Some(format!(
        "thresholds are pinned to {pinned}, but answers came from {}: measure the probe set again on that version before trusting the threshold",
        list.join(", ")
    ))
}
