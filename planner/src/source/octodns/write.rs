//! Desired entries written as an octoDNS zone file: what octoDNS's YamlProvider
//! loads with its default settings (every mapping's keys in its natural order) and
//! what [`super::parse`] reads back as the same entries.
//!
//! One record at a name is a mapping, several a list sorted by type (as octoDNS
//! writes them); `value` for one value, `values` for several; `ttl` always (an entry
//! without one, "the zone's default", is written with octoDNS's default of 3600,
//! which is what octoDNS would give it). Labels are not written (octoDNS has none).
use super::values::txt;
use super::yaml::natural_cmp;
use super::{DEFAULT_TTL, DesiredEntry};
use dnsplane_common::rdata::{MAX_STRING, RData};
use dnsplane_common::{Name, RecordType};
use std::collections::HashSet;
use std::fmt::Write as _;

/// A YAML value as written.
enum Y {
    Str(String),
    Int(u64),
    Null,
    List(Vec<Y>),
    Map(Vec<(String, Y)>),
}

/// Writes `entries` of `zone` as one octoDNS zone file, deterministically. Returns
/// the text and the entries it could not write, for the caller to name: those with a
/// set identifier or provider properties (octoDNS has no such record), names
/// outside the zone, the apex NS (never written), values octoDNS cannot hold
/// exactly (a TXT split into strings other than octoDNS's 255-octet chunks, or not
/// ASCII), and a second entry for the same name and type.
///
/// The text is not size-checked: one over the parser's limit
/// ([`MAX_OCTODNS_BYTES`](super::MAX_OCTODNS_BYTES), 16 MiB, about 300,000
/// single-value A records) loads in octoDNS but is refused by [`super::parse`].
pub fn write<'e>(zone: &Name, entries: &'e [DesiredEntry]) -> (String, Vec<&'e DesiredEntry>) {
    let mut skipped = Vec::new();
    let mut records: Vec<(String, RecordType, Y)> = Vec::new();
    let mut seen: HashSet<(&Name, RecordType)> = HashSet::with_capacity(entries.len());
    for entry in entries {
        match record(zone, entry) {
            Some((name, y)) if seen.insert((&entry.name, entry.rtype)) => {
                records.push((name, entry.rtype, y))
            }
            _ => skipped.push(entry),
        }
    }
    records.sort_by(|a, b| {
        natural_cmp(&a.0, &b.0)
            .then_with(|| a.0.cmp(&b.0))
            .then_with(|| a.1.as_str().cmp(b.1.as_str()))
    });
    let mut top: Vec<(String, Y)> = Vec::new();
    for (name, _, y) in records {
        match top.last_mut() {
            Some((last, Y::List(list))) if *last == name => list.push(y),
            Some((last, existing)) if *last == name => {
                let first = std::mem::replace(existing, Y::Null);
                *existing = Y::List(vec![first, y]);
            }
            _ => top.push((name, y)),
        }
    }
    let mut out = String::from("---\n");
    if top.is_empty() {
        out.push_str("{}\n");
    } else {
        emit_map(&mut out, 0, top);
    }
    (out, skipped)
}

/// One entry as (relative name, record mapping), or `None` when it cannot be
/// written.
fn record(zone: &Name, e: &DesiredEntry) -> Option<(String, Y)> {
    if !e.set.is_none() || !e.properties.is_empty() || !e.name.is_within(zone) {
        return None;
    }
    if e.name == *zone && e.rtype == RecordType::Ns {
        return None;
    }
    let relative = if e.name == *zone {
        String::new()
    } else {
        let full = e.name.as_str();
        full[..full.len() - zone.as_str().len()]
            .trim_end_matches('.')
            .to_string()
    };
    let mut values = Vec::new();
    for v in &e.values {
        values.push(value(e.rtype, v)?);
    }
    let mut fields = vec![
        (
            "ttl".to_string(),
            Y::Int(e.ttl.unwrap_or(DEFAULT_TTL).into()),
        ),
        ("type".to_string(), Y::Str(e.rtype.as_str().to_string())),
    ];
    match values.len() {
        0 => return None,
        1 => fields.push(("value".into(), values.remove(0))),
        _ => fields.push(("values".into(), Y::List(values))),
    }
    Some((relative, Y::Map(fields)))
}

