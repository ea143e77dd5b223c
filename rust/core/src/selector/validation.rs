//! Label key and value syntax, as `k8s.io/apimachinery/pkg/util/validation` checks it.
//!
//! A key is a qualified name: an optional DNS-1123 subdomain prefix (at most 253 characters)
//! and `/`, then a name of at most 63 characters matching
//! `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`. A value is empty or a name-like string of at
//! most 63 characters.

const NAME_MAX: usize = 63;
const PREFIX_MAX: usize = 253;

const NAME_CHARS: &str = "must consist of alphanumeric characters, '-', '_' or '.', \
                          and must start and end with an alphanumeric character";
const SUBDOMAIN_CHARS: &str = "must be a lowercase RFC 1123 subdomain: lower case \
                               alphanumeric characters, '-' or '.', starting and ending with \
                               an alphanumeric character";

/// Check a label key; the error says what is wrong with it.
pub fn check_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        None => (None, key),
        Some((_, rest)) if rest.contains('/') => {
            return Err(format!(
                "invalid label key {key:?}: a qualified name has at most one '/' \
                 (an optional DNS subdomain prefix, e.g. 'example.com/MyName')"
            ));
        }
        Some((prefix, name)) => (Some(prefix), name),
    };
    let problem = if let Some(prefix) = prefix.and_then(check_prefix) {
        Some(prefix)
    } else if name.is_empty() {
        Some("name part must be non-empty".to_string())
    } else if name.len() > NAME_MAX {
        Some(format!(
            "name part must be no more than {NAME_MAX} characters"
        ))
    } else if !is_name(name) {
        Some(format!("name part {NAME_CHARS}"))
    } else {
        None
    };
    match problem {
        Some(p) => Err(format!("invalid label key {key:?}: {p}")),
        None => Ok(()),
    }
}

/// Check a label value; the error says what is wrong with it.
pub fn check_value(value: &str) -> Result<(), String> {
    if value.len() > NAME_MAX {
        return Err(format!(
            "invalid label value {value:?}: must be no more than {NAME_MAX} characters"
        ));
    }
    if !value.is_empty() && !is_name(value) {
        return Err(format!(
            "invalid label value {value:?}: must be empty or {}",
            &NAME_CHARS[5..]
        ));
    }
    Ok(())
}

fn check_prefix(prefix: &str) -> Option<String> {
    if prefix.is_empty() {
        Some("prefix part must be non-empty".to_string())
    } else if prefix.len() > PREFIX_MAX {
        Some(format!(
            "prefix part must be no more than {PREFIX_MAX} characters"
        ))
    } else if !prefix.split('.').all(is_dns_label) {
        Some(format!("prefix part {SUBDOMAIN_CHARS}"))
    } else {
        None
    }
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => ok(first) && ok(last) && b.iter().all(|c| ok(c) || *c == b'-'),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        let long_name = "a".repeat(63);
        let too_long_name = "a".repeat(64);
        let long_prefix = format!("{}com/x", "a.".repeat(125)); // a 253-character prefix
        let too_long_prefix = format!("{}com/x", "a.".repeat(126));
        let valid = [
            "app",
            "a",
            "A9",
            "app.kubernetes.io/name",
            "example.com/My_Name-1.x",
            "k8s.io/a",
            "1-2.3/x",
            long_name.as_str(),
            long_prefix.as_str(),
        ];
        for key in valid {
            assert_eq!(check_key(key), Ok(()), "{key}");
        }
        let invalid = [
            ("", "name part must be non-empty"),
            ("/a", "prefix part must be non-empty"),
            ("a/", "name part must be non-empty"),
            ("a/b/c", "at most one '/'"),
            ("-a", "name part must consist"),
            ("a-", "name part must consist"),
            ("a b", "name part must consist"),
            ("ä", "name part must consist"),
            ("Example.com/a", "prefix part must be a lowercase"),
            ("ex_ample.com/a", "prefix part must be a lowercase"),
            ("example..com/a", "prefix part must be a lowercase"),
            ("-example.com/a", "prefix part must be a lowercase"),
            (too_long_name.as_str(), "no more than 63"),
            (too_long_prefix.as_str(), "no more than 253"),
        ];
        for (key, msg) in invalid {
            let err = check_key(key).unwrap_err();
            assert!(err.contains(msg), "{key:?}: {err}");
        }
    }

    #[test]
    fn values() {
        for value in ["", "v", "v1.2-beta_3", "A", &"x".repeat(63)] {
            assert_eq!(check_value(value), Ok(()), "{value}");
        }
        for value in ["-v", "v-", "a/b", "a b", "é", &"x".repeat(64), "_"] {
            assert!(check_value(value).is_err(), "{value}");
        }
    }
}
