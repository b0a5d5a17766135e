//! Retry knobs for transient provider failures: bounded attempts, exponential backoff
//! with full jitter, the provider's `Retry-After`, and the hints given back with
//! DEFERRED and FAILED.
//!
//! Two bounds hold every batch: `max_attempts` provider calls per request, and the
//! batch's deadline (sent by the planner, else `batch_deadline`). A retry that would
//! cross the deadline is not made: the rest of the batch comes back DEFERRED.
use rand::Rng;
use serde::Deserialize;
use std::time::Duration;

/// How the applier retries a transient provider answer within one batch. Bounded on
/// purpose: a record that outlives this budget comes back FAILED and the planner
/// retries it on its own clock, so no batch holds its zone for long.
///
/// ```toml
/// [retry]
/// max_attempts = 4
/// base_delay = "100ms"
/// max_delay = "2s"
/// max_retry_after = "5s"
/// deferred_retry_after = "1s"
/// batch_deadline = "60s"
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryPolicy {
    /// Provider calls per request when the answer is transient, the first included.
    /// Default 4.
    pub max_attempts: u32,
    /// Backoff ceiling of the first retry; doubles with each further retry. The actual
    /// wait is drawn uniformly from `[0, ceiling]` (full jitter). Default 100ms.
    #[serde(with = "humantime_serde")]
    pub base_delay: Duration,
    /// Largest backoff ceiling between two attempts. Default 2s.
    #[serde(with = "humantime_serde")]
    pub max_delay: Duration,
    /// Largest provider `Retry-After` waited for inside a batch (the wait is exactly
    /// the provider's, never shorter). A longer one ends the retries at once: the
    /// record comes back FAILED carrying that delay, and the planner waits it out
    /// without holding the zone. Default 5s.
    #[serde(with = "humantime_serde")]
    pub max_retry_after: Duration,
    /// `retry_after` sent with DEFERRED when a batch arrives past its deadline or
    /// during shutdown. Default 1s.
    #[serde(with = "humantime_serde")]
    pub deferred_retry_after: Duration,
    /// Deadline of a batch that arrives without one (planners normally send one).
    /// Default 60s.
    #[serde(with = "humantime_serde")]
    pub batch_deadline: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(2),
            max_retry_after: Duration::from_secs(5),
            deferred_retry_after: Duration::from_secs(1),
            batch_deadline: Duration::from_secs(60),
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
        self.backoff_with(retry, &mut rand::rng())
    }

    /// [`RetryPolicy::backoff`] drawing from `rng` (seeded in tests).
    pub fn backoff_with<R: Rng + ?Sized>(&self, retry: u32, rng: &mut R) -> Duration {
        let ceiling = self.ceiling(retry);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(rng.random_range(0..=nanos))
    }

    /// The delay before retry number `retry`: the provider's `Retry-After` when it
    /// sent one (never shortened), else the jittered backoff. `None` when the hint is
    /// above `max_retry_after` and retrying within the batch makes no sense.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        self.delay_with(retry, retry_after, &mut rand::rng())
    }

    /// [`RetryPolicy::delay`] drawing from `rng`.
    pub fn delay_with<R: Rng + ?Sized>(
        &self,
        retry: u32,
        retry_after: Option<Duration>,
        rng: &mut R,
    ) -> Option<Duration> {
        match retry_after {
            Some(d) if d > self.max_retry_after => None,
            Some(d) => Some(d),
            None => Some(self.backoff_with(retry, rng)),
        }
    }

    /// Problems with the knobs, for config validation.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if self.max_attempts == 0 {
            p.push("retry.max_attempts must be at least 1".to_string());
        }
        if self.max_delay < self.base_delay {
            p.push("retry.max_delay must not be below retry.base_delay".to_string());
        }
        if self.batch_deadline.is_zero() {
            p.push("retry.batch_deadline must be above zero".to_string());
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn ceilings_double_and_are_capped() {
        let p = RetryPolicy::default();
        assert_eq!(p.ceiling(0), Duration::from_millis(100));
        assert_eq!(p.ceiling(1), Duration::from_millis(200));
        assert_eq!(p.ceiling(3), Duration::from_millis(800));
        assert_eq!(p.ceiling(4), Duration::from_millis(1600));
        assert_eq!(p.ceiling(5), Duration::from_secs(2));
        assert_eq!(p.ceiling(10), Duration::from_secs(2));
        // No overflow however far the retries go.
        assert_eq!(p.ceiling(31), Duration::from_secs(2));
        assert_eq!(p.ceiling(200), Duration::from_secs(2));
        assert_eq!(p.ceiling(u32::MAX), Duration::from_secs(2));
    }

    #[test]
    fn every_backoff_stays_within_its_ceiling() {
        let p = RetryPolicy::default();
        let mut rng = StdRng::seed_from_u64(1);
        for retry in 0..12 {
            for _ in 0..1_000 {
                let d = p.backoff_with(retry, &mut rng);
                assert!(d <= p.ceiling(retry), "retry {retry}: {d:?}");
            }
        }
        let zero = RetryPolicy {
            base_delay: Duration::ZERO,
            ..RetryPolicy::default()
        };
        assert_eq!(zero.backoff_with(3, &mut rng), Duration::ZERO);
    }

    /// Full jitter means uniform over `[0, ceiling]`: checked by a chi-square test over
    /// ten equal bins, the mean, and the extremes, on a seeded generator.
    #[test]
    fn jitter_is_spread_uniformly_over_the_whole_range() {
        const DRAWS: usize = 20_000;
        const BINS: usize = 10;
        let p = RetryPolicy::default();
        for (seed, retry) in [(7u64, 0u32), (8, 2), (9, 6)] {
            let mut rng = StdRng::seed_from_u64(seed);
            let ceiling = p.ceiling(retry).as_secs_f64();
            let mut bins = [0usize; BINS];
            let (mut sum, mut lo, mut hi) = (0.0, f64::MAX, 0.0f64);
            for _ in 0..DRAWS {
                let x = p.backoff_with(retry, &mut rng).as_secs_f64() / ceiling;
                sum += x;
                lo = lo.min(x);
                hi = hi.max(x);
                bins[((x * BINS as f64) as usize).min(BINS - 1)] += 1;
            }
            let expected = DRAWS as f64 / BINS as f64;
            let chi2: f64 = bins
                .iter()
                .map(|&o| (o as f64 - expected).powi(2) / expected)
                .sum();
            // 9 degrees of freedom: P(chi2 > 27.88) = 0.001.
            assert!(
                chi2 < 27.88,
                "retry {retry}: not uniform, chi2 {chi2:.1}, bins {bins:?}"
            );
            let mean = sum / DRAWS as f64;
            // Standard error of the mean of U(0,1) over 20k draws is ~0.002.
            assert!((mean - 0.5).abs() < 0.01, "retry {retry}: mean {mean:.4}");
            assert!(
                lo < 0.001 && hi > 0.999,
                "retry {retry}: range [{lo}, {hi}]"
            );
        }
    }

    #[test]
    fn retry_after_is_honoured_exactly_up_to_its_cap() {
        let p = RetryPolicy::default();
        let mut rng = StdRng::seed_from_u64(3);
        for hint in [
            Duration::from_millis(1),
            Duration::from_secs(2),
            p.max_retry_after,
        ] {
            assert_eq!(p.delay_with(0, Some(hint), &mut rng), Some(hint));
            assert_eq!(p.delay_with(5, Some(hint), &mut rng), Some(hint));
        }
        // Above max_delay but within max_retry_after: still waited for, never cut.
        assert!(p.max_retry_after > p.max_delay);
        assert_eq!(
            p.delay_with(0, Some(Duration::from_secs(3)), &mut rng),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            p.delay_with(
                0,
                Some(p.max_retry_after + Duration::from_millis(1)),
                &mut rng
            ),
            None
        );
        let d = p.delay_with(2, None, &mut rng).unwrap();
        assert!(d <= p.ceiling(2));
    }

    #[test]
    fn knobs_are_validated() {
        assert!(RetryPolicy::default().problems().is_empty());
        let bad = RetryPolicy {
            max_attempts: 0,
            base_delay: Duration::from_secs(5),
            max_delay: Duration::from_secs(1),
            batch_deadline: Duration::ZERO,
            ..RetryPolicy::default()
        };
        let problems = bad.problems().join("; ");
        for want in ["max_attempts", "max_delay", "batch_deadline"] {
            assert!(problems.contains(want), "{want} not in {problems}");
        }
    }
}
