//! The `[[accounts]]` tables of the drivers that talk to an existing DNS server:
//! `driver = "pdns"` (PowerDNS HTTP API) and `driver = "rfc2136"` (DNS UPDATE + TSIG,
//! e.g. BIND). Their validation, and their conversion into the drivers' own configs.
//!
//! ```toml
//! [[accounts]]
//! name = "powerdns"
//! driver = "pdns"
//! zones = ["example.com."]
//! api_url = "http://127.0.0.1:8081"
//! api_key_file = "/etc/dnsplane/pdns-api-key"   # or: api_key_env = "PDNS_API_KEY"
//!
//! [[accounts]]
//! name = "bind"
//! driver = "rfc2136"
//! zones = ["example.org."]
//! server = "127.0.0.1:53"
//! tsig_secret_file = "/etc/bind/dnsplane.key"   # `tsig-keygen -a hmac-sha256 NAME` output
//! ```
//!
//! Secrets are never written in the config itself: only where to read them from.
use crate::circuit::CircuitConfig;
use crate::provider::fault::FaultRuleConfig;
use crate::provider::pdns::{PdnsConfig, SecretSource};
use crate::provider::rfc2136::{Rfc2136Config, TsigAlgorithm};
use crate::quota::QuotaConfig;
use dnsplane_common::Name;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// `driver = "pdns"`: zones on a PowerDNS Authoritative Server (4.7+), changed through
/// its HTTP API (one atomic PATCH per batch; preconditions checked by a read under
/// the zone's lock, because PowerDNS writes are not conditional).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PdnsAccount {
    /// The account's name, as planners address it.
    pub name: String,
    /// Zones this account manages. Each must already exist on the server (create it
    /// with the API or `pdnsutil create-zone`); a missing one is reported
    /// `REJECTED_PERMANENT` on first use, it does not stop the applier.
    pub zones: Vec<Name>,
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
    /// Deadline of one HTTP request, connect included. Default 10s.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// The account's circuit breaker (`[accounts.circuit]`); defaults when absent.
    #[serde(default)]
    pub circuit: CircuitConfig,
    /// Fault injection rules (`[[accounts.faults]]`) in front of this driver, tried in
    /// order on every provider call (docs/reliability.md). For tests and chaos runs;
    /// absent in production.
    #[serde(default)]
    pub faults: Vec<FaultRuleConfig>,
    /// The account's provider quota (`[accounts.quota]`, see [`crate::quota`]).
    #[serde(default)]
    pub quota: Option<QuotaConfig>,
}

/// `driver = "rfc2136"`: zones on a primary that accepts DNS UPDATE (RFC 2136) signed
/// with TSIG — BIND, Knot, PowerDNS. One UPDATE message per batch, every change's
/// precondition sent as a prerequisite; listings by AXFR.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rfc2136Account {
    /// The account's name, as planners address it.
    pub name: String,
    /// Zones this account manages on `server`; the key must be allowed to update and
    /// transfer each of them.
    pub zones: Vec<Name>,
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
    /// The account's circuit breaker (`[accounts.circuit]`); defaults when absent.
    #[serde(default)]
    pub circuit: CircuitConfig,
    /// Fault injection rules (`[[accounts.faults]]`) in front of this driver, tried in
    /// order on every provider call (docs/reliability.md). For tests and chaos runs;
    /// absent in production.
    #[serde(default)]
    pub faults: Vec<FaultRuleConfig>,
    /// The account's provider quota (`[accounts.quota]`, see [`crate::quota`]).
    #[serde(default)]
    pub quota: Option<QuotaConfig>,
}

fn default_server_id() -> String {
    "localhost".into()
}

fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

fn default_true() -> bool {
    true
}

/// Problems shared by every account kind: an empty or repeated zone.
pub(super) fn check_zones(at: &str, name: &str, zones: &[Name], problems: &mut Vec<String>) {
    if zones.is_empty() {
        problems.push(format!(
            "{at}.zones is empty: account {name:?} hosts nothing"
        ));
    }
    let mut seen = BTreeSet::new();
    for z in zones {
        if !seen.insert(z) {
            problems.push(format!("{at}.zones lists {z} twice"));
        }
    }
}

