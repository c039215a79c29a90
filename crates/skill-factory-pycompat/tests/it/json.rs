//! `json` against Python's `json.dumps` and JavaScript's `JSON.stringify`, recorded by
//! `data/generate.py` (CPython 3.11 and Node.js).

use serde_json::Value;
use skill_factory_pycompat::json;

/// The recorded cases: each holds the source text under `json` and one output per dialect.
fn cases() -> Vec<Value> {
    let text = include_str!("../data/json_cases.json");
    let Ok(Value::Array(cases)) = serde_json::from_str::<Value>(text) else {
        panic!("data/json_cases.json is not an array of cases");
    };
    cases
}

fn field<'a>(case: &'a Value, key: &str) -> &'a str {
    case[key]
        .as_str()
        .unwrap_or_else(|| panic!("a case lacks {key}"))
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

/// One dialect's writer.
type Dump = fn(&Value) -> String;

/// Every dialect, named by its field in the recorded cases.
const DIALECTS: [(&str, Dump); 5] = [
    ("pretty", json::dumps_pretty),
    ("pretty_ascii", json::dumps_pretty_ascii),
    ("default", json::dumps),
    ("canonical", json::dumps_canonical),
    ("js", json::dumps_js),
];

#[test]
fn every_dialect_is_byte_identical_to_its_reference() {
    for case in cases() {
        let source = field(&case, "json");
        for (dialect, dump) in DIALECTS {
            assert_same(
                dialect,
                &dump(&parse(source)),
                field(&case, dialect),
                source,
            );
        }
    }
}

#[test]
fn data_exercises_the_tricky_number_forms() {
    let all: String = cases().iter().map(|case| field(case, "pretty")).collect();
    for form in [
        "262.5", "1e+16", "1e-05", "10.0", "5e-324", "\\u0001", "\u{2028}",
    ] {
        assert!(all.contains(form), "no case produces {form}");
    }
}
