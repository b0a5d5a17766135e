//! The per-record state machine: what the planner knows about every record it manages,
//! so that no record that is not converged is ever silent, and when each may be
//! written again.
//!
//! The policy is one fold over three kinds of event, each a method of [`StateTable`]:
//! - a fresh plan ([`StateTable::fold_plan`]): records the plan no longer touches have
//!   converged, records it holds back are conflicts on their own clock, and changes
//!   whose record is not due are withheld (a record waits on its clock after a
//!   conflict or failure; an invalid one waits for its desired state to change);
//! - a result from an applier ([`StateTable::fold_result`]): converged, or a state with
//!   the next retry time its outcome calls for;
//! - a lost stream ([`StateTable::fold_lost`]): whatever was sent and did not come
//!   back is FAILED and retried on its own clock.
//!
//! [`StateTable::withheld`] answers the plan question without folding, for dry runs.
//! Nothing here does I/O or reads a clock: `now` is passed in, so the policy is unit
//! tested like the plan.
use dnsplane_common::{ConflictReason, RRSet};
use std::fmt;
use std::time::{Duration, SystemTime};

/// Slack when deciding which retries are due, so a timer that fires a hair early does
/// not miss the record it woke for.
pub const RETRY_SLACK: Duration = Duration::from_millis(20);

/// Where a record stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordStateKind {
    /// Planned, not sent yet (or desired and not planned yet).
    Pending,
    /// Sent to an applier, no result yet.
    InFlight,
    /// The provider holds the desired record, owned by us.
    Converged,
    /// Held back at plan time or refused by the provider's precondition.
    Conflict,
    /// The provider refuses the value; parked until the desired state changes.
    Invalid,
    /// Transient failures outlived the applier's budget.
    Failed,
    /// Not attempted (quota, deadline); resent after the applier's hint.
    Deferred,
    /// The provider account refuses writes (credentials, missing zone).
    Rejected,
    /// Part of a plan the mass-change guard holds until it is approved
    /// ([`crate::guard`]); re-planned on every sync of its name.
    Held,
    /// The target's account cannot hold the record (a routing-policy set or a
    /// provider-specific property its driver does not write): left to the zone's
    /// other targets, not sent; planned again when the desired record changes.
    NotForTarget,
}

impl RecordStateKind {
    /// Every state, for gauges that show zeros.
    pub const ALL: [RecordStateKind; 10] = [
        RecordStateKind::Pending,
        RecordStateKind::InFlight,
        RecordStateKind::Converged,
        RecordStateKind::Conflict,
        RecordStateKind::Invalid,
        RecordStateKind::Failed,
        RecordStateKind::Deferred,
        RecordStateKind::Rejected,
        RecordStateKind::Held,
        RecordStateKind::NotForTarget,
    ];

    /// User-facing name (`converged`, `conflict`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            RecordStateKind::Pending => "pending",
            RecordStateKind::InFlight => "in_flight",
            RecordStateKind::Converged => "converged",
            RecordStateKind::Conflict => "conflict",
            RecordStateKind::Invalid => "invalid",
            RecordStateKind::Failed => "failed",
            RecordStateKind::Deferred => "deferred",
            RecordStateKind::Rejected => "rejected",
            RecordStateKind::Held => "held",
            RecordStateKind::NotForTarget => "not_for_target",
        }
    }
}

impl fmt::Display for RecordStateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One record's state.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordState {
    pub kind: RecordStateKind,
    pub desired: Option<RRSet>,
    pub observed: Option<RRSet>,
    pub observed_owner: Option<String>,
    pub conflict_reason: ConflictReason,
    pub reason: String,
    /// Consecutive attempts that did not converge (reset on convergence).
    pub attempts: u32,
    pub last_error: String,
    pub next_retry: Option<SystemTime>,
    pub last_change_id: String,
    /// When the state last changed; `None` for a converged record whose convergence
    /// is too old to be remembered.
    pub updated: Option<SystemTime>,
}

impl RecordState {
    /// A state of `kind`, as of `now`, holding nothing else yet.
    pub fn new(kind: RecordStateKind, now: SystemTime) -> Self {
        RecordState {
            kind,
            desired: None,
            observed: None,
            observed_owner: None,
            conflict_reason: ConflictReason::Unspecified,
            reason: String::new(),
            attempts: 0,
            last_error: String::new(),
            next_retry: None,
            last_change_id: String::new(),
            updated: Some(now),
        }
    }
}

/// The per-record backoff: `min · 2^(attempts-1)`, at most `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryClock {
    pub min: Duration,
    pub max: Duration,
}

impl RetryClock {
    pub fn delay(&self, attempts: u32) -> Duration {
        retry_delay(attempts, self.min, self.max)
    }
}

/// Capped exponential backoff per record: `min · 2^(attempts-1)`, at most `max`.
pub fn retry_delay(attempts: u32, min: Duration, max: Duration) -> Duration {
    let factor = 1u32
        .checked_shl(attempts.saturating_sub(1).min(20))
        .unwrap_or(u32::MAX);
    min.saturating_mul(factor).min(max)
}

/// Whether a record may be written now: not when it waits on its own retry clock, nor
/// when it is invalid and its desired state has not changed since.
pub fn due(state: Option<&RecordState>, desired: Option<&RRSet>, now: SystemTime) -> bool {
    use RecordStateKind as K;
    let Some(s) = state else { return true };
    let desired_changed = s.desired.as_ref() != desired;
    match s.kind {
        K::Invalid | K::NotForTarget => desired_changed,
        K::Conflict | K::Failed | K::Deferred | K::Rejected => {
            desired_changed || s.next_retry.is_none_or(|t| t <= now + RETRY_SLACK)
        }
        _ => true,
    }
}

mod table;
pub use table::{DesiredLookup, StateTable};

#[cfg(test)]
mod tests;
