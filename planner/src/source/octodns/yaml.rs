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

/// What PyYAML (YAML 1.1, octoDNS's loader) reads a plain scalar as when it is not a
/// string, in Python's `str()` of it: `yes` is `True`, `010` is `8`, `1.10` is `1.1`,
/// `~` is `None`. `None` when PyYAML reads the text as the string it is. A name or a
/// TXT value PyYAML reads otherwise means something else to octoDNS (or breaks it),
/// so the parser asks for it to be quoted.
pub(super) fn pyyaml_non_string(s: &MarkedScalarNode) -> Option<String> {
    if !s.may_coerce() {
        return None;
    }
    let t = s.as_str();
    match t {
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Some("True".into());
        }
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Some("False".into());
        }
        "" | "~" | "null" | "Null" | "NULL" => return Some("None".into()),
        _ => {}
    }
    let body = t.strip_prefix(['-', '+']).unwrap_or(t);
    let digits =
        |s: &str, ok: fn(u8) -> bool| !s.is_empty() && s.bytes().all(|b| ok(b) || b == b'_');
    let int = body == "0"
        || body
            .strip_prefix("0b")
            .is_some_and(|r| digits(r, |b| matches!(b, b'0' | b'1')))
        || body
            .strip_prefix("0x")
            .is_some_and(|r| digits(r, |b| b.is_ascii_hexdigit()))
        || body
            .strip_prefix('0')
            .is_some_and(|r| digits(r, |b| matches!(b, b'0'..=b'7')))
        || (body
            .as_bytes()
            .first()
            .is_some_and(|b| matches!(b, b'1'..=b'9'))
            && body.split(':').all(|p| digits(p, |b| b.is_ascii_digit())));
    if int {
        // A plain decimal reads back as itself; any other spelling does not.
        let plain = (body == "0" || !body.starts_with('0'))
            && body.bytes().all(|b| b.is_ascii_digit())
            && !t.starts_with(['+', '-']);
        return Some(if plain {
            t.to_string()
        } else {
            format!("{t} (a number)")
        });
    }
    let float = {
        let (mantissa, exponent) = match body.find(['e', 'E']) {
            Some(at) => (&body[..at], Some(&body[at + 1..])),
            None => (body, None),
        };
        let exponent_ok = exponent.is_none_or(|e| {
            e.strip_prefix(['-', '+'])
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        });
        let dotted = mantissa.split_once('.').is_some_and(|(whole, frac)| {
            (whole.is_empty() && frac.as_bytes().first().is_some_and(u8::is_ascii_digit)
                || digits(whole, |b| b.is_ascii_digit()) && whole.as_bytes()[0].is_ascii_digit())
                && frac.bytes().all(|b| b.is_ascii_digit() || b == b'_')
        });
        (exponent_ok && dotted)
            || matches!(body, ".inf" | ".Inf" | ".INF" | ".nan" | ".NaN" | ".NAN")
    };
    if float {
        // Python writes a float back in its shortest form: `1.50` is `1.5`.
        let shortest = t.replace('_', "").parse::<f64>().ok().map(|f| {
            let s = format!("{f:?}");
            if s.contains('e') { String::new() } else { s }
        });
        return Some(match shortest {
            Some(s) if s == t => s,
            _ => format!("{t} (a number)"),
        });
    }
    None
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
    use super::{natural_cmp, pyyaml_non_string};
    use marked_yaml::types::MarkedScalarNode;

    #[test]
    fn plain_scalars_pyyaml_reads_as_something_else() {
        let plain = |t: &str| {
            let mut n = MarkedScalarNode::from(t);
            n.set_coerce(true);
            pyyaml_non_string(&n)
        };
        for same in ["2", "12", "0", "1.5", "10.0"] {
            assert_eq!(plain(same).as_deref(), Some(same), "{same}");
        }
        for other in [
            "yes", "No", "on", "~", "010", "0x1f", "1_000", "+5", "1:30", "1.10", "1.0e+5", ".inf",
        ] {
            let read = plain(other).unwrap_or_default();
            assert!(!read.is_empty() && read != other, "{other}: {read}");
        }
        for string in [
            "www",
            "1.2.3",
            "a1",
            "1a",
            "y",
            "n",
            "-",
            "e5",
            "2001:db8::1",
        ] {
            assert_eq!(plain(string), None, "{string}");
        }
        let mut quoted = MarkedScalarNode::from("yes");
        quoted.set_coerce(false);
        assert_eq!(pyyaml_non_string(&quoted), None);
    }

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
