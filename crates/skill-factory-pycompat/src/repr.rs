//! Python's `repr()` and `str()` of the values that metrics print in their feedback.
//!
//! The reference tool writes feedback with Python f-strings (`expected: 'hello'`, `missing keys:
//! ['date', 'total']`, `weight 3.0`). Optimizer prompts, reports and snapshots are compared
//! byte for byte with the reference's, so the exact quoting, escaping and float layout matter.
//!
//! Printability follows Python's `str.isprintable()` through the Unicode general category, as
//! shipped by `unicode-general-category` (its Unicode version can be newer than the Python
//! interpreter's: characters assigned since then print as themselves here and escaped there).

use std::fmt::Write as _;

use serde_json::{Number, Value};
use unicode_general_category::{GeneralCategory, get_general_category};

/// Python `repr()` of a string: single quotes unless the text contains a single quote and no
/// double quote; `\\`, `\t`, `\n`, `\r` and the chosen quote escaped; other non-printable
/// characters as `\xhh`, `\uhhhh` or `\Uhhhhhhhh`; printable non-ASCII kept as is.
pub fn repr_str(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => push_escape(&mut out, c),
        }
    }
    out.push(quote);
    out
}

/// Python `repr()` of a list of strings: `['date', 'total']`, `[]`.
pub fn repr_str_list<S: AsRef<str>>(items: &[S]) -> String {
    let parts: Vec<String> = items.iter().map(|s| repr_str(s.as_ref())).collect();
    format!("[{}]", parts.join(", "))
}

/// Python `repr()` (and `str()`) of a float: `3.0`, `0.0001`, `1e-05`, `1.5e+16`, `inf`, `nan`.
pub fn repr_float(x: f64) -> String {
    crate::float::python(x)
}

/// Python `str()` of a value decoded by `json.loads`: a string is itself, anything else is
/// its `repr()` (`None`, `True`, `1.0`, `[1, 'a']`, `{'b': True}`).
pub fn str_json(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => repr_json(other),
    }
}

/// Python `repr()` of a value decoded by `json.loads`.
pub fn repr_json(value: &Value) -> String {
    match value {
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::Number(n) => repr_number(n),
        Value::String(s) => repr_str(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(repr_json).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", repr_str(k), repr_json(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// The Python type name `json.loads` gives a value: `dict`, `list`, `str`, `int`, `float`,
/// `bool` or `NoneType`.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// JSON integers are Python ints and print without a decimal point; JSON numbers with a
/// fraction or exponent are Python floats.
fn repr_number(n: &Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() => repr_float(f),
        _ => n.to_string(),
    }
}

/// Python's `str.isprintable()` for one character: everything except the "Other" and
/// "Separator" categories, with the ASCII space as the one printable separator.
fn is_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::Surrogate
            | GeneralCategory::PrivateUse
            | GeneralCategory::Unassigned
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::SpaceSeparator
    )
}

