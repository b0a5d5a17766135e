//! The `route53` driver: AWS Route 53's REST-XML API (`2013-04-01`), or anything that
//! speaks it (`endpoint`: `dnsplane emulate route53`, a private endpoint).
//!
//! Route 53 enforces preconditions itself, atomically per change batch: a CREATE fails
//! when the set exists, a DELETE unless TTL and values match exactly. So each op is
//! sent as its own compare-and-swap, and [`Provider::apply`] needs no read first:
//!
//! | op | changes sent |
//! |---|---|
//! | create | `CREATE after` |
//! | delete | `DELETE before` |
//! | update | `DELETE before`, `CREATE after` |
//! | assert present | `DELETE before`, `CREATE before` (a no-op that fails unless it holds) |
//! | assert absent | checked by a read of the name first (Route 53 cannot say "absent") |
//!
//! A server that checks each CREATE against the zone as it was before the batch
//! (moto, LocalStack) gets `UPSERT` for a CREATE that follows its set's DELETE, once it
//! was seen refusing one ([`upsert`]).
//!
//! A refused batch is `InvalidChangeBatch` naming every failing change
//! ([`wire::failures`]): a conflict when the zone holds something else, invalid when
//! the request is wrong. Throttling comes as HTTP 400 `Throttling` (transient, fed back
//! to the quota) or `PriorRequestNotComplete` (transient).
//!
//! Route 53 has no change counter. The driver trusts its own writes: a zone read whole
//! once is kept ([`RecordCache`]) and follows every batch this driver commits, and
//! [`Provider::serial`] is the cache's own count, so a steady-state sync costs no
//! listing at all. Others' writes are found by the drift check (the zone read whole
//! again every `record_cache_drift_check`, spread over zones and paced per account)
//! or as conflicts, whose read of the names they touch also corrects the cache. A
//! stale entry is never dangerous here: Route 53 itself refuses a write whose
//! precondition does not hold. A read of names always asks Route 53, from the first
//! of them in its order (labels reversed) up to 300 sets at a time, so names that lie
//! together cost one request ([`cover`]).
//!
//! Route 53 compares a DELETE's values literally; a set written by someone else in a
//! spelling other than dnsplane's canonical one (an upper-case target, a long IPv6
//! form) is deleted with the spelling the last read found ([`Spellings`]).
//!
//! Routing-policy sets (`SetIdentifier` with a weighted, latency, failover,
//! geolocation or multivalue policy) and aliases (`AliasTarget`) are RRSets in a set,
//! with the properties of `common::routing::aws` ([`sets`]); a DELETE repeats the set
//! exactly as read. Routing dnsplane does not model (CIDR, geoproximity, traffic
//! policies) marks its key opaque, so dnsplane never writes over it.
use crate::provider::call::Pacer;
use crate::provider::kit::counted::{self, CountedZone};
use crate::provider::precondition::ZoneRead;
use crate::provider::record_cache::RecordCache;
use crate::provider::{Capabilities, ErrorClass, Provider, ProviderError};
use async_trait::async_trait;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use dnsplane_common::{Name, RRSetOp};
use reqwest::{Method, Url};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

mod config;
mod cover;
pub mod credentials;
mod listing;
mod sets;
mod upsert;
mod wire;
mod write;
mod zones;

pub use config::{DEFAULT_ENDPOINT, DEFAULT_STS_ENDPOINT, Route53Config, ZoneVisibility};
use credentials::{CredentialChain, EnvReader};
use sets::Spellings;
use upsert::UpsertFallback;

/// Record values one change batch may carry: Route 53's 1,000 `ResourceRecord`
/// elements per request. Every op is a DELETE of the set as it was and a CREATE of
/// the set as it will be, and both count ([`Measure::Values`](crate::provider::Measure)).
pub const MAX_VALUES_PER_BATCH: usize = 1000;
/// Value characters one change batch may carry: Route 53's 32,000 per request, less
/// 1,000 for a set deleted in the spelling Route 53 holds it in, which may be longer
/// than dnsplane's.
pub const MAX_VALUE_CHARS_PER_BATCH: usize = 31_000;
/// Route 53's largest page of `ListResourceRecordSets`.
const PAGE: usize = 300;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Visibility {
    Public,
    Private,
}

#[derive(Clone)]
pub struct Route53Provider {
    http: reqwest::Client,
    /// `…/2013-04-01` (no trailing slash).
    api: Url,
    region: String,
    visibility: ZoneVisibility,
    /// Ids from the config, then those found by name.
    zone_ids: Arc<Mutex<HashMap<Name, String>>>,
    credentials: Arc<CredentialChain>,
    spellings: Arc<Spellings>,
    /// Each zone's sets as last read whole, kept by this driver's own writes and by
    /// its reads of names; read whole again by the drift check.
    cache: Arc<RecordCache>,
    wait_insync: Option<Duration>,
    /// Set once the server refused a CREATE after the DELETE of its set in one batch
    /// (moto, LocalStack): such CREATEs are sent as UPSERT from then on ([`upsert`]).
    upsert: Arc<UpsertFallback>,
}

