//! `pyjson` against Python's `json.dumps` and JavaScript's `JSON.stringify`, recorded by
//! `data/generate.py` (CPython 3.11 and Node.js).

use serde_json::Value;
use skill_factory_core::pyjson;

struct Case {
    source: String,
    pretty: String,
    canonical: String,
    js: String,
}

fn cases() -> Vec<Case> {
    let text = include_str!("data/pyjson_cases.json");
    let Ok(Value::Array(cases)) = serde_json::from_str::<Value>(text) else {
        panic!("data/pyjson_cases.json is not an array of cases");
    };
    let field = |case: &Value, key: &str| case[key].as_str().expect(key).to_owned();
    cases
        .iter()
        .map(|case| Case {
            source: field(case, "json"),
            pretty: field(case, "pretty"),
            canonical: field(case, "canonical"),
            js: field(case, "js"),
        })
        .collect()
}

/// Fails with the first difference and a little context, not two walls of numbers.
fn assert_same(what: &str, actual: &str, expected: &str, source: &str) {
    if actual == expected {
        return;
    }
    let at = actual
        .char_indices()
        .zip(expected.chars())
        .find(|((_, a), e)| a != e)
        .map_or(actual.len().min(expected.len()), |((i, _), _)| i);
    let window = |text: &str| -> String {
        text.get(at.saturating_sub(40)..)
            .unwrap_or(text)
            .chars()
            .take(80)
            .collect()
    };
    let source: String = source.chars().take(80).collect();
    panic!(
        "{what} differs at byte {at} for source {source}…\n  ours:     {}\n  expected: {}",
        window(actual),
        window(expected)
    );
}

fn parse(source: &str) -> Value {
    serde_json::from_str(source).unwrap_or_else(|error| panic!("{source}: {error}"))
}

#[test]
fn pretty_is_byte_identical_to_python_indent_2() {
    for case in cases() {
        assert_same(
            "pretty",
            &pyjson::dumps_pretty(&parse(&case.source)),
            &case.pretty,
            &case.source,
        );
    }
}

#[test]
fn canonical_is_byte_identical_to_python_sorted_compact() {
    for case in cases() {
        assert_same(
            "canonical",
            &pyjson::dumps_canonical(&parse(&case.source)),
            &case.canonical,
            &case.source,
        );
    }
}

#[test]
fn js_is_byte_identical_to_json_stringify() {
    for case in cases() {
        assert_same(
            "js",
            &pyjson::dumps_js(&parse(&case.source)),
            &case.js,
            &case.source,
        );
    }
}

#[test]
fn data_exercises_the_tricky_number_forms() {
    let all: String = cases().iter().map(|case| case.pretty.as_str()).collect();
    for form in [
        "262.5", "1e+16", "1e-05", "10.0", "5e-324", "\\u0001", "\u{2028}",
    ] {
        assert!(all.contains(form), "no case produces {form}");
    }
}
