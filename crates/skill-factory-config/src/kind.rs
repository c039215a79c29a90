//! Mode dispatch: is a config file written for classifier mode?

use std::path::Path;

/// True when the file is a classifier-mode config ([`skill_factory_core::mode::is_classifier`]).
/// A file that is missing or unreadable counts as "not classifier", so that the skill loader
/// reports the real problem.
pub fn is_classifier_config(path: &Path) -> bool {
    skill_factory_io::input::read_text(path, skill_factory_io::input::CONFIG)
        .is_ok_and(|text| skill_factory_core::mode::is_classifier(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_for_its_kind_and_a_missing_one_is_not_classifier() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(
            &path,
            "kind: classifier
dataset: d.jsonl
",
        )
        .unwrap();
        assert!(is_classifier_config(&path));
        assert!(!is_classifier_config(Path::new("no/such/config.yaml")));
    }
}
