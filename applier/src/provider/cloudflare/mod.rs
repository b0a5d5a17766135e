//! The `cloudflare` driver: Cloudflare's DNS API (v4), or anything that speaks it
//! (`endpoint`: `dnsplane emulate cloudflare`).
//!
//! **Model.** Cloudflare keeps records, not record sets: one record per value, each
//! with its own id, TTL (1 = automatic), `proxied`, `comment` and `tags`. A dnsplane
//! RRSet is the records of one name and type; a read keeps each record's id (and the
//! set's TTL is the lowest of its records').
//!
//! **Writes.** Cloudflare commits one batch (`POST /zones/{id}/dns_records/batch`) in
//! one transaction, all or nothing, running deletes → patches → puts → posts; but its
//! writes are not conditional (ids only: last write wins). So, as the `pdns` driver,
//! [`CloudflareProvider::apply`] enforces every op's precondition itself, under an
//! in-process per-zone lock: it reads the batch's names fresh (each name by its own
//! GET up to [`PER_NAME_READ_LIMIT`] names, else the whole zone in pages of
//! [`PAGE`]), checks every `before` and the CNAME rule against that read, and only then
//! sends ONE batch:
//!
//! | op | batch operations |
//! |---|---|
//! | create | a post per value |
//! | delete | a delete per record (by id) |
//! | update | records whose value stays: untouched (a patch of `ttl` if it changed); a removed value and an added one: a patch of that record's content (so its `proxied`, `comment` and `tags` stay); removed values left: deletes; added values left: posts (with the set's `proxied`) |
//!
//! Every batch reads what it touches, fresh (two requests per batch at least): the
//! precondition check never trusts a memory. A foreign write landing between the read
//! and the batch is overwritten, as with any Cloudflare client.
//!
//! **Proxy status** is external-dns's `cloudflare-proxied` property, written and read
//! back as [`proxy`] describes; absent, each record keeps its own.
//!
//! **Listings.** Cloudflare has no zone serial, so, as the `route53` driver, this one
//! keeps each zone as it last read it whole ([`RecordCache`]), follows it with the
//! batches it commits and the names each batch reads, and reports the cache's own
//! count as the zone's serial: a steady-state sync lists nothing. Others' writes show
//! at the drift check, when a batch reads their names, or at a `fresh` read.
//!
//! **Answers** are classified in one place, [`wire::classify`]. A batch answer names
//! only its first error and not which operation: a batch of one op names its record;
//! the batch algorithm bisects the rest.
//!
//! Each HTTP request takes its own quota token through the call's
//! [`Pacer`](crate::provider::call::Pacer), right before it is sent.
use crate::provider::call::Pacer;
use crate::provider::kit::counted::{self, CountedZone};
use crate::provider::kit::http::{admit, retry_after, traced};
use crate::provider::kit::secret::SecretHeader;
use crate::provider::kit::zones::ZoneLocks;
use crate::provider::precondition::{ZoneRead, check};
use crate::provider::record_cache::RecordCache;
use crate::provider::{Capabilities, ErrorClass, Provider, ProviderError};
use async_trait::async_trait;
use dnsplane_common::rdata::canonicalize;
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
use futures::stream::{self, StreamExt, TryStreamExt};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Method, Url};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod batch;
mod config;
mod data;
mod proxy;
mod wire;

use batch::{Read, build_batch};
pub use config::{
    CloudflareConfig, CloudflareSetupError, DEFAULT_ENDPOINT, DEFAULT_TOKEN_ENV, Plan, TokenSource,
};
use wire::{Batch, Envelope, WireRecord, WireZone, api_name};

/// Records per page of a listing (the API takes up to 5,000,000; this keeps one page
/// of a large zone to a few megabytes).
pub const PAGE: usize = 5000;
/// Up to this many names, a read fetches each name (`?name=`); above it, the whole
/// zone in pages of [`PAGE`] is fewer requests.
pub const PER_NAME_READ_LIMIT: usize = 8;
/// Concurrent per-name GETs during one read.
const READ_CONCURRENCY: usize = 4;
/// Zones per page of `GET /zones` (the API's maximum).
const ZONE_PAGE: usize = 50;
/// Characters of one record's content at most (a TXT's, the longest).
const MAX_CONTENT_CHARS: usize = 2048;

