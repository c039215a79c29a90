//! pyrandom
