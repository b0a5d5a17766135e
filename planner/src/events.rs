//! The planner's events, each in one place: a struct per event whose `emit` writes
//! the log line, bumps its metric and records its span fields, so that the three never
//! disagree (vector's `internal_events` pattern). Log messages: fields first, then a
//! capitalised sentence ending in a period.
use crate::metrics::PlannerMetrics;
use crate::source::SourceError;
use crate::target::Target;
use dnsplane_common::{ChangeKind, Outcome, RecordKey};
use std::time::Duration;
use tracing::{debug, info, warn};

/// A zone (or some of its names) was planned; `changes` are about to be sent.
#[derive(Debug)]
pub struct ZonePlanned<'a, K> {
    pub zone: &'a Target,
    /// The kinds of the changes that will be sent.
    pub kinds: K,
    pub changes: usize,
    /// Changes held back because their record waits on its own clock.
    pub withheld: usize,
    pub blocked: usize,
    pub converged: usize,
}

impl<K: IntoIterator<Item = ChangeKind>> ZonePlanned<'_, K> {
    pub fn emit(self, metrics: &PlannerMetrics) {
        metrics.planned(self.zone, self.kinds);
        info!(
            changes = self.changes,
            withheld = self.withheld,
            blocked = self.blocked,
            converged = self.converged,
            "Zone planned."
        );
    }
}

/// An applier's result for one record was folded into the state table.
#[derive(Debug)]
pub struct ResultFolded<'a> {
    pub zone: &'a Target,
    pub key: &'a RecordKey,
    pub outcome: Outcome,
    pub message: &'a str,
}

impl ResultFolded<'_> {
    pub fn emit(self, metrics: &PlannerMetrics) {
        metrics.outcome(self.zone, self.outcome);
        if self.outcome == Outcome::Deferred {
            // Deferrals come by the thousand when a deadline cuts a big batch: one
            // summary per zone and sync ([`RecordsDeferred`]), each record at debug.
            debug!(record = %self.key, outcome = self.outcome.as_str(), reason = %self.message, "Record deferred.");
        } else if !self.outcome.is_converged() {
            info!(record = %self.key, outcome = self.outcome.as_str(), reason = %self.message, "Record not converged.");
        }
    }
}

/// A sync's batches came back with `count` records DEFERRED (the applier ran out of
/// time or quota for them); they are re-planned on their own clock.
#[derive(Debug)]
pub struct RecordsDeferred<'a> {
    pub zone: &'a Target,
    pub count: u32,
}

impl RecordsDeferred<'_> {
    pub fn emit(self) {
        info!(zone = %self.zone, deferred = self.count, "Records deferred by the applier; they are retried on their own clocks.");
    }
}

/// One sync of a zone ended.
#[derive(Debug)]
pub struct SyncFinished<'a> {
    pub zone: &'a Target,
    /// The whole zone, not a targeted re-plan of some names.
    pub full: bool,
    pub elapsed: Duration,
    pub ok: bool,
}

impl SyncFinished<'_> {
    pub fn emit(self, metrics: &PlannerMetrics) {
        metrics.sync(self.zone, self.full, self.elapsed, self.ok);
    }
}

/// A sync failed; the zone loop waits `retry_in` before the next one.
#[derive(Debug)]
pub struct SyncFailed<'a, E> {
    pub zone: &'a Target,
    pub error: &'a E,
    pub retry_in: Duration,
}

impl<E: std::fmt::Display> SyncFailed<'_, E> {
    pub fn emit(self) {
        warn!(zone = %self.zone, error = %self.error, retry_in = ?self.retry_in, "Sync failed; retrying later.");
    }
}

/// A source delivered a new snapshot of its desired state.
#[derive(Debug)]
pub struct DesiredStateChanged<'a> {
    pub source: &'a str,
    pub records: usize,
    pub errors: usize,
    /// The first snapshot after start.
    pub initial: bool,
}

impl DesiredStateChanged<'_> {
    pub fn emit(self) {
        if self.initial {
            info!(source = %self.source, records = self.records, errors = self.errors, "Desired state loaded.");
        } else {
            info!(source = %self.source, records = self.records, errors = self.errors, "Desired state changed.");
        }
    }
}

/// Desired records a source could not accept (each keeps its last accepted version,
/// if it had one).
#[derive(Debug)]
pub struct DesiredRecordsRejected<'a> {
    pub errors: &'a [SourceError],
}

impl DesiredRecordsRejected<'_> {
    pub fn emit(self) {
        for e in self.errors {
            warn!(location = %e.location, record = %e.record, "Desired record rejected: {}.", e.message);
        }
    }
}

/// The mass-change guard held a plan of a zone (logged once per new digest).
#[derive(Debug)]
pub struct PlanHeld<'a> {
    pub zone: &'a Target,
    pub plan: &'a crate::guard::HeldPlan,
}

