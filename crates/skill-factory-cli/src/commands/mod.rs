//! One module per command.

pub mod evaluate;
pub mod list;
