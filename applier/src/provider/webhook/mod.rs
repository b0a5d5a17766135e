//! The `webhook` driver: dnsplane's applier as an external-dns webhook *client*, so it
//! writes through any of the external-dns webhook providers (Hetzner, deSEC,
//! Infoblox, …) speaking to them exactly as external-dns does
//! (`/work/shared/design/INTEROP.md` §1; the HTTP side in [`client`], the JSON and the
//! Endpoint ⇄ RRSet mapping in [`wire`], the domain filter in [`filter`]).
//!
//! **What the protocol gives.** One `GET /records` with every endpoint of the server
//! (all its zones, no per-name read, no serial) and one `POST /records` with
//! `{create, updateOld, updateNew, delete}`, answered 204 or not: no per-record
//! result, no atomicity (a server applies what it can, in its own order), no
//! conditional write. So [`WebhookProvider::apply`], under an in-process per-zone lock:
//!
//! 1. reads the server's records and checks every op's precondition (and the CNAME
//!    rule) against that read ([`check`]); one that fails fails the call as a
//!    conflict *before anything is sent*, so the batch algorithm reads back, settles
//!    that op CONFLICT and resubmits the rest, which then commit as APPLIED (posting
//!    the ops that hold at once would report them ALREADY_APPLIED, which says "did
//!    not commit by this attempt");
//! 2. sends ONE `POST /records` with the ops (an update is `updateOld[i]` the
//!    endpoint as read, labels kept, and `updateNew[i]` the new one);
//! 3. on 204, **reads back**: 204 says nothing per record (servers log and skip what
//!    their API refuses), so only a read shows what committed. Every op at its target:
//!    success (APPLIED). One that is not: a conflict naming it, and the batch
//!    algorithm's read-back settles each op: ALREADY_APPLIED what committed, CONFLICT
//!    with the observed value what did not, after one resubmission at most.
//!
//! Any other answer to the POST never leads to a blind resend: a 5xx, a timeout or a
//! non-204 success is ambiguous and the batch algorithm reads back (commit-then-502
//! settles ALREADY_APPLIED with one read and no second POST).
//!
//! **Listings** come from a listing cache ([`crate::provider::kit::counted`]), as
//! Route 53's and Cloudflare's do: the zone as last read whole, followed by the
//! writes this driver commits and the names each write reads, under a serial of the
//! cache's own, so a steady-state sync lists nothing. A batch costs two `GET
//! /records`, both fresh: the precondition read before the POST and the read-back
//! after it; neither is ever answered from the cache. A POST that fails (a server
//! applies what it can, so any failure may have committed some) drops the zone's
//! entry. Others' writes show at the drift check,
//! when a batch reads their names, or at a `fresh` read.
//!
//! Every read is that one `GET /records`, filtered: names within the zone, not
//! within another of the account's zones below it (a delegated child the account
//! also lists), covered by the server's domain filter. SOA and types dnsplane does not
//! model are skipped, so never written over; a set dnsplane cannot read is opaque (an
//! op on it is a conflict, never a blind overwrite). An answer that cannot be decoded
//! is an error, never an empty zone (an empty zone would plan deletions).
use crate::provider::call::Pacer;
use crate::provider::kit::counted::{self, CountedZone};
use crate::provider::kit::zones::ZoneLocks;
use crate::provider::precondition::{ZoneRead, check};
use crate::provider::record_cache::RecordCache;
use crate::provider::{Capabilities, ErrorClass, Provider, ProviderError};
use async_trait::async_trait;
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey};
use reqwest::Url;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

mod client;
mod config;
mod filter;
mod wire;

pub use client::MAX_ERROR_TEXT;
pub use config::{DEFAULT_TIMEOUT, DEFAULT_TTL, DEFAULT_URL, WebhookConfig, WebhookSetupError};
pub use filter::DomainFilter;
pub use wire::MEDIA_TYPE;
use wire::{Changes, Endpoint, Placed};

/// RRSet ops per `POST /records`. A server must answer within the client's timeout
/// (15s by default) and many translate each endpoint into one call of their own API,
/// so a POST stays small; a larger dnsplane batch is cut by the batch algorithm.
pub const MAX_CHANGES_PER_POST: usize = 200;

/// What a read of the server found in one zone: the RRSets, and the endpoints as the
/// server sent them (an update and a delete send those back, labels and all).
#[derive(Default)]
struct Read {
    zone: ZoneRead,
    raw: BTreeMap<RecordKey, Vec<Endpoint>>,
}

#[derive(Clone)]
pub struct WebhookProvider {
    client: client::Client,
    /// The account's zones: a name within a zone below another belongs to that one.
    zones: Arc<Vec<Name>>,
    default_ttl: u32,
    /// One write (read, check, post, read back) per zone at a time.
    zone_locks: Arc<ZoneLocks>,
    /// Each zone as last read whole, kept by this driver's writes and reads (for
    /// listings only; a write's preconditions are always checked against a fresh read).
    cache: Arc<RecordCache>,
}

impl std::fmt::Debug for WebhookProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookProvider")
            .field("client", &self.client)
            .field("zones", &self.zones)
            .finish_non_exhaustive()
    }
}

