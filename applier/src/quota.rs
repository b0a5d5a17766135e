//! Provider quotas per account: a GCRA limiter ([`gcra`]) in front of every provider
//! call that counts against the provider's rate limit.
//!
//! - **local**: the bucket lives in this process (one applier, or a quota per replica);
//! - **shared**: the bucket lives in Redis ([`shared`]; an atomic Lua script on Redis's
//!   clock), so N replicas naming the same key stay under the account's quota together;
//! - **fallback**: Redis is configured but does not answer: each replica takes a local
//!   share, `rate / replicas` (and `burst / replicas`), logs it, shows it in
//!   `GetStatus`, probes Redis every `probe_interval` and goes back to shared when it
//!   answers.
//!
//! A call waits for its token (reserved, so waiters go in order), but never past the
//! batch deadline: a call that could not go before it is not made, and the batch's
//! remaining changes come back `DEFERRED` with the time the next token is expected
//! (see [`scoped`], used by the batch algorithm). A throttle answer from the provider
//! (a transient error with `Retry-After`, or an HTTP 429) lowers the rate for every
//! replica sharing the bucket: the next call waits out the `Retry-After`, the rate
//! halves and then climbs back linearly over `recover` (see [`gcra`]).
//!
//! ```toml
//! [accounts.quota]
//! rate = 10.0                          # calls per second (writes by default)
//! burst = 20                           # at once after a quiet period (default 1)
//! redis = "redis://127.0.0.1:6379"     # share the bucket with the other replicas
//! replicas = 3                         # how many share it: the fallback is rate / 3
//! ```
//!
//! Without an `[accounts.quota]` table an account gets its driver's documented
//! default ([`DRIVER_DEFAULTS`]); the drivers dnsplane has today (`memory`, `pdns`,
//! `rfc2136`) document none, so they run unlimited unless configured.
use crate::provider::{Capabilities, ErrorClass, Listing, Operation, Provider, ProviderError};
use async_trait::async_trait;
use dnsplane_common::{Name, RRSetOp};
use serde::Deserialize;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::time::Instant;
use tracing::Instrument;

pub mod gcra;
pub mod shared;

use gcra::{Bucket, Decision, Params};
use shared::{SharedBucket, SharedError};

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

    fn counts(self, op: Operation) -> bool {
        self == QuotaOps::All || op.is_write()
    }
}

/// A provider's documented default rate limit, used when an account of that driver
/// has no `[accounts.quota]` table (see docs/scaling.md).
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
/// rate) have none; the cloud drivers get theirs when they are added.
pub const DRIVER_DEFAULTS: &[DriverDefault] = &[
    DriverDefault {
        driver: "route53",
        rate: 5.0,
        burst: 5,
        ops: QuotaOps::All,
        source: "Route 53: five API requests per second per account (PROVIDERS.md §4.4)",
    },
    DriverDefault {
        driver: "cloudflare",
        rate: 4.0,
        burst: 20,
        ops: QuotaOps::All,
        source: "Cloudflare: 1,200 requests per five minutes per user (PROVIDERS.md §5.4)",
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
    pub redis: Option<String>,
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
}

fn one() -> u32 {
    1
}
fn default_max_wait() -> Duration {
    Duration::from_secs(30)
}
fn default_recover() -> Duration {
    Duration::from_secs(20)
}
fn default_redis_timeout() -> Duration {
    Duration::from_millis(250)
}
fn default_probe_interval() -> Duration {
    Duration::from_secs(1)
}

/// A quota with every default filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct QuotaSettings {
    pub rate: f64,
    pub burst: u32,
    pub ops: QuotaOps,
    pub redis: Option<String>,
    pub replicas: u32,
    pub key: Option<String>,
    pub max_wait: Duration,
    pub recover: Duration,
    pub redis_timeout: Duration,
    pub probe_interval: Duration,
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
            && let Err(e) = redis::Client::open(url.as_str())
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
        }))
    }
}

/// Where the bucket is kept right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// In this process, at the full rate (no Redis configured).
    Local,
    /// In Redis, shared by every replica.
    Shared,
    /// Redis configured but unreachable: a local share of the rate.
    Fallback,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Local => "local",
            Mode::Shared => "shared",
            Mode::Fallback => "fallback",
        }
    }
}

