//! The System One metric: yes/no rubric checks about the output, answered with a calibrated
//! P(true) by a System One decision model (TypeSafe's jev); a cheap, deterministic alternative
//! to the LLM judge.
//!
//! The model reads one *state* per rollout:
//!
//! ```text
//! === INPUT ===
//! <task input>
//!
//! === OUTPUT ===
//! <output, or "(empty)">
//! ```
//!
//! followed, with `include_expected` and when the task has one, by a blank line,
//! `=== REFERENCE ===` and the expected answer. Each check is asked as a question whose
//! instructions are [`PREAMBLE`], a blank line and the check's question. Answers are cached by
//! (state hash, question hash, model), so scoring the same output again costs nothing, and
//! every check missing from the cache is asked in one request.
//!
//! Score = Σ wᵢ·vᵢ / Σ wᵢ where vᵢ = P(true), or with a `threshold` 1 when P(true) ≥ threshold
//! and 0 otherwise. Feedback lists the checks with P(true) < 0.5 as
//! `<name>: P(true)=<p> (<false criterion>)`, joined by `; `, or says `all checks pass`. A
//! failed rollout scores 0 without a request; a failed request scores 0 with
//! `System One check failed: <why>` (as in the reference tool).

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use skill_factory_core::{MetricResult, Rollout, Task, Usage};
use skill_factory_llm::systemone::{
    AnswerCache, AnswerKey, CachedAnswer, DecisionModel, Question, sha24,
};

use super::{Metric, NotApplicable};
use crate::pyrepr::repr_float;

/// The metric's name in feedback and breakdowns.
pub const NAME: &str = "systemone";

/// What every check's instructions start with (the reference tool's text, so that its cached
/// answers are ours).
pub const PREAMBLE: &str = "You are checking one output of an AI agent against its input. The state holds the INPUT the agent received and the OUTPUT it produced. Answer only about the output.";

/// One yes/no check.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemOneCheck {
    /// Short id, unique among the checks; also the question id in requests.
    pub name: String,
    /// The question about the output.
    pub question: String,
    /// What "true" means (default `Yes: <question>`).
    pub if_true: String,
    /// What "false" means (default `No: <question>`); quoted in feedback when the check fails.
    pub if_false: String,
    /// Weight among the checks (> 0).
    pub weight: f64,
}

impl SystemOneCheck {
    /// A check; missing criteria default to `Yes: <question>` and `No: <question>`.
    pub fn new(
        name: impl Into<String>,
        question: impl Into<String>,
        if_true: Option<String>,
        if_false: Option<String>,
        weight: f64,
    ) -> Self {
        let question = question.into();
        SystemOneCheck {
            name: name.into(),
            if_true: if_true.unwrap_or_else(|| format!("Yes: {question}")),
            if_false: if_false.unwrap_or_else(|| format!("No: {question}")),
            question,
            weight,
        }
    }

    /// The question as the model receives it.
    pub fn compiled(&self) -> Question {
        Question::new(
            format!("{PREAMBLE}\n\n{}", self.question),
            self.if_true.clone(),
            self.if_false.clone(),
        )
    }
}

/// Scores outputs with System One checks.
pub struct SystemOneMetric {
    model: Arc<dyn DecisionModel>,
    cache: Arc<AnswerCache>,
    /// Each check with its compiled question and that question's hash.
    checks: Vec<(SystemOneCheck, Question, String)>,
    threshold: Option<f64>,
    include_expected: bool,
}

impl SystemOneMetric {
    /// A metric asking `model`, caching in `cache`. Fails without checks, on a duplicate name,
    /// a weight that is not a positive number, or a threshold outside [0, 1].
    pub fn new(
        model: Arc<dyn DecisionModel>,
        cache: Arc<AnswerCache>,
        checks: Vec<SystemOneCheck>,
        threshold: Option<f64>,
        include_expected: bool,
    ) -> Result<Self, String> {
        if checks.is_empty() {
            return Err("the systemone metric needs at least one check in 'checks'".to_string());
        }
        let mut names = HashSet::new();
        for check in &checks {
            if !names.insert(check.name.as_str()) {
                return Err(format!(
                    "check name '{}' is used twice: give every check its own name",
                    check.name
                ));
            }
            if !(check.weight.is_finite() && check.weight > 0.0) {
                return Err(format!(
                    "check '{}' has weight {}: a weight must be a number greater than 0",
                    check.name,
                    repr_float(check.weight)
                ));
            }
        }
        if let Some(t) = threshold.filter(|t| !(0.0..=1.0).contains(t)) {
            return Err(format!(
                "threshold {} is not a probability between 0 and 1",
                repr_float(t)
            ));
        }
        let checks = checks
            .into_iter()
            .map(|check| {
                let question = check.compiled();
                let hash = question.hash();
                (check, question, hash)
            })
            .collect();
        Ok(SystemOneMetric {
            model,
            cache,
            checks,
            threshold,
            include_expected,
        })
    }

