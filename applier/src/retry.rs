//! Retry knobs for transient provider failures: bounded attempts, exponential backoff
//! with full jitter, and the hints given back with DEFERRED and FAILED.
use serde::Deserialize;
use std::time::Duration;

/// How the applier retries a transient provider answer within one batch. Bounded on
/// purpose: a record that outlives this budget comes back FAILED and the planner
/// retries it on its own clock, so no batch holds its zone for long.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryPolicy {
    /// Provider calls per request when the answer is transient, the first included.
    pub max_attempts: u32,
    /// Backoff ceiling of the first retry; doubles with each further retry.
    #[serde(with = "humantime_serde")]
    pub base_delay: Duration,
    /// Largest backoff between two attempts. A provider `Retry-After` above this ends
    /// the retries at once (the record comes back FAILED carrying that delay).
    #[serde(with = "humantime_serde")]
    pub max_delay: Duration,
    /// `retry_after` sent with DEFERRED when a batch arrives past its deadline or
    /// during shutdown.
    #[serde(with = "humantime_serde")]
    pub deferred_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(2),
            deferred_retry_after: Duration::from_secs(1),
        }
    }
}

impl RetryPolicy {
    /// The ceiling before retry number `retry` (0 for the first retry):
    /// `min(max_delay, base_delay · 2^retry)`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        self.base_delay.saturating_mul(factor).min(self.max_delay)
    }

    /// Full jitter: uniform in `[0, ceiling(retry)]`, so that many clients that failed
    /// together do not retry together.
    pub fn backoff(&self, retry: u32) -> Duration {
        let ceiling = self.ceiling(retry);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(rand::random_range(0..=nanos))
    }

    /// The delay before retry number `retry`, honouring the provider's hint; `None`
    /// when the hint is above `max_delay` and retrying within the batch makes no sense.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        match retry_after {
            Some(d) if d > self.max_delay => None,
            Some(d) => Some(d),
            None => Some(self.backoff(retry)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_capped_and_jittered() {
        let p = RetryPolicy::default();
        assert_eq!(p.ceiling(0), Duration::from_millis(100));
        assert_eq!(p.ceiling(3), Duration::from_millis(800));
        assert_eq!(p.ceiling(10), Duration::from_secs(2));
        assert_eq!(p.ceiling(200), Duration::from_secs(2));
        for retry in 0..8 {
            assert!(p.backoff(retry) <= p.ceiling(retry));
        }
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(1))),
            Some(Duration::from_secs(1))
        );
        assert_eq!(p.delay(0, Some(Duration::from_secs(30))), None);
    }
}
