//! Map-list key tuples (docs/hashing.md, map lists): one part per key field, as the
//! element's canonical form has it, ordered numbers (by value) before strings (by UTF-8
//! bytes).

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::decimal::Decimal;
use crate::json::{self, Num};

/// One component of a map-list key tuple.
#[derive(Clone, Debug)]
pub(crate) enum KeyPart<'a> {
    /// A number that is an `i64` (the common case, no heap decimal).
    Int(i64),
    /// Any other number: its value and canonical text.
    Num(Decimal, String),
    Str(Cow<'a, str>),
}

impl KeyPart<'_> {
    /// A number, by its canonical text.
    pub(crate) fn num(num: &Num) -> Self {
        let text = num.canonical();
        let value = Decimal::parse_json_number(&text).unwrap_or_else(Decimal::zero);
        KeyPart::Num(value, text)
    }

    fn decimal(&self) -> Cow<'_, Decimal> {
        match self {
            KeyPart::Int(n) => Cow::Owned(Decimal::from_digits(
                *n < 0,
                &n.unsigned_abs().to_string(),
                "",
                0,
            )),
            KeyPart::Num(d, _) => Cow::Borrowed(d),
            KeyPart::Str(_) => Cow::Owned(Decimal::zero()),
        }
    }

    /// As shown in a duplicate-key error: the canonical JSON of the value.
    pub(crate) fn render(&self) -> String {
        match self {
            KeyPart::Int(n) => n.to_string(),
            KeyPart::Num(_, text) => text.clone(),
            KeyPart::Str(s) => {
                let mut out = Vec::new();
                json::write_str(s, &mut out);
                String::from_utf8_lossy(&out).into_owned()
            }
        }
    }
}

impl Ord for KeyPart<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (KeyPart::Int(a), KeyPart::Int(b)) => a.cmp(b),
            (KeyPart::Str(a), KeyPart::Str(b)) => a.as_bytes().cmp(b.as_bytes()),
            (KeyPart::Str(_), _) => Ordering::Greater,
            (_, KeyPart::Str(_)) => Ordering::Less,
            _ => self.decimal().cmp(&other.decimal()),
        }
    }
}

impl PartialOrd for KeyPart<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for KeyPart<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for KeyPart<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_before_strings_by_value() {
        let five = KeyPart::num(&Num::Float(5.0));
        assert_eq!(KeyPart::Int(5), five);
        assert!(KeyPart::Int(-3) < KeyPart::num(&Num::Float(0.5)));
        assert!(KeyPart::Int(i64::MAX) < KeyPart::Str(Cow::Borrowed("")));
        assert_eq!(KeyPart::Str(Cow::Borrowed("a\"")).render(), "\"a\\\"\"");
    }
}
