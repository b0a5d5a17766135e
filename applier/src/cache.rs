//! The listing cache: a zone's records per (account, zone), so that planners reading
//! large zones do not spend the provider's quota on every refresh.
//!
//! An entry is served without any provider call for `ttl`; after that it is
//! revalidated with the provider's cheap `serial()` where there is one (unchanged
//! serial: served again for another `ttl`), else re-listed. Every write to the zone
//! invalidates it; a generation number keeps a listing that raced with a write from
//! refilling the cache with pre-write data. Reads restricted to names never fill it.
use crate::provider::call::{CallCx, Stack};
use crate::provider::{Listing, ProviderError};
use dnsplane_common::Name;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Cache effectiveness, for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
}

#[derive(Debug, Default)]
struct Slot {
    generation: u64,
    entry: Option<Entry>,
}

#[derive(Debug, Clone)]
struct Entry {
    listing: Arc<Listing>,
    /// When the entry was last known to match the provider.
    validated: Instant,
}

/// Per (account, zone) listing cache.
#[derive(Debug)]
pub struct ListingCache {
    ttl: Duration,
    slots: Mutex<HashMap<(String, Name), Slot>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl ListingCache {
    pub fn new(ttl: Duration) -> Self {
        ListingCache {
            ttl,
            slots: Mutex::new(HashMap::new()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<(String, Name), Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The RRSets of the zone of `cx` (only those at `names` when given), read through
    /// `stack` when the cache cannot answer. `fresh` skips the cache and, for a
    /// whole-zone read, refreshes it.
    pub async fn get(
        &self,
        stack: &Stack,
        cx: &CallCx,
        names: Option<&[Name]>,
        fresh: bool,
    ) -> Result<Arc<Listing>, ProviderError> {
        let zone = cx.zone()?;
        let key = (cx.account.to_string(), zone.clone());
        let (cached, generation) = {
            let slots = self.slots();
            let slot = slots.get(&key);
            (
                slot.and_then(|s| s.entry.clone()),
                slot.map_or(0, |s| s.generation),
            )
        };
        if !fresh
            && let Some(entry) = cached
            && self
                .still_valid(&key, generation, &entry, stack, cx)
                .await?
        {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(filter(entry.listing, names));
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        if names.is_some() {
            return stack.list(cx, names).await.map(Arc::new);
        }
        let listing = if fresh {
            Arc::new(stack.list(&cx.clone().with_fresh(true), None).await?)
        } else {
            Arc::new(stack.list(cx, None).await?)
        };
        let mut slots = self.slots();
        let slot = slots.entry(key).or_default();
        if slot.generation == generation {
            slot.entry = Some(Entry {
                listing: listing.clone(),
                validated: Instant::now(),
            });
        }
        Ok(listing)
    }

    /// Within the TTL: valid. Past it: valid if the provider's serial is unchanged,
    /// which renews the entry for another TTL.
    async fn still_valid(
        &self,
        key: &(String, Name),
        generation: u64,
        entry: &Entry,
        stack: &Stack,
        cx: &CallCx,
    ) -> Result<bool, ProviderError> {
        if entry.validated.elapsed() < self.ttl {
            return Ok(true);
        }
        if !stack.capabilities().has_serial || entry.listing.serial.is_none() {
            return Ok(false);
        }
        if stack.serial(cx).await? != entry.listing.serial {
            return Ok(false);
        }
        let mut slots = self.slots();
        if let Some(slot) = slots.get_mut(key)
            && slot.generation == generation
            && let Some(e) = &mut slot.entry
        {
            e.validated = Instant::now();
        }
        Ok(true)
    }

    /// Drops the zone's entry; called on every write to the zone.
    pub fn invalidate(&self, account: &str, zone: &Name) {
        let mut slots = self.slots();
        let slot = slots
            .entry((account.to_string(), zone.clone()))
            .or_default();
        slot.generation += 1;
        slot.entry = None;
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

fn filter(listing: Arc<Listing>, names: Option<&[Name]>) -> Arc<Listing> {
    let Some(names) = names else { return listing };
    Arc::new(Listing {
        rrsets: listing
            .rrsets
            .iter()
            .filter(|r| names.contains(&r.key.name))
            .cloned()
            .collect(),
        serial: listing.serial,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::Account;
    use crate::provider::memory::MemoryProvider;
    use crate::provider::memory::store::MemoryStore;
    use dnsplane_common::{RRSet, RRSetOp, RecordKey, RecordType};

    fn zone() -> Name {
        Name::parse("example.com").unwrap()
    }

    fn a(name: &str) -> RRSet {
        let key = RecordKey::new(
            zone(),
            Name::parse(&format!("{name}.example.com")).unwrap(),
            RecordType::A,
        );
        RRSet::new(key, 60, &["192.0.2.1"]).unwrap()
    }

    struct Fixture {
        store: Arc<MemoryStore>,
        account: Account,
        cx: CallCx,
        _dir: tempfile::TempDir,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(MemoryStore::open(dir.path()).unwrap());
        let inner = MemoryProvider::new(store.clone(), vec![zone()]).unwrap();
        Fixture {
            store,
            account: Account::new("acct", Arc::new(inner), &[zone()]),
            cx: CallCx::new("acct", Some(zone())),
            _dir: dir,
        }
    }

    fn calls(f: &Fixture) -> u64 {
        f.account.metrics.calls_by_class().values().sum()
    }

    #[tokio::test(start_paused = true)]
    async fn hits_within_ttl_then_revalidates_by_serial() {
        let f = fixture();
        let cache = ListingCache::new(Duration::from_secs(30));
        f.store
            .apply(&zone(), &[RRSetOp::create(a("one"))])
            .unwrap();
        let l = cache
            .get(&f.account.stack, &f.cx, None, false)
            .await
            .unwrap();
        assert_eq!(l.rrsets.len(), 1);
        let l = cache
            .get(&f.account.stack, &f.cx, None, false)
            .await
            .unwrap();
        assert_eq!(l.rrsets.len(), 1);
        assert_eq!(cache.stats(), CacheStats { hits: 1, misses: 1 });
        assert_eq!(calls(&f), 1, "the hit made no provider call");

        // Past the TTL an unchanged serial renews the entry with one cheap call.
        tokio::time::advance(Duration::from_secs(31)).await;
        cache
            .get(&f.account.stack, &f.cx, None, false)
            .await
            .unwrap();
        assert_eq!(cache.stats(), CacheStats { hits: 2, misses: 1 });
        assert_eq!(calls(&f), 2);

        // An out-of-band write changes the serial: seen after the TTL.
        f.store
            .apply(&zone(), &[RRSetOp::create(a("two"))])
            .unwrap();
        let l = cache
            .get(&f.account.stack, &f.cx, None, false)
            .await
            .unwrap();
        assert_eq!(l.rrsets.len(), 1, "within the TTL the cache answers");
        tokio::time::advance(Duration::from_secs(31)).await;
        let l = cache
            .get(&f.account.stack, &f.cx, None, false)
            .await
            .unwrap();
        assert_eq!(l.rrsets.len(), 2);
        assert_eq!(cache.stats().misses, 2);
    }

    #[tokio::test]
    async fn writes_invalidate_and_fresh_bypasses() {
        let f = fixture();
        let cache = ListingCache::new(Duration::from_secs(30));
        cache
            .get(&f.account.stack, &f.cx, None, false)
            .await
            .unwrap();
        f.store
            .apply(&zone(), &[RRSetOp::create(a("one"))])
            .unwrap();
        let l = cache
            .get(&f.account.stack, &f.cx, None, true)
            .await
            .unwrap();
        assert_eq!(l.rrsets.len(), 1, "fresh reads the provider");
        // ...and refreshed the entry.
        let l = cache
            .get(&f.account.stack, &f.cx, None, false)
            .await
            .unwrap();
        assert_eq!(l.rrsets.len(), 1);
        assert_eq!(cache.stats(), CacheStats { hits: 1, misses: 2 });

        f.store
            .apply(&zone(), &[RRSetOp::create(a("two"))])
            .unwrap();
        cache.invalidate("acct", &zone());
        let l = cache
            .get(&f.account.stack, &f.cx, None, false)
            .await
            .unwrap();
        assert_eq!(l.rrsets.len(), 2);

        // A names read is served from a valid entry, filtered.
        let names = [Name::parse("two.example.com").unwrap()];
        let l = cache
            .get(&f.account.stack, &f.cx, Some(&names), false)
            .await
            .unwrap();
        assert_eq!(l.rrsets, vec![a("two")]);
        assert_eq!(cache.stats().hits, 2);
    }
}
