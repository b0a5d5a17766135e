//! What the desired index holds per record, and the interner that lets a million
//! records share their zone, source and resource names.
use dnsplane_common::{Name, RRData, RRSet, RecordKey, SharedStr};
use std::collections::HashSet;
use std::sync::Arc;

/// One desired RRSet, without its key (the index's map key), and who asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredRecord {
    /// TTL and values; the value storage is shared with the observed copy when equal.
    pub data: RRData,
    /// The source that contributed it (`file:0`, `push:my-app`).
    pub source: SharedStr,
    /// The object that asked for it (`DNSEndpoint default/web`); goes into the
    /// ownership record.
    pub resource: SharedStr,
}

impl DesiredRecord {
    pub fn new(rrset: &RRSet, source: SharedStr, resource: SharedStr) -> DesiredRecord {
        DesiredRecord {
            data: RRData::of(rrset),
            source,
            resource,
        }
    }

    /// The RRSet at `key` (its key in the index).
    pub fn rrset(&self, key: &RecordKey) -> RRSet {
        self.data.rrset(key)
    }
}

/// `records` as desired records keyed as the index keys them, all from `source` for
/// `resource` (for tests that plan against a desired state built in code).
#[cfg(test)]
pub(crate) fn desired_map(
    records: &[RRSet],
    source: &str,
    resource: &str,
) -> std::collections::BTreeMap<RecordKey, DesiredRecord> {
    records
        .iter()
        .map(|r| {
            let record = DesiredRecord::new(r, source.into(), resource.into());
            (r.key.clone(), record)
        })
        .collect()
}

/// Shares equal strings and names, so that a million records do not carry a million
/// copies of their zone, resource or source names.
#[derive(Debug, Default)]
pub struct Interner {
    names: HashSet<Name>,
    /// The last string [`arc`](Self::arc) was given, and its interned copy.
    last: Option<(Arc<str>, SharedStr)>,
    strings: HashSet<SharedStr>,
}

impl Interner {
    pub fn name(&mut self, n: &Name) -> Name {
        if let Some(existing) = self.names.get(n) {
            return existing.clone();
        }
        self.names.insert(n.clone());
        n.clone()
    }

    pub fn str(&mut self, s: &str) -> SharedStr {
        if let Some(existing) = self.strings.get(s) {
            return existing.clone();
        }
        let a = SharedStr::new(s);
        self.strings.insert(a.clone());
        a
    }

    /// [`str`](Self::str) for a string already shared: kept as the interned copy when
    /// it is the first of its text (no new allocation).
    pub fn shared(&mut self, s: &SharedStr) -> SharedStr {
        if let Some(existing) = self.strings.get(s) {
            return existing.clone();
        }
        self.strings.insert(s.clone());
        s.clone()
    }

    /// [`str`](Self::str) for a string a source already shares among its entries.
    /// The last one asked for is remembered by pointer: consecutive entries mostly
    /// share theirs (one push, one manifest's resource), so most skip the table.
    pub fn arc(&mut self, s: &Arc<str>) -> SharedStr {
        if let Some((given, interned)) = &self.last
            && Arc::ptr_eq(given, s)
        {
            return interned.clone();
        }
        let interned = self.str(s);
        self.last = Some((s.clone(), interned.clone()));
        interned
    }

    /// Shares the zone name; a record's own name is unique enough not to pay for an
    /// intern table entry (the observed index borrows it from the desired one instead).
    pub fn key(&mut self, k: &RecordKey) -> RecordKey {
        RecordKey::new(self.name(&k.zone), k.name.clone(), k.rtype).in_set(k.set)
    }
}
