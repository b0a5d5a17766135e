//! A Google Cloud DNS emulator: the JSON API `dns/v1` (`managedZones`, `rrsets`,
//! `changes`) with OAuth bearer tokens, Cloud DNS's atomic Changes (exact deletions,
//! `alreadyExists` unless the same change deletes, the CNAME rule, every failing
//! entry reported with its index, Google's limits and texts), `pending` → `done`,
//! paging chosen by the server, a per-project request quota, and opt-in faults.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use dnsplane_emulate::clouddns::{CloudDnsEmulator, CloudDnsOptions, DEFAULT_TOKEN};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let emu = CloudDnsEmulator::start(listener, CloudDnsOptions::default()).await?;
//! let zone = emu.create_zone("example-com", "example.com.");
//! // Point a client at emu.endpoint() (the parent of /dns/v1), project
//! // "emulator-project", header `Authorization: Bearer emulator-token`; then assert
//! // on emu.rrsets(&zone).
//! emu.stop().await;
//! # Ok(()) }
//! ```
//!
//! The request pipeline ([`serve::handle`]): body size limit → route → bearer token →
//! project access → quota → fault rules → the call → answer (cut to `fields`).
//! Modules: [`values`] (names and rrdatas), [`model`] (projects, zones, record sets,
//! changes), [`change`] (the Change engine), [`errors`] (googleapis error bodies),
//! [`ops`] (the calls), [`fields`] (partial responses), [`control`] (`/_emulator/`).
mod change;
mod control;
mod errors;
mod fields;
mod model;
mod ops;
mod serve;
mod values;

pub use change::Limits;

use crate::control::ControlPlane;
use crate::error::EmulateError;
use crate::fault::{FaultAction, FaultRule};
use crate::quota::Quota;
use crate::running::{Emulator, RunningEmulator, Shared, Terminal, decide_faults, terminal_fault};
use crate::server::{self, ConnKill, Stopping};
use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State as AxState};
use axum::response::Response;
use errors::ApiError;
use ops::{Ctx, FAULT_OPS, Op};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The bearer token the default options accept.
pub const DEFAULT_TOKEN: &str = "emulator-token";
/// The project the default options serve.
pub const DEFAULT_PROJECT: &str = "emulator-project";
/// Largest request body accepted (a Change at Google's limits fits several times).
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// One bearer token the emulator accepts, and the projects it may use: the
/// emulator's `project` when `projects` is absent. In TOML a bare string is a token
/// for the emulator's project: `tokens = ["t1", { token = "t2", projects = ["p"] }]`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "TokenRepr")]
pub struct Token {
    pub token: String,
    pub projects: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum TokenRepr {
    Bare(String),
    Full {
        token: String,
        #[serde(default)]
        projects: Option<Vec<String>>,
    },
}

impl From<TokenRepr> for Token {
    fn from(r: TokenRepr) -> Token {
        match r {
            TokenRepr::Bare(token) => Token {
                token,
                projects: None,
            },
            TokenRepr::Full { token, projects } => Token { token, projects },
        }
    }
}

impl Token {
    /// A token for the emulator's project.
    pub fn new(token: &str) -> Token {
        Token {
            token: token.to_string(),
            projects: None,
        }
    }

    /// A token for exactly `projects`.
    pub fn scoped(token: &str, projects: &[&str]) -> Token {
        Token {
            token: token.to_string(),
            projects: Some(projects.iter().map(|p| p.to_string()).collect()),
        }
    }

    fn allows(&self, project: &str, default: &str) -> bool {
        match &self.projects {
            None => project == default,
            Some(ps) => ps.iter().any(|p| p == project),
        }
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("token", &"<redacted>")
            .field("projects", &self.projects)
            .finish()
    }
}

/// A zone created at start (the config file's `[[zones]]`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSeed {
    /// The managed zone's name, e.g. "example-com".
    pub name: String,
    /// Its DNS name, e.g. "example.com." (trailing dot).
    pub dns_name: String,
}

