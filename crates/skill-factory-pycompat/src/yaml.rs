//! YAML output identical, byte for byte, to the Python tool's.
//!
//! The Python `skill-factory` writes SKILL.md frontmatter with
//! `yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True)`. Skills we write must diff
//! cleanly against skills it wrote, so this module re-implements the parts of PyYAML's
//! representer, resolver and emitter that the values of a [`serde_json::Value`] can reach:
//! block mappings and sequences, empty `[]`/`{}`, plain / single-quoted / double-quoted scalars
//! with folding at 80 columns, `null`, `true`/`false`, integers and floats (Python `repr`).
//! Block scalars (`|`, `>`) never appear because PyYAML's safe representer never asks for them.
//!
//! The state machine mirrors PyYAML's `Emitter` (`column`, `indent`, `whitespace`,
//! `indention`) so that its folding and indentation decisions fall out the same way; the
//! fixtures in `tests/data/yaml_cases.json` were produced by the real PyYAML.

use serde_json::{Map, Number, Value};

use crate::float;

/// Spaces added per nesting level (PyYAML `best_indent`).
const BEST_INDENT: usize = 2;
/// Column after which long scalars are folded (PyYAML `best_width`).
const BEST_WIDTH: usize = 80;
/// Keys this long or longer are written as explicit `? key` entries. PyYAML's
/// `check_simple_key` limit is 128 characters, but it also counts the key's tag as written
/// (`!!str`, five characters) even though the tag is never emitted.
const MAX_SIMPLE_KEY_CHARS: usize = 128 - "!!str".len();

/// Serializes `map` the way `yaml.safe_dump(map, sort_keys=False, allow_unicode=True)` does,
/// including the final newline.
pub fn dump(map: &Map<String, Value>) -> String {
    let mut emitter = Emitter::default();
    if map.is_empty() {
        emitter.empty_flow_collection("{", "}");
    } else {
        emitter.block_mapping(map);
    }
    // PyYAML ends the document by moving to a fresh line.
    emitter.write_indent();
    emitter.out
}

/// Whether a plain (unquoted) scalar with this text loads back as a string under PyYAML's
/// YAML 1.1 rules, rather than as a bool, number, null, timestamp or merge key.
///
/// Mirrors PyYAML's implicit resolvers; a string for which this is false is quoted on output.
pub fn plain_scalar_is_string(text: &str) -> bool {
    !(is_yaml11_null(text)
        || is_yaml11_bool(text)
        || is_yaml11_int(text)
        || is_yaml11_float(text)
        || is_yaml11_timestamp(text)
        || matches!(text, "<<" | "=" | "!" | "&" | "*"))
}

/// How PyYAML's `SafeRepresenter` writes a float: `repr`, with `.0` forced into exponent forms
/// such as `1e+16` so the result still reads back as a float.
fn yaml_float(value: f64) -> String {
    let repr = float::python(value);
    if !repr.contains('.') && repr.contains('e') {
        repr.replacen('e', ".0e", 1)
    } else {
        repr
    }
}

fn yaml_number(number: &Number) -> String {
    if number.is_f64() {
        yaml_float(number.as_f64().unwrap_or_default())
    } else {
        number.to_string()
    }
}

/// Where a node sits, as far as PyYAML's style decisions care.
#[derive(Clone, Copy)]
struct Context {
    /// The node is a mapping value or key (sequences under it are not indented).
    mapping: bool,
    /// The node is a key written without `?` (no folding, no multi-line quoting).
    simple_key: bool,
}

