//! The `output` block.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where a run is written and where the best skill is exported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// The folder that holds this config's runs, each in its own timestamped sub-folder
    /// (default: `runs/<config name>` beside the config file); `optimize --out` overrides it.
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// If set, the best skill is also exported here in the `npx skills` layout.
    #[serde(default)]
    pub emit_skill_dir: Option<PathBuf>,
    /// Export as `<dir>/skills/<slug>/` instead of `<dir>/<slug>/` (default false).
    #[serde(default)]
    pub as_collection: bool,
}
