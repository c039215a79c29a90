//! Classifier mode's runs, as `skill_factory::run` is skill mode's: the commands open a
//! workspace, plan, optimize, ask, score, select, compare and write the workspace's reports
//! here, and the CLI only parses their flags and prints what they return.
//!
//! * [`ask`]: `lab ask`, buying answers ahead of any measure;
//! * [`score`]: `lab score`, a probe set measured on the open splits;
//! * [`select`]: `lab select`, every candidate the pool allows;
//! * [`compare`]: `lab report`, before and after on any split, sealed ones logged;
//! * [`status`]: `lab status`, what a workspace holds;
//! * [`report`], [`svg`]: `report.md` and the splits chart of an optimization;
//! * [`workspace`]: the config's inputs and the files a run writes.
pub mod ask;
pub mod compare;
pub mod report;
pub mod score;
pub mod select;
pub mod simulate;
pub mod status;
pub mod svg;
pub mod workspace;

use std::fmt;
use std::path::Path;

use crate::LabError;
use crate::answers::lab::{Asked, Lab};
use crate::answers::table::AnswerTable;
use crate::data::dataset::{Example, Status};
use crate::data::split::Split;
use crate::files::write_atomic;
use crate::lock::WorkspaceLock;
use crate::measure::evaluate::{Policy, Reports, evaluate_split};
use crate::optimizer::{Inputs, Outcome, optimize as search};
use crate::probe::probeset::ProbeSet;
use crate::probe::question::Bank;
use report::{ReportInput, TableRow};
use svg::{SvgRow, splits_svg};
use workspace::Project;

/// A workspace and its lab.
pub struct Opened {
    /// The config, the splits and the workspace's files.
    pub project: Project,
    /// The lab that asks (or, offline, only reads) System One.
    pub lab: Lab,
    /// Examples `splits.read_before_split` put into train over their explicit split or
    /// held-out source (the reference does this silently; a user should see it).
    pub moved: Vec<String>,
    /// The workspace's lock, held as long as this is alive when opened to change it: keep
    /// the whole value while the command runs (taking its fields apart drops the lock).
    _lock: Option<WorkspaceLock>,
}

/// Whether a command opens a workspace to read it or to change it.
#[derive(Clone, Copy)]
pub enum Access<'a> {
    /// It only reads (`lab score`, `select`, `status`): it never waits.
    Read,
    /// It buys answers or writes workspace files: it holds the workspace's lock
    /// ([`WorkspaceLock`]) before the answer cache is read, so that it sees what a command
    /// before it bought. `command` names it to a command that waits; `waiting` hears who
    /// holds the lock when this one must wait.
    Write {
        /// The command, as a waiting one shows it (`lab ask`).
        command: &'a str,
        /// Told once who holds the lock, before waiting for it.
        waiting: &'a dyn Fn(&str),
    },
}

/// The variables keys are read from: the process environment, then the `.env` files the
/// config reads.
pub fn environment(config: &Path) -> Result<impl Fn(&str) -> Option<String>, LabError> {
    Ok(skill_factory_config::env::lookup(
        skill_factory_config::env::beside(config)?,
    ))
}

/// Opens the workspace of `config` (or `workspace`) and its lab, locked first when `access`
/// is to change it. Refused when the split assignment is not the one frozen in the seal
/// ([`crate::data::seal::Seal::check_assignment`]): every command opened here reads splits.
pub fn open(
    config: &Path,
    workspace: Option<&Path>,
    access: Access<'_>,
) -> Result<Opened, LabError> {
    let project = Project::load(config, workspace)?;
    project.seal()?.check_assignment()?;
    let moved = project.splits.moved_by_read_before_split().to_vec();
    let lock = match access {
        Access::Read => None,
        Access::Write { command, waiting } => {
            Some(WorkspaceLock::acquire(project.dir(), command, waiting)?)
        }
    };
    let lab = project.config.lab(&environment(config)?)?;
    Ok(Opened {
        project,
        lab,
        moved,
        _lock: lock,
    })
}

/// The examples of `splits`, in order.
pub fn examples_of<'a>(project: &'a Project, splits: &[Split]) -> Vec<&'a Example> {
    splits.iter().flat_map(|&s| project.split(s)).collect()
}

