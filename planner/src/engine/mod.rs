//! The sync engine: the desired state, one runtime per zone (its state table, observed
//! view, status and triggers), and the syncs that keep each zone equal to its desired
//! state. Each zone has its own loop and its own lock, so a slow or failing zone never
//! holds up another (no head-of-line blocking between zones).
//!
//! - [`schedule`]: *when* a zone syncs (start, source changes, due retries, the
//!   periodic drift check, becoming the lease's leader) and the zone-level backoff
//!   after a failed sync; nothing while standby;
//! - [`sync`]: *what* one sync does, in order; [`read`]: reading through the applier and
//!   planning (also the `Plan` dry run); [`send`]: the batches over one `Apply` stream,
//!   each only with the lease's permit; [`recheck`]: each batch against the desired
//!   state as it is when the batch leaves; [`approve`]: the mass-change guard in the
//!   sync (with its window), and `Approve`;
//! - [`release`]: `Release` and `Resume`, handing a zone to external-dns and back;
//!   [`adopt`]: `Adopt`, taking unowned records equal to the desired ones;
//!   [`read_zone`]: `ReadZone`, a zone's records and owners for import and export;
//! - [`intake`]: the desired state coming in (sources, pushes and patches, persisted
//!   first) and the sources' readiness;
//! - [`fold`]: results from the applier into the observed view and the state table;
//! - [`audit`]: the audit events of attempts and outcomes, the recent ones, `History`;
//! - [`snapshot`]: the read model that `GetStatus`, `ListRecordStates`, `/status` and the
//!   metrics all use; nothing outside the engine locks its state.
//! - [`health`]: the rules that turn the read model into a level and its reasons.
use crate::config::{PlannerConfig, ZoneConfig};
use crate::desired::{DesiredIndex, DesiredRecord};
use crate::guard::HeldPlan;
use crate::lease::LeaseHandle;
use crate::metrics::PlannerMetrics;
use crate::observed::ZoneView;
use crate::pool::ApplierPool;
use crate::source::SourceError;
use crate::state::{RetryClock, StateTable};
use crate::store::DesiredStore;
use crate::target::{Target, TargetError};
use dnsplane_common::{Name, RecordKey};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

mod adopt;
mod approve;
mod audit;
mod fold;
mod follow;
mod health;
mod holds;
mod intake;
mod live;
#[cfg(test)]
mod live_tests;
mod patch;
mod pushes;
mod read;
#[cfg(test)]
mod read_tests;
mod read_zone;
mod recheck;
mod release;
mod schedule;
mod send;
mod snapshot;
mod sync;
mod takeover;
#[cfg(test)]
mod targets_tests;
mod turns;
mod views;
mod watched;

pub use adopt::{AdoptError, AdoptOutcome};
pub use approve::ApproveError;
pub use audit::HistoryError;
pub use health::{Health, HealthReason, Rule};
pub use live::{LastPut, Put};
pub use patch::{Patch, Patched};
pub use pushes::PushStore;
#[cfg(test)]
pub(crate) use pushes::stored_push;
pub use read_zone::{OwnerKind, ZoneRecord};
pub use release::{ReleaseError, ReleaseOutcome, Released};
pub use snapshot::{
    DiskStatus, Level, RecordStatesPage, RecordStatesQuery, Snapshot, ZoneSnapshot, ZoneStatus,
};
pub use sync::{Phase, Preview, Scope, SyncError, SyncProgress, SyncSummary};
pub use takeover::{NotWritable, Reload};
pub use views::VIEW_LABEL;
pub use watched::Watched;

