//! Where the status page's "Recent changes" come from. The page asks a
//! [`RecentChanges`]; the planner hands it [`AuditTrailChanges`], the audit trail's
//! last outcomes (crate::audit).
use crate::engine::Engine;
use std::sync::Arc;
use std::time::SystemTime;

/// One change as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRow {
    pub time: SystemTime,
    pub zone: String,
    pub name: String,
    pub rtype: String,
    /// What was asked (`set 192.0.2.1`, `remove`, or an audit trail's `old → new`).
    pub change: String,
    /// How it ended (`converged`, `conflict: …`).
    pub outcome: String,
}

/// What the section shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Recent {
    /// Newest first; `source` says where they come from (shown under the heading).
    Rows {
        source: String,
        rows: Vec<ChangeRow>,
    },
    /// No audit trail configured: the page says so.
    NotConfigured,
}

/// The recent changes, newest first, at most `limit`.
pub trait RecentChanges: Send + Sync {
    fn recent(&self, limit: usize) -> Recent;
}

/// Any `Fn(limit) -> Recent` (e.g. a closure over an audit trail).
impl<F: Fn(usize) -> Recent + Send + Sync> RecentChanges for F {
    fn recent(&self, limit: usize) -> Recent {
        self(limit)
    }
}

/// No source of changes at all.
#[derive(Debug, Clone, Copy)]
pub struct NoTrail;

impl RecentChanges for NoTrail {
    fn recent(&self, _limit: usize) -> Recent {
        Recent::NotConfigured
    }
}

/// The audit trail's last outcomes (the engine's in-memory ring, newest first),
/// kept whether or not `[audit] file` is set; the file is what `dnsplane history`
/// reads further back.
#[derive(Debug, Clone)]
pub struct AuditTrailChanges(pub Arc<Engine>);

impl RecentChanges for AuditTrailChanges {
    fn recent(&self, limit: usize) -> Recent {
        let rows = self
            .0
            .recent_changes(limit)
            .into_iter()
            .map(|e| {
                let change = match (e.change.as_str(), e.old.is_empty(), e.new.is_empty()) {
                    ("", ..) => "(not sent)".to_string(),
                    (kind, true, _) => format!("{kind}: {}", e.new),
                    (kind, _, true) => format!("{kind}: {}", e.old),
                    (kind, ..) => format!("{kind}: {} → {}", e.old, e.new),
                };
                let outcome = if e.reason.is_empty() {
                    e.outcome
                } else {
                    format!("{}: {}", e.outcome, e.reason)
                };
                ChangeRow {
                    time: humantime::parse_rfc3339(&e.time).unwrap_or(SystemTime::UNIX_EPOCH),
                    zone: e.zone,
                    name: e.name,
                    rtype: e.rtype,
                    change,
                    outcome,
                }
            })
            .collect();
        Recent::Rows {
            source: "the audit trail's last outcomes since the planner started (`dnsplane history NAME` reads further back from [audit] file)".into(),
            rows,
        }
    }
}
