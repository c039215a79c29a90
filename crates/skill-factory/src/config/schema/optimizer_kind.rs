//! Which optimizer `optimizer.name` selects.
//!
//! The name stays a string in the file, so a config written for the reference tool loads
//! whatever it names; it becomes an [`OptimizerKind`] when a run needs one, and only then is
//! an unknown name an error (placed at `optimizer.name`).

use std::str::FromStr;

use skill_factory_config::closest;

/// An optimizer this build can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OptimizerKind {
    /// `llm_loop`: the reference tool's validation-gated rewrite loop.
    LlmLoop,
    /// `gepa` (the reference's `dspy_gepa`): component mutation on a Pareto frontier.
    Gepa,
    /// `skillopt`: bounded edit patches, or the bridge to an external command.
    SkillOpt,
}

impl OptimizerKind {
    /// Every kind, in the order `skill-factory list` and the unknown-name error show them.
    pub const ALL: [OptimizerKind; 3] = [
        OptimizerKind::LlmLoop,
        OptimizerKind::Gepa,
        OptimizerKind::SkillOpt,
    ];

    /// The canonical name, the one reports and result files record.
    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::LlmLoop => "llm_loop",
            OptimizerKind::Gepa => "gepa",
            OptimizerKind::SkillOpt => "skillopt",
        }
    }

    /// Other names that select it: the reference tool's, so its configs run unchanged.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            OptimizerKind::Gepa => &["dspy_gepa"],
            OptimizerKind::LlmLoop | OptimizerKind::SkillOpt => &[],
        }
    }

    /// One line on it, for `skill-factory list`.
    pub fn description(self) -> &'static str {
        match self {
            OptimizerKind::LlmLoop => {
                "rewrites the whole body from a minibatch's failures; keeps a rewrite only if it beats the best on validation"
            }
            OptimizerKind::Gepa => {
                "mutates one component at a time, parents from the per-task Pareto frontier, minibatch-gated, with merges (alias dspy_gepa)"
            }
            OptimizerKind::SkillOpt => {
                "bounded edit patches from failures and successes, a decaying edit limit, strict validation gate; params.command runs Microsoft's bridge"
            }
        }
    }

    /// The canonical names, comma-separated: `llm_loop, gepa, skillopt`.
    pub fn available() -> String {
        Self::ALL.map(OptimizerKind::name).join(", ")
    }
}

impl FromStr for OptimizerKind {
    type Err = UnknownOptimizer;

    /// The kind `name` selects, trimmed and in any case (`LLM_Loop` is `llm_loop`), aliases
    /// included.
    fn from_str(name: &str) -> Result<Self, UnknownOptimizer> {
        let wanted = name.trim().to_lowercase();
        let named = |kind: &OptimizerKind| {
            kind.name() == wanted || kind.aliases().contains(&wanted.as_str())
        };
        if let Some(kind) = Self::ALL.into_iter().find(named) {
            return Ok(kind);
        }
        // Canonical names before aliases, so a tie suggests the name this build records.
        let names: Vec<&str> = Self::ALL
            .iter()
            .map(|kind| kind.name())
            .chain(
                Self::ALL
                    .iter()
                    .flat_map(|kind| kind.aliases().iter().copied()),
            )
            .collect();
        let hint = closest(&wanted, &names)
            .map(|name| format!(" (did you mean '{name}'?)"))
            .unwrap_or_default();
        Err(UnknownOptimizer::Unknown {
            name: name.trim().to_string(),
            hint,
        })
    }
}

/// Why `optimizer.name` selects no optimizer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownOptimizer {
    /// A name nobody knows.
    #[error(
        "Unknown optimizer '{name}'{hint}. Available: {}. Set optimizer.name to one of them",
        OptimizerKind::available()
    )]
    Unknown {
        /// The name as configured, trimmed.
        name: String,
        /// ` (did you mean 'gepa'?)` when a name is close.
        hint: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optimizer_names_are_trimmed_and_case_insensitive() {
        assert_eq!(" LLM_Loop ".parse(), Ok(OptimizerKind::LlmLoop));
        assert_eq!("SkillOpt".parse(), Ok(OptimizerKind::SkillOpt));
    }

    #[test]
    fn the_reference_names_run_the_native_optimizers() {
        assert_eq!("dspy_gepa".parse(), Ok(OptimizerKind::Gepa));
        assert_eq!(OptimizerKind::Gepa.name(), "gepa");
    }

    #[test]
    fn an_unknown_name_says_what_is_available_and_the_closest() {
        let unknown = "skilopt".parse::<OptimizerKind>().unwrap_err().to_string();
        assert_eq!(
            unknown,
            "Unknown optimizer 'skilopt' (did you mean 'skillopt'?). Available: llm_loop, gepa, skillopt. Set optimizer.name to one of them"
        );
        let far = " annealing "
            .parse::<OptimizerKind>()
            .unwrap_err()
            .to_string();
        assert!(
            far.starts_with("Unknown optimizer 'annealing'. Available"),
            "{far}"
        );
    }

    #[test]
    fn an_alias_is_suggested_too() {
        let unknown = "dspy_gep".parse::<OptimizerKind>().unwrap_err().to_string();
        assert!(
            unknown.starts_with("Unknown optimizer 'dspy_gep' (did you mean 'dspy_gepa'?)"),
            "{unknown}"
        );
    }
}