#[derive(Clone)]
pub struct CloudflareProvider {
    http: reqwest::Client,
    /// `…/client/v4` (no trailing slash).
    api: Url,
    plan: Plan,
    /// Ids from the config, then those found by name.
    zone_ids: Arc<Mutex<HashMap<Name, String>>>,
    /// Zones whose id the config gave (never forgotten).
    configured: Arc<BTreeSet<Name>>,
    /// One write (read-check-batch) per zone at a time.
    zone_locks: Arc<ZoneLocks>,
    /// The `Authorization: Bearer …` header (marked sensitive), read again where it
    /// comes from when Cloudflare refuses it (401/403).
    token: Arc<SecretHeader>,
    /// Each zone as last read whole, kept by this driver's batches and reads (for
    /// listings only; a batch's preconditions are always checked against a fresh read).
    cache: Arc<RecordCache>,
}

impl std::fmt::Debug for CloudflareProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudflareProvider")
            .field("api", &self.api.as_str())
            .field("plan", &self.plan)
            .field("token", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl CloudflareProvider {
    /// Reads the token and builds the HTTP client. Makes no request.
    pub fn new(cfg: &CloudflareConfig) -> Result<Self, CloudflareSetupError> {
        let url_err = |problem: String| CloudflareSetupError::Url {
            url: cfg.endpoint.clone(),
            problem,
        };
        let base = cfg.endpoint.trim().trim_end_matches('/');
        let api = Url::parse(base).map_err(|e| url_err(e.to_string()))?;
        if !matches!(api.scheme(), "http" | "https") {
            return Err(url_err("the scheme must be http or https".into()));
        }
        if api.cannot_be_a_base() {
            return Err(url_err("cannot be a base URL".into()));
        }
        let token = SecretHeader::new(
            cfg.token_source(),
            "Bearer ",
            "Cloudflare refused the API token",
        )?;
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .connect_timeout(cfg.timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| CloudflareSetupError::Client(e.to_string()))?;
        let zone_ids: HashMap<Name, String> = cfg
            .zone_ids
            .iter()
            .map(|(z, id)| (z.clone(), id.trim().to_string()))
            .collect();
        Ok(CloudflareProvider {
            http,
            api,
            plan: cfg.plan,
            configured: Arc::new(zone_ids.keys().cloned().collect()),
            zone_ids: Arc::new(Mutex::new(zone_ids)),
            zone_locks: Arc::default(),
            token: Arc::new(token),
            cache: Arc::default(),
        })
    }

    fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Url {
        crate::provider::kit::http::url(&self.api, segments, query)
    }

    /// One HTTP exchange under the call's quota; a non-2xx answer (or an envelope
    /// saying `success: false`) classified. `key`: the record a one-op batch is about.
    async fn call(
        &self,
        method: Method,
        url: Url,
        body: Option<Vec<u8>>,
        pacer: &Pacer,
        key: Option<&RecordKey>,
    ) -> Result<Vec<u8>, ProviderError> {
        let write = admit(pacer, &method).await?;
        let what = format!("{method} {}", url.path());
        let mut req = traced(
            self.http
                .request(method, url)
                .header(AUTHORIZATION, self.token.value()),
        );
        if let Some(body) = body {
            req = req.header(CONTENT_TYPE, "application/json").body(body);
        }
        let failed = |e: reqwest::Error| wire::transport_error(&what, &e, write);
        let resp = req.send().await.map_err(failed)?;
        let status = resp.status().as_u16();
        if matches!(status, 401 | 403) {
            self.token.reload();
        }
        let retry_after = retry_after(resp.headers());
        let body = resp.bytes().await.map_err(failed)?.to_vec();
        if (200..300).contains(&status) {
            return Ok(body);
        }
        Err(wire::classify(
            status,
            &body,
            retry_after,
            &what,
            write,
            key,
        ))
    }

    /// GET and decode an envelope.
    async fn get<T: serde::de::DeserializeOwned>(
        &self,
        url: Url,
        pacer: &Pacer,
    ) -> Result<Envelope<T>, ProviderError> {
        let what = format!("GET {}", url.path());
        let body = self.call(Method::GET, url, None, pacer, None).await?;
        let env: Envelope<T> = serde_json::from_slice(&body).map_err(|e| {
            ProviderError::new(
                ErrorClass::Transient,
                format!("{what}: cannot decode Cloudflare's answer: {e}"),
            )
        })?;
        if !env.success {
            return Err(wire::classify(200, &body, None, &what, false, None));
        }
        Ok(env)
    }

    fn lock_ids(&self) -> std::sync::MutexGuard<'_, HashMap<Name, String>> {
        self.zone_ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forgets a zone id found by name after a permanent answer about the zone (it may
    /// have been deleted and added again under a new id).
    fn forget_zone_id(&self, zone: &Name, e: &ProviderError) {
        if e.class == ErrorClass::Permanent && !self.configured.contains(zone) {
            self.lock_ids().remove(zone);
        }
    }

    /// Every zone the token can read.
    async fn all_zones(&self) -> Result<Vec<WireZone>, ProviderError> {
        let mut out = Vec::new();
        let per_page = ZONE_PAGE.to_string();
        for page in 1u64.. {
            let p = page.to_string();
            let url = self.url(&["zones"], &[("page", &p), ("per_page", &per_page)]);
            let env: Envelope<Vec<WireZone>> = self.get(url, &Pacer::default()).await?;
            let got = env.result.unwrap_or_default();
            let done = got.is_empty()
                || env
                    .result_info
                    .is_none_or(|i| i.total_pages == 0 || page >= i.total_pages);
            out.extend(got);
            if done {
                break;
            }
        }
        Ok(out)
    }

    /// The id of `zone`: from the config, or the zone of that name the token can read.
    async fn zone_id(&self, zone: &Name) -> Result<String, ProviderError> {
        if let Some(id) = self.lock_ids().get(zone) {
            return Ok(id.clone());
        }
        let name = api_name(zone.as_str());
        let url = self.url(&["zones"], &[("name", name), ("per_page", "50")]);
        let env: Envelope<Vec<WireZone>> = self.get(url, &Pacer::default()).await?;
        let found = env
            .result
            .unwrap_or_default()
            .into_iter()
            .find(|z| api_name(&z.name).eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorClass::Permanent,
                    format!(
                        "zone {zone} is not in the Cloudflare account, or the API token cannot read it (it needs Zone:Zone:Read on the zone, or set zone_ids)"
                    ),
                )
            })?;
        self.lock_ids().insert(zone.clone(), found.id.clone());
        Ok(found.id)
    }

    /// The records of zone `id`, all of them or those at `name`, page by page.
    async fn records(
        &self,
        id: &str,
        name: Option<&Name>,
        pacer: &Pacer,
    ) -> Result<Vec<WireRecord>, ProviderError> {
        let mut out = Vec::new();
        let per_page = PAGE.to_string();
        for page in 1u64.. {
            let p = page.to_string();
            let mut q: Vec<(&str, &str)> = vec![("page", &p), ("per_page", &per_page)];
            if let Some(n) = name {
                q.push(("name", api_name(n.as_str())));
            }
            let url = self.url(&["zones", id, "dns_records"], &q);
            let env: Envelope<Vec<WireRecord>> = self.get(url, pacer).await?;
            let got = env.result.unwrap_or_default();
            let done = got.is_empty()
                || env
                    .result_info
                    .is_none_or(|i| i.total_pages == 0 || page >= i.total_pages);
            out.extend(got);
            if done {
                break;
            }
        }
        Ok(out)
    }

    /// The records at `names` (each name by its own GET when there are few), or the
    /// whole zone.
    async fn read(
        &self,
        zone: &Name,
        names: Option<&BTreeSet<Name>>,
        pacer: &Pacer,
    ) -> Result<Read, ProviderError> {
        let id = self.zone_id(zone).await?;
        let result: Result<Vec<WireRecord>, ProviderError> = match names {
            Some(ns) if ns.len() <= PER_NAME_READ_LIMIT => {
                let gets: Vec<_> = ns
                    .iter()
                    .map(|n| Box::pin(self.records(&id, Some(n), pacer)))
                    .collect();
                stream::iter(gets)
                    .buffer_unordered(READ_CONCURRENCY)
                    .try_collect::<Vec<Vec<WireRecord>>>()
                    .await
                    .map(|v| v.into_iter().flatten().collect())
            }
            _ => self.records(&id, None, pacer).await,
        };
        let records = result.inspect_err(|e| self.forget_zone_id(zone, e))?;
        let mut read = Read::default();
        for r in records {
            read.add(zone, r, names);
        }
        Ok(read.finish())
    }

    /// Runs the listing cache's drift check every `period` instead of the default
    /// (`0s`: no cache, every listing reads the zone).
    #[must_use]
    pub fn with_drift_check(mut self, period: Duration) -> Self {
        self.cache = Arc::new(RecordCache::new(period));
        self
    }

    /// The listing cache, for its counters.
    pub fn record_cache(&self) -> &RecordCache {
        &self.cache
    }
}

