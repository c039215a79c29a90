//! The golden metric: compares the output with the task's expected answer.
//!
//! Five modes, as the reference tool defines them (`got` is the output, `want` the expected
//! answer):
//!
//! * `exact`: 1 if the trimmed texts are equal.
//! * `normalized` (default): 1 if equal after trimming, Unicode case folding (`ß` = `ss`) and
//!   collapsing whitespace runs.
//! * `token_f1`: F1 of the multiset overlap of the normalized words (both empty: 1).
//! * `json_equal`: both parsed as JSON (the output tolerantly); two objects get a key-F1 where
//!   a key counts when present with an equal value (strings compared normalized, other values
//!   with Python's `==`); anything else is 1 only if the values are equal.
//! * `numeric`: the first number in each text, equal within 1e-6.
//!
//! ## Numbers with separators (`numeric`)
//!
//! The reference removes every comma before reading the first `-?\d+(\.\d+)?`, so `7,50`
//! reads as 750. Here the first run of digits joined by single `,` or `.` separators
//! (`-?\d+([.,]\d+)*`) is read with these rules, taking the longest prefix of separator
//! groups they accept:
//!
//! 1. Several separators of one kind, each followed by exactly three digits, are thousands
//!    separators: `1,234,567` and `1.234.567` are 1234567.
//! 2. Separators of one kind, each followed by exactly three digits, then one separator of
//!    the other kind are thousands separators and a decimal point: `1,234.50` is 1234.5 and
//!    `1.469,13` is 1469.13.
//! 3. A single `.` is a decimal point: `10.00` is 10, `1.234` is 1.234.
//! 4. A single `,` followed by exactly three digits is a thousands separator (`1,234` is
//!    1234); followed by any other number of digits it is a decimal comma (`7,50` is 7.5).
//! 5. Groups that fit none of these end the number: `12.05.2024` is 12.05.
//!
//! A leading `-` directly before the digits makes the number negative. Only ASCII digits are
//! read (the reference also reads other Unicode decimal digits).

use std::collections::{BTreeSet, HashMap};

use async_trait::async_trait;
use serde_json::{Map, Value};
use skill_factory_core::{MetricResult, Rollout, Task};
use skill_factory_pycompat::repr::{repr_str, repr_str_list};

use super::json_text::{parse_tolerant, python_eq};
use super::text::{normalize, py_split, py_strip};
use super::{Metric, NotApplicable};
use crate::config::{GoldenConfig, GoldenMode};

/// The metric's name in feedback and breakdowns.
pub const NAME: &str = "golden";

/// Largest difference at which two numbers still count as equal in `numeric` mode.
pub const NUMERIC_TOLERANCE: f64 = 1e-6;

/// Compares the output with the task's expected answer (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct GoldenMetric {
    mode: GoldenMode,
}

impl GoldenMetric {
    /// The golden metric of a `metric.golden` block.
    pub fn from_config(config: &GoldenConfig) -> Self {
        GoldenMetric::new(config.mode)
    }

    /// A golden metric comparing in the given mode.
    pub fn new(mode: GoldenMode) -> Self {
        GoldenMetric { mode }
    }

    /// The comparison mode.
    pub fn mode(&self) -> GoldenMode {
        self.mode
    }

    fn result(&self, output: &str, want: &str) -> MetricResult {
        let got = py_strip(output);
        let score = match self.mode {
            GoldenMode::JsonEqual => return json_result(output, want),
            GoldenMode::Exact => f64::from(u8::from(got == py_strip(want))),
            GoldenMode::Normalized => f64::from(u8::from(normalize(got) == normalize(want))),
            GoldenMode::TokenF1 => token_f1(got, want),
            GoldenMode::Numeric => match (first_number(got), first_number(want)) {
                (Some(g), Some(w)) if (g - w).abs() <= NUMERIC_TOLERANCE => 1.0,
                _ => 0.0,
            },
        };
        let verdict = if score == 1.0 {
            "exact match".to_string()
        } else {
            format!("partial/mismatch (score {score:.2})")
        };
        let feedback = format!(
            "[{}] {verdict}. expected: {}; got: {}",
            self.mode,
            repr_str(want),
            repr_str(got)
        );
        MetricResult::new(NAME, score, feedback)
    }
}

#[async_trait]
impl Metric for GoldenMetric {
    fn name(&self) -> &str {
        NAME
    }

    async fn score(&self, task: &Task, rollout: &Rollout) -> Result<MetricResult, NotApplicable> {
        let Some(want) = task.expected.as_deref() else {
            return Err(NotApplicable(format!(
                "task {} has no expected answer",
                task.id
            )));
        };
        if let Some(error) = &rollout.error {
            return Ok(super::rollout_failed(NAME, error));
        }
        Ok(self.result(&rollout.output, want))
    }
}

