//! `gepa` (also `dspy_gepa`): reflective evolution of a skill's components, with a per-task
//! Pareto frontier of candidates (the algorithm of GEPA, Agrawal et al. 2025, written from its
//! description, never from its source).
//!
//! The seed is scored on the whole validation split and starts the pool. Each step:
//! * draws `parents` parents from the per-task Pareto frontier of the pool, with probability
//!   proportional to the number of validation tasks on which each is among the best
//!   ([`super::pareto`]), and for each the next of its components, round robin
//!   ([`super::component`]: the description when the harness shows it, the preamble, each
//!   `## ` section not `protected`);
//! * scores the parent on the next train minibatch (epoch-shuffled: every train task is seen
//!   once before any is seen again) and asks the optimizer model for `max_edits_per_round`
//!   rewrites of that component, shown the minibatch rollouts and their feedback;
//! * gates each child against its parent on the same minibatch: only a child that scores
//!   strictly higher goes on. When the two differ by one task or less (noise, on a small
//!   minibatch), the gate is extended by the next minibatch of the epoch and decided on both
//!   (`adaptive_gate`), which cuts children accepted by a lucky draw;
//! * reflects again on the best child that passed, on the next minibatch of the epoch
//!   (peeked, not consumed), up to `deepen` times (default 2): when a child of its own passes
//!   that gate, that one goes on instead, so one validation pays for several edits;
//! * scores the children that passed on validation, racing: scoring stops once a child can
//!   neither beat the best mean nor escape domination even if it aced every task left;
//! * adds every fully scored child to the pool; the best mean is the result;
//! * after a step that grew the pool, tries one system-aware merge of two frontier members
//!   that share an ancestor and descend from each other in neither direction: each component
//!   from the side that changed it. A merge is gated on validation tasks where its parents
//!   differ (it must match the better of them there) before it is fully scored.
//!
//! The search stops when the metric-call budget is spent (`max_metric_calls`, or the `auto`
//! preset's, see [`super::plan::MetricCallBudget`]), when the best scores the metric's
//! maximum, when `patience` steps in a row score nothing new, or when the run's budget or a
//! Ctrl-C says so. Every draw comes from one seeded generator, and the children of a step are
//! decided in a fixed order, so a seed gives the same search whatever the timing of the model
//! calls.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::ops::ControlFlow;
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::future::join_all;
use serde_json::{Value, json};
use skill_factory_core::{Evaluation, Skill, Task, stats};
use skill_factory_llm::ChatModel;
use skill_factory_pycompat::random::Random;
use tokio::sync::OnceCell;

use super::component::{ComponentKind, Components, changed, merge};
use super::context::{RunContext, Scored, identity};
use super::event::Event;
use super::gate::{Comparison, Gate, Side, losses, per_target};
use super::minibatch::Epochs;
use super::pareto::{self, EPSILON};
use super::plan::{GepaSettings, SharedSettings};
use super::progress::PERFECT_MINIBATCH;
use super::progress::{self, Progress, stopping};
use super::reflection::{REJECTED_SHOWN, Reflection, RejectedEdit, body_limits, note_for};
use super::round::{self, Ask, Candidate, Part, Proposed};
use super::{CandidateRecord, OptimizationResult, Optimizer, StopReason, is_perfect};
use crate::config::{ComponentSelector, OptimizerKind};
use crate::noise::Noise;

/// The longest description a proposal may write (the Agent Skills limit), in characters and
/// lines.
const DESCRIPTION_LIMITS: (usize, usize) = (1024, 12);

/// The `gepa` optimizer.
pub struct Gepa {
    client: Arc<dyn ChatModel>,
    shared: SharedSettings,
    settings: GepaSettings,
}

impl Gepa {
    /// A `gepa` search reflecting with `client`.
    pub fn new(client: Arc<dyn ChatModel>, shared: SharedSettings, settings: GepaSettings) -> Self {
        Gepa {
            client,
            shared,
            settings,
        }
    }
}

/// A candidate of the pool: scored on every validation task.
struct Member {
    /// Candidate number in the run.
    id: usize,
    skill: Skill,
    /// Its validation scores by task, one per sample drawn.
    samples: Vec<Vec<f64>>,
    /// Each task's score over its samples.
    scores: Vec<f64>,
    mean: f64,
    /// Pool positions of its parents (none for the seed, two for a merge).
    parents: Vec<usize>,
    /// Pool positions of every ancestor.
    ancestors: BTreeSet<usize>,
    /// The round-robin position of its next mutated component (a child starts where its
    /// first parent's stood).
    next_component: usize,
}

/// What a step does for one parent, drawn before anything runs.
struct Plan {
    parent: usize,
    /// The component to rewrite; `None` when the model picks it (`component_selector: blamed`).
    component: Option<usize>,
    batch: Vec<Task>,
    extension: Vec<Task>,
    /// The minibatches on which the best child that passed its gate is reflected on again,
    /// one per level of `deepen`.
    deeper: Vec<Vec<Task>>,
    /// Candidate numbers of its proposals (and of its deeper proposals after them).
    first_id: usize,
}

/// A parent as its children's gates see it: its minibatch score, and its score on the gate's
/// extension, computed once for all of them when one needs it.
#[derive(Clone, Copy)]
struct Judged<'a> {
    train: &'a Scored,
    extension: &'a OnceCell<Scored>,
}

/// Where a reflection starts: the parent, its component to rewrite, and the tasks of its gate.
struct Start<'a> {
    skill: &'a Skill,
    id: usize,
    component: Option<usize>,
    batch: &'a [Task],
    extension: &'a [Task],
    first_id: usize,
}

/// A reflection's proposals, and the gate of each new one.
struct Reflected {
    candidates: Vec<Candidate>,
    gated: Vec<Gated>,
    /// Proposals equal to a candidate already scored: (this one, the first).
    repeats: Vec<(usize, usize)>,
}

/// A child that passed its gate, reflected on once more before its validation (`deepen`).
struct Deeper {
    /// The child's candidate number.
    over: usize,
    /// The child's score on the deeper minibatch.
    train: f64,
    reflected: Reflected,
}