/// What `GetStatus` shows of a quota.
#[derive(Clone, Debug, PartialEq)]
pub struct QuotaStatus {
    pub mode: Mode,
    /// The configured rate (calls per second) of the whole account.
    pub rate: f64,
    /// The rate this replica works under now: lowered after a throttle; in fallback,
    /// its local share.
    pub current_rate: f64,
    pub burst: u32,
    pub replicas: u32,
    pub ops: QuotaOps,
    /// Redis `host:port` (no credentials); empty without Redis.
    pub redis: String,
    /// Tokens taken, with or without a wait.
    pub granted: u64,
    /// Tokens taken after a wait.
    pub waited: u64,
    /// Calls not made: no token before their deadline (their changes: DEFERRED).
    pub denied: u64,
    /// Time spent waiting for tokens, all calls together.
    pub wait_total: Duration,
    /// Throttle answers from the provider fed back into the bucket.
    pub throttled: u64,
    /// Times Redis became unreachable and this replica fell back.
    pub fallbacks: u64,
    /// The last Redis error (kept after recovery), empty if none.
    pub last_redis_error: String,
}

impl QuotaStatus {
    /// The wire form (`AccountStatus.quota`).
    pub fn to_pb(&self) -> dnsplane_common::pb::QuotaStatus {
        dnsplane_common::pb::QuotaStatus {
            mode: self.mode.as_str().into(),
            rate: self.rate,
            current_rate: self.current_rate,
            burst: self.burst,
            replicas: self.replicas,
            ops: self.ops.as_str().into(),
            redis: self.redis.clone(),
            granted: self.granted,
            waited: self.waited,
            denied: self.denied,
            wait_total: Some(dnsplane_common::convert::duration(self.wait_total)),
            throttled: self.throttled,
            fallbacks: self.fallbacks,
            last_redis_error: self.last_redis_error.clone(),
        }
    }

    /// Why the applier is degraded on account of this quota: in fallback.
    pub fn reason(&self, account: &str) -> Option<String> {
        (self.mode == Mode::Fallback).then(|| {
            format!(
                "account {account:?}: quota Redis {} unreachable ({}); using a local share of {:.3}/s (rate / {} replicas)",
                self.redis, self.last_redis_error, self.current_rate, self.replicas
            )
        })
    }
}

#[derive(Debug)]
struct State {
    mode: Mode,
    /// Shared mode: the factor Redis last reported.
    shared_factor: f64,
    /// When (ms on `Quota::base`) the last reservation granted by Redis to this
    /// replica goes: a fallback's local bucket starts empty there, not now, so that
    /// shared reservations still waiting and new local ones do not add up.
    shared_until: f64,
    /// The same for the local bucket...
    local_until: f64,
    /// ...which Redis is told about, once back, until then.
    handoff_until: f64,
    fallbacks: u64,
    last_redis_error: String,
}

/// One account's quota.
#[derive(Debug)]
pub struct Quota {
    account: String,
    settings: QuotaSettings,
    params: Params,
    /// The in-process bucket: at `params` in local mode, at the share in fallback.
    local: Mutex<Bucket>,
    shared: Option<SharedBucket>,
    state: Mutex<State>,
    probing: AtomicBool,
    /// Bumped by every throttle: a reservation made before one is taken again.
    epoch: AtomicU64,
    granted: AtomicU64,
    waited: AtomicU64,
    denied: AtomicU64,
    wait_total_us: AtomicU64,
    throttled: AtomicU64,
    /// The origin of the local bucket's clock.
    base: Instant,
}

/// How long to hold back after a throttle answer that said nothing of when.
const DEFAULT_THROTTLE_WAIT: Duration = Duration::from_secs(1);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn from_ms(x: f64) -> Duration {
    Duration::from_secs_f64((x.max(0.0) / 1000.0).min(1e9))
}