/// F1 of the multiset overlap of the normalized words of `got` and `want`.
pub fn token_f1(got: &str, want: &str) -> f64 {
    let got_norm = normalize(got);
    let want_norm = normalize(want);
    let got_tokens: Vec<&str> = py_split(&got_norm).collect();
    let want_tokens: Vec<&str> = py_split(&want_norm).collect();
    match (got_tokens.is_empty(), want_tokens.is_empty()) {
        (true, true) => return 1.0,
        (true, false) | (false, true) => return 0.0,
        (false, false) => {}
    }
    let mut want_counts: HashMap<&str, usize> = HashMap::new();
    for token in &want_tokens {
        *want_counts.entry(token).or_default() += 1;
    }
    let mut overlap = 0usize;
    for token in &got_tokens {
        if let Some(count) = want_counts.get_mut(token)
            && *count > 0
        {
            *count -= 1;
            overlap += 1;
        }
    }
    if overlap == 0 {
        return 0.0;
    }
    let precision = overlap as f64 / got_tokens.len() as f64;
    let recall = overlap as f64 / want_tokens.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// The `json_equal` verdict: key-F1 for two objects, plain equality otherwise.
fn json_result(got: &str, want: &str) -> MetricResult {
    let got = match parse_tolerant(got) {
        Ok(value) => value,
        Err(message) => {
            return MetricResult::new(NAME, 0.0, format!("output is not valid JSON: {message}"));
        }
    };
    // An expected answer that is not JSON compares as Python's None, as in the reference.
    let want = parse_tolerant(want).unwrap_or(Value::Null);
    match (&got, &want) {
        (Value::Object(got), Value::Object(want)) => key_f1_result(got, want),
        _ => {
            let equal = python_eq(&got, &want);
            let feedback = if equal {
                "[json_equal] structural match"
            } else {
                "[json_equal] structural mismatch"
            };
            MetricResult::new(NAME, f64::from(u8::from(equal)), feedback)
        }
    }
}

fn key_f1_result(got: &Map<String, Value>, want: &Map<String, Value>) -> MetricResult {
    let mut correct = 0usize;
    let mut missing = BTreeSet::new();
    let mut wrong = BTreeSet::new();
    for (key, expected) in want {
        match got.get(key) {
            None => {
                missing.insert(key.as_str());
            }
            Some(actual) if values_match(actual, expected) => correct += 1,
            Some(_) => {
                wrong.insert(key.as_str());
            }
        }
    }
    let f1 = if got.is_empty() && want.is_empty() {
        1.0
    } else {
        let precision = ratio(correct, got.len());
        let recall = ratio(correct, want.len());
        if precision + recall == 0.0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        }
    };
    let mut feedback = format!("[json_equal] key-F1 {f1:.2}.");
    if !missing.is_empty() {
        let keys: Vec<&str> = missing.into_iter().collect();
        feedback.push_str(&format!(" missing/empty keys: {}.", repr_str_list(&keys)));
    }
    if !wrong.is_empty() {
        let keys: Vec<&str> = wrong.into_iter().collect();
        feedback.push_str(&format!(" wrong values: {}.", repr_str_list(&keys)));
    }
    MetricResult::new(NAME, f1, feedback).with_part("key_f1", f1)
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Top-level string values are compared normalized, everything else with Python's `==`.
fn values_match(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::String(a), Value::String(e)) => normalize(a) == normalize(e),
        _ => python_eq(actual, expected),
    }
}

/// The first number in `text`, read with the separator rules of the module documentation.
pub fn first_number(text: &str) -> Option<f64> {
    let chars: Vec<char> = text.chars().collect();
    let is_digit = |i: usize| chars.get(i).is_some_and(char::is_ascii_digit);
    let start = (0..chars.len()).find(|&i| is_digit(i) || (chars[i] == '-' && is_digit(i + 1)))?;
    let negative = chars[start] == '-';
    let mut pos = start + usize::from(negative);
    let take_digits = |pos: &mut usize| -> String {
        let begin = *pos;
        while is_digit(*pos) {
            *pos += 1;
        }
        chars[begin..*pos].iter().collect()
    };
    let integer = take_digits(&mut pos);
    let mut groups: Vec<(char, String)> = Vec::new();
    while let Some(&sep) = chars.get(pos)
        && (sep == ',' || sep == '.')
        && is_digit(pos + 1)
    {
        pos += 1;
        groups.push((sep, take_digits(&mut pos)));
    }
    let (whole, fraction) = (0..=groups.len())
        .rev()
        .find_map(|k| interpret(&integer, &groups[..k]))
        .unwrap_or_else(|| (integer.clone(), String::new()));
    let literal = format!(
        "{}{}{}{}",
        if negative { "-" } else { "" },
        whole,
        if fraction.is_empty() { "" } else { "." },
        fraction
    );
    literal.parse().ok()
}

