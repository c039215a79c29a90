//! Text normalization shared by the metrics, with Python's definitions of "whitespace" and
//! "case-insensitive" so that scores match the reference tool's.
//!
//! * Whitespace is what Python's `str.isspace()` accepts: Unicode `White_Space` plus the four
//!   ASCII information separators U+001C..U+001F.
//! * Case-insensitive means full Unicode case folding (Python `str.casefold()`): `ß` and `SS`
//!   are equal, which `to_lowercase` would miss.

/// True for the characters Python's `str.strip()` and `str.split()` treat as whitespace.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// What a text cut by [`clip`] ends with.
pub const TRUNCATION_MARK: &str = " …[truncated]";

/// `text` trimmed, and cut to `limit` characters plus [`TRUNCATION_MARK`] when longer: how a
/// prompt shows a field that may be long.
pub fn clip(text: &str, limit: usize) -> String {
    let text = py_strip(text);
    if text.chars().count() > limit {
        let cut: String = text.chars().take(limit).collect();
        format!("{cut}{TRUNCATION_MARK}")
    } else {
        text.to_string()
    }
}

/// `text` without leading and trailing whitespace, like Python's `str.strip()`.
pub fn py_strip(text: &str) -> &str {
    text.trim_matches(is_py_space)
}

/// Full Unicode case folding, like Python's `str.casefold()`.
pub fn casefold(text: &str) -> String {
    caseless::default_case_fold_str(text)
}

/// The whitespace-separated words of `text`, like Python's `str.split()` with no argument.
pub fn py_split(text: &str) -> impl Iterator<Item = &str> {
    text.split(is_py_space).filter(|word| !word.is_empty())
}

/// Trimmed, case-folded text with every whitespace run collapsed to one space.
pub fn normalize(text: &str) -> String {
    let folded = casefold(text);
    py_split(&folded).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_case_folds_trims_and_collapses_whitespace() {
        assert_eq!(normalize("  Hello \t\n World  "), "hello world");
        assert_eq!(normalize("Straße"), "strasse");
        assert_eq!(normalize("ﬃ"), "ffi");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn python_whitespace_includes_ascii_information_separators() {
        assert_eq!(normalize("a\u{1c}b\u{a0}c\u{3000}d"), "a b c d");
        assert_eq!(py_strip("\u{1f} x \u{2028}"), "x");
    }

    #[test]
    fn zero_width_space_is_not_whitespace() {
        assert_eq!(normalize("a\u{200b}b"), "a\u{200b}b");
    }

    #[test]
    fn py_split_drops_empty_words() {
        assert_eq!(py_split("  a  b ").collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(py_split("   ").count(), 0);
    }
}
