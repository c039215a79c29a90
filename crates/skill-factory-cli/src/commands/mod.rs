//! One module per command.

pub mod cache;
pub mod evaluate;
pub mod export;
pub mod gallery;
pub mod install;
pub mod list;
pub mod models;
pub mod optimize;
pub mod validate;
