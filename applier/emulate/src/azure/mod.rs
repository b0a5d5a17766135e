//! An Azure DNS emulator: the ARM REST API of public zones (`Microsoft.Network/
//! dnsZones`, api-version 2018-05-01) and private zones (`privateDnsZones`,
//! 2020-06-01), one record set per resource with its ETag and the `If-Match` /
//! `If-None-Match` conditions (412 `PreconditionFailed`), the ARM error body, the
//! limits (records per set, record sets per zone, TXT strings), `$top`/`nextLink`
//! paging, bearer tokens with an AAD-shaped token endpoint, ARM's per-subscription
//! read and write quotas (429, `Retry-After`, `x-ms-ratelimit-remaining-subscription-*`)
//! and opt-in faults.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use dnsplane_emulate::azure::{AzureEmulator, AzureOptions, DEFAULT_TOKEN};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let emu = AzureEmulator::start(listener, AzureOptions::default()).await?;
//! let zone_id = emu.create_zone("example.com");
//! // Point a client at emu.endpoint() (the ARM base) with
//! // `Authorization: Bearer {DEFAULT_TOKEN}`, then assert on emu.record_sets(&zone_id).
//! emu.stop().await;
//! # Ok(()) }
//! ```
//!
//! The request pipeline ([`handle`](serve::handle)): body limit → route → token →
//! api-version → subscription quota → fault rules → the call → answer. Modules:
//! [`model`] (zones, record sets), [`wire`] (their JSON), [`route`] (paths to calls),
//! [`ops`] (the calls, ETag conditions, limits), [`auth`] (tokens, the token
//! endpoint), [`throttle`] (the quota), [`errors`] (ARM error bodies), [`serve`] (the
//! pipeline), [`control`] (`/_emulator/`), [`options`].
mod auth;
mod control;
mod errors;
mod model;
mod ops;
mod options;
mod route;
mod serve;
mod throttle;
mod wire;

pub(crate) use options::validate_fault;
pub use options::{
    AzureOptions, ClientSpec, DEFAULT_CLIENT_ASSERTION, DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET,
    DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT, DEFAULT_TOKEN, ThrottleOptions,
    ZoneSeed,
};

use crate::control::ControlPlane;
use crate::error::EmulateError;
use crate::running::{Emulator, RunningEmulator, Shared};
use crate::server::Stopping;
use axum::Router;
use errors::ArmError;
use model::{Kind, Rtype, State, Zone, zone_key};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

pub use crate::stats::Stats;

/// A record set as a zone holds it, for assertions (and the control API's JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordSetView {
    /// Relative, as first written; `@` is the apex.
    pub name: String,
    #[serde(rename = "type")]
    pub rtype: String,
    pub ttl: u64,
    pub etag: String,
    /// The records in zone-file presentation form ("10 mail.example.com", "\"txt\"").
    pub records: Vec<String>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// A zone, for the control API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZoneView {
    /// The ARM resource id.
    pub id: String,
    pub name: String,
    pub private: bool,
    pub subscription: String,
    pub resource_group: String,
    pub etag: String,
    pub record_sets: usize,
}

fn zone_view(z: &Zone) -> ZoneView {
    ZoneView {
        id: wire::zone_id(z),
        name: z.name.clone(),
        private: z.kind == Kind::Private,
        subscription: z.subscription.clone(),
        resource_group: z.resource_group.clone(),
        etag: z.etag.clone(),
        record_sets: z.sets.len(),
    }
}

/// The emulator's shared state (opaque: what [`AzureEmulator`] serves).
#[derive(Debug)]
pub struct Inner {
    opts: AzureOptions,
    throttle: throttle::Throttle,
    issuer: auth::Issuer,
    /// Model, counters, fault rules, stop signal.
    shared: Shared<State>,
}

