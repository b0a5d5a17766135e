//! What a zone holds, as far as the planner knows: its records split into data and
//! ownership ([`ZoneView`]), built from the last read and then kept up to date from
//! every result, so that a source change is planned without reading the zone again.
use crate::config::ExternalDnsConfig;
use crate::desired::DesiredRecord;
use crate::external_dns::{self, Format, Registry};
use crate::ownership::{OwnerMark, owner_record_key, parse_owner_record};
use dnsplane_common::rrset::at_name;
use dnsplane_common::{Name, RRData, RRSet, RRSetOp, RecordKey, RecordType};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

pub use builder::ViewBuilder;
use entries::Entries;

/// What ownership records that can share one template have in common: TTL, values and
/// properties (a set's mark carries the set's policy).
type OwnerData = (u32, Vec<String>, Vec<(String, String)>);
/// An ownership record as observed. Records with the same mark share one of these,
/// so a million owned records do not hold a million TXT records in memory; the TXT
/// itself is rebuilt (from the owned key) only when a change needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owned {
    pub mark: OwnerMark,
    /// The observed TXT data, without a key: each owned record's mark has its own
    /// name, rebuilt from the owned key when needed (holding the first one's name
    /// cost every record a name it never used).
    template: RRData,
}

/// What the view holds at one key: the data record, the ownership record that marks
/// it (stored under the owned key), or both. One entry for both, so that an owned
/// record costs one key in the map, not two.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Seen {
    data: Option<RRData>,
    owner: Option<Arc<Owned>>,
}

impl Seen {
    fn is_empty(&self) -> bool {
        self.records() == 0
    }

    /// Records held: the data record and the ownership record, each if present.
    fn records(&self) -> usize {
        usize::from(self.data.is_some()) + usize::from(self.owner.is_some())
    }
}

/// A data record external-dns's TXT registry owns: whose it is and its marks (the
/// new-format one, the old-format one, or both, of the same owner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalOwned {
    pub mark: external_dns::Mark,
    pub txts: Vec<RRSet>,
}

/// Shares what ownership records have in common, so that a record's mark costs
/// little more than a pointer: one [`Owned`] per distinct TXT data, and one owner id
/// per owner (every mark of a zone usually names the same few owners, and each used to
/// hold its own copy).
#[derive(Debug, Default, Clone)]
struct SharedMarks {
    by_data: HashMap<OwnerData, Arc<Owned>>,
    owners: Vec<Arc<str>>,
}

/// How many owner ids [`SharedMarks`] shares; a zone with more shares the first ones.
const SHARED_OWNERS: usize = 16;

impl SharedMarks {
    /// The shared [`Owned`] for ownership record `r`, whose mark is `mark`.
    fn share(&mut self, r: &RRSet, mut mark: OwnerMark) -> Arc<Owned> {
        if self.by_data.len() >= WRITTEN_MARKS {
            self.by_data.clear();
        }
        let owners = &mut self.owners;
        self.by_data
            .entry((r.ttl, r.values_vec(), r.properties_vec()))
            .or_insert_with(|| {
                match owners.iter().find(|o| ***o == *mark.owner) {
                    Some(o) => mark.owner = o.clone(),
                    None if owners.len() < SHARED_OWNERS => owners.push(mark.owner.clone()),
                    None => {}
                }
                Arc::new(Owned {
                    mark,
                    template: RRData::of(r),
                })
            })
            .clone()
    }
}

/// A zone's records split into data and ownership.
#[derive(Debug, Default, Clone)]
pub struct ZoneView {
    /// Data records (ownership records excluded) and ownership (by the key owned), by
    /// key; in chunks shared with the zone's other targets where equal
    /// ([`ZoneView::share_with`]).
    entries: Entries,
    /// The ownership records read or written, by their data, so that
    /// records written with the same mark share one [`Owned`] (a first sync of a
    /// million records would otherwise hold a million copies of a few marks).
    written: SharedMarks,
    /// Entries inserted one by one since the chunks were last shrunk; see
    /// [`ZoneView::compact`].
    grown: usize,
    /// Data and ownership records held (kept as they change: status reads it).
    records: usize,
    /// external-dns's ownership (a zone with `[zones.external_dns]`), by the data key
    /// owned. Apart from `entries` so that a zone without it pays nothing.
    external: BTreeMap<RecordKey, ExternalOwned>,
    /// The keys of external-dns's marks: not data, so never undesired data nor a
    /// conflict at their names.
    external_txt: BTreeSet<RecordKey>,
}

