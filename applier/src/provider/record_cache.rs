//! The record cache of a driver whose provider does not enforce preconditions but has a
//! zone serial (PowerDNS with `SOA-EDIT-API`): each zone's content as this applier
//! last knew it, so that checking a batch's preconditions costs one cheap serial read
//! instead of a read of the whole zone (which made creating a zone quadratic).
//!
//! **What makes it the truth.** An entry is filled by a full read, done under the
//! zone's write lock, and remembers the serial that read saw. Every write the driver
//! commits afterwards is applied to the entry and counted. The entry is valid exactly
//! when the zone's serial now is the filled serial plus the number of writes counted
//! (modulo 2³²): PowerDNS moves the serial by +1 per API write (`INCREASE`, and
//! `DEFAULT`/`INCEPTION-INCREMENT` within a day). Any other serial — an out-of-band
//! writer (+1 more), a new day's `YYYYMMDD01`, an `EPOCH` serial — is unexplained and
//! drops the entry: the next batch reads the provider again. So an unexplained move
//! only costs a read; the rule never takes someone else's write for ours, because
//! every foreign API write moves the serial too and makes the sum too big.
//!
//! **What invalidates.** A write that failed in a way that may have committed
//! (ambiguous) drops the entry: its ops are never applied to the cache unless the
//! provider said it committed. (A write that did commit although its answer said
//! otherwise would anyway show as a serial one too far.) Writes the serial cannot
//! see — a direct database edit without a serial bump — are found by the periodic
//! drift check: each entry is due for a full read again `drift_check` (±50%, spread
//! by zone so that zones filled together do not come due together) after its fill,
//! and at most one drift read per account starts every `drift_check / 100`.
use crate::provider::precondition::ZoneRead;
use dnsplane_common::{Name, RRSetOp, RecordKey};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// The default period of the drift check (`record_cache_drift_check` in the
/// applier config).
pub const DEFAULT_DRIFT_CHECK: Duration = Duration::from_secs(15 * 60);

/// See [`RecordCache::position`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SerialPosition {
    pub fill: u64,
    pub serial: u64,
}

impl SerialPosition {
    /// `(before, after)` when every serial move from `before` to `after` was this
    /// applier's own writes.
    pub fn span(before: Option<Self>, after: Option<Self>) -> Option<(u64, u64)> {
        match (before, after) {
            (Some(b), Some(a)) if b.fill == a.fill => Some((b.serial, a.serial)),
            _ => None,
        }
    }
}

/// What the cache can say about a zone given its serial now.
#[derive(Debug, PartialEq, Eq)]
pub enum Validity {
    /// The entry is the zone's content.
    Valid,
    /// No entry (cold start, or dropped): read the provider.
    Cold,
    /// The serial moved by something else than this applier's writes: the entry is
    /// dropped; read the provider.
    Unexplained {
        cached: u64,
        expected: u64,
        now: u64,
    },
    /// The entry is due for its periodic full read.
    DriftDue,
}

/// Counters for metrics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordCacheStats {
    /// Batches and reads answered from the cache after a serial check.
    pub hits: u64,
    /// Full reads stored.
    pub fills: u64,
    /// Entries dropped: an unexplained serial, an ambiguous write.
    pub invalidations: u64,
    /// Full reads made because an entry was due for its drift check.
    pub drift_reads: u64,
}

#[derive(Debug)]
struct Entry {
    read: ZoneRead,
    /// The serial of the read that filled the entry (or of the last validation).
    serial: u64,
    /// Writes committed since `serial` was seen: each moved it by one.
    writes: u64,
    /// When the next full read is due.
    due: Instant,
    /// Which fill this entry is (the cache's fill count at the time): two positions
    /// with the same fill saw only this applier's writes in between.
    fill: u64,
}

