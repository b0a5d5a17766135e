//! The engine's read model: what `GetStatus`, `ListRecordStates`, the admin port's
//! `/status` and the metrics show, read in one place under the engine's own locks.
//! Callers get plain values and never hold an engine lock.
use super::{Engine, LastCounts, ZoneRuntime, lock, try_lock};
use crate::config::{Policy, SafetyMode};
use crate::desired::DesiredIndex;
use crate::guard::HeldPlan;
use crate::lease::LeaseStatus;
use crate::source::{Labels, SourceError};
use crate::state::{RecordState, RecordStateKind};
use crate::target::Target;
use dnsplane_common::{Name, RecordKey, SharedStr};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

/// Above this much work (record states plus names waiting for a plan), a status read
/// does not count a zone itself but shows the counts [`Engine::refresh_counts`] last
/// made, at most [`COUNT_REFRESH`] old (more if counting takes longer than a quarter
/// of that): counting a million states and waiting names
/// on every `GetStatus` put its p99 at 358 ms during a million-record load.
const INLINE_COUNT_WORK: usize = 20_000;

/// How often, at most, the counts of a zone too large to count inline are refreshed
/// (only while status reads are asking for them).
pub(super) const COUNT_REFRESH: Duration = Duration::from_secs(1);

impl ZoneRuntime {
    /// The zone's counts now, unless its state table, view or waiting names are busy,
    /// or counting it would take more than `max_work` (states plus names waiting for a
    /// plan). Stored as the zone's last counts when made.
    fn count(
        &self,
        desired: &DesiredIndex,
        status: &ZoneStatus,
        max_work: Option<usize>,
    ) -> Option<LastCounts> {
        let empty = BTreeMap::new();
        let zone_desired = desired.zone(&self.cfg.name).unwrap_or(&empty);
        let (zone_read, observed) = {
            let view = try_lock(&self.view)?;
            (view.is_some(), view.as_ref().map_or(0, |v| v.len()))
        };
        let states = try_lock(&self.states)?;
        // Not waited for either: a large source change marks a million names here.
        let unplanned = {
            let dirty = try_lock(&self.dirty)?;
            if max_work.is_some_and(|max| states.len() + dirty.len() > max) {
                return None;
            }
            dirty.clone()
        };
        let counts = LastCounts {
            records: states.counts(
                zone_desired,
                zone_read,
                &unplanned,
                status.refused.is_some(),
            ),
            desired: zone_desired.len(),
            observed,
            next_retry: states.next_retry(),
        };
        drop(states);
        *lock(&self.last_counts) = counts.clone();
        Some(counts)
    }
}

/// Status of one zone, besides its record states.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ZoneStatus {
    pub last_sync: Option<SystemTime>,
    pub last_success: Option<SystemTime>,
    pub last_error: String,
    pub initial_sync_done: bool,
    pub syncing: bool,
    /// A full sync (not a targeted re-plan of a few names) is running.
    pub full_sync: bool,
    /// When the first sync started.
    pub sync_started: Option<SystemTime>,
    /// The applier the zone's last batches went to.
    pub applier: String,
    /// Records the provider account refused (credentials, zone missing).
    pub rejected: bool,
    /// Why the provider account refuses to read the zone (credentials, permissions,
    /// zone missing), from the last full read; cleared by a successful one. While the
    /// zone has never been read, its records show as `rejected` with this reason
    /// rather than waiting as `pending`.
    pub refused: Option<String>,
    /// Set while the zone is released to external-dns ([`super::release`]): nothing
    /// is planned or written until `Resume`.
    pub released: Option<super::Released>,
    /// Deletes and updates the mass-change guard let through within `[safety]
    /// window` ([`crate::guard::window`]), as the snapshot counted them.
    pub guard_window: usize,
}

