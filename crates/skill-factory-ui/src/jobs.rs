//! Background jobs: `optimize` or `evaluate` of a config under the working directory, started
//! from the page, run as a child process of the dashboard (never inside an HTTP request), and
//! cancelled the way Ctrl-C cancels a run (SIGINT: the run stops cleanly and writes its
//! report).
//!
//! An `optimize` job writes its run folder under `<runs root>/jobs/<job id>/`, so it is in the
//! runs list at once and the job knows which run folder is its own. Its output (and an
//! `evaluate` job's report) goes to `job.log` beside it, and `job.json` records the job, so a
//! dashboard started later (after a crash, say) lists it too, and adopts it when it still runs.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use skill_factory_io::process::GroupGuard;
use skill_factory_runfolder::names::RESULT_FILE;
use tokio::sync::watch;

use crate::lock;

/// The folder of the runs root where jobs write.
pub const JOBS_DIR: &str = "jobs";
/// A job's record, in its folder.
pub const RECORD_FILE: &str = "job.json";
/// The variable every job runs with, naming it: a dashboard started later adopts a process
/// only when its environment carries it, never a stranger that reused the pid.
const JOB_VARIABLE: &str = "SKILL_FACTORY_JOB";
/// A job's output, in its folder.
pub const LOG_FILE: &str = "job.log";

/// How often a running job's folder is looked at for its run folder.
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// What a job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    /// `skill-factory optimize -c CONFIG --out <job folder>`.
    Optimize,
    /// `skill-factory evaluate -c CONFIG`.
    Evaluate,
}

/// A request to start a job.
#[derive(Debug, Clone, Deserialize)]
pub struct Launch {
    /// What to run.
    pub command: Command,
    /// The config, relative to the working directory (or absolute, inside it).
    pub config: String,
}

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Its process runs.
    Running,
    /// It was asked to stop and has not yet.
    Cancelling,
    /// It exited with 0.
    Done,
    /// It was cancelled and has exited.
    Cancelled,
    /// It exited with another code, or could not start.
    Failed,
    /// It stopped while no dashboard watched it: its exit code is unknown (its log and its
    /// run say how it ended).
    Ended,
}

/// A job as the page shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    /// Its id (`job-N`).
    pub id: String,
    /// What it runs.
    pub command: Command,
    /// The config, as given.
    pub config: String,
    /// Where it stands.
    pub state: State,
    /// Its run folder relative to the runs root, once it exists.
    pub run: Option<String>,
    /// Its log relative to the runs root.
    pub log: String,
    /// Its exit code, once it exited.
    pub exit_code: Option<i32>,
    /// Its process id while it runs.
    #[serde(skip)]
    pid: Option<u32>,
}

/// `job.json`: the job and its process.
#[derive(Serialize, Deserialize)]
struct Record {
    #[serde(flatten)]
    job: Job,
    pid: Option<u32>,
}

/// Why a job was not started or not cancelled.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The config is not a file under the working directory.
    #[error(
        "the config {0:?} is not a file under the working directory {1}: launch takes only configs inside it"
    )]
    Outside(String, String),
    /// No such job.
    #[error("no job {0:?}")]
    Unknown(String),
    /// The process could not be started.
    #[error("cannot start {0}: {1}")]
    Spawn(String, std::io::Error),
}

/// Every job of this dashboard.
pub struct Jobs {
    /// The `skill-factory` binary to run.
    program: PathBuf,
    /// The working directory configs must be under (canonical).
    workdir: PathBuf,
    /// The runs root (canonical).
    root: PathBuf,
    list: Mutex<Vec<Job>>,
    /// Bumped on every change of a job, for the live stream.
    changed: watch::Sender<u64>,
}

