//! `driver = "memory"`: the account table of the embedded store.
use super::dns::axfr::Transfer;
use super::dns::rrl::DnsRateLimit;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The `memory` part of an `[[accounts]]` table: zones kept in a local crash-safe
/// store (snapshot + journal), each created empty on first start, optionally answered
/// over DNS.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Directory of the store (snapshot and journal), created if missing. A relative
    /// path is relative to the working directory.
    pub state_dir: PathBuf,
    /// Address to answer DNS queries on, UDP and TCP (e.g. "127.0.0.1:10053").
    /// Absent: no DNS.
    #[serde(default, deserialize_with = "dns_listen")]
    pub dns_listen: Option<SocketAddr>,
    /// `[accounts.dns_rate_limit]`: UDP answers per client prefix (default 100/s,
    /// burst 200, slip 2).
    #[serde(default)]
    pub dns_rate_limit: DnsRateLimit,
    /// Who may transfer a zone (AXFR over TCP): `"loopback"` (default), `"any"` or
    /// `"none"`.
    #[serde(default)]
    pub dns_transfer: Transfer,
}

/// `dns_listen`, with an error that names the key and the value: serde's own says
/// only "invalid socket address syntax", and inside `[[accounts]]` toml can point at
/// nothing nearer than the table's first line.
fn dns_listen<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
    let text: Option<String> = Option::deserialize(d)?;
    text.map(|t| {
        t.parse().map_err(|_| {
            serde::de::Error::custom(format!(
                "dns_listen = {t:?} is not an address and port, e.g. \"127.0.0.1:10053\" or \"[::1]:53\""
            ))
        })
    })
    .transpose()
}

impl MemoryConfig {
    /// Adds every problem with this table to `problems`; `at` names it
    /// (`accounts[0]`). (Two accounts sharing a directory or DNS address are checked
    /// across accounts, by the applier's config.)
    pub fn check(&self, at: &str, problems: &mut Vec<String>) {
        if self.state_dir.as_os_str().is_empty() {
            problems.push(format!("{at}.state_dir is empty"));
        }
        self.dns_rate_limit
            .check(&format!("{at}.dns_rate_limit"), problems);
    }
}
