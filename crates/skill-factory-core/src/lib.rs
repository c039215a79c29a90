//! Plain data of Skill Factory: the skill being trained, the tasks it is trained on, how they
//! are split, what one run of a skill on a task produced, and how it scored.
//!
//! This crate parses and serializes text but performs no I/O of its own: callers read files and
//! hand the text over together with the path to name in error messages. It must not depend on
//! any other Skill Factory crate but `skill-factory-pycompat`, whose Python behaviours
//! (JSON and YAML text, `random.Random`) its datasets, splits and skill files reproduce.

#![warn(missing_docs)]

pub mod dataset;
pub mod mode;
pub mod rollout;
pub mod score;
pub mod skill;
pub mod split;
pub mod stats;
pub mod summary;
pub mod target;
pub mod task;
pub mod trigger;

pub use dataset::{Dataset, DatasetError};
pub use rollout::{Rollout, Usage};
pub use score::{Evaluation, MetricResult, TaskEvaluation};
pub use skill::{Skill, SkillError};
pub use split::{Split, SplitError};
pub use stats::{Aggregate, Estimate};
pub use summary::Summary;
pub use task::Task;
