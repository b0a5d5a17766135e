//! The `azure` driver: Azure DNS public zones, or Private DNS zones with `private =
//! true`, through Azure Resource Manager (or anything that speaks it: `endpoint`,
//! `dnsplane emulate azure`).
//!
//! **Model.** Each record set is one ARM resource,
//! `…/providers/Microsoft.Network/dnsZones/{zone}/{type}/{name}` (api-version
//! 2018-05-01; Private DNS: `privateDnsZones`, 2020-06-01), with an `etag` Azure
//! regenerates on every write. [`wire`] maps its JSON to RRSets.
//!
//! **Writes: one request per record set, each conditional.** Azure has no
//! multi-record-set batch. So the driver says `max_changes_per_batch = 1`: every
//! `apply` carries one change (its record, then its ownership records), never two,
//! and the batch algorithm reports each change's own outcome. Within the change
//! ([`write`]):
//!
//! - a create is `PUT` with `If-None-Match: *`; an update a `PUT`, a delete a
//!   `DELETE`, with `If-Match: <etag>` — the etag of the last read of that set (read
//!   first when none is known, or when the known set is not the op's `before`);
//! - every op's precondition is checked before the first write (a set already at its
//!   target fails a precondition that says otherwise, as on every driver: the batch
//!   algorithm's read-back then reports ALREADY_APPLIED);
//! - ownership records are written before the record and deleted after it;
//! - when a later request of the change fails, the earlier ones are undone (each
//!   with `If-Match` on the etag its write returned), so the change commits whole or
//!   not at all unless the undo itself fails (then the zone's listing cache is
//!   dropped and the next sync sees and repairs the half: a mark of dnsplane's own
//!   without its record, or an orphan mark, both of which it re-plans);
//! - a `412` is another writer's change to that set alone. The set is read again: if
//!   it still holds the op's `before` (only its etag moved: a set dnsplane owns), the
//!   write is retried once with the new etag; otherwise the change is a CONFLICT whose
//!   message names the values found;
//! - a `5xx` or a timeout after a write is ambiguous: the set is read back and its
//!   etag and values compared. At the target: committed. Still the `before`: not
//!   committed (transient, the batch algorithm retries). Else a conflict. When the
//!   read fails too, the answer stays ambiguous and the batch algorithm reads back.
//!
//! **Answers** ([`wire::classify`]): 429 is transient and `throttled`, with its
//! `Retry-After`, and fed to the account's quota; 401 drops the token and asks once
//! more, then, as 403, is permanent with ARM's error code and message (the account's
//! circuit opens: no retry storm). Too many records for one set (20; 400 for TXT), a
//! type the zone kind has no sets of, or a value JSON cannot carry: INVALID before any
//! request.
//!
//! **Listings** are paged (`$top`, `nextLink`; a failed page fails the read, never an
//! empty zone). As the `cloudflare` driver, this one keeps each zone as it last read it
//! whole ([`RecordCache`]), follows it with its own writes and reports the cache's own
//! count as the zone's serial: a steady-state sync lists nothing. A read of a few names
//! lists each by `$recordsetnamesuffix` (filtered to the exact name here).
//!
//! Each HTTP request takes its own quota token through the call's [`Pacer`] right
//! before it is sent.
use crate::provider::call::Pacer;
use crate::provider::kit::counted::{self, CountedZone};
use crate::provider::kit::zones::ZoneLocks;
use crate::provider::precondition::ZoneRead;
use crate::provider::record_cache::RecordCache;
use crate::provider::{Capabilities, ErrorClass, Operation, Provider, ProviderError};
use async_trait::async_trait;
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use reqwest::{Method, Url};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod config;
pub mod identity;
mod read;
pub mod wire;
mod write;

pub use config::{AzureConfig, AzureSetupError, DEFAULT_AUTHORITY_HOST, DEFAULT_ENDPOINT};
use identity::{Credential, EnvReader, Identity};
use wire::{Flavor, Parsed, ReadSet, WireZone};

/// Azure's count of the reads left in the subscription's throttling window.
pub const REMAINING_READS: &str = "x-ms-ratelimit-remaining-subscription-reads";
/// Azure's count of the writes left in the subscription's throttling window.
pub const REMAINING_WRITES: &str = "x-ms-ratelimit-remaining-subscription-writes";
/// Azure's count of the deletes left in the subscription's throttling window (ARM
/// counts deletes apart from other writes).
pub const REMAINING_DELETES: &str = "x-ms-ratelimit-remaining-subscription-deletes";
/// Record sets per page of a listing (`$top`).
pub const PAGE: usize = 100;
/// Up to this many names, a read lists each name; above it, the whole zone.
pub const PER_NAME_READ_LIMIT: usize = 8;

