//! The applier's config file: which provider accounts it writes to and how it treats
//! them. Validated as a whole before any port is bound.
//!
//! ```toml
//! cache_ttl = "30s"
//! max_concurrent_batches = 8
//!
//! [[accounts]]
//! name = "embedded"
//! driver = "memory"
//! zones = ["example.com."]
//! state_dir = ".dnsplane-state/embedded"
//! dns_listen = "127.0.0.1:10053"
//! ```
//!
//! Accounts on existing servers (`driver = "pdns"`, `driver = "rfc2136"`) are
//! described in [`drivers`].
//!
//! Per account, optionally, the circuit breaker and fault injection (for tests and
//! chaos runs) — [`CircuitConfig`], [`FaultRuleConfig`]; the retry knobs are
//! [`RetryPolicy`]. `docs/reliability.md` explains them for users.
//!
//! ```toml
//! [accounts.circuit]
//! cool_down = "30s"
//!
//! [[accounts.faults]]
//! op = "apply"
//! action = "rate_limited"
//! retry_after = "2s"
//! times = 1
//! ```
use crate::account::AccountOptions;
use crate::circuit::CircuitConfig;
use crate::provider::fault::{FaultRuleConfig, compile_rules};
use crate::quota::{Quota, QuotaConfig, QuotaSettings};
use crate::retry::RetryPolicy;
use dnsplane_common::Name;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod drivers;
pub use drivers::{PdnsAccount, Rfc2136Account};

/// The account `dnsplane up` runs everything on.
pub const EMBEDDED_ACCOUNT: &str = "embedded";

/// Why a config cannot be used. Every variant names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("config {path}: {problem}")]
    Invalid { path: PathBuf, problem: String },
}

/// The whole file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplierConfig {
    /// How long a zone listing is served from cache before it is revalidated (by the
    /// zone serial where the provider has one) or read again. Default 30s.
    #[serde(default = "default_cache_ttl", with = "humantime_serde")]
    pub cache_ttl: Duration,
    /// Batches executed at once across all zones; a zone never has more than one in
    /// flight whatever this says. Default 8.
    #[serde(default = "default_max_concurrent_batches")]
    pub max_concurrent_batches: usize,
    /// How long shutdown waits for in-flight batches before ending the streams.
    /// Default 10s.
    #[serde(default = "default_shutdown_grace", with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// Retries of transient provider failures inside one batch (`[retry]`).
    #[serde(default)]
    pub retry: RetryPolicy,
    /// The provider accounts this applier writes to, addressed by name by planners.
    #[serde(default)]
    pub accounts: Vec<AccountConfig>,
}

/// One provider account; `driver` selects the kind and the fields that follow.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "driver", rename_all = "lowercase")]
#[non_exhaustive]
pub enum AccountConfig {
    /// The embedded store, answering DNS itself.
    Memory(MemoryAccount),
    /// A PowerDNS Authoritative Server, through its HTTP API.
    Pdns(PdnsAccount),
    /// A primary accepting DNS UPDATE with TSIG (BIND, Knot, PowerDNS).
    Rfc2136(Rfc2136Account),
}

impl AccountConfig {
    pub fn name(&self) -> &str {
        match self {
            AccountConfig::Memory(m) => &m.name,
            AccountConfig::Pdns(p) => &p.name,
            AccountConfig::Rfc2136(r) => &r.name,
        }
    }

