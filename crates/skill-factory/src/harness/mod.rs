//! Harnesses: run a skill on one task and return a rollout.
//!
//! A harness never fails as a whole for one task: every per-task problem becomes a failed
//! rollout that says why, which every metric scores 0.

use async_trait::async_trait;
use skill_factory_core::{Rollout, Skill, Task};

/// Runs a skill on one task.
#[async_trait]
pub trait Harness: Send + Sync {
    /// The harness name (`api`, `subprocess`, `claude_code`, ...), recorded in rollouts.
    fn name(&self) -> &str;
    /// Runs the skill on the task. Never fails: problems become a failed rollout.
    async fn run(&self, skill: &Skill, task: &Task) -> Rollout;
}

pub mod api;

pub use api::ApiHarness;
