//! A loopback model server that speaks the OpenAI chat-completions, OpenAI Responses and
//! Anthropic Messages wire formats, for tests and benchmarks: no network, no model,
//! deterministic answers.
//!
//! It answers from a map of known answers, or as a deterministic LLM judge, or with a canned
//! line; it can be slow (fixed latency) and fail on purpose (429 with and without
//! `Retry-After`, 500, hangs, malformed bodies, connections reset or cut mid-body, bodies
//! trickled a byte a second), reproducibly for a seed; and it records every request it
//! received, so tests can check request bodies from the server's side. It also speaks both
//! providers' batch APIs ([`batch`]), with a delay before a batch ends and requests that
//! end errored or expired. The `sf-mock-server`
//! binary serves it on a fixed port for benchmark scripts.
//!
//! It is enough of a model for the real Claude Code and Codex CLIs to run against it:
//! Anthropic Messages (`POST /v1/messages`, `?beta=true` as Claude Code sends it) and
//! Responses (`POST /v1/responses`, as Codex sends it) answer `"stream": true` with their
//! server-sent events ([`stream`]), after any fault the plan injects. A request carrying a
//! skill listing is answered by the mock's router ([`routing`]): it loads the skill whose
//! description best matches the query (a `Skill` tool call for Claude Code, a `cat` of the
//! skill's SKILL.md for Codex, the skill's name otherwise), or none, so that trigger runs can
//! be tested; and a reflection prompt rewriting a skill's description is answered by the
//! mock optimizer of descriptions ([`description`]), which revises it in the router's terms.
//!
//! [`SystemOneStub`] is the same idea for System One decision models (`/v1/systemone`);
//! `sf-mock-server --systemone` serves it with [`hashed_probability`] as the responder.
//!
//! It depends on no other Skill Factory crate, so that it checks the wire format the way a
//! real server would, not the way our client happens to write it.

#![warn(missing_docs)]

pub mod batch;
pub mod config;
pub mod description;
mod fault;
pub mod needs;
pub mod responder;
pub mod routing;
pub mod server;
pub mod stream;
pub mod systemone;
pub mod wire;

pub use batch::BatchPlan;
pub use config::{Fault, FaultPlan, MockConfig, load_answers, parse_answers};
pub use needs::{Needs, parse_needs};
pub use responder::{Answering, Variation};
pub use routing::{ListedSkill, parse_listing, route, router_words, split_description};
pub use server::{MockServer, ReceivedRequest};
pub use systemone::{StubOptions, StubRequest, SystemOneStub, hashed_probability};

/// Why a mock server could not start.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// The port could not be bound.
    #[error(
        "cannot listen on 127.0.0.1:{port}: {source} (is the port in use? pass another --port, or 0 for any free one)"
    )]
    Bind {
        /// The port asked for.
        port: u16,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A line of an answers file is wrong.
    #[error("{origin}:{line}: {detail}")]
    Answers {
        /// The file.
        origin: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        detail: String,
    },
    /// The configuration is inconsistent.
    #[error("{0}")]
    Config(String),
}