/// A child's gate.
struct Gated {
    id: usize,
    skill: Skill,
    rationale: String,
    component: String,
    parent_score: f64,
    child_score: f64,
    tasks: usize,
    extended: bool,
    passed: bool,
}

/// What one parent's mutation gave.
enum Mutation {
    /// The run is stopping.
    Stopping,
    /// Nothing measured: every rollout failed.
    Failed(StopReason),
    /// The parent aced the minibatch: nothing to reflect on.
    Perfect { train: f64 },
    /// Proposals, and the gate of each new one; and the deeper reflections, each on the best
    /// child that passed the level before.
    Proposed {
        train: f64,
        reflected: Reflected,
        deeper: Vec<Deeper>,
    },
}

/// A child's validation.
enum Raced {
    /// The run stopped during it.
    Stopped,
    /// Scored on every task.
    Done(Validation),
    /// Stopped early: it could no longer matter (noisy runs: its gate said why).
    Out {
        scored: usize,
        mean: f64,
        reason: Option<String>,
        incumbent: Option<Vec<Vec<f64>>>,
    },
}

/// A child scored on every validation task.
struct Validation {
    /// Its first sample of every task.
    first: Scored,
    /// Its scores by task, one per sample.
    samples: Vec<Vec<f64>>,
    /// Its gate against the best (noisy runs), with the best's samples the gate added.
    gate: Option<(Comparison, Vec<Vec<f64>>)>,
}

/// A fully scored candidate about to join the pool.
struct Child {
    id: usize,
    skill: Skill,
    /// Pool positions of its parents.
    parents: Vec<usize>,
    /// Its parent's minibatch score (a merge: its own on the merge gate).
    train: f64,
    note: String,
}

/// Counts for the report and the benchmark.
#[derive(Default)]
struct Stats {
    gate_passed: usize,
    gate_failed: usize,
    gate_extended: usize,
    false_accepts: usize,
    raced_out: usize,
    merges_tried: usize,
    merges_accepted: usize,
    /// Children that passed their gate and were not validated, as a child of theirs was.
    superseded: usize,
}

struct Search<'a> {
    context: &'a RunContext,
    shared: &'a SharedSettings,
    settings: &'a GepaSettings,
    client: &'a Arc<dyn ChatModel>,
    train: &'a [Task],
    val: &'a [Task],
    goal: String,
    limits: (usize, usize),
    pool: Vec<Member>,
    best: usize,
    progress: Progress,
    rng: Random,
    epochs: Epochs,
    next_id: usize,
    rejected: VecDeque<RejectedEdit>,
    /// Skills scored on validation ([`identity`]), with their candidate number.
    seen: HashMap<String, usize>,
    tried_merges: HashSet<(usize, usize)>,
    stats: Stats,
    lineage: Vec<Value>,
    idle_steps: usize,
    budget: u64,
    /// Whether the clamp of `parents` was said ([`Search::parents`]).
    said_clamped: bool,
}

