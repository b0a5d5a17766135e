//! Cloudflare's API rate limits: 1,200 requests per five minutes per user token, after
//! which every call of that token is refused for the next five minutes (HTTP 429, code
//! 971, `retry-after`), and 200 requests per second per client IP (the shared
//! [`crate::quota`] token bucket). Every answer to a token carries the
//! `Ratelimit: "default";r=<left>;t=<seconds to the window's end>` and
//! `Ratelimit-Policy: "default";q=<limit>;w=<window seconds>` headers; `retry-after`
//! only comes with a 429.
//!
//! Time is passed in (`tokio::time::Instant`), so tests can run it paused.
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// The `[rate_limit]` table.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimitOptions {
    /// Requests per token per `window`; 0 turns the limit off. Default 1200.
    pub requests: u32,
    /// The window, e.g. "5m". Default 5m.
    #[serde(with = "humantime_serde")]
    pub window: Duration,
    /// How long a token that went over is refused, e.g. "5m". Default 5m.
    #[serde(with = "humantime_serde")]
    pub block: Duration,
    /// Requests per second per client IP (burst the same); 0 turns it off. Default 200.
    pub per_ip_per_second: f64,
}

impl Default for RateLimitOptions {
    fn default() -> Self {
        RateLimitOptions {
            requests: 1200,
            window: Duration::from_secs(300),
            block: Duration::from_secs(300),
            per_ip_per_second: 200.0,
        }
    }
}

#[derive(Debug)]
struct Window {
    start: Instant,
    count: u32,
    blocked_until: Option<Instant>,
}

/// Where a token stands after a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Let through: `left` requests remain, the window ends in `reset`.
    Allowed { left: u32, reset: Duration },
    /// Refused: blocked for `retry_after` more.
    Blocked { retry_after: Duration },
    /// No limit configured.
    Off,
}

/// Per-token windows.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    opts: RateLimitOptions,
    windows: Mutex<HashMap<String, Window>>,
}

impl RateLimiter {
    pub fn new(opts: RateLimitOptions) -> RateLimiter {
        RateLimiter {
            opts,
            windows: Mutex::default(),
        }
    }

    pub fn opts(&self) -> &RateLimitOptions {
        &self.opts
    }

    /// Counts one request of `token` at `now`.
    pub fn check_at(&self, token: &str, now: Instant) -> Verdict {
        if self.opts.requests == 0 {
            return Verdict::Off;
        }
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        let w = windows.entry(token.to_string()).or_insert(Window {
            start: now,
            count: 0,
            blocked_until: None,
        });
        if let Some(until) = w.blocked_until {
            if until > now {
                return Verdict::Blocked {
                    retry_after: until - now,
                };
            }
            // The block is over: a fresh window.
            *w = Window {
                start: now,
                count: 0,
                blocked_until: None,
            };
        }
        if now.saturating_duration_since(w.start) >= self.opts.window {
            w.start = now;
            w.count = 0;
        }
        w.count += 1;
        if w.count > self.opts.requests {
            w.blocked_until = Some(now + self.opts.block);
            return Verdict::Blocked {
                retry_after: self.opts.block,
            };
        }
        Verdict::Allowed {
            left: self.opts.requests - w.count,
            reset: self
                .opts
                .window
                .saturating_sub(now.saturating_duration_since(w.start)),
        }
    }

    /// The `Ratelimit` and `Ratelimit-Policy` header values for `verdict`.
    pub fn headers(&self, verdict: Verdict) -> Option<(String, String)> {
        let policy = format!(
            "\"default\";q={};w={}",
            self.opts.requests,
            self.opts.window.as_secs()
        );
        match verdict {
            Verdict::Off => None,
            Verdict::Allowed { left, reset } => Some((
                format!(
                    "\"default\";r={left};t={}",
                    reset.as_secs_f64().ceil() as u64
                ),
                policy,
            )),
            Verdict::Blocked { retry_after } => Some((
                format!(
                    "\"default\";r=0;t={}",
                    retry_after.as_secs_f64().ceil() as u64
                ),
                policy,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn over_the_limit_blocks_for_the_block_time() {
        let rl = RateLimiter::new(RateLimitOptions {
            requests: 3,
            window: Duration::from_secs(10),
            block: Duration::from_secs(30),
            per_ip_per_second: 0.0,
        });
        let now = Instant::now();
        assert_eq!(
            rl.check_at("t", now),
            Verdict::Allowed {
                left: 2,
                reset: Duration::from_secs(10)
            }
        );
        rl.check_at("t", now);
        rl.check_at("t", now);
        assert_eq!(
            rl.check_at("t", now),
            Verdict::Blocked {
                retry_after: Duration::from_secs(30)
            }
        );
        // Another token is not affected.
        assert!(matches!(rl.check_at("u", now), Verdict::Allowed { .. }));
        // Still blocked after the window, until the block ends.
        let later = now + Duration::from_secs(20);
        assert_eq!(
            rl.check_at("t", later),
            Verdict::Blocked {
                retry_after: Duration::from_secs(10)
            }
        );
        assert!(matches!(
            rl.check_at("t", now + Duration::from_secs(31)),
            Verdict::Allowed { left: 2, .. }
        ));
        let (r, p) = rl
            .headers(Verdict::Allowed {
                left: 5,
                reset: Duration::from_millis(1500),
            })
            .unwrap();
        assert_eq!(r, "\"default\";r=5;t=2");
        assert_eq!(p, "\"default\";q=3;w=10");
    }
}
