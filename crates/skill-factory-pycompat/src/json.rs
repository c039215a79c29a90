//! JSON text byte-identical to what Python's `json` module and JavaScript's `JSON.stringify`
//! produce.
//!
//! Dataset values that are not strings reach the model as pretty-printed JSON, hashes of
//! compact JSON serve as cache keys shared with other tools, and `result.json` and
//! `answers.jsonl` are read by the Python tool. All of them only stay compatible if every byte
//! matches, so numbers, escapes and separators follow the two references exactly instead of
//! `serde_json`'s own formatting. The numbers must also be read exactly: this crate enables
//! serde_json's `float_roundtrip` feature.
//!
//! One writer serves every dialect; a `Format` says how it lays the value out, and one
//! escaper writes every string (Python's `ensure_ascii` is its only switch).
//!
//! Known limits, all from `serde_json::Value` holding numbers as `u64`/`i64`/`f64`: an integer
//! outside the 64-bit range arrives as a float (Python keeps it exact), and the integer literal
//! `-0` arrives as the float `-0.0` (Python prints `0`).

use serde_json::{Map, Number, Value};

use crate::float;

/// Python `json.dumps(value)` with its defaults: one line, `, ` between items, `: ` after keys,
/// keys as stored, every character outside printable ASCII escaped (`ensure_ascii=True`).
pub fn dumps(value: &Value) -> String {
    DEFAULTS.write(value)
}

/// Python `json.dumps(value, ensure_ascii=False)`: [`dumps`] with non-ASCII characters kept
/// as they are (the lines of a dataset the Python tool writes).
pub fn dumps_unicode(value: &Value) -> String {
    Format {
        ensure_ascii: false,
        ..DEFAULTS
    }
    .write(value)
}

/// Python `json.dumps(value, indent=2, ensure_ascii=False)`.
///
/// Items are separated by `,` and a newline, keys by `: `, nesting is indented by two spaces,
/// empty arrays and objects stay `[]` and `{}`, floats are written as Python's `repr` writes
/// them (`262.5`, `10.0`, `1e+16`, `1e-05`) and non-ASCII characters are kept as they are.
pub fn dumps_pretty(value: &Value) -> String {
    PRETTY.write(value)
}

/// Python `json.dumps(value, indent=indent, ensure_ascii=False)`: [`dumps_pretty`] with
/// `indent` spaces per level (classifier-mode probe sets and question banks are saved with
/// `indent=1`). As in Python, `indent=0` still puts every item on its own line.
pub fn dumps_indent(value: &Value, indent: usize) -> String {
    Format {
        indent: Some(indent),
        ..PRETTY
    }
    .write(value)
}

/// Python `json.dumps(value, indent=2)`: [`dumps_pretty`] with every character outside
/// printable ASCII escaped as `\uXXXX` (a surrogate pair beyond the BMP), as `result.json`
/// files of the Python tool are written.
pub fn dumps_pretty_ascii(value: &Value) -> String {
    Format {
        ensure_ascii: true,
        ..PRETTY
    }
    .write(value)
}

/// Python `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`: the
/// canonical form hashed by content hashes (keys sorted at every level by code point, no
/// whitespace, numbers as Python writes them).
pub fn dumps_canonical(value: &Value) -> String {
    Format {
        keys: KeyOrder::Sorted,
        ..COMPACT
    }
    .write(value)
}

/// JavaScript `JSON.stringify(JSON.parse(text))` for the `value` parsed from `text`: compact,
/// no spaces, non-ASCII unescaped, numbers as JavaScript writes them (`10.0` becomes `10`,
/// `1e21` becomes `1e+21`).
///
/// What `JSON.parse` changes is reproduced too: integers become doubles (so integers beyond
/// 2^53 print as the nearest double does), and object keys that are array indices (`"0"`,
/// `"42"`, below 2^32 − 1) move to the front in numeric order, as JavaScript objects order them.
pub fn dumps_js(value: &Value) -> String {
    Format {
        numbers: NumberStyle::JavaScript,
        keys: KeyOrder::JavaScript,
        ..COMPACT
    }
    .write(value)
}

/// `json.dumps`'s defaults: one line, `, ` and `: `, `ensure_ascii=True`.
const DEFAULTS: Format = Format {
    indent: None,
    item_separator: ", ",
    key_separator: ": ",
    numbers: NumberStyle::Python,
    keys: KeyOrder::Insertion,
    ensure_ascii: true,
};

/// `indent=2`, `ensure_ascii=False`.
const PRETTY: Format = Format {
    indent: Some(2),
    item_separator: ",",
    key_separator: ": ",
    numbers: NumberStyle::Python,
    keys: KeyOrder::Insertion,
    ensure_ascii: false,
};

/// `separators=(",", ":")`, `ensure_ascii=False`.
const COMPACT: Format = Format {
    indent: None,
    item_separator: ",",
    key_separator: ":",
    numbers: NumberStyle::Python,
    keys: KeyOrder::Insertion,
    ensure_ascii: false,
};

