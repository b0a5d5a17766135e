//! The `clouddns` driver: Google Cloud DNS's JSON API (`dns/v1`), or anything that
//! speaks it (`endpoint`: `dnsplane emulate clouddns`, a private endpoint).
//!
//! Cloud DNS applies a Change (additions and deletions) atomically and checks it
//! itself: a deletion must match the set exactly (name, type, TTL, rrdatas) and an
//! addition fails when the set exists unless the same Change deletes it. So each op is
//! sent as its own compare-and-swap, in one Change per batch, with no read first:
//!
//! | op | entries sent |
//! |---|---|
//! | create | addition of `after` |
//! | delete | deletion of `before` |
//! | update | deletion of `before`, addition of `after` |
//! | assert present | deletion and addition of `before` (a no-op that fails unless it holds) |
//! | assert absent | checked by a read of the name first (a Change cannot say "absent") |
//!
//! A refused Change lists every failing entry with its index
//! (`entity.change.deletions[76]`), which names the record ([`wire::classify`]).
//!
//! **Change counter.** Every Change gets the next sequence number, so the latest
//! Change's id (`changes.list?sortBy=changeSequence&sortOrder=descending&maxResults=1`)
//! is a cheap change counter: [`Provider::serial`] returns it, and a whole-zone
//! listing carries the counter read just before it, so the applier's listing cache
//! revalidates a zone with one small request instead of listing it again.
//!
//! **Reads.** Up to [`TARGETED_NAMES`] names are read one request per name
//! (`rrsets?name=`), a few at a time; more names, and the whole zone, are read page by
//! page (the server picks the page size).
//!
//! Sets with a routing policy are not modelled: a read marks them opaque, so dnsplane
//! never writes over them.
use crate::provider::call::Pacer;
use crate::provider::{
    Capabilities, ErrorClass, Listing, Operation, Provider, ProviderError, precondition,
};
use async_trait::async_trait;
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey};
use futures::{StreamExt, TryStreamExt};
use reqwest::{Method, Url};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod config;
pub mod credentials;
mod http;
mod read;
mod wire;

pub use config::{CloudDnsConfig, DEFAULT_ENDPOINT};
use credentials::{EnvReader, TokenSource};
use read::Read;
use wire::{OutChange, OutRRSet, Sent};

/// RRSet ops one Change may carry: Google allows 1,000 additions and 1,000
/// deletions per Change, and an op is at most one of each.
pub const MAX_CHANGES_PER_BATCH: usize = 1000;
/// Bytes of rrdata one Change may carry, of its additions and deletions together:
/// Google's 100,000. The driver sends each record value as one rrdata, as it is, so
/// the characters of the values are the rrdata bytes Google counts
/// ([`Measure::Rrdata`](crate::provider::Measure::Rrdata)).
pub const MAX_RRDATA_BYTES_PER_BATCH: usize = 100_000;
/// The most names read one request each; more are read as the whole zone.
pub const TARGETED_NAMES: usize = 32;
/// Requests of a targeted read in flight at once.
const READ_CONCURRENCY: usize = 8;
/// A 404 on a read this soon after a successful call on the zone is Cloud DNS's
/// read-after-write lag (DNSControl saw it), not a missing zone: transient.
const READ_AFTER_WRITE_LAG: Duration = Duration::from_secs(60);
/// How long such a read waits before it is asked once more.
const LAG_RETRY: Duration = Duration::from_millis(500);
/// Ends the message of a 404 taken for the read-after-write lag.
const LAG_NOTE: &str =
    " (a read right after a successful call on the zone: Cloud DNS's read-after-write lag)";

/// Set rrdatas as Cloud DNS holds them, where they differ from dnsplane's canonical
/// spelling, as of the last read: a deletion must repeat them literally.
#[derive(Default)]
struct Spellings(Mutex<HashMap<RecordKey, (RRSet, Vec<String>)>>);

impl Spellings {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RecordKey, (RRSet, Vec<String>)>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn for_delete(&self, set: &RRSet) -> Option<Vec<String>> {
        self.lock()
            .get(&set.key)
            .filter(|(canonical, _)| canonical.same_data(set))
            .map(|(_, raw)| raw.clone())
    }
}

