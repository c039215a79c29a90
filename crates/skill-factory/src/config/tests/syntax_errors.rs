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

#[test]
fn a_tab_is_reported_on_its_own_line() {
    let e = parse(&format!("{BASE}optimizer:\n  rounds: 2\n\tpatience: 3\n")).unwrap_err();
    assert_eq!(e.line(), Some(5), "{e}");
    assert_mentions(
        &e.to_string(),
        &["line 5 column 1", "tab", "5 | \tpatience: 3"],
    );
}

#[test]
fn an_unclosed_bracket_is_called_one() {
    let e = parse(&format!("{BASE}optimizer:\n  rounds: [4\n")).unwrap_err();
    assert!(matches!(e, ConfigError::Syntax { .. }), "{e}");
    assert_mentions(
        &e.to_string(),
        &[
            "line 4 column 11",
            "the '[' here is never closed",
            "optimizer.rounds",
        ],
    );
    // A flow list over two lines is no such error.
    let c = parse(&format!(
        "{BASE}metric:\n  programmatic: {{checks: [is_valid_json,\n    {{max_length: 3}}]}}\n"
    ))
    .unwrap();
    assert_eq!(c.metric.programmatic.unwrap().checks.len(), 2);
}
