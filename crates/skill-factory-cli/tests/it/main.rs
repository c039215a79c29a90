//! The integration tests of the `skill-factory` binary, in one binary: every module runs the
//! built command under the clean environment of [`common::bin`].

mod common;

mod agent_skills;
mod agent_triggers;
mod batch;
mod cache;
mod chaos;
mod ci_verdicts;
mod classifier;
mod classifier_exports;
mod classifier_hostile;
mod closed_output;
mod disk;
mod doc_commands;
mod docs_configs;
mod docs_links;
#[cfg(feature = "e2e")]
mod e2e_local;
#[cfg(feature = "e2e")]
mod e2e_ray;
mod env_example;
mod error_paths;
mod errors;
mod evaluate;
mod gallery;
mod github_action;
mod honesty;
mod init;
mod mlflow;
mod noise;
mod npx_skills;
mod optimize;
mod optimize_cache;
mod optimize_guards;
mod process_harnesses;
mod python_reader;
mod reference_configs;
mod secrets;
mod targets;
mod triggers;
mod ui;
mod ui_browser;
mod untrusted;
mod urls;
