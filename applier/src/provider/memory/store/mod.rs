//! The `memory` driver's zone store: atomic, conditional batches over in-memory zones,
//! made durable by an embedded redb database (`zones.redb`, [`disk`]): each batch is one
//! write transaction, committed before `apply` returns. Directories written by earlier
//! versions (a JSON snapshot plus a journal, [`legacy`]) are migrated on open.
//!
//! The store is also the out-of-band write path for tests and tools: open the same
//! directory while no applier runs and call [`MemoryStore::apply`].
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

mod disk;
mod legacy;

use legacy::sync_dir;

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
    /// Another process, or another account of this one, has the directory open.
    #[error(
        "{0} is already open (another applier, or another account with the same state_dir); one store per directory"
    )]
    Locked(PathBuf),
    /// A write failed and the database refuses more until it is reopened.
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
}

/// A directory-backed, crash-safe zone store: the zones are served from memory and
/// every committed batch is written to a redb database first ([`disk`]). One process
/// at a time may open a directory (redb locks the file): tools write only while no
/// applier runs.
pub struct MemoryStore {
    dir: PathBuf,
    db: redb::Database,
    state: Mutex<State>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("dir", &self.dir)
            .field("zones", &self.lock().zones.len())
            .finish()
    }
}

impl MemoryStore {
    /// Opens (creating if needed) the store in `dir` and loads its zones. A directory
    /// written by an earlier version (`snapshot.json` + `journal.jsonl`) is migrated
    /// once: its zones are written to the database, then the old files are renamed
    /// `*.migrated` (kept, never deleted).
    pub fn open(dir: impl AsRef<Path>) -> Result<MemoryStore, StoreError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        let path = dir.join(disk::DATABASE);
        let fresh = !path.exists();
        let db = disk::open(&path)?;
        if fresh {
            sync_dir(&dir)?;
        }
        let zones = match legacy::load(&dir)? {
            None => disk::load(&db, &path)?,
            Some(old) => {
                let current = disk::load(&db, &path)?;
                let serials = |z: &BTreeMap<Name, ZoneData>| -> Vec<(Name, u64)> {
                    z.iter().map(|(n, d)| (n.clone(), d.serial)).collect()
                };
                if current.is_empty() {
                    disk::write_all(&db, &path, &old)?;
                } else if serials(&current) != serials(&old) {
                    // Not a migration cut short: two different states. Picking one
                    // could lose the other's records, so ask.
                    return Err(StoreError::Corrupt {
                        path: dir.join(legacy::SNAPSHOT),
                        line: None,
                        problem: format!(
                            "both {} and the older snapshot.json/journal.jsonl hold zones, \
                             with different serials; move one of them away",
                            disk::DATABASE
                        ),
                    });
                }
                legacy::retire(&dir)?;
                tracing::info!(dir = %dir.display(), zones = old.len(), "Moved the store from snapshot.json + journal.jsonl into zones.redb; the old files are kept as *.migrated.");
                old
            }
        };
        Ok(MemoryStore {
            dir,
            db,
            state: Mutex::new(State { zones }),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn database(&self) -> PathBuf {
        self.dir.join(disk::DATABASE)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied batch: the state is
        // only mutated after the commit, with no fallible step in between.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates each of `zones` that does not exist yet, empty (serial 1), and persists
    /// the result. Existing zones are left alone.
    pub fn ensure_zones(&self, zones: &[Name]) -> Result<(), StoreError> {
        let mut st = self.lock();
        let new: Vec<(&Name, u64)> = zones
            .iter()
            .filter(|z| !st.zones.contains_key(*z))
            .map(|z| (z, ZoneData::new().serial))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        disk::commit(&self.db, &self.database(), &new, &[])?;
        for (z, _) in new {
            st.zones.insert(z.clone(), ZoneData::new());
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
    /// any failure nothing changes. On success the batch is durable (committed to the
    /// database) before this returns, and the zone's new serial is returned (unchanged
    /// when every op was an assertion).
    pub fn apply(&self, zone: &Name, ops: &[RRSetOp]) -> Result<u64, StoreError> {
        let mut st = self.lock();
        let data = st
            .zones
            .get(zone)
            .ok_or_else(|| StoreError::NoSuchZone(zone.clone()))?;
        let staged = stage(zone, data, ops)?;
        if staged.is_empty() {
            return Ok(data.serial);
        }
        let serial = data.serial + 1;
        let writes: Vec<disk::Write<'_>> = staged
            .values()
            .map(|(key, r)| disk::Write {
                key,
                rrset: r.as_ref(),
            })
            .collect();
        disk::commit(&self.db, &self.database(), &[(zone, serial)], &writes)?;
        let data = st
            .zones
            .get_mut(zone)
            .ok_or_else(|| StoreError::NoSuchZone(zone.clone()))?;
        for (key, r) in staged.into_values() {
            data.set(&key, r);
        }
        data.serial = serial;
        Ok(serial)
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
    fn state_survives_reopen() {
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
            let s = open(dir.path());
            for r in &recs {
                s.apply(&zone(), &[RRSetOp::create(r.clone())]).unwrap();
            }
            let gone = recs[3].clone();
            s.apply(&zone(), &[RRSetOp::delete(gone)]).unwrap();
        }
        let s = open(dir.path());
        let (mut got, serial) = s.list(&zone(), None).unwrap();
        let mut want = recs.clone();
        want.remove(3);
        got.sort_by(|a, b| a.key.cmp(&b.key));
        want.sort_by(|a, b| a.key.cmp(&b.key));
        assert_eq!(got, want);
        assert_eq!(serial, 22);
    }

    #[test]
    fn a_second_process_cannot_open_the_same_store() {
        let dir = tempfile::tempdir().unwrap();
        let _first = open(dir.path());
        let err = MemoryStore::open(dir.path()).unwrap_err();
        assert!(matches!(err, StoreError::Locked(_)), "{err}");
        assert!(err.to_string().contains(disk::DATABASE), "{err}");
    }

    /// What an earlier version left: a snapshot, journal lines after it, and a line
    /// torn by a crash (never acknowledged).
    fn write_old_format(dir: &Path, journal_tail: &str) {
        std::fs::write(
            dir.join(legacy::SNAPSHOT),
            r#"{"format":1,"zones":[{"zone":"example.com.","serial":4,"rrsets":[
                {"name":"a.example.com.","type":"A","ttl":300,"values":["192.0.2.1"]},
                {"name":"gone.example.com.","type":"A","ttl":300,"values":["192.0.2.9"]}]}]}"#,
        )
        .unwrap();
        let journal = format!(
            "{}\n{}\n{journal_tail}",
            r#"{"zone":"example.com.","serial":4,"writes":[{"name":"old.example.com.","type":"A","data":{"ttl":1,"values":["192.0.2.7"]}}]}"#,
            r#"{"zone":"example.com.","serial":5,"writes":[{"name":"b.example.com.","type":"TXT","data":{"ttl":60,"values":["\"hi\""]}},{"name":"gone.example.com.","type":"A","data":null}]}"#,
        );
        std::fs::write(dir.join(legacy::JOURNAL), journal).unwrap();
    }

    #[test]
    fn an_old_snapshot_and_journal_are_migrated_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        write_old_format(dir.path(), r#"{"zone":"example.com.","ser"#);
        let want = vec![
            rr("a.example.com", RecordType::A, &["192.0.2.1"]),
            RRSet::new(
                RecordKey::new(
                    zone(),
                    Name::parse("b.example.com").unwrap(),
                    RecordType::Txt,
                ),
                60,
                &["\"hi\""],
            )
            .unwrap(),
        ];
        {
            let s = open(dir.path());
            // The journal line at the snapshot's serial was already in it; the torn one
            // was never acknowledged.
            assert_eq!(s.list(&zone(), None).unwrap(), (want.clone(), 5));
            let c = rr("c.example.com", RecordType::A, &["192.0.2.3"]);
            assert_eq!(s.apply(&zone(), &[RRSetOp::create(c)]).unwrap(), 6);
        }
        for f in [legacy::SNAPSHOT, legacy::JOURNAL] {
            assert!(!dir.path().join(f).exists(), "{f} retired");
            assert!(
                dir.path().join(format!("{f}.migrated")).exists(),
                "{f} kept"
            );
        }
        let s = open(dir.path());
        let (got, serial) = s.list(&zone(), None).unwrap();
        assert_eq!((got.len(), serial), (3, 6));
        assert_eq!(&got[..2], &want[..]);
    }

    #[test]
    fn a_migration_cut_short_finishes_but_two_different_states_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        write_old_format(dir.path(), "");
        drop(open(dir.path()));
        // A crash after the database's commit but before the rename: same serials.
        for f in [legacy::SNAPSHOT, legacy::JOURNAL] {
            let p = dir.path().join(f);
            std::fs::rename(
                p.with_extension(format!(
                    "{}.migrated",
                    p.extension().unwrap().to_str().unwrap()
                )),
                &p,
            )
            .unwrap();
        }
        assert_eq!(open(dir.path()).serial(&zone()).unwrap(), 5);
        assert!(!dir.path().join(legacy::SNAPSHOT).exists());
        // Old files that say something else than the database: nothing is picked.
        {
            let s = open(dir.path());
            let c = rr("c.example.com", RecordType::A, &["192.0.2.3"]);
            s.apply(&zone(), &[RRSetOp::create(c)]).unwrap();
        }
        write_old_format(dir.path(), "");
        let err = MemoryStore::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("different serials"), "{err}");
    }

    #[test]
    fn damage_in_an_old_journal_is_reported_and_nothing_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        write_old_format(
            dir.path(),
            "garbage\n{\"zone\":\"example.com.\",\"serial\":6,\"writes\":[]}\n",
        );
        let err = MemoryStore::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("line 3"), "{err}");
        assert!(dir.path().join(legacy::JOURNAL).exists(), "kept for repair");
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
