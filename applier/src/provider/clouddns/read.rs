//! A read of a Cloud DNS zone, as the driver keeps it: the sets it can model, the
//! ones it must leave alone, and the rrdatas as Cloud DNS spelled them.
use super::wire;
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What a read found.
#[derive(Default)]
pub(super) struct Read {
    pub rrsets: BTreeMap<RecordKey, RRSet>,
    /// Sets dnsplane cannot model (routing policies, unreadable values): never
    /// written over.
    pub opaque: BTreeSet<RecordKey>,
    /// Rrdatas as Cloud DNS spelled them, where that is not the canonical spelling.
    pub raw: HashMap<RecordKey, Vec<String>>,
}

impl Read {
    pub fn add(&mut self, zone: &Name, set: wire::WireRRSet, names: Option<&BTreeSet<Name>>) {
        let Ok(name) = Name::parse(&set.name) else {
            tracing::warn!(zone = %zone, record.name = %set.name, "Skipped a Cloud DNS set whose name dnsplane cannot represent.");
            return;
        };
        if names.is_some_and(|ns| !ns.contains(&name)) || !name.is_within(zone) {
            return;
        }
        // SOA and types dnsplane does not model are neither listed nor written.
        let Ok(rtype) = RecordType::parse(&set.rtype) else {
            return;
        };
        let key = RecordKey::new(zone.clone(), name, rtype);
        if set.routing_policy.is_some() {
            self.opaque.insert(key);
            return;
        }
        match RRSet::new(key.clone(), set.ttl.unwrap_or(0), &set.rrdatas) {
            Ok(r) => {
                let mut raw = set.rrdatas.clone();
                raw.sort();
                if raw != r.values_vec() {
                    self.raw.insert(key.clone(), set.rrdatas);
                }
                self.rrsets.insert(key, r);
            }
            Err(e) => {
                tracing::warn!(zone = %zone, record = %key, error = %e, "A Cloud DNS set dnsplane cannot represent; it is left alone.");
                self.opaque.insert(key);
            }
        }
    }
}
