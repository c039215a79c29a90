//! Each module's output against what the Python references recorded (`data/`).

mod json;
mod random;
mod yaml;
