//! The `metric` block: up to five weighted parts, combined in the fixed order golden →
//! programmatic → judge → systemone → command whatever their order in the YAML.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::check::Check;

/// The metric parts of a run. After loading, at least one is present: a config without any
/// gets `golden` in `normalized` mode with weight 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricConfig {
    /// Compare the output with the task's expected answer.
    #[serde(
        default,
        deserialize_with = "super::optional_block",
        skip_serializing_if = "Option::is_none"
    )]
    pub golden: Option<GoldenConfig>,
    /// Deterministic checks on the output (valid JSON, regex, ...).
    #[serde(
        default,
        deserialize_with = "super::optional_block",
        skip_serializing_if = "Option::is_none"
    )]
    pub programmatic: Option<ProgrammaticConfig>,
    /// An LLM judge scoring weighted criteria.
    #[serde(
        default,
        deserialize_with = "super::optional_block",
        skip_serializing_if = "Option::is_none"
    )]
    pub judge: Option<JudgeConfig>,
    /// Yes/no rubric checks answered by a System One decision model.
    #[serde(
        default,
        deserialize_with = "super::optional_block",
        skip_serializing_if = "Option::is_none"
    )]
    pub systemone: Option<SystemOneConfig>,
    /// A command of the user's that scores each rollout (any language).
    #[serde(
        default,
        deserialize_with = "super::optional_block",
        skip_serializing_if = "Option::is_none"
    )]
    pub command: Option<CommandMetricConfig>,
}

impl MetricConfig {
    /// True when no metric part is configured.
    pub fn is_empty(&self) -> bool {
        self.golden.is_none()
            && self.programmatic.is_none()
            && self.judge.is_none()
            && self.systemone.is_none()
            && self.command.is_none()
    }
}

/// `metric.golden`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoldenConfig {
    /// `exact`, `normalized` (default), `token_f1`, `json_equal` or `numeric`.
    #[serde(default)]
    pub mode: GoldenMode,
    /// Weight in the composite; greater than 0 (default 1).
    #[serde(default = "super::one")]
    pub weight: f64,
}

impl Default for GoldenConfig {
    fn default() -> Self {
        Self {
            mode: GoldenMode::default(),
            weight: 1.0,
        }
    }
}

/// How the golden metric compares an output with the expected answer.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum GoldenMode {
    /// Trimmed texts are equal.
    Exact,
    /// Equal after trimming, case folding and whitespace collapsing.
    #[default]
    Normalized,
    /// F1 of the overlap of normalized words.
    TokenF1,
    /// JSON values are equal, with partial credit per key for objects.
    JsonEqual,
    /// The first numbers are equal within 10⁻⁶
    /// ([`NUMERIC_TOLERANCE`](crate::metric::golden::NUMERIC_TOLERANCE)).
    Numeric,
}

impl GoldenMode {
    /// Every mode, in the order the reference documents them.
    pub const ALL: [GoldenMode; 5] = [
        GoldenMode::Exact,
        GoldenMode::Normalized,
        GoldenMode::TokenF1,
        GoldenMode::JsonEqual,
        GoldenMode::Numeric,
    ];

    /// The mode's name in configs and feedback (`token_f1`).
    pub fn as_str(self) -> &'static str {
        match self {
            GoldenMode::Exact => "exact",
            GoldenMode::Normalized => "normalized",
            GoldenMode::TokenF1 => "token_f1",
            GoldenMode::JsonEqual => "json_equal",
            GoldenMode::Numeric => "numeric",
        }
    }
}

impl fmt::Display for GoldenMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `metric.programmatic`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgrammaticConfig {
    /// Weight in the composite; greater than 0 (default 1).
    #[serde(default = "super::one")]
    pub weight: f64,
    /// The checks, non-empty, in order.
    #[serde(default)]
    pub checks: Vec<Check>,
}

/// `metric.judge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeConfig {
    /// Weight in the composite; greater than 0 (default 1).
    #[serde(default = "super::one")]
    pub weight: f64,
    /// What the judge scores; non-empty, names unique.
    #[serde(default)]
    pub criteria: Vec<Criterion>,
}

/// One judge criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// Short id, used as the key of the judge's scores.
    pub name: String,
    /// What the judge should look for (default empty).
    #[serde(default)]
    pub description: String,
    /// Weight among the criteria; greater than 0 (default 1).
    #[serde(default = "super::one")]
    pub weight: f64,
}