/// One zone as the status API shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneSnapshot {
    /// The zone and account this is the status of.
    pub target: Target,
    pub name: Name,
    pub account: String,
    pub policy: Policy,
    pub status: ZoneStatus,
    /// Records by state (only the states that occur).
    pub records: BTreeMap<RecordStateKind, u32>,
    pub desired_records: usize,
    /// RRSets the provider holds as far as the planner knows (ownership included).
    pub observed_records: usize,
    /// The earliest record retry.
    pub next_retry: Option<SystemTime>,
    /// The applier the zone is routed to now, if any.
    pub applier: Option<String>,
    /// The plan the mass-change guard holds, and since when.
    pub held: Option<(HeldPlan, SystemTime)>,
    /// The applier the zone goes to while every applier is healthy.
    pub own_applier: Option<String>,
}

/// One applier of the pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplierSnapshot {
    pub addr: String,
    pub healthy: bool,
    pub last_error: String,
    /// Its accounts whose circuit is not closed, `account (state)`.
    pub open_circuits: Vec<String>,
    /// Why its accounts are throttled for long (the applier's own reasons).
    pub throttled: Vec<String>,
}

/// How the planner is doing, as one word; ordered from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Healthy,
    /// A first sync or a full sync is running.
    Syncing,
    /// Something needs a person's attention, but records still flow.
    Degraded,
    /// The planner cannot do its work (no applier, its state cannot be kept).
    Failing,
}

impl Level {
    pub const ALL: [Level; 4] = [
        Level::Healthy,
        Level::Syncing,
        Level::Degraded,
        Level::Failing,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Healthy => "healthy",
            Level::Syncing => "syncing",
            Level::Degraded => "degraded",
            Level::Failing => "failing",
        }
    }
}

/// Free space of the state directory's filesystem, as the snapshot read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskStatus {
    pub path: String,
    /// Bytes available to the planner; `Err`: why it could not be read.
    pub free: Result<u64, String>,
    /// `[state] min_free_bytes`.
    pub floor: u64,
}

/// The whole planner at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub zones: Vec<ZoneSnapshot>,
    pub appliers: Vec<ApplierSnapshot>,
    /// Every desired record the sources could not accept.
    pub source_errors: Vec<SourceError>,
    /// What the desired state says that needs no action (a merged set's TTLs differ).
    pub source_notices: Vec<SourceError>,
    /// Configured sources by name, with why each is not ready (empty: ready).
    pub sources: Vec<(String, Vec<String>)>,
    /// The parts of the sources that have them, by source name.
    pub source_parts: BTreeMap<String, Vec<crate::source::SourcePart>>,
    /// Leader or standby, and who holds the lease.
    pub lease: LeaseStatus,
    /// The state directory's free space (absent: the engine keeps no state directory).
    pub disk: Option<DiskStatus>,
    /// Why the last write of the state directory failed, until one succeeds.
    pub state_write_error: Option<String>,
    /// `[safety] mode`.
    pub mode: SafetyMode,
    /// Why audit events are not being written to the audit file, while they are not.
    pub audit_error: Option<String>,
    /// Why the tokens file (`[auth] tokens_file`) cannot be used, while it cannot.
    pub tokens_error: Option<String>,
    /// Why TLS files cannot be (re)loaded, one line per set of files, while they cannot.
    pub tls_errors: Vec<String>,
}

