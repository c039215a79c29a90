//! The Skill Factory engine: run configs, harnesses that run a skill on a task, metrics that
//! score the result with feedback, evaluation of a skill on a dataset, and (in later modules)
//! the optimizers, run folders and exports built on them.
//!
//! Depends on `skill-factory-core` (plain data) and `skill-factory-llm` (model clients) only.

#![warn(missing_docs)]

pub mod bundle;
pub mod cancel;
pub mod config;
pub mod error;
pub mod evaluate;
pub mod export;
pub mod gallery;
pub mod harness;
pub mod install;
pub mod metric;
pub mod optimizer;
pub mod process;
pub mod pyrepr;
pub mod run;
pub mod session;
pub mod skill_spec;
mod staged_dir;
pub mod validate;
