//! The audit trail: one event per record change attempt (a change leaving in a batch)
//! and one per outcome (the applier's result, or a conflict found while planning), so
//! that "who changed `api.example.com`, and when" has an answer.
//!
//! Every event goes three ways, in [`AuditTrail::record`]: a log line under the tracing
//! target `dnsplane::audit` (info level, the fields of [`AuditEvent`]), an in-memory
//! ring of the last outcomes ([`AuditTrail::recent`], for the status page), and, when
//! `[audit] file` is set, one JSON line in an append-only file with rotation
//! ([`file`]), which `dnsplane history` reads back. A write error is never silent: it
//! is logged, counted in `dnsplane_planner_audit_write_errors_total` and shown in
//! status until a later write succeeds.
pub mod file;

use crate::metrics::PlannerMetrics;
use dnsplane_common::{Change, Outcome, RRSet, RecordKey};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::SystemTime;

pub use file::{AuditFile, AuditFileError};

/// The tracing target of every audit event.
pub const TARGET: &str = "dnsplane::audit";

/// How many outcomes [`AuditTrail::recent`] keeps.
pub const RING: usize = 200;

/// `event` of an attempt: a change left in a batch.
pub const ATTEMPT: &str = "attempt";
/// `event` of an outcome: the applier's result, or a conflict found while planning.
pub const OUTCOME: &str = "outcome";

/// One audit event; the field names are stable (docs/observability.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// When, RFC 3339 UTC with milliseconds.
    pub time: String,
    /// [`ATTEMPT`] or [`OUTCOME`].
    pub event: String,
    pub zone: String,
    /// The account of the zone's target: only where the zone has several targets
    /// (absent otherwise, and in files written before targets).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub account: String,
    pub name: String,
    #[serde(rename = "type")]
    pub rtype: String,
    /// The record before (`TTL value | value`), empty when there was none.
    pub old: String,
    /// The record wanted after, empty for a delete.
    pub new: String,
    /// `create`, `update`, `delete`, `adopt`, `release`; empty for a conflict found
    /// while planning (nothing was sent).
    pub change: String,
    /// The outcome (`APPLIED`, `CONFLICT`, ...); empty for an attempt.
    pub outcome: String,
    /// Why: the plan's reason for an attempt, the applier's message for an outcome.
    pub reason: String,
    /// The batch that carried the change; empty when nothing was sent.
    pub batch_id: String,
    /// The OpenTelemetry trace id of the sync that sent it, when traces are on.
    pub trace_id: String,
    /// The desired-state source of the record (`file:0`, `push:ci`); empty for a
    /// delete of a record no source wants any more.
    pub source: String,
    /// The token that pushed the record's source when `[auth]` is on, else empty.
    pub caller: String,
}

/// `TTL value | value`, or empty.
pub fn render(rrset: Option<&RRSet>) -> String {
    rrset.map_or_else(String::new, |r| {
        format!("{} {}", r.ttl, r.values_vec().join(" | "))
    })
}

/// Who asked for a record: its source and the caller that pushed it.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub source: String,
    pub caller: String,
}

impl AuditEvent {
    /// An event about `change` (its record is `ops[0]`).
    pub fn of_change(event: &str, change: &Change, origin: &Origin) -> AuditEvent {
        let op = &change.ops[0];
        let mut e = AuditEvent::about(event, &op.key, origin);
        e.old = render(op.before.as_ref());
        e.new = render(op.after.as_ref());
        e.change = change.kind.as_str().to_string();
        e
    }

    /// An event about `key` with every other field empty.
    pub fn about(event: &str, key: &RecordKey, origin: &Origin) -> AuditEvent {
        AuditEvent {
            time: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            event: event.to_string(),
            zone: key.zone.to_string(),
            account: String::new(),
            name: key.name.to_string(),
            rtype: key.rtype.to_string(),
            old: String::new(),
            new: String::new(),
            change: String::new(),
            outcome: String::new(),
            reason: String::new(),
            batch_id: String::new(),
            trace_id: dnsplane_common::telemetry::current_trace_id().unwrap_or_default(),
            source: origin.source.clone(),
            caller: origin.caller.clone(),
        }
    }

    /// The outcome of this event's change.
    pub fn outcome(mut self, outcome: Outcome, reason: &str) -> AuditEvent {
        self.event = OUTCOME.to_string();
        self.outcome = outcome.as_str().to_string();
        self.reason = reason.to_string();
        self
    }

    fn log(&self) {
        tracing::info!(
            target: TARGET,
            event = %self.event,
            zone = %self.zone,
            name = %self.name,
            record_type = %self.rtype,
            old = %self.old,
            new = %self.new,
            change = %self.change,
            outcome = %self.outcome,
            reason = %self.reason,
            batch_id = %self.batch_id,
            trace_id = %self.trace_id,
            source = %self.source,
            caller = %self.caller,
            "Record change audited."
        );
    }
}