/// Listings from the self-counted cache ([`crate::provider::kit::counted`]): Cloudflare has
/// no serial.
#[async_trait]
impl counted::CountedZone for CloudflareProvider {
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
impl Provider for CloudflareProvider {
    fn driver(&self) -> &'static str {
        "cloudflare"
    }

    fn capabilities(&self) -> Capabilities {
        let limit = self.plan.batch_limit();
        // Every value is at most one batch operation (an update's old and new values
        // are both counted), so a batch of at most `limit` values never exceeds the
        // plan's records per batch, and one of the plan's size is one request.
        // Cloudflare documents no size limit for a batch; a record's content is at
        // most 2,048 characters, so the character limit never binds. Preconditions
        // are enforced by a read under the zone lock, not by Cloudflare; the serial
        // is the listing cache's own count (see `fill`).
        Capabilities::atomic(limit, limit * MAX_CONTENT_CHARS)
            .measured_by_values()
            .checked_by_read()
            .with_serial()
            .with_properties(&[dnsplane_common::routing::cloudflare::PROXIED])
    }

    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        let mut names: Vec<Name> = self
            .all_zones()
            .await?
            .iter()
            .filter_map(|z| Name::parse(&format!("{}.", api_name(&z.name))).ok())
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
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
        // What Cloudflare cannot write is refused before any request (the batch
        // algorithm refuses an unknown property first; this guards a direct call, and
        // catches a proxied type that cannot be proxied).
        let caps = self.capabilities();
        if let Some((op, why)) = ops.iter().find_map(|op| {
            let why = caps
                .op_refusal(self.driver(), op)
                .or_else(|| proxy::refusal(op))?;
            Some((op, why))
        }) {
            return Err(ProviderError::new(ErrorClass::Invalid, why).with_key(op.key.clone()));
        }
        let _guard = self.zone_locks.lock(zone).await;

