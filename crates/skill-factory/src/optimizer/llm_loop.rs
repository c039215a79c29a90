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
//! * every proposal, not only the round's best, is kept in the run folder, with its parent in
//!   the events (`lineage`).

use std::collections::{HashMap, VecDeque};
use std::ops::ControlFlow;
use std::sync::Arc;

use async_trait::async_trait;
use skill_factory_core::{Skill, Task};
use skill_factory_llm::ChatModel;
use skill_factory_pycompat::random::Random;

use super::component::Components;
use super::context::{RunContext, identity};
use super::event::Event;
use super::gate::Side;
use super::plan::{LlmLoopSettings, SharedSettings};
use super::progress::{self, Progress, stopping};
use super::reflection::{REJECTED_SHOWN, Reflection, RejectedEdit, body_limits, note_for};
use super::round::{self, Ask, Part, Triage, Validated};
use super::{CandidateRecord, OptimizationResult, Optimizer, StopReason};
use crate::config::OptimizerKind;

/// The history note of a round whose proposals were all unusable (the reference's words).
pub const NO_VALID_PROPOSAL: &str = "no valid proposal from optimizer LLM";

/// The history note of a round whose proposals all equal the best skill (the reference's).
pub const IDENTICAL_PROPOSAL: &str = "proposal identical to current skill";

pub use super::progress::SEED_NOTE;

pub use super::progress::PERFECT_MINIBATCH;

/// The `llm_loop` optimizer.
pub struct LlmLoop {
    client: Arc<dyn ChatModel>,
    shared: SharedSettings,
    settings: LlmLoopSettings,
}

impl LlmLoop {
    /// An optimizer proposing edits with `client`.
    pub fn new(
        client: Arc<dyn ChatModel>,
        shared: SharedSettings,
        settings: LlmLoopSettings,
    ) -> Self {
        LlmLoop {
            client,
            shared,
            settings,
        }
    }
}

/// The search's state between rounds.
struct Search<'a> {
    context: &'a RunContext,
    shared: &'a SharedSettings,
    settings: &'a LlmLoopSettings,
    progress: Progress,
    next_id: usize,
    rejected: VecDeque<RejectedEdit>,
    /// Skills scored on validation in this run ([`identity`]): the first candidate of each.
    scored: HashMap<String, usize>,
}

