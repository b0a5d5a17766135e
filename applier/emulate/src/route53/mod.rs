//! An AWS Route 53 emulator: REST-XML on `/2013-04-01/…`, SigV4-signed, with AWS's
//! atomic change batches, exact DELETEs, error texts and statuses, listing order and
//! paging, PENDING→INSYNC, a per-account request quota, and opt-in faults.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use dnsplane_emulate::route53::{Route53Emulator, Route53Options};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let emu = Route53Emulator::start(listener, Route53Options::default()).await?;
//! let zone = emu.create_zone("example.com", false);
//! // Point a client at emu.endpoint() with DEFAULT_ACCESS_KEY_ID / DEFAULT_SECRET_ACCESS_KEY,
//! // region us-east-1, then assert on emu.rrsets(&zone).
//! emu.stop().await;
//! # Ok(()) }
//! ```
//!
//! The request pipeline (`handle`): body size limit → route → SigV4 → quota → fault
//! rules → the call → answer. Modules: `names` (DNS names, listing order),
//! `values` (record value checks), `model` (zones, record sets, changes), `batch`
//! (the change-batch engine), `wire` (XML in and out), `sigv4` (signatures),
//! `errors` (error answers), `ops` (the calls), `control` (`/_emulator/`).
mod batch;
mod control;
mod errors;
mod model;
mod names;
mod ops;
mod options;
mod sigv4;
mod unimplemented;
mod values;
mod wire;

use crate::control::ControlPlane;
use crate::error::EmulateError;
use crate::fault::{FaultAction, FaultRule};
use crate::quota::Quota;
use crate::running::{Emulator, RunningEmulator, Shared, Terminal, decide_faults, terminal_fault};
use crate::server::{self, ConnKill, Stopping};
use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State as AxState};
use axum::response::{IntoResponse, Response};
use errors::ApiError;
use ops::{Ctx, Op};
pub use options::{
    Credential, DEFAULT_ACCESS_KEY_ID, DEFAULT_SECRET_ACCESS_KEY, MAX_BODY_BYTES, Route53Options,
    ZoneSeed,
};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

pub use crate::stats::Stats;

/// A record set as a zone holds it, for assertions (and the control API's JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RRSetView {
    /// Stored form, as ListResourceRecordSets returns it: lower case, trailing dot,
    /// `*` as `\052`.
    pub name: String,
    #[serde(rename = "type")]
    pub rtype: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_identifier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
    /// The values as given (TXT keeps its quotes).
    #[serde(default)]
    pub values: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<AliasView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geo_location: Option<GeoLocationView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_value_answer: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_id: Option<String>,
}

/// An alias target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AliasView {
    pub hosted_zone_id: String,
    pub dns_name: String,
    pub evaluate_target_health: bool,
}

/// A geolocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeoLocationView {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continent_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdivision_code: Option<String>,
}

impl From<&model::RRSet> for RRSetView {
    fn from(r: &model::RRSet) -> RRSetView {
        RRSetView {
            name: r.name.clone(),
            rtype: r.rtype.clone(),
            set_identifier: r.set_identifier.clone(),
            ttl: r.ttl,
            values: r.records.clone(),
            alias: r.alias.as_ref().map(|a| AliasView {
                hosted_zone_id: a.hosted_zone_id.clone(),
                dns_name: a.dns_name.clone(),
                evaluate_target_health: a.evaluate_target_health,
            }),
            weight: r.weight,
            region: r.region.clone(),
            failover: r.failover.clone(),
            geo_location: r.geo.as_ref().map(|g| GeoLocationView {
                continent_code: g.continent.clone(),
                country_code: g.country.clone(),
                subdivision_code: g.subdivision.clone(),
            }),
            multi_value_answer: r.multi_value_answer,
            health_check_id: r.health_check_id.clone(),
        }
    }
}

/// A zone, for the control API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZoneView {
    /// Bare id, `Z…`.
    pub id: String,
    /// Trailing dot.
    pub name: String,
    pub private: bool,
    pub record_set_count: usize,
}

/// The emulator's shared state (opaque: what [`Route53Emulator`] serves).
#[derive(Debug)]
pub struct Inner {
    opts: Route53Options,
    /// `reject_values`, changeable while serving.
    reject_values: Mutex<Vec<String>>,
    quota: Quota,
    /// Model, counters, fault rules, stop signal.
    shared: Shared<model::State>,
}

