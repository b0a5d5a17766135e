//! The store's files before it moved to redb: a JSON snapshot and a journal of
//! committed batches, read once to migrate a directory an earlier version wrote
//! (a torn last journal line is an unacknowledged batch and is dropped; damage anywhere
//! else is an error, never silently skipped). Its [`StoredData`] (TTL and values) is
//! also the database's value format.
use super::{StoreError, ZoneData};
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

pub(super) const SNAPSHOT: &str = "snapshot.json";
pub(super) const JOURNAL: &str = "journal.jsonl";
const FORMAT: u32 = 1;
/// What the old files are renamed to once migrated: kept for the operator, not read.
const RETIRED: &str = "migrated";

/// The zones of an old-format directory, or `None` when it has neither file.
pub(super) fn load(dir: &Path) -> Result<Option<BTreeMap<Name, ZoneData>>, StoreError> {
    let (snapshot, journal) = (dir.join(SNAPSHOT), dir.join(JOURNAL));
    if !snapshot.exists() && !journal.exists() {
        return Ok(None);
    }
    let mut zones = load_snapshot(&snapshot)?;
    replay_journal(&journal, &mut zones)?;
    Ok(Some(zones))
}

/// Renames the old files to `*.migrated`, so that the next open uses the database only.
pub(super) fn retire(dir: &Path) -> Result<(), StoreError> {
    for name in [SNAPSHOT, JOURNAL] {
        let from = dir.join(name);
        let to = dir.join(format!("{name}.{RETIRED}"));
        match std::fs::rename(&from, &to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io(&from, e)),
        }
    }
    sync_dir(dir)
}

/// An RRSet as written to disk.
#[derive(Serialize, Deserialize)]
pub(super) struct StoredRRSet {
    pub(super) name: Name,
    #[serde(rename = "type")]
    pub(super) rtype: RecordType,
    pub(super) ttl: u32,
    pub(super) values: Vec<String>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct StoredZone {
    pub(super) zone: Name,
    pub(super) serial: u64,
    pub(super) rrsets: Vec<StoredRRSet>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct Snapshot {
    pub(super) format: u32,
    pub(super) zones: Vec<StoredZone>,
}

/// One write of a committed batch: the RRSet's new data, or `None` for a deletion.
#[derive(Serialize, Deserialize)]
pub(super) struct JournalWrite {
    pub(super) name: Name,
    #[serde(rename = "type")]
    pub(super) rtype: RecordType,
    pub(super) data: Option<StoredData>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct StoredData {
    pub(super) ttl: u32,
    pub(super) values: Vec<String>,
}

/// One committed batch.
#[derive(Serialize, Deserialize)]
pub(super) struct JournalEntry {
    pub(super) zone: Name,
    pub(super) serial: u64,
    pub(super) writes: Vec<JournalWrite>,
}

pub(super) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    // Directories can be opened and fsynced on Unix; elsewhere rename is as durable as
    // the platform makes it.
    #[cfg(unix)]
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io(dir, e))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

fn load_snapshot(path: &Path) -> Result<BTreeMap<Name, ZoneData>, StoreError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let corrupt = |problem: String| StoreError::Corrupt {
        path: path.to_path_buf(),
        line: None,
        problem,
    };
    let snapshot: Snapshot = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    if snapshot.format != FORMAT {
        return Err(corrupt(format!(
            "unsupported format {} (expected {FORMAT})",
            snapshot.format
        )));
    }
    let mut zones = BTreeMap::new();
    for z in snapshot.zones {
        let mut data = ZoneData::new();
        data.serial = z.serial;
        for r in z.rrsets {
            let key = RecordKey::new(z.zone.clone(), r.name, r.rtype);
            let rrset =
                RRSet::new(key.clone(), r.ttl, &r.values).map_err(|e| corrupt(e.to_string()))?;
            data.set(&key, Some(rrset));
        }
        zones.insert(z.zone, data);
    }
    Ok(zones)
}

/// Replays the journal into `zones` and returns the length of its well-formed prefix.
fn replay_journal(path: &Path, zones: &mut BTreeMap<Name, ZoneData>) -> Result<u64, StoreError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let mut reader = BufReader::new(file);
    let mut good = 0u64;
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| StoreError::io(path, e))?;
        if n == 0 {
            return Ok(good);
        }
        number += 1;
        let complete = line.last() == Some(&b'\n');
        let corrupt = |problem: String| StoreError::Corrupt {
            path: path.to_path_buf(),
            line: Some(number),
            problem,
        };
        if !complete {
            // A line without its newline is the last one, torn by a crash mid-write.
            return Ok(good);
        }
        let entry: JournalEntry = match serde_json::from_slice(&line) {
            Ok(e) => e,
            Err(e) => {
                // A bad line with more after it is damage, not a torn write.
                let mut rest = Vec::new();
                std::io::Read::read_to_end(&mut reader, &mut rest)
                    .map_err(|e| StoreError::io(path, e))?;
                if rest.iter().all(u8::is_ascii_whitespace) {
                    return Ok(good);
                }
                return Err(corrupt(e.to_string()));
            }
        };
        let data = zones
            .get_mut(&entry.zone)
            .ok_or_else(|| corrupt(format!("zone {} is not in the snapshot", entry.zone)))?;
        if entry.serial > data.serial {
            if entry.serial != data.serial + 1 {
                return Err(corrupt(format!(
                    "zone {} jumps from serial {} to {}",
                    entry.zone, data.serial, entry.serial
                )));
            }
            for w in entry.writes {
                let key = RecordKey::new(entry.zone.clone(), w.name, w.rtype);
                let rrset = match w.data {
                    None => None,
                    Some(d) => Some(
                        RRSet::new(key.clone(), d.ttl, &d.values)
                            .map_err(|e| corrupt(e.to_string()))?,
                    ),
                };
                data.set(&key, rrset);
            }
            data.serial = entry.serial;
        }
        good += n as u64;
    }
}
