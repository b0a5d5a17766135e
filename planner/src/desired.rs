//! The desired state: entries from every source, placed in their zones and checked
//! across entries (duplicates, CNAME beside other data, reserved names, unknown zones).
//!
//! It is maintained incrementally: a source's new snapshot is diffed against what that
//! source contributed before, so an update costs O(size of that source), never O(size
//! of the world), and reports exactly which names it touched so that only those are
//! re-planned. Names are interned and a record keeps only its RRSet plus shared
//! pointers to its source and resource, so the index stays compact.
use crate::config::ZoneConfig;
use crate::ownership;
use crate::source::{DesiredEntry, SourceError};
use dnsplane_common::rrset::at_name;
use dnsplane_common::{Name, RRData, RRSet, RecordKey, RecordType};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// One desired RRSet, without its key (the index's map key), and who asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredRecord {
    /// TTL and values; the value storage is shared with the observed copy when equal.
    pub data: RRData,
    /// The source that contributed it (`file:0`, `push:my-app`).
    pub source: Arc<str>,
    /// The object that asked for it (`DNSEndpoint default/web`); goes into the
    /// ownership record.
    pub resource: Arc<str>,
}

impl DesiredRecord {
    pub fn new(rrset: &RRSet, source: Arc<str>, resource: Arc<str>) -> DesiredRecord {
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

/// Shares equal strings and names, so that a million records do not carry a million
/// copies of their zone, resource or source names.
#[derive(Debug, Default)]
pub struct Interner {
    names: HashSet<Name>,
    /// The last string [`arc`](Self::arc) was given, and its interned copy.
    last: Option<(Arc<str>, Arc<str>)>,
    strings: HashSet<Arc<str>>,
}

impl Interner {
    pub fn name(&mut self, n: &Name) -> Name {
        if let Some(existing) = self.names.get(n) {
            return existing.clone();
        }
        self.names.insert(n.clone());
        n.clone()
    }

    pub fn str(&mut self, s: &str) -> Arc<str> {
        if let Some(existing) = self.strings.get(s) {
            return existing.clone();
        }
        let a: Arc<str> = s.into();
        self.strings.insert(a.clone());
        a
    }

    /// [`str`](Self::str) for a string already shared: kept as the interned copy
    /// when it is the first of its text (no new allocation). The last one asked for is
    /// remembered by pointer: consecutive entries mostly share theirs (one push, one
    /// manifest's resource), so most skip the table.
    pub fn arc(&mut self, s: &Arc<str>) -> Arc<str> {
        if let Some((given, interned)) = &self.last
            && Arc::ptr_eq(given, s)
        {
            return interned.clone();
        }
        let interned = match self.strings.get(s) {
            Some(existing) => existing.clone(),
            None => {
                self.strings.insert(s.clone());
                s.clone()
            }
        };
        self.last = Some((s.clone(), interned.clone()));
        interned
    }

    /// Shares the zone name; a record's own name is unique enough not to pay for an
    /// intern table entry (the observed index borrows it from the desired one instead).
    pub fn key(&mut self, k: &RecordKey) -> RecordKey {
        RecordKey::new(self.name(&k.zone), k.name.clone(), k.rtype)
    }
}

/// What one source currently contributes.
#[derive(Debug, Default)]
struct Contribution {
    /// Keys this source holds in the index, including ones shadowed by another
    /// source's claim. A set, so that a patch finds and drops a key in O(log n).
    keys: BTreeSet<RecordKey>,
    /// The source's own errors and those of its entries.
    errors: Vec<SourceError>,
    /// Its claims that another source holds with other values, per key, so that a
    /// patch of the key also drops the error.
    conflicts: BTreeMap<RecordKey, SourceError>,
}

fn touch(touched: &mut Touched, key: &RecordKey) {
    touched
        .entry(key.zone.clone())
        .or_default()
        .insert(key.name.clone());
}

/// Names touched by an update, per zone.
pub type Touched = BTreeMap<Name, BTreeSet<Name>>;

/// Where each name (and name and type) of an update was declared, indexed at most
/// once per update so that pointing an error at its line costs a lookup, not a scan
/// of the source (which made an update quadratic in the names it touched). Built on
/// the first question: an update without errors never pays for it.
struct Lines<'a> {
    entries: &'a [DesiredEntry],
    built: std::cell::OnceCell<LineIndex<'a>>,
}

struct LineIndex<'a> {
    /// The first entry of each (name, type).
    first: HashMap<(&'a Name, RecordType), usize>,
    /// Per name: the last CNAME entry at it, else the last entry at it.
    at_name: HashMap<&'a Name, (usize, bool)>,
}

impl<'a> Lines<'a> {
    fn of(entries: &'a [DesiredEntry]) -> Lines<'a> {
        Lines {
            entries,
            built: std::cell::OnceCell::new(),
        }
    }

    fn index(&self) -> &LineIndex<'a> {
        self.built.get_or_init(|| {
            let entries = self.entries;
            let mut first = HashMap::with_capacity(entries.len());
            let mut at_name: HashMap<&Name, (usize, bool)> = HashMap::with_capacity(entries.len());
            for (i, e) in entries.iter().enumerate() {
                first.entry((&e.name, e.rtype)).or_insert(i);
                let cname = e.rtype == RecordType::Cname;
                let slot = at_name.entry(&e.name).or_insert((i, cname));
                if cname || !slot.1 {
                    *slot = (i, cname);
                }
            }
            LineIndex { first, at_name }
        })
    }

