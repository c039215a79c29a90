//! `skillopt`: bounded edit patches instead of rewrites (the idea of Microsoft SkillOpt,
//! written from its description, never from its source). With `optimizer.params.command`
//! set, the reference's bridge to an external command runs instead ([`super::bridge`]).
//!
//! Each round scores the best skill on the next epoch-shuffled train minibatch, then asks the
//! optimizer model, at once, for edits from two passes over it: a failure pass (the rollouts
//! that scored below the maximum, worst first, with their feedback) and, when some rollouts
//! scored the maximum, a success pass (what made those right, as a general rule the skill
//! does not state yet). A reply is a list of edit patches ([`super::patch`]: `append`,
//! `insert_after`, `replace`, `delete`, each quoting its exact target text). At most L edits
//! are used per round, failure edits first, L decaying like a learning rate from
//! `max_patch_edits` to `min_patch_edits` over the rounds (cosine). An edit whose target is
//! missing or ambiguous, that touches a `protected` section, or that changes nothing is
//! refused with its reason; the others make the candidate, which is kept only when it
//! strictly beats the best on validation (by more than `min_delta`). Refused and rejected
//! edits are shown to later rounds as negative examples. The search stops after `rounds`
//! rounds, `patience` rounds in a row without improvement, at the metric's maximum, when
//! `max_metric_calls` (if set) is spent, or when the run's budget or a Ctrl-C says so.

use std::collections::VecDeque;
use std::f64::consts::PI;
use std::ops::ControlFlow;
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::future::join_all;
use serde_json::{Value, json};
use skill_factory_core::{Evaluation, Skill, Task};
use skill_factory_llm::{ChatModel, ChatRequest, ChatResponse, LlmError};
use skill_factory_pycompat::random::Random;

use super::component::changed;
use super::context::RunContext;
use super::event::Event;
use super::gate::{Gate, Side};
use super::minibatch::Epochs;
use super::patch::{self, EDITS_CLOSE, EDITS_OPEN, Edit};
use super::plan::{SharedSettings, SkillOptSettings};
use super::progress::{self, Progress, stopping};
use super::reflection::{
    PROPOSAL_MAX_TOKENS, REJECTED_SHOWN, Reflection, RejectedEdit, SYSTEM_PROMPT, body_limits,
    whole_text,
};
use super::round::{self, Candidate, Proposed};
use super::{CandidateRecord, OptimizationResult, Optimizer, StopReason, is_perfect};
use crate::config::OptimizerKind;

/// The most edits a success pass may propose: it confirms what works, it does not rewrite.
const SUCCESS_EDITS: usize = 1;

/// The edit limit of round `round` (1-based) of `rounds`: `max` at the first round, `min` at
/// the last, cosine in between (rounded to the nearest edit).
pub fn edit_limit(round: usize, rounds: usize, max: usize, min: usize) -> usize {
    if rounds <= 1 || max <= min {
        return max.max(min);
    }
    let progress = (round.saturating_sub(1)) as f64 / (rounds - 1) as f64;
    let span = (max - min) as f64;
    let limit = min as f64 + span * (1.0 + (PI * progress.min(1.0)).cos()) / 2.0;
    limit.round() as usize
}

/// The `skillopt` optimizer.
pub struct SkillOpt {
    client: Arc<dyn ChatModel>,
    shared: SharedSettings,
    settings: SkillOptSettings,
}

impl SkillOpt {
    /// The native `skillopt` search, asking `client` for edits; it never runs the bridge of
    /// `settings`.
    pub fn new(
        client: Arc<dyn ChatModel>,
        shared: SharedSettings,
        settings: SkillOptSettings,
    ) -> Self {
        SkillOpt {
            client,
            shared,
            settings,
        }
    }
}

/// Which pass a request is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    Failures,
    Successes,
}

/// Counts of edits, for the report and the benchmark.
#[derive(Default)]
struct Edits {
    proposed: usize,
    applied: usize,
    refused: usize,
    over_limit: usize,
    unreadable_replies: usize,
}

struct Search<'a> {
    context: &'a RunContext,
    shared: &'a SharedSettings,
    settings: &'a SkillOptSettings,
    client: &'a Arc<dyn ChatModel>,
    goal: String,
    progress: Progress,
    next_id: usize,
    rejected: VecDeque<RejectedEdit>,
    edits: Edits,
    lineage: Vec<Value>,
}

