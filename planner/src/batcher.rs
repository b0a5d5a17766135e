//! Cuts a zone's changes into batches within the configured limits, keeping the plan's
//! order (deletes before the creates that may depend on them).
use crate::plan::PlannedChange;

/// Splits `changes` into runs of at most `max_changes` changes and about `max_bytes`
/// bytes. A single change larger than `max_bytes` still gets a batch of its own.
pub fn cut(
    changes: Vec<PlannedChange>,
    max_changes: usize,
    max_bytes: usize,
) -> Vec<Vec<PlannedChange>> {
    let mut batches = Vec::new();
    let mut current = Vec::new();
    let mut bytes = 0;
    for c in changes {
        let size = c.change.approx_bytes();
        if !current.is_empty() && (current.len() >= max_changes || bytes + size > max_bytes) {
            batches.push(std::mem::take(&mut current));
            bytes = 0;
        }
        bytes += size;
        current.push(c);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;
    use dnsplane_common::{Change, ChangeKind, Name, RRSet, RRSetOp, RecordKey, RecordType};

    fn change(i: usize, value_len: usize) -> PlannedChange {
        let key = RecordKey::new(
            Name::parse("example.com").unwrap(),
            Name::parse(&format!("h{i}.example.com")).unwrap(),
            RecordType::Txt,
        );
        let r = RRSet::new(key, 60, &["x".repeat(value_len)]).unwrap();
        PlannedChange {
            change: Change::new(ChangeKind::Create, vec![RRSetOp::create(r)]),
            reason: String::new(),
        }
    }

    #[test]
    fn respects_both_limits_and_keeps_order() {
        let changes: Vec<_> = (0..25).map(|i| change(i, 10)).collect();
        let ids: Vec<String> = changes.iter().map(|c| c.change.id.clone()).collect();
        let batches = cut(changes, 10, 1 << 20);
        assert_eq!(
            batches.iter().map(Vec::len).collect::<Vec<_>>(),
            [10, 10, 5]
        );
        let flat: Vec<String> = batches.into_iter().flatten().map(|c| c.change.id).collect();
        assert_eq!(flat, ids);

        let big: Vec<_> = (0..4).map(|i| change(i, 200)).collect();
        let per = big[0].change.approx_bytes();
        let batches = cut(big, 100, per * 2 + 1);
        assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2]);
        let batches = cut(vec![change(0, 2000)], 100, 1024);
        assert_eq!(batches.len(), 1);
    }
}
