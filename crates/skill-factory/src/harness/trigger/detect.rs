//! Reading an agent CLI's event stream for the skills it loaded.
//!
//! Each CLI shows a load its own way, and the whole stream is read (a parser of partial
//! messages is reported to miss most real loads: anthropics/claude-plugins-official#641):
//!
//! * **Claude Code** (`claude -p --output-format stream-json --verbose`): an `assistant` event
//!   whose message content holds a `tool_use` named `Skill` with input `{"skill": "<name>"}`,
//!   or a `tool_use` named `Read` whose `file_path` is the skill's `SKILL.md` (a model may
//!   read it directly).
//! * **Codex** (`codex exec --json`): Codex has no skill tool; it lists skills with the path
//!   of each SKILL.md and reads one through a shell command, shown as an `item.started` or
//!   `item.completed` event whose item is a `command_execution` whose `command` names
//!   `<name>/SKILL.md`.
//! * **Gemini CLI** (`gemini --output-format stream-json`): a `tool_use` event whose
//!   `tool_name` is `activate_skill` with `parameters.name`, or `read_file` of the SKILL.md.
//!
//! Lines that are not JSON (a CLI's warnings) are skipped.

use serde_json::Value;

use crate::harness::AgentCli;

/// The names of the skills an agent's event stream shows it loading, in order, each once: the
/// skills installed for the run and any other (an agent's built-in skills compete too). A read
/// of a file is a load of the skill whose folder holds it as `<name>/SKILL.md`.
pub fn loaded(cli: AgentCli, stream: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut add = |name: String| {
        if !found.contains(&name) {
            found.push(name);
        }
    };
    for event in stream
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
    {
        match cli {
            AgentCli::ClaudeCode => {
                if event.get("type").and_then(Value::as_str) != Some("assistant") {
                    continue;
                }
                let content = event
                    .pointer("/message/content")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                for part in content {
                    if part.get("type").and_then(Value::as_str) != Some("tool_use") {
                        continue;
                    }
                    let input = part.get("input").unwrap_or(&Value::Null);
                    match part.get("name").and_then(Value::as_str) {
                        Some("Skill") => {
                            if let Some(name) = input.get("skill").and_then(Value::as_str) {
                                // A plugin skill is `plugin:name`.
                                let name = name.rsplit(':').next().unwrap_or(name);
                                add(name.trim_start_matches('/').to_owned());
                            }
                        }
                        Some("Read") => {
                            if let Some(name) = input
                                .get("file_path")
                                .and_then(Value::as_str)
                                .and_then(skill_file_folder)
                            {
                                add(name);
                            }
                        }
                        _ => {}
                    }
                }
            }
            AgentCli::Codex => {
                let kind = event.get("type").and_then(Value::as_str);
                if !matches!(kind, Some("item.started" | "item.completed")) {
                    continue;
                }
                let item = event.get("item").unwrap_or(&Value::Null);
                if item.get("type").and_then(Value::as_str) != Some("command_execution") {
                    continue;
                }
                if let Some(name) = item
                    .get("command")
                    .and_then(Value::as_str)
                    .and_then(skill_file_folder)
                {
                    add(name);
                }
            }
            AgentCli::GeminiCli => {
                if event.get("type").and_then(Value::as_str) != Some("tool_use") {
                    continue;
                }
                let parameters = event.get("parameters").unwrap_or(&Value::Null);
                match event.get("tool_name").and_then(Value::as_str) {
                    Some("activate_skill") => {
                        if let Some(name) = parameters.get("name").and_then(Value::as_str) {
                            add(name.to_owned());
                        }
                    }
                    Some("read_file") => {
                        let path = parameters
                            .get("absolute_path")
                            .or_else(|| parameters.get("file_path"))
                            .and_then(Value::as_str);
                        if let Some(name) = path.and_then(skill_file_folder) {
                            add(name);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    found
}

/// The folder name of the first `<folder>/SKILL.md` that `text` (a path or a shell command)
/// names.
fn skill_file_folder(text: &str) -> Option<String> {
    text.match_indices("/SKILL.md").find_map(|(at, _)| {
        let folder = text[..at].rsplit(['/', ' ', '\'', '"', '`', '=']).next()?;
        (!folder.is_empty() && folder != "." && folder != "..").then(|| folder.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_loads_through_the_skill_tool_or_a_read_of_its_file() {
        let stream = [
            r#"{"type":"system","subtype":"init","tools":["Skill"]}"#,
            "not json",
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Skill","input":{"skill":"receipt-total"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"Launching skill: receipt-total"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Read","input":{"file_path":"/w/.claude/skills/total/SKILL.md"}}]}}"#,
            r#"{"type":"result","subtype":"success"}"#,
        ]
        .join("\n");
        assert_eq!(
            loaded(AgentCli::ClaudeCode, &stream),
            ["receipt-total", "total"]
        );
        let text_only = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Use the receipt-total skill"}]}}"#;
        assert!(loaded(AgentCli::ClaudeCode, text_only).is_empty());
    }

    #[test]
    fn codex_loads_by_reading_the_skill_file_in_a_command() {
        let stream = [
            r#"{"type":"thread.started"}"#,
            r#"{"type":"item.started","item":{"type":"command_execution","command":"/bin/bash -lc 'cat /w/.agents/skills/receipt-total/SKILL.md'"}}"#,
            r#"{"type":"item.completed","item":{"type":"command_execution","command":"/bin/bash -lc 'cat /w/.agents/skills/receipt-total/SKILL.md'"}}"#,
            r#"{"type":"item.completed","item":{"type":"agent_message","text":"total/SKILL.md"}}"#,
        ]
        .join("\n");
        assert_eq!(loaded(AgentCli::Codex, &stream), ["receipt-total"]);
    }

    #[test]
    fn gemini_cli_loads_through_activate_skill() {
        let stream = r#"{"type":"tool_use","tool_name":"activate_skill","tool_id":"1","parameters":{"name":"total"}}"#;
        assert_eq!(loaded(AgentCli::GeminiCli, stream), ["total"]);
    }

    #[test]
    fn a_read_names_the_folder_that_holds_the_skill_file() {
        let folder = |text: &str| skill_file_folder(text);
        assert_eq!(folder("cat x/total/SKILL.md").as_deref(), Some("total"));
        assert_eq!(
            folder("/bin/bash -lc 'sed -n 1,80p /w/.agents/skills/receipt-total/SKILL.md'")
                .as_deref(),
            Some("receipt-total")
        );
        assert_eq!(
            folder("cat r0/openai-docs/SKILL.md").as_deref(),
            Some("openai-docs")
        );
        assert_eq!(folder("cat ./SKILL.md"), None);
        assert_eq!(folder("cat SKILL.md"), None);
    }
}
