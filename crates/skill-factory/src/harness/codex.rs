//! The `codex` preset: OpenAI's Codex CLI in non-interactive mode.
//!
//! argv: `<executable> exec --skip-git-repo-check`, `--model <model>` when set, `extra_args`,
//! then `-`, which makes `codex exec` read its prompt from stdin. The prompt is the skill body,
//! a `---` rule, then the task input (the input alone in installed mode). `codex exec` prints
//! progress on stderr and only the final agent message on stdout, which becomes the output.
//!
//! Why this shape: `codex exec` has no flag that appends to the system prompt, and a prompt
//! argument combined with piped stdin is read as "instruction + extra context", which would
//! turn the task into context; one prompt on stdin keeps the skill first and the task as the
//! request, and avoids argv size limits. `--skip-git-repo-check` is needed because the
//! working directory (always, in installed mode) need not be a Git repository. Sandbox and
//! approval flags are the user's call: add them to `extra_args` (e.g. `[--sandbox,
//! workspace-write]`); by default `codex exec` runs read-only. Installed skills go to
//! `.agents/skills/<name>/SKILL.md`, where Codex discovers repository skills.

use super::agent::{AgentOptions, Invocation, model_flag, skill_then_task};

/// Where Codex discovers repository skills.
pub const SKILLS_DIR: &str = ".agents/skills";

pub(super) fn invocation(
    options: &AgentOptions,
    skill_body: Option<&str>,
    input: &str,
) -> Invocation {
    let mut argv = vec![
        options.executable.clone(),
        "exec".to_string(),
        "--skip-git-repo-check".to_string(),
    ];
    argv.extend(model_flag(options));
    argv.extend(options.extra_args.iter().cloned());
    argv.push("-".to_string());
    Invocation {
        argv,
        stdin: Some(skill_then_task(skill_body, input)),
    }
}
