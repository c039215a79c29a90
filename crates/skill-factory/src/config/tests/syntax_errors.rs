//! Errors about the YAML itself.

use super::*;

#[test]
fn yaml_syntax_error_shows_line_column_and_snippet() {
    let (e, m) = error_of("optimizer: {rounds: 3\n");
    assert!(matches!(e, ConfigError::Syntax { .. }));
    assert_mentions(
        &m,
        &[
            "YAML syntax error in examples/x/config.yaml line 3 column 12",
            "3 | optimizer: {rounds: 3",
            "^",
            "fix the YAML",
        ],
    );
}

#[test]
fn tab_indentation_is_explained() {
    let e = parse("skill: s.md\ndataset: d.jsonl\n\trounds: 2\n").unwrap_err();
    assert_mentions(
        &e.to_string(),
        &[
            "YAML syntax error in examples/x/config.yaml",
            "tab",
            "spaces, not tabs",
        ],
    );
}

#[test]
fn unclosed_quote_is_a_syntax_error() {
    let e = parse("skill: s.md\ndataset: \"d.jsonl\n").unwrap_err();
    assert_mentions(
        &e.to_string(),
        &[
            "YAML syntax error in examples/x/config.yaml line 2",
            "quote",
        ],
    );
}

#[test]
fn second_yaml_document_is_an_error() {
    let e = parse("skill: s.md\ndataset: d\n---\nskill: b\n").unwrap_err();
    assert_mentions(&e.to_string(), &["line 4", "more than one YAML document"]);
}

#[test]
fn root_must_be_a_mapping() {
    for (yaml, found) in [
        ("- a\n- b\n", "a list"),
        ("hello\n", "a single value"),
        ("", "nothing (the file is empty)"),
        ("# only a comment\n", "nothing (the file is empty)"),
    ] {
        let e = parse(yaml).unwrap_err();
        assert!(
            matches!(e, ConfigError::NotAMapping { .. }),
            "{yaml:?}: {e}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "the config examples/x/config.yaml must be a mapping of keys (skill: ..., dataset: ...), but it holds {found}"
            )
        );
    }
}
