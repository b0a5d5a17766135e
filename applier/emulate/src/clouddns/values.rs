//! What Cloud DNS accepts as a record set's name, type, TTL and rrdatas. Names are
//! absolute (a trailing dot is required) and kept in lower case; rrdatas are kept as
//! given and compared literally (as a set) by a deletion, so a client must delete
//! with the spelling the zone holds.
use std::net::{Ipv4Addr, Ipv6Addr};

/// The record types Cloud DNS serves (its `type` values).
pub(crate) const RR_TYPES: &[&str] = &[
    "A", "AAAA", "ALIAS", "CAA", "CNAME", "DNSKEY", "DS", "HTTPS", "IPSECKEY", "MX", "NAPTR", "NS",
    "PTR", "SOA", "SPF", "SRV", "SSHFP", "SVCB", "TLSA", "TXT",
];

/// A record name in stored form (lower case, trailing dot), or `None` when Cloud DNS
/// would refuse it: no trailing dot, an empty or over-long label, a name over 253
/// characters, or a character outside letters, digits, `-`, `_` and a leading `*`.
pub(crate) fn parse_name(input: &str) -> Option<String> {
    let name = input.strip_suffix('.')?;
    if name.is_empty() {
        return Some(".".into());
    }
    if input.len() > 254 {
        return None;
    }
    let labels: Vec<&str> = name.split('.').collect();
    for (i, l) in labels.iter().enumerate() {
        if l.is_empty() || l.len() > 63 {
            return None;
        }
        if *l == "*" && i == 0 {
            continue;
        }
        if !l
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return None;
        }
    }
    Some(input.to_ascii_lowercase())
}

/// Whether `name` (stored form) is `zone` or below it.
pub(crate) fn within(name: &str, zone: &str) -> bool {
    name == zone || zone == "." || name.ends_with(&format!(".{zone}"))
}

/// A host name in an rrdata (CNAME, NS, MX, SRV targets): trailing dot optional.
fn host(s: &str) -> bool {
    if s == "." {
        return true;
    }
    let full = if s.ends_with('.') {
        s.to_string()
    } else {
        format!("{s}.")
    };
    parse_name(&full).is_some_and(|n| !n.starts_with("*."))
}

/// An integer field of a request body, as proto3 JSON allows it: a JSON number or
/// a decimal string (`"ttl": "300"`, which Google's own `google-cloud-dns` sends and
/// Google's API accepts). `None` for anything else (`"soon"`, `1.5`, `true`).
pub(crate) fn json_int(v: &serde_json::Value) -> Option<i64> {
    match v {
        serde_json::Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        }),
        serde_json::Value::String(s) => {
            let t = s.strip_prefix('+').unwrap_or(s);
            (!t.is_empty()
                && t.trim_start_matches('-')
                    .bytes()
                    .all(|b| b.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
        }
        _ => None,
    }
}

fn num<T: std::str::FromStr>(s: &str) -> bool {
    s.parse::<T>().is_ok()
}

/// TXT/SPF data: unquoted words, or quoted strings of at most 255 bytes each with
/// `\"` and `\\` escapes; quotes must balance.
fn txt(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            i += 1;
            let mut len = 0usize;
            loop {
                match b.get(i) {
                    None => return false,
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        i += 2;
                        len += 1;
                    }
                    Some(_) => {
                        i += 1;
                        len += 1;
                    }
                }
            }
            if len > 255 {
                return false;
            }
        } else {
            i += 1;
        }
    }
    !s.trim().is_empty()
}

/// Whether Cloud DNS would accept `value` as an rrdata of `rtype`.
pub(crate) fn rrdata_ok(rtype: &str, value: &str) -> bool {
    let f: Vec<&str> = value.split_whitespace().collect();
    match rtype {
        "A" => value.parse::<Ipv4Addr>().is_ok(),
        "AAAA" => value.parse::<Ipv6Addr>().is_ok(),
        "CNAME" | "NS" | "PTR" | "ALIAS" => f.len() == 1 && host(f[0]),
        "MX" => f.len() == 2 && num::<u16>(f[0]) && host(f[1]),
        "SRV" => {
            f.len() == 4 && num::<u16>(f[0]) && num::<u16>(f[1]) && num::<u16>(f[2]) && host(f[3])
        }
        "TXT" | "SPF" => txt(value),
        "CAA" => {
            f.len() >= 3
                && num::<u8>(f[0])
                && f[1].bytes().all(|b| b.is_ascii_alphanumeric())
                && txt(&f[2..].join(" "))
        }
        "SOA" => f.len() == 7 && host(f[0]) && host(f[1]) && f[2..].iter().all(|n| num::<u32>(n)),
        _ => !value.trim().is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_need_their_trailing_dot() {
        assert_eq!(
            parse_name("WWW.Example.com."),
            Some("www.example.com.".into())
        );
        assert_eq!(parse_name("*.example.com."), Some("*.example.com.".into()));
        assert_eq!(
            parse_name("_sip._tcp.example.com."),
            Some("_sip._tcp.example.com.".into())
        );
        for bad in [
            "www.example.com",
            "a..example.com.",
            "a b.example.com.",
            "x.*.example.com.",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
        assert!(within("a.example.com.", "example.com."));
        assert!(within("example.com.", "example.com."));
        assert!(!within("badexample.com.", "example.com."));
    }

    #[test]
    fn integers_may_come_as_strings() {
        use serde_json::json;
        assert_eq!(json_int(&json!(300)), Some(300));
        assert_eq!(json_int(&json!("300")), Some(300));
        assert_eq!(json_int(&json!("-1")), Some(-1));
        assert_eq!(json_int(&json!(300.0)), Some(300));
        for bad in [
            json!("soon"),
            json!(""),
            json!("3 00"),
            json!(1.5),
            json!(true),
            json!(null),
        ] {
            assert_eq!(json_int(&bad), None, "{bad}");
        }
    }

    #[test]
    fn rrdata_by_type() {
        for (t, v, ok) in [
            ("A", "192.0.2.1", true),
            ("A", "1.2.3", false),
            ("A", "300.1.1.1", false),
            ("AAAA", "2001:db8::1", true),
            ("AAAA", "192.0.2.1", false),
            ("CNAME", "target.example.net.", true),
            ("CNAME", "two words", false),
            ("MX", "10 mail.example.net.", true),
            ("MX", "mail.example.net.", false),
            ("SRV", "10 60 5060 sip.example.net.", true),
            ("SRV", "10 60 sip.example.net.", false),
            ("TXT", "\"v=spf1 -all\"", true),
            ("TXT", "\"unbalanced", false),
            ("CAA", "0 issue \"letsencrypt.org\"", true),
            ("CAA", "256 issue \"x\"", false),
            ("SOA", "ns1.x. admin.x. 1 21600 3600 259200 300", true),
        ] {
            assert_eq!(rrdata_ok(t, v), ok, "{t} {v}");
        }
        let long = format!("\"{}\"", "x".repeat(256));
        assert!(!rrdata_ok("TXT", &long));
    }
}
