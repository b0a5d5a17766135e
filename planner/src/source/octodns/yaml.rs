//! The YAML details octoDNS's loader (PyYAML's safe loader) decides: what is null,
//! and the "natural" key order its YamlProvider enforces by default
//! (`enforce_order: true`, `order_mode: natural`, i.e. natsort's default key).
use marked_yaml::types::{MarkedScalarNode, Node};
use std::cmp::Ordering;

/// True for a plain (unquoted) null: empty, `~` or `null` (PyYAML reads these as
/// `None`; a quoted `''` is the empty string).
pub(super) fn is_null(s: &MarkedScalarNode) -> bool {
    s.may_coerce() && matches!(s.as_str().trim(), "" | "~" | "null" | "Null" | "NULL")
}

/// A scalar that is not null, as text.
pub(super) fn scalar_text(node: &Node) -> Option<&str> {
    node.as_scalar().filter(|s| !is_null(s)).map(|s| s.as_str())
}

/// One part of a natural sort key: a run of non-digits or of digits.
#[derive(Debug, PartialEq, Eq)]
enum Part<'a> {
    Text(&'a str),
    /// Digits without their leading zeros (compared as a number of any size).
    Number(&'a str),
}

/// natsort's default key: the text cut into runs of digits (compared as numbers)
/// and of other characters (compared as text), a digit-first text starting with an
/// empty text part, so that `www2` comes before `www10`.
fn key(s: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let bytes = s.as_bytes();
    if bytes.first().is_some_and(u8::is_ascii_digit) {
        parts.push(Part::Text(""));
    }
    let mut start = 0;
    while start < bytes.len() {
        let digit = bytes[start].is_ascii_digit();
        let end = bytes[start..]
            .iter()
            .position(|b| b.is_ascii_digit() != digit)
            .map_or(bytes.len(), |n| start + n);
        let run = &s[start..end];
        parts.push(if digit {
            Part::Number(run.trim_start_matches('0'))
        } else {
            Part::Text(run)
        });
        start = end;
    }
    parts
}

/// Compares two keys as octoDNS's natural order does.
pub(crate) fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (ka, kb) = (key(a), key(b));
    for (x, y) in ka.iter().zip(kb.iter()) {
        let o = match (x, y) {
            (Part::Text(x), Part::Text(y)) => x.cmp(y),
            (Part::Number(x), Part::Number(y)) => x.len().cmp(&y.len()).then_with(|| x.cmp(y)),
            // Parts alternate from an initial text part, so kinds always match.
            (Part::Text(_), Part::Number(_)) => Ordering::Less,
            (Part::Number(_), Part::Text(_)) => Ordering::Greater,
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    ka.len().cmp(&kb.len())
}

#[cfg(test)]
mod tests {
    use super::natural_cmp;

    #[test]
    fn natural_order_is_natsorts() {
        let mut keys = vec![
            "www10",
            "www2",
            "",
            "_srv._tcp",
            "*",
            "12",
            "2",
            "a",
            "a01b",
            "a1",
            "test",
        ];
        keys.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            keys,
            vec![
                "",
                "2",
                "12",
                "*",
                "_srv._tcp",
                "a",
                "a1",
                "a01b",
                "test",
                "www2",
                "www10"
            ]
        );
    }
}