impl WebhookProvider {
    /// Builds the HTTP client for the account's `zones`. Makes no request: the server
    /// is negotiated with on the first call that needs it.
    pub fn new(cfg: &WebhookConfig, zones: &[Name]) -> Result<Self, WebhookSetupError> {
        let url_err = |problem: String| WebhookSetupError::Url {
            url: cfg.url.clone(),
            problem,
        };
        let base = Url::parse(cfg.url.trim()).map_err(|e| url_err(e.to_string()))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(url_err("the scheme must be http or https".into()));
        }
        let client = client::Client::new(base, cfg.timeout).map_err(|e| {
            if e.contains("base") {
                url_err(e)
            } else {
                WebhookSetupError::Client(e)
            }
        })?;
        Ok(WebhookProvider {
            client,
            zones: Arc::new(zones.to_vec()),
            default_ttl: cfg.default_ttl,
            zone_locks: Arc::default(),
            cache: Arc::default(),
        })
    }

    /// Runs the listing cache's drift check every `period` instead of the default
    /// (`0s`: no cache, every listing reads the server).
    #[must_use]
    pub fn with_drift_check(mut self, period: std::time::Duration) -> Self {
        self.cache = Arc::new(RecordCache::new(period));
        self
    }

    /// The listing cache, for its counters.
    pub fn record_cache(&self) -> &RecordCache {
        &self.cache
    }

    /// Negotiation requests made so far (each try counts).
    pub fn negotiations(&self) -> u64 {
        self.client.negotiations()
    }

    /// The server's filter, refusing a zone it does not manage (a configuration error
    /// no retry mends).
    async fn filter_for(&self, zone: &Name) -> Result<Arc<DomainFilter>, ProviderError> {
        let filter = self.client.filter().await?;
        if !filter.admits_zone(zone) {
            return Err(ProviderError::new(
                ErrorClass::Permanent,
                format!(
                    "zone {zone} is outside the webhook server's domain filter ({}): the server does not manage it; remove it from the account's zones or widen the server's filter",
                    filter.describe()
                ),
            ));
        }
        Ok(filter)
    }

    /// Whether `name` belongs to another of the account's zones below `zone`.
    fn in_child_zone(&self, zone: &Name, name: &Name) -> bool {
        self.zones
            .iter()
            .any(|z| z != zone && z.is_within(zone) && name.is_within(z))
    }

    /// Reads `zone` (the records at `names`, or all of it) from the server.
    async fn read(
        &self,
        zone: &Name,
        names: Option<&BTreeSet<Name>>,
        pacer: &Pacer,
    ) -> Result<Read, ProviderError> {
        let filter = self.filter_for(zone).await?;
        let endpoints = self.client.records(pacer).await?;
        let mut read = Read::default();
        for e in endpoints {
            let Ok(name) = Name::parse(&e.dns_name) else {
                tracing::warn!(zone = %zone, record.name = %e.dns_name, "Skipped a webhook endpoint whose name dnsplane cannot represent.");
                continue;
            };
            if !name.is_within(zone)
                || self.in_child_zone(zone, &name)
                || !filter.matches(&name)
                || names.is_some_and(|ns| !ns.contains(&name))
            {
                continue;
            }
            match wire::place(zone, &e) {
                Placed::Key(key) => read.raw.entry(key).or_default().push(e),
                // SOA, HINFO, …: neither listed nor written.
                Placed::Unmodelled => {}
                Placed::Unreadable(why) => {
                    tracing::warn!(zone = %zone, record.name = %e.dns_name, error = %why, "Skipped a webhook endpoint dnsplane cannot represent.");
                }
            }
        }
        for (key, eps) in &read.raw {
            read.zone
                .types
                .entry(key.name.clone())
                .or_default()
                .insert(key.rtype);
            let eps: Vec<&Endpoint> = eps.iter().collect();
            match wire::rrset(key, &eps, self.default_ttl) {
                Ok(set) => {
                    read.zone.rrsets.insert(key.clone(), set);
                }
                Err(why) => {
                    tracing::warn!(record = %key, error = %why, "A webhook record set dnsplane cannot represent; it is left alone.");
                    read.zone.opaque.insert(key.clone());
                }
            }
        }
        Ok(read)
    }

    /// The Changes that carry `ops` out on what `read` found (preconditions checked).
    fn changes(ops: &[RRSetOp], read: &Read) -> Changes {
        let mut changes = Changes::default();
        for op in ops.iter().filter(|op| !op.is_assert()) {
            let current: &[Endpoint] = read.raw.get(&op.key).map_or(&[], Vec::as_slice);
            match (&op.before, &op.after) {
                (_, Some(after)) if current.is_empty() => {
                    changes.create.push(wire::endpoint(after));
                }
                (_, Some(after)) => {
                    // The set as read is one endpoint, or several (one per value on
                    // some servers): the first is updated to the whole new set, the
                    // others deleted.
                    let mut new = wire::endpoint(after);
                    new.labels = current[0].labels.clone();
                    changes.update_old.push(current[0].clone());
                    changes.update_new.push(new);
                    changes.delete.extend(current[1..].iter().cloned());
                }
                (Some(before), None) if current.is_empty() => {
                    changes.delete.push(wire::endpoint(before));
                }
                (_, None) => changes.delete.extend(current.iter().cloned()),
            }
        }
        changes
    }
}