    /// Where the first entry of (name, type) was declared.
    fn first(&self, name: &Name, rtype: RecordType) -> String {
        self.index()
            .first
            .get(&(name, rtype))
            .map(|&i| self.entries[i].origin.location.clone())
            .unwrap_or_default()
    }

    /// Where a CNAME clash at `name` points: the CNAME's line if this update declared
    /// one there, else its last record at that name.
    fn at_name(&self, name: &Name) -> String {
        self.index()
            .at_name
            .get(name)
            .map(|&(i, _)| self.entries[i].origin.location.clone())
            .unwrap_or_default()
    }
}

/// A source's entries placed in their zones and checked on their own
/// ([`DesiredIndex::checked`]).
#[derive(Debug)]
pub struct Checked {
    records: BTreeMap<RecordKey, DesiredRecord>,
    /// The problems of single entries (zone, reserved name, duplicate): the source's
    /// errors once in the index.
    entry_errors: Vec<SourceError>,
    /// Every problem, the CNAME rule's included: a push with any is refused.
    pub errors: Vec<SourceError>,
}

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
    sources: BTreeMap<Arc<str>, Contribution>,
    /// A CNAME beside other desired data at its name, per key of the CNAME.
    clashes: BTreeMap<RecordKey, SourceError>,
    pub interner: Interner,
}

/// Why the records `at` one name break the CNAME rule (RFC 1034 §3.6.2), if they do.
fn cname_clash(at: &[&RecordKey]) -> Option<String> {
    if at.len() < 2 || !at.iter().any(|k| k.rtype == RecordType::Cname) {
        return None;
    }
    let others: Vec<&str> = at
        .iter()
        .filter(|k| k.rtype != RecordType::Cname)
        .map(|k| k.rtype.as_str())
        .collect();
    Some(format!(
        "a CNAME cannot share its name with other data (also desired here: {}); held back",
        others.join(", ")
    ))
}

