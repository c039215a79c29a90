//! Rollouts on a Ray cluster (`harness.executor: {type: ray, address: ...}`): each process
//! harness rollout runs as a job, submitted through the cluster's Job Submission REST API.
//!
//! Per rollout, the driver (this process) prepares the rollout's folder as it would locally,
//! then ships it, with the harness's `cwd` folder, as the job's working_dir
//! ([`package`]); `job.py` runs the program on the node exactly as [`skill_factory_io::process::run`]
//! would here and reports its exit code and bounded output after a marker in the job's log.
//! Paths into the rollout's folder or the `cwd` folder, in the arguments and the environment,
//! are moved to where the package is unpacked. The job's outcome becomes the same
//! [`Outcome`] a local child gives, so a rollout (and a failed one) reads the same. The
//! rollout's timeout runs from the moment Ray starts the job (not while it waits for a free
//! core) and is enforced by stopping the job; Ctrl-C stops every job of the run
//! ([`stop_running_jobs`]). The driver keeps the one cache: nothing on the cluster writes it.

pub mod client;
mod error;
pub mod package;

pub use error::RayError;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::config::HarnessConfig;
use client::RayClient;
use package::{Entry, ROLLOUT_DIR};
use skill_factory_io::process::{Captured, ChildSpec, Outcome, Output};

/// The job's entrypoint script.
const JOB_PY: &str = include_str!("job.py");

/// Where the package's root is written in what the job is given, for `job.py` to replace
/// with the folder Ray unpacked it in.
const ROOT_TOKEN: &str = "@@SKILL_FACTORY_JOB_ROOT@@";

/// The line of the job's log that carries its result starts with this.
const MARKER: &str = "@@SKILL_FACTORY_ROLLOUT_RESULT@@ ";

/// How long a stopped job is given to end (Ray sends SIGKILL 3 s after SIGTERM).
const STOP_GRACE: Duration = Duration::from_secs(20);

/// How long past the rollout's timeout a job ends itself, when nobody stopped it (the
/// driver was killed, or lost the dashboard).
const BACKSTOP: Duration = Duration::from_secs(60);

/// How long after a job has ended its record is deleted from the cluster.
const DELETE_AFTER: Duration = Duration::from_secs(10);

/// Failed looks at a job in a row that are tried again (the dashboard restarting, a
/// dropped connection).
const LOOK_FAILURES: u32 = 10;

/// Runs process rollouts as jobs on one Ray cluster.
pub struct RayExecutor {
    client: RayClient,
    slots: Arc<Semaphore>,
    num_cpus: f64,
    /// The harness's `cwd`, shipped with every rollout (prompt mode).
    project: Option<PathBuf>,
    /// Folders inside it that are not shipped (the runs folder, the cache).
    skip: Vec<PathBuf>,
    /// The project's files, read once for the whole run.
    project_files: OnceLock<Result<Arc<Vec<Entry>>, Arc<RayError>>>,
    /// Names this run's jobs apart from other runs' on the same cluster.
    run_tag: String,
    jobs: AtomicU64,
}

impl std::fmt::Debug for RayExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RayExecutor")
            .field("address", &self.client.address())
            .field("num_cpus", &self.num_cpus)
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

impl RayExecutor {
    /// The executor of a harness block whose executor is `ray` (checked by the config's
    /// validation): `skip` are folders of the project not to ship.
    pub fn new(harness: &HarnessConfig, skip: Vec<PathBuf>) -> Result<Self, RayError> {
        let executor = &harness.executor;
        let address = executor.address.as_deref().unwrap_or_default();
        let workers = executor.max_workers.unwrap_or(harness.max_workers).max(1);
        let started = chrono::Utc::now().format("%Y%m%d%H%M%S");
        Ok(RayExecutor {
            client: RayClient::new(address)?,
            slots: Arc::new(Semaphore::new(workers)),
            num_cpus: executor.num_cpus.unwrap_or(1.0),
            project: (harness.skill_mode == crate::config::SkillMode::Prompt)
                .then(|| harness.cwd.clone())
                .flatten(),
            skip,
            project_files: OnceLock::new(),
            run_tag: format!("skill-factory-{started}-{}", std::process::id()),
            jobs: AtomicU64::new(0),
        })
    }

    /// The cluster's dashboard.
    pub fn address(&self) -> &str {
        self.client.address()
    }

