//! The `pdns` driver: the PowerDNS Authoritative Server HTTP API (4.7+).
//!
//! PowerDNS commits one PATCH in one backend transaction (atomic), but its writes are
//! not conditional: REPLACE overwrites and DELETE of an absent RRSet succeeds
//! (PowerDNS's API documentation). So [`PdnsProvider::apply`] enforces every op's
//! precondition itself, under an in-process per-zone lock: it checks every `before`
//! (and the CNAME rule) against the zone's content and only then sends ONE PATCH.
//!
//! The content comes from the driver's record cache
//! ([`crate::provider::record_cache`]) when the zone's serial says the cache is the
//! truth: one `GET /zones/{id}?rrsets=false` per batch, then the PATCH, whatever the
//! zone's size. Otherwise (cold, or the serial moved by something else than this
//! driver's writes) it reads: each of the batch's names when there are at most 32,
//! else the whole zone once, which refills the cache. A successful PATCH is applied to
//! the cache; a failed one that may have committed drops it. Listings are answered the
//! same way. That is exact as long as every other writer moves the serial (every API
//! client does; `pdnsutil add-record` does not — see docs/providers.md); a foreign
//! write that lands between the check and the PATCH is overwritten, as it would be by
//! any PowerDNS client.
//!
//! The zone serial is the change counter: zones created through the API carry
//! `SOA-EDIT-API`, so every PATCH bumps it (by one, even when it changes nothing;
//! `DEFAULT` jumps to `YYYYMMDD01` on a new day, which the cache takes for unexplained
//! and reads the zone once). For a zone without `SOA-EDIT-API`, [`Provider::serial`]
//! answers `None` (no cheap counter) instead of a serial that would never move, and
//! every batch reads what it touches, as without a cache.
//!
//! Each HTTP request takes its own quota token through the call's
//! [`Pacer`](crate::provider::call::Pacer), right before it is sent.
use crate::provider::call::Pacer;
use crate::provider::kit::http::{retry_after, traced};
use crate::provider::kit::secret::SecretHeader;
use crate::provider::kit::zones::ZoneLocks;
use crate::provider::precondition::{ZoneRead, check};
use crate::provider::record_cache::{RecordCache, Validity};
use crate::provider::{Capabilities, ErrorClass, Listing, Operation, Provider, ProviderError};
use async_trait::async_trait;
use dnsplane_common::{Name, RRSetOp};
use futures::stream::{self, StreamExt, TryStreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod api;
mod config;
mod http;
mod timing;

use crate::provider::transport_error;
use api::{Answer, Patch, PdnsRRSet, PdnsRecord, ZoneInfo, add_rrset};
pub use config::{PdnsConfig, PdnsSetupError, SecretSource};
use timing::Deadlines;

/// What a request is, for its class on failure and for its deadline.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A read whose cost does not grow with the zone (a serial, one name, the zone list).
    Read,
    /// A read of the whole zone.
    WholeRead,
    /// A PATCH: PowerDNS rectifies the whole zone in it.
    Write,
}

/// RRSet ops one PATCH may carry. PowerDNS has no count limit, only the 2 MB
/// `webserver-max-bodysize`, and every PATCH also rectifies the whole zone (stock
/// `default-api-rectify`), a cost that grows with the zone: fewer, larger PATCHes keep
/// a large zone's creation from growing quadratic. The byte bound below comes first
/// for all but the smallest records.
pub const MAX_CHANGES_PER_BATCH: usize = 10_000;
/// Change bytes one PATCH may carry, as [`dnsplane_common::Change::approx_bytes`]
/// counts them: its JSON is at most about 2.5 times that (an A record at a short
/// name), so 780 KiB stays under the stock 2 MB body limit, and is as few PATCHes (and
/// zone rectifies) as that limit allows.
pub const MAX_BYTES_PER_BATCH: usize = 780 << 10;
/// Up to this many names, the precondition read fetches each name
/// (`?rrset_name=`); above it, one GET of the whole zone is cheaper.
const PER_NAME_READ_LIMIT: usize = 32;
/// Concurrent per-name GETs during one read.
const READ_CONCURRENCY: usize = 4;