/// Every question of `bank`, compiled, as the lab asks it.
pub fn asked_of(bank: &Bank) -> Result<Vec<Asked>, LabError> {
    Ok(Asked::all(bank.compiled()?))
}

/// The report of `probeset` through `policy` on each of `splits` that has examples.
pub fn reports_of(
    project: &Project,
    splits: &[Split],
    table: &AnswerTable,
    probeset: &ProbeSet,
    policy: &Policy,
) -> Reports {
    splits
        .iter()
        .filter(|&&s| !project.split(s).is_empty())
        .map(|&s| {
            (
                s,
                evaluate_split(s, project.split(s), table, probeset, policy),
            )
        })
        .collect()
}

/// The rows of the report's split table.
pub fn table_rows(project: &Project, splits: &[Split], reports: &Reports) -> Vec<TableRow> {
    splits
        .iter()
        .filter(|&&s| !project.split(s).is_empty())
        .map(|&split| {
            let (positives, negatives) = project.splits.counts(split);
            TableRow {
                split,
                positives,
                negatives,
                sealed: split.is_sealed() && !reports.contains_key(&split),
            }
        })
        .collect()
}

/// The points of the splits chart: each split's recall and false-positive rate, before and
/// after.
pub fn svg_rows(before: Option<&Reports>, after: &Reports, level: Option<&str>) -> Vec<SvgRow> {
    let point = |reports: &Reports, split: &Split| {
        reports
            .get(split)
            .and_then(|r| r.rates(level))
            .map(|r| (r.recall(), r.fpr()))
    };
    after
        .keys()
        .filter_map(|split| {
            Some(SvgRow {
                label: split.label().to_string(),
                before: before.and_then(|b| point(b, split)),
                after: point(after, split)?,
            })
        })
        .collect()
}

/// How many of `examples` are judged at `budget` (neither skipped nor over it), and how many
/// of those have no answer at all in `table`: they count as misses.
pub fn unanswered(examples: &[&Example], budget: usize, table: &AnswerTable) -> (usize, usize) {
    let judged: Vec<&&Example> = examples
        .iter()
        .filter(|e| e.status(budget) == Status::Judged)
        .collect();
    let without = judged
        .iter()
        .filter(|e| table.answers(&e.id).is_empty())
        .count();
    (judged.len(), without)
}

/// What a measure from the cache alone is of, for [`missing_answers`].
pub struct Measured<'a> {
    /// The questions and splits: "the probe set's questions on train, val".
    pub what: &'a str,
    /// What no answer at all means for it: "the rates above say nothing yet".
    pub when_none: &'a str,
    /// The config whose `lab ask` buys the answers.
    pub config: &'a Path,
}

/// A note for a measure of `examples` from the cache alone when judged ones have no cached
/// answer: they count as misses, and `lab ask` buys them. None when every judged example has
/// an answer.
pub fn missing_answers(
    examples: &[&Example],
    budget: usize,
    table: &AnswerTable,
    measured: &Measured<'_>,
) -> Option<String> {
    let (judged, without) = unanswered(examples, budget, table);
    let Measured {
        what,
        when_none,
        config,
    } = measured;
    let config = config.display();
    let ask = format!("skill-factory lab ask -c {config}");
    if without == 0 {
        None
    } else if without == judged {
        Some(format!(
            "no answers are cached for {what}: every example counts as a miss, so {when_none}. \
             Buy them with `{ask}` (or `skill-factory optimize -c {config}`)"
        ))
    } else {
        Some(format!(
            "{without} of {judged} judged example(s) have no cached answers for {what} and \
             count as misses; `{ask}` buys them"
        ))
    }
}

/// An error when `policy` (a command) failed while it was asked: its verdicts mean nothing.
pub fn policy_held(policy: &Policy) -> Result<(), LabError> {
    match policy.failure() {
        Some(failure) => Err(LabError::invalid(format!(
            "{failure}; fix the program (one level name per line of input) and run again"
        ))),
        None => Ok(()),
    }
}

