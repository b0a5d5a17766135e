//! `driver = "pdns"`: the account table of a PowerDNS Authoritative Server (4.7+),
//! changed through its HTTP API. The table is this struct; its checks are
//! [`PdnsConfig::check`]. Secrets are never written in the config itself, only where
//! to read them from.
//!
//! ```toml
//! [[accounts]]
//! name = "powerdns"
//! driver = "pdns"
//! zones = ["example.com."]
//! api_url = "http://127.0.0.1:8081"
//! api_key_file = "/etc/dnsplane/pdns-api-key"   # or: api_key_env = "PDNS_API_KEY"
//! ```
pub use crate::provider::kit::secret::{SecretError, SecretSource};
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// The `pdns` part of an `[[accounts]]` table: one atomic PATCH per batch,
/// preconditions checked by a read under the zone's lock (PowerDNS writes are not
/// conditional).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PdnsConfig {
    /// Base URL of the PowerDNS webserver, e.g. `http://127.0.0.1:8081` (a trailing
    /// `/api/v1` is accepted too). `http` or `https`.
    pub api_url: String,
    /// The API's server id. PowerDNS Authoritative always calls itself `localhost`.
    /// Default `localhost`.
    #[serde(default = "default_server_id")]
    pub server_id: String,
    /// A file holding the API key (PowerDNS `api-key`), read once at start; surrounding
    /// whitespace is ignored. Exactly one of `api_key_file` and `api_key_env`.
    #[serde(default)]
    pub api_key_file: Option<PathBuf>,
    /// The name of an environment variable holding the API key, read once at start.
    /// Exactly one of `api_key_file` and `api_key_env`.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Deadline of one HTTP request, connect included (connect alone: at most 5s).
    /// Default 10s. The least a request gets: a request to a zone whose PATCHes or
    /// whole-zone reads took PowerDNS longer waits up to three times the longest of the
    /// last eight of them, at most 10 minutes (PowerDNS rectifies the whole zone in
    /// each PATCH, which grows with the zone).
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
}

fn default_server_id() -> String {
    "localhost".into()
}

fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

impl PdnsConfig {
    /// Adds every problem with this table to `problems`; `at` names it
    /// (`accounts[0]`).
    pub fn check(&self, at: &str, problems: &mut Vec<String>) {
        if self.timeout.is_zero() {
            problems.push(format!("{at}.timeout must be more than 0s"));
        }
        match reqwest::Url::parse(self.api_url.trim()) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {}
            Ok(_) => problems.push(format!(
                "{at}.api_url {:?} must be an http:// or https:// URL with a host",
                self.api_url
            )),
            Err(e) => problems.push(format!("{at}.api_url {:?}: {e}", self.api_url)),
        }
        if self.server_id.trim().is_empty() {
            problems.push(format!("{at}.server_id is empty"));
        }
        match (&self.api_key_file, &self.api_key_env) {
            (Some(_), Some(_)) => problems.push(format!(
                "{at}: set only one of api_key_file and api_key_env"
            )),
            (None, None) => problems.push(format!(
                "{at}: the API key is missing: set api_key_file (a file holding it) or api_key_env (a variable holding it)"
            )),
            (Some(f), None) if f.as_os_str().is_empty() => {
                problems.push(format!("{at}.api_key_file is empty"));
            }
            (None, Some(v)) if v.trim().is_empty() => {
                problems.push(format!("{at}.api_key_env is empty"));
            }
            _ => {}
        }
    }

    /// Where the API key comes from (after [`PdnsConfig::check`]: a missing source
    /// reads as an empty variable name, which the driver then refuses).
    pub fn api_key(&self) -> SecretSource {
        match (&self.api_key_file, &self.api_key_env) {
            (Some(f), _) => SecretSource::File(f.clone()),
            (None, v) => SecretSource::Env(v.clone().unwrap_or_default()),
        }
    }
}

/// Why a `pdns` account could not be set up. Never carries the API key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PdnsSetupError {
    #[error("pdns api_url {url:?}: {problem}")]
    Url { url: String, problem: String },
    #[error("pdns api key {0}")]
    ApiKey(#[from] SecretError),
    #[error("pdns HTTP client: {0}")]
    Client(String),
}
