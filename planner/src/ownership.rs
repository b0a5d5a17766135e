//! The TXT ownership registry. Every RRSet dnsplane owns has a companion TXT record
//! holding the owner id, written in the same atomic change as the record itself:
//!
//! ```text
//! www.example.com.              A    192.0.2.10
//! _dnsplane-a.www.example.com.  TXT  "heritage=dnsplane,dnsplane/owner=prod-1,dnsplane/resource=DNSEndpoint default/web"
//! ```
//!
//! The `_dnsplane-<type>` label keeps the ownership record out of the way of real
//! host names (and works at the zone apex, unlike external-dns's default prefix). A
//! wildcard's mark says so in that same label, `_dnsplane-<type>-wildcard.<parent>`
//! (`*` may only stand first), so no two records ever share an ownership record: the
//! mark of `*.apps` and the mark of a real `_wildcard.apps` are different names.
//! (Before 0.2 a wildcard's mark was `_dnsplane-<type>._wildcard.<parent>`, which the
//! mark of `_wildcard.<parent>` shared; such a mark now reads as the latter's, and a
//! wildcard record it marked shows as unowned — `conflict = "adopt"` takes it back.)
//!
//! This module only knows the format; [`crate::observed`] keeps what a zone holds,
//! split into data and ownership.
use dnsplane_common::{Name, RRSet, RecordKey, RecordType, routing};
use std::sync::Arc;

const LABEL_PREFIX: &str = "_dnsplane-";
/// Suffix of the type in the first label of a wildcard's mark.
const WILDCARD_SUFFIX: &str = "-wildcard";
/// TTL of ownership records; fixed, so a TTL change of the record does not rewrite it.
pub const OWNER_TTL: u32 = 300;

/// The mark's label for the external-dns resource a taken-over record had.
const EXTERNAL_DNS_RESOURCE: &str = "dnsplane/external-dns-resource";

/// Who owns a record, as read from its ownership record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerMark {
    pub owner: Arc<str>,
    pub resource: Arc<str>,
    /// The `external-dns/resource` of the external-dns mark this one replaced (a
    /// record taken over from external-dns); `None` otherwise.
    pub external_dns_resource: Option<Arc<str>>,
}

/// The label `key`'s ownership record puts before its name (`_dnsplane-a`).
pub fn mark_label(key: &RecordKey) -> String {
    let rtype = key.rtype.as_str().to_ascii_lowercase();
    match key.name.first_label() {
        "*" => format!("{LABEL_PREFIX}{rtype}{WILDCARD_SUFFIX}"),
        _ => format!("{LABEL_PREFIX}{rtype}"),
    }
}

/// Name of the ownership record for `key`; `None` when there can be none (the name
/// is too long to take the mark's label).
pub fn owner_record_key(key: &RecordKey) -> Option<RecordKey> {
    let base = match key.name.first_label() {
        "*" => key.name.parent()?,
        _ => key.name.clone(),
    };
    let name = base.prepend(&mark_label(key)).ok()?;
    // A set's mark is a set of the same name: Route 53 keeps them apart by it.
    Some(RecordKey::new(key.zone.clone(), name, RecordType::Txt).in_set(key.set))
}

/// True when `name` is the name of an ownership record (users may not desire such names).
pub fn is_owner_record_name(name: &Name) -> bool {
    name.first_label().starts_with(LABEL_PREFIX)
}

/// The ownership record for `key` owned by `owner`.
pub fn owner_record(key: &RecordKey, owner: &str, resource: &str) -> Option<RRSet> {
    owner_record_with(key, owner, resource, std::iter::empty())
}

/// [`owner_record`] for a record with `properties`: the mark of a routing-policy set
/// carries the set's policy (Route 53 refuses a set without one), nothing else (an
/// alias's target or health check mean nothing to a TXT record).
pub fn owner_record_with<'a>(
    key: &RecordKey,
    owner: &str,
    resource: &str,
    properties: impl Iterator<Item = (&'a str, &'a str)>,
) -> Option<RRSet> {
    build(key, owner, resource, properties, None)
}

/// [`owner_record_with`] for a record taken over from external-dns: the mark also
/// keeps the `external-dns/resource` it replaced, so that `dnsplane release` hands the
/// record back under the same resource (external-dns's conflict resolution prefers
/// the resource that already owns a name).
pub fn adopted_owner_record<'a>(
    key: &RecordKey,
    owner: &str,
    resource: &str,
    properties: impl Iterator<Item = (&'a str, &'a str)>,
    external_dns_resource: &str,
) -> Option<RRSet> {
    build(
        key,
        owner,
        resource,
        properties,
        Some(external_dns_resource),
    )
}