/// The integer and fraction digits of `integer` followed by `groups`, if the rules accept
/// exactly these groups.
fn interpret(integer: &str, groups: &[(char, String)]) -> Option<(String, String)> {
    let thousands = |gs: &[(char, String)]| -> Option<String> {
        let kind = gs.first()?.0;
        gs.iter()
            .all(|(sep, digits)| *sep == kind && digits.len() == 3)
            .then(|| {
                format!(
                    "{integer}{}",
                    gs.iter().map(|(_, d)| d.as_str()).collect::<String>()
                )
            })
    };
    match groups {
        [] => Some((integer.to_string(), String::new())),
        [(sep, digits)] => {
            if *sep == ',' && digits.len() == 3 {
                Some((format!("{integer}{digits}"), String::new()))
            } else {
                Some((integer.to_string(), digits.clone()))
            }
        }
        [init @ .., (last_sep, last_digits)] => {
            if let Some(whole) = thousands(groups) {
                return Some((whole, String::new()));
            }
            let whole = thousands(init)?;
            (init[0].0 != *last_sep).then(|| (whole, last_digits.clone()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_f1_counts_repeated_words_once_per_occurrence() {
        assert!((token_f1("a a a b", "a b b") - 4.0 / 7.0).abs() < 1e-12);
        assert_eq!(token_f1("the quick brown fox", "the quick red fox"), 0.75);
        assert_eq!(token_f1("", ""), 1.0);
        assert_eq!(token_f1("", "x"), 0.0);
        assert_eq!(token_f1("ﬃ x", "FFI X"), 1.0);
    }

    #[test]
    fn first_number_reads_plain_numbers_like_the_reference() {
        assert_eq!(first_number("Total: 10.00"), Some(10.0));
        assert_eq!(first_number("it is 10"), Some(10.0));
        assert_eq!(first_number("abc -0.5x"), Some(-0.5));
        assert_eq!(first_number("- 3"), Some(3.0));
        assert_eq!(first_number("+5"), Some(5.0));
        assert_eq!(first_number("1."), Some(1.0));
        assert_eq!(first_number(".5"), Some(5.0));
        assert_eq!(first_number("1e3"), Some(1.0));
        assert_eq!(first_number("2024-01-15"), Some(2024.0));
        assert_eq!(first_number("no digits"), None);
        assert_eq!(first_number(""), None);
    }

    #[test]
    fn first_number_reads_thousands_separators() {
        assert_eq!(first_number("1,234"), Some(1234.0));
        assert_eq!(first_number("1,234,567"), Some(1_234_567.0));
        assert_eq!(first_number("1.234.567"), Some(1_234_567.0));
        assert_eq!(first_number("$1,234.50 due"), Some(1234.5));
        assert_eq!(first_number("1,000,000.5"), Some(1_000_000.5));
    }

    #[test]
    fn first_number_reads_european_decimal_commas() {
        assert_eq!(first_number("7,50"), Some(7.5));
        assert_eq!(first_number("0,5 kg"), Some(0.5));
        assert_eq!(first_number("1.469,13"), Some(1469.13));
        assert_eq!(first_number("1.234.567,89 EUR"), Some(1_234_567.89));
        assert_eq!(first_number("-7,5"), Some(-7.5));
        assert_eq!(first_number("0,1234"), Some(0.1234));
    }

    #[test]
    fn first_number_treats_a_single_dot_as_decimal_point() {
        assert_eq!(first_number("1.234"), Some(1.234));
        assert_eq!(first_number("12.3456"), Some(12.3456));
    }

    #[test]
    fn first_number_stops_at_groups_that_fit_no_rule() {
        assert_eq!(first_number("12.05.2024"), Some(12.05));
        assert_eq!(first_number("1,234,5"), Some(1234.0));
        assert_eq!(first_number("1.23,45"), Some(1.23));
        assert_eq!(first_number("1,234.567.89"), Some(1234.567));
    }

    #[test]
    fn first_number_ignores_sentence_punctuation() {
        assert_eq!(first_number("It costs 10, and 20."), Some(10.0));
        assert_eq!(first_number("The answer is 5."), Some(5.0));
    }
}