/// One account's record cache, per zone.
#[derive(Debug)]
pub struct RecordCache {
    /// `None`: no cache (a `drift_check` of 0): every check reads the provider.
    drift_check: Option<Duration>,
    zones: Mutex<HashMap<Name, Entry>>,
    /// When the account's last drift read started.
    last_drift: Mutex<Option<Instant>>,
    hits: AtomicU64,
    fills: AtomicU64,
    invalidations: AtomicU64,
    drift_reads: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `serial + n` in the serial's 32-bit space.
fn advanced(serial: u64, n: u64) -> u64 {
    serial.wrapping_add(n) & u64::from(u32::MAX)
}

impl Default for RecordCache {
    fn default() -> Self {
        RecordCache::new(DEFAULT_DRIFT_CHECK)
    }
}

impl RecordCache {
    /// A cache whose entries are read whole again every `drift_check` (±50%); a
    /// `drift_check` of zero keeps no entries at all.
    pub fn new(drift_check: Duration) -> Self {
        RecordCache {
            drift_check: (!drift_check.is_zero()).then_some(drift_check),
            zones: Mutex::default(),
            last_drift: Mutex::default(),
            hits: AtomicU64::new(0),
            fills: AtomicU64::new(0),
            invalidations: AtomicU64::new(0),
            drift_reads: AtomicU64::new(0),
        }
    }

    /// When a zone filled now is next due: `drift_check` × [0.5, 1.5), by zone.
    fn due_after_fill(&self, zone: &Name, period: Duration) -> Instant {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        zone.hash(&mut h);
        let spread = 0.5 + (h.finish() % 1000) as f64 / 1000.0;
        Instant::now() + period.mul_f64(spread)
    }

    /// Decides whether the entry of `zone` is the zone's content now that its serial is
    /// `now`. Valid: the entry is renewed at `now`. Unexplained: the entry is dropped.
    /// Call it under the zone's write lock.
    pub fn validate(&self, zone: &Name, now: u64) -> Validity {
        let mut zones = lock(&self.zones);
        let Some(entry) = zones.get_mut(zone) else {
            return Validity::Cold;
        };
        let expected = advanced(entry.serial, entry.writes);
        if expected != now {
            let v = Validity::Unexplained {
                cached: entry.serial,
                expected,
                now,
            };
            zones.remove(zone);
            self.invalidations.fetch_add(1, Ordering::Relaxed);
            return v;
        }
        entry.serial = now;
        entry.writes = 0;
        entry.read.serial = Some(now);
        if Instant::now() >= entry.due && self.drift_slot() {
            self.drift_reads.fetch_add(1, Ordering::Relaxed);
            return Validity::DriftDue;
        }
        self.hits.fetch_add(1, Ordering::Relaxed);
        Validity::Valid
    }

    /// Whether a drift read may start now (one per `drift_check / 100` per account);
    /// takes the slot when it may.
    fn drift_slot(&self) -> bool {
        let gap = self.drift_check.unwrap_or_default() / 100;
        let mut last = lock(&self.last_drift);
        let now = Instant::now();
        if last.is_some_and(|t| now.duration_since(t) < gap) {
            return false;
        }
        *last = Some(now);
        true
    }

    /// Whether `zone` has an entry (a serial read can make it useful).
    pub fn holds(&self, zone: &Name) -> bool {
        lock(&self.zones).contains_key(zone)
    }

    /// Runs `f` on the entry of `zone` (`None` without one). Only meaningful right
    /// after [`validate`](Self::validate) answered `Valid`, under the zone's lock.
    pub fn with<T>(&self, zone: &Name, f: impl FnOnce(Option<&ZoneRead>) -> T) -> T {
        let zones = lock(&self.zones);
        f(zones.get(zone).map(|e| &e.read))
    }

