//! ARM's subscription throttling: a bucket of reads, one of writes and one of deletes
//! per subscription; a request takes a token or is refused with 429 and `Retry-After`;
//! every answer says what is left in `x-ms-ratelimit-remaining-subscription-reads`
//! (GET), `-writes` (PUT, PATCH) or `-deletes` (DELETE), as ARM's do. Its own small bucket (not
//! `crate::quota`) because the headers need the tokens left.
use super::options::ThrottleOptions;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

/// Reads, writes or deletes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Class {
    Read,
    Write,
    Delete,
}

impl Class {
    pub fn header(self) -> &'static str {
        match self {
            Class::Read => "x-ms-ratelimit-remaining-subscription-reads",
            Class::Write => "x-ms-ratelimit-remaining-subscription-writes",
            Class::Delete => "x-ms-ratelimit-remaining-subscription-deletes",
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Class::Read => "read",
            Class::Write => "write",
            Class::Delete => "delete",
        }
    }
}

/// The buckets of every subscription.
#[derive(Debug)]
pub(crate) struct Throttle {
    opts: ThrottleOptions,
    buckets: Mutex<HashMap<(String, Class), Bucket>>,
}

impl Throttle {
    pub fn new(opts: ThrottleOptions) -> Throttle {
        Throttle {
            opts,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn params(&self, c: Class) -> (f64, f64) {
        match c {
            Class::Read => (
                self.opts.reads_per_second,
                f64::from(self.opts.read_burst.max(1)),
            ),
            Class::Write => (
                self.opts.writes_per_second,
                f64::from(self.opts.write_burst.max(1)),
            ),
            Class::Delete => (
                self.opts.deletes_per_second,
                f64::from(self.opts.delete_burst.max(1)),
            ),
        }
    }

    /// Takes one request of `class` for `subscription`: `Ok(left)` or `Err((left,
    /// retry_after))`. A bucket whose rate is 0 never refuses (and reports its burst).
    pub fn take(&self, subscription: &str, class: Class) -> Result<u64, (u64, Duration)> {
        let (rate, burst) = self.params(class);
        if rate <= 0.0 {
            return Ok(burst as u64);
        }
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let b = buckets
            .entry((subscription.to_ascii_lowercase(), class))
            .or_insert(Bucket {
                tokens: burst,
                last: now,
            });
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * rate).min(burst);
        b.last = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(b.tokens.floor() as u64)
        } else {
            Err((0, Duration::from_secs_f64((1.0 - b.tokens) / rate)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn reads_and_writes_have_their_own_buckets() {
        let t = Throttle::new(ThrottleOptions {
            reads_per_second: 1.0,
            read_burst: 2,
            writes_per_second: 0.5,
            write_burst: 1,
            deletes_per_second: 1.0,
            delete_burst: 1,
        });
        assert_eq!(t.take("s", Class::Read), Ok(1));
        assert_eq!(t.take("S", Class::Read), Ok(0));
        let (left, wait) = t.take("s", Class::Read).unwrap_err();
        assert_eq!(left, 0);
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1));
        assert_eq!(t.take("s", Class::Write), Ok(0));
        assert_eq!(
            t.take("s", Class::Write).unwrap_err().1,
            Duration::from_secs(2)
        );
        assert_eq!(t.take("s", Class::Delete), Ok(0));
        assert_eq!(t.take("other", Class::Read), Ok(1));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(t.take("s", Class::Read), Ok(0));
        let off = Throttle::new(ThrottleOptions {
            reads_per_second: 0.0,
            ..ThrottleOptions::default()
        });
        assert!((0..1000).all(|_| off.take("s", Class::Read).is_ok()));
    }
}
