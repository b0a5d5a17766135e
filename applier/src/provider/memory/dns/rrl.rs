//! Response rate limiting for the embedded DNS server's UDP answers: a token bucket
//! per client prefix (/24 for IPv4, /56 for IPv6), so a spoofed-source flood cannot
//! turn the server into an amplifier and one busy network cannot starve the others.
//!
//! Over the limit, most answers are dropped; every `slip`-th one is replaced by an
//! empty answer with TC=1, as BIND's RRL does (`slip 2` by default there too): a
//! real client behind a flooded prefix retries over TCP and is answered, while the
//! spoofed victim receives a tiny packet at most. TCP is not limited: its handshake
//! proves the address, and connections are already capped.
use serde::Deserialize;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// Prefixes tracked at once; past it, idle buckets are forgotten, and a prefix that
/// still finds no room shares one overflow bucket (never an unlimited pass).
const MAX_BUCKETS: usize = 65_536;

/// `[accounts.dns_rate_limit]` of a memory account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DnsRateLimit {
    /// UDP answers per second per client prefix (/24, /56); 0 turns the limit off.
    pub responses_per_second: u32,
    /// Answers a prefix may get at once after being quiet.
    pub burst: u32,
    /// Over the limit, every `slip`-th answer is sent empty with TC=1 (the client
    /// retries over TCP) and the others are dropped; 0 drops them all, 1 truncates
    /// them all.
    pub slip: u32,
}

impl Default for DnsRateLimit {
    fn default() -> Self {
        DnsRateLimit {
            responses_per_second: 100,
            burst: 200,
            slip: 2,
        }
    }
}

impl DnsRateLimit {
    /// Adds every problem to `problems`; `at` names the table.
    pub fn check(&self, at: &str, problems: &mut Vec<String>) {
        if self.responses_per_second > 0 && self.burst == 0 {
            problems.push(format!(
                "{at}.burst must be at least 1 when responses_per_second is set"
            ));
        }
    }
}

/// What to do with one UDP answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Answer,
    /// Send an empty answer with TC=1.
    Slip,
    Drop,
}

/// The client prefix a bucket is kept for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Prefix {
    V4(u32),
    V6(u128),
    Overflow,
}

impl Prefix {
    fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Prefix::V4(u32::from(v4) & 0xffff_ff00),
            IpAddr::V6(v6) => Prefix::V6(u128::from(v6) & !((1u128 << 72) - 1)),
        }
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
    /// Answers refused since the bucket last had a token: picks the slipped ones.
    limited: u32,
}

/// The buckets of every client prefix.
#[derive(Debug)]
pub struct ResponseLimiter {
    config: DnsRateLimit,
    buckets: Mutex<HashMap<Prefix, Bucket>>,
}

