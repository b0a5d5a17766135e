//! Reading the desired index: what a source declares, the records of a zone, the
//! errors to report, and the counts status shows. Nothing here changes the index.
use super::{DesiredIndex, DesiredRecord, NO_LABELS};
use crate::config::ZoneConfig;
use crate::source::{Labels, SourceError};
use dnsplane_common::rrset::at_name;
use dnsplane_common::{Name, RRSet, RecordKey, RecordType, SetId, SharedStr};
use std::collections::{BTreeMap, BTreeSet};

impl DesiredIndex {
    /// Every record `source` declares, as it declares it (a claim another source
    /// shadows included), with its labels, in key order within each zone.
    pub fn source_records(&self, source: &str) -> Vec<(RRSet, Labels)> {
        let Some((name, c)) = self.sources.get_key_value(source) else {
            return Vec::new();
        };
        c.keys
            .iter(&self.zones)
            .filter_map(|k| {
                let labels = c.labels.get(k).cloned().unwrap_or_default();
                self.claim_of(k, name).map(|r| (r.rrset(k), labels))
            })
            .collect()
    }

    /// The claim `source` holds on `key`, in the index or among the shadows
    /// (in a merged set, its own claim, not the merge).
    pub(super) fn claim_of(&self, key: &RecordKey, source: &SharedStr) -> Option<&DesiredRecord> {
        if let Some(claims) = self.unions.of_key(key) {
            return claims.iter().find(|r| &r.source == source);
        }
        let main = self
            .zones
            .get(&key.zone)
            .and_then(|z| z.get(key))
            .filter(|r| &r.source == source);
        main.or_else(|| self.shadows.get(key)?.iter().find(|r| &r.source == source))
    }

    /// `source`'s claims that another source's claim, with other values, holds back:
    /// each key, with the source in force there (in a merged set, the claims that cannot
    /// be merged).
    pub fn shadowed(&self, source: &str) -> Vec<(RecordKey, SharedStr)> {
        let mut out: Vec<(RecordKey, SharedStr)> = self
            .shadows
            .iter()
            .filter_map(|(key, claims)| {
                let mine = claims.iter().find(|r| &*r.source == source)?;
                let held = self.zones.get(&key.zone)?.get(key)?;
                (held.data != mine.data).then(|| (key.clone(), held.source.clone()))
            })
            .collect();
        out.extend(self.held_back(source));
        out.sort();
        out
    }

    /// The labels `source` gave its record at `key` ([`Labels::NONE`] when none).
    pub fn labels(&self, source: &str, key: &RecordKey) -> &Labels {
        self.sources
            .get(source)
            .and_then(|c| c.labels.get(key))
            .unwrap_or(&NO_LABELS)
    }

    pub fn zone(&self, zone: &Name) -> Option<&BTreeMap<RecordKey, DesiredRecord>> {
        self.zones.get(zone)
    }

    /// Every problem found in the sources, in source order, then the CNAME clashes,
    /// then the claims merged sets hold back (not the [`notices`](Self::notices)).
    pub fn errors(&self) -> Vec<SourceError> {
        let mut out: Vec<SourceError> = self
            .sources
            .values()
            .flat_map(|c| {
                c.errors
                    .iter()
                    .chain(&c.refusals)
                    .chain(c.conflicts.values())
                    .cloned()
            })
            .collect();
        out.extend(self.clashes.values().cloned());
        out.extend(self.unions.errors.values().flatten().cloned());
        out
    }

    /// What merged record sets report that is no error (sources that want different
    /// TTLs, and the one taken), in key order. Kept apart from
    /// [`errors`](Self::errors): those degrade the planner's health, and a fleet of
    /// sources with different TTLs is a normal configuration.
    pub fn notices(&self) -> Vec<SourceError> {
        self.unions.notices().cloned().collect()
    }

    /// The values of the record in force at `key`, each with the sources that want it
    /// (sorted by name): one source for a record that one source holds, every source
    /// whose claim has the value for a merged set. Empty when nothing is desired there.
    pub fn value_sources(&self, key: &RecordKey) -> Vec<(String, Vec<String>)> {
        let Some(record) = self.zones.get(&key.zone).and_then(|z| z.get(key)) else {
            return Vec::new();
        };
        let claims = self
            .unions
            .of_key(key)
            .unwrap_or(std::slice::from_ref(record));
        record
            .data
            .values()
            .map(|v| {
                let sources = claims
                    .iter()
                    .filter(|c| c.data.values().any(|w| w == v))
                    .map(|c| c.source.to_string())
                    .collect();
                (v.to_string(), sources)
            })
            .collect()
    }

    pub fn error_count(&self) -> usize {
        self.sources
            .values()
            .map(|c| c.errors.len() + c.refusals.len() + c.conflicts.len())
            .sum::<usize>()
            + self.clashes.len()
            + self.unions.errors.values().map(Vec::len).sum::<usize>()
    }

    /// The desired records at `names` (all types), for a targeted re-plan.
    pub fn at_names(
        &self,
        zone: &Name,
        names: &BTreeSet<Name>,
    ) -> BTreeMap<RecordKey, DesiredRecord> {
        let Some(records) = self.zones.get(zone) else {
            return BTreeMap::new();
        };
        names
            .iter()
            .flat_map(|n| at_name(records, zone, n).map(|(k, v)| (k.clone(), v.clone())))
            .collect()
    }

    /// The records `source` declares (shadowed ones included).
    pub fn source_len(&self, source: &str) -> usize {
        self.sources
            .get(source)
            .map_or(0, |c| c.keys.len(&self.zones))
    }

    /// Whether `source` declares `name` `rtype` (in `set`).
    pub fn holds(&self, source: &str, name: &Name, rtype: RecordType, set: SetId) -> bool {
        let Some(zone) = self.zone_of(name) else {
            return false;
        };
        let key = RecordKey::new(zone.name.clone(), name.clone(), rtype).in_set(set);
        self.sources
            .get(source)
            .is_some_and(|c| c.keys.contains(&self.zones, &key))
    }

    /// The record `source` has in force at `name` `rtype` (not one shadowed by
    /// another source's claim), with the zone that holds the name and its labels. In
    /// a merged set, `source`'s own claim (each source's is in force there, merged).
    pub fn in_force(
        &self,
        source: &str,
        name: &Name,
        rtype: RecordType,
        set: SetId,
    ) -> Option<(&ZoneConfig, &DesiredRecord, &Labels)> {
        let zone = self.zone_of(name)?;
        let key = RecordKey::new(zone.name.clone(), name.clone(), rtype).in_set(set);
        if let Some(claims) = self.unions.of_key(&key) {
            let mine = claims.iter().find(|c| *c.source == *source)?;
            return Some((zone, mine, self.labels(source, &key)));
        }
        let record = self.zones.get(&zone.name)?.get(&key)?;
        (*record.source == *source).then(|| (zone, record, self.labels(source, &key)))
    }

    /// The keys `source` declares (including claims another source shadows).
    pub fn source_keys(&self, source: &str) -> impl Iterator<Item = &RecordKey> {
        self.sources
            .get(source)
            .into_iter()
            .flat_map(|c| c.keys.iter(&self.zones))
    }

    /// Total desired records.
    pub fn len(&self) -> usize {
        self.zones.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
