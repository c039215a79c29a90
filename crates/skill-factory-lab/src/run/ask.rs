//! `lab ask`: buys the answers of the pool (or of a new questions file) for some open splits
//! ahead of any measure, so scores, selections and reports afterwards read them at no cost.
//!
//! In three steps, so the plan shows before a request is sent (and alone on a dry run), and the
//! summary of what was bought shows even when the new questions then clash with the pool.

use std::fmt;
use std::path::PathBuf;

use super::{Opened, Plan, asked_of, examples_of};
use crate::LabError;
use crate::answers::lab::{AskReport, Asked};
use crate::data::dataset::Example;
use crate::data::seal::refuse_sealed;
use crate::data::split::Split;
use crate::probe::question::Bank;

/// What `lab ask` is told to ask.
#[derive(Debug, Clone)]
pub struct AskRequest {
    splits: Vec<Split>,
    questions: Option<PathBuf>,
    budget: Option<usize>,
}

impl AskRequest {
    /// The questions of the file `questions` (else the pool's) about `splits` at `budget` (else
    /// the best probe set's). Refused when a split is sealed, before the workspace is even
    /// read: asking about test or held-out is what the seal is there to prevent.
    pub fn new(
        splits: Vec<Split>,
        questions: Option<PathBuf>,
        budget: Option<usize>,
    ) -> Result<AskRequest, LabError> {
        refuse_sealed(&splits, "lab ask")?;
        Ok(AskRequest {
            splits,
            questions,
            budget,
        })
    }
}

/// An ask ready to send: the questions compiled and the examples chosen.
pub struct Asking<'a> {
    opened: &'a Opened,
    /// The questions file and its bank, added to the pool once asked.
    new_questions: Option<(PathBuf, Bank)>,
    asked: Vec<Asked>,
    examples: Vec<&'a Example>,
    budget: usize,
}

/// The questions a `lab ask --questions` added to the workspace's `pool.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolGrowth {
    /// Questions the pool lacked.
    pub added: usize,
    /// Questions in the pool now.
    pub total: usize,
}

impl fmt::Display for PoolGrowth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pool.json: {} question(s) added, {} in all",
            self.added, self.total
        )
    }
}

impl<'a> Asking<'a> {
    /// Reads what `request` names from the workspace of `opened`; nothing is sent yet.
    pub fn new(opened: &'a Opened, request: AskRequest) -> Result<Asking<'a>, LabError> {
        let project = &opened.project;
        let new_questions = match request.questions {
            Some(path) => {
                let bank = Bank::load(&path)?;
                Some((path, bank))
            }
            None => None,
        };
        let pool;
        let bank = match &new_questions {
            Some((_, bank)) => bank,
            None => {
                pool = project.pool()?;
                &pool
            }
        };
        let budget = match request.budget {
            Some(budget) => budget,
            None => project.best()?.state_budget,
        };
        Ok(Asking {
            opened,
            asked: asked_of(bank)?,
            new_questions,
            examples: examples_of(project, &request.splits),
            budget,
        })
    }

    /// The requests the ask will send (answers already cached are not asked again).
    pub fn plan(&self) -> Plan {
        Plan::of(&self.opened.lab, &self.examples, &self.asked, self.budget)
    }

    /// Sends the planned requests; `progress` hears of each. Failed requests are counts in the
    /// report, not errors: a rerun asks only for the missing answers.
    pub async fn ask(
        &self,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<AskReport, LabError> {
        self.opened
            .lab
            .ask(&self.examples, &self.asked, self.budget, 0, progress)
            .await
    }

    /// Adds the questions file's questions to `pool.json`, so later selections and rounds
    /// can use them; `None` when the pool's own questions were asked.
    pub fn add_questions(&self) -> Result<Option<PoolGrowth>, LabError> {
        let Some((path, bank)) = &self.new_questions else {
            return Ok(None);
        };
        let project = &self.opened.project;
        let mut pool = project.pool()?;
        let added = pool.merge(bank).map_err(|e| {
            LabError::invalid(format!(
                "{}: {e}; give the new question another id",
                path.display()
            ))
        })?;
        pool.save(&project.file("pool.json"))?;
        Ok(Some(PoolGrowth {
            added: added.len(),
            total: pool.len(),
        }))
    }
}
