//! The integration tests of `skill-factory-llm`, in one binary: every client against the
//! loopback mock, one module per concern.

mod batch;
mod cache;
mod failures;
mod fake_provider;
mod scheduler;
mod systemone_http;
mod wire_formats;