/// One canonical value in octoDNS's form, or `None` when octoDNS cannot hold it.
fn value(rtype: RecordType, canonical: &str) -> Option<Y> {
    let data = RData::parse(rtype, canonical).ok()?;
    let s = |v: &str| Y::Str(v.to_string());
    let n = |v: u64| Y::Int(v);
    let map = |fields: Vec<(&str, Y)>| {
        Y::Map(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    };
    // The inside of a canonical quoted string: what octoDNS keeps for CAA and NAPTR.
    let inside = |bytes: &[u8]| {
        let q = super::values::quoted(bytes);
        q[1..q.len() - 1].to_string()
    };
    Some(match data {
        RData::A(_) | RData::Aaaa(_) | RData::Cname(_) | RData::Ns(_) | RData::Ptr(_) => {
            s(canonical)
        }
        RData::Txt(strings) => {
            let (last, full) = strings.split_last()?;
            if full.iter().any(|c| c.len() != MAX_STRING) || (last.is_empty() && !full.is_empty()) {
                return None;
            }
            let bytes: Vec<u8> = strings.concat();
            let text = String::from_utf8(bytes).ok().filter(|t| t.is_ascii())?;
            if text.contains("\\;") || text.contains("\" \"") {
                return None;
            }
            let mut written = text.replace(';', "\\;");
            if written.starts_with('"') {
                // octoDNS drops a leading quote and the last character: wrap it.
                written = format!("\"{written}\"");
            }
            // Exactly what the parser reads back, or not written at all.
            if txt(&written).ok()? != canonical {
                return None;
            }
            Y::Str(written)
        }
        RData::Mx {
            preference,
            exchange,
        } => map(vec![
            ("exchange", s(exchange.as_str())),
            ("preference", n(preference.into())),
        ]),
        RData::Srv {
            priority,
            weight,
            port,
            target,
        } => map(vec![
            ("port", n(port.into())),
            ("priority", n(priority.into())),
            ("target", s(target.as_str())),
            ("weight", n(weight.into())),
        ]),
        RData::Caa { flags, tag, value } => map(vec![
            ("flags", n(flags.into())),
            ("tag", Y::Str(tag)),
            ("value", Y::Str(inside(&value))),
        ]),
        RData::Naptr {
            order,
            preference,
            flags,
            service,
            regexp,
            replacement,
        } => map(vec![
            ("flags", Y::Str(inside(&flags))),
            ("order", n(order.into())),
            ("preference", n(preference.into())),
            ("regexp", Y::Str(inside(&regexp))),
            ("replacement", s(replacement.as_str())),
            ("service", Y::Str(inside(&service))),
        ]),
        RData::Sshfp {
            algorithm,
            fp_type,
            fingerprint,
        } => map(vec![
            ("algorithm", n(algorithm.into())),
            ("fingerprint", Y::Str(hex::encode(fingerprint))),
            ("fingerprint_type", n(fp_type.into())),
        ]),
        RData::Tlsa {
            usage,
            selector,
            matching,
            data,
        } => map(vec![
            ("certificate_association_data", Y::Str(hex::encode(data))),
            ("certificate_usage", n(usage.into())),
            ("matching_type", n(matching.into())),
            ("selector", n(selector.into())),
        ]),
        RData::Ds {
            key_tag,
            algorithm,
            digest_type,
            digest,
        } => map(vec![
            ("algorithm", n(algorithm.into())),
            ("digest", Y::Str(hex::encode(digest))),
            ("digest_type", n(digest_type.into())),
            ("key_tag", n(key_tag.into())),
        ]),
        RData::Svcb(_) | RData::Https(_) => svcb(canonical)?,
    })
}

/// SVCB and HTTPS from their canonical text (`1 . alpn=h2,h3 port=443`): the
/// parameters as a mapping, list-valued ones as lists (as octoDNS holds them).
fn svcb(canonical: &str) -> Option<Y> {
    let mut tokens = canonical.split(' ');
    let priority: u64 = tokens.next()?.parse().ok()?;
    let target = tokens.next()?.to_string();
    let mut params = Vec::new();
    for token in tokens {
        if token.contains(['"', '\\']) {
            return None;
        }
        let (key, v) = match token.split_once('=') {
            None => (token, Y::Null),
            Some((k, v)) => match k {
                "alpn" | "ipv4hint" | "ipv6hint" | "mandatory" => (
                    k,
                    Y::List(v.split(',').map(|p| Y::Str(p.to_string())).collect()),
                ),
                "port" => (k, Y::Int(v.parse().ok()?)),
                _ => (k, Y::Str(v.to_string())),
            },
        };
        params.push((key.to_string(), v));
    }
    let mut fields = vec![
        ("svcpriority".to_string(), Y::Int(priority)),
        ("targetname".to_string(), Y::Str(target)),
    ];
    if !params.is_empty() {
        fields.push(("svcparams".to_string(), Y::Map(params)));
    }
    Some(Y::Map(fields))
}

/// A mapping's entries at `indent`, keys in octoDNS's natural order.
fn emit_map(out: &mut String, indent: usize, mut fields: Vec<(String, Y)>) {
    fields.sort_by(|a, b| natural_cmp(&a.0, &b.0).then_with(|| a.0.cmp(&b.0)));
    for (key, value) in fields {
        let _ = write!(out, "{:indent$}{}:", "", scalar(&key, true));
        emit_value(out, indent, value);
    }
}

/// The value after `key:` or `- `: inline when scalar, on the next lines when not.
fn emit_value(out: &mut String, indent: usize, value: Y) {
    match value {
        Y::Str(v) => {
            let _ = writeln!(out, " {}", scalar(&v, false));
        }
        Y::Int(n) => {
            let _ = writeln!(out, " {n}");
        }
        Y::Null => out.push_str(" null\n"),
        Y::List(items) => {
            out.push('\n');
            for item in items {
                let _ = write!(out, "{:indent$}-", "");
                match item {
                    Y::Map(fields) => {
                        // The first field on the dash's line, the others under it.
                        let mut text = String::new();
                        emit_map(&mut text, indent + 2, fields);
                        out.push(' ');
                        out.push_str(text.trim_start());
                    }
                    other => emit_value(out, indent + 2, other),
                }
            }
        }
        Y::Map(fields) => {
            out.push('\n');
            emit_map(out, indent + 2, fields);
        }
    }
}

/// A string as a YAML scalar PyYAML reads back as that same string: plain when it
/// is a simple name, single-quoted when printable, double-quoted with escapes
/// otherwise.
fn scalar(v: &str, key: bool) -> String {
    let simple = !v.is_empty()
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && v.as_bytes()[0].is_ascii_alphabetic()
        && !matches!(
            v.to_ascii_lowercase().as_str(),
            "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
        );
    if simple && (key || !v.contains('.') || v.ends_with('.')) {
        v.to_string()
    } else if v.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        format!("'{}'", v.replace('\'', "''"))
    } else {
        let mut q = String::from("\"");
        for c in v.chars() {
            match c {
                '"' => q.push_str("\\\""),
                '\\' => q.push_str("\\\\"),
                ' '..='~' => q.push(c),
                c if (c as u32) < 0x100 => {
                    let _ = write!(q, "\\x{:02x}", c as u32);
                }
                c => {
                    let _ = write!(q, "\\U{:08x}", c as u32);
                }
            }
        }
        q.push('"');
        q
    }
}
