//! The `harness` block.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize};

/// How the skill is run on one task. One struct for every harness type: each type reads the
/// keys that apply to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessConfig {
    /// Which harness (default `api`).
    #[serde(rename = "type", default)]
    pub harness_type: HarnessType,
    /// `api`: sampling temperature of the target call (default 0).
    #[serde(default)]
    pub temperature: f64,
    /// `api`: most output tokens of the target call (default 2048).
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// `claude_code`: adds `--model <model>`.
    #[serde(default)]
    pub model: Option<String>,
    /// `claude_code`: the binary (default `claude`).
    #[serde(default = "default_executable")]
    pub executable: String,
    /// `claude_code` / `subprocess`: seconds per rollout (default 300 / 120; see
    /// [`HarnessConfig::timeout_secs`]).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// `claude_code`: appended to the argv.
    #[serde(default, deserialize_with = "crate::config::scalar::string_list")]
    pub extra_args: Vec<String>,
    /// `subprocess`: the argv template (required there).
    #[serde(default)]
    pub command: Option<Command>,
    /// `subprocess`: how the task input reaches the child (default `stdin`).
    #[serde(default)]
    pub input_via: InputVia,
    /// `subprocess`: the child's working directory, relative to the config file.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// `subprocess`: variables set over the inherited environment.
    #[serde(default, deserialize_with = "crate::config::scalar::string_map")]
    pub env: BTreeMap<String, String>,
    /// Rollouts run at once by `evaluate` (default 16).
    #[serde(default = "default_max_workers")]
    pub max_workers: usize,
}

impl Default for HarnessConfig {
    fn default() -> Self {
        Self {
            harness_type: HarnessType::default(),
            temperature: 0.0,
            max_tokens: default_max_tokens(),
            model: None,
            executable: default_executable(),
            timeout: None,
            extra_args: Vec::new(),
            command: None,
            input_via: InputVia::default(),
            cwd: None,
            env: BTreeMap::new(),
            max_workers: default_max_workers(),
        }
    }
}

impl HarnessConfig {
    /// Seconds per rollout: `timeout` if given, else 300 for `claude_code` and 120 otherwise.
    pub fn timeout_secs(&self) -> f64 {
        self.timeout.unwrap_or(match self.harness_type {
            HarnessType::ClaudeCode => 300.0,
            _ => 120.0,
        })
    }
}

/// The harness types a config may name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HarnessType {
    /// One model call: system prompt = the skill body, user message = the task input.
    #[default]
    Api,
    /// `claude -p` with the skill appended to the system prompt.
    ClaudeCode,
    /// Any command; the skill and the input reach it through placeholders or stdin.
    Subprocess,
    /// Reserved for a Codex CLI preset.
    Codex,
    /// Reserved for a Gemini CLI preset.
    GeminiCli,
}

/// How a subprocess harness passes the task input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputVia {
    /// On the child's standard input.
    #[default]
    Stdin,
    /// Only through `{input}` / `{input_file}` placeholders in the argv.
    Arg,
}

/// A command line as written in the config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Command {
    /// An argv list; every element was turned into text.
    Argv(Vec<String>),
    /// One string. The reference tool splits it into characters (a bug); the harness decides
    /// how to split it.
    Line(String),
}

impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(crate::config::scalar::CommandVisitor)
    }
}

impl Command {
    /// True when there is nothing to run: an empty list or a blank string.
    pub fn is_empty(&self) -> bool {
        match self {
            Command::Argv(argv) => argv.is_empty(),
            Command::Line(line) => line.trim().is_empty(),
        }
    }
}

fn default_max_tokens() -> u32 {
    2048
}

fn default_executable() -> String {
    "claude".to_owned()
}

fn default_max_workers() -> usize {
    16
}
