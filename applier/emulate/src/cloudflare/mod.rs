//! A Cloudflare DNS API emulator: JSON on `/client/v4/…` with API-token
//! (`Authorization: Bearer`) authentication, Cloudflare's per-record model (ids,
//! `proxied`, TTL 1 = automatic, `comment`, `tags`), the all-or-nothing batch endpoint
//! run deletes → patches → puts → posts with the first error only, the plan's batch
//! limit, Cloudflare's error codes and texts, real paging (`result_info`), the
//! 1,200-requests-per-5-minutes rate limit with its five-minute block and `Ratelimit`
//! headers, and opt-in faults.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use dnsplane_emulate::cloudflare::{CloudflareEmulator, CloudflareOptions, DEFAULT_TOKEN};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let emu = CloudflareEmulator::start(listener, CloudflareOptions::default()).await?;
//! let zone_id = emu.create_zone("example.com");
//! // Point a client at emu.endpoint() with `Authorization: Bearer {DEFAULT_TOKEN}`,
//! // then assert on emu.records(&zone_id).
//! emu.stop().await;
//! # Ok(()) }
//! ```
//!
//! The request pipeline ([`handle`]): body size limit → route → token → rate limits →
//! fault rules → the call → answer. Modules: [`model`] (zones and records),
//! [`records`] (building and checking a record), [`batch`] (the batch endpoint),
//! [`auth`] (tokens), [`ratelimit`] (the limits and their headers), [`errors`] (error
//! answers), [`ops`] (the calls), [`control`] (`/_emulator/`), [`options`] (the plan,
//! seeds, tokens, limits and faults).
mod auth;
mod batch;
mod control;
mod errors;
mod model;
mod ops;
mod options;
mod ratelimit;
mod records;
mod respond;
mod structured;

use respond::{error_response, fault_error, json_response, parse_query};

pub use auth::TokenSpec;
pub(crate) use options::validate_fault;
pub use options::{CloudflareOptions, Plan, ZoneSeed};
pub use ratelimit::RateLimitOptions;

use crate::control::ControlPlane;
use crate::error::EmulateError;
use crate::quota::Quota;
use crate::running::{Emulator, RunningEmulator, Shared, Terminal, decide_faults, terminal_fault};
use crate::server::{self, ConnKill, Stopping};
use axum::Router;
use axum::extract::{ConnectInfo, Request, State as AxState};
use axum::response::Response;
use errors::ApiError;
use ops::{BASE, Ctx, Op};
use ratelimit::{RateLimiter, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The token the default options accept.
pub const DEFAULT_TOKEN: &str = "emulator-token";
/// The account zones belong to unless created with another.
pub const DEFAULT_ACCOUNT_ID: &str = "0000000000000000000000000000acc0";
/// Largest request body accepted (a 3,500-record batch fits several times).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

pub use crate::stats::Stats;

/// A record as a zone holds it, for assertions (and the control API's JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordView {
    pub id: String,
    /// Fully qualified, lower case, no trailing dot.
    pub name: String,
    #[serde(rename = "type")]
    pub rtype: String,
    /// As the API returns it.
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// 1 = automatic.
    pub ttl: u32,
    pub proxied: bool,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
}

impl From<&model::Record> for RecordView {
    fn from(r: &model::Record) -> RecordView {
        RecordView {
            id: r.id.clone(),
            name: r.name.clone(),
            rtype: r.rtype.clone(),
            content: r.content.content(),
            priority: r.content.priority(),
            data: r.content.data(),
            ttl: r.ttl,
            proxied: r.proxied,
            comment: r.comment.clone(),
            tags: r.tags.clone(),
        }
    }
}

/// A zone, for the control API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZoneView {
    pub id: String,
    pub name: String,
    pub record_count: usize,
}

/// The emulator's shared state (opaque: what [`CloudflareEmulator`] serves).
#[derive(Debug)]
pub struct Inner {
    opts: CloudflareOptions,
    limiter: RateLimiter,
    per_ip: Quota,
    /// Model, counters, fault rules, stop signal.
    shared: Shared<model::State>,
}

impl Inner {
    fn records(&self, zone_id: &str) -> Option<Vec<RecordView>> {
        let st = self.lock();
        st.zones
            .get(zone_id)
            .map(|z| z.sorted().into_iter().map(RecordView::from).collect())
    }

