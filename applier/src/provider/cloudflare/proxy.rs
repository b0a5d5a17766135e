//! Cloudflare's proxy status as the property external-dns names
//! `external-dns.alpha.kubernetes.io/cloudflare-proxied`
//! ([`routing::cloudflare::PROXIED`]):
//!
//! | desired | written | read back |
//! |---|---|---|
//! | `true` | every record `proxied: true`, TTL 1 (automatic) | `true`, TTL 1 |
//! | `false` | every record `proxied: false` | no property (DNS-only is the default) |
//! | absent | each record keeps its own status; a new value of a proxied set is proxied | as it is |
//!
//! Only A, AAAA and CNAME can be proxied: `true` on another type is refused before any
//! request ([`refusal`]), as Cloudflare would refuse it (1004/9004). A set whose records
//! disagree (only possible by hand) reads without the property, its TTL the lowest of
//! its DNS-only records (a proxied record's TTL is always 1 and says nothing).
use super::wire::WireRecord;
use dnsplane_common::routing::cloudflare::{PROXIABLE, PROXIED};
use dnsplane_common::{RRSet, RRSetOp, RecordKey, RecordType};
use std::collections::BTreeMap;

/// Why the driver refuses `op` before any request: `true` on a type Cloudflare cannot
/// proxy.
pub(super) fn refusal(op: &RRSetOp) -> Option<String> {
    let after = op.after.as_ref()?;
    if after.property(PROXIED) != Some("true") || PROXIABLE.contains(&op.key.rtype) {
        return None;
    }
    Some(format!(
        "cloudflare cannot proxy {} records: {PROXIED}=true applies to A, AAAA and CNAME only (on {}); remove the property or set it to false",
        op.key.rtype, op.key
    ))
}

/// The proxy status and TTL a read shows for the records of one set: `(true, 1)` when
/// all are proxied, `(false, the lowest TTL of the DNS-only ones)` otherwise.
pub(super) fn read(rtype: RecordType, records: &[WireRecord]) -> (bool, u32) {
    let proxied = |r: &&WireRecord| r.proxied == Some(true);
    let all =
        PROXIABLE.contains(&rtype) && !records.is_empty() && records.iter().all(|r| proxied(&r));
    let ttl = records
        .iter()
        .filter(|r| all || !proxied(r))
        .map(|r| r.ttl)
        .min()
        .or_else(|| records.iter().map(|r| r.ttl).min())
        .unwrap_or(1);
    (all, if all { 1 } else { ttl })
}

/// Whether `after` wants its records proxied: `Some` when it says so, `None` when it
/// leaves each record as it is.
pub(super) fn wanted(after: &RRSet) -> Option<bool> {
    after.property(PROXIED).map(|v| v == "true")
}

/// The status a record gets from a write of `after` (`wanted` or its own).
pub(super) fn target(after: &RRSet, r: &WireRecord) -> bool {
    wanted(after).unwrap_or(r.proxied == Some(true))
}

/// `ops` with each target that leaves the proxy status out taking it from the set
/// as read (a set proxied by hand stays proxied, its TTL automatic).
pub(super) fn settle(ops: &[RRSetOp], read: &BTreeMap<RecordKey, RRSet>) -> Vec<RRSetOp> {
    ops.iter()
        .map(|op| {
            let mut op = op.clone();
            if let Some(after) = &op.after
                && after.property(PROXIED).is_none()
                && let Some(kept) = read.get(&op.key).and_then(|cur| after.settled(cur))
            {
                op.after = Some(kept);
            }
            op
        })
        .collect()
}

/// `ops` with each target as a read shows it once written: `false` is DNS-only, which
/// reads without the property.
pub(super) fn as_read(ops: &[RRSetOp]) -> Vec<RRSetOp> {
    ops.iter()
        .map(|op| {
            let mut op = op.clone();
            if let Some(after) = &op.after
                && after.property(PROXIED) == Some("false")
            {
                let props: Vec<(String, String)> = after
                    .properties()
                    .filter(|(n, _)| *n != PROXIED)
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .collect();
                if let Ok(plain) =
                    RRSet::from_canonical_with(op.key.clone(), after.ttl, after.values_vec(), props)
                {
                    op.after = Some(plain);
                }
            }
            op
        })
        .collect()
}