impl Inner {
    /// The values a CREATE or UPSERT may not carry now.
    pub(crate) fn rejected_values(&self) -> Vec<String> {
        self.reject_values
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn count_commit(&self) {
        self.stats().changes_committed += 1;
    }

    /// Creates a zone directly (tests' shortcut, config seeds, control API).
    fn create_zone(&self, name: &str, private: bool, id: Option<&str>) -> Result<String, String> {
        let stored = names::parse_name(name.trim()).map_err(|p| p.message(name))?;
        if stored == "." {
            return Err("the root is not a zone".into());
        }
        let mut st = self.lock();
        let id = match id {
            Some(id) if st.zones.contains_key(id) => {
                return Err(format!("zone id {id} is already taken"));
            }
            Some(id) => id.to_string(),
            None => st.new_zone_id(),
        };
        let caller_reference = format!("dnsplane-emulate-{id}");
        let vpc = private.then(|| model::Vpc {
            region: "us-east-1".into(),
            id: "vpc-00000000000000000".into(),
        });
        let zone = model::Zone::new(id.clone(), stored, caller_reference.clone(), None, vpc);
        st.caller_refs.insert(caller_reference);
        st.zones.insert(id.clone(), zone);
        Ok(id)
    }

    fn rrsets(&self, zone_id: &str) -> Option<Vec<RRSetView>> {
        let st = self.lock();
        st.zones
            .get(model::bare_zone_id(zone_id))
            .map(|z| z.rrsets.values().map(RRSetView::from).collect())
    }

    fn zones(&self) -> Vec<ZoneView> {
        self.lock()
            .zones_by_name()
            .into_iter()
            .map(|z| ZoneView {
                id: z.id.clone(),
                name: z.name.clone(),
                private: z.private,
                record_set_count: z.rrsets.len(),
            })
            .collect()
    }
}

impl Emulator for Inner {
    const NAME: &'static str = "Route53Emulator";
    /// The parent of `/2013-04-01`.
    const BASE: &'static str = "";
    type Options = Route53Options;

    fn build(opts: Route53Options, stopping: Stopping) -> Result<Inner, String> {
        opts.validate()?;
        let inner = Inner {
            quota: Quota::new(opts.rate, opts.burst),
            shared: Shared::new(model::State::default(), &opts.faults, stopping),
            reject_values: Mutex::new(opts.reject_values.clone()),
            opts,
        };
        for z in &inner.opts.zones {
            inner.create_zone(&z.name, z.private, z.id.as_deref())?;
        }
        Ok(inner)
    }

    fn app() -> Router<Arc<Inner>> {
        crate::control::with_api(handle)
    }
}

/// A running Route 53 emulator (see [`RunningEmulator`] for what every emulator has).
pub type Route53Emulator = RunningEmulator<Inner>;

impl RunningEmulator<Inner> {
    /// Replaces the values a CREATE or UPSERT may not carry (see
    /// [`Route53Options::reject_values`]).
    pub fn set_reject_values(&self, values: Vec<String>) {
        *self
            .inner
            .reject_values
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = values;
    }

    /// Creates a zone without an API call; returns its id (`Z…`, no prefix). A private
    /// zone gets a made-up VPC. Panics on a name that is not a valid DNS name.
    pub fn create_zone(&self, name: &str, private: bool) -> String {
        self.inner
            .create_zone(name, private, None)
            .unwrap_or_else(|e| panic!("create_zone({name:?}): {e}"))
    }