impl Jobs {
    /// Jobs that run `program` on configs under `workdir`, writing under `root`.
    /// The jobs an earlier dashboard on `root` started are listed from their `job.json`;
    /// one still running is adopted: watched until it ends, and cancellable.
    pub fn new(program: PathBuf, workdir: PathBuf, root: PathBuf) -> Arc<Jobs> {
        let earlier = earlier_jobs(&root);
        let jobs = Arc::new(Jobs {
            program,
            workdir,
            root,
            list: Mutex::new(earlier.clone()),
            changed: watch::channel(0).0,
        });
        // Without a runtime (a one-off export) nothing needs watching.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            for job in earlier.into_iter().filter(|job| job.pid.is_some()) {
                runtime.spawn(jobs.clone().watch_adopted(job));
            }
        }
        jobs
    }

    /// Follows a job of an earlier dashboard until its process is gone.
    async fn watch_adopted(self: Arc<Self>, job: Job) {
        let folder = self.root.join(JOBS_DIR).join(&job.id);
        while job.pid.is_some_and(|pid| runs_job(pid, &job.id)) {
            self.look_for_run(&job.id, &folder);
            tokio::time::sleep(LOOK_EVERY).await;
        }
        self.look_for_run(&job.id, &folder);
        self.update(&job.id, |job| {
            job.pid = None;
            job.state = match job.state {
                State::Cancelling => State::Cancelled,
                _ => State::Ended,
            };
        });
        self.save(&job.id);
    }

    /// Writes `job.json` of job `id`. The record only lets a later dashboard list the job, so
    /// a disk that refuses it does not stop the job.
    fn save(&self, id: &str) {
        let Some(job) = lock(&self.list).iter().find(|job| job.id == id).cloned() else {
            return;
        };
        let record = Record { pid: job.pid, job };
        if let Ok(text) = serde_json::to_string_pretty(&record) {
            let file = self.root.join(JOBS_DIR).join(id).join(RECORD_FILE);
            let _ = skill_factory_io::output::write_atomic(&file, text.as_bytes());
        }
    }

    /// A receiver that sees every change.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Every job, oldest first.
    pub fn list(&self) -> Vec<Job> {
        lock(&self.list).clone()
    }

    fn update(&self, id: &str, change: impl FnOnce(&mut Job)) {
        if let Some(job) = lock(&self.list).iter_mut().find(|job| job.id == id) {
            change(job);
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// Starts `launch` as a child process and returns its job at once.
    pub fn start(self: &Arc<Self>, launch: Launch) -> Result<Job, JobError> {
        let config = self.workdir.join(&launch.config);
        let config = config
            .canonicalize()
            .ok()
            .filter(|path| path.starts_with(&self.workdir) && path.is_file())
            .ok_or_else(|| {
                JobError::Outside(launch.config.clone(), self.workdir.display().to_string())
            })?;
        let (id, folder) = self.new_folder()?;
        let log_path = folder.join(LOG_FILE);
        // A new file in a folder just made: nothing planted there is written through.
        let log = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&log_path)
            .map_err(|e| JobError::Spawn(log_path.display().to_string(), e))?;
        let err_log = log
            .try_clone()
            .map_err(|e| JobError::Spawn(log_path.display().to_string(), e))?;
        let mut command = tokio::process::Command::new(&self.program);
        match launch.command {
            Command::Optimize => command
                .arg("optimize")
                .arg("-c")
                .arg(&config)
                .arg("--out")
                .arg(&folder),
            Command::Evaluate => command.arg("evaluate").arg("-c").arg(&config),
        };
        command
            .current_dir(&self.workdir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err_log))
            .env(JOB_VARIABLE, &id)
            // Its own process group: Ctrl-C in the dashboard's terminal is the dashboard's.
            .process_group(0);
        let mut child = command
            .spawn()
            .map_err(|e| JobError::Spawn(self.program.display().to_string(), e))?;
        let job = Job {
            id: id.clone(),
            command: launch.command,
            config: launch.config,
            state: State::Running,
            run: None,
            log: format!("{JOBS_DIR}/{id}/{LOG_FILE}"),
            exit_code: None,
            pid: child.id(),
        };
        lock(&self.list).push(job.clone());
        self.changed.send_modify(|n| *n += 1);
        self.save(&id);
        let jobs = self.clone();
        // Until it exits, the job and its agents stop with the dashboard.
        let registered = child.id().map(GroupGuard::new);
        tokio::spawn(async move {
            let _registered = registered;
            let status = loop {
                tokio::select! {
                    status = child.wait() => break status,
                    () = tokio::time::sleep(LOOK_EVERY) => jobs.look_for_run(&id, &folder),
                }
            };
            jobs.look_for_run(&id, &folder);
            let code = status.ok().and_then(|s| s.code());
            jobs.update(&id, |job| {
                job.pid = None;
                job.exit_code = code;
                job.state = match (job.state, code) {
                    (State::Cancelling, _) => State::Cancelled,
                    (_, Some(0)) => State::Done,
                    _ => State::Failed,
                };
            });
            jobs.save(&id);
        });
        Ok(job)
    }

    /// A job id and its folder under `<root>/jobs/`, made new: a name that is taken (by an
    /// earlier dashboard, or by a link planted there) is passed over, never entered.
    fn new_folder(&self) -> Result<(String, PathBuf), JobError> {
        let jobs = self.root.join(JOBS_DIR);
        std::fs::create_dir_all(&jobs)
            .map_err(|e| JobError::Spawn(jobs.display().to_string(), e))?;
        let first = lock(&self.list).len() + 1;
        for n in first..first + 1000 {
            let id = format!("job-{}-{n}", std::process::id());
            let folder = jobs.join(&id);
            match std::fs::create_dir(&folder) {
                Ok(()) => return Ok((id, folder)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(JobError::Spawn(folder.display().to_string(), e)),
            }
        }
        Err(JobError::Spawn(
            jobs.display().to_string(),
            std::io::Error::other("a thousand job folders of this process exist already"),
        ))
    }

    /// Records the job's run folder once it holds a `result.json`.
    fn look_for_run(&self, id: &str, folder: &Path) {
        if lock(&self.list)
            .iter()
            .any(|job| job.id == id && job.run.is_some())
        {
            return;
        }
        let Ok(entries) = std::fs::read_dir(folder) else {
            return;
        };
        let run = entries
            .flatten()
            .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
            .find(|entry| entry.path().join(RESULT_FILE).is_file())
            .map(|entry| format!("{JOBS_DIR}/{id}/{}", entry.file_name().to_string_lossy()));
        if run.is_some() {
            self.update(id, |job| job.run = run);
        }
    }

    /// Asks job `id` to stop as Ctrl-C does.
    pub fn cancel(&self, id: &str) -> Result<Job, JobError> {
        let pid = lock(&self.list)
            .iter()
            .find(|job| job.id == id)
            .ok_or_else(|| JobError::Unknown(id.to_string()))?
            .pid;
        // The process must still be the job's: an adopted job's pid may have been reused.
        if let Some(pid) = pid
            .filter(|pid| runs_job(*pid, id))
            .and_then(|pid| libc::pid_t::try_from(pid).ok())
        {
            // SAFETY: `kill` has no memory effects; `pid` runs this job (its environment
            // names it).
            unsafe {
                libc::kill(pid, libc::SIGINT);
            }
            self.update(id, |job| job.state = State::Cancelling);
            self.save(id);
        }
        lock(&self.list)
            .iter()
            .find(|job| job.id == id)
            .cloned()
            .ok_or_else(|| JobError::Unknown(id.to_string()))
    }
}

