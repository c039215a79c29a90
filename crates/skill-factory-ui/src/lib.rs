//! The Skill Factory dashboard (`skill-factory ui`).
//!
//! [`index`] keeps one summary per run folder under a runs root (from each `result.json`);
//! [`run`] reads one run for its page (candidates, lineage, timeline) and [`rollouts`] its
//! per-task table; [`diff`] makes line diffs and the blame of the best skill; [`live`] streams
//! a run's events as they are written; [`jobs`] runs `optimize` and `evaluate` in the
//! background; [`export`] writes a run page as one self-contained HTML file; [`server`] serves
//! the page ([`assets`]) and the JSON API, with every path checked by
//! [`skill_factory_io::path::resolve`] and every body passed through a
//! [`skill_factory_io::secrets::Scrubber`].

#![warn(missing_docs)]

pub mod assets;
pub mod diff;
pub mod export;
pub mod index;
pub mod jobs;
pub mod live;
pub mod rollouts;
pub mod run;
pub mod server;

pub use index::{Index, RunStatus, RunSummary};
pub use server::{Dashboard, Options};

/// A mutex's guard, whether or not a thread panicked holding it: every value behind the
/// dashboard's mutexes stays whole between statements.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
