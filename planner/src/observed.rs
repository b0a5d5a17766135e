//! What a zone holds, as far as the planner knows: its records split into data and
//! ownership ([`ZoneView`]), built from the last read and then kept up to date from
//! every result, so that a source change is planned without reading the zone again.
use crate::desired::DesiredRecord;
use crate::ownership::{OwnerMark, owner_record_key, parse_owner_record};
use dnsplane_common::rrset::at_name;
use dnsplane_common::{Name, RRData, RRSet, RRSetOp, RecordKey};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// An ownership record as observed. Records with the same mark share one of these,
/// so a million owned records do not hold a million TXT records in memory; the TXT
/// itself is rebuilt (from the owned key) only when a change needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owned {
    pub mark: OwnerMark,
    /// The observed TXT data (its key is that of the first record seen with it).
    template: RRSet,
}

/// A zone's records split into data and ownership.
#[derive(Debug, Default, Clone)]
pub struct ZoneView {
    /// Data records by key (ownership records excluded).
    data: BTreeMap<RecordKey, RRData>,
    /// Ownership by the key owned.
    pub owners: BTreeMap<RecordKey, Arc<Owned>>,
    /// The ownership records written since the view was built, by their data, so that
    /// records written with the same mark share one [`Owned`] (a first sync of a
    /// million records would otherwise hold a million copies of a few marks).
    written: HashMap<(u32, Arc<[String]>), Arc<Owned>>,
    /// Entries inserted one by one since the maps were last built in one go; see
    /// [`ZoneView::compact`].
    grown: usize,
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
        // Collected first, then built in one go: a B-tree built from a sorted run has
        // full nodes, one filled key by key about half full nodes.
        let mut data = Vec::new();
        let mut owners = Vec::new();
        let mut owner_values: HashMap<(u32, Vec<String>), Arc<Owned>> = HashMap::new();
        for r in rrsets {
            ZoneView::place(r, desired, &mut owner_values, &mut data, &mut owners);
        }
        // `collect` keeps the last of equal keys, as inserting one by one did.
        ZoneView {
            data: data.into_iter().collect(),
            owners: owners.into_iter().collect(),
            written: HashMap::new(),
            grown: 0,
        }
    }

    /// Puts `r` among the data or the ownership records.
    fn place(
        mut r: RRSet,
        desired: Option<&BTreeMap<RecordKey, DesiredRecord>>,
        owner_values: &mut HashMap<(u32, Vec<String>), Arc<Owned>>,
        data: &mut Vec<(RecordKey, RRData)>,
        owners: &mut Vec<(RecordKey, Arc<Owned>)>,
    ) {
        match parse_owner_record(&r) {
            Some((owned, mark)) => {
                let owned = match desired.and_then(|d| d.get_key_value(&owned)) {
                    Some((k, _)) => k.clone(),
                    None => owned,
                };
                let shared = owner_values
                    .entry((r.ttl, r.values().to_vec()))
                    .or_insert_with(|| Arc::new(Owned { mark, template: r }))
                    .clone();
                owners.push((owned, shared));
            }
            None => {
                if let Some((k, d)) = desired.and_then(|d| d.get_key_value(&r.key)) {
                    r = r.with_key(k.clone());
                    r.share_values_with_data(&d.data);
                }
                data.push((r.key.clone(), RRData::of(&r)));
            }
        }
    }

    /// The data RRSet at `key` (ownership records excluded).
    pub fn get(&self, key: &RecordKey) -> Option<RRSet> {
        self.data.get(key).map(|h| h.rrset(key))
    }

    /// Whether the view holds data at `key`.
    pub fn contains(&self, key: &RecordKey) -> bool {
        self.data.contains_key(key)
    }

    /// The data records in key order.
    pub fn data(&self) -> impl Iterator<Item = (&RecordKey, &RRData)> {
        self.data.iter()
    }

    /// The data records at `name` (every type), in key order.
    pub fn data_at(&self, zone: &Name, name: &Name) -> impl Iterator<Item = (&RecordKey, &RRData)> {
        at_name(&self.data, zone, name)
    }

    /// The data records as RRSets, in key order (for tests that compare views).
    #[cfg(test)]
    pub fn rrsets(&self) -> impl Iterator<Item = RRSet> + '_ {
        self.data.iter().map(|(k, h)| h.rrset(k))
    }

    /// How many data records `owner_id` owns here (the mass-change guard's measure).
    pub fn owned_by(&self, owner_id: &str) -> usize {
        self.owners
            .iter()
            .filter(|(k, o)| &*o.mark.owner == owner_id && self.data.contains_key(*k))
            .count()
    }

    /// The ownership record of `key` as observed (rebuilt from the shared data).
    pub fn owner_rrset(&self, key: &RecordKey) -> Option<RRSet> {
        let owned = self.owners.get(key)?;
        Some(owned.template.with_key(owner_record_key(key)?))
    }

    pub fn owner_of(&self, key: &RecordKey) -> Option<&str> {
        self.owners.get(key).map(|o| &*o.mark.owner)
    }

    /// The part of the view at `names` (data at the names, ownership of records at
    /// the names), for a targeted re-plan.
    pub fn subset(&self, zone: &Name, names: &BTreeSet<Name>) -> ZoneView {
        let mut out = ZoneView::default();
        for n in names {
            out.data
                .extend(at_name(&self.data, zone, n).map(|(k, v)| (k.clone(), v.clone())));
            out.owners
                .extend(at_name(&self.owners, zone, n).map(|(k, v)| (k.clone(), v.clone())));
        }
        out
    }

    /// Replaces everything at `names` with `fresh` (a targeted read of those names and
    /// their ownership records).
    pub fn replace_names(&mut self, zone: &Name, names: &BTreeSet<Name>, fresh: ZoneView) {
        for n in names {
            let gone: Vec<RecordKey> = at_name(&self.data, zone, n)
                .map(|(k, _)| k.clone())
                .collect();
            for k in gone {
                self.data.remove(&k);
            }
            let gone: Vec<RecordKey> = at_name(&self.owners, zone, n)
                .map(|(k, _)| k.clone())
                .collect();
            for k in gone {
                self.owners.remove(&k);
            }
        }
        self.data.extend(fresh.data);
        self.owners.extend(fresh.owners);
    }

    /// Records what a committed op of the change to `changed` left behind, so that the
    /// observed state follows the results instead of being read again. The key of an
    /// ownership record's owned record is `changed`'s (shared, not a new name).
    pub fn apply_op(&mut self, op: &RRSetOp, changed: &RecordKey) {
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
                    if self.written.len() >= WRITTEN_MARKS {
                        self.written.clear();
                    }
                    let shared = self
                        .written
                        .entry((after.ttl, after.values().into()))
                        .or_insert_with(|| {
                            Arc::new(Owned {
                                mark,
                                template: after.clone(),
                            })
                        })
                        .clone();
                    self.grown += usize::from(self.owners.insert(owned, shared).is_none());
                }
            }
            (Some(owned), None) => {
                self.owners.remove(&owned);
            }
            (None, Some(after)) => {
                self.grown += usize::from(
                    self.data
                        .insert(op.key.clone(), RRData::of(after))
                        .is_none(),
                );
            }
            (None, None) => {
                self.data.remove(&op.key);
            }
        }
    }

    /// Sets (or clears) what the provider was seen to hold at `key`.
    pub fn observe(&mut self, key: &RecordKey, rrset: Option<RRSet>) {
        match rrset {
            Some(r) => {
                self.data.insert(key.clone(), RRData::of(&r));
            }
            None => {
                self.data.remove(key);
            }
        }
    }

    /// Rebuilds the maps in one go once a quarter of their entries were inserted one
    /// by one: a B-tree filled key by key in order (a first sync's creates) leaves its
    /// nodes about half full, one built from a sorted run fills them. Amortised O(1)
    /// per insert.
    pub fn compact(&mut self) {
        if self.grown * 4 <= self.len() || self.grown < 1_024 {
            return;
        }
        self.data = std::mem::take(&mut self.data).into_iter().collect();
        self.owners = std::mem::take(&mut self.owners).into_iter().collect();
        self.grown = 0;
    }

    /// Records in the view (data and ownership).
    pub fn len(&self) -> usize {
        self.data.len() + self.owners.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dnsplane_common::RecordType;

    use dnsplane_testing::records::key;

    #[test]
    fn foreign_txt_is_data() {
        let k = key("_dnsplane-a.www.example.com", RecordType::Txt);
        let other = RRSet::new(
            k.clone(),
            60,
            &["heritage=external-dns,external-dns/owner=x"],
        )
        .unwrap();
        assert!(parse_owner_record(&other).is_none());
        let view = ZoneView::new([other]);
        assert!(view.contains(&k));
        assert!(view.owners.is_empty());
    }

    /// Ownership records written with the same mark share one `Owned`; each still
    /// reads back as its own record.
    #[test]
    fn written_marks_are_shared() {
        let mut view = ZoneView::default();
        let keys = [
            key("a.example.com", RecordType::A),
            key("b.example.com", RecordType::A),
        ];
        for k in &keys {
            let owner = crate::ownership::owner_record(k, "me", "push/x").unwrap();
            view.apply_op(&RRSetOp::create(owner), k);
        }
        let (a, b) = (&view.owners[&keys[0]], &view.owners[&keys[1]]);
        assert!(Arc::ptr_eq(a, b));
        assert_eq!(view.owner_of(&keys[1]), Some("me"));
        assert_eq!(
            view.owner_rrset(&keys[1]).unwrap().key,
            crate::ownership::owner_record_key(&keys[1]).unwrap()
        );
        let other = crate::ownership::owner_record(&keys[1], "me", "push/y").unwrap();
        view.apply_op(&RRSetOp::create(other), &keys[1]);
        assert!(!Arc::ptr_eq(&view.owners[&keys[0]], &view.owners[&keys[1]]));
    }

    /// Compacting keeps every entry and its shared storage; it happens only once a
    /// quarter of the entries came one by one.
    #[test]
    fn compacting_keeps_the_view() {
        let mut view = ZoneView::default();
        let mut keys = Vec::new();
        for i in 0..5_000 {
            let k = key(&format!("r{i}.example.com"), RecordType::A);
            let rr = RRSet::new(k.clone(), 60, &["192.0.2.1"]).unwrap();
            view.apply_op(&RRSetOp::create(rr), &k);
            let owner = crate::ownership::owner_record(&k, "me", "push/x").unwrap();
            view.apply_op(&RRSetOp::create(owner), &k);
            keys.push(k);
        }
        assert_eq!(view.grown, 10_000);
        let before = view.clone();
        view.compact();
        assert_eq!(view.grown, 0);
        assert_eq!(view.data, before.data);
        assert_eq!(view.owners, before.owners);
        assert!(Arc::ptr_eq(
            &view.owners[&keys[0]],
            &view.owners[&keys[4_999]]
        ));
        // The owned key is the changed record's own (one name allocation).
        let (owned, _) = view.owners.get_key_value(&keys[7]).unwrap();
        assert!(owned.name.shares_text_with(&keys[7].name));
    }
}
