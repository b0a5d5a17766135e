//! The lease in Redis: one hash per owner id, `dnsplane:lease:<owner_id>`, with the
//! `holder`, the time it `expires` (ms, on Redis's own clock) and the `epoch`. Each
//! operation is one Lua script, so it is atomic and compares the holder before it
//! writes (acquire if free or expired, renew and release only by the holder).
//!
//! Why one hash rather than `SET NX PX` plus an `INCR`ed counter: the epoch must keep
//! growing across lapses (a key that expires would take it along), a second key would
//! be a second slot on a Redis Cluster, and expiry on Redis's clock (`TIME`, as the
//! applier's quota does it) is the same for every planner whatever their clocks say.
//! The hash never expires; it is a few bytes per owner id.
//!
//! The epoch is a counter in the hash (`HINCRBY`), one up per acquisition, never a
//! clock: a clock can step back, and an epoch made of it can be outbid by anyone with
//! a larger number. A Redis without persistence that restarts empty starts counting
//! again; the appliers' claims ([`dnsplane_applier::claims`] in the applier crate)
//! then let the new holder in once the old one has been silent for the ttl.
use super::{Acquire, LeaseBackend, LeaseError};
use ::redis::Script;
use dnsplane_common::redis::{LazyRedis, RedisCallError};
use std::time::Duration;

/// KEYS[1]: the lease. ARGV: holder, ttl (ms). Takes the lease when nobody holds it,
/// it has expired, or `holder` holds it; every acquisition gets a new epoch, the
/// counter's next. Returns {1, epoch} when taken, {0, epoch, holder} when someone else
/// holds it.
const ACQUIRE_LUA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'holder', 'expires', 'epoch')
if h[1] and h[1] ~= ARGV[1] and (tonumber(h[2]) or 0) > now then
  return {0, tonumber(h[3]) or 0, h[1]}
end
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
redis.call('HSET', KEYS[1], 'holder', ARGV[1],
  'expires', string.format('%.0f', now + tonumber(ARGV[2])))
return {1, epoch}
";

/// KEYS[1]: the lease. ARGV: holder, ttl (ms). A new epoch (the counter's next) for
/// `holder`, when it holds the lease and it has not expired; extends it too. Returns
/// the epoch, or 0.
const BUMP_LUA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'holder', 'expires')
if h[1] ~= ARGV[1] or (tonumber(h[2]) or 0) <= now then
  return 0
end
redis.call('HSET', KEYS[1], 'expires', string.format('%.0f', now + tonumber(ARGV[2])))
return redis.call('HINCRBY', KEYS[1], 'epoch', 1)
";

/// KEYS[1]: the lease. ARGV: holder, ttl (ms). Extends the lease when `holder` holds
/// it and it has not expired. Returns 1 if so, 0 otherwise.
const RENEW_LUA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'holder', 'expires')
if h[1] ~= ARGV[1] or (tonumber(h[2]) or 0) <= now then
  return 0
end
redis.call('HSET', KEYS[1], 'expires', string.format('%.0f', now + tonumber(ARGV[2])))
return 1
";

/// KEYS[1]: the lease. ARGV: holder. Lets it go when `holder` holds it (the epoch
/// stays). Returns 1 if so, 0 otherwise.
const RELEASE_LUA: &str = r"
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then
  return 0
end
redis.call('HDEL', KEYS[1], 'holder')
redis.call('HSET', KEYS[1], 'expires', 0)
return 1
";

/// The lease of one owner id in one Redis. Connects lazily ([`LazyRedis`]: a
/// connection manager, which reconnects by itself); every call is bounded.
pub struct RedisBackend {
    redis: LazyRedis,
    key: String,
    acquire: Script,
    renew: Script,
    release: Script,
    bump: Script,
}

/// Never the URL: it may carry a password.
impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("redis", &self.location())
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl From<RedisCallError> for LeaseError {
    fn from(e: RedisCallError) -> Self {
        match e {
            RedisCallError::Timeout(d) => LeaseError::Timeout(d),
            RedisCallError::Redis(e) => LeaseError::Redis(e),
        }
    }
}

impl RedisBackend {
    /// The lease of `owner_id` in the Redis at `url`; makes no connection. `timeout`
    /// bounds connecting and each answer.
    pub fn new(url: &str, owner_id: &str, timeout: Duration) -> Result<Self, LeaseError> {
        Ok(RedisBackend {
            redis: LazyRedis::new(url, timeout)?,
            key: format!("dnsplane:lease:{owner_id}"),
            acquire: Script::new(ACQUIRE_LUA),
            renew: Script::new(RENEW_LUA),
            release: Script::new(RELEASE_LUA),
            bump: Script::new(BUMP_LUA),
        })
    }

    /// The key the lease lives under.
    pub fn key(&self) -> &str {
        &self.key
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[async_trait::async_trait]
impl LeaseBackend for RedisBackend {
    fn kind(&self) -> &'static str {
        "redis"
    }

    fn location(&self) -> String {
        self.redis.addr()
    }

    fn expires(&self) -> bool {
        true
    }

    async fn try_acquire(&self, holder: &str, ttl: Duration) -> Result<Acquire, LeaseError> {
        let mut conn = self.redis.conn().await?;
        let mut inv = self.acquire.key(&self.key);
        inv.arg(holder).arg(millis(ttl));
        let reply: Vec<::redis::Value> = self.redis.bounded(inv.invoke_async(&mut conn)).await?;
        let int = |v: Option<&::redis::Value>| match v {
            Some(::redis::Value::Int(n)) => u64::try_from(*n).ok(),
            _ => None,
        };
        match (int(reply.first()), int(reply.get(1)), reply.get(2)) {
            (Some(1), Some(epoch), _) => Ok(Acquire::Acquired { epoch }),
            (Some(0), Some(epoch), Some(h)) => Ok(Acquire::Held {
                holder: ::redis::from_redis_value_ref(h)
                    .map_err(|e| LeaseError::Protocol(e.to_string()))?,
                epoch,
            }),
            _ => Err(LeaseError::Protocol(format!("{reply:?}"))),
        }
    }

    async fn renew(&self, holder: &str, ttl: Duration) -> Result<bool, LeaseError> {
        let mut conn = self.redis.conn().await?;
        let mut inv = self.renew.key(&self.key);
        inv.arg(holder).arg(millis(ttl));
        let renewed: i64 = self.redis.bounded(inv.invoke_async(&mut conn)).await?;
        Ok(renewed == 1)
    }

    async fn bump(&self, holder: &str, ttl: Duration) -> Result<Option<u64>, LeaseError> {
        let mut conn = self.redis.conn().await?;
        let mut inv = self.bump.key(&self.key);
        inv.arg(holder).arg(millis(ttl));
        let epoch: i64 = self.redis.bounded(inv.invoke_async(&mut conn)).await?;
        Ok(u64::try_from(epoch).ok().filter(|e| *e > 0))
    }

    async fn release(&self, holder: &str) -> Result<(), LeaseError> {
        let mut conn = self.redis.conn().await?;
        let mut inv = self.release.key(&self.key);
        inv.arg(holder);
        let _: i64 = self.redis.bounded(inv.invoke_async(&mut conn)).await?;
        Ok(())
    }
}