/// The configured zone that holds `name`: the longest matching suffix.
pub fn zone_for<'a>(zones: &'a [ZoneConfig], name: &Name) -> Option<&'a ZoneConfig> {
    zones
        .iter()
        .filter(|z| name.is_within(&z.name))
        .max_by_key(|z| z.name.as_str().len())
}

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
        let (new, entry_errors) = self.claims(&source, entries);
        self.replace_claims(source, new, entry_errors, entries, errors)
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
                let resource = self.interner.arc(&record.resource);
                let record = DesiredRecord {
                    source: source.clone(),
                    resource,
                    ..record
                };
                (key, record)
            })
            .collect();
        let mut entry_errors = checked.entry_errors;
        for e in &mut entry_errors {
            e.source = source.to_string();
        }
        self.replace_claims(source, new, entry_errors, entries, errors)
    }

    /// Puts `new` (the claims of `entries`) in force as everything `source` declares.
    fn replace_claims(
        &mut self,
        source: Arc<str>,
        new: BTreeMap<RecordKey, DesiredRecord>,
        mut entry_errors: Vec<SourceError>,
        entries: &[DesiredEntry],
        errors: Vec<SourceError>,
    ) -> Touched {
        let lines = Lines::of(entries);
        let mut errors = errors;
        errors.append(&mut entry_errors);
        let mut touched = Touched::new();
        let old = self.sources.remove(&source).unwrap_or_default();
        let mut contribution = Contribution {
            keys: BTreeSet::new(),
            errors,
            conflicts: BTreeMap::new(),
        };
        // Withdraw this source's old claims that are gone or changed.
        let mut old_conflicts = old.conflicts;
        for key in old.keys {
            if self.unchanged(&source, &key, &new) {
                if let Some(c) = old_conflicts.remove(&key) {
                    contribution.conflicts.insert(key, c);
                }
                continue;
            }
            if self.withdraw(&key, &source) {
                touch(&mut touched, &key);
            }
        }
        // Add the new claims. Built in one go where possible: a B-tree filled key by
        // key in order leaves its nodes about half full, one built from a sorted run
        // fills them (a loaded zone takes ~40 % less memory).
        contribution.keys = new.keys().cloned().collect();
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
        self.sources.insert(source, contribution);
        self.check_clashes(&touched, &lines);
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
        deletes: &[(Name, RecordType)],
    ) -> Touched {
        let source = self.interner.str(source);
        let lines = Lines::of(upserts);
        let (new, mut errors) = self.claims(&source, upserts);
        let mut touched = Touched::new();
        let mut contribution = self.sources.remove(&source).unwrap_or_default();
        contribution.errors.append(&mut errors);
        let deleted = deletes.iter().filter_map(|(name, rtype)| {
            self.zone_of(name)
                .map(|z| RecordKey::new(z.name.clone(), name.clone(), *rtype))
        });
        let gone: BTreeSet<RecordKey> = deleted.chain(new.keys().cloned()).collect();
        for key in gone {
            let Some(key) = contribution.keys.get(&key).cloned() else {
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
        for (key, record) in new {
            self.claim(
                &source,
                key,
                record,
                &lines,
                &mut contribution,
                &mut touched,
            );
        }
        self.sources.insert(source, contribution);
        self.check_clashes(&touched, &lines);
        touched
    }

    /// The records `entries` declare, placed in their zones, first one per key; and
    /// the problems with the others.
    fn claims(
        &mut self,
        source: &Arc<str>,
        entries: &[DesiredEntry],
    ) -> (BTreeMap<RecordKey, DesiredRecord>, Vec<SourceError>) {
        let mut errors = Vec::new();
        let mut new: BTreeMap<RecordKey, DesiredRecord> = BTreeMap::new();
        for e in entries {
            let error = |message: String| SourceError {
                source: source.to_string(),
                location: e.origin.location.clone(),
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
                let known: Vec<&str> = self.zones_cfg.iter().map(|z| z.name.as_str()).collect();
                errors.push(error(format!(
                    "no configured zone holds this name (zones: {})",
                    known.join(", ")
                )));
                continue;
            };
            let key = RecordKey::new(zone.name.clone(), e.name.clone(), e.rtype);
            let rrset = match RRSet::from_canonical(
                key.clone(),
                e.ttl.unwrap_or(zone.default_ttl),
                e.values.clone(),
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
            new.insert(key, record);
        }
        (new, errors)
    }

    /// Whether `source`'s claim on `key` stays as it is under `new`.
    fn unchanged(
        &self,
        source: &Arc<str>,
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
        source: &Arc<str>,
        key: RecordKey,
        record: DesiredRecord,
        lines: &Lines<'_>,
        contribution: &mut Contribution,
        touched: &mut Touched,
    ) {
        contribution.keys.insert(key.clone());
        if self.claim_of(&key, source).is_some() {
            return; // unchanged claim, kept
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
                records.insert(key, record);
            }
        }
    }

    /// Re-checks the CNAME rule at every touched name.
    fn check_clashes(&mut self, touched: &Touched, lines: &Lines<'_>) {
        for (zone, names) in touched {
            for name in names {
                self.check_cname_clash(zone, name, || lines.at_name(name));
            }
        }
    }

    /// The claim `source` holds on `key`, in the index or among the shadows.
    fn claim_of(&self, key: &RecordKey, source: &Arc<str>) -> Option<&DesiredRecord> {
        let main = self
            .zones
            .get(&key.zone)
            .and_then(|z| z.get(key))
            .filter(|r| &r.source == source);
        main.or_else(|| self.shadows.get(key)?.iter().find(|r| &r.source == source))
    }

    /// Removes `source`'s claim on `key`; returns true when the effective record changed.
    fn withdraw(&mut self, key: &RecordKey, source: &Arc<str>) -> bool {
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
            records.insert(key.clone(), next);
            if !sh.is_empty() {
                self.shadows.insert(key.clone(), sh);
            }
        }
        true
    }

    /// A CNAME cannot share its name with other data (RFC 1034 §3.6.2). The plan holds
    /// such a CNAME back; this keeps the error that explains it.
    fn check_cname_clash(&mut self, zone: &Name, name: &Name, location: impl FnOnce() -> String) {
        let cname = RecordKey::new(zone.clone(), name.clone(), RecordType::Cname);
        self.clashes.remove(&cname);
        let Some(records) = self.zones.get(zone) else {
            return;
        };
        let at: Vec<&RecordKey> = at_name(records, zone, name).map(|(k, _)| k).collect();
        if let Some(message) = cname_clash(&at) {
            let record = &records[&cname];
            self.clashes.insert(
                cname.clone(),
                SourceError {
                    source: record.source.to_string(),
                    location: location(),
                    record: cname.to_string(),
                    message,
                },
            );
        }
    }

    /// The problems `entries` would have as `source`'s whole desired state, in an
    /// index of their own: what [`update_source`](Self::update_source) into an empty
    /// index would report, without building that index (a push is checked this way
    /// before it is accepted, and the real update follows).
    pub fn check_alone(
        zones: &[ZoneConfig],
        source: &str,
        entries: &[DesiredEntry],
    ) -> Vec<SourceError> {
        DesiredIndex::checked(zones, source, entries).errors
    }

    /// [`check_alone`](Self::check_alone), keeping the placed entries for
    /// [`update_source_checked`](Self::update_source_checked).
    pub fn checked(zones: &[ZoneConfig], source: &str, entries: &[DesiredEntry]) -> Checked {
        let mut check = DesiredIndex::new(zones);
        let source = check.interner.str(source);
        let (claims, entry_errors) = check.claims(&source, entries);
        let mut errors = entry_errors.clone();
        let lines = Lines::of(entries);
        // Keys sort by (zone, name, type): the records at one name are adjacent.
        let keys: Vec<&RecordKey> = claims.keys().collect();
        for at in keys.chunk_by(|a, b| a.zone == b.zone && a.name == b.name) {
            if let Some(message) = cname_clash(at) {
                let cname = at.iter().find(|k| k.rtype == RecordType::Cname);
                errors.push(SourceError {
                    source: source.to_string(),
                    location: lines.at_name(&at[0].name),
                    record: cname.map(ToString::to_string).unwrap_or_default(),
                    message,
                });
            }
        }
        Checked {
            records: claims,
            entry_errors,
            errors,
        }
    }

    pub fn zone(&self, zone: &Name) -> Option<&BTreeMap<RecordKey, DesiredRecord>> {
        self.zones.get(zone)
    }

    /// Every problem found in the sources, in source order, then the CNAME clashes.
    pub fn errors(&self) -> Vec<SourceError> {
        let mut out: Vec<SourceError> = self
            .sources
            .values()
            .flat_map(|c| c.errors.iter().chain(c.conflicts.values()).cloned())
            .collect();
        out.extend(self.clashes.values().cloned());
        out
    }

    pub fn error_count(&self) -> usize {
        self.sources
            .values()
            .map(|c| c.errors.len() + c.conflicts.len())
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
        self.sources.get(source).map_or(0, |c| c.keys.len())
    }

    /// Whether `source` declares `name` `rtype`.
    pub fn holds(&self, source: &str, name: &Name, rtype: RecordType) -> bool {
        let Some(zone) = self.zone_of(name) else {
            return false;
        };
        let key = RecordKey::new(zone.name.clone(), name.clone(), rtype);
        self.sources
            .get(source)
            .is_some_and(|c| c.keys.contains(&key))
    }

    /// `upserts`, after the records `source` declares at their names and keeps through
    /// them (other types than the upserts'): what the rules across records can find
    /// wrong with a patch of a source that was whole and right before it. The kept
    /// records are attributed to the first upsert at their name, so that an error
    /// names a field of the patch.
    pub fn with_kept_records(&self, source: &str, upserts: &[DesiredEntry]) -> Vec<DesiredEntry> {
        let mut out = Vec::new();
        let Some((source_name, contribution)) = self.sources.get_key_value(source) else {
            return upserts.to_vec();
        };
        let replaced: HashSet<(&Name, RecordType)> =
            upserts.iter().map(|u| (&u.name, u.rtype)).collect();
        let mut seen = BTreeSet::new();
        for u in upserts {
            let Some(zone) = self.zone_of(&u.name) else {
                continue;
            };
            if !seen.insert(u.name.clone()) {
                continue;
            }
            let from = RecordKey::new(zone.name.clone(), u.name.clone(), RecordType::ALL[0]);
            let kept = contribution
                .keys
                .range(from..)
                .take_while(|k| k.name == u.name)
                .filter(|k| !replaced.contains(&(&k.name, k.rtype)));
            for key in kept {
                let Some(record) = self.claim_of(key, source_name) else {
                    continue;
                };
                out.push(DesiredEntry {
                    name: key.name.clone(),
                    rtype: key.rtype,
                    ttl: Some(record.data.ttl),
                    values: record.data.values().to_vec(),
                    origin: crate::source::Origin {
                        source: record.source.clone(),
                        location: u.origin.location.clone(),
                        resource: record.resource.clone(),
                    },
                });
            }
        }
        out.extend(upserts.iter().cloned());
        out
    }

    /// Total desired records.
    pub fn len(&self) -> usize {
        self.zones.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConflictPolicy, Policy};
    use crate::source::Origin;

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
            values: values
                .iter()
                .map(|v| dnsplane_common::rdata::canonicalize(t, v).unwrap())
                .collect(),
            origin: Origin {
                source: "file".into(),
                location: format!("x.yaml:{line}"),
                resource: "DNSEndpoint default/x".into(),
            },
        }
    }

    fn root() -> Name {
        Name::parse("example.com").unwrap()
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
        let mut idx = DesiredIndex::new(&zones());
        let touched = idx.update_source("file:0", &entries, vec![]);
        assert_eq!(touched[&root()].len(), 2);
        assert_eq!(
            idx.zone(&root()).unwrap().len(),
            3,
            "www A, c CNAME (held back by the plan), c TXT"
        );
        assert_eq!(
            idx.zone(&Name::parse("sub.example.com").unwrap())
                .unwrap()
                .len(),
            1
        );
        let errors = idx.errors();
        let locs: Vec<&str> = errors.iter().map(|e| e.location.as_str()).collect();
        assert_eq!(locs, ["x.yaml:3", "x.yaml:4", "x.yaml:8", "x.yaml:6"]);
        assert!(errors[0].message.contains("no configured zone"));
        assert!(errors[3].message.contains("CNAME") && errors[3].message.contains("TXT"));
        assert!(errors[3].record.contains("c.example.com"));
    }

    #[test]
    fn updates_touch_only_what_changed_and_shadows_fall_back() {
        let mut idx = DesiredIndex::new(&zones());
        let a = [
            entry("a.example.com", RecordType::A, &["192.0.2.1"], 1),
            entry("b.example.com", RecordType::A, &["192.0.2.2"], 2),
        ];
        idx.update_source("s1", &a, vec![]);
        // Same snapshot again: nothing touched.
        assert!(idx.update_source("s1", &a, vec![]).is_empty());
        // One value changes: one name touched.
        let a2 = [
            a[0].clone(),
            entry("b.example.com", RecordType::A, &["192.0.2.3"], 2),
        ];
        let t = idx.update_source("s1", &a2, vec![]);
        assert_eq!(
            t[&root()].iter().map(Name::as_str).collect::<Vec<_>>(),
            ["b.example.com."]
        );
        // A second source claims a.example.com differently: s1 keeps it, s2 is told.
        let t = idx.update_source(
            "s2",
            &[entry("a.example.com", RecordType::A, &["192.0.2.9"], 9)],
            vec![],
        );
        assert!(t.is_empty());
        assert!(
            idx.errors()
                .iter()
                .any(|e| e.source == "s2" && e.message.contains("also declared"))
        );
        // s1 drops it: s2's claim takes over, and the name is touched.
        let t = idx.update_source("s1", &a2[1..], vec![]);
        assert_eq!(
            t[&root()].iter().map(Name::as_str).collect::<Vec<_>>(),
            ["a.example.com."]
        );
        let k = RecordKey::new(root(), Name::parse("a.example.com").unwrap(), RecordType::A);
        assert_eq!(idx.zone(&root()).unwrap()[&k].data.values(), ["192.0.2.9"]);
        // s2 goes away: gone.
        idx.update_source("s2", &[], vec![]);
        assert!(!idx.zone(&root()).unwrap().contains_key(&k));
        assert_eq!(idx.len(), 1);
    }

    #[test]
    fn cname_clash_error_comes_and_goes() {
        let mut idx = DesiredIndex::new(&zones());
        let c = entry("c.example.com", RecordType::Cname, &["x.example.net"], 1);
        let t = entry("c.example.com", RecordType::Txt, &["hello"], 2);
        idx.update_source("s", &[c.clone(), t], vec![]);
        assert_eq!(idx.error_count(), 1);
        idx.update_source("s", &[c], vec![]);
        assert_eq!(idx.error_count(), 0);
    }

    #[test]
    fn a_patch_ends_where_the_whole_update_would() {
        let a = entry("a.example.com", RecordType::A, &["192.0.2.1"], 1);
        let b = entry("b.example.com", RecordType::A, &["192.0.2.2"], 2);
        let c = entry("c.example.com", RecordType::Cname, &["x.example.net"], 3);
        let shadowed = entry("s.example.com", RecordType::A, &["192.0.2.5"], 4);
        let other = entry("s.example.com", RecordType::A, &["192.0.2.6"], 5);
        let mut patched = DesiredIndex::new(&zones());
        patched.update_source("s0", std::slice::from_ref(&other), vec![]);
        patched.update_source("s", &[a.clone(), b.clone(), shadowed.clone()], vec![]);
        assert_eq!(patched.error_count(), 1, "s.example.com is held by s0");

        // Change b, add a TXT beside the CNAME-to-be, drop a and the shadowed claim.
        let b2 = entry("b.example.com", RecordType::A, &["192.0.2.3"], 6);
        let t = entry("c.example.com", RecordType::Txt, &["hello"], 7);
        let touched = patched.patch_source(
            "s",
            &[b2.clone(), c.clone(), t.clone()],
            &[
                (a.name.clone(), RecordType::A),
                (shadowed.name.clone(), RecordType::A),
                (Name::parse("nothing.example.com").unwrap(), RecordType::A),
            ],
        );
        let mut whole = DesiredIndex::new(&zones());
        whole.update_source("s0", std::slice::from_ref(&other), vec![]);
        whole.update_source("s", &[a.clone(), b.clone(), shadowed], vec![]);
        let expected = whole.update_source("s", &[b2, c.clone(), t], vec![]);
        assert_eq!(touched, expected);
        assert_eq!(patched.zone(&root()), whole.zone(&root()));
        assert_eq!(patched.errors(), whole.errors());
        assert_eq!(
            patched.error_count(),
            1,
            "the CNAME clash; the conflict went with its key"
        );

        // An unchanged upsert touches nothing; deleting the TXT clears the clash.
        assert!(patched.patch_source("s", &[c], &[]).is_empty());
        let t = patched.patch_source(
            "s",
            &[],
            &[(Name::parse("c.example.com").unwrap(), RecordType::Txt)],
        );
        assert_eq!(t[&root()].len(), 1);
        assert_eq!(patched.error_count(), 0);
        assert_eq!(patched.len(), 3, "b, c and s0's record");
    }

    /// Entries a property test picked: (name, type, value) indices into a few names
    /// (one in a sub-zone, one reserved, one outside every zone), A / CNAME / TXT,
    /// and three values.
    fn picked(picks: &[(usize, usize, usize)]) -> Vec<DesiredEntry> {
        let names = [
            "a.example.com",
            "b.sub.example.com",
            "_dnsplane-a.example.com",
            "x.example.org",
        ];
        let types = [RecordType::A, RecordType::Cname, RecordType::Txt];
        picks
            .iter()
            .enumerate()
            .map(|(i, &(n, t, v))| {
                let value = match types[t] {
                    RecordType::A => format!("192.0.2.{v}"),
                    RecordType::Cname => format!("t{v}.example.net"),
                    _ => format!("text {v}"),
                };
                entry(names[n], types[t], &[value.as_str()], i as u32)
            })
            .collect()
    }

    /// The suffix lookup finds the zone the scan of the configured zones finds: the
    /// longest one holding the name, none for a name outside them all.
    #[test]
    fn a_name_finds_its_zone_by_its_suffixes() {
        let index = DesiredIndex::new(&zones());
        for name in [
            "example.com",
            "a.example.com",
            "sub.example.com",
            "a.b.sub.example.com",
            "subexample.com",
            "a.sub.example.com.org",
            "com",
        ] {
            let name = Name::parse(name).unwrap();
            assert_eq!(
                index.zone_of(&name).map(|z| &z.name),
                zone_for(&zones(), &name).map(|z| &z.name),
                "{name}"
            );
        }
        assert_eq!(
            index
                .zone_of(&Name::parse("a.b.sub.example.com").unwrap())
                .map(|z| z.name.as_str()),
            Some("sub.example.com.")
        );
    }

    proptest::proptest! {
        /// Taking a push's checked placement gives the index, the errors and the
        /// touched names that placing the entries again gives, over a previous state.
        #[test]
        fn a_checked_update_is_the_update(
            before in proptest::collection::vec((0usize..4, 0usize..3, 0usize..3), 0..20),
            after in proptest::collection::vec((0usize..4, 0usize..3, 0usize..3), 0..20),
        ) {
            let (before, after) = (picked(&before), picked(&after));
            let mut placed = DesiredIndex::new(&zones());
            let mut taken = DesiredIndex::new(&zones());
            placed.update_source("other", &before, Vec::new());
            taken.update_source("other", &before, Vec::new());
            placed.update_source("push:p", &before, Vec::new());
            taken.update_source("push:p", &before, Vec::new());
            let touched = placed.update_source("push:p", &after, Vec::new());
            let checked = DesiredIndex::checked(&zones(), "p", &after);
            let touched_checked = taken.update_source_checked("push:p", checked, &after, Vec::new());
            proptest::prop_assert_eq!(touched_checked, touched);
            proptest::prop_assert_eq!(taken.errors(), placed.errors());
            proptest::prop_assert_eq!(&taken.zones, &placed.zones);
            proptest::prop_assert_eq!(taken.shadows, placed.shadows);
        }
    }

    proptest::proptest! {
        /// Checking a push alone finds exactly what loading it into an empty index
        /// reports: unknown zones, reserved names, duplicates with other values, CNAMEs
        /// beside other data, each at its line.
        #[test]
        fn checking_alone_reports_what_an_index_of_its_own_would(
            picks in proptest::collection::vec((0usize..4, 0usize..3, 0usize..3), 0..30)
        ) {
            let entries = picked(&picks);
            let mut index = DesiredIndex::new(&zones());
            index.update_source("push:p", &entries, Vec::new());
            proptest::prop_assert_eq!(
                DesiredIndex::check_alone(&zones(), "push:p", &entries),
                index.errors()
            );
        }
    }
}
