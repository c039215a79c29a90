//! Datasets in JSONL.

use crate::task::Task;

/// An ordered set of tasks with unique ids.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dataset {
    /// The tasks, in file order.
    pub tasks: Vec<Task>,
}

/// Why a dataset could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DatasetError {
    /// Placeholder until the parser lands.
    #[error("{0}")]
    Invalid(String),
}