/// Where audit events go: the log, the ring, and the file when one is configured.
#[derive(Debug)]
pub struct AuditTrail {
    /// Set once at startup ([`AuditTrail::attach`]) when `[audit] file` is.
    file: std::sync::OnceLock<Mutex<AuditFile>>,
    ring: Mutex<VecDeque<AuditEvent>>,
    metrics: PlannerMetrics,
    /// The last write error, until a later write succeeds (status shows it).
    failing: Mutex<Option<String>>,
}

impl AuditTrail {
    pub fn new(metrics: PlannerMetrics) -> AuditTrail {
        AuditTrail {
            file: std::sync::OnceLock::new(),
            ring: Mutex::new(VecDeque::with_capacity(RING)),
            metrics,
            failing: Mutex::new(None),
        }
    }

    /// Logs `events`, keeps the outcomes in the ring and appends all to the file.
    pub fn record(&self, events: &[AuditEvent]) {
        if events.is_empty() {
            return;
        }
        for e in events {
            e.log();
        }
        {
            let mut ring = lock(&self.ring);
            for e in events.iter().filter(|e| e.event == OUTCOME) {
                if ring.len() == RING {
                    ring.pop_front();
                }
                ring.push_back(e.clone());
            }
        }
        let Some(file) = self.file.get() else { return };
        let result = lock(file).append(events);
        let mut failing = lock(&self.failing);
        match result {
            Ok(()) => *failing = None,
            Err(e) => {
                self.metrics.audit_write_error();
                tracing::error!(
                    target: TARGET,
                    error = %e,
                    events = events.len(),
                    "Audit events not written to the audit file; they are in this log only."
                );
                *failing = Some(e.to_string());
            }
        }
    }

    /// The last `limit` outcomes, newest first.
    pub fn recent(&self, limit: usize) -> Vec<AuditEvent> {
        lock(&self.ring).iter().rev().take(limit).cloned().collect()
    }

    /// Why the audit file is not being written, while it is not.
    pub fn write_error(&self) -> Option<String> {
        lock(&self.failing).clone()
    }

    /// Writes to `file` from now on; a second file is ignored (the first stays).
    pub fn attach(&self, file: AuditFile) {
        let _ = self.file.set(Mutex::new(file));
    }

    /// The events `wanted` keeps, newest first (and how many lines were not events),
    /// read under the writer's lock so that no rotation runs meanwhile; `None` when no
    /// file is configured.
    pub fn read(
        &self,
        wanted: impl Fn(&AuditEvent) -> bool,
        limit: usize,
    ) -> Option<Result<(Vec<AuditEvent>, usize), AuditFileError>> {
        let file = self.file.get()?;
        Some(lock(file).read_newest_first(wanted, limit))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, i: usize) -> AuditEvent {
        let key = RecordKey::new(
            dnsplane_common::Name::parse("example.com.").unwrap(),
            dnsplane_common::Name::parse(&format!("r{i}.example.com.")).unwrap(),
            dnsplane_common::RecordType::A,
        );
        AuditEvent::about(kind, &key, &Origin::default())
    }

    #[test]
    fn the_ring_keeps_the_last_outcomes_newest_first_and_no_attempts() {
        let trail = AuditTrail::new(PlannerMetrics::register(
            &mut prometheus_client::registry::Registry::default(),
        ));
        for i in 0..RING + 50 {
            trail.record(&[event(ATTEMPT, i), event(OUTCOME, i)]);
        }
        let recent = trail.recent(1000);
        assert_eq!(recent.len(), RING);
        assert!(recent.iter().all(|e| e.event == OUTCOME));
        assert_eq!(recent[0].name, format!("r{}.example.com.", RING + 49));
        assert_eq!(recent[RING - 1].name, "r50.example.com.");
        assert_eq!(trail.recent(3).len(), 3);
    }

    #[test]
    fn a_failed_write_is_counted_and_shown_until_a_write_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("d");
        std::fs::create_dir(&sub).unwrap();
        let path = sub.join("audit.jsonl");
        let mut registry = prometheus_client::registry::Registry::default();
        let trail = AuditTrail::new(PlannerMetrics::register(&mut registry));
        // max_bytes 1: every write rotates, and rotation fails once the directory is gone.
        trail.attach(AuditFile::open(&path, 1, 1).unwrap());
        trail.record(&[event(OUTCOME, 0)]);
        assert_eq!(trail.write_error(), None);
        std::fs::remove_dir_all(&sub).unwrap();
        trail.record(&[event(OUTCOME, 1)]);
        let err = trail.write_error().expect("the failure is shown");
        assert!(err.contains("audit.jsonl"), "{err}");
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("dnsplane_planner_audit_write_errors_total 1"),
            "{text}"
        );
        std::fs::create_dir(&sub).unwrap();
        trail.record(&[event(OUTCOME, 2)]);
        assert_eq!(trail.write_error(), None, "a later write clears it");
    }
}
