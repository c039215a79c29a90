//! The classifier optimizer: the seed's threshold fitted on train, a selection round over the
//! whole question pool, then reflective rounds (with a proposer model): the failure digest of
//! the current best on train goes to the proposer, its new questions (or a larger state budget)
//! join the pool, the lab asks them, and selection runs again. Every candidate is gated on
//! validation against the incumbent; `patience` refused rounds in a row end the run.
//!
//! Only train and validation examples ever reach it: test and held-out stay sealed until
//! `lab freeze`, and nothing here can read them.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use skill_factory_config::scalar::ScalarText;
use skill_factory_pycompat::float::round;

use crate::LabError;
use crate::config::Unusable;
use crate::dataset::Example;
use crate::evaluate::{Policy, QuestionStats, Reports, evaluate_split, question_stats};
use crate::lab::{AskReport, Asked, Lab};
use crate::metrics::fit_threshold;
use crate::objective::Objective;
use crate::probeset::ProbeSet;
use crate::question::Bank;
use crate::reflect::{self, DigestInput, PromptInput};
use crate::select::{Candidate, Selection, best_per_family, name_at_margin, pareto};
use crate::splits::Split;
use crate::table::{AnswerTable, most_served};
use skill_factory_llm::ChatModel;
use skill_factory_llm::request::ChatRequest;

/// `optimizer:` of a classifier config.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizerSettings {
    /// Most reflective rounds (with a proposer model).
    pub rounds: usize,
    /// Consecutive refused reflective rounds that end the run.
    pub patience: usize,
    /// Most questions a candidate reads.
    pub max_questions: usize,
    /// Most questions taken from one proposal.
    pub max_new_questions: usize,
    /// The largest state budget a proposal may ask for (none: the budget is fixed).
    pub max_state_budget: Option<usize>,
    /// What the probe set is for, shown to the proposer.
    pub goal: String,
    /// Budget factors at which the candidate families are fitted.
    pub margins: Vec<f64>,
    /// Candidates per family sent to the validation gate.
    pub gate_per_family: usize,
}

impl Default for OptimizerSettings {
    fn default() -> Self {
        OptimizerSettings {
            rounds: 3,
            patience: 2,
            max_questions: 6,
            max_new_questions: 8,
            max_state_budget: None,
            goal: String::new(),
            margins: vec![1.0, 0.5],
            gate_per_family: 3,
        }
    }
}

impl OptimizerSettings {
    /// Reads `optimizer:` (absent = defaults); the error names the key and what it must be.
    pub fn from_file(file: Option<OptimizerFile>) -> Result<Self, Unusable> {
        let mut settings = OptimizerSettings::default();
        let Some(file) = file else {
            return Ok(settings);
        };
        let count = |value: Option<i64>,
                     key: &str,
                     least: i64|
         -> Result<Option<usize>, Unusable> {
            value
                .map(|n| {
                    usize::try_from(n).ok().filter(|_| n >= least).ok_or_else(|| {
                        Unusable::at(
                            format!("optimizer.{key}"),
                            format!("optimizer.{key} must be a whole number of at least {least}, not {n}"),
                        )
                    })
                })
                .transpose()
        };
        if let Some(n) = count(file.rounds, "rounds", 0)? {
            settings.rounds = n;
        }
        if let Some(n) = count(file.patience, "patience", 1)? {
            settings.patience = n;
        }
        if let Some(n) = count(file.max_questions, "max_questions", 1)? {
            settings.max_questions = n;
        }
        if let Some(n) = count(file.max_new_questions, "max_new_questions", 1)? {
            settings.max_new_questions = n;
        }
        settings.max_state_budget = count(file.max_state_budget, "max_state_budget", 1)?;
        if let Some(n) = count(file.gate_per_family, "gate_per_family", 1)? {
            settings.gate_per_family = n;
        }
        if let Some(goal) = file.goal {
            settings.goal = goal.0;
        }
        if let Some(margins) = file.margins {
            if margins.is_empty() {
                return Err(Unusable::at(
                    "optimizer.margins",
                    "optimizer.margins must be a non-empty list of budget factors (like [1.0, 0.5]), not []",
                ));
            }
            if let Some(bad) = margins.iter().find(|m| !(**m > 0.0 && m.is_finite())) {
                return Err(Unusable::at(
                    "optimizer.margins",
                    format!("optimizer.margins must be numbers above 0, not {bad}"),
                ));
            }
            settings.margins = margins;
        }
        Ok(settings)
    }
}

