//! Canonical JSON scalars: how strings and numbers are written (docs/hashing.md, rules 8-9).
//!
//! Numbers follow the data model of Python's `json` module, which the pure-Python reference
//! uses: a literal without `.`/`e`/`E` is an exact integer of any size; any other literal is
//! an IEEE double. An integral double is written as the exact integer it is (`30.0` → `30`,
//! `1e20` → `100000000000000000000`); any other double as Python's `repr` writes it (shortest
//! round-trip digits; exponent form `1e-05` below 1e-4).

use serde_json::Number;

use crate::decimal::Decimal;

/// A JSON number, as the canonical form sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Num {
    /// An integer literal, exactly.
    Int(Decimal),
    /// A non-integer literal, as a double (always finite).
    Float(f64),
}

impl Num {
    /// Classify a `serde_json` number by its literal text; `None` if it is a non-finite double.
    pub fn from_json(n: &Number) -> Option<Num> {
        if let Some(i) = n.as_i64() {
            return Some(Num::Int(int_decimal(&i.to_string())));
        }
        if let Some(u) = n.as_u64() {
            return Some(Num::Int(int_decimal(&u.to_string())));
        }
        let text = n.to_string();
        if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
            let x: f64 = text.parse().ok()?;
            x.is_finite().then_some(Num::Float(x))
        } else {
            Some(Num::Int(int_decimal(&text)))
        }
    }

    /// Classify a JSON number literal (`-12`, `0.5`, `1e3`); `None` if it is a non-finite
    /// double. The same as [`Num::from_json`] of the number `serde_json` reads from it (with
    /// `arbitrary_precision`, `as_i64`/`as_u64` parse the literal and `to_string` is it).
    pub fn from_literal(text: &str) -> Option<Num> {
        if let Ok(i) = text.parse::<i64>() {
            return Some(Num::Int(int_decimal(&i.to_string())));
        }
        if let Ok(u) = text.parse::<u64>() {
            return Some(Num::Int(int_decimal(&u.to_string())));
        }
        if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
            let x: f64 = text.parse().ok()?;
            x.is_finite().then_some(Num::Float(x))
        } else {
            Some(Num::Int(int_decimal(text)))
        }
    }

    /// The decimal text a quantity is parsed from: the integer's digits or the double's
    /// shortest round-trip form.
    pub fn quantity_text(&self) -> String {
        match self {
            Num::Int(d) => d.to_plain(),
            Num::Float(x) => python_repr(*x),
        }
    }

    /// The canonical text (rule 8).
    pub fn canonical(&self) -> String {
        match self {
            Num::Int(d) => d.to_plain(),
            Num::Float(x) if x.fract() == 0.0 => Decimal::from_f64(*x)
                .unwrap_or_else(Decimal::zero)
                .to_plain(),
            Num::Float(x) => python_repr(*x),
        }
    }

    /// Append the canonical text.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.canonical().as_bytes());
    }
}

/// An integer literal (optional `-`, digits) as a decimal.
fn int_decimal(text: &str) -> Decimal {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    Decimal::from_digits(neg, digits, "", 0)
}

