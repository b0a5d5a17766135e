//! One sync of one zone (or of some of its names): read through the applier, plan,
//! fold the plan into the state table, send the batches over one `Apply` stream and
//! fold every result back ([`super::fold`]).
//!
//! Nothing is sent without the lease ([`crate::lease`]): a sync starts only on the
//! leader, and each batch is sent only with a permit, checked just before it goes out;
//! its deadline is cut to the leader's window. A planner that loses the lease mid-sync
//! stops at the next batch; what it did not send comes back on the records' clocks.
//!
//! Here: what a sync is (its scope, errors, progress) and the run of one sync. How it
//! reads and plans is in [`super::read`] (with the `Plan` RPC's dry run, which stops
//! before folding or sending); how it sends is in [`super::send`].
use super::{Engine, ZoneRuntime, lock};
use crate::client::{self, ApplierCallError};
use crate::events;
use crate::plan::ZonePlan;
use crate::pool::Member;
use crate::state::RecordState;
use crate::target::Target;
use dnsplane_common::{Name, Outcome, RecordKey};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

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
        zone: Target,
        #[source]
        source: ApplierCallError,
    },
    #[error("applier stream for zone {zone}: {source}")]
    Apply {
        zone: Target,
        #[source]
        source: ApplierCallError,
    },
    #[error("applier stream for zone {zone}: stream ended after {done} of {total} batches")]
    StreamEnded {
        zone: Target,
        done: usize,
        total: usize,
    },
    #[error("reading zone {zone} through the applier: no applier is configured or discovered")]
    NoApplier { zone: Target },
    #[error("zone {zone} is not configured")]
    UnknownZone { zone: Target },
    #[error(
        "zone {zone} is released to external-dns owner {owner:?}: nothing is planned or written until `dnsplane resume {}`", zone.cli()
    )]
    Released { zone: Target, owner: String },
    #[error(
        "zone {zone}: [safety] mode = \"observe\": plans are reported, never written; set mode = \"automatic\" or \"approve\" to write"
    )]
    Observing { zone: Target },
    #[error("zone {zone}: this planner is standby ({held}); only the leader writes")]
    NotLeader { zone: Target, held: String },
    #[error(
        "zone {zone}: the lease was lost after {sent} of {total} batches; the rest was not sent"
    )]
    LeaseLost {
        zone: Target,
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
    /// The zone is released to external-dns: not a fault, nothing ran.
    pub fn is_released(&self) -> bool {
        matches!(self, SyncError::Released { .. })
    }

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
    pub zone: Target,
    pub phase: Phase,
    pub summary: SyncSummary,
    pub error: String,
}

