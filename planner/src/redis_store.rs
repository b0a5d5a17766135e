//! Pushed desired state in Redis, for planners that share a Redis lease (`[lease]
//! redis`) but not a state directory: every replica reads what the leader acknowledged,
//! so a new leader plans from it (issue 28).
//!
//! Layout, per owner id (the same Redis as the lease):
//! - `dnsplane:desired:<owner>`: the set of stored source names (`push:<name>`);
//! - `dnsplane:desired:<owner>:<source>`: one hash per source, a field per record key
//!   (its name, type and set) holding the record;
//! - `dnsplane:desired-imported:<owner>`: set once the pushes of the state directory
//!   were imported (when a deployment switches to Redis).
//!
//! Every write is one Lua script, fenced by the lease: it runs only while the lease's
//! hash names the writer as `holder` under the writer's `epoch`, so a deposed leader
//! (its process stalled past its window, say) cannot write after a standby took over
//! and read the store. A whole push replaces the hash; a patch sets and deletes its
//! fields only, so it costs O(patch) whatever the size of the source.
//!
//! The store knows fields and values as strings; the engine encodes records
//! ([`crate::engine`]).
use crate::store::StoreError;
use ::redis::Script;
use dnsplane_common::redis::{LazyRedis, RedisCallError};
use std::time::Duration;

/// KEYS: the lease, the set of sources, the source's hash. ARGV: holder, epoch,
/// source name, mode (`put`: the hash is replaced; `patch`), n, then n field/value
/// pairs to set, then the fields to delete. Returns the hash's length, or the error
/// `FENCED <holder> <epoch>` when the writer does not hold the lease under its epoch.
const WRITE_LUA: &str = r"
local h = redis.call('HMGET', KEYS[1], 'holder', 'epoch')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then
  return redis.error_reply('FENCED the lease is held by ' .. tostring(h[1]) .. ' under epoch ' .. tostring(h[2]))
end
if ARGV[4] == 'put' then
  redis.call('DEL', KEYS[3])
end
local n = tonumber(ARGV[5])
for i = 0, n - 1 do
  redis.call('HSET', KEYS[3], ARGV[6 + 2 * i], ARGV[7 + 2 * i])
end
for i = 6 + 2 * n, #ARGV do
  redis.call('HDEL', KEYS[3], ARGV[i])
end
redis.call('SADD', KEYS[2], ARGV[3])
return redis.call('HLEN', KEYS[3])
";

/// Who writes: the lease holder's identity and epoch, checked by every write.
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
    pub holder: &'a str,
    pub epoch: u64,
}

/// One owner id's pushed state in one Redis.
pub struct RedisStore {
    redis: LazyRedis,
    lease_key: String,
    prefix: String,
    write: Script,
}

