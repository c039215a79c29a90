//! The harness of a run over several targets: each task copy ([`skill_factory_core::target`])
//! runs on its own target's harness, built from that target's view of the config
//! ([`crate::session::Session::for_target`]).

use std::sync::Arc;

use async_trait::async_trait;
use skill_factory_core::target::target_of;
use skill_factory_core::{Rollout, Skill, Task};

use super::Harness;

/// Sends each task to the harness of its target.
pub struct TargetsHarness {
    targets: Vec<(String, Arc<dyn Harness>)>,
}

impl TargetsHarness {
    /// The harnesses of the targets, by name.
    pub fn new(targets: Vec<(String, Arc<dyn Harness>)>) -> Self {
        TargetsHarness { targets }
    }

    fn of(&self, task: &Task) -> Option<&Arc<dyn Harness>> {
        let name = target_of(task)?;
        self.targets.iter().find(|(n, _)| n == name).map(|(_, h)| h)
    }
}

#[async_trait]
impl Harness for TargetsHarness {
    fn name(&self) -> &str {
        "targets"
    }

    fn shows_description(&self) -> bool {
        self.targets.iter().any(|(_, h)| h.shows_description())
    }

    fn shows_body(&self) -> bool {
        self.targets.iter().any(|(_, h)| h.shows_body())
    }

    fn shows_files(&self) -> bool {
        self.targets.iter().any(|(_, h)| h.shows_files())
    }

    async fn run_sample(&self, skill: &Skill, task: &Task, sample: u32) -> Rollout {
        match self.of(task) {
            Some(harness) => harness.run_sample(skill, task, sample).await,
            None => Rollout::failure(
                &task.id,
                format!(
                    "task {} names no target of the run ({})",
                    task.id,
                    self.targets
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        }
    }
}
