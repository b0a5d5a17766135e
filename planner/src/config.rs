//! The planner's config file: *what* to keep in sync (zones, sources, owner id). How the
//! process runs (listen address, log format) comes from flags and the environment.
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod audit;
mod auth;
mod netbox;
mod safety;
mod source;
mod targets;
mod tls;
mod zone;

pub use audit::AuditConfig;
pub use auth::AuthConfig;
pub use safety::{SafetyConfig, SafetyMode, StateConfig};
pub use source::{
    FileFormat, KubernetesSourceConfig, NetboxSourceConfig, OutsideZones, SourceConfig,
};
pub use tls::{ApplierTlsConfig, TlsConfig};
pub use zone::{AesKey, AesKeyFile, ConflictPolicy, ExternalDnsConfig, Merge, Policy, ZoneConfig};

/// Errors loading or validating the config. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannerConfig {
    /// Owner id written into ownership records. Two planners with different owner ids
    /// never touch each other's records.
    #[serde(default = "default_owner")]
    pub owner_id: String,
    /// gRPC address of the applier, e.g. `http://127.0.0.1:50052` (used when neither
    /// `appliers` nor `applier_dns` is set).
    #[serde(default = "default_applier")]
    pub applier: String,
    /// Several appliers by address; zones are spread over them by rendezvous hashing.
    #[serde(default)]
    pub appliers: Vec<String>,
    /// `host:port` resolving to every applier (a Kubernetes headless Service),
    /// re-resolved every `pool.resolve_interval`.
    #[serde(default)]
    pub applier_dns: Option<String>,
    #[serde(default)]
    pub pool: PoolSettings,
    #[serde(default)]
    pub sync: SyncConfig,
    #[serde(default)]
    pub batch: BatchConfig,
    /// Zones under management.
    pub zones: Vec<ZoneConfig>,
    /// Desired-state sources; the gRPC push API (`PutDesired`) is always on.
    #[serde(default)]
    pub sources: Vec<SourceConfig>,
    /// Where the planner keeps what must survive a restart (the accepted desired state
    /// of every source, the lease lock). Relative to the config file's directory.
    #[serde(default = "default_state_dir")]
    pub state_dir: PathBuf,
    /// `[state]`: the free-space floor of `state_dir`.
    #[serde(default)]
    pub state: StateConfig,
    #[serde(default)]
    pub safety: SafetyConfig,
    /// One writer per owner id: the lease a planner must hold to send batches.
    #[serde(default)]
    pub lease: LeaseConfig,
    /// `[webhook]`: serve external-dns's webhook provider protocol (absent: off).
    #[serde(default)]
    pub webhook: Option<WebhookConfig>,
    /// `[auth]`: bearer tokens, roles and rate limits on the gRPC API (absent: open).
    #[serde(default)]
    pub auth: Option<AuthConfig>,
    /// `[tls]`: the planner's gRPC, webhook and admin ports over TLS (absent:
    /// plaintext).
    #[serde(default)]
    pub tls: Option<TlsConfig>,
    /// `[applier_tls]`: how the planner speaks TLS to appliers (needed by, and only
    /// allowed with, `https://` applier addresses).
    #[serde(default)]
    pub applier_tls: Option<ApplierTlsConfig>,
    /// `[audit]`: the append-only audit file `dnsplane history` reads (absent: audit
    /// events go to the log only).
    #[serde(default)]
    pub audit: Option<AuditConfig>,
}

/// `[webhook]`: dnsplane as external-dns's webhook provider (`--provider=webhook`).
/// What external-dns sends becomes the desired state of one pushed source.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// Where the protocol is served; external-dns's default is `127.0.0.1:8888`
    /// (a sidecar). Health and metrics stay on the admin port.
    #[serde(default = "default_webhook_listen")]
    pub listen: std::net::SocketAddr,
    /// The pushed source external-dns's records go to (`push:<source>` in status).
    #[serde(default = "default_webhook_source")]
    pub source: String,
}

fn default_webhook_listen() -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], 8888))
}

fn default_webhook_source() -> String {
    "external-dns".into()
}

/// `[lease]`: where planners with the same `owner_id` agree on which one writes.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseConfig {
    /// `redis://[user:password@]host:port[/db]`: the lease lives in Redis (planners on
    /// several machines). Absent: an exclusive lock on `<state_dir>/lease.lock` (planners
    /// sharing one state directory, on one machine).
    #[serde(default)]
    pub redis: Option<String>,
    /// How long a Redis lease lasts without renewal: a dead holder's lease lapses this
    /// long after its last renewal, and a standby takes over within `ttl +
    /// retry_interval`.
    #[serde(with = "humantime_serde", default = "default_lease_ttl")]
    pub ttl: Duration,
    /// How often the leader renews (default `ttl / 3`, so that two renewals can fail
    /// before the leader's window closes).
    #[serde(with = "humantime_serde", default)]
    pub renew_interval: Option<Duration>,
    /// How often a standby tries to take the lease.
    #[serde(with = "humantime_serde", default = "default_lease_retry")]
    pub retry_interval: Duration,
    /// `host:port` at which other replicas' clients reach this planner's gRPC port:
    /// a standby names it when it refuses a write. Default: the `--listen` address
    /// (the host name in place of an unspecified IP).
    #[serde(default)]
    pub advertise: Option<String>,
}

