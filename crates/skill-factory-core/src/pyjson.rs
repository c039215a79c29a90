//! JSON text byte-identical to what the Python reference tool and JavaScript produce.
//!
//! Dataset values that are not strings reach the model as pretty-printed JSON, and hashes of
//! compact JSON serve as cache keys shared with other tools. Both only stay compatible if every
//! byte matches, so numbers and escapes follow Python's `json` module and JavaScript's
//! `JSON.stringify` exactly instead of `serde_json`'s own formatting. The numbers must also be
//! read exactly, which is why this crate enables serde_json's `float_roundtrip` feature.
//!
//! Known limits, all from `serde_json::Value` holding numbers as `u64`/`i64`/`f64`: an integer
//! outside the 64-bit range arrives as a float (Python keeps it exact), and the integer literal
//! `-0` arrives as the float `-0.0` (Python prints `0`).

use serde_json::{Map, Number, Value};

/// Python `json.dumps(value, indent=2, ensure_ascii=False)`.
///
/// Items are separated by `,` and a newline, keys by `: `, nesting is indented by two spaces,
/// empty arrays and objects stay `[]` and `{}`, floats are written as Python's `repr` writes
/// them (`262.5`, `10.0`, `1e+16`, `1e-05`) and non-ASCII characters are kept as they are.
pub fn dumps_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_pretty(&mut out, value, 0);
    out
}

/// JavaScript `JSON.stringify(JSON.parse(text))` for the `value` parsed from `text`: compact,
/// no spaces, non-ASCII unescaped, numbers as JavaScript writes them (`10.0` becomes `10`,
/// `1e21` becomes `1e+21`).
///
/// What `JSON.parse` changes is reproduced too: integers become doubles (so integers beyond
/// 2^53 print as the nearest double does), and object keys that are array indices (`"0"`,
/// `"42"`, below 2^32 − 1) move to the front in numeric order, as JavaScript objects order them.
pub fn dumps_js(value: &Value) -> String {
    let mut out = String::new();
    write_compact(
        &mut out,
        value,
        NumberStyle::JavaScript,
        KeyOrder::JavaScript,
    );
    out
}

/// Python `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`: the
/// canonical form hashed by content hashes (keys sorted at every level by code point, no
/// whitespace, numbers as Python writes them).
pub fn dumps_canonical(value: &Value) -> String {
    let mut out = String::new();
    write_compact(&mut out, value, NumberStyle::Python, KeyOrder::Sorted);
    out
}

/// Python `repr(x)` of a float: the shortest digits that read back as `x`, in positional form
/// with at least one decimal (`10.0`, `0.0001`) when 1e-4 ≤ |x| < 1e16, otherwise in exponent
/// form with a sign and at least two exponent digits (`1e+16`, `1e-05`).
///
/// Non-finite values cannot occur in a `serde_json::Value`; they are written as Python writes
/// them (`nan`, `inf`, `-inf`) for completeness.
pub fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    match Decimal::shortest(x) {
        Some(decimal) => PYTHON_LAYOUT.write(&decimal),
        None => if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned(),
    }
}

/// How a dialect lays out the shortest digits of a finite, non-zero float.
struct Layout {
    /// The decimal-point positions written without an exponent (see [`Decimal::point`]).
    positional: std::ops::RangeInclusive<i32>,
    /// Whether a whole number keeps a `.0` (Python `10.0`) or not (JavaScript `10`).
    point_zero: bool,
    /// The fewest exponent digits: Python `1e-05`, JavaScript `1e-7`.
    exponent_digits: usize,
}

/// Python's `repr`: positional when 1e-4 ≤ |x| < 1e16.
const PYTHON_LAYOUT: Layout = Layout {
    positional: -3..=16,
    point_zero: true,
    exponent_digits: 2,
};

/// JavaScript's `Number#toString`: positional when 1e-6 ≤ |x| < 1e21.
const JS_LAYOUT: Layout = Layout {
    positional: -5..=21,
    point_zero: false,
    exponent_digits: 1,
};

impl Layout {
    fn write(&self, decimal: &Decimal) -> String {
        let Decimal {
            negative,
            digits,
            point,
        } = decimal;
        let mut out = String::new();
        if *negative {
            out.push('-');
        }
        if self.positional.contains(point) {
            push_positional(&mut out, digits, *point);
            if self.point_zero && *point >= digits.len() as i32 {
                out.push_str(".0");
            }
        } else {
            push_exponential(&mut out, digits, point - 1, self.exponent_digits);
        }
        out
    }
}

/// How numbers are written by the two dialects.
#[derive(Clone, Copy)]
enum NumberStyle {
    Python,
    JavaScript,
}

/// The order object entries are written in.
#[derive(Clone, Copy)]
enum KeyOrder {
    /// As stored (the source's order, since serde_json keeps it).
    Insertion,
    /// By code point, as Python's `sort_keys=True`.
    Sorted,
    /// Array-index keys first in numeric order, then the rest as stored.
    JavaScript,
}