/// `set`, or "absent", for messages.
fn show(set: Option<&RRSet>) -> String {
    set.map_or_else(|| "absent".to_string(), ToString::to_string)
}

/// Listings from the self-counted cache ([`crate::provider::kit::counted`]): the webhook
/// protocol has no serial.
#[async_trait]
impl counted::CountedZone for WebhookProvider {
    fn listing_cache(&self) -> &RecordCache {
        &self.cache
    }

    async fn read_zone(
        &self,
        zone: &Name,
        names: Option<&BTreeSet<Name>>,
        pacer: &Pacer,
    ) -> Result<ZoneRead, ProviderError> {
        Ok(self.read(zone, names, pacer).await?.zone)
    }
}

#[async_trait]
impl Provider for WebhookProvider {
    fn driver(&self) -> &'static str {
        "webhook"
    }

    fn capabilities(&self) -> Capabilities {
        // A server applies what it can, in its own order; preconditions are checked by
        // a read under the zone lock, not by the server. Sets and properties are handed
        // on as external-dns hands them on: the provider behind the webhook decides
        // what it writes (and a read-back shows what it kept).
        // The serial is the listing cache's own count.
        Capabilities::atomic(MAX_CHANGES_PER_POST, 1 << 20)
            .not_atomic()
            .checked_by_read()
            .with_serial()
            .with_sets()
            .with_properties(&[super::ANY_PROPERTY])
    }

    /// The account's zones that the server's domain filter admits (negotiating first).
    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        let filter = self.client.filter().await?;
        Ok(self
            .zones
            .iter()
            .filter(|z| filter.admits_zone(z))
            .cloned()
            .collect())
    }

    fn counted(&self) -> Option<&dyn CountedZone> {
        Some(self)
    }

    async fn apply_paced(
        &self,
        zone: &Name,
        ops: &[RRSetOp],
        pacer: &Pacer,
    ) -> Result<(), ProviderError> {
        crate::provider::ensure_in_zone(zone, ops)?;
        let filter = self.filter_for(zone).await?;
        if let Some(op) = ops.iter().find(|op| !filter.matches(&op.key.name)) {
            return Err(ProviderError::new(
                ErrorClass::Invalid,
                format!(
                    "{} is outside the webhook server's domain filter ({}): the server would not manage it",
                    op.key,
                    filter.describe()
                ),
            )
            .with_key(op.key.clone()));
        }
        let writes: Vec<&RRSetOp> = ops.iter().filter(|op| !op.is_assert()).collect();
        let single = match writes.as_slice() {
            [one] => Some(one.key.clone()),
            _ => None,
        };
        let keyed = |e: ProviderError| match (&single, &e.key) {
            (Some(k), None) => e.with_key(k.clone()),
            _ => e,
        };

        let _guard = self.zone_locks.lock(zone).await;
        let read = self.read(zone, None, pacer).await?;
        let names: BTreeSet<Name> = ops.iter().map(|op| op.key.name.clone()).collect();
        self.cache.refresh(zone, &names, &read.zone);
        check(ops, &read.zone)?;
        let changes = Self::changes(ops, &read);
        if changes.is_empty() {
            // Only assertions, and they hold.
            return Ok(());
        }
        if let Err(e) = self.client.apply(&changes, pacer).await {
            // A server applies what it can: after any failed POST the cache no longer
            // knows the zone.
            self.cache.invalidate(zone);
            return Err(keyed(e));
        }

        // 204 says nothing per record: read back what each op left.
        let names: BTreeSet<Name> = writes.iter().map(|op| op.key.name.clone()).collect();
        let back = self
            .read(zone, Some(&names), pacer)
            .await
            .inspect_err(|_| self.cache.invalidate(zone))
            .map_err(|e| match e.class {
                ErrorClass::Permanent => e,
                _ => ProviderError::new(
                    ErrorClass::Ambiguous,
                    format!(
                        "the webhook server answered 204, but reading the records back failed: {}",
                        e.message
                    ),
                ),
            })
            .map_err(keyed)?;
        // What the server now holds at the batch's names, under one more count: what
        // committed, and what did not.
        self.cache.refresh(zone, &names, &back.zone);
        self.cache.committed(zone, &[]);
        let missed: Vec<&&RRSetOp> = writes
            .iter()
            .filter(|op| !op.at_target(back.zone.rrsets.get(&op.key)))
            .collect();
        if let Some(first) = missed.first() {
            let observed = back.zone.rrsets.get(&first.key);
            return Err(ProviderError::new(
                ErrorClass::Conflict,
                format!(
                    "the webhook server answered 204, but {} of {} changes did not take: {} reads back {}, not {}",
                    missed.len(),
                    writes.len(),
                    first.key,
                    show(observed),
                    show(first.after.as_ref())
                ),
            )
            .with_key(first.key.clone()));
        }
        Ok(())
    }
}
