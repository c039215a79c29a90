//! Run configs.