    /// Runs `spec` as a job, `folder` being the rollout's temporary folder (its paths in the
    /// spec are moved to the node's copy). Never fails: a problem is an [`Outcome`].
    pub async fn run(&self, spec: ChildSpec<'_>, folder: &Path) -> Outcome {
        let Ok(_slot) = self.slots.acquire().await else {
            return launch_failed(RayError::ShutDown);
        };
        let number = self.jobs.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("{}-{number}", self.run_tag);
        let package = match self.package(&spec, folder, &id).await {
            Ok(package) => package,
            Err(error) => return launch_failed(error),
        };
        let (name, zip) = package;
        if let Err(error) = self.client.upload(&name, zip).await {
            return launch_failed(error);
        }
        let entrypoint = format!(
            "if command -v python3 >/dev/null 2>&1; then exec python3 {ROLLOUT_DIR}/job.py; else exec python {ROLLOUT_DIR}/job.py; fi"
        );
        // Registered before it exists, so that quitting meanwhile stops it too.
        let Some(_running) = Running::register(self.client.clone(), &id) else {
            return launch_failed(RayError::Quitting);
        };
        if let Err(error) = self
            .client
            .submit(&id, &entrypoint, &name, self.num_cpus)
            .await
        {
            return launch_failed(error);
        }
        if STOPPING.load(Ordering::SeqCst) {
            // Quitting began while it was submitted, maybe after its stop was sent.
            let _ = self.client.stop(&id).await;
            return launch_failed(RayError::Quitting);
        }
        let outcome = self.follow(&id, spec.timeout, spec.limits).await;
        // The record goes once its supervisor is surely gone: deleting a job that has just
        // ended kills the supervisor mid-exit and leaves a FAILED record behind instead.
        let client = self.client.clone();
        tokio::spawn(async move {
            tokio::time::sleep(DELETE_AFTER).await;
            if let Err(error) = client.delete(&id).await {
                tracing::debug!("could not delete Ray job {id}: {error}");
            }
        });
        outcome
    }

    /// The package of one job: the project, the rollout's folder, and the job's own files.
    async fn package(
        &self,
        spec: &ChildSpec<'_>,
        folder: &Path,
        id: &str,
    ) -> Result<(String, Vec<u8>), RayError> {
        let project = self.project_files().await.map_err(RayError::Project)?;
        let folder = folder.to_path_buf();
        let project_dir = self.project.clone();
        let relocate = |text: &str| {
            let mut text = move_path(text, &folder, &format!("{ROOT_TOKEN}/{ROLLOUT_DIR}"));
            if let Some(dir) = &project_dir {
                text = move_path(&text, dir, ROOT_TOKEN);
            }
            text
        };
        let cwd = match spec.cwd {
            Some(cwd) if cwd.starts_with(&folder) => {
                let inside = cwd.strip_prefix(&folder).unwrap_or(Path::new(""));
                format!("{ROLLOUT_DIR}/{}", inside.display())
            }
            _ => String::new(),
        };
        let env: BTreeMap<&String, String> =
            spec.env.iter().map(|(k, v)| (k, relocate(v))).collect();
        let job = json!({
            "job": id,
            "argv": spec.argv.iter().map(|a| relocate(a)).collect::<Vec<_>>(),
            "cwd": cwd,
            "env": env,
            "stdin": spec.stdin.is_some(),
            // The job's own limit, should this process die and not stop it at the timeout.
            "deadline": spec.timeout.as_secs_f64() + BACKSTOP.as_secs_f64(),
            "stdout_head": spec.limits.stdout_head,
            "tail": spec.limits.tail,
            "root_token": ROOT_TOKEN,
            "marker": MARKER,
        });
        let stdin = spec.stdin.map(<[u8]>::to_vec);
        tokio::task::spawn_blocking(move || {
            let mut own = package::read_rollout(&folder)?;
            let file = |path: &str, bytes: Vec<u8>, mode| Entry {
                path: format!("{ROLLOUT_DIR}/{path}"),
                bytes,
                mode,
            };
            own.push(file("job.py", JOB_PY.as_bytes().to_vec(), 0o644));
            own.push(file("job.json", job.to_string().into_bytes(), 0o600));
            if let Some(stdin) = stdin {
                own.push(file("stdin", stdin, 0o600));
            }
            let entries: Vec<&Entry> = project.iter().chain(own.iter()).collect();
            package::zip(&entries)
        })
        .await
        .map_err(RayError::PackagingStopped)?
    }

