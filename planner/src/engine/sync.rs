//! One sync of one zone (or of some of its names): read through the applier, plan,
//! fold the plan into the state table, send the batches over one `Apply` stream and
//! fold every result back ([`super::fold`]).
//!
//! Nothing is sent without the lease ([`crate::lease`]): a sync starts only on the
//! leader, and each batch is sent only with a permit, checked just before it goes out;
//! its deadline is cut to the leader's window. A planner that loses the lease mid-sync
//! stops at the next batch; what it did not send comes back on the records' clocks.
//!
//! The `Plan` RPC's dry run ([`Engine::preview`]) runs the same planning function and
//! stops before folding or sending: what it lists is what the next sync would send,
//! and what it holds back is shown with the state that holds it.
use super::{Engine, ZoneRuntime, lock};
use crate::batcher;
use crate::client::{self, ApplierCallError};
use crate::desired::DesiredRecord;
use crate::events;
use crate::observed::ZoneView;
use crate::ownership;
use crate::plan::{PlannedChange, ZonePlan, plan_zone};
use crate::pool::Member;
use crate::state::RecordState;
use dnsplane_common::{Name, Outcome, RRSet, RecordKey, RecordType};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime};
use tokio::sync::mpsc;
use tracing::{Instrument, info_span};

/// What one sync reads and plans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The whole zone.
    Zone,
    /// Only these names (and their ownership records): a targeted re-plan.
    Names(BTreeSet<Name>),
}

impl Scope {
    pub(super) fn contains(&self, name: &Name) -> bool {
        match self {
            Scope::Zone => true,
            Scope::Names(n) => n.contains(name),
        }
    }

    fn is_zone(&self) -> bool {
        matches!(self, Scope::Zone)
    }
}

/// Errors of one sync.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("reading zone {zone} through the applier: {source}")]
    List {
        zone: Name,
        #[source]
        source: ApplierCallError,
    },
    #[error("applier stream for zone {zone}: {source}")]
    Apply {
        zone: Name,
        #[source]
        source: ApplierCallError,
    },
    #[error("applier stream for zone {zone}: stream ended after {done} of {total} batches")]
    StreamEnded {
        zone: Name,
        done: usize,
        total: usize,
    },
    #[error("reading zone {zone} through the applier: no applier is configured or discovered")]
    NoApplier { zone: Name },
    #[error("zone {zone} is not configured")]
    UnknownZone { zone: Name },
    #[error("zone {zone}: this planner is standby ({held}); only the leader writes")]
    NotLeader { zone: Name, held: String },
    #[error(
        "zone {zone}: the lease was lost after {sent} of {total} batches; the rest was not sent"
    )]
    LeaseLost {
        zone: Name,
        sent: usize,
        total: usize,
    },
}

impl SyncError {
    /// The sync did not run (or stopped) because this planner does not hold the
    /// lease: not a fault of the zone.
    pub fn is_lease(&self) -> bool {
        matches!(
            self,
            SyncError::NotLeader { .. } | SyncError::LeaseLost { .. }
        )
    }
}

impl SyncError {
    /// The provider's reason when the applier refused the zone's read for good
    /// (credentials, permissions, zone missing, the account's circuit open): retrying
    /// soon will not help, and the zone's records say so.
    pub fn refusal(&self) -> Option<&str> {
        match self {
            SyncError::List { source, .. }
                if matches!(
                    source.code,
                    tonic::Code::FailedPrecondition
                        | tonic::Code::NotFound
                        | tonic::Code::PermissionDenied
                        | tonic::Code::Unauthenticated
                ) =>
            {
                Some(&source.message)
            }
            _ => None,
        }
    }
}

/// What one sync did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SyncSummary {
    pub planned: usize,
    pub done: usize,
    pub outcomes: BTreeMap<Outcome, u32>,
}

/// Where a sync is, as the `Sync` RPC streams it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Planning,
    Applying,
    Done,
    Failed,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Planning => "planning",
            Phase::Applying => "applying",
            Phase::Done => "done",
            Phase::Failed => "failed",
        }
    }
}

/// One progress message of a sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncProgress {
    pub zone: Name,
    pub phase: Phase,
    pub summary: SyncSummary,
    pub error: String,
}

impl SyncProgress {
    fn new(zone: &Name, phase: Phase, summary: &SyncSummary) -> Self {
        SyncProgress {
            zone: zone.clone(),
            phase,
            summary: summary.clone(),
            error: String::new(),
        }
    }
}

/// The `Plan` dry run of one zone: what a sync would send now, and what it would hold
/// back.
#[derive(Debug, Default)]
pub struct Preview {
    pub plan: ZonePlan,
    /// Changes the plan wants that a sync would withhold now (their records wait on
    /// their own clock), with the state that holds each back.
    pub withheld: Vec<(RecordKey, RecordState)>,
    /// What the mass-change guard would hold of this plan (unless already approved).
    pub held: Option<crate::guard::HeldPlan>,
}

