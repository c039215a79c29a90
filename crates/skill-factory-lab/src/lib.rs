//! Classifier mode: tune a *probe set* (yes/no questions, a score expression, a threshold and a
//! state budget) for a System One decision model, measured on honest, sealed splits.
//!
//! A System One model answers every question about an example in one request with a
//! calibrated P(true). The lab buys each answer once and keeps it in `answers.jsonl` (the
//! format, hashes and client of `skill_factory_llm::systemone`, shared with skill mode, the
//! Python tool and skill-scanner), so every threshold, ensemble and report afterwards is
//! computed offline at no cost.
//!
//! * [`probe`]: the probe set, its questions and its score expression;
//! * [`data`]: labelled examples, honest splits, the seal on test and held-out, and
//!   skill-scanner labs imported as workspaces;
//! * [`answers`]: buying, caching and reading System One's answers; noise and drift;
//! * [`measure`]: a probe set scored through a policy, and the rates and thresholds of that;
//! * [`optimizer`]: the objective and its gate, the candidate families, the reflective
//!   rounds, and the run of them;
//! * [`ship`]: exports for production, parity with what runs there, and the agent skill;
//! * [`config`]: the `kind: classifier` YAML;
//! * [`lock`]: one command at a time changes a workspace;
//! * [`output`]: where a command may write: never over a file it reads, nor over one of
//!   another kind without `--force`;
//! * [`run`]: what the commands do (open a workspace, plan, optimize, ask, score, select,
//!   compare, status), for the CLI to call and print, and the files a run writes.

#![warn(missing_docs)]

pub mod answers;
pub mod config;
pub mod data;
pub mod error;
mod files;
pub mod lock;
pub mod measure;
pub mod optimizer;
pub mod output;
pub mod probe;
pub mod run;
pub mod ship;

pub use error::LabError;
