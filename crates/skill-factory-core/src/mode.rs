//! Which mode a config's text is written for: skill mode, or classifier mode (`kind:
//! classifier`).

use serde::Deserialize;

/// Only the `kind` key; every other key is skipped unread.
#[derive(Deserialize)]
struct KindOnly {
    #[serde(default)]
    kind: Option<String>,
}

/// True when the YAML root is a mapping with `kind: classifier`, or when the text is not
/// valid YAML but has a top-level `kind: classifier` line: then the classifier loader reports
/// the YAML error (with its line), not the skill loader a list of skill keys the user never
/// meant to write.
pub fn is_classifier(text: &str) -> bool {
    match serde_saphyr::from_str::<KindOnly>(text) {
        Ok(root) => root.kind.as_deref() == Some("classifier"),
        Err(_) => text.lines().any(|line| {
            let line = line.split('#').next().unwrap_or_default().trim_end();
            line.strip_prefix("kind:")
                .is_some_and(|value| value.trim().trim_matches(['"', '\'']) == "classifier")
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_classifier_is_detected() {
        assert!(is_classifier("kind: classifier\nprobes: {a: 1}\n"));
        assert!(is_classifier("kind: \"classifier\"  # the mode\n"));
    }

    #[test]
    fn skill_configs_and_other_kinds_are_not_classifier() {
        assert!(!is_classifier("skill: s.md\ndataset: d.jsonl\n"));
        assert!(!is_classifier("kind: skill\n"));
        assert!(!is_classifier("kind: [classifier]\n"));
        assert!(!is_classifier("- kind: classifier\n"));
    }

    #[test]
    fn broken_yaml_with_a_top_level_kind_classifier_line_is_classifier() {
        assert!(is_classifier("kind: classifier\nprobeset: [\n"));
        // Indented, the line is not the root's kind.
        assert!(!is_classifier(
            "skill: s.md\nx:\n  kind: classifier\n  bad: [\n"
        ));
    }
}
