//! Plans never outlive the desired state they came from: just before a batch leaves,
//! each of its changes is checked against the desired index as it is *now*.
//!
//! Why: a sync of a large plan takes minutes behind a provider's quota. A push that
//! withdrew its records 75 ms after sending them left the sync writing all 42,000 of
//! them anyway, and the guard then held their removal, so a person had to approve
//! deleting records nobody wanted. With this check a change that is no longer desired
//! (a create or update whose desired record is gone or now different, a delete of a
//! record that is desired again) is dropped from its batch; its name is planned
//! again, from the new desired state, once the sync ends. What had already gone out is
//! all that is written.
//!
//! Comparing as the plan does ([`crate::plan`]): the desired RRSet, with what it leaves
//! to the provider settled as the planned one has it (`RRSet::settled`), must have the
//! planned data; otherwise the check would drop what the plan keeps making.
use crate::desired::{DesiredIndex, DesiredRecord};
use crate::plan::PlannedChange;
use dnsplane_common::{ChangeKind, Name};
use std::collections::BTreeSet;

/// What the check of one batch found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Rechecked {
    /// Per change of the batch, in order: still desired (send it).
    pub keep: Vec<bool>,
    /// The names of the changes dropped: to be planned again.
    pub dropped: BTreeSet<Name>,
}

impl Rechecked {
    /// Nothing of the batch is left to send.
    pub fn is_empty(&self) -> bool {
        !self.keep.iter().any(|k| *k)
    }
}

/// Checks `batch` (changes of `zone`) against `desired` as it is now.
pub(super) fn recheck(desired: &DesiredIndex, zone: &Name, batch: &[PlannedChange]) -> Rechecked {
    let records = desired.zone(zone);
    let mut out = Rechecked {
        keep: Vec::with_capacity(batch.len()),
        dropped: BTreeSet::new(),
    };
    for c in batch {
        let key = c.change.key();
        let want = records.and_then(|r| r.get(key));
        let keep = still_desired(want, c);
        if !keep {
            out.dropped.insert(key.name.clone());
        }
        out.keep.push(keep);
    }
    out
}

/// Whether `c` still does what the desired record at its key (`want`) asks.
fn still_desired(want: Option<&DesiredRecord>, c: &PlannedChange) -> bool {
    let key = c.change.key();
    match c.change.kind {
        ChangeKind::Create | ChangeKind::Update => {
            let Some(want) = want else {
                return false;
            };
            let Some(after) = c.change.ops.first().and_then(|op| op.after.as_ref()) else {
                return true;
            };
            let want = want.rrset(key);
            want.settled(after).unwrap_or(want).same_data(after)
        }
        // Taken as it is: only whether it is still wanted at all.
        ChangeKind::Adopt => want.is_some(),
        // A record desired again must not be deleted (an ownership record's own key is
        // never desired: it stays).
        ChangeKind::Delete => want.is_none(),
        // A hand-over to external-dns is no plan from the desired state.
        ChangeKind::Release => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ZoneConfig;
    use crate::source::{DesiredEntry, Origin};
    use dnsplane_common::{Change, RRSet, RRSetOp, RecordKey, RecordType};

    fn zone() -> Name {
        Name::parse("example.com.").unwrap()
    }

    fn index(records: &[(&str, &str)]) -> DesiredIndex {
        let cfg = ZoneConfig::new(zone(), "a");
        let mut index = DesiredIndex::new(&[cfg]);
        let entries: Vec<DesiredEntry> = records
            .iter()
            .map(|(name, value)| DesiredEntry {
                name: Name::parse(&format!("{name}.example.com")).unwrap(),
                rtype: RecordType::A,
                ttl: Some(300),
                values: vec![value.to_string()],
                set: Default::default(),
                properties: Vec::new(),
                labels: Default::default(),
                origin: Origin {
                    source: "push".into(),
                    location: "".into(),
                    resource: "test".into(),
                },
            })
            .collect();
        index.update_source("push:test", &entries, Vec::new());
        index
    }

    fn rrset(name: &str, value: &str) -> RRSet {
        let key = RecordKey::new(
            zone(),
            Name::parse(&format!("{name}.example.com")).unwrap(),
            RecordType::A,
        );
        RRSet::new(key, 300, &[value.to_string()]).unwrap()
    }

    fn change(kind: ChangeKind, name: &str, value: &str) -> PlannedChange {
        let r = rrset(name, value);
        let op = match kind {
            ChangeKind::Create => RRSetOp::create(r),
            ChangeKind::Delete => RRSetOp::delete(r),
            _ => RRSetOp::update(rrset(name, "192.0.2.250"), r),
        };
        PlannedChange {
            change: Change::new(kind, vec![op]),
            reason: String::new(),
        }
    }

    #[test]
    fn what_is_still_desired_is_kept() {
        let index = index(&[("a", "192.0.2.1"), ("b", "192.0.2.2")]);
        let batch = [
            change(ChangeKind::Create, "a", "192.0.2.1"),
            change(ChangeKind::Update, "b", "192.0.2.2"),
            change(ChangeKind::Delete, "gone", "192.0.2.3"),
        ];
        let r = recheck(&index, &zone(), &batch);
        assert_eq!(r.keep, [true, true, true]);
        assert!(r.dropped.is_empty() && !r.is_empty());
    }

    #[test]
    fn a_withdrawn_or_changed_record_is_dropped_and_planned_again() {
        // The plan was made when a, b and c were desired as below; then the desired
        // state changed: a withdrawn, b's value changed, c desired again.
        let index = index(&[("b", "192.0.2.99"), ("c", "192.0.2.3")]);
        let batch = [
            change(ChangeKind::Create, "a", "192.0.2.1"),
            change(ChangeKind::Update, "b", "192.0.2.2"),
            change(ChangeKind::Delete, "c", "192.0.2.3"),
        ];
        let r = recheck(&index, &zone(), &batch);
        assert_eq!(r.keep, [false, false, false]);
        assert!(r.is_empty());
        let names: Vec<&str> = r.dropped.iter().map(|n| n.as_str()).collect();
        assert_eq!(
            names,
            ["a.example.com.", "b.example.com.", "c.example.com."]
        );
    }

    #[test]
    fn an_emptied_source_drops_every_create() {
        let index = index(&[]);
        let batch: Vec<_> = (0..5)
            .map(|i| change(ChangeKind::Create, &format!("p{i}"), "192.0.2.7"))
            .collect();
        let r = recheck(&index, &zone(), &batch);
        assert!(r.is_empty());
        assert_eq!(r.dropped.len(), 5);
    }
}
