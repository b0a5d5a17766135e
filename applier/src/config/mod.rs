//! The applier's config file: which provider accounts it writes to and how it treats
//! them. Validated as a whole before any port is bound.
//!
//! ```toml
//! cache_ttl = "30s"
//! record_cache_drift_check = "15m"
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
//! An account is one [`AccountConfig`]: the keys every driver shares (`name`, `zones`,
//! `[accounts.circuit]`, `[[accounts.faults]]`, `[accounts.quota]`) and a
//! [`DriverConfig`], selected by `driver`, whose fields are the driver's own table
//! (each driver's folder owns its config: [`MemoryConfig`], [`PdnsConfig`],
//! [`Rfc2136Config`], [`Route53Config`], [`CloudDnsConfig`],
//! [`CloudflareConfig`], [`WebhookConfig`], [`AzureConfig`]). Unknown keys are refused with their name, whichever part they
//! would belong to. A new driver is one enum arm and one folder.
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
use crate::circuit::CircuitConfig;
use crate::provider::azure::AzureConfig;
use crate::provider::clouddns::CloudDnsConfig;
use crate::provider::cloudflare::CloudflareConfig;
use crate::provider::fault::{FaultRuleConfig, compile_rules};
use crate::provider::memory::MemoryConfig;
use crate::provider::pdns::PdnsConfig;
use crate::provider::rfc2136::Rfc2136Config;
use crate::provider::route53::Route53Config;
use crate::provider::webhook::WebhookConfig;
use crate::quota::{PacingConfig, QuotaConfig, QuotaSettings};
use crate::retry::RetryPolicy;
use dnsplane_common::Name;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// How often each zone's cached content is read whole again to find changes its
    /// serial cannot show (a database edit without a serial bump): every
    /// `record_cache_drift_check` ±50% per zone, at most one zone per account every
    /// 1/100 of it. Only drivers with a record cache (`pdns`, `route53`, `cloudflare`,
    /// `webhook`) use it.
    /// `0s`: no record cache, every batch reads what it touches first (for zones that
    /// something changes without moving the serial). Default 15m.
    #[serde(default = "default_record_cache_drift_check", with = "humantime_serde")]
    pub record_cache_drift_check: Duration,
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
    /// `[tls]`: gRPC and the admin port over TLS; with `client_ca`, mTLS on gRPC.
    /// Absent: plaintext (keep the ports on loopback or a private network then).
    #[serde(default)]
    pub tls: Option<ApplierTlsConfig>,
}

/// `[tls]`: the applier's certificate and who may call it. Paths are relative to the
/// config file.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplierTlsConfig {
    /// PEM certificate chain (leaf first) served on gRPC and admin; re-read when it
    /// changes.
    pub cert: PathBuf,
    /// PEM private key of `cert`; re-read when it changes.
    pub key: PathBuf,
    /// PEM CA bundle: gRPC clients must present a certificate chaining to it, or the
    /// handshake fails (mTLS). The admin port asks none (probes and scrapers).
    #[serde(default)]
    pub client_ca: Option<PathBuf>,
    /// Only client certificates with one of these DNS names (subjectAltName) are
    /// served; others get PERMISSION_DENIED naming what they presented. Empty: any
    /// certificate of `client_ca`. Needs `client_ca`.
    #[serde(default)]
    pub allowed_names: Vec<String>,
    /// Only client certificates with one of these DNS names may send batches (`Apply`)
    /// and claims (`Claim`): the planners'. Other certificates the connection lets in
    /// may only read (`ListRecords`, `GetStatus`), so an operator's certificate can
    /// never write or fence a planner out. Empty: every client may write. Needs
    /// `client_ca`.
    #[serde(default)]
    pub writer_names: Vec<String>,
}

impl ApplierTlsConfig {
    /// What the TLS layer reads.
    pub fn settings(&self) -> dnsplane_common::tls::ServerTlsSettings {
        dnsplane_common::tls::ServerTlsSettings {
            cert: self.cert.clone(),
            key: self.key.clone(),
            client_ca: self.client_ca.clone(),
            client_auth: dnsplane_common::tls::ClientAuth::Required,
        }
    }