#[derive(Clone)]
pub struct CloudDnsProvider {
    http: reqwest::Client,
    /// `…/dns/v1/projects/{project}` (no trailing slash).
    api: Url,
    /// Managed zones named by the config.
    configured: Arc<BTreeMap<Name, String>>,
    /// Managed zones found by DNS name.
    found: Arc<Mutex<HashMap<Name, String>>>,
    credentials: Arc<TokenSource>,
    spellings: Arc<Spellings>,
    /// When each zone last answered a call.
    last_ok: Arc<Mutex<HashMap<Name, Instant>>>,
    wait_done: Option<Duration>,
}

impl std::fmt::Debug for CloudDnsProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudDnsProvider")
            .field("api", &self.api.as_str())
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

/// Why a `clouddns` account could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CloudDnsSetupError {
    #[error("clouddns endpoint {url:?}: {problem}")]
    Url { url: String, problem: String },
    #[error("clouddns HTTP client: {0}")]
    Client(String),
}

/// A failed request: a 404 taken for the read-after-write lag (asked once more), or
/// anything else.
enum Failed {
    Lag(ProviderError),
    Other(ProviderError),
}

impl Failed {
    fn into_error(self) -> ProviderError {
        match self {
            Failed::Lag(e) | Failed::Other(e) => e,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Decodes a JSON answer, naming the call on failure.
fn decode<T: serde::de::DeserializeOwned>(body: &str, what: &str) -> Result<T, ProviderError> {
    serde_json::from_str(body).map_err(|e| {
        ProviderError::new(
            ErrorClass::Transient,
            format!("{what}: cannot decode Cloud DNS's answer: {e}"),
        )
    })
}

impl CloudDnsProvider {
    /// Builds the client; reads no credentials and makes no request yet.
    pub fn new(cfg: &CloudDnsConfig) -> Result<Self, CloudDnsSetupError> {
        Self::with_env(cfg, credentials::process_env())
    }

    /// As [`new`](Self::new), reading the environment through `env` (tests).
    pub fn with_env(cfg: &CloudDnsConfig, env: EnvReader) -> Result<Self, CloudDnsSetupError> {
        let url_err = |problem: String| CloudDnsSetupError::Url {
            url: cfg.endpoint.clone(),
            problem,
        };
        let mut base = cfg.endpoint.trim().trim_end_matches('/').to_string();
        if let Some(stripped) = base.strip_suffix("/dns/v1") {
            base = stripped.to_string();
        }
        let mut api = Url::parse(&base).map_err(|e| url_err(e.to_string()))?;
        if !matches!(api.scheme(), "http" | "https") {
            return Err(url_err("the scheme must be http or https".into()));
        }
        api.path_segments_mut()
            .map_err(|()| url_err("cannot be a base URL".into()))?
            .pop_if_empty()
            .extend(["dns", "v1", "projects", cfg.project.trim()]);
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .connect_timeout(cfg.timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| CloudDnsSetupError::Client(e.to_string()))?;
        Ok(CloudDnsProvider {
            credentials: Arc::new(TokenSource::new(
                env,
                cfg.credentials_file.clone(),
                http.clone(),
            )),
            http,
            api,
            configured: Arc::new(cfg.zone_names.clone()),
            found: Arc::default(),
            spellings: Arc::default(),
            last_ok: Arc::default(),
            wait_done: cfg.wait_done.then_some(cfg.done_timeout),
        })
    }

    /// Every managed zone of the project (of `dns_name` only, when given).
    async fn managed_zones(
        &self,
        dns_name: Option<&Name>,
        pacer: &Pacer,
    ) -> Result<Vec<wire::ManagedZone>, ProviderError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut q: Vec<(&str, &str)> = Vec::new();
            if let Some(d) = dns_name {
                q.push(("dnsName", d.as_str()));
            }
            if let Some(t) = &token {
                q.push(("pageToken", t.as_str()));
            }
            let url = self.url(&["managedZones"], &q);
            let body = self
                .call(Method::GET, url, None, None, Operation::Zones, pacer, None)
                .await?;
            let page: wire::ZonesPage = decode(&body, "managedZones.list")?;
            out.extend(page.managed_zones);
            match page.next_page_token.filter(|t| !t.is_empty()) {
                Some(t) => token = Some(t),
                None => return Ok(out),
            }
        }
    }

    /// The managed zone of `zone`: from the config, or the one zone of that DNS name.
    async fn managed_zone(&self, zone: &Name, pacer: &Pacer) -> Result<String, ProviderError> {
        if let Some(m) = self.configured.get(zone) {
            return Ok(m.clone());
        }
        if let Some(m) = lock(&self.found).get(zone) {
            return Ok(m.clone());
        }
        let found: Vec<wire::ManagedZone> = self
            .managed_zones(Some(zone), pacer)
            .await?
            .into_iter()
            .filter(|z| Name::parse(&z.dns_name).ok().as_ref() == Some(zone))
            .collect();
        match found.as_slice() {
            [] => Err(ProviderError::new(
                ErrorClass::Permanent,
                format!("zone {zone} has no managed zone in the Cloud DNS project"),
            )),
            [one] => {
                lock(&self.found).insert(zone.clone(), one.name.clone());
                Ok(one.name.clone())
            }
            many => Err(ProviderError::new(
                ErrorClass::Permanent,
                format!(
                    "zone {zone} is ambiguous: the Cloud DNS project has {} managed zones of that name ({}); set zone_names in the account",
                    many.len(),
                    many.iter()
                        .map(|z| format!(
                            "{} {}",
                            z.name,
                            z.visibility.as_deref().unwrap_or("public")
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// The id of the zone's latest Change.
    async fn latest_change(
        &self,
        zone: &Name,
        managed: &str,
        pacer: &Pacer,
    ) -> Result<u64, ProviderError> {
        let url = self.url(
            &["managedZones", managed, "changes"],
            &[
                ("sortBy", "changeSequence"),
                ("sortOrder", "descending"),
                ("maxResults", "1"),
            ],
        );
        let body = self
            .call(
                Method::GET,
                url,
                None,
                Some(zone),
                Operation::Serial,
                pacer,
                None,
            )
            .await?;
        let page: wire::ChangesPage = decode(&body, "changes.list")?;
        // A zone's creation is Change 0, so a zone always has one.
        Ok(page
            .changes
            .first()
            .and_then(|c| c.id.parse::<u64>().ok())
            .unwrap_or(0))
    }

    /// `rrsets.list` from `name` (all names with `None`), every page.
    async fn rrsets(
        &self,
        zone: &Name,
        managed: &str,
        name: Option<&Name>,
        pacer: &Pacer,
    ) -> Result<Vec<wire::WireRRSet>, ProviderError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut q: Vec<(&str, &str)> = Vec::new();
            if let Some(n) = name {
                q.push(("name", n.as_str()));
            }
            if let Some(t) = &token {
                q.push(("pageToken", t.as_str()));
            }
            let url = self.url(&["managedZones", managed, "rrsets"], &q);
            let body = self
                .call(
                    Method::GET,
                    url,
                    None,
                    Some(zone),
                    Operation::List,
                    pacer,
                    None,
                )
                .await?;
            let page: wire::RRSetsPage = decode(&body, "rrsets.list")?;
            out.extend(page.rrsets);
            match page.next_page_token.filter(|t| !t.is_empty()) {
                Some(t) => token = Some(t),
                None => return Ok(out),
            }
        }
    }

    /// The zone's sets, all of them or those at `names`.
    async fn read(
        &self,
        zone: &Name,
        names: Option<&BTreeSet<Name>>,
        pacer: &Pacer,
    ) -> Result<Read, ProviderError> {
        let managed = self.managed_zone(zone, pacer).await?;
        let sets: Vec<wire::WireRRSet> = match names {
            Some(names) if names.len() <= TARGETED_NAMES => {
                let managed = managed.as_str();
                futures::stream::iter(names.iter().cloned())
                    .map(|n| async move { self.rrsets(zone, managed, Some(&n), pacer).await })
                    .buffer_unordered(READ_CONCURRENCY)
                    .try_concat()
                    .await?
            }
            _ => self.rrsets(zone, &managed, None, pacer).await?,
        };
        let mut read = Read::default();
        for set in sets {
            read.add(zone, set, names);
        }
        let mut spellings = self.spellings.lock();
        for (key, raw) in &read.raw {
            if let Some(set) = read.rrsets.get(key) {
                spellings.insert(key.clone(), (set.clone(), raw.clone()));
            }
        }
        for key in read.rrsets.keys() {
            if !read.raw.contains_key(key) {
                spellings.remove(key);
            }
        }
        Ok(read)
    }

    /// Polls `changes.get` until the change is `done`, at most `limit`.
    async fn wait_done(
        &self,
        zone: &Name,
        managed: &str,
        change: &str,
        limit: Duration,
        pacer: &Pacer,
    ) -> Result<(), ProviderError> {
        let until = Instant::now() + limit;
        let mut delay = Duration::from_millis(200);
        loop {
            let url = self.url(&["managedZones", managed, "changes", change], &[]);
            let body = self
                .call(
                    Method::GET,
                    url,
                    None,
                    Some(zone),
                    Operation::List,
                    pacer,
                    None,
                )
                .await?;
            let answer: wire::ChangeAnswer = decode(&body, "changes.get")?;
            if answer.status == "done" {
                return Ok(());
            }
            if Instant::now() + delay > until {
                tracing::warn!(zone = %zone, change = %change, waited_ms = limit.as_millis() as u64, "Cloud DNS accepted the change but it was not done within done_timeout; reporting it applied (it committed).");
                return Ok(());
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }
}

#[async_trait]
impl Provider for CloudDnsProvider {
    fn driver(&self) -> &'static str {
        "clouddns"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::atomic(MAX_CHANGES_PER_BATCH, MAX_RRDATA_BYTES_PER_BATCH)
            .measured_by_rrdata()
            .with_serial()
    }

    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        let mut names: Vec<Name> = self
            .managed_zones(None, &Pacer::default())
            .await?
            .iter()
            .filter_map(|z| Name::parse(&z.dns_name).ok())
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError> {
        let pacer = Pacer::default();
        let managed = self.managed_zone(zone, &pacer).await?;
        self.latest_change(zone, &managed, &pacer).await.map(Some)
    }

    async fn list_paced(
        &self,
        zone: &Name,
        names: Option<&[Name]>,
        pacer: &Pacer,
    ) -> Result<Listing, ProviderError> {
        let names: Option<BTreeSet<Name>> = names.map(|n| n.iter().cloned().collect());
        // A whole-zone listing carries the change counter read *before* it: a change
        // in between makes the counter look old, which only costs a read later.
        let serial = if names.is_none() {
            let managed = self.managed_zone(zone, pacer).await?;
            Some(self.latest_change(zone, &managed, pacer).await?)
        } else {
            None
        };
        let read = self.read(zone, names.as_ref(), pacer).await?;
        Ok(Listing {
            rrsets: read.rrsets.into_values().collect(),
            serial,
        })
    }

    async fn apply_paced(
        &self,
        zone: &Name,
        ops: &[RRSetOp],
        pacer: &Pacer,
    ) -> Result<(), ProviderError> {
        crate::provider::ensure_in_zone(zone, ops)?;
        // "Absent" is the one precondition a Change cannot express.
        let absent = precondition::absent_names(ops);
        if !absent.is_empty() {
            let read = self.read(zone, Some(&absent), pacer).await?;
            precondition::check_absent(ops, &read.rrsets, &read.opaque)?;
        }
        let respelled: Vec<Option<Vec<String>>> = ops
            .iter()
            .map(|op| self.spellings.for_delete(op.before.as_ref()?))
            .collect();
        let mut change = OutChange {
            kind: "dns#change",
            additions: Vec::new(),
            deletions: Vec::new(),
        };
        let mut sent = Sent::default();
        for (op, raw) in ops.iter().zip(&respelled) {
            if let Some(before) = &op.before {
                let values = match raw {
                    Some(raw) => raw.iter().map(String::as_str).collect(),
                    None => before.values().collect(),
                };
                change
                    .deletions
                    .push(OutRRSet::new(&before.key, before.ttl, values));
                sent.deletions.push(before.key.clone());
            }
            if let Some(after) = &op.after {
                change.additions.push(OutRRSet::new(
                    &after.key,
                    after.ttl,
                    after.values().collect(),
                ));
                sent.additions.push(after.key.clone());
            }
        }
        if change.additions.is_empty() && change.deletions.is_empty() {
            return Ok(());
        }
        let managed = self.managed_zone(zone, pacer).await?;
        let body = serde_json::to_string(&change).map_err(|e| {
            ProviderError::new(
                ErrorClass::Invalid,
                format!("cannot encode the change: {e}"),
            )
        })?;
        let url = self.url(&["managedZones", &managed, "changes"], &[]);
        let answer = self
            .call(
                Method::POST,
                url,
                Some(body),
                Some(zone),
                Operation::Apply,
                pacer,
                Some(&sent),
            )
            .await?;
        if let Some(limit) = self.wait_done {
            match decode::<wire::ChangeAnswer>(&answer, "changes.create") {
                Ok(a) if a.status == "done" => {}
                Ok(a) => self.wait_done(zone, &managed, &a.id, limit, pacer).await?,
                Err(e) => {
                    tracing::warn!(zone = %zone, error = %e, "Cloud DNS accepted the change but its answer names no change to wait for.");
                }
            }
        }
        Ok(())
    }
}