impl Search<'_> {
    /// The validation tasks' weights, by task.
    fn weights(&self) -> Vec<f64> {
        self.val.iter().map(|task| task.weight).collect()
    }

    fn scores(&self) -> Vec<Vec<f64>> {
        self.pool.iter().map(|m| m.scores.clone()).collect()
    }

    fn remember(&mut self, edit: RejectedEdit) {
        self.rejected.push_front(edit);
        self.rejected.truncate(REJECTED_SHOWN);
    }

    /// The components of `skill` a mutation may rewrite: the description only when the
    /// harness shows it to an agent (the `api` harness sends the body alone), the body's parts
    /// only when it shows the body (a trigger run shows the description alone), the reference
    /// files only when it gives the agent a skill folder, and no section or file the config
    /// protects.
    fn mutable(&self, components: &Components) -> Vec<usize> {
        let shows_description = self.context.harness.shows_description();
        let shows_body = self.context.harness.shows_body();
        let shows_files = self.context.harness.shows_files();
        let protected = &self.context.protected;
        components
            .iter()
            .enumerate()
            .filter(|(_, c)| match c.kind {
                ComponentKind::Description => shows_description,
                ComponentKind::Preamble => shows_body,
                ComponentKind::Section => shows_body && !protected.covers(&c.name),
                ComponentKind::Reference => shows_files && !protected.covers(&c.name),
            })
            .map(|(index, _)| index)
            .collect()
    }

    fn why_stop(&self) -> Option<StopReason> {
        if let Some(reason) = self.context.stop_reason() {
            return Some(reason);
        }
        if is_perfect(self.pool[self.best].mean) {
            return Some(StopReason::Perfect {
                score: self.pool[self.best].mean,
            });
        }
        self.context.metric_calls_spent(Some(self.budget))
    }

    /// How many parents the step draws: `parents`, but no more than the mutations the
    /// frontier offers (each member once per component it may rewrite), since a parent drawn
    /// beyond that repeats a mutation of the step. Said once, the first time it clamps.
    fn parents(&mut self, frontier: &[pareto::Member]) -> usize {
        let wanted = self.settings.parents.max(1);
        let offered: usize = frontier
            .iter()
            .map(|m| {
                self.mutable(&Components::of(&self.pool[m.candidate].skill))
                    .len()
            })
            .sum::<usize>()
            .max(1);
        if wanted > offered && !self.said_clamped {
            self.said_clamped = true;
            tracing::warn!(
                "optimizer.parents is {wanted}, but the Pareto frontier offers {offered} mutation{} ({} candidate{} and the parts each may rewrite): a step mutates at most that many parents",
                if offered == 1 { "" } else { "s" },
                frontier.len(),
                if frontier.len() == 1 { "" } else { "s" },
            );
        }
        wanted.min(offered)
    }

    /// Draws the step's parents, components and minibatches, in a fixed order.
    fn plan(&mut self) -> Vec<Plan> {
        let frontier = pareto::frontier(&self.scores(), EPSILON);
        let mut plans = Vec::new();
        for _ in 0..self.parents(&frontier) {
            let parent = pareto::sample(&frontier, &mut self.rng).unwrap_or(self.best);
            // With no body shown (a trigger run) there is no body part to blame.
            let component = match self.settings.component_selector {
                ComponentSelector::Blamed if self.context.harness.shows_body() => None,
                ComponentSelector::Blamed | ComponentSelector::RoundRobin => {
                    let components = Components::of(&self.pool[parent].skill);
                    let mutable = self.mutable(&components);
                    let Some(&component) =
                        mutable.get(self.pool[parent].next_component % mutable.len().max(1))
                    else {
                        continue;
                    };
                    Some(component)
                }
            };
            self.pool[parent].next_component += 1;
            let batch = self.epochs.next(self.shared.minibatch_size, &mut self.rng);
            let extension = if self.settings.adaptive_gate {
                self.epochs.peek(self.shared.minibatch_size, &batch)
            } else {
                Vec::new()
            };
            let mut deeper: Vec<Vec<usize>> = Vec::new();
            let mut drawn: Vec<usize> = batch.iter().chain(&extension).copied().collect();
            for _ in 0..self.settings.deepen {
                let next = self.epochs.peek(self.shared.minibatch_size, &drawn);
                if next.is_empty() {
                    break;
                }
                drawn.extend(&next);
                deeper.push(next);
            }
            let tasks =
                |indices: &[usize]| indices.iter().map(|&i| self.train[i].clone()).collect();
            plans.push(Plan {
                parent,
                component,
                batch: tasks(&batch),
                extension: tasks(&extension),
                deeper: deeper.iter().map(|batch| tasks(batch)).collect(),
                first_id: self.next_id,
            });
            self.next_id += self.settings.max_edits_per_round * (1 + self.settings.deepen);
        }
        plans
    }

    /// One parent's mutation, given its score on the minibatch: the proposals, and their
    /// gates; then up to `deepen` reflections more, each on the best child that passed the
    /// level before, on the plan's next minibatch.
    async fn mutate(&self, step: usize, plan: &Plan, train: Scored) -> Mutation {
        let context = self.context;
        let parent = &self.pool[plan.parent];
        if !train.complete {
            return Mutation::Stopping;
        }
        if let Some(reason) = train.failure(|| format!("step {step}'s minibatch")) {
            return Mutation::Failed(reason);
        }
        if is_perfect(train.score()) {
            return Mutation::Perfect {
                train: train.score(),
            };
        }
        let start = Start {
            skill: &parent.skill,
            id: parent.id,
            component: plan.component,
            batch: &plan.batch,
            extension: &plan.extension,
            first_id: plan.first_id,
        };
        let Some(reflected) = self.reflect(step, &start, &train).await else {
            return Mutation::Stopping;
        };
        let mut deeper: Vec<Deeper> = Vec::new();
        for (level, batch) in plan.deeper.iter().enumerate() {
            let last = deeper.last().map_or(&reflected, |d| &d.reflected);
            let Some(child) = last.gated.iter().filter(|g| g.passed).max_by(|a, b| {
                a.child_score
                    .partial_cmp(&b.child_score)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(b.id.cmp(&a.id))
            }) else {
                break;
            };
            let scored = context
                .evaluate(&child.skill, batch, step, child.id, "train")
                .await;
            if !scored.complete {
                return Mutation::Stopping;
            }
            if is_perfect(scored.score()) {
                break;
            }
            let start = Start {
                skill: &child.skill,
                id: child.id,
                component: plan.component,
                batch,
                extension: &[],
                first_id: plan.first_id + (level + 1) * self.settings.max_edits_per_round,
            };
            let Some(more) = self.reflect(step, &start, &scored).await else {
                return Mutation::Stopping;
            };
            deeper.push(Deeper {
                over: child.id,
                train: scored.score(),
                reflected: more,
            });
        }
        Mutation::Proposed {
            train: train.score(),
            reflected,
            deeper,
        }
    }

    /// Asks for rewrites of `start`'s component (or of the part the model blames), shown
    /// its rollouts on the minibatch (`train`), and gates every new one against it. `None`
    /// when the run stopped.
    async fn reflect(&self, step: usize, start: &Start<'_>, train: &Scored) -> Option<Reflected> {
        let context = self.context;
        let components = Components::of(start.skill);
        let rejected: Vec<RejectedEdit> = self.rejected.iter().cloned().collect();
        let (shown, shown_tasks) = self.evidence(start, train);
        let reflection = Reflection {
            goal: &self.goal,
            body: &start.skill.body,
            batch: &shown,
            tasks: &shown_tasks,
            rejected: &rejected,
            limits: self.limits,
            component: None,
            one_part: start.component.is_none(),
            protected: self.context.protected.names(),
        };
        let component = start
            .component
            .and_then(|index| Some((index, components.get(index)?)));
        let (prompt, limits, part) = match component {
            None => (
                reflection.prompt_for(self.settings.reflection),
                self.limits,
                Part::OnePart,
            ),
            Some((index, component)) => {
                let limits = match component.kind {
                    ComponentKind::Description => DESCRIPTION_LIMITS,
                    // A reference file is held to its own size, not the body's.
                    ComponentKind::Reference => body_limits(&component.text),
                    _ => self.limits,
                };
                // The description's own rules say what an agent reads it for.
                let prompt = Reflection {
                    body: &component.text,
                    limits,
                    component: Some((component.name.as_str(), &start.skill.body)),
                    ..reflection
                }
                .prompt_for(self.settings.reflection);
                (prompt, limits, Part::Component(&components, index))
            }
        };
        let ask = Ask {
            prompt: &prompt,
            count: self.settings.max_edits_per_round,
            style: self.settings.reflection,
            limits,
            part,
        };
        let mut next_id = start.first_id;
        let candidates = round::propose(
            context,
            self.client,
            &ask,
            step,
            (start.id, start.skill),
            &mut next_id,
        )
        .await;
        let triage = round::triage(step, &candidates);
        let fresh: Vec<&round::NewBody> = triage
            .new
            .iter()
            .filter(|new| !self.seen.contains_key(&identity(&new.skill)))
            .collect();
        let extension = OnceCell::new();
        let judged = Judged {
            train,
            extension: &extension,
        };
        let gated = join_all(fresh.iter().map(|new| {
            // The part the child rewrote: the planned one, or the one the model blamed.
            let component = match component {
                Some((_, component)) => component.name.clone(),
                None => changed(start.skill, &new.skill).join(", "),
            };
            self.gate(step, start, &judged, new, component)
        }))
        .await;
        let mut repeats = triage.repeats.clone();
        for new in &triage.new {
            if let Some(first) = self.seen.get(&identity(&new.skill)) {
                repeats.push((new.id, *first));
            }
        }
        let gated = gated.into_iter().collect::<Option<Vec<Gated>>>()?;
        Some(Reflected {
            candidates,
            gated,
            repeats,
        })
    }

    /// What the reflection on `parent` is shown: its minibatch results, and up to a minibatch
    /// more of the train tasks it already failed earlier in the run (as a child at its gate),
    /// which cost no rollout and show the optimizer model more of what is wrong.
    fn evidence(&self, start: &Start<'_>, train: &Scored) -> (Evaluation, Vec<Task>) {
        let mut shown = train.evaluation.clone();
        let mut tasks = start.batch.to_vec();
        let others = self
            .train
            .iter()
            .filter(|task| !start.batch.iter().any(|b| b.id == task.id));
        let failed = self
            .context
            .known(start.skill, others)
            .into_iter()
            .filter(|(_, known)| !is_perfect(known.score()))
            .take(self.shared.minibatch_size);
        for (task, known) in failed {
            shown.items.push(known);
            tasks.push(task.clone());
        }
        (shown, tasks)
    }

    /// The child against its parent on the parent's minibatch, extended when the difference
    /// is within one task. `None` when the run stopped during it.
    async fn gate(
        &self,
        step: usize,
        start: &Start<'_>,
        parent: &Judged<'_>,
        new: &round::NewBody,
        component: String,
    ) -> Option<Gated> {
        let Judged {
            train: parent_train,
            extension: parent_more,
        } = *parent;
        let context = self.context;
        let child = context
            .evaluate(&new.skill, start.batch, step, new.id, "train")
            .await;
        if !child.complete {
            return None;
        }
        let size = start.batch.len();
        let (mut parent_sum, mut child_sum) = (
            parent_train.score() * size as f64,
            child.score() * size as f64,
        );
        let mut tasks = size;
        let mut extended = false;
        let within_noise =
            child_sum > parent_sum + EPSILON && child_sum - parent_sum <= 1.0 + EPSILON;
        if within_noise && !start.extension.is_empty() {
            // The parent's extension is scored once for all its children of the step.
            let (parent_more, child_more) = futures_util::join!(
                parent_more.get_or_init(|| context.evaluate(
                    start.skill,
                    start.extension,
                    step,
                    start.id,
                    "train"
                )),
                context.evaluate(&new.skill, start.extension, step, new.id, "train"),
            );
            if !(parent_more.complete && child_more.complete) {
                return None;
            }
            let more = start.extension.len();
            parent_sum += parent_more.score() * more as f64;
            child_sum += child_more.score() * more as f64;
            tasks += more;
            extended = true;
        }
        Some(Gated {
            id: new.id,
            skill: new.skill.clone(),
            rationale: new.rationale.clone(),
            component,
            parent_score: parent_sum / tasks as f64,
            child_score: child_sum / tasks as f64,
            tasks,
            extended,
            passed: child_sum > parent_sum + EPSILON,
        })
    }

    /// Scores `skill` on validation in chunks of the in-flight cap, stopping once it cannot
    /// matter against the pool as it stood when the step's validations began; in a noisy run,
    /// gates it against the best instead ([`Search::gate_best`]), one of `rivals`.
    async fn race(
        &self,
        step: usize,
        (id, skill): (usize, &Skill),
        pool: &[Vec<f64>],
        rivals: usize,
    ) -> Raced {
        if self.context.noise().is_noisy() {
            return self.gate_best(step, (id, skill), rivals).await;
        }
        let context = self.context;
        let chunk = context.max_workers.max(1);
        let best_mean = self.pool[self.best].mean;
        let mut partial: Vec<Option<f64>> = vec![None; self.val.len()];
        let mut items = Vec::with_capacity(self.val.len());
        let mut start = 0;
        while start < self.val.len() {
            let end = (start + chunk).min(self.val.len());
            let scored = context
                .evaluate(skill, &self.val[start..end], step, id, "val")
                .await;
            if !scored.complete {
                return Raced::Stopped;
            }
            for (k, item) in scored.evaluation.items.into_iter().enumerate() {
                partial[start + k] = Some(item.score());
                items.push(item);
            }
            start = end;
            if start < self.val.len()
                && !pareto::can_still_matter(
                    (&partial, &self.weights()),
                    pool,
                    best_mean,
                    1.0,
                    EPSILON,
                )
            {
                let (scored, weights): (Vec<f64>, Vec<f64>) = partial
                    .iter()
                    .zip(self.val)
                    .filter_map(|(score, task)| Some(((*score)?, task.weight)))
                    .unzip();
                return Raced::Out {
                    scored: scored.len(),
                    mean: stats::mean(&scored, &weights),
                    reason: None,
                    incumbent: None,
                };
            }
        }
        let samples = items.iter().map(|item| vec![item.score()]).collect();
        Raced::Done(Validation {
            first: Scored {
                evaluation: Evaluation { items },
                complete: true,
            },
            samples,
            gate: None,
        })
    }

    /// The paired gate of `skill` against the best ([`super::gate`]), one of `rivals`.
    async fn gate_best(&self, step: usize, (id, skill): (usize, &Skill), rivals: usize) -> Raced {
        let best = &self.pool[self.best];
        let gate = Gate {
            context: self.context,
            tasks: self.val,
            split: "val",
            round: step,
            min_delta: self.shared.min_delta,
            rivals,
        };
        let gated = gate
            .compare(
                Side {
                    id: best.id,
                    skill: &best.skill,
                },
                Side { id, skill },
                &best.samples,
            )
            .await;
        let Some(comparison) = gated.comparison.clone() else {
            return Raced::Stopped;
        };
        match gated.first {
            Some(first) => Raced::Done(Validation {
                first,
                samples: gated.challenger,
                gate: Some((comparison, gated.incumbent)),
            }),
            None => {
                let scored: Vec<f64> = gated
                    .challenger
                    .iter()
                    .filter(|s| !s.is_empty())
                    .map(|s| s.iter().sum::<f64>() / s.len() as f64)
                    .collect();
                Raced::Out {
                    scored: scored.len(),
                    mean: scored.iter().sum::<f64>() / scored.len().max(1) as f64,
                    reason: Some(comparison.reason),
                    incumbent: Some(gated.incumbent),
                }
            }
        }
    }

    /// Keeps the samples a gate added to the best's.
    fn learn(&mut self, incumbent: &[Vec<f64>]) {
        let noise = self.context.noise();
        let weights = self.weights();
        let best = &mut self.pool[self.best];
        let mut grew = false;
        for (mine, theirs) in best.samples.iter_mut().zip(incumbent) {
            if theirs.len() > mine.len() {
                *mine = theirs.clone();
                grew = true;
            }
        }
        if grew {
            best.scores = task_scores(&best.samples, &noise);
            best.mean = stats::mean(&best.scores, &weights);
            self.progress.best_samples = best.samples.clone();
        }
    }

    /// Records a child that was not kept, and remembers why for later prompts; `scores` are
    /// the history record's train and validation scores.
    fn turn_down(&mut self, step: usize, gate: &Gated, reason: String, (train, val): (f64, f64)) {
        self.remember(RejectedEdit {
            round: step,
            candidate: gate.id,
            rationale: gate.rationale.clone(),
            reason: reason.clone(),
        });
        let record = CandidateRecord {
            iteration: step,
            skill: gate.skill.clone(),
            train_score: train,
            val_score: val,
            accepted: false,
            candidate: Some(gate.id),
            note: format!("{}: {reason}", note_for(&gate.rationale)),
            interval: None,
            comparison: None,
        };
        self.record(step, record, Some(gate.id));
    }

    fn record(&mut self, step: usize, record: CandidateRecord, candidate: Option<usize>) {
        self.progress.decide(self.context, step, record, candidate);
    }

    fn keep_best(&mut self, step: usize, train: f64, note: String) {
        let record = self.progress.kept(step, train, note);
        self.record(step, record, None);
    }

    /// Adds a fully scored candidate to the pool, and makes it the best when its mean beats
    /// the best's (deterministic runs) or when its gate kept it and no rival of the step
    /// gained more (`kept`, noisy runs).
    fn join(&mut self, step: usize, child: Child, validation: Validation, kept: bool) {
        let Child {
            id,
            skill,
            parents,
            train,
            note,
        } = child;
        let noise = self.context.noise();
        let scores = task_scores(&validation.samples, &noise);
        let weights = self.weights();
        let estimate = noise.estimate(&validation.samples, &weights);
        let mean = stats::mean(&scores, &weights);
        let mut ancestors: BTreeSet<usize> = parents.iter().copied().collect();
        for parent in &parents {
            ancestors.extend(self.pool[*parent].ancestors.iter().copied());
        }
        let comparison = validation.gate.as_ref().map(|(c, _)| c.clone());
        if let Some((comparison, incumbent)) = &validation.gate {
            self.learn(incumbent);
            self.context.emit(Event::Compared {
                round: step,
                split: "val".into(),
                comparison: comparison.clone(),
            });
        }
        // A deterministic run keeps a better mean, unless it loses on a target that
        // `objective.aggregate: min` holds.
        let held = comparison.is_none().then(|| {
            let gains = per_target(
                self.val,
                (&self.pool[self.best].samples, &validation.samples),
                &noise,
            );
            losses(self.context, &gains)
        });
        let held = held.flatten();
        let accepted = match &comparison {
            Some(_) => kept,
            None => mean > self.pool[self.best].mean + EPSILON && held.is_none(),
        };
        self.context.emit(Event::CandidateScored {
            round: step,
            candidate: id,
            val_score: mean,
            interval: Some([estimate.low, estimate.high]),
            same_as: None,
        });
        self.seen.insert(identity(&skill), id);
        // The round robin goes on along the lineage: a child rewrites next the component
        // after the one its parent rewrote last, not the first one again.
        let next_component = parents
            .first()
            .map_or(0, |&parent| self.pool[parent].next_component);
        self.pool.push(Member {
            id,
            skill: skill.clone(),
            samples: validation.samples.clone(),
            scores,
            mean,
            parents,
            ancestors,
            next_component,
        });
        if accepted {
            self.best = self.pool.len() - 1;
            self.progress.best_samples = validation.samples;
        }
        let verdict = match (&comparison, accepted) {
            (_, true) => "the new best".to_string(),
            (Some(c), false) if c.accepted => {
                "joins the pool; its gate kept it, but a rival of the step gained more".to_string()
            }
            (Some(c), false) => format!("joins the pool; not the best: {}", c.reason),
            (None, false) => match held {
                Some(losses) => format!("joins the pool; not the best: {losses}"),
                None => "joins the pool".to_string(),
            },
        };
        let record = CandidateRecord {
            iteration: step,
            skill,
            train_score: train,
            val_score: mean,
            accepted,
            candidate: Some(id),
            note: format!("{note} ({verdict})"),
            interval: Some([estimate.low, estimate.high]),
            comparison,
        };
        self.record(step, record, Some(id));
    }

    fn trace(
        &mut self,
        step: usize,
        id: usize,
        parents: Vec<usize>,
        component: &str,
        operation: &'static str,
    ) {
        self.context.emit(Event::Lineage {
            round: step,
            candidate: id,
            parents: parents.clone(),
            component: component.to_string(),
            operation: operation.into(),
        });
        self.lineage.push(json!({
            "candidate": id,
            "parents": parents,
            "component": component,
            "operation": operation,
        }));
    }

    /// Records a reflection's outcome for parent `parent_id` (minibatch score `train`): the
    /// refused proposals, the repeats, each gate; the children that passed go to `passing`
    /// with `train`. Returns the error when every request to the optimizer model failed.
    fn settle(
        &mut self,
        step: usize,
        parent_id: usize,
        reflected: Reflected,
        train: f64,
        passing: &mut Vec<(Gated, f64)>,
    ) -> Option<String> {
        let Reflected {
            candidates,
            gated,
            repeats,
        } = reflected;
        let unreachable = round::all_requests_failed(&candidates).map(str::to_string);
        let triage = round::triage(step, &candidates);
        for edit in triage.rejected {
            self.remember(edit);
        }
        for (id, first) in repeats {
            self.context.emit(Event::CandidateScored {
                round: step,
                candidate: id,
                val_score: self
                    .pool
                    .iter()
                    .find(|m| m.id == first)
                    .map_or(0.0, |m| m.mean),
                interval: None,
                same_as: Some(first),
            });
        }
        if gated.is_empty() {
            let note = if triage.any_valid {
                "no new proposal: each equals its parent or a candidate already scored".to_string()
            } else {
                format!(
                    "{} ({})",
                    super::llm_loop::NO_VALID_PROPOSAL,
                    triage.problems.join("; ")
                )
            };
            self.keep_best(step, train, note);
        }
        for gate in gated {
            self.context.emit(Event::Gate {
                round: step,
                candidate: gate.id,
                parent: parent_id,
                parent_score: gate.parent_score,
                child_score: gate.child_score,
                tasks: gate.tasks,
                extended: gate.extended,
                passed: gate.passed,
            });
            self.trace(step, gate.id, vec![parent_id], &gate.component, "mutation");
            self.stats.gate_extended += usize::from(gate.extended);
            if gate.passed {
                self.stats.gate_passed += 1;
                passing.push((gate, train));
            } else {
                self.stats.gate_failed += 1;
                let reason = format!(
                    "minibatch score {:.3} did not beat its parent's {:.3} on the same {} tasks",
                    gate.child_score, gate.parent_score, gate.tasks
                );
                let scores = (gate.child_score, self.pool[self.best].mean);
                self.turn_down(step, &gate, reason, scores);
            }
        }
        unreachable
    }

    /// Takes child `over` out of `passing` because a child of its own (in `more`) passed the
    /// next minibatch's gate and is validated instead; records why.
    fn supersede(
        &mut self,
        step: usize,
        over: usize,
        passing: &mut Vec<(Gated, f64)>,
        more: &[(Gated, f64)],
    ) {
        let Some(at) = passing.iter().position(|(gate, _)| gate.id == over) else {
            return;
        };
        let (gate, train) = passing.remove(at);
        self.stats.superseded += 1;
        let heirs: Vec<String> = more.iter().map(|(g, _)| g.id.to_string()).collect();
        let record = CandidateRecord {
            iteration: step,
            skill: gate.skill.clone(),
            train_score: train,
            val_score: gate.child_score,
            accepted: false,
            candidate: Some(gate.id),
            note: format!(
                "{}: passed its gate; not validated, as its child {} passed the next minibatch's gate and was validated instead",
                note_for(&gate.rationale),
                heirs.join(", ")
            ),
            interval: None,
            comparison: None,
        };
        self.record(step, record, Some(gate.id));
    }

    /// One step of the search; breaks with the reason when the run stops.
    async fn step(&mut self, step: usize) -> ControlFlow<StopReason> {
        let calls_before = self.context.metric_calls();
        let plans = self.plan();
        if plans.is_empty() {
            return ControlFlow::Break(StopReason::Patience {
                patience: self.shared.patience,
            });
        }
        self.context.emit(Event::RoundStarted {
            round: step,
            minibatch: plans[0].batch.iter().map(|t| t.id.clone()).collect(),
        });
        // The parents' minibatches one after the other: two plans of one parent on the same
        // tasks then run its rollouts once (the second reuses the first's), not twice at once.
        let mut trains = Vec::with_capacity(plans.len());
        for plan in &plans {
            let parent = &self.pool[plan.parent];
            trains.push(
                self.context
                    .evaluate(&parent.skill, &plan.batch, step, parent.id, "train")
                    .await,
            );
        }
        let outcomes = join_all(
            plans
                .iter()
                .zip(trains)
                .map(|(plan, train)| self.mutate(step, plan, train)),
        )
        .await;
        let pool_before = self.scores();
        let mut passing: Vec<(Gated, usize, f64)> = Vec::new();
        let mut reached = false;
        let mut unreachable: Option<String> = None;
        for (plan, outcome) in plans.iter().zip(outcomes) {
            let parent_id = self.pool[plan.parent].id;
            match outcome {
                Mutation::Stopping => return ControlFlow::Break(stopping(self.context)),
                Mutation::Failed(reason) => return ControlFlow::Break(reason),
                Mutation::Perfect { train } => {
                    reached = true;
                    self.keep_best(step, train, PERFECT_MINIBATCH.to_string());
                }
                Mutation::Proposed {
                    train,
                    reflected,
                    deeper,
                } => {
                    let mut mine = Vec::new();
                    match self.settle(step, parent_id, reflected, train, &mut mine) {
                        Some(error) => {
                            unreachable.get_or_insert(error);
                        }
                        None => reached = true,
                    }
                    for deeper in deeper {
                        let mut more = Vec::new();
                        if let Some(error) = self.settle(
                            step,
                            deeper.over,
                            deeper.reflected,
                            deeper.train,
                            &mut more,
                        ) {
                            unreachable.get_or_insert(error);
                        }
                        if !more.is_empty() {
                            self.supersede(step, deeper.over, &mut mine, &more);
                            mine.extend(more);
                        }
                    }
                    passing.extend(
                        mine.into_iter()
                            .map(|(gate, train)| (gate, plan.parent, train)),
                    );
                }
            }
        }
        if !reached && let Some(error) = unreachable {
            return ControlFlow::Break(StopReason::OptimizerFailed { error });
        }
        let rivals = passing.len();
        let raced = join_all(
            passing
                .iter()
                .map(|(gate, _, _)| self.race(step, (gate.id, &gate.skill), &pool_before, rivals)),
        )
        .await;
        let kept = kept_one(&raced);
        let mut grew = false;
        for (position, ((gate, parent, train), raced)) in passing.into_iter().zip(raced).enumerate()
        {
            let parent_mean = self.pool[parent].mean;
            match raced {
                Raced::Stopped => return ControlFlow::Break(stopping(self.context)),
                Raced::Out {
                    scored,
                    mean,
                    reason,
                    incumbent,
                } => {
                    self.stats.raced_out += 1;
                    self.stats.false_accepts += 1;
                    if let Some(incumbent) = incumbent {
                        self.learn(&incumbent);
                    }
                    let reason = reason.unwrap_or_else(|| format!(
                        "stopped after {scored} of {} validation tasks (mean {mean:.3}): it could no longer beat the best {:.3} nor join the frontier",
                        self.val.len(),
                        self.pool[self.best].mean
                    ));
                    self.turn_down(step, &gate, reason, (train, mean));
                }
                Raced::Done(validation) => {
                    if let Some(reason) = validation
                        .first
                        .failure(|| format!("step {step}'s validation"))
                    {
                        return ControlFlow::Break(reason);
                    }
                    let scores = task_scores(&validation.samples, &self.context.noise());
                    if stats::mean(&scores, &self.weights()) <= parent_mean + EPSILON {
                        self.stats.false_accepts += 1;
                    }
                    let child = Child {
                        id: gate.id,
                        note: format!("{}: {}", gate.component, note_for(&gate.rationale)),
                        skill: gate.skill,
                        parents: vec![parent],
                        train,
                    };
                    self.join(step, child, validation, kept == Some(position));
                    grew = true;
                }
            }
        }
        if grew
            && self.settings.merge
            && self.stats.merges_tried < self.settings.max_merges
            && let ControlFlow::Break(reason) = self.merge(step).await
        {
            return ControlFlow::Break(reason);
        }
        self.progress
            .result
            .metadata
            .insert("rounds_run".into(), Value::from(step));
        self.context.emit(Event::RoundFinished {
            round: step,
            best_score: self.pool[self.best].mean,
            rounds_without_improvement: self.idle_steps,
        });
        self.context.events.checkpoint(&self.progress.result);
        if self.context.metric_calls() == calls_before {
            self.idle_steps += 1;
            if self.idle_steps > self.shared.patience {
                return ControlFlow::Break(StopReason::Patience {
                    patience: self.shared.patience,
                });
            }
        } else {
            self.idle_steps = 0;
        }
        ControlFlow::Continue(())
    }

    /// Two frontier members that share an ancestor and descend from each other in neither
    /// direction, not tried before, drawn with the search's generator, with their latest
    /// common ancestor.
    fn merge_pair(&mut self) -> Option<(usize, usize, usize)> {
        let frontier = pareto::frontier(&self.scores(), EPSILON);
        let mut pairs = Vec::new();
        for (k, a) in frontier.iter().enumerate() {
            for b in &frontier[k + 1..] {
                let (a, b) = (a.candidate, b.candidate);
                if self.tried_merges.contains(&(a, b))
                    || self.pool[a].ancestors.contains(&b)
                    || self.pool[b].ancestors.contains(&a)
                {
                    continue;
                }
                let lineage = |m: usize| {
                    let mut set = self.pool[m].ancestors.clone();
                    set.insert(m);
                    set
                };
                if let Some(&common) = lineage(a).intersection(&lineage(b)).max() {
                    pairs.push((a, b, common));
                }
            }
        }
        if pairs.is_empty() {
            return None;
        }
        let pick = pairs[self.rng.randbelow(pairs.len())];
        self.tried_merges.insert((pick.0, pick.1));
        Some(pick)
    }

    /// Tries one merge: built, checked, gated on validation tasks where its parents differ,
    /// then scored on validation and added to the pool when it passes.
    async fn merge(&mut self, step: usize) -> ControlFlow<StopReason> {
        let Some((a, b, common)) = self.merge_pair() else {
            return ControlFlow::Continue(());
        };
        let prefer_a = self.pool[a].mean >= self.pool[b].mean;
        let Some(skill) = merge(
            &self.pool[common].skill,
            &self.pool[a].skill,
            &self.pool[b].skill,
            prefer_a,
        ) else {
            return ControlFlow::Continue(());
        };
        if self.seen.contains_key(&identity(&skill)) {
            return ControlFlow::Continue(());
        }
        self.stats.merges_tried += 1;
        let (id_a, id_b, id_common) = (self.pool[a].id, self.pool[b].id, self.pool[common].id);
        let id = self.next_id;
        self.next_id += 1;
        let rationale = format!(
            "merge of candidates {id_a} and {id_b} (common ancestor {id_common}): each component from the side that changed it"
        );
        let checked = round::check(
            self.context,
            &self.pool[a].skill,
            Proposed {
                skill,
                rationale: rationale.clone(),
                warnings: Vec::new(),
            },
        );
        let candidate = Candidate::new(id, checked, &self.pool[a].skill, None);
        round::emit_proposed(self.context, step, 0, id_a, &candidate, None);
        self.trace(step, id, vec![id_a, id_b], "merge", "merge");
        let skill = match candidate.outcome {
            Ok(proposed) => proposed.skill,
            Err(rejected) => {
                self.keep_best(
                    step,
                    self.pool[self.best].mean,
                    format!("{rationale}: {}", rejected.reason),
                );
                return ControlFlow::Continue(());
            }
        };
        // The gate: tasks where the parents differ first, then the others, in order.
        let (sa, sb) = (&self.pool[a].scores, &self.pool[b].scores);
        let mut order: Vec<usize> = (0..self.val.len())
            .filter(|&t| (sa[t] - sb[t]).abs() > EPSILON)
            .collect();
        order.extend((0..self.val.len()).filter(|&t| (sa[t] - sb[t]).abs() <= EPSILON));
        order.truncate(self.shared.minibatch_size.max(1));
        let tasks: Vec<Task> = order.iter().map(|&t| self.val[t].clone()).collect();
        let sum = |scores: &[f64]| order.iter().map(|&t| scores[t]).sum::<f64>();
        let parents_best = sum(sa).max(sum(sb));
        let gate = self.context.evaluate(&skill, &tasks, step, id, "val").await;
        if !gate.complete {
            return ControlFlow::Break(stopping(self.context));
        }
        let merged_sum = gate.score() * tasks.len() as f64;
        let passed = merged_sum + EPSILON >= parents_best;
        let parent_score = parents_best / tasks.len().max(1) as f64;
        self.context.emit(Event::Gate {
            round: step,
            candidate: id,
            parent: id_a,
            parent_score,
            child_score: gate.score(),
            tasks: tasks.len(),
            extended: false,
            passed,
        });
        if !passed {
            let note = format!(
                "{rationale}: scored {:.3} where its parents differ, below the better parent's {parent_score:.3}",
                gate.score()
            );
            self.keep_best(step, self.pool[self.best].mean, note);
            return ControlFlow::Continue(());
        }
        let pool = self.scores();
        let raced = self.race(step, (id, &skill), &pool, 1).await;
        let kept = kept_one(std::slice::from_ref(&raced)) == Some(0);
        match raced {
            Raced::Stopped => ControlFlow::Break(stopping(self.context)),
            Raced::Out {
                scored,
                mean,
                incumbent,
                ..
            } => {
                if let Some(incumbent) = incumbent {
                    self.learn(&incumbent);
                }
                self.stats.raced_out += 1;
                let note = format!(
                    "{rationale}: stopped after {scored} validation tasks (mean {mean:.3}), it could no longer matter"
                );
                self.keep_best(step, self.pool[self.best].mean, note);
                ControlFlow::Continue(())
            }
            Raced::Done(validation) => {
                self.stats.merges_accepted += 1;
                let child = Child {
                    id,
                    skill,
                    parents: vec![a, b],
                    train: gate.score(),
                    note: rationale,
                };
                self.join(step, child, validation, kept);
                ControlFlow::Continue(())
            }
        }
    }

    fn finish(mut self, stop: StopReason) -> OptimizationResult {
        let frontier: Vec<Value> = pareto::frontier(&self.scores(), EPSILON)
            .iter()
            .map(|m| json!({"candidate": self.pool[m.candidate].id, "tasks": m.tasks}))
            .collect();
        let metadata = &mut self.progress.result.metadata;
        metadata.insert("metric_call_budget".into(), Value::from(self.budget));
        metadata.insert("pool_size".into(), Value::from(self.pool.len()));
        metadata.insert(
            "val_aggregate_scores".into(),
            Value::from(self.pool.iter().map(|m| m.mean).collect::<Vec<f64>>()),
        );
        metadata.insert("frontier".into(), Value::from(frontier));
        let stats = &self.stats;
        metadata.insert(
            "gate".into(),
            json!({
                "passed": stats.gate_passed,
                "failed": stats.gate_failed,
                "extended": stats.gate_extended,
                "false_accepts": stats.false_accepts,
                "raced_out": stats.raced_out,
                "superseded": stats.superseded,
            }),
        );
        metadata.insert(
            "merges".into(),
            json!({"tried": stats.merges_tried, "accepted": stats.merges_accepted}),
        );
        let lineage: Vec<Value> = self
            .lineage
            .iter()
            .cloned()
            .chain(self.pool.iter().map(|m| {
                json!({
                    "candidate": m.id,
                    "val_score": m.mean,
                    "parents": m.parents.iter().map(|p| self.pool[*p].id).collect::<Vec<_>>(),
                    "in_pool": true,
                })
            }))
            .collect();
        metadata.insert("lineage".into(), Value::from(lineage));
        progress::finish(self.context, self.progress.result, stop)
    }
}

