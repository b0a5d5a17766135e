//! The keys each source declares, kept per zone, and kept at all only where they
//! cannot be read off the zone: a source that is alone in a zone (the common case: one
//! file source, or one pushing program, per zone) declares exactly the zone's keys,
//! so it keeps no set of its own there (24 bytes and a B-tree slot a record saved).
//! Once a second source declares records in the zone, the first one's keys there are
//! written out (O(zone), once), and when one source is left they are dropped again.
use super::{Contribution, DesiredIndex, DesiredRecord};
use dnsplane_common::{Name, RecordKey, RecordType, SharedStr};
use std::collections::{BTreeMap, BTreeSet};

/// The desired records by zone, as the index holds them.
pub(super) type Zones = BTreeMap<Name, BTreeMap<RecordKey, DesiredRecord>>;

/// The keys of one source, per zone it declares records in.
#[derive(Debug, Default)]
pub(super) struct SourceKeys(BTreeMap<Name, ZoneKeys>);

#[derive(Debug, PartialEq, Eq)]
pub(super) enum ZoneKeys {
    /// The only source declaring records in the zone: its keys are the zone's keys
    /// (no other source has a claim there, so none is shadowed either).
    Sole,
    /// Beside other sources: its own keys there, shadowed claims included.
    Shared(BTreeSet<RecordKey>),
}

impl SourceKeys {
    /// Every key, zone by zone, in key order.
    pub(super) fn iter<'a>(&'a self, zones: &'a Zones) -> impl Iterator<Item = &'a RecordKey> {
        self.0.iter().flat_map(move |(zone, keys)| {
            let (sole, shared) = match keys {
                ZoneKeys::Sole => (zones.get(zone).map(BTreeMap::keys), None),
                ZoneKeys::Shared(set) => (None, Some(set.iter())),
            };
            sole.into_iter()
                .flatten()
                .chain(shared.into_iter().flatten())
        })
    }

    /// The key as held (sharing its name with the index), if declared.
    pub(super) fn get<'a>(&'a self, zones: &'a Zones, key: &RecordKey) -> Option<&'a RecordKey> {
        match self.0.get(&key.zone)? {
            ZoneKeys::Sole => zones.get(&key.zone)?.get_key_value(key).map(|(k, _)| k),
            ZoneKeys::Shared(set) => set.get(key),
        }
    }

    pub(super) fn contains(&self, zones: &Zones, key: &RecordKey) -> bool {
        self.get(zones, key).is_some()
    }

    pub(super) fn len(&self, zones: &Zones) -> usize {
        self.0
            .iter()
            .map(|(zone, keys)| match keys {
                ZoneKeys::Sole => zones.get(zone).map_or(0, BTreeMap::len),
                ZoneKeys::Shared(set) => set.len(),
            })
            .sum()
    }

    /// The keys at `name` (every type), in key order.
    pub(super) fn at_name<'a>(
        &'a self,
        zones: &'a Zones,
        zone: &Name,
        name: &'a Name,
    ) -> impl Iterator<Item = &'a RecordKey> {
        let from = RecordKey::new(zone.clone(), name.clone(), RecordType::ALL[0]);
        let (sole, shared) = match self.0.get(zone) {
            Some(ZoneKeys::Sole) => (
                zones.get(zone).map(|z| z.range(from..).map(|(k, _)| k)),
                None,
            ),
            Some(ZoneKeys::Shared(set)) => (None, Some(set.range(from..))),
            None => (None, None),
        };
        sole.into_iter()
            .flatten()
            .chain(shared.into_iter().flatten())
            .take_while(move |k| k.name == *name)
    }

    pub(super) fn zone(&self, zone: &Name) -> Option<&ZoneKeys> {
        self.0.get(zone)
    }

    pub(super) fn zones(&self) -> impl Iterator<Item = &Name> {
        self.0.keys()
    }

    pub(super) fn set_zone(&mut self, zone: Name, keys: ZoneKeys) {
        self.0.insert(zone, keys);
    }

    pub(super) fn drop_zone(&mut self, zone: &Name) {
        self.0.remove(zone);
    }

    /// Forgets `key` where it is kept apart (a sole source's keys leave with the
    /// zone's records).
    pub(super) fn remove(&mut self, key: &RecordKey) {
        if let Some(ZoneKeys::Shared(set)) = self.0.get_mut(&key.zone) {
            set.remove(key);
        }
    }

    /// Adds `key` in a zone where the source already declares records, kept apart.
    /// False when the source declares nothing in that zone yet (the caller decides
    /// whether it is alone there).
    pub(super) fn add(&mut self, key: &RecordKey) -> bool {
        match self.0.get_mut(&key.zone) {
            Some(ZoneKeys::Sole) => true,
            Some(ZoneKeys::Shared(set)) => {
                set.insert(key.clone());
                true
            }
            None => false,
        }
    }
}

/// Who declares what, per zone: the bookkeeping that lets a source alone in a zone
/// keep no key set there.
impl DesiredIndex {
    /// How `source` keeps its keys in `zone`, where it starts declaring records: apart
    /// when another source declares records there (whose keys are then written out
    /// if it was alone), else not at all.
    pub(super) fn enter_zone(&mut self, zone: &Name, source: &SharedStr) -> ZoneKeys {
        let others = self
            .sources
            .iter()
            .any(|(s, c)| s != source && c.keys.zone(zone).is_some());
        if !others {
            return ZoneKeys::Sole;
        }
        for c in self.sources.values_mut() {
            if c.keys.zone(zone) == Some(&ZoneKeys::Sole) {
                let keys = self
                    .zones
                    .get(zone)
                    .map(|z| z.keys().cloned().collect())
                    .unwrap_or_default();
                c.keys.set_zone(zone.clone(), ZoneKeys::Shared(keys));
            }
        }
        ZoneKeys::Shared(BTreeSet::new())
    }

    /// Registers `key` among what `source` declares, before its claim goes in.
    pub(super) fn declare(
        &mut self,
        contribution: &mut Contribution,
        source: &SharedStr,
        key: &RecordKey,
    ) {
        if !contribution.keys.add(key) {
            let keys = self.enter_zone(&key.zone, source);
            contribution.keys.set_zone(key.zone.clone(), keys);
            contribution.keys.add(key);
        }
    }

    /// After an update: a source that declares nothing more in one of `zones` lets
    /// go of it, and a source left alone in a zone drops its written-out keys there.
    pub(super) fn settle_declarers(&mut self, mut zones: Vec<Name>) {
        zones.sort();
        zones.dedup();
        for zone in zones {
            let in_zone = self.zones.get(&zone).map_or(0, BTreeMap::len);
            let mut declaring = 0;
            for c in self.sources.values_mut() {
                match c.keys.zone(&zone) {
                    Some(ZoneKeys::Sole) if in_zone == 0 => c.keys.drop_zone(&zone),
                    Some(ZoneKeys::Shared(set)) if set.is_empty() => c.keys.drop_zone(&zone),
                    Some(_) => declaring += 1,
                    None => {}
                }
            }
            if declaring == 1 {
                for c in self.sources.values_mut() {
                    if matches!(c.keys.zone(&zone), Some(ZoneKeys::Shared(_))) {
                        c.keys.set_zone(zone.clone(), ZoneKeys::Sole);
                    }
                }
            }
        }
    }
}
