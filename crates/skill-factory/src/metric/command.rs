//! The command metric: a program of the user's, in any language, scores each rollout.
//!
//! The program gets one JSON object on stdin,
//! `{"task_id", "input", "output", "expected", "metadata"}` (`expected` is `null` when the task
//! has none, `metadata` is the task's), and prints `{"score": <0..1>, "feedback": "<why>"}` on
//! stdout (`feedback` optional). When stdout holds more than that object, its last line that
//! parses is used, so a script may print progress before its verdict.
//!
//! A failed rollout scores 0 (`rollout failed: ...`) without running the program, as with
//! every other metric. When the program itself fails (non-zero exit, timeout, no valid verdict
//! on stdout, a score outside [0, 1]), the task scores 0 and the feedback says exactly what
//! went wrong. That is a choice: the LLM judge is *dropped* when its call fails, because a
//! network error says nothing about the output; a metric script, by contrast, usually fails
//! on the output it was given (it could not parse it, ...), and dropping it would let such
//! outputs score as if the metric did not exist. A broken script shows up at once as 0 on
//! every task, with the reason in each task's feedback.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use skill_factory_core::{MetricResult, Rollout, Task};
use skill_factory_pycompat::repr::repr_float;

use super::text::py_strip;
use super::{MetricSetupError, Scored, ScoresOutput};
use crate::config::CommandMetricConfig;
use skill_factory_io::process::{self, ChildSpec, Limits, Outcome};

/// The metric's name in feedback and breakdowns.
pub const NAME: &str = "command";

/// How much of the program's stdout is read (a verdict is a few hundred bytes).
const STDOUT_LIMIT: usize = 1024 * 1024;

/// How many characters of stderr or of a bad stdout the feedback quotes.
const QUOTE_CHARS: usize = 500;

/// Scores rollouts with a user's program. Its `Debug` output names the `env` variables but
/// not their values, which may be keys.
#[derive(Clone)]
pub struct CommandMetric {
    argv: Vec<String>,
    timeout: Duration,
    cwd: Option<PathBuf>,
    env: BTreeMap<String, String>,
}

impl fmt::Debug for CommandMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandMetric")
            .field("argv", &self.argv)
            .field("timeout", &self.timeout)
            .field("cwd", &self.cwd)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl CommandMetric {
    /// The metric of a `metric.command` block; the program runs with `env` over the
    /// inherited environment.
    pub fn from_config(
        config: &CommandMetricConfig,
        env: BTreeMap<String, String>,
    ) -> Result<Self, MetricSetupError> {
        let argv = match &config.command {
            Some(command) => command.argv()?,
            None => Vec::new(),
        };
        Ok(CommandMetric::new(argv, config.timeout_duration())?
            .in_dir(config.cwd.clone())
            .with_env(env))
    }

    /// A metric running `argv` (never through a shell) with at most `timeout` per rollout.
    pub fn new(argv: Vec<String>, timeout: Duration) -> Result<Self, MetricSetupError> {
        if argv.is_empty() {
            return Err(MetricSetupError::NoCommand);
        }
        Ok(CommandMetric {
            argv,
            timeout,
            cwd: None,
            env: BTreeMap::new(),
        })
    }

    /// Runs the program in `cwd`.
    pub fn in_dir(mut self, cwd: Option<PathBuf>) -> Self {
        self.cwd = cwd;
        self
    }

    /// Sets `env` over the inherited environment.
    pub fn with_env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = env;
        self
    }

    fn failed(&self, reason: String) -> MetricResult {
        MetricResult::new(NAME, 0.0, format!("metric command failed: {reason}"))
    }
}

/// The JSON object the program reads.
pub fn request(task: &Task, rollout: &Rollout) -> Value {
    json!({
        "task_id": task.id,
        "input": task.input,
        "output": rollout.output,
        "expected": task.expected,
        "metadata": task.metadata,
    })
}

#[async_trait]
impl ScoresOutput for CommandMetric {
    const NAME: &'static str = NAME;

