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
//! (the call's deadline travels in its [`CallCx`](crate::provider::call::CallCx)). A throttle answer from the provider
//! (an error the driver marked `throttled`: an HTTP 429, Route 53's `Throttling`) lowers the rate for every
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
//!
//! - [`config`]: the `[accounts.quota]` table and the drivers' documented defaults;
//! - [`limiter`]: one account's quota (local, shared, fallback) and its status;
//! - [`layer`]: the layer of the provider stack that makes each call take a token;
//! - [`gcra`], [`shared`]: the bucket arithmetic, in process and in Redis;
//! - [`pacer`], [`paced`]: pacing after a 429 for every account, with or without a
//!   quota (`[accounts.pacing]`), and its layer.

pub mod config;
pub mod gcra;
pub mod layer;
pub mod limiter;
pub mod paced;
pub mod pacer;
pub mod shared;

pub use config::{
    DRIVER_DEFAULTS, DriverDefault, QuotaConfig, QuotaOps, QuotaSettings, driver_default,
};
#[cfg(test)]
use config::{default_max_wait, default_probe_interval, default_recover, default_redis_timeout};
pub use layer::Limited;
pub use limiter::{Mode, Quota, QuotaStatus};
pub use paced::Paced;
pub use pacer::{Pacer, PacingConfig, PacingStatus};

#[cfg(test)]
use dnsplane_common::RRSetOp;
#[cfg(test)]
use std::sync::Arc;
#[cfg(test)]
use std::time::Duration;
#[cfg(test)]
use tokio::time::Instant;

#[cfg(test)]
mod tests;