/// The desired records of one zone a sync plans with: all of them (borrowed from the
/// index) or those at some names (copied out).
enum DesiredScope<'a> {
    Zone(&'a BTreeMap<RecordKey, DesiredRecord>),
    Names(BTreeMap<RecordKey, DesiredRecord>),
}

impl DesiredScope<'_> {
    fn records(&self) -> &BTreeMap<RecordKey, DesiredRecord> {
        match self {
            DesiredScope::Zone(d) => d,
            DesiredScope::Names(d) => d,
        }
    }
}

type Progress<'a> = Option<&'a mpsc::Sender<SyncProgress>>;

async fn send(progress: Progress<'_>, p: SyncProgress) {
    if let Some(tx) = progress {
        let _ = tx.send(p).await;
    }
}

impl Engine {
    /// One sync of `zone` (or of some of its names). `progress` receives phase updates
    /// for the `Sync` RPC.
    pub async fn sync(
        &self,
        zone: &Name,
        scope: &Scope,
        fresh: bool,
        progress: Progress<'_>,
    ) -> Result<SyncSummary, SyncError> {
        let z = self.zone_or_err(zone)?;
        // A standby refuses before it reads anything or touches the zone's status.
        if let Err(e) = self.leading(zone) {
            let mut p = SyncProgress::new(zone, Phase::Failed, &SyncSummary::default());
            p.error = e.to_string();
            send(progress, p).await;
            return Err(e);
        }
        self.sync_zone(&z, scope, fresh, progress).await
    }

    /// `Ok` while this planner holds the lease.
    fn leading(&self, zone: &Name) -> Result<(), SyncError> {
        if self.lease.permit().is_some() {
            return Ok(());
        }
        let st = self.lease.status();
        Err(SyncError::NotLeader {
            zone: zone.clone(),
            held: match st.holder {
                Some(h) => format!("the lease is held by {h}"),
                None => format!("the {} lease is not held", st.backend),
            },
        })
    }

    pub(super) async fn sync_zone(
        &self,
        zone: &Arc<ZoneRuntime>,
        scope: &Scope,
        fresh: bool,
        progress: Progress<'_>,
    ) -> Result<SyncSummary, SyncError> {
        let _guard = zone.sync_lock.lock().await;
        let started = Instant::now();
        let names = match scope {
            Scope::Zone => 0,
            Scope::Names(n) => n.len(),
        };
        let span =
            info_span!("sync", zone = %zone.cfg.name, account = %zone.cfg.account, fresh, names);
        let result = self
            .sync_locked(zone, scope, fresh, progress)
            .instrument(span)
            .await;
        if let Err(e @ SyncError::NotLeader { .. }) = &result {
            // Nothing ran (the lease went while this sync waited for the zone): the
            // zone's status and metrics stay as they were.
            let mut p = SyncProgress::new(&zone.cfg.name, Phase::Failed, &SyncSummary::default());
            p.error = e.to_string();
            send(progress, p).await;
            return result;
        }
        events::SyncFinished {
            zone: &zone.cfg.name,
            full: scope.is_zone(),
            elapsed: started.elapsed(),
            ok: result.is_ok(),
        }
        .emit(&self.metrics);
        {
            let mut st = lock(&zone.status);
            st.syncing = false;
            st.full_sync = false;
            st.last_sync = Some(SystemTime::now());
            match &result {
                Ok(_) => {
                    if scope.is_zone() {
                        st.initial_sync_done = true;
                        st.refused = None;
                    }
                    st.last_success = st.last_sync;
                    st.last_error.clear();
                }
                // Standing by is not a fault of the zone.
                Err(e) if e.is_lease() => {}
                Err(e) => {
                    st.last_error = e.to_string();
                    if let Some(why) = e.refusal() {
                        st.refused = Some(why.to_string());
                    }
                }
            }
        }
        if let Err(e) = &result {
            let mut p = SyncProgress::new(&zone.cfg.name, Phase::Failed, &SyncSummary::default());
            p.error = e.to_string();
            send(progress, p).await;
        }
        zone.reschedule.notify_one();
        result
    }

