//! The read-back partition: a change decided against what a read of its names shows
//! (already at target, a conflict with the observed RRSet, or still applicable).
use super::Verdict;
use crate::provider::Listing;
use dnsplane_common::{Change, ConflictReason, Name, RRSet, RecordKey, RecordType};
use std::collections::HashMap;

/// A read-back, indexed for the partition.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    rrsets: HashMap<RecordKey, RRSet>,
    types: HashMap<Name, Vec<RecordType>>,
}

impl Observed {
    pub(crate) fn new(listing: Listing) -> Self {
        let mut o = Observed::default();
        for r in listing.rrsets {
            o.types
                .entry(r.key.name.clone())
                .or_default()
                .push(r.key.rtype);
            o.rrsets.insert(r.key.clone(), r);
        }
        o
    }

    pub(super) fn get(&self, key: &RecordKey) -> Option<&RRSet> {
        self.rrsets.get(key)
    }
}

/// Decides a change against a read-back: `Some(AlreadyApplied)` when every op is at
/// its target, `Some(Conflict)` when a precondition fails or the change would put a
/// CNAME beside other data, `None` when it is still applicable.
pub(crate) fn partition(change: &Change, observed: &Observed) -> Option<Verdict> {
    if change
        .ops
        .iter()
        .all(|op| op.at_target(observed.get(&op.key)))
    {
        return Some(Verdict::AlreadyApplied);
    }
    for op in &change.ops {
        let current = observed.get(&op.key);
        if op.precondition_holds(current) {
            continue;
        }
        let (reason, what) = match (&op.before, current) {
            (None, Some(_)) => (ConflictReason::Exists, "expected absent, found it present"),
            (Some(_), None) => (
                ConflictReason::NotFound,
                "expected present, found it absent",
            ),
            _ => (
                ConflictReason::Changed,
                "found different data than expected",
            ),
        };
        return Some(Verdict::Conflict {
            reason,
            observed: current.cloned(),
            message: format!("precondition failed for {}: {what}", op.key),
        });
    }
    // The CNAME rule, on the state this change would leave (its own deletions count).
    let removed = |key: &RecordKey| {
        change
            .ops
            .iter()
            .any(|op| &op.key == key && op.after.is_none())
    };
    for op in change.ops.iter().filter(|op| op.after.is_some()) {
        let at_name = observed
            .types
            .get(&op.key.name)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let clash = at_name.iter().copied().find(|&t| {
            let other = RecordKey::new(op.key.zone.clone(), op.key.name.clone(), t);
            let mixes = (op.key.rtype == RecordType::Cname) != (t == RecordType::Cname);
            mixes && !removed(&other)
        });
        if let Some(t) = clash {
            let key = RecordKey::new(op.key.zone.clone(), op.key.name.clone(), t);
            return Some(Verdict::Conflict {
                reason: ConflictReason::TypeClash,
                observed: observed.get(&key).cloned(),
                message: format!(
                    "{} would put a CNAME beside other data at {} (found {t})",
                    op.key, op.key.name
                ),
            });
        }
    }
    None
}