/// `repr(x)` of a finite Python float: the shortest digits that round-trip, in plain notation
/// when `1e-4 <= |x| < 1e16`, else `d[.ddd]e±XX` (at least two exponent digits).
pub fn python_repr(x: f64) -> String {
    let (digits, exp) = shortest_digits(x.abs());
    let sign = if x.is_sign_negative() { "-" } else { "" };
    let decpt = exp + 1; // value = 0.DIGITS × 10^decpt
    let n = digits.len() as i64;
    if decpt > -4 && decpt <= 16 {
        if decpt <= 0 {
            format!("{sign}0.{}{digits}", "0".repeat((-decpt) as usize))
        } else if decpt >= n {
            format!("{sign}{digits}{}.0", "0".repeat((decpt - n) as usize))
        } else {
            let (int, frac) = digits.split_at(decpt as usize);
            format!("{sign}{int}.{frac}")
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{dot}{rest}e{esign}{:02}", exp.abs())
    }
}

/// The digits Python's `repr` writes for a finite `x >= 0`, and the exponent of the first:
/// the shortest that round-trip and, of those, the nearest to `x`, a tie going to the even
/// last digit (David Gay's `dtoa` mode 0).
fn shortest_digits(x: f64) -> (String, i64) {
    // Rust's `{:e}` gives the shortest round-trip length, but breaks ties its own way.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let fallback: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let fallback = (fallback, exp.parse().unwrap_or(0));
    let Some(exact) = Decimal::from_f64(x).filter(|d| !d.is_zero()) else {
        return fallback;
    };
    let (digits, last) = exact.digits();
    let len = fallback.0.len();
    let lead = last + digits.len() as i64 - 1;
    if digits.len() <= len {
        return (digits, lead);
    }
    // The two candidates of `len` digits around x: truncated, and one unit above it.
    let floor = digits[..len].to_string();
    let rest = &digits.as_bytes()[len..];
    let (ceil, ceil_lead) = increment(&floor, lead);
    let round_trips = |d: &str, lead: i64| {
        format!("{d}e{}", lead - d.len() as i64 + 1)
            .parse::<f64>()
            .is_ok_and(|y| y == x)
    };
    let floor_ok = round_trips(&floor, lead);
    let ceil_ok = round_trips(&ceil, ceil_lead);
    let pick_ceil = match (floor_ok, ceil_ok) {
        (true, true) => match rest[0].cmp(&b'5') {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal if rest[1..].iter().any(|b| *b != b'0') => true,
            // Exactly half-way: the even digit.
            std::cmp::Ordering::Equal => (floor.as_bytes()[len - 1] - b'0') % 2 == 1,
        },
        (false, true) => true,
        (true, false) => false,
        (false, false) => return fallback,
    };
    let (d, lead) = if pick_ceil {
        (ceil, ceil_lead)
    } else {
        (floor, lead)
    };
    let trimmed = d.trim_end_matches('0');
    (trimmed.to_string(), lead)
}

/// `digits + 1` in the last place; a carry out of the first digit moves the lead exponent.
fn increment(digits: &str, lead: i64) -> (String, i64) {
    let mut bytes = digits.as_bytes().to_vec();
    for b in bytes.iter_mut().rev() {
        if *b == b'9' {
            *b = b'0';
        } else {
            *b += 1;
            return (String::from_utf8(bytes).unwrap_or_default(), lead);
        }
    }
    bytes.insert(0, b'1');
    bytes.pop();
    (String::from_utf8(bytes).unwrap_or_default(), lead + 1)
}

/// The position of the first byte of `bytes[from..]` that a JSON string cannot hold as it
/// is (`"`, `\` or a control character below 0x20), or `bytes.len()`. Eight bytes at a time.
#[inline]
pub fn find_special(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut i = from;
    while i + 8 <= bytes.len() {
        let mut chunk = [0u8; 8];
        chunk.copy_from_slice(&bytes[i..i + 8]);
        let x = u64::from_le_bytes(chunk);
        // A byte is flagged (its high bit set in `hit`) if it is below 0x20 or equals `"` or
        // `\`; the flags are exact from the lowest flagged byte on, which is all we use.
        let below = x.wrapping_sub(ONES * 0x20) & !x;
        let quote = x ^ (ONES * u64::from(b'"'));
        let backslash = x ^ (ONES * u64::from(b'\\'));
        let zero = |v: u64| v.wrapping_sub(ONES) & !v;
        let hit = (below | zero(quote) | zero(backslash)) & HIGHS;
        if hit != 0 {
            return i + (hit.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x20 || b == b'"' || b == b'\\' {
            return i;
        }
        i += 1;
    }
    i
}

/// Append a JSON string literal (rule 9): `"` and `\` escaped, control characters as `\n`,
/// `\r`, `\t`, `\b`, `\f` or `\u00xx`, everything else as raw UTF-8.
pub fn write_str(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    loop {
        let i = find_special(bytes, start);
        out.extend_from_slice(&bytes[start..i]);
        let Some(&b) = bytes.get(i) else {
            break;
        };
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            _ => b"",
        };
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical_number(text: &str) -> String {
        let n: Number = serde_json::from_str(text).unwrap();
        let mut out = Vec::new();
        Num::from_json(&n).unwrap().write(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn numbers() {
        let cases = [
            ("0", "0"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("30", "30"),
            ("30.0", "30"),
            ("3e1", "30"),
            ("1E2", "100"),
            ("-7", "-7"),
            ("0.5", "0.5"),
            ("1.25e-3", "0.00125"),
            ("0.0001", "0.0001"),
            ("0.00001", "1e-05"),
            ("-1.5e-10", "-1.5e-10"),
            ("1e-100", "1e-100"),
            ("0.1", "0.1"),
            ("0.30000000000000004", "0.30000000000000004"),
            ("1234.5678", "1234.5678"),
            ("1e20", "100000000000000000000"),
            ("18446744073709551615", "18446744073709551615"),
            ("18446744073709551616", "18446744073709551616"),
            (
                "-123456789012345678901234567890",
                "-123456789012345678901234567890",
            ),
            ("9007199254740993.0", "9007199254740992"),
            ("4503599627370495.5", "4503599627370495.5"),
        ];
        for (input, want) in cases {
            assert_eq!(canonical_number(input), want, "{input}");
        }
        // An integral double is written as the exact integer it is.
        assert_eq!(canonical_number("1e23"), "99999999999999991611392");
        let big = canonical_number("1.5e300");
        assert_eq!(big.len(), 301);
        assert!(big.starts_with("15000000000000000"), "{big}");
        assert_ne!(big, format!("15{}", "0".repeat(299)));
    }

    #[test]
    fn non_finite_numbers_are_refused() {
        let n: Number = serde_json::from_str("1e400").unwrap();
        assert_eq!(Num::from_json(&n), None);
    }

    #[test]
    fn repr_matches_python() {
        let cases = [
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (0.0001, "0.0001"),
            (123.456, "123.456"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            // Ties between two shortest candidates go to the even digit, as in Python.
            (562949953421312.2, "562949953421312.2"),
            (9.5e-5, "9.5e-05"),
            (0.3, "0.3"),
            (2.0f64.powi(-20), "9.5367431640625e-07"),
        ];
        for (x, want) in cases {
            assert_eq!(python_repr(x), want, "{x}");
        }
    }

    #[test]
    fn strings() {
        let cases = [
            ("plain", "\"plain\""),
            ("q\"b\\", "\"q\\\"b\\\\\""),
            ("a\nb\r\t\u{8}\u{c}", "\"a\\nb\\r\\t\\b\\f\""),
            ("\u{0}\u{1f}\u{7f}", "\"\\u0000\\u001f\u{7f}\""),
            ("/é漢🙂\u{2028}", "\"/é漢🙂\u{2028}\""),
        ];
        for (input, want) in cases {
            let mut out = Vec::new();
            write_str(input, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{input:?}");
        }
    }
}