    async fn sync_locked(
        &self,
        zone: &Arc<ZoneRuntime>,
        scope: &Scope,
        fresh: bool,
        progress: Progress<'_>,
    ) -> Result<SyncSummary, SyncError> {
        let name = zone.cfg.name.clone();
        self.leading(&name)?;
        {
            let mut st = lock(&zone.status);
            st.syncing = true;
            st.full_sync = scope.is_zone();
            st.sync_started.get_or_insert_with(SystemTime::now);
        }
        let none = SyncSummary::default();
        send(progress, SyncProgress::new(&name, Phase::Planning, &none)).await;
        let (mut plan, withheld) = self
            .plan_scope(zone, scope, fresh, |desired, view, plan| {
                let now = SystemTime::now();
                let withheld = lock(&zone.states).fold_plan(
                    |n| scope.contains(n),
                    desired,
                    |k| view.data.get(k).cloned(),
                    plan,
                    now,
                    self.retry_clock(),
                );
                let full_view = scope.is_zone().then_some(view);
                self.guard_plan(zone, scope, full_view, plan);
                withheld
            })
            .await?;
        let mut summary = SyncSummary {
            planned: plan.changes.len(),
            ..Default::default()
        };
        events::ZonePlanned {
            zone: &name,
            kinds: plan.changes.iter().map(|c| c.change.kind),
            changes: plan.changes.len(),
            withheld,
            blocked: plan.blocked.len(),
            converged: plan.converged,
        }
        .emit(&self.metrics);
        send(
            progress,
            SyncProgress::new(&name, Phase::Applying, &summary),
        )
        .await;
        if !plan.changes.is_empty() {
            self.apply_plan(
                zone,
                std::mem::take(&mut plan.changes),
                &mut summary,
                progress,
            )
            .await?;
            // Our own writes moved the serial: take the new one as known, so the drift
            // watch does not read the whole zone again for them. (An out-of-band write
            // in the instant between our batch and this read is left to the periodic
            // full read.)
            if lock(&zone.serial).is_some() {
                let now = match self.member_for(&name) {
                    Ok(m) => client::serial(&m, &zone.cfg.account, &name).await.ok(),
                    Err(_) => None,
                };
                if let Some(s) = now.filter(|s| *s != 0) {
                    *lock(&zone.serial) = Some(s);
                }
            }
        }
        send(progress, SyncProgress::new(&name, Phase::Done, &summary)).await;
        Ok(summary)
    }

    /// Reads what `scope` needs and plans it: the planning function of every sync and
    /// of the dry run. `fold` sees the desired records, the view planned against and
    /// the plan, under the desired-state read lock, and may cut the plan down (a sync
    /// folds it into the state table; the dry run only looks).
    async fn plan_scope<R>(
        &self,
        zone: &Arc<ZoneRuntime>,
        scope: &Scope,
        fresh: bool,
        fold: impl FnOnce(&BTreeMap<RecordKey, DesiredRecord>, &ZoneView, &mut ZonePlan) -> R,
    ) -> Result<(ZonePlan, R), SyncError> {
        let name = &zone.cfg.name;
        match scope {
            Scope::Zone => {
                let (current, serial) = self.list_zone(&zone.cfg.name, fresh, &[]).await?;
                *lock(&zone.serial) = (serial != 0).then_some(serial);
                let desired = self.desired();
                let empty = BTreeMap::new();
                let zone_desired = DesiredScope::Zone(desired.zone(name).unwrap_or(&empty));
                let view = ZoneView::shared(current, Some(zone_desired.records()));
                let mut plan = plan_zone(
                    &zone.cfg,
                    &self.config.owner_id,
                    zone_desired.records(),
                    &view,
                );
                let r = fold(zone_desired.records(), &view, &mut plan);
                drop(desired);
                *lock(&zone.view) = Some(view);
                Ok((plan, r))
            }
            Scope::Names(names) => {
                let known = lock(&zone.view).as_ref().map(|v| v.subset(name, names));
                let view = match known {
                    Some(v) if !fresh => v,
                    _ => {
                        let query = with_owner_names(name, names);
                        let read = ZoneView::new(self.list_zone(name, true, &query).await?.0);
                        if let Some(v) = lock(&zone.view).as_mut() {
                            v.replace_names(name, names, read.subset(name, names));
                        }
                        read
                    }
                };
                let scoped = DesiredScope::Names(self.desired().at_names(name, names));
                let mut plan = plan_zone(&zone.cfg, &self.config.owner_id, scoped.records(), &view);
                let r = fold(scoped.records(), &view, &mut plan);
                Ok((plan, r))
            }
        }
    }

