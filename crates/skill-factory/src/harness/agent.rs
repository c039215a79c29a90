//! The agent CLI presets (`claude_code`, `codex`, `gemini_cli`): what each is told, through
//! which flags and streams, and where an installed skill goes.
//!
//! A preset is data ([`Preset`]), one entry per CLI with the reasons for its shape; one
//! function ([`AgentCli::invocation`]) reads it. Every argv is
//! `<executable> <preset args> [skill flag <body>] [--model <model>] <extra_args> [prompt]`,
//! and the prompt goes where the preset says. A CLI without a system-prompt flag gets the
//! skill body, a `---` rule, then the task input as its prompt (the input alone in installed
//! mode, or when the body is empty).

use crate::config::HarnessType;

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

/// How one agent CLI is run.
#[derive(Debug)]
pub struct Preset {
    /// The harness name recorded in rollouts.
    pub name: &'static str,
    /// Where, relative to its working directory, the CLI discovers project skills.
    pub skills_dir: &'static str,
    /// The arguments after the executable that make the CLI answer once and exit.
    pub args: &'static [&'static str],
    /// The same, with the CLI's event stream (one JSON event per line) as its output: what a
    /// trigger run reads to see which skills it loaded ([`super::trigger::detect`]).
    pub watch_args: &'static [&'static str],
    /// The flag that appends the skill body to the system prompt; `None` puts the body in
    /// the prompt instead.
    pub system_prompt_flag: Option<&'static str>,
    /// Where the prompt goes.
    pub prompt: PromptVia,
}

/// Where a preset puts the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptVia {
    /// On stdin, with nothing after the extra arguments.
    Stdin,
    /// On stdin, with this argument last (the CLI's "read the prompt from stdin").
    StdinAfter(&'static str),
    /// As the value of this flag, last; stdin is `/dev/null`.
    Flag(&'static str),
}

/// `claude -p`, exactly as the reference tool runs it: the body is one argv element of
/// `--append-system-prompt` (no placeholder pass can touch it), the task input on stdin. In
/// installed mode the flag is left out: Claude Code finds the skill in
/// `.claude/skills/<name>/SKILL.md` under its working directory and loads it when the task
/// calls for it, as it will once deployed.
const CLAUDE_CODE: Preset = Preset {
    name: "claude_code",
    skills_dir: ".claude/skills",
    args: &["-p", "--output-format", "text"],
    // `stream-json` requires `--verbose` with `-p`.
    watch_args: &["-p", "--output-format", "stream-json", "--verbose"],
    system_prompt_flag: Some("--append-system-prompt"),
    prompt: PromptVia::Stdin,
};

/// `codex exec`, with the prompt on stdin (`-`). It has no flag that appends to the system
/// prompt, and a prompt argument combined with piped stdin is read as "instruction + extra
/// context", which would turn the task into context; one prompt on stdin keeps the skill
/// first and the task as the request, and avoids argv size limits. It prints progress on
/// stderr and only the final agent message on stdout, which becomes the output.
/// `--skip-git-repo-check` is needed because the working directory (always, in installed
/// mode) need not be a Git repository. Sandbox and approval flags are the user's call: add
/// them to `extra_args` (e.g. `[--sandbox, workspace-write]`); by default `codex exec` runs
/// read-only. Installed skills go to `.agents/skills/<name>/SKILL.md`, where Codex discovers
/// repository skills.
const CODEX: Preset = Preset {
    name: "codex",
    skills_dir: ".agents/skills",
    args: &["exec", "--skip-git-repo-check"],
    watch_args: &["exec", "--skip-git-repo-check", "--json"],
    system_prompt_flag: None,
    prompt: PromptVia::StdinAfter("-"),
};

/// Gemini CLI in headless mode: `--prompt=<prompt>` is what selects it, and the CLI appends its value
/// to whatever arrives on stdin, so with an empty stdin the prompt is exactly ours, skill
/// first. It has no flag that appends to the system prompt (`GEMINI_SYSTEM_MD` replaces all
/// of it, which would also drop its tool instructions). Installed skills go to
/// `.agents/skills/<name>/SKILL.md`, the cross-agent location Gemini CLI reads besides
/// `.gemini/skills`.
const GEMINI_CLI: Preset = Preset {
    name: "gemini_cli",
    skills_dir: ".agents/skills",
    args: &["--output-format", "text"],
    watch_args: &["--output-format", "stream-json"],
    system_prompt_flag: None,
    prompt: PromptVia::Flag("--prompt"),
};

impl AgentCli {
    /// The CLI a harness type runs, if it runs an agent CLI.
    pub fn for_harness(harness: HarnessType) -> Option<AgentCli> {
        match harness {
            HarnessType::ClaudeCode => Some(AgentCli::ClaudeCode),
            HarnessType::Codex => Some(AgentCli::Codex),
            HarnessType::GeminiCli => Some(AgentCli::GeminiCli),
            HarnessType::Api | HarnessType::Subprocess => None,
        }
    }

    /// How this CLI is run.
    pub fn preset(self) -> &'static Preset {
        match self {
            AgentCli::ClaudeCode => &CLAUDE_CODE,
            AgentCli::Codex => &CODEX,
            AgentCli::GeminiCli => &GEMINI_CLI,
        }
    }

    /// The harness name recorded in rollouts (`claude_code`, `codex`, `gemini_cli`).
    pub fn name(self) -> &'static str {
        self.preset().name
    }

    /// Where, relative to its working directory, the CLI discovers project skills.
    pub fn skills_dir(self) -> &'static str {
        self.preset().skills_dir
    }

    /// The invocation for one task. `skill_body` is the body to put in the prompt, or `None`
    /// when the skill is installed in the workspace instead.
    pub fn invocation(
        self,
        options: &AgentOptions,
        skill_body: Option<&str>,
        input: &str,
    ) -> Invocation {
        self.invoke(self.preset().args, options, skill_body, input)
    }

    /// The invocation for one query of a trigger run: the skills installed, the task input
    /// alone as the prompt, and the CLI's event stream as its output.
    pub fn watched_invocation(self, options: &AgentOptions, input: &str) -> Invocation {
        self.invoke(self.preset().watch_args, options, None, input)
    }

    fn invoke(
        self,
        args: &[&str],
        options: &AgentOptions,
        skill_body: Option<&str>,
        input: &str,
    ) -> Invocation {
        let preset = self.preset();
        let mut argv = vec![options.executable.clone()];
        argv.extend(args.iter().map(|arg| arg.to_string()));
        let prompt = match preset.system_prompt_flag {
            Some(flag) => {
                if let Some(body) = skill_body {
                    argv.push(flag.to_string());
                    argv.push(body.to_string());
                }
                input.to_string()
            }
            None => skill_then_task(skill_body, input),
        };
        if let Some(model) = &options.model {
            argv.push("--model".to_string());
            argv.push(model.clone());
        }
        argv.extend(options.extra_args.iter().cloned());
        let stdin = match preset.prompt {
            PromptVia::Stdin => Some(prompt),
            PromptVia::StdinAfter(arg) => {
                argv.push(arg.to_string());
                Some(prompt)
            }
            // One `--flag=value` argument: as a separate argument, a prompt starting with `-`
            // (a Markdown list, a task input such as `--yolo`) would be read as flags.
            PromptVia::Flag(flag) => {
                argv.push(format!("{flag}={prompt}"));
                None
            }
        };
        Invocation { argv, stdin }
    }
}

