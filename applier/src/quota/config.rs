//! The `[accounts.quota]` table as written, the drivers' documented default quotas,
//! and the settings that result from both.
use crate::provider::Operation;
use dnsplane_common::Secret;
use serde::Deserialize;
use std::time::Duration;

/// Which provider calls take a token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuotaOps {
    /// Only writes (`apply`): providers that limit changes (the default).
    #[default]
    Writes,
    /// Every call, reads included: providers that limit requests (Route 53,
    /// Cloudflare).
    All,
}

impl QuotaOps {
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaOps::Writes => "writes",
            QuotaOps::All => "all",
        }
    }

    pub(crate) fn counts(self, op: Operation) -> bool {
        self == QuotaOps::All || op.is_write()
    }
}

/// A provider's documented default rate limit, used when an account of that driver
/// has no `[accounts.quota]` table (see docs/scale.md).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DriverDefault {
    pub driver: &'static str,
    pub rate: f64,
    pub burst: u32,
    pub ops: QuotaOps,
    /// Where the number comes from.
    pub source: &'static str,
}

/// Documented default quotas by driver name. `memory`, `pdns` (PowerDNS has no rate
/// limiting) and `rfc2136` (BIND's `update-quota` bounds concurrent UPDATEs, not a
/// rate) have none. `clouddns` has none: Google's Cloud DNS quotas page names its
/// per-project, per-minute request quotas but publishes no values (they are shown
/// per project in the Cloud console). `azure` counts writes and deletes in one bucket
/// of ARM's size, though ARM keeps them apart: a load of both is paced at half what
/// ARM would take, never over it.
pub const DRIVER_DEFAULTS: &[DriverDefault] = &[
    DriverDefault {
        driver: "route53",
        rate: 5.0,
        burst: 5,
        ops: QuotaOps::All,
        source: "Route 53: five API requests per second per account (the Route 53 quotas page)",
    },
    DriverDefault {
        driver: "cloudflare",
        rate: 4.0,
        burst: 20,
        ops: QuotaOps::All,
        source: "Cloudflare: 1,200 requests per five minutes per user (the Cloudflare API limits page)",
    },
    DriverDefault {
        driver: "azure",
        rate: 10.0,
        burst: 200,
        ops: QuotaOps::Writes,
        source: "Azure Resource Manager: a subscription's writes (and, apart, its deletes) refill at 10 a second into a bucket of 200 (the ARM throttling page)",
    },
];

/// The default of `driver`, if it documents one.
pub fn driver_default(driver: &str) -> Option<&'static DriverDefault> {
    DRIVER_DEFAULTS.iter().find(|d| d.driver == driver)
}

/// `[accounts.quota]` as written.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaConfig {
    /// Calls per second. Default: the driver's documented limit (required for
    /// drivers without one).
    #[serde(default)]
    pub rate: Option<f64>,
    /// Calls that may go at once after a quiet period. Default: the driver's, else 1
    /// (evenly paced).
    #[serde(default)]
    pub burst: Option<u32>,
    /// `writes` (default, or the driver's) or `all`.
    #[serde(default)]
    pub ops: Option<QuotaOps>,
    /// `redis://[user:password@]host:port[/db]`: keep the bucket in Redis, shared by
    /// every replica with the same `key`. Absent: in-process.
    #[serde(default)]
    pub redis: Option<Secret<String>>,
    /// How many replicas share the quota: while Redis is unreachable each one uses
    /// `rate / replicas`. Default 1.
    #[serde(default = "one")]
    pub replicas: u32,
    /// The Redis key of the bucket. Default `dnsplane:quota:<account name>`.
    #[serde(default)]
    pub key: Option<String>,
    /// Longest wait for a token of a call made outside a batch (listings); batch
    /// calls wait until their deadline at most. Default 30s.
    #[serde(default = "default_max_wait", with = "humantime_serde")]
    pub max_wait: Duration,
    /// After a throttle answer, how long the rate takes to climb back from half to
    /// full. Default 20s.
    #[serde(default = "default_recover", with = "humantime_serde")]
    pub recover: Duration,
    /// Longest wait for one Redis answer before falling back. Default 250ms.
    #[serde(default = "default_redis_timeout", with = "humantime_serde")]
    pub redis_timeout: Duration,
    /// How often Redis is tried again while in fallback. Default 1s.
    #[serde(default = "default_probe_interval", with = "humantime_serde")]
    pub probe_interval: Duration,
    /// How far under `rate` calls are paced, as a fraction. Spaced exactly at a
    /// provider's rate, two calls whose network delays differ by a millisecond arrive
    /// closer than it allows and one is answered 429. Default 0.02 (10 ms at 2/s).
    #[serde(default = "default_headroom")]
    pub headroom: f64,
}