/// The shortest round-trip decimal digits of a finite non-zero float.
struct Decimal {
    negative: bool,
    /// Significant digits without leading or trailing zeros.
    digits: String,
    /// The value is `0.<digits> × 10^point`.
    point: i32,
}

impl Decimal {
    /// `None` for zero, which has no significant digits.
    fn shortest(x: f64) -> Option<Decimal> {
        if x == 0.0 || !x.is_finite() {
            return None;
        }
        let formatted = shortest_scientific(x.abs());
        let (mantissa, exponent) = formatted.split_once('e')?;
        let exponent: i32 = exponent.parse().ok()?;
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        Some(Decimal {
            negative: x < 0.0,
            digits,
            point: exponent + 1,
        })
    }
}

/// The shortest digits that read back as `value`, in Rust's `{:e}` form (`1.5e16`): the digits
/// of Python's repr and JavaScript's `Number#toString`.
///
/// Rust and both of them agree on how many digits are needed, but when two candidates of that
/// length are equally close to the exact binary value, Python and JavaScript round half to even
/// and Rust's shortest formatting does not (3381651391084.65625 is `…6562` in Python and
/// JavaScript, `…6563` from `{:e}`). Rust's fixed-precision formatting does round half to even,
/// so the shortest length is re-rounded with it.
fn shortest_scientific(value: f64) -> String {
    let shortest = format!("{value:e}");
    let digits = shortest
        .split('e')
        .next()
        .unwrap_or("")
        .chars()
        .filter(char::is_ascii_digit)
        .count();
    let rounded = format!("{:.*e}", digits.saturating_sub(1), value);
    if rounded.parse::<f64>() == Ok(value) {
        rounded
    } else {
        shortest
    }
}

/// Writes `0.<digits> × 10^point` without an exponent (and without a trailing `.0`).
fn push_positional(out: &mut String, digits: &str, point: i32) {
    let len = digits.len() as i32;
    if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(digits);
    } else if point >= len {
        out.push_str(digits);
        out.extend(std::iter::repeat_n('0', (point - len) as usize));
    } else {
        let (whole, fraction) = digits.split_at(point as usize);
        out.push_str(whole);
        out.push('.');
        out.push_str(fraction);
    }
}

/// Writes `d[.ddd]e±XX` with at least `min_exponent_digits` exponent digits.
fn push_exponential(out: &mut String, digits: &str, exponent: i32, min_exponent_digits: usize) {
    let (first, rest) = digits.split_at(1);
    out.push_str(first);
    if !rest.is_empty() {
        out.push('.');
        out.push_str(rest);
    }
    out.push('e');
    out.push(if exponent < 0 { '-' } else { '+' });
    out.push_str(&format!(
        "{:0width$}",
        exponent.unsigned_abs(),
        width = min_exponent_digits
    ));
}

/// JavaScript `Number.prototype.toString()` of a float (ECMA-262 Number::toString, radix 10).
fn js_number(x: f64) -> String {
    if x.is_nan() || x.is_infinite() {
        // JSON.stringify writes non-finite numbers as null.
        return "null".to_owned();
    }
    Decimal::shortest(x).map_or_else(|| "0".to_owned(), |decimal| JS_LAYOUT.write(&decimal))
}

fn push_number(out: &mut String, number: &Number, style: NumberStyle) {
    match style {
        NumberStyle::Python => {
            if let Some(u) = number.as_u64() {
                out.push_str(&u.to_string());
            } else if let Some(i) = number.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(f) = number.as_f64() {
                out.push_str(&python_float_repr(f));
            }
        }
        NumberStyle::JavaScript => {
            // JavaScript has only doubles; small integers print exactly either way.
            if let Some(f) = number.as_f64() {
                out.push_str(&js_number(f));
            }
        }
    }
}

/// A JSON string literal with the escapes Python (`ensure_ascii=False`) and JavaScript share:
/// `"`, `\`, the five short control escapes, other C0 controls as lowercase `\u00xx`; DEL,
/// `/`, U+2028 and everything non-ASCII stay raw.
fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_newline_indent(out: &mut String, level: usize) {
    out.push('\n');
    out.extend(std::iter::repeat_n(' ', level * 2));
}

fn write_pretty(out: &mut String, value: &Value, level: usize) {
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_newline_indent(out, level + 1);
                write_pretty(out, item, level + 1);
            }
            push_newline_indent(out, level);
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_newline_indent(out, level + 1);
                push_string(out, key);
                out.push_str(": ");
                write_pretty(out, item, level + 1);
            }
            push_newline_indent(out, level);
            out.push('}');
        }
        scalar_or_empty => write_compact(
            out,
            scalar_or_empty,
            NumberStyle::Python,
            KeyOrder::Insertion,
        ),
    }
}

