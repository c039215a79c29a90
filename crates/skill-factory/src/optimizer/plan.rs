//! The `optimizer` block resolved for a run: the optimizer it selects, the settings every
//! optimizer reads, and the settings only the selected one reads.
//!
//! The block stays flat in the file, because the reference tool's configs set keys of every
//! optimizer side by side. [`OptimizerPlan::from_config`] sorts it once, so each backend is
//! built from its own settings and cannot come to depend on another's key. What the run
//! enforces around any optimizer (`max_workers`, `max_skill_tokens`, `protected`,
//! `max_metric_calls` as a hard stop, `budget`) is not in the plan: the run and the session read it from the block,
//! and the backends meet it through the [`RunContext`](super::RunContext). `lm` and
//! `reflection_lm` are read by nothing (docs/compatibility.md).

use std::sync::Arc;

use skill_factory_llm::ChatModel;

use super::bridge::Bridge;
use super::{Gepa, LlmLoop, Optimizer, SkillOpt};
use crate::config::{
    ComponentSelector, OptimizerConfig, OptimizerKind, ReflectionStyle, UnknownOptimizer,
};

/// What an `optimizer` block asks a run for: its optimizer, and that optimizer's settings.
#[derive(Debug, Clone)]
pub struct OptimizerPlan {
    /// The settings every optimizer reads.
    pub shared: SharedSettings,
    /// The selected optimizer, with the settings only it reads.
    pub backend: BackendSettings,
}

/// The settings all three optimizers read.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedSettings {
    /// Train tasks per minibatch.
    pub minibatch_size: usize,
    /// Rounds in a row without improvement before stopping (for `gepa`, steps that score
    /// nothing new).
    pub patience: usize,
    /// Seed of the search's draws, separate from the split's.
    pub seed: u64,
    /// What the skill should achieve; empty for the default sentence.
    pub goal: String,
    /// A candidate must beat the best by more than this.
    pub min_delta: f64,
}

/// The selected optimizer and the settings only it reads.
#[derive(Debug, Clone)]
pub enum BackendSettings {
    /// `llm_loop`.
    LlmLoop(LlmLoopSettings),
    /// `gepa` (or `dspy_gepa`).
    Gepa(GepaSettings),
    /// `skillopt`, native or through its bridge.
    SkillOpt(SkillOptSettings),
}

/// What only `llm_loop` reads.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmLoopSettings {
    /// Most rounds.
    pub rounds: usize,
    /// Proposals per round (at least 1).
    pub max_edits_per_round: usize,
    /// How proposals are asked for.
    pub reflection: ReflectionStyle,
}

/// What only `gepa` reads. It has no `rounds`: as in the reference, the metric-call budget
/// ends the search.
#[derive(Debug, Clone, PartialEq)]
pub struct GepaSettings {
    /// Proposals per parent in a step.
    pub max_edits_per_round: usize,
    /// How proposals are asked for.
    pub reflection: ReflectionStyle,
    /// Parents mutated at once in a step.
    pub parents: usize,
    /// Whether frontier members that share an ancestor are merged.
    pub merge: bool,
    /// Most merges tried in a run.
    pub max_merges: usize,
    /// Whether a near tie on the minibatch extends the gate by the next minibatch.
    pub adaptive_gate: bool,
    /// How many times the best child that passed its gate is reflected on again before
    /// validation.
    pub deepen: usize,
    /// Which component a mutation rewrites.
    pub component_selector: ComponentSelector,
    /// Most rollouts the search scores.
    pub metric_calls: MetricCallBudget,
}

/// How many rollouts a `gepa` search may score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricCallBudget {
    /// `max_metric_calls`, as set.
    Calls(u64),
    /// The `auto` preset's number of candidates (light 6, medium 12, heavy 18), which is only
    /// a number of rollouts once the split is known.
    Candidates(u64),
}