fn check_timeout(at: &str, timeout: Duration, problems: &mut Vec<String>) {
    if timeout.is_zero() {
        problems.push(format!("{at}.timeout must be more than 0s"));
    }
}

impl PdnsAccount {
    /// Adds every problem with this account to `problems`; `at` names the table.
    pub(super) fn check(&self, at: &str, problems: &mut Vec<String>) {
        check_zones(at, &self.name, &self.zones, problems);
        check_timeout(at, self.timeout, problems);
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

    /// The driver's config. Call after validation (a missing key source reads as an
    /// empty variable name, which the driver then refuses).
    pub fn driver_config(&self) -> PdnsConfig {
        let api_key = match (&self.api_key_file, &self.api_key_env) {
            (Some(f), _) => SecretSource::File(f.clone()),
            (None, v) => SecretSource::Env(v.clone().unwrap_or_default()),
        };
        PdnsConfig {
            api_url: self.api_url.trim().to_string(),
            server_id: self.server_id.trim().to_string(),
            api_key,
            timeout: self.timeout,
        }
    }
}

impl Rfc2136Account {
    /// Adds every problem with this account to `problems`; `at` names the table.
    pub(super) fn check(&self, at: &str, problems: &mut Vec<String>) {
        check_zones(at, &self.name, &self.zones, problems);
        check_timeout(at, self.timeout, problems);
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

    /// The driver's config.
    pub fn driver_config(&self) -> Rfc2136Config {
        Rfc2136Config {
            server: self.server.trim().to_string(),
            zones: self.zones.clone(),
            tsig_key_name: self.tsig_key_name.clone(),
            tsig_algorithm: self.tsig_algorithm,
            tsig_secret_file: self.tsig_secret_file.clone(),
            timeout: self.timeout,
            axfr: self.axfr,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{AccountConfig, ApplierConfig};
    use std::path::Path;

    const PDNS: &str = r#"
[[accounts]]
name = "powerdns"
driver = "pdns"
zones = ["Example.COM"]
api_url = "http://127.0.0.1:8081/api/v1"
api_key_file = "/etc/dnsplane/pdns-api-key"
"#;

    const BIND: &str = r#"
[[accounts]]
name = "bind"
driver = "rfc2136"
zones = ["example.org.", "example.net."]
server = "127.0.0.1:5353"
tsig_key_name = "dnsplane-key"
tsig_algorithm = "hmac-sha512"
tsig_secret_file = "/etc/bind/dnsplane.key"
timeout = "3s"
axfr = false
"#;

    fn parse(text: &str) -> Result<ApplierConfig, String> {
        ApplierConfig::from_toml(Path::new("applier.toml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn parses_both_drivers_with_their_defaults() {
        let c = parse(&format!("{PDNS}{BIND}")).unwrap();
        let AccountConfig::Pdns(p) = &c.accounts[0] else {
            panic!("{:?}", c.accounts[0]);
        };
        assert_eq!(c.accounts[0].driver(), "pdns");
        assert_eq!(p.zones[0].as_str(), "example.com.");
        let d = p.driver_config();
        assert_eq!(d.server_id, "localhost");
        assert_eq!(d.timeout, Duration::from_secs(10));
        assert_eq!(
            d.api_key,
            SecretSource::File("/etc/dnsplane/pdns-api-key".into())
        );
        let env = parse(&PDNS.replace(
            "api_key_file = \"/etc/dnsplane/pdns-api-key\"",
            "api_key_env = \"PDNS_API_KEY\"",
        ))
        .unwrap();
        let AccountConfig::Pdns(p) = &env.accounts[0] else {
            panic!()
        };
        assert_eq!(
            p.driver_config().api_key,
            SecretSource::Env("PDNS_API_KEY".into())
        );

        let AccountConfig::Rfc2136(r) = &c.accounts[1] else {
            panic!("{:?}", c.accounts[1]);
        };
        assert_eq!(c.accounts[1].name(), "bind");
        let d = r.driver_config();
        assert_eq!(d.zones.len(), 2);
        assert_eq!(d.tsig_algorithm, Some(TsigAlgorithm::HmacSha512));
        assert_eq!(d.timeout, Duration::from_secs(3));
        assert!(!d.axfr);
        let minimal = parse(
            "[[accounts]]\nname = \"b\"\ndriver = \"rfc2136\"\nzones = [\"a.test\"]\nserver = \"ns1.example:53\"\n",
        )
        .unwrap();
        let AccountConfig::Rfc2136(r) = &minimal.accounts[0] else {
            panic!()
        };
        assert!(r.axfr && r.tsig_secret_file.is_none() && r.tsig_algorithm.is_none());
    }

    #[test]
    fn fault_rules_and_the_circuit_apply_to_both_drivers() {
        for base in [PDNS, BIND] {
            let c = parse(&format!(
                "{base}[accounts.circuit]\ncool_down = \"2s\"\n\
                 [[accounts.faults]]\nop = \"apply\"\naction = \"ambiguous_after_commit\"\ntimes = 1\n"
            ))
            .unwrap();
            let a = &c.accounts[0];
            assert_eq!(a.faults().len(), 1);
            assert_eq!(a.circuit().cool_down, Duration::from_secs(2));
            assert_eq!(a.options().unwrap().faults.len(), 1);
            let plain = parse(base).unwrap();
            assert!(plain.accounts[0].faults().is_empty());
        }
    }

    /// The minimal configs docs/providers.md gives users parse and validate as is.
    #[test]
    fn the_documented_configs_load() {
        let doc = include_str!("../../../docs/providers.md");
        let blocks: Vec<String> = doc
            .split("```toml")
            .skip(1)
            .map(|b| {
                let body = b.split("```").next().unwrap_or_default();
                // Indented inside a list item: strip the common indent.
                body.lines()
                    .map(|l| l.strip_prefix("   ").unwrap_or(l))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .collect();
        assert_eq!(blocks.len(), 2, "one block per driver");
        let drivers: Vec<&str> = blocks
            .iter()
            .map(|b| {
                let c = parse(b).unwrap_or_else(|e| panic!("{e}\n{b}"));
                c.accounts[0].driver()
            })
            .collect();
        assert_eq!(drivers, ["pdns", "rfc2136"]);
    }

    #[test]
    fn driver_problems_are_named() {
        for (text, want) in [
            (
                PDNS.replace("api_url = \"http://127.0.0.1:8081/api/v1\"\n", ""),
                "missing field `api_url`",
            ),
            (
                PDNS.replace("http://127.0.0.1:8081/api/v1", "ftp://x"),
                "accounts[0].api_url \"ftp://x\" must be an http:// or https:// URL",
            ),
            (
                PDNS.replace("api_key_file = \"/etc/dnsplane/pdns-api-key\"\n", ""),
                "accounts[0]: the API key is missing",
            ),
            (
                format!("{PDNS}api_key_env = \"K\"\n"),
                "set only one of api_key_file and api_key_env",
            ),
            (
                format!("{PDNS}api_key = \"s3cret\"\n"),
                "unknown field `api_key`",
            ),
            (
                PDNS.replace("[\"Example.COM\"]", "[]"),
                "accounts[0].zones is empty",
            ),
            (
                PDNS.replace("[\"Example.COM\"]", "[\"a.test\", \"A.test.\"]"),
                "lists a.test. twice",
            ),
            (format!("{PDNS}timeout = \"0s\"\n"), "accounts[0].timeout"),
            (
                BIND.replace("127.0.0.1:5353", "127.0.0.1"),
                "accounts[0].server \"127.0.0.1\" must be address:port",
            ),
            (
                BIND.replace("tsig_secret_file = \"/etc/bind/dnsplane.key\"\n", ""),
                "tsig_key_name is set but tsig_secret_file is not",
            ),
            (
                BIND.replace("hmac-sha512", "hmac-md5"),
                "unknown variant `hmac-md5`",
            ),
            (
                format!("{BIND}state_dir = \"x\"\n"),
                "unknown field `state_dir`",
            ),
            (
                format!("{PDNS}{}", PDNS.replace("Example.COM", "other.test")),
                "accounts[1].name \"powerdns\" is used by another account",
            ),
        ] {
            let e = parse(&text).unwrap_err();
            assert!(e.starts_with("config applier.toml: "), "{e}");
            assert!(e.contains(want), "{want:?} not in: {e}");
            assert!(!e.contains("s3cret"), "{e}");
        }
    }
}
