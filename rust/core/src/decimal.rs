//! A small exact decimal: `±digits × 10^exp` with arbitrarily many digits.
//!
//! Just what the canonical form needs and no more: building from decimal text and from an
//! `f64` (exactly), multiplying by small integers (binary quantity suffixes), rounding away
//! from zero to a number of fractional digits, exact comparison, and writing the plain decimal
//! form. Used by `quantity` (values) and `canonical` (numbers and map-list keys).

use std::cmp::Ordering;

/// `(-1)^neg × digits × 10^exp`. `digits` are decimal digit values (0..=9), most significant
/// first, with no leading or trailing zeros; zero is the empty digit string and never negative.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decimal {
    neg: bool,
    digits: Vec<u8>,
    exp: i64,
}

impl Decimal {
    /// Zero.
    pub fn zero() -> Self {
        Decimal {
            neg: false,
            digits: Vec::new(),
            exp: 0,
        }
    }

    /// From ASCII decimal digits: `int_digits.frac_digits × 10^exp10`, negative if `neg`.
    /// The caller has checked that both strings hold only ASCII digits.
    pub fn from_digits(neg: bool, int_digits: &str, frac_digits: &str, exp10: i64) -> Self {
        let digits = int_digits
            .bytes()
            .chain(frac_digits.bytes())
            .map(|b| b - b'0')
            .collect();
        let exp = exp10 - frac_digits.len() as i64;
        Decimal { neg, digits, exp }.normalized()
    }

    /// Parse JSON number text (`-12.5e-3`): optional `-`, digits, optional `.digits`,
    /// optional `e`/`E` with optional sign and digits. `None` if it is not one.
    pub fn parse_json_number(text: &str) -> Option<Self> {
        let (neg, rest) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if int.is_empty() || !all_digits(int) || !all_digits(frac) {
            return None;
        }
        let exp10 = match exp {
            None => 0,
            Some(e) => {
                let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
                if digits.is_empty() || !all_digits(digits) {
                    return None;
                }
                e.parse::<i64>().ok()?
            }
        };
        Some(Decimal::from_digits(neg, int, frac, exp10))
    }

