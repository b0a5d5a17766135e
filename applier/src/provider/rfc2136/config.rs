//! `driver = "rfc2136"`: the account table of a primary that accepts DNS UPDATE
//! signed with TSIG (BIND, Knot, PowerDNS); the table is [`Rfc2136Config`].
//!
//! ```toml
//! [[accounts]]
//! name = "bind"
//! driver = "rfc2136"
//! zones = ["example.org."]
//! server = "127.0.0.1:53"
//! tsig_secret_file = "/etc/bind/dnsplane.key"   # `tsig-keygen -a hmac-sha256 NAME` output
//! ```
use hickory_net::proto::rr::rdata::tsig::TsigAlgorithm as HTsigAlgorithm;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// TSIG HMAC algorithms hickory can sign with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum TsigAlgorithm {
    #[default]
    #[serde(rename = "hmac-sha256")]
    HmacSha256,
    #[serde(rename = "hmac-sha384")]
    HmacSha384,
    #[serde(rename = "hmac-sha512")]
    HmacSha512,
}

impl TsigAlgorithm {
    /// BIND's spelling (`hmac-sha256`), case-insensitive, with or without a final dot.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().trim_end_matches('.').to_ascii_lowercase().as_str() {
            "hmac-sha256" => Some(TsigAlgorithm::HmacSha256),
            "hmac-sha384" => Some(TsigAlgorithm::HmacSha384),
            "hmac-sha512" => Some(TsigAlgorithm::HmacSha512),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TsigAlgorithm::HmacSha256 => "hmac-sha256",
            TsigAlgorithm::HmacSha384 => "hmac-sha384",
            TsigAlgorithm::HmacSha512 => "hmac-sha512",
        }
    }

    pub(super) fn hickory(self) -> HTsigAlgorithm {
        match self {
            TsigAlgorithm::HmacSha256 => HTsigAlgorithm::HmacSha256,
            TsigAlgorithm::HmacSha384 => HTsigAlgorithm::HmacSha384,
            TsigAlgorithm::HmacSha512 => HTsigAlgorithm::HmacSha512,
        }
    }
}

/// The `rfc2136` part of an `[[accounts]]` table: one UPDATE message per batch, every
/// change's precondition sent as a prerequisite; listings by AXFR. The key must be
/// allowed to update and transfer each of the account's zones.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rfc2136Config {
    /// The primary's `address:port`, e.g. `127.0.0.1:53`. A host name is resolved
    /// once, at start.
    pub server: String,
    /// TSIG key name, e.g. `dnsplane-key`. May be left out when `tsig_secret_file` is
    /// a BIND key file holding exactly one key; must match it when given.
    #[serde(default)]
    pub tsig_key_name: Option<String>,
    /// TSIG algorithm: `hmac-sha256`, `hmac-sha384` or `hmac-sha512`. Left out: taken
    /// from the BIND key file, else `hmac-sha256`.
    #[serde(default)]
    pub tsig_algorithm: Option<TsigAlgorithm>,
    /// The TSIG secret: a BIND key file (what `tsig-keygen -a hmac-sha256 NAME`
    /// prints) or a file holding only the base64 secret (then `tsig_key_name` is
    /// required). Left out, UPDATEs go unsigned, for servers that authorise by
    /// address only.
    #[serde(default)]
    pub tsig_secret_file: Option<PathBuf>,
    /// Deadline of one DNS exchange (connect, and each answer). Default 10s.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// List zones by AXFR. Default true. With `false`, only listings restricted to
    /// names work (plain queries), which the planner's full reads need: keep it on
    /// unless the server refuses transfers.
    #[serde(default = "default_true")]
    pub axfr: bool,
}

impl Rfc2136Config {
    /// Adds every problem with this table to `problems`; `at` names it
    /// (`accounts[0]`).
    pub fn check(&self, at: &str, problems: &mut Vec<String>) {
        if self.timeout.is_zero() {
            problems.push(format!("{at}.timeout must be more than 0s"));
        }
        let server = self.server.trim();
        let has_port = server.parse::<SocketAddr>().is_ok()
            || server
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !has_port {
            problems.push(format!(
                "{at}.server {:?} must be address:port (e.g. \"127.0.0.1:53\")",
                self.server
            ));
        }
        if self.tsig_key_name.is_some() && self.tsig_secret_file.is_none() {
            problems.push(format!(
                "{at}.tsig_key_name is set but tsig_secret_file is not: the key needs its secret"
            ));
        }
        if let Some(k) = &self.tsig_key_name
            && k.trim().trim_end_matches('.').is_empty()
        {
            problems.push(format!("{at}.tsig_key_name is empty"));
        }
        if self
            .tsig_secret_file
            .as_ref()
            .is_some_and(|f| f.as_os_str().is_empty())
        {
            problems.push(format!("{at}.tsig_secret_file is empty"));
        }
    }
}

fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

fn default_true() -> bool {
    true
}

/// Why an `rfc2136` account could not be set up. Never carries the secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Rfc2136SetupError {
    #[error("rfc2136 server {server:?}: {problem}")]
    Server { server: String, problem: String },
    #[error("rfc2136 TSIG key file {path}: {problem}")]
    KeyFile { path: PathBuf, problem: String },
    #[error("rfc2136 TSIG: {0}")]
    Tsig(String),
    #[error("rfc2136 zones: {0}")]
    Zones(String),
}
