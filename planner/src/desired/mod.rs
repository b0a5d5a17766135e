//! The desired state: entries from every source, placed in their zones and checked
//! across entries (duplicates, CNAME beside other data, reserved names, unknown zones).
//!
//! It is maintained incrementally: a source's new snapshot is diffed against what that
//! source contributed before, so an update costs O(size of that source), never O(size
//! of the world), and reports exactly which names it touched so that only those are
//! re-planned. Names are interned and a record keeps only its RRSet plus shared
//! pointers to its source and resource, so the index stays compact. Labels are kept
//! beside the records, per source, only for the records that have any: they are not
//! data (a change of labels alone touches no name, so nothing is re-planned), and a
//! million records without labels pay nothing for them.
//!
//! - [`record`]: what the index holds per record, and the interner that shares names;
//! - [`rules`]: the rules across records (duplicates, CNAME beside other data) and the
//!   lines their errors point at;
//! - [`keys`]: the keys each source declares, and who declares what in each zone;
//! - [`read`]: the queries on the index (a source's records, a zone, errors, counts);
//! - [`merged`]: the record sets several sources want in a `merge = "union"` zone;
//! - [`live`]: a live source's change taken as a patch.
use crate::config::ZoneConfig;
use crate::ownership;
use crate::source::{DesiredEntry, EntryKey, Labels, SourceError};
use dnsplane_common::{Name, RRSet, RecordKey, SharedStr};
use rules::Lines;
use std::collections::{BTreeMap, BTreeSet, HashMap};

mod keys;
mod live;
mod merged;
mod read;
mod record;
mod rules;

use keys::SourceKeys;

#[cfg(test)]
pub(crate) use record::desired_map;
pub use record::{DesiredRecord, Interner};
pub use rules::Checked;

/// What one source currently contributes.
#[derive(Debug, Default)]
struct Contribution {
    /// Keys this source holds in the index, including ones shadowed by another
    /// source's claim: per zone, none kept where the source is alone ([`keys`]).
    keys: SourceKeys,
    /// The source's own errors and those of its entries.
    errors: Vec<SourceError>,
    /// How many of `errors`, from the first, are the source's own.
    own_errors: usize,
    /// Input the source took no entry from (a webhook's refused endpoints), as the
    /// source last reported it: shown with its errors, replaced whole each time.
    refusals: Vec<SourceError>,
    /// Its claims that another source holds with other values, per key, so that a
    /// patch of the key also drops the error.
    conflicts: BTreeMap<RecordKey, SourceError>,
    /// The labels of its claims that have any (shadowed claims included).
    labels: LabelsOf,
}

/// Labels per key, for the keys that have any.
pub(crate) type LabelsOf = HashMap<RecordKey, Labels>;

/// Entries placed: the records, first one per key; their labels; the others' errors.
type Claims = (
    BTreeMap<RecordKey, DesiredRecord>,
    LabelsOf,
    Vec<SourceError>,
);

/// What a record without labels reports.
static NO_LABELS: Labels = Labels::NONE;

fn touch(touched: &mut Touched, key: &RecordKey) {
    touched
        .entry(key.zone.clone())
        .or_default()
        .insert(key.name.clone());
}

/// Names touched by an update, per zone.
pub type Touched = BTreeMap<Name, BTreeSet<Name>>;

/// The merged desired state of all sources.
#[derive(Debug)]
pub struct DesiredIndex {
    zones_cfg: Vec<ZoneConfig>,
    /// The configured zones by name, to find a name's zone by its suffixes: a scan of
    /// the zones per record made a load O(records × zones).
    zone_names: HashMap<Box<str>, usize>,
    zones: BTreeMap<Name, BTreeMap<RecordKey, DesiredRecord>>,
    /// Claims of a key by a second source (rare): kept so that the key falls back to
    /// them when the first claim goes away.
    shadows: HashMap<RecordKey, Vec<DesiredRecord>>,
    sources: BTreeMap<SharedStr, Contribution>,
    /// A CNAME beside other desired data at its name, per key of the CNAME.
    clashes: BTreeMap<RecordKey, SourceError>,
    /// The keys several sources claim in `merge = "union"` zones ([`merged`]).
    unions: merged::Unions,
    /// Records inserted into each zone's map one by one since it was last built in one
    /// go; see [`DesiredIndex::settle`].
    grown: HashMap<Name, usize>,
    pub interner: Interner,
}

