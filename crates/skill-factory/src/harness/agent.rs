//! The agent CLI presets (`claude_code`, `codex`, `gemini_cli`): what each is told, through
//! which flags and streams, and where an installed skill goes. Each CLI has its own module;
//! this one holds what they share.

use super::{claude_code, codex, gemini_cli};

/// Which agent CLI a preset runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentCli {
    /// Anthropic's Claude Code (`claude -p`).
    ClaudeCode,
    /// OpenAI's Codex CLI (`codex exec`).
    Codex,
    /// Google's Gemini CLI (`gemini --prompt`).
    GeminiCli,
}

/// The configurable part of a preset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentOptions {
    /// The binary (a name looked up on `PATH`, or a path).
    pub executable: String,
    /// Adds `--model <model>`.
    pub model: Option<String>,
    /// Extra arguments, placed before the prompt where the CLI needs the prompt last.
    pub extra_args: Vec<String>,
}

/// The argv and stdin of one rollout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Bytes for stdin; `None` gives the child `/dev/null`.
    pub stdin: Option<String>,
}

impl AgentCli {
    /// The harness name recorded in rollouts (`claude_code`, `codex`, `gemini_cli`).
    pub fn name(self) -> &'static str {
        match self {
            AgentCli::ClaudeCode => "claude_code",
            AgentCli::Codex => "codex",
            AgentCli::GeminiCli => "gemini_cli",
        }
    }

    /// Where, relative to its working directory, the CLI discovers project skills.
    pub fn skills_dir(self) -> &'static str {
        match self {
            AgentCli::ClaudeCode => claude_code::SKILLS_DIR,
            AgentCli::Codex => codex::SKILLS_DIR,
            AgentCli::GeminiCli => gemini_cli::SKILLS_DIR,
        }
    }

    /// The invocation for one task. `skill_body` is the body to put in the prompt, or `None`
    /// when the skill is installed in the workspace instead.
    pub fn invocation(
        self,
        options: &AgentOptions,
        skill_body: Option<&str>,
        input: &str,
    ) -> Invocation {
        match self {
            AgentCli::ClaudeCode => claude_code::invocation(options, skill_body, input),
            AgentCli::Codex => codex::invocation(options, skill_body, input),
            AgentCli::GeminiCli => gemini_cli::invocation(options, skill_body, input),
        }
    }
}

/// The prompt of a CLI that has no system-prompt flag: the skill body, a rule, then the task.
/// Without a body (installed mode, or an empty skill) the prompt is the task alone.
pub(super) fn skill_then_task(skill_body: Option<&str>, input: &str) -> String {
    match skill_body.map(str::trim).filter(|b| !b.is_empty()) {
        Some(body) => format!("{body}\n\n---\n\n{input}"),
        None => input.to_string(),
    }
}

/// `--model <model>` when a model is set.
pub(super) fn model_flag(options: &AgentOptions) -> Vec<String> {
    options
        .model
        .iter()
        .flat_map(|m| ["--model".to_string(), m.clone()])
        .collect()
}
