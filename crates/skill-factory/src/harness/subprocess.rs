//! Harnesses that run a child process per rollout: `subprocess` (the user's own command) and
//! the agent CLI presets `claude_code`, `codex` and `gemini_cli`.
//!
//! Per rollout:
//! 1. a fresh temporary folder is created (see [`super::workspace`]), removed afterwards;
//! 2. the skill reaches the child through placeholders (`subprocess`), the preset's flags and
//!    prompt (`skill_mode: prompt`), or as a real skill folder in a fresh workspace that
//!    becomes the child's working directory (`skill_mode: installed`);
//! 3. the child runs under [`skill_factory_io::process::run`] (or, with `executor: {type: ray}`, as a
//!    job on a Ray cluster that runs it the same way: [`crate::ray`]): argv executed directly (no shell), stdin
//!    the task input or `/dev/null`, the environment laid over the parent's, the whole process
//!    group killed at the deadline;
//! 4. the outcome becomes the rollout: output = trimmed stdout; a non-zero exit, a timeout or
//!    a launch failure becomes a failed rollout with the reference tool's message
//!    (`exit 3: <stderr tail>`, `command timed out after 120.0s`, `failed to launch 'x': ...`).
//!
//! Rollout metadata: `harness`, `returncode` (when the child exited), `stderr` (its last
//! 64 KiB, when not empty), `stdout` (its last 64 KiB, on failure only: on success it is the
//! output), and `stdout_bytes` + `output_truncated` when stdout exceeded the 8 MiB kept as
//! output.
//!
//! Differences from the reference tool: a string `command` is split like a shell splits words
//! (the reference iterated over its characters); placeholders are substituted in one pass, so a
//! skill body containing `{input}` is passed as written; in `input_via: arg` mode stdin is
//! `/dev/null` instead of the parent's terminal; `{skill_dir}` and `{task_id}` are new.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;
use skill_factory_core::{Rollout, Skill, Task};
use skill_factory_pycompat::repr::repr_float;

use super::Harness;
use super::agent::{AgentCli, AgentOptions, Invocation};
use super::template::{self, Values};
use super::workspace::RolloutDir;
use crate::config::{ExecutorType, HarnessConfig, InputVia, SkillMode};
use crate::error::EngineError;
use crate::metric::text::py_strip;
use crate::ray::RayExecutor;
use crate::session::Session;
use skill_factory_io::process::{self, ChildSpec, Limits, Outcome, Output};

/// The harness name of a user's command.
pub const SUBPROCESS: &str = "subprocess";

/// Where `skill_mode: installed` puts the skill for a user's command: the cross-agent location.
pub const SUBPROCESS_SKILLS_DIR: &str = ".agents/skills";

/// How many characters of stderr a failure message quotes.
const STDERR_IN_MESSAGE: usize = 1000;

/// How many bytes of each stream the rollout metadata keeps.
const STREAM_IN_METADATA: usize = 64 * 1024;

/// What a rollout runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// The user's argv template (`type: subprocess`).
    Command {
        /// The argv, with placeholders.
        argv: Vec<String>,
        /// Whether the input also goes to stdin.
        input_via: InputVia,
    },
    /// An agent CLI preset.
    Agent {
        /// Which CLI.
        cli: AgentCli,
        /// Its binary, model and extra arguments.
        options: AgentOptions,
    },
}

/// Why a user's command cannot be the program of a process harness. The config's
/// validation says the same earlier; a harness built in code meets it here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    /// An empty argv.
    #[error("the subprocess harness needs a command: give 'command' at least a program name")]
    NoCommand,
    /// `input_via: arg` with no argument that carries the input: the child would never see it.
    #[error(
        "input_via: arg needs {{input}} or {{input_file}} in the command, since the input reaches the child only through them"
    )]
    InputUnreachable,
}

/// How the child runs, whatever the program. Its `Debug` output names the `env` variables
/// but not their values, which may be keys.
#[derive(Clone, PartialEq)]
pub struct ProcessSettings {
    /// Longest time per rollout.
    pub timeout: Duration,
    /// Working directory (prompt mode only; installed mode uses the fresh workspace).
    pub cwd: Option<PathBuf>,
    /// Variables set over the parent's environment.
    pub env: BTreeMap<String, String>,
    /// How the skill reaches the agent.
    pub skill_mode: SkillMode,
}