/// Each task's score over its samples.
fn task_scores(samples: &[Vec<f64>], noise: &Noise) -> Vec<f64> {
    samples
        .iter()
        .map(|s| noise.aggregate.of(s, noise.pass_score))
        .collect()
}

/// Of a step's validations, the one whose gate kept it with the largest paired gain (the
/// first on ties); `None` in a deterministic run, or when no gate kept one.
fn kept_one(raced: &[Raced]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (position, raced) in raced.iter().enumerate() {
        if let Raced::Done(Validation {
            gate: Some((comparison, _)),
            ..
        }) = raced
            && comparison.accepted
            && best.is_none_or(|(_, gain)| comparison.difference.mean > gain)
        {
            best = Some((position, comparison.difference.mean));
        }
    }
    best.map(|(position, _)| position)
}

#[async_trait]
impl Optimizer for Gepa {
    fn name(&self) -> &str {
        OptimizerKind::Gepa.name()
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
        let metadata = progress::metadata(Some(OptimizerKind::Gepa.name()), val.len());
        let start = progress::start(context, self.name(), seed, val, metadata).await;
        let progress = Progress::new(&start);
        let mut rng = Random::new(shared.seed);
        let epochs = Epochs::new(train.len(), &mut rng);
        let mut search = Search {
            context,
            shared,
            settings,
            client: &self.client,
            train,
            val,
            goal,
            limits: body_limits(&seed.body),
            pool: vec![Member {
                id: 0,
                skill: seed.clone(),
                samples: start.samples.clone(),
                scores: task_scores(&start.samples, &context.noise()),
                mean: start.result.baseline_score,
                parents: Vec::new(),
                ancestors: BTreeSet::new(),
                next_component: 0,
            }],
            best: 0,
            progress,
            rng,
            epochs,
            next_id: 1,
            rejected: VecDeque::new(),
            seen: HashMap::from([(identity(seed), 0)]),
            tried_merges: HashSet::new(),
            stats: Stats::default(),
            lineage: Vec::new(),
            idle_steps: 0,
            // A minibatch holds the whole train split at most.
            budget: settings
                .metric_calls
                .calls(val.len(), shared.minibatch_size.min(train.len())),
            said_clamped: false,
        };
        let mut stop = start.stop;
        if train.is_empty() && stop.is_none() {
            stop = Some(StopReason::RoundsDone { rounds: 0 });
        }
        let mut step = 0;
        while stop.is_none() {
            if let Some(reason) = search.why_stop() {
                stop = Some(reason);
                break;
            }
            step += 1;
            if let ControlFlow::Break(reason) = search.step(step).await {
                stop = Some(reason);
            }
        }
        let stop = stop.unwrap_or(StopReason::RoundsDone { rounds: step });
        search.finish(stop)
    }
}