impl Quota {
    /// The quota of `account`. Makes no connection: Redis is reached on first use.
    pub fn new(account: &str, settings: QuotaSettings) -> Result<Quota, redis::RedisError> {
        let params = Params::new(settings.rate, settings.burst, ms(settings.recover));
        let shared = match &settings.redis {
            Some(url) => {
                let key = settings
                    .key
                    .clone()
                    .unwrap_or_else(|| format!("dnsplane:quota:{account}"));
                Some(SharedBucket::new(url, key, settings.redis_timeout)?)
            }
            None => None,
        };
        let mode = if shared.is_some() {
            Mode::Shared
        } else {
            Mode::Local
        };
        Ok(Quota {
            account: account.to_string(),
            settings,
            params,
            local: Mutex::new(Bucket::default()),
            shared,
            state: Mutex::new(State {
                mode,
                shared_factor: 1.0,
                shared_until: 0.0,
                local_until: 0.0,
                handoff_until: 0.0,
                fallbacks: 0,
                last_redis_error: String::new(),
            }),
            probing: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            granted: AtomicU64::new(0),
            waited: AtomicU64::new(0),
            denied: AtomicU64::new(0),
            wait_total_us: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            base: Instant::now(),
        })
    }

    pub fn settings(&self) -> &QuotaSettings {
        &self.settings
    }

    /// Does a call of kind `op` take a token?
    pub fn counts(&self, op: Operation) -> bool {
        self.settings.ops.counts(op)
    }

    pub fn mode(&self) -> Mode {
        lock(&self.state).mode
    }

    fn now_ms(&self) -> f64 {
        ms(self.base.elapsed())
    }

    /// The parameters of the in-process bucket in the current mode.
    fn local_params(&self, mode: Mode) -> Params {
        match mode {
            Mode::Fallback => self.params.share(self.settings.replicas),
            _ => self.params,
        }
    }

    /// Waits for one token, at most `max_wait`; `Ok(waited)`, or `Err(retry_after)`
    /// when none comes in time (nothing is taken then).
    pub async fn acquire(self: &Arc<Self>, max_wait: Duration) -> Result<Duration, Duration> {
        let start = Instant::now();
        // A throttle answer during the sleep voids the reservation (it was made at
        // the old rate): take a new one, a few times at most.
        let mut tokens_left = 0.0;
        for _ in 0..4 {
            let epoch = self.epoch.load(Ordering::Acquire);
            let left = max_wait.saturating_sub(start.elapsed());
            let wait = match self.take(left).await {
                Ok((w, tokens)) => {
                    tokens_left = tokens;
                    w
                }
                Err(retry_after) => {
                    self.denied.fetch_add(1, Ordering::Relaxed);
                    return Err(retry_after);
                }
            };
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            if self.epoch.load(Ordering::Acquire) == epoch {
                break;
            }
        }
        let waited = start.elapsed();
        let metrics = crate::metrics::global();
        metrics.observe_quota_wait(&self.account, waited);
        metrics.set_quota_tokens(&self.account, tokens_left);
        self.granted.fetch_add(1, Ordering::Relaxed);
        if !waited.is_zero() {
            self.waited.fetch_add(1, Ordering::Relaxed);
            let us = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
            self.wait_total_us.fetch_add(us, Ordering::Relaxed);
        }
        Ok(waited)
    }

    /// One reservation: in Redis when shared, else in-process. `Ok((wait, tokens
    /// left after this one))`, or `Err(retry_after)`.
    async fn take(self: &Arc<Self>, max_wait: Duration) -> Result<(Duration, f64), Duration> {
        if let Some(shared) = &self.shared
            && self.mode() == Mode::Shared
        {
            let hold = from_ms(lock(&self.state).handoff_until - self.now_ms());
            match shared.acquire(&self.params, 1.0, max_wait, hold).await {
                Ok(r) => {
                    let mut st = lock(&self.state);
                    st.shared_factor = r.factor;
                    if r.allowed {
                        st.shared_until = st.shared_until.max(self.now_ms() + ms(r.wait));
                    }
                    return if r.allowed {
                        Ok((r.wait, r.tokens_left))
                    } else {
                        Err(r.wait)
                    };
                }
                Err(e) => self.fall_back(&e),
            }
        }
        let p = self.local_params(self.mode());
        let now = self.now_ms();
        let decision = lock(&self.local).reserve(now, 1.0, ms(max_wait), &p);
        match decision {
            Decision::Granted {
                wait_ms,
                tokens_left,
            } => {
                let mut st = lock(&self.state);
                st.local_until = st.local_until.max(now + wait_ms);
                Ok((from_ms(wait_ms), tokens_left))
            }
            Decision::Denied { retry_after_ms } => Err(from_ms(retry_after_ms)),
        }
    }