fn build<'a>(
    key: &RecordKey,
    owner: &str,
    resource: &str,
    properties: impl Iterator<Item = (&'a str, &'a str)>,
    external_dns_resource: Option<&str>,
) -> Option<RRSet> {
    let okey = owner_record_key(key)?;
    let clean = |s: &str| s.replace([',', '"', '\\'], "_");
    let mut value = format!(
        "heritage=dnsplane,dnsplane/owner={owner},dnsplane/resource={}",
        clean(resource)
    );
    if let Some(r) = external_dns_resource.filter(|r| !r.is_empty()) {
        value.push_str(&format!(",{EXTERNAL_DNS_RESOURCE}={}", clean(r)));
    }
    let routing: Vec<(&str, &str)> = properties
        .filter(|(n, _)| !key.set.is_none() && routing::aws::ROUTING.contains(n))
        .collect();
    RRSet::with_properties(okey, OWNER_TTL, &[value], &routing).ok()
}

/// Parses an ownership record: the key it owns and the mark. `None` when the RRSet is
/// not an ownership record (then it is ordinary data).
pub fn parse_owner_record(rrset: &RRSet) -> Option<(RecordKey, OwnerMark)> {
    if rrset.key.rtype != RecordType::Txt {
        return None;
    }
    let first = rrset.key.name.first_label();
    let label = first.strip_prefix(LABEL_PREFIX)?;
    let rest = rrset.key.name.parent()?;
    let (rtype, owned) = match label.strip_suffix(WILDCARD_SUFFIX) {
        Some(t) => (t, rest.prepend("*").ok()?),
        None => (label, rest),
    };
    let rtype = RecordType::parse(rtype).ok()?;
    let mark = rrset.values().find_map(parse_mark)?;
    let key = RecordKey::new(rrset.key.zone.clone(), owned, rtype).in_set(rrset.key.set);
    Some((key, mark))
}

fn parse_mark(canonical: &str) -> Option<OwnerMark> {
    // Canonical TXT: one or more quoted strings; the mark fits in one.
    let text = canonical.strip_prefix('"')?.strip_suffix('"')?;
    let mut heritage = false;
    let mut owner = None;
    let mut resource = String::new();
    let mut external = None;
    for part in text.split(',') {
        let (k, v) = part.split_once('=')?;
        match k {
            "heritage" => heritage = v == "dnsplane",
            "dnsplane/owner" => owner = Some(v),
            "dnsplane/resource" => resource = v.to_string(),
            EXTERNAL_DNS_RESOURCE => external = Some(v.into()),
            _ => {}
        }
    }
    if !heritage {
        return None;
    }
    Some(OwnerMark {
        owner: owner?.into(),
        resource: resource.into(),
        external_dns_resource: external,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use dnsplane_testing::records::key;

    /// A wildcard and a real `_wildcard` name never share an ownership record.
    #[test]
    fn no_two_records_share_a_mark() {
        let keys = [
            key("*.apps.example.com", RecordType::A),
            key("_wildcard.apps.example.com", RecordType::A),
            key("apps.example.com", RecordType::A),
            key("*.example.com", RecordType::A),
            key("_wildcard.example.com", RecordType::A),
        ];
        let marks: std::collections::BTreeSet<_> = keys
            .iter()
            .map(|k| owner_record_key(k).unwrap().name)
            .collect();
        assert_eq!(marks.len(), keys.len(), "{marks:?}");
        for k in &keys {
            let rec = owner_record(k, "me", "r").unwrap();
            assert_eq!(&parse_owner_record(&rec).unwrap().0, k);
        }
    }

    #[test]
    fn round_trip_including_apex_and_wildcard() {
        for (name, t, expect) in [
            (
                "www.example.com",
                RecordType::A,
                "_dnsplane-a.www.example.com.",
            ),
            ("example.com", RecordType::Mx, "_dnsplane-mx.example.com."),
            (
                "*.apps.example.com",
                RecordType::Cname,
                "_dnsplane-cname-wildcard.apps.example.com.",
            ),
        ] {
            let k = key(name, t);
            let rec = owner_record(&k, "prod-1", "DNSEndpoint default/web").unwrap();
            assert_eq!(rec.key.name.as_str(), expect);
            assert!(is_owner_record_name(&rec.key.name));
            let (owned, mark) = parse_owner_record(&rec).unwrap();
            assert_eq!(owned, k);
            assert_eq!(&*mark.owner, "prod-1");
            assert_eq!(&*mark.resource, "DNSEndpoint default/web");
            assert_eq!(mark.external_dns_resource, None);
        }
    }

    /// A taken-over record's mark keeps external-dns's resource for the way back.
    #[test]
    fn an_adopted_mark_keeps_the_external_dns_resource() {
        let k = key("www.example.com", RecordType::A);
        let rec = adopted_owner_record(
            &k,
            "prod-1",
            "push:ci",
            std::iter::empty(),
            "ingress/default/web",
        )
        .unwrap();
        let (owned, mark) = parse_owner_record(&rec).unwrap();
        assert_eq!(owned, k);
        assert_eq!(&*mark.owner, "prod-1");
        assert_eq!(&*mark.resource, "push:ci");
        assert_eq!(
            mark.external_dns_resource.as_deref(),
            Some("ingress/default/web")
        );
    }
}