/// The shortest of Python's three hex escapes that fits the code point, lowercase.
fn push_escape(out: &mut String, c: char) {
    let cp = c as u32;
    // Writing to a String cannot fail.
    let _ = if cp < 0x100 {
        write!(out, "\\x{cp:02x}")
    } else if cp < 0x10000 {
        write!(out, "\\u{cp:04x}")
    } else {
        write!(out, "\\U{cp:08x}")
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repr_str_uses_single_quotes_by_default() {
        assert_eq!(repr_str("hello"), "'hello'");
        assert_eq!(repr_str(""), "''");
    }

    #[test]
    fn repr_str_switches_to_double_quotes_for_a_lone_apostrophe() {
        assert_eq!(repr_str("it's"), "\"it's\"");
    }

    #[test]
    fn repr_str_escapes_the_single_quote_when_both_quotes_appear() {
        assert_eq!(repr_str("it's \"x\""), "'it\\'s \"x\"'");
        assert_eq!(repr_str("'\""), "'\\'\"'");
    }

    #[test]
    fn repr_str_does_not_escape_the_other_quote() {
        assert_eq!(repr_str("say \"hi\""), "'say \"hi\"'");
    }

    #[test]
    fn repr_str_escapes_backslash_and_whitespace_controls() {
        assert_eq!(repr_str("a\\b"), "'a\\\\b'");
        assert_eq!(
            repr_str("tab\there\nnew\rline"),
            "'tab\\there\\nnew\\rline'"
        );
        assert_eq!(repr_str("\\'"), "\"\\\\'\"");
    }

    #[test]
    fn repr_str_hex_escapes_non_printable_characters_by_width() {
        assert_eq!(
            repr_str("\u{0}\u{7f}\u{80}\u{200b}"),
            "'\\x00\\x7f\\x80\\u200b'"
        );
        assert_eq!(repr_str("\u{ad}\u{2028}\u{e000}"), "'\\xad\\u2028\\ue000'");
        assert_eq!(repr_str("\u{e0001}"), "'\\U000e0001'");
        assert_eq!(repr_str("\u{1c}\u{a0}"), "'\\x1c\\xa0'");
    }

    #[test]
    fn repr_str_keeps_printable_non_ascii() {
        assert_eq!(repr_str("café ü 日本 😀"), "'café ü 日本 😀'");
    }

    #[test]
    fn repr_str_list_matches_python_list_repr() {
        assert_eq!(repr_str_list(&["date", "total"]), "['date', 'total']");
        assert_eq!(repr_str_list::<&str>(&[]), "[]");
        assert_eq!(
            repr_str_list(&["it's", "é", "x\ny"]),
            "[\"it's\", 'é', 'x\\ny']"
        );
    }

    #[test]
    fn repr_float_uses_fixed_notation_in_pythons_range() {
        assert_eq!(repr_float(3.0), "3.0");
        assert_eq!(repr_float(3.5), "3.5");
        assert_eq!(repr_float(0.1), "0.1");
        assert_eq!(repr_float(0.0001), "0.0001");
        assert_eq!(repr_float(1e15), "1000000000000000.0");
        assert_eq!(repr_float(-2.25), "-2.25");
        assert_eq!(repr_float(123456.789), "123456.789");
        assert_eq!(repr_float(0.85 + 1e-16), "0.8500000000000001");
    }

    #[test]
    fn repr_float_switches_to_scientific_notation_outside_it() {
        assert_eq!(repr_float(1e16), "1e+16");
        assert_eq!(repr_float(1e-5), "1e-05");
        assert_eq!(repr_float(1.5e-7), "1.5e-07");
        assert_eq!(repr_float(123456789012345680.0), "1.2345678901234568e+17");
        assert_eq!(repr_float(-1e300), "-1e+300");
    }

    #[test]
    fn repr_float_spells_special_values_like_python() {
        assert_eq!(repr_float(0.0), "0.0");
        assert_eq!(repr_float(-0.0), "-0.0");
        assert_eq!(repr_float(f64::INFINITY), "inf");
        assert_eq!(repr_float(f64::NEG_INFINITY), "-inf");
        assert_eq!(repr_float(f64::NAN), "nan");
    }

    #[test]
    fn str_json_prints_decoded_values_like_python_str() {
        assert_eq!(str_json(&json!("plain")), "plain");
        assert_eq!(str_json(&json!(null)), "None");
        assert_eq!(str_json(&json!(true)), "True");
        assert_eq!(str_json(&json!(5)), "5");
        assert_eq!(str_json(&json!(1.0)), "1.0");
        assert_eq!(
            str_json(&json!([1, "a", {"b": true}])),
            "[1, 'a', {'b': True}]"
        );
        assert_eq!(str_json(&json!({})), "{}");
    }

    #[test]
    fn type_name_gives_python_type_names() {
        assert_eq!(type_name(&json!([1])), "list");
        assert_eq!(type_name(&json!(5)), "int");
        assert_eq!(type_name(&json!(1.5)), "float");
        assert_eq!(type_name(&json!(null)), "NoneType");
        assert_eq!(type_name(&json!("s")), "str");
        assert_eq!(type_name(&json!(true)), "bool");
        assert_eq!(type_name(&json!({})), "dict");
    }
}
