//! The harness of trigger runs (`kind: trigger`): does the agent load the skill when it should?
//!
//! An agent decides from the frontmatter `description` alone whether to load a skill, so a
//! skill with a good body helps only when its description makes the agent load it for the
//! requests it serves, and not for near misses. A trigger run makes that measurable and
//! optimizable with everything skill mode has (splits, samples, intervals, gates, the run
//! folder, every optimizer):
//!
//! * the dataset is a trigger set ([`skill_factory_core::trigger`]): queries marked
//!   `should_trigger`;
//! * the harness ([`TriggerHarness`]) shows the candidate and the `distractors` to an agent
//!   and reports whether it loaded the candidate: the `api` harness asks the target model
//!   with the routing request of [`route`]; `claude_code`, `codex` and `gemini_cli` run the
//!   real CLI in a fresh working folder with the skills installed, and read its event stream
//!   ([`detect`]);
//! * the metric ([`crate::metric::trigger`]) scores 1 for the right decision and says which way a
//!   wrong one went, so the score is trigger accuracy and the reflection shows the missed and
//!   the false-triggered queries;
//! * the harness shows no body ([`crate::harness::Harness::shows_body`]), so every optimizer
//!   rewrites the description alone, held to the Agent Skills rules and to the honesty rule
//!   (no query copied into it).
//!
//! A skill-mode run with a `trigger` block scores its tasks and a trigger set together:
//! [`Beside`] hands each query to the trigger harness and each task to the run's own, so an
//! optimizer that rewrites the body and the description sees both kinds of failure.

pub mod detect;
pub mod draft;
pub mod route;

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use serde_json::Value;
use skill_factory_core::trigger::{
    LOADED, LOADED_KEY, LOADED_SKILLS, NOT_LOADED, SHOULD_TRIGGER, should_trigger,
};
use skill_factory_core::{Rollout, Skill, Task};
use skill_factory_llm::ChatModel;

use super::api::answered;
use super::workspace::skill_folder_name;
use super::{AgentCli, BudgetedHarness, Harness, SubprocessHarness};
use crate::config::Role;
use crate::error::EngineError;
use crate::session::{Session, read_skill};
use route::Listed;

/// Characters of a router's reply kept in the rollout's metadata.
const REPLY_CHARS: usize = 200;

/// The trigger harness of the session: the router for `api`, else the agent CLI watched.
pub fn harness(session: &Session) -> Result<Arc<dyn Harness>, EngineError> {
    let config = &session.config.config.harness;
    let competitors = distractors(session)?;
    let listed = competitors.iter().map(listing).collect();
    let way = match AgentCli::for_harness(config.harness_type) {
        None => Way::Route {
            client: session.client(Role::Target)?,
            temperature: config.temperature,
            max_tokens: config.max_tokens,
        },
        Some(cli) => {
            let process = SubprocessHarness::from_config(config, session)?.watching(competitors);
            Way::Agent {
                cli,
                inner: Arc::new(BudgetedHarness::new(
                    Arc::new(process),
                    session.ledger().clone(),
                )),
            }
        }
    };
    Ok(Arc::new(TriggerHarness {
        way,
        competitors: listed,
    }))
}

/// The config's `distractors`, read; one named as the seed is refused, since an agent could
/// not tell the two apart.
fn distractors(session: &Session) -> Result<Vec<Skill>, EngineError> {
    let seed = skill_folder_name(&session.skill.name);
    let mut skills: Vec<Skill> = Vec::new();
    for path in &session.config.config.distractors {
        let skill = read_skill(path)?;
        let name = skill_folder_name(&skill.name);
        if name == seed || skills.iter().any(|s| skill_folder_name(&s.name) == name) {
            return Err(session.block_error(
                "distractors",
                format!(
                    "{} is named '{name}' like another skill of the run; an agent could not tell them apart: rename one",
                    path.display()
                ),
            ));
        }
        skills.push(skill);
    }
    Ok(skills)
}

/// How a skill is listed to an agent: the name it is installed under, its description.
fn listing(skill: &Skill) -> Listed {
    Listed {
        name: skill_folder_name(&skill.name),
        description: skill.description.clone(),
    }
}

/// How the decision is taken.
enum Way {
    /// The target model, asked with the routing request ([`route`]).
    Route {
        client: Arc<dyn ChatModel>,
        temperature: f64,
        max_tokens: u32,
    },
    /// A real agent CLI with the skills installed, its event stream read ([`detect`]).
    Agent {
        cli: AgentCli,
        inner: Arc<dyn Harness>,
    },
}