    async fn score_output(&self, task: &Task, rollout: &Rollout) -> Scored {
        let stdin = request(task, rollout).to_string();
        let outcome = process::run(ChildSpec {
            argv: &self.argv,
            stdin: Some(stdin.as_bytes()),
            cwd: self.cwd.as_deref(),
            env: &self.env,
            timeout: self.timeout,
            limits: Limits {
                stdout_head: STDOUT_LIMIT,
                tail: 64 * 1024,
            },
        })
        .await;
        let program = self.argv.first().map_or("", String::as_str);
        Ok(match outcome {
            Outcome::LaunchFailed(error) => {
                self.failed(format!("cannot launch '{program}': {error}"))
            }
            Outcome::TimedOut { .. } => self.failed(format!(
                "'{program}' did not answer within {}s",
                repr_float(self.timeout.as_secs_f64())
            )),
            Outcome::Exited { code, output } if code != 0 => {
                let stderr = quote_tail(&output.stderr.tail_text(64 * 1024));
                self.failed(format!(
                    "'{program}' exited with {code}: {}",
                    if stderr.is_empty() {
                        "(no stderr)".to_string()
                    } else {
                        stderr
                    }
                ))
            }
            Outcome::Exited { output, .. } => match verdict(&output.stdout.head_text()) {
                Ok((score, feedback)) => MetricResult::new(NAME, score, feedback),
                Err(problem) => self.failed(format!("'{program}' {problem}")),
            },
        })
    }
}

/// Reads `{"score", "feedback"}` from the whole stdout, else from its last line that parses.
fn verdict(stdout: &str) -> Result<(f64, String), VerdictError> {
    let trimmed = py_strip(stdout);
    let object = serde_json::from_str::<Value>(trimmed)
        .ok()
        .filter(Value::is_object)
        .or_else(|| {
            trimmed
                .lines()
                .rev()
                .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
                .find(Value::is_object)
        });
    let Some(object) = object else {
        return Err(if trimmed.is_empty() {
            VerdictError::Nothing
        } else {
            VerdictError::NoObject(quote_head(trimmed))
        });
    };
    let score = match object.get("score") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(other) => return Err(VerdictError::ScoreNotNumber(other.clone())),
        None => return Err(VerdictError::NoScore),
    };
    if !(0.0..=1.0).contains(&score) {
        return Err(VerdictError::OutOfRange(score));
    }
    let feedback = match object.get("feedback") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    Ok((score, feedback))
}

/// What the program is told to print, quoted in every complaint about what it printed.
const VERDICT_FORMAT: &str = r#"print one JSON object such as {"score": 0.8, "feedback": "why"}"#;

/// Why the program's stdout holds no usable verdict; follows the program's name in the
/// feedback (`'score.py' printed nothing; ...`).
#[derive(Debug, PartialEq, thiserror::Error)]
enum VerdictError {
    #[error("printed nothing; {VERDICT_FORMAT}")]
    Nothing,
    /// Holds the start of what it printed, quoted.
    #[error("printed no JSON object; {VERDICT_FORMAT} (it printed {0})")]
    NoObject(String),
    #[error("gave \"score\": {0}, which is not a number; {VERDICT_FORMAT}")]
    ScoreNotNumber(Value),
    #[error("gave no \"score\"; {VERDICT_FORMAT}")]
    NoScore,
    #[error(
        "gave \"score\": {}, outside 0..1; scale it to between 0 and 1",
        repr_float(*.0)
    )]
    OutOfRange(f64),
}

fn quote_head(text: &str) -> String {
    let head: String = text.chars().take(QUOTE_CHARS).collect();
    if head.len() < text.len() {
        format!("{head:?}…")
    } else {
        format!("{head:?}")
    }
}

fn quote_tail(text: &str) -> String {
    let trimmed = py_strip(text);
    let count = trimmed.chars().count();
    trimmed
        .chars()
        .skip(count.saturating_sub(QUOTE_CHARS))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_reads_score_and_feedback() {
        assert_eq!(
            verdict(r#" {"score": 0.5, "feedback": "half"} "#),
            Ok((0.5, "half".to_string()))
        );
        assert_eq!(verdict(r#"{"score": 1}"#), Ok((1.0, String::new())));
    }

    #[test]
    fn verdict_takes_the_last_json_line_after_progress_output() {
        assert_eq!(
            verdict("checking...\n{\"score\": 0.25, \"feedback\": \"x\"}\n"),
            Ok((0.25, "x".to_string()))
        );
    }

    #[test]
    fn bad_verdicts_say_what_was_expected() {
        let cases = [
            ("", "printed nothing"),
            ("great job", "printed no JSON object"),
            (r#"{"feedback": "x"}"#, "gave no \"score\""),
            (r#"{"score": "0.5"}"#, "is not a number"),
            (r#"{"score": true}"#, "is not a number"),
            (r#"{"score": 7}"#, "outside 0..1"),
            ("[0.5]", "printed no JSON object"),
        ];
        for (stdout, part) in cases {
            let error = verdict(stdout).unwrap_err().to_string();
            assert!(error.contains(part), "{stdout:?}: {error}");
        }
    }
}