impl fmt::Debug for ProcessSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessSettings")
            .field("timeout", &self.timeout)
            .field("cwd", &self.cwd)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("skill_mode", &self.skill_mode)
            .finish()
    }
}

impl ProcessSettings {
    /// Settings with a timeout and nothing else: parent's cwd and environment, prompt mode.
    pub fn with_timeout(timeout: Duration) -> Self {
        ProcessSettings {
            timeout,
            cwd: None,
            env: BTreeMap::new(),
            skill_mode: SkillMode::Prompt,
        }
    }
}

/// Runs a child process per rollout (see the module documentation), here or, with a Ray
/// executor, as a job on a cluster.
#[derive(Debug, Clone)]
pub struct SubprocessHarness {
    program: Program,
    settings: ProcessSettings,
    limits: Limits,
    ray: Option<Arc<RayExecutor>>,
    /// A trigger run's competitors, installed beside the skill, when the agent's event stream
    /// is the output ([`SubprocessHarness::watching`]).
    watched: Option<Vec<Skill>>,
}

impl SubprocessHarness {
    /// The process harness of a `harness` block (any type but `api`): the user's command or
    /// the agent CLI the type names, its children getting the session's environment.
    pub fn from_config(config: &HarnessConfig, session: &Session) -> Result<Self, EngineError> {
        let program = match AgentCli::for_harness(config.harness_type) {
            Some(cli) => Program::Agent {
                cli,
                options: AgentOptions {
                    executable: config.executable().to_string(),
                    model: config.model.clone(),
                    extra_args: config.extra_args.clone(),
                },
            },
            None => Program::Command {
                argv: match &config.command {
                    Some(command) => command
                        .argv()
                        .map_err(|e| session.block_error("harness.command", e))?,
                    None => Vec::new(),
                },
                input_via: config.input_via,
            },
        };
        let settings = ProcessSettings {
            timeout: config.timeout_duration(),
            cwd: config.cwd.clone(),
            // A job runs in its node's environment, not in this process's.
            env: match config.executor.executor_type {
                ExecutorType::Local => session.child_env(&config.env),
                ExecutorType::Ray => session.shipped_env(&config.env),
            },
            skill_mode: config.skill_mode,
        };
        let harness = SubprocessHarness::new(program, settings).map_err(|e| {
            let key = if config.command.is_some() {
                "harness.command"
            } else {
                "harness.type"
            };
            session.block_error(key, e)
        })?;
        if config.executor.executor_type != ExecutorType::Ray {
            return Ok(harness);
        }
        // The runs and the cache grow inside a project folder; neither is the rollout's.
        let cache = &session.config.config.cache.path;
        let mut skip = vec![session.config.runs_dir(), cache.clone()];
        for suffix in ["-wal", "-shm", "-journal"] {
            let mut file = cache.clone().into_os_string();
            file.push(suffix);
            skip.push(file.into());
        }
        let ray = RayExecutor::new(config, skip)
            .map_err(|e| session.block_error("harness.executor", e))?;
        Ok(harness.on_ray(ray))
    }

    /// The same harness running its rollouts as jobs on a Ray cluster.
    pub fn on_ray(mut self, ray: RayExecutor) -> Self {
        self.ray = Some(Arc::new(ray));
        self
    }

    /// A harness for `program`. Fails on an empty argv, and in `input_via: arg` mode when no
    /// argument holds `{input}` or `{input_file}` (the input would reach the child no way).
    pub fn new(program: Program, settings: ProcessSettings) -> Result<Self, ProgramError> {
        if let Program::Command { argv, input_via } = &program {
            if argv.is_empty() {
                return Err(ProgramError::NoCommand);
            }
            if *input_via == InputVia::Arg
                && !template::uses(argv, "input")
                && !template::uses(argv, "input_file")
            {
                return Err(ProgramError::InputUnreachable);
            }
        }
        Ok(SubprocessHarness {
            program,
            settings,
            limits: Limits::default(),
            ray: None,
            watched: None,
        })
    }

    /// The same harness for a trigger run: the skill installed with `competitors` beside it,
    /// the task input alone as the prompt, and the agent's event stream as the output
    /// ([`AgentCli::watched_invocation`]).
    pub fn watching(mut self, competitors: Vec<Skill>) -> Self {
        self.settings.skill_mode = SkillMode::Installed;
        self.watched = Some(competitors);
        self
    }