/// Bytes available to unprivileged writers on `dir`'s filesystem.
#[cfg(unix)]
fn free_bytes(dir: &std::path::Path) -> Result<u64, String> {
    let st = rustix::fs::statvfs(dir).map_err(|e| e.to_string())?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

#[cfg(not(unix))]
fn free_bytes(_dir: &std::path::Path) -> Result<u64, String> {
    Err("not measured on this platform".into())
}

/// Which record states to list.
#[derive(Debug, Clone, Default)]
pub struct RecordStatesQuery {
    /// Targets, in order; empty: every target.
    pub targets: Vec<Target>,
    /// Only these states; empty: every state but converged (unless
    /// `include_converged`).
    pub states: Vec<RecordStateKind>,
    pub include_converged: bool,
    /// Resume after this key of this target (the last one of the previous page).
    pub after: Option<(Target, RecordKey)>,
    /// Only the records at this name, each with the sources of each value.
    pub name: Option<Name>,
    pub page_size: usize,
}

/// One page of record states, in (zone, key) order.
#[derive(Debug, Clone, Default)]
pub struct RecordStatesPage {
    /// Each record with the target it is at.
    pub records: Vec<(Target, RecordKey, RecordState)>,
    /// The labels of the listed desired records that have any.
    pub labels: HashMap<RecordKey, Labels>,
    /// With [`RecordStatesQuery::name`]: each listed record's desired values, each
    /// with the sources that want it.
    pub sources: HashMap<RecordKey, Vec<(String, Vec<String>)>>,
    /// Where the next page starts (after this key of this target); `None` on the
    /// last page.
    pub next: Option<(Target, RecordKey)>,
}

impl Engine {
    /// The read model of every zone, the pool and the sources. Never waits behind a
    /// long-held lock: while the desired index is being updated (a large push or file
    /// load) or a zone's state table is busy (the fold of a large plan), the counts
    /// and errors are those last read, so `GetStatus`, `/status` and `/metrics` answer
    /// at once under any load.
    pub fn snapshot(&self) -> Snapshot {
        let desired = match self.desired.try_read() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        let zones = self
            .zones
            .values()
            .map(|z| {
                // A target with a view counts from its view's index.
                let own = if Arc::ptr_eq(&z.desired, &self.desired) {
                    None
                } else {
                    Some(match z.desired.try_read() {
                        Ok(g) => Some(g),
                        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
                        Err(std::sync::TryLockError::WouldBlock) => None,
                    })
                };
                let desired = match &own {
                    Some(g) => g.as_ref(),
                    None => desired.as_ref(),
                };
                let mut status = lock(&z.status).clone();
                status.guard_window = z.guard_window(self.config.safety.window);
                let fresh =
                    desired.and_then(|desired| z.count(desired, &status, Some(INLINE_COUNT_WORK)));
                if fresh.is_none() {
                    z.counts_stale.store(true, Ordering::Relaxed);
                }
                let mut counts = fresh.unwrap_or_else(|| lock(&z.last_counts).clone());
                // The sizes cost nothing to read, whatever the zone: always current, even
                // while the state counts are the refresher's.
                if let Some(desired) = desired {
                    counts.desired = desired.zone(&z.cfg.name).map_or(0, BTreeMap::len);
                }
                if let Some(view) = try_lock(&z.view) {
                    counts.observed = view.as_ref().map_or(0, |v| v.len());
                }
                ZoneSnapshot {
                    target: z.target.clone(),
                    name: z.cfg.name.clone(),
                    account: z.cfg.account.clone(),
                    policy: z.cfg.policy,
                    status,
                    records: counts.records,
                    desired_records: counts.desired,
                    observed_records: counts.observed,
                    next_retry: counts.next_retry,
                    applier: self.pool.route(&z.cfg.name).map(|m| m.addr.clone()),
                    held: lock(&z.held).clone(),
                    own_applier: self.pool.own(&z.cfg.name).map(|m| m.addr.clone()),
                }
            })
            .collect();
        let (source_errors, source_notices) = match &desired {
            Some(d) => {
                let notices = d.notices();
                lock(&self.last_notices).clone_from(&notices);
                let errors = match self.errors_in_views(d.errors()) {
                    Some(errors) => {
                        lock(&self.last_errors).clone_from(&errors);
                        errors
                    }
                    None => lock(&self.last_errors).clone(),
                };
                (errors, notices)
            }
            None => (
                lock(&self.last_errors).clone(),
                lock(&self.last_notices).clone(),
            ),
        };
        drop(desired);
        let appliers = self
            .pool
            .members()
            .iter()
            .map(|m| ApplierSnapshot {
                addr: m.addr.clone(),
                healthy: m.healthy(),
                last_error: m.last_error(),
                open_circuits: m.open_circuits(),
                throttled: m.throttled(),
            })
            .collect();
        Snapshot {
            zones,
            appliers,
            source_errors,
            source_notices,
            sources: lock(&self.readiness)
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            source_parts: lock(&self.source_parts)
                .iter()
                .map(|(k, v)| (k.clone(), lock(v).clone()))
                .collect(),
            lease: self.lease_with_takeover(),
            disk: self.store.get().map(|_| self.disk()),
            state_write_error: self.store.get().and_then(|s| s.write_error()),
            mode: self.config.safety.mode,
            audit_error: self.audit_write_error(),
            tokens_error: self.tokens_problem(),
            tls_errors: self.tls_problems(),
        }
    }

    /// The state directory's free space against `[state] min_free_bytes`.
    fn disk(&self) -> DiskStatus {
        let dir = &self.config.state_dir;
        DiskStatus {
            path: dir.display().to_string(),
            free: free_bytes(dir),
            floor: self.config.state.min_free_bytes,
        }
    }

    /// Counts the zones whose last status read found them too large to count inline,
    /// so that the next reads show counts at most [`COUNT_REFRESH`] old. CPU work: the
    /// engine runs it on a blocking thread, never on a runtime worker.
    pub(super) fn refresh_counts(&self) {
        for z in self.zones.values() {
            if !z.counts_stale.swap(false, Ordering::Relaxed) {
                continue;
            }
            let desired = z.desired();
            let status = lock(&z.status).clone();
            if z.count(&desired, &status, None).is_none() {
                // Busy (a fold, an index update): the next round tries again.
                z.counts_stale.store(true, Ordering::Relaxed);
            }
        }
    }

    /// One page of record states. Converged records have no entry in the state table;
    /// they are walked from the desired records in the same key order, so pages are
    /// stable.
    pub fn record_states(&self, q: &RecordStatesQuery) -> RecordStatesPage {
        let keep = |k: RecordStateKind| {
            if !q.states.is_empty() {
                q.states.contains(&k)
            } else {
                q.include_converged || k != RecordStateKind::Converged
            }
        };
        let with_converged = keep(RecordStateKind::Converged) || keep(RecordStateKind::Pending);
        let page_size = q.page_size.max(1);
        let empty = BTreeMap::new();
        let mut page = RecordStatesPage::default();
        let zones: Vec<_> = if q.targets.is_empty() {
            self.zones.values().collect()
        } else {
            q.targets.iter().filter_map(|t| self.zones.get(t)).collect()
        };
        'zones: for zone in zones {
            let name = &zone.cfg.name;
            if q.after.as_ref().is_some_and(|(t, _)| *t > zone.target) {
                continue;
            }
            let zone_read = lock(&zone.view).is_some();
            let refused = lock(&zone.status).refused.clone();
            let unplanned = lock(&zone.dirty).clone();
            let states = lock(&zone.states);
            // Its view's desired state, for a target with a view.
            let desired = zone.desired();
            let zone_desired = desired.zone(name).unwrap_or(&empty);
            let start = q
                .after
                .as_ref()
                .filter(|(t, _)| *t == zone.target)
                .map(|(_, k)| k.clone());
            let range = |k: &RecordKey| {
                start.as_ref().is_none_or(|a| k > a) && q.name.as_ref().is_none_or(|n| k.name == *n)
            };
            let mut st = states.iter().filter(|(k, _)| range(k)).peekable();
            let mut de = zone_desired
                .iter()
                .filter(|(k, _)| with_converged && range(k) && !states.contains(k))
                .peekable();
            loop {
                let next = match (st.peek(), de.peek()) {
                    (None, None) => break,
                    (Some((k, _)), Some((d, _))) if d < k => None,
                    (Some(_), _) => st.next().map(|(k, s)| (k, Some(s))),
                    (None, Some(_)) => None,
                };
                let (key, state) = match next {
                    Some(n) => n,
                    None => match de.next() {
                        Some((k, _)) => (k, None),
                        None => break,
                    },
                };
                let state = match state {
                    Some(s) if keep(s.kind) => s.clone(),
                    Some(_) => continue,
                    None => {
                        let s = states.without_entry(
                            key,
                            &zone_desired[key].rrset(key),
                            zone_read,
                            unplanned.contains(&key.name),
                            refused.as_deref(),
                        );
                        if !keep(s.kind) {
                            continue;
                        }
                        s
                    }
                };
                if page.records.len() == page_size {
                    page.next = page.records.last().map(|(t, k, _)| (t.clone(), k.clone()));
                    break 'zones;
                }
                if let Some(record) = zone_desired.get(key) {
                    let labels = desired.labels(&record.source, key);
                    if !labels.is_empty() {
                        page.labels.insert(key.clone(), labels.clone());
                    }
                    if q.name.is_some() {
                        page.sources.insert(key.clone(), desired.value_sources(key));
                    }
                }
                page.records.push((zone.target.clone(), key.clone(), state));
            }
        }
        page
    }
}