        let names: BTreeSet<Name> = ops.iter().map(|op| op.key.name.clone()).collect();
        let read = self.read(zone, Some(&names), pacer).await?;
        self.cache.refresh(zone, &names, &read.zone);
        check(ops, &read.zone)?;
        let ops = &proxy::settle(ops, &read.zone.rrsets);
        let batch = build_batch(ops, &read);
        if batch.len() == 0 {
            // Only assertions (or updates to what is there), and they hold.
            return Ok(());
        }
        let writes: Vec<&RRSetOp> = ops.iter().filter(|op| !op.is_assert()).collect();
        let single = match writes.as_slice() {
            [one] => Some(&one.key),
            _ => None,
        };
        let limit = self.plan.batch_limit();
        if batch.len() > limit {
            let e = ProviderError::new(
                ErrorClass::Invalid,
                format!(
                    "the batch needs {} record operations; the zone's plan allows {limit} per batch",
                    batch.len()
                ),
            );
            return Err(match single {
                Some(k) => e.with_key(k.clone()),
                None => e,
            });
        }
        let body = serde_json::to_vec(&batch).map_err(|e| {
            ProviderError::new(ErrorClass::Invalid, format!("cannot encode the batch: {e}"))
        })?;
        let id = self.zone_id(zone).await?;
        let url = self.url(&["zones", &id, "dns_records", "batch"], &[]);
        self.call(Method::POST, url, Some(body), pacer, single)
            .await
            .inspect_err(|e| self.forget_zone_id(zone, e))?;
        // Committed: the listing cache follows, with each set as a read shows it.
        self.cache.committed(zone, &proxy::as_read(ops));
        Ok(())
    }
}

#[cfg(test)]
mod tests;