    /// The same harness keeping other amounts of output (tests of huge outputs use small ones).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    fn skills_dir(&self) -> &'static str {
        match &self.program {
            Program::Command { .. } => SUBPROCESS_SKILLS_DIR,
            Program::Agent { cli, .. } => cli.skills_dir(),
        }
    }

    /// Prepares the folder and the invocation of one rollout; the error is the failure reason.
    fn prepare(
        &self,
        dir: &RolloutDir,
        skill: &Skill,
        task: &Task,
    ) -> std::io::Result<(Invocation, Option<PathBuf>)> {
        let installed = match self.settings.skill_mode {
            SkillMode::Installed => Some(dir.install_skill(skill, self.skills_dir())?),
            SkillMode::Prompt => None,
        };
        for competitor in self.watched.iter().flatten() {
            dir.install_skill(competitor, self.skills_dir())?;
        }
        let cwd = match &installed {
            Some(installed) => Some(installed.workspace.clone()),
            None => self.settings.cwd.clone(),
        };
        let invocation = match &self.program {
            Program::Agent { cli, options } if self.watched.is_some() => {
                cli.watched_invocation(options, &task.input)
            }
            Program::Agent { cli, options } => {
                let body = installed.is_none().then_some(skill.body.as_str());
                cli.invocation(options, body, &task.input)
            }
            Program::Command { argv, input_via } => command_invocation(
                dir,
                argv,
                *input_via,
                skill,
                task,
                installed.map(|i| i.skill_file),
            )?,
        };
        Ok((invocation, cwd))
    }

    fn rollout(&self, task: &Task, argv0: &str, outcome: Outcome) -> Rollout {
        let mut metadata = serde_json::Map::new();
        let rollout = match outcome {
            Outcome::LaunchFailed(error) => {
                Rollout::unreachable(&task.id, format!("failed to launch '{argv0}': {error}"))
            }
            Outcome::TimedOut { output } => {
                let mut message = format!(
                    "command timed out after {}s",
                    repr_float(self.settings.timeout.as_secs_f64())
                );
                let stderr = stderr_tail(&output);
                if !stderr.is_empty() {
                    message.push_str(&format!(" (stderr: {stderr})"));
                }
                keep_streams(&mut metadata, &output, true);
                Rollout::failure(&task.id, message)
            }
            Outcome::Exited { code, output } => {
                metadata.insert("returncode".into(), Value::from(code));
                if code == 0 {
                    keep_streams(&mut metadata, &output, false);
                    Rollout::success(&task.id, py_strip(&output.stdout.head_text()))
                } else {
                    let stderr = stderr_tail(&output);
                    let stderr = if stderr.is_empty() {
                        "(no stderr)".to_string()
                    } else {
                        stderr
                    };
                    keep_streams(&mut metadata, &output, true);
                    Rollout::failure(&task.id, format!("exit {code}: {stderr}"))
                }
            }
        };
        let mut rollout = rollout;
        metadata.insert("harness".into(), Value::from(self.name()));
        if self.settings.skill_mode == SkillMode::Installed {
            metadata.insert("skill_mode".into(), Value::from("installed"));
        }
        rollout.metadata.extend(metadata);
        rollout
    }
}

/// The argv and stdin of a user's command: placeholders filled in (writing the files they
/// point at only when used), the input on stdin unless `input_via: arg`.
fn command_invocation(
    dir: &RolloutDir,
    argv: &[String],
    input_via: InputVia,
    skill: &Skill,
    task: &Task,
    installed_skill_file: Option<PathBuf>,
) -> std::io::Result<Invocation> {
    let wants_skill = template::uses(argv, "skill_file") || template::uses(argv, "skill_dir");
    let skill_file = match installed_skill_file {
        Some(file) => Some(file),
        None if wants_skill => Some(dir.write_skill(skill)?),
        None => None,
    };
    let skill_dir = skill_file.as_deref().and_then(Path::parent);
    let input_file = if template::uses(argv, "input_file") {
        Some(dir.write_input(&task.input)?)
    } else {
        None
    };
    let text = |path: Option<&Path>| path.map(|p| p.display().to_string());
    let (skill_file, skill_dir, input_file) = (
        text(skill_file.as_deref()),
        text(skill_dir),
        text(input_file.as_deref()),
    );
    let values = Values {
        skill_body: &skill.body,
        skill_file: skill_file.as_deref(),
        skill_dir: skill_dir.as_deref(),
        input: &task.input,
        input_file: input_file.as_deref(),
        task_id: &task.id,
    };
    Ok(Invocation {
        argv: argv
            .iter()
            .map(|arg| template::substitute(arg, &values))
            .collect(),
        stdin: (input_via == InputVia::Stdin).then(|| task.input.clone()),
    })
}