fn default_tokens() -> Vec<Token> {
    vec![Token::new(DEFAULT_TOKEN)]
}

/// How the Cloud DNS emulator behaves. `Default` is Google's behaviour with the
/// default token and project; the TOML config file has the same fields (see
/// `docs/emulators.md`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct CloudDnsOptions {
    /// Accepted bearer tokens. Default: [`DEFAULT_TOKEN`], for the emulator's project.
    pub tokens: Vec<Token>,
    /// Check `Authorization: Bearer`. When false any request passes. Default true.
    pub verify_tokens: bool,
    /// The project zones are created in (`create_zone`, `[[zones]]`). Default
    /// [`DEFAULT_PROJECT`].
    pub project: String,
    /// Requests per second per project across all calls; 0 (the default) turns the
    /// quota off: Google sets the per-minute quotas per project and shows them only in
    /// the console.
    pub rate: f64,
    /// Bucket size of the quota: requests an idle project may send at once. Default 10.
    pub burst: u32,
    /// The status of a quota refusal: 429 (default) or 503, both with reason
    /// `rateLimitExceeded`.
    pub quota_status: u16,
    /// `changes.get` calls that still answer `pending` before a change is `done`.
    /// Default 1. Ignored when `done_after` is set.
    pub pending_polls: u32,
    /// How long a change stays `pending` (instead of `pending_polls`), e.g. "2s".
    #[serde(with = "humantime_serde::option")]
    pub done_after: Option<Duration>,
    /// Items per page of `rrsets.list`, `managedZones.list` and `changes.list` (a
    /// smaller `maxResults` wins). Google chooses its own; default 500.
    pub page_size: usize,
    /// Per-change and per-zone limits; Google's by default.
    pub limits: Limits,
    /// Zones created at start, in `project`.
    pub zones: Vec<ZoneSeed>,
    /// Fault rules (see [`FaultRule`]); ops: change, get_change, list_changes,
    /// list_rrsets, zones.
    pub faults: Vec<FaultRule>,
}

impl Default for CloudDnsOptions {
    fn default() -> CloudDnsOptions {
        CloudDnsOptions {
            tokens: default_tokens(),
            verify_tokens: true,
            project: DEFAULT_PROJECT.to_string(),
            rate: 0.0,
            burst: 10,
            quota_status: 429,
            pending_polls: 1,
            done_after: None,
            page_size: 500,
            limits: Limits::default(),
            zones: Vec::new(),
            faults: Vec::new(),
        }
    }
}

/// Checks a fault rule against the Cloud DNS emulator's operations and answers.
pub(crate) fn validate_fault(rule: &FaultRule) -> Result<(), String> {
    rule.validate(FAULT_OPS)?;
    if rule.action == FaultAction::PriorRequestNotComplete {
        return Err(
            "action: prior_request_not_complete is Route 53's; Cloud DNS has no such answer (use error or throttle)"
                .into(),
        );
    }
    Ok(())
}

impl CloudDnsOptions {
    /// Reads a TOML config file; problems name the file and the field.
    pub fn from_file(path: &Path) -> Result<CloudDnsOptions, EmulateError> {
        crate::error::options_from_file(path, CloudDnsOptions::validate)
    }

