//! Python's float arithmetic and formatting where its output is compared byte for byte:
//! `repr` (and JavaScript's `Number#toString`, crate-internal, behind [`crate::json`] and
//! [`crate::repr`]), `round(x, n)`, `"%.{p}g" % x`, `"{:,}".format(n)` and the builtin `sum()`
//! of floats.
//!
//! Rust's fixed-precision formatting (`{:.3}`, `{:.3e}`) rounds the exact binary value half
//! to even, as CPython's `dtoa` does, so every rounding here goes through it rather than
//! through `x * 10^n`, which rounds twice.

/// Python `repr(x)` of a float: the shortest digits that read back as `x`, in positional form
/// with at least one decimal (`10.0`, `0.0001`) when 1e-4 ≤ |x| < 1e16, otherwise in exponent
/// form with a sign and at least two exponent digits (`1e+16`, `1e-05`).
///
/// Non-finite values (which a `serde_json::Value` cannot hold, but a weight can be) are written
/// as Python writes them: `nan`, `inf`, `-inf`.
pub(crate) fn python(x: f64) -> String {
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
pub(crate) fn javascript(x: f64) -> String {
    if x.is_nan() || x.is_infinite() {
        // JSON.stringify writes non-finite numbers as null.
        return "null".to_owned();
    }
    Decimal::shortest(x).map_or_else(|| "0".to_owned(), |decimal| JS_LAYOUT.write(&decimal))
}

/// Python `round(x, ndigits)` of a float: the exact binary value of `x` rounded half to even
/// at `10^-ndigits` (so `round(2.675, 2)` is `2.67`, because 2.675 is stored just below it,
/// and `round(0.125, 2)` is `0.12`), read back as the nearest float.
///
/// `ndigits` may be negative (`round(1250.0, -2)` is `1200.0`). Like Python, NaN, infinities
/// and zeros come back unchanged, and the sign of a result that rounds to zero is kept
/// (`round(-0.4)` is `-0.0`). Where Python raises `OverflowError` (a result beyond the largest
/// float, e.g. `round(1.7e308, -308)`), this returns an infinity of the same sign.
pub fn round(x: f64, ndigits: i32) -> f64 {
    // Python's own cut-offs: beyond them the result is `x`, or a zero of x's sign.
    const NDIGITS_MAX: i32 = 323;
    const NDIGITS_MIN: i32 = -308;
    if !x.is_finite() || x == 0.0 || ndigits > NDIGITS_MAX {
        return x;
    }
    if ndigits < NDIGITS_MIN {
        return 0.0 * x;
    }
    if (0..=15).contains(&ndigits) {
        // Fast path for a value that already has at most `ndigits` decimals (answers such as
        // 0.1234 rounded to 4): if x is the float nearest to k / 10^n, k / 10^n is within half
        // an ulp of x while every other multiple of 10^-n is far away, so Python's answer is
        // x itself. This skips formatting for most values selection rounds.
        let scale = 10f64.powi(ndigits);
        let scaled = x * scale;
        if scaled.abs() < 4.5e15 && scaled.round() / scale == x {
            return x;
        }
    }
    let text = match usize::try_from(ndigits) {
        Ok(decimals) => format!("{x:.decimals$}"),
        Err(_) => round_integer_digits(x, ndigits.unsigned_abs() as usize),
    };
    text.parse().unwrap_or(x)
}

/// `x` rounded half to even to a multiple of `10^places` (places >= 1), as decimal text.
///
/// The integer part of a float prints exactly, and the fraction can only break a tie, so it
/// is kept as one "something after the point" bit.
fn round_integer_digits(x: f64, places: usize) -> String {
    let whole = x.trunc();
    let fraction_left = x != whole;
    let digits = format!("{:.0}", whole.abs());
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if digits.len() < places {
        // Below 10^(places-1), hence below half of 10^places.
        return format!("{sign}0");
    }
    let (head, tail) = digits.split_at(digits.len() - places);
    let mut tail_digits = tail.bytes();
    let first = tail_digits.next().unwrap_or(b'0');
    let rest_zero = tail_digits.all(|d| d == b'0') && !fraction_left;
    let head_odd = head.bytes().last().is_some_and(|d| (d - b'0') % 2 == 1);
    let up = first > b'5' || (first == b'5' && (!rest_zero || head_odd));
    let mut head = head.to_owned();
    if up {
        increment_decimal(&mut head);
    }
    if head.is_empty() {
        head.push('0');
    }
    format!("{sign}{head}{}", "0".repeat(places))
}

/// Adds one to a string of decimal digits (`""` counts as 0, `"99"` becomes `"100"`).
fn increment_decimal(digits: &mut String) {
    let mut bytes = std::mem::take(digits).into_bytes();
    let mut carry = true;
    for digit in bytes.iter_mut().rev() {
        if *digit == b'9' {
            *digit = b'0';
        } else {
            *digit += 1;
            carry = false;
            break;
        }
    }
    if carry {
        bytes.insert(0, b'1');
    }
    *digits = String::from_utf8(bytes).unwrap_or_default();
}

/// Python `"%.{precision}g" % x` (and `format(x, ".{precision}g")`; `%g` is precision 6):
/// `precision` significant digits, rounded half to even on the exact binary value; positional
/// when the rounded exponent is in `-4 ..< precision`, otherwise `d.ddde±XX` with at least two
/// exponent digits; trailing zeros and a trailing point removed (`0.5`, `2`, `1e-05`,
/// `1.23457e+06`). Precision 0 counts as 1, as in Python; NaN and infinities are `nan`, `inf`
/// and `-inf`.
pub fn format_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let precision = precision.max(1);
    // The exponent that decides the layout is the one after rounding (9.9999995 is `10`).
    let scientific = format!("{:.*e}", precision - 1, x);
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits = i32::try_from(precision).unwrap_or(i32::MAX);
    if (-4..digits).contains(&exponent) {
        let decimals = (digits - 1 - exponent) as usize;
        strip_fraction_zeros(&format!("{x:.decimals$}")).to_owned()
    } else {
        format!(
            "{}e{}{:02}",
            strip_fraction_zeros(mantissa),
            if exponent < 0 { '-' } else { '+' },
            exponent.unsigned_abs()
        )
    }
}