    /// The state the model reads for this task and rollout.
    pub fn state(&self, task: &Task, rollout: &Rollout) -> String {
        let output = if rollout.output.is_empty() {
            "(empty)"
        } else {
            rollout.output.as_str()
        };
        let mut state = format!("=== INPUT ===\n{}\n\n=== OUTPUT ===\n{output}", task.input);
        if self.include_expected
            && let Some(expected) = &task.expected
        {
            state.push_str(&format!("\n\n=== REFERENCE ===\n{expected}"));
        }
        state
    }

    fn key(&self, state_hash: &str, question_hash: &str) -> AnswerKey {
        AnswerKey::new(state_hash, question_hash, self.model.model())
    }

    fn grade(&self, probabilities: &[f64]) -> MetricResult {
        let mut weighted = 0.0;
        let mut total_weight = 0.0;
        let mut failing = Vec::new();
        let mut parts = Vec::with_capacity(self.checks.len());
        for ((check, _, _), &p) in self.checks.iter().zip(probabilities) {
            let value = match self.threshold {
                Some(threshold) => f64::from(u8::from(p >= threshold)),
                None => p,
            };
            weighted += check.weight * value;
            total_weight += check.weight;
            if p < 0.5 {
                failing.push(format!(
                    "{}: P(true)={p:.2} ({})",
                    check.name, check.if_false
                ));
            }
            parts.push((check.name.clone(), value));
        }
        let feedback = if failing.is_empty() {
            "all checks pass".to_string()
        } else {
            failing.join("; ")
        };
        let result = MetricResult::new(NAME, weighted / total_weight, feedback);
        parts
            .into_iter()
            .fold(result, |r, (name, value)| r.with_part(name, value))
    }
}

#[async_trait]
impl Metric for SystemOneMetric {
    fn name(&self) -> &str {
        NAME
    }

    async fn score(&self, task: &Task, rollout: &Rollout) -> Result<MetricResult, NotApplicable> {
        if let Some(error) = &rollout.error {
            return Ok(super::rollout_failed(NAME, error));
        }
        let state = self.state(task, rollout);
        let state_hash = sha24(&state);
        let mut probabilities: Vec<Option<f64>> = self
            .checks
            .iter()
            .map(|(_, _, hash)| self.cache.get(&self.key(&state_hash, hash)).map(|a| a.p))
            .collect();
        let missing: Vec<usize> = (0..self.checks.len())
            .filter(|i| probabilities[*i].is_none())
            .collect();
        let mut usage = Usage::default();
        if !missing.is_empty() {
            let questions: Vec<(String, Question)> = missing
                .iter()
                .map(|&i| (self.checks[i].0.name.clone(), self.checks[i].1.clone()))
                .collect();
            let answers = match self.model.ask(&state, &questions).await {
                Ok(answers) => answers,
                Err(error) => {
                    return Ok(MetricResult::new(
                        NAME,
                        0.0,
                        format!("System One check failed: {error}"),
                    ));
                }
            };
            usage.input_tokens = answers.input_tokens.unwrap_or(0);
            let mut rows = Vec::with_capacity(missing.len());
            for &i in &missing {
                let (check, _, hash) = &self.checks[i];
                // `ask` returns an answer for every id asked, or an error.
                let p = answers
                    .probabilities
                    .get(&check.name)
                    .copied()
                    .unwrap_or(0.0);
                probabilities[i] = Some(p);
                rows.push((
                    self.key(&state_hash, hash),
                    CachedAnswer {
                        p,
                        version: Some(answers.served_model.clone()),
                    },
                ));
            }
            if let Err(error) = self.cache.insert_all(&rows) {
                tracing::warn!(%error, "System One answers could not be added to the cache file; they will be asked again next run");
            }
        }
        let probabilities: Vec<f64> = probabilities
            .into_iter()
            .map(|p| p.unwrap_or(0.0))
            .collect();
        let mut result = self.grade(&probabilities);
        result.usage = usage;
        Ok(result)
    }
}
