//! `driver = "cloudflare"`: the account table of a Cloudflare account (or anything that
//! speaks its v4 API: `endpoint` points elsewhere, e.g. at `dnsplane emulate
//! cloudflare`). The API token is never written in the table, only where to read it
//! from.
//!
//! ```toml
//! [[accounts]]
//! name = "cloudflare"
//! driver = "cloudflare"
//! zones = ["example.com."]
//! # api_token_env = "CLOUDFLARE_API_TOKEN"     # the default; or api_token_file = "…"
//! # zone_ids = { "example.com." = "023e105f4ecef8ad9ca31a8372d0c353" }
//! ```
use crate::provider::kit::secret::{SecretError, SecretSource};
use dnsplane_common::Name;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Cloudflare's API base.
pub const DEFAULT_ENDPOINT: &str = "https://api.cloudflare.com/client/v4";
/// Where the token is read from when neither `api_token_env` nor `api_token_file` is set.
pub const DEFAULT_TOKEN_ENV: &str = "CLOUDFLARE_API_TOKEN";

/// The zones' plan, which sets how many records one batch may carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    /// 200 records per batch.
    Free,
    /// 3,500 records per batch (Pro, Business and Enterprise alike).
    #[default]
    Pro,
    Business,
    Enterprise,
}

impl Plan {
    /// Records (batch operations) one batch may carry.
    pub fn batch_limit(self) -> usize {
        match self {
            Plan::Free => 200,
            _ => 3500,
        }
    }
}

/// The `cloudflare` part of an `[[accounts]]` table: one atomic batch per dnsplane
/// batch, preconditions checked by a read under the zone's lock (Cloudflare writes are
/// not conditional).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloudflareConfig {
    /// The API base, `…/client/v4`. Default `https://api.cloudflare.com/client/v4`.
    #[serde(default = "default_endpoint")]
    pub endpoint: String,
    /// The name of an environment variable holding the API token. Default
    /// `CLOUDFLARE_API_TOKEN` when `api_token_file` is not set either; at most one of
    /// the two.
    #[serde(default)]
    pub api_token_env: Option<String>,
    /// A file holding the API token (surrounding whitespace ignored), read at start and
    /// again whenever Cloudflare refuses it.
    #[serde(default)]
    pub api_token_file: Option<PathBuf>,
    /// Zone ids by zone name (32 hex digits, the dashboard's "Zone ID"). Zones not
    /// listed are found by name (`GET /zones?name=`), which needs Zone:Zone:Read.
    #[serde(default)]
    pub zone_ids: BTreeMap<Name, String>,
    /// The zones' plan: `free` (200 records per batch) or `pro`, `business`,
    /// `enterprise` (3,500). Default `pro`.
    #[serde(default)]
    pub plan: Plan,
    /// Deadline of one HTTP request, connect included (connect alone: at most 5s).
    /// Default 30s.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
}

fn default_endpoint() -> String {
    DEFAULT_ENDPOINT.into()
}

fn default_timeout() -> Duration {
    Duration::from_secs(30)
}

impl Default for CloudflareConfig {
    fn default() -> Self {
        CloudflareConfig {
            endpoint: default_endpoint(),
            api_token_env: None,
            api_token_file: None,
            zone_ids: BTreeMap::new(),
            plan: Plan::default(),
            timeout: default_timeout(),
        }
    }
}

/// Whether `id` looks like a Cloudflare identifier (32 hex digits; any letters and
/// digits up to 32 are let through, as the API's `maxLength32`).
pub fn is_zone_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 32 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

impl CloudflareConfig {
    /// Adds every problem with this table to `problems`; `at` names it (`accounts[0]`).
    pub fn check(&self, at: &str, zones: &[Name], problems: &mut Vec<String>) {
        match reqwest::Url::parse(self.endpoint.trim()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => {}
            Ok(_) => problems.push(format!(
                "{at}.endpoint {:?} must be an http:// or https:// URL with a host",
                self.endpoint
            )),
            Err(e) => problems.push(format!("{at}.endpoint {:?}: {e}", self.endpoint)),
        }
        if self.timeout.is_zero() {
            problems.push(format!("{at}.timeout must be more than 0s"));
        }
        match (&self.api_token_env, &self.api_token_file) {
            (Some(_), Some(_)) => problems.push(format!(
                "{at}: set only one of api_token_env and api_token_file"
            )),
            (Some(v), None) if v.trim().is_empty() => {
                problems.push(format!("{at}.api_token_env is empty"));
            }
            (None, Some(f)) if f.as_os_str().is_empty() => {
                problems.push(format!("{at}.api_token_file is empty"));
            }
            _ => {}
        }
        for (zone, id) in &self.zone_ids {
            if !zones.contains(zone) {
                problems.push(format!(
                    "{at}.zone_ids names {zone}, which is not among the account's zones"
                ));
            }
            if !is_zone_id(id.trim()) {
                problems.push(format!(
                    "{at}.zone_ids.\"{zone}\" {id:?} is not a zone id (32 hex digits)"
                ));
            }
        }
    }

    /// Where the token comes from.
    pub fn token_source(&self) -> TokenSource {
        match (&self.api_token_file, &self.api_token_env) {
            (Some(f), _) => TokenSource::File(f.clone()),
            (None, Some(v)) => TokenSource::Env(v.clone()),
            (None, None) => TokenSource::Env(DEFAULT_TOKEN_ENV.into()),
        }
    }
}

/// Where the API token comes from.
pub type TokenSource = SecretSource;

/// Why a `cloudflare` account could not be set up. Never carries the token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CloudflareSetupError {
    #[error("cloudflare endpoint {url:?}: {problem}")]
    Url { url: String, problem: String },
    #[error("cloudflare API token {0}")]
    Token(#[from] SecretError),
    #[error("cloudflare HTTP client: {0}")]
    Client(String),
}