    /// The project's files, read on the first call; a failure is kept, so every rollout
    /// fails alike rather than reading a folder too big to ship again and again.
    async fn project_files(&self) -> Result<Arc<Vec<Entry>>, Arc<RayError>> {
        if let Some(files) = self.project_files.get() {
            return files.clone();
        }
        let read = match &self.project {
            None => Ok(Arc::new(Vec::new())),
            Some(dir) => {
                let (dir, skip) = (dir.clone(), self.skip.clone());
                tokio::task::spawn_blocking(move || package::read_project(&dir, &skip))
                    .await
                    .map_err(RayError::ReadingStopped)
                    .and_then(|r| r)
                    .map(Arc::new)
                    .map_err(Arc::new)
            }
        };
        self.project_files.get_or_init(|| read).clone()
    }

    /// Waits for the job to end, stopping it once it has run for `timeout`, and reads its
    /// outcome from its log.
    async fn follow(
        &self,
        id: &str,
        timeout: Duration,
        limits: skill_factory_io::process::Limits,
    ) -> Outcome {
        let mut pause = Duration::from_millis(100);
        let mut started: Option<Instant> = None;
        let mut stopped_at: Option<Instant> = None;
        let mut failures = 0;
        let status = loop {
            match self.client.status(id).await {
                Ok(status) if status.ended() => break status,
                Ok(status) => {
                    failures = 0;
                    if status.status == "RUNNING" {
                        started.get_or_insert_with(Instant::now);
                    }
                }
                Err(error) if failures < LOOK_FAILURES => {
                    failures += 1;
                    tracing::debug!("a look at Ray job {id} failed ({error}); trying again");
                }
                Err(error) => {
                    // Given up on: it is stopped rather than left running unwatched.
                    let _ = self.client.stop(id).await;
                    return launch_failed(error);
                }
            }
            let now = Instant::now();
            match (started, stopped_at) {
                (Some(start), None) if now.duration_since(start) >= timeout => {
                    // A stop that fails is tried again at the next look.
                    match self.client.stop(id).await {
                        Ok(()) => stopped_at = Some(now),
                        Err(error) => {
                            tracing::warn!("could not stop Ray job {id} at its timeout: {error}")
                        }
                    }
                }
                (_, Some(stop)) if now.duration_since(stop) >= STOP_GRACE => {
                    return Outcome::TimedOut {
                        output: Output::default(),
                    };
                }
                _ => {}
            }
            let left = started
                .filter(|_| stopped_at.is_none())
                .map(|start| timeout.saturating_sub(now.duration_since(start)));
            let wait = left.map_or(pause, |left| pause.min(left.max(Duration::from_millis(10))));
            tokio::time::sleep(wait).await;
            pause = pause.mul_f64(1.5).min(Duration::from_secs(1));
        };
        let logs = match self.client.logs(id).await {
            Ok(logs) => logs,
            Err(error) => return launch_failed(error),
        };
        match read_report(&logs, limits) {
            Some(Report::LaunchError(error)) => Outcome::LaunchFailed(error),
            Some(Report::Ran { output, .. }) if stopped_at.is_some() => {
                Outcome::TimedOut { output }
            }
            // Stopped by someone else (`ray job stop`, the cluster): the program's own end,
            // as for a child killed here.
            Some(Report::Ran { code, output }) => Outcome::Exited { code, output },
            None if stopped_at.is_some() => Outcome::TimedOut {
                output: Output::default(),
            },
            None => launch_failed(RayError::EndedEarly {
                id: id.to_string(),
                status: status.status,
                message: last_lines(&status.message, 20),
            }),
        }
    }
}

/// What `job.py` reported.
enum Report {
    LaunchError(std::io::Error),
    Ran { code: i32, output: Output },
}

fn read_report(logs: &str, limits: skill_factory_io::process::Limits) -> Option<Report> {
    let line = logs.lines().rev().find_map(|l| l.strip_prefix(MARKER))?;
    let value: Value = serde_json::from_str(line).ok()?;
    if let Some(error) = value.get("launch_error") {
        let errno = error["errno"].as_i64().and_then(|n| i32::try_from(n).ok());
        return Some(Report::LaunchError(match errno {
            Some(errno) => std::io::Error::from_raw_os_error(errno),
            None => {
                std::io::Error::other(error["message"].as_str().unwrap_or("unknown").to_string())
            }
        }));
    }
    let stream = |key: &str, head_limit: usize| {
        let bytes = |part: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(value[key][part].as_str().unwrap_or_default())
                .unwrap_or_default()
        };
        Captured::from_parts(
            bytes("head"),
            bytes("tail"),
            value[key]["total"].as_u64().unwrap_or_default(),
            head_limit,
            limits.tail,
        )
    };
    Some(Report::Ran {
        code: i32::try_from(value["code"].as_i64()?).ok()?,
        output: Output {
            stdout: stream("stdout", limits.stdout_head),
            stderr: stream("stderr", 0),
        },
    })
}

