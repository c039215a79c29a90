//! The integration tests of `skill-factory-mock`, in one binary.

mod server;
mod systemone;