    fn resolve_paths(&mut self, base: &Path) {
        for p in [&mut self.cert, &mut self.key]
            .into_iter()
            .chain(self.client_ca.as_mut())
        {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
    }
}

/// One provider account: what every driver shares, and the driver's own part.
#[derive(Clone, Debug, PartialEq)]
pub struct AccountConfig {
    /// The account's name, as planners address it.
    pub name: String,
    /// Zones the account hosts (the memory driver creates them; on a server they must
    /// exist).
    pub zones: Vec<Name>,
    /// The account's circuit breaker (`[accounts.circuit]`); defaults when absent.
    pub circuit: CircuitConfig,
    /// Fault injection rules (`[[accounts.faults]]`), tried in order on every provider
    /// call (docs/reliability.md). For tests and chaos runs; absent in production.
    pub faults: Vec<FaultRuleConfig>,
    /// The account's provider quota (`[accounts.quota]`, see [`crate::quota`]).
    pub quota: Option<QuotaConfig>,
    /// How the account paces itself after its provider's 429 answers
    /// (`[accounts.pacing]`, see [`crate::quota::pacer`]); on by default.
    pub pacing: PacingConfig,
    /// `driver = "…"` and the driver's own keys.
    pub driver: DriverConfig,
}

/// Every `driver` an account may name.
pub const DRIVERS: [&str; 8] = [
    "memory",
    "pdns",
    "rfc2136",
    "route53",
    "clouddns",
    "cloudflare",
    "webhook",
    "azure",
];

/// The driver of an account and its own keys, tagged by `driver`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "driver", rename_all = "lowercase", deny_unknown_fields)]
#[non_exhaustive]
pub enum DriverConfig {
    /// The embedded store, answering DNS itself.
    Memory(MemoryConfig),
    /// A PowerDNS Authoritative Server, through its HTTP API.
    Pdns(PdnsConfig),
    /// A primary accepting DNS UPDATE with TSIG (BIND, Knot, PowerDNS).
    Rfc2136(Rfc2136Config),
    /// AWS Route 53 (or its API elsewhere: `endpoint`).
    Route53(Route53Config),
    /// Google Cloud DNS (or its API elsewhere: `endpoint`).
    #[serde(rename = "clouddns")]
    CloudDns(CloudDnsConfig),
    /// Cloudflare (or its API elsewhere: `endpoint`).
    Cloudflare(CloudflareConfig),
    /// An external-dns webhook provider (a sidecar speaking the webhook protocol).
    Webhook(WebhookConfig),
    /// Azure DNS or Azure Private DNS (or its API elsewhere: `endpoint`).
    Azure(AzureConfig),
}

impl DriverConfig {
    /// The driver's name as written in the config.
    pub fn name(&self) -> &'static str {
        match self {
            DriverConfig::Memory(_) => "memory",
            DriverConfig::Pdns(_) => "pdns",
            DriverConfig::Rfc2136(_) => "rfc2136",
            DriverConfig::Route53(_) => "route53",
            DriverConfig::CloudDns(_) => "clouddns",
            DriverConfig::Cloudflare(_) => "cloudflare",
            DriverConfig::Webhook(_) => "webhook",
            DriverConfig::Azure(_) => "azure",
        }
    }

    /// The driver `name`'s config from the rest of its account's table. Read by hand,
    /// not through serde's internally tagged enum, which buffers the table and so loses
    /// the path of a key inside it: an error here begins with that path.
    fn from_table(name: &str, table: toml::Table) -> Result<DriverConfig, String> {
        fn read<T: DeserializeOwned>(
            table: toml::Table,
            driver: fn(T) -> DriverConfig,
        ) -> Result<DriverConfig, String> {
            serde_path_to_error::deserialize(toml::Value::Table(table))
                .map(driver)
                .map_err(|e| at_path(None, &e))
        }
        match name {
            "memory" => read(table, DriverConfig::Memory),
            "pdns" => read(table, DriverConfig::Pdns),
            "rfc2136" => read(table, DriverConfig::Rfc2136),
            "route53" => read(table, DriverConfig::Route53),
            "clouddns" => read(table, DriverConfig::CloudDns),
            "cloudflare" => read(table, DriverConfig::Cloudflare),
            "webhook" => read(table, DriverConfig::Webhook),
            "azure" => read(table, DriverConfig::Azure),
            other => Err(format!(
                "driver: unknown variant `{other}`, expected one of {}",
                DRIVERS.map(|d| format!("`{d}`")).join(", ")
            )),
        }
    }