/// `optimizer:` as written; every key is optional and unknown keys are errors.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptimizerFile {
    #[serde(default)]
    rounds: Option<i64>,
    #[serde(default)]
    patience: Option<i64>,
    #[serde(default)]
    max_questions: Option<i64>,
    #[serde(default)]
    max_new_questions: Option<i64>,
    #[serde(default)]
    max_state_budget: Option<i64>,
    #[serde(default)]
    goal: Option<ScalarText>,
    #[serde(default)]
    margins: Option<Vec<f64>>,
    #[serde(default)]
    gate_per_family: Option<i64>,
}

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

/// One round of the history.
#[derive(Debug, Clone)]
pub struct Round {
    /// 0 for the seed, 1 for selection.
    pub round: usize,
    /// What changed: `seed`, `selection`.
    pub change: String,
    /// Why.
    pub rationale: String,
    /// The candidate tried (or the one that came closest), `-` when there was none.
    pub candidate: String,
    /// Its score expression, described.
    pub score: String,
    /// Its threshold.
    pub threshold: Option<f64>,
    /// Its state budget (none for an unusable proposal).
    pub state_budget: Option<usize>,
    /// Whether it became the best.
    pub accepted: bool,
    /// Why it was refused.
    pub reasons: Vec<String>,
    /// Questions this round added to the pool.
    pub new_questions: Vec<String>,
    /// USD spent in this round.
    pub usd: f64,
    /// Requests that failed in this round.
    pub failed_requests: usize,
    /// Its reports on train and validation.
    pub reports: Reports,
    /// The proposer's reply, when it was unusable (its first 4,000 characters).
    pub raw_reply: Option<String>,
    /// What the proposer was shown (reflective rounds).
    pub prompt: Option<String>,
}

impl Round {
    /// The round as `history.json` records it.
    pub fn to_json(&self) -> Value {
        let reports: Map<String, Value> = self
            .reports
            .iter()
            .map(|(split, report)| (split.name().to_string(), report.to_json()))
            .collect();
        let mut record = json!({
            "round": self.round,
            "change": self.change,
            "rationale": self.rationale,
            "candidate": self.candidate,
            "score": self.score,
            "threshold": self.threshold,
            "state_budget": self.state_budget,
            "accepted": self.accepted,
            "reasons": self.reasons,
            "new_questions": self.new_questions,
            "usd": round(self.usd, 6),
            "failed_requests": self.failed_requests,
            "reports": reports,
        });
        if let Some(raw) = &self.raw_reply {
            record["raw_reply"] = json!(raw.chars().take(RAW_REPLY_CHARS).collect::<String>());
        }
        if let Some(prompt) = &self.prompt {
            record["prompt"] = json!(prompt);
        }
        record
    }
}

/// Characters of an unusable reply kept in the history.
const RAW_REPLY_CHARS: usize = 4000;

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