fn one() -> u32 {
    1
}
pub(crate) fn default_max_wait() -> Duration {
    Duration::from_secs(30)
}
pub(crate) fn default_recover() -> Duration {
    Duration::from_secs(20)
}
pub(crate) fn default_redis_timeout() -> Duration {
    Duration::from_millis(250)
}
pub(crate) fn default_probe_interval() -> Duration {
    Duration::from_secs(1)
}
pub fn default_headroom() -> f64 {
    0.02
}

/// A quota with every default filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct QuotaSettings {
    pub rate: f64,
    pub burst: u32,
    pub ops: QuotaOps,
    /// The Redis URL (it may carry a password: never shown).
    pub redis: Option<Secret<String>>,
    pub replicas: u32,
    pub key: Option<String>,
    pub max_wait: Duration,
    pub recover: Duration,
    pub redis_timeout: Duration,
    pub probe_interval: Duration,
    /// Fraction under `rate` that calls are paced at.
    pub headroom: f64,
}

impl QuotaSettings {
    /// The quota of an account of `driver` with `table` as its `[accounts.quota]`:
    /// the table over the driver's default; `None` when neither says anything.
    /// Problems are named relative to the account (`quota.rate ...`).
    pub fn resolve(
        driver: &str,
        table: Option<&QuotaConfig>,
    ) -> Result<Option<QuotaSettings>, Vec<String>> {
        let default = driver_default(driver);
        let Some(t) = table else {
            return Ok(default.map(|d| QuotaSettings {
                rate: d.rate,
                burst: d.burst,
                ops: d.ops,
                redis: None,
                replicas: 1,
                key: None,
                max_wait: default_max_wait(),
                recover: default_recover(),
                redis_timeout: default_redis_timeout(),
                probe_interval: default_probe_interval(),
                headroom: default_headroom(),
            }));
        };
        let mut problems = Vec::new();
        let rate = t.rate.or(default.map(|d| d.rate));
        match rate {
            None => problems.push(format!(
                "quota.rate is required: driver {driver:?} documents no default rate limit"
            )),
            Some(r) if !(r.is_finite() && r > 0.0) => {
                problems.push(format!("quota.rate must be a number above 0, not {r}"))
            }
            Some(_) => {}
        }
        let burst = t.burst.or(default.map(|d| d.burst)).unwrap_or(1);
        if burst == 0 {
            problems.push("quota.burst must be at least 1".into());
        }
        if t.replicas == 0 {
            problems.push("quota.replicas must be at least 1".into());
        }
        if let Some(url) = &t.redis
            && let Err(e) = redis::Client::open(url.expose().as_str())
        {
            problems.push(format!("quota.redis is not a Redis URL: {e}"));
        }
        if t.key.as_deref().is_some_and(|k| k.trim().is_empty()) {
            problems.push("quota.key is empty".into());
        }
        if t.redis_timeout.is_zero() {
            problems.push("quota.redis_timeout must be above 0s".into());
        }
        if t.probe_interval.is_zero() {
            problems.push("quota.probe_interval must be above 0s".into());
        }
        if !(0.0..0.5).contains(&t.headroom) {
            problems.push(format!(
                "quota.headroom must be at least 0 and below 0.5, not {}",
                t.headroom
            ));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Some(QuotaSettings {
            rate: rate.unwrap_or(1.0),
            burst,
            ops: t.ops.or(default.map(|d| d.ops)).unwrap_or_default(),
            redis: t.redis.clone(),
            replicas: t.replicas,
            key: t.key.clone(),
            max_wait: t.max_wait,
            recover: t.recover,
            redis_timeout: t.redis_timeout,
            probe_interval: t.probe_interval,
            headroom: t.headroom,
        }))
    }
}