/// `2.500` -> `2.5`, `2.000` -> `2`; text without a point is unchanged.
fn strip_fraction_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// Python `"{:,}".format(n)` of an integer: digits grouped by three with commas (`1,234,567`).
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Python's builtin `sum()` over floats, as CPython 3.12 and later compute it: Neumaier's
/// compensated summation, so `sum([0.1] * 10)` is `1.0` (plain left-to-right addition, as
/// Python 3.11 and earlier did, gives `0.9999999999999999`).
///
/// An accumulator rather than a function over a slice, so callers summing values they compute
/// one by one (a score expression's arguments) need not collect them first.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sum {
    total: f64,
    compensation: f64,
}

impl Sum {
    /// The empty sum (`sum([])` is `0`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one value.
    pub fn add(&mut self, x: f64) {
        let t = self.total + x;
        // The low-order bits lost by `t`, taken from the smaller operand.
        self.compensation += if self.total.abs() >= x.abs() {
            (self.total - t) + x
        } else {
            (x - t) + self.total
        };
        self.total = t;
    }

    /// The sum of the values added so far.
    pub fn value(&self) -> f64 {
        // CPython skips a zero compensation (which would turn -0.0 into 0.0) and a non-finite
        // one (which would turn an infinite total into NaN).
        if self.compensation != 0.0 && self.compensation.is_finite() {
            self.total + self.compensation
        } else {
            self.total
        }
    }
}

