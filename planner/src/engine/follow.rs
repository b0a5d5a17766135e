//! A `Sync` call that finds its zone busy (the zone's own loop, or another call, is
//! syncing it) follows the sync that runs: it streams that sync's progress while it
//! waits for the zone, then runs its own and reports both as one, its counts added
//! to the followed sync's. Without this a call made during an automatic sync waited
//! silently and then reported `done 0/0`, the work having been done by the other.
//!
//! Every sync publishes its progress on the zone's `running` watch ([`tee`]); only
//! a caller with a progress stream follows (the zone loop just waits for the lock).
use super::ZoneRuntime;
use super::sync::{Phase, Progress, Scope, SyncError, SyncProgress, SyncSummary, send};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::{MutexGuard, mpsc};

impl super::Engine {
    /// Syncs `zone`; a call that finds the zone busy follows the sync that runs first.
    pub(super) async fn sync_zone(
        &self,
        zone: &Arc<ZoneRuntime>,
        scope: &Scope,
        fresh: bool,
        progress: Progress<'_>,
    ) -> Result<SyncSummary, SyncError> {
        // A call that finds the zone busy follows the sync that runs, then runs its
        // own and reports both as one (this module).
        let (_guard, base) = lock_following(zone, progress).await;
        let result = tee(zone, &base, progress, |tx| async move {
            self.sync_zone_locked(zone, scope, fresh, Some(&tx)).await
        })
        .await;
        result.map(|own| add(&base, &own))
    }
}

/// The latest progress of the sync that holds a zone's lock, numbered per zone so
/// that a follower tells the end of an earlier sync from the one it follows.
#[derive(Debug, Clone)]
pub(super) struct Running {
    run: u64,
    progress: SyncProgress,
}

/// `base` plus `more`: what a call reports after following other syncs.
pub(super) fn add(base: &SyncSummary, more: &SyncSummary) -> SyncSummary {
    let mut out = base.clone();
    out.planned += more.planned;
    out.done += more.done;
    for (k, v) in &more.outcomes {
        *out.outcomes.entry(*k).or_default() += v;
    }
    out
}

fn based(p: &SyncProgress, base: &SyncSummary) -> SyncProgress {
    SyncProgress {
        summary: add(base, &p.summary),
        ..p.clone()
    }
}

/// What a follower does with one published progress: forwards it while the sync
/// runs; at its end, keeps what it did (when it ended done) and forwards nothing,
/// since the caller's own sync comes next.
fn step(r: &Running, following: &mut Option<u64>, base: &mut SyncSummary) -> Option<SyncProgress> {
    match r.progress.phase {
        Phase::Done | Phase::Failed => {
            if *following == Some(r.run) && r.progress.phase == Phase::Done {
                *base = add(base, &r.progress.summary);
            }
            *following = None;
            None
        }
        Phase::Planning | Phase::Applying => {
            *following = Some(r.run);
            Some(based(&r.progress, base))
        }
    }
}

/// The zone's sync lock; while another sync holds it, its progress goes to the
/// caller's stream. Returns the guard and what the followed syncs did.
pub(super) async fn lock_following<'z>(
    zone: &'z ZoneRuntime,
    progress: Progress<'_>,
) -> (MutexGuard<'z, ()>, SyncSummary) {
    let mut base = SyncSummary::default();
    if let Ok(guard) = zone.sync_lock.try_lock() {
        return (guard, base);
    }
    if progress.is_none() {
        return (zone.sync_lock.lock().await, base);
    }
    let mut watch = zone.running.subscribe();
    let mut following = None;
    // What runs now, unless the value is the end of an earlier sync.
    let now = watch.borrow_and_update().clone();
    if let Some(p) = now
        .as_ref()
        .and_then(|r| step(r, &mut following, &mut base))
    {
        send(progress, p).await;
    }
    let lock = zone.sync_lock.lock();
    tokio::pin!(lock);
    loop {
        tokio::select! {
            guard = &mut lock => {
                // The holder published its end before it let go: count it.
                let last = watch.borrow_and_update().clone();
                if let Some(r) = &last
                    && following == Some(r.run)
                    && let Some(p) = step(r, &mut following, &mut base)
                {
                    send(progress, p).await;
                }
                return (guard, base);
            }
            changed = watch.changed() => {
                if changed.is_err() {
                    return (lock.await, base);
                }
                let last = watch.borrow_and_update().clone();
                if let Some(p) = last.as_ref().and_then(|r| step(r, &mut following, &mut base)) {
                    send(progress, p).await;
                }
            }
        }
    }
}

/// Runs `sync` (which sends its progress into the channel it is given), publishing
/// each progress on the zone's watch for followers and forwarding it to the caller
/// with `base` added.
pub(super) async fn tee<F, T>(
    zone: &ZoneRuntime,
    base: &SyncSummary,
    progress: Progress<'_>,
    sync: impl FnOnce(mpsc::Sender<SyncProgress>) -> F,
) -> T
where
    F: Future<Output = T>,
{
    let run = zone.runs.fetch_add(1, Ordering::Relaxed) + 1;
    let (tx, mut rx) = mpsc::channel::<SyncProgress>(16);
    let forward = async {
        while let Some(p) = rx.recv().await {
            zone.running.send_replace(Some(Running {
                run,
                progress: p.clone(),
            }));
            send(progress, based(&p, base)).await;
        }
    };
    let (out, ()) = tokio::join!(sync(tx), forward);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dnsplane_common::Outcome;

    fn at(run: u64, phase: Phase, planned: usize, done: usize) -> Running {
        let mut summary = SyncSummary {
            planned,
            done,
            ..Default::default()
        };
        summary.outcomes.insert(Outcome::Applied, done as u32);
        Running {
            run,
            progress: SyncProgress::new(
                &crate::target::Target::new("example.com.".parse().unwrap(), "a", false),
                phase,
                &summary,
            ),
        }
    }

    #[test]
    fn a_follower_forwards_the_running_sync_and_keeps_what_it_did() {
        let (mut following, mut base) = (None, SyncSummary::default());
        // The end of an earlier sync, seen first: not counted, not forwarded.
        assert!(step(&at(1, Phase::Done, 5, 5), &mut following, &mut base).is_none());
        assert_eq!(base, SyncSummary::default());
        let p = step(&at(2, Phase::Applying, 3, 1), &mut following, &mut base).unwrap();
        assert_eq!((p.summary.planned, p.summary.done), (3, 1));
        assert!(step(&at(2, Phase::Done, 3, 3), &mut following, &mut base).is_none());
        assert_eq!((base.planned, base.done), (3, 3));
        // A second followed sync adds to the first.
        let p = step(&at(3, Phase::Applying, 2, 1), &mut following, &mut base).unwrap();
        assert_eq!((p.summary.planned, p.summary.done), (5, 4));
        assert_eq!(p.summary.outcomes.get(&Outcome::Applied), Some(&4));
        // A failed one adds nothing.
        assert!(step(&at(3, Phase::Failed, 2, 1), &mut following, &mut base).is_none());
        assert_eq!((base.planned, base.done), (3, 3));
    }
}
