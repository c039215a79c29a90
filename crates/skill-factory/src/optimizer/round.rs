//! The phases of a reflective round that every optimizer shares: [`propose`] asks the
//! optimizer model for rewrites of a parent skill and checks them, [`triage`] sorts them
//! against the parent, and [`validate`] scores the new ones on the validation tasks. What an
//! optimizer keeps is its own: what the prompt shows, which parent it rewrites, and which
//! candidate it accepts.
//!
//! Every phase emits its events in a fixed order (proposals in request order, scores in
//! proposal order), so decisions taken on its results never depend on timing.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use futures_util::future::join_all;
use skill_factory_core::{Skill, Task};
use skill_factory_llm::{ChatModel, ChatResponse, LlmError, TokenUsage};
use skill_factory_package::spec;

use super::StopReason;
use super::component::{ComponentKind, Components, changed, newly_unclosed};
use super::context::{RunContext, Scored, identity};
use super::event::Event;
use super::gate::{self, Gate, Gated, Side};
use super::honest::{Honesty, REPEATS_REMOVED, without_repeated_paragraphs};
use super::reflection::{
    Proposal, Rejected, RejectedEdit, introduced, keeps_the_spec, proposal_request,
    proposal_temperature, read_description, read_proposal,
};
use crate::config::ReflectionStyle;
use crate::metric::text::py_strip;
use crate::noise::Noise;

/// Which part of the parent a proposal rewrites.
#[derive(Clone, Copy)]
pub enum Part<'a> {
    /// The whole body (`llm_loop`).
    Body,
    /// One component of the parent ([`super::component`]), by index.
    Component(&'a Components, usize),
    /// A new body that may change one component of the parent only, whichever the model
    /// blames; a reply that changes more is refused.
    OnePart,
}

/// What to ask the optimizer model for.
pub struct Ask<'a> {
    /// The reflection prompt.
    pub prompt: &'a str,
    /// How many proposals (each its own request, at its own temperature).
    pub count: usize,
    /// How the prompt is written and the reply read.
    pub style: ReflectionStyle,
    /// The longest body in characters and lines ([`super::reflection::body_limits`]).
    pub limits: (usize, usize),
    /// What the reply's text replaces in the parent.
    pub part: Part<'a>,
}

impl Ask<'_> {
    /// The proposal of one reply: a description may come bare ([`read_description`]).
    fn read(&self, answer: &Result<ChatResponse, LlmError>) -> Result<Proposal, Rejected> {
        let description = matches!(self.part, Part::Component(components, index)
            if components.get(index).is_some_and(|c| c.kind == ComponentKind::Description));
        if description {
            read_description(answer, self.limits, self.style)
        } else {
            read_proposal(answer, self.limits, self.style)
        }
    }
}

/// A usable proposal made into the skill it proposes.
#[derive(Debug, Clone)]
pub struct Proposed {
    /// The candidate skill.
    pub skill: Skill,
    /// What the model said it changed (may be empty).
    pub rationale: String,
    /// Agent Skills guidance the candidate does not follow, for the record.
    pub warnings: Vec<String>,
}

/// One proposal of a round, after checking.
pub struct Candidate {
    /// Its candidate number in the run.
    pub id: usize,
    /// The proposed skill, or why it cannot be used.
    pub outcome: Result<Proposed, Rejected>,
    /// The error of the request itself when the model could not be reached (after retries;
    /// see [`LlmError::is_unreachable`]).
    pub unreachable: Option<String>,
    /// A usable proposal equal to its parent (bodies compared without surrounding blanks).
    pub unchanged: bool,
}

/// The first error when no request of the round reached the optimizer model: it is
/// unreachable, not merely unhelpful.
pub fn all_requests_failed(candidates: &[Candidate]) -> Option<&str> {
    let mut errors = candidates.iter().map(|c| c.unreachable.as_deref());
    let first = errors.next()??;
    errors.all(|error| error.is_some()).then_some(first)
}