/// Python `sum(values)` of floats (CPython 3.12 and later; see [`Sum`]).
pub fn sum(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut total = Sum::new();
    for x in values {
        total.add(x);
    }
    total.value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_repr_keeps_a_decimal_on_whole_floats() {
        assert_eq!(python(10.0), "10.0");
        assert_eq!(python(262.5), "262.5");
        assert_eq!(python(-0.0), "-0.0");
        assert_eq!(python(0.0), "0.0");
        assert_eq!(python(1e15), "1000000000000000.0");
        assert_eq!(python(5.0), "5.0");
        assert_eq!(python(0.25), "0.25");
        assert_eq!(python(-2.0), "-2.0");
    }

    #[test]
    fn python_repr_switches_to_exponent_form_at_python_thresholds() {
        assert_eq!(python(1e16), "1e+16");
        assert_eq!(python(1.5e16), "1.5e+16");
        assert_eq!(python(0.0001), "0.0001");
        assert_eq!(python(1e-05), "1e-05");
        assert_eq!(python(1.25e-100), "1.25e-100");
        assert_eq!(python(f64::MAX), "1.7976931348623157e+308");
    }

    #[test]
    fn shortest_digits_break_ties_to_even_like_python_and_js() {
        // Exactly halfway between …6562 and …6563 at the shortest length: Python's repr and
        // node's String() both print …6562; Rust's `{:e}` alone prints …6563.
        const TIE: f64 = 3_381_651_391_084.0 + 0.656_25;
        assert_eq!(python(TIE), "3381651391084.6562");
        assert_eq!(javascript(TIE), "3381651391084.6562");
    }

    #[test]
    fn js_numbers_drop_the_decimal_and_switch_at_js_thresholds() {
        assert_eq!(javascript(10.0), "10");
        assert_eq!(javascript(1e20), "100000000000000000000");
        assert_eq!(javascript(1e21), "1e+21");
        assert_eq!(javascript(0.000001), "0.000001");
        assert_eq!(javascript(1e-7), "1e-7");
        assert_eq!(javascript(-0.0), "0");
        assert_eq!(javascript(1.5e-7), "1.5e-7");
    }

    #[test]
    fn the_fast_path_of_round_agrees_with_formatting() {
        let slow = |x: f64, n: usize| -> f64 { format!("{x:.n$}").parse().unwrap() };
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            // xorshift: values with few and with many decimals, both signs.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let raw = (state % 2_000_001) as f64 / 1_000_000.0 - 1.0;
            for x in [
                raw,
                (raw * 1e4).round() / 1e4,
                raw * 1e6,
                (raw * 10.0).round() / 10.0,
            ] {
                for n in [0usize, 1, 2, 4, 6, 10] {
                    assert_eq!(
                        round(x, n as i32).to_bits(),
                        slow(x, n).to_bits(),
                        "{x} {n}"
                    );
                }
            }
        }
    }

    #[test]
    fn round_is_half_even_on_the_exact_binary_value() {
        // CPython: round(2.675, 2) == 2.67 (stored below), round(0.125, 2) == 0.12 (a true
        // tie, to even), round(0.375, 2) == 0.38, round(2.5) == 2, round(3.5) == 4.
        assert_eq!(round(2.675, 2), 2.67);
        assert_eq!(round(0.125, 2), 0.12);
        assert_eq!(round(0.375, 2), 0.38);
        assert_eq!(round(2.5, 0), 2.0);
        assert_eq!(round(3.5, 0), 4.0);
        assert_eq!(round(0.123_456_789, 4), 0.1235);
        assert_eq!(round(1.0 / 3.0, 10), 0.333_333_333_3);
        assert_eq!(round(0.075_499_999_5, 6), 0.0755);
    }

    #[test]
    fn round_keeps_the_sign_of_zero_and_passes_non_finite_values_through() {
        assert!(round(-0.4, 0).is_sign_negative() && round(-0.4, 0) == 0.0);
        assert!(round(-0.0, 2).is_sign_negative());
        assert!(round(f64::NAN, 2).is_nan());
        assert_eq!(round(f64::INFINITY, 2), f64::INFINITY);
        assert_eq!(round(0.1, 400), 0.1);
        assert!(round(-5.0, -400).is_sign_negative() && round(-5.0, -400) == 0.0);
    }

    #[test]
    fn round_to_negative_digits_looks_at_the_fraction_before_calling_a_tie() {
        // CPython: round(1250.0, -2) == 1200.0, round(1250.4, -2) == 1300.0,
        // round(1350.0, -2) == 1400.0, round(-1250.4, -2) == -1300.0, round(49.0, -2) == 0.0,
        // round(-4.0, -1) == -0.0, round(9999.0, -1) == 10000.0, round(55.0, -2) == 100.0.
        assert_eq!(round(1250.0, -2), 1200.0);
        assert_eq!(round(1250.4, -2), 1300.0);
        assert_eq!(round(1350.0, -2), 1400.0);
        assert_eq!(round(-1250.4, -2), -1300.0);
        assert_eq!(round(49.0, -2), 0.0);
        assert!(round(-4.0, -1).is_sign_negative());
        assert_eq!(round(9999.0, -1), 10000.0);
        assert_eq!(round(55.0, -2), 100.0);
        assert_eq!(round(5.0, -1), 0.0);
        assert_eq!(round(1.7e308, -308), f64::INFINITY);
    }

    #[test]
    fn format_g_matches_python_percent_g() {
        // Each right-hand side is CPython's "%.{p}g" % x.
        assert_eq!(format_g(0.5, 6), "0.5");
        assert_eq!(format_g(1e-05, 6), "1e-05");
        assert_eq!(format_g(0.0001, 6), "0.0001");
        assert_eq!(format_g(2.0, 6), "2");
        assert_eq!(format_g(1_234_567.0, 6), "1.23457e+06");
        assert_eq!(format_g(123_456.0, 6), "123456");
        assert_eq!(format_g(0.123_456_789, 4), "0.1235");
        assert_eq!(format_g(0.0, 6), "0");
        assert_eq!(format_g(-0.0, 6), "-0");
        assert_eq!(format_g(-2.5, 6), "-2.5");
        assert_eq!(format_g(1e100, 6), "1e+100");
        assert_eq!(format_g(1.5e-100, 6), "1.5e-100");
        assert_eq!(format_g(9.999_999_5, 6), "10");
        assert_eq!(format_g(999_999.5, 6), "1e+06");
        assert_eq!(format_g(0.125, 2), "0.12");
        assert_eq!(format_g(2.5, 0), "2");
        assert_eq!(format_g(1.0 / 3.0, 4), "0.3333");
        assert_eq!(format_g(3.0 / 0.22, 4), "13.64");
        assert_eq!(format_g(f64::NAN, 6), "nan");
        assert_eq!(format_g(f64::NEG_INFINITY, 6), "-inf");
    }

    #[test]
    fn thousands_groups_digits_by_three_like_python_format_comma() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(60_700), "60,700");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn sum_is_compensated_like_python_3_12() {
        // CPython 3.12+: sum([0.1] * 10) == 1.0, sum([1e100, 1.0, -1e100]) == 1.0,
        // sum([0.1, 0.2, 0.3]) == 0.6, sum([]) == 0, sum([-0.0]) == 0.0.
        assert_eq!(sum([0.1; 10]), 1.0);
        assert_eq!(sum([1e100, 1.0, -1e100]), 1.0);
        assert_eq!(sum([0.1, 0.2, 0.3]), 0.6);
        assert_eq!(sum([]), 0.0);
        assert!(sum([-0.0]).is_sign_positive());
        assert_eq!(sum([0.2, 0.6]), 0.2 + 0.6);
        assert_eq!(sum([f64::INFINITY, 1.0]), f64::INFINITY);
    }
}