pub use crate::source::zones::zone_for;

impl DesiredIndex {
    pub fn new(zones: &[ZoneConfig]) -> DesiredIndex {
        let mut interner = Interner::default();
        DesiredIndex {
            zones: zones
                .iter()
                .map(|z| (interner.name(&z.name), BTreeMap::new()))
                .collect(),
            zones_cfg: zones.to_vec(),
            zone_names: zones
                .iter()
                .enumerate()
                .map(|(i, z)| (z.name.as_str().into(), i))
                .collect(),
            shadows: HashMap::new(),
            sources: BTreeMap::new(),
            clashes: BTreeMap::new(),
            unions: merged::Unions::of(zones),
            grown: HashMap::new(),
            interner,
        }
    }

    /// The configured zone that holds `name` (the longest matching suffix), found by
    /// looking up the name and then each of its parents: O(labels), whatever the
    /// number of zones.
    fn zone_of(&self, name: &Name) -> Option<&ZoneConfig> {
        let text = name.as_str();
        let suffixes = std::iter::once(0)
            .chain(text.match_indices('.').map(|(i, _)| i + 1))
            .filter(|&i| i < text.len());
        suffixes
            .filter_map(|i| self.zone_names.get(&text[i..]))
            .map(|&i| &self.zones_cfg[i])
            .next()
            .or_else(|| self.zone_names.get(".").map(|&i| &self.zones_cfg[i]))
    }

    /// Replaces everything `source` declares with `entries` (and its own `errors`).
    /// Returns the names whose desired records changed, per zone. Costs
    /// O(entries · log(index)): the old and new claims are compared key by key.
    pub fn update_source(
        &mut self,
        source: &str,
        entries: &[DesiredEntry],
        errors: Vec<SourceError>,
    ) -> Touched {
        let source = self.interner.str(source);
        let (new, labels, entry_errors) = self.claims(&source, entries);
        self.replace_claims(source, new, labels, entry_errors, entries, errors)
    }

    /// [`update_source`](Self::update_source) with the entries already placed and
    /// checked on their own ([`DesiredIndex::checked`], which a push runs before it is
    /// accepted): they are not placed a second time, only their shared names are
    /// re-interned here.
    pub fn update_source_checked(
        &mut self,
        source: &str,
        checked: Checked,
        entries: &[DesiredEntry],
        errors: Vec<SourceError>,
    ) -> Touched {
        let source = self.interner.str(source);
        let new = checked
            .records
            .into_iter()
            .map(|(key, record)| {
                let key = self.interner.key(&key);
                let resource = self.interner.shared(&record.resource);
                let record = DesiredRecord {
                    source: source.clone(),
                    resource,
                    ..record
                };
                (key, record)
            })
            .collect();
        let labels = checked
            .labels
            .into_iter()
            .map(|(key, labels)| (self.interner.key(&key), labels))
            .collect();
        let mut entry_errors = checked.entry_errors;
        for e in &mut entry_errors {
            e.source = source.to_string();
        }
        self.replace_claims(source, new, labels, entry_errors, entries, errors)
    }