impl Criterion {
    /// A rubric criterion.
    pub fn new(name: impl Into<String>, description: impl Into<String>, weight: f64) -> Self {
        Criterion {
            name: name.into(),
            description: description.into(),
            weight,
        }
    }
}

/// Yes/no checks of the output, each answered by a System One decision model as a
/// probability.
// Kept as written for the System One metric; its `Debug` output hides the API key.
#[derive(Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemOneConfig {
    /// Weight in the composite; greater than 0 (default 1).
    #[serde(default = "super::one")]
    pub weight: f64,
    /// `typesafe` (default), `openrouter`, `vercel`, `cloudflare`, `ollama` or `custom`.
    #[serde(default)]
    pub provider: Option<String>,
    /// Decision model (default: the provider's).
    #[serde(default)]
    pub model: Option<String>,
    /// If set, a check counts 1 when P(true) ≥ threshold and 0 otherwise.
    #[serde(default)]
    pub threshold: Option<f64>,
    /// Show the expected answer to the model too (default false).
    #[serde(default)]
    pub include_expected: bool,
    /// Answer cache file (default: in memory only), relative to the config file.
    #[serde(default)]
    pub cache: Option<PathBuf>,
    /// API key; wins over the environment.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Endpoint; wins over the provider's default.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Cloudflare account id.
    #[serde(default)]
    pub account_id: Option<String>,
    /// Seconds per request (default 60).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// The yes/no checks; non-empty, names unique.
    #[serde(default)]
    pub checks: Vec<SystemOneCheck>,
}

impl fmt::Debug for SystemOneConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SystemOneConfig")
            .field("weight", &self.weight)
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("threshold", &self.threshold)
            .field("include_expected", &self.include_expected)
            .field("cache", &self.cache)
            .field("api_key", &self.api_key.as_ref().map(|_| "<hidden>"))
            .field("base_url", &self.base_url)
            .field("account_id", &self.account_id)
            .field("timeout", &self.timeout)
            .field("checks", &self.checks)
            .finish()
    }
}

/// One System One check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemOneCheck {
    /// Short id, unique among the checks.
    pub name: String,
    /// The yes/no question about the output.
    pub question: String,
    /// Text of the "true" answer (default `Yes: <question>`).
    #[serde(rename = "true", default)]
    pub if_true: Option<String>,
    /// Text of the "false" answer (default `No: <question>`).
    #[serde(rename = "false", default)]
    pub if_false: Option<String>,
    /// Weight among the checks; greater than 0 (default 1).
    #[serde(default = "super::one")]
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
        SystemOneCheck {
            name: name.into(),
            question: question.into(),
            if_true,
            if_false,
            weight,
        }
    }

    /// What "true" means: `true` as written, else `Yes: <question>`.
    pub fn true_text(&self) -> String {
        self.if_true
            .clone()
            .unwrap_or_else(|| format!("Yes: {}", self.question))
    }

    /// What "false" means: `false` as written, else `No: <question>`; quoted in feedback when
    /// the check fails.
    pub fn false_text(&self) -> String {
        self.if_false
            .clone()
            .unwrap_or_else(|| format!("No: {}", self.question))
    }
}

/// `metric.command`: a program that reads one rollout as JSON on stdin and prints
/// `{"score": 0..1, "feedback": "..."}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandMetricConfig {
    /// The argv (a list, or one string split like a shell would; never run through a shell).
    #[serde(default)]
    pub command: Option<super::Command>,
    /// Weight in the composite; greater than 0 (default 1).
    #[serde(default = "super::one")]
    pub weight: f64,
    /// Seconds per rollout (default 30).
    #[serde(default = "default_command_timeout")]
    pub timeout: f64,
    /// The command's working directory, relative to the config file (default: the working
    /// directory of `skill-factory`).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Variables set over the inherited environment.
    #[serde(default, deserialize_with = "skill_factory_config::scalar::string_map")]
    pub env: BTreeMap<String, String>,
}

impl CommandMetricConfig {
    /// `timeout` as a duration.
    pub fn timeout_duration(&self) -> Duration {
        super::duration(self.timeout)
    }
}

impl SystemOneConfig {
    /// `timeout` as a duration, when given.
    pub fn timeout_duration(&self) -> Option<Duration> {
        self.timeout.map(super::duration)
    }
}

fn default_command_timeout() -> f64 {
    30.0
}