    /// The `Plan` dry run of `zone`: a fresh plan of the whole zone against a read
    /// through the applier (`fresh`: bypassing its cache), with the changes a sync
    /// would withhold now set apart. Changes nothing.
    pub async fn preview(&self, zone: &Name, fresh: bool) -> Result<Preview, SyncError> {
        let z = self.zone_or_err(zone)?;
        let (current, _) = self.list_zone(zone, fresh, &[]).await?;
        let desired = self.desired();
        let empty = BTreeMap::new();
        let zone_desired = desired.zone(zone).unwrap_or(&empty);
        let view = ZoneView::new(current);
        let mut plan = plan_zone(&z.cfg, &self.config.owner_id, zone_desired, &view);
        let withheld: Vec<(RecordKey, RecordState)> = {
            let states = lock(&z.states);
            states
                .withheld(&plan, zone_desired, SystemTime::now())
                .into_iter()
                .map(|(k, s)| (k.clone(), s.clone()))
                .collect()
        };
        let held: BTreeSet<&RecordKey> = withheld.iter().map(|(k, _)| k).collect();
        plan.changes.retain(|c| !held.contains(c.change.key()));
        drop(held);
        let items = crate::guard::guarded(zone, &plan.changes);
        let guarded = crate::guard::check(&self.config.safety, items, || {
            view.owned_by(&self.config.owner_id)
        })
        .filter(|h| lock(&z.approved).as_deref() != Some(h.digest.as_str()));
        Ok(Preview {
            plan,
            withheld,
            held: guarded,
        })
    }

    /// Reads `zone` through its applier (all pages); only `names` when not empty. With
    /// the zone's serial (0: the provider has none).
    pub async fn list_zone(
        &self,
        zone: &Name,
        fresh: bool,
        names: &[Name],
    ) -> Result<(Vec<RRSet>, u64), SyncError> {
        let z = self.zone_or_err(zone)?;
        let member = self.member_for(zone)?;
        client::list(&member, &z.cfg.account, zone, fresh, names)
            .await
            .map_err(|e| {
                if e.is_transport() {
                    self.pool.mark_failed(&member, &e.message);
                }
                SyncError::List {
                    zone: zone.clone(),
                    source: e,
                }
            })
    }

    /// Sends a plan's changes as batches over one `Apply` stream and folds the results
    /// in. Whatever gets no result (a broken stream) is retried on the record's clock.
    async fn apply_plan(
        &self,
        zone: &Arc<ZoneRuntime>,
        changes: Vec<PlannedChange>,
        summary: &mut SyncSummary,
        progress: Progress<'_>,
    ) -> Result<(), SyncError> {
        let name = zone.cfg.name.clone();
        // Shared with the sender task; results find their change through `by_id`
        // (batch, position), so no change is copied.
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
        let total = batches.len();
        let deadline = self.config.sync.batch_deadline;
        let prefix = self.batch_prefix(&name);
        let (tx, rx) = client::batch_channel();
        // Batches sent, and `total` unless the lease stopped the sender.
        let stopped_at = Arc::new(AtomicUsize::new(total));
        let sender = {
            let zone = zone.clone();
            let batches = batches.clone();
            let lease = self.lease.clone();
            let owner = self.config.owner_id.clone();
            let stopped_at = stopped_at.clone();
            tokio::spawn(async move {
                for (i, batch) in batches.iter().enumerate() {
                    // The last moment before the batch leaves this planner.
                    let Some(permit) = lease.permit() else {
                        stopped_at.store(i, Ordering::SeqCst);
                        return;
                    };
                    {
                        let now = SystemTime::now();
                        let mut states = lock(&zone.states);
                        for c in batch {
                            states.in_flight(c.change.key(), now);
                        }
                    }
                    let sent = tx
                        .send(
                            format!("{prefix}-{i}"),
                            &zone.cfg.account,
                            &zone.cfg.name,
                            batch.iter().map(|c| &c.change),
                            permit.cap(SystemTime::now() + deadline),
                            (&owner, permit.epoch),
                        )
                        .await;
                    if !sent {
                        return;
                    }
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
            while done < total {
                let Some(resp) = responses.next().await.map_err(stream_err)? else {
                    return Err(SyncError::StreamEnded {
                        zone: name.clone(),
                        done,
                        total,
                    });
                };
                self.fold_results(zone, &batches, &by_id, &resp.results, summary);
                if resp.done {
                    done += 1;
                }
                send(progress, SyncProgress::new(&name, Phase::Applying, summary)).await;
            }
            Ok(())
        }
        .await;
        sender.abort();
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

    fn zone_or_err(&self, zone: &Name) -> Result<Arc<ZoneRuntime>, SyncError> {
        self.zone(zone)
            .cloned()
            .ok_or_else(|| SyncError::UnknownZone { zone: zone.clone() })
    }

    fn member_for(&self, zone: &Name) -> Result<Arc<Member>, SyncError> {
        self.pool
            .route(zone)
            .ok_or_else(|| SyncError::NoApplier { zone: zone.clone() })
    }
}

/// `names` plus the names of their ownership records: what a targeted read fetches.
fn with_owner_names(zone: &Name, names: &BTreeSet<Name>) -> Vec<Name> {
    let mut query: BTreeSet<Name> = names.clone();
    for n in names {
        for t in RecordType::ALL {
            if let Some(k) =
                ownership::owner_record_key(&RecordKey::new(zone.clone(), n.clone(), t))
            {
                query.insert(k.name);
            }
        }
    }
    query.into_iter().collect()
}