/// Asks for `ask.count` proposals at once, each under a permit of the run's in-flight cap,
/// numbers them from `*next_id` in request order, checks each (its reply, then the Agent
/// Skills rules against the seed folder's files) and emits one [`Event::CandidateProposed`]
/// per proposal. A request is not sent once the run is stopping; its candidate is rejected as
/// not requested.
pub async fn propose(
    context: &RunContext,
    client: &Arc<dyn ChatModel>,
    ask: &Ask<'_>,
    round: usize,
    parent: (usize, &Skill),
    next_id: &mut usize,
) -> Vec<Candidate> {
    let answers = join_all((0..ask.count).map(|index| async move {
        let _permit = context.permits.acquire().await.ok();
        if context.stop_reason().is_some() {
            return None;
        }
        let request = proposal_request(ask.prompt, index, ask.style);
        Some(client.chat(&request).await)
    }))
    .await;
    let mut candidates = Vec::with_capacity(answers.len());
    for (index, answer) in answers.into_iter().enumerate() {
        let outcome = match &answer {
            Some(answer) => ask
                .read(answer)
                .map(|proposal| made(parent.1, ask.part, proposal))
                .and_then(|proposed| one_part(parent.1, ask.part, proposed))
                .and_then(|proposed| check(context, parent.1, proposed)),
            None => Err(Rejected {
                reason: "not requested: the run was stopping".to_string(),
                rationale: String::new(),
            }),
        };
        let candidate = Candidate::new(*next_id, outcome, parent.1, answer.as_ref());
        *next_id += 1;
        emit_proposed(context, round, index, parent.0, &candidate, answer.as_ref());
        candidates.push(candidate);
    }
    candidates
}

impl Candidate {
    /// A checked proposal numbered `id`, compared with its parent.
    pub fn new(
        id: usize,
        outcome: Result<Proposed, Rejected>,
        parent: &Skill,
        answer: Option<&Result<ChatResponse, LlmError>>,
    ) -> Candidate {
        Candidate {
            id,
            unchanged: outcome.as_ref().is_ok_and(|p| {
                py_strip(&p.skill.body) == py_strip(&parent.body)
                    && p.skill.description == parent.description
                    && p.skill.files == parent.files
            }),
            outcome,
            unreachable: match answer {
                Some(Err(error)) if error.is_unreachable() => Some(error.to_string()),
                _ => None,
            },
        }
    }
}

/// The skill a proposal's text makes of `parent`: a new body, or one component replaced.
fn made(parent: &Skill, part: Part<'_>, proposal: Proposal) -> Proposed {
    let skill = match part {
        Part::Body | Part::OnePart => parent.with_body(proposal.body),
        Part::Component(components, index) => components.with_text(parent, index, &proposal.body),
    };
    Proposed {
        skill,
        rationale: proposal.rationale,
        warnings: proposal.warnings,
    }
}

/// Refuses a [`Part::OnePart`] proposal that changes more than one component of `parent`.
fn one_part(parent: &Skill, part: Part<'_>, proposed: Proposed) -> Result<Proposed, Rejected> {
    let changed = changed(parent, &proposed.skill);
    if matches!(part, Part::OnePart) && changed.len() > 1 {
        return Err(Rejected {
            reason: format!(
                "changes {} parts ({}); a step rewrites the one part it blames",
                changed.len(),
                changed.join(", ")
            ),
            rationale: proposed.rationale,
        });
    }
    Ok(proposed)
}

/// The checks every candidate passes before it is scored, whichever optimizer made it: the
/// Agent Skills rules against the seed folder's files, the description's rules when it
/// changed from `parent`'s (each refusing only what `parent` does not break already), the
/// size budget (reference files included), the honesty checks
/// (of every reference file that changed, too), then, on the skill as it would be scored,
/// the protected sections ([`super::protect`]) and the blocks an edit leaves open: an HTML
/// comment or a code fence `parent` closed and the candidate does not, which hides or turns
/// into code everything after it.
pub fn check(
    context: &RunContext,
    parent: &Skill,
    proposed: Proposed,
) -> Result<Proposed, Rejected> {
    let Proposed {
        skill,
        rationale,
        warnings,
    } = proposed;
    let checked = keeps_the_spec(
        Proposal {
            body: skill.body.clone(),
            rationale,
            warnings,
        },
        &parent.body,
        &context.skill_files,
    )?;
    let new_description = skill.description != parent.description;
    let findings =
        new_description.then(|| (spec::validate_skill(&skill), spec::validate_skill(parent)));
    if let Some(error) = findings
        .as_ref()
        .and_then(|(findings, inherited)| introduced(findings, inherited))
    {
        return Err(Rejected {
            reason: format!("the skill breaks the Agent Skills spec: {error}"),
            rationale: checked.rationale,
        });
    }
    if let Some(reason) = new_description
        .then(|| {
            context
                .honesty
                .copied_description(&skill.description, &parent.description)
        })
        .flatten()
    {
        return Err(Rejected {
            reason: format!("the description {reason}"),
            rationale: checked.rationale,
        });
    }
    if let Some(limit) = context.max_skill_tokens {
        let tokens = skill.estimate_tokens();
        if tokens > limit {
            return Err(Rejected {
                reason: format!(
                    "the skill is about {tokens} tokens, over the size budget of {limit} (optimizer.max_skill_tokens)"
                ),
                rationale: checked.rationale,
            });
        }
    }
    for (path, text) in &skill.files {
        if parent.files.get(path) == Some(text) {
            continue;
        }
        if let Some(reason) = context.honesty.copied(text) {
            return Err(Rejected {
                reason: format!("{path}: {reason}"),
                rationale: checked.rationale,
            });
        }
    }
    let checked = honest(checked, &context.honesty)?;
    let skill = skill.with_body(checked.body);
    let refuse = |reason: String| Rejected {
        reason,
        rationale: checked.rationale.clone(),
    };
    if let Some(change) = context.protected.changed(parent, &skill) {
        return Err(refuse(change.to_string()));
    }
    let texts = std::iter::once(("the body", &parent.body, &skill.body)).chain(
        skill
            .files
            .iter()
            .map(|(path, text)| (path.as_str(), parent.files.get(path).unwrap_or(text), text)),
    );
    for (what, before, after) in texts {
        if let Some(open) = newly_unclosed(before, after) {
            return Err(refuse(format!(
                "{what} leaves {open} open, which hides or turns into code everything after it"
            )));
        }
    }
    Ok(Proposed {
        skill,
        rationale: checked.rationale,
        warnings: checked.warnings,
    })
}

