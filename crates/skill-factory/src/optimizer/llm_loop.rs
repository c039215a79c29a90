//! `llm_loop`: the reference tool's validation-gated reflective loop (§7.1 of the spec).
//!
//! The seed is scored on the whole validation split (the baseline). Each round samples a
//! train minibatch with CPython's `random.Random(optimizer.seed).sample` (so the minibatches
//! are the reference's), scores the best skill on it, shows the optimizer model the results
//! and asks it for `max_edits_per_round` rewrites, scores every distinct rewrite on the whole
//! validation split, and accepts the round's best only if it beats the best score by more
//! than `min_delta`. The search stops after `rounds` rounds, or after `patience` rounds in a
//! row without improvement, or when the budget or a Ctrl-C says so.
//!
//! What differs from the reference, on purpose:
//! * the round's proposals are requested concurrently, and the validations of its distinct
//!   proposals run concurrently, all under the run's one in-flight cap; every decision is
//!   taken in proposal order, so the result does not depend on timing;
//! * a body proposed twice is scored once, and results of the same body on the same task are
//!   reused across rounds, so the run makes at most the reference's number of model calls;
//! * the reflection prompt lists the edits already rejected in this run, and why;
//! * a truncated, empty, untagged or malformed proposal is rejected with a reason (in the
//!   round's note and the events) and never evaluated;
//! * every proposal, not only the round's best, is kept in the run folder.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::future::join_all;
use serde_json::{Map, Value};
use skill_factory_core::pyrandom::PyRandom;
use skill_factory_core::{Skill, Task};
use skill_factory_llm::{ChatModel, ChatResponse, LlmError};

use super::context::{RunContext, Scored};
use super::event::Event;
use super::reflection::{
    REJECTED_SHOWN, Reflection, Rejected, RejectedEdit, body_limits, default_goal, keeps_the_spec,
    note_for, proposal_request, proposal_temperature, read_proposal,
};
use super::{CandidateRecord, OptimizationResult, Optimizer, StopReason};
use crate::config::{OptimizerConfig, ReflectionStyle};
use crate::metric::text::py_strip;

/// The history note of a round whose proposals were all unusable (the reference's words).
pub const NO_VALID_PROPOSAL: &str = "no valid proposal from optimizer LLM";

/// The history note of a round whose proposals all equal the best skill (the reference's).
pub const IDENTICAL_PROPOSAL: &str = "proposal identical to current skill";

/// The seed's history note (the reference's).
pub const SEED_NOTE: &str = "seed (baseline)";

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
            max_edits_per_round: config.max_edits_per_round.max(1),
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
    /// An optimizer proposing edits with `client`.
    pub fn new(client: Arc<dyn ChatModel>, settings: LlmLoopSettings) -> Self {
        LlmLoop { client, settings }
    }

    /// Asks for `count` proposals at once, each under a permit of the shared cap. A request
    /// is not sent once the run is stopping (`None`).
    async fn propose(
        &self,
        context: &RunContext,
        prompt: &str,
        count: usize,
    ) -> Vec<Option<Result<ChatResponse, LlmError>>> {
        join_all((0..count).map(|index| async move {
            let _permit = context.permits.acquire().await.ok();
            if context.stop_reason().is_some() {
                return None;
            }
            let request = proposal_request(prompt, index, self.settings.reflection);
            Some(self.client.chat(&request).await)
        }))
        .await
    }
}

/// One proposal of a round, after checking.
struct Candidate {
    id: usize,
    outcome: Result<super::reflection::Proposal, Rejected>,
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
    /// Bodies scored on validation in this run: their candidate and score.
    scored: HashMap<String, (usize, f64)>,
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

    fn out_of_patience(&self) -> bool {
        self.rounds_without_improvement >= self.settings.patience
    }

