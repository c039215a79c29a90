//! The model cache: every answer a run gets is stored in an SQLite file, keyed by a hash of
//! everything that changes it, so that a rerun, a resumed run or a second process asking the
//! same question pays nothing.
//!
//! * [`CacheKey`]: the hash (provider, endpoint, model, sampling parameters, system prompt,
//!   messages, sample index, and a format version).
//! * [`CacheStore`]: the file (WAL, versioned, lazy, safe under concurrent processes and
//!   `kill -9`), with the `stats`, `clear` and `prune` of `skill-factory cache`.
//! * [`CachedModel`]: a [`crate::ChatModel`] wrapper that answers from the store.

mod key;
mod model;
mod store;

pub use key::{CacheKey, KEY_FORMAT};
pub use model::CachedModel;
pub use store::{
    APPLICATION_ID, CacheError, CacheMode, CacheStats, CacheStore, Cleared, Hit, SCHEMA_VERSION,
};
