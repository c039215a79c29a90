//! JSON as the reference tool reads it from a model's answer: a tolerant parse (code fence
//! or prose around the JSON) and equality with Python's semantics.
//!
//! **Tolerant parse** (shared by the golden `json_equal` mode and the programmatic checks):
//! 1. If the whole text, trimmed, is one fenced block (three backticks, optionally the
//!    lowercase word `json`, the content, three backticks), take the fence content.
//! 2. Trim and parse strictly.
//! 3. Otherwise find the first `{` or `[` and scan forward counting depth over all four
//!    bracket characters (not string-aware, not type-matched, as the reference does) until the
//!    depth returns to 0, and parse that span; its parse error is the message.
//! 4. No opening bracket, or one that never closes: `no JSON object found`.
//!
//! Any JSON value counts (`5` is valid JSON). Error messages come from `serde_json` and so
//! differ in wording from Python's `json` module. Python also accepts `NaN`, `Infinity` and
//! out-of-range numbers such as `1e400`; `serde_json` rejects them, so such an answer is
//! invalid JSON here.

use serde_json::{Number, Value};

/// The message when the text holds no bracketed JSON at all.
pub const NO_JSON_FOUND: &str = "no JSON object found";

/// Why a model's answer holds no JSON; quoted in feedback (`invalid JSON: ...`), so a
/// parse error reads as the parser wrote it.
#[derive(Debug, thiserror::Error)]
pub enum JsonTextError {
    /// No opening bracket, or one that never closes.
    #[error("{}", NO_JSON_FOUND)]
    NotFound,
    /// The bracketed span does not parse.
    #[error(transparent)]
    Invalid(#[from] serde_json::Error),
}

/// Parses a model's answer as JSON tolerantly (see the module documentation), or says why not.
pub fn parse_tolerant(text: &str) -> Result<Value, JsonTextError> {
    let unfenced = fence_content(text).unwrap_or(text);
    let candidate = unfenced.trim();
    if let Ok(value) = serde_json::from_str::<Value>(candidate) {
        return Ok(value);
    }
    let span = bracket_span(candidate).ok_or(JsonTextError::NotFound)?;
    Ok(serde_json::from_str::<Value>(span)?)
}

/// The content of a fence that spans the whole (trimmed) text, if it is one.
fn fence_content(text: &str) -> Option<&str> {
    const FENCE: &str = "```";
    let trimmed = text.trim();
    if trimmed.len() < 2 * FENCE.len() || !trimmed.starts_with(FENCE) || !trimmed.ends_with(FENCE) {
        return None;
    }
    let inner = &trimmed[FENCE.len()..trimmed.len() - FENCE.len()];
    Some(inner.strip_prefix("json").unwrap_or(inner))
}

/// From the first opening bracket to where the bracket depth returns to zero.
fn bracket_span(text: &str) -> Option<&str> {
    let start = text.find(['{', '['])?;
    let mut depth = 0usize;
    for (offset, c) in text[start..].char_indices() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..start + offset + c.len_utf8()]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Equality of two decoded JSON values as Python's `==` sees them: `true == 1 == 1.0`, ints
/// and floats compared exactly, objects regardless of key order, no string normalization.
pub fn python_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| python_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| python_eq(v, w)))
        }
        _ => match (PyNumber::of(a), PyNumber::of(b)) {
            (Some(x), Some(y)) => x.eq(y),
            _ => false,
        },
    }
}

/// A Python number: bools are the ints 0 and 1.
#[derive(Clone, Copy)]
enum PyNumber {
    Int(i128),
    Float(f64),
}

impl PyNumber {
    fn of(value: &Value) -> Option<PyNumber> {
        match value {
            Value::Bool(b) => Some(PyNumber::Int(i128::from(*b))),
            Value::Number(n) => Some(Self::of_number(n)),
            _ => None,
        }
    }

    fn of_number(n: &Number) -> PyNumber {
        if let Some(i) = n.as_i64() {
            PyNumber::Int(i128::from(i))
        } else if let Some(u) = n.as_u64() {
            PyNumber::Int(i128::from(u))
        } else {
            PyNumber::Float(n.as_f64().unwrap_or(f64::NAN))
        }
    }