fn write_compact(out: &mut String, value: &Value, style: NumberStyle, order: KeyOrder) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => push_number(out, n, style),
        Value::String(s) => push_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(out, item, style, order);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in entries(map, order).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_string(out, key);
                out.push(':');
                write_compact(out, item, style, order);
            }
            out.push('}');
        }
    }
}

/// The object's entries in the requested order. UTF-8 byte order equals the code-point order
/// Python sorts `str` keys by.
fn entries(map: &Map<String, Value>, order: KeyOrder) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    match order {
        KeyOrder::Insertion => {}
        KeyOrder::Sorted => entries.sort_by(|a, b| a.0.cmp(b.0)),
        // A stable sort keeps the other keys in insertion order behind the indices.
        KeyOrder::JavaScript => {
            entries.sort_by_key(|(key, _)| js_array_index(key).unwrap_or(u64::MAX))
        }
    }
    entries
}

/// The key as a JavaScript array index: the canonical decimal form of an integer below
/// 2^32 − 1 (no sign, no leading zero).
fn js_array_index(key: &str) -> Option<u64> {
    if key.is_empty() || key.len() > 10 || (key.len() > 1 && key.starts_with('0')) {
        return None;
    }
    if !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    key.parse::<u64>()
        .ok()
        .filter(|&index| index < u64::from(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_repr_keeps_a_decimal_on_whole_floats() {
        assert_eq!(python_float_repr(10.0), "10.0");
        assert_eq!(python_float_repr(262.5), "262.5");
        assert_eq!(python_float_repr(-0.0), "-0.0");
        assert_eq!(python_float_repr(0.0), "0.0");
        assert_eq!(python_float_repr(1e15), "1000000000000000.0");
    }

    #[test]
    fn python_repr_switches_to_exponent_form_at_python_thresholds() {
        assert_eq!(python_float_repr(1e16), "1e+16");
        assert_eq!(python_float_repr(1.5e16), "1.5e+16");
        assert_eq!(python_float_repr(0.0001), "0.0001");
        assert_eq!(python_float_repr(1e-05), "1e-05");
        assert_eq!(python_float_repr(1.25e-100), "1.25e-100");
        assert_eq!(python_float_repr(f64::MAX), "1.7976931348623157e+308");
    }

    #[test]
    fn shortest_digits_break_ties_to_even_like_python_and_js() {
        // Exactly halfway between …6562 and …6563 at the shortest length: Python's repr and
        // node's String() both print …6562; Rust's `{:e}` alone prints …6563.
        const TIE: f64 = 3_381_651_391_084.0 + 0.656_25;
        assert_eq!(python_float_repr(TIE), "3381651391084.6562");
        assert_eq!(js_number(TIE), "3381651391084.6562");
    }

    #[test]
    fn js_numbers_drop_the_decimal_and_switch_at_js_thresholds() {
        assert_eq!(js_number(10.0), "10");
        assert_eq!(js_number(1e20), "100000000000000000000");
        assert_eq!(js_number(1e21), "1e+21");
        assert_eq!(js_number(0.000001), "0.000001");
        assert_eq!(js_number(1e-7), "1e-7");
        assert_eq!(js_number(-0.0), "0");
        assert_eq!(js_number(1.5e-7), "1.5e-7");
    }

    #[test]
    fn pretty_matches_python_layout() {
        let value = json!({"total": 262.5, "items": [1, {"a": []}], "empty": {}, "x": null});
        assert_eq!(
            dumps_pretty(&value),
            "{\n  \"total\": 262.5,\n  \"items\": [\n    1,\n    {\n      \"a\": []\n    }\n  ],\n  \"empty\": {},\n  \"x\": null\n}"
        );
    }

    #[test]
    fn strings_escape_controls_but_keep_non_ascii_and_slash() {
        let value = json!("é\u{1}\u{7f}/\"\\\n\u{2028}😀");
        assert_eq!(
            dumps_pretty(&value),
            "\"é\\u0001\u{7f}/\\\"\\\\\\n\u{2028}😀\""
        );
        assert_eq!(dumps_js(&value), dumps_pretty(&value));
    }

    #[test]
    fn canonical_sorts_keys_at_every_level() {
        let value = json!({"b": {"z": 1, "a": 2.0}, "a": [3, {"d": 1, "c": 1}]});
        assert_eq!(
            dumps_canonical(&value),
            r#"{"a":[3,{"c":1,"d":1}],"b":{"a":2.0,"z":1}}"#
        );
        assert_eq!(
            dumps_js(&value),
            r#"{"b":{"z":1,"a":2},"a":[3,{"d":1,"c":1}]}"#
        );
    }

    #[test]
    fn js_puts_array_index_keys_first_in_numeric_order() {
        let value = json!({"b": 1, "10": 2, "01": 3, "2": 4, "4294967295": 5, "4294967294": 6});
        assert_eq!(
            dumps_js(&value),
            r#"{"2":4,"10":2,"4294967294":6,"b":1,"01":3,"4294967295":5}"#
        );
    }
}