/// How many distinct marks `written` remembers; past that it starts afresh (a view
/// whose records carry more distinct marks than this shares less, never wrongly).
const WRITTEN_MARKS: usize = 4_096;

impl ZoneView {
    pub fn new(rrsets: impl IntoIterator<Item = RRSet>) -> ZoneView {
        ZoneView::shared(rrsets, None)
    }

    /// Builds a view whose keys and values share storage with the desired records
    /// where they are equal, and whose ownership records share their values: a
    /// converged record then costs little more than its key in the observed index.
    pub fn shared(
        rrsets: impl IntoIterator<Item = RRSet>,
        desired: Option<&BTreeMap<RecordKey, DesiredRecord>>,
    ) -> ZoneView {
        ZoneView::read(rrsets, desired, None)
    }

    /// [`ZoneView::shared`] for a zone read with `external` (its
    /// `[zones.external_dns]`): external-dns's marks are set apart from the data and
    /// attached to the records they own.
    pub fn read(
        rrsets: impl IntoIterator<Item = RRSet>,
        desired: Option<&BTreeMap<RecordKey, DesiredRecord>>,
        external: Option<&ExternalDnsConfig>,
    ) -> ZoneView {
        let mut builder = ViewBuilder::new(external);
        builder.add(rrsets, desired);
        builder.finish(desired, None)
    }

    fn of(entries: Entries) -> ZoneView {
        ZoneView {
            records: entries.values().map(Seen::records).sum(),
            entries,
            written: SharedMarks::default(),
            grown: 0,
            external: BTreeMap::new(),
            external_txt: BTreeSet::new(),
        }
    }

    /// Attaches each data record to the external-dns marks named for it (new format
    /// first, as external-dns reads; the old format owns every type but AAAA).
    fn attach_external(
        &mut self,
        reg: &Registry<'_>,
        marks: BTreeMap<RecordKey, (RRSet, external_dns::Mark)>,
    ) {
        if marks.is_empty() {
            return;
        }
        let mut external = BTreeMap::new();
        for key in self.data().map(|(k, _)| k) {
            let find = |f: Format| {
                let name = reg.txt_name(key, f)?;
                let k = RecordKey::new(key.zone.clone(), name, RecordType::Txt).in_set(key.set);
                marks.get(&k).filter(|_| k != *key)
            };
            let new = find(Format::New);
            let old = (key.rtype != RecordType::Aaaa)
                .then(|| find(Format::Old))
                .flatten();
            let Some((_, mark)) = new.or(old) else {
                continue;
            };
            let txts = [new, old]
                .into_iter()
                .flatten()
                .filter(|(_, m)| m.owner == mark.owner)
                .map(|(r, _)| r.clone())
                .collect();
            let owned = ExternalOwned {
                mark: mark.clone(),
                txts,
            };
            external.insert(key.clone(), owned);
        }
        self.external = external;
        self.external_txt = marks.into_keys().collect();
    }

    /// The external-dns ownership of the data record at `key`, if any.
    pub fn external_owner(&self, key: &RecordKey) -> Option<&ExternalOwned> {
        self.external.get(key)
    }

    /// Whether `key` is an external-dns mark (never data).
    pub fn is_external_mark(&self, key: &RecordKey) -> bool {
        self.external_txt.contains(key)
    }

