//! The state of one run between its phases: the pool as it grows, the answers bought, the
//! incumbent and the history.

use serde_json::{Map, Value, json};
use skill_factory_llm::ChatModel;
use skill_factory_llm::request::ChatRequest;
use skill_factory_pycompat::float::thousands;

use crate::LabError;
use crate::answers::lab::{AskReport, Asked, Lab};
use crate::answers::table::{AnswerTable, most_served};
use crate::data::dataset::Example;
use crate::data::split::Split;
use crate::measure::evaluate::{Reports, question_stats_by_auc};
use crate::measure::metrics::fit_threshold;
use crate::optimizer::reflect::{self, DigestInput, PromptInput, Proposal};
use crate::optimizer::select::{Candidate, pareto};
use crate::probe::probeset::ProbeSet;
use crate::probe::question::Bank;

use super::game::{Game, Pass};
use super::{Inputs, Outcome, Round};

/// What the run does after a reflective round.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Another round, if the settings allow one.
    Go,
    /// `patience` rounds in a row were refused.
    Stop,
}

/// A run between its phases.
pub(super) struct Search<'a> {
    lab: &'a Lab,
    progress: &'a (dyn Fn(usize, usize) + Sync),
    game: Game<'a>,
    /// Train and validation, the examples every request is for.
    examples: Vec<&'a Example>,
    /// The seed with its threshold fitted on train.
    seed: ProbeSet,
    before: Reports,
    best: ProbeSet,
    after: Reports,
    pool: Bank,
    table: AnswerTable,
    history: Vec<Round>,
    /// The candidates of the last pass, for the Pareto front.
    tried: Vec<Candidate>,
    spend: AskReport,
    /// Refused reflective rounds in a row.
    stale: usize,
}