#[derive(Clone)]
pub struct PdnsProvider {
    http: reqwest::Client,
    /// `…/api/v1/servers/{server_id}` (no trailing slash).
    server_url: Url,
    timeout: Duration,
    /// Each zone's request deadline, stretched by what PowerDNS took for it.
    deadlines: Arc<Deadlines>,
    /// Zone name → the opaque id PowerDNS gave it.
    zone_ids: Arc<Mutex<HashMap<Name, String>>>,
    /// One write (read-check-PATCH) per zone at a time.
    zone_locks: Arc<ZoneLocks>,
    /// Each zone's content as of its serial, kept by this driver's own writes.
    cache: Arc<RecordCache>,
    /// The `X-API-Key` header (marked sensitive), read again where it comes from when
    /// PowerDNS refuses it (401/403): fixing the key file is enough, the circuit's next
    /// probe uses the new key.
    key: Arc<SecretHeader>,
}

impl std::fmt::Debug for PdnsProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PdnsProvider")
            .field("server_url", &self.server_url.as_str())
            .field("timeout", &self.timeout)
            .field("api_key", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl PdnsProvider {
    /// Reads the API key and builds the HTTP client. Makes no request.
    pub fn new(cfg: &PdnsConfig) -> Result<Self, PdnsSetupError> {
        let url_err = |problem: String| PdnsSetupError::Url {
            url: cfg.api_url.clone(),
            problem,
        };
        let mut base = cfg.api_url.trim().trim_end_matches('/').to_string();
        if let Some(stripped) = base.strip_suffix("/api/v1") {
            base = stripped.to_string();
        }
        let mut server_url = Url::parse(&base).map_err(|e| url_err(e.to_string()))?;
        if !matches!(server_url.scheme(), "http" | "https") {
            return Err(url_err("the scheme must be http or https".into()));
        }
        let server_id = cfg.server_id.trim();
        if server_id.is_empty() {
            return Err(url_err("server_id is empty".into()));
        }
        server_url
            .path_segments_mut()
            .map_err(|()| url_err("cannot be a base URL".into()))?
            .pop_if_empty()
            .extend(["api", "v1", "servers", server_id]);

        let key = SecretHeader::new(cfg.api_key(), "", "PowerDNS refused the API key")?;
        let mut headers = HeaderMap::new();
        // Without it PowerDNS answers some errors in plain text .
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));

        let http = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(cfg.timeout)
            .connect_timeout(cfg.timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| PdnsSetupError::Client(e.to_string()))?;
        Ok(PdnsProvider {
            http,
            server_url,
            timeout: cfg.timeout,
            deadlines: Arc::new(Deadlines::new(cfg.timeout)),
            zone_ids: Arc::default(),
            zone_locks: Arc::default(),
            cache: Arc::default(),
            key: Arc::new(key),
        })
    }

    /// Runs the record cache's drift check every `period` (see
    /// [`crate::provider::record_cache`]) instead of the default.
    #[must_use]
    pub fn with_drift_check(mut self, period: Duration) -> Self {
        self.cache = Arc::new(RecordCache::new(period));
        self
    }

    /// The record cache, for its counters.
    pub fn record_cache(&self) -> &RecordCache {
        &self.cache
    }

    /// Every zone of the server, refreshing the id cache.
    async fn fetch_zones(&self) -> Result<Vec<ZoneInfo>, ProviderError> {
        let mut url = self.url(&["zones"]);
        url.query_pairs_mut().append_pair("dnssec", "false");
        let zones: Vec<ZoneInfo> = self
            .get_json(url, Kind::Read, None, &Pacer::default())
            .await?;
        let mut ids = self.lock_ids();
        for z in &zones {
            if let Ok(name) = Name::parse(&z.name) {
                ids.insert(name, z.id.clone());
            }
        }
        Ok(zones)
    }

    fn lock_ids(&self) -> std::sync::MutexGuard<'_, HashMap<Name, String>> {
        self.zone_ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The server's id of `zone`; `Permanent` when the server does not host it.
    async fn zone_id(&self, zone: &Name) -> Result<String, ProviderError> {
        if let Some(id) = self.lock_ids().get(zone) {
            return Ok(id.clone());
        }
        let mut url = self.url(&["zones"]);
        url.query_pairs_mut()
            .append_pair("zone", zone.as_str())
            .append_pair("dnssec", "false");
        let zones: Vec<ZoneInfo> = self
            .get_json(url, Kind::Read, Some(zone), &Pacer::default())
            .await?;
        let found = zones
            .into_iter()
            .find(|z| Name::parse(&z.name).is_ok_and(|n| &n == zone))
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorClass::Permanent,
                    format!("zone {zone} does not exist on the PowerDNS server"),
                )
            })?;
        self.lock_ids().insert(zone.clone(), found.id.clone());
        Ok(found.id)
    }

    /// GET of one zone, optionally of one name only; a 404 forgets the cached id.
    async fn get_zone(
        &self,
        zone: &Name,
        rrsets: bool,
        name: Option<&Name>,
        pacer: &Pacer,
    ) -> Result<ZoneInfo, ProviderError> {
        let id = self.zone_id(zone).await?;
        let mut url = self.url(&["zones", &id]);
        {
            let mut q = url.query_pairs_mut();
            if !rrsets {
                q.append_pair("rrsets", "false");
            }
            if let Some(name) = name {
                q.append_pair("rrset_name", name.as_str());
            }
        }
        let kind = if rrsets && name.is_none() {
            Kind::WholeRead
        } else {
            Kind::Read
        };
        let result = self
            .get_json::<ZoneInfo>(url, kind, Some(zone), pacer)
            .await;
        if result
            .as_ref()
            .is_err_and(|e| e.class == ErrorClass::Permanent)
        {
            self.lock_ids().remove(zone);
        }
        result
    }

    /// The RRSets at `names` (each read by its own GET) and the lowest serial seen
    /// while reading them; or, with `None`, the whole zone in one GET.
    async fn read(
        &self,
        zone: &Name,
        names: Option<&BTreeSet<Name>>,
        pacer: &Pacer,
    ) -> Result<ZoneRead, ProviderError> {
        let docs: Vec<ZoneInfo> = match names {
            Some(names) => {
                let gets: Vec<_> = names
                    .iter()
                    .map(|n| Box::pin(self.get_zone(zone, true, Some(n), pacer)))
                    .collect();
                stream::iter(gets)
                    .buffer_unordered(READ_CONCURRENCY)
                    .try_collect()
                    .await?
            }
            None => vec![self.get_zone(zone, true, None, pacer).await?],
        };
        let mut read = ZoneRead {
            // Without SOA-EDIT-API the serial does not count API writes: no counter.
            serial: if docs.iter().any(|d| d.soa_edit_api.is_empty()) {
                None
            } else {
                docs.iter().map(|d| d.serial).min()
            },
            ..ZoneRead::default()
        };
        for doc in docs {
            for rrset in doc.rrsets {
                add_rrset(&mut read, zone, rrset, names);
            }
        }
        Ok(read)
    }

    /// The zone's content at `names` (all when `None`), under the zone's lock: from
    /// the record cache when the zone's serial says it is the truth (one cheap serial
    /// GET), else read. A read of more than [`PER_NAME_READ_LIMIT`] names, of the whole
    /// zone, or one that the drift check asks for is one GET of the whole zone, which
    /// refills the cache. `f` sees the content.
    async fn with_content<T>(
        &self,
        zone: &Name,
        names: Option<&BTreeSet<Name>>,
        pacer: &Pacer,
        f: impl FnOnce(&ZoneRead) -> T,
    ) -> Result<T, ProviderError> {
        let mut full = names.is_none_or(|n| n.len() > PER_NAME_READ_LIMIT);
        // Without an entry the serial would tell nothing: go straight to the read.
        if self.cache.holds(zone) {
            let info = self.get_zone(zone, false, None, pacer).await?;
            let validity = if info.soa_edit_api.is_empty() {
                self.cache.invalidate(zone);
                Validity::Cold
            } else {
                self.cache.validate(zone, info.serial)
            };
            match validity {
                Validity::Valid => {
                    if let Some(out) = self.cache.with(zone, |r| r.map(f)) {
                        return Ok(out);
                    }
                    return Err(ProviderError::new(
                        ErrorClass::Transient,
                        "internal error: a valid record cache entry vanished",
                    ));
                }
                Validity::DriftDue => full = true,
                Validity::Unexplained {
                    cached,
                    expected,
                    now,
                } => {
                    tracing::info!(zone = %zone, cached, expected, now, "The zone serial moved for a reason this applier's writes do not explain; reading the zone again.");
                }
                Validity::Cold => {}
            }
        }
        if full {
            let read = self.read(zone, None, pacer).await?;
            self.cache.fill(zone, &read);
            return Ok(f(&read));
        }
        let read = self.read(zone, names, pacer).await?;
        Ok(f(&read))
    }
}

