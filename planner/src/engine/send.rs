//! Sending a plan: its changes cut into batches, streamed over one `Apply` stream to
//! the zone's applier, each batch only while this planner holds the lease and only
//! with what is still desired when it leaves ([`super::recheck`]), and every result
//! folded back ([`super::fold`]).
use super::recheck::recheck;
use super::sync::{Phase, Progress, SerialTrail, SyncError, SyncProgress, SyncSummary, send};
use super::{Engine, ZoneRuntime, lock};
use crate::batcher;
use crate::client::{self, ApplierCallError};
use crate::events;
use crate::plan::PlannedChange;
use dnsplane_common::Outcome;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::SystemTime;
use tokio::sync::Semaphore;

/// Batches of one stream on their way or waiting in the applier at once. A batch's
/// deadline is set as it leaves, so with a short window it counts from about when the
/// applier starts it (per batch, not per sync): a long sync that makes progress is
/// never cut by a deadline that began when the sync did. Two keep the applier busy:
/// one running, the next already there.
const BATCHES_IN_FLIGHT: usize = 2;

impl Engine {
    /// Sends a plan's changes as batches over one `Apply` stream and folds the results
    /// in. Whatever gets no result (a broken stream) is retried on the record's clock.
    pub(super) async fn apply_plan(
        &self,
        zone: &Arc<ZoneRuntime>,
        changes: Vec<PlannedChange>,
        summary: &mut SyncSummary,
        progress: Progress<'_>,
    ) -> Result<SerialTrail, SyncError> {
        let name = zone.target.clone();
        // The last line of observe mode: whatever path got here, nothing is written.
        if self.config.safety.mode == crate::config::SafetyMode::Observe {
            return Err(SyncError::Observing { zone: name });
        }
        // Shared with the sender task; results find their change through `by_id`
        // (batch, position), so no change is copied.
        // A million changes take a while to cut and index: off the runtime.
        let (batches, by_id) = Engine::cpu(|| {
            let batches = Arc::new(batcher::cut(
                changes,
                self.config.batch.max_changes,
                self.config.batch.max_bytes,
            ));
            let by_id: HashMap<String, (usize, usize)> = batches
                .iter()
                .enumerate()
                .flat_map(|(b, batch)| {
                    batch
                        .iter()
                        .enumerate()
                        .map(move |(i, c)| (c.change.id.clone(), (b, i)))
                })
                .collect();
            (batches, by_id)
        });
        let total = batches.len();
        let deadline = self.config.sync.batch_deadline;
        let prefix = self.batch_prefix(&name.zone);
        // Who asked for each change, read once for the attempt and outcome events.
        let audit = Arc::new(Engine::cpu(|| self.batch_audit(&name, &prefix, &batches)));
        let (tx, rx) = client::batch_channel();
        // Batches sent, and `total` unless the lease stopped the sender.
        let stopped_at = Arc::new(AtomicUsize::new(total));
        // Batches left with nothing to send once checked against the desired state.
        let skipped = Arc::new(AtomicUsize::new(0));
        let window = Arc::new(Semaphore::new(BATCHES_IN_FLIGHT));
        // The lease epoch each batch left under: a fenced answer fences that epoch.
        let epochs: Arc<Vec<AtomicU64>> = Arc::new((0..total).map(|_| AtomicU64::new(0)).collect());
        let sender = {
            let epochs = epochs.clone();
            let window = window.clone();
            let zone = zone.clone();
            let batches = batches.clone();
            let lease = self.lease.clone();
            let owner = self.config.owner_id.clone();
            let stopped_at = stopped_at.clone();
            let audit = audit.clone();
            let trail = self.audit_sink();
            let desired = zone.desired.clone();
            let skipped = skipped.clone();
            tokio::spawn(async move {
                for (i, batch) in batches.iter().enumerate() {
                    // A slot frees when an earlier batch's last result arrives.
                    match window.acquire().await {
                        Ok(slot) => slot.forget(),
                        Err(_) => return,
                    }
                    // Only what is still desired (recheck.rs); off the runtime, since it
                    // waits for a push being indexed.
                    let checked = {
                        let (desired, batches, zone) =
                            (desired.clone(), batches.clone(), zone.cfg.name.clone());
                        tokio::task::spawn_blocking(move || {
                            let desired = desired
                                .read()
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            recheck(&desired, &zone, &batches[i])
                        })
                        .await
                    };
                    let Ok(checked) = checked else { return };
                    if !checked.dropped.is_empty() {
                        events::ChangesWithdrawn {
                            zone: &zone.target,
                            count: checked.keep.iter().filter(|k| !**k).count(),
                        }
                        .emit();
                        lock(&zone.dirty).extend(checked.dropped.iter().cloned());
                        zone.trigger.notify_one();
                    }
                    if checked.is_empty() {
                        skipped.fetch_add(1, Ordering::SeqCst);
                        window.add_permits(1);
                        continue;
                    }
                    let kept = || batch.iter().enumerate().filter(|(j, _)| checked.keep[*j]);
                    // The last moment before the batch leaves this planner.
                    let Some(permit) = lease.permit() else {
                        stopped_at.store(i, Ordering::SeqCst);
                        return;
                    };
                    {
                        let now = SystemTime::now();
                        let mut states = lock(&zone.states);
                        for (_, c) in kept() {
                            states.in_flight(c.change.key(), now);
                        }
                    }
                    let claim = lease.claim_info(&permit);
                    epochs[i].store(permit.epoch, Ordering::SeqCst);
                    let sent = tx
                        .send(
                            format!("{prefix}-{i}"),
                            &zone.cfg.account,
                            &zone.cfg.name,
                            kept().map(|(_, c)| &c.change),
                            permit.cap(SystemTime::now() + deadline),
                            (&owner, &claim),
                        )
                        .await;
                    if !sent {
                        return;
                    }
                    let attempts: Vec<_> = kept()
                        .map(|(j, c)| audit.event(crate::audit::ATTEMPT, c, i, j))
                        .collect();
                    trail.record(&attempts);
                }
            })
        };
        let member = self.member_for(&name)?;
        lock(&zone.status).applier = member.addr.clone();
        let stream_err = |e: ApplierCallError| {
            if e.is_transport() {
                // Its batches come back to the records' own clocks and go, on the next
                // sync, to the next applier in rendezvous order.
                self.pool.mark_failed(&member, &e.message);
            }
            SyncError::Apply {
                zone: name.clone(),
                source: e,
            }
        };
        let outcome = async {
            let mut responses = client::apply(&member, rx).await.map_err(stream_err)?;
            let mut done = 0;
            let mut trail = SerialTrail::Followed;
            while done + skipped.load(Ordering::SeqCst) < total {
                let Some(resp) = responses.next().await.map_err(stream_err)? else {
                    // The sender skipped the last batches and closed the stream.
                    if done + skipped.load(Ordering::SeqCst) >= total {
                        break;
                    }
                    return Err(SyncError::StreamEnded {
                        zone: name.clone(),
                        done,
                        total,
                    });
                };
                self.fold_results(zone, &batches, &by_id, &audit, &resp.results, summary);
                if let Some(by) = resp.fenced {
                    // Another planner writes for the owner: nothing more goes out.
                    self.lease.fence(batch_epoch(&epochs, &resp.batch_id), by);
                }
                if resp.done {
                    done += 1;
                    window.add_permits(1);
                    trail = trail.follow(&mut lock(&zone.serial), resp.serials);
                }
                send(progress, SyncProgress::new(&name, Phase::Applying, summary)).await;
            }
            Ok(trail)
        }
        .await;
        sender.abort();
        if let Some(&count) = summary.outcomes.get(&Outcome::Deferred) {
            events::RecordsDeferred { zone: &name, count }.emit();
        }
        let sent = stopped_at.load(Ordering::SeqCst);
        let outcome = match outcome {
            Err(SyncError::StreamEnded { .. }) if sent < total => Err(SyncError::LeaseLost {
                zone: name.clone(),
                sent,
                total,
            }),
            other => other,
        };
        if let Err(e) = &outcome {
            lock(&zone.states).fold_lost(
                batches.iter().flatten().map(|c| c.change.key()),
                &e.to_string(),
                SystemTime::now(),
                self.retry_clock(),
            );
        }
        outcome
    }
}

/// The epoch the batch `<prefix>-<i>` was sent under (0 when unknown).
fn batch_epoch(epochs: &[AtomicU64], batch_id: &str) -> u64 {
    batch_id
        .rsplit('-')
        .next()
        .and_then(|i| i.parse::<usize>().ok())
        .and_then(|i| epochs.get(i))
        .map_or(0, |e| e.load(Ordering::SeqCst))
}