/// A proposal cleaned of repeated paragraphs (a warning says how many), and refused when it
/// copies a task's answer or input ([`super::honest`]).
fn honest(mut proposal: Proposal, honesty: &Honesty) -> Result<Proposal, Rejected> {
    let (body, removed) = without_repeated_paragraphs(&proposal.body);
    if removed > 0 {
        proposal.body = body;
        proposal.warnings.push(format!(
            "{REPEATS_REMOVED}: {removed} (the first of each is kept)"
        ));
    }
    match honesty.copied(&proposal.body) {
        Some(reason) => Err(Rejected {
            reason,
            rationale: proposal.rationale,
        }),
        None => Ok(proposal),
    }
}

/// The [`Event::CandidateProposed`] of one checked proposal: a usable one as the skill it
/// makes, a rejected one as the reply that came (or the error).
pub fn emit_proposed(
    context: &RunContext,
    round: usize,
    index: usize,
    parent_id: usize,
    candidate: &Candidate,
    answer: Option<&Result<ChatResponse, LlmError>>,
) {
    let usage: TokenUsage = match answer {
        Some(Ok(response)) => response.usage,
        _ => TokenUsage::default(),
    };
    let (valid, reason, rationale, body_chars, document, warnings) = match &candidate.outcome {
        Ok(proposed) => (
            true,
            None,
            proposed.rationale.clone(),
            proposed.skill.body.chars().count(),
            proposed.skill.to_markdown(),
            proposed.warnings.clone(),
        ),
        Err(rejected) => (
            false,
            Some(rejected.reason.clone()),
            rejected.rationale.clone(),
            0,
            match answer {
                Some(Ok(response)) => response.text.clone(),
                Some(Err(error)) => error.to_string(),
                None => String::new(),
            },
            Vec::new(),
        ),
    };
    context.emit(Event::CandidateProposed {
        round,
        candidate: candidate.id,
        index,
        parent: parent_id,
        temperature: proposal_temperature(index),
        valid,
        reason,
        unchanged_from: candidate.unchanged.then_some(parent_id),
        warnings,
        rationale,
        body_chars,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        document,
    });
}

/// A usable proposal not seen before in its round.
pub struct NewBody {
    /// Its candidate number.
    pub id: usize,
    /// The proposed skill.
    pub skill: Skill,
    /// What the model said it changed.
    pub rationale: String,
}

/// A round's proposals, sorted against their parent.
#[derive(Default)]
pub struct Triage {
    /// The distinct new bodies, in proposal order: these are scored.
    pub new: Vec<NewBody>,
    /// Proposals whose body repeats an earlier one of the round: (candidate, the earlier one).
    pub repeats: Vec<(usize, usize)>,
    /// Proposals that cannot be used or equal the parent, in proposal order, for the
    /// rejected-edit memory.
    pub rejected: Vec<RejectedEdit>,
    /// The distinct reasons the unusable proposals were rejected for.
    pub problems: Vec<String>,
    /// Whether any proposal was usable (a body, even one equal to the parent).
    pub any_valid: bool,
}