#[async_trait]
impl Provider for PdnsProvider {
    fn driver(&self) -> &'static str {
        "pdns"
    }

    fn capabilities(&self) -> Capabilities {
        // Preconditions are enforced by a read under the zone lock, not by PowerDNS.
        Capabilities::atomic(MAX_CHANGES_PER_BATCH, MAX_BYTES_PER_BATCH)
            .checked_by_read()
            .with_serial()
    }

    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        let zones = self.fetch_zones().await?;
        let mut names: Vec<Name> = zones
            .iter()
            .filter_map(|z| Name::parse(&z.name).ok())
            .collect();
        names.sort();
        Ok(names)
    }

    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError> {
        let info = self.get_zone(zone, false, None, &Pacer::default()).await?;
        if info.soa_edit_api.is_empty() {
            // API writes would not move the serial: it is no change counter here.
            tracing::debug!(zone = %zone, "Zone has no SOA-EDIT-API; no serial-based revalidation.");
            return Ok(None);
        }
        Ok(Some(info.serial))
    }

    fn serial_position(
        &self,
        zone: &Name,
    ) -> Option<crate::provider::record_cache::SerialPosition> {
        self.record_cache().position(zone)
    }

    async fn list_paced(
        &self,
        zone: &Name,
        names: Option<&[Name]>,
        pacer: &Pacer,
    ) -> Result<Listing, ProviderError> {
        let names: Option<BTreeSet<Name>> = names.map(|n| n.iter().cloned().collect());
        let _guard = self.zone_locks.lock(zone).await;
        self.with_content(zone, names.as_ref(), pacer, |read| Listing {
            rrsets: read
                .rrsets
                .values()
                .filter(|r| names.as_ref().is_none_or(|n| n.contains(&r.key.name)))
                .cloned()
                .collect(),
            serial: read.serial,
        })
        .await
    }

    async fn apply_paced(
        &self,
        zone: &Name,
        ops: &[RRSetOp],
        pacer: &Pacer,
    ) -> Result<(), ProviderError> {
        crate::provider::ensure_in_zone(zone, ops)?;
        let _guard = self.zone_locks.lock(zone).await;

        let names: BTreeSet<Name> = ops.iter().map(|op| op.key.name.clone()).collect();
        self.with_content(zone, Some(&names), pacer, |read| check(ops, read))
            .await??;

        let rrsets: Vec<PdnsRRSet> = ops
            .iter()
            .filter(|op| !op.is_assert())
            .map(|op| match &op.after {
                Some(after) => PdnsRRSet {
                    name: op.key.name.to_string(),
                    rtype: op.key.rtype.to_string(),
                    ttl: Some(after.ttl),
                    // Canonical values are PowerDNS content: absolute names, quoted TXT.
                    records: after
                        .values()
                        .map(|v| PdnsRecord {
                            content: v.to_string(),
                            disabled: false,
                        })
                        .collect(),
                    changetype: Some("REPLACE"),
                },
                None => PdnsRRSet {
                    name: op.key.name.to_string(),
                    rtype: op.key.rtype.to_string(),
                    ttl: None,
                    records: Vec::new(),
                    changetype: Some("DELETE"),
                },
            })
            .collect();
        if rrsets.is_empty() {
            // Only assertions, and they hold.
            return Ok(());
        }
        let body = serde_json::to_vec(&Patch { rrsets }).map_err(|e| {
            ProviderError::new(ErrorClass::Invalid, format!("cannot encode the PATCH: {e}"))
        })?;
        let id = self.zone_id(zone).await?;
        let result = self
            .call(
                Method::PATCH,
                self.url(&["zones", &id]),
                Some(body),
                Kind::Write,
                Some(zone),
                pacer,
            )
            .await;
        let err = match result {
            Ok(answer) if answer.status.is_success() => {
                // Committed: the cache follows, and expects the serial's +1.
                self.cache.committed(zone, ops);
                return Ok(());
            }
            Ok(answer) => {
                if answer.status == StatusCode::NOT_FOUND {
                    self.lock_ids().remove(zone);
                }
                answer.classify(Some(zone), true)
            }
            Err(e) => e,
        };
        // Only an answer known not to have reached PowerDNS's backend keeps the cache
        // (the quota held the request back; a 429 from something in front). Anything
        // else may have committed: read again rather than guess.
        if !(err.quota_denied || err.throttled) {
            self.cache.invalidate(zone);
        }
        Err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use dnsplane_common::RecordType;

    fn zone() -> Name {
        Name::parse("ex.test").unwrap()
    }

    #[test]
    fn parses_the_rrset_powerdns_blames() {
        use api::blamed_key;
        let k = blamed_key(
            &zone(),
            "RRset a.ex.test. IN CNAME: Conflicts with pre-existing RRset",
        )
        .unwrap();
        assert_eq!(
            (k.name.as_str(), k.rtype),
            ("a.ex.test.", RecordType::Cname)
        );
        let k = blamed_key(
            &zone(),
            "RRset m.ex.test. IN MX non-hostname content _x.ex.test.",
        )
        .unwrap();
        assert_eq!(k.rtype, RecordType::Mx);
        let k = blamed_key(
            &zone(),
            "Record c.ex.test./A 'not-an-ip': Parsing record content",
        )
        .unwrap();
        assert_eq!((k.name.as_str(), k.rtype), ("c.ex.test.", RecordType::A));
        assert!(blamed_key(&zone(), "RRset out.other.test. IN A: Name is out of zone").is_none());
        assert!(blamed_key(&zone(), "Unauthorized").is_none());
    }

    #[test]
    fn classifies_statuses() {
        let answer = |status: u16, body: &str| Answer {
            what: "PATCH /x".into(),
            status: StatusCode::from_u16(status).unwrap(),
            retry_after: Some(Duration::from_secs(3)),
            body: body.as_bytes().to_vec(),
        };
        let z = zone();
        let c = |s, b: &str, w| answer(s, b).classify(Some(&z), w).class;
        assert_eq!(
            c(422, r#"{"error":"Record c.ex.test./A 'x': bad"}"#, true),
            ErrorClass::Invalid
        );
        assert_eq!(
            c(
                422,
                r#"{"error":"RRset a.ex.test. IN CNAME: Conflicts with pre-existing RRset"}"#,
                true
            ),
            ErrorClass::Conflict
        );
        assert_eq!(c(400, "Bad Request", true), ErrorClass::Invalid);
        assert_eq!(
            c(401, r#"{"error":"Unauthorized"}"#, true),
            ErrorClass::Permanent
        );
        assert_eq!(
            c(404, r#"{"error":"Not Found"}"#, true),
            ErrorClass::Permanent
        );
        assert_eq!(
            c(409, r#"{"error":"Conflict"}"#, true),
            ErrorClass::Conflict
        );
        assert_eq!(c(502, "bad gateway", true), ErrorClass::Ambiguous);
        assert_eq!(c(502, "bad gateway", false), ErrorClass::Transient);
        assert_eq!(
            c(500, r#"{"error":"database is locked"}"#, true),
            ErrorClass::Transient
        );
        assert_eq!(c(500, "<html>proxy</html>", true), ErrorClass::Ambiguous);
        let e = answer(429, "slow down").classify(Some(&z), true);
        assert_eq!(
            (e.class, e.retry_after),
            (ErrorClass::Transient, Some(Duration::from_secs(3)))
        );
        let e = answer(422, r#"{"error":"Record c.ex.test./A 'x': bad"}"#).classify(Some(&z), true);
        assert!(e.message.contains("c.ex.test./A"), "{}", e.message);
        assert_eq!(e.key.unwrap().name.as_str(), "c.ex.test.");
    }

    #[test]
    fn debug_redacts_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "very-secret-key\n").unwrap();
        let config = |api_url: &str, key: std::path::PathBuf| PdnsConfig {
            api_url: api_url.into(),
            server_id: "localhost".into(),
            api_key_file: Some(key),
            api_key_env: None,
            timeout: Duration::from_secs(1),
        };
        let p = PdnsProvider::new(&config("http://127.0.0.1:1/api/v1/", path)).unwrap();
        let dbg = format!("{p:?}");
        assert!(!dbg.contains("very-secret-key"), "{dbg}");
        assert!(dbg.contains("/api/v1/servers/localhost"), "{dbg}");
        let e = PdnsProvider::new(&config("http://127.0.0.1:1", dir.path().join("missing")))
            .unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
    }
}
