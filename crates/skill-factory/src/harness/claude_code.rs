//! The `claude_code` preset: `claude -p`, exactly as the reference tool runs it.
//!
//! argv: `<executable> -p --output-format text --append-system-prompt <skill body>`, then
//! `--model <model>` when set, then `extra_args`; the task input on stdin. The body is one
//! argv element, passed as is (no placeholder pass can touch it). In installed mode
//! `--append-system-prompt` is left out: Claude Code finds the skill in
//! `.claude/skills/<name>/SKILL.md` under its working directory and loads it when the task
//! calls for it, as it will once deployed.

use super::agent::{AgentOptions, Invocation, model_flag};

/// Where Claude Code discovers project skills.
pub const SKILLS_DIR: &str = ".claude/skills";

pub(super) fn invocation(
    options: &AgentOptions,
    skill_body: Option<&str>,
    input: &str,
) -> Invocation {
    let mut argv = vec![
        options.executable.clone(),
        "-p".to_string(),
        "--output-format".to_string(),
        "text".to_string(),
    ];
    if let Some(body) = skill_body {
        argv.push("--append-system-prompt".to_string());
        argv.push(body.to_string());
    }
    argv.extend(model_flag(options));
    argv.extend(options.extra_args.iter().cloned());
    Invocation {
        argv,
        stdin: Some(input.to_string()),
    }
}
