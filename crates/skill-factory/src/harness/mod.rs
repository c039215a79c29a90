//! Harnesses: run a skill on one task and return a rollout.
//!
//! A harness never fails as a whole for one task: every per-task problem becomes a failed
//! rollout that says why, which every metric scores 0.
//!
//! * [`api`]: one model call, the skill body as system prompt;
//! * [`subprocess`]: a child process per rollout, either the user's own command
//!   ([`template`] placeholders) or an agent CLI preset ([`agent`]: Claude Code, Codex,
//!   Gemini CLI, each a table entry), with the skill in the prompt or installed as a real
//!   skill folder ([`workspace`]);
//! * [`budgeted`]: the run's budget in front of a process harness;
//! * [`targets`]: each task copy on the harness of its target, in a run over several.

use std::sync::Arc;

use async_trait::async_trait;
use skill_factory_core::{Rollout, Skill, Task};

use crate::config::{HarnessType, Role};
use crate::error::EngineError;
use crate::session::Session;

/// Runs a skill on one task.
#[async_trait]
pub trait Harness: Send + Sync {
    /// The harness name (`api`, `subprocess`, `claude_code`, ...), recorded in rollouts.
    fn name(&self) -> &str;
    /// Whether what runs sees the skill's frontmatter description (an agent that decides
    /// from it whether to load the skill); optimizers mutate it only then.
    fn shows_description(&self) -> bool {
        true
    }
    /// Whether what runs sees the skill's body. Only a trigger run's harness says no: it
    /// measures whether the agent loads the skill, which it decides from the description
    /// alone, so optimizers rewrite the description only.
    fn shows_body(&self) -> bool {
        true
    }
    /// Whether what runs sees the skill's reference files (a skill folder written for an
    /// agent or a program); optimizers rewrite them only then.
    fn shows_files(&self) -> bool {
        false
    }
    /// Runs the skill on the task as its sample number `sample` (0 for the first): a model
    /// call carries it as its sample index (so each sample is its own cache entry and its
    /// own draw), a program finds it in `SKILL_FACTORY_SAMPLE`. Never fails: problems become
    /// a failed rollout.
    async fn run_sample(&self, skill: &Skill, task: &Task, sample: u32) -> Rollout;
    /// Runs the skill on the task once: its first sample.
    async fn run(&self, skill: &Skill, task: &Task) -> Rollout {
        self.run_sample(skill, task, 0).await
    }
}

pub mod agent;
pub mod api;
pub mod budgeted;
pub mod subprocess;
pub mod targets;
pub mod template;
pub mod trigger;
pub mod workspace;

pub use agent::{AgentCli, AgentOptions};
pub use api::ApiHarness;
pub use budgeted::{BudgetedHarness, HARNESS_ROLE};
pub use subprocess::{ProcessSettings, Program, ProgramError, SubprocessHarness};

/// The harness of the session's `harness` block. Only the `api` harness builds a model client
/// (the target's): the others run a child process and need no provider and no key; the
/// run's budget admits and books each of their rollouts. A skill-mode run with a `trigger`
/// block runs its queries through the trigger harness ([`trigger::Beside`]). A run over
/// several targets runs each task copy on its target's ([`targets::TargetsHarness`]).
pub fn from_config(session: &Session) -> Result<Arc<dyn Harness>, EngineError> {
    let run = &session.config.config;
    if !run.targets.is_empty() {
        let mut targets = Vec::with_capacity(run.targets.len());
        for name in session.target_names() {
            let own = session.for_target(&name)?;
            targets.push((name, from_config(&own)?));
        }
        return Ok(Arc::new(targets::TargetsHarness::new(targets)));
    }
    if run.is_trigger() {
        return trigger::harness(session);
    }
    let tasks = task_harness(session)?;
    if run.trigger.is_none() {
        return Ok(tasks);
    }
    Ok(Arc::new(trigger::Beside::new(
        tasks,
        trigger::harness(session)?,
    )))
}

/// The harness of a skill-mode run's tasks.
fn task_harness(session: &Session) -> Result<Arc<dyn Harness>, EngineError> {
    let config = &session.config.config.harness;
    if config.harness_type == HarnessType::Api {
        let client = session.client(Role::Target)?;
        return Ok(Arc::new(ApiHarness::from_config(config, client)));
    }
    let harness = SubprocessHarness::from_config(config, session)?;
    Ok(Arc::new(BudgetedHarness::new(
        Arc::new(harness),
        session.ledger().clone(),
    )))
}