/// What this driver last read or wrote of one record set: its etag, what it holds and
/// its metadata (kept when the set is rewritten).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Known {
    pub etag: String,
    pub set: Option<RRSet>,
    pub metadata: Option<serde_json::Value>,
}

#[derive(Clone)]
pub struct AzureProvider {
    http: reqwest::Client,
    /// `…/subscriptions/{s}/resourceGroups/{rg}/providers/Microsoft.Network/{kind}`.
    base: Url,
    flavor: Flavor,
    identity: Arc<Identity>,
    zone_locks: Arc<ZoneLocks>,
    /// Each zone as last read whole, kept by this driver's writes (listings only).
    cache: Arc<RecordCache>,
    /// The etag of every record set this driver read or wrote.
    known: Arc<Mutex<HashMap<RecordKey, Known>>>,
}

impl std::fmt::Debug for AzureProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AzureProvider")
            .field("base", &self.base.as_str())
            .field("flavor", &self.flavor)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

/// An HTTP answer, whatever its status.
pub(crate) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub retry_after: Option<Duration>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl AzureProvider {
    /// Resolves the credential from the table and the process environment, and builds
    /// the HTTP client. Makes no request.
    pub fn new(cfg: &AzureConfig) -> Result<Self, AzureSetupError> {
        Self::with_env(cfg, identity::process_env())
    }

    /// [`new`](Self::new) reading the environment through `env` (tests).
    pub fn with_env(cfg: &AzureConfig, env: EnvReader) -> Result<Self, AzureSetupError> {
        let url_err = |key: &'static str, url: &str, problem: String| AzureSetupError::Url {
            key,
            url: url.to_string(),
            problem,
        };
        let mut base = Url::parse(cfg.endpoint.trim().trim_end_matches('/'))
            .map_err(|e| url_err("endpoint", &cfg.endpoint, e.to_string()))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(url_err(
                "endpoint",
                &cfg.endpoint,
                "must be an http:// or https:// URL".into(),
            ));
        }
        let flavor = if cfg.private {
            Flavor::Private
        } else {
            Flavor::Public
        };
        if let Ok(mut path) = base.path_segments_mut() {
            path.pop_if_empty().extend([
                "subscriptions",
                cfg.subscription_id.trim(),
                "resourceGroups",
                cfg.resource_group.trim(),
                "providers",
                "Microsoft.Network",
                flavor.zones_segment(),
            ]);
        }
        let credential = Credential::resolve(cfg, &env)?;
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .connect_timeout(cfg.timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| AzureSetupError::Client(e.to_string()))?;
        let identity = Identity::new(credential, &cfg.authority_host, env, http.clone());
        Ok(AzureProvider {
            http,
            base,
            flavor,
            identity: Arc::new(identity),
            zone_locks: Arc::default(),
            cache: Arc::default(),
            known: Arc::default(),
        })
    }

    /// Runs the listing cache's drift check every `period` (`0s`: no cache).
    #[must_use]
    pub fn with_drift_check(mut self, period: Duration) -> Self {
        self.cache = Arc::new(RecordCache::new(period));
        self
    }

    /// The listing cache, for its counters.
    pub fn record_cache(&self) -> &RecordCache {
        &self.cache
    }

    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// `base/{segments…}?api-version=…&{query}`.
    pub(crate) fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Url {
        let mut pairs = vec![("api-version", self.flavor.api_version())];
        pairs.extend_from_slice(query);
        crate::provider::kit::http::url(&self.base, segments, &pairs)
    }

    /// The URL of the record set at `key`.
    pub(crate) fn set_url(&self, key: &RecordKey) -> Url {
        let zone = key.zone.as_str().trim_end_matches('.');
        let rel = wire::relative_name(&key.zone, &key.name);
        self.url(&[zone, wire::type_segment(key.rtype), &rel], &[])
    }

    /// One HTTP exchange under the call's quota, with the current token; a 401 drops
    /// the token and the request is made once more with a new one. Every status is
    /// returned; transport failures are classified (`write`: ambiguous once sent).
    pub(crate) async fn send(
        &self,
        method: Method,
        url: Url,
        headers: &[(&'static str, String)],
        body: Option<&serde_json::Value>,
        pacer: &Pacer,
    ) -> Result<Answer, ProviderError> {
        let write = method != Method::GET;
        let what = format!("{method} {}", url.path());
        let op = if write {
            Operation::Apply
        } else {
            Operation::List
        };
        for attempt in 0..2 {
            let token = self.identity.get().await?;
            pacer.request(op).await?;
            let mut auth = HeaderValue::from_str(&format!("Bearer {}", token.secret.expose()))
                .map_err(|_| {
                    ProviderError::new(
                        ErrorClass::Permanent,
                        format!(
                            "the Azure token from {} holds characters an HTTP header cannot carry",
                            self.identity.credential().describe()
                        ),
                    )
                })?;
            auth.set_sensitive(true);
            let mut req = self
                .http
                .request(method.clone(), url.clone())
                .header(AUTHORIZATION, auth);
            for (name, value) in headers {
                req = req.header(*name, value);
            }
            req = crate::provider::kit::http::traced(req);
            if let Some(body) = body {
                req = req
                    .header(CONTENT_TYPE, "application/json")
                    .body(serde_json::to_vec(body).unwrap_or_default());
            }
            let failed = |e: reqwest::Error| crate::provider::transport_error(&what, &e, write);
            let resp = req.send().await.map_err(failed)?;
            let status = resp.status().as_u16();
            let retry_after = crate::provider::kit::http::retry_after(resp.headers());
            // What Azure says is left of the subscription's window, fed to the quota.
            let left = resp
                .headers()
                .get(match method {
                    Method::DELETE => REMAINING_DELETES,
                    _ if write => REMAINING_WRITES,
                    _ => REMAINING_READS,
                })
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            let body = resp.bytes().await.map_err(failed)?.to_vec();
            if let Some(left) = left {
                pacer.remaining(op, left).await;
            }
            if status == 401 {
                self.identity.forget().await;
                if attempt == 0 {
                    tracing::info!(request = %what, "Azure refused the token (401); asking for a new one and trying once more.");
                    continue;
                }
            }
            return Ok(Answer {
                status,
                body,
                retry_after,
            });
        }
        unreachable!("the loop returns on its second attempt")
    }

    /// An error answer classified (`key`: the record set it is about).
    pub(crate) fn fail(
        &self,
        a: &Answer,
        what: &str,
        write: bool,
        key: Option<&RecordKey>,
    ) -> ProviderError {
        let mut e = wire::classify(a.status, &a.body, a.retry_after, what, write, key);
        if a.status == 401 || a.status == 403 {
            e.message.push_str(&format!(
                " (credential: {})",
                self.identity.credential().describe()
            ));
        }
        e
    }

    /// Remembers what a read or a write showed of one record set.
    pub(crate) fn learn(&self, key: &RecordKey, read: Option<&ReadSet>) {
        let mut known = lock(&self.known);
        match read {
            Some(ReadSet {
                parsed,
                etag: Some(etag),
                metadata,
            }) => {
                let set = match parsed {
                    Parsed::Set(s) => Some(s.clone()),
                    _ => None,
                };
                known.insert(
                    key.clone(),
                    Known {
                        etag: etag.clone(),
                        set,
                        metadata: metadata.clone(),
                    },
                );
            }
            _ => {
                known.remove(key);
            }
        }
    }

    pub(crate) fn known(&self, key: &RecordKey) -> Option<Known> {
        lock(&self.known).get(key).cloned()
    }
}

/// Listings from the self-counted cache ([`crate::provider::kit::counted`]): Azure
/// has no zone serial.
#[async_trait]
impl counted::CountedZone for AzureProvider {
    fn listing_cache(&self) -> &RecordCache {
        &self.cache
    }

    async fn read_zone(
        &self,
        zone: &Name,
        names: Option<&BTreeSet<Name>>,
        pacer: &Pacer,
    ) -> Result<ZoneRead, ProviderError> {
        self.read(zone, names, pacer).await
    }
}

#[async_trait]
impl Provider for AzureProvider {
    fn driver(&self) -> &'static str {
        "azure"
    }

    fn capabilities(&self) -> Capabilities {
        // One request per record set, `If-Match` / `If-None-Match: *` on every write: a
        // change is undone when a later request of it fails, but nothing spans two
        // changes, so each call carries one change (the batch algorithm never splits
        // one) and each change gets its own outcome. The serial is the listing
        // cache's own count.
        Capabilities::atomic(1, 1 << 20).not_atomic().with_serial()
    }

    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        let top = PAGE.to_string();
        let url = self.url(&[], &[("$top", &top)]);
        let zones: Vec<WireZone> = self.pages(url, &Pacer::default()).await?;
        let mut names: Vec<Name> = zones
            .iter()
            .filter_map(|z| Name::parse(&z.name).ok())
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
        let caps = self.capabilities();
        for op in ops {
            let why = caps.op_refusal(self.driver(), op).or_else(|| {
                op.after
                    .iter()
                    .chain(&op.before)
                    .find_map(|s| wire::refusal(self.flavor, s))
            });
            if let Some(why) = why {
                return Err(ProviderError::new(ErrorClass::Invalid, why).with_key(op.key.clone()));
            }
        }
        let _guard = self.zone_locks.lock(zone).await;
        match write::Change::new(self, zone, ops, pacer).run().await {
            Ok(()) => {
                self.cache.committed(zone, ops);
                Ok(())
            }
            Err(e) => {
                // What was written is undone or unknown: the next listing reads Azure.
                self.cache.invalidate(zone);
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests;
