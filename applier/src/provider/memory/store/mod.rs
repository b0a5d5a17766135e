//! The `memory` driver's zone store: atomic, conditional batches over in-memory zones,
//! made durable by a snapshot file plus an append-only journal of committed batches.
//!
//! Layout of a store directory:
//! - `snapshot.json`: every zone with its serial and RRSets; replaced atomically
//!   (write a temporary file, fsync, rename, fsync the directory).
//! - `journal.jsonl`: one JSON line per committed batch, fsynced before `apply`
//!   returns. A torn last line is an unacknowledged batch and is dropped on open.
//!   Entries at or below a zone's snapshot serial are skipped, so a crash between
//!   writing a snapshot and truncating the journal is harmless.
//!
//! The store is also the out-of-band write path for tests and tools: open the same
//! directory while no applier runs and call [`MemoryStore::apply`].
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

mod journal;

use journal::{
    FORMAT, JOURNAL, JournalEntry, JournalWrite, SNAPSHOT, Snapshot, StoredData, StoredRRSet,
    StoredZone, load_snapshot, replay_journal, sync_dir,
};
/// Journal size above which it is folded into the snapshot (or the snapshot's own
/// size, when larger).
pub const DEFAULT_COMPACT_BYTES: u64 = 4 << 20;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("zone {0} is not hosted by this store")]
    NoSuchZone(Name),
    /// A precondition or the CNAME rule failed; nothing was written.
    #[error("{message}")]
    Conflict { key: RecordKey, message: String },
    #[error("{key:?} is not in zone {zone}")]
    OutOfZone { key: RecordKey, zone: Name },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}{}: {problem}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Corrupt {
        path: PathBuf,
        line: Option<usize>,
        problem: String,
    },
    /// A journal write failed and could not be rolled back; the on-disk state is
    /// unknown until the store is reopened.
    #[error("store {0} is unusable after an I/O failure; restart to recover")]
    Poisoned(PathBuf),
}