/// Sorts proposals: unusable, identical to the parent (compared without surrounding blanks),
/// a repeat of an earlier proposal of the round, or new.
pub fn triage(round: usize, candidates: &[Candidate]) -> Triage {
    let mut sorted = Triage::default();
    for candidate in candidates {
        match &candidate.outcome {
            Err(rejected) => {
                if !sorted.problems.contains(&rejected.reason) {
                    sorted.problems.push(rejected.reason.clone());
                }
                sorted.rejected.push(RejectedEdit {
                    round,
                    candidate: candidate.id,
                    rationale: rejected.rationale.clone(),
                    reason: rejected.reason.clone(),
                });
            }
            Ok(proposed) => {
                sorted.any_valid = true;
                if candidate.unchanged {
                    sorted.rejected.push(RejectedEdit {
                        round,
                        candidate: candidate.id,
                        rationale: proposed.rationale.clone(),
                        reason: "identical to the current skill".to_string(),
                    });
                } else if let Some(first) = sorted
                    .new
                    .iter()
                    .find(|new| identity(&new.skill) == identity(&proposed.skill))
                {
                    sorted.repeats.push((candidate.id, first.id));
                } else {
                    sorted.new.push(NewBody {
                        id: candidate.id,
                        skill: proposed.skill.clone(),
                        rationale: proposed.rationale.clone(),
                    });
                }
            }
        }
    }
    sorted
}

/// The sample of a minibatch task the screen draws: the first one (0) is the one the round's
/// reflection was shown.
pub const SCREEN_SAMPLE: u32 = 1;