/// Everything the engine keeps per zone. Private: read through [`Engine::snapshot`]
/// and the other read-model methods.
#[derive(Debug)]
struct ZoneRuntime {
    /// The zone and the account this runtime keeps ([`crate::target`]).
    target: Target,
    /// The zone's config, `account` being this target's.
    cfg: ZoneConfig,
    /// The desired index this target plans from: the engine's main one, or its
    /// view's ([`views`]).
    desired: Arc<RwLock<DesiredIndex>>,
    /// One sync of a zone at a time.
    sync_lock: tokio::sync::Mutex<()>,
    /// The progress of the sync holding `sync_lock`, for `Sync` calls to follow
    /// (follow.rs); `runs` numbers the syncs.
    running: tokio::sync::watch::Sender<Option<follow::Running>>,
    runs: std::sync::atomic::AtomicU64,
    /// Wakes the zone loop for a sync (source change).
    trigger: Notify,
    /// Wakes the zone loop to recompute its deadlines (new retry times).
    reschedule: Notify,
    /// The zone loop's next sync is to be a full, fresh one (set with `reschedule`;
    /// a resumed zone changed hands twice meanwhile).
    wants_full: std::sync::atomic::AtomicBool,
    states: Mutex<StateTable>,
    status: Mutex<ZoneStatus>,
    /// What the provider holds, as last read and then updated from every result, so
    /// that a source change is planned without reading the zone again. `None` until
    /// the first full read.
    /// Shared so that a plan can hold it without holding the lock (status reads it
    /// meanwhile); a fold changes it in place unless a plan still holds it.
    view: Mutex<Option<Arc<ZoneView>>>,
    /// Names whose desired records changed since the last sync of them.
    dirty: Mutex<BTreeSet<Name>>,
    /// The plan the mass-change guard holds, and since when ([`approve`]).
    held: Mutex<Option<(HeldPlan, SystemTime)>>,
    /// The digest of the held plan a person approved; taken by the sync that applies it.
    approved: Mutex<Option<String>>,
    /// The guard's memory: what it let through lately ([`crate::guard::window`]).
    window: Mutex<crate::guard::Window>,
    /// The zone's serial at its last full read (`None`: unknown, or no serial).
    serial: Mutex<Option<u64>>,
    /// The zone's counts as status last computed them, shown while the desired index
    /// or the state table is busy (a large update, the fold of a large plan), so that
    /// status never waits behind them.
    last_counts: Mutex<LastCounts>,
    /// A status read showed `last_counts` because counting the zone was too much
    /// work for it: [`Engine::refresh_counts`] counts it next.
    counts_stale: std::sync::atomic::AtomicBool,
}

impl ZoneRuntime {
    /// The desired state this target plans from (its view's).
    fn desired(&self) -> std::sync::RwLockReadGuard<'_, DesiredIndex> {
        self.desired
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The zone's release to external-dns, while it is released ([`release`]).
    fn released(&self) -> Option<Released> {
        lock(&self.status).released.clone()
    }

    /// Deletes and updates the guard let through within `span`.
    fn guard_window(&self, span: Duration) -> usize {
        let mut w = lock(&self.window);
        w.expire(span, SystemTime::now());
        w.len()
    }

    /// `Err(SyncError::Released)` while the zone is released: nothing may plan it.
    fn not_released(&self) -> Result<(), SyncError> {
        match self.released() {
            None => Ok(()),
            Some(r) => Err(SyncError::Released {
                zone: self.target.clone(),
                owner: r.owner,
            }),
        }
    }
}

/// A zone's counts as last computed for status.
#[derive(Debug, Default, Clone)]
struct LastCounts {
    records: BTreeMap<crate::state::RecordStateKind, u32>,
    desired: usize,
    observed: usize,
    next_retry: Option<SystemTime>,
}