    /// Stores a full read of `zone` taken under its lock. A read without a serial (no
    /// change counter) drops the entry instead.
    pub fn fill(&self, zone: &Name, read: &ZoneRead) {
        let mut zones = lock(&self.zones);
        let (Some(serial), Some(period)) = (read.serial, self.drift_check) else {
            zones.remove(zone);
            return;
        };
        let copy = ZoneRead {
            rrsets: read.rrsets.clone(),
            opaque: read.opaque.clone(),
            types: read.types.clone(),
            serial: read.serial,
        };
        let fill = self.fills.fetch_add(1, Ordering::Relaxed) + 1;
        zones.insert(
            zone.clone(),
            Entry {
                read: copy,
                serial,
                writes: 0,
                due: self.due_after_fill(zone, period),
                fill,
            },
        );
    }

    /// The provider said it committed `ops` (one write): applies them to the entry
    /// and counts the serial move they explain. Without an entry: nothing.
    pub fn committed(&self, zone: &Name, ops: &[RRSetOp]) {
        let mut zones = lock(&self.zones);
        let Some(entry) = zones.get_mut(zone) else {
            return;
        };
        let read = &mut entry.read;
        for op in ops.iter().filter(|op| !op.is_assert()) {
            let key = &op.key;
            read.opaque.remove(key);
            match &op.after {
                Some(after) => {
                    read.rrsets.insert(key.clone(), after.clone());
                    read.types
                        .entry(key.name.clone())
                        .or_default()
                        .insert(key.rtype);
                }
                None => {
                    read.rrsets.remove(key);
                    // Other routing-policy sets of the type may remain at the name.
                    let first = RecordKey::new(key.zone.clone(), key.name.clone(), key.rtype);
                    let same_type = |k: &RecordKey| k.name == key.name && k.rtype == key.rtype;
                    let remains = read
                        .rrsets
                        .range(&first..)
                        .next()
                        .is_some_and(|(k, _)| same_type(k))
                        || read.opaque.range(&first..).next().is_some_and(same_type);
                    if remains {
                        continue;
                    }
                    if let Some(types) = read.types.get_mut(&key.name) {
                        types.remove(&key.rtype);
                        if types.is_empty() {
                            read.types.remove(&key.name);
                        }
                    }
                }
            }
        }
        entry.writes += 1;
    }

    /// A fresh read of `names` (and nothing else) replaces what the entry holds there,
    /// for a provider that trusts its own writes and has no serial to show others'
    /// (Route 53): a targeted read after a conflict teaches the cache what it missed.
    /// Without an entry: nothing.
    pub fn refresh(&self, zone: &Name, names: &std::collections::BTreeSet<Name>, fresh: &ZoneRead) {
        let mut zones = lock(&self.zones);
        let Some(entry) = zones.get_mut(zone) else {
            return;
        };
        let read = &mut entry.read;
        read.rrsets.retain(|k, _| !names.contains(&k.name));
        read.opaque.retain(|k| !names.contains(&k.name));
        read.types.retain(|n, _| !names.contains(n));
        for (k, v) in fresh.rrsets.iter().filter(|(k, _)| names.contains(&k.name)) {
            read.rrsets.insert(k.clone(), v.clone());
        }
        for k in fresh.opaque.iter().filter(|k| names.contains(&k.name)) {
            read.opaque.insert(k.clone());
        }
        for (n, t) in fresh.types.iter().filter(|(n, _)| names.contains(*n)) {
            read.types.insert(n.clone(), t.clone());
        }
    }

    /// Where this applier's knowledge of `zone` stands: the fill it counts from and the
    /// serial its own writes since then explain. Between two positions with the same
    /// fill, every serial move was this applier's (anything else would have dropped the
    /// entry at the next validation, which every write makes first).
    pub fn position(&self, zone: &Name) -> Option<SerialPosition> {
        let zones = lock(&self.zones);
        let e = zones.get(zone)?;
        Some(SerialPosition {
            fill: e.fill,
            serial: advanced(e.serial, e.writes),
        })
    }

