//! What an optimization reports while it works: one [`Event`] per step (evaluation, rollout,
//! proposal, score, decision, round), sent to an [`EventSink`] as it happens.
//!
//! The run folder appends every event to `events.jsonl` (rollouts in full to
//! `rollouts.jsonl`, proposals to `candidates/NNN.md`); the command line draws its live
//! display from the same stream. Events arrive in completion order, which varies with timing;
//! decisions never depend on it.

use super::OptimizationResult;

pub use skill_factory_runfolder::event::{Event, RolloutRecord};

/// Receives events as they happen.
pub trait EventSink: Send + Sync {
    /// One event; called from many tasks at once.
    fn event(&self, event: &Event);
    /// The result as it stands after the baseline and after each round, so that a run
    /// folder stays readable even when the process is killed.
    fn checkpoint(&self, _partial: &OptimizationResult) {}
}

/// A sink that drops everything.
pub struct NoEvents;

impl EventSink for NoEvents {
    fn event(&self, _event: &Event) {}
}

/// Forwards every event to several sinks in order (the run folder, then the display).
pub struct Fanout(pub Vec<std::sync::Arc<dyn EventSink>>);

impl EventSink for Fanout {
    fn event(&self, event: &Event) {
        for sink in &self.0 {
            sink.event(event);
        }
    }

    fn checkpoint(&self, partial: &OptimizationResult) {
        for sink in &self.0 {
            sink.checkpoint(partial);
        }
    }
}