    pub fn driver(&self) -> &'static str {
        match self {
            AccountConfig::Memory(_) => "memory",
            AccountConfig::Pdns(_) => "pdns",
            AccountConfig::Rfc2136(_) => "rfc2136",
        }
    }

    pub fn zones(&self) -> &[Name] {
        match self {
            AccountConfig::Memory(m) => &m.zones,
            AccountConfig::Pdns(p) => &p.zones,
            AccountConfig::Rfc2136(r) => &r.zones,
        }
    }

    /// The account's fault rules (`[[accounts.faults]]`), whatever the driver.
    pub fn faults(&self) -> &[FaultRuleConfig] {
        match self {
            AccountConfig::Memory(m) => &m.faults,
            AccountConfig::Pdns(p) => &p.faults,
            AccountConfig::Rfc2136(r) => &r.faults,
        }
    }

    /// The account's circuit breaker knobs (defaults where the table has none).
    pub fn circuit(&self) -> CircuitConfig {
        match self {
            AccountConfig::Memory(m) => m.circuit.clone(),
            AccountConfig::Pdns(p) => p.circuit.clone(),
            AccountConfig::Rfc2136(r) => r.circuit.clone(),
        }
    }

    /// The account's `[accounts.quota]` table, whatever the driver.
    pub fn quota(&self) -> Option<&QuotaConfig> {
        match self {
            AccountConfig::Memory(m) => m.quota.as_ref(),
            AccountConfig::Pdns(p) => p.quota.as_ref(),
            AccountConfig::Rfc2136(r) => r.quota.as_ref(),
        }
    }

    /// The account's run options (compiled fault rules, circuit knobs, the quota:
    /// its table over the driver's default); problems are reported relative to the
    /// account's table.
    pub fn options(&self) -> Result<AccountOptions, Vec<String>> {
        let faults = compile_rules(self.faults(), self.zones());
        let quota = QuotaSettings::resolve(self.driver(), self.quota()).and_then(|s| {
            s.map(|s| Quota::new(self.name(), s).map(std::sync::Arc::new))
                .transpose()
                .map_err(|e| vec![format!("quota.redis: {e}")])
        });
        match (faults, quota) {
            (Ok(faults), Ok(quota)) => Ok(AccountOptions {
                faults,
                circuit: self.circuit(),
                quota,
            }),
            (faults, quota) => Err(faults
                .err()
                .unwrap_or_default()
                .into_iter()
                .chain(quota.err().unwrap_or_default())
                .collect()),
        }
    }
}

/// `driver = "memory"`: zones kept in a local crash-safe store.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryAccount {
    /// The account's name, as planners address it.
    pub name: String,
    /// Zones hosted; each is created empty on first start.
    pub zones: Vec<Name>,
    /// Directory of the store (snapshot and journal), created if missing. A relative
    /// path is relative to the working directory.
    pub state_dir: PathBuf,
    /// Address to answer DNS queries on, UDP and TCP (e.g. "127.0.0.1:10053").
    /// Absent: no DNS.
    #[serde(default)]
    pub dns_listen: Option<SocketAddr>,
    /// The account's circuit breaker (`[accounts.circuit]`); defaults when absent.
    #[serde(default)]
    pub circuit: CircuitConfig,
    /// Fault injection rules (`[[accounts.faults]]`), tried in order on every provider
    /// call. For tests and chaos runs; absent in production.
    #[serde(default)]
    pub faults: Vec<FaultRuleConfig>,
    /// The account's provider quota (`[accounts.quota]`, see [`crate::quota`]).
    #[serde(default)]
    pub quota: Option<QuotaConfig>,
}

fn default_cache_ttl() -> Duration {
    Duration::from_secs(30)
}
fn default_max_concurrent_batches() -> usize {
    8
}
fn default_shutdown_grace() -> Duration {
    Duration::from_secs(10)
}

impl ApplierConfig {
    /// The config of `dnsplane up`: one memory account named [`EMBEDDED_ACCOUNT`].
    pub fn embedded(
        state_dir: impl Into<PathBuf>,
        dns_listen: Option<SocketAddr>,
        zones: Vec<Name>,
    ) -> Self {
        ApplierConfig {
            cache_ttl: default_cache_ttl(),
            max_concurrent_batches: default_max_concurrent_batches(),
            shutdown_grace: default_shutdown_grace(),
            retry: RetryPolicy::default(),
            accounts: vec![AccountConfig::Memory(MemoryAccount {
                name: EMBEDDED_ACCOUNT.into(),
                zones,
                state_dir: state_dir.into(),
                dns_listen,
                circuit: CircuitConfig::default(),
                faults: Vec::new(),
                quota: None,
            })],
        }
    }

    /// Parses a config from TOML text; `path` only names the source in errors.
    pub fn from_toml(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let config: ApplierConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        config.validate().map_err(|problem| ConfigError::Invalid {
            path: path.to_path_buf(),
            problem,
        })?;
        Ok(config)
    }