/// The planner's engine.
#[derive(Debug)]
pub struct Engine {
    config: PlannerConfig,
    /// One runtime per target (zone, account), in (zone, account) order: the
    /// targets of one zone are neighbours ([`Engine::targets_of`]).
    zones: BTreeMap<Target, Arc<ZoneRuntime>>,
    /// The merged desired state of every source, maintained incrementally. Shared
    /// with the batch senders, which check each batch against it ([`recheck`]).
    desired: Arc<RwLock<DesiredIndex>>,
    /// Each view's desired index (none without views: [`views`]).
    views: views::ViewIndexes,
    /// The views each source feeds (`[[sources]] views`), by source name.
    source_views: Mutex<std::collections::HashMap<String, Vec<String>>>,
    /// The appliers, and which one each zone goes to.
    pool: Arc<ApplierPool>,
    metrics: PlannerMetrics,
    /// One writer per owner id: batches go out only with its permit.
    lease: LeaseHandle,
    /// Background work (zone loops, `Sync` requests), waited for at shutdown.
    tasks: TaskTracker,
    /// Tells this run's batch ids from another run's (a restarted planner, another
    /// replica): batch ids are `<zone>-<run>-<sync>-<batch>`. The lease identity's run.
    run: String,
    syncs: AtomicU64,
    /// Where accepted pushes are persisted before they are acknowledged.
    store: std::sync::OnceLock<DesiredStore>,
    /// Where accepted pushes are persisted: the state directory, or Redis.
    pushes: std::sync::OnceLock<PushStore>,
    /// A takeover's re-read of the push store, and the leader's address
    /// ([`takeover`]).
    takeover: takeover::Takeover,
    /// Per source: why it is not ready (empty while it is), as status shows it.
    readiness: Mutex<BTreeMap<String, Vec<String>>>,
    /// Per source with parts (a Kubernetes source's kinds): each part's readiness.
    source_parts: Mutex<BTreeMap<String, crate::source::SourceParts>>,
    /// Sources whose first complete load has not come yet ([`Engine::await_first_load`]):
    /// while any is left, no zone syncs, since a source that has not loaded yet only
    /// looks empty and a plan against it would delete its records.
    first_loads: tokio::sync::watch::Sender<BTreeSet<String>>,
    /// The source errors as status last read them (see `ZoneRuntime::last_counts`).
    last_errors: Mutex<Vec<SourceError>>,
    /// The desired state's notices as status last read them.
    last_notices: Mutex<Vec<SourceError>>,
    /// One push (put, stream, patch) at a time: a patch reads the state the push
    /// before it left, and two pushes of one source never persist out of order.
    push_lock: Mutex<()>,
    /// Audit events: log, ring of recent outcomes, file ([`crate::audit`]).
    audit: Arc<crate::audit::AuditTrail>,
    /// Per pushed source (`push:<name>`), the caller of its last accepted push (with
    /// `[auth]` only), for the audit events of its records.
    pushers: Mutex<std::collections::HashMap<String, String>>,
    /// The tokens file and TLS files, for status ([`watched`]).
    watched: std::sync::OnceLock<Watched>,
    /// What each account's driver can hold, as its applier last said ([`holds`]).
    holds: Mutex<std::collections::HashMap<String, crate::client::Holds>>,
    /// Whole-zone reads in progress at once ([`turns`]).
    whole_reads: tokio::sync::Semaphore,
    /// [`turns::WHOLE_READ_STALL`], in milliseconds (tests shorten it).
    whole_read_stall_ms: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `m`'s guard if nobody holds it now: for status, which shows the last values it
/// read rather than wait.
fn try_lock<T>(m: &Mutex<T>) -> Option<std::sync::MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

impl Engine {
    /// Builds the engine; the applier connection is made lazily, so the planner starts
    /// (and answers gRPC) even while no applier is up. `metrics` are the families the
    /// engine records into (see [`PlannerMetrics::register`]); `lease` says when it may
    /// write ([`LeaseHandle::sole_writer`] when nothing else can).
    pub fn new(
        config: PlannerConfig,
        metrics: PlannerMetrics,
        lease: LeaseHandle,
    ) -> Result<Arc<Engine>, crate::pool::PoolError> {
        let pool = ApplierPool::new(config.pool_config())?;
        let desired = Arc::new(RwLock::new(DesiredIndex::new(&views::zones_for(
            &config.zones,
            None,
        ))));
        let targets = config.targets();
        let view_indexes = views::indexes(&config.zones, &targets);
        let zones = targets
            .into_iter()
            .map(|(target, cfg)| {
                let index = match &cfg.view {
                    Some(v) => view_indexes[v.as_str()].index.clone(),
                    None => desired.clone(),
                };
                (
                    target.clone(),
                    Arc::new(ZoneRuntime {
                        target,
                        cfg,
                        desired: index,
                        sync_lock: tokio::sync::Mutex::new(()),
                        running: tokio::sync::watch::Sender::new(None),
                        runs: std::sync::atomic::AtomicU64::new(0),
                        trigger: Notify::new(),
                        reschedule: Notify::new(),
                        wants_full: std::sync::atomic::AtomicBool::new(false),
                        states: Mutex::new(StateTable::default()),
                        status: Mutex::new(ZoneStatus::default()),
                        view: Mutex::new(None),
                        dirty: Mutex::new(BTreeSet::new()),
                        held: Mutex::new(None),
                        approved: Mutex::new(None),
                        window: Mutex::new(crate::guard::Window::default()),
                        serial: Mutex::new(None),
                        last_counts: Mutex::new(LastCounts::default()),
                        counts_stale: std::sync::atomic::AtomicBool::new(false),
                    }),
                )
            })
            .collect();
        let audit = Arc::new(crate::audit::AuditTrail::new(metrics.clone()));
        Ok(Arc::new(Engine {
            config,
            zones,
            desired,
            views: view_indexes,
            source_views: Mutex::new(std::collections::HashMap::new()),
            pool,
            metrics,
            run: lease.identity().run.clone(),
            lease,
            tasks: TaskTracker::new(),
            syncs: AtomicU64::new(0),
            store: std::sync::OnceLock::new(),
            pushes: std::sync::OnceLock::new(),
            takeover: takeover::Takeover::default(),
            readiness: Mutex::new(BTreeMap::new()),
            source_parts: Mutex::new(BTreeMap::new()),
            first_loads: tokio::sync::watch::Sender::new(BTreeSet::new()),
            last_errors: Mutex::new(Vec::new()),
            last_notices: Mutex::new(Vec::new()),
            push_lock: Mutex::new(()),
            audit,
            pushers: Mutex::new(std::collections::HashMap::new()),
            watched: std::sync::OnceLock::new(),
            holds: Mutex::new(std::collections::HashMap::new()),
            whole_reads: tokio::sync::Semaphore::new(turns::WHOLE_READS_AT_ONCE),
            whole_read_stall_ms: AtomicU64::new(
                u64::try_from(turns::WHOLE_READ_STALL.as_millis()).unwrap_or(u64::MAX),
            ),
        }))
    }

