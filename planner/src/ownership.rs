//! The TXT ownership registry. Every RRSet dnsplane owns has a companion TXT record
//! holding the owner id, written in the same atomic change as the record itself:
//!
//! ```text
//! www.example.com.              A    192.0.2.10
//! _dnsplane-a.www.example.com.  TXT  "heritage=dnsplane,dnsplane/owner=prod-1,dnsplane/resource=DNSEndpoint default/web"
//! ```
//!
//! The `_dnsplane-<type>` label keeps the ownership record out of the way of real
//! host names (and works at the zone apex, unlike external-dns's default prefix); a
//! leading `*` label is stored as `_wildcard`, since `*` may only stand first.
//!
//! This module only knows the format; [`crate::observed`] keeps what a zone holds,
//! split into data and ownership.
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use std::sync::Arc;

const LABEL_PREFIX: &str = "_dnsplane-";
const WILDCARD: &str = "_wildcard";
/// TTL of ownership records; fixed, so a TTL change of the record does not rewrite it.
pub const OWNER_TTL: u32 = 300;

/// Who owns a record, as read from its ownership record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerMark {
    pub owner: Arc<str>,
    pub resource: Arc<str>,
}

/// Name of the ownership record for `key`.
pub fn owner_record_key(key: &RecordKey) -> Option<RecordKey> {
    let base = match key.name.first_label() {
        "*" => key.name.parent()?.prepend(WILDCARD).ok()?,
        _ => key.name.clone(),
    };
    let label = format!("{LABEL_PREFIX}{}", key.rtype.as_str().to_ascii_lowercase());
    let name = base.prepend(&label).ok()?;
    Some(RecordKey::new(key.zone.clone(), name, RecordType::Txt))
}

/// True when `name` is the name of an ownership record (users may not desire such names).
pub fn is_owner_record_name(name: &Name) -> bool {
    name.first_label().starts_with(LABEL_PREFIX)
}

/// The ownership record for `key` owned by `owner`.
pub fn owner_record(key: &RecordKey, owner: &str, resource: &str) -> Option<RRSet> {
    let okey = owner_record_key(key)?;
    let resource = resource.replace([',', '"', '\\'], "_");
    let value = format!("heritage=dnsplane,dnsplane/owner={owner},dnsplane/resource={resource}");
    RRSet::new(okey, OWNER_TTL, &[value]).ok()
}

/// Parses an ownership record: the key it owns and the mark. `None` when the RRSet is
/// not an ownership record (then it is ordinary data).
pub fn parse_owner_record(rrset: &RRSet) -> Option<(RecordKey, OwnerMark)> {
    if rrset.key.rtype != RecordType::Txt {
        return None;
    }
    let first = rrset.key.name.first_label();
    let rtype = RecordType::parse(first.strip_prefix(LABEL_PREFIX)?).ok()?;
    let rest = rrset.key.name.parent()?;
    let owned = if rest.first_label() == WILDCARD {
        rest.parent()?.prepend("*").ok()?
    } else {
        rest
    };
    let mark = rrset.values().iter().find_map(|v| parse_mark(v))?;
    Some((RecordKey::new(rrset.key.zone.clone(), owned, rtype), mark))
}

fn parse_mark(canonical: &str) -> Option<OwnerMark> {
    // Canonical TXT: one or more quoted strings; the mark fits in one.
    let text = canonical.strip_prefix('"')?.strip_suffix('"')?;
    let mut heritage = false;
    let mut owner = None;
    let mut resource = String::new();
    for part in text.split(',') {
        let (k, v) = part.split_once('=')?;
        match k {
            "heritage" => heritage = v == "dnsplane",
            "dnsplane/owner" => owner = Some(v),
            "dnsplane/resource" => resource = v.to_string(),
            _ => {}
        }
    }
    if !heritage {
        return None;
    }
    Some(OwnerMark {
        owner: owner?.into(),
        resource: resource.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use dnsplane_testing::records::key;

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
                "_dnsplane-cname._wildcard.apps.example.com.",
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
        }
    }
}
