//! The `skillopt` bridge: a config that sets `optimizer.params.command` runs that external
//! command, as the reference tool does (§7.3 of the spec), so users of Microsoft's SkillOpt
//! package keep it. Without `command`, [`super::skillopt`] runs natively.
//!
//! The bridge writes `seed_skill.md`, `train.jsonl` and `valid.jsonl` (records `{id, input,
//! expected?, metadata?}`, one Python `json.dumps` line each) into `params.work_dir`, fills the
//! command's `{seed} {train} {val} {out_dir}` placeholders (Python `str.format`: `{{` and `}}`
//! are literal braces), runs it without a shell in `params.cwd` for at most `params.timeout`
//! seconds, and reads `work_dir/<output_skill>`: its body when it parses as a SKILL.md, else
//! the whole trimmed file. The result is scored on validation through the run's harness and
//! metric, and kept when it scores at least the seed (the reference's non-strict rule).
//!
//! Where the reference raised an exception (a failing command, a timeout, no output file, an
//! unknown placeholder), the run stops with the seed as its best skill and a reason that
//! says what to fix; the run folder is written as for any other stop.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};
use skill_factory_core::{Skill, Task};
use skill_factory_io::output::write_atomic;
use skill_factory_pycompat::json::dumps;

use super::context::RunContext;
use super::event::Event;
use super::progress;
use super::round::{self, Candidate, Proposed};
use super::{CandidateRecord, OptimizationResult, Optimizer, StopReason};
use crate::config::{Command, CommandSplitError, OptimizerKind, OptimizerParams};
use skill_factory_io::process::{self, ChildSpec, Limits, Outcome};

/// The history note of the bridge's candidate (the reference's).
pub const BRIDGE_NOTE: &str = "SkillOpt best_skill.md";

/// Characters of stderr quoted when the command fails (as the reference).
const STDERR_CHARS: usize = 2000;

/// The bridge to an external SkillOpt command.
#[derive(Debug, Clone)]
pub struct Bridge {
    command: Command,
    work_dir: PathBuf,
    output_skill: String,
    timeout: Duration,
    cwd: Option<PathBuf>,
}

impl Bridge {
    /// The bridge of `optimizer.params` that set a `command`; `None` without one.
    pub fn configured(params: &OptimizerParams) -> Option<Bridge> {
        Some(Bridge {
            command: params.command.clone()?,
            work_dir: params.work_dir.clone(),
            output_skill: params.output_skill.clone(),
            timeout: Duration::try_from_secs_f64(params.timeout)
                .unwrap_or(Duration::from_secs(3600)),
            cwd: params.cwd.clone(),
        })
    }

    /// Writes the inputs and runs the command; the path of the skill it wrote, or why not.
    async fn run_command(
        &self,
        seed: &Skill,
        train: &[Task],
        val: &[Task],
    ) -> Result<PathBuf, BridgeError> {
        let dir = &self.work_dir;
        std::fs::create_dir_all(dir).map_err(|source| BridgeError::WorkDir {
            dir: dir.clone(),
            source,
        })?;
        let seed_path = dir.join("seed_skill.md");
        let train_path = dir.join("train.jsonl");
        let val_path = dir.join("valid.jsonl");
        let write = |path: &Path, text: String| {
            write_atomic(path, text.as_bytes()).map_err(|source| BridgeError::Write {
                path: path.to_path_buf(),
                source,
            })
        };
        write(&seed_path, seed.to_markdown())?;
        write(&train_path, records(train))?;
        write(&val_path, records(val))?;
        let values = [
            ("seed", seed_path.display().to_string()),
            ("train", train_path.display().to_string()),
            ("val", val_path.display().to_string()),
            ("out_dir", dir.display().to_string()),
        ];
        let argv = match &self.command {
            Command::Line(line) => {
                let line = format_placeholders(line, &values)?;
                Command::Line(line).argv()?
            }
            Command::Argv(items) => items
                .iter()
                .map(|item| format_placeholders(item, &values))
                .collect::<Result<Vec<_>, _>>()?,
        };
        let env = BTreeMap::new();
        let outcome = process::run(ChildSpec {
            argv: &argv,
            stdin: None,
            cwd: self.cwd.as_deref(),
            env: &env,
            timeout: self.timeout,
            limits: Limits::default(),
        })
        .await;
        match outcome {
            Outcome::Exited { code: 0, .. } => {}
            Outcome::Exited { code, output } => {
                return Err(BridgeError::Exited {
                    code,
                    stderr: last_chars(&output.stderr.tail_text(64 * 1024), STDERR_CHARS),
                });
            }
            Outcome::TimedOut { .. } => return Err(BridgeError::TimedOut(self.timeout)),
            Outcome::LaunchFailed(source) => {
                return Err(BridgeError::Launch {
                    program: argv.first().cloned().unwrap_or_default(),
                    source,
                });
            }
        }
        let out = dir.join(&self.output_skill);
        if !out.is_file() {
            return Err(BridgeError::NoOutput(out));
        }
        Ok(out)
    }
}

