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
    /// The dashboard refused the request, with a short excerpt of its answer.
    #[error("the Ray dashboard at {address} answered {request} with HTTP {status}: {body}")]
    Refused {
        /// The dashboard, as shown.
        address: String,
        /// The method and route asked (`POST /api/jobs/`).
        request: String,
        /// The HTTP status code.
        status: u16,
        /// What it answered, cut short and redacted.
        body: String,
    },
    /// Another server answers at the address: a route that answers JSON on a dashboard
    /// answered something else, or an error came as an HTML page.
    #[error(
        "not a Ray dashboard: {address} answered {request} with HTTP {status} and {answer}, where Ray's Job Submission API answers JSON; point harness.executor.address at the dashboard of `ray start --head` (port 8265 unless set otherwise)"
    )]
    NotRay {
        /// The address, as shown.
        address: String,
        /// The method and route asked (`GET /api/jobs/ID`).
        request: String,
        /// The HTTP status code.
        status: u16,
        /// What it answered: an HTML page's title, or the answer's start, cut short and
        /// redacted.
        answer: String,
    },
    /// The address is not a URL (the config's check lets only `http://` and `https://` ones
    /// through; one can still fail to parse).
    #[error("harness.executor.address is not a URL ({problem}): write it as http://HOST:PORT")]
    Address {
        /// What the parser said (the address is not quoted: it may carry credentials).
        problem: String,
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
