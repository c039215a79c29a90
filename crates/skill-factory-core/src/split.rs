//! Train / validation / test splits.

use crate::task::Task;

/// A dataset split into the part that drives reflection, the part that gates edits, and an
/// optional held-out test part that the optimizer never reads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Split {
    /// Tasks the optimizer learns from.
    pub train: Vec<Task>,
    /// Tasks that gate every accepted edit.
    pub val: Vec<Task>,
    /// Held-out tasks scored once at the end.
    pub test: Vec<Task>,
}

/// Why a dataset could not be split.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SplitError {
    /// Placeholder until the splitter lands.
    #[error("{0}")]
    Invalid(String),
}
