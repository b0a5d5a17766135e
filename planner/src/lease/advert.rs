//! The leader's address, kept beside the lease, so that a standby can name it when it
//! refuses a write ("this planner is standby; the leader is 10.0.0.5:9090").
//!
//! Stored as `<holder> <address>`: a standby shows the address only when its holder
//! is the one the lease names, so an address left behind by a dead leader is never
//! shown for the next one. With `[lease] redis` it is the field `address` of the
//! lease's own hash, written only while the writer holds the lease (a Lua
//! compare-and-set on `holder`); with the file lease it is `<state_dir>/lease.address`,
//! replaced whole (write, rename).
//!
//! The address is `[lease] advertise`, or the gRPC listen address (with the host name
//! in place of an unspecified IP such as `0.0.0.0`).
use super::LeaseError;
use crate::config::PlannerConfig;
use ::redis::Script;
use dnsplane_common::redis::LazyRedis;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The address file's name in the state directory.
pub const ADDRESS_FILE: &str = "lease.address";

/// KEYS[1]: the lease. ARGV: holder, `<holder> <address>`. Sets `address` when
/// `holder` holds the lease. Returns 1 if so, 0 otherwise.
const PUBLISH_LUA: &str = r"
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'address', ARGV[2])
return 1
";

/// Where the leader's address is kept: next to the lease.
#[derive(Debug)]
pub enum Advert {
    Redis {
        redis: Box<LazyRedis>,
        key: String,
        publish: Box<Script>,
    },
    File {
        path: PathBuf,
    },
}

impl Advert {
    /// Beside the lease `config` asks for (see [`super::backend`]).
    pub fn new(config: &PlannerConfig) -> Result<Advert, LeaseError> {
        Ok(match &config.lease.redis {
            Some(url) => Advert::Redis {
                redis: Box::new(LazyRedis::new(url, Duration::from_secs(2))?),
                key: format!("dnsplane:lease:{}", config.owner_id),
                publish: Box::new(Script::new(PUBLISH_LUA)),
            },
            None => Advert::File {
                path: config.state_dir.join(ADDRESS_FILE),
            },
        })
    }

    /// Stores `address` as the address of `holder`, the lease's holder (Redis: only
    /// while it holds it).
    pub async fn publish(&self, holder: &str, address: &str) -> Result<(), LeaseError> {
        let value = format!("{holder} {address}");
        match self {
            Advert::Redis {
                redis,
                key,
                publish,
            } => {
                let mut conn = redis.conn().await?;
                let mut inv = publish.key(key);
                inv.arg(holder).arg(&value);
                let _: i64 = redis
                    .bounded(inv.invoke_async(&mut conn))
                    .await
                    .map_err(LeaseError::from)?;
                Ok(())
            }
            Advert::File { path } => {
                let tmp = path.with_extension("address.tmp");
                let io = |source| LeaseError::Io {
                    path: path.clone(),
                    source,
                };
                std::fs::write(&tmp, format!("{value}\n")).map_err(io)?;
                std::fs::rename(&tmp, path).map_err(io)
            }
        }
    }

    /// The address `holder` published, if it did (`None` also when it cannot be read
    /// now: the refusal then names the holder alone).
    pub async fn read(&self, holder: &str) -> Option<String> {
        let text: String = match self {
            Advert::Redis { redis, key, .. } => {
                let mut conn = redis.conn().await.ok()?;
                let mut cmd = ::redis::cmd("HGET");
                cmd.arg(key).arg("address");
                let v: Option<String> = redis.bounded(cmd.query_async(&mut conn)).await.ok()?;
                v?
            }
            Advert::File { path } => std::fs::read_to_string(path).ok()?,
        };
        let (h, addr) = text.trim().split_once(' ')?;
        (h == holder && !addr.is_empty()).then(|| addr.to_string())
    }
}

/// The address to publish: `[lease] advertise`, else `listen` (with this host's name
/// when `listen` is an unspecified IP, which nobody can dial).
pub fn advertised(config: &PlannerConfig, listen: SocketAddr) -> String {
    if let Some(a) = &config.lease.advertise {
        return a.clone();
    }
    if listen.ip().is_unspecified() {
        let host = super::Identity::new().host;
        return format!("{host}:{}", listen.port());
    }
    listen.to_string()
}
