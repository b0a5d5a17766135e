//! A quota bucket kept in Redis, shared by every replica that names the same key: the
//! arithmetic of [`super::gcra`] in two Lua scripts, each run atomically by Redis, on
//! Redis's own clock (`TIME`), so replicas agree on "now" whatever their clocks say.
//!
//! The bucket is a hash with `tat` (ms), and after a throttle `factor` and `halved_at`;
//! it expires an hour after it was last needed.
use super::gcra::Params;
use dnsplane_common::redis::{LazyRedis, RedisCallError};
use redis::Script;
use std::time::Duration;

/// Takes tokens (a bucket Redis does not have starts empty, see [`super::gcra`]).
/// KEYS[1]: the bucket. ARGV: interval at full rate (ms), burst, cost,
/// longest wait allowed (ms), recovery per ms, hold (ms: the caller's own local
/// reservations still run that long after a fallback; the bucket is treated as empty
/// until then; 0 otherwise). Returns {allowed (1/0), wait in ms (to
/// sleep before the call when allowed, negative when more tokens are left; to come
/// back after when not), factor in ppm}.
/// Mirrors `Bucket::factor` and `Bucket::reserve`.
pub const ACQUIRE_LUA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local h = redis.call('HMGET', KEYS[1], 'tat', 'factor', 'halved_at')
local halved = tonumber(h[3])
local factor = 1
if halved then factor = math.min(1, (tonumber(h[2]) or 1) + math.max(0, now - halved) * tonumber(ARGV[5])) end
local interval = tonumber(ARGV[1]) / factor
local tat = tonumber(h[1]) or (now + (tonumber(ARGV[2]) - 1) * interval)
local hold = tonumber(ARGV[6]) or 0
if hold > 0 then tat = math.max(tat, now + hold + (tonumber(ARGV[2]) - 1) * interval) end
local new_tat = math.max(tat, now) + tonumber(ARGV[3]) * interval
local wait = new_tat - tonumber(ARGV[2]) * interval - now
if wait > tonumber(ARGV[4]) then
  return {0, math.ceil(wait), math.floor(factor * 1000000)}
end
redis.call('HSET', KEYS[1], 'tat', string.format('%.3f', new_tat))
redis.call('PEXPIRE', KEYS[1], math.ceil(new_tat - now) + 3600000)
return {1, math.ceil(wait), math.floor(factor * 1000000)}
";

/// A throttle answer from the provider. KEYS[1]: the bucket. ARGV: interval at full
/// rate (ms), burst, Retry-After (ms), recovery per ms, lowest factor, hold (ms).
/// Returns the factor now in force, in ppm. Mirrors `Bucket::throttle`.
pub const THROTTLE_LUA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local h = redis.call('HMGET', KEYS[1], 'tat', 'factor', 'halved_at')
local tat = tonumber(h[1]) or now
local halved = tonumber(h[3])
local factor = 1
if halved then factor = math.min(1, (tonumber(h[2]) or 1) + math.max(0, now - halved) * tonumber(ARGV[4])) end
local ra = tonumber(ARGV[3])
if (not halved) or (now - halved >= math.max(tonumber(ARGV[6]), ra)) then
  factor = math.max(tonumber(ARGV[5]), factor / 2)
  redis.call('HSET', KEYS[1], 'factor', string.format('%.6f', factor), 'halved_at', string.format('%.3f', now))
end
local interval = tonumber(ARGV[1]) / factor
tat = math.max(tat, now + ra + (tonumber(ARGV[2]) - 1) * interval)
redis.call('HSET', KEYS[1], 'tat', string.format('%.3f', tat))
redis.call('PEXPIRE', KEYS[1], math.ceil(tat - now) + 3600000)
return math.floor(factor * 1000000)
";

/// Redis's answer to one acquire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reply {
    pub allowed: bool,
    /// Allowed: sleep this long before the call. Denied: come back after this long.
    pub wait: Duration,
    /// The adaptive factor in force (1: full rate).
    pub factor: f64,
    /// Allowed: tokens that could still go at once after this one.
    pub tokens_left: f64,
}

/// One bucket in one Redis. Connects lazily (on the first call, which needs a
/// runtime) through [`LazyRedis`], whose connection manager reconnects by itself
/// after a failure; every call is bounded by `timeout`.
pub struct SharedBucket {
    redis: LazyRedis,
    key: String,
    acquire: Script,
    throttle: Script,
}

impl std::fmt::Debug for SharedBucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedBucket")
            .field("redis", &self.redis.addr())
            .field("key", &self.key)
            .field("timeout", &self.redis.timeout())
            .finish_non_exhaustive()
    }
}

/// Why Redis could not answer.
/// Why the shared bucket could not answer (the quota then falls back to its local
/// share and probes on its own clock).
pub type SharedError = RedisCallError;

impl SharedBucket {
    /// Parses `url` (`redis://[user:password@]host:port[/db]`); makes no connection.
    pub fn new(url: &str, key: String, timeout: Duration) -> Result<Self, redis::RedisError> {
        Ok(SharedBucket {
            redis: LazyRedis::new(url, timeout)?,
            key,
            acquire: Script::new(ACQUIRE_LUA),
            throttle: Script::new(THROTTLE_LUA),
        })
    }

    /// Where the bucket lives, for status and logs (no credentials).
    pub fn addr(&self) -> String {
        self.redis.addr()
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// Takes `cost` tokens if Redis can grant them within `max_wait`; `hold`: the
    /// bucket counts as empty until then (0: no hold).
    pub async fn acquire(
        &self,
        p: &Params,
        cost: f64,
        max_wait: Duration,
        hold: Duration,
    ) -> Result<Reply, SharedError> {
        let mut conn = self.redis.conn().await?;
        let mut inv = self.acquire.key(&self.key);
        inv.arg(p.interval_ms)
            .arg(p.burst)
            .arg(cost)
            .arg(max_wait.as_secs_f64() * 1000.0)
            .arg(finite(p.recover_per_ms))
            .arg(hold.as_secs_f64() * 1000.0);
        let (allowed, wait_ms, ppm): (i64, i64, i64) =
            self.redis.bounded(inv.invoke_async(&mut conn)).await?;
        let factor = ppm as f64 / 1e6;
        Ok(Reply {
            allowed: allowed == 1,
            wait: Duration::from_millis(wait_ms.max(0) as u64),
            factor,
            tokens_left: (-wait_ms).max(0) as f64 * factor / p.interval_ms,
        })
    }

    /// Feeds a throttle answer into the bucket; returns the factor now in force.
    pub async fn throttle(&self, p: &Params, retry_after: Duration) -> Result<f64, SharedError> {
        let mut conn = self.redis.conn().await?;
        let mut inv = self.throttle.key(&self.key);
        inv.arg(p.interval_ms)
            .arg(p.burst)
            .arg(retry_after.as_secs_f64() * 1000.0)
            .arg(finite(p.recover_per_ms))
            .arg(p.min_factor)
            .arg(p.hold_ms);
        let ppm: i64 = self.redis.bounded(inv.invoke_async(&mut conn)).await?;
        Ok(ppm as f64 / 1e6)
    }

    /// `PING`: is Redis back?
    pub async fn ping(&self) -> Result<(), SharedError> {
        let mut conn = self.redis.conn().await?;
        let cmd = redis::cmd("PING");
        self.redis
            .bounded(cmd.query_async::<String>(&mut conn))
            .await
            .map(drop)
    }
}

/// Lua has no infinity literal to receive: "recover at once" is a huge rate.
fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 1e12 }
}
