//! What every optimizer does around its own search: scoring the seed into a result (the
//! baseline), recording each round's decision in the history and the events, and ending with
//! the reason. `llm_loop`, `gepa`, `skillopt` and the bridge all start and end here, so their
//! run folders, reports and events have one shape.

use std::ops::ControlFlow;

use serde_json::{Map, Value};
use skill_factory_core::{Skill, Task};

use super::context::{RunContext, Scored};
use super::event::Event;
use super::gate::{Gated, Side};
use super::reflection::default_goal;
use super::{CandidateRecord, OptimizationResult, StopReason, is_perfect};
use skill_factory_pycompat::repr::repr_str;

/// The seed's history note (the reference's).
pub const SEED_NOTE: &str = "seed (baseline)";

/// The history note of a round whose minibatch the best skill already aced: the optimizer
/// model is not asked (the reference asks it anyway).
pub const PERFECT_MINIBATCH: &str =
    "minibatch already scores the maximum: nothing to reflect on, no proposal asked";

/// The goal shown to the optimizer model: the configured one, or the default sentence (for a
/// run that shows the agent no body, a trigger run, the description's own).
pub fn goal(configured: &str, seed: &Skill, body_shown: bool) -> String {
    match (configured.is_empty(), body_shown) {
        (false, _) => configured.to_string(),
        (true, true) => default_goal(&seed.name),
        (true, false) => format!(
            "Rewrite the description of the skill {} so that agents load the skill for the requests it serves and for no others.",
            repr_str(&seed.name)
        ),
    }
}

/// The metadata every optimizer starts with (`backend` for the ones the reference tool
/// wrapped): `rounds_run` 0 and the validation split's size.
pub fn metadata(backend: Option<&str>, val: usize) -> Map<String, Value> {
    let mut metadata = Map::new();
    if let Some(backend) = backend {
        metadata.insert("backend".into(), Value::from(backend));
    }
    metadata.insert("rounds_run".into(), Value::from(0));
    metadata.insert("valset_size".into(), Value::from(val));
    metadata
}

/// Why the run is stopping, once a step saw that it is.
pub fn stopping(context: &RunContext) -> StopReason {
    context.stop_reason().unwrap_or(StopReason::Cancelled)
}

/// A search after its baseline.
pub struct Start {
    /// The result: the seed as the best skill and as the first history record.
    pub result: OptimizationResult,
    /// The seed's first sample on the validation split, task by task.
    pub baseline: Scored,
    /// The seed's validation scores by task, one per sample (`noise.samples` of each).
    pub samples: Vec<Vec<f64>>,
    /// Set when the run cannot go on: it was stopped during the baseline, or no rollout of it
    /// reached the target.
    pub stop: Option<StopReason>,
}

/// Scores `seed` on `val` (`noise.samples` samples of each task) and starts the result of
/// optimizer `name` with `metadata`; emits the seed's score and writes a checkpoint. When
/// repeated samples of a task disagree in a run whose regime was not set, the run is noisy
/// from then on ([`RunContext::found_noisy`]).
pub async fn start(
    context: &RunContext,
    name: &str,
    seed: &Skill,
    val: &[Task],
    metadata: Map<String, Value>,
) -> Start {
    let baseline = context.evaluate(seed, val, 0, 0, "val").await;
    let mut samples: Vec<Vec<f64>> = baseline
        .evaluation
        .items
        .iter()
        .map(|item| vec![item.score()])
        .collect();
    let more = 1..context.noise().samples;
    let complete = if baseline.complete && !more.is_empty() {
        match context.sample_scores(seed, val, more, (0, "val")).await {
            Some(more) => {
                for (task, drawn) in samples.iter_mut().zip(more) {
                    task.extend(drawn);
                }
                true
            }
            None => false,
        }
    } else {
        baseline.complete
    };
    if let Some(reason) = disagreement(&samples) {
        context.found_noisy(reason);
    }
    let noise = context.noise();
    let estimate = noise.estimate(&samples, &skill_factory_core::task::weights(val));
    let score = estimate.mean;
    let interval = Some([estimate.low, estimate.high]);
    let result = OptimizationResult {
        optimizer: name.to_string(),
        best_skill: seed.clone(),
        baseline_score: score,
        best_score: score,
        best_candidate: 0,
        history: vec![CandidateRecord {
            iteration: 0,
            skill: seed.clone(),
            train_score: score,
            val_score: score,
            accepted: true,
            candidate: Some(0),
            note: SEED_NOTE.to_string(),
            interval,
            comparison: None,
        }],
        metadata,
        stop: None,
    };
    context.emit(Event::CandidateScored {
        round: 0,
        candidate: 0,
        val_score: score,
        interval,
        same_as: None,
    });
    context.events.checkpoint(&result);
    let stop = if complete {
        baseline.failure(|| "the baseline (the seed on the validation split)".to_string())
    } else {
        Some(stopping(context))
    };
    Start {
        result,
        baseline,
        samples,
        stop,
    }
}

