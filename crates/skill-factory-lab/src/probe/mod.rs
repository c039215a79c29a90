//! The probe set, the artifact classifier mode trains and ships: its questions, its score
//! expression, and the file with its content hash.

pub mod probeset;
pub mod question;
pub mod score;