impl StoreError {
    pub(super) fn io(path: &Path, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The RRSets at one owner name.
#[derive(Debug, Clone)]
pub struct Node {
    pub name: Name,
    pub rrsets: BTreeMap<RecordType, RRSet>,
}

/// One zone's data. Names are kept in DNS order (labels reversed), so that "does
/// anything exist below this name" is one range lookup.
#[derive(Debug, Clone)]
pub struct ZoneData {
    pub(super) serial: u64,
    nodes: BTreeMap<String, Node>,
}

impl ZoneData {
    pub(super) fn new() -> Self {
        ZoneData {
            serial: 1,
            nodes: BTreeMap::new(),
        }
    }

    /// The change counter: bumped by every committed batch that wrote something.
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// The RRSets at `name`, if any.
    pub fn node(&self, name: &Name) -> Option<&Node> {
        self.nodes.get(&order_key(name))
    }

    pub fn get(&self, key: &RecordKey) -> Option<&RRSet> {
        self.node(&key.name)?.rrsets.get(&key.rtype)
    }

    /// True when some name strictly below `name` holds data (so `name` is at least an
    /// empty non-terminal).
    pub fn has_descendants(&self, name: &Name) -> bool {
        let k = order_key(name);
        self.nodes
            .range::<String, _>((Bound::Excluded(&k), Bound::Unbounded))
            .next()
            .is_some_and(|(next, _)| next.starts_with(&k))
    }

    /// Every RRSet, in DNS order.
    pub fn rrsets(&self) -> impl Iterator<Item = &RRSet> {
        self.nodes.values().flat_map(|n| n.rrsets.values())
    }

    pub(super) fn set(&mut self, key: &RecordKey, rrset: Option<RRSet>) {
        let k = order_key(&key.name);
        match rrset {
            Some(r) => {
                self.nodes
                    .entry(k)
                    .or_insert_with(|| Node {
                        name: key.name.clone(),
                        rrsets: BTreeMap::new(),
                    })
                    .rrsets
                    .insert(key.rtype, r);
            }
            None => {
                if let Some(node) = self.nodes.get_mut(&k) {
                    node.rrsets.remove(&key.rtype);
                    if node.rrsets.is_empty() {
                        self.nodes.remove(&k);
                    }
                }
            }
        }
    }
}

/// `www.example.com.` → `com.example.www.`: sorts a zone in DNS order and makes a
/// name's descendants the keys that start with its own key.
fn order_key(name: &Name) -> String {
    let s = name.as_str().trim_end_matches('.');
    if s.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(s.len() + 1);
    for label in s.rsplit('.') {
        out.push_str(label);
        out.push('.');
    }
    out
}

struct State {
    zones: BTreeMap<Name, ZoneData>,
    journal: File,
    journal_bytes: u64,
    /// Size of the snapshot file: the journal is folded in only once it has grown as
    /// large, so that writing snapshots costs amortised O(bytes written), not a whole
    /// zone every few megabytes (which made loading a million records quadratic).
    snapshot_bytes: u64,
    poisoned: bool,
}

/// A directory-backed, crash-safe zone store. One process at a time may open a
/// directory; nothing enforces that, so tools must only write while no applier runs.
#[derive(Debug)]
pub struct MemoryStore {
    dir: PathBuf,
    compact_bytes: u64,
    state: Mutex<State>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("zones", &self.zones.len())
            .field("journal_bytes", &self.journal_bytes)
            .field("poisoned", &self.poisoned)
            .finish()
    }
}

impl MemoryStore {
    /// Opens (creating if needed) the store in `dir`: loads the snapshot, replays the
    /// journal and drops a torn last line.
    pub fn open(dir: impl AsRef<Path>) -> Result<MemoryStore, StoreError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        let mut zones = load_snapshot(&dir.join(SNAPSHOT))?;
        let snapshot_bytes = std::fs::metadata(dir.join(SNAPSHOT)).map_or(0, |m| m.len());
        let journal_path = dir.join(JOURNAL);
        let existed = journal_path.exists();
        let good_len = replay_journal(&journal_path, &mut zones)?;
        let journal = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&journal_path)
            .map_err(|e| StoreError::io(&journal_path, e))?;
        let len = journal
            .metadata()
            .map_err(|e| StoreError::io(&journal_path, e))?
            .len();
        if len != good_len {
            tracing::warn!(path = %journal_path.display(), dropped_bytes = len - good_len, "Dropping a torn last journal line; that batch was never acknowledged.");
            journal
                .set_len(good_len)
                .map_err(|e| StoreError::io(&journal_path, e))?;
            journal
                .sync_all()
                .map_err(|e| StoreError::io(&journal_path, e))?;
        }
        if !existed {
            sync_dir(&dir)?;
        }
        Ok(MemoryStore {
            dir,
            compact_bytes: DEFAULT_COMPACT_BYTES,
            state: Mutex::new(State {
                zones,
                journal,
                journal_bytes: good_len,
                snapshot_bytes,
                poisoned: false,
            }),
        })
    }

    /// Sets the journal size above which it is folded into the snapshot.
    pub fn with_compact_bytes(mut self, bytes: u64) -> Self {
        self.compact_bytes = bytes;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied batch: the state is
        // only mutated after the journal write, with no fallible step in between.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates each of `zones` that does not exist yet, empty (serial 1), and persists
    /// the result. Existing zones are left alone.
    pub fn ensure_zones(&self, zones: &[Name]) -> Result<(), StoreError> {
        let mut st = self.lock();
        let mut created = false;
        for z in zones {
            if !st.zones.contains_key(z) {
                st.zones.insert(z.clone(), ZoneData::new());
                created = true;
            }
        }
        if created {
            self.compact(&mut st)?;
        }
        Ok(())
    }

    /// The zones this store holds.
    pub fn zones(&self) -> Vec<Name> {
        self.lock().zones.keys().cloned().collect()
    }

    pub fn serial(&self, zone: &Name) -> Result<u64, StoreError> {
        self.read(zone, ZoneData::serial)
    }

    /// The zone's RRSets (only those at `names` when given), in DNS order, and its serial.
    pub fn list(
        &self,
        zone: &Name,
        names: Option<&[Name]>,
    ) -> Result<(Vec<RRSet>, u64), StoreError> {
        self.read(zone, |z| {
            let rrsets = match names {
                None => z.rrsets().cloned().collect(),
                Some(names) => {
                    let mut names: Vec<&Name> = names.iter().collect();
                    names.sort_by_key(|n| order_key(n));
                    names.dedup();
                    names
                        .into_iter()
                        .filter_map(|n| z.node(n))
                        .flat_map(|n| n.rrsets.values().cloned())
                        .collect()
                }
            };
            (rrsets, z.serial)
        })
    }

    /// Runs `f` on the zone's data under the store's lock; keep `f` short.
    pub fn read<R>(&self, zone: &Name, f: impl FnOnce(&ZoneData) -> R) -> Result<R, StoreError> {
        let st = self.lock();
        let z = st
            .zones
            .get(zone)
            .ok_or_else(|| StoreError::NoSuchZone(zone.clone()))?;
        Ok(f(z))
    }

    /// Applies `ops` atomically: every precondition is checked against the state as left
    /// by the ops before it, and the result must not put a CNAME beside other data. On
    /// any failure nothing changes. On success the batch is durable (journal fsynced)
    /// before this returns, and the zone's new serial is returned (unchanged when every
    /// op was an assertion).
    pub fn apply(&self, zone: &Name, ops: &[RRSetOp]) -> Result<u64, StoreError> {
        let mut st = self.lock();
        if st.poisoned {
            return Err(StoreError::Poisoned(self.dir.clone()));
        }
        let data = st
            .zones
            .get(zone)
            .ok_or_else(|| StoreError::NoSuchZone(zone.clone()))?;
        let staged = stage(zone, data, ops)?;
        if staged.is_empty() {
            return Ok(data.serial);
        }
        let serial = data.serial + 1;
        let entry = JournalEntry {
            zone: zone.clone(),
            serial,
            writes: staged
                .values()
                .map(|(key, r)| JournalWrite {
                    name: key.name.clone(),
                    rtype: key.rtype,
                    data: r.as_ref().map(|r| StoredData {
                        ttl: r.ttl,
                        values: r.values_vec(),
                    }),
                })
                .collect(),
        };
        let mut line = serde_json::to_string(&entry).map_err(|e| StoreError::Corrupt {
            path: self.dir.join(JOURNAL),
            line: None,
            problem: format!("cannot encode a journal entry: {e}"),
        })?;
        line.push('\n');
        self.append(&mut st, line.as_bytes())?;
        let data = st
            .zones
            .get_mut(zone)
            .ok_or_else(|| StoreError::NoSuchZone(zone.clone()))?;
        for (key, r) in staged.into_values() {
            data.set(&key, r);
        }
        data.serial = serial;
        if st.journal_bytes > self.compact_bytes.max(st.snapshot_bytes)
            && let Err(e) = self.compact(&mut st)
        {
            // The batch is durable in the journal; compaction is retried on the next one.
            tracing::warn!(error = %e, "Journal compaction failed; will retry after the next batch.");
        }
        Ok(serial)
    }

    /// Appends one journal line and fsyncs it; on failure rolls the file back to its
    /// previous length so that no half line is left behind a later entry.
    fn append(&self, st: &mut State, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.dir.join(JOURNAL);
        let result = st
            .journal
            .write_all(bytes)
            .and_then(|()| st.journal.sync_data());
        match result {
            Ok(()) => {
                st.journal_bytes += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                if st
                    .journal
                    .set_len(st.journal_bytes)
                    .and_then(|()| st.journal.sync_data())
                    .is_err()
                {
                    st.poisoned = true;
                }
                Err(StoreError::io(&path, e))
            }
        }
    }

    /// Writes every zone to a new snapshot, then empties the journal.
    fn compact(&self, st: &mut State) -> Result<(), StoreError> {
        let snapshot = Snapshot {
            format: FORMAT,
            zones: st
                .zones
                .iter()
                .map(|(zone, data)| StoredZone {
                    zone: zone.clone(),
                    serial: data.serial,
                    rrsets: data
                        .rrsets()
                        .map(|r| StoredRRSet {
                            name: r.key.name.clone(),
                            rtype: r.key.rtype,
                            ttl: r.ttl,
                            values: r.values_vec(),
                        })
                        .collect(),
                })
                .collect(),
        };
        let path = self.dir.join(SNAPSHOT);
        let tmp = self.dir.join(format!("{SNAPSHOT}.tmp"));
        let bytes = serde_json::to_vec(&snapshot).map_err(|e| StoreError::Corrupt {
            path: path.clone(),
            line: None,
            problem: format!("cannot encode the snapshot: {e}"),
        })?;
        {
            let mut f = File::create(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
            f.write_all(&bytes).map_err(|e| StoreError::io(&tmp, e))?;
            f.sync_all().map_err(|e| StoreError::io(&tmp, e))?;
        }
        std::fs::rename(&tmp, &path).map_err(|e| StoreError::io(&path, e))?;
        sync_dir(&self.dir)?;
        st.snapshot_bytes = bytes.len() as u64;
        let journal = self.dir.join(JOURNAL);
        st.journal
            .set_len(0)
            .map_err(|e| StoreError::io(&journal, e))?;
        st.journal
            .sync_all()
            .map_err(|e| StoreError::io(&journal, e))?;
        st.journal_bytes = 0;
        Ok(())
    }
}

/// The writes of one batch: per (DNS-order name, type), the key and the new RRSet
/// (`None`: deleted).
type Staged = BTreeMap<(String, RecordType), (RecordKey, Option<RRSet>)>;

/// Checks `ops` against `data` and returns the writes they make, by key in DNS order.
fn stage(zone: &Name, data: &ZoneData, ops: &[RRSetOp]) -> Result<Staged, StoreError> {
    let mut staged = Staged::new();
    for op in ops {
        if &op.key.zone != zone {
            return Err(StoreError::OutOfZone {
                key: op.key.clone(),
                zone: zone.clone(),
            });
        }
        let slot = (order_key(&op.key.name), op.key.rtype);
        let current = match staged.get(&slot) {
            Some((_, r)) => r.as_ref(),
            None => data.get(&op.key),
        };
        if !op.precondition_holds(current) {
            let message = match (&op.before, current) {
                (None, Some(_)) => format!("{} already exists", op.key),
                (Some(_), None) => format!("{} does not exist", op.key),
                _ => format!("{} differs from the expected RRSet", op.key),
            };
            return Err(StoreError::Conflict {
                key: op.key.clone(),
                message,
            });
        }
        if !op.is_assert() {
            staged.insert(slot, (op.key.clone(), op.after.clone()));
        }
    }
    // The CNAME rule, on the resulting state of every name the batch writes data at.
    for ((okey, _), (key, r)) in &staged {
        if r.is_none() {
            continue;
        }
        let mut types: BTreeMap<RecordType, bool> = data
            .nodes
            .get(okey)
            .map(|n| n.rrsets.keys().map(|t| (*t, true)).collect())
            .unwrap_or_default();
        for ((k2, t2), (_, r2)) in staged.range((okey.clone(), RecordType::A)..) {
            if k2 != okey {
                break;
            }
            types.insert(*t2, r2.is_some());
        }
        let present: Vec<RecordType> = types
            .into_iter()
            .filter(|(_, p)| *p)
            .map(|(t, _)| t)
            .collect();
        if present.contains(&RecordType::Cname) && present.len() > 1 {
            let others: Vec<&str> = present
                .iter()
                .filter(|t| **t != RecordType::Cname)
                .map(|t| t.as_str())
                .collect();
            return Err(StoreError::Conflict {
                key: key.clone(),
                message: format!(
                    "a CNAME at {} cannot sit beside other data ({})",
                    key.name,
                    others.join(", ")
                ),
            });
        }
    }
    Ok(staged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone() -> Name {
        Name::parse("example.com").unwrap()
    }

    fn rr(name: &str, t: RecordType, values: &[&str]) -> RRSet {
        RRSet::new(
            RecordKey::new(zone(), Name::parse(name).unwrap(), t),
            300,
            values,
        )
        .unwrap()
    }

    fn open(dir: &Path) -> MemoryStore {
        let s = MemoryStore::open(dir).unwrap();
        s.ensure_zones(&[zone()]).unwrap();
        s
    }

    #[test]
    fn batches_are_atomic_and_conditional() {
        let dir = tempfile::tempdir().unwrap();
        let s = open(dir.path());
        let a = rr("a.example.com", RecordType::A, &["192.0.2.1"]);
        let b = rr("b.example.com", RecordType::A, &["192.0.2.2"]);
        assert_eq!(s.apply(&zone(), &[RRSetOp::create(a.clone())]).unwrap(), 2);
        // The second op's precondition fails, so the first is not applied either.
        let err = s
            .apply(
                &zone(),
                &[RRSetOp::create(b.clone()), RRSetOp::create(a.clone())],
            )
            .unwrap_err();
        let StoreError::Conflict { key, message } = err else {
            panic!("{err:?}")
        };
        assert_eq!(key, a.key);
        assert!(message.contains("already exists"), "{message}");
        let (rrsets, serial) = s.list(&zone(), None).unwrap();
        assert_eq!((rrsets, serial), (vec![a.clone()], 2));
        // Ops see the effect of earlier ops in the same batch.
        let a2 = rr("a.example.com", RecordType::A, &["192.0.2.9"]);
        s.apply(
            &zone(),
            &[
                RRSetOp::update(a.clone(), a2.clone()),
                RRSetOp::delete(a2.clone()),
            ],
        )
        .unwrap();
        assert!(s.list(&zone(), None).unwrap().0.is_empty());
        assert!(matches!(
            s.apply(&Name::parse("other.org").unwrap(), &[]),
            Err(StoreError::NoSuchZone(_))
        ));
    }

    #[test]
    fn cname_beside_other_data_is_a_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let s = open(dir.path());
        let a = rr("x.example.com", RecordType::A, &["192.0.2.1"]);
        let c = rr("x.example.com", RecordType::Cname, &["target.example.net"]);
        s.apply(&zone(), &[RRSetOp::create(a.clone())]).unwrap();
        let err = s.apply(&zone(), &[RRSetOp::create(c.clone())]).unwrap_err();
        assert!(
            matches!(&err, StoreError::Conflict { key, .. } if key == &c.key),
            "{err:?}"
        );
        // Replacing the A by the CNAME in one batch is fine.
        s.apply(&zone(), &[RRSetOp::delete(a), RRSetOp::create(c.clone())])
            .unwrap();
        assert_eq!(s.list(&zone(), None).unwrap().0, vec![c]);
    }

    #[test]
    fn state_survives_reopen_and_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let recs: Vec<RRSet> = (0..20)
            .map(|i| {
                rr(
                    &format!("h{i}.example.com"),
                    RecordType::Txt,
                    &[&format!("v{i}")],
                )
            })
            .collect();
        {
            let s = open(dir.path()).with_compact_bytes(1500);
            for r in &recs {
                s.apply(&zone(), &[RRSetOp::create(r.clone())]).unwrap();
            }
        }
        let s = open(dir.path());
        let (mut got, serial) = s.list(&zone(), None).unwrap();
        let mut want = recs.clone();
        got.sort_by(|a, b| a.key.cmp(&b.key));
        want.sort_by(|a, b| a.key.cmp(&b.key));
        assert_eq!(got, want);
        assert_eq!(serial, 21);
        let journal_len = std::fs::metadata(dir.path().join(JOURNAL)).unwrap().len();
        assert!(
            journal_len < 1500,
            "journal was compacted ({journal_len} bytes)"
        );
    }

    #[test]
    fn the_journal_is_folded_in_only_once_it_is_as_large_as_the_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let s = open(dir.path()).with_compact_bytes(100);
        let big: Vec<RRSetOp> = (0..50)
            .map(|i| {
                RRSetOp::create(rr(
                    &format!("h{i}.example.com"),
                    RecordType::Txt,
                    &[&format!("v{i}")],
                ))
            })
            .collect();
        s.apply(&zone(), &big).unwrap();
        let len = |f: &str| std::fs::metadata(dir.path().join(f)).unwrap().len();
        let snapshot = len(SNAPSHOT);
        assert_eq!(len(JOURNAL), 0, "the first big batch was folded in");
        // Small batches past `compact_bytes` but not past the snapshot stay journaled.
        for i in 0..5 {
            let r = rr(&format!("s{i}.example.com"), RecordType::A, &["192.0.2.1"]);
            s.apply(&zone(), &[RRSetOp::create(r)]).unwrap();
        }
        assert!(len(JOURNAL) > 100 && len(JOURNAL) < snapshot);
        assert_eq!(len(SNAPSHOT), snapshot, "the snapshot was not rewritten");
        // Once the journal outgrows the snapshot, it is folded in.
        for i in 5..200 {
            let r = rr(&format!("s{i}.example.com"), RecordType::A, &["192.0.2.1"]);
            s.apply(&zone(), &[RRSetOp::create(r)]).unwrap();
            if len(JOURNAL) == 0 {
                assert!(len(SNAPSHOT) > snapshot);
                return;
            }
        }
        panic!("the journal ({} B) was never folded in", len(JOURNAL));
    }

    #[test]
    fn a_torn_last_line_is_dropped_but_damage_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let a = rr("a.example.com", RecordType::A, &["192.0.2.1"]);
        {
            let s = open(dir.path());
            s.apply(&zone(), &[RRSetOp::create(a.clone())]).unwrap();
        }
        let path = dir.path().join(JOURNAL);
        let good = std::fs::read(&path).unwrap();
        let mut torn = good.clone();
        torn.extend_from_slice(b"{\"zone\":\"example.com.\",\"ser");
        std::fs::write(&path, &torn).unwrap();
        {
            let s = open(dir.path());
            assert_eq!(s.list(&zone(), None).unwrap(), (vec![a.clone()], 2));
            // The torn tail was cut, so new entries land on a clean line.
            let b = rr("b.example.com", RecordType::A, &["192.0.2.2"]);
            s.apply(&zone(), &[RRSetOp::create(b)]).unwrap();
        }
        assert_eq!(open(dir.path()).serial(&zone()).unwrap(), 3);

        let mut damaged = b"garbage\n".to_vec();
        damaged.extend_from_slice(&good);
        std::fs::write(&path, &damaged).unwrap();
        let err = MemoryStore::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    #[test]
    fn descendants_make_empty_non_terminals() {
        let dir = tempfile::tempdir().unwrap();
        let s = open(dir.path());
        s.apply(
            &zone(),
            &[RRSetOp::create(rr(
                "a.b.example.com",
                RecordType::A,
                &["192.0.2.1"],
            ))],
        )
        .unwrap();
        s.read(&zone(), |z| {
            assert!(z.has_descendants(&Name::parse("b.example.com").unwrap()));
            assert!(z.has_descendants(&zone()));
            assert!(!z.has_descendants(&Name::parse("a.b.example.com").unwrap()));
            assert!(!z.has_descendants(&Name::parse("bb.example.com").unwrap()));
        })
        .unwrap();
    }
}