/// Runs a query with the candidate among the distractors and reports whether the agent
/// loaded the candidate: the output is [`LOADED`] or [`NOT_LOADED`], the metadata holds
/// [`LOADED_KEY`], [`SHOULD_TRIGGER`] and the names loaded ([`LOADED_SKILLS`]).
pub struct TriggerHarness {
    way: Way,
    competitors: Vec<Listed>,
}

impl TriggerHarness {
    async fn run_query(&self, skill: &Skill, task: &Task, sample: u32) -> Rollout {
        let me = listing(skill);
        match &self.way {
            Way::Route {
                client,
                temperature,
                max_tokens,
            } => {
                let mut skills = vec![me.clone()];
                skills.extend(self.competitors.iter().cloned());
                let request =
                    route::request(&skills, &task.input, *temperature, *max_tokens, sample);
                let started = Instant::now();
                let mut rollout = answered(&task.id, client.chat(&request).await);
                if rollout.ok() {
                    // The name comes first: a reply cut at max_tokens still says it.
                    let chose = route::chosen(&rollout.output, &skills).map(|s| s.name.clone());
                    // What the model said, for a reader asking why it chose so.
                    let reply: String = rollout.output.trim().chars().take(REPLY_CHARS).collect();
                    rollout.metadata.insert("reply".into(), Value::from(reply));
                    decide(&mut rollout, &me.name, chose.into_iter().collect());
                }
                rollout.latency_ms = (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
                rollout
            }
            Way::Agent { cli, inner } => {
                let rollout = inner.run_sample(skill, task, sample).await;
                if !rollout.ok() {
                    return rollout;
                }
                let mut rollout = rollout;
                let loaded = detect::loaded(*cli, &rollout.output);
                // The stream was read; what it said is the decision.
                rollout.metadata.remove("stdout");
                decide(&mut rollout, &me.name, loaded);
                rollout
            }
        }
    }
}

/// `rollout` made the record of a decision: `loaded` are the skills the agent loaded, the
/// output says whether the candidate (`name`) was one of them.
fn decide(rollout: &mut Rollout, name: &str, loaded: Vec<String>) {
    let hit = loaded.iter().any(|n| n == name);
    rollout.output = if hit { LOADED } else { NOT_LOADED }.to_owned();
    rollout.metadata.insert(LOADED_KEY.into(), Value::Bool(hit));
    rollout.metadata.insert(
        LOADED_SKILLS.into(),
        Value::from(loaded.into_iter().map(Value::from).collect::<Vec<_>>()),
    );
}

/// A skill-mode run's harness when it carries a trigger set: the queries
/// ([`should_trigger`]) go to the trigger harness, the tasks to the run's own.
pub struct Beside {
    tasks: Arc<dyn Harness>,
    queries: Arc<dyn Harness>,
}

impl Beside {
    /// The harness of `tasks`, with `queries` (a [`TriggerHarness`]) for the trigger set.
    pub fn new(tasks: Arc<dyn Harness>, queries: Arc<dyn Harness>) -> Self {
        Beside { tasks, queries }
    }
}

#[async_trait]
impl Harness for Beside {
    fn name(&self) -> &str {
        self.tasks.name()
    }

    /// The queries show the description to the agent that decides, whatever the tasks'
    /// harness shows.
    fn shows_description(&self) -> bool {
        true
    }

    fn shows_body(&self) -> bool {
        self.tasks.shows_body()
    }

    fn shows_files(&self) -> bool {
        self.tasks.shows_files()
    }

    async fn run_sample(&self, skill: &Skill, task: &Task, sample: u32) -> Rollout {
        let harness = if should_trigger(task).is_some() {
            &self.queries
        } else {
            &self.tasks
        };
        harness.run_sample(skill, task, sample).await
    }
}

#[async_trait]
impl Harness for TriggerHarness {
    fn name(&self) -> &str {
        match &self.way {
            Way::Route { .. } => "api",
            Way::Agent { inner, .. } => inner.name(),
        }
    }

    fn shows_body(&self) -> bool {
        false
    }

    async fn run_sample(&self, skill: &Skill, task: &Task, sample: u32) -> Rollout {
        let mut rollout = self.run_query(skill, task, sample).await;
        if let Some(should) = should_trigger(task) {
            rollout
                .metadata
                .insert(SHOULD_TRIGGER.into(), Value::Bool(should));
        }
        rollout
            .metadata
            .entry("harness")
            .or_insert_with(|| Value::from(self.name()));
        rollout
    }
}