impl Inner {
    /// Makes a zone (and its resource group) without an API call; returns its id.
    fn create_zone(
        &self,
        name: &str,
        private: bool,
        sub: Option<&str>,
        rg: Option<&str>,
    ) -> Result<String, String> {
        let name = name.trim().trim_end_matches('.');
        if name.is_empty() || name.contains(char::is_whitespace) || name.contains('/') {
            return Err(format!("{name:?} is not a zone name"));
        }
        let kind = if private { Kind::Private } else { Kind::Public };
        let sub = sub.unwrap_or(&self.opts.subscription);
        let rg = rg.unwrap_or(&self.opts.resource_group);
        let mut st = self.lock();
        let key = zone_key(kind, sub, rg, name);
        if st.zones.contains_key(&key) {
            return Err(format!("zone {name} exists already in {sub}/{rg}"));
        }
        st.add_group(sub, rg);
        let z = Zone::new(kind, sub, rg, name);
        let id = wire::zone_id(&z);
        st.zones.insert(key, z);
        Ok(id)
    }

    /// The zone a control-API reference names: its ARM id, or its name (a public
    /// zone before a private one of the same name).
    fn find_zone<'s>(st: &'s mut State, r: &str) -> Option<&'s mut Zone> {
        let r = r.trim().trim_end_matches('.');
        let key = st
            .zones
            .iter()
            .filter(|(_, z)| {
                wire::zone_id(z).eq_ignore_ascii_case(r) || z.name.eq_ignore_ascii_case(r)
            })
            .map(|(k, z)| (!wire::zone_id(z).eq_ignore_ascii_case(r), k.clone()))
            .min()?
            .1;
        st.zones.get_mut(&key)
    }

    fn record_sets(&self, zone: &str) -> Option<Vec<RecordSetView>> {
        let mut st = self.lock();
        let z = Self::find_zone(&mut st, zone)?;
        Some(
            z.sets
                .values()
                .map(|s| RecordSetView {
                    name: s.name.clone(),
                    rtype: s.rtype.as_str().to_string(),
                    ttl: s.ttl,
                    etag: s.etag.clone(),
                    records: s.data.presentation(),
                    metadata: s.metadata.clone(),
                })
                .collect(),
        )
    }

    fn zones(&self) -> Vec<ZoneView> {
        self.lock().zones.values().map(zone_view).collect()
    }

    /// Writes a record set from its ARM JSON without an API call (seeds): no token,
    /// quota or faults, the same checks as a PUT.
    fn seed(&self, zone: &str, rtype: &str, name: &str, body: &[u8]) -> Result<String, ArmError> {
        let mut st = self.lock();
        let z = Self::find_zone(&mut st, zone)
            .map(|z| route::ZoneRef {
                kind: z.kind,
                sub: z.subscription.clone(),
                rg: z.resource_group.clone(),
                zone: z.name.clone(),
            })
            .ok_or_else(|| ArmError::no_parent("dnszones", zone))?;
        let rtype = Rtype::parse(rtype)
            .filter(|t| z.kind.types().contains(t))
            .ok_or_else(|| ArmError::bad_request(format!("record type {rtype:?}")))?;
        let query = std::collections::HashMap::new();
        let headers = http::HeaderMap::new();
        let cx = ops::Ctx {
            query: &query,
            headers: &headers,
            body,
            base: String::new(),
            path: "",
            opts: &self.opts,
        };
        let op = route::Op::PutSet(route::SetRef {
            zone: z,
            rtype,
            name: name.to_string(),
        });
        let reply = ops::run(&mut st, &op, &cx)?;
        Ok(reply
            .body
            .and_then(|b| b["etag"].as_str().map(str::to_string))
            .unwrap_or_default())
    }
}

impl Emulator for Inner {
    const NAME: &'static str = "AzureEmulator";
    /// The ARM base (Azure's `https://management.azure.com`).
    const BASE: &'static str = "";
    type Options = AzureOptions;

    fn build(opts: AzureOptions, stopping: Stopping) -> Result<Inner, String> {
        opts.validate()?;
        let mut state = State::default();
        state.add_group(&opts.subscription, &opts.resource_group);
        let inner = Inner {
            throttle: throttle::Throttle::new(opts.throttle.clone()),
            issuer: auth::Issuer::default(),
            shared: Shared::new(state, &opts.faults, stopping),
            opts,
        };
        for z in &inner.opts.zones {
            inner
                .create_zone(
                    &z.name,
                    z.private,
                    z.subscription.as_deref(),
                    z.resource_group.as_deref(),
                )
                .map_err(|e| format!("zones: {e}"))?;
        }
        Ok(inner)
    }

