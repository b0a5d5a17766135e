//! The desired state: entries from every source, placed in their zones and checked
//! across entries (duplicates, CNAME beside other data, reserved names, unknown zones).
//! Indexed by record key so that planning is a walk over sorted maps.
use crate::config::ZoneConfig;
use crate::registry;
use crate::source::{DesiredEntry, Origin, SourceError};
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use std::collections::{BTreeMap, BTreeSet};

/// One desired RRSet and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredRecord {
    pub rrset: RRSet,
    pub origin: Origin,
}

/// Desired records by zone, then key; plus the problems found.
#[derive(Debug, Default, Clone)]
pub struct DesiredState {
    pub zones: BTreeMap<Name, BTreeMap<RecordKey, DesiredRecord>>,
    pub errors: Vec<SourceError>,
}

/// The configured zone that holds `name`: the longest matching suffix.
pub fn zone_for<'a>(zones: &'a [ZoneConfig], name: &Name) -> Option<&'a ZoneConfig> {
    zones
        .iter()
        .filter(|z| name.is_within(&z.name))
        .max_by_key(|z| z.name.as_str().len())
}

impl DesiredState {
    /// Builds the desired state from every source's entries, in order: for a key given
    /// twice with different data, the first wins and the second is reported.
    pub fn assemble<'a>(zones: &[ZoneConfig], entries: impl IntoIterator<Item = &'a DesiredEntry>) -> DesiredState {
        let mut state = DesiredState {
            zones: zones.iter().map(|z| (z.name.clone(), BTreeMap::new())).collect(),
            errors: Vec::new(),
        };
        let error = |e: &DesiredEntry, message: String| SourceError {
            source: e.origin.source.clone(),
            location: e.origin.location.clone(),
            record: format!("{} {}", e.name, e.rtype),
            message,
        };
        for e in entries {
            if registry::is_owner_record_name(&e.name) {
                state.errors.push(error(e, "names starting with `_dnsplane-` are reserved for ownership records".into()));
                continue;
            }
            let Some(zone) = zone_for(zones, &e.name) else {
                let known: Vec<&str> = zones.iter().map(|z| z.name.as_str()).collect();
                state.errors.push(error(e, format!("no configured zone holds this name (zones: {})", known.join(", "))));
                continue;
            };
            let key = RecordKey::new(zone.name.clone(), e.name.clone(), e.rtype);
            let rrset = match RRSet::from_canonical(key.clone(), e.ttl.unwrap_or(zone.default_ttl), e.values.clone()) {
                Ok(r) => r,
                Err(err) => {
                    state.errors.push(error(e, err.to_string()));
                    continue;
                }
            };
            let records = state.zones.entry(zone.name.clone()).or_default();
            if let Some(existing) = records.get(&key) {
                if !existing.rrset.same_data(&rrset) {
                    state.errors.push(error(
                        e,
                        format!(
                            "also defined at {} with other values; keeping that one",
                            existing.origin.location
                        ),
                    ));
                }
                continue;
            }
            records.insert(key, DesiredRecord { rrset, origin: e.origin.clone() });
        }
        state.drop_cname_clashes();
        state
    }

    /// A CNAME cannot share its name with other data (RFC 1034 §3.6.2): the CNAME is
    /// dropped and reported; the other records at that name stay.
    fn drop_cname_clashes(&mut self) {
        for records in self.zones.values_mut() {
            let mut types_at: BTreeMap<&Name, BTreeSet<RecordType>> = BTreeMap::new();
            for k in records.keys() {
                types_at.entry(&k.name).or_default().insert(k.rtype);
            }
            let clashing: Vec<RecordKey> = records
                .keys()
                .filter(|k| k.rtype == RecordType::Cname && types_at.get(&k.name).is_some_and(|t| t.len() > 1))
                .cloned()
                .collect();
            for k in clashing {
                if let Some(r) = records.remove(&k) {
                    let others: Vec<&str> = records
                        .keys()
                        .filter(|o| o.name == k.name)
                        .map(|o| o.rtype.as_str())
                        .collect();
                    self.errors.push(SourceError {
                        source: r.origin.source.clone(),
                        location: r.origin.location.clone(),
                        record: k.to_string(),
                        message: format!(
                            "a CNAME cannot share its name with other data (also desired here: {})",
                            others.join(", ")
                        ),
                    });
                }
            }
        }
    }

    pub fn zone(&self, zone: &Name) -> Option<&BTreeMap<RecordKey, DesiredRecord>> {
        self.zones.get(zone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConflictPolicy, Policy};

    fn zones() -> Vec<ZoneConfig> {
        ["example.com", "sub.example.com"]
            .iter()
            .map(|z| ZoneConfig {
                name: Name::parse(z).unwrap(),
                account: "a".into(),
                policy: Policy::Sync,
                conflict: ConflictPolicy::Report,
                default_ttl: 300,
            })
            .collect()
    }

    fn entry(name: &str, t: RecordType, values: &[&str], line: u32) -> DesiredEntry {
        DesiredEntry {
            name: Name::parse(name).unwrap(),
            rtype: t,
            ttl: None,
            values: values.iter().map(|v| dnsplane_common::rdata::canonicalize(t, v).unwrap()).collect(),
            origin: Origin {
                source: "file".into(),
                location: format!("x.yaml:{line}"),
                resource: "DNSEndpoint default/x".into(),
            },
        }
    }

    #[test]
    fn places_records_in_the_longest_zone_and_reports_problems() {
        let entries = [
            entry("www.example.com", RecordType::A, &["192.0.2.1"], 1),
            entry("a.sub.example.com", RecordType::A, &["192.0.2.2"], 2),
            entry("www.other.org", RecordType::A, &["192.0.2.3"], 3),
            entry("www.example.com", RecordType::A, &["192.0.2.9"], 4),
            entry("www.example.com", RecordType::A, &["192.0.2.1"], 5),
            entry("c.example.com", RecordType::Cname, &["x.example.net"], 6),
            entry("c.example.com", RecordType::Txt, &["hello"], 7),
            entry("_dnsplane-a.www.example.com", RecordType::Txt, &["x"], 8),
        ];
        let s = DesiredState::assemble(&zones(), &entries);
        let root = s.zone(&Name::parse("example.com").unwrap()).unwrap();
        let sub = s.zone(&Name::parse("sub.example.com").unwrap()).unwrap();
        assert_eq!(root.len(), 2, "www A and c TXT: {root:?}");
        assert_eq!(sub.len(), 1);
        let locs: Vec<&str> = s.errors.iter().map(|e| e.location.as_str()).collect();
        assert_eq!(locs, ["x.yaml:3", "x.yaml:4", "x.yaml:8", "x.yaml:6"]);
        assert!(s.errors[0].message.contains("no configured zone"));
        assert!(s.errors[1].message.contains("x.yaml:1"));
        assert!(s.errors[3].message.contains("CNAME") && s.errors[3].message.contains("TXT"));
    }
}
