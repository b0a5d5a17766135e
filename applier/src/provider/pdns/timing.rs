//! How long a request to one zone may take: the account's `timeout`, or longer when
//! PowerDNS itself has shown it needs longer for this zone.
//!
//! PowerDNS rectifies the whole zone inside every API PATCH (stock
//! `default-api-rectify`), so a PATCH's time grows with the zone: past ~650,000
//! records it outgrows a 10 s deadline. A deadline that a healthy server misses turns
//! every write into an ambiguous one (it commits after the client gave up), and the
//! read-back and the next serial read wait behind that same rectify: the zone stops.
//! So the deadline of a request to a zone is [`FACTOR`] times the longest of the last
//! [`WINDOW`] heavy requests to it (PATCHes and whole-zone reads, the ones whose cost
//! grows with the zone), never below the account's `timeout` and never above
//! [`CEILING`]. A request that hit its deadline counts as having taken it, so after a
//! jump the next attempt waits longer. A dead server is still found out: the connect
//! timeout is unchanged, and a zone that never answered a heavy request keeps the
//! account's `timeout`.
use dnsplane_common::Name;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Heavy requests remembered per zone.
pub const WINDOW: usize = 8;
/// The deadline over the longest remembered heavy request.
pub const FACTOR: u32 = 3;
/// No request waits longer than this, however slow the zone has been.
pub const CEILING: Duration = Duration::from_secs(600);
/// At most one "PowerDNS is slow on this zone" log line per zone per this long.
const LOG_EVERY: Duration = Duration::from_secs(60);

#[derive(Default)]
struct ZoneTimes {
    recent: VecDeque<Duration>,
    logged: Option<Instant>,
}

impl ZoneTimes {
    fn longest(&self) -> Duration {
        self.recent.iter().copied().max().unwrap_or_default()
    }
}

/// Per zone, the heavy requests' recent durations.
pub struct Deadlines {
    base: Duration,
    zones: Mutex<HashMap<Name, ZoneTimes>>,
}

impl Deadlines {
    /// `base` is the account's `timeout`: the least any request gets.
    pub fn new(base: Duration) -> Self {
        Deadlines {
            base,
            zones: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Name, ZoneTimes>> {
        self.zones
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The deadline of a request to `zone` (`None`: not about one zone).
    pub fn for_zone(&self, zone: Option<&Name>) -> Duration {
        let longest = zone
            .and_then(|z| self.lock().get(z).map(ZoneTimes::longest))
            .unwrap_or_default();
        self.stretch(longest)
    }

    fn stretch(&self, longest: Duration) -> Duration {
        longest
            .saturating_mul(FACTOR)
            .clamp(self.base, CEILING.max(self.base))
    }

    /// A heavy request to `zone` took `took` (its deadline, when it hit it).
    pub fn heavy(&self, zone: &Name, took: Duration) {
        let mut zones = self.lock();
        let times = zones.entry(zone.clone()).or_default();
        if times.recent.len() == WINDOW {
            times.recent.pop_front();
        }
        times.recent.push_back(took);
        if took > self.base && times.logged.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
            times.logged = Some(Instant::now());
            let deadline = self.stretch(times.longest());
            tracing::info!(
                zone = %zone,
                took_ms = took.as_millis() as u64,
                timeout_ms = self.base.as_millis() as u64,
                deadline_ms = deadline.as_millis() as u64,
                "PowerDNS took longer than the account's timeout for a request that grows with this zone (it rectifies the whole zone in every PATCH); requests to this zone now wait up to the deadline. A zone without DNSSEC can skip the rectify with its API-RECTIFY metadata set to 0."
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone() -> Name {
        Name::parse("ex.test").unwrap()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_quick_zone_keeps_the_accounts_timeout() {
        let d = Deadlines::new(ms(1000));
        assert_eq!(d.for_zone(Some(&zone())), ms(1000));
        d.heavy(&zone(), ms(200));
        assert_eq!(d.for_zone(Some(&zone())), ms(1000));
        assert_eq!(d.for_zone(None), ms(1000));
    }

    #[test]
    fn a_slow_zone_gets_three_times_its_longest_recent_request() {
        let d = Deadlines::new(ms(1000));
        d.heavy(&zone(), ms(400));
        d.heavy(&zone(), ms(900));
        d.heavy(&zone(), ms(500));
        assert_eq!(d.for_zone(Some(&zone())), ms(2700));
        // Other zones are not slowed down by it.
        let other = Name::parse("other.test").unwrap();
        assert_eq!(d.for_zone(Some(&other)), ms(1000));
        // The slow request leaves the window after WINDOW more.
        for _ in 0..WINDOW {
            d.heavy(&zone(), ms(100));
        }
        assert_eq!(d.for_zone(Some(&zone())), ms(1000));
    }

    #[test]
    fn a_request_that_hit_its_deadline_makes_the_next_wait_longer_up_to_the_ceiling() {
        let d = Deadlines::new(ms(1000));
        let mut deadline = d.for_zone(Some(&zone()));
        let mut seen = vec![deadline];
        while deadline < CEILING {
            d.heavy(&zone(), deadline);
            deadline = d.for_zone(Some(&zone()));
            seen.push(deadline);
        }
        assert_eq!(
            seen[..4],
            [ms(1000), ms(3000), ms(9000), ms(27000)],
            "{seen:?}"
        );
        d.heavy(&zone(), CEILING * 4);
        assert_eq!(d.for_zone(Some(&zone())), CEILING);
        // An account timeout above the ceiling is the account's choice.
        let long = Deadlines::new(CEILING * 2);
        assert_eq!(long.for_zone(Some(&zone())), CEILING * 2);
    }
}
