//! Where the status page's "Recent changes" come from. The page asks a
//! [`RecentChanges`]; the planner hands it one. Until an audit trail answers, the
//! planner gives [`StateTableChanges`]: each record's latest state change, read from
//! the engine's state table (what exists, labelled as such), never invented rows.
use crate::engine::{Engine, RecordStatesQuery};
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

/// Each record's latest state change from the engine's state table (in memory: what
/// happened since the planner started, as far as the table remembers it).
#[derive(Debug, Clone)]
pub struct StateTableChanges(pub Arc<Engine>);

/// Rows of the state table read per page while looking for the newest.
const SCAN_PAGE: usize = 5_000;

impl RecentChanges for StateTableChanges {
    fn recent(&self, limit: usize) -> Recent {
        let mut rows: Vec<ChangeRow> = Vec::new();
        let mut after = None;
        loop {
            let page = self.0.record_states(&RecordStatesQuery {
                zones: Vec::new(),
                states: Vec::new(),
                include_converged: true,
                after,
                page_size: SCAN_PAGE,
            });
            for (key, s) in &page.records {
                let Some(time) = s.updated else { continue };
                let change = match &s.desired {
                    Some(d) => format!("set {}", d.values_vec().join(" ")),
                    None => "remove".to_string(),
                };
                let detail = [s.reason.as_str(), s.last_error.as_str()]
                    .into_iter()
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>()
                    .join("; ");
                let outcome = if detail.is_empty() {
                    s.kind.as_str().to_string()
                } else {
                    format!("{}: {detail}", s.kind.as_str())
                };
                rows.push(ChangeRow {
                    time,
                    zone: key.zone.to_string(),
                    name: key.name.to_string(),
                    rtype: key.rtype.to_string(),
                    change,
                    outcome,
                });
            }
            // Keep only the newest `limit` between pages: memory stays bounded.
            rows.sort_by_key(|r| std::cmp::Reverse(r.time));
            rows.truncate(limit);
            match page.next {
                Some(k) => after = Some(k),
                None => break,
            }
        }
        Recent::Rows {
            source: "no audit trail configured: each record's latest state change, from the planner's state table (in memory, since it started)".into(),
            rows,
        }
    }
}