    /// The exact value of a finite `f64` (`None` for NaN and infinities).
    pub fn from_f64(x: f64) -> Option<Self> {
        if !x.is_finite() {
            return None;
        }
        let bits = x.to_bits();
        let neg = bits >> 63 == 1;
        let biased = ((bits >> 52) & 0x7ff) as i64;
        let fraction = bits & ((1u64 << 52) - 1);
        let (mantissa, exp2) = if biased == 0 {
            (fraction, -1074)
        } else {
            (fraction | (1u64 << 52), biased - 1075)
        };
        let mut d = Decimal {
            neg,
            digits: mantissa.to_string().bytes().map(|b| b - b'0').collect(),
            exp: 0,
        };
        if exp2 >= 0 {
            d.mul_pow(2, exp2 as u32);
        } else {
            // m × 2^-k = m × 5^k × 10^-k
            d.mul_pow(5, (-exp2) as u32);
            d.exp += exp2;
        }
        Some(d.normalized())
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Whether the value is an integer.
    pub fn is_integer(&self) -> bool {
        self.exp >= 0
    }

    /// The exponent of the least significant digit, if not zero (`1.5e3` → 2: `15 × 10^2`).
    pub fn exponent(&self) -> i64 {
        self.exp
    }

    /// The significant digits (ASCII, no leading or trailing zeros; empty for zero) and the
    /// exponent of the last one: the value is `±digits × 10^exp`.
    pub fn digits(&self) -> (String, i64) {
        let digits = self.digits.iter().map(|d| char::from(b'0' + d)).collect();
        (digits, self.exp)
    }

    /// Multiply by a small factor (`factor > 0`).
    pub fn mul_small(&mut self, factor: u32) {
        if self.is_zero() {
            return;
        }
        let mut carry: u64 = 0;
        for d in self.digits.iter_mut().rev() {
            let v = u64::from(*d) * u64::from(factor) + carry;
            *d = (v % 10) as u8;
            carry = v / 10;
        }
        let mut head = Vec::new();
        while carry > 0 {
            head.push((carry % 10) as u8);
            carry /= 10;
        }
        if !head.is_empty() {
            head.reverse();
            head.extend_from_slice(&self.digits);
            self.digits = head;
        }
        self.normalize();
    }

    /// Multiply by `base^power` (`base` 2 or 5), in chunks that fit a `u32`.
    fn mul_pow(&mut self, base: u32, mut power: u32) {
        let chunk = if base == 2 { 31 } else { 13 };
        while power > 0 {
            let step = power.min(chunk);
            self.mul_small(base.pow(step));
            power -= step;
        }
    }

    /// Multiply by `10^power`.
    pub fn shift(&mut self, power: i64) {
        if !self.is_zero() {
            self.exp += power;
        }
    }

    /// Round to at most `scale` fractional digits, away from zero.
    pub fn round_away(&mut self, scale: u32) {
        let min_exp = -i64::from(scale);
        if self.exp >= min_exp {
            return;
        }
        let drop = (min_exp - self.exp) as usize;
        let inexact = if drop >= self.digits.len() {
            let any = !self.digits.is_empty();
            self.digits.clear();
            any
        } else {
            let keep = self.digits.len() - drop;
            // Digits are normalized: the last one is non-zero, so dropping any is inexact.
            self.digits.truncate(keep);
            true
        };
        self.exp = min_exp;
        if inexact {
            self.increment_last();
        }
        self.normalize();
    }

    /// Add one unit in the last place (magnitude), carrying as needed.
    fn increment_last(&mut self) {
        for d in self.digits.iter_mut().rev() {
            if *d == 9 {
                *d = 0;
            } else {
                *d += 1;
                return;
            }
        }
        self.digits.insert(0, 1);
    }

    fn normalized(mut self) -> Self {
        self.normalize();
        self
    }

    fn normalize(&mut self) {
        let lead = self.digits.iter().take_while(|d| **d == 0).count();
        self.digits.drain(..lead);
        while self.digits.last() == Some(&0) {
            self.digits.pop();
            self.exp += 1;
        }
        if self.digits.is_empty() {
            self.neg = false;
            self.exp = 0;
        }
    }

    /// The plain decimal form: no exponent, no `+`, no leading zeros, no trailing fractional
    /// zeros, `0` for zero.
    pub fn to_plain(&self) -> String {
        if self.is_zero() {
            return "0".to_string();
        }
        let mut s = String::with_capacity(self.digits.len() + 4);
        if self.neg {
            s.push('-');
        }
        let digit = |d: &u8| char::from(b'0' + d);
        if self.exp >= 0 {
            s.extend(self.digits.iter().map(digit));
            s.push_str(&"0".repeat(self.exp as usize));
        } else {
            let frac = (-self.exp) as usize;
            if frac >= self.digits.len() {
                s.push_str("0.");
                s.push_str(&"0".repeat(frac - self.digits.len()));
                s.extend(self.digits.iter().map(digit));
            } else {
                let int_len = self.digits.len() - frac;
                s.extend(self.digits[..int_len].iter().map(digit));
                s.push('.');
                s.extend(self.digits[int_len..].iter().map(digit));
            }
        }
        s
    }

    /// Compare magnitudes.
    fn cmp_abs(&self, other: &Self) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            (false, false) => {}
        }
        // Position of the most significant digit.
        let top_a = self.exp + self.digits.len() as i64;
        let top_b = other.exp + other.digits.len() as i64;
        if top_a != top_b {
            return top_a.cmp(&top_b);
        }
        // Same magnitude: compare digit by digit, the shorter padded with zeros.
        let n = self.digits.len().max(other.digits.len());
        for i in 0..n {
            let a = self.digits.get(i).copied().unwrap_or(0);
            let b = other.digits.get(i).copied().unwrap_or(0);
            if a != b {
                return a.cmp(&b);
            }
        }
        Ordering::Equal
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.neg, other.neg) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_abs(other),
            (true, true) => other.cmp_abs(self),
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Decimal {
        let (neg, s) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        Decimal::from_digits(neg, int, frac, 0)
    }

    #[test]
    fn plain_form() {
        let cases = [
            ("0", "0"),
            ("-0", "0"),
            ("000", "0"),
            ("0.000", "0"),
            ("007", "7"),
            ("1.500", "1.5"),
            ("-0.25", "-0.25"),
            ("120", "120"),
            ("0.001", "0.001"),
            ("12345678901234567890123", "12345678901234567890123"),
        ];
        for (input, want) in cases {
            assert_eq!(dec(input).to_plain(), want, "{input}");
        }
    }

    #[test]
    fn shift_and_mul() {
        let mut d = dec("1.5");
        d.shift(3);
        assert_eq!(d.to_plain(), "1500");
        d.shift(-6);
        assert_eq!(d.to_plain(), "0.0015");
        let mut d = dec("1");
        for _ in 0..3 {
            d.mul_small(1024);
        }
        assert_eq!(d.to_plain(), "1073741824");
        let mut z = Decimal::zero();
        z.mul_small(7);
        assert_eq!(z.to_plain(), "0");
    }

    #[test]
    fn rounding_away_from_zero() {
        let cases = [
            ("0.1234567891", 9, "0.123456790"),
            ("0.0000000001", 9, "0.000000001"),
            ("-0.0000000001", 9, "-0.000000001"),
            ("0.999999999999", 9, "1"),
            ("1.5", 0, "2"),
            ("-1.5", 0, "-2"),
            ("1.123", 9, "1.123"),
            ("0.0000000015", 9, "0.000000002"),
        ];
        for (input, scale, want) in cases {
            let mut d = dec(input);
            d.round_away(scale);
            let mut expected = dec(want);
            expected.normalize();
            assert_eq!(d, expected, "{input}");
        }
    }

    #[test]
    fn exact_f64() {
        let cases = [
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (0.5, "0.5"),
            (-2.25, "-2.25"),
            (
                0.1,
                "0.1000000000000000055511151231257827021181583404541015625",
            ),
            (1e20, "100000000000000000000"),
            (9007199254740993.0, "9007199254740992"),
        ];
        for (x, want) in cases {
            assert_eq!(Decimal::from_f64(x).unwrap().to_plain(), want, "{x}");
        }
        let tiny = Decimal::from_f64(5e-324).unwrap().to_plain();
        assert_eq!(tiny.len(), 2 + 1074);
        assert!(tiny.starts_with(&format!("0.{}4940656458412465441765", "0".repeat(323))));
        assert!(Decimal::from_f64(f64::NAN).is_none());
        assert!(Decimal::from_f64(f64::INFINITY).is_none());
        let big = Decimal::from_f64(1e300).unwrap();
        assert!(big.is_integer());
        assert_eq!(big.to_plain().len(), 301);
    }

    #[test]
    fn json_number_text() {
        let cases = [
            ("0", Some("0")),
            ("-0", Some("0")),
            ("12", Some("12")),
            ("-12.50", Some("-12.5")),
            ("1e-7", Some("0.0000001")),
            ("1.5E+3", Some("1500")),
            ("25e-1", Some("2.5")),
            ("", None),
            ("-", None),
            (".5", None),
            ("1e", None),
            ("1x", None),
            ("1.2.3", None),
        ];
        for (input, want) in cases {
            let got = Decimal::parse_json_number(input).map(|d| d.to_plain());
            assert_eq!(got.as_deref(), want, "{input}");
        }
    }

    #[test]
    fn ordering() {
        let sorted = [
            "-100", "-1.5", "-1", "0", "0.001", "1", "1.25", "2", "10", "1e3",
        ];
        let values: Vec<Decimal> = sorted
            .iter()
            .map(|s| {
                if let Some(rest) = s.strip_suffix("e3") {
                    let mut d = dec(rest);
                    d.shift(3);
                    d
                } else {
                    dec(s)
                }
            })
            .collect();
        for i in 0..values.len() {
            for j in 0..values.len() {
                assert_eq!(
                    values[i].cmp(&values[j]),
                    i.cmp(&j),
                    "{} vs {}",
                    sorted[i],
                    sorted[j]
                );
            }
        }
        assert_eq!(dec("1.0").cmp(&dec("1")), Ordering::Equal);
    }
}
