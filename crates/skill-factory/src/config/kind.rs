//! Mode dispatch: is a config file written for classifier mode?

use std::path::Path;

use serde::Deserialize;

/// Only the `kind` key; every other key is skipped unread.
#[derive(Deserialize)]
struct KindOnly {
    #[serde(default)]
    kind: Option<String>,
}

/// True when the file's YAML root has `kind: classifier`. A file that is missing, unreadable
/// or not valid YAML counts as "not classifier", as in the reference tool, so that the skill
/// loader reports the real problem.
pub fn is_classifier_config(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| text_is_classifier(&text))
}

pub(crate) fn text_is_classifier(text: &str) -> bool {
    serde_saphyr::from_str::<KindOnly>(text).is_ok_and(|k| k.kind.as_deref() == Some("classifier"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_classifier_is_detected() {
        assert!(text_is_classifier("kind: classifier\nprobes: {a: 1}\n"));
    }

    #[test]
    fn skill_configs_and_other_kinds_are_not_classifier() {
        assert!(!text_is_classifier("skill: s.md\ndataset: d.jsonl\n"));
        assert!(!text_is_classifier("kind: skill\n"));
        assert!(!text_is_classifier("kind: [classifier]\n"));
    }

    #[test]
    fn invalid_yaml_and_missing_files_are_not_classifier() {
        assert!(!text_is_classifier("kind: classifier\n  bad: [\n"));
        assert!(!text_is_classifier("- kind: classifier\n"));
        assert!(!is_classifier_config(Path::new("no/such/config.yaml")));
    }
}