    /// Checks values that parse but cannot work; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.tokens.is_empty() && self.verify_tokens {
            return Err("tokens: at least one token is needed to verify tokens".into());
        }
        for (i, t) in self.tokens.iter().enumerate() {
            if t.token.trim().is_empty() {
                return Err(format!("tokens[{i}]: the token must not be empty"));
            }
        }
        if self.project.trim().is_empty() {
            return Err("project: must not be empty".into());
        }
        if !self.rate.is_finite() || self.rate < 0.0 {
            return Err(format!("rate: {} must be 0 (no quota) or more", self.rate));
        }
        if !matches!(self.quota_status, 429 | 503) {
            return Err(format!(
                "quota_status: {} must be 429 or 503",
                self.quota_status
            ));
        }
        if self.page_size == 0 {
            return Err("page_size: must be at least 1".into());
        }
        for (i, z) in self.zones.iter().enumerate() {
            if values::parse_name(&z.dns_name).is_none_or(|n| n == ".") {
                return Err(format!(
                    "zones[{i}].dns_name: {:?} must be a domain name with its trailing dot",
                    z.dns_name
                ));
            }
        }
        for (i, f) in self.faults.iter().enumerate() {
            validate_fault(f).map_err(|e| format!("faults[{i}].{e}"))?;
        }
        Ok(())
    }
}

pub use crate::stats::Stats;

/// A record set as a zone holds it, for assertions (and the control API's JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RRSetView {
    /// Lower case, trailing dot.
    pub name: String,
    #[serde(rename = "type")]
    pub rtype: String,
    pub ttl: u32,
    /// As written (TXT keeps its quotes).
    pub rrdatas: Vec<String>,
}

/// A zone, for the control API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZoneView {
    pub name: String,
    pub dns_name: String,
    pub id: String,
    pub rrset_count: usize,
    /// The id of the latest change.
    pub last_change: u64,
}

/// The emulator's shared state (opaque: what [`CloudDnsEmulator`] serves).
#[derive(Debug)]
pub struct Inner {
    opts: CloudDnsOptions,
    quota: Quota,
    /// Model, counters, fault rules, stop signal.
    shared: Shared<model::State>,
}

impl Inner {
    fn count_commit(&self) {
        self.stats().changes_committed += 1;
    }

    fn rrsets(&self, zone: &str) -> Option<Vec<RRSetView>> {
        let st = self.lock();
        st.zone(&self.opts.project, zone).map(|z| {
            z.rrsets
                .values()
                .map(|r| RRSetView {
                    name: r.name.clone(),
                    rtype: r.rtype.clone(),
                    ttl: r.ttl,
                    rrdatas: r.rrdatas.clone(),
                })
                .collect()
        })
    }

    fn zones(&self) -> Vec<ZoneView> {
        let st = self.lock();
        st.projects
            .get(&self.opts.project)
            .into_iter()
            .flat_map(|p| p.values())
            .map(|z| ZoneView {
                name: z.name.clone(),
                dns_name: z.dns_name.clone(),
                id: z.id.to_string(),
                rrset_count: z.rrsets.len(),
                last_change: z.changes.last().map_or(0, |c| c.id),
            })
            .collect()
    }
}

impl Emulator for Inner {
    const NAME: &'static str = "CloudDnsEmulator";
    /// The parent of `/dns/v1`.
    const BASE: &'static str = "";
    type Options = CloudDnsOptions;

    fn build(opts: CloudDnsOptions, stopping: Stopping) -> Result<Inner, String> {
        opts.validate()?;
        let inner = Inner {
            quota: Quota::new(opts.rate, opts.burst),
            shared: Shared::new(model::State::default(), &opts.faults, stopping),
            opts,
        };
        for z in &inner.opts.zones {
            let project = inner.opts.project.clone();
            inner
                .add_zone(&project, &z.name, &z.dns_name, "", "public")
                .map_err(|e| format!("zones: {}", e.message))?;
        }
        Ok(inner)
    }

    fn app() -> Router<Arc<Inner>> {
        crate::control::with_api(serve::handle)
    }
}

/// A running Cloud DNS emulator (see [`RunningEmulator`] for what every emulator has).
pub type CloudDnsEmulator = RunningEmulator<Inner>;

impl RunningEmulator<Inner> {
    /// The project zones are created in.
    pub fn project(&self) -> &str {
        &self.inner.opts.project
    }

