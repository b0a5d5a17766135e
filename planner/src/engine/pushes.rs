//! Where accepted pushes are persisted: where every replica of the planner reads
//! them, so that a new leader plans from what the old one acknowledged.
//!
//! - [`PushStore::Dir`]: the state directory ([`DesiredStore`]; a snapshot per source
//!   and a journal of patches). Replicas that share the lock-file lease share it.
//! - [`PushStore::Redis`]: with `[lease] redis` the replicas have a state directory
//!   each, so pushes live in the lease's Redis ([`RedisStore`]), every write fenced by
//!   the lease. The state directory's pushes are imported into it once.
use super::patch::{Patch, merge, replay};
use crate::redis_store::{RedisStore, Writer, block_on};
use crate::source::{DesiredEntry, EntryKey};
use crate::store::{DesiredStore, StoreError};

/// The push store in use.
#[derive(Debug)]
pub enum PushStore {
    Dir(DesiredStore),
    Redis(Box<RedisStore>),
}

/// A record's field in its source's hash: its key.
fn field(key: &EntryKey) -> String {
    serde_json::to_string(key).unwrap_or_default()
}

fn encode(e: &DesiredEntry) -> Result<(String, String), StoreError> {
    let value = serde_json::to_string(e).map_err(|e| StoreError::Redis {
        addr: String::new(),
        message: format!("cannot encode a record: {e}"),
    })?;
    Ok((field(&e.entry_key()), value))
}

impl PushStore {
    /// `redis` or `state_dir`, for logs and status.
    pub fn kind(&self) -> &'static str {
        match self {
            PushStore::Dir(_) => "state_dir",
            PushStore::Redis(_) => "redis",
        }
    }

    /// Replaces source `name` by `entries`, durably (Redis: only while `writer` holds
    /// the lease).
    pub fn put(
        &self,
        writer: Option<Writer<'_>>,
        name: &str,
        entries: &[DesiredEntry],
    ) -> Result<(), StoreError> {
        match self {
            PushStore::Dir(store) => store.put(name, &entries),
            PushStore::Redis(r) => {
                let fields = entries.iter().map(encode).collect::<Result<Vec<_>, _>>()?;
                block_on(r.put(fenced(writer)?, name, &fields)).map(|_| ())
            }
        }
    }

    /// Applies `patch` to source `name`, durably, in O(patch) (the state directory:
    /// a journal line, and now and then a new snapshot).
    pub fn patch(
        &self,
        writer: Option<Writer<'_>>,
        name: &str,
        patch: &Patch,
    ) -> Result<(), StoreError> {
        match self {
            PushStore::Dir(store) => match store.append(name, patch)? {
                Some(false) => Ok(()),
                Some(true) => {
                    // The patch is durable; a failed rewrite only leaves a longer
                    // journal, tried again at the next patch.
                    if let Err(e) = compact(store, name) {
                        tracing::warn!(source = name, error = %e, "cannot rewrite a pushed source's snapshot; its journal keeps growing until it can");
                    }
                    Ok(())
                }
                None => {
                    let current = stored_push(store, name)?;
                    store.put(name, &merge(current, patch).0)
                }
            },
            PushStore::Redis(r) => {
                let upserts = patch
                    .upserts
                    .iter()
                    .map(encode)
                    .collect::<Result<Vec<_>, _>>()?;
                let deletes: Vec<String> = patch.deletes.iter().map(field).collect();
                block_on(r.patch(fenced(writer)?, name, &upserts, &deletes)).map(|_| ())
            }
        }
    }

    /// Every stored pushed source (`push:*`) and its records.
    pub fn read_all(&self) -> Result<Vec<(String, Vec<DesiredEntry>)>, StoreError> {
        match self {
            PushStore::Dir(store) => Ok(store
                .all_journaled::<Vec<DesiredEntry>, Patch>("push:")?
                .into_iter()
                .map(|(name, entries, patches)| (name, replay(entries, &patches)))
                .collect()),
            PushStore::Redis(r) => {
                let addr = r.addr();
                block_on(r.read_all())?
                    .into_iter()
                    .map(|(name, fields)| {
                        let entries = fields
                            .iter()
                            .map(|(f, v)| {
                                serde_json::from_str::<DesiredEntry>(v).map_err(|e| {
                                    StoreError::Redis {
                                        addr: addr.clone(),
                                        message: format!(
                                            "source {name}, record {f}: not a record this planner can read: {e}"
                                        ),
                                    }
                                })
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        Ok((name, entries))
                    })
                    .collect()
            }
        }
    }

    /// Redis only, once: copies the pushes of the state directory `dir` into Redis
    /// (a deployment switching to `[lease] redis` keeps what was pushed before).
    /// Returns the sources imported.
    pub fn import_once(
        &self,
        dir: &DesiredStore,
        writer: Option<Writer<'_>>,
    ) -> Result<usize, StoreError> {
        let PushStore::Redis(r) = self else {
            return Ok(0);
        };
        if block_on(r.imported())? {
            return Ok(0);
        }
        let local = PushStore::Dir(dir.clone()).read_all()?;
        for (name, entries) in &local {
            self.put(writer, name, entries)?;
        }
        block_on(r.mark_imported())?;
        Ok(local.len())
    }
}

/// The writer a Redis write is fenced by; none: this planner is not the leader.
fn fenced(writer: Option<Writer<'_>>) -> Result<Writer<'_>, StoreError> {
    writer.ok_or_else(|| StoreError::Fenced {
        message: "this planner is standby".into(),
    })
}

/// A pushed source's stored entries: its snapshot with its journal replayed.
pub(crate) fn stored_push(
    store: &DesiredStore,
    name: &str,
) -> Result<Vec<DesiredEntry>, StoreError> {
    Ok(store
        .get_journaled::<Vec<DesiredEntry>, Patch>(name)?
        .map(|(entries, patches)| replay(entries, &patches))
        .unwrap_or_default())
}

/// Writes a pushed source's journal into a new snapshot.
fn compact(store: &DesiredStore, name: &str) -> Result<(), StoreError> {
    let entries = stored_push(store, name)?;
    store.put(name, &entries)
}