const IN_SEQUENCE: Context = Context {
    mapping: false,
    simple_key: false,
};
const IN_MAPPING: Context = Context {
    mapping: true,
    simple_key: false,
};
const SIMPLE_KEY: Context = Context {
    mapping: true,
    simple_key: true,
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum ScalarStyle {
    Plain,
    SingleQuoted,
    DoubleQuoted,
}

struct Emitter {
    out: String,
    /// Characters (not bytes) written on the current line: PyYAML counts code points.
    column: usize,
    indent: Option<usize>,
    indents: Vec<Option<usize>>,
    /// The last character written was whitespace, so an indicator needs no leading space.
    whitespace: bool,
    /// Only indentation (and indicators such as `- `) has been written on this line.
    indention: bool,
}

impl Default for Emitter {
    fn default() -> Self {
        Self {
            out: String::new(),
            column: 0,
            indent: None,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
        }
    }
}

impl Emitter {
    fn node(&mut self, value: &Value, context: Context) {
        match value {
            Value::Array(items) if items.is_empty() => self.empty_flow_collection("[", "]"),
            Value::Array(items) => self.block_sequence(items, context),
            Value::Object(map) if map.is_empty() => self.empty_flow_collection("{", "}"),
            Value::Object(map) => self.block_mapping(map),
            Value::Null => self.scalar("null", true, context),
            Value::Bool(flag) => self.scalar(if *flag { "true" } else { "false" }, true, context),
            Value::Number(number) => self.scalar(&yaml_number(number), true, context),
            Value::String(text) => self.scalar(text, plain_scalar_is_string(text), context),
        }
    }

    fn empty_flow_collection(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    fn block_mapping(&mut self, map: &Map<String, Value>) {
        self.increase_indent(false, false);
        for (key, value) in map {
            self.write_indent();
            if is_simple_key(key) {
                self.scalar(key, plain_scalar_is_string(key), SIMPLE_KEY);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.scalar(key, plain_scalar_is_string(key), IN_MAPPING);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(value, IN_MAPPING);
        }
        self.pop_indent();
    }

    fn block_sequence(&mut self, items: &[Value], context: Context) {
        // A sequence that is the value of `key:` starts at the key's column ("indentless").
        let indentless = context.mapping && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, IN_SEQUENCE);
        }
        self.pop_indent();
    }

    /// `implicit_plain`: written unquoted, the text would load back as the same type.
    fn scalar(&mut self, text: &str, implicit_plain: bool, context: Context) {
        self.increase_indent(true, false);
        let chars: Vec<char> = text.chars().collect();
        let analysis = ScalarAnalysis::of(&chars);
        let split = !context.simple_key;
        match choose_style(&analysis, implicit_plain, context.simple_key) {
            ScalarStyle::Plain => self.write_plain(&chars, split),
            ScalarStyle::SingleQuoted => self.write_single_quoted(&chars, split),
            ScalarStyle::DoubleQuoted => self.write_double_quoted(&chars, split),
        }
        self.pop_indent();
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        self.indent = match self.indent {
            None => Some(if flow { BEST_INDENT } else { 0 }),
            Some(indent) if !indentless => Some(indent + BEST_INDENT),
            same => same,
        };
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().flatten();
    }

    fn write(&mut self, text: &str) {
        self.column += text.chars().count();
        self.out.push_str(text);
    }

    fn write_chars(&mut self, text: &[char]) {
        self.column += text.len();
        self.out.extend(text);
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        whitespace: bool,
        indention: bool,
    ) {
        if !self.whitespace && need_whitespace {
            self.write(" ");
        }
        self.write(indicator);
        self.whitespace = whitespace;
        self.indention = self.indention && indention;
    }

    fn write_indent(&mut self) {
        let indent = self.indent.unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.write_line_break(None);
        }
        if self.column < indent {
            self.whitespace = true;
            let padding = " ".repeat(indent - self.column);
            self.write(&padding);
        }
    }

    /// `line_break`: a break character to copy from the scalar; `None` writes `\n`.
    fn write_line_break(&mut self, line_break: Option<char>) {
        self.whitespace = true;
        self.indention = true;
        self.out.push(line_break.unwrap_or('\n'));
        self.column = 0;
    }

    /// Copies the breaks of `text[start..end]`; one `\n` folds to a space in quoted and plain
    /// scalars, so a leading `\n` is doubled to survive the round trip.
    fn write_breaks(&mut self, text: &[char]) {
        if text.first() == Some(&'\n') {
            self.write_line_break(None);
        }
        for &line_break in text {
            self.write_line_break(if line_break == '\n' {
                None
            } else {
                Some(line_break)
            });
        }
        self.write_indent();
    }

    fn write_plain(&mut self, text: &[char], split: bool) {
        if text.is_empty() {
            return;
        }
        if !self.whitespace {
            self.write(" ");
        }
        self.whitespace = false;
        self.indention = false;
        let mut spaces = false;
        let mut breaks = false;
        let mut start = 0;
        for end in 0..=text.len() {
            let ch = text.get(end).copied();
            if spaces {
                if ch != Some(' ') {
                    if start + 1 == end && self.column > BEST_WIDTH && split {
                        self.write_indent();
                        self.whitespace = false;
                        self.indention = false;
                    } else {
                        self.write_chars(&text[start..end]);
                    }
                    start = end;
                }
            } else if breaks {
                if !ch.is_some_and(is_line_break) {
                    self.write_breaks(&text[start..end]);
                    self.whitespace = false;
                    self.indention = false;
                    start = end;
                }
            } else if ch.is_none_or(|c| c == ' ' || is_line_break(c)) {
                self.write_chars(&text[start..end]);
                start = end;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
                breaks = is_line_break(c);
            }
        }
    }

    fn write_single_quoted(&mut self, text: &[char], split: bool) {
        self.write_indicator("'", true, false, false);
        let mut spaces = false;
        let mut breaks = false;
        let mut start = 0;
        for end in 0..=text.len() {
            let ch = text.get(end).copied();
            if spaces {
                if ch != Some(' ') {
                    if start + 1 == end
                        && self.column > BEST_WIDTH
                        && split
                        && start != 0
                        && end != text.len()
                    {
                        self.write_indent();
                    } else {
                        self.write_chars(&text[start..end]);
                    }
                    start = end;
                }
            } else if breaks {
                if !ch.is_some_and(is_line_break) {
                    self.write_breaks(&text[start..end]);
                    start = end;
                }
            } else if ch.is_none_or(|c| c == ' ' || c == '\'' || is_line_break(c)) && start < end {
                self.write_chars(&text[start..end]);
                start = end;
            }
            if ch == Some('\'') {
                self.write("''");
                start = end + 1;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
                breaks = is_line_break(c);
            }
        }
        self.write_indicator("'", false, false, false);
    }

    fn write_double_quoted(&mut self, text: &[char], split: bool) {
        self.write_indicator("\"", true, false, false);
        let mut start = 0;
        for end in 0..=text.len() {
            let ch = text.get(end).copied();
            if ch.is_none_or(needs_double_quote_escape) {
                if start < end {
                    self.write_chars(&text[start..end]);
                    start = end;
                }
                if let Some(c) = ch {
                    self.write(&double_quote_escape(c));
                    start = end + 1;
                }
            }
            if 0 < end
                && end + 1 < text.len()
                && (ch == Some(' ') || start >= end)
                // PyYAML's `column + (end - start) > width`, where `start` may be `end + 1`.
                && self.column + end > BEST_WIDTH + start
                && split
            {
                // A trailing `\` continues the line without adding a space.
                if start < end {
                    self.write_chars(&text[start..end]);
                    start = end;
                }
                self.write("\\");
                self.write_indent();
                self.whitespace = false;
                self.indention = false;
                if text.get(start) == Some(&' ') {
                    // An escaped space keeps a leading space from being eaten by folding.
                    self.write("\\");
                }
            }
        }
        self.write_indicator("\"", false, false, false);
    }
}