    /// The record sets of a zone (id with or without `/hostedzone/`), in
    /// ListResourceRecordSets order; empty for an unknown zone.
    pub fn rrsets(&self, zone_id: &str) -> Vec<RRSetView> {
        self.inner.rrsets(zone_id).unwrap_or_default()
    }
}

/// Runs the emulator for `dnsplane emulate route53 --listen ADDR [--config FILE]`:
/// reads and checks the config, binds, logs the endpoint and credentials in one line,
/// serves until Ctrl-C (or SIGTERM).
pub async fn run_route53(listen: SocketAddr, config: Option<PathBuf>) -> Result<(), EmulateError> {
    let (emu, opts) = server::launch(
        listen,
        config.as_deref(),
        Route53Options::from_file,
        Route53Emulator::start,
    )
    .await?;
    let keys: Vec<&str> = opts
        .credentials
        .iter()
        .map(|c| c.access_key_id.as_str())
        .collect();
    let default_secret = opts.credentials.iter().any(|c| {
        c.access_key_id == DEFAULT_ACCESS_KEY_ID && c.secret_access_key == DEFAULT_SECRET_ACCESS_KEY
    });
    tracing::info!(
        endpoint = %emu.endpoint(),
        region = sigv4::REGION,
        access_key_ids = %keys.join(","),
        secret = if default_secret { DEFAULT_SECRET_ACCESS_KEY } else { "<from the config file>" },
        zones = opts.zones.len(),
        faults = opts.faults.len(),
        "Route 53 emulator listening: endpoint {}, region us-east-1, access key {}{}.",
        emu.endpoint(),
        keys.join(","),
        if default_secret {
            format!(", secret {DEFAULT_SECRET_ACCESS_KEY}")
        } else {
            String::new()
        },
    );
    server::shutdown_signal().await;
    tracing::info!("Route 53 emulator stopping.");
    emu.stop().await;
    Ok(())
}

fn request_id() -> String {
    let mut rng = rand::rng();
    let b: [u8; 16] = rng.random();
    let h = hex::encode(b);
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

fn xml_response(status: u16, body: String, request_id: &str) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::OK);
    let h = resp.headers_mut();
    h.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/xml"),
    );
    if let Ok(v) = http::HeaderValue::from_str(request_id) {
        h.insert("x-amzn-requestid", v);
    }
    resp
}

fn error_response(e: &ApiError, request_id: &str) -> Response {
    let mut resp = xml_response(e.status, e.body(request_id), request_id);
    if let Some(after) = e.retry_after {
        let secs = after.as_secs_f64().ceil() as u64;
        resp.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_str(&secs.to_string()).expect("digits"),
        );
    }
    resp
}

/// The answer a terminal fault rule gives, in Route 53's words.
fn fault_error(rule: &FaultRule) -> ApiError {
    let mut e = match rule.action {
        FaultAction::Throttle => ApiError::throttling(),
        FaultAction::PriorRequestNotComplete => ApiError::prior_request_not_complete(),
        FaultAction::AmbiguousAfterCommit => ApiError::server(rule.status.unwrap_or(502)),
        _ => ApiError::server(rule.status.unwrap_or(500)),
    };
    if let Some(s) = rule.status {
        e.status = s;
        e.sender = s < 500;
    }
    if let Some(c) = &rule.code {
        e.code = c.clone();
    }
    if let Some(m) = &rule.message {
        e.message = m.clone();
    }
    e.retry_after = rule.retry_after;
    e
}

