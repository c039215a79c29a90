//! `llm_loop`: the reference tool's validation-gated reflective loop (§7.1 of the spec).
//!
//! The seed is scored on the whole validation split (the baseline). Each round samples a
//! train minibatch with CPython's `random.Random(optimizer.seed).sample` (so the minibatches
//! are the reference's), scores the best skill on it, shows the optimizer model the results
//! and asks it for `max_edits_per_round` rewrites, scores every distinct rewrite on the whole
//! validation split, and accepts the round's best only if it beats the best score by more
//! than `min_delta`. The search stops after `rounds` rounds, or after `patience` rounds in a
//! row without improvement, or once the best scores the metric's maximum on validation, or
//! when the budget or a Ctrl-C says so.
//!
//! What differs from the reference, on purpose:
//! * the round's proposals are requested concurrently, and the validations of its distinct
//!   proposals run concurrently, all under the run's one in-flight cap; every decision is
//!   taken in proposal order, so the result does not depend on timing;
//! * a body proposed twice is scored once, and results of the same body on the same task are
//!   reused across rounds, so the run makes at most the reference's number of model calls;
//! * the reflection prompt lists the edits already rejected in this run, and why;
//! * a round whose minibatch the best skill already aces asks no proposal, and the search
//!   stops once the best reaches the metric's maximum on validation (the reference spends its
//!   remaining rounds there until patience stops it);
//! * a truncated, empty, untagged or malformed proposal is rejected with a reason (in the
//!   round's note and the events) and never evaluated;
//! * every proposal, not only the round's best, is kept in the run folder.

use std::collections::{HashMap, VecDeque};
use std::ops::ControlFlow;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use skill_factory_core::{Skill, Task};
use skill_factory_llm::ChatModel;
use skill_factory_pycompat::random::Random;

use super::context::RunContext;
use super::event::Event;
use super::reflection::{
    REJECTED_SHOWN, Reflection, RejectedEdit, body_limits, default_goal, note_for,
};
use super::round::{self, Ask, Triage, Validated};
use super::{CandidateRecord, OptimizationResult, Optimizer, StopReason, is_perfect};
use crate::config::{OptimizerConfig, ReflectionStyle};

/// The history note of a round whose proposals were all unusable (the reference's words).
pub const NO_VALID_PROPOSAL: &str = "no valid proposal from optimizer LLM";

/// The history note of a round whose proposals all equal the best skill (the reference's).
pub const IDENTICAL_PROPOSAL: &str = "proposal identical to current skill";

/// The seed's history note (the reference's).
pub const SEED_NOTE: &str = "seed (baseline)";

/// The history note of a round whose minibatch the best skill already aced: the optimizer
/// model is not asked (the reference asks it anyway).
pub const PERFECT_MINIBATCH: &str =
    "minibatch already scores the maximum: nothing to reflect on, no proposal asked";

/// The hyper-parameters `llm_loop` reads from the `optimizer` block.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmLoopSettings {
    /// Most rounds.
    pub rounds: usize,
    /// Train tasks per round.
    pub minibatch_size: usize,
    /// Proposals per round (at least 1).
    pub max_edits_per_round: usize,
    /// Rounds in a row without improvement before stopping.
    pub patience: usize,
    /// Seed of minibatch sampling.
    pub seed: u64,
    /// What the skill should achieve; empty for the default sentence.
    pub goal: String,
    /// A proposal must beat the best by more than this.
    pub min_delta: f64,
    /// How proposals are asked for.
    pub reflection: ReflectionStyle,
}

impl LlmLoopSettings {
    /// The settings of an `optimizer` block.
    pub fn from_config(config: &OptimizerConfig) -> Self {
        LlmLoopSettings {
            rounds: config.rounds,
            minibatch_size: config.minibatch_size,
            max_edits_per_round: config.max_edits_per_round,
            patience: config.patience,
            seed: config.seed,
            goal: config.goal.clone(),
            min_delta: config.min_delta,
            reflection: config.reflection,
        }
    }
}

/// The `llm_loop` optimizer.
pub struct LlmLoop {
    client: Arc<dyn ChatModel>,
    settings: LlmLoopSettings,
}

impl LlmLoop {
    /// The `llm_loop` of an `optimizer` block, proposing edits with `client`.
    pub fn from_config(config: &OptimizerConfig, client: Arc<dyn ChatModel>) -> Self {
        LlmLoop::new(client, LlmLoopSettings::from_config(config))
    }

    /// An optimizer proposing edits with `client`.
    pub fn new(client: Arc<dyn ChatModel>, settings: LlmLoopSettings) -> Self {
        LlmLoop { client, settings }
    }
}

/// The search's state between rounds.
struct Search<'a> {
    context: &'a RunContext,
    settings: &'a LlmLoopSettings,
    result: OptimizationResult,
    best_id: usize,
    next_id: usize,
    rounds_without_improvement: usize,
    rejected: VecDeque<RejectedEdit>,
    /// Bodies scored on validation in this run: the first candidate of each.
    scored: HashMap<String, usize>,
}

