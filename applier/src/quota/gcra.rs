//! The GCRA (generic cell rate algorithm) of the provider quotas, as pure arithmetic on
//! milliseconds, with the adaptive factor that a provider's 429 lowers. The same
//! arithmetic runs in-process ([`Bucket`]) and in Redis (the Lua scripts in
//! [`super::shared`], which mirror these functions line for line).
//!
//! A bucket holds the *theoretical arrival time* (TAT): when the quota would be back to
//! full if nothing else came. A call of cost `c` at `now`, with emission interval `T`
//! (1 / rate) and burst `B`:
//!
//! - `new_tat = max(tat, now) + c·T`;
//! - the call may go at `new_tat − B·T`: `wait = new_tat − B·T − now`;
//! - `wait ≤ 0`: it goes now; `0 < wait ≤ max_wait`: the token is *reserved* (the TAT
//!   moves) and the caller sleeps `wait` first, so waiters are served in order and nobody
//!   polls; `wait > max_wait`: denied, the TAT does not move, and `wait` is the hint
//!   of when to come back.
//!
//! So at most `B + t/T` calls pass in any window of length `t`.
//!
//! **A bucket nobody knows starts empty**, not full (`tat = now + (B−1)·T`: the first
//! call goes at once, the next ones are paced, and the burst builds up over quiet
//! time). A bucket is unknown at a process's first call, after an hour unused, and
//! after Redis lost its data (a restart without persistence) or became unreachable
//! (the fallback's local bucket): in every one of those cases the provider may just
//! have seen a burst, so granting another one would risk a 429.
//!
//! **Adaptive rate.** A throttle answer (429 / `Retry-After`) halves the factor `f`
//! (the rate in force is `rate · f`, never below `min_factor · rate`; at most once per
//! `max(hold, Retry-After)`), and pushes the TAT so that the next call waits out the
//! `Retry-After` and then goes at the new rate without a burst. Then `f` climbs back
//! linearly (`recover_per_ms` per millisecond) to 1. `f` is not stored per instant:
//! the bucket keeps the factor it was set to and when (`halved_at`), and every reader
//! computes the factor at its own `now`, so replicas need no background updates.

/// The fixed knobs of one quota, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Emission interval at the full rate: `1000 / rate`.
    pub interval_ms: f64,
    /// Calls that may go at once after a quiet period.
    pub burst: f64,
    /// How fast the factor climbs back to 1 after a throttle, per millisecond.
    pub recover_per_ms: f64,
    /// The factor never goes below this.
    pub min_factor: f64,
    /// A second throttle within this long of the last halving does not halve again
    /// (several replicas, or several calls in flight, see the same overload).
    pub hold_ms: f64,
}

/// The lowest factor a run of throttles can bring the rate to: 1/16.
pub const MIN_FACTOR: f64 = 1.0 / 16.0;
/// One halving per second at most (or per `Retry-After`, when longer).
pub const HOLD_MS: f64 = 1000.0;

impl Params {
    /// `rate` calls per second, `burst` at once; after a throttle the rate climbs back
    /// from half to full in `recover_ms` (0: at once).
    pub fn new(rate: f64, burst: u32, recover_ms: f64) -> Params {
        Params {
            interval_ms: 1000.0 / rate,
            burst: f64::from(burst.max(1)),
            recover_per_ms: if recover_ms > 0.0 {
                0.5 / recover_ms
            } else {
                f64::INFINITY
            },
            min_factor: MIN_FACTOR,
            hold_ms: HOLD_MS,
        }
    }

    /// The same quota split evenly over `replicas` (each gets `rate / replicas` and
    /// `burst / replicas`, at least 1).
    pub fn share(&self, replicas: u32) -> Params {
        let n = f64::from(replicas.max(1));
        Params {
            interval_ms: self.interval_ms * n,
            burst: (self.burst / n).floor().max(1.0),
            ..*self
        }
    }

    /// Calls per second at factor 1.
    pub fn rate(&self) -> f64 {
        1000.0 / self.interval_ms
    }
}

/// What a bucket says to one call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decision {
    /// Go after sleeping `wait_ms` (0: at once); the token is taken, and
    /// `tokens_left` more could go at once after it.
    Granted { wait_ms: f64, tokens_left: f64 },
    /// No token within the allowed wait; one is expected in `retry_after_ms`.
    Denied { retry_after_ms: f64 },
}