    /// The shared control API with Azure's own routes added (seeds, tokens).
    fn app() -> Router<Arc<Inner>> {
        Router::new()
            .nest("/_emulator", control::router())
            .fallback(serve::handle)
    }
}

/// A running Azure DNS emulator (see [`RunningEmulator`] for what every emulator has).
pub type AzureEmulator = RunningEmulator<Inner>;

impl RunningEmulator<Inner> {
    /// The token endpoint of `tenant`: `http://127.0.0.1:PORT/{tenant}/oauth2/v2.0/token`.
    pub fn token_url(&self, tenant: &str) -> String {
        format!("{}/{tenant}/oauth2/v2.0/token", self.endpoint())
    }

    /// Makes a public zone in the default subscription and resource group; returns
    /// its ARM id. Panics on an invalid or taken name.
    pub fn create_zone(&self, name: &str) -> String {
        self.inner
            .create_zone(name, false, None, None)
            .unwrap_or_else(|e| panic!("create_zone({name:?}): {e}"))
    }

    /// Makes a private zone in the default subscription and resource group.
    pub fn create_private_zone(&self, name: &str) -> String {
        self.inner
            .create_zone(name, true, None, None)
            .unwrap_or_else(|e| panic!("create_private_zone({name:?}): {e}"))
    }

    /// Makes a zone where asked.
    pub fn create_zone_in(
        &self,
        name: &str,
        private: bool,
        subscription: &str,
        resource_group: &str,
    ) -> String {
        self.inner
            .create_zone(name, private, Some(subscription), Some(resource_group))
            .unwrap_or_else(|e| panic!("create_zone_in({name:?}): {e}"))
    }

    /// The record sets of a zone (its ARM id, or its name), sorted by name and type;
    /// empty for an unknown zone.
    pub fn record_sets(&self, zone: &str) -> Vec<RecordSetView> {
        self.inner.record_sets(zone).unwrap_or_default()
    }

    /// Writes a record set from the JSON a PUT would carry, as another writer would,
    /// without token, quota or faults; returns its new ETag. Panics on a refused set.
    pub fn put_record_set(
        &self,
        zone: &str,
        rtype: &str,
        name: &str,
        body: &serde_json::Value,
    ) -> String {
        self.inner
            .seed(zone, rtype, name, body.to_string().as_bytes())
            .unwrap_or_else(|e| panic!("put_record_set({zone}, {rtype}, {name}): {}", e.message))
    }

    /// Issues a bearer token good for `lifetime` (as the token endpoint would).
    pub fn issue_token(&self, lifetime: Duration) -> String {
        self.inner.issuer.issue(lifetime)
    }

    /// Forgets every issued token (configured ones stay): clients must fetch anew.
    pub fn revoke_tokens(&self) {
        self.inner.issuer.revoke_all();
    }
}

/// Runs the emulator for `dnsplane emulate azure --listen ADDR [--config FILE]`:
/// reads and checks the config, binds, logs the endpoint in one line, serves until
/// Ctrl-C (or SIGTERM).
pub async fn run_azure(listen: SocketAddr, config: Option<PathBuf>) -> Result<(), EmulateError> {
    let (emu, opts) = crate::server::launch(
        listen,
        config.as_deref(),
        AzureOptions::from_file,
        AzureEmulator::start,
    )
    .await?;
    let default_token = opts.tokens.iter().any(|t| t == DEFAULT_TOKEN);
    tracing::info!(
        endpoint = %emu.endpoint(),
        subscription = %opts.subscription,
        resource_group = %opts.resource_group,
        zones = opts.zones.len(),
        faults = opts.faults.len(),
        "Azure DNS emulator listening: endpoint {}, token URL {}{}.",
        emu.endpoint(),
        emu.token_url("{tenant}"),
        if default_token {
            format!(", token {DEFAULT_TOKEN}")
        } else {
            ", tokens from the config file".to_string()
        },
    );
    crate::server::shutdown_signal().await;
    tracing::info!("Azure DNS emulator stopping.");
    emu.stop().await;
    Ok(())
}