impl Search<'_> {
    fn remember(&mut self, edit: RejectedEdit) {
        self.rejected.push_front(edit);
        self.rejected.truncate(REJECTED_SHOWN);
    }

    fn out_of_patience(&self) -> bool {
        self.progress.rounds_without_improvement >= self.shared.patience
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
        let (parent_id, best) = self.progress.parent();
        let train = match self.progress.minibatch(context, round, batch).await {
            ControlFlow::Break(reason) => return ControlFlow::Break(reason),
            ControlFlow::Continue(None) => return ControlFlow::Continue(()),
            ControlFlow::Continue(Some(train)) => train,
        };
        let rejected: Vec<RejectedEdit> = self.rejected.iter().cloned().collect();
        // A trigger run shows the agent the description alone: that is what is rewritten.
        let components = Components::of(&best);
        let (text, component, part) = if context.harness.shows_body() {
            (&best.body, None, Part::Body)
        } else {
            (
                &best.description,
                Some(("description", best.body.as_str())),
                Part::Component(&components, 0),
            )
        };
        let prompt = Reflection {
            goal,
            body: text,
            batch: &train.evaluation,
            tasks: batch,
            rejected: &rejected,
            limits,
            component,
            one_part: false,
            protected: context.protected.names(),
        }
        .prompt_for(self.settings.reflection);
        let ask = Ask {
            prompt: &prompt,
            count: self.settings.max_edits_per_round,
            style: self.settings.reflection,
            limits,
            part,
        };
        let parent = (parent_id, &best);
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
        let mut triage = round::triage(round, &candidates);
        for edit in &triage.rejected {
            self.remember(edit.clone());
        }
        for new in &triage.new {
            context.emit(Event::Lineage {
                round,
                candidate: new.id,
                parents: vec![parent_id],
                component: component.map_or("body", |(name, _)| name).to_string(),
                operation: "rewrite".into(),
            });
        }
        if let Some(note) = nothing_to_score(&triage) {
            self.progress.keep_best(context, round, train.score(), note);
            return ControlFlow::Continue(());
        }
        let parent = Side {
            id: parent_id,
            skill: &best,
        };
        let sides: Vec<Side<'_>> = triage
            .new
            .iter()
            .map(|new| Side {
                id: new.id,
                skill: &new.skill,
            })
            .collect();
        let verdicts = round::screen(context, round, batch, parent, &sides).await?;
        let mut screened = Vec::new();
        for (new, verdict) in std::mem::take(&mut triage.new).into_iter().zip(verdicts) {
            match verdict {
                None => triage.new.push(new),
                Some(reason) => screened.push(RejectedEdit {
                    round,
                    candidate: new.id,
                    rationale: new.rationale,
                    reason,
                }),
            }
        }
        if let Some(first) = screened.first().filter(|_| triage.new.is_empty()) {
            let note = first.reason.clone();
            for edit in screened {
                self.remember(edit);
            }
            self.progress.keep_best(context, round, train.score(), note);
            return ControlFlow::Continue(());
        }
        for edit in screened {
            self.remember(edit);
        }
        let validated = round::validate(
            context,
            (round, self.shared.min_delta),
            &triage,
            val,
            &mut self.scored,
            (
                self.progress.incumbent(),
                &self.progress.best_samples.clone(),
            ),
        )
        .await;
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

    /// Keeps the round's pick when its gate kept it ([`round::Validated::best`]), and
    /// remembers every other scored edit with why it was not kept.
    fn accept(
        &mut self,
        round: usize,
        train_score: f64,
        triage: &Triage,
        validated: &Validated,
        winner: usize,
    ) {
        let best_score = self.progress.result.best_score;
        let min_delta = self.shared.min_delta;
        let winner_gate = &validated.gates[winner];
        let winner_score = validated.score(winner);
        let accepted = winner_gate.accepted();
        let gate = if min_delta > 0.0 {
            format!(" by more than min_delta {min_delta}")
        } else {
            String::new()
        };
        for (position, new) in triage.new.iter().enumerate() {
            let gated = &validated.gates[position];
            let Some(comparison) = &gated.comparison else {
                continue;
            };
            if position == winner && accepted {
                continue;
            }
            let score = validated.score(position);
            // An edit that beat the best but lost to a better one of the same round must not
            // be remembered as a failure to improve: the next prompt would mislead.
            let reason = match (accepted && comparison.accepted, validated.noise.is_noisy()) {
                (true, false) => format!(
                    "validation score {score:.3} beat the best {best_score:.3}, but another edit of the same round scored higher ({winner_score:.3}) and was kept"
                ),
                (true, true) => format!(
                    "its paired gain {:+.3} over the best cleared the gate, but another edit of the same round gained more ({:+.3}) and was kept",
                    comparison.difference.mean,
                    winner_gate
                        .comparison
                        .as_ref()
                        .map_or(0.0, |c| c.difference.mean)
                ),
                (false, false) => format!(
                    "validation score {score:.3} did not beat the best {best_score:.3}{gate}"
                ),
                (false, true) => comparison.reason.clone(),
            };
            self.remember(RejectedEdit {
                round,
                candidate: new.id,
                rationale: new.rationale.clone(),
                reason,
            });
        }
        for gated in &validated.gates {
            self.progress.learn(gated, false);
        }
        if accepted {
            self.progress.learn(winner_gate, true);
        }
        let winner_side = (triage.new[winner].id, &validated.skills[winner]);
        self.progress
            .settle_draft(winner_gate, winner_side, self.shared.min_delta);
        let estimate = winner_gate.estimate(&validated.noise);
        let record = CandidateRecord {
            iteration: round,
            skill: validated.skills[winner].clone(),
            train_score,
            val_score: winner_score,
            accepted,
            candidate: Some(triage.new[winner].id),
            note: note_for(&triage.new[winner].rationale),
            interval: Some([estimate.low, estimate.high]),
            comparison: winner_gate.comparison.clone(),
        };
        self.progress
            .record(self.context, round, record, Some(triage.new[winner].id));
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

#[async_trait]
impl Optimizer for LlmLoop {
    fn name(&self) -> &str {
        OptimizerKind::LlmLoop.name()
    }

    async fn optimize(
        &self,
        seed: &Skill,
        train: &[Task],
        val: &[Task],
        context: &RunContext,
    ) -> OptimizationResult {
        let (shared, settings) = (&self.shared, &self.settings);
        let limits = body_limits(&seed.body);
        let goal = progress::goal(&shared.goal, seed, context.harness.shows_body());
        let metadata = progress::metadata(None, val.len());
        let start = progress::start(context, self.name(), seed, val, metadata).await;
        let progress = Progress::new(&start);
        let mut stop = start.stop;
        let mut search = Search {
            context,
            shared,
            settings,
            progress,
            next_id: 1,
            rejected: VecDeque::new(),
            scored: HashMap::from([(identity(seed), 0)]),
        };
        let mut rng = Random::new(shared.seed);
        let mut round = 0;
        while stop.is_none() && round < settings.rounds {
            if let Some(reason) = search.progress.why_stop(context) {
                stop = Some(reason);
                break;
            }
            round += 1;
            // As the reference: the whole train split in order when the minibatch would
            // cover it (the RNG is then not used), else a sample.
            let batch = if shared.minibatch_size >= train.len() {
                train.to_vec()
            } else {
                rng.sample(train, shared.minibatch_size)
            };
            if let ControlFlow::Break(reason) =
                search.round(self, round, &batch, val, &goal, limits).await
            {
                stop = Some(reason);
            } else if search.out_of_patience() {
                stop = Some(StopReason::Patience {
                    patience: shared.patience,
                });
            }
        }
        let stop = stop.unwrap_or(StopReason::RoundsDone {
            rounds: settings.rounds,
        });
        progress::finish(context, search.progress.result, stop)
    }
}
