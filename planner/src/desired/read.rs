//! Reading the desired index: what a source declares, the records of a zone, the
//! errors to report, and the counts status shows. Nothing here changes the index.
use super::{DesiredIndex, DesiredRecord, NO_LABELS};
use crate::config::ZoneConfig;
use crate::source::{Labels, SourceError};
use dnsplane_common::rrset::at_name;
use dnsplane_common::{Name, RRSet, RecordKey, RecordType, SetId};
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

    /// Every problem found in the sources, in source order, then the CNAME clashes.
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
        out
    }

    pub fn error_count(&self) -> usize {
        self.sources
            .values()
            .map(|c| c.errors.len() + c.refusals.len() + c.conflicts.len())
            .sum::<usize>()
            + self.clashes.len()
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
    /// another source's claim), with the zone that holds the name and its labels.
    pub fn in_force(
        &self,
        source: &str,
        name: &Name,
        rtype: RecordType,
        set: SetId,
    ) -> Option<(&ZoneConfig, &DesiredRecord, &Labels)> {
        let zone = self.zone_of(name)?;
        let key = RecordKey::new(zone.name.clone(), name.clone(), rtype).in_set(set);
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
