//! The classifier optimizer: the seed's threshold fitted on train, a selection round over the
//! whole question pool, then reflective rounds (with a proposer model): the failure digest of
//! the current best on train goes to the proposer, its new questions (or a larger state budget)
//! join the pool, the lab asks them, and selection runs again. Every candidate is gated on
//! validation against the incumbent; `patience` refused rounds in a row end the run.
//!
//! Only train and validation examples ever reach it: test and held-out stay sealed until
//! `lab freeze`, and nothing here can read them.
//!
//! The phases, in the order a run meets them: `Search::start` (checks, the pool, the
//! answers, the seed's threshold and the selection round), `Search::reflect` (one
//! reflective round), `Search::finish` (the final statistics and the best's notes).

mod game;
pub mod history;
pub mod objective;
pub mod reflect;
mod search;
pub mod select;
mod settings;

use std::collections::BTreeMap;

use skill_factory_llm::ChatModel;

use crate::LabError;
use crate::answers::lab::{AskReport, Lab};
use crate::data::dataset::Example;
use crate::measure::evaluate::{Policy, QuestionStats, Reports};
use crate::optimizer::objective::Objective;
use crate::optimizer::select::Candidate;
use crate::probe::probeset::ProbeSet;
use crate::probe::question::Bank;

pub use history::Round;
pub use settings::{OptimizerFile, OptimizerSettings};

/// What the optimizer reads: the seed, train and validation (never test or held-out), the
/// pool of questions to select from, and the rules of the game.
pub struct Inputs<'a> {
    /// The seed probe set (`threshold: null` = fit on train).
    pub seed: &'a ProbeSet,
    /// Training examples: every threshold and candidate is fitted here.
    pub train: &'a [Example],
    /// Validation examples: the gate compares candidates here.
    pub val: &'a [Example],
    /// More questions to select from (merged with the seed's).
    pub pool: &'a Bank,
    /// What is maximized, under which constraints.
    pub objective: &'a Objective,
    /// How an example's answers become a verdict.
    pub policy: &'a Policy,
    /// The optimizer's settings.
    pub settings: &'a OptimizerSettings,
    /// Questions kept in every candidate and never selected (default: the seed's questions
    /// its score does not read).
    pub keep: Option<&'a [String]>,
    /// The model that proposes new questions; none: selection only.
    pub proposer: Option<&'a dyn ChatModel>,
}

/// What a run found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The seed with its threshold as fitted on train: the "before" of every report.
    pub seed: ProbeSet,
    /// The best probe set found (the seed when nothing beat it).
    pub best: ProbeSet,
    /// The seed's reports on train and validation.
    pub before: Reports,
    /// The best's.
    pub after: Reports,
    /// Every round, the seed's first.
    pub history: Vec<Round>,
    /// Every question of the pool (seed and pool file merged).
    pub pool: Bank,
    /// Per-question statistics on train and validation, best training AUC first.
    pub stats: Vec<QuestionStats>,
    /// The Pareto front of the last round's candidates.
    pub front: Vec<Candidate>,
    /// What the lab bought.
    pub spend: AskReport,
    /// How many of the train and validation answers each model version served. More than one
    /// means the threshold was fitted on a mix (`pinned_version` names the most frequent).
    pub served: BTreeMap<String, usize>,
}

/// Runs the optimizer on `inputs`; `progress(done, total)` follows the requests.
pub async fn optimize(
    lab: &Lab,
    inputs: Inputs<'_>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Outcome, LabError> {
    let mut search = search::Search::start(lab, &inputs, progress).await?;
    if let Some(proposer) = inputs.proposer {
        for number in 2..inputs.settings.rounds + 2 {
            if search.reflect(proposer, number).await? == search::Next::Stop {
                break;
            }
        }
    }
    search.finish()
}

#[cfg(test)]
mod tests;
