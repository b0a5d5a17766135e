//! The sync engine: holds the desired state, one runtime per zone (its state table,
//! status and trigger), and runs syncs: read the zone through the applier, plan, send
//! batches over one `Apply` stream, fold every per-record result into the state table.
//!
//! Each zone has its own loop and its own lock, so a slow or failing zone never holds
//! up another (no head-of-line blocking between zones).
use crate::batcher;
use crate::config::{PlannerConfig, ZoneConfig};
use crate::desired::{DesiredIndex, DesiredRecord};
use crate::plan::{ZonePlan, plan_zone};
use crate::pool::{ApplierPool, Member};
use crate::observed::ZoneView;
use crate::ownership;
use crate::source::{DesiredEntry, SourceError};
use crate::state::{StateTable, retry_delay};
use dnsplane_common::convert::{outcome_name, rrset_from_pb, timestamp};
use dnsplane_common::pb::{self, ConflictReason};
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info, info_span, warn};

/// Slack when deciding which retries are due, so a timer that fires a hair early
/// does not miss the record it woke for.
const RETRY_SLACK: Duration = Duration::from_millis(20);

/// What one sync reads and plans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The whole zone.
    Zone,
    /// Only these names (and their ownership records): a targeted re-plan.
    Names(BTreeSet<Name>),
}

impl Scope {
    fn contains(&self, name: &Name) -> bool {
        match self {
            Scope::Zone => true,
            Scope::Names(n) => n.contains(name),
        }
    }
}

/// Whether a record may be written now: not when it waits on its own retry clock,
/// nor when it is invalid and its desired state has not changed since.
fn due(
    state: Option<&crate::state::RecordState>,
    desired: Option<&RRSet>,
    now: SystemTime,
) -> bool {
    use pb::RecordStateKind as K;
    let Some(s) = state else { return true };
    let desired_changed = s.desired.as_ref() != desired;
    match s.kind {
        K::Invalid => desired_changed,
        K::Conflict | K::Failed | K::Deferred | K::Rejected => {
            desired_changed || s.next_retry.is_none_or(|t| t <= now + RETRY_SLACK)
        }
        _ => true,
    }
}

/// A call that failed because the applier is gone or unreachable (not because it
/// answered): the applier is taken out of the pool until it is healthy again.
fn is_transport_failure(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
    )
}

/// Errors of one sync.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("reading zone {zone} through the applier: {status}")]
    List { zone: Name, status: String },
    #[error("applier stream for zone {zone}: {status}")]
    Apply { zone: Name, status: String },
}

/// What one sync did.
#[derive(Debug, Default, Clone)]
pub struct SyncSummary {
    pub planned: usize,
    pub done: usize,
    pub outcomes: BTreeMap<String, u32>,
}

impl SyncSummary {
    /// This summary as a `Sync` progress message.
    fn progress(&self, zone: &Name, phase: &str) -> pb::SyncProgress {
        pb::SyncProgress {
            zone: zone.to_string(),
            phase: phase.into(),
            changes_planned: self.planned as u32,
            changes_done: self.done as u32,
            outcomes: self.outcomes.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            error: String::new(),
        }
    }
}

/// Status of one zone, besides its record states.
#[derive(Debug, Default, Clone)]
pub struct ZoneStatusData {
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
}

/// Everything the engine keeps per zone.
#[derive(Debug)]
pub struct ZoneRuntime {
    pub cfg: ZoneConfig,
    /// One sync of a zone at a time.
    sync_lock: tokio::sync::Mutex<()>,
    /// Wakes the zone loop for a sync (source change).
    trigger: Notify,
    /// Wakes the zone loop to recompute its deadlines (new retry times).
    reschedule: Notify,
    pub states: Mutex<StateTable>,
    pub status: Mutex<ZoneStatusData>,
    /// What the provider holds, as last read and then updated from every result, so
    /// that a source change is planned without reading the zone again. `None` until
    /// the first full read.
    pub view: Mutex<Option<ZoneView>>,
    /// Names whose desired records changed since the last sync of them.
    dirty: Mutex<BTreeSet<Name>>,
}

