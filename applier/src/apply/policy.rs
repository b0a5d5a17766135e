//! The policy half of the batch algorithm, kept apart from the work so that it can be
//! tested exhaustively: what a failed submission leads to ([`step`]), and the bound
//! on what bisection can cost ([`bisection_bound`]).
use crate::provider::ErrorClass;

/// What the algorithm does with a failed submission: the policy half of the batch
/// algorithm, kept apart from the work so that it can be tested exhaustively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Permanent, or transient past the retry budget (the retries happen inside the
    /// call): every change of the submission gets REJECTED_PERMANENT or FAILED.
    GiveUp,
    /// A single change refused as invalid: INVALID, with the provider's text.
    Invalid,
    /// Split in halves and submit each: isolates invalid values, and conflicts that a
    /// read cannot explain.
    Bisect,
    /// Read the names back; what is at target is ALREADY_APPLIED, what conflicts is
    /// CONFLICT with the observed RRSet; resubmit the rest once (for a conflict the
    /// read explains nothing of: bisect instead).
    ReadBackAndResubmit,
    /// Ambiguous again after the resubmission: read back, settle what the read shows,
    /// FAILED for the rest (the planner retries it on its own clock).
    ReadBackAndFail,
    /// A single change in conflict: read back and report CONFLICT with what is there.
    ReadBackAndReport,
}

/// The policy: the next step for an answer of `class` to a submission in `mode`
/// (`single`: of one change).
pub(crate) fn step(class: ErrorClass, mode: Mode, single: bool) -> Step {
    match class {
        ErrorClass::Transient | ErrorClass::Permanent => Step::GiveUp,
        ErrorClass::Invalid if single => Step::Invalid,
        ErrorClass::Invalid => Step::Bisect,
        ErrorClass::Conflict | ErrorClass::Ambiguous if mode == Mode::First => {
            Step::ReadBackAndResubmit
        }
        ErrorClass::Ambiguous => Step::ReadBackAndFail,
        ErrorClass::Conflict if single => Step::ReadBackAndReport,
        ErrorClass::Conflict => Step::Bisect,
    }
}

/// The most provider calls bisection needs to isolate `k` bad changes among `n` (one
/// provider call's worth; the first, failing, submission included):
/// `4k − 1 + 2k·(⌈log₂ n⌉ − 1 − ⌊log₂ k⌋)`, at most `2n − 1`; about `2k·log₂(n/k)`.
///
/// Why: the submissions form a binary tree of depth `d = ⌈log₂ n⌉`. A submission
/// fails (and is split, costing two more calls) exactly when it holds a bad change, so
/// the failing ones are the union of `k` root-to-leaf paths: at most `2^l ≤ k` of them
/// on each of the top `⌊log₂ k⌋ + 1` levels (together `< 2k`), at most `k` on each
/// level below. Calls = 1 + 2 · (failing submissions with more than one change).
pub fn bisection_bound(n: usize, k: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    let k = k.min(n) as u64;
    if k == 0 {
        return 1;
    }
    let d = u64::from(n.next_power_of_two().trailing_zeros()); // ⌈log₂ n⌉
    let l = u64::from(k.ilog2()); // ⌊log₂ k⌋
    let bound = (4 * k - 1 + 2 * k * (d.saturating_sub(1 + l))).max(1);
    bound.min(2 * n as u64 - 1)
}

/// Where a submission stands in the algorithm; decides what a conflict leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The first submission: a conflict or ambiguous answer is read back and partitioned.
    First,
    /// The applicable rest after a read-back: a further failure bisects.
    Resubmit,
    /// A half in a bisection.
    Split,
}