/// Why repeated samples show the rollouts vary: `repeated samples of the seed disagreed on
/// 3 of 20 validation tasks`; `None` when every task's samples agree (or none has two).
fn disagreement(samples: &[Vec<f64>]) -> Option<String> {
    let repeated = samples.iter().filter(|s| s.len() >= 2).count();
    let differing = samples
        .iter()
        .filter(|s| s.iter().any(|x| (x - s[0]).abs() > 1e-9))
        .count();
    (differing > 0).then(|| {
        format!(
            "repeated samples of the seed disagreed on {differing} of {repeated} validation tasks"
        )
    })
}

/// Ends a search: emits why it stopped and records the reason, and the rollouts it scored
/// (`metric_calls`), in the result.
pub fn finish(
    context: &RunContext,
    mut result: OptimizationResult,
    stop: StopReason,
) -> OptimizationResult {
    result
        .metadata
        .insert("metric_calls".into(), Value::from(context.metric_calls()));
    context.emit(Event::Stopped {
        reason: stop.code().into(),
        detail: stop.detail(),
    });
    result.stop = Some(stop);
    result
}

/// The state of a round-based search between rounds: the result so far, the best
/// candidate's number, its validation scores and the rounds in a row without improvement.
pub struct Progress {
    /// The result so far.
    pub result: OptimizationResult,
    /// The best skill's candidate number.
    pub best_id: usize,
    /// The best skill's validation scores by task, one per sample drawn so far.
    pub best_samples: Vec<Vec<f64>>,
    /// In a noisy run, an edit whose gate found a gain it could not confirm (nor refute):
    /// the next round reflects on it instead of the best, so the next edit stacks on it and
    /// the two gains are tested together, against the best, as one. Never the best itself.
    pub draft: Option<(usize, Skill)>,
    /// Rounds in a row whose decision kept the best.
    pub rounds_without_improvement: usize,
}

impl Progress {
    /// The progress of a search that has only scored its seed.
    pub fn new(start: &Start) -> Progress {
        Progress {
            result: start.result.clone(),
            best_id: 0,
            best_samples: start.samples.clone(),
            draft: None,
            rounds_without_improvement: 0,
        }
    }

    /// What the next round reflects on: the draft when there is one, else the best skill,
    /// with its candidate number.
    pub fn parent(&self) -> (usize, Skill) {
        self.draft
            .clone()
            .unwrap_or_else(|| (self.best_id, self.result.best_skill.clone()))
    }

    /// Keeps `skill` (candidate `id`) as the draft when its gate, `gated`, was decided
    /// without keeping it yet saw a gain above `min_delta`; clears the draft otherwise.
    pub fn settle_draft(&mut self, gated: &Gated, (id, skill): (usize, &Skill), min_delta: f64) {
        self.draft = gated
            .comparison
            .as_ref()
            .filter(|c| !c.accepted && c.regime == crate::noise::Regime::Noisy)
            .filter(|c| c.difference.mean > min_delta)
            .map(|_| (id, skill.clone()));
    }

