//! The integration tests of `skill-factory-core`, in one binary: one module per concern.

mod dataset_matches_python;
mod skill;
mod split_reference;