/// In a noisy run, screens `candidates` on the round's minibatch, `batch` (the tasks they
/// were made from): each must score strictly higher there than its parent, both on a sample
/// the search has not looked at yet ([`SCREEN_SAMPLE`]). The parent's own first sample of
/// these tasks is no fair yardstick: a round asks for edits when that sample shows
/// failures, so it is low by selection, and any fresh draw of an edit that changes nothing
/// would beat it. Four rollouts (and four of the parent's, shared by the round) turn down
/// most edits that change nothing before a paired test on validation spends a hundred; a
/// real fix of the failures shown mostly passes. Returns, per candidate, why it was turned
/// down (`None`: it passed), and emits one [`Event::Gate`] each. Breaks with the reason when
/// the run stopped during it. A deterministic run screens nothing: its gate is the Python
/// tool's.
pub async fn screen(
    context: &RunContext,
    round: usize,
    batch: &[Task],
    parent: Side<'_>,
    candidates: &[Side<'_>],
) -> ControlFlow<StopReason, Vec<Option<String>>> {
    if !context.noise().is_noisy() || candidates.is_empty() {
        return ControlFlow::Continue(vec![None; candidates.len()]);
    }
    let (parent_draw, scored) = futures_util::join!(
        context.evaluate_sample(
            parent.skill,
            batch,
            SCREEN_SAMPLE,
            round,
            parent.id,
            "train"
        ),
        join_all(candidates.iter().map(|c| {
            context.evaluate_sample(c.skill, batch, SCREEN_SAMPLE, round, c.id, "train")
        }))
    );
    if !parent_draw.complete || scored.iter().any(|s| !s.complete) {
        return ControlFlow::Break(super::progress::stopping(context));
    }
    let theirs = parent_draw.score();
    let verdicts = candidates
        .iter()
        .zip(&scored)
        .map(|(candidate, scored)| {
            let ours = scored.score();
            let passed = ours > theirs + super::pareto::EPSILON;
            context.emit(Event::Gate {
                round,
                candidate: candidate.id,
                parent: parent.id,
                parent_score: theirs,
                child_score: ours,
                tasks: batch.len(),
                extended: false,
                passed,
            });
            (!passed).then(|| {
                format!(
                    "minibatch score {ours:.3} did not beat the best's {theirs:.3} on a fresh sample of the {} tasks it was made from (a noisy run screens edits there before its paired test)",
                    batch.len()
                )
            })
        })
        .collect();
    ControlFlow::Continue(verdicts)
}

/// The new bodies of a round gated on the validation tasks against the best skill.
pub struct Validated {
    /// Each new skill, in the order of [`Triage::new`].
    pub skills: Vec<Skill>,
    /// Their gates, in the same order; an undecided one (the run stopped while it was
    /// scored) decides nothing.
    pub gates: Vec<Gated>,
    /// The run's noise when they were decided.
    pub noise: Noise,
}

impl Validated {
    /// The round's pick: in a noisy run the kept challenger with the largest paired gain
    /// (else the one with the largest gain, for the record); in a deterministic run the
    /// first highest score. `None` when no gate was decided.
    pub fn best(&self) -> Option<usize> {
        let decided = || {
            self.gates
                .iter()
                .enumerate()
                .filter_map(|(position, gate)| Some((position, gate.comparison.as_ref()?)))
        };
        let mut best: Option<(usize, f64)> = None;
        if self.noise.is_noisy() {
            let kept = decided().any(|(_, c)| c.accepted);
            for (position, comparison) in decided().filter(|(_, c)| c.accepted || !kept) {
                let gain = comparison.difference.mean;
                if best.is_none_or(|(_, b)| gain > b) {
                    best = Some((position, gain));
                }
            }
        } else {
            for (position, _) in decided() {
                let score = self.score(position);
                if best.is_none_or(|(_, b)| score > b) {
                    best = Some((position, score));
                }
            }
        }
        best.map(|(position, _)| position)
    }

    /// The search's estimate of the score of the skill at `position`.
    pub fn score(&self, position: usize) -> f64 {
        self.gates[position].score(&self.noise)
    }

    /// Whether every gate was decided.
    pub fn complete(&self) -> bool {
        self.gates.iter().all(|g| g.comparison.is_some())
    }

    /// [`StopReason::RolloutsFailed`] when every rollout of every new body's first sample
    /// failed.
    pub fn all_failed(&self, round: usize) -> Option<StopReason> {
        let firsts: Vec<&Scored> = self.gates.iter().filter_map(|g| g.first.as_ref()).collect();
        if firsts.len() == self.gates.len() && firsts.iter().all(|s| s.all_failed().is_some()) {
            firsts
                .first()?
                .failure(|| format!("round {round}'s validation"))
        } else {
            None
        }
    }
}

/// Gates every new body of `triage` against `incumbent` (whose validation scores so far are
/// `known`) on `val` at once, under the run's cap, each a rival of the others
/// ([`super::gate`]), and emits one [`Event::CandidateScored`] per decided gate in proposal
/// order (repeats with the score of the skill they repeat) and one [`Event::Compared`] each.
/// `seen` remembers every skill scored on validation in the run (by [`identity`]), with its
/// first candidate, so a skill proposed again in a later round says which one it equals.
pub async fn validate(
    context: &RunContext,
    (round, min_delta): (usize, f64),
    triage: &Triage,
    val: &[Task],
    seen: &mut HashMap<String, usize>,
    (incumbent, known): (Side<'_>, &[Vec<f64>]),
) -> Validated {
    let skills: Vec<Skill> = triage.new.iter().map(|new| new.skill.clone()).collect();
    let gate = Gate {
        context,
        tasks: val,
        split: "val",
        round,
        min_delta,
        rivals: skills.len(),
    };
    let challengers: Vec<Side<'_>> = triage
        .new
        .iter()
        .zip(&skills)
        .map(|(new, skill)| Side { id: new.id, skill })
        .collect();
    let gates = gate::compare_all(&gate, incumbent, &challengers, known).await;
    let noise = context.noise();
    for (new, gated) in triage.new.iter().zip(&gates) {
        let Some(comparison) = &gated.comparison else {
            continue;
        };
        let same_as = seen
            .get(&identity(&new.skill))
            .copied()
            .filter(|first| *first != new.id);
        context.emit(scored_event(round, new.id, gated, &noise, same_as));
        context.emit(Event::Compared {
            round,
            split: "val".into(),
            comparison: comparison.clone(),
        });
        seen.entry(identity(&new.skill)).or_insert(new.id);
    }
    for (id, first) in &triage.repeats {
        if let Some(position) = triage.new.iter().position(|new| new.id == *first)
            && gates[position].comparison.is_some()
        {
            context.emit(scored_event(
                round,
                *id,
                &gates[position],
                &noise,
                Some(*first),
            ));
        }
    }
    Validated {
        skills,
        gates,
        noise,
    }
}

/// The [`Event::CandidateScored`] of a gated challenger: its mean over its samples, with its
/// interval.
pub fn scored_event(
    round: usize,
    candidate: usize,
    gated: &Gated,
    noise: &Noise,
    same_as: Option<usize>,
) -> Event {
    let estimate = gated.estimate(noise);
    Event::CandidateScored {
        round,
        candidate,
        val_score: estimate.mean,
        interval: Some([estimate.low, estimate.high]),
        same_as,
    }
}
