//! Canonical JSON scalars: how strings and numbers are written (docs/hashing.md, rules 8-9).
//!
//! Numbers follow the data model of Python's `json` module, which the pure-Python reference
//! uses: a literal without `.`/`e`/`E` is an exact integer of any size; any other literal is
//! an IEEE double, written from its shortest round-trip digits: an integral double as an
//! integer (the digits padded with zeros: `30.0` → `30`, `1e21` → `1000000000000000000000`),
//! any other in ryu's layout (as serde_json writes it): plain decimal when
//! `1e-5 <= |x| < 1e16`, else `d.ddde-X` (`1e-7`, `-1.5e-10`).

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

    /// The canonical text (rule 8).
    pub fn canonical(&self) -> String {
        match self {
            Num::Int(d) => d.to_plain(),
            Num::Float(x) => shortest(*x),
        }
    }

    /// The exact value of the canonical text (what map-list keys are compared by).
    pub fn canonical_value(&self) -> Decimal {
        match self {
            Num::Int(d) => d.clone(),
            Num::Float(x) => {
                let (digits, exp) = shortest_digits(x.abs());
                let last = exp + 1 - digits.len() as i64;
                Decimal::from_digits(x.is_sign_negative(), &digits, "", last)
            }
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

/// The shortest round-trip digits of a finite, non-negative double, without trailing zeros,
/// and the exponent of the first one: `x = d.ddd × 10^exp`.
fn shortest_digits(x: f64) -> (String, i64) {
    // Rust's `{:e}` writes the shortest round-trip digits: `1.2345e-7`.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    (digits.to_string(), exp.parse().unwrap_or(0))
}

/// A finite double written per rule 8 (see the module docs).
pub fn shortest(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    let (digits, exp) = shortest_digits(x.abs());
    let sign = if x < 0.0 { "-" } else { "" };
    let n = digits.len() as i64;
    let point = exp + 1; // x = 0.DIGITS × 10^point
    if x.fract() == 0.0 {
        format!("{sign}{digits}{}", "0".repeat((point - n).max(0) as usize))
    } else if 0 < point && point <= 16 {
        let (int, frac) = digits.split_at(point.min(n) as usize);
        format!("{sign}{int}.{frac}")
    } else if -5 < point && point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
    } else {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        format!("{sign}{first}{dot}{rest}e{}", point - 1)
    }
}

/// Append a JSON string literal (rule 9): `"` and `\` escaped, control characters as `\n`,
/// `\r`, `\t`, `\b`, `\f` or `\u00xx`, everything else as raw UTF-8.
pub fn write_str(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
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
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(text: &str) -> Num {
        let n: Number = serde_json::from_str(text).unwrap();
        Num::from_json(&n).unwrap()
    }

    #[test]
    fn numbers() {
        let zeros = |n| "0".repeat(n);
        let cases = [
            ("0", "0".to_string()),
            ("-0", "0".into()),
            ("-0.0", "0".into()),
            ("30", "30".into()),
            ("30.0", "30".into()),
            ("3e1", "30".into()),
            ("1E2", "100".into()),
            ("-7", "-7".into()),
            ("0.5", "0.5".into()),
            ("1.25e-3", "0.00125".into()),
            ("0.0001", "0.0001".into()),
            ("0.00001", "0.00001".into()),
            ("0.000001", "1e-6".into()),
            ("1e-7", "1e-7".into()),
            ("-1.5e-10", "-1.5e-10".into()),
            ("1e-100", "1e-100".into()),
            ("0.1", "0.1".into()),
            ("0.30000000000000004", "0.30000000000000004".into()),
            ("1234.5678", "1234.5678".into()),
            ("-2.5", "-2.5".into()),
            ("123456789012345.67", "123456789012345.67".into()),
            ("4503599627370495.5", "4503599627370495.5".into()),
            ("1e20", format!("1{}", zeros(20))),
            ("1e21", format!("1{}", zeros(21))),
            ("1.5e300", format!("15{}", zeros(299))),
            ("9007199254740993.0", "9007199254740992".into()),
            ("18446744073709551615", "18446744073709551615".into()),
            ("18446744073709551616", "18446744073709551616".into()),
            (
                "-123456789012345678901234567890",
                "-123456789012345678901234567890".into(),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(num(input).canonical(), want, "{input}");
        }
    }

    #[test]
    fn canonical_values() {
        let cases = [
            ("1e-7", "0.0000001"),
            ("80", "80"),
            ("80.0", "80"),
            ("-2.5e3", "-2500"),
            ("0.1", "0.1"),
            ("1e21", "1000000000000000000000"),
        ];
        for (input, want) in cases {
            assert_eq!(num(input).canonical_value().to_plain(), want, "{input}");
        }
    }

    #[test]
    fn non_finite_numbers_are_refused() {
        let n: Number = serde_json::from_str("1e400").unwrap();
        assert_eq!(Num::from_json(&n), None);
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
