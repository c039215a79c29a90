//! Batch mode: an evaluation's requests sent as one provider batch, at half price.
//!
//! - [`api`]: the HTTP client of Anthropic's Message Batches and OpenAI's Batch API.
//! - [`model`]: [`BatchedModel`], the layer that gathers a run's concurrent calls into
//!   batches, waits for them and hands each caller its answer (or asks directly for the ones
//!   a batch did not answer).
//! - [`journal`]: the batches a run has submitted and not yet read, kept on disk so that a
//!   killed run polls them again instead of paying twice.
//! - [`BatchBoard`]: what the batches of a run did, for its progress line and report.

pub mod api;
pub mod board;
pub mod journal;
pub mod model;

pub use api::{BatchAnswer, BatchApi, BatchProgress, BatchRequest, BatchWire, Polls};
pub use board::{BatchBoard, BatchCounts, BatchEvent};
pub use journal::Journal;
pub use model::{BatchOptions, BatchedModel};
