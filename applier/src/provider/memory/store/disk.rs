//! The store's file: one redb database (`zones.redb`) holding each zone's serial and
//! RRSets. A committed write transaction is durable (fsynced) before `apply` returns and
//! a crash mid-commit leaves the previous state: redb gives the atomicity the hand-made
//! snapshot + journal gave, without a format of our own to replay and compact.
//!
//! Rows: `zones`: zone → serial; `rrsets`: (zone, owner name, type) → the RRSet's data
//! as JSON (`ttl`, `values`). Rows are read whole on open (the zones are served from
//! memory), so their order in the file does not matter. A database also refuses a second process
//! (redb locks the file), which the old files only documented.
use super::legacy::StoredData;
use super::{StoreError, ZoneData};
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::collections::BTreeMap;
use std::path::Path;

pub(super) const DATABASE: &str = "zones.redb";

const ZONES: TableDefinition<&str, u64> = TableDefinition::new("zones");
/// Key: (zone, owner name, type mnemonic).
const RRSETS: TableDefinition<(&str, &str, &str), &[u8]> = TableDefinition::new("rrsets");

/// One batch's rows: per key, the new RRSet or `None` for a deletion.
pub(super) struct Write<'a> {
    pub(super) key: &'a RecordKey,
    pub(super) rrset: Option<&'a RRSet>,
}

fn db_error(path: &Path, e: impl Into<redb::Error>) -> StoreError {
    match e.into() {
        // redb refuses every later write after a failed one until the file is reopened.
        redb::Error::PreviousIo => StoreError::Poisoned(path.to_path_buf()),
        redb::Error::Io(source) => StoreError::io(path, source),
        e => StoreError::Corrupt {
            path: path.to_path_buf(),
            line: None,
            problem: e.to_string(),
        },
    }
}

/// Opens (creating if needed) the database at `path`.
pub(super) fn open(path: &Path) -> Result<Database, StoreError> {
    Database::create(path).map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked(path.to_path_buf()),
        e => db_error(path, e),
    })
}

/// Reads every zone out of `db`.
pub(super) fn load(db: &Database, path: &Path) -> Result<BTreeMap<Name, ZoneData>, StoreError> {
    let err = |e: redb::Error| db_error(path, e);
    let corrupt = |problem: String| StoreError::Corrupt {
        path: path.to_path_buf(),
        line: None,
        problem,
    };
    let txn = db.begin_read().map_err(|e| err(e.into()))?;
    let mut zones = BTreeMap::new();
    let serials = match txn.open_table(ZONES) {
        Ok(t) => t,
        // A new database has no tables yet.
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(zones),
        Err(e) => return Err(err(e.into())),
    };
    for row in serials.iter().map_err(|e| err(e.into()))? {
        let (zone, serial) = row.map_err(|e| err(e.into()))?;
        let zone = Name::parse(zone.value()).map_err(|e| corrupt(e.to_string()))?;
        let mut data = ZoneData::new();
        data.serial = serial.value();
        zones.insert(zone, data);
    }
    let rrsets = match txn.open_table(RRSETS) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(zones),
        Err(e) => return Err(err(e.into())),
    };
    // Rows come sorted by zone: parse each zone's name once.
    let mut current: Option<(String, Name)> = None;
    for row in rrsets.iter().map_err(|e| err(e.into()))? {
        let (key, value) = row.map_err(|e| err(e.into()))?;
        let (zone, name, rtype) = key.value();
        if current.as_ref().is_none_or(|(z, _)| z != zone) {
            let parsed = Name::parse(zone).map_err(|e| corrupt(e.to_string()))?;
            current = Some((zone.to_string(), parsed));
        }
        let Some((_, zone)) = &current else { continue };
        let bad = |e: String| corrupt(format!("{name} {rtype} in zone {zone}: {e}"));
        let stored: StoredData =
            serde_json::from_slice(value.value()).map_err(|e| bad(e.to_string()))?;
        let name = Name::parse(name).map_err(|e| bad(e.to_string()))?;
        let rtype = RecordType::parse(rtype).map_err(|e| bad(e.to_string()))?;
        let data = zones
            .get_mut(zone)
            .ok_or_else(|| corrupt(format!("RRSets of zone {zone}, which has no serial")))?;
        let key = RecordKey::new(zone.clone(), name, rtype);
        let rrset =
            RRSet::new(key.clone(), stored.ttl, &stored.values).map_err(|e| bad(e.to_string()))?;
        data.set(&key, Some(rrset));
    }
    Ok(zones)
}

/// Writes `serials` (zone → new serial) and `writes` in one transaction, durable when
/// this returns; on error nothing of it is written.
pub(super) fn commit(
    db: &Database,
    path: &Path,
    serials: &[(&Name, u64)],
    writes: &[Write<'_>],
) -> Result<(), StoreError> {
    let err = |e: redb::Error| db_error(path, e);
    let txn = db.begin_write().map_err(|e| err(e.into()))?;
    {
        let mut zones = txn.open_table(ZONES).map_err(|e| err(e.into()))?;
        for (zone, serial) in serials {
            zones
                .insert(zone.as_str(), *serial)
                .map_err(|e| err(e.into()))?;
        }
        let mut rrsets = txn.open_table(RRSETS).map_err(|e| err(e.into()))?;
        for w in writes {
            let row = (
                w.key.zone.as_str(),
                w.key.name.as_str(),
                w.key.rtype.as_str(),
            );
            match w.rrset {
                Some(r) => {
                    let value = serde_json::to_vec(&StoredData {
                        ttl: r.ttl,
                        values: r.values_vec(),
                    })
                    .map_err(|e| StoreError::Corrupt {
                        path: path.to_path_buf(),
                        line: None,
                        problem: format!("cannot encode {:?}: {e}", r.key),
                    })?;
                    rrsets
                        .insert(row, value.as_slice())
                        .map_err(|e| err(e.into()))?;
                }
                None => {
                    rrsets.remove(row).map_err(|e| err(e.into()))?;
                }
            }
        }
    }
    txn.commit().map_err(|e| err(e.into()))
}

/// Every zone of `zones` as rows, for writing a whole store at once (a migration).
pub(super) fn write_all(
    db: &Database,
    path: &Path,
    zones: &BTreeMap<Name, ZoneData>,
) -> Result<(), StoreError> {
    let serials: Vec<(&Name, u64)> = zones.iter().map(|(z, d)| (z, d.serial)).collect();
    let writes: Vec<Write<'_>> = zones
        .values()
        .flat_map(|d| d.rrsets())
        .map(|r| Write {
            key: &r.key,
            rrset: Some(r),
        })
        .collect();
    commit(db, path, &serials, &writes)
}
