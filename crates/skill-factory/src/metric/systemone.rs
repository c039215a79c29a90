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
    AnswerCache, AnswerKey, BudgetedDecisions, CachedAnswer, CachedDecisions, DecisionModel,
    Question, SystemOneClient, SystemOneSettings, sha24,
};

use super::{MetricSetupError, Scored, ScoresOutput};
use crate::config::{SystemOneCheck, SystemOneConfig};
use crate::error::EngineError;
use crate::session::Session;

/// The metric's name in feedback and breakdowns.
pub const NAME: &str = "systemone";

/// What every check's instructions start with (the reference tool's text, so that its cached
/// answers are ours).
pub const PREAMBLE: &str = "You are checking one output of an AI agent against its input. The state holds the INPUT the agent received and the OUTPUT it produced. Answer only about the output.";

impl SystemOneCheck {
    /// The question as the model receives it.
    pub fn compiled(&self) -> Question {
        Question::new(
            format!("{PREAMBLE}\n\n{}", self.question),
            self.true_text(),
            self.false_text(),
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
    /// The metric of a `metric.systemone` block: its HTTP client (keys from the environment
    /// and `.env`), its answer cache (the `cache` file, else in memory), and the run's model
    /// cache and budget in front of the client, as of every model.
    pub fn from_config(config: &SystemOneConfig, session: &Session) -> Result<Self, EngineError> {
        let bad = |key: &str, detail: String| session.block_error(key, detail);
        let mut settings = SystemOneSettings {
            provider: config.provider.clone(),
            model: config.model.clone(),
            api_key: config.api_key.clone(),
            base_url: config.base_url.clone(),
            account_id: config.account_id.clone(),
            ..SystemOneSettings::default()
        };
        if let Some(timeout) = config.timeout_duration() {
            settings.timeout = timeout;
        }
        let env = |key: &str| session.config.env(key);
        let client = SystemOneClient::new(&settings, &env)
            .map_err(|e| bad("metric.systemone", e.to_string()))?;
        let cache = match &config.cache {
            Some(path) => {
                AnswerCache::open(path).map_err(|e| bad("metric.systemone.cache", e.to_string()))?
            }
            None => AnswerCache::in_memory(),
        };
        if session.ledger().limits().max_usd.is_some() {
            return Err(bad(
                "metric.systemone",
                "optimizer.budget.max_usd is set, but the price of System One requests is not known, so that budget could not be kept; bound them with max_calls instead".to_string(),
            ));
        }
        let (provider, url) = (client.provider().to_string(), client.url().to_string());
        let mut model: Arc<dyn DecisionModel> = Arc::new(client);
        if let Some(store) = session.layers()?.cache() {
            model = Arc::new(CachedDecisions::new(model, store.clone(), &provider, &url));
        }
        let model = Arc::new(BudgetedDecisions::new(
            model,
            session.ledger().clone(),
            &provider,
        ));
        SystemOneMetric::new(
            model,
            Arc::new(cache),
            config.checks.clone(),
            config.threshold,
            config.include_expected,
        )
        .map_err(|e| session.block_error("metric.systemone.checks", e))
    }

    /// A metric asking `model`, caching in `cache`. Fails without checks, on a duplicate name,
    /// a weight that is not a positive number, or a threshold outside [0, 1].
    pub fn new(
        model: Arc<dyn DecisionModel>,
        cache: Arc<AnswerCache>,
        checks: Vec<SystemOneCheck>,
        threshold: Option<f64>,
        include_expected: bool,
    ) -> Result<Self, MetricSetupError> {
        if checks.is_empty() {
            return Err(MetricSetupError::NoChecks { metric: NAME });
        }
        let mut names = HashSet::new();
        for check in &checks {
            if !names.insert(check.name.as_str()) {
                return Err(MetricSetupError::DuplicateCheck(check.name.clone()));
            }
            if !(check.weight.is_finite() && check.weight > 0.0) {
                return Err(MetricSetupError::BadWeight {
                    part: "check",
                    name: check.name.clone(),
                    weight: check.weight,
                });
            }
        }
        if let Some(t) = threshold.filter(|t| !(0.0..=1.0).contains(t)) {
            return Err(MetricSetupError::Threshold(t));
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
        for ((check, question, _), &p) in self.checks.iter().zip(probabilities) {
            let value = match self.threshold {
                Some(threshold) => f64::from(u8::from(p >= threshold)),
                None => p,
            };
            weighted += check.weight * value;
            total_weight += check.weight;
            if p < 0.5 {
                failing.push(format!(
                    "{}: P(true)={p:.2} ({})",
                    check.name, question.if_false
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
impl ScoresOutput for SystemOneMetric {
    const NAME: &'static str = NAME;

    async fn score_output(&self, task: &Task, rollout: &Rollout) -> Scored {
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
