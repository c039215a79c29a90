//! Reading what `skill-factory optimize` printed and wrote.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The run folder named on the `Artifacts:` line of `optimize`'s stdout.
pub fn artifacts(stdout: &str) -> PathBuf {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("Artifacts: "))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no Artifacts line in {stdout}"))
}

/// The `result.json` of the run folder `run` without what differs between equal runs: ids,
/// timestamps, durations and the spending (a replayed call is counted as cached, not as paid).
pub fn comparable_result(run: &Path) -> Value {
    let text = std::fs::read_to_string(run.join("result.json")).unwrap();
    let mut result: Value = serde_json::from_str(&text).unwrap();
    let object = result.as_object_mut().unwrap();
    for key in [
        "run_id",
        "started_at",
        "finished_at",
        "elapsed_seconds",
        "usage",
        "cost_usd",
        "unpriced_models",
    ] {
        object.remove(key);
    }
    result
}

/// The gate decisions a run's `result.json` keeps: every history record's `comparison`.
pub fn comparisons(result: &Value) -> Vec<&Value> {
    result["history"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|record| record.get("comparison"))
        .collect()
}