impl Search<'_> {
    fn remember(&mut self, edit: RejectedEdit) {
        self.rejected.push_front(edit);
        self.rejected.truncate(REJECTED_SHOWN);
    }

    fn record(&mut self, round: usize, record: CandidateRecord, candidate: Option<usize>) {
        self.context.emit(Event::Decision {
            round,
            candidate,
            accepted: record.accepted,
            val_score: record.val_score,
            best_before: self.result.best_score,
            note: record.note.clone(),
        });
        if record.accepted {
            self.result.best_skill = record.skill.clone();
            self.result.best_score = record.val_score;
            self.best_id = candidate.unwrap_or(self.best_id);
            self.result.best_candidate = self.best_id;
            self.rounds_without_improvement = 0;
        } else {
            self.rounds_without_improvement += 1;
        }
        self.result.history.push(record);
        self.result
            .metadata
            .insert("rounds_run".into(), Value::from(round));
        self.context.emit(Event::RoundFinished {
            round,
            best_score: self.result.best_score,
            rounds_without_improvement: self.rounds_without_improvement,
        });
        self.context.events.checkpoint(&self.result);
    }

    /// Records a round that scored no new skill: the best stays, for the reason in `note`.
    fn keep_best(&mut self, round: usize, best: Skill, train_score: f64, note: String) {
        let record = CandidateRecord {
            iteration: round,
            skill: best,
            train_score,
            val_score: self.result.best_score,
            accepted: false,
            note,
        };
        self.record(round, record, None);
    }

    fn out_of_patience(&self) -> bool {
        self.rounds_without_improvement >= self.settings.patience
    }

    /// Runs one round: scores the best skill on the minibatch, asks for rewrites of it
    /// ([`round::propose`]), sorts them ([`round::triage`]), scores the new ones on
    /// validation ([`round::validate`]) and keeps the round's best if it beats the best
    /// ([`Search::accept`]). Breaks with the reason when the run is stopping.
    async fn round(
        &mut self,
        optimizer: &LlmLoop,
        round: usize,
        batch: &[Task],
        val: &[Task],
        goal: &str,
        limits: (usize, usize),
    ) -> ControlFlow<StopReason> {
        let context = self.context;
        let best = self.result.best_skill.clone();
        context.emit(Event::RoundStarted {
            round,
            minibatch: batch.iter().map(|t| t.id.clone()).collect(),
        });
        let train = context
            .evaluate(&best, batch, round, self.best_id, "train")
            .await;
        if !train.complete {
            return ControlFlow::Break(stopping(context));
        }
        if let Some(reason) = train.failure(|| format!("round {round}'s minibatch")) {
            return ControlFlow::Break(reason);
        }
        if is_perfect(train.score()) {
            // Every task of the minibatch already scores the maximum: there is no failure to
            // reflect on, and a rewrite could only be a guess.
            self.keep_best(round, best, train.score(), PERFECT_MINIBATCH.to_string());
            return ControlFlow::Continue(());
        }
        let rejected: Vec<RejectedEdit> = self.rejected.iter().cloned().collect();
        let prompt = Reflection {
            goal,
            body: &best.body,
            batch: &train.evaluation,
            tasks: batch,
            rejected: &rejected,
            limits,
        }
        .prompt_for(self.settings.reflection);
        let ask = Ask {
            prompt: &prompt,
            count: self.settings.max_edits_per_round,
            style: self.settings.reflection,
            limits,
        };
        let parent = (self.best_id, &best);
        let candidates = round::propose(
            context,
            &optimizer.client,
            &ask,
            round,
            parent,
            &mut self.next_id,
        )
        .await;
        if context.stop_reason().is_some() {
            return ControlFlow::Break(stopping(context));
        }
        if let Some(error) = round::all_requests_failed(&candidates) {
            return ControlFlow::Break(StopReason::OptimizerFailed {
                error: error.to_string(),
            });
        }
        let triage = round::triage(round, &candidates);
        for edit in &triage.rejected {
            self.remember(edit.clone());
        }
        if let Some(note) = nothing_to_score(&triage) {
            self.keep_best(round, best, train.score(), note);
            return ControlFlow::Continue(());
        }
        let validated =
            round::validate(context, round, &best, &triage, val, &mut self.scored).await;
        let Some(winner) = validated.best() else {
            return ControlFlow::Break(stopping(context));
        };
        if let Some(reason) = validated.all_failed(round) {
            return ControlFlow::Break(reason);
        }
        self.accept(round, train.score(), &triage, &validated, winner);
        if validated.complete() {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(stopping(context))
        }
    }

    /// Keeps the round's best if it beats the best by more than `min_delta`, and remembers
    /// every other scored edit with why it was not kept.
    fn accept(
        &mut self,
        round: usize,
        train_score: f64,
        triage: &Triage,
        validated: &Validated,
        winner: usize,
    ) {
        let best_score = self.result.best_score;
        let min_delta = self.settings.min_delta;
        let winner_score = validated.scores[winner].score();
        let accepted = winner_score > best_score + min_delta;
        let gate = if min_delta > 0.0 {
            format!(" by more than min_delta {min_delta}")
        } else {
            String::new()
        };
        for (position, new) in triage.new.iter().enumerate() {
            let scored = &validated.scores[position];
            if (position == winner && accepted) || !scored.complete {
                continue;
            }
            let score = scored.score();
            // An edit that beat the best but lost to a better one of the same round must not
            // be remembered as a failure to improve: the next prompt would mislead.
            let reason = if accepted && score > best_score + min_delta {
                format!(
                    "validation score {score:.3} beat the best {best_score:.3}, but another edit of the same round scored higher ({winner_score:.3}) and was kept"
                )
            } else {
                format!("validation score {score:.3} did not beat the best {best_score:.3}{gate}")
            };
            self.remember(RejectedEdit {
                round,
                candidate: new.id,
                rationale: new.rationale.clone(),
                reason,
            });
        }
        let record = CandidateRecord {
            iteration: round,
            skill: validated.skills[winner].clone(),
            train_score,
            val_score: winner_score,
            accepted,
            note: note_for(&triage.new[winner].rationale),
        };
        self.record(round, record, Some(triage.new[winner].id));
    }
}

