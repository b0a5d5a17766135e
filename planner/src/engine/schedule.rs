//! When a zone syncs: at start, after source changes (debounced), when a record's own
//! retry comes due (a fresh read of just its names), and on the periodic drift check
//! (through the applier's cache, revalidated by serial). The zone's serial is watched
//! (`sync.drift_check`, and every `sync.conflict_watch` while records are in conflict):
//! when it moved, conflicting names are re-planned at once and the zone read again.
//! A failed sync backs the whole zone off, so that due records cannot turn a broken
//! zone into a hot loop; a failed full sync is retried before anything else.
//!
//! A zone released to external-dns (`Release`) does not sync until `Resume`.
//!
//! No zone syncs before every source has loaded once (a Kubernetes source before its
//! first complete list). Only the lease's leader syncs: while standby a zone loop waits, and each time the
//! planner becomes leader (a new lease epoch) every zone loop starts with a full,
//! fresh sync at once: the previous leader may have written anything until its
//! window closed.
use super::sync::Scope;
use super::{Engine, ZoneRuntime, lock};
use crate::events;
use crate::lease::Role;
use crate::state::{RETRY_SLACK, retry_delay};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio_util::sync::CancellationToken;

impl Engine {
    /// True when the zone's serial, asked now, differs from the one its last full read
    /// saw. Unknown serials (none yet, a provider without one, an applier that cannot
    /// be asked) are "not moved": the periodic full read still covers them.
    async fn serial_moved(&self, zone: &ZoneRuntime) -> bool {
        let Some(known) = *lock(&zone.serial) else {
            return false;
        };
        let Some(member) = self.pool.route(&zone.cfg.name) else {
            return false;
        };
        match crate::client::serial(&member, &zone.cfg.account, &zone.cfg.name).await {
            Ok(now) if now != 0 && now != known => {
                events::SerialMoved {
                    zone: &zone.target,
                    known,
                    now,
                }
                .emit();
                true
            }
            Ok(_) => false,
            Err(e) => {
                tracing::debug!(zone = %zone.cfg.name, error = %e, "Drift check: serial not read.");
                false
            }
        }
    }