    pub fn config(&self) -> &PlannerConfig {
        &self.config
    }

    /// The lease this engine writes under.
    pub fn lease(&self) -> &LeaseHandle {
        &self.lease
    }

    /// The appliers and where each zone goes.
    pub fn pool(&self) -> &Arc<ApplierPool> {
        &self.pool
    }

    /// The configured zones, in order (each once, whatever its targets).
    pub fn zone_names(&self) -> impl Iterator<Item = &Name> {
        let mut last: Option<&Name> = None;
        self.zones.keys().map(|t| &t.zone).filter(move |z| {
            let new = last != Some(*z);
            last = Some(*z);
            new
        })
    }

    /// The configured zone called `name` (any spelling `Name::parse` accepts).
    pub fn zone_name(&self, name: &str) -> Option<&Name> {
        let name = Name::parse(name).ok()?;
        self.targets_of(&name).next().map(|(t, _)| &t.zone)
    }

    /// Every target, in (zone, account) order.
    pub fn targets(&self) -> impl Iterator<Item = &Target> {
        self.zones.keys()
    }

    /// An engine for `config` as the unit tests run one: no metrics registry, the
    /// sole writer.
    #[cfg(test)]
    pub(crate) fn for_tests(config: PlannerConfig) -> Arc<Engine> {
        Engine::new(
            config,
            PlannerMetrics::unregistered(),
            LeaseHandle::sole_writer(),
        )
        .expect("an engine for the test's config")
    }

