//! Python `re` patterns compiled with `fancy-regex`.
//!
//! Configs written for the reference tool hold Python regular expressions, searched with
//! `re.search(pattern, output, flags)`. `fancy-regex` already speaks most of that dialect
//! (look-around, back-references, `(?P<name>...)`, atomic groups, literal `{`); this module
//! rewrites the few places where the two disagree, so a pattern means the same thing here:
//!
//! * `$` outside multiline mode also matches before a final newline in Python
//!   (`(?=\n?\z)`), and `\Z` is the absolute end of the text (`\z`);
//! * `\0` and three-digit escapes such as `\012` are octal characters, not back-references;
//! * inside a character class, `[` is literal and `&&`, `--`, `~~` are not set operations;
//!   `\b` is a backspace;
//! * the inline flags `a` (ASCII) and `u` (Unicode) do not exist in `fancy-regex`: `u` is
//!   the default anyway and `a` (or `re.A`) is applied by spelling `\w`, `\d`, `\s`, `\b`
//!   and their negations as ASCII classes.
//!
//! Flag integers are Python's: `re.I` = 2, `re.M` = 8, `re.S` = 16, `re.X` = 64, `re.A` = 256,
//! and `re.U` = 32 (the default for text, accepted and ignored). Known gaps: `\N{name}`
//! escapes, ASCII-only case folding under `re.A | re.I`, and flags scoped to a group such as
//! `(?m:...)` (treated as if they applied to the whole pattern for `$` and ASCII classes).

use fancy_regex::Regex;

const FLAG_IGNORECASE: i64 = 2;
const FLAG_MULTILINE: i64 = 8;
const FLAG_DOTALL: i64 = 16;
const FLAG_UNICODE: i64 = 32;
const FLAG_VERBOSE: i64 = 64;
const FLAG_ASCII: i64 = 256;
const SUPPORTED_FLAGS: i64 =
    FLAG_IGNORECASE | FLAG_MULTILINE | FLAG_DOTALL | FLAG_UNICODE | FLAG_VERBOSE | FLAG_ASCII;

const ASCII_WORD: &str = "0-9A-Za-z_";
const ASCII_DIGIT: &str = "0-9";
const ASCII_SPACE: &str = " \\t\\n\\r\\x0B\\x0C";

/// Why a Python pattern cannot be used: flags Python would take but this module cannot honour,
/// or a pattern `fancy-regex` rejects. Callers put the message after the pattern they quote.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    /// Flag bits outside the supported set, or a negative number.
    #[error(
        "unsupported regex flags {0}: use a sum of re.I=2, re.M=8, re.S=16, re.X=64, \
         re.A=256 (re.U=32 is the default)"
    )]
    UnsupportedFlags(i64),
    /// `(?L)`: Python refuses it for text patterns too.
    #[error("the inline flag (?L) (locale) cannot be used with text patterns")]
    LocaleFlag,
    /// The translated pattern does not compile; the message is `fancy-regex`'s own.
    #[error(transparent)]
    Regex(#[from] fancy_regex::Error),
}

/// Compiles a Python regular expression with Python `re` flag bits, or says why it cannot.
pub fn compile(pattern: &str, flags: i64) -> Result<Regex, PatternError> {
    let translated = translate(pattern, flags)?;
    Ok(Regex::new(&translated)?)
}

/// The `fancy-regex` spelling of a Python pattern and flags.
pub fn translate(pattern: &str, flags: i64) -> Result<String, PatternError> {
    if flags < 0 || flags & !SUPPORTED_FLAGS != 0 {
        return Err(PatternError::UnsupportedFlags(flags));
    }
    let inline = inline_flag_letters(pattern);
    if inline.contains('L') {
        return Err(PatternError::LocaleFlag);
    }
    let mode = Mode {
        multiline: flags & FLAG_MULTILINE != 0 || inline.contains('m'),
        ascii: flags & FLAG_ASCII != 0 || inline.contains('a'),
        verbose: flags & FLAG_VERBOSE != 0 || inline.contains('x'),
    };
    let mut prefix = String::new();
    for (bit, letter) in [
        (FLAG_IGNORECASE, 'i'),
        (FLAG_MULTILINE, 'm'),
        (FLAG_DOTALL, 's'),
        (FLAG_VERBOSE, 'x'),
    ] {
        if flags & bit != 0 {
            prefix.push(letter);
        }
    }
    let body = Translator::new(pattern, mode).run();
    Ok(if prefix.is_empty() {
        body
    } else {
        format!("(?{prefix}){body}")
    })
}

