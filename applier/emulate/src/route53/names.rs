//! DNS names as Route 53 keeps them: lower case, with a trailing dot, and every byte
//! other than `a-z`, `0-9`, `-` and `_` written as a three-digit octal escape — so
//! `*.Example.com` is stored and returned as `\052.example.com.` ("DNS domain name
//! format" in the Route 53 developer guide). Input may use the escapes or the raw
//! characters.
//!
//! Listing order is AWS's documented one: the name with its labels reversed, trailing
//! dot included (`www.example.com.` sorts as `com.example.www.`), compared as ASCII
//! on the stored (escaped) form, as the ListHostedZonesByName reference says Route 53
//! does with escaped names.

/// A name that failed to parse, in Route 53's `FATAL problem` words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NameProblem {
    /// e.g. `DomainLabelEmpty (Domain label is empty)`
    pub what: String,
}

impl NameProblem {
    /// `FATAL problem: DomainLabelEmpty (Domain label is empty) encountered with 'x'`
    pub fn message(&self, input: &str) -> String {
        format!("FATAL problem: {} encountered with '{input}'", self.what)
    }
}

/// Parses a name into its stored form. An empty name, or ".", is the root ".".
pub(crate) fn parse_name(input: &str) -> Result<String, NameProblem> {
    if input.is_empty() || input == "." {
        return Ok(".".to_string());
    }
    let bytes = input.as_bytes();
    let mut labels: Vec<Vec<u8>> = vec![Vec::new()];
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\\' {
            let digits = bytes.get(i + 1..i + 4);
            if let Some(d) = digits.filter(|d| d.iter().all(u8::is_ascii_digit)) {
                let v = u32::from(d[0] - b'0') * 64
                    + u32::from(d[1] - b'0') * 8
                    + u32::from(d[2] - b'0');
                if d.iter().any(|c| *c > b'7') || v > 255 {
                    return Err(NameProblem {
                        what: "InvalidEscape (Escape sequence is not a valid octal code)".into(),
                    });
                }
                labels.last_mut().expect("one label").push(v as u8);
                i += 4;
                continue;
            }
            match bytes.get(i + 1) {
                Some(next) => {
                    labels.last_mut().expect("one label").push(*next);
                    i += 2;
                    continue;
                }
                None => {
                    return Err(NameProblem {
                        what: "InvalidEscape (Escape sequence is not a valid octal code)".into(),
                    });
                }
            }
        }
        if b == b'.' {
            labels.push(Vec::new());
        } else {
            labels.last_mut().expect("one label").push(b);
        }
        i += 1;
    }
    // One trailing dot is optional; "" and "." are the root.
    if labels.last().is_some_and(Vec::is_empty) {
        labels.pop();
    }
    if labels.iter().any(Vec::is_empty) {
        return Err(NameProblem {
            what: "DomainLabelEmpty (Domain label is empty)".into(),
        });
    }
    if labels.iter().any(|l| l.len() > 63) {
        return Err(NameProblem {
            what: "DomainLabelTooLong (Domain label is longer than 63 characters)".into(),
        });
    }
    let wire: usize = labels.iter().map(|l| l.len() + 1).sum::<usize>() + 1;
    if wire > 255 {
        return Err(NameProblem {
            what: "DomainNameTooLong (Domain name is longer than 255 characters)".into(),
        });
    }
    if labels.is_empty() {
        return Ok(".".to_string());
    }
    let mut out = String::new();
    for l in &labels {
        for &b in l {
            let b = b.to_ascii_lowercase();
            if b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_' {
                out.push(b as char);
            } else {
                out.push_str(&format!("\\{b:03o}"));
            }
        }
        out.push('.');
    }
    Ok(out)
}

/// The sort key of a stored name: labels reversed, trailing dot kept.
pub(crate) fn sort_key(stored: &str) -> String {
    if stored == "." {
        return ".".to_string();
    }
    let mut labels: Vec<&str> = stored.trim_end_matches('.').split('.').collect();
    labels.reverse();
    let mut out = labels.join(".");
    out.push('.');
    out
}

/// The stored name back from a sort key (the reversal is its own inverse).
pub(crate) fn from_sort_key(key: &str) -> String {
    sort_key(key)
}

/// Whether stored name `name` is `zone` or below it.
pub(crate) fn is_within(name: &str, zone: &str) -> bool {
    name == zone
        || zone == "."
        || (name.len() > zone.len() && name.ends_with(zone) && {
            let cut = name.len() - zone.len();
            name.as_bytes()[cut - 1] == b'.'
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_form() {
        assert_eq!(parse_name("WWW.Example.COM").unwrap(), "www.example.com.");
        assert_eq!(parse_name("www.example.com.").unwrap(), "www.example.com.");
        assert_eq!(parse_name("*.example.com").unwrap(), "\\052.example.com.");
        assert_eq!(
            parse_name("\\052.example.com").unwrap(),
            "\\052.example.com."
        );
        assert_eq!(
            parse_name("_dmarc.a-b.example.com").unwrap(),
            "_dmarc.a-b.example.com."
        );
        assert_eq!(parse_name("@.example.com").unwrap(), "\\100.example.com.");
        assert_eq!(parse_name("").unwrap(), ".");
        assert_eq!(parse_name(".").unwrap(), ".");
    }

    #[test]
    fn problems() {
        let p = parse_name(".sub.example.com").unwrap_err();
        assert_eq!(
            p.message(".sub.example.com"),
            "FATAL problem: DomainLabelEmpty (Domain label is empty) encountered with '.sub.example.com'"
        );
        assert!(parse_name("a..b").is_err());
        assert!(parse_name("a.b..").is_err());
        assert!(parse_name(&format!("{}.com", "a".repeat(64))).is_err());
        assert!(parse_name(&format!("{}.com", "a".repeat(63))).is_ok());
        assert!(parse_name("\\999.com").is_err());
    }

    #[test]
    fn order_is_labels_reversed() {
        assert_eq!(sort_key("www.example.com."), "com.example.www.");
        assert_eq!(from_sort_key("com.example.www."), "www.example.com.");
        let mut names = vec![
            "b.a.example.com.",
            "a.example.com.",
            "a-b.example.com.",
            "example.com.",
            "\\052.example.com.",
            "z.example.com.",
            "0.example.com.",
        ];
        names.sort_by_key(|n| sort_key(n));
        assert_eq!(
            names,
            vec![
                "example.com.",
                "0.example.com.",
                "\\052.example.com.",
                "a-b.example.com.",
                "a.example.com.",
                "b.a.example.com.",
                "z.example.com.",
            ]
        );
    }

    #[test]
    fn within() {
        assert!(is_within("example.com.", "example.com."));
        assert!(is_within("a.example.com.", "example.com."));
        assert!(!is_within("aexample.com.", "example.com."));
        assert!(!is_within("example.org.", "example.com."));
        assert!(!is_within(".", "example.com."));
    }
}