/// The prompt of a CLI that has no system-prompt flag: the skill body, a rule, then the task.
/// Without a body (installed mode, or an empty skill) the prompt is the task alone.
fn skill_then_task(skill_body: Option<&str>, input: &str) -> String {
    match skill_body.map(str::trim).filter(|b| !b.is_empty()) {
        Some(body) => format!("{body}\n\n---\n\n{input}"),
        None => input.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> AgentOptions {
        AgentOptions {
            executable: "agent".to_string(),
            model: Some("m".to_string()),
            extra_args: vec!["--x".to_string()],
        }
    }

    #[test]
    fn each_preset_places_the_skill_and_the_prompt_where_its_cli_reads_them() {
        let claude = AgentCli::ClaudeCode.invocation(&options(), Some("Body."), "Task.");
        assert_eq!(
            claude.argv,
            [
                "agent",
                "-p",
                "--output-format",
                "text",
                "--append-system-prompt",
                "Body.",
                "--model",
                "m",
                "--x"
            ]
        );
        assert_eq!(claude.stdin.as_deref(), Some("Task."));

        let codex = AgentCli::Codex.invocation(&options(), Some("Body."), "Task.");
        assert_eq!(
            codex.argv,
            [
                "agent",
                "exec",
                "--skip-git-repo-check",
                "--model",
                "m",
                "--x",
                "-"
            ]
        );
        assert_eq!(codex.stdin.as_deref(), Some("Body.\n\n---\n\nTask."));

        let gemini = AgentCli::GeminiCli.invocation(&options(), Some("Body."), "Task.");
        assert_eq!(
            gemini.argv,
            [
                "agent",
                "--output-format",
                "text",
                "--model",
                "m",
                "--x",
                "--prompt=Body.\n\n---\n\nTask."
            ]
        );
        assert_eq!(gemini.stdin, None);
    }

    #[test]
    fn a_watched_run_streams_events_with_the_task_alone() {
        let claude = AgentCli::ClaudeCode.watched_invocation(&options(), "Task.");
        assert_eq!(
            claude.argv[1..5],
            ["-p", "--output-format", "stream-json", "--verbose"]
        );
        assert_eq!(claude.stdin.as_deref(), Some("Task."));
        let codex = AgentCli::Codex.watched_invocation(&options(), "Task.");
        assert!(codex.argv.contains(&"--json".to_string()));
        assert_eq!(codex.argv.last().map(String::as_str), Some("-"));
        let gemini = AgentCli::GeminiCli.watched_invocation(&options(), "Task.");
        assert!(gemini.argv.contains(&"stream-json".to_string()));
        assert_eq!(
            gemini.argv.last().map(String::as_str),
            Some("--prompt=Task.")
        );
    }

    #[test]
    fn installed_mode_sends_the_task_alone() {
        let claude = AgentCli::ClaudeCode.invocation(&options(), None, "Task.");
        assert!(!claude.argv.iter().any(|a| a == "--append-system-prompt"));
        assert_eq!(claude.stdin.as_deref(), Some("Task."));
        let codex = AgentCli::Codex.invocation(&options(), None, "Task.");
        assert_eq!(codex.stdin.as_deref(), Some("Task."));
    }
}