    /// The provider answered "too many": lower the rate (for every replica when
    /// shared) and hold calls back for `retry_after` (1s when it said nothing).
    pub async fn throttle(self: &Arc<Self>, retry_after: Option<Duration>) {
        let retry_after = retry_after.unwrap_or(DEFAULT_THROTTLE_WAIT);
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.throttled.fetch_add(1, Ordering::Relaxed);
        if let Some(shared) = &self.shared
            && self.mode() == Mode::Shared
        {
            match shared.throttle(&self.params, retry_after).await {
                Ok(f) => {
                    lock(&self.state).shared_factor = f;
                    tracing::warn!(
                        account = %self.account,
                        retry_after = ?retry_after,
                        rate = self.params.rate() * f,
                        "The provider throttled the account; the shared quota rate is lowered for every replica."
                    );
                    return;
                }
                Err(e) => self.fall_back(&e),
            }
        }
        let mode = self.mode();
        let p = self.local_params(mode);
        let now = self.now_ms();
        let f = lock(&self.local).throttle(now, ms(retry_after), &p);
        tracing::warn!(
            account = %self.account,
            retry_after = ?retry_after,
            rate = p.rate() * f,
            mode = mode.as_str(),
            "The provider throttled the account; the quota rate is lowered."
        );
    }

    /// Redis failed: go to the local share (once), and probe until it answers.
    fn fall_back(self: &Arc<Self>, e: &SharedError) {
        let share = self.params.share(self.settings.replicas);
        {
            let mut st = lock(&self.state);
            st.last_redis_error = e.to_string();
            if st.mode == Mode::Shared {
                st.mode = Mode::Fallback;
                st.fallbacks += 1;
                let start = st.shared_until.max(self.now_ms());
                *lock(&self.local) = Bucket::empty_at(start, &share);
                tracing::warn!(
                    account = %self.account,
                    redis = %self.shared.as_ref().map(SharedBucket::addr).unwrap_or_default(),
                    error = %e,
                    rate = share.rate(),
                    replicas = self.settings.replicas,
                    "Quota Redis unreachable; using a local share of the quota (rate / replicas) until it answers."
                );
            }
        }
        if !self.probing.swap(true, Ordering::AcqRel) {
            let me = Arc::downgrade(self);
            tokio::spawn(probe(me, self.settings.probe_interval));
        }
    }

    /// Called by the probe when Redis answers again.
    fn back_to_shared(&self) {
        let mut st = lock(&self.state);
        if st.mode == Mode::Fallback {
            st.mode = Mode::Shared;
            st.handoff_until = st.local_until;
            tracing::info!(
                account = %self.account,
                redis = %self.shared.as_ref().map(SharedBucket::addr).unwrap_or_default(),
                "Quota Redis reachable again; back to the shared quota."
            );
        }
    }

    /// A snapshot for the status API.
    pub fn status(&self) -> QuotaStatus {
        let (mode, shared_factor, fallbacks, last_redis_error) = {
            let st = lock(&self.state);
            (
                st.mode,
                st.shared_factor,
                st.fallbacks,
                st.last_redis_error.clone(),
            )
        };
        let current_rate = match mode {
            Mode::Shared => self.params.rate() * shared_factor,
            Mode::Local | Mode::Fallback => {
                let p = self.local_params(mode);
                p.rate() * lock(&self.local).factor(self.now_ms(), &p)
            }
        };
        QuotaStatus {
            mode,
            rate: self.settings.rate,
            current_rate,
            burst: self.settings.burst,
            replicas: self.settings.replicas,
            ops: self.settings.ops,
            redis: self
                .shared
                .as_ref()
                .map(SharedBucket::addr)
                .unwrap_or_default(),
            granted: self.granted.load(Ordering::Relaxed),
            waited: self.waited.load(Ordering::Relaxed),
            denied: self.denied.load(Ordering::Relaxed),
            wait_total: Duration::from_micros(self.wait_total_us.load(Ordering::Relaxed)),
            throttled: self.throttled.load(Ordering::Relaxed),
            fallbacks,
            last_redis_error,
        }
    }
}

