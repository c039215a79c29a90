//! The examples and how they are split: labelled JSONL, group-aware splits by salted hash, the
//! seal that guards test and held-out, and skill-scanner labs imported as workspaces.

pub mod dataset;
pub mod scanner;
pub mod seal;
pub mod split;
pub mod splits;
#[cfg(test)]
pub(crate) mod world;
