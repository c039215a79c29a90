//! System One decision models (TypeSafe's *jev* and compatible hosts): yes/no questions about a
//! *state* answered with a calibrated P(true), one HTTP request for many questions.
//!
//! Skill mode uses it for the `metric.systemone` rubric checks; classifier mode asks its probe
//! sets through the same client and the same answer cache, so answers bought by one are free
//! for the other (and for skill-scanner's lab, whose hashes and cache lines are the same).
//!
//! * [`question`]: a question as sent, and the state / question hashes that key its answers;
//! * [`provider`]: the hosts (`typesafe`, `openrouter`, `vercel`, `cloudflare`, `ollama`,
//!   `custom`), their URLs, default models and key variables;
//! * [`client`]: the [`DecisionModel`] trait and its HTTP implementation (retries, no
//!   redirects, keys never in messages);
//! * [`answer`]: reading and checking a response, all or nothing;
//! * [`cache`]: the append-only `answers.jsonl` answer cache;
//! * [`layers`]: the run's SQLite model cache and budget in front of a decision model;
//! * [`fake`]: a deterministic in-process model for tests;
//! * [`script`]: the scripted model of `provider: scripted`, answering from regex rules in a
//!   YAML file (offline examples and tests).

pub mod answer;
pub mod cache;
pub mod client;
pub mod fake;
pub mod layers;
pub mod provider;
pub mod question;
pub mod script;

pub use answer::{AnswerError, Answers};
pub use cache::{AnswerCache, AnswerKey, CachedAnswer};
pub use client::{Asked, DecisionModel, SystemOneClient};
pub use fake::{FakeRequest, FakeSystemOne};
pub use layers::{BudgetedDecisions, CachedDecisions, SYSTEMONE_ROLE};
pub use provider::{
    Endpoint, SYSTEMONE_PROVIDERS, SystemOneProvider, SystemOneSettings, systemone_provider_names,
};
pub use question::{Question, sha24};
pub use script::{SCRIPTED_PROVIDER, scripted};

use std::path::PathBuf;
use std::sync::Arc;

/// Why a System One client could not be built, a request failed, or the cache is unusable.
///
/// Messages never contain an API key: request errors are redacted before they are built.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SystemOneError {
    /// The settings cannot work: unknown provider, no key, no `base_url` for `custom`, a
    /// plain-HTTP URL to a remote host, ...
    #[error("{0}")]
    Config(String),
    /// The request failed (after the retries worth making).
    #[error("{provider} request failed: {detail}")]
    Request {
        /// The provider name.
        provider: String,
        /// `HTTP <code>: <start of the body>`, or the network reason.
        detail: String,
    },
    /// The host answered, but not with one valid answer for every question asked.
    #[error("invalid answer: {0}")]
    InvalidAnswer(String),
    /// A line of the answer cache is not an answer (and is not a half-written last line).
    #[error(
        "{}:{line}: corrupt answer line ({detail}); repair or delete that line (every other line is kept)",
        path.display()
    )]
    CorruptCache {
        /// The cache file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        detail: String,
    },
    /// The answer cache's path holds a FIFO, a device or a folder, not a file of answers.
    #[error(
        "answer cache {} is {kind}, not a regular file: no answer can be read from it or \
         written to it. Move it away (the cache then starts empty, and the answers are bought \
         again) or point the workspace at the folder that holds the answers file",
        path.display()
    )]
    CacheNotAFile {
        /// The cache file's path.
        path: PathBuf,
        /// What is there instead (`a FIFO`, ...).
        kind: &'static str,
    },
    /// The answer cache file could not be read or written.
    #[error(
        "answer cache {}: {source}; {}, or move the workspace elsewhere",
        path.display(),
        skill_factory_io::hint::write_hint(source)
    )]
    CacheIo {
        /// The cache file.
        path: PathBuf,
        /// What the operating system said (shared, so the error stays cheap to clone).
        source: Arc<std::io::Error>,
    },
}