/// The jobs recorded under `<root>/jobs/`, oldest first: one whose process still runs keeps
/// its pid (to be adopted); one recorded as running whose process is gone has ended unseen.
fn earlier_jobs(root: &Path) -> Vec<Job> {
    let Ok(entries) = std::fs::read_dir(root.join(JOBS_DIR)) else {
        return Vec::new();
    };
    let mut jobs: Vec<(std::time::SystemTime, Job)> = entries
        .flatten()
        // A job's folder is a folder the dashboard made, never a link planted there.
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter_map(|entry| {
            let file = entry.path().join(RECORD_FILE);
            let text = skill_factory_io::input::read_text(&file, skill_factory_io::input::RUN_FILE)
                .ok()?;
            let Record { mut job, pid } = serde_json::from_str(&text).ok()?;
            if job.id != entry.file_name().to_string_lossy() {
                return None;
            }
            job.pid = pid.filter(|pid| runs_job(*pid, &job.id));
            if job.pid.is_none() && matches!(job.state, State::Running | State::Cancelling) {
                job.state = State::Ended;
            }
            let made = entry.metadata().and_then(|m| m.modified()).ok()?;
            Some((made, job))
        })
        .collect();
    jobs.sort_by_key(|(made, _)| *made);
    jobs.into_iter().map(|(_, job)| job).collect()
}

