//! `driver = "webhook"`: the account table of an external-dns webhook provider (any of
//! the sidecars external-dns talks to with `--provider=webhook`).
//!
//! ```toml
//! [[accounts]]
//! name = "hetzner"
//! driver = "webhook"
//! zones = ["example.com."]
//! # url = "http://localhost:8888"   # external-dns's --webhook-provider-url default
//! # timeout = "15s"                 # external-dns's read (5s) + write (10s) timeouts
//! # default_ttl = 300               # what a record written without a TTL reads back as
//! ```
use serde::Deserialize;
use std::time::Duration;

/// external-dns's `--webhook-provider-url` default: the sidecar on the same host.
pub const DEFAULT_URL: &str = "http://localhost:8888";
/// external-dns's one client timeout: `--webhook-provider-read-timeout` (5s) plus
/// `--webhook-provider-write-timeout` (10s). A server is built to answer within it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);
/// The TTL a record without one (`recordTTL` 0 or absent) reads back as: the planner's
/// own `default_ttl` for desired records that give none, so such a record and a
/// desired record without a TTL compare equal and the planner converges.
pub const DEFAULT_TTL: u32 = 300;

/// The `webhook` part of an `[[accounts]]` table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// The webhook server's base URL (negotiation is `GET` on it, records are
    /// `…/records`). Default `http://localhost:8888`.
    #[serde(default = "default_url")]
    pub url: String,
    /// Deadline of one HTTP exchange, connect included (connect alone: at most 5s).
    /// Default 15s, as external-dns.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// The TTL a record read without one is given (the provider's zone default, as far
    /// as dnsplane can know it). Default 300, the planner's `default_ttl`: set both to
    /// the provider's default TTL if it is another.
    #[serde(default = "default_ttl")]
    pub default_ttl: u32,
}

fn default_url() -> String {
    DEFAULT_URL.into()
}

fn default_timeout() -> Duration {
    DEFAULT_TIMEOUT
}

fn default_ttl() -> u32 {
    DEFAULT_TTL
}

impl Default for WebhookConfig {
    fn default() -> Self {
        WebhookConfig {
            url: default_url(),
            timeout: default_timeout(),
            default_ttl: default_ttl(),
        }
    }
}

impl WebhookConfig {
    /// Adds every problem with this table to `problems`; `at` names it (`accounts[0]`).
    pub fn check(&self, at: &str, problems: &mut Vec<String>) {
        match reqwest::Url::parse(self.url.trim()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => {}
            Ok(_) => problems.push(format!(
                "{at}.url {:?} must be an http:// or https:// URL with a host",
                self.url
            )),
            Err(e) => problems.push(format!("{at}.url {:?}: {e}", self.url)),
        }
        if self.timeout.is_zero() {
            problems.push(format!("{at}.timeout must be more than 0s"));
        }
        if self.default_ttl == 0 || self.default_ttl > dnsplane_common::rrset::MAX_TTL {
            problems.push(format!(
                "{at}.default_ttl must be between 1 and {}",
                dnsplane_common::rrset::MAX_TTL
            ));
        }
    }
}

/// Why a `webhook` account could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookSetupError {
    #[error("webhook url {url:?}: {problem}")]
    Url { url: String, problem: String },
    #[error("webhook HTTP client: {0}")]
    Client(String),
}
