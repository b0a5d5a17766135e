//! One account's quota: the bucket (in process, in Redis, or a local share of it while
//! Redis is away), waiting for tokens in order, throttle feedback, and the status
//! `GetStatus` shows.
use super::config::{QuotaOps, QuotaSettings};
use super::gcra::{Bucket, Decision, Params};
use super::shared::{SharedBucket, SharedError};
use crate::provider::Operation;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::time::Instant;

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
    /// Tokens left after the last take (an `f64`'s bits), for the tokens gauge.
    last_tokens: AtomicU64,
    /// The origin of the local bucket's clock.
    base: Instant,
}

/// The longest hold after a throttle answer that said nothing of when (see
/// [`Quota::unsaid_wait`]).
const MAX_UNSAID_THROTTLE_WAIT: Duration = Duration::from_secs(1);

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
        let params = Params::new(
            settings.rate * (1.0 - settings.headroom),
            settings.burst,
            ms(settings.recover),
        );
        let shared = match &settings.redis {
            Some(url) => {
                let key = settings
                    .key
                    .clone()
                    .unwrap_or_else(|| format!("dnsplane:quota:{account}"));
                Some(SharedBucket::new(
                    url.expose(),
                    key,
                    settings.redis_timeout,
                )?)
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
            last_tokens: AtomicU64::new(0),
            base: Instant::now(),
        })
    }

    /// Tokens left in the bucket after the last take.
    pub fn tokens_left(&self) -> f64 {
        f64::from_bits(self.last_tokens.load(Ordering::Relaxed))
    }

    pub fn account(&self) -> &str {
        &self.account
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
        self.last_tokens
            .store(tokens_left.to_bits(), Ordering::Relaxed);
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

    /// How long to hold calls back after a throttle answer without `Retry-After`
    /// (Route 53's `Throttling`, Cloud DNS's 429): one slot at the halved rate, as
    /// the account's pacing does, at most a second. The halving is what slows the
    /// account down; a flat second on top of it made a 5/s account lose five slots
    /// to one throttle (a conflict released by another writer on the same account
    /// then took 2.1 s to converge instead of under 1).
    fn unsaid_wait(&self) -> Duration {
        let mode = self.mode();
        let p = self.local_params(mode);
        let factor = match mode {
            Mode::Shared => lock(&self.state).shared_factor,
            _ => lock(&self.local).factor(self.now_ms(), &p),
        };
        let slot_ms = p.interval_ms / (factor / 2.0).max(p.min_factor);
        from_ms(slot_ms).min(MAX_UNSAID_THROTTLE_WAIT)
    }

    /// The provider answered "too many": lower the rate (for every replica when
    /// shared) and hold calls back for `retry_after` ([`Self::unsaid_wait`] when it
    /// said nothing).
    pub async fn throttle(self: &Arc<Self>, retry_after: Option<Duration>) {
        let retry_after = retry_after.unwrap_or_else(|| self.unsaid_wait());
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
