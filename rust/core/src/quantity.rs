//! Kubernetes resource quantities: parsing and the canonical decimal string.
//!
//! The grammar is the one `k8s.io/apimachinery/pkg/api/resource.ParseQuantity` accepts:
//!
//! ```text
//! quantity := sign? number suffix?
//! sign     := "+" | "-"
//! number   := digits ("." digits?)? | "." digits
//! suffix   := "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"          (powers of 1024)
//!           | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E"   (powers of 1000)
//!           | ("e" | "E") sign? digits                        (powers of 10, |exp| <= 100)
//! ```
//!
//! A value is rounded away from zero to nano precision (9 fractional digits), then written
//! as a plain decimal (see [`Decimal::to_plain`]): `"1Gi"` → `"1073741824"`, `"500m"` →
//! `"0.5"`, `"1e3"` → `"1000"`.

use crate::decimal::Decimal;

/// Fractional digits kept: Kubernetes quantities have nano precision.
pub const SCALE: u32 = 9;
/// The largest accepted `e`/`E` exponent, in absolute value.
pub const MAX_EXPONENT: i64 = 100;

/// Why a string is not a quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalid {
    /// It does not match the grammar.
    Syntax,
    /// An `e`/`E` exponent is over [`MAX_EXPONENT`] in absolute value.
    ExponentRange,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Invalid::Syntax => "not a quantity",
            Invalid::ExponentRange => "exponent out of range",
        })
    }
}

/// Parse a quantity string into its exact (unrounded) value.
pub fn parse(s: &str) -> Result<Decimal, Invalid> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let int_len = digit_prefix(rest);
    let (int_digits, rest) = rest.split_at(int_len);
    let (frac_digits, suffix) = match rest.strip_prefix('.') {
        Some(after) => after.split_at(digit_prefix(after)),
        None => ("", rest),
    };
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(Invalid::Syntax);
    }
    let mut value = Decimal::from_digits(neg, int_digits, frac_digits, 0);
    match suffix {
        "" => {}
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let power = "KMGTPE".find(&suffix[..1]).map_or(0, |i| i + 1);
            for _ in 0..power {
                value.mul_small(1024);
            }
        }
        "n" => value.shift(-9),
        "u" => value.shift(-6),
        "m" => value.shift(-3),
        "k" => value.shift(3),
        "M" => value.shift(6),
        "G" => value.shift(9),
        "T" => value.shift(12),
        "P" => value.shift(15),
        "E" => value.shift(18),
        _ => value.shift(exponent(suffix)?),
    }
    Ok(value)
}

/// The canonical string of a quantity string.
pub fn canonical(s: &str) -> Result<String, Invalid> {
    parse(s).map(canonical_value)
}

/// Round an exact value to nano precision (away from zero) and write it plainly.
pub fn canonical_value(mut value: Decimal) -> String {
    value.round_away(SCALE);
    value.to_plain()
}

/// Length of the run of ASCII digits at the start of `s`.
fn digit_prefix(s: &str) -> usize {
    s.bytes().take_while(u8::is_ascii_digit).count()
}

/// The exponent of an `e<int>` / `E<int>` suffix, if `suffix` is one within bounds.
fn exponent(suffix: &str) -> Result<i64, Invalid> {
    let rest = suffix.strip_prefix(['e', 'E']).ok_or(Invalid::Syntax)?;
    let (neg, digits) = match rest.as_bytes().first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    if digits.is_empty() || digit_prefix(digits) != digits.len() {
        return Err(Invalid::Syntax);
    }
    let digits = digits.trim_start_matches('0');
    if digits.len() > 3 {
        return Err(Invalid::ExponentRange);
    }
    let magnitude: i64 = digits.parse().unwrap_or(0);
    if magnitude > MAX_EXPONENT {
        return Err(Invalid::ExponentRange);
    }
    Ok(if neg { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_values() {
        let cases = [
            ("0", "0"),
            ("-0", "0"),
            ("+0.0", "0"),
            ("1", "1"),
            ("+1", "1"),
            ("01", "1"),
            ("1000m", "1"),
            ("1.0", "1"),
            ("1.", "1"),
            (".5", "0.5"),
            ("0.5", "0.5"),
            ("500m", "0.5"),
            ("100m", "0.1"),
            ("250u", "0.00025"),
            ("1n", "0.000000001"),
            ("0.5n", "0.000000001"),
            ("-0.5n", "-0.000000001"),
            ("1.0000000001", "1.000000001"),
            ("1k", "1000"),
            ("1M", "1000000"),
            ("1G", "1000000000"),
            ("2T", "2000000000000"),
            ("1P", "1000000000000000"),
            ("1E", "1000000000000000000"),
            ("1Ki", "1024"),
            ("1.5Ki", "1536"),
            ("1Mi", "1048576"),
            ("1Gi", "1073741824"),
            ("1024Mi", "1073741824"),
            ("1073741824", "1073741824"),
            ("1Ti", "1099511627776"),
            ("1Pi", "1125899906842624"),
            ("1Ei", "1152921504606846976"),
            ("8Ei", "9223372036854775808"),
            ("0.1Ki", "102.4"),
            ("1e3", "1000"),
            ("1E3", "1000"),
            ("1e+3", "1000"),
            ("1e-3", "0.001"),
            ("1.5e2", "150"),
            ("12e-12", "0.000000001"),
            ("1e100", &format!("1{}", "0".repeat(100))),
            ("1e-100", "0.000000001"),
            ("-1e-100", "-0.000000001"),
            ("-2Gi", "-2147483648"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(canonical(input).as_deref(), Ok(want), "{input:?}");
        }
    }

    #[test]
    fn invalid() {
        let syntax = [
            "", "abc", "-", "+", ".", "+.", "-.e3", "1.2.3", "1 ", " 1", "1K", "1ki", "1KiB",
            "1Gb", "1e", "1e+", "1e1.5", "1ee3", "e3", "Gi", "--1", "1,5", "0x10", "1_000", "١",
        ];
        for input in syntax {
            assert_eq!(canonical(input), Err(Invalid::Syntax), "{input:?}");
        }
        for input in ["1e101", "1e-101", "1E101", "1e0001000", "5e-324"] {
            assert_eq!(canonical(input), Err(Invalid::ExponentRange), "{input:?}");
        }
    }

    #[test]
    fn exponent_bounds() {
        assert_eq!(canonical("1e0100"), Ok(format!("1{}", "0".repeat(100))));
        assert_eq!(canonical("1e-0"), Ok("1".to_string()));
    }
}
