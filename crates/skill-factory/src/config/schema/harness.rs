//! The `harness` block.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use skill_factory_config::scalar::ScalarText;

/// How the skill is run on one task. One struct for every harness type: each type reads the
/// keys that apply to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// `claude_code` / `codex` / `gemini_cli`: adds `--model <model>`.
    #[serde(default)]
    pub model: Option<String>,
    /// `claude_code` / `codex` / `gemini_cli`: the binary (default `claude` / `codex` /
    /// `gemini`).
    #[serde(default)]
    pub executable: Option<String>,
    /// Every harness but `api`: seconds per rollout (default 300 for the agent CLIs, 120 for
    /// `subprocess`).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// `claude_code` / `codex` / `gemini_cli`: appended to the argv.
    #[serde(
        default,
        deserialize_with = "skill_factory_config::scalar::string_list"
    )]
    pub extra_args: Vec<String>,
    /// Every harness but `api`: how the skill reaches the agent (default `prompt`).
    #[serde(default)]
    pub skill_mode: SkillMode,
    /// `subprocess`: the argv template (required there).
    #[serde(default)]
    pub command: Option<Command>,
    /// `subprocess`: how the task input reaches the child (default `stdin`).
    #[serde(default)]
    pub input_via: InputVia,
    /// Every harness but `api`: the child's working directory, relative to the config file.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Every harness but `api`: variables set over the inherited environment.
    #[serde(default, deserialize_with = "skill_factory_config::scalar::string_map")]
    pub env: BTreeMap<String, String>,
    /// Rollouts in flight at once during `evaluate` and `optimize` (default 16; `optimize`
    /// takes `optimizer.max_workers` instead when that is larger). Model requests in flight
    /// across the run are capped at twice this: the rollouts plus the judge calls grading
    /// finished ones.
    #[serde(default = "default_max_workers")]
    pub max_workers: usize,
    /// Every harness but `api`: where each rollout's process runs (default: on this machine).
    #[serde(default)]
    pub executor: ExecutorConfig,
}

/// Where the process of a rollout runs: here, or as a job on a Ray cluster.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecutorConfig {
    /// `local` (the default) or `ray`.
    #[serde(rename = "type", default)]
    pub executor_type: ExecutorType,
    /// `ray`: the cluster's dashboard, whose Job Submission API takes the jobs
    /// (`http://127.0.0.1:8265` for `ray start --head` on this machine).
    #[serde(default)]
    pub address: Option<String>,
    /// `ray`: jobs in flight at once (default: `harness.max_workers`).
    #[serde(default)]
    pub max_workers: Option<usize>,
    /// `ray`: CPUs each job reserves on the node it runs on (default 1), so the cluster
    /// places jobs where cores are free; 0 runs them all on the head node.
    #[serde(default)]
    pub num_cpus: Option<f64>,
}

/// The executors a config may name.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorType {
    /// A child process of Skill Factory.
    #[default]
    Local,
    /// A job on a Ray cluster, through its Job Submission REST API.
    Ray,
}

impl Default for HarnessConfig {
    fn default() -> Self {
        Self {
            harness_type: HarnessType::default(),
            temperature: 0.0,
            max_tokens: default_max_tokens(),
            model: None,
            executable: None,
            timeout: None,
            extra_args: Vec::new(),
            skill_mode: SkillMode::default(),
            command: None,
            input_via: InputVia::default(),
            cwd: None,
            env: BTreeMap::new(),
            max_workers: default_max_workers(),
            executor: ExecutorConfig::default(),
        }
    }
}

impl HarnessConfig {
    /// Seconds per rollout: `timeout` if given, else 300 for the agent CLIs (`claude_code`,
    /// `codex`, `gemini_cli`) and 120 otherwise.
    pub fn timeout_secs(&self) -> f64 {
        self.timeout.unwrap_or(match self.harness_type {
            HarnessType::ClaudeCode | HarnessType::Codex | HarnessType::GeminiCli => 300.0,
            HarnessType::Api | HarnessType::Subprocess => 120.0,
        })
    }