/// Whether process `pid` runs job `id`: it is alive and its environment names the job.
fn runs_job(pid: u32, id: &str) -> bool {
    let marker = format!("{JOB_VARIABLE}={id}");
    skill_factory_io::process::is_running(pid)
        && std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
            environ
                .split(|byte| *byte == 0)
                .any(|variable| variable == marker.as_bytes())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_link_planted_where_a_job_writes_is_passed_over_not_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let (workdir, root) = (tmp.path().join("work"), tmp.path().join("runs"));
        std::fs::create_dir_all(&workdir).unwrap();
        std::fs::write(workdir.join("config.yaml"), "skill: s.md\n").unwrap();
        let precious = tmp.path().join("precious");
        std::fs::create_dir_all(&precious).unwrap();
        std::fs::write(precious.join(LOG_FILE), "keep me").unwrap();
        // The folder the first job would take is a link to the precious folder.
        let first = root
            .join(JOBS_DIR)
            .join(format!("job-{}-1", std::process::id()));
        std::fs::create_dir_all(first.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&precious, &first).unwrap();
        let jobs = Jobs::new(PathBuf::from("true"), workdir.canonicalize().unwrap(), root);
        let job = jobs
            .start(Launch {
                command: Command::Evaluate,
                config: "config.yaml".into(),
            })
            .unwrap();
        assert_eq!(job.id, format!("job-{}-2", std::process::id()));
        assert_eq!(
            std::fs::read_to_string(precious.join(LOG_FILE)).unwrap(),
            "keep me"
        );
    }

    #[tokio::test]
    async fn a_dashboard_started_again_lists_the_jobs_of_the_one_before_and_can_stop_them() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let (workdir, root) = (tmp.path().join("work"), tmp.path().join("runs"));
        std::fs::create_dir_all(&workdir).unwrap();
        std::fs::write(workdir.join("config.yaml"), "skill: s.md\n").unwrap();
        // A program that runs until it is stopped, whatever it is asked. It stops on SIGINT as
        // the binary does (which handles the signal itself): a test run started in the
        // background inherits SIGINT ignored, which `sleep` keeps and a shell cannot undo. It
        // says when it is ready, so that no signal comes before it listens.
        let program = tmp.path().join("slow.pl");
        let ready = tmp.path().join("ready");
        std::fs::write(
            &program,
            format!(
                "#!/usr/bin/perl\n$SIG{{INT}} = 'DEFAULT';\nopen(my $f, '>', '{}'); close($f);\nsleep 60;\n",
                ready.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let workdir = workdir.canonicalize().unwrap();
        let first = Jobs::new(program.clone(), workdir.clone(), root.clone());
        let launch = || Launch {
            command: Command::Evaluate,
            config: "config.yaml".into(),
        };
        let running = first.start(launch()).unwrap();
        for _ in 0..200 {
            if ready.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(ready.exists(), "the job's program started");
        let done_folder = root.join(JOBS_DIR).join("job-0-1");
        std::fs::create_dir_all(&done_folder).unwrap();
        let ended_unseen = Record {
            job: Job {
                id: "job-0-1".into(),
                pid: None,
                ..running.clone()
            },
            pid: Some(running.pid.unwrap()),
        };
        std::fs::write(
            done_folder.join(RECORD_FILE),
            serde_json::to_string(&ended_unseen).unwrap(),
        )
        .unwrap();

        // The second dashboard, as after a crash of the first.
        let second = Jobs::new(program, workdir, root);
        let listed = second.list();
        let state_of = |id: &str| listed.iter().find(|job| job.id == id).map(|job| job.state);
        assert_eq!(state_of(&running.id), Some(State::Running));
        // A record naming a live pid that does not run that job is not adopted.
        assert_eq!(state_of("job-0-1"), Some(State::Ended));
        assert_eq!(second.cancel(&running.id).unwrap().state, State::Cancelling);
        let pid = running.pid.unwrap();
        for _ in 0..100 {
            if !skill_factory_io::process::is_running(pid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            !skill_factory_io::process::is_running(pid),
            "the job was stopped"
        );
        for _ in 0..100 {
            if second
                .list()
                .iter()
                .any(|job| job.id == running.id && job.state == State::Cancelled)
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let state = second
            .list()
            .into_iter()
            .find(|job| job.id == running.id)
            .map(|job| job.state);
        assert_eq!(state, Some(State::Cancelled));
    }
}