impl std::fmt::Debug for Route53Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route53Provider")
            .field("api", &self.api.as_str())
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

/// Why a `route53` account could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Route53SetupError {
    #[error("route53 endpoint {url:?}: {problem}")]
    Url { url: String, problem: String },
    #[error("route53 HTTP client: {0}")]
    Client(String),
}

impl Route53Provider {
    /// Builds the client; reads no credentials and makes no request yet.
    pub fn new(cfg: &Route53Config) -> Result<Self, Route53SetupError> {
        Self::with_env(cfg, credentials::process_env())
    }

    /// As [`new`](Self::new), reading the environment through `env` (tests).
    pub fn with_env(cfg: &Route53Config, env: EnvReader) -> Result<Self, Route53SetupError> {
        let url_err = |problem: String| Route53SetupError::Url {
            url: cfg.endpoint.clone(),
            problem,
        };
        let mut base = cfg.endpoint.trim().trim_end_matches('/').to_string();
        if let Some(stripped) = base.strip_suffix("/2013-04-01") {
            base = stripped.to_string();
        }
        let mut api = Url::parse(&base).map_err(|e| url_err(e.to_string()))?;
        if !matches!(api.scheme(), "http" | "https") {
            return Err(url_err("the scheme must be http or https".into()));
        }
        api.path_segments_mut()
            .map_err(|()| url_err("cannot be a base URL".into()))?
            .pop_if_empty()
            .push("2013-04-01");
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .connect_timeout(cfg.timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| Route53SetupError::Client(e.to_string()))?;
        let zone_ids = cfg
            .zone_ids
            .iter()
            .filter_map(|(z, id)| wire::bare_zone_id(id).map(|id| (z.clone(), id.to_string())))
            .collect();
        Ok(Route53Provider {
            credentials: Arc::new(CredentialChain::new(
                env,
                cfg.profile.clone(),
                cfg.credentials_file.clone(),
                cfg.sts_endpoint.clone(),
                http.clone(),
            )),
            http,
            api,
            region: cfg.region.trim().to_string(),
            visibility: cfg.zone_visibility,
            zone_ids: Arc::new(Mutex::new(zone_ids)),
            spellings: Arc::default(),
            cache: Arc::default(),
            wait_insync: cfg.wait_insync.then_some(cfg.insync_timeout),
            upsert: Arc::default(),
        })
    }

    /// Runs the record cache's drift check every `period` instead of the default
    /// (`0s`: no cache, every listing reads the zone).
    #[must_use]
    pub fn with_drift_check(mut self, period: Duration) -> Self {
        self.cache = Arc::new(RecordCache::new(period));
        self
    }

    /// The record cache, for its counters.
    pub fn record_cache(&self) -> &RecordCache {
        &self.cache
    }

    fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Url {
        crate::provider::kit::http::url(&self.api, segments, query)
    }

    /// One signed HTTP exchange under the call's quota; a non-2xx answer classified.
    async fn call(
        &self,
        method: Method,
        url: Url,
        body: Option<String>,
        zone: Option<&Name>,
        pacer: &Pacer,
    ) -> Result<String, ProviderError> {
        self.exchange(method, url, body, zone, pacer)
            .await
            .map_err(|(e, _)| e)
    }

    /// [`call`](Self::call), a refusal given with the answer's body.
    async fn exchange(
        &self,
        method: Method,
        url: Url,
        body: Option<String>,
        zone: Option<&Name>,
        pacer: &Pacer,
    ) -> Result<String, (ProviderError, String)> {
        let unanswered = |e: ProviderError| (e, String::new());
        let write = crate::provider::kit::http::admit(pacer, &method)
            .await
            .map_err(unanswered)?;
        let creds = self.credentials.get().await.map_err(unanswered)?;
        let what = format!("{method} {}", url.path());
        let body = body.unwrap_or_default();
        let signed = self.sign(&method, &url, &body, &creds).map_err(|e| {
            unanswered(ProviderError::new(
                ErrorClass::Invalid,
                format!("{what}: cannot sign: {e}"),
            ))
        })?;
        let mut req = self.http.request(method, url);
        for (k, v) in signed {
            let mut value = reqwest::header::HeaderValue::from_str(&v).map_err(|_| {
                unanswered(ProviderError::new(
                    ErrorClass::Invalid,
                    format!("{what}: cannot sign"),
                ))
            })?;
            // The signature and the session token: never printed by the HTTP stack.
            value.set_sensitive(
                k.eq_ignore_ascii_case("authorization")
                    || k.eq_ignore_ascii_case("x-amz-security-token"),
            );
            req = req.header(k, value);
        }
        req = crate::provider::kit::http::traced(req);
        if !body.is_empty() {
            req = req.header("content-type", "application/xml").body(body);
        }
        let transport =
            |e: reqwest::Error| unanswered(crate::provider::transport_error(&what, &e, write));
        let resp = req.send().await.map_err(transport)?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(transport)?;
        if (200..300).contains(&status) {
            return Ok(text);
        }
        let err = wire::classify(status, &text, &what, zone, write);
        if matches!(status, 401 | 403) {
            // A rotated key file or renewed token is read on the next request.
            self.credentials.forget().await;
        }
        if err.class == ErrorClass::Permanent
            && status == 404
            && let Some(z) = zone
        {
            self.lock_ids().remove(z);
        }
        Err((err, text))
    }

