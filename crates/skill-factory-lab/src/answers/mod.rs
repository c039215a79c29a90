//! The answers of the System One model: bought once, kept in `answers.jsonl`, read back as tables,
//! re-asked to measure noise, and refitted when the model changes.

pub mod drift;
pub mod lab;
pub mod noise;
pub mod table;
