//! The `cache` block: where the model cache lives and whether a run reads and writes it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use skill_factory_llm::CacheMode;

/// The model cache of a run (ours; the Python tool has none and ignores the block).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// `read_write` (default), `read_only` or `off`; `--no-cache` on the command line is `off`.
    #[serde(default)]
    pub mode: CacheMode,
    /// The SQLite file (default `.skill-factory/cache.sqlite`, relative to the config file).
    #[serde(default = "default_path")]
    pub path: PathBuf,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            mode: CacheMode::default(),
            path: default_path(),
        }
    }
}

/// The cache file's default place, relative to the config file.
pub fn default_path() -> PathBuf {
    PathBuf::from(".skill-factory").join("cache.sqlite")
}
