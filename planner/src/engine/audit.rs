//! The engine's side of the audit trail ([`crate::audit`]): who asked for each record
//! (its source, and the caller that pushed it), the events of a sync, the ring of
//! recent outcomes and `History`'s reading of the audit file.
use super::{Engine, lock};
use crate::audit::{AuditEvent, AuditFile, AuditFileError, Origin};
use crate::desired::DesiredRecord;
use crate::plan::{Blocked, PlannedChange};
use crate::state::{RecordStateKind, StateTable};
use crate::target::Target;
use dnsplane_common::{ConflictReason, Name, RecordKey};
use std::collections::BTreeMap;

/// Why `History` has no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    #[error(
        "no audit file is configured: set [audit] file in the planner's config to keep a history"
    )]
    NoFile,
    #[error(transparent)]
    File(#[from] AuditFileError),
}

/// What the outcome events of a sync's batches need besides each result.
#[derive(Debug)]
pub(super) struct BatchAudit {
    /// The target's account where its zone has several targets, else empty.
    pub account: String,
    /// Batch `i` is `<prefix>-<i>`.
    pub prefix: String,
    /// The sync's trace id (empty when traces are off).
    pub trace_id: String,
    /// Per batch, per change: who asked for it.
    pub origins: Vec<Vec<Origin>>,
}

/// What an audit event says of `target`'s account: it only where the zone has
/// several targets (an event of a zone's only target reads as before).
pub(super) fn shared_account(target: &Target) -> String {
    if target.is_shared() {
        target.account.to_string()
    } else {
        String::new()
    }
}

impl BatchAudit {
    /// The event of `change`, batch `b`, position `i`.
    pub fn event(&self, kind: &str, c: &PlannedChange, b: usize, i: usize) -> AuditEvent {
        let mut e = AuditEvent::of_change(kind, &c.change, &self.origins[b][i]);
        e.batch_id = format!("{}-{b}", self.prefix);
        e.account.clone_from(&self.account);
        e.trace_id.clone_from(&self.trace_id);
        e
    }
}

impl Engine {
    /// Writes audit events to the file at `file` from now on (set once, at startup).
    pub fn attach_audit_file(&self, file: AuditFile) {
        self.audit.attach(file);
    }

    /// The last `limit` change outcomes (at most [`crate::audit::RING`]), newest first.
    pub fn recent_changes(&self, limit: usize) -> Vec<AuditEvent> {
        self.audit.recent(limit)
    }

    /// Why audit events are not being written to the audit file, while they are not.
    pub fn audit_write_error(&self) -> Option<String> {
        self.audit.write_error()
    }

    /// Remembers that `caller` pushes `source` (`push:<name>`), for the `caller` of
    /// the audit events of its records; returns who was noted before. Only with
    /// `[auth]`: without it every caller is anonymous.
    pub fn note_pusher(&self, source: &str, caller: &str) -> Option<String> {
        self.config.auth.as_ref()?;
        lock(&self.pushers).insert(source.to_string(), caller.to_string())
    }

    /// Puts back who was noted for `source` before a push that was refused.
    pub fn restore_pusher(&self, source: &str, before: Option<String>) {
        if self.config.auth.is_none() {
            return;
        }
        let mut pushers = lock(&self.pushers);
        match before {
            Some(c) => pushers.insert(source.to_string(), c),
            None => pushers.remove(source),
        };
    }

    /// The audit events of `name` (in `zone` when given) that `allowed` lets through,
    /// newest first, from the audit file and its rotated files.
    pub fn history(
        &self,
        name: &Name,
        zone: Option<&Name>,
        allowed: impl Fn(&AuditEvent) -> bool,
        limit: usize,
    ) -> Result<Vec<AuditEvent>, HistoryError> {
        let (name, zone) = (name.to_string(), zone.map(ToString::to_string));
        let wanted = |e: &AuditEvent| {
            e.name == name && zone.as_ref().is_none_or(|z| &e.zone == z) && allowed(e)
        };
        let (events, skipped) = self
            .audit
            .read(wanted, limit)
            .ok_or(HistoryError::NoFile)??;
        if skipped > 0 {
            tracing::warn!(
                target: crate::audit::TARGET,
                skipped,
                "Audit file lines that are not events were skipped (cut short by a crash?)."
            );
        }
        Ok(events)
    }

    /// Who asked for `key`: its source in the desired state, and who pushed that.
    pub(super) fn origin_in(
        &self,
        desired: Option<&DesiredRecord>,
        pushers: &std::collections::HashMap<String, String>,
    ) -> Origin {
        let source = desired.map(|d| d.source.to_string()).unwrap_or_default();
        let caller = pushers.get(&source).cloned().unwrap_or_default();
        Origin { source, caller }
    }

    /// The origins of every change of `batches`, in their order.
    pub(super) fn batch_audit(
        &self,
        zone: &Target,
        prefix: &str,
        batches: &[Vec<PlannedChange>],
    ) -> BatchAudit {
        let index = self
            .runtime(zone)
            .map_or_else(|| self.desired.clone(), |z| z.desired.clone());
        let desired = index
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let pushers = lock(&self.pushers);
        let records = desired.zone(&zone.zone);
        let origins = batches
            .iter()
            .map(|b| {
                b.iter()
                    .map(|c| {
                        let d = records.and_then(|r| r.get(c.change.key()));
                        self.origin_in(d, &pushers)
                    })
                    .collect()
            })
            .collect();
        BatchAudit {
            account: shared_account(zone),
            prefix: prefix.to_string(),
            trace_id: dnsplane_common::telemetry::current_trace_id().unwrap_or_default(),
            origins,
        }
    }

    /// Outcome events for the conflicts a plan found that the state table does not
    /// hold yet (a conflict planned again with the same reason is not a new event).
    /// Called before the plan is folded into `states`.
    pub(super) fn new_conflicts(
        &self,
        target: &Target,
        states: &StateTable,
        desired: &BTreeMap<RecordKey, DesiredRecord>,
        blocked: &[Blocked],
    ) -> Vec<AuditEvent> {
        let pushers = lock(&self.pushers);
        blocked
            .iter()
            .filter(|b| b.reason != ConflictReason::Unspecified)
            .filter(|b| {
                states.get(&b.key).is_none_or(|s| {
                    !(s.kind == RecordStateKind::Conflict
                        && s.reason == b.message
                        && s.observed == b.observed)
                })
            })
            .map(|b| {
                let origin = self.origin_in(desired.get(&b.key), &pushers);
                let mut e = AuditEvent::about(crate::audit::OUTCOME, &b.key, &origin);
                e.account = shared_account(target);
                e.old = crate::audit::render(b.observed.as_ref());
                e.new = crate::audit::render(b.desired.as_ref());
                e.outcome(dnsplane_common::Outcome::Conflict, &b.message)
            })
            .collect()
    }

    /// The trail, for a task that outlives a borrow of the engine (the batch sender).
    pub(super) fn audit_sink(&self) -> std::sync::Arc<crate::audit::AuditTrail> {
        self.audit.clone()
    }

    /// Logs and keeps `events` ([`crate::audit::AuditTrail::record`]).
    pub(super) fn audit(&self, events: &[AuditEvent]) {
        self.audit.record(events);
    }
}