/// Runs the seed and the selection round; `progress(done, total)` follows the requests.
pub async fn optimize(
    lab: &Lab,
    inputs: Inputs<'_>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Outcome, LabError> {
    let Inputs {
        seed,
        train,
        val,
        pool: extra,
        objective,
        policy,
        settings,
        keep,
        proposer: inputs_proposer,
    } = inputs;
    if train.is_empty() || val.is_empty() {
        return Err(LabError::invalid(format!(
            "the optimizer needs examples in both train and val (train has {}, val {}); \
             change splits.fractions or splits.salt, or give examples an explicit split",
            train.len(),
            val.len()
        )));
    }
    objective.check_levels(policy)?;
    let score_ids = seed.score_ids();
    let keep: Vec<String> = match keep {
        Some(keep) => keep.to_vec(),
        None => seed
            .bank
            .ids()
            .into_iter()
            .filter(|id| !score_ids.contains(id))
            .collect(),
    };
    let mut pool = seed.bank.clone();
    pool.merge(extra).map_err(|e| {
        LabError::invalid(format!("merging the pool into the seed's questions: {e}"))
    })?;
    for id in &keep {
        if !pool.contains(id) {
            return Err(LabError::invalid(format!(
                "keep_questions names '{id}', which is neither in the seed nor in the pool"
            )));
        }
    }
    let budget = seed.state_budget;
    let asked = Asked::all(pool.compiled()?);
    let examples: Vec<&Example> = train.iter().chain(val).collect();
    let mut spend = lab.ask(&examples, &asked, budget, 0, progress).await?;
    let table = lab.table(&examples, &asked, budget, 0);

    let mut seed = seed.clone();
    if seed.threshold.is_none() {
        let scores = train
            .iter()
            .map(|ex| (ex.label, seed.score_of(table.answers(&ex.id))));
        seed.threshold = Some(fit_threshold(scores, objective.fpr_budget, true)?);
    }
    let game = Game {
        train,
        val,
        objective,
        policy,
        settings,
        keep: &keep,
    };
    let before = game.score(&table, &seed);
    let mut history = vec![Round {
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
    }];

    // Selection: every family fitted on train at each margin, the best few of each gated on
    // validation against the seed.
    let mut best = seed.clone();
    let mut after = before.clone();
    let (round, won, mut all) = game.try_pool(Pass {
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
    if let Some((probeset, reports)) = won {
        best = probeset;
        after = reports;
    }
    history.push(round);

    // Reflective rounds: the proposer sees why the best fails on train and proposes questions
    // (or a larger state budget); the pool grows, the lab asks, selection runs again.
    let mut table = table;
    let mut stale = 0;
    if let Some(proposer) = inputs_proposer {
        for number in 2..settings.rounds + 2 {
            let train_split: [(Split, &[Example]); 1] = [(Split::Train, train)];
            let mut stats =
                question_stats(&pool.ids(), &train_split, &table, objective.fpr_budget)?;
            stats.sort_by(|a, b| b.auc(Split::Train).total_cmp(&a.auc(Split::Train)));
            let digest = reflect::failure_digest(&DigestInput {
                probeset: &best,
                train,
                label: "TRAINING",
                table: &table,
                stats: &stats,
                max_state_budget: settings.max_state_budget,
                shown: reflect::MOST_SHOWN,
                excerpt: reflect::EXCERPT_CHARS,
            });
            let prompt = reflect::proposal_prompt(&PromptInput {
                goal: &settings.goal,
                pool: &pool,
                probeset: &best,
                digest: &digest,
                max_new: settings.max_new_questions,
                max_state_budget: settings.max_state_budget,
            });
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
            let parsed = match &reply {
                Ok(answer) => reflect::parse_proposal(
                    &answer.text,
                    &pool,
                    settings.max_new_questions,
                    settings.max_state_budget,
                    best.state_budget,
                ),
                Err(error) => Err(LabError::invalid(format!("the proposer failed: {error}"))),
            };
            let proposal = match parsed {
                Ok(proposal) => proposal,
                Err(why) => {
                    history.push(Round {
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
                        reports: after.clone(),
                        raw_reply: Some(reply.map(|a| a.text).unwrap_or_default()),
                        prompt: Some(prompt),
                    });
                    stale += 1;
                    if stale >= settings.patience {
                        break;
                    }
                    continue;
                }
            };
            let added = pool.merge(&proposal.bank).map_err(|e| {
                LabError::invalid(format!("merging the proposal of round {number}: {e}"))
            })?;
            let old_budget = best.state_budget;
            let new_budget = proposal.state_budget.unwrap_or(old_budget);
            let mut change = Vec::new();
            if !added.is_empty() {
                change.push(format!(
                    "+{} question{}",
                    added.len(),
                    if added.len() == 1 { "" } else { "s" }
                ));
            }
            if new_budget != old_budget {
                change.push(format!(
                    "state budget {} -> {}",
                    skill_factory_pycompat::float::thousands(old_budget as u64),
                    skill_factory_pycompat::float::thousands(new_budget as u64)
                ));
            }
            let change = if change.is_empty() {
                "no change".to_string()
            } else {
                change.join(", ")
            };
            let asked = Asked::all(pool.compiled()?);
            let bought = lab.ask(&examples, &asked, new_budget, 0, progress).await?;
            let (usd, failed) = (bought.usd, bought.failed);
            spend.absorb(&bought);
            table = lab.table(&examples, &asked, new_budget, 0);
            let mut base = best.clone();
            base.state_budget = new_budget;
            let (mut round, won, tried) = game.try_pool(Pass {
                round: number,
                change,
                rationale: proposal.rationale.clone(),
                new_questions: added,
                base: &base,
                incumbent: &after,
                pool: &pool,
                table: &table,
                budget: new_budget,
            })?;
            round.usd = usd;
            round.failed_requests = failed;
            round.prompt = Some(prompt);
            all = tried;
            history.push(round);
            match won {
                Some((probeset, reports)) => {
                    best = probeset;
                    after = reports;
                    stale = 0;
                }
                None => {
                    if new_budget != old_budget {
                        table = lab.table(&examples, &asked, old_budget, 0);
                    }
                    stale += 1;
                    if stale >= settings.patience {
                        break;
                    }
                }
            }
        }
    }
    if let Some(failure) = policy.failure() {
        return Err(LabError::invalid(failure));
    }
    // The final statistics read the whole pool at the best's budget.
    let asked = Asked::all(pool.compiled()?);
    let table = lab.table(&examples, &asked, best.state_budget, 0);

    let by_split: [(Split, &[Example]); 2] = [(Split::Train, train), (Split::Val, val)];
    let mut stats = question_stats(&pool.ids(), &by_split, &table, objective.fpr_budget)?;
    stats.sort_by(|a, b| b.auc(Split::Train).total_cmp(&a.auc(Split::Train)));
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
        ("policy".to_string(), json!(policy.name)),
        ("train".to_string(), rates(Split::Train)),
        ("val".to_string(), rates(Split::Val)),
    ]);
    Ok(Outcome {
        seed,
        best,
        before,
        after,
        history,
        pool,
        stats,
        front: pareto(&all),
        spend,
        served,
    })
}