impl ResponseLimiter {
    pub fn new(config: DnsRateLimit) -> Self {
        ResponseLimiter {
            config,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// The verdict on one answer to `client`, now.
    pub fn check(&self, client: IpAddr) -> Verdict {
        self.check_at(client, Instant::now())
    }

    fn check_at(&self, client: IpAddr, now: Instant) -> Verdict {
        let DnsRateLimit {
            responses_per_second: rate,
            burst,
            slip,
        } = self.config;
        if rate == 0 {
            return Verdict::Answer;
        }
        let (rate, burst) = (f64::from(rate), f64::from(burst));
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let mut key = Prefix::of(client);
        if !buckets.contains_key(&key) && buckets.len() >= MAX_BUCKETS {
            // Forget the prefixes whose bucket has refilled: they lose nothing.
            buckets
                .retain(|_, b| b.tokens + now.duration_since(b.last).as_secs_f64() * rate < burst);
            if buckets.len() >= MAX_BUCKETS {
                key = Prefix::Overflow;
            }
        }
        let bucket = buckets.entry(key).or_insert(Bucket {
            tokens: burst,
            last: now,
            limited: 0,
        });
        let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate).min(burst);
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            bucket.limited = 0;
            return Verdict::Answer;
        }
        bucket.limited = bucket.limited.wrapping_add(1);
        if slip > 0 && bucket.limited.is_multiple_of(slip) {
            Verdict::Slip
        } else {
            Verdict::Drop
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limiter(rate: u32, burst: u32, slip: u32) -> ResponseLimiter {
        ResponseLimiter::new(DnsRateLimit {
            responses_per_second: rate,
            burst,
            slip,
        })
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_prefix_gets_its_burst_then_its_rate() {
        let l = limiter(10, 5, 0);
        let t0 = Instant::now();
        for _ in 0..5 {
            assert_eq!(l.check_at(ip("192.0.2.1"), t0), Verdict::Answer);
        }
        // The same /24 shares the bucket.
        assert_eq!(l.check_at(ip("192.0.2.200"), t0), Verdict::Drop);
        // A tenth of a second later: one more token.
        let t1 = t0 + Duration::from_millis(100);
        assert_eq!(l.check_at(ip("192.0.2.9"), t1), Verdict::Answer);
        assert_eq!(l.check_at(ip("192.0.2.9"), t1), Verdict::Drop);
        // Another /24 has its own bucket.
        assert_eq!(l.check_at(ip("192.0.3.1"), t1), Verdict::Answer);
    }

    #[test]
    fn ipv6_shares_a_bucket_per_56() {
        let l = limiter(1, 1, 0);
        let t0 = Instant::now();
        assert_eq!(l.check_at(ip("2001:db8:0:ab00::1"), t0), Verdict::Answer);
        assert_eq!(l.check_at(ip("2001:db8:0:abff::2"), t0), Verdict::Drop);
        assert_eq!(l.check_at(ip("2001:db8:0:ac00::1"), t0), Verdict::Answer);
        // An IPv4-mapped address counts as its IPv4 prefix.
        assert_eq!(l.check_at(ip("192.0.2.1"), t0), Verdict::Answer);
        assert_eq!(l.check_at(ip("::ffff:192.0.2.7"), t0), Verdict::Drop);
    }

    #[test]
    fn every_slip_th_limited_answer_is_truncated() {
        let l = limiter(1, 1, 3);
        let t0 = Instant::now();
        assert_eq!(l.check_at(ip("198.51.100.1"), t0), Verdict::Answer);
        let got: Vec<Verdict> = (0..6).map(|_| l.check_at(ip("198.51.100.1"), t0)).collect();
        use Verdict::{Drop, Slip};
        assert_eq!(got, vec![Drop, Drop, Slip, Drop, Drop, Slip]);
    }

    #[test]
    fn zero_rate_is_off() {
        let l = limiter(0, 0, 2);
        let t0 = Instant::now();
        for _ in 0..10_000 {
            assert_eq!(l.check_at(ip("192.0.2.1"), t0), Verdict::Answer);
        }
    }

    #[test]
    fn a_full_table_never_lets_a_new_prefix_through_unlimited() {
        let l = limiter(1, 1, 0);
        let t0 = Instant::now();
        for i in 0..MAX_BUCKETS as u32 {
            let addr = IpAddr::from(std::net::Ipv4Addr::from(i << 8));
            assert_eq!(l.check_at(addr, t0), Verdict::Answer);
        }
        // All buckets are empty and recent: the newcomers share the overflow bucket.
        assert_eq!(l.check_at(ip("203.0.113.1"), t0), Verdict::Answer);
        assert_eq!(l.check_at(ip("198.18.0.1"), t0), Verdict::Drop);
        // Once they have refilled, they are forgotten and a newcomer gets its own.
        let later = t0 + Duration::from_secs(2);
        assert_eq!(l.check_at(ip("198.18.0.1"), later), Verdict::Answer);
        assert!(l.buckets.lock().unwrap().len() < 10);
    }
}