    /// Drops the entry of `zone`: a write may or may not have committed.
    pub fn invalidate(&self, zone: &Name) {
        if lock(&self.zones).remove(zone).is_some() {
            self.invalidations.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn stats(&self) -> RecordCacheStats {
        RecordCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            fills: self.fills.load(Ordering::Relaxed),
            invalidations: self.invalidations.load(Ordering::Relaxed),
            drift_reads: self.drift_reads.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::precondition::check;
    use dnsplane_common::{RRSet, RecordKey, RecordType};

    fn zone() -> Name {
        Name::parse("ex.test").unwrap()
    }

    fn a(name: &str, ip: &str) -> RRSet {
        let key = RecordKey::new(
            zone(),
            Name::parse(&format!("{name}.ex.test")).unwrap(),
            RecordType::A,
        );
        RRSet::new(key, 300, &[ip]).unwrap()
    }

    fn read(serial: u64, rrsets: &[RRSet]) -> ZoneRead {
        let mut r = ZoneRead {
            serial: Some(serial),
            ..ZoneRead::default()
        };
        for s in rrsets {
            r.types
                .entry(s.key.name.clone())
                .or_default()
                .insert(s.key.rtype);
            r.rrsets.insert(s.key.clone(), s.clone());
        }
        r
    }

    /// Deleting one routing-policy set leaves its type at the name while another set
    /// of it remains (the CNAME rule reads these types).
    #[test]
    fn a_type_stays_while_a_set_of_it_remains() {
        let c = RecordCache::default();
        let set = |id: &str, w: &str| {
            let key = a("w", "192.0.2.1")
                .key
                .in_set(dnsplane_common::SetId::new(id).unwrap());
            RRSet::with_properties(key, 60, &["192.0.2.1"], &[("aws/weight", w)]).unwrap()
        };
        let (eu, us) = (set("eu", "1"), set("us", "2"));
        c.fill(&zone(), &read(1, &[eu.clone(), us.clone()]));
        let name = eu.key.name.clone();
        let types = |c: &RecordCache| {
            c.with(&zone(), |r| r.unwrap().types.get(&name).cloned())
                .unwrap_or_default()
        };
        c.committed(&zone(), &[RRSetOp::delete(eu)]);
        assert!(types(&c).contains(&RecordType::A));
        c.committed(&zone(), &[RRSetOp::delete(us)]);
        assert!(!types(&c).contains(&RecordType::A));
    }

    #[tokio::test]
    async fn own_writes_keep_it_valid_and_a_foreign_one_drops_it() {
        let c = RecordCache::default();
        assert_eq!(c.validate(&zone(), 7), Validity::Cold);
        c.fill(&zone(), &read(7, &[a("x", "192.0.2.1")]));
        assert_eq!(c.validate(&zone(), 7), Validity::Valid);

        // Our write: applied to the entry, and the serial's +1 is explained.
        let op = RRSetOp::update(a("x", "192.0.2.1"), a("x", "192.0.2.2"));
        c.committed(&zone(), std::slice::from_ref(&op));
        let create = RRSetOp::create(a("y", "192.0.2.3"));
        c.committed(&zone(), std::slice::from_ref(&create));
        assert_eq!(c.validate(&zone(), 9), Validity::Valid);
        c.with(&zone(), |r| {
            let r = r.unwrap();
            assert_eq!(
                r.serial,
                Some(9),
                "a listing from the cache says the serial now"
            );
            assert_eq!(r.rrsets.len(), 2);
            // A batch planned on the old value now fails its precondition from the cache.
            assert!(
                check(
                    &[RRSetOp::update(a("x", "192.0.2.1"), a("x", "192.0.2.9"))],
                    r
                )
                .is_err()
            );
            check(&[RRSetOp::delete(a("y", "192.0.2.3"))], r).unwrap();
        });

        // One write of ours, but the serial moved by two: someone else wrote too.
        c.committed(&zone(), &[RRSetOp::delete(a("y", "192.0.2.3"))]);
        assert_eq!(
            c.validate(&zone(), 11),
            Validity::Unexplained {
                cached: 9,
                expected: 10,
                now: 11
            }
        );
        assert_eq!(c.validate(&zone(), 11), Validity::Cold, "the entry is gone");
        // A serial that did not move after a write we counted is as unexplained.
        c.fill(&zone(), &read(11, &[]));
        c.committed(&zone(), &[RRSetOp::create(a("z", "192.0.2.4"))]);
        assert!(matches!(
            c.validate(&zone(), 11),
            Validity::Unexplained { .. }
        ));
        assert_eq!(c.stats().invalidations, 2);
    }

    #[tokio::test]
    async fn an_ambiguous_write_or_a_read_without_serial_drops_the_entry() {
        let c = RecordCache::default();
        c.fill(&zone(), &read(1, &[]));
        c.invalidate(&zone());
        assert_eq!(c.validate(&zone(), 1), Validity::Cold);
        // Ops are never applied without an entry (nothing to apply them to).
        c.committed(&zone(), &[RRSetOp::create(a("z", "192.0.2.4"))]);
        assert_eq!(c.validate(&zone(), 2), Validity::Cold);
        c.fill(&zone(), &read(1, &[]));
        c.fill(
            &zone(),
            &ZoneRead {
                serial: None,
                ..ZoneRead::default()
            },
        );
        assert_eq!(c.validate(&zone(), 1), Validity::Cold);
    }

    #[test]
    fn a_drift_check_of_zero_keeps_nothing() {
        let c = RecordCache::new(Duration::ZERO);
        c.fill(&zone(), &read(1, &[]));
        assert!(!c.holds(&zone()));
        assert_eq!(c.validate(&zone(), 1), Validity::Cold);
    }

    #[test]
    fn serials_wrap_in_32_bits() {
        assert_eq!(advanced(u64::from(u32::MAX), 1), 0);
        assert_eq!(advanced(5, 2), 7);
    }

    #[tokio::test(start_paused = true)]
    async fn drift_reads_come_due_spread_and_rate_limited() {
        let c = RecordCache::new(Duration::from_secs(100));
        let (z1, z2) = (zone(), Name::parse("other.test").unwrap());
        c.fill(&z1, &read(1, &[]));
        c.fill(&z2, &read(1, &[]));
        assert_eq!(c.validate(&z1, 1), Validity::Valid);
        tokio::time::advance(Duration::from_secs(151)).await;
        assert_eq!(c.validate(&z1, 1), Validity::DriftDue);
        // The account just had one: the other zone waits for the next slot.
        assert_eq!(c.validate(&z2, 1), Validity::Valid);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(c.validate(&z2, 1), Validity::DriftDue);
        // A refill makes it valid again until its next due time.
        c.fill(&z1, &read(1, &[]));
        assert_eq!(c.validate(&z1, 1), Validity::Valid);
        assert_eq!(c.stats().drift_reads, 2);
    }

    #[test]
    fn positions_vouch_only_within_one_fill() {
        let c = RecordCache::default();
        assert_eq!(c.position(&zone()), None, "nothing known: nothing vouched");
        c.fill(&zone(), &read(10, &[]));
        let before = c.position(&zone());
        c.committed(&zone(), &[RRSetOp::create(a("x", "192.0.2.1"))]);
        c.committed(&zone(), &[RRSetOp::create(a("y", "192.0.2.2"))]);
        let after = c.position(&zone());
        assert_eq!(SerialPosition::span(before, after), Some((10, 12)));
        // A validation that agrees keeps the fill: still one span.
        assert_eq!(c.validate(&zone(), 12), Validity::Valid);
        assert_eq!(
            SerialPosition::span(before, c.position(&zone())),
            Some((10, 12))
        );
        // Someone else wrote: the entry is read again, and nothing spans the two fills.
        assert!(matches!(
            c.validate(&zone(), 14),
            Validity::Unexplained { .. }
        ));
        c.fill(&zone(), &read(14, &[]));
        assert_eq!(SerialPosition::span(before, c.position(&zone())), None);
        // A write that may or may not have committed: no position at all.
        let refilled = c.position(&zone());
        c.invalidate(&zone());
        assert_eq!(SerialPosition::span(refilled, c.position(&zone())), None);
    }
}
