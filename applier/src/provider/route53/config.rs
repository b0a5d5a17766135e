//! `driver = "route53"`: the account table of an AWS Route 53 account (or anything that
//! speaks its API: `endpoint` points elsewhere, e.g. at `dnsplane emulate route53`).
//! Credentials never appear in the table: they come from the standard AWS chain
//! ([`super::credentials`]).
//!
//! ```toml
//! [[accounts]]
//! name = "aws"
//! driver = "route53"
//! zones = ["example.com."]
//! # endpoint = "https://route53.amazonaws.com"   # the parent of /2013-04-01
//! # zone_ids = { "example.com." = "Z0123456789ABCDEFGHIJ" }  # when a name is ambiguous
//! ```
use dnsplane_common::Name;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Route 53's global endpoint.
pub const DEFAULT_ENDPOINT: &str = "https://route53.amazonaws.com";
/// AWS STS's global endpoint, for web identity (IRSA) credentials.
pub const DEFAULT_STS_ENDPOINT: &str = "https://sts.amazonaws.com";

/// Which hosted zones of a name the account means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ZoneVisibility {
    /// Public or private; a name held by both is an error unless `zone_ids` says which.
    #[default]
    Any,
    Public,
    Private,
}

/// The `route53` part of an `[[accounts]]` table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route53Config {
    /// The API root, the parent of `/2013-04-01`. Default `https://route53.amazonaws.com`.
    #[serde(default = "default_endpoint")]
    pub endpoint: String,
    /// The region requests are signed for. Route 53 is global and signs in
    /// `us-east-1`. Default `us-east-1`.
    #[serde(default = "default_region")]
    pub region: String,
    /// Hosted zone ids by zone name (`Z…`, with or without `/hostedzone/`), for names
    /// held by more than one hosted zone (a public and a private one). Zones not listed
    /// are found by name.
    #[serde(default)]
    pub zone_ids: BTreeMap<Name, String>,
    /// Which hosted zones a name found by name may be: `any` (default), `public` or
    /// `private`.
    #[serde(default)]
    pub zone_visibility: ZoneVisibility,
    /// The shared config profile to read (`~/.aws/credentials`, `~/.aws/config`) when
    /// the environment holds no keys. Default: `AWS_PROFILE`, else `default`.
    #[serde(default)]
    pub profile: Option<String>,
    /// The shared credentials file to read a profile's keys from. Default:
    /// `AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`.
    #[serde(default)]
    pub credentials_file: Option<std::path::PathBuf>,
    /// Where web identity (IRSA) tokens are exchanged for credentials. Default
    /// `https://sts.amazonaws.com`.
    #[serde(default = "default_sts_endpoint")]
    pub sts_endpoint: String,
    /// Deadline of one HTTP request, connect included (connect alone: at most 5s).
    /// Default 30s.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// After a change batch is accepted, poll `GetChange` until it is `INSYNC` (served
    /// by every Route 53 name server) before the batch counts as applied; each poll is
    /// a request under the account's quota. Default false: accepted is applied (Route
    /// 53 has committed it).
    #[serde(default)]
    pub wait_insync: bool,
    /// The longest `wait_insync` waits; past it the batch is reported applied with a
    /// warning (it committed). Default 5m.
    #[serde(default = "default_insync_timeout", with = "humantime_serde")]
    pub insync_timeout: Duration,
}

fn default_endpoint() -> String {
    DEFAULT_ENDPOINT.into()
}
fn default_region() -> String {
    "us-east-1".into()
}
fn default_sts_endpoint() -> String {
    DEFAULT_STS_ENDPOINT.into()
}
fn default_timeout() -> Duration {
    Duration::from_secs(30)
}
fn default_insync_timeout() -> Duration {
    Duration::from_secs(300)
}

impl Default for Route53Config {
    fn default() -> Self {
        Route53Config {
            endpoint: default_endpoint(),
            region: default_region(),
            zone_ids: BTreeMap::new(),
            zone_visibility: ZoneVisibility::default(),
            profile: None,
            credentials_file: None,
            sts_endpoint: default_sts_endpoint(),
            timeout: default_timeout(),
            wait_insync: false,
            insync_timeout: default_insync_timeout(),
        }
    }
}

impl Route53Config {
    /// Adds every problem with this table to `problems`; `at` names it (`accounts[0]`).
    pub fn check(&self, at: &str, zones: &[Name], problems: &mut Vec<String>) {
        for (key, url) in [
            ("endpoint", &self.endpoint),
            ("sts_endpoint", &self.sts_endpoint),
        ] {
            match reqwest::Url::parse(url.trim()) {
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => {}
                Ok(_) => problems.push(format!(
                    "{at}.{key} {url:?} must be an http:// or https:// URL with a host"
                )),
                Err(e) => problems.push(format!("{at}.{key} {url:?}: {e}")),
            }
        }
        if self.region.trim().is_empty() {
            problems.push(format!("{at}.region is empty"));
        }
        if self.timeout.is_zero() {
            problems.push(format!("{at}.timeout must be more than 0s"));
        }
        if self.wait_insync && self.insync_timeout.is_zero() {
            problems.push(format!(
                "{at}.insync_timeout must be more than 0s when wait_insync is on"
            ));
        }
        for (zone, id) in &self.zone_ids {
            if !zones.contains(zone) {
                problems.push(format!(
                    "{at}.zone_ids names {zone}, which is not among the account's zones"
                ));
            }
            if super::wire::bare_zone_id(id).is_none() {
                problems.push(format!(
                    "{at}.zone_ids.\"{zone}\" {id:?} is not a hosted zone id (Z… of letters and digits, optionally after /hostedzone/)"
                ));
            }
        }
        if self
            .credentials_file
            .as_ref()
            .is_some_and(|f| f.as_os_str().is_empty())
        {
            problems.push(format!("{at}.credentials_file is empty"));
        }
        if self.profile.as_deref().is_some_and(|p| p.trim().is_empty()) {
            problems.push(format!("{at}.profile is empty"));
        }
    }
}