impl<'a> Search<'a> {
    /// Checks the inputs, merges the pool into the seed's questions, buys every answer of
    /// train and validation, fits the seed's threshold on train when it has none, and runs
    /// the selection round.
    pub(super) async fn start(
        lab: &'a Lab,
        inputs: &Inputs<'a>,
        progress: &'a (dyn Fn(usize, usize) + Sync),
    ) -> Result<Search<'a>, LabError> {
        let (train, val) = (inputs.train, inputs.val);
        if train.is_empty() || val.is_empty() {
            return Err(LabError::invalid(format!(
                "the optimizer needs examples in both train and val (train has {}, val {}); \
                 change splits.fractions or splits.salt, or give examples an explicit split",
                train.len(),
                val.len()
            )));
        }
        inputs.objective.check_levels(inputs.policy)?;
        let keep = kept(inputs);
        let mut pool = inputs.seed.bank.clone();
        pool.merge(inputs.pool)
            .map_err(|e| e.within("merging the pool into the seed's questions"))?;
        if let Some(id) = keep.iter().find(|id| !pool.contains(id)) {
            return Err(LabError::invalid(format!(
                "keep_questions names '{id}', which is neither in the seed nor in the pool"
            )));
        }
        let budget = inputs.seed.state_budget;
        let asked = Asked::all(pool.compiled()?);
        let examples: Vec<&Example> = train.iter().chain(val).collect();
        let spend = lab.ask(&examples, &asked, budget, 0, progress).await?;
        let table = lab.table(&examples, &asked, budget, 0);
        let mut seed = inputs.seed.clone();
        if seed.threshold.is_none() {
            let scores = train
                .iter()
                .map(|ex| (ex.label, seed.score_of(table.answers(&ex.id))));
            seed.threshold = Some(fit_threshold(scores, inputs.objective.fpr_budget, true)?);
        }
        let game = Game {
            train,
            val,
            objective: inputs.objective,
            policy: inputs.policy,
            settings: inputs.settings,
            keep,
        };
        let before = game.score(&table, &seed);
        let seed_round = Round {
            round: 0,
            change: "seed".to_string(),
            rationale: "the seed, its threshold fitted on train".to_string(),
            candidate: "seed".to_string(),
            score: seed.score.describe(),
            threshold: seed.threshold,
            state_budget: Some(budget),
            accepted: true,
            reasons: Vec::new(),
            new_questions: Vec::new(),
            usd: spend.usd,
            failed_requests: spend.failed,
            reports: before.clone(),
            raw_reply: None,
            prompt: None,
        };
        let (selection, won, tried) = game.try_pool(Pass {
            round: 1,
            change: "selection".to_string(),
            rationale: "fit every candidate over the question pool".to_string(),
            new_questions: Vec::new(),
            base: &seed,
            incumbent: &before,
            pool: &pool,
            table: &table,
            budget,
        })?;
        let (best, after) = won.unwrap_or_else(|| (seed.clone(), before.clone()));
        Ok(Search {
            lab,
            progress,
            game,
            examples,
            seed,
            before,
            best,
            after,
            pool,
            table,
            history: vec![seed_round, selection],
            tried,
            spend,
            stale: 0,
        })
    }

    /// One reflective round: the proposer sees why the best fails on train and proposes
    /// questions (or a larger state budget); the pool grows, the lab asks, selection runs
    /// again against the incumbent.
    pub(super) async fn reflect(
        &mut self,
        proposer: &dyn ChatModel,
        number: usize,
    ) -> Result<Next, LabError> {
        let prompt = self.prompt()?;
        let mut request = ChatRequest::single(
            Some(reflect::SYSTEM.to_string()),
            prompt.clone(),
            reflect::TEMPERATURE,
            reflect::MAX_TOKENS,
        );
        // A refused round leaves the prompt as it was: the round number keeps the next
        // request its own sample (a rerun of the run still finds each in the cache).
        request.sample_index = number as u32;
        let reply = proposer.chat(&request).await;
        let settings = self.game.settings;
        let parsed = match &reply {
            Ok(answer) => reflect::parse_proposal(
                &answer.text,
                &self.pool,
                settings.max_new_questions,
                settings.max_state_budget,
                self.best.state_budget,
            ),
            Err(error) => Err(LabError::invalid(format!("the proposer failed: {error}"))),
        };
        match parsed {
            Ok(proposal) => self.try_proposal(proposal, number, prompt).await,
            Err(why) => {
                self.history.push(Round {
                    round: number,
                    change: "proposal".to_string(),
                    rationale: format!("unusable proposal: {why}"),
                    candidate: "-".to_string(),
                    score: "-".to_string(),
                    threshold: None,
                    state_budget: None,
                    accepted: false,
                    reasons: vec![why.to_string()],
                    new_questions: Vec::new(),
                    usd: 0.0,
                    failed_requests: 0,
                    // Nothing was tried: the incumbent's figures stand.
                    reports: self.after.clone(),
                    raw_reply: Some(reply.map(|a| a.text).unwrap_or_default()),
                    prompt: Some(prompt),
                });
                Ok(self.refused())
            }
        }
    }

    /// What the proposer is shown: the failure digest of the best on train, the pool, the goal.
    fn prompt(&self) -> Result<String, LabError> {
        let (train, settings) = (self.game.train, self.game.settings);
        let by_split: [(Split, &[Example]); 1] = [(Split::Train, train)];
        let budget = self.game.objective.fpr_budget;
        let stats = question_stats_by_auc(&self.pool.ids(), &by_split, &self.table, budget)?;
        let digest = reflect::failure_digest(&DigestInput {
            probeset: &self.best,
            train,
            label: "TRAINING",
            table: &self.table,
            stats: &stats,
            max_state_budget: settings.max_state_budget,
            shown: reflect::MOST_SHOWN,
            excerpt: reflect::EXCERPT_CHARS,
        });
        Ok(reflect::proposal_prompt(&PromptInput {
            goal: &settings.goal,
            pool: &self.pool,
            probeset: &self.best,
            digest: &digest,
            max_new: settings.max_new_questions,
            max_state_budget: settings.max_state_budget,
        }))
    }

    /// Adds a usable proposal to the pool, buys its answers and runs selection again.
    async fn try_proposal(
        &mut self,
        proposal: Proposal,
        number: usize,
        prompt: String,
    ) -> Result<Next, LabError> {
        let added = self
            .pool
            .merge(&proposal.bank)
            .map_err(|e| e.within(&format!("merging the proposal of round {number}")))?;
        let old_budget = self.best.state_budget;
        let new_budget = proposal.state_budget.unwrap_or(old_budget);
        let asked = Asked::all(self.pool.compiled()?);
        let bought = self
            .lab
            .ask(&self.examples, &asked, new_budget, 0, self.progress)
            .await?;
        self.spend.absorb(&bought);
        self.table = self.lab.table(&self.examples, &asked, new_budget, 0);
        let mut base = self.best.clone();
        base.state_budget = new_budget;
        let (mut round, won, tried) = self.game.try_pool(Pass {
            round: number,
            change: change(&added, old_budget, new_budget),
            rationale: proposal.rationale.clone(),
            new_questions: added,
            base: &base,
            incumbent: &self.after,
            pool: &self.pool,
            table: &self.table,
            budget: new_budget,
        })?;
        round.usd = bought.usd;
        round.failed_requests = bought.failed;
        round.prompt = Some(prompt);
        self.tried = tried;
        self.history.push(round);
        Ok(match won {
            Some((probeset, reports)) => {
                self.best = probeset;
                self.after = reports;
                self.stale = 0;
                Next::Go
            }
            None => {
                if new_budget != old_budget {
                    self.table = self.lab.table(&self.examples, &asked, old_budget, 0);
                }
                self.refused()
            }
        })
    }

    /// Counts a refused round against `patience`.
    fn refused(&mut self) -> Next {
        self.stale += 1;
        if self.stale >= self.game.settings.patience {
            Next::Stop
        } else {
            Next::Go
        }
    }

    /// The outcome: per-question statistics over the whole pool at the best's budget, the
    /// version the answers came from pinned, and the best's calibration notes.
    pub(super) fn finish(self) -> Result<Outcome, LabError> {
        let Search {
            lab,
            game,
            examples,
            mut best,
            after,
            pool,
            ..
        } = self;
        if let Some(failure) = game.policy.failure() {
            return Err(LabError::invalid(failure));
        }
        let objective = game.objective;
        let asked = Asked::all(pool.compiled()?);
        let table = lab.table(&examples, &asked, best.state_budget, 0);
        let by_split: [(Split, &[Example]); 2] =
            [(Split::Train, game.train), (Split::Val, game.val)];
        let stats = question_stats_by_auc(&pool.ids(), &by_split, &table, objective.fpr_budget)?;
        let served = table.served();
        if let Some(version) = most_served(&served) {
            best.pinned_version = Some(version);
        }
        let rates = |split: Split| {
            after
                .get(&split)
                .and_then(|r| r.rates(objective.level.as_deref()))
                .map_or(Value::Null, |r| r.to_json())
        };
        best.calibration = Map::from_iter([
            ("fpr_budget".to_string(), json!(objective.fpr_budget)),
            ("fitted_on".to_string(), json!("train")),
            ("policy".to_string(), json!(game.policy.name)),
            ("train".to_string(), rates(Split::Train)),
            ("val".to_string(), rates(Split::Val)),
        ]);
        Ok(Outcome {
            seed: self.seed,
            best,
            before: self.before,
            after,
            history: self.history,
            pool,
            stats,
            front: pareto(&self.tried),
            spend: self.spend,
            served,
        })
    }
}

/// The questions kept in every candidate: as configured, else the seed's questions its score
/// does not read.
fn kept(inputs: &Inputs<'_>) -> Vec<String> {
    if let Some(keep) = inputs.keep {
        return keep.to_vec();
    }
    let score_ids = inputs.seed.score_ids();
    inputs
        .seed
        .bank
        .ids()
        .into_iter()
        .filter(|id| !score_ids.contains(id))
        .collect()
}

/// What a proposal changed, for the history: `+2 questions, state budget 4,000 -> 8,000`.
fn change(added: &[String], old_budget: usize, new_budget: usize) -> String {
    let mut change = Vec::new();
    if !added.is_empty() {
        let plural = if added.len() == 1 { "" } else { "s" };
        change.push(format!("+{} question{plural}", added.len()));
    }
    if new_budget != old_budget {
        change.push(format!(
            "state budget {} -> {}",
            thousands(old_budget as u64),
            thousands(new_budget as u64)
        ));
    }
    if change.is_empty() {
        "no change".to_string()
    } else {
        change.join(", ")
    }
}