/// Why the external SkillOpt command gave no skill. It ends the search with the seed as the
/// best skill, so each message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// `params.work_dir` cannot be created.
    #[error("cannot create params.work_dir {}: {source}", dir.display())]
    WorkDir {
        /// The folder.
        dir: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// An input of the command cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The skill the command wrote cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// `params.command` names a placeholder the bridge does not fill.
    #[error(
        "optimizer.params.command has the placeholder {{{name}}}; the known ones are {{seed}} {{train}} {{val}} {{out_dir}} (write {{{{ and }}}} for literal braces)"
    )]
    UnknownPlaceholder {
        /// The placeholder's name, without braces.
        name: String,
    },
    /// `params.command` has a `}` that closes nothing.
    #[error("optimizer.params.command has a single '}}': write }}}} for a literal brace")]
    LoneBrace,
    /// `params.command` is a string that cannot be split into arguments.
    #[error(transparent)]
    Split(#[from] CommandSplitError),
    /// The command failed.
    #[error("the skillopt command exited with code {code}: {stderr}")]
    Exited {
        /// Its exit code.
        code: i32,
        /// The end of what it wrote on stderr.
        stderr: String,
    },
    /// The command ran past `params.timeout` and was stopped.
    #[error(
        "the skillopt command ran past optimizer.params.timeout ({} s) and was stopped",
        .0.as_secs_f64()
    )]
    TimedOut(Duration),
    /// The command could not be started.
    #[error("cannot start the skillopt command {program:?}: {source}")]
    Launch {
        /// Its program.
        program: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The command ended without writing `params.output_skill`.
    #[error(
        "SkillOpt did not produce an output skill at {} (optimizer.params.output_skill)",
        .0.display()
    )]
    NoOutput(PathBuf),
}

/// The tasks as the reference's JSONL records.
fn records(tasks: &[Task]) -> String {
    tasks
        .iter()
        .map(|task| {
            let mut record = Map::new();
            record.insert("id".into(), Value::from(task.id.clone()));
            record.insert("input".into(), Value::from(task.input.clone()));
            if let Some(expected) = &task.expected {
                record.insert("expected".into(), Value::from(expected.clone()));
            }
            if !task.metadata.is_empty() {
                record.insert("metadata".into(), Value::Object(task.metadata.clone()));
            }
            format!("{}\n", dumps(&Value::Object(record)))
        })
        .collect()
}

/// Python's `str.format` with named fields only: `{name}` replaced, `{{` and `}}` literal; an
/// unknown or unclosed field is an error naming it (the reference crashed).
pub fn format_placeholders(
    template: &str,
    values: &[(&str, String)],
) -> Result<String, BridgeError> {
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let name: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let value = values
                    .iter()
                    .find(|(key, _)| *key == name)
                    .ok_or(BridgeError::UnknownPlaceholder { name })?;
                out.push_str(&value.1);
            }
            '}' => return Err(BridgeError::LoneBrace),
            c => out.push(c),
        }
    }
    Ok(out)
}

fn last_chars(text: &str, limit: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(limit)).collect()
}

/// The body of the skill file the command wrote: its body when it is a SKILL.md, else the
/// whole trimmed file.
fn body_of(text: &str) -> String {
    match Skill::parse(text) {
        Ok(skill) => skill.body,
        Err(_) => text.trim().to_string(),
    }
}

#[async_trait]
impl Optimizer for Bridge {
    fn name(&self) -> &str {
        OptimizerKind::SkillOpt.name()
    }

    async fn optimize(
        &self,
        seed: &Skill,
        train: &[Task],
        val: &[Task],
        context: &RunContext,
    ) -> OptimizationResult {
        let mut metadata = Map::new();
        for (key, value) in [
            ("backend", OptimizerKind::SkillOpt.name().to_string()),
            ("work_dir", self.work_dir.display().to_string()),
            ("output_skill", self.output_skill.clone()),
        ] {
            metadata.insert(key.into(), Value::from(value));
        }
        let start = progress::start(context, self.name(), seed, val, metadata).await;
        let mut result = start.result;
        let stop = match start.stop {
            Some(stop) => stop,
            None => self.search(seed, train, val, context, &mut result).await,
        };
        progress::finish(context, result, stop)
    }
}