fn launch_failed(reason: RayError) -> Outcome {
    Outcome::LaunchFailed(std::io::Error::other(reason))
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// `text` with the path `from` written as `to` wherever it stands as a whole path or the
/// start of one: not preceded by a character of a path (so `/data/home/u` is not moved for
/// `/home/u`) and followed by `/`, the end, or a character that cannot continue a name.
fn move_path(text: &str, from: &Path, to: &str) -> String {
    let from = from.display().to_string();
    if from.is_empty() || from == "/" {
        return text.to_string();
    }
    let in_path = |c: char| c.is_alphanumeric() || "/._-~+@".contains(c);
    let mut moved = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&from) {
        let before = rest[..at].chars().last().or_else(|| moved.chars().last());
        let after = rest[at + from.len()..].chars().next();
        let whole =
            before.is_none_or(|c| !in_path(c)) && after.is_none_or(|c| c == '/' || !in_path(c));
        moved.push_str(&rest[..at]);
        moved.push_str(if whole { to } else { &from });
        rest = &rest[at + from.len()..];
    }
    moved.push_str(rest);
    moved
}

/// The jobs of this process still running, for [`stop_running_jobs`].
static RUNNING: Mutex<BTreeMap<String, RayClient>> = Mutex::new(BTreeMap::new());

/// Set once [`stop_running_jobs`] has begun: no job is submitted after it.
static STOPPING: AtomicBool = AtomicBool::new(false);

fn running() -> std::sync::MutexGuard<'static, BTreeMap<String, RayClient>> {
    RUNNING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A job in [`RUNNING`] while this lives.
struct Running(String);

impl Running {
    /// Registers the job `id`, or refuses once quitting has begun.
    fn register(client: RayClient, id: &str) -> Option<Running> {
        let mut jobs = running();
        if STOPPING.load(Ordering::SeqCst) {
            return None;
        }
        jobs.insert(id.to_string(), client);
        Some(Running(id.to_string()))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        running().remove(&self.0);
    }
}

/// Asks the cluster to stop every job of this process still running, for a process about to
/// exit (Ctrl-C): waits at most a few seconds for the answers. Returns how many were asked.
pub fn stop_running_jobs() -> usize {
    let jobs = {
        let mut jobs = running();
        STOPPING.store(true, Ordering::SeqCst);
        std::mem::take(&mut *jobs)
    };
    if jobs.is_empty() {
        return 0;
    }
    let count = jobs.len();
    // The caller may be on the runtime's own thread, which cannot block on it: a thread of
    // its own with a runtime of its own sends the stops.
    let stopper = std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async {
            let stops = jobs.iter().map(|(id, client)| async move {
                let _ = tokio::time::timeout(Duration::from_secs(5), client.stop(id)).await;
            });
            futures_util::future::join_all(stops).await;
        });
    });
    let _ = stopper.join();
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_into_the_shipped_folders_move_and_others_stay() {
        let cases = [
            (
                "/tmp/skill-factory-abc",
                "/tmp/skill-factory-abc/SKILL.md",
                "R/SKILL.md",
            ),
            (
                "/tmp/skill-factory-abc",
                "--dir=/tmp/skill-factory-abc",
                "--dir=R",
            ),
            (
                "/tmp/skill-factory-abc",
                "/tmp/skill-factory-abcd/f",
                "/tmp/skill-factory-abcd/f",
            ),
            ("/tmp/skill-factory-abc", "plain", "plain"),
            ("/home/u/proj", "/data/home/u/proj/x", "/data/home/u/proj/x"),
            ("/home/u/proj", "a=/home/u/proj/x:/home/u/proj", "a=R/x:R"),
        ];
        for (from, text, moved) in cases {
            assert_eq!(move_path(text, Path::new(from), "R"), moved, "{text}");
        }
    }

    #[test]
    fn the_report_line_is_found_after_rays_own_lines() {
        let limits = skill_factory_io::process::Limits::default();
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let logs = format!(
            "Running entrypoint for job x\nsome output\n{MARKER}{}\n",
            json!({"code": 3, "stopped": false,
                   "stdout": {"head": b64("out"), "tail": "", "total": 3},
                   "stderr": {"head": "", "tail": b64("err"), "total": 3}})
        );
        match read_report(&logs, limits) {
            Some(Report::Ran { code, output }) => {
                assert_eq!(code, 3);
                assert_eq!(output.stdout.head_text(), "out");
                assert_eq!(output.stderr.tail_text(100), "err");
            }
            _ => panic!("no report in {logs}"),
        }
        assert!(read_report("no marker here", limits).is_none());
    }
}