/// How much a state needs someone, to tell an object the worst of its record's
/// targets: a record its target cannot hold counts least (the other targets tell).
fn severity(kind: RecordStateKind) -> u8 {
    use RecordStateKind as K;
    match kind {
        K::NotForTarget => 0,
        K::Converged => 1,
        K::Pending | K::InFlight | K::Deferred => 2,
        K::Held => 3,
        K::Invalid => 4,
        K::Conflict => 5,
        K::Failed | K::Rejected => 6,
    }
}

impl Engine {
    /// The state of every record `source` has in force, with the resource that asked
    /// for it: what a source that reports back to its objects (the Kubernetes source's
    /// status) needs, read from the same state tables as [`Engine::record_states`].
    /// Claims another source holds are left out (that source's records); in a merged
    /// set, each of its sources is told (with its own resource). Where the zone has
    /// several targets, the worst state among those that plan the record (its view's)
    /// is told: a record is published when every target that can hold it holds it. O(size of the
    /// source, times the zone's targets). Each record as `read` makes it of (resource,
    /// key, state), so that no copy of every state is made on the way (the writers
    /// read this each second).
    pub fn source_record_states<T>(
        &self,
        source: &str,
        read: impl Fn(&SharedStr, &RecordKey, &RecordState) -> T,
    ) -> Vec<T> {
        // Every index that may hold the source's records: the main one, each view's.
        let indexes: Vec<&Arc<std::sync::RwLock<crate::desired::DesiredIndex>>> =
            std::iter::once(&self.desired)
                .chain(self.views.values().map(|v| &v.index))
                .collect();
        let guards: Vec<_> = indexes
            .iter()
            .map(|i| i.read().unwrap_or_else(std::sync::PoisonError::into_inner))
            .collect();
        let mut by_zone: BTreeMap<&Name, std::collections::BTreeSet<&RecordKey>> = BTreeMap::new();
        for g in &guards {
            for key in g.source_keys(source) {
                by_zone.entry(&key.zone).or_default().insert(key);
            }
        }
        let mut out = Vec::with_capacity(by_zone.values().map(|k| k.len()).sum());
        for (zone_name, keys) in by_zone {
            // Each target of the zone, with the index it plans from.
            let seen: Vec<_> = self
                .targets_of(zone_name)
                .map(|(_, z)| {
                    let at = indexes
                        .iter()
                        .position(|i| Arc::ptr_eq(i, &z.desired))
                        .unwrap_or(0);
                    (
                        at,
                        lock(&z.view).is_some(),
                        lock(&z.status).refused.clone(),
                        lock(&z.dirty).clone(),
                        lock(&z.states),
                    )
                })
                .collect();
            for key in keys {
                let mut worst: Option<(SharedStr, std::borrow::Cow<'_, RecordState>)> = None;
                for (at, zone_read, refused, unplanned, states) in &seen {
                    let g = &guards[*at];
                    // Not desired at this target (another view's record).
                    let Some(record) = g.zone(zone_name).and_then(|d| d.get(key)) else {
                        continue;
                    };
                    let Some((_, mine, _)) = g.in_force(source, &key.name, key.rtype, key.set)
                    else {
                        continue;
                    };
                    let state = match states.get(key) {
                        Some(s) => std::borrow::Cow::Borrowed(s),
                        None => std::borrow::Cow::Owned(states.without_entry(
                            key,
                            &record.rrset(key),
                            *zone_read,
                            unplanned.contains(&key.name),
                            refused.as_deref(),
                        )),
                    };
                    if worst
                        .as_ref()
                        .is_none_or(|(_, w)| severity(state.kind) > severity(w.kind))
                    {
                        worst = Some((mine.resource.clone(), state));
                    }
                }
                if let Some((resource, state)) = worst {
                    out.push(read(&resource, key, &state));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{PlannerConfig, ZoneConfig};
    use crate::source::DesiredEntry;

    fn engine() -> std::sync::Arc<Engine> {
        let config = PlannerConfig::with_zones(vec![ZoneConfig::new(
            Name::parse("example.com").unwrap(),
            "a",
        )]);
        Engine::for_tests(config)
    }

    fn entries(n: usize) -> Vec<DesiredEntry> {
        (0..n)
            .map(|i| {
                crate::source::testing::pushed(&format!("r{i}.example.com"), "192.0.2.1", None, i)
            })
            .collect()
    }

    fn pending(s: &Snapshot) -> Option<u32> {
        s.zones[0].records.get(&RecordStateKind::Pending).copied()
    }

    /// A source that awaits its first load holds the zones' syncs until it is first
    /// ready; a not-ready snapshot does not release them.
    #[tokio::test]
    async fn zones_wait_for_a_sources_first_load() {
        let e = engine();
        e.first_loads_done().await;
        e.await_first_load("kubernetes:");
        let waiting = || async {
            tokio::time::timeout(Duration::from_millis(50), e.first_loads_done())
                .await
                .is_err()
        };
        assert!(waiting().await, "released before any load");
        e.set_source_readiness("kubernetes:", vec!["not listed yet: 500".into()]);
        assert!(waiting().await, "released by a source that is not ready");
        e.set_source_readiness("file:x", Vec::new());
        assert!(waiting().await, "released by another source");
        e.set_source_readiness("kubernetes:", Vec::new());
        assert!(!waiting().await, "still held once the source loaded");
    }

    /// A zone small enough is counted by the status read itself; one whose waiting
    /// names exceed the inline limit shows its last counts until the refresher has
    /// counted it, so a status read never walks a million names.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_large_zone_is_counted_by_the_refresher_not_by_the_status_read() {
        let small = engine();
        small.set_source("push:test", entries(10), Vec::new());
        let s = small.snapshot();
        assert_eq!((s.zones[0].desired_records, pending(&s)), (10, Some(10)));

        let large = engine();
        let n = INLINE_COUNT_WORK + 1;
        large.set_source("push:test", entries(n), Vec::new());
        let s = large.snapshot();
        assert_eq!(
            (s.zones[0].desired_records, pending(&s)),
            (n, None),
            "the status read showed the size, and the last state counts (none yet)"
        );
        let zone = large.zones.values().next().unwrap();
        assert!(
            zone.counts_stale.load(Ordering::Relaxed),
            "asked for a count"
        );
        large.refresh_counts();
        assert!(!zone.counts_stale.load(Ordering::Relaxed), "counted");
        let s = large.snapshot();
        assert_eq!(
            (s.zones[0].desired_records, pending(&s)),
            (n, Some(n as u32))
        );
    }
}