    /// Creates a public managed zone `name` for `dns_name` (trailing dot optional) in
    /// the emulator's project, without an API call; returns its name. Panics on a bad
    /// or taken name.
    pub fn create_zone(&self, name: &str, dns_name: &str) -> String {
        let dns = if dns_name.ends_with('.') {
            dns_name.to_string()
        } else {
            format!("{dns_name}.")
        };
        let project = self.inner.opts.project.clone();
        self.inner
            .add_zone(&project, name, &dns, "", "public")
            .unwrap_or_else(|e| panic!("create_zone({name:?}, {dns_name:?}): {}", e.message));
        name.to_string()
    }

    /// The record sets of a zone (by name or id) in listing order; empty for an
    /// unknown zone.
    pub fn rrsets(&self, zone: &str) -> Vec<RRSetView> {
        self.inner.rrsets(zone).unwrap_or_default()
    }

    /// The id of the zone's latest change (0: only the creation); `None` for an
    /// unknown zone.
    pub fn last_change(&self, zone: &str) -> Option<u64> {
        let st = self.inner.lock();
        st.zone(&self.inner.opts.project, zone)
            .and_then(|z| z.changes.last().map(|c| c.id))
    }
}

/// Runs the emulator for `dnsplane emulate clouddns --listen ADDR [--config FILE]`:
/// reads and checks the config, binds, logs the endpoint, project and token in one
/// line, serves until Ctrl-C (or SIGTERM).
pub async fn run_clouddns(listen: SocketAddr, config: Option<PathBuf>) -> Result<(), EmulateError> {
    let (emu, opts) = server::launch(
        listen,
        config.as_deref(),
        CloudDnsOptions::from_file,
        CloudDnsEmulator::start,
    )
    .await?;
    let default_token = opts.tokens.iter().any(|t| t.token == DEFAULT_TOKEN);
    tracing::info!(
        endpoint = %emu.endpoint(),
        project = %opts.project,
        token = if default_token { DEFAULT_TOKEN } else { "<from the config file>" },
        zones = opts.zones.len(),
        faults = opts.faults.len(),
        "Cloud DNS emulator listening: endpoint {}, project {}{}.",
        emu.endpoint(),
        opts.project,
        if default_token {
            format!(", token {DEFAULT_TOKEN}")
        } else {
            String::new()
        },
    );
    server::shutdown_signal().await;
    tracing::info!("Cloud DNS emulator stopping.");
    emu.stop().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_from_toml() {
        let o: CloudDnsOptions = toml::from_str(
            "rate = 2\npending_polls = 0\ndone_after = \"250ms\"\ntokens = [\"a\", { token = \"b\", projects = [\"p\"] }]\n\
             [limits]\nadditions_per_change = 10\n\
             [[zones]]\nname = \"example-com\"\ndns_name = \"example.com.\"\n[[faults]]\naction = \"throttle\"\nop = \"change\"\ntimes = 1\n",
        )
        .unwrap();
        assert_eq!(o.rate, 2.0);
        assert_eq!(o.done_after, Some(Duration::from_millis(250)));
        assert_eq!(o.tokens, vec![Token::new("a"), Token::scoped("b", &["p"])]);
        assert_eq!(o.limits.additions_per_change, 10);
        assert_eq!(o.limits.deletions_per_change, 1000);
        assert!(o.validate().is_ok());
        let d: CloudDnsOptions = toml::from_str("").unwrap();
        assert_eq!(d, CloudDnsOptions::default());
        assert!(toml::from_str::<CloudDnsOptions>("rat = 1").is_err());
        let bad: CloudDnsOptions =
            toml::from_str("[[faults]]\naction = \"prior_request_not_complete\"\n").unwrap();
        assert!(bad.validate().unwrap_err().starts_with("faults[0].action:"));
        let bad: CloudDnsOptions = toml::from_str("quota_status = 500").unwrap();
        assert!(bad.validate().unwrap_err().starts_with("quota_status:"));
        assert!(!format!("{:?}", Token::new("s3cret")).contains("s3cret"));
    }
}
