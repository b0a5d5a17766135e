//! Per-zone write locks, for the drivers that check preconditions by their own read
//! (PowerDNS, Cloudflare, a webhook server): the read, the check and the write of one
//! zone must not interleave with another write of this applier to the same zone.
use dnsplane_common::Name;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::OwnedMutexGuard;

/// One async lock per zone, made on first use.
#[derive(Debug, Default)]
pub struct ZoneLocks(Mutex<HashMap<Name, Arc<tokio::sync::Mutex<()>>>>);

impl ZoneLocks {
    /// Waits for `zone`'s lock; held until the guard drops.
    pub async fn lock(&self, zone: &Name) -> OwnedMutexGuard<()> {
        let lock = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(zone.clone())
            .or_default()
            .clone();
        lock.lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_writer_per_zone_others_free() {
        let locks = ZoneLocks::default();
        let a = Name::parse("a.test").unwrap();
        let b = Name::parse("b.test").unwrap();
        let held = locks.lock(&a).await;
        // Another zone is free while `a` is held.
        drop(locks.lock(&b).await);
        let second = tokio::time::timeout(std::time::Duration::from_millis(50), locks.lock(&a));
        assert!(second.await.is_err(), "a second writer of a.test waits");
        drop(held);
        drop(locks.lock(&a).await);
    }
}
