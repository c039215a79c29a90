//! The `tracking` block: where a run is also recorded as an experiment tracker's run
//! ([`crate::tracking`]).

use serde::{Deserialize, Serialize};

/// Experiment trackers a run reports to (ours; the Python tool has no such key).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrackingConfig {
    /// An MLflow tracking server; without the block, `MLFLOW_TRACKING_URI` still turns
    /// tracking on.
    #[serde(default)]
    pub mlflow: Option<MlflowConfig>,
}

/// An MLflow tracking server and the experiment a run goes in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MlflowConfig {
    /// The server's address, `http(s)://HOST:PORT` (default: `MLFLOW_TRACKING_URI`).
    #[serde(default)]
    pub uri: Option<String>,
    /// The experiment's name, created when missing (default: `MLFLOW_EXPERIMENT_NAME`, else
    /// the config's name).
    #[serde(default)]
    pub experiment: Option<String>,
}