    /// Puts `new` (the claims of `entries`) in force as everything `source` declares.
    fn replace_claims(
        &mut self,
        source: SharedStr,
        new: BTreeMap<RecordKey, DesiredRecord>,
        labels: LabelsOf,
        mut entry_errors: Vec<SourceError>,
        entries: &[DesiredEntry],
        errors: Vec<SourceError>,
    ) -> Touched {
        let lines = Lines::of(entries);
        let mut errors = errors;
        let own_errors = errors.len();
        errors.append(&mut entry_errors);
        let mut touched = Touched::new();
        let old = self.sources.remove(&source).unwrap_or_default();
        let mut contribution = Contribution {
            keys: SourceKeys::default(),
            errors,
            own_errors,
            // A new whole state of the source is no answer to what it refused.
            refusals: old.refusals.clone(),
            conflicts: BTreeMap::new(),
            // Labels are no data: replaced whole, whatever the claims do.
            labels,
        };
        // Withdraw this source's old claims that are gone or changed.
        contribution.conflicts = old
            .conflicts
            .into_iter()
            .filter(|(key, _)| self.unchanged(&source, key, &new))
            .collect();
        let gone: Vec<RecordKey> = old
            .keys
            .iter(&self.zones)
            .filter(|key| !self.unchanged(&source, key, &new))
            .cloned()
            .collect();
        for key in gone {
            if self.withdraw(&key, &source) {
                touch(&mut touched, &key);
            }
        }
        // The new claims' keys, per zone: none kept where the source is alone.
        let mut zones: Vec<Name> = new.keys().map(|k| k.zone.clone()).collect();
        zones.dedup();
        for zone in zones {
            let keys = self.enter_zone(&zone, &source);
            contribution.keys.set_zone(zone, keys);
        }
        for key in new.keys() {
            contribution.keys.add(key);
        }
        // Add the new claims. Built in one go where possible: a B-tree filled key by
        // key in order leaves its nodes about half full, one built from a sorted run
        // fills them (a loaded zone takes ~40 % less memory).
        let mut bulk: Vec<(RecordKey, DesiredRecord)> = Vec::new();
        for (key, record) in new {
            if bulk.last().is_some_and(|(k, _)| k.zone != key.zone) {
                self.fill_zone(std::mem::take(&mut bulk), &mut touched);
            }
            let empty_zone = self.zones.get(&key.zone).is_some_and(BTreeMap::is_empty);
            if empty_zone && !self.shadows.contains_key(&key) {
                bulk.push((key, record));
            } else {
                self.claim(
                    &source,
                    key,
                    record,
                    &lines,
                    &mut contribution,
                    &mut touched,
                );
            }
        }
        self.fill_zone(bulk, &mut touched);
        let left = old.keys.zones().cloned().collect();
        self.finish_update(source, contribution, left, &mut touched, &lines);
        touched
    }

    /// Puts `records` (sorted, all of one zone that holds nothing yet) in their zone.
    fn fill_zone(&mut self, records: Vec<(RecordKey, DesiredRecord)>, touched: &mut Touched) {
        let Some((first, _)) = records.first() else {
            return;
        };
        let zone = first.zone.clone();
        for (key, _) in &records {
            touch(touched, key);
        }
        self.grown.remove(&zone);
        let map = self.zones.entry(zone).or_default();
        debug_assert!(map.is_empty());
        *map = records.into_iter().collect();
    }

    /// Changes part of what `source` declares: `upserts` replace or add the entries at
    /// their (name, type), `deletes` withdraw them. What the source declares elsewhere
    /// stays as it is. Costs O(touched · log(index)), whatever the size of the source.
    /// Returns the names whose desired records changed, per zone.
    pub fn patch_source(
        &mut self,
        source: &str,
        upserts: &[DesiredEntry],
        deletes: &[EntryKey],
    ) -> Touched {
        let source = self.interner.str(source);
        let (new, labels, errors) = self.claims(&source, upserts);
        self.patch_claims(source, (new, labels, errors), upserts, deletes)
    }

    /// [`patch_source`](Self::patch_source) with the upserts' claims made; errors
    /// point at the lines of `declared` (the upserts, or a live source's snapshot).
    fn patch_claims(
        &mut self,
        source: SharedStr,
        (new, mut labels, mut errors): Claims,
        declared: &[DesiredEntry],
        deletes: &[EntryKey],
    ) -> Touched {
        let lines = Lines::of(declared);
        let mut touched = Touched::new();
        let mut contribution = self.sources.remove(&source).unwrap_or_default();
        contribution.errors.append(&mut errors);
        let deleted = deletes.iter().filter_map(|d| {
            self.zone_of(&d.name)
                .map(|z| RecordKey::new(z.name.clone(), d.name.clone(), d.rtype).in_set(d.set))
        });
        let gone: BTreeSet<RecordKey> = deleted.chain(new.keys().cloned()).collect();
        // Labels follow the patch whether or not the data changes.
        for key in &gone {
            match labels.remove_entry(key) {
                Some((key, l)) => contribution.labels.insert(key, l),
                None => contribution.labels.remove(key),
            };
        }
        for key in gone {
            let Some(key) = contribution.keys.get(&self.zones, &key).cloned() else {
                continue;
            };
            if self.unchanged(&source, &key, &new) {
                continue;
            }
            contribution.keys.remove(&key);
            contribution.conflicts.remove(&key);
            if self.withdraw(&key, &source) {
                touch(&mut touched, &key);
            }
        }
        let before = contribution.keys.zones().cloned().collect();
        for (key, record) in new {
            self.declare(&mut contribution, &source, &key);
            self.claim(
                &source,
                key,
                record,
                &lines,
                &mut contribution,
                &mut touched,
            );
        }
        self.finish_update(source, contribution, before, &mut touched, &lines);
        touched
    }

