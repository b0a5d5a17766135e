//! When a zone syncs: at start, after source changes (debounced), when a record's own
//! retry comes due (a fresh read of just its names), and on the periodic drift check
//! (through the applier's cache, revalidated by serial). A failed sync backs the whole
//! zone off, so that due records cannot turn a broken zone into a hot loop; a failed
//! full sync is retried before anything else.
use super::sync::Scope;
use super::{Engine, ZoneRuntime, lock};
use crate::events;
use crate::state::{RETRY_SLACK, retry_delay};
use std::sync::Arc;
use std::time::{Instant, SystemTime};
use tokio_util::sync::CancellationToken;

impl Engine {
    pub(super) async fn zone_loop(
        self: Arc<Self>,
        zone: Arc<ZoneRuntime>,
        cancel: CancellationToken,
    ) {
        let sync_cfg = self.config.sync.clone();
        let mut last_full = Instant::now();
        let mut failures: u32 = 0;
        let mut not_before = Instant::now();
        let mut next = Some((Scope::Zone, true));
        let mut full_failed = false;
        loop {
            let (scope, fresh) = match next.take() {
                Some(n) => n,
                None if full_failed => {
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = tokio::time::sleep_until(not_before.into()) => {}
                    }
                    (Scope::Zone, true)
                }
                None => {
                    let retry_at = lock(&zone.states).next_retry();
                    let retry_in =
                        retry_at.map(|t| t.duration_since(SystemTime::now()).unwrap_or_default());
                    let full_in =
                        (last_full + sync_cfg.interval).saturating_duration_since(Instant::now());
                    let wait = retry_in
                        .map_or(full_in, |r| r.min(full_in))
                        .max(not_before.saturating_duration_since(Instant::now()));
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = zone.reschedule.notified() => continue,
                        _ = zone.trigger.notified() => {
                            // Debounce bursts of source events.
                            tokio::select! {
                                _ = cancel.cancelled() => return,
                                _ = tokio::time::sleep(sync_cfg.min_interval) => {}
                            }
                            let names = std::mem::take(&mut *lock(&zone.dirty));
                            if names.is_empty() {
                                continue;
                            }
                            // Planned against the observed state kept in memory: no read.
                            (Scope::Names(names), false)
                        }
                        _ = tokio::time::sleep(wait) => {
                            if Instant::now() >= last_full + sync_cfg.interval {
                                // The drift check: through the applier's cache, which
                                // revalidates by serial, so an unchanged zone costs one
                                // cheap call.
                                (Scope::Zone, false)
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
                // A full sync plans every name.
                lock(&zone.dirty).clear();
            }
            match self.sync_zone(&zone, &scope, fresh, None).await {
                Ok(_) => {
                    failures = 0;
                    if full {
                        full_failed = false;
                    }
                }
                Err(e) => {
                    full_failed |= full;
                    failures += 1;
                    let backoff = retry_delay(failures, sync_cfg.retry_min, sync_cfg.retry_max);
                    not_before = Instant::now() + backoff;
                    events::SyncFailed {
                        zone: &zone.cfg.name,
                        error: &e,
                        retry_in: backoff,
                    }
                    .emit();
                }
            }
        }
    }
}
