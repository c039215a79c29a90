//! How a model client is configured: one provider block of a run config, and the checks of
//! its keys that several providers share.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::request::LlmError;

/// One provider block (`provider`, `optimizer_provider`, `judge_provider`) of a run config.
///
/// The first four keys are the Python tool's; the rest are ours and all optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    /// Provider id (`anthropic`, `openai`, `openai-compatible`, `azure`, `openrouter`, `together`,
    /// `groq`, `deepseek`, `vllm`, `lmstudio`, `ollama`, `local`, `fake`); case-insensitive.
    #[serde(default)]
    pub name: Option<String>,
    /// Model id.
    #[serde(default, deserialize_with = "crate::settings::string_like::option")]
    pub model: Option<String>,
    /// API key; wins over the provider's environment variable.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Endpoint; wins over the provider's default.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Azure: API version query parameter (default `2024-10-21`).
    #[serde(default)]
    pub api_version: Option<String>,
    /// Azure: deployment name (default: the model).
    #[serde(default)]
    pub deployment: Option<String>,
    /// Seconds before one HTTP attempt is abandoned (default 120).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Attempts in total for one call, first included (default 4).
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// Most calls in flight at once to this provider (default: unlimited beyond the run's own cap).
    #[serde(default)]
    pub max_concurrency: Option<usize>,
    /// Most requests a minute to this provider, evenly paced (default: no pace).
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    /// Seconds for one whole call, every retry and back-off included (default: no limit
    /// beyond `timeout` per attempt and `max_retries`).
    #[serde(default)]
    pub call_timeout: Option<f64>,
    /// Price of the model in dollars per million tokens, overriding the built-in price table
    /// (for budgets and cost reports).
    #[serde(default)]
    pub pricing: Option<crate::cost::Pricing>,
    /// Send the calls of this block as provider batches (Anthropic's Message Batches,
    /// OpenAI's Batch API), at half price and within a day, instead of one request each
    /// (default false).
    #[serde(default)]
    pub batch: Option<bool>,
    /// Batch mode: seconds between the first looks at a running batch (default 5); the
    /// pause grows by half each look, up to a minute.
    #[serde(default)]
    pub batch_poll: Option<f64>,
    /// Local provider: seed of the random draw at temperature > 0, combined with each
    /// request's sample index (default 0), so sampled runs repeat exactly.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Fake provider: canned answers, returned in order, the last one repeating.
    #[serde(default)]
    pub responses: Option<Vec<String>>,
    /// Fake provider: rules tried in order; the first that matches answers.
    #[serde(default)]
    pub rules: Option<Vec<FakeRule>>,
    /// Fake provider: a YAML file holding `responses` and/or `rules`, relative to the config.
    #[serde(default)]
    pub script: Option<String>,
}

impl ProviderSettings {
    /// The keys only the `fake` provider reads, each with whether the block sets it.
    pub(crate) fn fake_keys(&self) -> [(&'static str, bool); 3] {
        [
            ("responses", self.responses.is_some()),
            ("rules", self.rules.is_some()),
            ("script", self.script.is_some()),
        ]
    }
}

/// A duration key of a provider block (`timeout`, `call_timeout`): above 0, at most a day.
pub(crate) fn seconds_key(key: &str, seconds: f64) -> Result<Duration, LlmError> {
    if seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0 {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(LlmError::Config(format!(
            "provider key `{key}` must be a number of seconds above 0 (at most 86400), got {seconds}"
        )))
    }
}

/// The keys among `keys` that the block sets, joined for a message; `None` when it sets none.
pub(crate) fn keys_set(keys: &[(&str, bool)]) -> Option<String> {
    let present: Vec<&str> = keys
        .iter()
        .filter_map(|&(key, set)| set.then_some(key))
        .collect();
    (!present.is_empty()).then(|| present.join(", "))
}

/// One rule of the scripted fake provider: every condition given must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FakeRule {
    /// The system prompt contains this text.
    #[serde(default)]
    pub system_contains: Option<String>,
    /// The system prompt does not contain this text.
    #[serde(default)]
    pub system_lacks: Option<String>,
    /// The last user message contains this text.
    #[serde(default)]
    pub user_contains: Option<String>,
    /// The last user message matches this regular expression.
    #[serde(default)]
    pub user_matches: Option<String>,
    /// The answer to give.
    pub reply: String,
}

/// Deserializers that accept any YAML scalar where a string is meant (`model: 4` → `"4"`),
/// as the reference tool coerces with `str()`.
pub mod string_like {
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Scalar {
        S(String),
        I(i64),
        F(f64),
        B(bool),
    }

    /// An optional string-like scalar.
    pub fn option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        let value: Option<Scalar> = Option::deserialize(d)?;
        Ok(value.map(|s| match s {
            Scalar::S(s) => s,
            Scalar::I(i) => i.to_string(),
            Scalar::F(f) => skill_factory_pycompat::repr::repr_float(f),
            Scalar::B(b) => {
                if b {
                    "True".into()
                } else {
                    "False".into()
                }
            }
        }))
    }
}
