//! The Skill Factory dashboard (`skill-factory ui`), built up from its data side: [`index`]
//! reads every run folder under a runs root into one summary per run, from the run's
//! `result.json` alone, so that the list of runs never rereads a run's other files.

#![warn(missing_docs)]

pub mod index;

pub use index::{Index, RunStatus, RunSummary};
