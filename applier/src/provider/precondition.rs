//! Preconditions checked by a read, for drivers whose provider does not enforce them
//! (PowerDNS overwrites on REPLACE; BIND silently ignores a CNAME beside other data):
//! under the zone's lock the driver reads the names a batch touches into a
//! [`ZoneRead`], [`check`]s every op against it, and only then writes.
use crate::provider::{ErrorClass, ProviderError};
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
use std::collections::{BTreeMap, BTreeSet};

/// What a read found: the RRSets dnsplane models, the keys it found but cannot model
/// (so cannot compare), and the types present at each name.
#[derive(Debug, Default)]
pub struct ZoneRead {
    pub rrsets: BTreeMap<RecordKey, RRSet>,
    pub opaque: BTreeSet<RecordKey>,
    pub types: BTreeMap<Name, BTreeSet<RecordType>>,
    pub serial: Option<u64>,
}

/// Checks every op of a batch against a fresh read: preconditions first, then that
/// the batch would not leave a CNAME beside other data. The error names the op.
pub fn check(ops: &[RRSetOp], read: &ZoneRead) -> Result<(), ProviderError> {
    for op in ops {
        if read.opaque.contains(&op.key) {
            return Err(ProviderError::new(
                ErrorClass::Conflict,
                format!(
                    "precondition failed for {}: the zone holds values dnsplane cannot read there",
                    op.key
                ),
            )
            .with_key(op.key.clone()));
        }
        let current = read.rrsets.get(&op.key);
        if !op.precondition_holds(current) {
            let what = match (&op.before, current) {
                (None, Some(_)) => "expected absent, found it present",
                (Some(_), None) => "expected present, found it absent",
                _ => "found different data than expected",
            };
            return Err(ProviderError::new(
                ErrorClass::Conflict,
                format!("precondition failed for {}: {what}", op.key),
            )
            .with_key(op.key.clone()));
        }
    }
    cname_check(ops, &read.types)
}

/// The names of a batch's "absent" asserts (no before, no after): the one
/// precondition a provider whose batches assert "exactly this" (Route 53, Cloud DNS)
/// cannot express, so the driver reads these names first.
pub fn absent_names(ops: &[RRSetOp]) -> BTreeSet<Name> {
    ops.iter()
        .filter(|op| op.before.is_none() && op.after.is_none())
        .map(|op| op.key.name.clone())
        .collect()
}

/// Checks the "absent" asserts of a batch against a read of [`absent_names`] (the
/// sets found, and those found but not modelled): a present set is a conflict of that
/// op.
pub fn check_absent(
    ops: &[RRSetOp],
    rrsets: &BTreeMap<RecordKey, RRSet>,
    opaque: &BTreeSet<RecordKey>,
) -> Result<(), ProviderError> {
    match ops.iter().find(|op| {
        op.before.is_none()
            && op.after.is_none()
            && (rrsets.contains_key(&op.key) || opaque.contains(&op.key))
    }) {
        Some(op) => Err(ProviderError::new(
            ErrorClass::Conflict,
            format!(
                "precondition failed for {}: expected absent, found it present",
                op.key
            ),
        )
        .with_key(op.key.clone())),
        None => Ok(()),
    }
}

/// The CNAME rule on the state a batch would leave at each name it writes.
/// Shared with the `rfc2136` driver, whose server silently ignores such additions.
pub fn cname_check(
    ops: &[RRSetOp],
    current: &BTreeMap<Name, BTreeSet<RecordType>>,
) -> Result<(), ProviderError> {
    let mut after: BTreeMap<&Name, BTreeSet<RecordType>> = BTreeMap::new();
    for op in ops.iter().filter(|op| !op.is_assert()) {
        after
            .entry(&op.key.name)
            .or_insert_with(|| current.get(&op.key.name).cloned().unwrap_or_default());
    }
    for op in ops.iter().filter(|op| !op.is_assert()) {
        let types = after.get_mut(&op.key.name).expect("entry made above");
        if op.after.is_some() {
            types.insert(op.key.rtype);
        } else {
            types.remove(&op.key.rtype);
        }
    }
    for op in ops
        .iter()
        .filter(|op| !op.is_assert() && op.after.is_some())
    {
        let types = &after[&op.key.name];
        if types.contains(&RecordType::Cname) && types.len() > 1 {
            let by_batch = |t: RecordType| {
                ops.iter().any(|o| {
                    !o.is_assert()
                        && o.after.is_some()
                        && o.key.name == op.key.name
                        && o.key.rtype == t
                })
            };
            let others: Vec<String> = types
                .iter()
                .filter(|&&t| t != op.key.rtype)
                .map(ToString::to_string)
                .collect();
            let msg = format!(
                "{} would put a CNAME beside other data at {} ({})",
                op.key,
                op.key.name,
                others.join(", ")
            );
            // Both sides written by this very batch: the batch contradicts itself.
            let class = if types.iter().all(|&t| by_batch(t)) {
                ErrorClass::Invalid
            } else {
                ErrorClass::Conflict
            };
            return Err(ProviderError::new(class, msg).with_key(op.key.clone()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone() -> Name {
        Name::parse("ex.test").unwrap()
    }

    fn rr(name: &str, t: RecordType, v: &[&str]) -> RRSet {
        RRSet::new(
            RecordKey::new(zone(), Name::parse(name).unwrap(), t),
            300,
            v,
        )
        .unwrap()
    }

    #[test]
    fn checks_preconditions_and_the_cname_rule() {
        let mut read = ZoneRead::default();
        let a = rr("a.ex.test", RecordType::A, &["192.0.2.1"]);
        read.types
            .entry(a.key.name.clone())
            .or_default()
            .insert(RecordType::A);
        read.rrsets.insert(a.key.clone(), a.clone());

        // Create over an existing RRSet.
        let e = check(&[RRSetOp::create(a.clone())], &read).unwrap_err();
        assert_eq!(
            (e.class, e.key.as_ref()),
            (ErrorClass::Conflict, Some(&a.key))
        );
        // Update from the right old value passes; from a stale one fails.
        let a2 = rr("a.ex.test", RecordType::A, &["192.0.2.2"]);
        check(&[RRSetOp::update(a.clone(), a2.clone())], &read).unwrap();
        assert!(check(&[RRSetOp::update(a2.clone(), a.clone())], &read).is_err());
        // A CNAME beside the A: conflict; replacing the A by the CNAME in one batch: fine.
        let c = rr("a.ex.test", RecordType::Cname, &["b.ex.test."]);
        let e = check(&[RRSetOp::create(c.clone())], &read).unwrap_err();
        assert_eq!(
            (e.class, e.key.as_ref()),
            (ErrorClass::Conflict, Some(&c.key))
        );
        check(
            &[RRSetOp::delete(a.clone()), RRSetOp::create(c.clone())],
            &read,
        )
        .unwrap();
        // A batch that writes both a CNAME and a TXT at one name contradicts itself.
        let t = rr("n.ex.test", RecordType::Txt, &["x"]);
        let c2 = rr("n.ex.test", RecordType::Cname, &["b.ex.test."]);
        let e = check(&[RRSetOp::create(t), RRSetOp::create(c2)], &read).unwrap_err();
        assert_eq!(e.class, ErrorClass::Invalid);
    }
}