    /// The SigV4 headers of a request (`host` is reqwest's; the rest is added).
    fn sign(
        &self,
        method: &Method,
        url: &Url,
        body: &str,
        creds: &credentials::AwsCredentials,
    ) -> Result<Vec<(String, String)>, String> {
        let identity = aws_credential_types::Credentials::new(
            &creds.access_key_id,
            &creds.secret_access_key,
            creds.session_token.clone(),
            creds.expires,
            "dnsplane",
        )
        .into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("route53")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| e.to_string())?
            .into();
        let host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        let mut headers = vec![("host", host.as_str())];
        if !body.is_empty() {
            headers.push(("content-type", "application/xml"));
        }
        let signable = SignableRequest::new(
            method.as_str(),
            url.as_str(),
            headers.into_iter(),
            SignableBody::Bytes(body.as_bytes()),
        )
        .map_err(|e| e.to_string())?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| e.to_string())?
            .into_parts();
        Ok(instructions
            .headers()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }

    fn lock_ids(&self) -> std::sync::MutexGuard<'_, HashMap<Name, String>> {
        self.zone_ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Polls `GetChange` until the change is `INSYNC`, at most `limit`.
    async fn wait_insync(
        &self,
        change: &str,
        limit: Duration,
        pacer: &Pacer,
    ) -> Result<(), ProviderError> {
        let id = change.trim_start_matches("/change/");
        let until = Instant::now() + limit;
        let mut delay = Duration::from_millis(500);
        loop {
            let url = self.url(&["change", id], &[]);
            let body = self.call(Method::GET, url, None, None, pacer).await?;
            let answer: wire::ChangeAnswer = decode(&body, "GetChange")?;
            if answer.change_info.status == "INSYNC" {
                return Ok(());
            }
            if Instant::now() + delay > until {
                tracing::warn!(change = %id, waited_ms = limit.as_millis() as u64, "Route 53 accepted the change but it was not INSYNC within insync_timeout; reporting it applied (it committed).");
                return Ok(());
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }
}

/// Decodes an XML answer, naming the call on failure.
fn decode<T: serde::de::DeserializeOwned>(body: &str, what: &str) -> Result<T, ProviderError> {
    quick_xml::de::from_str(body).map_err(|e| {
        ProviderError::new(
            ErrorClass::Transient,
            format!("{what}: cannot decode Route 53's answer: {e}"),
        )
    })
}

/// Listings from the self-counted cache. Route 53 has no serial; the cache
/// counts what this applier knows ([`crate::provider::kit::counted`]), so that a
/// planner that saw it can skip a listing (others' writes show at the next drift
/// check, or as conflicts, which read the names they touch).
#[async_trait]
impl counted::CountedZone for Route53Provider {
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
impl Provider for Route53Provider {
    fn driver(&self) -> &'static str {
        "route53"
    }

    fn capabilities(&self) -> Capabilities {
        // The serial is the record cache's own count (see `fill`), not Route 53's.
        Capabilities::atomic(MAX_VALUES_PER_BATCH, MAX_VALUE_CHARS_PER_BATCH)
            .measured_by_values()
            .with_serial()
            .with_sets()
            .with_properties(sets::PROPERTIES)
    }

    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        let mut names: Vec<Name> = self
            .hosted_zones(None, None)
            .await?
            .iter()
            .filter(|z| self.visible(z))
            .filter_map(|z| Name::parse(&wire::decode_name(&z.name)).ok())
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn counted(&self) -> Option<&dyn CountedZone> {
        Some(self)
    }

    fn notes(&self) -> Vec<String> {
        if self.upsert.on() {
            vec![upsert::NOTE.to_string()]
        } else {
            Vec::new()
        }
    }

    async fn apply_paced(
        &self,
        zone: &Name,
        ops: &[RRSetOp],
        pacer: &Pacer,
    ) -> Result<(), ProviderError> {
        self.write(zone, ops, pacer).await
    }
}