impl MetricCallBudget {
    fn of(config: &OptimizerConfig) -> Self {
        if let Some(calls) = config.max_metric_calls {
            return MetricCallBudget::Calls(calls);
        }
        // Validation refuses an unknown preset in a `gepa` block; one built in code gets the
        // smallest.
        MetricCallBudget::Candidates(match config.auto.trim().to_lowercase().as_str() {
            "medium" => 12,
            "heavy" => 18,
            _ => 6,
        })
    }

    /// The rollouts of a search on `val` validation tasks with minibatches of
    /// `minibatch_size`: the calls as set, else the baseline plus, for each candidate, its
    /// validation and a gated minibatch for it and its parent.
    pub fn calls(self, val: usize, minibatch_size: usize) -> u64 {
        match self {
            MetricCallBudget::Calls(calls) => calls,
            MetricCallBudget::Candidates(candidates) => {
                let val = val as u64;
                val + candidates * (val + 2 * minibatch_size as u64)
            }
        }
    }
}

/// What only `skillopt` reads.
#[derive(Debug, Clone)]
pub struct SkillOptSettings {
    /// Most rounds.
    pub rounds: usize,
    /// Most edits of the first round; the limit decays to `min_patch_edits` at the last.
    pub max_patch_edits: usize,
    /// Most edits of the last round.
    pub min_patch_edits: usize,
    /// The external command that runs instead of the native search (`params.command`); the
    /// other settings are then unused.
    pub bridge: Option<Bridge>,
}

impl OptimizerPlan {
    /// The plan of an `optimizer` block, or why its name selects no optimizer.
    pub fn from_config(config: &OptimizerConfig) -> Result<Self, UnknownOptimizer> {
        let backend = match config.name.parse()? {
            OptimizerKind::LlmLoop => BackendSettings::LlmLoop(LlmLoopSettings {
                rounds: config.rounds,
                max_edits_per_round: config.max_edits_per_round,
                reflection: config.reflection,
            }),
            OptimizerKind::Gepa => BackendSettings::Gepa(GepaSettings {
                max_edits_per_round: config.max_edits_per_round,
                reflection: config.reflection,
                parents: config.parents,
                merge: config.merge,
                max_merges: config.max_merges,
                adaptive_gate: config.adaptive_gate,
                deepen: config.deepen,
                component_selector: config.component_selector,
                metric_calls: MetricCallBudget::of(config),
            }),
            OptimizerKind::SkillOpt => BackendSettings::SkillOpt(SkillOptSettings {
                rounds: config.rounds,
                max_patch_edits: config.max_patch_edits,
                min_patch_edits: config.min_patch_edits,
                bridge: Bridge::configured(&config.params),
            }),
        };
        Ok(OptimizerPlan {
            shared: SharedSettings {
                minibatch_size: config.minibatch_size,
                patience: config.patience,
                seed: config.seed,
                goal: config.goal.clone(),
                min_delta: config.min_delta,
            },
            backend,
        })
    }

    /// The most rounds the search runs: `rounds` for `llm_loop` and the native `skillopt`, 0
    /// for a search with no round limit (`gepa`, whose metric-call budget ends it, and the
    /// bridge, which runs one command).
    pub fn rounds(&self) -> usize {
        match &self.backend {
            BackendSettings::LlmLoop(settings) => settings.rounds,
            BackendSettings::SkillOpt(SkillOptSettings {
                rounds,
                bridge: None,
                ..
            }) => *rounds,
            BackendSettings::SkillOpt(_) | BackendSettings::Gepa(_) => 0,
        }
    }

