//! The one config loader of Skill Factory's modes: skill mode's run configs and classifier
//! mode's configs are read through it.
//!
//! * [`yaml`]: YAML text into a typed schema; every serde error becomes a [`ConfigError`]
//!   naming the file, the line, the key path and the fix, with the closest valid name for a
//!   misspelt key or choice ([`suggest`]);
//! * [`locate`]: the line of a key path, for errors found after the parse;
//! * [`scalar`]: any YAML scalar where text is meant, as the Python tool's `str()` gives it;
//! * [`env`](mod@env): `.env` files, read into a map, never into the process environment;
//! * [`kind`]: which mode a config file is for.
//!
//! Files are read through `skill_factory_io::input` (regular files only, bounded, UTF-8).

#![warn(missing_docs)]

pub mod env;
pub mod error;
pub mod kind;
pub mod locate;
pub mod scalar;
pub mod suggest;
pub mod yaml;

pub use error::{ConfigError, Place};
pub use kind::is_classifier_config;
pub use suggest::closest;
