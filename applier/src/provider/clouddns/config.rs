//! `driver = "clouddns"`: the account table of a Google Cloud DNS project (or anything
//! that speaks its API: `endpoint` points elsewhere, e.g. at `dnsplane emulate
//! clouddns`). Credentials never appear in the table: they come from
//! `GOOGLE_OAUTH_ACCESS_TOKEN` or Google's application-default chain
//! ([`super::credentials`]); `credentials_file` only says where a key file is.
//!
//! ```toml
//! [[accounts]]
//! name = "gcp"
//! driver = "clouddns"
//! zones = ["example.com."]
//! project = "my-project"
//! # endpoint = "https://dns.googleapis.com"        # the parent of /dns/v1
//! # zone_names = { "example.com." = "example-com" } # else found by dnsName
//! ```
use dnsplane_common::Name;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Cloud DNS's endpoint.
pub const DEFAULT_ENDPOINT: &str = "https://dns.googleapis.com";

/// The `clouddns` part of an `[[accounts]]` table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloudDnsConfig {
    /// The Google Cloud project holding the managed zones (its id, e.g. `my-project`).
    pub project: String,
    /// The API root, the parent of `/dns/v1`. Default `https://dns.googleapis.com`.
    #[serde(default = "default_endpoint")]
    pub endpoint: String,
    /// Managed zone names (or numeric ids) by zone, for zones whose managed zone
    /// cannot be found by its DNS name alone (a public and a private zone of one
    /// name). Zones not listed are found with `managedZones.list?dnsName=`.
    #[serde(default)]
    pub zone_names: BTreeMap<Name, String>,
    /// A credentials JSON file (service account key, authorized user, or external
    /// account / workload identity federation), read instead of
    /// `GOOGLE_APPLICATION_CREDENTIALS`. Default: the chain decides.
    #[serde(default)]
    pub credentials_file: Option<PathBuf>,
    /// Deadline of one HTTP request, connect included (connect alone: at most 5s).
    /// Default 30s.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// After a change is accepted, poll `changes.get` until it is `done` before the
    /// batch counts as applied; each poll is a request under the account's quota.
    /// Default false: accepted is applied (Cloud DNS has committed it).
    #[serde(default)]
    pub wait_done: bool,
    /// The longest `wait_done` waits; past it the batch is reported applied with a
    /// warning (it committed). Default 5m.
    #[serde(default = "default_done_timeout", with = "humantime_serde")]
    pub done_timeout: Duration,
}

fn default_endpoint() -> String {
    DEFAULT_ENDPOINT.into()
}
fn default_timeout() -> Duration {
    Duration::from_secs(30)
}
fn default_done_timeout() -> Duration {
    Duration::from_secs(300)
}

impl CloudDnsConfig {
    /// The defaults for `project`.
    pub fn new(project: &str) -> CloudDnsConfig {
        CloudDnsConfig {
            project: project.to_string(),
            endpoint: default_endpoint(),
            zone_names: BTreeMap::new(),
            credentials_file: None,
            timeout: default_timeout(),
            wait_done: false,
            done_timeout: default_done_timeout(),
        }
    }

    /// Adds every problem with this table to `problems`; `at` names it (`accounts[0]`).
    pub fn check(&self, at: &str, zones: &[Name], problems: &mut Vec<String>) {
        let p = self.project.trim();
        if p.is_empty() {
            problems.push(format!("{at}.project is empty"));
        } else if !p.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.' | b':')
        }) {
            problems.push(format!(
                "{at}.project {:?} is not a project id (lower-case letters, digits and hyphens, e.g. \"my-project\")",
                self.project
            ));
        }
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
        if self.wait_done && self.done_timeout.is_zero() {
            problems.push(format!(
                "{at}.done_timeout must be more than 0s when wait_done is on"
            ));
        }
        for (zone, managed) in &self.zone_names {
            if !zones.contains(zone) {
                problems.push(format!(
                    "{at}.zone_names names {zone}, which is not among the account's zones"
                ));
            }
            if !super::wire::managed_zone_ref_ok(managed) {
                problems.push(format!(
                    "{at}.zone_names.\"{zone}\" {managed:?} is not a managed zone name (a lower-case letter, then letters, digits or hyphens, at most 63) or id (digits)"
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
    }
}