    /// The data keys at `key`'s name whose external-dns marks include `txt` (an
    /// old-format mark owns every type at its name).
    pub fn external_sharing<'a>(
        &'a self,
        key: &RecordKey,
        txt: &'a RecordKey,
    ) -> impl Iterator<Item = &'a RecordKey> + 'a {
        at_name(&self.external, &key.zone, &key.name)
            .filter(move |(_, o)| o.txts.iter().any(|t| &t.key == txt))
            .map(|(k, _)| k)
    }

    /// `r` as an entry: data, or the ownership of the key it owns.
    fn place(
        mut r: RRSet,
        desired: Option<&BTreeMap<RecordKey, DesiredRecord>>,
        marks: &mut SharedMarks,
    ) -> (RecordKey, Seen) {
        match parse_owner_record(&r) {
            Some((owned, mark)) => {
                let owned = match desired.and_then(|d| d.get_key_value(&owned)) {
                    Some((k, _)) => k.clone(),
                    None => owned,
                };
                let shared = marks.share(&r, mark);
                let seen = Seen {
                    data: None,
                    owner: Some(shared),
                };
                (owned, seen)
            }
            None => {
                if let Some((k, d)) = desired.and_then(|d| d.get_key_value(&r.key)) {
                    r = r.with_key(k.clone());
                    r.share_values_with_data(&d.data);
                }
                let seen = Seen {
                    data: Some(RRData::of(&r)),
                    owner: None,
                };
                (r.key, seen)
            }
        }
    }

    /// The data RRSet at `key` (ownership records excluded).
    pub fn get(&self, key: &RecordKey) -> Option<RRSet> {
        self.data_of(key).map(|h| h.rrset(key))
    }

    fn data_of(&self, key: &RecordKey) -> Option<&RRData> {
        self.entries.get(key)?.data.as_ref()
    }

    /// Whether the view holds data at `key`.
    pub fn contains(&self, key: &RecordKey) -> bool {
        self.data_of(key).is_some()
    }

    /// The data records in key order.
    pub fn data(&self) -> impl Iterator<Item = (&RecordKey, &RRData)> {
        self.entries
            .iter()
            .filter_map(|(k, s)| Some((k, s.data.as_ref()?)))
    }

    /// The ownership records, by the key they own, in key order.
    pub fn owners(&self) -> impl Iterator<Item = (&RecordKey, &Arc<Owned>)> {
        self.entries
            .iter()
            .filter_map(|(k, s)| Some((k, s.owner.as_ref()?)))
    }

    /// The ownership record of `key`, if any.
    pub fn owner(&self, key: &RecordKey) -> Option<&Arc<Owned>> {
        self.entries.get(key)?.owner.as_ref()
    }

    /// The data records at `name` (every type), in key order.
    pub fn data_at(&self, zone: &Name, name: &Name) -> impl Iterator<Item = (&RecordKey, &RRData)> {
        self.entries_at(zone, name)
            .filter_map(|(k, s)| Some((k, s.data.as_ref()?)))
    }

    /// The data records as RRSets, in key order (for tests that compare views).
    #[cfg(test)]
    pub fn rrsets(&self) -> impl Iterator<Item = RRSet> + '_ {
        self.data().map(|(k, h)| h.rrset(k))
    }

    /// How many data records `owner_id` owns here (the mass-change guard's measure).
    pub fn owned_by(&self, owner_id: &str) -> usize {
        self.entries
            .values()
            .filter(|s| {
                s.data.is_some() && s.owner.as_ref().is_some_and(|o| &*o.mark.owner == owner_id)
            })
            .count()
    }

    /// The ownership record of `key` as observed (rebuilt from the shared data).
    pub fn owner_rrset(&self, key: &RecordKey) -> Option<RRSet> {
        let owned = self.owner(key)?;
        Some(owned.template.rrset(&owner_record_key(key)?))
    }

    pub fn owner_of(&self, key: &RecordKey) -> Option<&str> {
        self.owner(key).map(|o| &*o.mark.owner)
    }

    /// The part of the view at `names` (data at the names, ownership of records at
    /// the names), for a targeted re-plan.
    pub fn subset(&self, zone: &Name, names: &BTreeSet<Name>) -> ZoneView {
        let mut out = Vec::new();
        let mut external = BTreeMap::new();
        for n in names {
            out.extend(
                self.entries_at(zone, n)
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
            external.extend(at_name(&self.external, zone, n).map(|(k, v)| (k.clone(), v.clone())));
        }
        let mut view = ZoneView::of(out.into_iter().collect());
        view.external_txt = external
            .values()
            .flat_map(|o: &ExternalOwned| o.txts.iter().map(|t| t.key.clone()))
            .collect();
        view.external = external;
        view
    }

    /// Replaces everything at `names` with `fresh` (a targeted read of those names and
    /// their ownership records).
    pub fn replace_names(&mut self, zone: &Name, names: &BTreeSet<Name>, fresh: ZoneView) {
        for n in names {
            let gone: Vec<RecordKey> = self.entries_at(zone, n).map(|(k, _)| k.clone()).collect();
            for k in gone {
                if let Some(seen) = self.entries.remove(&k) {
                    self.records -= seen.records();
                }
            }
            let gone: Vec<RecordKey> = at_name(&self.external, zone, n)
                .map(|(k, _)| k.clone())
                .collect();
            for k in gone {
                for t in self.external.remove(&k).into_iter().flat_map(|o| o.txts) {
                    self.external_txt.remove(&t.key);
                }
            }
        }
        self.records += fresh.records;
        for (k, s) in fresh.entries.iter() {
            self.entries.insert(k.clone(), s.clone());
        }
        self.external.extend(fresh.external);
        self.external_txt.extend(fresh.external_txt);
    }

    /// Changes the entry at `key` with `f`, dropping it when it is left empty.
    fn update(&mut self, key: &RecordKey, f: impl FnOnce(&mut Seen)) {
        match self.entries.get_mut(key) {
            Some(seen) => {
                self.records -= seen.records();
                f(seen);
                self.records += seen.records();
                if seen.is_empty() {
                    self.entries.remove(key);
                }
            }
            None => {
                let mut seen = Seen::default();
                f(&mut seen);
                if !seen.is_empty() {
                    self.records += seen.records();
                    self.entries.insert(key.clone(), seen);
                    self.grown += 1;
                }
            }
        }
    }

    /// Records what a committed op of the change to `changed` left behind, so that the
    /// observed state follows the results instead of being read again. The key of an
    /// ownership record's owned record is `changed`'s (shared, not a new name).
    pub fn apply_op(&mut self, op: &RRSetOp, changed: &RecordKey) {
        if self.external_txt.contains(&op.key) {
            // dnsplane only ever deletes external-dns's marks (taking a record over).
            if op.after.is_none() {
                self.external_txt.remove(&op.key);
                let sharing: Vec<RecordKey> =
                    self.external_sharing(changed, &op.key).cloned().collect();
                for k in sharing {
                    if let Some(o) = self.external.get_mut(&k) {
                        o.txts.retain(|t| t.key != op.key);
                        if o.txts.is_empty() {
                            self.external.remove(&k);
                        }
                    }
                }
            }
            return;
        }
        let owner = op
            .after
            .as_ref()
            .or(op.before.as_ref())
            .and_then(parse_owner_record)
            .map(|(owned, _)| {
                if &owned == changed {
                    changed.clone()
                } else {
                    owned
                }
            });
        match (owner, &op.after) {
            (Some(owned), Some(after)) => {
                if let Some((_, mark)) = parse_owner_record(after) {
                    let shared = self.written.share(after, mark);
                    self.update(&owned, |s| s.owner = Some(shared));
                }
            }
            (Some(owned), None) => self.update(&owned, |s| s.owner = None),
            (None, Some(after)) => self.update(&op.key, |s| s.data = Some(RRData::of(after))),
            (None, None) => self.update(&op.key, |s| s.data = None),
        }
    }

    /// Sets (or clears) what the provider was seen to hold at `key`.
    pub fn observe(&mut self, key: &RecordKey, rrset: Option<RRSet>) {
        self.update(key, |s| s.data = rrset.as_ref().map(RRData::of));
    }

    /// Gives back the room chunks grew by once a quarter of the entries were
    /// inserted one by one (a first sync's creates grow every chunk). Amortised O(1)
    /// per insert.
    pub fn compact(&mut self) {
        self.compact_past(4);
    }

    /// [`compact`](Self::compact) once a sixteenth came one by one: for the end of a
    /// sync, so that the view a zone keeps at rest holds little spare room.
    pub fn compact_at_rest(&mut self) {
        self.compact_past(16);
    }

    fn compact_past(&mut self, share: usize) {
        if self.grown * share <= self.entries.len() || self.grown < 1_024 {
            return;
        }
        self.entries.shrink();
        self.grown = 0;
    }

    /// Holds once what this view and `other` (another target of the same zone) hold
    /// alike: each chunk of entries equal to one of `other`'s becomes `other`'s.
    /// Nothing seen changes; a later change to either copies its chunk first. Returns
    /// how many chunks became shared.
    pub fn share_with(&mut self, other: &ZoneView) -> usize {
        self.entries.share_with(&other.entries)
    }

    /// How many chunks hold the entries (for tests of sharing).
    #[cfg(test)]
    pub fn chunks(&self) -> usize {
        self.entries.cuts().len()
    }

    /// How many of the chunks holding the entries `other` holds too (for tests).
    #[cfg(test)]
    pub fn chunks_shared_with(&self, other: &ZoneView) -> usize {
        self.entries.chunks_shared_with(&other.entries)
    }

    /// The entries at `name` (every type), in key order.
    fn entries_at<'a>(
        &'a self,
        zone: &Name,
        name: &Name,
    ) -> impl Iterator<Item = (&'a RecordKey, &'a Seen)> + 'a {
        let name = name.clone();
        self.entries
            .starting_at(&RecordKey::new(
                zone.clone(),
                name.clone(),
                RecordType::ALL[0],
            ))
            .take_while(move |(k, _)| k.name == name)
    }

    /// Records in the view (data and ownership, external-dns's marks included).
    pub fn len(&self) -> usize {
        self.records + self.external_txt.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

mod builder;
mod entries;
#[cfg(test)]
mod tests;
