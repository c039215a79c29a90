//! The Skill Factory dashboard (`skill-factory ui`): [`index`] reads every run folder under a
//! runs root into one summary per run, from the run's `result.json` alone, and [`server`]
//! serves the runs list page and its JSON API on loopback.

#![warn(missing_docs)]

pub mod index;
pub mod server;

pub use index::{Index, RunStatus, RunSummary};
pub use server::Dashboard;