/// Never the URL: it may carry a password.
impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("redis", &self.redis.addr())
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// The store of `owner_id` in the Redis at `url` (the lease's); makes no
    /// connection. `timeout` bounds each call.
    pub fn new(url: &str, owner_id: &str, timeout: Duration) -> Result<RedisStore, StoreError> {
        let redis = LazyRedis::new(url, timeout).map_err(|e| StoreError::Redis {
            addr: crate::config::redis_addr(url),
            message: e.to_string(),
        })?;
        Ok(RedisStore {
            redis,
            lease_key: format!("dnsplane:lease:{owner_id}"),
            prefix: format!("dnsplane:desired:{owner_id}"),
            write: Script::new(WRITE_LUA),
        })
    }

    /// `host:port` of the Redis.
    pub fn addr(&self) -> String {
        self.redis.addr()
    }

    fn source_key(&self, source: &str) -> String {
        format!("{}:{source}", self.prefix)
    }

    fn imported_key(&self) -> String {
        self.prefix
            .replacen("dnsplane:desired:", "dnsplane:desired-imported:", 1)
    }

    fn error(&self, e: RedisCallError) -> StoreError {
        match e {
            RedisCallError::Redis(e) if e.to_string().contains("FENCED") => StoreError::Fenced {
                message: e.to_string().split_once("FENCED").map_or_else(
                    || e.to_string(),
                    |(_, m)| m.trim_start_matches([':', ' ', '-']).trim().to_string(),
                ),
            },
            e => StoreError::Redis {
                addr: self.addr(),
                message: e.to_string(),
            },
        }
    }

    async fn conn(&self) -> Result<::redis::aio::ConnectionManager, StoreError> {
        self.redis
            .conn()
            .await
            .map_err(|e| self.error(RedisCallError::Redis(e)))
    }

    /// Replaces source `source` by `fields` (field, value), fenced by `writer`.
    /// Returns the source's records after.
    pub async fn put(
        &self,
        writer: Writer<'_>,
        source: &str,
        fields: &[(String, String)],
    ) -> Result<u64, StoreError> {
        self.run(writer, source, "put", fields, &[]).await
    }

    /// Sets `upserts` and deletes `deletes` in source `source`, fenced by `writer`.
    /// Returns the source's records after.
    pub async fn patch(
        &self,
        writer: Writer<'_>,
        source: &str,
        upserts: &[(String, String)],
        deletes: &[String],
    ) -> Result<u64, StoreError> {
        self.run(writer, source, "patch", upserts, deletes).await
    }

    async fn run(
        &self,
        writer: Writer<'_>,
        source: &str,
        mode: &str,
        upserts: &[(String, String)],
        deletes: &[String],
    ) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let mut inv = self.write.prepare_invoke();
        inv.key(&self.lease_key)
            .key(&self.prefix)
            .key(self.source_key(source));
        inv.arg(writer.holder)
            .arg(writer.epoch.to_string())
            .arg(source)
            .arg(mode)
            .arg(upserts.len());
        for (f, v) in upserts {
            inv.arg(f).arg(v);
        }
        for f in deletes {
            inv.arg(f);
        }
        self.redis
            .bounded(inv.invoke_async(&mut conn))
            .await
            .map_err(|e| self.error(e))
    }

    /// Every stored source with its fields (sorted by field), sorted by name.
    pub async fn read_all(&self) -> Result<Vec<(String, Vec<(String, String)>)>, StoreError> {
        let mut conn = self.conn().await?;
        let mut names: Vec<String> = self
            .redis
            .bounded(
                ::redis::cmd("SMEMBERS")
                    .arg(&self.prefix)
                    .query_async(&mut conn),
            )
            .await
            .map_err(|e| self.error(e))?;
        names.sort();
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let fields: std::collections::BTreeMap<String, String> = self
                .redis
                .bounded(
                    ::redis::cmd("HGETALL")
                        .arg(self.source_key(&name))
                        .query_async(&mut conn),
                )
                .await
                .map_err(|e| self.error(e))?;
            out.push((name, fields.into_iter().collect()));
        }
        Ok(out)
    }

    /// Whether the state directory's pushes were imported already (or Redis held
    /// pushes before: then nothing is imported).
    pub async fn imported(&self) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let (marked, sources): (bool, u64) = self
            .redis
            .bounded(
                ::redis::pipe()
                    .cmd("EXISTS")
                    .arg(self.imported_key())
                    .cmd("SCARD")
                    .arg(&self.prefix)
                    .query_async(&mut conn),
            )
            .await
            .map_err(|e| self.error(e))?;
        Ok(marked || sources > 0)
    }

    /// Notes that the import is done, so that it never runs again.
    pub async fn mark_imported(&self) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        let _: () = self
            .redis
            .bounded(
                ::redis::cmd("SET")
                    .arg(self.imported_key())
                    .arg("1")
                    .query_async(&mut conn),
            )
            .await
            .map_err(|e| self.error(e))?;
        Ok(())
    }
}

/// Runs `f` to its end from synchronous code (the engine's store calls run off the
/// async runtime, [`crate::engine::Engine::cpu`]).
pub fn block_on<F: std::future::Future + Send>(f: F) -> F::Output
where
    F::Output: Send,
{
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| h.block_on(f))
        }
        _ => std::thread::scope(|s| {
            s.spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a current-thread runtime")
                    .block_on(f)
            })
            .join()
            .expect("the store call panicked")
        }),
    }
}
