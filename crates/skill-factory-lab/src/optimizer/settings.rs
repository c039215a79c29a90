//! `optimizer:` of a classifier config: as written, and as the optimizer reads it.

use serde::Deserialize;
use skill_factory_config::scalar::ScalarText;

use skill_factory_config::locate::Unusable;

/// `optimizer:` of a classifier config.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizerSettings {
    /// Most reflective rounds (with a proposer model).
    pub rounds: usize,
    /// Consecutive refused reflective rounds that end the run.
    pub patience: usize,
    /// Most questions a candidate reads.
    pub max_questions: usize,
    /// Most questions taken from one proposal.
    pub max_new_questions: usize,
    /// The largest state budget a proposal may ask for (none: the budget is fixed).
    pub max_state_budget: Option<usize>,
    /// What the probe set is for, shown to the proposer.
    pub goal: String,
    /// Budget factors at which the candidate families are fitted.
    pub margins: Vec<f64>,
    /// Candidates per family sent to the validation gate.
    pub gate_per_family: usize,
}

impl Default for OptimizerSettings {
    fn default() -> Self {
        OptimizerSettings {
            rounds: 3,
            patience: 2,
            max_questions: 6,
            max_new_questions: 8,
            max_state_budget: None,
            goal: String::new(),
            margins: vec![1.0, 0.5],
            gate_per_family: 3,
        }
    }
}

impl OptimizerSettings {
    /// Reads `optimizer:` (absent = defaults); the error names the key and what it must be.
    pub fn from_file(file: Option<OptimizerFile>) -> Result<Self, Unusable> {
        let mut settings = OptimizerSettings::default();
        let Some(file) = file else {
            return Ok(settings);
        };
        let count = |value: Option<i64>,
                     key: &str,
                     least: i64|
         -> Result<Option<usize>, Unusable> {
            value
                .map(|n| {
                    usize::try_from(n).ok().filter(|_| n >= least).ok_or_else(|| {
                        Unusable::at(
                            format!("optimizer.{key}"),
                            format!("optimizer.{key} must be a whole number of at least {least}, not {n}"),
                        )
                    })
                })
                .transpose()
        };
        if let Some(n) = count(file.rounds, "rounds", 0)? {
            settings.rounds = n;
        }
        if let Some(n) = count(file.patience, "patience", 1)? {
            settings.patience = n;
        }
        if let Some(n) = count(file.max_questions, "max_questions", 1)? {
            settings.max_questions = n;
        }
        if let Some(n) = count(file.max_new_questions, "max_new_questions", 1)? {
            settings.max_new_questions = n;
        }
        settings.max_state_budget = count(file.max_state_budget, "max_state_budget", 1)?;
        if let Some(n) = count(file.gate_per_family, "gate_per_family", 1)? {
            settings.gate_per_family = n;
        }
        if let Some(goal) = file.goal {
            settings.goal = goal.0;
        }
        if let Some(margins) = file.margins {
            if margins.is_empty() {
                return Err(Unusable::at(
                    "optimizer.margins",
                    "optimizer.margins must be a non-empty list of budget factors (like [1.0, 0.5]), not []",
                ));
            }
            if let Some(bad) = margins.iter().find(|m| !(**m > 0.0 && m.is_finite())) {
                return Err(Unusable::at(
                    "optimizer.margins",
                    format!("optimizer.margins must be numbers above 0, not {bad}"),
                ));
            }
            settings.margins = margins;
        }
        Ok(settings)
    }
}

/// The `optimizer` block: how the optimizer searches; every key is optional.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptimizerFile {
    /// Most reflective rounds, each asking `optimizer_provider` for new questions; none run
    /// without it (default 3; 0 for selection only).
    #[serde(default)]
    rounds: Option<i64>,
    /// Refused reflective rounds in a row that end the run, at least 1 (default 2).
    #[serde(default)]
    patience: Option<i64>,
    /// Most questions one candidate's score reads, at least 1 (default 6).
    #[serde(default)]
    max_questions: Option<i64>,
    /// Most new questions taken from one proposal, at least 1 (default 8).
    #[serde(default)]
    max_new_questions: Option<i64>,
    /// Largest state budget, in characters, a proposal may ask for, at least 1 (default: none,
    /// the seed's budget stays fixed).
    #[serde(default)]
    max_state_budget: Option<i64>,
    /// What the probe set is for, in words, shown to the proposer (default: separate positives
    /// from negatives at a low false-positive rate).
    #[serde(default)]
    goal: Option<ScalarText>,
    /// Factors of the false-positive budget at which each candidate family is fitted on train,
    /// each above 0 (default [1.0, 0.5]).
    #[serde(default)]
    margins: Option<Vec<f64>>,
    /// Best candidates of each family sent to the validation gate, at least 1 (default 3).
    #[serde(default)]
    gate_per_family: Option<i64>,
}