/// The text a round's edits apply to: the body, or (in a trigger run, whose agent is shown the
/// description alone) the description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edited {
    Body,
    Description,
}

impl Edited {
    fn name(self) -> &'static str {
        match self {
            Edited::Body => "body",
            Edited::Description => "description",
        }
    }

    fn text(self, skill: &Skill) -> &str {
        match self {
            Edited::Body => &skill.body,
            Edited::Description => &skill.description,
        }
    }

    /// `skill` with its edited text replaced.
    fn with(self, skill: &Skill, text: String) -> Skill {
        match self {
            Edited::Body => skill.with_body(text),
            Edited::Description => {
                let mut skill = skill.clone();
                skill.description = text.trim().to_string();
                skill
            }
        }
    }
}

impl Search<'_> {
    fn edited(&self) -> Edited {
        if self.context.harness.shows_body() {
            Edited::Body
        } else {
            Edited::Description
        }
    }

    fn remember(&mut self, edit: RejectedEdit) {
        self.rejected.push_front(edit);
        self.rejected.truncate(REJECTED_SHOWN);
    }

    /// The prompt of one pass: the goal, the current body, the protected sections, the pass's
    /// rollouts, the edits already refused or rejected, and the answer format.
    fn prompt(
        &self,
        pass: Pass,
        best: &Skill,
        batch: &Evaluation,
        tasks: &[Task],
        limit: usize,
    ) -> String {
        let reflection = Reflection {
            goal: &self.goal,
            body: &best.body,
            batch,
            tasks,
            rejected: &[],
            limits: body_limits(&best.body),
            component: None,
            one_part: false,
            protected: self.context.protected.names(),
        };
        let what = self.edited();
        let mut lines = vec![
            format!("GOAL: {}", self.goal),
            format!("CURRENT MEAN SCORE ON THIS BATCH: {:.3}", batch.score()),
            String::new(),
        ];
        if what == Edited::Description {
            lines.extend([
                "THE WHOLE SKILL BODY, FOR CONTEXT (it does not change):".to_string(),
                "<WHOLE_SKILL>".to_string(),
                best.body.trim().to_string(),
                "</WHOLE_SKILL>".to_string(),
                String::new(),
                "THE PART TO REWRITE: description".to_string(),
            ]);
        } else {
            lines.push("CURRENT SKILL BODY:".to_string());
        }
        lines.extend([
            "<CURRENT_SKILL_BODY>".to_string(),
            what.text(best).trim().to_string(),
            "</CURRENT_SKILL_BODY>".to_string(),
            String::new(),
        ]);
        let protected = &self.context.protected;
        if !protected.is_empty() {
            lines.push(format!(
                "PROTECTED SECTIONS (never edit text inside them): {}",
                protected.names().join(", ")
            ));
            lines.push(String::new());
        }
        let worst = batch.worst(batch.size());
        let (heading, items): (&str, Vec<_>) = match pass {
            Pass::Failures => (
                "ROLLOUTS THAT SCORED BELOW THE MAXIMUM, WORST FIRST:",
                worst
                    .into_iter()
                    .filter(|i| !is_perfect(i.score()))
                    .collect(),
            ),
            Pass::Successes => (
                "ROLLOUTS THAT SCORED THE MAXIMUM:",
                worst
                    .into_iter()
                    .filter(|i| is_perfect(i.score()))
                    .collect(),
            ),
        };
        lines.push(heading.to_string());
        for item in items {
            lines.extend(reflection.example(item));
        }
        if !self.rejected.is_empty() {
            lines.push(String::new());
            lines.push(
                "EDITS ALREADY TRIED AND NOT KEPT (most recent first; do not propose them again):"
                    .to_string(),
            );
            for edit in &self.rejected {
                lines.push(format!(
                    "- round {}, candidate {}: {} -> {}",
                    edit.round, edit.candidate, edit.rationale, edit.reason
                ));
            }
        }
        lines.push(String::new());
        lines.push(match pass {
            Pass::Failures => format!(
                "Propose at most {limit} edits to the skill {} that would have prevented these failures. Keep them general: no answers or details specific to the examples above.",
                what.name()
            ),
            Pass::Successes => format!(
                "Propose at most {limit} edit that states, as a general rule, what made these answers right, only if the skill does not say it yet; otherwise propose an empty list []."
            ),
        });
        if what == Edited::Description {
            lines.extend(
                "- Agents read the description alone to decide whether to load the skill: it says what the skill does and when to use it, in at most 1024 characters of plain text without angle brackets."
                    .lines()
                    .map(str::to_string),
            );
        }
        lines.extend([
            format!(
                "Each edit quotes its target text exactly as it appears in the skill {}.",
                what.name()
            ),
            String::new(),
            "Answer in exactly this format:".to_string(),
            "<RATIONALE>one or two sentences on what you changed and why</RATIONALE>".to_string(),
            EDITS_OPEN.to_string(),
            "[{\"op\": \"replace\", \"target\": \"exact text\", \"text\": \"new text\"},".to_string(),
            " {\"op\": \"insert_after\", \"target\": \"exact text\", \"text\": \"text for a new line after it\"},".to_string(),
            " {\"op\": \"append\", \"text\": \"text to add at the end\"},".to_string(),
            " {\"op\": \"delete\", \"target\": \"exact text to remove\"}]".to_string(),
            EDITS_CLOSE.to_string(),
        ]);
        if what == Edited::Description {
            lines.extend([
                String::new(),
                "Or, to rewrite the description whole, answer with the new description instead of the edits:".to_string(),
                "<RATIONALE>one or two sentences on what you changed and why</RATIONALE>".to_string(),
                "<NEW_SKILL_BODY>".to_string(),
                "the new description".to_string(),
                "</NEW_SKILL_BODY>".to_string(),
            ]);
        }
        lines.join("\n")
    }

    /// Runs one round; `Some` with the reason when the run must stop.
    async fn round(&mut self, round: usize, batch: &[Task], val: &[Task]) -> Option<StopReason> {
        let context = self.context;
        let (parent_id, best) = self.progress.parent();
        let train = match self.progress.minibatch(context, round, batch).await {
            ControlFlow::Break(reason) => return Some(reason),
            ControlFlow::Continue(None) => return None,
            ControlFlow::Continue(Some(train)) => train,
        };
        let limit = edit_limit(
            round,
            self.settings.rounds,
            self.settings.max_patch_edits,
            self.settings.min_patch_edits,
        );
        let mut passes = vec![(Pass::Failures, limit)];
        if train.evaluation.items.iter().any(|i| is_perfect(i.score())) {
            passes.push((Pass::Successes, SUCCESS_EDITS.min(limit)));
        }
        let prompts: Vec<String> = passes
            .iter()
            .map(|(pass, limit)| self.prompt(*pass, &best, &train.evaluation, batch, *limit))
            .collect();
        let client = self.client;
        let answers: Vec<Option<Result<ChatResponse, LlmError>>> =
            join_all(prompts.iter().map(|prompt| async move {
                let _permit = context.permits.acquire().await.ok();
                if context.stop_reason().is_some() {
                    return None;
                }
                let mut request = ChatRequest::single(
                    Some(SYSTEM_PROMPT.to_string()),
                    prompt,
                    0.2,
                    PROPOSAL_MAX_TOKENS,
                );
                request.stop = vec![EDITS_CLOSE.to_string()];
                Some(client.chat(&request).await)
            }))
            .await;
        if context.stop_reason().is_some() {
            return Some(stopping(context));
        }
        let id = self.next_id;
        self.next_id += 1;
        let mut edits: Vec<Edit> = Vec::new();
        let mut rationales = Vec::new();
        let mut problems = Vec::new();
        let mut unreachable = None;
        let mut reached = false;
        for ((pass, limit), answer) in passes.iter().zip(&answers) {
            let reply = match answer {
                Some(Ok(response)) => {
                    reached = true;
                    response.text.as_str()
                }
                Some(Err(error)) => {
                    if error.is_unreachable() {
                        unreachable.get_or_insert_with(|| error.to_string());
                    } else {
                        reached = true;
                    }
                    problems.push(format!("the optimizer call failed: {error}"));
                    continue;
                }
                None => continue,
            };
            // A description may also come whole, as a new text or a bare paragraph.
            let whole = (self.edited() == Edited::Description)
                .then(|| whole_text(reply))
                .flatten();
            match patch::parse(reply) {
                Err(_) if whole.is_some() => {
                    if let Some((text, rationale)) = whole {
                        edits.push(Edit {
                            op: patch::Op::Replace,
                            target: Some(best.description.clone()),
                            text: Some(text),
                        });
                        rationales.push(rationale);
                    }
                }
                Ok(patch) => {
                    self.edits.proposed += patch.edits.len();
                    let over = patch.edits.len().saturating_sub(*limit);
                    self.edits.over_limit += over;
                    if !patch.rationale.is_empty() {
                        rationales.push(patch.rationale);
                    }
                    edits.extend(patch.edits.into_iter().take(*limit));
                }
                // A success pass with nothing to add is an answer, not a failure.
                Err(_) if *pass == Pass::Successes && reply.contains("[]") => {}
                Err(reason) => {
                    self.edits.unreadable_replies += 1;
                    problems.push(reason.to_string());
                }
            }
        }
        if !reached && let Some(error) = unreachable {
            return Some(StopReason::OptimizerFailed { error });
        }
        edits.truncate(limit);
        let rationale = rationales.join(" ");
        let what = self.edited();
        let applied = patch::apply(what.text(&best), &edits, &context.protected);
        self.edits.applied += applied.applied.len();
        self.edits.refused += applied.rejected.len();
        for (index, reason) in &applied.rejected {
            self.remember(RejectedEdit {
                round,
                candidate: id,
                rationale: edits[*index].describe(),
                reason: format!("refused: {reason}"),
            });
        }
        let mut refusals: Vec<String> = applied
            .rejected
            .iter()
            .map(|(index, reason)| format!("edit {}: {reason}", index + 1))
            .collect();
        refusals.extend(problems);
        if applied.applied.is_empty() {
            let note = if refusals.is_empty() {
                "no edit proposed".to_string()
            } else {
                format!("no applicable edit ({})", refusals.join("; "))
            };
            self.progress.keep_best(context, round, train.score(), note);
            return None;
        }
        let proposed = Proposed {
            skill: what.with(&best, applied.body),
            rationale: rationale.clone(),
            warnings: refusals.clone(),
        };
        let checked = round::check(context, &best, proposed);
        let candidate = Candidate::new(id, checked, &best, answers[0].as_ref());
        round::emit_proposed(
            context,
            round,
            0,
            parent_id,
            &candidate,
            answers[0].as_ref(),
        );
        let described: Vec<String> = applied
            .applied
            .iter()
            .map(|&i| edits[i].describe())
            .collect();
        let skill = match candidate.outcome {
            Ok(proposed) if !candidate.unchanged => proposed.skill,
            Ok(_) => {
                self.progress.keep_best(
                    context,
                    round,
                    train.score(),
                    "the edits change nothing".to_string(),
                );
                return None;
            }
            Err(rejected) => {
                self.remember(RejectedEdit {
                    round,
                    candidate: id,
                    rationale: described.join("; "),
                    reason: rejected.reason.clone(),
                });
                self.progress
                    .keep_best(context, round, train.score(), rejected.reason);
                return None;
            }
        };
        let component = changed(&best, &skill).join(", ");
        self.context.emit(Event::Lineage {
            round,
            candidate: id,
            parents: vec![parent_id],
            component: component.clone(),
            operation: "patch".into(),
        });
        self.lineage.push(json!({
            "candidate": id,
            "parents": [parent_id],
            "component": component,
            "operation": "patch",
            "edits": described,
        }));
        let challenger = Side { id, skill: &skill };
        let parent = Side {
            id: parent_id,
            skill: &best,
        };
        let verdict = match round::screen(context, round, batch, parent, &[challenger]).await {
            ControlFlow::Break(reason) => return Some(reason),
            ControlFlow::Continue(mut verdicts) => verdicts.pop().flatten(),
        };
        if let Some(reason) = verdict {
            self.remember(RejectedEdit {
                round,
                candidate: id,
                rationale: described.join("; "),
                reason: reason.clone(),
            });
            self.progress
                .keep_best(context, round, train.score(), reason);
            return None;
        }
        let gate = Gate {
            context,
            tasks: val,
            split: "val",
            round,
            min_delta: self.shared.min_delta,
            rivals: 1,
        };
        let known = self.progress.best_samples.clone();
        let gated = gate
            .compare(
                self.progress.incumbent(),
                Side { id, skill: &skill },
                &known,
            )
            .await;
        let Some(comparison) = gated.comparison.clone() else {
            return Some(stopping(context));
        };
        if let Some(reason) = gated
            .first
            .as_ref()
            .and_then(|first| first.failure(|| format!("round {round}'s validation")))
        {
            return Some(reason);
        }
        let noise = context.noise();
        context.emit(round::scored_event(round, id, &gated, &noise, None));
        context.emit(Event::Compared {
            round,
            split: "val".into(),
            comparison: comparison.clone(),
        });
        let best_score = self.progress.result.best_score;
        let estimate = gated.estimate(&noise);
        let accepted = comparison.accepted;
        if !accepted {
            let reason = if noise.is_noisy() {
                comparison.reason.clone()
            } else {
                format!(
                    "validation score {:.3} did not beat the best {best_score:.3}",
                    estimate.mean
                )
            };
            self.remember(RejectedEdit {
                round,
                candidate: id,
                rationale: described.join("; "),
                reason,
            });
        }
        self.progress.learn(&gated, accepted);
        self.progress
            .settle_draft(&gated, (id, &skill), self.shared.min_delta);
        let note = if rationale.is_empty() {
            described.join("; ")
        } else {
            rationale
        };
        let record = CandidateRecord {
            iteration: round,
            skill,
            train_score: train.score(),
            val_score: estimate.mean,
            accepted,
            candidate: Some(id),
            note: super::reflection::note_for(&note),
            interval: Some([estimate.low, estimate.high]),
            comparison: Some(comparison),
        };
        self.progress.record(context, round, record, Some(id));
        None
    }
}