/// The planner's engine.
#[derive(Debug)]
pub struct Engine {
    pub config: PlannerConfig,
    pub zones: BTreeMap<Name, Arc<ZoneRuntime>>,
    /// The merged desired state of every source, maintained incrementally.
    pub desired: RwLock<DesiredIndex>,
    /// The appliers, and which one each zone goes to.
    pub pool: Arc<ApplierPool>,
    pub metrics: crate::metrics::PlannerMetrics,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Engine {
    /// Builds the engine; the applier connection is made lazily, so the planner starts
    /// (and answers gRPC) even while no applier is up.
    pub fn new(config: PlannerConfig) -> Result<Arc<Engine>, tonic::transport::Error> {
        let pool = ApplierPool::new(config.pool_config())?;
        let zones = config
            .zones
            .iter()
            .map(|z| {
                (
                    z.name.clone(),
                    Arc::new(ZoneRuntime {
                        cfg: z.clone(),
                        sync_lock: tokio::sync::Mutex::new(()),
                        trigger: Notify::new(),
                        reschedule: Notify::new(),
                        states: Mutex::new(StateTable::default()),
                        status: Mutex::new(ZoneStatusData::default()),
                        view: Mutex::new(None),
                        dirty: Mutex::new(BTreeSet::new()),
                    }),
                )
            })
            .collect();
        let desired = RwLock::new(DesiredIndex::new(&config.zones));
        Ok(Arc::new(Engine {
            config,
            zones,
            desired,
            pool,
            metrics: crate::metrics::PlannerMetrics::default(),
        }))
    }

    pub fn desired(&self) -> std::sync::RwLockReadGuard<'_, DesiredIndex> {
        self.desired
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Replaces one source's snapshot in the desired state and wakes the zones whose
    /// desired records changed, telling each which names to re-plan. Costs
    /// O(size of this source), whatever the size of the world.
    pub fn set_source(&self, name: &str, entries: Vec<DesiredEntry>, errors: Vec<SourceError>) {
        for e in &errors {
            warn!(location = %e.location, record = %e.record, "Desired record rejected: {}.", e.message);
        }
        let touched = self
            .desired
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .update_source(name, &entries, errors);
        for (zone, names) in touched {
            if let Some(z) = self.zones.get(&zone) {
                lock(&z.dirty).extend(names);
                z.trigger.notify_one();
            }
        }
    }

    /// Spawns one loop per zone: sync on start, on source changes (at most every
    /// `min_interval`), when a record's retry comes due, and every `interval`.
    pub fn spawn_zone_loops(
        self: &Arc<Self>,
        cancel: CancellationToken,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        self.zones
            .values()
            .map(|zone| {
                let engine = self.clone();
                let zone = zone.clone();
                let cancel = cancel.clone();
                tokio::spawn(async move { engine.zone_loop(zone, cancel).await })
            })
            .collect()
    }

    async fn zone_loop(self: Arc<Self>, zone: Arc<ZoneRuntime>, cancel: CancellationToken) {
        let sync_cfg = self.config.sync.clone();
        let mut last_full = Instant::now();
        // Zone-level backoff after a failed sync (applier unreachable, zone unreadable),
        // so that due records cannot turn a broken zone into a hot loop.
        let mut failures: u32 = 0;
        let mut not_before = Instant::now();
        let mut next = Some((Scope::Zone, true));
        // A failed full sync is retried (after the zone backoff) before anything else.
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
            if matches!(scope, Scope::Zone) {
                last_full = Instant::now();
                // A full sync plans every name.
                lock(&zone.dirty).clear();
            }
            let full = matches!(scope, Scope::Zone);
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
                    warn!(zone = %zone.cfg.name, error = %e, retry_in = ?backoff, "Sync failed; retrying later.");
                }
            }
        }
    }

    /// One sync of one zone (or of some of its names). `progress` receives phase
    /// updates for the `Sync` RPC.
    pub async fn sync_zone(
        &self,
        zone: &Arc<ZoneRuntime>,
        scope: &Scope,
        fresh: bool,
        progress: Option<&mpsc::Sender<pb::SyncProgress>>,
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
            .sync_zone_locked(zone, scope, fresh, progress)
            .instrument(span)
            .await;
        self.metrics.observe_sync(
            &zone.cfg.name,
            matches!(scope, Scope::Zone),
            started.elapsed(),
            result.is_ok(),
        );
        {
            let mut st = lock(&zone.status);
            st.syncing = false;
            st.full_sync = false;
            st.last_sync = Some(SystemTime::now());
            match &result {
                Ok(_) => {
                    if matches!(scope, Scope::Zone) {
                        st.initial_sync_done = true;
                    }
                    st.last_success = st.last_sync;
                    st.last_error.clear();
                }
                Err(e) => st.last_error = e.to_string(),
            }
        }
        if let (Some(tx), Err(e)) = (progress, &result) {
            let _ = tx
                .send(pb::SyncProgress {
                    zone: zone.cfg.name.to_string(),
                    phase: "failed".into(),
                    error: e.to_string(),
                    ..Default::default()
                })
                .await;
        }
        zone.reschedule.notify_one();
        result
    }

    async fn sync_zone_locked(
        &self,
        zone: &Arc<ZoneRuntime>,
        scope: &Scope,
        fresh: bool,
        progress: Option<&mpsc::Sender<pb::SyncProgress>>,
    ) -> Result<SyncSummary, SyncError> {
        let name = zone.cfg.name.clone();
        {
            let mut st = lock(&zone.status);
            st.syncing = true;
            st.full_sync = matches!(scope, Scope::Zone);
            st.sync_started.get_or_insert_with(SystemTime::now);
        }
        let send = |p: pb::SyncProgress| async move {
            if let Some(tx) = progress {
                let _ = tx.send(p).await;
            }
        };
        send(pb::SyncProgress {
            zone: name.to_string(),
            phase: "planning".into(),
            ..Default::default()
        })
        .await;
        let (mut plan, withheld) = match scope {
            Scope::Zone => {
                let current = self.list_zone(&zone.cfg, fresh, &[]).await?;
                let desired = self.desired();
                let empty = BTreeMap::new();
                let zone_desired = desired.zone(&name).unwrap_or(&empty);
                let view = ZoneView::shared(current, Some(zone_desired));
                let mut plan = plan_zone(&zone.cfg, &self.config.owner_id, zone_desired, &view);
                let withheld = self.record_plan(zone, scope, zone_desired, &view, &mut plan);
                drop(desired);
                *lock(&zone.view) = Some(view);
                (plan, withheld)
            }
            Scope::Names(names) => {
                let known = lock(&zone.view).as_ref().map(|v| v.subset(&name, names));
                let view = match known {
                    Some(v) if !fresh => v,
                    _ => {
                        // The names themselves plus the names of their ownership records.
                        let mut query: BTreeSet<Name> = names.clone();
                        for n in names {
                            for t in RecordType::ALL {
                                if let Some(k) = ownership::owner_record_key(&RecordKey::new(
                                    name.clone(),
                                    n.clone(),
                                    t,
                                )) {
                                    query.insert(k.name);
                                }
                            }
                        }
                        let query: Vec<Name> = query.into_iter().collect();
                        let read = ZoneView::new(self.list_zone(&zone.cfg, true, &query).await?);
                        if let Some(v) = lock(&zone.view).as_mut() {
                            v.replace_names(&name, names, read.subset(&name, names));
                        }
                        read
                    }
                };
                let scoped = self.desired().at_names(&name, names);
                let mut plan = plan_zone(&zone.cfg, &self.config.owner_id, &scoped, &view);
                let withheld = self.record_plan(zone, scope, &scoped, &view, &mut plan);
                (plan, withheld)
            }
        };
        let mut summary = SyncSummary {
            planned: plan.changes.len(),
            ..Default::default()
        };
        self.metrics
            .planned(&name, plan.changes.iter().map(|c| c.change.kind));
        info!(
            changes = plan.changes.len(),
            withheld,
            blocked = plan.blocked.len(),
            converged = plan.converged,
            "Zone planned."
        );
        send(pb::SyncProgress {
            zone: name.to_string(),
            phase: "applying".into(),
            changes_planned: summary.planned as u32,
            ..Default::default()
        })
        .await;
        if !plan.changes.is_empty() {
            self.apply_plan(zone, std::mem::take(&mut plan), &mut summary, progress)
                .await?;
        }
        send(summary.progress(&name, "done")).await;
        Ok(summary)
    }

    /// Reads a zone through the applier (all pages); only `names` when not empty.
    pub async fn list_zone(
        &self,
        zone: &ZoneConfig,
        fresh: bool,
        names: &[Name],
    ) -> Result<Vec<RRSet>, SyncError> {
        let member = self.member_for(zone)?;
        let err = |status: tonic::Status| {
            if is_transport_failure(&status) {
                self.pool.mark_failed(&member, status.message());
            }
            SyncError::List {
                zone: zone.name.clone(),
                status: format!(
                    "{} (applier {}): {}",
                    status.code(),
                    member.addr,
                    status.message()
                ),
            }
        };
        let mut client = member.client();
        let mut stream = client
            .list_records(pb::ListRecordsRequest {
                account: zone.account.clone(),
                zone: zone.name.to_string(),
                fresh,
                names: names.iter().map(ToString::to_string).collect(),
                page_size: 0,
            })
            .await
            .map_err(err)?
            .into_inner();
        let mut out = Vec::new();
        while let Some(page) = stream.message().await.map_err(err)? {
            for (i, r) in page.rrsets.iter().enumerate() {
                match rrset_from_pb(&format!("rrsets[{i}]"), r) {
                    Ok(r) => out.push(r),
                    // A record dnsplane cannot model is left alone, never "fixed".
                    Err(e) => {
                        warn!(zone = %zone.name, error = %e, "Skipping a record the provider holds that dnsplane cannot read.")
                    }
                }
            }
            if page.last {
                break;
            }
        }
        Ok(out)
    }

    /// Folds a fresh plan into the state table and removes from it the changes whose
    /// records are not due: a record waits on its own clock after a conflict or
    /// failure, and an invalid record waits for its desired state to change. Returns
    /// how many changes were withheld.
    fn record_plan(
        &self,
        zone: &ZoneRuntime,
        scope: &Scope,
        desired: &BTreeMap<RecordKey, DesiredRecord>,
        view: &ZoneView,
        plan: &mut ZonePlan,
    ) -> usize {
        let retry = (self.config.sync.retry_min, self.config.sync.retry_max);
        let now = SystemTime::now();
        let mut states = lock(&zone.states);
        let planned: BTreeSet<RecordKey> = plan
            .changes
            .iter()
            .map(|c| c.change.key().clone())
            .collect();
        states
            .retain(|k| !scope.contains(&k.name) || desired.contains_key(k) || planned.contains(k));
        // Records with a state entry that the plan neither changes nor holds back have
        // converged (a converged record has no entry; see StateTable).
        let blocked: BTreeSet<&RecordKey> = plan.blocked.iter().map(|b| &b.key).collect();
        let now_converged: Vec<RecordKey> = states
            .records
            .keys()
            .filter(|k| {
                scope.contains(&k.name)
                    && desired.contains_key(*k)
                    && !planned.contains(*k)
                    && !blocked.contains(k)
            })
            .cloned()
            .collect();
        for key in &now_converged {
            states.converged(key);
        }
        for b in &plan.blocked {
            // Conflicts are re-planned on the record's own clock; policy holds wait for
            // the desired state to change.
            let state = states.records.get(&b.key);
            let is_due = due(state, b.desired.as_ref(), now);
            let next = if b.reason == ConflictReason::Unspecified {
                None
            } else if is_due {
                let attempts = state.map_or(0, |s| s.attempts) + 1;
                if let Some(s) = states.records.get_mut(&b.key) {
                    s.attempts = attempts;
                }
                Some(now + retry_delay(attempts, retry.0, retry.1))
            } else {
                state.and_then(|s| s.next_retry)
            };
            states.blocked(
                &b.key,
                b.desired.clone(),
                b.observed.clone(),
                b.observed_owner.clone(),
                b.reason,
                &b.message,
                next,
            );
        }
        let before = plan.changes.len();
        plan.changes.retain(|c| {
            let key = c.change.key();
            let want = desired.get(key).map(|d| &d.rrset);
            if !due(states.records.get(key), want, now) {
                return false;
            }
            states.pending(
                key,
                want.cloned(),
                view.data.get(key).cloned(),
                &c.change.id,
                &c.reason,
            );
            true
        });
        before - plan.changes.len()
    }

    /// Sends a plan's batches over one `Apply` stream and folds the results in.
    async fn apply_plan(
        &self,
        zone: &Arc<ZoneRuntime>,
        plan: ZonePlan,
        summary: &mut SyncSummary,
        progress: Option<&mpsc::Sender<pb::SyncProgress>>,
    ) -> Result<(), SyncError> {
        let name = zone.cfg.name.clone();
        // Shared with the sender task; results find their change by id through
        // `by_id` (batch, position), so no change is copied.
        let batches = Arc::new(batcher::cut(
            plan.changes,
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
        let total_batches = batches.len();
        let deadline = self.config.sync.batch_deadline;
        let (tx, rx) = mpsc::channel::<pb::ApplyRequest>(4);
        let sender = {
            let zone = zone.clone();
            let account = zone.cfg.account.clone();
            let batches = batches.clone();
            tokio::spawn(async move {
                for (i, batch) in batches.iter().enumerate() {
                    {
                        let mut states = lock(&zone.states);
                        for c in batch {
                            states.in_flight(c.change.key());
                        }
                    }
                    let req = pb::ApplyRequest {
                        batch: Some(pb::Batch {
                            batch_id: format!("{}-{}-{i}", zone.cfg.name, std::process::id()),
                            account: account.clone(),
                            zone: zone.cfg.name.to_string(),
                            changes: batch.iter().map(|c| (&c.change).into()).collect(),
                            deadline: Some(timestamp(SystemTime::now() + deadline)),
                        }),
                    };
                    if tx.send(req).await.is_err() {
                        return;
                    }
                }
            })
        };
        let member = self.member_for(&zone.cfg)?;
        lock(&zone.status).applier = member.addr.clone();
        let stream_err = |status: tonic::Status| {
            if is_transport_failure(&status) {
                // Its batches come back to the records' own clocks and go, on the next
                // sync, to the next applier in rendezvous order.
                self.pool.mark_failed(&member, status.message());
            }
            SyncError::Apply {
                zone: name.clone(),
                status: format!(
                    "{} (applier {}): {}",
                    status.code(),
                    member.addr,
                    status.message()
                ),
            }
        };
        let mut client = member.client();
        let outcome = async {
            let mut responses = client
                .apply(tokio_stream::wrappers::ReceiverStream::new(rx))
                .await
                .map_err(stream_err)?
                .into_inner();
            let mut batches_done = 0;
            while batches_done < total_batches {
                let Some(resp) = responses.message().await.map_err(stream_err)? else {
                    return Err(SyncError::Apply {
                        zone: name.clone(),
                        status: format!(
                            "stream ended after {batches_done} of {total_batches} batches"
                        ),
                    });
                };
                self.fold_results(zone, &batches, &by_id, &resp.results, summary);
                if resp.done {
                    batches_done += 1;
                }
                if let Some(tx) = progress {
                    let _ = tx.send(summary.progress(&name, "applying")).await;
                }
            }
            Ok(())
        }
        .await;
        sender.abort();
        if let Err(e) = &outcome {
            // Whatever did not come back is retried on the record's own clock.
            let retry = (self.config.sync.retry_min, self.config.sync.retry_max);
            let mut states = lock(&zone.states);
            for key in batches.iter().flatten().map(|c| c.change.key()) {
                if let Some(s) = states.records.get_mut(key)
                    && matches!(
                        s.kind,
                        pb::RecordStateKind::InFlight | pb::RecordStateKind::Pending
                    )
                {
                    s.kind = pb::RecordStateKind::Failed;
                    s.last_error = e.to_string();
                    s.reason = format!("no result: {e}");
                    s.next_retry =
                        Some(SystemTime::now() + retry_delay(s.attempts.max(1), retry.0, retry.1));
                }
            }
        }
        outcome
    }

    fn fold_results(
        &self,
        zone: &ZoneRuntime,
        batches: &[Vec<crate::plan::PlannedChange>],
        by_id: &HashMap<String, (usize, usize)>,
        results: &[pb::RecordResult],
        summary: &mut SyncSummary,
    ) {
        let retry = (self.config.sync.retry_min, self.config.sync.retry_max);
        let mut states = lock(&zone.states);
        let mut observed = lock(&zone.view);
        for r in results {
            let Some(change) = by_id.get(&r.change_id).map(|&(b, i)| &batches[b][i].change) else {
                warn!(change_id = %r.change_id, "Result for a change this sync did not send; ignored.");
                continue;
            };
            let key = change.key();
            let outcome = pb::Outcome::try_from(r.outcome).unwrap_or_default();
            self.metrics.outcome(&zone.cfg.name, outcome);
            // The observed state follows the results instead of being read again.
            if let Some(v) = observed.as_mut() {
                match outcome {
                    pb::Outcome::Applied | pb::Outcome::AlreadyApplied => {
                        for op in &change.ops {
                            v.apply_op(op);
                        }
                    }
                    pb::Outcome::Conflict => {
                        let seen = r
                            .observed
                            .as_ref()
                            .and_then(|o| rrset_from_pb("observed", o).ok());
                        if seen.as_ref().is_none_or(|s| &s.key == key) {
                            v.observe(key, seen);
                        }
                    }
                    _ => {}
                }
            }
            summary.done += 1;
            *summary
                .outcomes
                .entry(outcome_name(outcome).to_string())
                .or_insert(0) += 1;
            if outcome == pb::Outcome::RejectedPermanent {
                lock(&zone.status).rejected = true;
            }
            let owner = if r.observed_owner.is_empty() {
                observed
                    .as_ref()
                    .and_then(|v| v.owner_of(key))
                    .map(str::to_string)
            } else {
                Some(r.observed_owner.clone())
            };
            if !matches!(outcome, pb::Outcome::Applied | pb::Outcome::AlreadyApplied) {
                info!(record = %key, outcome = outcome_name(outcome), message = %r.message, "Record not converged.");
            }
            states.result(key, r, owner, retry);
        }
        if results
            .iter()
            .any(|r| pb::Outcome::try_from(r.outcome) == Ok(pb::Outcome::Applied))
        {
            lock(&zone.status).rejected = false;
        }
    }

    fn member_for(&self, zone: &ZoneConfig) -> Result<Arc<Member>, SyncError> {
        self.pool.route(&zone.name).ok_or_else(|| SyncError::List {
            zone: zone.name.clone(),
            status: "no applier is configured or discovered".into(),
        })
    }

    /// Names whose desired state changed and that have not been planned yet (status
    /// shows their records as pending).
    /// RRSets the provider holds in this zone as far as the planner knows: the last
    /// read, kept up to date from every result (ownership records included).
    pub fn observed_count(&self, zone: &ZoneRuntime) -> usize {
        lock(&zone.view).as_ref().map_or(0, ZoneView::len)
    }

    pub fn unplanned(&self, zone: &ZoneRuntime) -> BTreeSet<Name> {
        lock(&zone.dirty).clone()
    }

    /// Names whose desired records changed since they were last planned (what the
    /// zone loop would re-plan next); taking them clears the set.
    pub fn take_dirty(&self, zone: &ZoneRuntime) -> BTreeSet<Name> {
        std::mem::take(&mut *lock(&zone.dirty))
    }

    pub fn zone(&self, name: &str) -> Option<&Arc<ZoneRuntime>> {
        let name = Name::parse(name).ok()?;
        self.zones.get(&name)
    }
}