    /// Adds every problem with the driver's keys to `problems`; `at` names the table,
    /// `zones` are the account's.
    fn check(&self, at: &str, zones: &[Name], problems: &mut Vec<String>) {
        match self {
            DriverConfig::Memory(m) => m.check(at, problems),
            DriverConfig::Pdns(p) => p.check(at, problems),
            DriverConfig::Rfc2136(r) => r.check(at, problems),
            DriverConfig::Route53(r) => r.check(at, zones, problems),
            DriverConfig::CloudDns(c) => c.check(at, zones, problems),
            DriverConfig::Cloudflare(c) => c.check(at, zones, problems),
            DriverConfig::Webhook(w) => w.check(at, problems),
            DriverConfig::Azure(a) => a.check(at, zones, problems),
        }
    }
}

/// serde cannot combine `flatten` with `deny_unknown_fields`, so the table is split by
/// hand: the shared keys are taken out, and what is left must be exactly one driver's
/// table (which refuses unknown keys by name).
impl<'de> Deserialize<'de> for AccountConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut table = toml::Table::deserialize(deserializer)?;
        fn take<T: DeserializeOwned, E: serde::de::Error>(
            table: &mut toml::Table,
            key: &str,
        ) -> Result<Option<T>, E> {
            table
                .remove(key)
                .map(|v| {
                    serde_path_to_error::deserialize(v)
                        .map_err(|e| E::custom(at_path(Some(key), &e)))
                })
                .transpose()
        }
        let name: String =
            take(&mut table, "name")?.ok_or_else(|| D::Error::missing_field("name"))?;
        let zones: Vec<Name> =
            take(&mut table, "zones")?.ok_or_else(|| D::Error::missing_field("zones"))?;
        let circuit = take(&mut table, "circuit")?.unwrap_or_default();
        let faults = take(&mut table, "faults")?.unwrap_or_default();
        let quota = take(&mut table, "quota")?;
        let pacing = take(&mut table, "pacing")?.unwrap_or_default();
        let driver: String =
            take(&mut table, "driver")?.ok_or_else(|| D::Error::missing_field("driver"))?;
        let driver = DriverConfig::from_table(&driver, table).map_err(D::Error::custom)?;
        Ok(AccountConfig {
            name,
            zones,
            circuit,
            faults,
            quota,
            pacing,
            driver,
        })
    }
}

/// A driver's or shared key's error, prefixed with the key path it is about
/// (`dns_rate_limit.burst: invalid type …`): the account is read whole, so the error
/// would otherwise name no key and point at the `[[accounts]]` header
/// ([`dnsplane_common::toml_error`] finds the key's line from this prefix).
fn at_path(key: Option<&str>, e: &serde_path_to_error::Error<toml::de::Error>) -> String {
    let inner = e.inner().message();
    let mut path = e.path().to_string();
    // serde's path of an unknown key ends with the key, which the message names.
    if let Some(field) = inner
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next())
    {
        path = match path.rsplit_once('.') {
            Some((parent, last)) if last == field => parent.to_string(),
            _ if path == field => ".".to_string(),
            _ => path,
        };
    }
    let path = match (key, path.as_str()) {
        (Some(k), ".") => k.to_string(),
        (Some(k), p) => format!("{k}.{p}"),
        (None, ".") => return inner.to_string(),
        (None, p) => p.to_string(),
    };
    format!("{path}: {inner}")
}