/// One quota's state. `Default` is a bucket nobody knows yet, at factor 1: it starts empty.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    tat: Option<f64>,
    /// The factor set by the last halving, valid at `halved_at`.
    factor: f64,
    halved_at: Option<f64>,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket {
            tat: None,
            factor: 1.0,
            halved_at: None,
        }
    }
}

impl Bucket {
    /// A bucket whose first call may go at `at` (ms), and whose burst builds up only
    /// after that: for a hand-over from another bucket whose reservations run until
    /// then.
    pub fn empty_at(at: f64, p: &Params) -> Bucket {
        Bucket {
            tat: Some(at + (p.burst - 1.0) * p.interval_ms),
            ..Bucket::default()
        }
    }

    /// The factor in force at `now`.
    pub fn factor(&self, now: f64, p: &Params) -> f64 {
        match self.halved_at {
            None => 1.0,
            Some(t) => (self.factor + (now - t).max(0.0) * p.recover_per_ms).min(1.0),
        }
    }

    /// Takes `cost` tokens if they are available within `max_wait_ms`.
    pub fn reserve(&mut self, now: f64, cost: f64, max_wait_ms: f64, p: &Params) -> Decision {
        let interval = p.interval_ms / self.factor(now, p);
        let tat = self.tat.unwrap_or(now + (p.burst - 1.0) * interval);
        let new_tat = tat.max(now) + cost * interval;
        let wait = new_tat - p.burst * interval - now;
        if wait > max_wait_ms {
            return Decision::Denied {
                retry_after_ms: wait,
            };
        }
        self.tat = Some(new_tat);
        Decision::Granted {
            wait_ms: wait.max(0.0),
            tokens_left: (-wait).max(0.0) / interval,
        }
    }

    /// The provider said "too many": halve the factor (unless it was halved within
    /// the hold time) and make the next call wait out `retry_after_ms`, then go at
    /// the lowered rate. Returns the factor now in force.
    pub fn throttle(&mut self, now: f64, retry_after_ms: f64, p: &Params) -> f64 {
        let mut factor = self.factor(now, p);
        let hold = p.hold_ms.max(retry_after_ms);
        if self.halved_at.is_none_or(|t| now - t >= hold) {
            factor = (factor / 2.0).max(p.min_factor);
            self.factor = factor;
            self.halved_at = Some(now);
        }
        let interval = p.interval_ms / factor;
        let floor = now + retry_after_ms + (p.burst - 1.0) * interval;
        self.tat = Some(self.tat.unwrap_or(now).max(floor));
        factor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(d: Decision) -> f64 {
        match d {
            Decision::Granted { wait_ms, .. } => wait_ms,
            other => panic!("expected a grant, got {other:?}"),
        }
    }

    fn denied(d: Decision) -> f64 {
        match d {
            Decision::Denied { retry_after_ms } => retry_after_ms,
            other => panic!("expected a denial, got {other:?}"),
        }
    }

    #[test]
    fn a_new_bucket_starts_empty_and_a_rested_one_lets_the_burst_through() {
        // 10/s, burst 3: T = 100 ms.
        let p = Params::new(10.0, 3, 0.0);
        let mut b = Bucket::default();
        // Unknown: the first call goes, the second waits one interval.
        assert_eq!(granted(b.reserve(0.0, 1.0, 0.0, &p)), 0.0);
        assert!((denied(b.reserve(0.0, 1.0, 0.0, &p)) - 100.0).abs() < 1e-9);
        // After a quiet period the burst is there, and not more.
        for left in [2.0, 1.0, 0.0] {
            let d = b.reserve(10_000.0, 1.0, 0.0, &p);
            assert_eq!(
                d,
                Decision::Granted {
                    wait_ms: 0.0,
                    tokens_left: left
                }
            );
        }
        // The 4th is denied without waiting and told when a token comes: one T.
        assert!((denied(b.reserve(10_000.0, 1.0, 0.0, &p)) - 100.0).abs() < 1e-9);
        // A denial takes nothing: the same answer again.
        assert!((denied(b.reserve(10_000.0, 1.0, 0.0, &p)) - 100.0).abs() < 1e-9);
        // After one T, exactly one more.
        assert_eq!(granted(b.reserve(10_100.0, 1.0, 0.0, &p)), 0.0);
        assert!(denied(b.reserve(10_100.0, 1.0, 0.0, &p)) > 0.0);
    }

    #[test]
    fn reservations_queue_one_interval_apart_up_to_the_allowed_wait() {
        let p = Params::new(10.0, 1, 0.0);
        let mut b = Bucket::default();
        let waits: Vec<f64> = (0..5)
            .map(|_| granted(b.reserve(0.0, 1.0, 450.0, &p)))
            .collect();
        for (i, w) in waits.iter().enumerate() {
            assert!((w - 100.0 * i as f64).abs() < 1e-9, "{waits:?}");
        }
        // The 6th would wait 500 ms > 450: denied, and told 500.
        assert!((denied(b.reserve(0.0, 1.0, 450.0, &p)) - 500.0).abs() < 1e-9);
    }

    /// The defining property: in any window of length t at most B + t/T calls pass,
    /// whatever the arrival pattern.
    #[test]
    fn no_window_ever_holds_more_than_burst_plus_rate() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        for (rate, burst) in [(10.0, 1u32), (20.0, 5), (3.0, 2), (250.0, 40)] {
            let p = Params::new(rate, burst, 0.0);
            let mut b = Bucket::default();
            let mut now = 0.0;
            let mut passed: Vec<f64> = Vec::new();
            for _ in 0..5_000 {
                // Twice the rate on average, in random clumps.
                now += rng.random_range(0.0..p.interval_ms);
                let wait = rng.random_range(0.0..2.0 * p.interval_ms);
                if let Decision::Granted { wait_ms, .. } = b.reserve(now, 1.0, wait, &p) {
                    passed.push(now + wait_ms);
                }
            }
            passed.sort_by(f64::total_cmp);
            for window in [p.interval_ms, 1000.0, 5000.0] {
                let limit = f64::from(burst) + window / p.interval_ms;
                let mut lo = 0;
                for hi in 0..passed.len() {
                    while passed[hi] - passed[lo] >= window {
                        lo += 1;
                    }
                    let n = (hi - lo + 1) as f64;
                    assert!(
                        n <= limit + 1e-9,
                        "rate {rate} burst {burst}: {n} calls in {window} ms > {limit}"
                    );
                }
            }
            // And it is not stingy: over the run it used most of what it could.
            let span = passed.last().unwrap() - passed[0];
            assert!(passed.len() as f64 >= 0.9 * span / p.interval_ms);
        }
    }