    fn zones(&self) -> Vec<ZoneView> {
        let st = self.lock();
        let mut v: Vec<ZoneView> = st
            .zones
            .values()
            .map(|z| ZoneView {
                id: z.id.clone(),
                name: z.name.clone(),
                record_count: z.records.len(),
            })
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }
}

impl Emulator for Inner {
    const NAME: &'static str = "CloudflareEmulator";
    /// `/client/v4`, the API base.
    const BASE: &'static str = BASE;
    type Options = CloudflareOptions;

    fn build(opts: CloudflareOptions, stopping: Stopping) -> Result<Inner, String> {
        opts.validate()?;
        let ip_rate = opts.rate_limit.per_ip_per_second;
        let inner = Inner {
            limiter: RateLimiter::new(opts.rate_limit.clone()),
            per_ip: Quota::new(ip_rate, ip_rate.ceil() as u32),
            shared: Shared::new(model::State::default(), &opts.faults, stopping),
            opts,
        };
        for z in &inner.opts.zones {
            inner
                .create_zone(&z.name, z.id.as_deref(), None)
                .map_err(|e| format!("zones: {}", e.message))?;
        }
        Ok(inner)
    }

    fn app() -> Router<Arc<Inner>> {
        crate::control::with_api(handle)
    }
}

/// A running Cloudflare emulator (see [`RunningEmulator`] for what every emulator has).
pub type CloudflareEmulator = RunningEmulator<Inner>;

impl RunningEmulator<Inner> {
    /// Creates a zone without an API call; returns its id (32 hex digits). Panics on
    /// an invalid or taken name.
    pub fn create_zone(&self, name: &str) -> String {
        self.inner
            .create_zone(name, None, None)
            .unwrap_or_else(|e| panic!("create_zone({name:?}): {}", e.message))
    }

    /// The records of a zone in listing order; empty for an unknown zone.
    pub fn records(&self, zone_id: &str) -> Vec<RecordView> {
        self.inner.records(zone_id).unwrap_or_default()
    }
}

/// Runs the emulator for `dnsplane emulate cloudflare --listen ADDR [--config FILE]`:
/// reads and checks the config, binds, logs the endpoint (and the default token, when
/// it is the one accepted) in one line, serves until Ctrl-C (or SIGTERM).
pub async fn run_cloudflare(
    listen: SocketAddr,
    config: Option<PathBuf>,
) -> Result<(), EmulateError> {
    let (emu, opts) = server::launch(
        listen,
        config.as_deref(),
        CloudflareOptions::from_file,
        CloudflareEmulator::start,
    )
    .await?;
    let default_token = opts.tokens.iter().any(|t| t.token() == DEFAULT_TOKEN);
    tracing::info!(
        endpoint = %emu.endpoint(),
        tokens = opts.tokens.len(),
        plan = ?opts.plan,
        zones = opts.zones.len(),
        faults = opts.faults.len(),
        "Cloudflare emulator listening: endpoint {}{}.",
        emu.endpoint(),
        if default_token {
            format!(", token {DEFAULT_TOKEN}")
        } else {
            ", tokens from the config file".to_string()
        },
    );
    server::shutdown_signal().await;
    tracing::info!("Cloudflare emulator stopping.");
    emu.stop().await;
    Ok(())
}