    /// Runs one round; `Err` carries the reason to stop.
    async fn round(
        &mut self,
        optimizer: &LlmLoop,
        round: usize,
        batch: &[Task],
        val: &[Task],
        goal: &str,
        limits: (usize, usize),
    ) -> Result<(), StopReason> {
        let context = self.context;
        let best = self.result.best_skill.clone();
        let best_score = self.result.best_score;
        context.emit(Event::RoundStarted {
            round,
            minibatch: batch.iter().map(|t| t.id.clone()).collect(),
        });
        let train = context
            .evaluate(&best, batch, round, self.best_id, "train")
            .await;
        if !train.complete {
            return Err(stopping(context));
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
        let answers = optimizer
            .propose(context, &prompt, self.settings.max_edits_per_round)
            .await;
        let mut candidates = Vec::with_capacity(answers.len());
        for (index, answer) in answers.into_iter().enumerate() {
            let id = self.next_id;
            self.next_id += 1;
            let (outcome, raw, usage) = match &answer {
                Some(answer) => (
                    read_proposal(answer, limits, self.settings.reflection)
                        .and_then(|proposal| keeps_the_spec(proposal, &context.skill_files)),
                    answer
                        .as_ref()
                        .map(|r| r.text.clone())
                        .unwrap_or_else(|e| e.to_string()),
                    answer.as_ref().map(|r| r.usage).unwrap_or_default(),
                ),
                None => (
                    Err(Rejected {
                        reason: "not requested: the run was stopping".to_string(),
                        rationale: String::new(),
                    }),
                    String::new(),
                    Default::default(),
                ),
            };
            let (valid, reason, rationale, body_chars, document) = match &outcome {
                Ok(proposal) => (
                    true,
                    None,
                    proposal.rationale.clone(),
                    proposal.body.chars().count(),
                    best.with_body(proposal.body.clone()).to_markdown(),
                ),
                Err(rejected) => (
                    false,
                    Some(rejected.reason.clone()),
                    rejected.rationale.clone(),
                    0,
                    raw,
                ),
            };
            context.emit(Event::CandidateProposed {
                round,
                candidate: id,
                index,
                parent: self.best_id,
                temperature: proposal_temperature(index),
                valid,
                reason,
                warnings: outcome
                    .as_ref()
                    .map(|proposal| proposal.warnings.clone())
                    .unwrap_or_default(),
                rationale,
                body_chars,
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                document,
            });
            candidates.push(Candidate { id, outcome });
        }
        if context.stop_reason().is_some() {
            return Err(stopping(context));
        }

        // Sort the proposals: unusable, identical to the best, a repeat, or to be scored.
        let mut problems: Vec<String> = Vec::new();
        let mut to_score: Vec<(usize, String, String)> = Vec::new();
        let mut repeats: Vec<(usize, usize)> = Vec::new();
        let mut any_valid = false;
        for candidate in &candidates {
            match &candidate.outcome {
                Err(rejected) => {
                    if !problems.contains(&rejected.reason) {
                        problems.push(rejected.reason.clone());
                    }
                    self.remember(RejectedEdit {
                        round,
                        candidate: candidate.id,
                        rationale: rejected.rationale.clone(),
                        reason: rejected.reason.clone(),
                    });
                }
                Ok(proposal) => {
                    any_valid = true;
                    if py_strip(&proposal.body) == py_strip(&best.body) {
                        self.remember(RejectedEdit {
                            round,
                            candidate: candidate.id,
                            rationale: proposal.rationale.clone(),
                            reason: "identical to the current skill".to_string(),
                        });
                    } else if let Some((first, _, _)) =
                        to_score.iter().find(|(_, body, _)| *body == proposal.body)
                    {
                        repeats.push((candidate.id, *first));
                    } else {
                        to_score.push((
                            candidate.id,
                            proposal.body.clone(),
                            proposal.rationale.clone(),
                        ));
                    }
                }
            }
        }
        // A round with nothing new to score records why and keeps the best skill.
        let nothing_to_score = if !any_valid {
            Some(format!("{NO_VALID_PROPOSAL} ({})", problems.join("; ")))
        } else if to_score.is_empty() {
            Some(IDENTICAL_PROPOSAL.to_string())
        } else {
            None
        };
        if let Some(note) = nothing_to_score {
            let record = CandidateRecord {
                iteration: round,
                skill: best,
                train_score: train.score(),
                val_score: best_score,
                accepted: false,
                note,
            };
            self.record(round, record, None);
            return Ok(());
        }

        let skills: Vec<Skill> = to_score
            .iter()
            .map(|(_, body, _)| best.with_body(body.clone()))
            .collect();
        let scores: Vec<Scored> = join_all(
            to_score
                .iter()
                .zip(&skills)
                .map(|((id, _, _), skill)| context.evaluate(skill, val, round, *id, "val")),
        )
        .await;
        let mut round_best: Option<usize> = None;
        for (position, ((id, body, _), scored)) in to_score.iter().zip(&scores).enumerate() {
            if !scored.complete {
                continue;
            }
            let same_as = self
                .scored
                .get(body)
                .map(|(first, _)| *first)
                .filter(|first| first != id);
            context.emit(Event::CandidateScored {
                round,
                candidate: *id,
                val_score: scored.score(),
                same_as,
            });
            self.scored
                .entry(body.clone())
                .or_insert((*id, scored.score()));
            if round_best.is_none_or(|b| scored.score() > scores[b].score()) {
                round_best = Some(position);
            }
        }
        for (id, first) in &repeats {
            if let Some(position) = to_score.iter().position(|(c, _, _)| c == first)
                && scores[position].complete
            {
                context.emit(Event::CandidateScored {
                    round,
                    candidate: *id,
                    val_score: scores[position].score(),
                    same_as: Some(*first),
                });
            }
        }
        let Some(winner) = round_best else {
            return Err(stopping(context));
        };
        let winner_score = scores[winner].score();
        let accepted = winner_score > best_score + self.settings.min_delta;
        let gate = if self.settings.min_delta > 0.0 {
            format!(" by more than min_delta {}", self.settings.min_delta)
        } else {
            String::new()
        };
        for (position, (id, _, rationale)) in to_score.iter().enumerate() {
            if (position == winner && accepted) || !scores[position].complete {
                continue;
            }
            let score = scores[position].score();
            // An edit that beat the best but lost to a better one of the same round must not
            // be remembered as a failure to improve: the next prompt would mislead.
            let reason = if accepted && score > best_score + self.settings.min_delta {
                format!(
                    "validation score {score:.3} beat the best {best_score:.3}, but another edit of the same round scored higher ({winner_score:.3}) and was kept"
                )
            } else {
                format!("validation score {score:.3} did not beat the best {best_score:.3}{gate}")
            };
            self.remember(RejectedEdit {
                round,
                candidate: *id,
                rationale: rationale.clone(),
                reason,
            });
        }
        let (winner_id, _, rationale) = &to_score[winner];
        let record = CandidateRecord {
            iteration: round,
            skill: skills[winner].clone(),
            train_score: train.score(),
            val_score: winner_score,
            accepted,
            note: note_for(rationale),
        };
        self.record(round, record, Some(*winner_id));
        if scores.iter().any(|s| !s.complete) {
            return Err(stopping(context));
        }
        Ok(())
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
            scored: HashMap::from([(seed.body.clone(), (0, baseline.score()))]),
        };
        context.emit(Event::CandidateScored {
            round: 0,
            candidate: 0,
            val_score: baseline.score(),
            same_as: None,
        });
        context.events.checkpoint(&search.result);
        let mut stop = if baseline.complete {
            None
        } else {
            Some(stopping(context))
        };
        let mut rng = PyRandom::new(settings.seed);
        let mut round = 0;
        while stop.is_none() && round < settings.rounds {
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
            if let Err(reason) = search.round(self, round, &batch, val, &goal, limits).await {
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