impl PlanHeld<'_> {
    pub fn emit(self, metrics: &PlannerMetrics) {
        metrics.plan_held(self.zone);
        warn!(
            zone = %self.zone,
            digest = %self.plan.digest,
            deletes = self.plan.deletes,
            updates = self.plan.updates,
            apex_ns = self.plan.apex_ns,
            owned = self.plan.owned,
            "Plan held by the mass-change guard: {}; nothing of it is deleted or updated until `dnsplane approve {}`.",
            self.plan.reason,
            self.zone.cli()
        );
    }
}

/// A person approved a held plan.
#[derive(Debug)]
pub struct PlanApproved<'a> {
    pub zone: &'a Target,
    pub plan: &'a crate::guard::HeldPlan,
}

impl PlanApproved<'_> {
    pub fn emit(self) {
        info!(
            zone = %self.zone,
            digest = %self.plan.digest,
            deletes = self.plan.deletes,
            updates = self.plan.updates,
            "Held plan approved; applying it if it is unchanged."
        );
    }
}

/// A zone was handed to external-dns (`Release`); persisted, before any change went.
#[derive(Debug)]
pub struct ZoneReleased<'a> {
    pub zone: &'a Target,
    pub owner: &'a str,
    pub records: usize,
}

impl ZoneReleased<'_> {
    pub fn emit(self) {
        info!(
            zone = %self.zone,
            external_dns_owner = self.owner,
            changes = self.records,
            "Zone released to external-dns: its records are being handed over, and it is not planned until resumed."
        );
    }
}

/// A released zone is managed again (`Resume`).
#[derive(Debug)]
pub struct ZoneResumed<'a> {
    pub zone: &'a Target,
    pub owner: &'a str,
}

impl ZoneResumed<'_> {
    pub fn emit(self) {
        info!(
            zone = %self.zone,
            external_dns_owner = self.owner,
            "Released zone resumed: a full sync follows."
        );
    }
}

/// A held plan is no longer held: applied after approval, or no longer wanted.
#[derive(Debug)]
pub struct PlanReleased<'a> {
    pub zone: &'a Target,
    pub digest: &'a str,
    pub approved: bool,
}

impl PlanReleased<'_> {
    pub fn emit(self, metrics: &PlannerMetrics) {
        metrics.plan_released(self.zone, self.approved);
        if self.approved {
            info!(zone = %self.zone, digest = %self.digest, "Approved plan is being applied.");
        } else {
            info!(zone = %self.zone, digest = %self.digest, "Held plan is no longer wanted (the desired state changed); released.");
        }
    }
}

/// This planner became leader (it may write) or standby (it must not), for `reason`:
/// `acquired`, `lost` (another planner holds the lease), `expired` (no renewal
/// before the leader's window closed), `released` (shutdown).
#[derive(Debug)]
pub struct LeaseChanged<'a> {
    /// `redis`, `file`.
    pub backend: &'a str,
    /// This planner as a holder (`host/pid/run`).
    pub identity: &'a str,
    pub leader: bool,
    /// The lease's epoch (new with every acquisition).
    pub epoch: u64,
    pub reason: &'static str,
}

impl LeaseChanged<'_> {
    pub fn emit(self, metrics: &PlannerMetrics) {
        metrics.lease_changed(self.leader, self.reason);
        if self.leader {
            info!(backend = %self.backend, identity = %self.identity, epoch = self.epoch, "Lease acquired; this planner is the leader and writes.");
        } else {
            warn!(backend = %self.backend, identity = %self.identity, epoch = self.epoch, reason = self.reason, "Lease given up; this planner is standby and sends nothing.");
        }
    }
}

/// The drift watch saw a zone's serial move since its last full read (someone, maybe
/// this planner, wrote to it): the zone is read and planned again.
#[derive(Debug)]
pub struct SerialMoved<'a> {
    pub zone: &'a Target,
    pub known: u64,
    pub now: u64,
}

impl SerialMoved<'_> {
    pub fn emit(self) {
        tracing::debug!(zone = %self.zone, known = self.known, now = self.now, "Zone serial moved; reading it again.");
    }
}

/// An applier refused this planner's batch or claim: another planner writes for the
/// owner. It sends nothing until it takes over again ([`LeaseTookOver`]).
#[derive(Debug)]
pub struct LeaseFenced<'a> {
    pub identity: &'a str,
    /// The epoch this planner was refused under.
    pub epoch: u64,
    /// The writer the appliers serve instead, its epoch, whether both share a lease
    /// backend, and the applier's words.
    pub by_holder: &'a str,
    pub by_epoch: u64,
    pub shared_backend: bool,
    pub reason: &'a str,
}

impl LeaseFenced<'_> {
    pub fn emit(self, metrics: Option<&PlannerMetrics>) {
        if let Some(m) = metrics {
            m.fenced(true);
        }
        warn!(identity = %self.identity, epoch = self.epoch, fenced_by.holder = %self.by_holder, fenced_by.epoch = self.by_epoch, shared_backend = self.shared_backend, reason = %self.reason, "Fenced by another planner at the appliers; sending nothing until it has been silent for the lease ttl.");
    }
}

/// A fenced planner took over at the appliers again (the other writer was silent for
/// the lease ttl), under a new epoch from its backend.
#[derive(Debug)]
pub struct LeaseTookOver<'a> {
    pub identity: &'a str,
    pub epoch: u64,
    /// The writer that had fenced it.
    pub from: &'a str,
}