impl Bridge {
    /// Runs the command and scores what it wrote; the reason the search ended.
    async fn search(
        &self,
        seed: &Skill,
        train: &[Task],
        val: &[Task],
        context: &RunContext,
        result: &mut OptimizationResult,
    ) -> StopReason {
        if let Some(reason) = context.stop_reason() {
            return reason;
        }
        let out = match self.run_command(seed, train, val).await {
            Ok(out) => out,
            Err(error) => {
                return StopReason::OptimizerFailed {
                    error: error.to_string(),
                };
            }
        };
        let text = match std::fs::read_to_string(&out) {
            Ok(text) => text,
            Err(source) => {
                let error = BridgeError::Read { path: out, source };
                return StopReason::OptimizerFailed {
                    error: error.to_string(),
                };
            }
        };
        let proposed = Proposed {
            skill: seed.with_body(body_of(&text)),
            rationale: BRIDGE_NOTE.to_string(),
            warnings: Vec::new(),
        };
        let candidate = Candidate::new(1, round::check(context, seed, proposed), seed, None);
        round::emit_proposed(context, 1, 0, 0, &candidate, None);
        let skill = match candidate.outcome {
            Ok(proposed) => proposed.skill,
            Err(rejected) => {
                result.history.push(CandidateRecord {
                    iteration: 1,
                    skill: seed.clone(),
                    train_score: result.baseline_score,
                    val_score: result.baseline_score,
                    accepted: false,
                    candidate: None,
                    note: format!("{BRIDGE_NOTE} refused: {}", rejected.reason),
                    interval: None,
                    comparison: None,
                });
                return StopReason::RoundsDone { rounds: 1 };
            }
        };
        let scored = context.evaluate(&skill, val, 1, 1, "val").await;
        if !scored.complete {
            return context.stop_reason().unwrap_or(StopReason::Cancelled);
        }
        context.emit(Event::CandidateScored {
            round: 1,
            candidate: 1,
            val_score: scored.score(),
            interval: None,
            same_as: None,
        });
        let accepted = scored.score() >= result.baseline_score;
        context.emit(Event::Decision {
            round: 1,
            candidate: Some(1),
            accepted,
            val_score: scored.score(),
            best_before: result.best_score,
            note: BRIDGE_NOTE.to_string(),
        });
        if accepted {
            result.best_skill = skill.clone();
            result.best_score = scored.score();
            result.best_candidate = 1;
        }
        result.history.push(CandidateRecord {
            iteration: 1,
            skill,
            train_score: scored.score(),
            val_score: scored.score(),
            accepted,
            candidate: Some(1),
            note: BRIDGE_NOTE.to_string(),
            interval: None,
            comparison: None,
        });
        StopReason::RoundsDone { rounds: 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Vec<(&'static str, String)> {
        vec![("seed", "s.md".into()), ("out_dir", "out".into())]
    }

    #[test]
    fn placeholders_are_filled_and_doubled_braces_are_literal() {
        assert_eq!(
            format_placeholders("run --seed {seed} --out {out_dir} '{{x}}'", &values()).unwrap(),
            "run --seed s.md --out out '{x}'"
        );
    }

    #[test]
    fn an_unknown_placeholder_or_a_lone_brace_is_an_error_saying_what_to_write() {
        let unknown = format_placeholders("run {model}", &values()).unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "optimizer.params.command has the placeholder {model}; the known ones are {seed} {train} {val} {out_dir} (write {{ and }} for literal braces)"
        );
        let lone = format_placeholders("run }", &values()).unwrap_err();
        assert_eq!(
            lone.to_string(),
            "optimizer.params.command has a single '}': write }} for a literal brace"
        );
    }

    #[test]
    fn records_omit_a_missing_expected_and_empty_metadata() {
        let tasks = vec![Task::new("a", "x").with_expected("y"), Task::new("b", "z")];
        assert_eq!(
            records(&tasks),
            "{\"id\": \"a\", \"input\": \"x\", \"expected\": \"y\"}\n{\"id\": \"b\", \"input\": \"z\"}\n"
        );
    }

    #[test]
    fn an_output_without_frontmatter_is_taken_whole() {
        assert_eq!(body_of("  just text \n"), "just text");
        assert_eq!(
            body_of("---\nname: a\ndescription: b\n---\n\nThe body.\n").trim(),
            "The body."
        );
    }
}