    /// Ends an update of `source`: puts its contribution back, settles who declares
    /// what in the zones it was in (`zones`) or is in now, rebuilds the maps that took
    /// many records one by one, and checks CNAME clashes at the touched names.
    fn finish_update(
        &mut self,
        source: SharedStr,
        contribution: Contribution,
        mut zones: Vec<Name>,
        touched: &mut Touched,
        lines: &Lines<'_>,
    ) {
        self.settle_unions(touched);
        zones.extend(contribution.keys.zones().cloned());
        self.sources.insert(source, contribution);
        zones.extend(touched.keys().cloned());
        self.settle_declarers(zones);
        self.settle(touched);
        self.check_clashes(touched, lines);
    }

    /// The records `entries` declare, placed in their zones, first one per key; and
    /// the problems with the others.
    fn claims(&mut self, source: &SharedStr, entries: &[DesiredEntry]) -> Claims {
        let mut errors = Vec::new();
        let mut new: BTreeMap<RecordKey, DesiredRecord> = BTreeMap::new();
        let mut labels = LabelsOf::new();
        for e in entries {
            let error = |message: String| SourceError {
                source: source.to_string(),
                location: e.origin.location.to_string(),
                record: format!("{} {}", e.name, e.rtype),
                message,
            };
            if ownership::is_owner_record_name(&e.name) {
                errors.push(error(
                    "names starting with `_dnsplane-` are reserved for ownership records".into(),
                ));
                continue;
            }
            let Some(zone) = self.zone_of(&e.name) else {
                errors.push(error(crate::source::zones::outside_message(
                    &self.zones_cfg,
                    &e.name,
                )));
                continue;
            };
            // The name copied: see `Name::detached`.
            let key = e.key(zone.name.clone());
            let key = RecordKey {
                name: e.name.detached(),
                ..key
            };
            // A record whose ownership record cannot exist would be written never and
            // reported in conflict for ever: refused here, with the reason.
            if ownership::owner_record_key(&key).is_none() {
                errors.push(error(format!(
                    "the name is too long to carry its ownership record ({} + the name passes DNS's 255-octet limit); shorten it",
                    ownership::mark_label(&key)
                )));
                continue;
            }
            let rrset = match RRSet::from_canonical_with(
                key.clone(),
                e.ttl.unwrap_or(zone.default_ttl),
                e.values.clone(),
                e.properties.clone(),
            ) {
                Ok(r) => r,
                Err(err) => {
                    errors.push(error(err.to_string()));
                    continue;
                }
            };
            if let Some(first) = new.get(&key) {
                if !first.data.same_as(&rrset) {
                    errors.push(error(format!(
                        "also declared by {} with other values; keeping that one",
                        first.resource
                    )));
                }
                continue;
            }
            let key = self.interner.key(&key);
            let resource = self.interner.arc(&e.origin.resource);
            let record = DesiredRecord::new(&rrset, source.clone(), resource);
            if !e.labels.is_empty() {
                labels.insert(key.clone(), e.labels.clone());
            }
            new.insert(key, record);
        }
        (new, labels, errors)
    }

    /// Whether `source`'s claim on `key` stays as it is under `new`.
    fn unchanged(
        &self,
        source: &SharedStr,
        key: &RecordKey,
        new: &BTreeMap<RecordKey, DesiredRecord>,
    ) -> bool {
        new.get(key)
            .is_some_and(|n| self.claim_of(key, source).is_some_and(|o| o.data == n.data))
    }