    /// Python compares an int with a float exactly, not after rounding the int to a float.
    fn eq(self, other: PyNumber) -> bool {
        match (self, other) {
            (PyNumber::Int(x), PyNumber::Int(y)) => x == y,
            (PyNumber::Float(x), PyNumber::Float(y)) => x == y,
            (PyNumber::Int(i), PyNumber::Float(f)) | (PyNumber::Float(f), PyNumber::Int(i)) => {
                // Every f64 of magnitude below 2^127 that has no fraction is an exact i128.
                f.is_finite() && f.fract() == 0.0 && f.abs() < 1.7e38 && f as i128 == i
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_plain_json_of_any_type() {
        assert_eq!(parse_tolerant(" {\"a\": 1} ").ok(), Some(json!({"a": 1})));
        assert_eq!(parse_tolerant("5").ok(), Some(json!(5)));
        assert_eq!(parse_tolerant(" \"x\" ").ok(), Some(json!("x")));
        assert_eq!(parse_tolerant("true").ok(), Some(json!(true)));
    }

    #[test]
    fn takes_the_content_of_a_fence_around_the_whole_text() {
        assert_eq!(parse_tolerant("```json\n5\n```").ok(), Some(json!(5)));
        assert_eq!(parse_tolerant(" ```json\n5\n``` ").ok(), Some(json!(5)));
        assert_eq!(parse_tolerant("```\n5\n```").ok(), Some(json!(5)));
        assert_eq!(parse_tolerant("```json 5```").ok(), Some(json!(5)));
        assert_eq!(parse_tolerant("```json5```").ok(), Some(json!(5)));
        assert_eq!(
            parse_tolerant("```json\n\"a```b\"\n```").ok(),
            Some(json!("a```b"))
        );
    }

    #[test]
    fn a_fence_that_is_not_the_whole_text_or_not_lowercase_json_is_not_unwrapped() {
        for text in [
            "```json\n5\n```\nmore",
            "```python\n5\n```",
            "```JSON\n5\n```",
            "```json\n```",
        ] {
            assert!(
                matches!(parse_tolerant(text), Err(JsonTextError::NotFound)),
                "{text:?}"
            );
        }
        assert_eq!(parse_tolerant("```JSON\n[1]\n```").ok(), Some(json!([1])));
    }

    #[test]
    fn finds_the_first_bracketed_span_in_prose() {
        assert_eq!(
            parse_tolerant("text {\"a\": 1} more").ok(),
            Some(json!({"a": 1}))
        );
        assert_eq!(
            parse_tolerant("a [1, {\"x\": 2}] b").ok(),
            Some(json!([1, {"x": 2}]))
        );
        assert_eq!(
            parse_tolerant("{\"a\": 1} {\"b\": 2}").ok(),
            Some(json!({"a": 1}))
        );
        assert_eq!(parse_tolerant("{\"a\":1} ]").ok(), Some(json!({"a": 1})));
        assert_eq!(
            parse_tolerant("{\"a\":\"}\"}").ok(),
            Some(json!({"a": "}"}))
        );
    }

    #[test]
    fn reports_no_json_when_nothing_opens_or_nothing_closes() {
        for text in ["nope", "", "{\"a\":1", "[1, 2", "x ] {", "{\"a\":[1,2}"] {
            assert!(
                matches!(parse_tolerant(text), Err(JsonTextError::NotFound)),
                "{text:?}"
            );
        }
    }

    #[test]
    fn reports_the_parser_message_for_a_broken_span() {
        let err = parse_tolerant("{\"a\" 1}").unwrap_err().to_string();
        assert!(err.contains("line 1 column"), "{err}");
        assert!(parse_tolerant("[}").is_err());
        assert!(parse_tolerant("{'a':1}").is_err());
    }

    #[test]
    fn python_eq_treats_bools_ints_and_floats_as_numbers() {
        assert!(python_eq(&json!(1), &json!(1.0)));
        assert!(python_eq(&json!(true), &json!(1)));
        assert!(python_eq(&json!(1.0), &json!(true)));
        assert!(!python_eq(&json!(false), &json!(true)));
        assert!(python_eq(&json!([1, true]), &json!([1.0, 1])));
        assert!(!python_eq(&json!("1"), &json!(1)));
        assert!(!python_eq(&json!(null), &json!(0)));
    }

    #[test]
    fn python_eq_compares_large_ints_and_floats_exactly() {
        let big: Value = serde_json::from_str("12345678901234567890").unwrap_or(Value::Null);
        let big_float: Value =
            serde_json::from_str("12345678901234567890.0").unwrap_or(Value::Null);
        assert!(!python_eq(&big, &big_float));
        assert!(python_eq(
            &json!(9007199254740992u64),
            &json!(9007199254740992.0)
        ));
        assert!(!python_eq(
            &json!(9007199254740993u64),
            &json!(9007199254740992.0)
        ));
    }

    #[test]
    fn python_eq_ignores_key_order_but_not_string_case() {
        assert!(python_eq(
            &json!({"a": 1, "b": {"x": 1}}),
            &json!({"b": {"x": 1.0}, "a": 1})
        ));
        assert!(!python_eq(&json!({"a": "X"}), &json!({"a": "x"})));
        assert!(!python_eq(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    }
}
