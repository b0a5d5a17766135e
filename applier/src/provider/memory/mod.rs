//! The embedded `memory` driver: a [`MemoryStore`] behind the [`Provider`] trait, with
//! atomic conditional batches and a serial, the reference for what a good provider does.
//!
//! - [`store`]: the crash-safe store (a redb database, one transaction per batch);
//! - [`dns`]: the authoritative DNS responder over it (UDP and TCP), so that `dig`
//!   shows what dnsplane did;
//! - [`config`]: the account table.
use crate::provider::call::Pacer;
use crate::provider::{Capabilities, ErrorClass, Listing, Operation, Provider, ProviderError};

pub mod config;
pub mod dns;
pub mod store;

use async_trait::async_trait;
pub use config::MemoryConfig;
use dnsplane_common::{Name, RRSetOp};
use std::sync::Arc;
use store::{MemoryStore, StoreError};

/// Batch limits of the memory driver; generous, but bounded like every real provider.
/// 10,000 RRSet ops: a planner batch of 1,000 changes, each a record and its ownership
/// record (2,000 ops), goes in one call, so the batch algorithm's costs (1 call on
/// success, 3 on conflicts) hold per planner batch.
pub const MAX_CHANGES_PER_BATCH: usize = 10_000;
pub const MAX_BYTES_PER_BATCH: usize = 4 << 20;

/// A provider account backed by a local store; hosts exactly the configured zones.
#[derive(Debug, Clone)]
pub struct MemoryProvider {
    store: Arc<MemoryStore>,
    zones: Vec<Name>,
}

impl MemoryProvider {
    /// Hosts `zones` in `store`, creating the ones it lacks.
    pub fn new(store: Arc<MemoryStore>, zones: Vec<Name>) -> Result<Self, StoreError> {
        store.ensure_zones(&zones)?;
        Ok(MemoryProvider { store, zones })
    }

    pub fn store(&self) -> &Arc<MemoryStore> {
        &self.store
    }

    fn hosted(&self, zone: &Name) -> Result<(), ProviderError> {
        if self.zones.contains(zone) {
            Ok(())
        } else {
            Err(ProviderError::new(
                ErrorClass::Permanent,
                format!("zone {zone} is not hosted by this memory account"),
            ))
        }
    }
}

/// The one place where store errors get their class.
fn classify(e: StoreError) -> ProviderError {
    match e {
        StoreError::Conflict { key, message } => {
            ProviderError::new(ErrorClass::Conflict, message).with_key(key)
        }
        StoreError::OutOfZone { ref key, .. } => {
            let key = key.clone();
            ProviderError::new(ErrorClass::Invalid, e.to_string()).with_key(key)
        }
        StoreError::NoSuchZone(_)
        | StoreError::Corrupt { .. }
        | StoreError::Poisoned(_)
        | StoreError::Locked(_) => ProviderError::new(ErrorClass::Permanent, e.to_string()),
        // A failed commit wrote nothing (redb's transactions are atomic).
        StoreError::Io { .. } => ProviderError::new(ErrorClass::Transient, e.to_string()),
    }
}

#[async_trait]
impl Provider for MemoryProvider {
    fn driver(&self) -> &'static str {
        "memory"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::atomic(MAX_CHANGES_PER_BATCH, MAX_BYTES_PER_BATCH).with_serial()
    }

    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        Ok(self.zones.clone())
    }

    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError> {
        self.hosted(zone)?;
        self.store.serial(zone).map(Some).map_err(classify)
    }

    async fn list_paced(
        &self,
        zone: &Name,
        names: Option<&[Name]>,
        pacer: &Pacer,
    ) -> Result<Listing, ProviderError> {
        pacer.request(Operation::List).await?;
        self.hosted(zone)?;
        let (rrsets, serial) = self.store.list(zone, names).map_err(classify)?;
        Ok(Listing {
            rrsets,
            serial: Some(serial),
        })
    }

    async fn apply_paced(
        &self,
        zone: &Name,
        ops: &[RRSetOp],
        pacer: &Pacer,
    ) -> Result<(), ProviderError> {
        pacer.request(Operation::Apply).await?;
        self.hosted(zone)?;
        let (store, zone, ops) = (self.store.clone(), zone.clone(), ops.to_vec());
        // The journal fsync blocks; keep it off the async workers.
        tokio::task::spawn_blocking(move || store.apply(&zone, &ops))
            .await
            .map_err(|e| {
                ProviderError::new(ErrorClass::Ambiguous, format!("store task failed: {e}"))
            })?
            .map(drop)
            .map_err(classify)
    }
}