impl LeaseTookOver<'_> {
    pub fn emit(self, metrics: &PlannerMetrics) {
        metrics.fenced(false);
        info!(identity = %self.identity, epoch = self.epoch, from = %self.from, "Took over at the appliers: the other writer has been silent for the lease ttl; writing again under a new epoch.");
    }
}

/// A standby saw a (new) holder of the lease.
#[derive(Debug)]
pub struct LeaseHeldElsewhere<'a> {
    pub backend: &'a str,
    pub holder: &'a str,
    pub epoch: u64,
}

impl LeaseHeldElsewhere<'_> {
    pub fn emit(self) {
        info!(backend = %self.backend, holder = %self.holder, epoch = self.epoch, "Lease held by another planner; standing by.");
    }
}

/// The lease backend could not answer (logged when the error first appears or
/// changes, not on every retry).
#[derive(Debug)]
pub struct LeaseBackendFailed<'a, E> {
    pub backend: &'a str,
    pub leader: bool,
    pub error: &'a E,
}

impl<E: std::fmt::Display> LeaseBackendFailed<'_, E> {
    pub fn emit(self) {
        if self.leader {
            warn!(backend = %self.backend, error = %self.error, "Lease renewal failed; still leader until the lease window closes.");
        } else {
            warn!(backend = %self.backend, error = %self.error, "Lease backend unreachable; standing by.");
        }
    }
}

/// A source became not ready (a path gone, unreadable or emptied: it keeps its last
/// accepted records) or ready again.
#[derive(Debug)]
pub struct SourceReadinessChanged<'a> {
    pub source: &'a str,
    /// Why it is not ready; empty: ready again.
    pub unready: &'a [String],
}

impl SourceReadinessChanged<'_> {
    pub fn emit(self) {
        if self.unready.is_empty() {
            info!(source = %self.source, "Source ready again.");
        } else {
            warn!(source = %self.source, reason = %self.unready.join("; "), "Source not ready; keeping its last accepted records, deleting nothing.");
        }
    }
}

/// A call of the planner's gRPC API ended. Counted always; logged at info when it
/// wrote or approved something (or tried to) or was PERMISSION_DENIED.
#[derive(Debug)]
pub struct ApiCall<'a> {
    pub caller: &'a str,
    /// The method's name (`PutDesired`).
    pub call: &'a str,
    /// The call writes or approves (the `write` and `approve` roles' calls).
    pub writes: bool,
    pub code: tonic::Code,
    /// The zones it named or its records are in (empty: none named).
    pub zones: &'a [String],
    /// The records it carried (pushes and patches).
    pub records: Option<usize>,
    /// Why, when it was refused.
    pub message: &'a str,
}

impl ApiCall<'_> {
    pub fn emit(self, metrics: &PlannerMetrics) {
        metrics.api_call(self.caller, self.call, self.code);
        // Refusals of known callers at info; calls without a known token only at
        // debug (counted all the same), so that whoever reaches the port cannot fill
        // the log.
        if self.code == tonic::Code::Unauthenticated {
            debug!(
                call = self.call,
                reason = self.message,
                "API call refused: no known token."
            );
        } else if self.writes || self.code == tonic::Code::PermissionDenied {
            info!(
                caller = self.caller,
                call = self.call,
                code = ?self.code,
                zones = ?self.zones,
                records = self.records,
                reason = self.message,
                "API call."
            );
        }
    }
}

/// The tokens file was looked at: reloaded (`Ok(Some(tokens))`), unchanged
/// (`Ok(None)`, not logged), or refused (the tokens in force stay).
#[derive(Debug)]
pub struct TokensReloaded<'a> {
    pub file: &'a std::path::Path,
    pub result: Result<Option<usize>, TokensRefused>,
}

/// Why the tokens file was not taken.
#[derive(Debug)]
pub struct TokensRefused {
    /// Names the file and line.
    pub error: String,
    /// The file is gone: every token is revoked, not kept.
    pub deleted: bool,
}

impl TokensReloaded<'_> {
    pub fn emit(self) {
        match self.result {
            Ok(None) => {}
            Ok(Some(n)) => {
                info!(file = %self.file.display(), tokens = n, "Tokens file reloaded.")
            }
            Err(TokensRefused {
                error,
                deleted: true,
            }) => tracing::error!(
                error = %error,
                "Tokens file deleted; every token is revoked until it is back."
            ),
            Err(TokensRefused { error, .. }) => tracing::error!(
                error = %error,
                "Tokens file not reloaded; the tokens read before stay in force."
            ),
        }
    }
}

/// Changes of a sync were dropped just before their batch left: the desired state no
/// longer asks for them (a push withdrawn meanwhile); their names are planned again.
#[derive(Debug)]
pub struct ChangesWithdrawn<'a> {
    pub zone: &'a Target,
    pub count: usize,
}

impl ChangesWithdrawn<'_> {
    pub fn emit(self) {
        info!(zone = %self.zone, withdrawn = self.count, "Changes no longer desired were dropped before sending; their names are planned again.");
    }
}
