//! The run folder's format, one place for the engine that writes it and the dashboard, the
//! gallery and the CLI that read it:
//!
//! * [`names`]: the names of its files (`events.jsonl`, `result.json`, `candidates/NNN.md`,
//!   ...), the classifier workspace's included;
//! * [`event`]: the typed [`Event`](event::Event) of every `events.jsonl` line, serialized by
//!   the engine and deserialized by its readers, so a renamed event or field fails to compile
//!   in every reader instead of failing at run time;
//! * [`lines`]: the lines of `rollouts.jsonl` and `tasks.jsonl`;
//! * [`result`]: `result.json` of every kind ([`RunResult`](result::RunResult)): the
//!   reference tool's fields, then a skill run's or a classifier workspace's record, written by
//!   the engine and the lab and read by the dashboard and the gallery.
//!
//! It stands on `skill-factory-core` (plain data: the estimates and rollouts events carry)
//! and `skill-factory-pycompat` (Python's rounding) alone, so the dashboard stays free of the
//! engine.

#![warn(missing_docs)]

pub mod event;
pub mod lines;
pub mod names;
pub mod result;
pub mod workspace;