/// The last characters of trimmed stderr, as the failure message quotes them.
fn stderr_tail(output: &Output) -> String {
    let text = output.stderr.tail_text(STREAM_IN_METADATA);
    let trimmed = py_strip(&text);
    let count = trimmed.chars().count();
    trimmed
        .chars()
        .skip(count.saturating_sub(STDERR_IN_MESSAGE))
        .collect()
}

/// Records the streams worth keeping: stderr always, stdout when it is not the output.
fn keep_streams(metadata: &mut serde_json::Map<String, Value>, output: &Output, failed: bool) {
    let stderr = output.stderr.tail_text(STREAM_IN_METADATA);
    if !stderr.is_empty() {
        metadata.insert("stderr".into(), Value::from(stderr));
    }
    if failed {
        let stdout = output.stdout.tail_text(STREAM_IN_METADATA);
        if !stdout.is_empty() {
            metadata.insert("stdout".into(), Value::from(stdout));
        }
    } else if output.stdout.truncated() {
        metadata.insert("output_truncated".into(), Value::Bool(true));
        metadata.insert(
            "stdout_bytes".into(),
            Value::from(output.stdout.total_bytes()),
        );
    }
}

/// The variable that tells a rollout's program which sample of its task it is (`0` for the
/// first), so a program that draws at random can seed its draw from it.
pub const SAMPLE_ENV: &str = "SKILL_FACTORY_SAMPLE";

#[async_trait]
impl Harness for SubprocessHarness {
    fn name(&self) -> &str {
        match &self.program {
            Program::Command { .. } => SUBPROCESS,
            Program::Agent { cli, .. } => cli.name(),
        }
    }

    /// An installed skill is a folder with its reference files; in prompt mode a command sees
    /// them beside the `{skill_file}` (or in the `{skill_dir}`) it is given.
    fn shows_files(&self) -> bool {
        match (&self.settings.skill_mode, &self.program) {
            (SkillMode::Installed, _) => true,
            (SkillMode::Prompt, Program::Command { argv, .. }) => {
                template::uses(argv, "skill_file") || template::uses(argv, "skill_dir")
            }
            (SkillMode::Prompt, Program::Agent { .. }) => false,
        }
    }

    async fn run_sample(&self, skill: &Skill, task: &Task, sample: u32) -> Rollout {
        let started = Instant::now();
        let dir = match RolloutDir::create() {
            Ok(dir) => dir,
            Err(error) => {
                return Rollout::failure(
                    &task.id,
                    format!("could not create a temporary folder for the rollout: {error}"),
                );
            }
        };
        let mut rollout = match self.prepare(&dir, skill, task) {
            Err(error) => Rollout::failure(
                &task.id,
                format!(
                    "could not write the rollout's files in {}: {error}",
                    dir.path().display()
                ),
            ),
            Ok((invocation, cwd)) => {
                let mut env = self.settings.env.clone();
                env.insert(SAMPLE_ENV.to_string(), sample.to_string());
                let spec = ChildSpec {
                    argv: &invocation.argv,
                    stdin: invocation.stdin.as_deref().map(str::as_bytes),
                    cwd: cwd.as_deref(),
                    env: &env,
                    timeout: self.settings.timeout,
                    limits: self.limits,
                };
                let outcome = match &self.ray {
                    Some(ray) => ray.run(spec, dir.path()).await,
                    None => process::run(spec).await,
                };
                let argv0 = invocation.argv.first().map_or("", String::as_str);
                self.rollout(task, argv0, outcome)
            }
        };
        // An agent may leave many files behind; removing them must not stall a runtime thread.
        if tokio::task::spawn_blocking(move || dir.remove())
            .await
            .is_err()
        {
            tracing::warn!("removing a rollout's temporary folder stopped unexpectedly");
        }
        rollout.latency_ms = (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
        rollout
    }
}