/// Every request outside `/_emulator/`.
async fn handle(
    AxState(inner): AxState<Arc<Inner>>,
    ConnectInfo(kill): ConnectInfo<ConnKill>,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            let e = ApiError::new(
                413,
                10013,
                format!(
                    "Request body is larger than the {MAX_BODY_BYTES} bytes the emulator accepts."
                ),
            );
            return error_response(&e, &None);
        }
    };
    let op = match Op::route(&parts.method, parts.uri.path()) {
        Ok(op) => op,
        Err(e) => return error_response(&e, &None),
    };
    *inner
        .stats()
        .requests
        .entry(op.name().to_string())
        .or_default() += 1;

    // Authentication.
    let token =
        match auth::authenticate(&parts.headers, &inner.opts.tokens, inner.opts.verify_tokens) {
            Ok(t) => t,
            Err(e) => {
                inner.stats().auth_failures += 1;
                tracing::debug!(
                    code = e.code,
                    op = op.name(),
                    "Request refused: {}.",
                    e.message
                );
                return error_response(&e, &None);
            }
        };

    // Rate limits: per client (the emulator sees every client as one IP), per token.
    if inner.per_ip.check("client").is_err() {
        inner.stats().throttled += 1;
        let mut e = ApiError::new(
            429,
            971,
            "Too many requests from this IP. Please wait and consider throttling your request speed",
        );
        e.retry_after = Some(Duration::from_secs(1));
        return error_response(&e, &None);
    }
    let verdict = inner
        .limiter
        .check_at(token.token(), tokio::time::Instant::now());
    let rl = inner.limiter.headers(verdict);
    if let Verdict::Blocked { retry_after } = verdict {
        inner.stats().throttled += 1;
        let o = inner.limiter.opts();
        return error_response(
            &ApiError::rate_limited(o.requests, o.window, retry_after),
            &rl,
        );
    }

    // Faults.
    let zone_name = op
        .zone_id()
        .and_then(|id| inner.lock().zones.get(id).map(|z| z.name.clone()));
    let keys: Vec<&str> = [op.zone_id(), zone_name.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let decision = decide_faults(&*inner, op.fault_op(), op.name(), &keys);
    if !inner.stopping().sleep(decision.delay_before).await {
        return error_response(&ApiError::server(503), &rl);
    }

    let query = parse_query(parts.uri.query().unwrap_or(""));
    let ctx = Ctx {
        query: &query,
        body: &body,
        token: &token,
    };
    let run = |inner: &Inner| {
        let r = inner.run(&op, &ctx);
        if r.is_ok() && op.is_write() {
            inner.stats().changes_committed += 1;
        }
        r
    };

    let commit = || {
        let _ = run(&inner);
    };
    if let Some(t) = terminal_fault(&*inner, &decision, &kill, commit).await {
        return match t {
            Terminal::Timeout => error_response(&ApiError::server(504), &rl),
            Terminal::Fault(rule) => error_response(&fault_error(rule, &inner.limiter), &rl),
        };
    }

    let result = run(&inner);
    inner.stopping().sleep(decision.delay_after).await;
    match result {
        Ok(reply) => {
            let mut body = json!({
                "success": true,
                "errors": [],
                "messages": [],
                "result": reply.result,
            });
            if let Some(info) = reply.result_info {
                body["result_info"] = info;
            }
            json_response(200, &body, &rl, None)
        }
        Err(e) => {
            tracing::debug!(
                code = e.code,
                op = op.name(),
                "Request answered with an error."
            );
            error_response(&e, &rl)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_from_toml() {
        let o: CloudflareOptions = toml::from_str(
            "plan = \"free\"\ntokens = [\"a\", { token = \"b\", zones = [\"example.com\"] }]\n\
             [rate_limit]\nrequests = 10\nwindow = \"2s\"\nblock = \"3s\"\n\
             [[zones]]\nname = \"example.com\"\n[[faults]]\naction = \"throttle\"\nop = \"batch\"\ntimes = 1\n",
        )
        .unwrap();
        assert_eq!(o.batch_limit(), 200);
        assert_eq!(o.rate_limit.window, Duration::from_secs(2));
        assert_eq!(o.rate_limit.per_ip_per_second, 200.0);
        assert_eq!(o.tokens[1].token(), "b");
        assert!(o.validate().is_ok());
        let d: CloudflareOptions = toml::from_str("").unwrap();
        assert_eq!(d, CloudflareOptions::default());
        assert_eq!(d.batch_limit(), 3500);
        assert!(toml::from_str::<CloudflareOptions>("plann = \"free\"").is_err());
        let bad: CloudflareOptions =
            toml::from_str("[[faults]]\naction = \"pending_forever\"\n").unwrap();
        assert!(bad.validate().unwrap_err().starts_with("faults[0].action:"));
        let bad: CloudflareOptions =
            toml::from_str("[[faults]]\naction = \"error\"\ncode = \"Throttling\"\n").unwrap();
        assert!(bad.validate().unwrap_err().starts_with("faults[0].code:"));
    }

    #[test]
    fn queries_decode() {
        let q = parse_query("name=www.example.com&per_page=5&x=a%20b+c&type=");
        assert_eq!(q["name"], "www.example.com");
        assert_eq!(q["x"], "a b c");
        assert_eq!(q["type"], "");
    }
}
