//! The result of one change, as both services reason about it: an [`Outcome`], and for
//! a conflict its [`ConflictReason`] and what the provider holds.
//!
//! These are the domain types; the generated `pb::Outcome`/`pb::RecordResult` only
//! appear where a message is built or read (the gRPC edges, [`crate::convert`]), so
//! that the batch algorithm, the state table and the metrics never compare wire
//! enums or their names.
use crate::rrset::RRSet;
use std::fmt;
use std::time::Duration;

/// What became of one change. Each has one meaning and one next step
/// (docs/reliability.md, "What dnsplane does when a record conflicts").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// Committed by this attempt.
    Applied,
    /// The provider already holds exactly the target (a "failed" write that committed,
    /// a re-sent batch, another writer that did the same).
    AlreadyApplied,
    /// The provider holds something else; see the reason and the observed RRSet.
    Conflict,
    /// The provider rejects the record itself (a bad value).
    Invalid,
    /// Not attempted (quota or deadline): resend after `retry_after`.
    Deferred,
    /// Transient errors outlived the retry budget.
    Failed,
    /// Credentials, permissions or a missing zone: the account is refused.
    RejectedPermanent,
}

impl Outcome {
    /// Every outcome, for counters that show zeros and for exhaustive tests.
    pub const ALL: [Outcome; 7] = [
        Outcome::Applied,
        Outcome::AlreadyApplied,
        Outcome::Conflict,
        Outcome::Invalid,
        Outcome::Deferred,
        Outcome::Failed,
        Outcome::RejectedPermanent,
    ];

    /// The name users see (`APPLIED`, `CONFLICT`, ...), as in status counters, logs and
    /// the proto enum without its prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Applied => "APPLIED",
            Outcome::AlreadyApplied => "ALREADY_APPLIED",
            Outcome::Conflict => "CONFLICT",
            Outcome::Invalid => "INVALID",
            Outcome::Deferred => "DEFERRED",
            Outcome::Failed => "FAILED",
            Outcome::RejectedPermanent => "REJECTED_PERMANENT",
        }
    }

    /// The lower-case form, for metric labels and span fields (`applied`, ...).
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::AlreadyApplied => "already_applied",
            Outcome::Conflict => "conflict",
            Outcome::Invalid => "invalid",
            Outcome::Deferred => "deferred",
            Outcome::Failed => "failed",
            Outcome::RejectedPermanent => "rejected_permanent",
        }
    }

    /// The provider holds the target: nothing more to do for this change.
    pub fn is_converged(self) -> bool {
        matches!(self, Outcome::Applied | Outcome::AlreadyApplied)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a change conflicts with what the provider holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConflictReason {
    /// Not classified (the provider called it a conflict, the read did not explain it;
    /// or a record held back by policy).
    #[default]
    Unspecified,
    /// A create found an RRSet already there.
    Exists,
    /// An update or delete found no RRSet.
    NotFound,
    /// An update or delete found an RRSet different from `before`.
    Changed,
    /// The RRSet is owned by another owner id.
    OwnedByOther,
    /// The write would put a CNAME beside other data (or the reverse).
    TypeClash,
}

impl ConflictReason {
    /// The lower-case name (`exists`, `owned_by_other`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ConflictReason::Unspecified => "unspecified",
            ConflictReason::Exists => "exists",
            ConflictReason::NotFound => "not_found",
            ConflictReason::Changed => "changed",
            ConflictReason::OwnedByOther => "owned_by_other",
            ConflictReason::TypeClash => "type_clash",
        }
    }
}

impl fmt::Display for ConflictReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of one change, as an applier reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordResult {
    pub change_id: String,
    pub outcome: Outcome,
    /// For [`Outcome::Conflict`].
    pub conflict_reason: ConflictReason,
    /// For [`Outcome::Conflict`]: what the provider holds at the conflicting key.
    pub observed: Option<RRSet>,
    /// For [`Outcome::Conflict`]: the owner id of the observed record, when known.
    /// Appliers leave it empty (they do not know the ownership format); the planner
    /// fills it in.
    pub observed_owner: Option<String>,
    /// Human-readable detail; for INVALID and FAILED, the provider's own text.
    pub message: String,
    /// For DEFERRED and FAILED: when to try again at the earliest.
    pub retry_after: Option<Duration>,
}

impl RecordResult {
    /// A result with only an outcome (and no detail).
    pub fn new(change_id: impl Into<String>, outcome: Outcome) -> RecordResult {
        RecordResult {
            change_id: change_id.into(),
            outcome,
            conflict_reason: ConflictReason::Unspecified,
            observed: None,
            observed_owner: None,
            message: String::new(),
            retry_after: None,
        }
    }

    #[must_use]
    pub fn with_message(mut self, message: impl Into<String>) -> RecordResult {
        self.message = message.into();
        self
    }

    #[must_use]
    pub fn with_retry_after(mut self, retry_after: Option<Duration>) -> RecordResult {
        self.retry_after = retry_after;
        self
    }

    #[must_use]
    pub fn with_conflict(
        mut self,
        reason: ConflictReason,
        observed: Option<RRSet>,
    ) -> RecordResult {
        self.conflict_reason = reason;
        self.observed = observed;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_proto_names_without_prefix() {
        use crate::pb;
        for o in Outcome::ALL {
            let wire = pb::Outcome::from(o);
            assert_eq!(
                wire.as_str_name().strip_prefix("OUTCOME_"),
                Some(o.as_str())
            );
            assert_eq!(o.label(), o.as_str().to_ascii_lowercase());
        }
        assert!(Outcome::Applied.is_converged() && Outcome::AlreadyApplied.is_converged());
        assert!(!Outcome::Conflict.is_converged());
    }
}