    /// [`Self::timeout_secs`] as a duration.
    pub fn timeout_duration(&self) -> Duration {
        super::duration(self.timeout_secs())
    }

    /// The agent CLI binary: `executable` if given, else `claude`, `codex` or `gemini` by type
    /// (`claude` for the types that run no agent CLI).
    pub fn executable(&self) -> &str {
        match (&self.executable, self.harness_type) {
            (Some(executable), _) => executable,
            (None, HarnessType::Codex) => "codex",
            (None, HarnessType::GeminiCli) => "gemini",
            (None, _) => "claude",
        }
    }
}

/// The harness types a config may name.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum HarnessType {
    /// One model call: system prompt = the skill body, user message = the task input.
    #[default]
    Api,
    /// `claude -p` with the skill appended to the system prompt.
    ClaudeCode,
    /// Any command; the skill and the input reach it through placeholders or stdin.
    Subprocess,
    /// `codex exec` with the skill before the task on stdin.
    Codex,
    /// `gemini --prompt` with the skill before the task.
    GeminiCli,
}

impl HarnessType {
    /// Every harness type, in documentation order.
    pub const ALL: [HarnessType; 5] = [
        HarnessType::Api,
        HarnessType::Subprocess,
        HarnessType::ClaudeCode,
        HarnessType::Codex,
        HarnessType::GeminiCli,
    ];

    /// The name written in configs (`api`, `claude_code`, ...).
    pub fn name(self) -> &'static str {
        match self {
            HarnessType::Api => "api",
            HarnessType::ClaudeCode => "claude_code",
            HarnessType::Subprocess => "subprocess",
            HarnessType::Codex => "codex",
            HarnessType::GeminiCli => "gemini_cli",
        }
    }
}

/// How the candidate skill reaches an agent.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SkillMode {
    /// In the prompt: `--append-system-prompt` for Claude Code, before the task for Codex and
    /// Gemini, through placeholders for `subprocess`.
    #[default]
    Prompt,
    /// As a real skill folder (`.claude/skills/<name>/SKILL.md` for Claude Code,
    /// `.agents/skills/<name>/SKILL.md` otherwise) in a fresh workspace that is the child's
    /// working directory, so the agent discovers it as it will once deployed.
    Installed,
}

/// How a subprocess harness passes the task input.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
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
        deserializer.deserialize_any(CommandVisitor)
    }
}

/// A command line: an argv list (each element any scalar) or one string.
struct CommandVisitor;

impl<'de> Visitor<'de> for CommandVisitor {
    type Value = Command;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of arguments such as [python, run.py] or one command string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Command::Line(v.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut argv = Vec::new();
        while let Some(item) = seq.next_element::<ScalarText>()? {
            argv.push(item.0);
        }
        Ok(Command::Argv(argv))
    }
}

impl schemars::JsonSchema for Command {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Command".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "title": "command",
            "anyOf": [
                {"type": "array", "items": {"type": ["string", "number", "boolean"]}},
                {"type": "string"}
            ]
        })
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

    /// The argv: the list as written, or the string split as a POSIX shell splits words
    /// (quotes and backslashes, no expansion; it is never run through a shell). The
    /// reference tool split a string into single characters instead.
    pub fn argv(&self) -> Result<Vec<String>, CommandSplitError> {
        match self {
            Command::Argv(argv) => Ok(argv.clone()),
            Command::Line(line) => {
                shlex::split(line).ok_or_else(|| CommandSplitError { line: line.clone() })
            }
        }
    }
}

/// A command string that cannot be split into arguments. Since it is never run through a
/// shell, guessing where an argument ends would run something other than what was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "cannot split the command {line:?} into arguments: a quote is not closed or it ends with a backslash; close the quote, or write the command as a list"
)]
pub struct CommandSplitError {
    /// The command as written.
    pub line: String,
}

fn default_max_tokens() -> u32 {
    2048
}

fn default_max_workers() -> usize {
    16
}