/// Every request outside `/_emulator/`.
async fn handle(
    AxState(inner): AxState<Arc<Inner>>,
    ConnectInfo(kill): ConnectInfo<ConnKill>,
    req: Request,
) -> Response {
    let rid = request_id();
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            let e = ApiError::new(
                413,
                "RequestEntityTooLarge",
                format!(
                    "Request body is larger than the {MAX_BODY_BYTES} bytes the emulator accepts."
                ),
            );
            return error_response(&e, &rid);
        }
    };
    let raw_path = parts.uri.path();
    let Some(op) = Op::route(&parts.method, raw_path) else {
        // A Route 53 call the emulator does not answer: 501 naming it (a 404 would
        // read as "no such zone"); anything else is no Route 53 call at all.
        let segs: Vec<&str> = raw_path
            .strip_prefix("/2013-04-01/")
            .map(|r| r.trim_end_matches('/').split('/').collect())
            .unwrap_or_default();
        let e = match unimplemented::operation(parts.method.as_str(), &segs) {
            Some(name) => ApiError::new(
                501,
                "NotImplemented",
                format!(
                    "The Route 53 emulator does not implement {name} ({} {raw_path}).",
                    parts.method
                ),
            ),
            None => ApiError::new(
                404,
                "UnknownOperationException",
                format!(
                    "The Route 53 emulator has no operation for {} {raw_path}",
                    parts.method
                ),
            ),
        };
        return error_response(&e, &rid);
    };
    *inner
        .stats()
        .requests
        .entry(op.name().to_string())
        .or_default() += 1;

    // Authentication.
    let signed = sigv4::Signed {
        method: parts.method.as_str(),
        raw_path,
        raw_query: parts.uri.query(),
        headers: &parts.headers,
        body: &body,
    };
    let account = if inner.opts.verify_signatures {
        match sigv4::verify(&signed, &inner.opts.credentials, SystemTime::now()) {
            Ok(key) => key,
            Err(e) => {
                inner.stats().auth_failures += 1;
                tracing::debug!(code = %e.code, op = op.name(), "Request refused: {}.", e.message);
                return error_response(&e, &rid);
            }
        }
    } else {
        sigv4::claimed_key(&parts.headers).unwrap_or_else(|| "anonymous".into())
    };

    // Quota.
    if inner.quota.check(&account).is_err() {
        inner.stats().throttled += 1;
        return error_response(&ApiError::throttling(), &rid);
    }

    // Faults.
    let zone_id = op.zone_id(&inner);
    let zone_name = zone_id
        .as_ref()
        .and_then(|id| inner.lock().zones.get(id).map(|z| z.name.clone()));
    let prefixed = zone_id.as_ref().map(|id| format!("/hostedzone/{id}"));
    let keys: Vec<&str> = [
        zone_id.as_deref(),
        prefixed.as_deref(),
        zone_name.as_deref(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let decision = decide_faults(&*inner, op.fault_op(), op.name(), &keys);
    if !inner.stopping().sleep(decision.delay_before).await {
        return error_response(&ApiError::server(503), &rid);
    }

    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let base_url = format!("http://{host}");
    let query = sigv4::parse_query(parts.uri.query().unwrap_or(""));
    let ctx = Ctx {
        query: &query,
        body: &body,
        pending_forever: decision.pending_forever,
        base_url: &base_url,
    };

    let commit = || {
        let _ = inner.run(&op, &ctx);
    };
    if let Some(t) = terminal_fault(&*inner, &decision, &kill, commit).await {
        return match t {
            Terminal::Timeout => error_response(&ApiError::server(504), &rid),
            Terminal::Fault(rule) => error_response(&fault_error(rule), &rid),
        };
    }

    let result = inner.run(&op, &ctx);
    inner.stopping().sleep(decision.delay_after).await;
    match result {
        Ok(reply) => {
            let mut resp = xml_response(reply.status, reply.body, &rid);
            if let Some(loc) = reply.location
                && let Ok(v) = http::HeaderValue::from_str(&loc)
            {
                resp.headers_mut().insert(http::header::LOCATION, v);
            }
            resp
        }
        Err(e) => {
            tracing::debug!(code = %e.code, op = op.name(), "Request answered with an error.");
            error_response(&e, &rid)
        }
    }
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn options_from_toml() {
        let o: Route53Options = toml::from_str(
            "rate = 0\ninsync_after = \"250ms\"\n[[credentials]]\naccess_key_id = \"AK\"\nsecret_access_key = \"S\"\n\
             [[zones]]\nname = \"example.com\"\n[[faults]]\naction = \"throttle\"\nop = \"change\"\ntimes = 1\n",
        )
        .unwrap();
        assert_eq!(o.rate, 0.0);
        assert_eq!(o.burst, 5);
        assert_eq!(o.insync_after, Duration::from_millis(250));
        assert_eq!(o.credentials, vec![Credential::new("AK", "S")]);
        assert!(o.validate().is_ok());
        let d: Route53Options = toml::from_str("").unwrap();
        assert_eq!(d, Route53Options::default());
        assert!(toml::from_str::<Route53Options>("rat = 1").is_err());
        let bad: Route53Options =
            toml::from_str("[[faults]]\naction = \"throttle\"\nop = \"nope\"\n").unwrap();
        assert!(bad.validate().unwrap_err().starts_with("faults[0].op:"));
        let c: Credential = ("a", "b").into();
        assert!(!format!("{c:?}").contains('b') || format!("{c:?}").contains("redacted"));
    }

    #[test]
    fn request_ids_look_like_uuids() {
        let id = request_id();
        assert_eq!(id.len(), 36);
        assert_eq!(id.matches('-').count(), 4);
    }
}