    /// The targets of `zone` (none when it is not configured).
    fn targets_of<'a>(
        &'a self,
        zone: &Name,
    ) -> impl Iterator<Item = (&'a Target, &'a Arc<ZoneRuntime>)> + 'a {
        let zone = zone.clone();
        self.zones
            .range(Target::new(zone.clone(), "", false)..)
            .take_while(move |(t, _)| t.zone == zone)
    }

    /// The one target a call means by `zone` and `account` (empty: the zone's only
    /// target): refused when the zone has several and the call names none.
    pub fn target(&self, zone: &str, account: &str) -> Result<Target, TargetError> {
        let name = Name::parse(zone).map_err(|_| TargetError::UnknownZone {
            zone: zone.to_string(),
        })?;
        let targets: Vec<&Target> = self.targets_of(&name).map(|(t, _)| t).collect();
        let listed = || targets.iter().map(|t| t.account.to_string()).collect();
        match targets.as_slice() {
            [] => Err(TargetError::UnknownZone {
                zone: zone.to_string(),
            }),
            [only] if account.is_empty() => Ok((*only).clone()),
            _ if account.is_empty() => Err(TargetError::Ambiguous {
                zone: name.clone(),
                targets: listed(),
            }),
            _ => targets
                .iter()
                .find(|t| &*t.account == account)
                .map(|t| (*t).clone())
                .ok_or_else(|| TargetError::UnknownAccount {
                    zone: name.clone(),
                    account: account.to_string(),
                    targets: listed(),
                }),
        }
    }

    /// The targets a call means by `zone` and `account` (empty: every target of
    /// the zone), for calls that may act on several (`Plan`, `Sync`).
    pub fn targets_named(&self, zone: &str, account: &str) -> Result<Vec<Target>, TargetError> {
        if !account.is_empty() {
            return self.target(zone, account).map(|t| vec![t]);
        }
        let unknown = || TargetError::UnknownZone {
            zone: zone.to_string(),
        };
        let name = Name::parse(zone).map_err(|_| unknown())?;
        let all: Vec<Target> = self.targets_of(&name).map(|(t, _)| t.clone()).collect();
        if all.is_empty() {
            return Err(unknown());
        }
        Ok(all)
    }

    /// The runtime of the one target `zone` and `account` name ([`Engine::target`]).
    fn runtime_named(&self, zone: &str, account: &str) -> Result<Arc<ZoneRuntime>, TargetError> {
        let t = self.target(zone, account)?;
        Ok(self.zones[&t].clone())
    }

    fn runtime(&self, target: &Target) -> Option<&Arc<ZoneRuntime>> {
        self.zones.get(target)
    }

    /// The first target of `zone` (its only one, unless it has several): for the
    /// accessors tests and benchmarks use, which name a zone.
    fn zone(&self, name: &Name) -> Option<&Arc<ZoneRuntime>> {
        self.targets_of(name).next().map(|(_, z)| z)
    }

    fn desired(&self) -> std::sync::RwLockReadGuard<'_, DesiredIndex> {
        self.desired
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn retry_clock(&self) -> RetryClock {
        RetryClock {
            min: self.config.sync.retry_min,
            max: self.config.sync.retry_max,
        }
    }

    /// Runs CPU-bound work (an index update, a plan, validating a large push) without
    /// stalling the async runtime: on the multi-thread runtime its worker hands its
    /// other tasks to another thread first (`block_in_place`), so that `/healthz`,
    /// `/metrics` and `GetStatus` keep answering. Elsewhere (a current-thread runtime,
    /// a plain thread) it just runs `f`.
    pub fn cpu<R>(f: impl FnOnce() -> R) -> R {
        match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(f)
            }
            _ => f(),
        }
    }

    /// Starts one loop per zone (see [`schedule`]), the refresh of large zones' status
    /// counts, and the applier pool's health and discovery loop, until `cancel`;
    /// [`Engine::shutdown`] waits for them.
    pub fn start(self: &Arc<Self>, cancel: CancellationToken) {
        self.spawn_takeover(cancel.clone());
        for zone in self.zones.values() {
            let engine = self.clone();
            let zone = zone.clone();
            let cancel = cancel.clone();
            self.tasks
                .spawn(async move { engine.zone_loop(zone, cancel).await });
        }
        let engine = self.clone();
        let stop = cancel.clone();
        self.tasks.spawn(async move {
            // Spaced by four times what the last round took, so that counting a
            // million records never takes more than a fifth of a core.
            let mut pause = snapshot::COUNT_REFRESH;
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(pause) => {}
                }
                let t0 = std::time::Instant::now();
                let counting = engine.clone();
                let _ = tokio::task::spawn_blocking(move || counting.refresh_counts()).await;
                pause = snapshot::COUNT_REFRESH.max(t0.elapsed() * 4);
            }
        });
        // The appliers' circuits, every health round, for the circuit_open rule (and
        // so for the health gauge, which a scrape sets without asking anyone).
        let pool = self.pool.clone();
        let every = self.config.pool.health_interval;
        let stop = cancel.clone();
        let engine = self.clone();
        self.tasks.spawn(async move {
            loop {
                for m in pool.members().into_iter().filter(|m| m.healthy()) {
                    let accounts = crate::client::accounts(&m, Duration::from_secs(1)).await;
                    engine.note_holds(&accounts);
                    m.set_circuits(accounts.iter().map(|a| (&*a.name, &*a.circuit)));
                    m.set_throttled(
                        accounts
                            .iter()
                            .filter_map(|a| Some(&*a.pacing.as_ref()?.reason)),
                    );
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(every) => {}
                }
            }
        });
        let pool = self.pool.spawn(cancel);
        self.tasks.spawn(async move {
            let _ = pool.await;
        });
    }

    /// Runs `f` as background work of the engine (a `Sync` request's syncs), so that
    /// shutdown waits for it.
    pub fn spawn<F>(&self, f: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.tasks.spawn(f);
    }

    /// Waits up to `grace` for the engine's background work once its cancel token is
    /// cancelled; a sync in progress is cut at a batch boundary and its records are
    /// re-planned by the next planner. `false` when time ran out.
    pub async fn shutdown(&self, grace: Duration) -> bool {
        self.tasks.close();
        tokio::time::timeout(grace, self.tasks.wait()).await.is_ok()
    }

    /// A fresh batch id prefix for one sync of `zone` (unique across targets: the
    /// number is the engine's).
    fn batch_prefix(&self, zone: &Name) -> String {
        let n = self.syncs.fetch_add(1, Ordering::Relaxed);
        format!("{zone}-{}-{n}", self.run)
    }

    // --- read accessors for tests and benchmarks -------------------------------------

    /// Names whose desired records changed since they were last planned (what the
    /// zone loop would re-plan next); taking them clears the set.
    pub fn take_dirty(&self, zone: &Name) -> BTreeSet<Name> {
        self.zone(zone)
            .map(|z| std::mem::take(&mut *lock(&z.dirty)))
            .unwrap_or_default()
    }

    /// Names of `zone` whose records' retries are due at `now`.
    pub fn due_names(&self, zone: &Name, now: SystemTime) -> BTreeSet<Name> {
        self.zone(zone)
            .map(|z| lock(&z.states).due_names(now))
            .unwrap_or_default()
    }

    /// When `key` of `zone` last converged, if that was recent.
    pub fn converged_at(&self, zone: &Name, key: &RecordKey) -> Option<SystemTime> {
        lock(&self.zone(zone)?.states).converged_at(key)
    }

    /// Runs `f` on `zone`'s config, desired records and observed view (`None` before
    /// the first read), under the locks that guard them: for benchmarks that time the
    /// plan itself.
    pub fn with_zone<R>(
        &self,
        zone: &Name,
        f: impl FnOnce(&ZoneConfig, &BTreeMap<RecordKey, DesiredRecord>, Option<&ZoneView>) -> R,
    ) -> Option<R> {
        let z = self.zone(zone)?;
        let desired = z.desired();
        let empty = BTreeMap::new();
        let view = lock(&z.view);
        Some(f(
            &z.cfg,
            desired.zone(zone).unwrap_or(&empty),
            view.as_deref(),
        ))
    }
}