    /// Checks what serde cannot: at least one account, unique names, state
    /// directories and DNS addresses, non-empty zone lists. All problems are reported
    /// at once.
    pub fn validate(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        if self.accounts.is_empty() {
            problems.push("no [[accounts]]: the applier has nothing to write to".to_string());
        }
        if self.max_concurrent_batches == 0 {
            problems.push("max_concurrent_batches must be at least 1".to_string());
        }
        problems.extend(self.retry.problems());
        let mut names = BTreeSet::new();
        let mut dirs = BTreeSet::new();
        let mut listens = BTreeSet::new();
        for (i, account) in self.accounts.iter().enumerate() {
            let at = format!("accounts[{i}]");
            let name = account.name();
            if name.trim().is_empty() || name.chars().any(char::is_whitespace) {
                problems.push(format!(
                    "{at}.name {name:?} must be non-empty and without spaces"
                ));
            } else if !names.insert(name) {
                problems.push(format!("{at}.name {name:?} is used by another account"));
            }
            problems.extend(account.circuit().problems(&format!("{at}.circuit")));
            if let Err(ps) = account.options() {
                problems.extend(ps.into_iter().map(|p| format!("{at}.{p}")));
            }
            match account {
                AccountConfig::Memory(m) => {
                    if m.zones.is_empty() {
                        problems.push(format!(
                            "{at}.zones is empty: account {name:?} hosts nothing"
                        ));
                    }
                    let mut zones = BTreeSet::new();
                    for z in &m.zones {
                        if !zones.insert(z) {
                            problems.push(format!("{at}.zones lists {z} twice"));
                        }
                    }
                    if m.state_dir.as_os_str().is_empty() {
                        problems.push(format!("{at}.state_dir is empty"));
                    } else if !dirs.insert(&m.state_dir) {
                        problems.push(format!(
                            "{at}.state_dir {} is used by another account (two stores in one directory would corrupt each other)",
                            m.state_dir.display()
                        ));
                    }
                    if let Some(addr) = m.dns_listen
                        && addr.port() != 0
                        && !listens.insert(addr)
                    {
                        problems.push(format!("{at}.dns_listen {addr} is used by another account"));
                    }
                }
                AccountConfig::Pdns(p) => p.check(&at, &mut problems),
                AccountConfig::Rfc2136(r) => r.check(&at, &mut problems),
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

/// Reads, parses and validates the config file at `path`.
pub fn load_config(path: &Path) -> Result<ApplierConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    ApplierConfig::from_toml(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ApplierConfig, ConfigError> {
        ApplierConfig::from_toml(Path::new("applier.toml"), text)
    }

    const EXAMPLE: &str = r#"
cache_ttl = "45s"
max_concurrent_batches = 4
[retry]
max_attempts = 3
base_delay = "50ms"
[[accounts]]
name = "embedded"
driver = "memory"
zones = ["Example.COM", "example.org."]
state_dir = ".dnsplane-state/embedded"
dns_listen = "127.0.0.1:10053"
"#;

    #[test]
    fn parses_the_documented_format() {
        let c = parse(EXAMPLE).unwrap();
        assert_eq!(c.cache_ttl, Duration::from_secs(45));
        assert_eq!(c.max_concurrent_batches, 4);
        assert_eq!(c.shutdown_grace, Duration::from_secs(10));
        assert_eq!(c.retry.max_attempts, 3);
        assert_eq!(c.retry.base_delay, Duration::from_millis(50));
        assert_eq!(c.retry.max_delay, RetryPolicy::default().max_delay);
        let AccountConfig::Memory(m) = &c.accounts[0] else {
            panic!("a memory account: {:?}", c.accounts[0]);
        };
        assert_eq!(m.zones[0].as_str(), "example.com.");
        assert_eq!(m.dns_listen, Some("127.0.0.1:10053".parse().unwrap()));
        let embedded = ApplierConfig::embedded(".dnsplane-state/embedded", None, vec![]);
        assert_eq!(embedded.accounts[0].name(), EMBEDDED_ACCOUNT);
    }

    #[test]
    fn errors_name_the_file_and_the_problem() {
        for (text, want) in [
            (
                EXAMPLE.replace("cache_ttl", "cache_tll"),
                "unknown field `cache_tll`",
            ),
            (
                EXAMPLE.replace("dns_listen", "dns_lisen"),
                "unknown field `dns_lisen`",
            ),
            (
                EXAMPLE.replace("\"memory\"", "\"route66\""),
                "unknown variant `route66`",
            ),
            (EXAMPLE.replace("Example.COM", "bad..name"), "bad..name"),
            (EXAMPLE.replace("\"45s\"", "\"soon\""), "cache_ttl"),
            (
                EXAMPLE.replace("max_concurrent_batches = 4", "max_concurrent_batches = 0"),
                "max_concurrent_batches",
            ),
            (
                format!(
                    "{EXAMPLE}{}",
                    &EXAMPLE[EXAMPLE.find("[[accounts]]").unwrap()..]
                ),
                "is used by another account",
            ),
            ("cache_ttl = \"1s\"".to_string(), "no [[accounts]]"),
            (
                EXAMPLE.replace("zones = [\"Example.COM\", \"example.org.\"]", "zones = []"),
                "hosts nothing",
            ),
        ] {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.starts_with("config applier.toml: "), "{e}");
            assert!(e.contains(want), "{want:?} not in: {e}");
        }
        let e = load_config(Path::new("/nonexistent/applier.toml")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/applier.toml"), "{e}");
    }

    /// The reliability tables: retry knobs, an account's circuit and fault rules.
    const RELIABILITY: &str = r#"
[retry]
max_attempts = 5
max_retry_after = "8s"
batch_deadline = "30s"
[[accounts]]
name = "embedded"
driver = "memory"
zones = ["example.com."]
state_dir = "state"
[accounts.circuit]
cool_down = "2s"
max_cool_down = "20s"
jitter = 0.0
[[accounts.faults]]
op = "apply"
action = "ambiguous_after_commit"
times = 1
[[accounts.faults]]
action = "other_writer"
records = [{ name = "taken.example.com.", type = "A", values = ["198.51.100.7"] }]
"#;

    #[test]
    fn parses_retry_circuit_and_fault_tables() {
        let c = parse(RELIABILITY).unwrap();
        assert_eq!(c.retry.max_attempts, 5);
        assert_eq!(c.retry.max_retry_after, Duration::from_secs(8));
        assert_eq!(c.retry.batch_deadline, Duration::from_secs(30));
        assert_eq!(c.retry.base_delay, RetryPolicy::default().base_delay);
        let account = &c.accounts[0];
        assert_eq!(account.circuit().cool_down, Duration::from_secs(2));
        assert_eq!(account.circuit().jitter, 0.0);
        assert_eq!(account.faults().len(), 2);
        assert_eq!(account.options().unwrap().faults.len(), 2);
        // Defaults when the tables are absent.
        let plain = parse(EXAMPLE).unwrap();
        assert_eq!(plain.accounts[0].circuit(), CircuitConfig::default());
        assert!(plain.accounts[0].faults().is_empty());
    }

    /// The example in docs/reliability.md is a valid config.
    #[test]
    fn the_documented_fault_example_is_valid() {
        let doc = include_str!("../../docs/reliability.md");
        let block = doc
            .split("```toml\n")
            .skip(1)
            .filter_map(|b| b.split("```").next())
            .find(|b| b.contains("[[accounts.faults]]"))
            .expect("a fault example in docs/reliability.md");
        let c = parse(block).unwrap_or_else(|e| panic!("{e}\n{block}"));
        assert_eq!(c.accounts[0].faults().len(), 4);
        assert_eq!(c.accounts[0].circuit().cool_down, Duration::from_secs(5));
    }

    #[test]
    fn reliability_problems_name_the_table() {
        for (from, to, want) in [
            (
                "cool_down = \"2s\"",
                "cool_down = \"0s\"",
                "accounts[0].circuit.cool_down",
            ),
            ("jitter = 0.0", "jitter = 2.0", "accounts[0].circuit.jitter"),
            ("jitter = 0.0", "jiter = 0.0", "unknown field `jiter`"),
            ("max_attempts = 5", "max_attempts = 0", "retry.max_attempts"),
            (
                "times = 1",
                "times = 1\ndelay = \"1s\"",
                "accounts[0].faults[0]: action ambiguous_after_commit does not use delay",
            ),
            (
                "taken.example.com.",
                "taken.example.net.",
                "accounts[0].faults[1]: records[0]",
            ),
            (
                "action = \"other_writer\"",
                "action = \"meteor\"",
                "unknown variant `meteor`",
            ),
        ] {
            assert!(RELIABILITY.contains(from), "{from}");
            let e = parse(&RELIABILITY.replace(from, to))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{want:?} not in: {e}");
        }
    }
}
