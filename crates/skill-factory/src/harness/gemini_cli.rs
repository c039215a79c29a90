//! The `gemini_cli` preset: Google's Gemini CLI in headless mode.
//!
//! argv: `<executable> --output-format text`, `--model <model>` when set, `extra_args`, then
//! `--prompt <prompt>`, where the prompt is the skill body, a `---` rule, then the task input
//! (the input alone in installed mode); stdin is `/dev/null`.
//!
//! Why this shape: `--prompt` is what selects headless mode, and Gemini CLI appends its value
//! to whatever arrives on stdin, so with an empty stdin the prompt is exactly ours, skill
//! first. Gemini CLI has no flag that appends to the system prompt (`GEMINI_SYSTEM_MD`
//! replaces all of it, which would also drop its tool instructions). Installed skills go to
//! `.agents/skills/<name>/SKILL.md`, the cross-agent location Gemini CLI reads besides
//! `.gemini/skills`.

use super::agent::{AgentOptions, Invocation, model_flag, skill_then_task};

/// Where Gemini CLI discovers workspace skills.
pub const SKILLS_DIR: &str = ".agents/skills";

pub(super) fn invocation(
    options: &AgentOptions,
    skill_body: Option<&str>,
    input: &str,
) -> Invocation {
    let mut argv = vec![
        options.executable.clone(),
        "--output-format".to_string(),
        "text".to_string(),
    ];
    argv.extend(model_flag(options));
    argv.extend(options.extra_args.iter().cloned());
    argv.push("--prompt".to_string());
    argv.push(skill_then_task(skill_body, input));
    Invocation { argv, stdin: None }
}