fn default_cache_ttl() -> Duration {
    Duration::from_secs(30)
}
fn default_record_cache_drift_check() -> Duration {
    crate::provider::record_cache::DEFAULT_DRIFT_CHECK
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
            record_cache_drift_check: default_record_cache_drift_check(),
            max_concurrent_batches: default_max_concurrent_batches(),
            shutdown_grace: default_shutdown_grace(),
            retry: RetryPolicy::default(),
            tls: None,
            accounts: vec![AccountConfig {
                name: EMBEDDED_ACCOUNT.into(),
                zones,
                circuit: CircuitConfig::default(),
                faults: Vec::new(),
                quota: None,
                pacing: PacingConfig::default(),
                driver: DriverConfig::Memory(MemoryConfig {
                    state_dir: state_dir.into(),
                    dns_listen,
                    dns_rate_limit: Default::default(),
                    dns_transfer: Default::default(),
                }),
            }],
        }
    }

    /// Parses a config from TOML text; `path` names the source in errors, and the
    /// `[tls]` files are relative to its directory.
    pub fn from_toml(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let mut config: ApplierConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: dnsplane_common::toml_error::describe(text, &e),
        })?;
        if let Some(tls) = &mut config.tls {
            tls.resolve_paths(path.parent().unwrap_or(Path::new(".")));
        }
        config.validate().map_err(|problem| ConfigError::Invalid {
            path: path.to_path_buf(),
            problem,
        })?;
        Ok(config)
    }

    /// Checks what serde cannot: at least one account, unique names, state
    /// directories and DNS addresses, non-empty zone lists, each driver's keys, the
    /// fault rules and quotas. All problems are reported at once. Builds nothing.
    pub fn validate(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        if self.accounts.is_empty() {
            problems.push("no [[accounts]]: the applier has nothing to write to".to_string());
        }
        if self.max_concurrent_batches == 0 {
            problems.push("max_concurrent_batches must be at least 1".to_string());
        }
        if !self.record_cache_drift_check.is_zero()
            && self.record_cache_drift_check < Duration::from_secs(1)
        {
            problems.push(
                "record_cache_drift_check must be 0s (no record cache) or at least 1s".to_string(),
            );
        }
        problems.extend(self.retry.problems());
        if let Some(tls) = &self.tls {
            if !tls.allowed_names.is_empty() && tls.client_ca.is_none() {
                problems.push(
                    "tls.allowed_names needs tls.client_ca: names are read from verified client certificates".to_string(),
                );
            }
            if !tls.writer_names.is_empty() && tls.client_ca.is_none() {
                problems.push(
                    "tls.writer_names needs tls.client_ca: names are read from verified client certificates".to_string(),
                );
            }
            if let Some(n) = tls
                .writer_names
                .iter()
                .find(|n| !tls.allowed_names.is_empty() && !tls.allowed_names.contains(n))
            {
                problems.push(format!(
                    "tls.writer_names has {n:?}, which is not in tls.allowed_names (it could not connect)"
                ));
            }
            if tls.allowed_names.iter().any(|n| n.trim().is_empty()) {
                problems.push("tls.allowed_names has an empty name".to_string());
            }
        }
        let mut names = BTreeSet::new();
        let mut dirs = BTreeSet::new();
        let mut listens = BTreeSet::new();
        for (i, account) in self.accounts.iter().enumerate() {
            let at = format!("accounts[{i}]");
            let name = account.name.as_str();
            if name.trim().is_empty() || name.chars().any(char::is_whitespace) {
                problems.push(format!(
                    "{at}.name {name:?} must be non-empty and without spaces"
                ));
            } else if !names.insert(name) {
                problems.push(format!("{at}.name {name:?} is used by another account"));
            }
            if account.zones.is_empty() {
                problems.push(format!(
                    "{at}.zones is empty: account {name:?} hosts nothing"
                ));
            }
            let mut zones = BTreeSet::new();
            for z in &account.zones {
                if !zones.insert(z) {
                    problems.push(format!("{at}.zones lists {z} twice"));
                }
            }
            problems.extend(account.circuit.problems(&format!("{at}.circuit")));
            if let Err(ps) = compile_rules(&account.faults, &account.zones) {
                problems.extend(ps.into_iter().map(|p| format!("{at}.{p}")));
            }
            if let Err(ps) = QuotaSettings::resolve(account.driver.name(), account.quota.as_ref()) {
                problems.extend(ps.into_iter().map(|p| format!("{at}.{p}")));
            }
            problems.extend(account.pacing.problems(&format!("{at}.pacing")));
            account.driver.check(&at, &account.zones, &mut problems);
            if let DriverConfig::Memory(m) = &account.driver {
                if !m.state_dir.as_os_str().is_empty() && !dirs.insert(&m.state_dir) {
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
mod tests;
