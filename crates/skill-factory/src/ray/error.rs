//! Why a rollout could not be run on the cluster. It becomes the rollout's launch failure,
//! so each message says what went wrong and, where the user can act, what to do.

use std::path::PathBuf;
use std::sync::Arc;

use skill_factory_llm::LlmError;

/// Why the Ray executor could not talk to the dashboard or package a job.
#[derive(Debug, thiserror::Error)]
pub enum RayError {
    /// The HTTP client could not be built.
    #[error(transparent)]
    Client(LlmError),
    /// The dashboard did not answer. `cause` is redacted: the address may hold credentials.
    #[error(
        "could not reach the Ray dashboard at {address} ({cause}): start the cluster (`ray start --head`) or fix harness.executor.address"
    )]
    Unreachable {
        /// The dashboard, as shown.
        address: String,
        /// What the connection said, redacted.
        cause: String,
    },
    /// The dashboard's answer stopped halfway.
    #[error("the Ray dashboard at {address} broke off its answer ({cause})")]
    BrokenAnswer {
        /// The dashboard, as shown.
        address: String,
        /// What the connection said, redacted.
        cause: String,
    },
    /// The dashboard refused the request.
    #[error("the Ray dashboard at {address} answered HTTP {status}: {body}")]
    Refused {
        /// The dashboard, as shown.
        address: String,
        /// The HTTP status code.
        status: u16,
        /// The start of its answer, redacted.
        body: String,
    },
    /// A job's status came back as something other than JSON.
    #[error("the status of job {id} is not JSON ({source})")]
    StatusNotJson {
        /// The job.
        id: String,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// A job's logs came back as something other than JSON.
    #[error("the logs of job {id} are not JSON ({source})")]
    LogsNotJson {
        /// The job.
        id: String,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// A file or folder to ship cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The project folder is too big to ship with every rollout.
    #[error(
        "{} holds more than {limit_mib} MiB, too much to ship with every rollout: point harness.cwd at a smaller folder",
        folder.display()
    )]
    ProjectTooLarge {
        /// The harness's `cwd`.
        folder: PathBuf,
        /// The limit, in MiB.
        limit_mib: u64,
    },
    /// The zip of the job could not be written.
    #[error("could not build the job's package: {0}")]
    Package(#[source] std::io::Error),
    /// The task building the job's package died.
    #[error("building the job's package stopped: {0}")]
    PackagingStopped(#[source] tokio::task::JoinError),
    /// The task reading the project folder died.
    #[error("reading the project folder stopped: {0}")]
    ReadingStopped(#[source] tokio::task::JoinError),
    /// The executor's slots were closed.
    #[error("the Ray executor was shut down")]
    ShutDown,
    /// Ctrl-C came before the job was submitted: no job starts once quitting has begun.
    #[error("Skill Factory is quitting")]
    Quitting,
    /// The job ended without the report of `job.py`: Ray could not start it.
    #[error("Ray job {id} ended {status} before the rollout ran: {message}")]
    EndedEarly {
        /// The job.
        id: String,
        /// Its final state (`FAILED`, `STOPPED`).
        status: String,
        /// The last lines of Ray's explanation.
        message: String,
    },
    /// The project folder could not be read; read once per run, so every rollout shares the
    /// one error.
    #[error(transparent)]
    Project(Arc<RayError>),
}
