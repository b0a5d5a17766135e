//! The listing cache of a driver whose provider has no zone serial (Route 53,
//! Cloudflare, an external-dns webhook server): each zone as this driver last read it
//! whole, followed by the writes it commits and the names each write reads, under a
//! serial of its own (a random start, then one more per committed write). A planner
//! that saw that serial skips the listing; a steady-state sync lists nothing. Others'
//! writes show at the drift check (the cache's periodic whole read), when a write
//! reads their names, or at a `fresh` read (`forget`).
//!
//! A driver implements [`CountedZone`] (its cache, and its read of a zone's names or
//! of all of it) and returns itself from `Provider::counted`, which gives it
//! `serial`, `forget`, `serial_position` and `list_paced` (the trait's default, [`list`]).
use crate::provider::call::Pacer;
use crate::provider::precondition::ZoneRead;
use crate::provider::record_cache::{RecordCache, Validity};
use crate::provider::{Listing, ProviderError};
use async_trait::async_trait;
use dnsplane_common::Name;
use std::collections::BTreeSet;
use std::future::Future;

/// A driver whose listings come from a self-counted cache.
#[async_trait]
pub trait CountedZone: Send + Sync {
    /// The driver's listing cache.
    fn listing_cache(&self) -> &RecordCache;
    /// Reads `zone` from the provider: the sets at `names`, or all of it.
    async fn read_zone(
        &self,
        zone: &Name,
        names: Option<&BTreeSet<Name>>,
        pacer: &Pacer,
    ) -> Result<ZoneRead, ProviderError>;
}

/// A [`CountedZone`] driver's `Provider::serial`: the cache's count, no request but
/// the drift check's whole read when it is due; `None` before the first whole read.
pub async fn serial<D: CountedZone + ?Sized>(
    d: &D,
    zone: &Name,
) -> Result<Option<u64>, ProviderError> {
    let pacer = Pacer::default();
    d.listing_cache()
        .counted_serial(zone, || d.read_zone(zone, None, &pacer))
        .await
}

/// A [`CountedZone`] driver's `Provider::list_paced`: the whole zone from the cache
/// while it is valid; names always from the provider (a read of names settles a
/// conflict or an ambiguous answer, and teaches the cache what it missed there).
pub async fn list<D: CountedZone + ?Sized>(
    d: &D,
    zone: &Name,
    names: Option<&[Name]>,
    pacer: &Pacer,
) -> Result<Listing, ProviderError> {
    let cache = d.listing_cache();
    let Some(names) = names else {
        return cache
            .counted_listing(zone, || d.read_zone(zone, None, pacer))
            .await;
    };
    let names: BTreeSet<Name> = names.iter().cloned().collect();
    let read = d.read_zone(zone, Some(&names), pacer).await?;
    Ok(cache.counted_names(zone, &names, read))
}

impl RecordCache {
    /// Keeps `read`, a whole read of `zone`, under a count of this cache's own.
    pub fn fill_counted(&self, zone: &Name, mut read: ZoneRead) -> ZoneRead {
        read.serial = Some(u64::from(rand::random::<u32>()));
        self.fill(zone, &read);
        read
    }

    /// The cache's count for `zone`: `None` before the first whole read; when the
    /// entry is not valid (the drift check is due) it is read whole again first
    /// (`read_whole`), so the count answers for what is there.
    pub async fn counted_serial<F>(
        &self,
        zone: &Name,
        read_whole: impl FnOnce() -> F,
    ) -> Result<Option<u64>, ProviderError>
    where
        F: Future<Output = Result<ZoneRead, ProviderError>>,
    {
        let Some(position) = self.position(zone) else {
            return Ok(None);
        };
        if self.validate(zone, position.serial) != Validity::Valid {
            let read = read_whole().await?;
            self.fill_counted(zone, read);
        }
        Ok(self.position(zone).map(|p| p.serial))
    }

    /// The whole of `zone`: from the cache while it is valid, else read whole
    /// (`read_whole`: a cold start, or the drift check's turn) and kept.
    pub async fn counted_listing<F>(
        &self,
        zone: &Name,
        read_whole: impl FnOnce() -> F,
    ) -> Result<Listing, ProviderError>
    where
        F: Future<Output = Result<ZoneRead, ProviderError>>,
    {
        if let Some(position) = self.position(zone)
            && self.validate(zone, position.serial) == Validity::Valid
            && let Some(listing) = self.with(zone, |r| {
                r.map(|r| Listing {
                    rrsets: r.rrsets.values().cloned().collect(),
                    serial: Some(position.serial),
                })
            })
        {
            return Ok(listing);
        }
        let read = self.fill_counted(zone, read_whole().await?);
        Ok(Listing {
            rrsets: read.rrsets.into_values().collect(),
            serial: self.position(zone).map(|p| p.serial),
        })
    }

    /// A fresh read of `names` in `zone`, which teaches the cache what it holds there,
    /// as a listing under the cache's count.
    pub fn counted_names(&self, zone: &Name, names: &BTreeSet<Name>, read: ZoneRead) -> Listing {
        self.refresh(zone, names, &read);
        Listing {
            rrsets: read.rrsets.into_values().collect(),
            serial: self.position(zone).map(|p| p.serial),
        }
    }
}