/// Every flag letter used in inline flag groups such as `(?im)` or `(?a:...)`.
fn inline_flag_letters(pattern: &str) -> String {
    let mut letters = String::new();
    let mut rest = pattern;
    while let Some(at) = rest.find("(?") {
        let after = &rest[at + 2..];
        let group: String = after
            .chars()
            .take_while(|c| "aiLmsux-".contains(*c))
            .collect();
        let closes = after[group.len()..].starts_with([')', ':']);
        if closes && !group.is_empty() && !is_escaped(rest, at) {
            letters.push_str(group.split('-').next().unwrap_or(""));
        }
        rest = after;
    }
    letters
}

/// True if the character at `at` is preceded by an odd number of backslashes.
fn is_escaped(text: &str, at: usize) -> bool {
    text[..at].chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

#[derive(Clone, Copy)]
struct Mode {
    multiline: bool,
    ascii: bool,
    verbose: bool,
}

struct Translator {
    chars: Vec<char>,
    pos: usize,
    mode: Mode,
    out: String,
}

impl Translator {
    fn new(pattern: &str, mode: Mode) -> Self {
        Translator {
            chars: pattern.chars().collect(),
            pos: 0,
            mode,
            out: String::with_capacity(pattern.len() + 8),
        }
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn run(mut self) -> String {
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => self.escape_outside_class(),
                '[' => self.class(),
                '$' if !self.mode.multiline => {
                    self.out.push_str("(?=\\n?\\z)");
                    self.pos += 1;
                }
                ']' => {
                    self.out.push_str("\\]");
                    self.pos += 1;
                }
                '#' if self.mode.verbose => self.comment(),
                '(' if self.peek(1) == Some('?') => self.group_opening(),
                _ => {
                    self.out.push(c);
                    self.pos += 1;
                }
            }
        }
        self.out
    }

    /// Copies a verbose-mode comment through to the end of its line untouched.
    fn comment(&mut self) {
        self.copy_through('\n');
    }

    /// Copies a `(?#...)` comment through to its closing parenthesis untouched.
    fn comment_group(&mut self) {
        self.copy_through(')');
    }

    /// Copies characters untouched up to and including the next `end` (or to the end).
    fn copy_through(&mut self, end: char) {
        while let Some(c) = self.peek(0) {
            self.out.push(c);
            self.pos += 1;
            if c == end {
                break;
            }
        }
    }

    /// Drops the flag letters `fancy-regex` does not know (`a`, `u`) from a flag group.
    fn group_opening(&mut self) {
        if self.peek(2) == Some('#') {
            self.comment_group();
            return;
        }
        let start = self.pos + 2;
        let mut end = start;
        while self.chars.get(end).is_some_and(|c| "aiLmsux-".contains(*c)) {
            end += 1;
        }
        let terminator = self.chars.get(end).copied();
        if end == start || !matches!(terminator, Some(')' | ':')) {
            self.out.push_str("(?");
            self.pos += 2;
            return;
        }
        let letters: String = self.chars[start..end]
            .iter()
            .filter(|c| !matches!(c, 'a' | 'u'))
            .collect();
        let letters = letters.trim_end_matches('-');
        match (letters.is_empty(), terminator) {
            (true, Some(')')) => {}
            (true, _) => self.out.push_str("(?:"),
            (false, Some(t)) => {
                self.out.push_str("(?");
                self.out.push_str(letters);
                self.out.push(t);
            }
            (false, None) => {}
        }
        self.pos = end + 1;
    }

    fn escape_outside_class(&mut self) {
        self.escape(outside_class);
    }

    /// A backslash escape: an octal one as its character, else `replacement` of the escaped
    /// character under the ASCII flag, else the escape as written. Inside and outside a class
    /// the escapes differ only in their replacements.
    fn escape(&mut self, replacement: fn(char, bool) -> Option<String>) {
        let Some(next) = self.peek(1) else {
            self.out.push('\\');
            self.pos += 1;
            return;
        };
        if let Some(octal) = self.octal_escape() {
            self.out.push_str(&octal);
            return;
        }
        match replacement(next, self.mode.ascii) {
            Some(text) => self.out.push_str(&text),
            None => {
                self.out.push('\\');
                self.out.push(next);
            }
        }
        self.pos += 2;
    }

    /// Python's octal escapes: `\0` with up to two more octal digits, or exactly three octal
    /// digits starting with 0-3. Anything else with digits is a back-reference.
    fn octal_escape(&mut self) -> Option<String> {
        let is_octal = |c: Option<char>| c.is_some_and(|c| ('0'..='7').contains(&c));
        let first = self.peek(1)?;
        let len = if first == '0' {
            1 + usize::from(is_octal(self.peek(2)))
                + usize::from(is_octal(self.peek(2)) && is_octal(self.peek(3)))
        } else if ('1'..='3').contains(&first) && is_octal(self.peek(2)) && is_octal(self.peek(3)) {
            3
        } else {
            return None;
        };
        let digits: String = self.chars[self.pos + 1..self.pos + 1 + len]
            .iter()
            .collect();
        let code = u32::from_str_radix(&digits, 8).ok()?;
        self.pos += 1 + len;
        Some(format!("\\x{{{code:x}}}"))
    }

    fn class(&mut self) {
        self.out.push('[');
        self.pos += 1;
        if self.peek(0) == Some('^') {
            self.out.push('^');
            self.pos += 1;
        }
        // A `]` right after the opening is a literal in Python.
        if self.peek(0) == Some(']') {
            self.out.push_str("\\]");
            self.pos += 1;
        }
        while let Some(c) = self.peek(0) {
            match c {
                ']' => {
                    self.out.push(']');
                    self.pos += 1;
                    return;
                }
                '\\' => self.escape_inside_class(),
                '[' => {
                    self.out.push_str("\\[");
                    self.pos += 1;
                }
                '&' | '-' | '~' if self.peek(1) == Some(c) => {
                    self.out.push(c);
                    self.out.push('\\');
                    self.out.push(c);
                    self.pos += 2;
                }
                _ => {
                    self.out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn escape_inside_class(&mut self) {
        self.escape(inside_class);
    }
}

/// What an escape outside a class becomes (`\Z`, and the classes under the ASCII flag), when
/// it changes.
fn outside_class(next: char, ascii: bool) -> Option<String> {
    match next {
        'Z' => Some("\\z".to_string()),
        'w' if ascii => Some(format!("[{ASCII_WORD}]")),
        'W' if ascii => Some(format!("[^{ASCII_WORD}]")),
        'd' if ascii => Some(format!("[{ASCII_DIGIT}]")),
        'D' if ascii => Some(format!("[^{ASCII_DIGIT}]")),
        's' if ascii => Some(format!("[{ASCII_SPACE}]")),
        'S' if ascii => Some(format!("[^{ASCII_SPACE}]")),
        'b' if ascii => Some(format!(
            "(?:(?<=[{ASCII_WORD}])(?![{ASCII_WORD}])|(?<![{ASCII_WORD}])(?=[{ASCII_WORD}]))"
        )),
        'B' if ascii => Some(format!(
            "(?:(?<=[{ASCII_WORD}])(?=[{ASCII_WORD}])|(?<![{ASCII_WORD}])(?![{ASCII_WORD}]))"
        )),
        _ => None,
    }
}

/// What an escape inside a class becomes (`\b` is a backspace there), when it changes.
fn inside_class(next: char, ascii: bool) -> Option<String> {
    match next {
        'b' => Some("\\x08".to_string()),
        'w' if ascii => Some(ASCII_WORD.to_string()),
        'd' if ascii => Some(ASCII_DIGIT.to_string()),
        's' if ascii => Some(ASCII_SPACE.to_string()),
        'W' if ascii => Some(format!("[^{ASCII_WORD}]")),
        'D' if ascii => Some(format!("[^{ASCII_DIGIT}]")),
        'S' if ascii => Some(format!("[^{ASCII_SPACE}]")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(pattern: &str, flags: i64, text: &str) -> bool {
        match compile(pattern, flags) {
            Ok(regex) => regex.is_match(text).unwrap_or(false),
            Err(e) => panic!("{pattern:?} did not compile: {e}"),
        }
    }

    #[test]
    fn dollar_matches_before_a_final_newline_like_python() {
        assert!(search("a$", 0, "a\n"));
        assert!(search("a$", 0, "a"));
        assert!(!search("a$", 0, "a\nb"));
        assert!(search("a$", 8, "a\nb"));
        assert!(search("(?m)a$", 0, "a\nb"));
    }

    #[test]
    fn backslash_capital_z_is_the_absolute_end() {
        assert!(!search("a\\Z", 0, "a\n"));
        assert!(search("a\\Z", 0, "xa"));
    }

    #[test]
    fn flag_bits_map_to_python_meanings() {
        assert!(!search("^B", 0, "a\nb"));
        assert!(search("^B", 2 | 8, "a\nb"));
        assert!(search("a.b", 16, "a\nb"));
        assert!(!search("a.b", 0, "a\nb"));
        assert!(search("a b # c", 64, "ab"));
        assert!(search("x", 32, "x"));
    }

    #[test]
    fn ascii_flag_restricts_word_digit_and_space_classes() {
        assert!(search("\\w+$", 0, "é"));
        assert!(!search("\\w+$", 256, "é"));
        assert!(!search("(?a)\\w", 0, "é"));
        assert!(!search("\\d", 256, "٣"));
        assert!(!search("[\\w]", 256, "é"));
        assert!(search("[\\W]", 256, "é"));
        assert!(search("\\bcat\\b", 256, "a cat!"));
        assert!(search("\\bcat", 256, "écat"));
        assert!(!search("\\bcat", 0, "écat"));
        assert!(search("\\s", 256, "\x0b"));
    }

    #[test]
    fn unsupported_flags_are_rejected_with_the_supported_list() {
        let err = translate("x", 4).unwrap_err().to_string();
        assert!(err.contains("re.I=2") && err.contains("re.A=256"), "{err}");
        assert!(translate("x", -1).is_err());
        assert!(translate("(?L)x", 0).is_err());
    }

    #[test]
    fn octal_escapes_are_characters_not_back_references() {
        assert!(search("\\0", 0, "\0"));
        assert!(search("\\012", 0, "\n"));
        assert!(search("[\\101]", 0, "A"));
        assert!(search("(a)\\1", 0, "aa"));
    }

    #[test]
    fn class_brackets_and_double_operators_are_literal() {
        assert!(search("[a[b]", 0, "["));
        assert!(search("[a&&b]", 0, "&"));
        assert!(search("[%--]", 0, ","));
        assert!(search("[]a]", 0, "]"));
        assert!(search("[^]a]", 0, "b"));
        assert!(search("a]", 0, "a]"));
    }

    #[test]
    fn python_constructs_fancy_regex_already_knows_pass_through() {
        assert!(search("(?i)^\\s*(billing|bug)\\s*$", 0, " Billing \n"));
        assert!(search("(?<=a)b", 0, "ab"));
        assert!(search("(?P<n>a)(?P=n)", 0, "aa"));
        assert!(search("a{,2}b", 0, "aab"));
        assert!(search("{foo}", 0, "{foo}"));
        assert!(search("(?au)x", 0, "x"));
        assert!(search("(?a:x)", 0, "x"));
    }

    #[test]
    fn verbose_comments_are_left_alone() {
        assert!(search("a # [unclosed $\nb", 64, "ab"));
        assert!(search("a(?#[unclosed $)b", 0, "ab"));
    }

    #[test]
    fn escaped_brackets_and_dollars_stay_literal() {
        assert!(search("\\[x\\]", 0, "[x]"));
        assert!(search("\\$5", 0, "$5"));
    }
}