impl Default for LeaseConfig {
    fn default() -> Self {
        LeaseConfig {
            redis: None,
            ttl: default_lease_ttl(),
            renew_interval: None,
            retry_interval: default_lease_retry(),
            advertise: None,
        }
    }
}

impl LeaseConfig {
    /// `renew_interval`, or its default `ttl / 3`.
    pub fn renew_interval(&self) -> Duration {
        self.renew_interval.unwrap_or(self.ttl / 3)
    }
}

/// The Redis URL may carry a password: only its host and port are shown.
impl std::fmt::Debug for LeaseConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseConfig")
            .field("redis", &self.redis.as_deref().map(redis_addr))
            .field("ttl", &self.ttl)
            .field("renew_interval", &self.renew_interval)
            .field("retry_interval", &self.retry_interval)
            .field("advertise", &self.advertise)
            .finish()
    }
}

/// `host:port` of a Redis URL, never its credentials (`?` when it does not parse).
pub fn redis_addr(url: &str) -> String {
    redis::Client::open(url).map_or_else(
        |_| "?".into(),
        |c| c.get_connection_info().addr().to_string(),
    )
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncConfig {
    /// Full re-read and re-plan of every zone this often, whatever else happens.
    #[serde(with = "humantime_serde", default = "default_interval")]
    pub interval: Duration,
    /// Least time between two syncs of one zone caused by source changes: the first
    /// change of a quiet zone is planned at once, a burst is gathered until it is over.
    #[serde(with = "humantime_serde", default = "default_min_interval")]
    pub min_interval: Duration,
    /// How long an applier may work on one batch before answering DEFERRED. It counts
    /// from when the batch leaves the planner, which sends a zone's batches only as the
    /// applier finishes earlier ones: a long sync that makes progress is never cut.
    #[serde(with = "humantime_serde", default = "default_batch_deadline")]
    pub batch_deadline: Duration,
    /// How often file sources are polled for changes.
    #[serde(with = "humantime_serde", default = "default_poll")]
    pub source_poll: Duration,
    /// First re-plan of a conflicting or failed record comes after this delay...
    #[serde(with = "humantime_serde", default = "default_retry_min")]
    pub retry_min: Duration,
    /// ...and later ones back off exponentially up to this cap.
    #[serde(with = "humantime_serde", default = "default_retry_max")]
    pub retry_max: Duration,
    /// How often each zone's serial is asked (one cheap provider call): when it moved
    /// since the last full read, the zone is read and planned again at once, so a
    /// record deleted or changed by someone else is put back within seconds rather
    /// than at the next `interval`. `0s` turns it off (providers without a serial never
    /// have it).
    #[serde(with = "humantime_serde", default = "default_drift_check")]
    pub drift_check: Duration,
    /// While a zone has records in conflict, its serial is asked this often instead of
    /// every `drift_check`; when it moved, the conflicting names are read again (a
    /// targeted read) and re-planned at once, whatever their retry clock says: a
    /// conflict whose cause someone removed converges within about this delay plus one
    /// batch. `0s` watches them at the `drift_check` pace only.
    #[serde(with = "humantime_serde", default = "default_conflict_watch")]
    pub conflict_watch: Duration,
    /// The periodic sync plans against what the planner keeps while the zone's serial
    /// has not moved (one cheap call, nothing listed); this often (±10 %, spread over
    /// zones) it reads the whole zone afresh instead, the backstop for anything a
    /// serial cannot show. (It is one of the periodic syncs: never more often than
    /// `interval`.)
    #[serde(with = "humantime_serde", default = "default_full_read")]
    pub full_read: Duration,
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig {
            interval: default_interval(),
            min_interval: default_min_interval(),
            batch_deadline: default_batch_deadline(),
            source_poll: default_poll(),
            retry_min: default_retry_min(),
            retry_max: default_retry_max(),
            drift_check: default_drift_check(),
            conflict_watch: default_conflict_watch(),
            full_read: default_full_read(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolSettings {
    /// How often every applier is health-checked (`grpc.health.v1`).
    #[serde(with = "humantime_serde", default = "default_health_interval")]
    pub health_interval: Duration,
    /// How often `applier_dns` is resolved again.
    #[serde(with = "humantime_serde", default = "default_resolve_interval")]
    pub resolve_interval: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            health_interval: default_health_interval(),
            resolve_interval: default_resolve_interval(),
        }
    }
}

fn default_health_interval() -> Duration {
    Duration::from_secs(1)
}
fn default_resolve_interval() -> Duration {
    Duration::from_secs(10)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchConfig {
    /// Changes per batch at most (the applier may cut further for its provider).
    #[serde(default = "default_max_changes")]
    pub max_changes: usize,
    /// Approximate bytes of record data per batch at most.
    #[serde(default = "default_max_bytes")]
    pub max_bytes: usize,
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            max_changes: default_max_changes(),
            max_bytes: default_max_bytes(),
        }
    }
}

fn default_lease_ttl() -> Duration {
    Duration::from_secs(10)
}
fn default_lease_retry() -> Duration {
    Duration::from_secs(2)
}
fn default_state_dir() -> PathBuf {
    PathBuf::from(".dnsplane-state")
}
fn default_owner() -> String {
    "dnsplane".into()
}
fn default_applier() -> String {
    "http://127.0.0.1:50052".into()
}
fn default_interval() -> Duration {
    Duration::from_secs(60)
}
fn default_min_interval() -> Duration {
    Duration::from_millis(500)
}
fn default_batch_deadline() -> Duration {
    Duration::from_secs(60)
}
fn default_poll() -> Duration {
    Duration::from_millis(500)
}
fn default_retry_min() -> Duration {
    Duration::from_millis(500)
}
fn default_retry_max() -> Duration {
    Duration::from_secs(30)
}
fn default_drift_check() -> Duration {
    Duration::from_secs(5)
}
fn default_conflict_watch() -> Duration {
    Duration::from_secs(1)
}
fn default_full_read() -> Duration {
    Duration::from_secs(600)
}
fn default_max_changes() -> usize {
    5000
}
fn default_max_bytes() -> usize {
    768 * 1024
}

impl PlannerConfig {
    /// A config for `zones` with every other key at its default, as an empty config
    /// file would give (for programs and tests that build a config in code; override
    /// fields with `PlannerConfig { owner_id: …, ..PlannerConfig::with_zones(zones) }`).
    pub fn with_zones(zones: Vec<ZoneConfig>) -> PlannerConfig {
        PlannerConfig {
            owner_id: default_owner(),
            applier: default_applier(),
            appliers: Vec::new(),
            applier_dns: None,
            pool: PoolSettings::default(),
            sync: SyncConfig::default(),
            batch: BatchConfig::default(),
            zones,
            sources: Vec::new(),
            state_dir: default_state_dir(),
            state: StateConfig::default(),
            safety: SafetyConfig::default(),
            lease: LeaseConfig::default(),
            webhook: None,
            auth: None,
            tls: None,
            applier_tls: None,
            audit: None,
        }
    }

    /// Reads, parses and validates `path` (reading the key files it names); relative
    /// source and key file paths become relative to it.
    pub fn load(path: &Path) -> Result<PlannerConfig, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: shown.clone(),
            source,
        })?;
        let mut config: PlannerConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: shown.clone(),
            message: dnsplane_common::toml_error::describe(&text, &e),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        if config.state_dir.is_relative() {
            config.state_dir = base.join(&config.state_dir);
        }
        for source in &mut config.sources {
            match source {
                SourceConfig::File { paths, .. } => {
                    for p in paths.iter_mut() {
                        if p.is_relative() {
                            *p = base.join(&*p);
                        }
                    }
                }
                SourceConfig::Kubernetes(k) => {
                    for p in [&mut k.kubeconfig, &mut k.token_file, &mut k.ca_file]
                        .into_iter()
                        .flatten()
                    {
                        if p.is_relative() {
                            *p = base.join(&*p);
                        }
                    }
                }
                SourceConfig::Netbox(n) => {
                    for p in [
                        Some(&mut n.token_file),
                        n.ca_file.as_mut(),
                        n.webhook_secret_file.as_mut(),
                    ]
                    .into_iter()
                    .flatten()
                    {
                        if p.is_relative() {
                            *p = base.join(&*p);
                        }
                    }
                }
            }
        }
        if let Some(a) = &mut config.audit
            && a.file.is_relative()
        {
            a.file = base.join(&a.file);
        }
        if let Some(a) = &mut config.auth
            && a.tokens_file.is_relative()
        {
            a.tokens_file = base.join(&a.tokens_file);
        }
        let tls_paths = config
            .tls
            .iter_mut()
            .flat_map(|t| [Some(&mut t.cert), Some(&mut t.key), t.client_ca.as_mut()])
            .chain(
                config
                    .applier_tls
                    .iter_mut()
                    .flat_map(|t| [Some(&mut t.ca), t.cert.as_mut(), t.key.as_mut()]),
            )
            .flatten();
        for p in tls_paths {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        }
        for z in &mut config.zones {
            if let Some(f) = z
                .external_dns
                .as_mut()
                .and_then(|e| e.aes_key_file.as_mut())
                && f.path.is_relative()
            {
                *f = AesKeyFile::new(base.join(&f.path));
            }
        }
        config.validate().map_err(|message| ConfigError::Invalid {
            path: shown,
            message,
        })?;
        Ok(config)
    }

    /// The pool's members: `appliers`, else `applier` (plus `applier_dns`).
    pub fn pool_config(&self) -> crate::pool::PoolConfig {
        let addrs = if !self.appliers.is_empty() {
            self.appliers.clone()
        } else if self.applier_dns.is_some() {
            Vec::new()
        } else {
            vec![self.applier.clone()]
        };
        crate::pool::PoolConfig {
            addrs,
            dns: self.applier_dns.clone(),
            tls: self.applier_tls.as_ref().map(|t| crate::pool::PoolTls {
                settings: t.settings(),
                server_name: t.server_name.clone(),
            }),
            health_interval: self.pool.health_interval,
            resolve_interval: self.pool.resolve_interval,
        }
    }

    /// The checks serde cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(a) = &self.auth {
            a.validate()?;
        }
        if let Some(a) = &self.audit {
            a.validate()?;
        }
        if let Some(w) = &self.webhook
            && (w.source.is_empty() || w.source.len() > 128)
        {
            return Err("webhook.source must be 1-128 characters".into());
        }
        for a in &self.pool_config().addrs {
            if !(a.starts_with("http://") || a.starts_with("https://")) {
                return Err(format!(
                    "applier address {a:?} must start with http:// or https://"
                ));
            }
            if a.starts_with("https://") && self.applier_tls.is_none() {
                return Err(format!(
                    "applier address {a:?} is https:// but there is no [applier_tls]: give its ca (the CA that signed the appliers' certificates)"
                ));
            }
            if a.starts_with("http://") && self.applier_tls.is_some() {
                return Err(format!(
                    "applier address {a:?} is plaintext http:// but [applier_tls] is set: write https://"
                ));
            }
        }
        if let Some(t) = &self.applier_tls
            && t.cert.is_some() != t.key.is_some()
        {
            return Err(
                "applier_tls: cert and key go together (the client certificate for mTLS)".into(),
            );
        }
        if let Some(d) = &self.applier_dns
            && !d
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
        {
            return Err(format!("applier_dns {d:?} must be host:port"));
        }
        // It goes into every ownership record and its TXT value: short, and only the
        // characters that cannot break the mark's `key=value,…` form.
        let id_ok = (1..=63).contains(&self.owner_id.len())
            && self
                .owner_id
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
            && self
                .owner_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !id_ok {
            return Err(format!(
                "owner_id {:?} must be 1-63 characters of letters, digits, '.', '_' and '-', starting with a letter or digit",
                self.owner_id
            ));
        }
        for source in &self.sources {
            if let SourceConfig::Netbox(n) = source {
                n.check()
                    .map_err(|e| format!("[[sources]] type = \"netbox\": {e}"))?;
            }
            if let SourceConfig::Kubernetes(k) = source {
                if k.kubeconfig.is_some() && k.api_server.is_some() {
                    return Err(
                        "a kubernetes source takes either kubeconfig or api_server, not both"
                            .into(),
                    );
                }
                if k.api_server.is_none() && (k.token_file.is_some() || k.ca_file.is_some()) {
                    return Err(
                        "a kubernetes source's token_file and ca_file go with api_server".into(),
                    );
                }
            }
        }
        self.validate_zones()?;
        if self.batch.max_changes == 0 || self.batch.max_bytes < 1024 {
            return Err("batch.max_changes must be ≥ 1 and batch.max_bytes ≥ 1024".into());
        }
        if self.sync.retry_min.is_zero() || self.sync.retry_max < self.sync.retry_min {
            return Err("sync.retry_min must be > 0 and ≤ sync.retry_max".into());
        }
        self.safety.validate()?;
        if self.sync.interval < Duration::from_secs(1) {
            return Err("sync.interval must be at least 1s".into());
        }
        self.lease.validate()
    }
}