    #[test]
    fn a_throttle_waits_out_retry_after_then_halves_and_recovers_linearly() {
        // 10/s, burst 4, back from half to full in 10 s.
        let p = Params::new(10.0, 4, 10_000.0);
        let mut b = Bucket::default();
        let f = b.throttle(0.0, 2000.0, &p);
        assert_eq!(f, 0.5);
        // Nothing until Retry-After has passed...
        let w = granted(b.reserve(0.0, 1.0, 10_000.0, &p));
        assert!(w >= 2000.0 - 1e-9, "waited only {w}");
        // ...and then no burst: the next calls are one (halved-rate) interval apart.
        let w2 = granted(b.reserve(0.0, 1.0, 10_000.0, &p));
        assert!(w2 - w >= 200.0 - 1.0, "{w} then {w2}");
        // Another throttle within the hold does not halve again.
        assert_eq!(b.throttle(500.0, 1000.0, &p), b.factor(500.0, &p));
        assert!(b.factor(500.0, &p) > 0.5);
        // Linear recovery: +0.05 per second, full after 10 s.
        assert!((b.factor(5_000.0, &p) - 0.75).abs() < 1e-9);
        assert_eq!(b.factor(10_000.0, &p), 1.0);
        assert_eq!(b.factor(60_000.0, &p), 1.0);
        // Repeated throttles, each after the hold: halves down to the floor.
        let mut now = 100_000.0;
        let mut b = Bucket::default();
        let mut last = 1.0;
        for _ in 0..10 {
            let f = b.throttle(now, 0.0, &p);
            assert!(f <= last && f >= MIN_FACTOR);
            last = f;
            now += HOLD_MS;
        }
        assert!((last - MIN_FACTOR).abs() < 0.01, "{last}");
    }

    #[test]
    fn the_local_share_splits_rate_and_burst() {
        let p = Params::new(30.0, 10, 0.0);
        let s = p.share(3);
        assert!((s.rate() - 10.0).abs() < 1e-9);
        assert_eq!(s.burst, 3.0);
        assert_eq!(Params::new(2.0, 1, 0.0).share(3).burst, 1.0);
        assert_eq!(p.share(0), p.share(1));
    }
}