    pub(super) async fn zone_loop(
        self: Arc<Self>,
        zone: Arc<ZoneRuntime>,
        cancel: CancellationToken,
    ) {
        let sync_cfg = self.config.sync.clone();
        let mut last_full = Instant::now();
        // Zones' fresh full reads are spread so that they do not all fall together.
        let mut fresh_at = Instant::now() + spread(sync_cfg.full_read.max(sync_cfg.interval));
        let mut failures: u32 = 0;
        let mut not_before = Instant::now();
        let mut next = None;
        let mut full_failed = false;
        let mut last_watch = Instant::now();
        let mut last_triggered: Option<Instant> = None;
        let mut lease = self.lease.subscribe();
        // The lease epoch this loop last started leading under.
        let mut led: Option<u64> = None;
        // Nothing is planned before every source that cannot restore its state has
        // loaded once (`Engine::await_first_load`): until then it only looks empty.
        tokio::select! {
            _ = cancel.cancelled() => return,
            () = self.first_loads_done() => {}
        }
        loop {
            let epoch = {
                let st = lease.borrow_and_update();
                (st.role == Role::Leader).then_some(st.epoch)
            };
            match epoch {
                None => {
                    // Leading again later is a new leadership even under the same epoch
                    // number (a Redis that restarted empty counts from 1 again).
                    led = None;
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        r = lease.wait_for(|st| st.role == Role::Leader) => if r.is_err() { return },
                    }
                    continue;
                }
                Some(e) if led != Some(e) => {
                    // Newly leader: nothing is planned before the push store is read
                    // again (what the old leader acknowledged, [`super::takeover`]).
                    if !self.reloaded(e) {
                        tokio::select! {
                            _ = cancel.cancelled() => return,
                            () = self.wait_reloaded(e) => {}
                            _ = lease.changed() => {}
                        }
                        continue;
                    }
                    // Newly leader: everything afresh, no backoff left from before.
                    led = Some(e);
                    next = Some((Scope::Zone, true));
                    full_failed = false;
                    failures = 0;
                    not_before = Instant::now();
                }
                Some(_) => {}
            }
            if zone.released().is_some() {
                // Handed to external-dns: nothing until `Resume`.
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = zone.reschedule.notified() => {}
                    _ = lease.changed() => {}
                }
                continue;
            }
            if zone
                .wants_full
                .swap(false, std::sync::atomic::Ordering::SeqCst)
            {
                next = Some((Scope::Zone, true));
            }
            let (scope, fresh) = match next.take() {
                Some(n) => n,
                None if full_failed => {
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = lease.changed() => continue,
                        _ = tokio::time::sleep_until(not_before.into()) => {}
                    }
                    (Scope::Zone, true)
                }
                None => {
                    let (retry_at, conflicts) = {
                        let states = lock(&zone.states);
                        (states.next_retry(), states.has_conflicts())
                    };
                    let retry_in =
                        retry_at.map(|t| t.duration_since(SystemTime::now()).unwrap_or_default());
                    let full_in =
                        (last_full + sync_cfg.interval).saturating_duration_since(Instant::now());
                    let mut wait = retry_in.map_or(full_in, |r| r.min(full_in));
                    let watch_at =
                        watch_every(&sync_cfg, conflicts).map(|every| last_watch + every);
                    if let Some(at) = watch_at {
                        wait = wait.min(at.saturating_duration_since(Instant::now()));
                    }
                    let wait = wait.max(not_before.saturating_duration_since(Instant::now()));
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = zone.reschedule.notified() => continue,
                        // A role change: the top of the loop sorts it out.
                        _ = lease.changed() => continue,
                        _ = zone.trigger.notified() => {
                            // At most one source-driven sync per `min_interval`: the
                            // first change of a quiet zone goes at once, a burst is
                            // gathered until the interval since the last one is over.
                            let since = last_triggered.map(|t: Instant| t.elapsed());
                            if let Some(gap) = since.and_then(|e| sync_cfg.min_interval.checked_sub(e)) {
                                tokio::select! {
                                    _ = cancel.cancelled() => return,
                                    _ = tokio::time::sleep(gap) => {}
                                }
                            }
                            last_triggered = Some(Instant::now());
                            // Left marked until the sync's plan covers them.
                            let names = lock(&zone.dirty).clone();
                            if names.is_empty() {
                                continue;
                            }
                            // Planned against the observed state kept in memory: no read.
                            (Scope::Names(names), false)
                        }
                        _ = tokio::time::sleep(wait) => {
                            if watch_at.is_some_and(|at| Instant::now() >= at) {
                                last_watch = Instant::now();
                                if !self.serial_moved(&zone).await {
                                    continue;
                                }
                                // Someone changed the zone since we read it: read it
                                // again (bypassing the applier's cache) and plan every
                                // name; first, the conflicting names alone, made due at
                                // once (the change may have removed their cause).
                                let conflicts = lock(&zone.states).conflict_names();
                                if conflicts.is_empty() {
                                    (Scope::Zone, true)
                                } else {
                                    lock(&zone.states).release_conflicts(SystemTime::now());
                                    next = Some((Scope::Zone, true));
                                    (Scope::Names(conflicts), true)
                                }
                            } else if Instant::now() >= last_full + sync_cfg.interval {
                                // The periodic sync: planned against what this planner
                                // keeps when the zone's serial has not moved (one cheap
                                // call); every `full_read`, a fresh read of the whole
                                // zone, the backstop for what a serial cannot show.
                                let fresh = Instant::now() >= fresh_at;
                                if fresh {
                                    fresh_at = Instant::now() + spread(sync_cfg.full_read.max(sync_cfg.interval));
                                }
                                (Scope::Zone, fresh)
                            } else {
                                // Only records whose own retry clock ran out: a fresh read
                                // of just their names.
                                let names = lock(&zone.states).due_names(SystemTime::now() + RETRY_SLACK);
                                if names.is_empty() {
                                    continue;
                                }
                                (Scope::Names(names), true)
                            }
                        }
                    }
                }
            };
            let full = matches!(scope, Scope::Zone);
            if full {
                last_full = Instant::now();
            }
            match self.sync_zone(&zone, &scope, fresh, None).await {
                Ok(_) => {
                    failures = 0;
                    if full {
                        full_failed = false;
                    }
                }
                // The lease went while syncing: the top of the loop waits for it, and
                // the next leadership starts with a full sync.
                Err(e) if e.is_lease() || e.is_released() => {}
                Err(e) => {
                    full_failed |= full;
                    failures += 1;
                    let backoff = retry_delay(failures, sync_cfg.retry_min, sync_cfg.retry_max);
                    not_before = Instant::now() + backoff;
                    events::SyncFailed {
                        zone: &zone.target,
                        error: &e,
                        retry_in: backoff,
                    }
                    .emit();
                }
            }
        }
    }
}

/// How often the zone's serial is asked: every `drift_check`, or every
/// `conflict_watch` while records are in conflict, whichever is sooner; `None` when
/// both are off.
fn watch_every(cfg: &crate::config::SyncConfig, conflicts: bool) -> Option<Duration> {
    [
        Some(cfg.drift_check),
        conflicts.then_some(cfg.conflict_watch),
    ]
    .into_iter()
    .flatten()
    .filter(|d| !d.is_zero())
    .min()
}

/// `every`, plus or minus up to a tenth at random: periodic fresh reads of many zones
/// spread out instead of reaching one account together.
fn spread(every: Duration) -> Duration {
    let tenth = every / 10;
    every - tenth + tenth.mul_f64(2.0 * rand::random::<f64>())
}
