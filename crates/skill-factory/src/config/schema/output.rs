//! The `output` block.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where a run is written and where the best skill is exported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// The run folder (default `runs/latest`, relative to the config file); `optimize --out`
    /// overrides it.
    #[serde(default = "default_dir")]
    pub dir: PathBuf,
    /// If set, the best skill is also exported here in the `npx skills` layout.
    #[serde(default)]
    pub emit_skill_dir: Option<PathBuf>,
    /// Export as `<dir>/skills/<slug>/` instead of `<dir>/<slug>/` (default false).
    #[serde(default)]
    pub as_collection: bool,
}

impl Default for OutputConfig {
    fn default() -> Self {
        Self {
            dir: default_dir(),
            emit_skill_dir: None,
            as_collection: false,
        }
    }
}

fn default_dir() -> PathBuf {
    PathBuf::from("runs/latest")
}
