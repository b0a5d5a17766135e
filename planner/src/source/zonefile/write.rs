//! Desired entries written as a zone file that BIND loads and [`super::parse`] reads back
//! to the same entries: deterministic (sorted by name in DNS order with the apex first,
//! then type, then value), names relative to the zone, one line per value, values in
//! their canonical text (which is already presentation format: quoted strings escaped,
//! names absolute).
use crate::source::DesiredEntry;
use dnsplane_common::{Name, RecordType};
use std::fmt::Write;

/// The `$TTL` of a written file: what an entry without a TTL of its own (the zone's
/// default) is written with, and read back as.
pub const DEFAULT_TTL: u32 = 3600;

/// A written zone file, and the entries it could not hold.
#[derive(Debug)]
pub struct Written<'a> {
    pub text: String,
    /// Entries a zone file cannot express, for the caller to name: a routing-policy
    /// set or provider-specific properties (no zone-file syntax), a name outside the
    /// zone, the apex NS (the provider's; give them as `apex_ns`).
    pub skipped: Vec<(&'a DesiredEntry, &'static str)>,
}

/// `entries` of `zone` as a zone file. `apex_ns` (absolute names) are written as the
/// apex NS; without them a placeholder (`ns1.invalid.`, a name that can never exist,
/// RFC 6761) stands in, because BIND refuses a zone without one. The SOA is always a
/// placeholder (serial 1): dnsplane never writes SOA.
pub fn write<'a>(zone: &Name, entries: &'a [DesiredEntry], apex_ns: &[String]) -> Written<'a> {
    let mut skipped = Vec::new();
    let mut lines: Vec<(Vec<&str>, RecordType, &str, u32, &str)> = Vec::new();
    for e in entries {
        let why = if !e.set.is_none() {
            Some("a routing-policy set (setIdentifier) has no zone-file form")
        } else if !e.properties.is_empty() {
            Some("provider-specific properties have no zone-file form")
        } else if !e.name.is_within(zone) {
            Some("the name is outside the zone")
        } else if e.name == *zone && e.rtype == RecordType::Ns {
            Some("the apex NS is the provider's; it is written from apex_ns")
        } else {
            None
        };
        if let Some(why) = why {
            skipped.push((e, why));
            continue;
        }
        let rel = relative(&e.name, zone);
        // DNS order: labels compared from the right, so the apex comes first and a
        // name's subdomains follow it.
        let key: Vec<&str> = if rel == "@" {
            Vec::new()
        } else {
            rel.rsplit('.').collect()
        };
        for v in &e.values {
            lines.push((key.clone(), e.rtype, rel, e.ttl.unwrap_or(DEFAULT_TTL), v));
        }
    }
    lines.sort_unstable();

    let mut text = String::with_capacity(64 * lines.len() + 512);
    let z = zone.as_str();
    let _ = writeln!(text, "; {z} as dnsplane declares it.");
    text.push_str(
        "; The SOA is a placeholder (serial 1): dnsplane never writes SOA or the apex NS,\n\
         ; which the provider owns; they are here because BIND loads no zone without them.\n",
    );
    let _ = writeln!(text, "$ORIGIN {z}");
    let _ = writeln!(text, "$TTL {DEFAULT_TTL}");
    let _ = writeln!(
        text,
        "@ {DEFAULT_TTL} IN SOA ns1.invalid. hostmaster.invalid. 1 3600 600 604800 {DEFAULT_TTL}"
    );
    let mut ns: Vec<&str> = apex_ns.iter().map(String::as_str).collect();
    ns.sort_unstable();
    ns.dedup();
    if ns.is_empty() {
        text.push_str("; A placeholder: the provider's name servers are not known here.\n");
        ns.push("ns1.invalid.");
    }
    for n in ns {
        let _ = writeln!(text, "@ {DEFAULT_TTL} IN NS {n}");
    }
    let mut previous = None;
    for (_, rtype, rel, ttl, value) in lines {
        if previous != Some(rel) {
            text.push('\n');
            previous = Some(rel);
        }
        let _ = writeln!(text, "{rel} {ttl} IN {rtype} {value}");
    }
    Written { text, skipped }
}

/// `name` relative to `zone` (`@` for the apex). `name` is within `zone`.
fn relative<'n>(name: &'n Name, zone: &Name) -> &'n str {
    let (n, z) = (name.as_str(), zone.as_str());
    if n == z {
        "@"
    } else if z == "." {
        n.strip_suffix('.').unwrap_or(n)
    } else {
        n.strip_suffix(z)
            .and_then(|r| r.strip_suffix('.'))
            .unwrap_or(n)
    }
}
