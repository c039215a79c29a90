//! Reading what `skill-factory optimize` printed.

use std::path::PathBuf;

/// The run folder named on the `Artifacts:` line of `optimize`'s stdout.
pub fn artifacts(stdout: &str) -> PathBuf {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("Artifacts: "))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no Artifacts line in {stdout}"))
}