impl SyncProgress {
    pub(super) fn new(zone: &Target, phase: Phase, summary: &SyncSummary) -> Self {
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

pub(super) type Progress<'a> = Option<&'a mpsc::Sender<SyncProgress>>;

pub(super) async fn send(progress: Progress<'_>, p: SyncProgress) {
    if let Some(tx) = progress {
        let _ = tx.send(p).await;
    }
}

/// What a plan's batches say about the zone's serial the planner knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SerialTrail {
    /// Every batch was vouched for and followed on from the known serial, which now
    /// stands after the last one: nobody else wrote meanwhile.
    Followed,
    /// Some batch came without serials (a driver that keeps no count, a cache read
    /// again): the serial must be asked.
    Unknown,
    /// A batch started from another serial than the known one: someone else wrote. The
    /// known serial is left as it was, so the drift watch reads the zone again.
    Broken,
}

impl SerialTrail {
    /// Folds one batch's vouched serials into the trail and the known serial.
    pub(super) fn follow(
        self,
        known: &mut Option<u64>,
        serials: Option<(u64, u64)>,
    ) -> SerialTrail {
        match (self, serials) {
            (SerialTrail::Broken, _) => SerialTrail::Broken,
            (_, Some((before, after))) if *known == Some(before) => {
                *known = Some(after);
                self
            }
            (_, Some(_)) if known.is_some() => SerialTrail::Broken,
            _ => SerialTrail::Unknown,
        }
    }
}

impl Engine {
    /// One sync of `zone`, a target (or of some of its names). `progress` receives
    /// phase updates for the `Sync` RPC.
    pub async fn sync(
        &self,
        zone: &Target,
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
    pub(super) fn leading(&self, zone: &Target) -> Result<(), SyncError> {
        if let Some(p) = self.lease.permit() {
            if self.reloaded(p.epoch) {
                return Ok(());
            }
            return Err(SyncError::NotLeader {
                zone: zone.clone(),
                held: "it holds the lease but has not read the pushed desired state since it took over".into(),
            });
        }
        let st = self.lease.status();
        Err(SyncError::NotLeader {
            zone: zone.clone(),
            held: match st.holder {
                Some(h) if st.role == crate::lease::Role::Fenced => {
                    format!("this planner is fenced: the appliers serve {h}")
                }
                Some(h) => format!("the lease is held by {h}"),
                None => format!("the {} lease is not held", st.backend),
            },
        })
    }

    /// [`Engine::sync_zone`] with the zone's lock held.
    pub(super) async fn sync_zone_locked(
        &self,
        zone: &Arc<ZoneRuntime>,
        scope: &Scope,
        fresh: bool,
        progress: Progress<'_>,
    ) -> Result<SyncSummary, SyncError> {
        if let Err(e) = zone.not_released() {
            let mut p = SyncProgress::new(&zone.target, Phase::Failed, &SyncSummary::default());
            p.error = e.to_string();
            send(progress, p).await;
            return Err(e);
        }
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
            let mut p = SyncProgress::new(&zone.target, Phase::Failed, &SyncSummary::default());
            p.error = e.to_string();
            send(progress, p).await;
            return result;
        }
        events::SyncFinished {
            zone: &zone.target,
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
            let mut p = SyncProgress::new(&zone.target, Phase::Failed, &SyncSummary::default());
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
        let target = zone.target.clone();
        let name = &target.zone;
        self.leading(&target)?;
        {
            let mut st = lock(&zone.status);
            st.syncing = true;
            st.full_sync = scope.is_zone();
            st.sync_started.get_or_insert_with(SystemTime::now);
        }
        let none = SyncSummary::default();
        send(progress, SyncProgress::new(&target, Phase::Planning, &none)).await;
        let (mut plan, withheld) = self
            .plan_scope(zone, scope, fresh, |desired, view, plan| {
                let now = SystemTime::now();
                let mut states = lock(&zone.states);
                let conflicts = self.new_conflicts(&target, &states, desired, &plan.blocked);
                let withheld = states.fold_plan(
                    |n| scope.contains(n),
                    desired,
                    |k| view.get(k),
                    plan,
                    now,
                    self.retry_clock(),
                );
                drop(states);
                // What this target's account cannot hold goes to the other targets only.
                self.keep_holdable(zone, plan, now);
                // The names this plan covers wait for a plan no more, whoever started
                // the sync (the zone's loop or a `Sync` call). Only now, with their
                // states folded in: until then status counts them pending, not
                // converged.
                match scope {
                    Scope::Zone => lock(&zone.dirty).clear(),
                    Scope::Names(names) => {
                        let mut dirty = lock(&zone.dirty);
                        for n in names {
                            dirty.remove(n);
                        }
                    }
                }
                let full_view = scope.is_zone().then_some(view);
                self.guard_plan(zone, scope, full_view, plan);
                (withheld, conflicts)
            })
            .await?;
        let (withheld, conflicts) = withheld;
        self.audit(&conflicts);
        let mut summary = SyncSummary {
            planned: plan.changes.len(),
            ..Default::default()
        };
        events::ZonePlanned {
            zone: &target,
            kinds: plan.changes.iter().map(|c| c.change.kind),
            changes: plan.changes.len(),
            withheld,
            blocked: plan.blocked.len(),
            converged: plan.converged,
        }
        .emit(&self.metrics);
        send(
            progress,
            SyncProgress::new(&target, Phase::Applying, &summary),
        )
        .await;
        if !plan.changes.is_empty() {
            let trail = self
                .apply_plan(
                    zone,
                    std::mem::take(&mut plan.changes),
                    &mut summary,
                    progress,
                )
                .await?;
            // Our own writes moved the serial. Where the applier vouched for every
            // batch, the known serial already follows them. Else take the serial now as
            // known, so the drift watch does not read the whole zone again for them (an
            // out-of-band write in the instant between our batch and this read is left
            // to the periodic fresh read).
            if trail == SerialTrail::Unknown && lock(&zone.serial).is_some() {
                let now = match self.member_for(&target) {
                    Ok(m) => client::serial(&m, &zone.cfg.account, name).await.ok(),
                    Err(_) => None,
                };
                if let Some(s) = now.filter(|s| *s != 0) {
                    *lock(&zone.serial) = Some(s);
                }
            }
        }
        self.rest_view(zone);
        send(progress, SyncProgress::new(&target, Phase::Done, &summary)).await;
        Ok(summary)
    }

    /// The view a sync leaves, made small: its spare room given back, and what it
    /// holds alike with another target of the zone held once (issue 33: three
    /// providers for one zone must not cost three times the memory). Only a view no
    /// plan holds: copying a shared one would cost more than it saves.
    fn rest_view(&self, zone: &ZoneRuntime) {
        // Taken before this target's lock, one lock at a time.
        let sibling = self.sibling_view(zone);
        if let Some(v) = lock(&zone.view).as_mut().and_then(Arc::get_mut) {
            v.compact_at_rest();
            if let Some(s) = sibling {
                v.share_with(&s);
            }
        }
    }

    /// The view of another target of `zone`'s zone, if one was read.
    pub(super) fn sibling_view(
        &self,
        zone: &ZoneRuntime,
    ) -> Option<Arc<crate::observed::ZoneView>> {
        self.targets_of(&zone.target.zone)
            .filter(|(t, _)| **t != zone.target)
            .find_map(|(_, z)| lock(&z.view).clone())
    }

    pub(super) fn zone_or_err(&self, zone: &Target) -> Result<Arc<ZoneRuntime>, SyncError> {
        self.runtime(zone)
            .cloned()
            .ok_or_else(|| SyncError::UnknownZone { zone: zone.clone() })
    }

    pub(super) fn member_for(&self, zone: &Target) -> Result<Arc<Member>, SyncError> {
        self.pool
            .route(&zone.zone)
            .ok_or_else(|| SyncError::NoApplier { zone: zone.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::SerialTrail::{self, Broken, Followed, Unknown};

    fn run(known: Option<u64>, batches: &[Option<(u64, u64)>]) -> (SerialTrail, Option<u64>) {
        let mut known = known;
        let trail = batches
            .iter()
            .fold(Followed, |t, b| t.follow(&mut known, *b));
        (trail, known)
    }

    #[test]
    fn vouched_batches_move_the_known_serial_along() {
        assert_eq!(
            run(Some(7), &[Some((7, 8)), Some((8, 10))]),
            (Followed, Some(10))
        );
        // No batch: nothing moved.
        assert_eq!(run(Some(7), &[]), (Followed, Some(7)));
    }

    #[test]
    fn a_batch_from_another_serial_leaves_the_known_one_for_the_drift_watch() {
        // Someone wrote between the read (serial 7) and the first batch (from 9).
        assert_eq!(run(Some(7), &[Some((9, 10))]), (Broken, Some(7)));
        // ... or between two batches: the known serial stays at the last vouched one.
        assert_eq!(
            run(Some(7), &[Some((7, 8)), Some((9, 10)), Some((10, 11))]),
            (Broken, Some(8))
        );
    }

    #[test]
    fn an_unvouched_batch_makes_the_serial_unknown() {
        assert_eq!(run(Some(7), &[Some((7, 8)), None]), (Unknown, Some(8)));
        // A planner that knows no serial cannot follow one.
        assert_eq!(run(None, &[Some((7, 8))]), (Unknown, None));
    }
}