    /// The optimizer, proposing edits with the model `client` gives. The bridge runs a
    /// command, not a model, so `client` is only called when a search needs one: a bridged
    /// run asks for no API key.
    pub fn build<E>(
        self,
        client: impl FnOnce() -> Result<Arc<dyn ChatModel>, E>,
    ) -> Result<Box<dyn Optimizer>, E> {
        let OptimizerPlan { shared, backend } = self;
        Ok(match backend {
            BackendSettings::SkillOpt(SkillOptSettings {
                bridge: Some(bridge),
                ..
            }) => Box::new(bridge),
            BackendSettings::SkillOpt(settings) => {
                Box::new(SkillOpt::new(client()?, shared, settings))
            }
            BackendSettings::Gepa(settings) => Box::new(Gepa::new(client()?, shared, settings)),
            BackendSettings::LlmLoop(settings) => {
                Box::new(LlmLoop::new(client()?, shared, settings))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Command;

    fn plan(edit: impl FnOnce(&mut OptimizerConfig)) -> OptimizerPlan {
        let mut config = OptimizerConfig::default();
        edit(&mut config);
        OptimizerPlan::from_config(&config).unwrap()
    }

    #[test]
    fn each_key_reaches_only_the_optimizers_that_read_it() {
        let gepa = plan(|c| {
            c.name = "dspy_gepa".into();
            c.minibatch_size = 3;
            c.parents = 2;
            c.max_patch_edits = 9;
        });
        assert_eq!(gepa.shared.minibatch_size, 3);
        let BackendSettings::Gepa(settings) = gepa.backend else {
            panic!("{:?}", gepa.backend)
        };
        assert_eq!((settings.parents, settings.deepen), (2, 2));

        let skillopt = plan(|c| {
            c.name = "SkillOpt".into();
            c.rounds = 5;
            c.max_patch_edits = 9;
        });
        let BackendSettings::SkillOpt(settings) = skillopt.backend else {
            panic!("{:?}", skillopt.backend)
        };
        assert_eq!((settings.rounds, settings.max_patch_edits), (5, 9));
        assert!(settings.bridge.is_none());
    }

    #[test]
    fn only_the_searches_that_count_rounds_have_a_round_limit() {
        let rounds = |name: &str, command: Option<Command>| {
            plan(|c| {
                c.name = name.into();
                c.rounds = 3;
                c.params.command = command;
            })
            .rounds()
        };
        assert_eq!(rounds("llm_loop", None), 3);
        assert_eq!(rounds("skillopt", None), 3);
        assert_eq!(rounds("gepa", None), 0, "its metric-call budget ends it");
        assert_eq!(rounds("skillopt", Some(Command::Line("true".into()))), 0);
    }

    #[test]
    fn a_skillopt_block_with_a_command_plans_the_bridge() {
        let bridged = plan(|c| {
            c.name = "skillopt".into();
            c.params.command = Some(Command::Line("true".into()));
        });
        assert!(matches!(
            bridged.backend,
            BackendSettings::SkillOpt(SkillOptSettings {
                bridge: Some(_),
                ..
            })
        ));
        let ignored = plan(|c| c.params.command = Some(Command::Line("true".into())));
        assert!(matches!(ignored.backend, BackendSettings::LlmLoop(_)));
    }

    #[test]
    fn an_unknown_name_is_refused_as_when_parsed() {
        let config = OptimizerConfig {
            name: "annealing".into(),
            ..OptimizerConfig::default()
        };
        assert_eq!(
            OptimizerPlan::from_config(&config).unwrap_err(),
            "annealing".parse::<OptimizerKind>().unwrap_err()
        );
    }

    #[test]
    fn max_metric_calls_wins_over_the_auto_preset() {
        let budget = |edit: fn(&mut OptimizerConfig)| {
            let mut config = OptimizerConfig::default();
            edit(&mut config);
            MetricCallBudget::of(&config).calls(10, 4)
        };
        assert_eq!(budget(|_| {}), 10 + 6 * (10 + 8));
        assert_eq!(budget(|c| c.auto = " Heavy ".into()), 10 + 18 * (10 + 8));
        assert_eq!(budget(|c| c.auto = "turbo".into()), 10 + 6 * (10 + 8));
        assert_eq!(
            budget(|c| {
                c.auto = "heavy".into();
                c.max_metric_calls = Some(7);
            }),
            7
        );
    }
}
