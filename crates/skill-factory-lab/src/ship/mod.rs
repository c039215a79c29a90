//! What leaves the lab: exports for production, the parity check of what runs there, and the
//! workspace as an agent skill.

pub mod export;
pub mod parity;
pub mod skill;
