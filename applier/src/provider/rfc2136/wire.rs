//! dnsplane's records as DNS wire data and back (hickory's types), for UPDATE
//! messages, AXFR and queries.
use crate::provider::{ErrorClass, ProviderError};
use dnsplane_common::{Name, RData, RRSet, RecordKey, RecordType};
use hickory_net::proto::rr::rdata::{A, AAAA, CAA, CNAME, MX, NS, SRV, TXT};
use hickory_net::proto::rr::{DNSClass, Name as HName, RData as HRData, Record};
use std::collections::BTreeMap;

pub(super) fn hname(n: &Name) -> Result<HName, ProviderError> {
    crate::provider::hickory_rdata::to_hname(n)
        .map_err(|e| ProviderError::new(ErrorClass::Invalid, e))
}

/// A name from the wire as dnsplane's text (see [`crate::provider::hickory_rdata::hname_text`]);
/// hickory's escaped text when it has none, which then fails to parse where it is used.
fn text(h: &HName) -> String {
    crate::provider::hickory_rdata::hname_text(h).unwrap_or_else(|| h.to_ascii())
}

pub(super) use crate::provider::hickory_rdata::htype;

/// A canonical value as hickory record data.
pub(super) fn to_rdata(rtype: RecordType, value: &str) -> Result<HRData, ProviderError> {
    let invalid = |e: String| ProviderError::new(ErrorClass::Invalid, e);
    let name = |n: &Name| hname(n);
    Ok(
        match RData::parse(rtype, value).map_err(|e| invalid(e.to_string()))? {
            RData::A(ip) => HRData::A(A(ip)),
            RData::Aaaa(ip) => HRData::AAAA(AAAA(ip)),
            RData::Cname(n) => HRData::CNAME(CNAME(name(&n)?)),
            RData::Ns(n) => HRData::NS(NS(name(&n)?)),
            RData::Txt(strings) => {
                HRData::TXT(TXT::from_bytes(strings.iter().map(Vec::as_slice).collect()))
            }
            RData::Mx {
                preference,
                exchange,
            } => HRData::MX(MX::new(preference, name(&exchange)?)),
            RData::Srv {
                priority,
                weight,
                port,
                target,
            } => HRData::SRV(SRV::new(priority, weight, port, name(&target)?)),
            RData::Caa { flags, tag, value } => {
                let mut caa = CAA::new_issue(false, None, Vec::new());
                caa.issuer_critical = flags & 0x80 != 0;
                caa.reserved_flags = flags & 0x7f;
                caa.tag = tag;
                caa.value = value;
                HRData::CAA(caa)
            }
            other => crate::provider::hickory_rdata::to_hickory(&other).map_err(invalid)?,
        },
    )
}

/// Record data as a value `RData::parse` accepts; `None` for types dnsplane does not
/// model (SOA, RRSIG, NSEC, …).
pub(super) fn from_rdata(data: &HRData) -> Option<(RecordType, String)> {
    Some(match data {
        HRData::A(a) => (RecordType::A, a.0.to_string()),
        HRData::AAAA(a) => (RecordType::Aaaa, a.0.to_string()),
        HRData::CNAME(n) => (RecordType::Cname, text(&n.0)),
        HRData::NS(n) => (RecordType::Ns, text(&n.0)),
        HRData::TXT(t) => (
            RecordType::Txt,
            t.txt_data
                .iter()
                .map(|s| quote(s))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        HRData::MX(mx) => (
            RecordType::Mx,
            format!("{} {}", mx.preference, text(&mx.exchange)),
        ),
        HRData::SRV(s) => (
            RecordType::Srv,
            format!("{} {} {} {}", s.priority, s.weight, s.port, text(&s.target)),
        ),
        HRData::CAA(c) => (
            RecordType::Caa,
            format!("{} {} {}", c.flags(), c.tag, quote(&c.value)),
        ),
        other => return crate::provider::hickory_rdata::from_hickory(other),
    })
}

/// A character-string in presentation form, as `RData`'s canonical form writes it.
pub(super) fn quote(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 2);
    s.push('"');
    for &b in bytes {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\{b:03}")),
        }
    }
    s.push('"');
    s
}

/// Groups records into the RRSets dnsplane models, for `zone`, at `names` if given.
pub(super) fn to_rrsets(zone: &Name, records: Vec<Record>, names: Option<&[Name]>) -> Vec<RRSet> {
    let mut groups: BTreeMap<RecordKey, (u32, Vec<String>)> = BTreeMap::new();
    for r in records {
        if r.dns_class != DNSClass::IN {
            continue;
        }
        let Some((rtype, value)) = from_rdata(&r.data) else {
            continue;
        };
        let Ok(name) = Name::parse(&text(&r.name)) else {
            tracing::warn!(zone = %zone, record.name = %r.name, "Skipped a record whose name dnsplane cannot represent.");
            continue;
        };
        if !name.is_within(zone) || names.is_some_and(|ns| !ns.contains(&name)) {
            continue;
        }
        let entry = groups
            .entry(RecordKey::new(zone.clone(), name, rtype))
            .or_insert((r.ttl, Vec::new()));
        entry.0 = entry.0.min(r.ttl);
        entry.1.push(value);
    }
    groups
        .into_iter()
        .filter_map(|(key, (ttl, values))| match RRSet::new(key.clone(), ttl, &values) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!(zone = %zone, record.name = %key.name, record.type = %key.rtype, error = %e, "Skipped an RRSet dnsplane cannot represent.");
                None
            }
        })
        .collect()
}