impl LeaseConfig {
    fn validate(&self) -> Result<(), String> {
        if let Some(url) = &self.redis
            && let Err(e) = redis::Client::open(url.as_str())
        {
            // The error never repeats the URL, which may hold a password.
            return Err(format!(
                "lease.redis is not a Redis URL (redis://host:port): {}",
                e.category()
            ));
        }
        if self.ttl < Duration::from_millis(300) {
            return Err("lease.ttl must be at least 300ms".into());
        }
        let renew = self.renew_interval();
        if renew.is_zero() || self.ttl < renew * 3 {
            return Err(format!(
                "lease.renew_interval ({renew:?}) must be > 0 and at most a third of lease.ttl ({:?})",
                self.ttl
            ));
        }
        if self.retry_interval.is_zero() || self.retry_interval > self.ttl {
            return Err("lease.retry_interval must be > 0 and at most lease.ttl".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dnsplane_common::Name;

    /// `accounts`: one target per account; the mistakes name the key.
    #[test]
    fn a_zone_may_name_several_accounts_each_once() {
        let load = |zones: &str| {
            toml::from_str::<PlannerConfig>(zones)
                .map_err(|e| e.to_string())
                .and_then(|c| c.validate().map(|()| c))
        };
        let c = load("[[zones]]\nname = \"example.com\"\naccounts = [\"r53\", \"cf\"]\n").unwrap();
        let targets: Vec<String> = c
            .targets()
            .iter()
            .map(|(t, z)| format!("{t}|{}", z.account))
            .collect();
        assert_eq!(
            targets,
            [
                "example.com. at account r53|r53",
                "example.com. at account cf|cf"
            ]
        );
        // Two [[zones]] of one name at two accounts are two targets too.
        let c = load(
            "[[zones]]\nname = \"example.com\"\naccount = \"a\"\n[[zones]]\nname = \"example.com\"\naccount = \"b\"\npolicy = \"upsert-only\"\n",
        )
        .unwrap();
        let t = c.targets();
        assert_eq!(t.len(), 2);
        assert!(t.iter().all(|(t, _)| t.is_shared()));
        assert_eq!(t[1].1.policy, Policy::UpsertOnly);
        for (zones, want) in [
            (
                "[[zones]]\nname = \"example.com\"\naccounts = [\"a\", \"a\"]\n",
                "zone example.com.: accounts names \"a\" twice",
            ),
            (
                "[[zones]]\nname = \"example.com\"\naccount = \"a\"\naccounts = [\"b\"]\n",
                "account and accounts are exclusive",
            ),
            (
                "[[zones]]\nname = \"example.com\"\naccount = \"a\"\n[[zones]]\nname = \"example.com\"\naccounts = [\"b\", \"a\"]\n",
                "zone example.com. at account \"a\" is configured twice",
            ),
            (
                "[[zones]]\nname = \"example.com\"\n",
                "zone example.com.: account is empty",
            ),
            (
                "[[zones]]\nname = \"example.com\"\naccounts = [\"a\", \"\"]\n",
                "zone example.com.: account is empty",
            ),
        ] {
            let e = load(zones).unwrap_err();
            assert!(e.contains(want), "{zones}: {e}");
        }
    }

    #[test]
    fn defaults_and_validation() {
        let c: PlannerConfig = toml::from_str(
            r#"
            [[zones]]
            name = "Example.COM"
            account = "embedded"
            "#,
        )
        .unwrap();
        assert_eq!(c.zones[0].name.as_str(), "example.com.");
        assert_eq!(c.zones[0].policy, Policy::Sync);
        assert_eq!(c.zones[0].conflict, ConflictPolicy::Report);
        c.validate().unwrap();

        let e = toml::from_str::<PlannerConfig>("bogus = 1\nzones = []").unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        let e = toml::from_str::<PlannerConfig>("[[zones]]\nname = \"bad name\"\naccount = \"a\"")
            .unwrap_err();
        assert!(e.to_string().contains("bad name"), "{e}");
    }

    /// `[[zones]] merge`: `none` unless set, `union` read, anything else a config error
    /// naming the key, its line and the allowed values.
    #[test]
    fn zone_merge_key() {
        let zone = "[[zones]]\nname = \"example.com\"\naccount = \"a\"\n";
        let load = |extra: &str| toml::from_str::<PlannerConfig>(&format!("{zone}{extra}"));
        assert_eq!(load("").unwrap().zones[0].merge, Merge::None);
        assert_eq!(
            ZoneConfig::new(Name::parse("example.com").unwrap(), "a").merge,
            Merge::None
        );
        for (text, merge) in [("none", Merge::None), ("union", Merge::Union)] {
            let c = load(&format!("merge = \"{text}\"\n")).unwrap();
            c.validate().unwrap();
            assert_eq!(c.zones[0].merge, merge);
        }
        let e = load("merge = \"bogus\"\n").unwrap_err().to_string();
        for says in ["line 4", "merge", "bogus", "none", "union"] {
            assert!(e.contains(says), "{says:?} missing from {e}");
        }
    }

    /// `[safety] mode` and `[state] min_free_bytes`: defaults, the three modes, and a
    /// bad mode named with its key, line and the allowed values.
    #[test]
    fn safety_mode_and_state_floor() {
        let zone = "zones = []\n";
        let c = toml::from_str::<PlannerConfig>(zone).unwrap();
        assert_eq!(c.safety.mode, SafetyMode::Automatic);
        assert_eq!(c.state.min_free_bytes, 100 * 1024 * 1024);
        for (text, mode) in [
            ("automatic", SafetyMode::Automatic),
            ("observe", SafetyMode::Observe),
            ("approve", SafetyMode::Approve),
        ] {
            let c = toml::from_str::<PlannerConfig>(&format!(
                "{zone}[safety]\nmode = \"{text}\"\n[state]\nmin_free_bytes = 7\n"
            ))
            .unwrap();
            assert_eq!((c.safety.mode, c.state.min_free_bytes), (mode, 7));
            assert_eq!(mode.as_str(), text);
        }
        let e = toml::from_str::<PlannerConfig>(&format!("{zone}[safety]\nmode = \"yolo\"\n"))
            .unwrap_err()
            .to_string();
        for says in ["line 3", "mode", "yolo", "automatic", "observe", "approve"] {
            assert!(e.contains(says), "{says:?} missing from {e}");
        }
    }

    /// `[zones.external_dns]`: read with its affixes; an owner id is required, the
    /// affixes are exclusive, and a key file must be readable.
    #[test]
    fn external_dns_zone_table() {
        let zone = "[[zones]]\nname = \"example.com\"\naccount = \"a\"\n[zones.external_dns]\n";
        let load = |extra: &str| toml::from_str::<PlannerConfig>(&format!("{zone}{extra}"));
        let c = load("owner_id = \"cluster-a\"\ntxt_prefix = \"ext-%{record_type}.\"\n").unwrap();
        c.validate().unwrap();
        let e = c.zones[0].external_dns.as_ref().unwrap();
        assert_eq!(
            (&*e.owner_id, &*e.txt_prefix),
            ("cluster-a", "ext-%{record_type}.")
        );
        assert!(
            load("txt_prefix = \"x\"\n").is_err(),
            "owner_id is required"
        );
        for (extra, says) in [
            (
                "owner_id = \"a\"\ntxt_prefix = \"p\"\ntxt_suffix = \"s\"\n",
                "exclusive",
            ),
            (
                "owner_id = \"a\"\naes_key_file = \"/nonexistent/dnsplane-key\"\n",
                "aes_key_file: /nonexistent/dnsplane-key: cannot read",
            ),
            ("owner_id = \"\"\n", "owner_id is empty"),
        ] {
            let err = load(extra).unwrap().validate().unwrap_err();
            assert!(err.contains(says) && err.contains("external_dns."), "{err}");
        }
    }

    /// `aes_key_file`: the key as external-dns takes it (32 bytes, or base64 of 32
    /// bytes, a trailing newline allowed), relative to the config file; a bad length or
    /// a missing file is refused at load, naming the key file; the key is never shown.
    #[test]
    fn aes_key_file_is_read_at_load() {
        use base64::Engine as _;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("planner.toml");
        let raw: Vec<u8> = (0..32u8).map(|b| b.wrapping_mul(37) ^ 0xa5).collect();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&raw);
        let load = |file: &str, content: Option<&[u8]>| {
            if let Some(c) = content {
                std::fs::write(dir.path().join(file), c).unwrap();
            }
            std::fs::write(
                &p,
                format!("[[zones]]\nname=\"example.com\"\naccount=\"a\"\n[zones.external_dns]\nowner_id=\"k8s\"\naes_key_file=\"{file}\"\n"),
            )
            .unwrap();
            PlannerConfig::load(&p)
        };
        let key_of = |c: &PlannerConfig| {
            let f = c.zones[0]
                .external_dns
                .as_ref()
                .unwrap()
                .aes_key_file
                .as_ref()
                .unwrap();
            assert_eq!(f.path, dir.path().join(f.path.file_name().unwrap()));
            f.key().unwrap().bytes().to_vec()
        };
        let good: [(&str, Vec<u8>); 4] = [
            ("raw.key", raw.clone()),
            ("b64.key", b64.clone().into_bytes()),
            ("b64nl.key", format!("  {b64}\n").into_bytes()),
            // 32 printable bytes are a key as they are, as external-dns's flag takes them.
            ("text.key", b"0123456789abcdef0123456789abcdef\n".to_vec()),
        ];
        for (file, content) in good {
            let c = load(file, Some(&content)).unwrap_or_else(|e| panic!("{file}: {e}"));
            let want = if file == "text.key" {
                content[..32].to_vec()
            } else {
                raw.clone()
            };
            assert_eq!(key_of(&c), want, "{file}");
            let shown = format!("{c:?}");
            assert!(
                shown.contains("<redacted>") && !shown.contains("0123456789abcdef0"),
                "{shown}"
            );
        }
        let short = base64::engine::general_purpose::STANDARD.encode(&raw[..16]);
        for (file, content, says) in [
            ("short.key", Some(b"abc\n".as_slice()), "got 3 bytes"),
            (
                "b64short.key",
                Some(short.as_bytes()),
                "got 24 bytes (base64 of 16)",
            ),
            (
                "big.key",
                Some(&[b'a'; 2000][..]),
                "got more than 1024 bytes",
            ),
            ("missing.key", None, "cannot read"),
        ] {
            let e = load(file, content).unwrap_err().to_string();
            let named = dir.path().join(file).display().to_string();
            assert!(
                e.contains("planner.toml")
                    && e.contains(&format!("external_dns.aes_key_file: {named}: "))
                    && e.contains(says),
                "{file}: {e}"
            );
            if content.is_some() {
                assert!(
                    e.contains("key must be 32 bytes, or base64 of 32 bytes"),
                    "{e}"
                );
            }
        }
    }

    /// A default TTL no record may carry is refused at startup, not record by record.
    #[test]
    fn a_default_ttl_above_the_maximum_is_refused_at_startup() {
        let zone = |ttl: u32| ZoneConfig {
            default_ttl: ttl,
            ..ZoneConfig::new(Name::parse("example.com").unwrap(), "a")
        };
        PlannerConfig::with_zones(vec![zone(dnsplane_common::rrset::MAX_TTL)])
            .validate()
            .unwrap();
        let err = PlannerConfig::with_zones(vec![zone(u32::MAX)])
            .validate()
            .unwrap_err();
        assert!(
            err.contains("default_ttl 4294967295 is above the maximum"),
            "{err}"
        );
    }

    /// The owner id goes into every ownership record's `key=value,…` TXT mark: what
    /// could break the mark (or make two owners read as one) is refused at startup.
    #[test]
    fn owner_id_is_validated_at_startup() {
        let zones = vec![ZoneConfig::new(Name::parse("example.com").unwrap(), "a")];
        let with = |id: &str| PlannerConfig {
            owner_id: id.to_string(),
            ..PlannerConfig::with_zones(zones.clone())
        };
        for good in ["dnsplane", "prod-1", "eu.west_2", "a", &"x".repeat(63)] {
            with(good).validate().unwrap();
        }
        for bad in [
            "",
            "a,dnsplane/owner=other",
            "a=b",
            "a\"b",
            "a b",
            "-lead",
            "_lead",
            "ünicode",
            &"x".repeat(64),
        ] {
            let e = with(bad).validate().unwrap_err();
            assert!(e.contains("owner_id"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn load_names_the_file_and_resolves_paths() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("planner.toml");
        std::fs::write(
            &p,
            "[[zones]]\nname=\"example.com\"\naccount=\"a\"\npolicy=\"delete-all\"\n",
        )
        .unwrap();
        let e = PlannerConfig::load(&p).unwrap_err().to_string();
        assert!(
            e.contains("planner.toml") && e.contains("delete-all"),
            "{e}"
        );

        std::fs::write(
            &p,
            "[[zones]]\nname=\"example.com\"\naccount=\"a\"\n[[sources]]\ntype=\"file\"\npaths=[\"desired\"]\n",
        )
        .unwrap();
        let c = PlannerConfig::load(&p).unwrap();
        let SourceConfig::File { paths, .. } = &c.sources[0] else {
            panic!("a file source: {:?}", c.sources[0]);
        };
        assert_eq!(paths[0], dir.path().join("desired"));
    }

    /// A Kubernetes source: its files relative to the config file, the rest defaults;
    /// `kubeconfig` and `api_server` together are refused (which would be used?).
    #[test]
    fn netbox_source_reads_with_relative_files_and_refuses_what_cannot_work() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("planner.toml");
        let zones = "[[zones]]\nname=\"example.com\"\naccount=\"a\"\n";
        std::fs::write(
            &p,
            format!("{zones}[[sources]]\ntype=\"netbox\"\nurl=\"https://netbox.example.com\"\ntoken_file=\"nb-token\"\nwebhook_listen=\"127.0.0.1:8090\"\nwebhook_secret_file=\"nb-secret\"\ntags=[\"dns\"]\nptr=true\n"),
        )
        .unwrap();
        let c = PlannerConfig::load(&p).unwrap();
        let SourceConfig::Netbox(n) = &c.sources[0] else {
            panic!("a netbox source: {:?}", c.sources[0]);
        };
        assert_eq!(n.token_file, dir.path().join("nb-token"));
        assert_eq!(
            n.webhook_secret_file.as_deref(),
            Some(dir.path().join("nb-secret").as_path())
        );
        assert_eq!(n.statuses, ["active"]);
        assert_eq!(n.full_read_interval, Duration::from_secs(600));
        assert!(n.ptr && n.ipam);

        std::fs::write(
            &p,
            format!("{zones}[[sources]]\ntype=\"netbox\"\nurl=\"https://nb\"\ntoken_file=\"t\"\nwebhook_listen=\"127.0.0.1:8090\"\n"),
        )
        .unwrap();
        let e = PlannerConfig::load(&p).unwrap_err().to_string();
        assert!(
            e.contains("type = \"netbox\"") && e.contains("webhook_secret_file"),
            "{e}"
        );
        std::fs::write(
            &p,
            format!("{zones}[[sources]]\ntype=\"netbox\"\nurl=\"https://nb\"\ntoken_file=\"t\"\nipam=false\nplugin=true\nplugin_views={{corp=\"internal\"}}\n"),
        )
        .unwrap();
        let e = PlannerConfig::load(&p).unwrap_err().to_string();
        assert!(
            e.contains("plugin_views maps \"corp\" to \"internal\", which no [[zones]] target has"),
            "a view renamed to one no target serves: {e}"
        );
    }

    #[test]
    fn kubernetes_source_reads_with_relative_files_and_refuses_two_connections() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("planner.toml");
        let zones = "[[zones]]\nname=\"example.com\"\naccount=\"a\"\n";
        std::fs::write(
            &p,
            format!("{zones}[[sources]]\ntype=\"kubernetes\"\nnamespaces=[\"web\"]\nlabel_selector=\"dns=public\"\napi_server=\"https://127.0.0.1:6443\"\ntoken_file=\"token\"\nca_file=\"/etc/ca.pem\"\n"),
        )
        .unwrap();
        let c = PlannerConfig::load(&p).unwrap();
        let SourceConfig::Kubernetes(k) = &c.sources[0] else {
            panic!("a kubernetes source: {:?}", c.sources[0]);
        };
        assert_eq!(k.namespaces, ["web"]);
        assert_eq!(k.label_selector.as_deref(), Some("dns=public"));
        assert_eq!(
            k.token_file.as_deref(),
            Some(dir.path().join("token").as_path())
        );
        assert_eq!(k.ca_file.as_deref(), Some(Path::new("/etc/ca.pem")));
        assert_eq!(k.status_interval, Duration::from_secs(3));
        assert!(k.write_status);

        std::fs::write(
            &p,
            format!("{zones}[[sources]]\ntype=\"kubernetes\"\nkubeconfig=\"kc\"\napi_server=\"https://x\"\n"),
        )
        .unwrap();
        let e = PlannerConfig::load(&p).unwrap_err().to_string();
        assert!(e.contains("kubeconfig") && e.contains("api_server"), "{e}");
    }

    #[test]
    fn applier_addresses_agree_with_applier_tls() {
        let zone = "[[zones]]\nname = \"example.com\"\naccount = \"a\"\n";
        let check = |top: &str, extra: &str| {
            toml::from_str::<PlannerConfig>(&format!("{top}{zone}{extra}"))
                .unwrap()
                .validate()
        };
        let tls = "[applier_tls]\nca = \"ca.pem\"\ncert = \"p.crt\"\nkey = \"p.key\"\n";
        check("applier = \"https://a:50052\"\n", tls).unwrap();
        let e = check("applier = \"https://a:50052\"\n", "").unwrap_err();
        assert!(e.contains("no [applier_tls]"), "{e}");
        let e = check("", tls).unwrap_err();
        assert!(
            e.contains("plaintext http://") && e.contains("127.0.0.1:50052"),
            "{e}"
        );
        // The default `applier` is not in use when `appliers` is given.
        check("appliers = [\"https://a:1\", \"https://b:1\"]\n", tls).unwrap();
        check("applier_dns = \"appliers.ns.svc:50052\"\n", tls).unwrap();
        let e = check(
            "applier = \"https://a:1\"\n",
            "[applier_tls]\nca = \"ca.pem\"\ncert = \"p.crt\"\n",
        )
        .unwrap_err();
        assert!(e.contains("cert and key go together"), "{e}");
        assert!(
            toml::from_str::<PlannerConfig>(&format!("{zone}[applier_tls]\ncert = \"x\"\n"))
                .unwrap_err()
                .to_string()
                .contains("missing field `ca`")
        );
    }

    #[test]
    fn tls_paths_are_relative_to_the_config_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("m")).unwrap();
        std::fs::write(dir.path().join("m/a.yaml"), "").unwrap();
        let p = dir.path().join("planner.toml");
        std::fs::write(
            &p,
            "applier = \"https://a:1\"\n[[zones]]\nname = \"example.com\"\naccount = \"a\"\n\
             [tls]\ncert = \"tls/p.crt\"\nkey = \"/k\"\nclient_ca = \"ca.pem\"\n\
             [applier_tls]\nca = \"ca.pem\"\ncert = \"c.crt\"\nkey = \"c.key\"\nserver_name = \"applier\"\n",
        )
        .unwrap();
        let c = PlannerConfig::load(&p).unwrap();
        let tls = c.tls.unwrap();
        assert_eq!(tls.cert, dir.path().join("tls/p.crt"));
        assert_eq!(tls.key, Path::new("/k"));
        assert_eq!(tls.client_ca, Some(dir.path().join("ca.pem")));
        let a = c.applier_tls.unwrap();
        assert_eq!(
            (a.ca, a.cert, a.key, a.server_name.as_deref()),
            (
                dir.path().join("ca.pem"),
                Some(dir.path().join("c.crt")),
                Some(dir.path().join("c.key")),
                Some("applier")
            )
        );
    }

    /// The README's short planner.toml loads as written: one zone, one file source.
    #[test]
    fn the_readmes_planner_config_loads() {
        let readme = include_str!("../../README.md");
        let block = dnsplane_testing::docs::code_block_with(readme, "toml", "[[sources]]");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("planner.toml");
        std::fs::write(&p, block).unwrap();
        let c = PlannerConfig::load(&p).unwrap_or_else(|e| panic!("{e}\n{block}"));
        assert_eq!(c.zones.len(), 1);
        let SourceConfig::File { paths, .. } = &c.sources[0] else {
            panic!("a file source: {:?}", c.sources[0]);
        };
        assert_eq!(paths[0], dir.path().join("desired"));
    }
}