/// Pings Redis every `interval` until it answers (then back to shared) or the quota
/// is gone.
async fn probe(quota: Weak<Quota>, interval: Duration) {
    loop {
        tokio::time::sleep(interval).await;
        let Some(q) = quota.upgrade() else { return };
        let Some(shared) = &q.shared else { return };
        match shared.ping().await {
            Ok(()) => {
                q.back_to_shared();
                q.probing.store(false, Ordering::Release);
                return;
            }
            Err(e) => lock(&q.state).last_redis_error = e.to_string(),
        }
    }
}

/// Is this answer the provider saying "too many requests"?
pub fn is_throttle(e: &ProviderError) -> bool {
    e.class == ErrorClass::Transient && (e.retry_after.is_some() || e.message.contains(" 429"))
}

tokio::task_local! {
    static CALL: CallScope;
}

struct CallScope {
    deadline: Option<Instant>,
    denied: Cell<Option<Duration>>,
}

/// Runs one provider call (`f`) with `deadline` known to the quota: a token that
/// would come after it is not waited for. Returns the call's output and, when the
/// quota denied the call (nothing was sent), when a token is expected.
pub async fn scoped<F: Future>(deadline: Option<Instant>, f: F) -> (F::Output, Option<Duration>) {
    let scope = CallScope {
        deadline,
        denied: Cell::new(None),
    };
    CALL.scope(scope, async move {
        let out = f.await;
        (out, CALL.with(|s| s.denied.take()))
    })
    .await
}

/// A provider behind a quota: every call that counts takes a token first, and every
/// throttle answer is fed back. Outermost layer of an account's provider, so that a
/// denied call reaches neither the counters nor the circuit breaker.
#[derive(Debug)]
pub struct Limited {
    inner: Arc<dyn Provider>,
    quota: Arc<Quota>,
}

impl Limited {
    pub fn new(inner: Arc<dyn Provider>, quota: Arc<Quota>) -> Self {
        Limited { inner, quota }
    }

    async fn gate(&self, op: Operation) -> Result<(), ProviderError> {
        if !self.quota.counts(op) {
            return Ok(());
        }
        let deadline = CALL.try_with(|s| s.deadline).ok().flatten();
        let max_wait = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => self.quota.settings.max_wait,
        };
        let span = tracing::info_span!(
            "quota.wait",
            account = %self.quota.account,
            operation = op.as_str(),
            waited_ms = tracing::field::Empty,
        );
        let acquired = self.quota.acquire(max_wait).instrument(span.clone()).await;
        if let Ok(waited) = &acquired {
            span.record("waited_ms", waited.as_secs_f64() * 1000.0);
        }
        match acquired {
            Ok(_) => Ok(()),
            Err(retry_after) => {
                let _ = CALL.try_with(|s| s.denied.set(Some(retry_after)));
                tracing::debug!(account = %self.quota.account, op = %op, retry_after = ?retry_after, "No quota token before the deadline; call not made.");
                Err(ProviderError::new(
                    ErrorClass::Transient,
                    format!(
                        "not attempted: the quota of account {:?} has no token before the deadline (next in {retry_after:?})",
                        self.quota.account
                    ),
                )
                .with_retry_after(retry_after))
            }
        }
    }

    async fn feed<T>(&self, r: Result<T, ProviderError>) -> Result<T, ProviderError> {
        if let Err(e) = &r
            && is_throttle(e)
        {
            self.quota.throttle(e.retry_after).await;
        }
        r
    }
}

#[async_trait]
impl Provider for Limited {
    fn driver(&self) -> &'static str {
        self.inner.driver()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        self.gate(Operation::Zones).await?;
        self.feed(self.inner.zones().await).await
    }

    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError> {
        self.gate(Operation::Serial).await?;
        self.feed(self.inner.serial(zone).await).await
    }

    async fn list(&self, zone: &Name, names: Option<&[Name]>) -> Result<Listing, ProviderError> {
        self.gate(Operation::List).await?;
        self.feed(self.inner.list(zone, names).await).await
    }

    async fn apply(&self, zone: &Name, ops: &[RRSetOp]) -> Result<(), ProviderError> {
        self.gate(Operation::Apply).await?;
        self.feed(self.inner.apply(zone, ops).await).await
    }
}

#[cfg(test)]
mod tests;