/// What every pass of selection shares: the examples, the rules of the game, the kept
/// questions.
struct Game<'a> {
    train: &'a [Example],
    val: &'a [Example],
    objective: &'a Objective,
    policy: &'a Policy,
    settings: &'a OptimizerSettings,
    keep: &'a [String],
}

/// One pass of selection over the pool, as a round of the history.
struct Pass<'a> {
    round: usize,
    change: String,
    rationale: String,
    new_questions: Vec<String>,
    /// The probe set a candidate is built on (name, model, notes; its state budget).
    base: &'a ProbeSet,
    /// The reports a candidate must beat.
    incumbent: &'a Reports,
    pool: &'a Bank,
    table: &'a AnswerTable,
    budget: usize,
}

/// A pass: its round, the new best and its reports when one passed the gate, and every
/// candidate fitted (for the Pareto front).
type Passed = (Round, Option<(ProbeSet, Reports)>, Vec<Candidate>);

impl Game<'_> {
    fn score(&self, table: &AnswerTable, probeset: &ProbeSet) -> Reports {
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
    fn try_pool(&self, pass: Pass) -> Result<Passed, LabError> {
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
            let probeset = candidate.probe_set(pass.base, pass.pool, self.keep)?;
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use skill_factory_llm::systemone::{AnswerCache, FakeSystemOne};

    use super::*;
    use crate::lab::LabSettings;
    use crate::question::test_bank;
    use crate::world;

    fn quiet(_: usize, _: usize) {}

    fn lab() -> Lab {
        Lab::online(
            Arc::new(FakeSystemOne::new("fake-jev", world::responder)),
            Arc::new(AnswerCache::in_memory()),
            LabSettings::default(),
        )
    }

    fn seed(ids: &[&str], score: &str) -> ProbeSet {
        let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
        let mut seed = ProbeSet::new(
            "seed",
            test_bank().subset(&ids).unwrap(),
            crate::score::ScoreExpr::parse(&json!(score)).unwrap(),
            None,
        )
        .unwrap();
        seed.model = "fake-jev".into();
        seed.state_budget = 10_000;
        seed
    }

    fn objective(constraints: Value) -> Objective {
        crate::objective::parsed(json!({"fpr_budget": 0.05, "constraints": constraints})).unwrap()
    }

    async fn run(seed: &ProbeSet, objective: &Objective, keep: Option<&[String]>) -> Outcome {
        let examples = world::examples(120);
        let splits = world::default_splits(&examples);
        optimize(
            &lab(),
            Inputs {
                seed,
                train: splits.get(Split::Train),
                val: splits.get(Split::Val),
                pool: &test_bank(),
                objective,
                policy: &Policy::threshold(),
                settings: &OptimizerSettings::default(),
                keep,
                proposer: None,
            },
            &quiet,
        )
        .await
        .unwrap()
    }

    /// A run whose pool is only the seed's questions, with `proposer` answering `replies` in
    /// order (the last repeating).
    async fn reflective(
        seed: &ProbeSet,
        replies: &[&str],
        settings: OptimizerSettings,
        keep: Option<&[String]>,
    ) -> (Outcome, usize) {
        let examples = world::examples(120);
        let splits = world::default_splits(&examples);
        let proposer = skill_factory_llm::FakeModel::new("proposer")
            .with_responses(replies.iter().map(|r| r.to_string()).collect());
        let objective = objective(json!([]));
        let outcome = optimize(
            &lab(),
            Inputs {
                seed,
                train: splits.get(Split::Train),
                val: splits.get(Split::Val),
                pool: &Bank::default(),
                objective: &objective,
                policy: &Policy::threshold(),
                settings: &settings,
                keep,
                proposer: Some(&proposer),
            },
            &quiet,
        )
        .await
        .unwrap();
        let asked = proposer.received().len();
        (outcome, asked)
    }

    const INTENT_PROPOSAL: &str = r#"The misses share bad intent. ```json
{"rationale": "misses share a bad intent the capability question cannot see",
 "frames": {"careful": "You read an item carefully."},
 "questions": [{"id": "intent_check", "question": "Does the item show bad intent?", "true": "Yes: bad intent.", "false": "No: none.", "frames": ["careful"]}]}
```"#;

    #[tokio::test]
    async fn a_reflective_round_adds_the_proposed_question_and_keeps_it_when_it_wins() {
        let settings = OptimizerSettings {
            rounds: 2,
            patience: 1,
            goal: "find bad intent".into(),
            ..OptimizerSettings::default()
        };
        let seed = seed(&["capability"], "capability");
        let (outcome, asked) = reflective(&seed, &[INTENT_PROPOSAL], settings, None).await;
        let round = &outcome.history[2];
        assert_eq!(round.change, "+1 question");
        assert_eq!(round.new_questions, ["intent_check@careful"]);
        assert!(round.accepted, "{round:?}");
        assert!(outcome.pool.contains("intent_check@careful"));
        assert!(
            outcome.best.score.describe().contains("intent_check"),
            "{}",
            outcome.best.score.describe()
        );
        let prompt = round.prompt.as_deref().unwrap();
        assert!(prompt.starts_with("GOAL: find bad intent\n"), "{prompt}");
        assert!(
            prompt.contains("SYSTEM-LEVEL CAUSES") && prompt.contains("P(true): capability="),
            "{prompt}"
        );
        assert!(asked >= 1);
    }

    #[tokio::test]
    async fn a_proposal_that_only_raises_the_state_budget_is_a_round_of_its_own() {
        let settings = OptimizerSettings {
            rounds: 1,
            max_state_budget: Some(8000),
            ..OptimizerSettings::default()
        };
        let mut seed = seed(&["intent@reviewer", "lure"], "intent@reviewer");
        seed.state_budget = 1000;
        let (outcome, _) = reflective(
            &seed,
            &[r#"{"rationale": "misses were never sent", "pipeline": {"state_budget": 5000}}"#],
            settings,
            Some(&[]),
        )
        .await;
        let last = outcome.history.last().unwrap();
        assert_eq!(last.change, "state budget 1,000 -> 5,000", "{last:?}");
        assert!(last.accepted, "{last:?}");
        assert_eq!(outcome.best.state_budget, 5000);
    }

    #[tokio::test]
    async fn unusable_replies_are_refused_rounds_until_patience_runs_out() {
        let settings = OptimizerSettings {
            rounds: 5,
            patience: 2,
            ..OptimizerSettings::default()
        };
        let (outcome, asked) = reflective(
            &seed(&["capability"], "capability"),
            &["not json"],
            settings,
            None,
        )
        .await;
        let proposals: Vec<&Round> = outcome
            .history
            .iter()
            .filter(|r| r.change == "proposal")
            .collect();
        assert_eq!(proposals.len(), 2);
        assert_eq!(asked, 2);
        for round in proposals {
            assert!(!round.accepted);
            assert_eq!(
                round.rationale,
                "unusable proposal: no JSON object in the reply"
            );
            assert_eq!(round.raw_reply.as_deref(), Some("not json"));
            assert_eq!(round.to_json()["raw_reply"], "not json");
            assert!(round.to_json()["state_budget"].is_null());
        }
    }

    #[tokio::test]
    async fn selection_alone_finds_the_intent_question_fitted_on_train() {
        let outcome = run(
            &seed(&["capability"], "capability"),
            &objective(json!([{"split": "val", "max_fpr": 0.1}])),
            None,
        )
        .await;
        assert_eq!(outcome.history[0].change, "seed");
        assert_eq!(outcome.history[1].change, "selection");
        assert!(
            outcome.history[1].accepted,
            "{:?}",
            outcome.history[1].reasons
        );
        assert!(
            outcome
                .best
                .score_ids()
                .contains(&"intent@reviewer".to_string())
        );
        let recall = |r: &Reports| r[&Split::Val].rates(None).unwrap().recall();
        assert!(recall(&outcome.after) - recall(&outcome.before) > 0.5);
        assert_eq!(outcome.best.calibration["fitted_on"], "train");
        assert_eq!(outcome.best.pinned_version.as_deref(), Some("fake-jev"));
        assert!(
            outcome.seed.threshold.is_some(),
            "the seed's threshold is fitted"
        );
        assert!(!outcome.stats.is_empty() && !outcome.front.is_empty());
        assert_eq!(
            outcome.stats[0].qid, "intent@reviewer",
            "best training AUC first"
        );
    }

    #[tokio::test]
    async fn constraints_refuse_better_recall_and_keep_the_seed() {
        let seed = seed(&["capability"], "capability");
        let outcome = run(
            &seed,
            &objective(json!([{"split": "val", "max_fpr": -1}])),
            None,
        )
        .await;
        let round = &outcome.history[1];
        assert!(!round.accepted);
        assert!(
            round
                .reasons
                .iter()
                .any(|r| r.contains("false-positive rate")),
            "{:?}",
            round.reasons
        );
        assert_eq!(outcome.best.score, seed.score);
    }

    #[tokio::test]
    async fn kept_questions_stay_in_every_candidate_and_are_never_selected() {
        // The seed bank has noise, which its score does not read: it is kept for policies.
        let outcome = run(
            &seed(&["capability", "noise"], "capability"),
            &objective(json!([])),
            None,
        )
        .await;
        assert!(outcome.best.bank.contains("noise"));
        assert!(!outcome.best.score_ids().contains(&"noise".to_string()));
    }

    #[tokio::test]
    async fn the_optimizer_needs_train_and_val_and_checks_its_settings() {
        let examples = world::examples(30);
        let seed = seed(&["capability"], "capability");
        let error = optimize(
            &lab(),
            Inputs {
                seed: &seed,
                train: &examples,
                val: &[],
                pool: &test_bank(),
                objective: &Objective::default(),
                policy: &Policy::threshold(),
                settings: &OptimizerSettings::default(),
                keep: None,
                proposer: None,
            },
            &quiet,
        )
        .await
        .unwrap_err();
        assert!(error.to_string().contains("train and val"), "{error}");
        let zero = serde_json::from_value(json!({"patience": 0})).unwrap();
        let error = OptimizerSettings::from_file(Some(zero)).unwrap_err();
        assert_eq!(error.key, "optimizer.patience");
        assert!(error.message.contains("at least 1, not 0"), "{error}");
    }

    #[tokio::test]
    async fn answers_from_two_versions_are_counted_and_the_most_frequent_is_pinned() {
        let cache = Arc::new(AnswerCache::in_memory());
        let lab_serving = |version: &str| {
            Lab::online(
                Arc::new(FakeSystemOne::new("fake-jev", world::responder).serving(version)),
                Arc::clone(&cache),
                LabSettings::default(),
            )
        };
        let examples = world::examples(120);
        let splits = world::default_splits(&examples);
        let seed = seed(&["capability"], "capability");
        let objective = Objective::default();
        let policy = Policy::threshold();
        let settings = OptimizerSettings::default();
        let inputs = |pool| Inputs {
            seed: &seed,
            train: splits.get(Split::Train),
            val: splits.get(Split::Val),
            pool,
            objective: &objective,
            policy: &policy,
            settings: &settings,
            keep: None,
            proposer: None,
        };
        // The seed's question is answered by one version, the pool's three others later by
        // another: a threshold fitted now reads both.
        let first = optimize(&lab_serving("jev-1.13.0"), inputs(&seed.bank), &quiet)
            .await
            .unwrap();
        assert_eq!(first.served.keys().collect::<Vec<_>>(), ["jev-1.13.0"]);
        let pool = test_bank();
        let second = optimize(&lab_serving("jev-1.14.0"), inputs(&pool), &quiet)
            .await
            .unwrap();
        assert_eq!(second.served.len(), 2, "{:?}", second.served);
        assert_eq!(second.served["jev-1.14.0"], 3 * second.served["jev-1.13.0"]);
        assert_eq!(second.best.pinned_version.as_deref(), Some("jev-1.14.0"));
    }

    #[tokio::test]
    async fn round_records_serialize_with_their_reports() {
        let outcome = run(
            &seed(&["capability"], "capability"),
            &Objective::default(),
            None,
        )
        .await;
        let record = outcome.history[0].to_json();
        assert_eq!(record["round"], 0);
        assert!(
            record["reports"]["train"]["levels"]["flag"]["tp"]
                .as_u64()
                .is_some()
        );
        let text = serde_json::to_string(
            &outcome
                .history
                .iter()
                .map(Round::to_json)
                .collect::<Vec<_>>(),
        )
        .unwrap();
        assert!(text.contains("\"change\":\"selection\""), "{text}");
    }
}
