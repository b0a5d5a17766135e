//! A token-bucket request quota per account, provider-neutral: `rate` requests per
//! second refill a bucket of `burst` tokens; a request takes one token or is refused
//! with the time until the next token. Route 53 documents "five requests per second
//! per AWS account"; other providers count per project or per token.
//!
//! Time is passed in (`tokio::time::Instant`), so tests can run it under
//! `tokio::time::pause()`.
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// One bucket.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket. `burst` below 1 is taken as 1 (a quota must let one through).
    pub fn new(rate: f64, burst: u32, now: Instant) -> TokenBucket {
        let burst = f64::from(burst.max(1));
        TokenBucket {
            rate,
            burst,
            tokens: burst,
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.last = now;
    }

    /// Takes a token, or says how long until one is available.
    pub fn try_take(&mut self, now: Instant) -> Result<(), Duration> {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            let missing = 1.0 - self.tokens;
            Err(Duration::from_secs_f64(missing / self.rate))
        }
    }
}

/// Buckets per account key. A `rate` of 0 (or below) means no quota.
#[derive(Debug)]
pub struct Quota {
    rate: f64,
    burst: u32,
    buckets: Mutex<HashMap<String, TokenBucket>>,
}

impl Quota {
    pub fn new(rate: f64, burst: u32) -> Quota {
        Quota {
            rate,
            burst,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a quota applies at all.
    pub fn enabled(&self) -> bool {
        self.rate > 0.0
    }

    /// Takes a token from `account`'s bucket now.
    pub fn check(&self, account: &str) -> Result<(), Duration> {
        self.check_at(account, Instant::now())
    }

    /// Takes a token from `account`'s bucket at `now`.
    pub fn check_at(&self, account: &str, now: Instant) -> Result<(), Duration> {
        if !self.enabled() {
            return Ok(());
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        buckets
            .entry(account.to_string())
            .or_insert_with(|| TokenBucket::new(self.rate, self.burst, now))
            .try_take(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn burst_then_rate() {
        let q = Quota::new(5.0, 5);
        for i in 0..5 {
            assert!(q.check("a").is_ok(), "request {i} of the burst");
        }
        let wait = q.check("a").unwrap_err();
        assert!(wait <= Duration::from_millis(200) && wait > Duration::ZERO);
        // Another account has its own bucket.
        assert!(q.check("b").is_ok());
        tokio::time::advance(Duration::from_millis(200)).await;
        assert!(q.check("a").is_ok());
        assert!(q.check("a").is_err());
        // A long idle refills to the burst, not beyond.
        tokio::time::advance(Duration::from_secs(60)).await;
        let passed = (0..10).filter(|_| q.check("a").is_ok()).count();
        assert_eq!(passed, 5);
    }

    #[test]
    fn zero_rate_is_no_quota() {
        let q = Quota::new(0.0, 0);
        assert!((0..1000).all(|_| q.check("a").is_ok()));
    }
}