/// The history note of a round with nothing new to score, or `None` when it has something.
fn nothing_to_score(triage: &Triage) -> Option<String> {
    if !triage.any_valid {
        Some(format!(
            "{NO_VALID_PROPOSAL} ({})",
            triage.problems.join("; ")
        ))
    } else if triage.new.is_empty() {
        Some(IDENTICAL_PROPOSAL.to_string())
    } else {
        None
    }
}

/// Why the run is stopping, once a step saw that it is.
fn stopping(context: &RunContext) -> StopReason {
    context.stop_reason().unwrap_or(StopReason::Cancelled)
}

#[async_trait]
impl Optimizer for LlmLoop {
    fn name(&self) -> &str {
        "llm_loop"
    }

    async fn optimize(
        &self,
        seed: &Skill,
        train: &[Task],
        val: &[Task],
        context: &RunContext,
    ) -> OptimizationResult {
        let settings = &self.settings;
        let limits = body_limits(&seed.body);
        let goal = if settings.goal.is_empty() {
            default_goal(&seed.name)
        } else {
            settings.goal.clone()
        };
        let baseline = context.evaluate(seed, val, 0, 0, "val").await;
        let mut metadata = Map::new();
        metadata.insert("rounds_run".into(), Value::from(0));
        metadata.insert("valset_size".into(), Value::from(val.len()));
        let mut search = Search {
            context,
            settings,
            result: OptimizationResult {
                optimizer: self.name().to_string(),
                best_skill: seed.clone(),
                baseline_score: baseline.score(),
                best_score: baseline.score(),
                best_candidate: 0,
                history: vec![CandidateRecord {
                    iteration: 0,
                    skill: seed.clone(),
                    train_score: baseline.score(),
                    val_score: baseline.score(),
                    accepted: true,
                    note: SEED_NOTE.to_string(),
                }],
                metadata,
                stop: None,
            },
            best_id: 0,
            next_id: 1,
            rounds_without_improvement: 0,
            rejected: VecDeque::new(),
            scored: HashMap::from([(seed.body.clone(), 0)]),
        };
        context.emit(Event::CandidateScored {
            round: 0,
            candidate: 0,
            val_score: baseline.score(),
            same_as: None,
        });
        context.events.checkpoint(&search.result);
        let mut stop = if baseline.complete {
            baseline.failure(|| "the baseline (the seed on the validation split)".to_string())
        } else {
            Some(stopping(context))
        };
        let mut rng = Random::new(settings.seed);
        let mut round = 0;
        while stop.is_none() && round < settings.rounds {
            if is_perfect(search.result.best_score) {
                stop = Some(StopReason::Perfect {
                    score: search.result.best_score,
                });
                break;
            }
            round += 1;
            if let Some(reason) = context.stop_reason() {
                stop = Some(reason);
                break;
            }
            // As the reference: the whole train split in order when the minibatch would
            // cover it (the RNG is then not used), else a sample.
            let batch = if settings.minibatch_size >= train.len() {
                train.to_vec()
            } else {
                rng.sample(train, settings.minibatch_size)
            };
            if let ControlFlow::Break(reason) =
                search.round(self, round, &batch, val, &goal, limits).await
            {
                stop = Some(reason);
            } else if search.out_of_patience() {
                stop = Some(StopReason::Patience {
                    patience: settings.patience,
                });
            }
        }
        let stop = stop.unwrap_or(StopReason::RoundsDone {
            rounds: settings.rounds,
        });
        context.emit(Event::Stopped {
            reason: stop.code(),
            detail: stop.detail(),
        });
        let mut result = search.result;
        result.stop = Some(stop);
        result
    }
}
