//! The Skill Factory engine: run configs, harnesses that run a skill on a task, metrics that
//! score the result with feedback, evaluation of a skill on a dataset, the optimizers and the
//! run folders they write, and the gallery made of run folders.
//!
//! Depends on `skill-factory-core` (plain data), `skill-factory-llm` (model clients),
//! `skill-factory-package` (Agent Skills folders) and `skill-factory-pycompat` only, never on
//! the CLI.

#![warn(missing_docs)]

pub mod cancel;
pub mod config;
pub mod error;
pub mod evaluate;
pub mod gallery;
pub mod harness;
pub mod metric;
pub mod noise;
pub mod optimizer;
pub mod ray;
pub mod run;
pub mod session;
pub mod tracking;
