//! Real listings, recorded by others: octoDNS's provider repositories keep fixtures
//! recorded from the real APIs (PowerDNS, Cloudflare) or written in the API's own shape
//! for their stubs (Route 53, Google Cloud DNS). Each driver lists them through its
//! real HTTP code path, from a replay server, and must find the records octoDNS's own
//! tests expect there — the types dnsplane models, with octoDNS's TTLs and values.
//! Provenance and licences: `applier/tests/fixtures/octodns/README.md`.

mod clouddns;
mod cloudflare;
mod pdns;
mod replay;
mod route53;

use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use std::collections::BTreeMap;

/// The records a test expects: `(name, type, ttl, values in presentation form)`.
pub type Expected<'a> = &'a [(&'a str, &'a str, u32, &'a [&'a str])];

/// `expected` as RRSets of `zone`, parsed by dnsplane's own model.
pub fn rrsets(zone: &Name, expected: Expected<'_>) -> BTreeMap<RecordKey, RRSet> {
    expected
        .iter()
        .map(|(name, rtype, ttl, values)| {
            let key = RecordKey::new(
                zone.clone(),
                Name::parse(name).unwrap(),
                RecordType::parse(rtype).unwrap(),
            );
            let set = RRSet::new(key.clone(), *ttl, values)
                .unwrap_or_else(|e| panic!("{name} {rtype} {values:?}: {e}"));
            (key, set)
        })
        .collect()
}

/// Fails naming each record missing, unexpected or different.
pub fn assert_same(got: &[RRSet], want: &BTreeMap<RecordKey, RRSet>) {
    let got: BTreeMap<RecordKey, RRSet> = got.iter().map(|r| (r.key.clone(), r.clone())).collect();
    let mut diffs = Vec::new();
    for (k, w) in want {
        match got.get(k) {
            None => diffs.push(format!("missing {k:?}: want {w:?}")),
            Some(g) if g != w => diffs.push(format!("{k:?}: got {g:?}, want {w:?}")),
            Some(_) => {}
        }
    }
    for (k, g) in &got {
        if !want.contains_key(k) {
            diffs.push(format!("unexpected {k:?}: {g:?}"));
        }
    }
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}
