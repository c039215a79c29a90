//! Placeholders in a subprocess harness's argv: `{skill_body}`, `{skill_file}`, `{skill_dir}`,
//! `{input}`, `{input_file}` and `{task_id}`.
//!
//! Substitution is one left-to-right pass over each argument: a placeholder is replaced by its
//! value and the value is never scanned again. The reference tool replaced the placeholders one
//! after the other over the whole text, so a skill body containing `{input}` had the task
//! input injected into it; here the body arrives exactly as written. Braces that are not one
//! of the six placeholders (`{"not": "a placeholder"}`) are left alone.

/// The values of the placeholders for one rollout; `None` where a value is not available.
#[derive(Debug, Clone, Default)]
pub struct Values<'a> {
    /// The skill body, as written.
    pub skill_body: &'a str,
    /// Path of a file holding the whole SKILL.md.
    pub skill_file: Option<&'a str>,
    /// Path of the folder holding that SKILL.md.
    pub skill_dir: Option<&'a str>,
    /// The task input.
    pub input: &'a str,
    /// Path of a file holding the task input.
    pub input_file: Option<&'a str>,
    /// The task id.
    pub task_id: &'a str,
}

impl Values<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        match name {
            "skill_body" => Some(self.skill_body),
            "skill_file" => self.skill_file,
            "skill_dir" => self.skill_dir,
            "input" => Some(self.input),
            "input_file" => self.input_file,
            "task_id" => Some(self.task_id),
            _ => None,
        }
    }
}

/// True when `{placeholder}` appears in any argument.
pub fn uses(argv: &[String], placeholder: &str) -> bool {
    let token = format!("{{{placeholder}}}");
    argv.iter().any(|arg| arg.contains(&token))
}

/// `template` with every placeholder replaced by its value, in one pass.
pub fn substitute(template: &str, values: &Values<'_>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let replaced = after.find('}').and_then(|close| {
            let name = &after[..close];
            values.get(name).map(|value| (value, close))
        });
        match replaced {
            Some((value, close)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values<'a>(body: &'a str, input: &'a str) -> Values<'a> {
        Values {
            skill_body: body,
            skill_file: Some("/tmp/x/SKILL.md"),
            skill_dir: Some("/tmp/x"),
            input,
            input_file: Some("/tmp/x/input.txt"),
            task_id: "t1",
        }
    }

    #[test]
    fn every_placeholder_is_replaced() {
        let v = values("Be brief.", "hello");
        assert_eq!(
            substitute(
                "{skill_body}|{skill_file}|{skill_dir}|{input}|{input_file}|{task_id}",
                &v
            ),
            "Be brief.|/tmp/x/SKILL.md|/tmp/x|hello|/tmp/x/input.txt|t1"
        );
    }

    #[test]
    fn a_body_containing_a_placeholder_is_not_substituted_again() {
        let v = values("Answer {input} in {task_id}", "SECRET");
        assert_eq!(
            substitute("--system={skill_body} --user={input}", &v),
            "--system=Answer {input} in {task_id} --user=SECRET"
        );
    }

    #[test]
    fn other_braces_survive_untouched() {
        let v = values("b", "i");
        assert_eq!(
            substitute(r#"{"not": "a placeholder"} {input} {unknown} {"#, &v),
            r#"{"not": "a placeholder"} i {unknown} {"#
        );
        assert_eq!(substitute("{{input}}", &v), "{i}");
    }

    #[test]
    fn unavailable_file_placeholders_stay_as_written() {
        let v = Values {
            skill_body: "b",
            input: "i",
            task_id: "t",
            ..Values::default()
        };
        assert_eq!(substitute("{skill_file} {input}", &v), "{skill_file} i");
    }

    #[test]
    fn uses_finds_a_placeholder_inside_an_argument() {
        let argv = vec!["run".to_string(), "--skill={skill_file}".to_string()];
        assert!(uses(&argv, "skill_file"));
        assert!(!uses(&argv, "input_file"));
    }
}