#[async_trait]
impl Optimizer for SkillOpt {
    fn name(&self) -> &str {
        OptimizerKind::SkillOpt.name()
    }

    async fn optimize(
        &self,
        seed: &Skill,
        train: &[Task],
        val: &[Task],
        context: &RunContext,
    ) -> OptimizationResult {
        let (shared, settings) = (&self.shared, &self.settings);
        let goal = progress::goal(&shared.goal, seed, context.harness.shows_body());
        let metadata = progress::metadata(Some(OptimizerKind::SkillOpt.name()), val.len());
        let start = progress::start(context, self.name(), seed, val, metadata).await;
        let progress = Progress::new(&start);
        let mut stop = start.stop;
        let mut search = Search {
            context,
            shared,
            settings,
            client: &self.client,
            goal,
            progress,
            next_id: 1,
            rejected: VecDeque::new(),
            edits: Edits::default(),
            lineage: Vec::new(),
        };
        let mut rng = Random::new(shared.seed);
        let mut epochs = Epochs::new(train.len(), &mut rng);
        let mut round = 0;
        while stop.is_none() && round < settings.rounds {
            if let Some(reason) = search.progress.why_stop(context) {
                stop = Some(reason);
                break;
            }
            round += 1;
            let batch: Vec<Task> = epochs
                .next(shared.minibatch_size, &mut rng)
                .into_iter()
                .map(|i| train[i].clone())
                .collect();
            stop = search.round(round, &batch, val).await;
            if stop.is_none() && search.progress.rounds_without_improvement >= shared.patience {
                stop = Some(StopReason::Patience {
                    patience: shared.patience,
                });
            }
        }
        let stop = stop.unwrap_or(StopReason::RoundsDone {
            rounds: settings.rounds,
        });
        let edits = &search.edits;
        let metadata = &mut search.progress.result.metadata;
        metadata.insert(
            "edits".into(),
            json!({
                "proposed": edits.proposed,
                "applied": edits.applied,
                "refused": edits.refused,
                "over_limit": edits.over_limit,
                "unreadable_replies": edits.unreadable_replies,
            }),
        );
        metadata.insert("lineage".into(), Value::from(search.lineage.clone()));
        progress::finish(context, search.progress.result, stop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edit_limit_decays_from_max_to_min_like_a_cosine() {
        let limits: Vec<usize> = (1..=6).map(|r| edit_limit(r, 6, 4, 2)).collect();
        assert_eq!(limits.first(), Some(&4));
        assert_eq!(limits.last(), Some(&2));
        assert!(limits.windows(2).all(|w| w[0] >= w[1]), "{limits:?}");
        assert_eq!(edit_limit(1, 1, 4, 2), 4, "one round: the most");
    }
}