    /// The best skill as a gate's incumbent.
    pub fn incumbent(&self) -> Side<'_> {
        Side {
            id: self.best_id,
            skill: &self.result.best_skill,
        }
    }

    /// Keeps what a gate learnt: the challenger's scores when it was `kept` (it becomes the
    /// best), else the samples the gate added to the best's.
    pub fn learn(&mut self, gated: &Gated, kept: bool) {
        if kept {
            self.best_samples = gated.challenger.clone();
            return;
        }
        for (mine, theirs) in self.best_samples.iter_mut().zip(&gated.incumbent) {
            if theirs.len() > mine.len() {
                *mine = theirs.clone();
            }
        }
    }

    /// Why the search must stop before its next round, if it must: the best already scores
    /// the metric's maximum, the run is cancelled or out of budget, or the search has spent
    /// its metric calls.
    pub fn why_stop(&self, context: &RunContext) -> Option<StopReason> {
        if is_perfect(self.result.best_score) {
            return Some(StopReason::Perfect {
                score: self.result.best_score,
            });
        }
        context
            .stop_reason()
            .or_else(|| context.metric_calls_spent(context.max_metric_calls))
    }

    /// Starts round `round`: announces it and scores the parent ([`Progress::parent`]: the
    /// best skill, or the draft) on `batch`. Breaks when the run stopped or no rollout reached
    /// the target; `None` (the round recorded as kept) when the parent already aces the
    /// minibatch, as there is no failure to reflect on and a rewrite could only be a guess.
    pub async fn minibatch(
        &mut self,
        context: &RunContext,
        round: usize,
        batch: &[Task],
    ) -> ControlFlow<StopReason, Option<Scored>> {
        context.emit(Event::RoundStarted {
            round,
            minibatch: batch.iter().map(|t| t.id.clone()).collect(),
        });
        let (id, parent) = self.parent();
        let train = context.evaluate(&parent, batch, round, id, "train").await;
        if !train.complete {
            return ControlFlow::Break(stopping(context));
        }
        if let Some(reason) = train.failure(|| format!("round {round}'s minibatch")) {
            return ControlFlow::Break(reason);
        }
        if is_perfect(train.score()) {
            self.keep_best(context, round, train.score(), PERFECT_MINIBATCH.to_string());
            return ControlFlow::Continue(None);
        }
        ControlFlow::Continue(Some(train))
    }

    /// Records a decision on `candidate` (none when nothing new was scored): the event, the
    /// new best when accepted, and the history. `gepa` decides several times a step.
    pub fn decide(
        &mut self,
        context: &RunContext,
        round: usize,
        record: CandidateRecord,
        candidate: Option<usize>,
    ) {
        context.emit(Event::Decision {
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
    }

    /// The record of a decision that kept the best skill, for the reason in `note`.
    pub fn kept(&self, round: usize, train_score: f64, note: String) -> CandidateRecord {
        CandidateRecord {
            iteration: round,
            skill: self.result.best_skill.clone(),
            train_score,
            val_score: self.result.best_score,
            accepted: false,
            candidate: None,
            note,
            interval: None,
            comparison: None,
        }
    }

    /// Records the decision of round `round` ([`Progress::decide`]), then the end of the
    /// round: `rounds_run`, the event and a checkpoint.
    pub fn record(
        &mut self,
        context: &RunContext,
        round: usize,
        record: CandidateRecord,
        candidate: Option<usize>,
    ) {
        self.decide(context, round, record, candidate);
        self.result
            .metadata
            .insert("rounds_run".into(), Value::from(round));
        context.emit(Event::RoundFinished {
            round,
            best_score: self.result.best_score,
            rounds_without_improvement: self.rounds_without_improvement,
        });
        context.events.checkpoint(&self.result);
    }

    /// Records a round that scored no new skill: the best stays, for the reason in `note`.
    pub fn keep_best(
        &mut self,
        context: &RunContext,
        round: usize,
        train_score: f64,
        note: String,
    ) {
        let record = self.kept(round, train_score, note);
        self.record(context, round, record, None);
    }
}