/// Refuses a false-positive budget (`--fpr`) that is not a rate, before anything is asked.
pub fn check_rate(rate: f64) -> Result<(), LabError> {
    if !(0.0..1.0).contains(&rate) {
        return Err(LabError::invalid(format!(
            "--fpr must be a rate at least 0 and below 1 (0.01 = 1%), got {rate}"
        )));
    }
    Ok(())
}

/// What an optimization or an ask will send before it starts, so a user can stop first.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Examples to ask about.
    pub examples: usize,
    /// Questions asked of each.
    pub questions: usize,
    /// Requests still to send (the rest are cached).
    pub requests: usize,
    /// Their estimated price in dollars.
    pub usd: f64,
}

impl Plan {
    /// The requests `lab` lacks answers for: `questions` about `examples` at `budget`.
    fn of(lab: &Lab, examples: &[&Example], questions: &[Asked], budget: usize) -> Plan {
        let jobs = lab.plan(examples, questions, budget, 0);
        Plan {
            examples: examples.len(),
            questions: questions.len(),
            requests: jobs.len(),
            usd: lab.estimate_usd(&jobs),
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} examples, {} questions: {} requests to send, about ${:.4}",
            self.examples, self.questions, self.requests, self.usd
        )
    }
}

/// The requests an optimization of `opened` needs; refused first when the run could not
/// write its workspace without replacing a file it did not write
/// ([`Project::check_outputs`]), so nothing is planned for a run that cannot finish.
pub fn plan(opened: &Opened) -> Result<Plan, LabError> {
    let project = &opened.project;
    project.check_outputs()?;
    let asked = asked_of(&project.pool()?)?;
    let examples = examples_of(project, &[Split::Train, Split::Val]);
    Ok(Plan::of(
        &opened.lab,
        &examples,
        &asked,
        project.seed.state_budget,
    ))
}

/// `optimize -c CONFIG` of a classifier config: the search, then every file of the workspace
/// (probe sets, history, result, report, chart). `progress` hears of the requests asked.
pub async fn optimize(
    opened: &Opened,
    started_at: &str,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Outcome, LabError> {
    let Opened { project, lab, .. } = opened;
    project.check_outputs()?;
    let proposer = project
        .config
        .proposer(&environment(&project.config.path)?)?;
    let pool = project.pool()?;
    let (policy, _) = project.policy()?;
    let outcome = search(
        lab,
        Inputs {
            seed: &project.seed,
            train: project.split(Split::Train),
            val: project.split(Split::Val),
            pool: &pool,
            objective: &project.config.objective,
            policy: &policy,
            settings: &project.config.optimizer,
            keep: project.config.keep_questions.as_deref(),
            proposer: proposer.as_deref(),
        },
        progress,
    )
    .await?;
    project.write_outcome(&outcome, started_at)?;
    write_report(project, lab, &outcome, &policy)?;
    Ok(outcome)
}

/// Writes `report.md` and `splits.svg` of a finished optimization into the workspace.
pub fn write_report(
    project: &Project,
    lab: &Lab,
    outcome: &Outcome,
    policy: &Policy,
) -> Result<(), LabError> {
    let seal = project.seal()?;
    let objective = &project.config.objective;
    let train_val: Vec<&Example> = examples_of(project, &[Split::Train, Split::Val]);
    let input = ReportInput {
        name: &project.config.name,
        outcome,
        objective,
        policy,
        seal_summary: seal.summary(),
        table_rows: table_rows(project, &Split::ALL, &outcome.after),
        coverage: report::coverage(
            &Split::ALL.map(|s| (s, project.split(s))),
            outcome.best.state_budget,
        ),
        cost_per_pass: lab.cost_per_pass(
            &train_val,
            outcome.best.bank.len(),
            outcome.best.state_budget,
        ),
        failed_requests: outcome.spend.failed,
        first_error: outcome.spend.errors.first().cloned(),
    };
    write_atomic(&project.file("report.md"), &report::render(&input))?;
    let svg = splits_svg(
        &project.config.name,
        &svg_rows(
            Some(&outcome.before),
            &outcome.after,
            objective.level.as_deref(),
        ),
    );
    write_atomic(&project.file("splits.svg"), &svg)
}