fn is_simple_key(key: &str) -> bool {
    let length = key.chars().count();
    length > 0 && length < MAX_SIMPLE_KEY_CHARS && !key.chars().any(is_line_break)
}

fn choose_style(analysis: &ScalarAnalysis, implicit_plain: bool, simple_key: bool) -> ScalarStyle {
    let multiline_key = simple_key && analysis.multiline;
    if implicit_plain
        && !(simple_key && analysis.empty)
        && !multiline_key
        && analysis.allow_block_plain
    {
        ScalarStyle::Plain
    } else if analysis.allow_single_quoted && !multiline_key {
        ScalarStyle::SingleQuoted
    } else {
        ScalarStyle::DoubleQuoted
    }
}

fn is_line_break(c: char) -> bool {
    matches!(c, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank_or_break(c: char) -> bool {
    matches!(c, '\0' | ' ' | '\t' | '\r') || is_line_break(c)
}

/// Characters PyYAML writes as-is when `allow_unicode` is on.
fn is_printable_unicode(c: char) -> bool {
    c != '\u{FEFF}'
        && (c == '\u{85}'
            || ('\u{A0}'..='\u{D7FF}').contains(&c)
            || ('\u{E000}'..='\u{FFFD}').contains(&c)
            || ('\u{10000}'..'\u{10FFFF}').contains(&c))
}

fn needs_double_quote_escape(c: char) -> bool {
    matches!(
        c,
        '"' | '\\' | '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{FEFF}'
    ) || !((' '..='~').contains(&c)
        || ('\u{A0}'..='\u{D7FF}').contains(&c)
        || ('\u{E000}'..='\u{FFFD}').contains(&c))
}

fn double_quote_escape(c: char) -> String {
    let short = match c {
        '\0' => Some('0'),
        '\u{7}' => Some('a'),
        '\u{8}' => Some('b'),
        '\t' => Some('t'),
        '\n' => Some('n'),
        '\u{B}' => Some('v'),
        '\u{C}' => Some('f'),
        '\r' => Some('r'),
        '\u{1B}' => Some('e'),
        '"' => Some('"'),
        '\\' => Some('\\'),
        '\u{85}' => Some('N'),
        '\u{A0}' => Some('_'),
        '\u{2028}' => Some('L'),
        '\u{2029}' => Some('P'),
        _ => None,
    };
    let code = u32::from(c);
    match short {
        Some(letter) => format!("\\{letter}"),
        None if code <= 0xFF => format!("\\x{code:02X}"),
        None if code <= 0xFFFF => format!("\\u{code:04X}"),
        None => format!("\\U{code:08X}"),
    }
}

/// Which scalar styles can represent a text faithfully (PyYAML `analyze_scalar`).
struct ScalarAnalysis {
    empty: bool,
    multiline: bool,
    allow_block_plain: bool,
    allow_single_quoted: bool,
}

impl ScalarAnalysis {
    fn of(text: &[char]) -> Self {
        let Some(&first) = text.first() else {
            return Self {
                empty: true,
                multiline: false,
                allow_block_plain: true,
                allow_single_quoted: true,
            };
        };
        let starts_with = |prefix: &str| text.iter().copied().take(3).eq(prefix.chars());
        let mut block_indicators = starts_with("---") || starts_with("...");
        let mut line_breaks = false;
        let mut special_characters = false;
        let mut break_space = false;
        let mut space_break = false;
        let mut previous_space = false;
        let mut previous_break = false;
        let mut preceded_by_whitespace = true;
        for (index, &ch) in text.iter().enumerate() {
            let followed_by_whitespace = text
                .get(index + 1)
                .is_none_or(|&next| is_blank_or_break(next));
            if index == 0 {
                if "#,[]{}&*!|>'\"%@`".contains(ch)
                    || (matches!(ch, '?' | ':' | '-') && followed_by_whitespace)
                {
                    block_indicators = true;
                }
            } else if (ch == ':' && followed_by_whitespace) || (ch == '#' && preceded_by_whitespace)
            {
                block_indicators = true;
            }
            if is_line_break(ch) {
                line_breaks = true;
            }
            if !(ch == '\n' || (' '..='~').contains(&ch) || is_printable_unicode(ch)) {
                special_characters = true;
            }
            if ch == ' ' {
                break_space |= previous_break;
                previous_space = true;
                previous_break = false;
            } else if is_line_break(ch) {
                space_break |= previous_space;
                previous_space = false;
                previous_break = true;
            } else {
                previous_space = false;
                previous_break = false;
            }
            preceded_by_whitespace = is_blank_or_break(ch);
        }
        let last = text[text.len() - 1];
        let edge_whitespace =
            first == ' ' || is_line_break(first) || last == ' ' || is_line_break(last);
        let allow_single_quoted = !(break_space || space_break || special_characters);
        let allow_block_plain =
            allow_single_quoted && !edge_whitespace && !line_breaks && !block_indicators;
        Self {
            empty: false,
            multiline: line_breaks,
            allow_block_plain,
            allow_single_quoted,
        }
    }
}

// PyYAML's implicit resolvers (YAML 1.1), hand-translated from its regular expressions.
// All patterns are ASCII, anchored at both ends.

fn is_yaml11_null(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

fn is_yaml11_bool(text: &str) -> bool {
    matches!(
        text,
        "yes"
            | "Yes"
            | "YES"
            | "no"
            | "No"
            | "NO"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    )
}

/// A tiny left-to-right matcher; each PyYAML alternative is deterministic enough that greedy
/// runs never need backtracking.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    fn done(&self) -> bool {
        self.at == self.bytes.len()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, wanted: impl Fn(u8) -> bool) -> bool {
        let hit = self.peek().is_some_and(wanted);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn eat_byte(&mut self, wanted: u8) -> bool {
        self.eat(|b| b == wanted)
    }

    fn eat_while(&mut self, wanted: impl Fn(u8) -> bool) -> usize {
        let start = self.at;
        while self.eat(&wanted) {}
        self.at - start
    }

    fn eat_sign(&mut self) {
        self.eat(|b| b == b'-' || b == b'+');
    }

    /// `(?::[0-5]?[0-9])+`, the base-60 tail of `1:30:05`.
    fn eat_sexagesimal_groups(&mut self) -> bool {
        let mut groups = 0;
        while self.eat_byte(b':') {
            let start = self.at;
            let digits = self.eat_while(is_digit);
            let valid = digits == 1 || (digits == 2 && self.bytes[start] <= b'5');
            if !valid {
                return false;
            }
            groups += 1;
        }
        groups > 0
    }

    /// `(?:[eE][-+][0-9]+)?`: PyYAML 1.1 floats require a signed exponent.
    fn eat_optional_exponent(&mut self) -> bool {
        if !self.eat(|b| b == b'e' || b == b'E') {
            return true;
        }
        self.eat(|b| b == b'-' || b == b'+') && self.eat_while(is_digit) > 0
    }
}

fn is_digit(b: u8) -> bool {
    b.is_ascii_digit()
}

fn is_digit_or_underscore(b: u8) -> bool {
    b.is_ascii_digit() || b == b'_'
}

fn is_yaml11_int(text: &str) -> bool {
    let binary = || {
        let mut c = Cursor::new(text);
        c.eat_sign();
        c.eat_byte(b'0')
            && c.eat_byte(b'b')
            && c.eat_while(|b| matches!(b, b'0' | b'1' | b'_')) > 0
            && c.done()
    };
    let octal = || {
        let mut c = Cursor::new(text);
        c.eat_sign();
        c.eat_byte(b'0') && c.eat_while(|b| matches!(b, b'0'..=b'7' | b'_')) > 0 && c.done()
    };
    let decimal = || {
        let mut c = Cursor::new(text);
        c.eat_sign();
        if c.eat_byte(b'0') {
            return c.done();
        }
        c.eat(|b| matches!(b, b'1'..=b'9')) && {
            c.eat_while(is_digit_or_underscore);
            c.done()
        }
    };
    let hexadecimal = || {
        let mut c = Cursor::new(text);
        c.eat_sign();
        c.eat_byte(b'0')
            && c.eat_byte(b'x')
            && c.eat_while(|b| b.is_ascii_hexdigit() || b == b'_') > 0
            && c.done()
    };
    let sexagesimal = || {
        let mut c = Cursor::new(text);
        c.eat_sign();
        c.eat(|b| matches!(b, b'1'..=b'9')) && {
            c.eat_while(is_digit_or_underscore);
            c.eat_sexagesimal_groups() && c.done()
        }
    };
    binary() || octal() || decimal() || hexadecimal() || sexagesimal()
}

fn is_yaml11_float(text: &str) -> bool {
    let fixed = || {
        let mut c = Cursor::new(text);
        c.eat_sign();
        c.eat(is_digit) && {
            c.eat_while(is_digit_or_underscore);
            c.eat_byte(b'.') && {
                c.eat_while(is_digit_or_underscore);
                c.eat_optional_exponent() && c.done()
            }
        }
    };
    let leading_point = || {
        let mut c = Cursor::new(text);
        c.eat_byte(b'.') && c.eat(is_digit) && {
            c.eat_while(is_digit_or_underscore);
            c.eat_optional_exponent() && c.done()
        }
    };
    let sexagesimal = || {
        let mut c = Cursor::new(text);
        c.eat_sign();
        c.eat(is_digit) && {
            c.eat_while(is_digit_or_underscore);
            c.eat_sexagesimal_groups() && c.eat_byte(b'.') && {
                c.eat_while(is_digit_or_underscore);
                c.done()
            }
        }
    };
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let infinity = matches!(unsigned, ".inf" | ".Inf" | ".INF");
    let nan = matches!(text, ".nan" | ".NaN" | ".NAN");
    infinity || nan || fixed() || leading_point() || sexagesimal()
}

fn is_yaml11_timestamp(text: &str) -> bool {
    let mut c = Cursor::new(text);
    let date_only = c.eat_while(is_digit) == 4
        && c.eat_byte(b'-')
        && c.eat_while(is_digit) == 2
        && c.eat_byte(b'-')
        && c.eat_while(is_digit) == 2
        && c.done();
    date_only || is_yaml11_datetime(text)
}

/// `YYYY-M-D` + `T` or blanks + `h:mm:ss` + optional fraction + optional zone.
fn is_yaml11_datetime(text: &str) -> bool {
    let mut c = Cursor::new(text);
    let one_or_two_digits = |c: &mut Cursor<'_>| (1..=2).contains(&c.eat_while(is_digit));
    let date = c.eat_while(is_digit) == 4
        && c.eat_byte(b'-')
        && one_or_two_digits(&mut c)
        && c.eat_byte(b'-')
        && one_or_two_digits(&mut c);
    let separator =
        c.eat(|b| b == b'T' || b == b't') || c.eat_while(|b| b == b' ' || b == b'\t') > 0;
    let time = one_or_two_digits(&mut c)
        && c.eat_byte(b':')
        && c.eat_while(is_digit) == 2
        && c.eat_byte(b':')
        && c.eat_while(is_digit) == 2;
    if !(date && separator && time) {
        return false;
    }
    if c.eat_byte(b'.') {
        c.eat_while(is_digit);
    }
    if c.done() {
        return true;
    }
    // Blanks may only precede a zone, never end the text.
    c.eat_while(|b| b == b' ' || b == b'\t');
    if c.eat_byte(b'Z') {
        return c.done();
    }
    c.eat(|b| b == b'-' || b == b'+')
        && one_or_two_digits(&mut c)
        && (!c.eat_byte(b':') || c.eat_while(is_digit) == 2)
        && c.done()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dump_value(value: Value) -> String {
        match value {
            Value::Object(map) => dump(&map),
            other => panic!("test input must be a mapping, got {other}"),
        }
    }

    #[test]
    fn long_description_folds_at_spaces_with_two_space_indent() {
        let text = dump_value(json!({
            "name": "ticket-classifier",
            "description": "Classify a customer support message into a single category. Use when routing an incoming support ticket, email, or chat message to the right queue."
        }));
        assert_eq!(
            text,
            "name: ticket-classifier\ndescription: Classify a customer support message into a single category. Use when\n  routing an incoming support ticket, email, or chat message to the right queue.\n"
        );
    }

    #[test]
    fn strings_that_would_load_as_other_types_are_single_quoted() {
        for word in [
            "yes",
            "No",
            "ON",
            "123",
            "0x1F",
            "1.5",
            ".inf",
            "~",
            "null",
            "",
            "2024-01-31",
            "<<",
            "1:30",
        ] {
            let text = dump_value(json!({ "k": word }));
            assert_eq!(text, format!("k: '{word}'\n"), "for {word:?}");
        }
    }

    #[test]
    fn yaml12_only_numbers_stay_plain_like_pyyaml() {
        for word in ["1e3", "0o17", "+.5", "y", "n", "yEs", "inf"] {
            assert_eq!(
                dump_value(json!({ "k": word })),
                format!("k: {word}\n"),
                "for {word:?}"
            );
        }
    }

    #[test]
    fn floats_follow_python_repr() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-1.25e-7, "-1.25e-07"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (123456.789, "123456.789"),
            (3_381_651_391_084.0 + 0.656_25, "3381651391084.6562"),
        ];
        for (value, expected) in cases {
            assert_eq!(float::python(value), expected);
        }
        assert_eq!(float::python(f64::INFINITY), "inf");
        assert_eq!(float::python(f64::NEG_INFINITY), "-inf");
        assert_eq!(float::python(f64::NAN), "nan");
        assert_eq!(yaml_float(1e16), "1.0e+16");
        assert_eq!(yaml_float(2.5), "2.5");
    }

    #[test]
    fn nested_lists_under_keys_are_not_indented() {
        let text = dump_value(json!({ "tools": ["Read", "Bash"], "meta": { "a": [], "b": {} } }));
        assert_eq!(text, "tools:\n- Read\n- Bash\nmeta:\n  a: []\n  b: {}\n");
    }

    #[test]
    fn resolver_recognizes_yaml11_scalars() {
        for text in [
            "0b1_01",
            "-0755",
            "+12_345",
            "0xDEAD_beef",
            "190:20:30",
            "1_2.5e+3",
            ".5",
            "-.INF",
            ".NaN",
        ] {
            assert!(
                !plain_scalar_is_string(text),
                "{text:?} should resolve to a non-string"
            );
        }
        for text in [
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14 21:59:43.10 -5",
            "2001-1-1 1:00:00Z",
        ] {
            assert!(is_yaml11_timestamp(text), "{text:?} should be a timestamp");
        }
        for text in [
            "1:60",
            "08:",
            "2001-12-1",
            "0b",
            "1e3",
            "1.5e3",
            "--1",
            "12:3:4.x",
            "+.nan",
            "TrUe",
        ] {
            assert!(
                plain_scalar_is_string(text),
                "{text:?} should stay a string"
            );
        }
    }
}
