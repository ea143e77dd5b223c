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

/// Append the canonical value of quantity `s` as a JSON string (`"1073741824"`), the same as
/// `json::write_str(&canonical(s)?, out)`, for the common shapes only: a sign, at most 19
/// digits with an optional fraction, and no suffix or a unit suffix (`Gi`, `m`, …), computed
/// in integers without a heap decimal. Returns `false`, having written nothing, for anything
/// else (exponents, long digit strings, invalid text): the caller then takes [`parse`].
pub fn write_canonical_json_fast(s: &str, out: &mut Vec<u8>) -> bool {
    let bytes = s.as_bytes();
    let (neg, mut i) = match bytes.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let mut mantissa: u128 = 0;
    let mut digits = 0usize;
    while let Some(&b) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
        mantissa = mantissa * 10 + u128::from(b - b'0');
        digits += 1;
        i += 1;
    }
    let mut frac = 0i64;
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        while let Some(&b) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
            mantissa = mantissa * 10 + u128::from(b - b'0');
            digits += 1;
            frac += 1;
            i += 1;
        }
    }
    // Up to 19 digits: below 10^19, so times 1024^6 (2^60) still fits in a u128.
    if digits == 0 || digits > 19 {
        return false;
    }
    let mut exp10 = -frac;
    match &bytes[i..] {
        b"" => {}
        b"n" => exp10 -= 9,
        b"u" => exp10 -= 6,
        b"m" => exp10 -= 3,
        b"k" => exp10 += 3,
        b"M" => exp10 += 6,
        b"G" => exp10 += 9,
        b"T" => exp10 += 12,
        b"P" => exp10 += 15,
        b"E" => exp10 += 18,
        [unit @ (b'K' | b'M' | b'G' | b'T' | b'P' | b'E'), b'i'] => {
            let power = b"KMGTPE"
                .iter()
                .position(|u| u == unit)
                .map_or(0, |p| p + 1);
            mantissa <<= 10 * power;
        }
        _ => return false,
    }
    out.push(b'"');
    if mantissa == 0 {
        out.extend_from_slice(b"0\"");
        return true;
    }
    // Round away from zero to nano precision (at most 19 + 9 digits dropped: 10^28 fits).
    let min_exp = -i64::from(SCALE);
    if exp10 < min_exp {
        let unit = 10u128.pow((min_exp - exp10) as u32);
        let (q, r) = (mantissa / unit, mantissa % unit);
        mantissa = q + u128::from(r != 0);
        exp10 = min_exp;
    }
    if neg {
        out.push(b'-');
    }
    let mut buf = [0u8; 40];
    let mut at = buf.len();
    // u64 arithmetic when it fits (almost always: u128 division is a library call).
    if let Ok(mut m) = u64::try_from(mantissa) {
        while exp10 < 0 && m.is_multiple_of(10) {
            m /= 10;
            exp10 += 1;
        }
        while m > 0 {
            at -= 1;
            buf[at] = b'0' + (m % 10) as u8;
            m /= 10;
        }
    } else {
        while exp10 < 0 && mantissa.is_multiple_of(10) {
            mantissa /= 10;
            exp10 += 1;
        }
        while mantissa > 0 {
            at -= 1;
            buf[at] = b'0' + (mantissa % 10) as u8;
            mantissa /= 10;
        }
    }
    let text = &buf[at..];
    if exp10 >= 0 {
        out.extend_from_slice(text);
        out.resize(out.len() + exp10 as usize, b'0');
    } else {
        let frac = (-exp10) as usize;
        if frac >= text.len() {
            out.extend_from_slice(b"0.");
            out.resize(out.len() + (frac - text.len()), b'0');
            out.extend_from_slice(text);
        } else {
            let (int, rest) = text.split_at(text.len() - frac);
            out.extend_from_slice(int);
            out.push(b'.');
            out.extend_from_slice(rest);
        }
    }
    out.push(b'"');
    true
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
    fn fast_path_agrees() {
        let mut inputs: Vec<String> = Vec::new();
        let numbers = [
            "0",
            "-0",
            "+0.0",
            "1",
            "01",
            "1.",
            ".5",
            "0.5",
            "1.0000000001",
            "0.0000000005",
            "123456789",
            "1234567890123456789",
            "12345678901234567890",
            "9999999999999999999",
            "-9999999999999999999",
            "0.1",
            "1.5",
            "100",
            "2.25",
            "7",
            "",
        ];
        let suffixes = [
            "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
            "e3", "x", "ki", "i",
        ];
        for n in numbers {
            for s in suffixes {
                inputs.push(format!("{n}{s}"));
                inputs.push(format!("-{n}{s}"));
            }
        }
        for input in inputs {
            let mut fast = Vec::new();
            let taken = write_canonical_json_fast(&input, &mut fast);
            match canonical(&input) {
                Ok(want) => {
                    if taken {
                        let mut slow = Vec::new();
                        crate::json::write_str(&want, &mut slow);
                        assert_eq!(fast, slow, "{input:?}");
                    }
                }
                Err(_) => assert!(!taken, "{input:?}"),
            }
            if !taken {
                assert!(fast.is_empty(), "{input:?}");
            }
        }
        let mut out = Vec::new();
        assert!(write_canonical_json_fast("256Gi", &mut out));
        assert_eq!(out, b"\"274877906944\"");
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