    /// Puts `source`'s claim on `key` in force, or among the shadows when another
    /// source holds the key (with an error for it when their values differ).
    fn claim(
        &mut self,
        source: &SharedStr,
        key: RecordKey,
        record: DesiredRecord,
        lines: &Lines<'_>,
        contribution: &mut Contribution,
        touched: &mut Touched,
    ) {
        if self.claim_of(&key, source).is_some() {
            return; // unchanged claim, kept
        }
        if self.joins(&key) {
            self.join(key, record);
            return;
        }
        let records = self.zones.entry(key.zone.clone()).or_default();
        match records.get(&key) {
            Some(first) if &first.source != source => {
                if first.data != record.data {
                    let at = lines.first(&key.name, key.rtype);
                    contribution.conflicts.insert(
                        key.clone(),
                        SourceError {
                            source: source.to_string(),
                            location: at,
                            record: key.to_string(),
                            message: format!(
                                "also declared by {} ({}) with other values; keeping that one",
                                first.resource, first.source
                            ),
                        },
                    );
                }
                self.shadows.entry(key).or_default().push(record);
            }
            _ => {
                touch(touched, &key);
                let zone = key.zone.clone();
                if records.insert(key, record).is_none() {
                    *self.grown.entry(zone).or_default() += 1;
                }
            }
        }
    }

    /// Rebuilds in one go the map of each touched zone that has taken more than a
    /// sixteenth of its records one by one since it was last built: a B-tree filled
    /// key by key keeps its nodes about half full (a zone loaded in several steps held
    /// 180 bytes a record in its map instead of about 100). Amortised O(1) a record.
    fn settle(&mut self, touched: &Touched) {
        for zone in touched.keys() {
            let Some(grown) = self.grown.get_mut(zone) else {
                continue;
            };
            let Some(records) = self.zones.get_mut(zone) else {
                continue;
            };
            if *grown > records.len() / 16 {
                *records = std::mem::take(records).into_iter().collect();
                *grown = 0;
            }
        }
    }

    /// Removes `source`'s claim on `key`; returns true when the effective record changed.
    fn withdraw(&mut self, key: &RecordKey, source: &SharedStr) -> bool {
        if self.leave(key, source) {
            return false; // settled at the end of the update
        }
        if let Some(sh) = self.shadows.get_mut(key) {
            let before = sh.len();
            sh.retain(|r| &r.source != source);
            let removed_shadow = sh.len() != before;
            if sh.is_empty() {
                self.shadows.remove(key);
            }
            if removed_shadow {
                return false;
            }
        }
        let Some(records) = self.zones.get_mut(&key.zone) else {
            return false;
        };
        if records.get(key).is_none_or(|r| &r.source != source) {
            return false;
        }
        records.remove(key);
        // Promote the next claim, if any.
        if let Some(mut sh) = self.shadows.remove(key) {
            let next = sh.remove(0);
            settle_shadow_errors(&mut self.sources, key, &next, &sh);
            records.insert(key.clone(), next);
            if !sh.is_empty() {
                self.shadows.insert(key.clone(), sh);
            }
        }
        true
    }

    /// Replaces what `source` reports about input it took no entry from.
    pub fn set_refusals(&mut self, source: &str, refusals: Vec<SourceError>) {
        let source = self.interner.str(source);
        self.sources.entry(source).or_default().refusals = refusals;
    }
}

/// `promoted` is now in force at `key`: its "keeping that one" error is over, and the
/// claims still shadowed are measured against it (an error naming the source that
/// withdrew would stay for ever, though nothing clashes with it any more).
fn settle_shadow_errors(
    sources: &mut BTreeMap<SharedStr, Contribution>,
    key: &RecordKey,
    promoted: &DesiredRecord,
    shadowed: &[DesiredRecord],
) {
    if let Some(c) = sources.get_mut(&promoted.source) {
        c.conflicts.remove(key);
    }
    for r in shadowed {
        let Some(c) = sources.get_mut(&r.source) else {
            continue;
        };
        if r.data == promoted.data {
            c.conflicts.remove(key);
        } else if let Some(e) = c.conflicts.get_mut(key) {
            e.message = format!(
                "also declared by {} ({}) with other values; keeping that one",
                promoted.resource, promoted.source
            );
        }
    }
}

#[cfg(test)]
mod tests;