/// How a value is laid out: the arguments of Python's `json.dumps`, plus the dialect of
/// numbers and key order.
#[derive(Clone, Copy)]
struct Format {
    /// Spaces per nesting level, each item on its own line; `None` writes one line.
    indent: Option<usize>,
    /// Between items (a newline and the indent follow it when indenting).
    item_separator: &'static str,
    /// Between a key and its value.
    key_separator: &'static str,
    numbers: NumberStyle,
    keys: KeyOrder,
    /// Python's `ensure_ascii`: escape everything outside printable ASCII.
    ensure_ascii: bool,
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

impl Format {
    fn write(&self, value: &Value) -> String {
        let mut out = String::new();
        self.value(&mut out, value, 0);
        out
    }

    fn value(&self, out: &mut String, value: &Value, level: usize) {
        match value {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => self.number(out, n),
            Value::String(s) => self.string(out, s),
            // Empty containers stay `[]` and `{}` even when indenting, as Python writes them.
            Value::Array(items) if items.is_empty() => out.push_str("[]"),
            Value::Object(map) if map.is_empty() => out.push_str("{}"),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    self.item_start(out, i, level + 1);
                    self.value(out, item, level + 1);
                }
                self.newline(out, level);
                out.push(']');
            }
            Value::Object(map) => {
                out.push('{');
                for (i, (key, item)) in entries(map, self.keys).into_iter().enumerate() {
                    self.item_start(out, i, level + 1);
                    self.string(out, key);
                    out.push_str(self.key_separator);
                    self.value(out, item, level + 1);
                }
                self.newline(out, level);
                out.push('}');
            }
        }
    }

    /// The separator before every item but the first, then the item's line when indenting.
    fn item_start(&self, out: &mut String, index: usize, level: usize) {
        if index > 0 {
            out.push_str(self.item_separator);
        }
        self.newline(out, level);
    }

    fn newline(&self, out: &mut String, level: usize) {
        if let Some(indent) = self.indent {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', level * indent));
        }
    }

    fn number(&self, out: &mut String, number: &Number) {
        match self.numbers {
            NumberStyle::Python => {
                if let Some(u) = number.as_u64() {
                    out.push_str(&u.to_string());
                } else if let Some(i) = number.as_i64() {
                    out.push_str(&i.to_string());
                } else if let Some(f) = number.as_f64() {
                    out.push_str(&float::python(f));
                }
            }
            NumberStyle::JavaScript => {
                // JavaScript has only doubles; small integers print exactly either way.
                if let Some(f) = number.as_f64() {
                    out.push_str(&float::javascript(f));
                }
            }
        }
    }

    /// A JSON string literal. Python and JavaScript share these escapes: `"`, `\`, the five
    /// short control escapes, other C0 controls as lowercase `\u00xx`; DEL, `/`, U+2028 and
    /// everything non-ASCII stay raw. With `ensure_ascii`, everything outside printable ASCII
    /// (DEL included) becomes `\uXXXX`, a surrogate pair beyond the BMP.
    fn string(&self, out: &mut String, s: &str) {
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
                ' '..='~' => out.push(c),
                c if (c as u32) < 0x20 || self.ensure_ascii => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
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
    fn ensure_ascii_escapes_everything_outside_printable_ascii() {
        let value = json!({"Figure — é": "😀\u{7f}\u{1}\n"});
        assert_eq!(
            dumps(&value),
            r#"{"Figure \u2014 \u00e9": "\ud83d\ude00\u007f\u0001\n"}"#
        );
        assert_eq!(
            dumps_pretty_ascii(&json!([1, "é"])),
            "[\n  1,\n  \"\\u00e9\"\n]"
        );
    }

    #[test]
    fn dumps_indent_matches_python_indent_one_and_zero() {
        // CPython: json.dumps(v, indent=1, ensure_ascii=False) and indent=0.
        let value = json!({"name": "é", "questions": {"a": {"true": "Y"}}, "t": null, "l": [1, 2.0], "c": {}});
        assert_eq!(
            dumps_indent(&value, 1),
            "{\n \"name\": \"é\",\n \"questions\": {\n  \"a\": {\n   \"true\": \"Y\"\n  }\n },\n \"t\": null,\n \"l\": [\n  1,\n  2.0\n ],\n \"c\": {}\n}"
        );
        assert_eq!(dumps_indent(&json!([1, [2]]), 0), "[\n1,\n[\n2\n]\n]");
        assert_eq!(dumps_indent(&value, 2), dumps_pretty(&value));
    }

    #[test]
    fn default_separators_are_a_comma_and_a_colon_each_with_a_space() {
        let value = json!({"s": "x", "p": 1.0, "r": [1, 2]});
        assert_eq!(dumps(&value), r#"{"s": "x", "p": 1.0, "r": [1, 2]}"#);
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
