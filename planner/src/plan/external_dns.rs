//! Planning the takeover of records external-dns owned (`[zones.external_dns]`).
//!
//! A desired record whose data external-dns's configured owner owns (and dnsplane
//! does not) is adopted in one atomic change: the data record asserted unchanged (or
//! updated in place to the desired value: never deleted and recreated), dnsplane's
//! mark created, and external-dns's marks for it deleted. Another external-dns owner's
//! records are `CONFLICT owned_by_other`, never touched.
//!
//! Records external-dns owns that are *not* desired are left alone, marks included:
//! they are not dnsplane's yet, and a deletion on doubt is the one change that takes a
//! service off the internet (ARCHITECTURE.md "never delete on doubt").
use super::PlannedChange;
use crate::config::{Policy, ZoneConfig};
use crate::observed::{ExternalOwned, ZoneView};
use dnsplane_common::{Change, ChangeKind, ConflictReason, RRSet, RRSetOp, RecordKey};
use std::collections::BTreeMap;

/// The adopt change of `cur` (owned by external-dns's `ext`) as `want`, with dnsplane's
/// mark `mark` (`None`: the name is too long to carry one); or why it is blocked. Its
/// external-dns marks are added by [`delete_marks`] once the whole plan is known.
pub fn adopt(
    zone: &ZoneConfig,
    ext: &ExternalOwned,
    cur: &RRSet,
    want: &RRSet,
    mark: Option<RRSet>,
) -> Result<PlannedChange, (ConflictReason, String)> {
    let ours = zone.external_dns.as_ref().map(|e| e.owner_id.as_str());
    let theirs = &*ext.mark.owner;
    if ours != Some(theirs) {
        return Err((
            ConflictReason::OwnedByOther,
            format!(
                "owned by external-dns owner {theirs:?} (external_dns.owner_id is {:?}); dnsplane never touches another owner's records",
                ours.unwrap_or("")
            ),
        ));
    }
    let same = cur.same_data(want);
    if !same && zone.policy == Policy::CreateOnly {
        return Err((
            ConflictReason::Unspecified,
            format!(
                "owned by external-dns owner {theirs:?} and differs, but policy create-only forbids updates"
            ),
        ));
    }
    let Some(mark) = mark else {
        return Err((
            ConflictReason::Unspecified,
            "the name is too long to carry an ownership record".into(),
        ));
    };
    let (data, reason) = if same {
        (
            RRSetOp::update(cur.clone(), cur.clone()),
            format!("adopt from external-dns owner {theirs:?}: equal to the desired record"),
        )
    } else {
        (
            RRSetOp::update(cur.clone(), want.clone()),
            format!(
                "adopt from external-dns owner {theirs:?}: {}",
                super::describe_difference(cur, want)
            ),
        )
    };
    Ok(PlannedChange {
        change: Change::new(ChangeKind::Adopt, vec![data, RRSetOp::create(mark)]),
        reason,
    })
}

/// Adds to each adopt change (`adopted`: by key, its index in `changes`) the deletes
/// of its external-dns marks. A mark goes with the last record it owns (an old-format
/// mark owns every type at its name), and only when every record it owns is adopted
/// in this plan: no record is ever left external-dns's without its mark.
pub fn delete_marks(
    current: &ZoneView,
    changes: &mut [PlannedChange],
    adopted: &BTreeMap<RecordKey, usize>,
) {
    for (key, &i) in adopted {
        let Some(ext) = current.external_owner(key) else {
            continue;
        };
        let mut deletes = Vec::new();
        for txt in &ext.txts {
            let sharing: Vec<&RecordKey> = current.external_sharing(key, &txt.key).collect();
            if sharing.iter().all(|k| adopted.contains_key(*k)) && sharing.last() == Some(&key) {
                deletes.push(RRSetOp::delete(txt.clone()));
            }
        }
        if !deletes.is_empty() {
            let c = &mut changes[i].change;
            let mut ops = std::mem::take(&mut c.ops);
            ops.extend(deletes);
            *c = Change::new(c.kind, ops);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::plan_zone;
    use super::*;
    use crate::config::{ConflictPolicy, ExternalDnsConfig};
    use crate::desired::DesiredRecord;
    use crate::external_dns::{Registry, value};
    use crate::ownership;
    use dnsplane_common::{Name, RecordType};

    const ME: &str = "dnsplane-1";

    fn zone(policy: Policy, conflict: ConflictPolicy) -> ZoneConfig {
        zone_keyed(policy, conflict, false)
    }

    /// [`zone`], with external-dns's `--txt-encrypt-aes-key` when `keyed`.
    fn zone_keyed(policy: Policy, conflict: ConflictPolicy, keyed: bool) -> ZoneConfig {
        ZoneConfig {
            policy,
            conflict,
            external_dns: Some(ExternalDnsConfig {
                owner_id: "cluster-a".into(),
                txt_prefix: "ext-".into(),
                txt_suffix: String::new(),
                wildcard_replacement: String::new(),
                aes_key_file: keyed.then(|| crate::config::AesKeyFile::test_key(7)),
            }),
            ..ZoneConfig::new(Name::parse("example.com").unwrap(), "a")
        }
    }

    fn rr(name: &str, t: RecordType, v: &str) -> RRSet {
        let zone = Name::parse("example.com").unwrap();
        let key = RecordKey::new(zone, Name::parse(name).unwrap(), t);
        RRSet::new(key, 300, &[v]).unwrap()
    }

    /// `r` and its external-dns marks by `owner`: new format, and old format too.
    fn marked(r: &RRSet, owner: &str, old: bool) -> Vec<RRSet> {
        let v = value(owner, "ingress/default/web");
        marked_with(r, old, || v.clone())
    }

    /// [`marked`] as external-dns writes with `z`'s config: encrypted when it has a key
    /// (each mark under its own nonce).
    fn marked_in(z: &ZoneConfig, r: &RRSet, owner: &str, old: bool) -> Vec<RRSet> {
        let reg = Registry::new(z.external_dns.as_ref().unwrap());
        marked_with(r, old, || reg.mark_value(owner, "ingress/default/web"))
    }

    fn marked_with(r: &RRSet, old: bool, v: impl Fn() -> String) -> Vec<RRSet> {
        let mut out = vec![r.clone()];
        let name = r.key.name.as_str();
        let t = r.key.rtype.as_str().to_ascii_lowercase();
        out.push(rr(&format!("ext-{t}-{name}"), RecordType::Txt, &v()));
        if old {
            out.push(rr(&format!("ext-{name}"), RecordType::Txt, &v()));
        }
        out
    }

    fn desired(records: &[RRSet]) -> BTreeMap<RecordKey, DesiredRecord> {
        crate::desired::desired_map(records, "test", "r")
    }

    fn view(z: &ZoneConfig, records: &[RRSet]) -> ZoneView {
        ZoneView::read(records.to_vec(), None, z.external_dns.as_ref())
    }

    /// What an atomic conditional provider holds after `changes`; panics on a failed
    /// precondition, and on a data record deleted (a takeover never deletes one).
    fn apply(current: &[RRSet], changes: &[PlannedChange]) -> BTreeMap<RecordKey, RRSet> {
        for op in changes.iter().flat_map(|c| &c.change.ops) {
            if op.after.is_none() {
                assert_eq!(op.key.rtype, RecordType::Txt, "data deleted: {op:?}");
            }
        }
        crate::plan::tests::apply(current, changes)
    }

    /// The configured owner's records become dnsplane's in one adopt each: data kept
    /// (or updated in place), dnsplane's mark written, external-dns's marks (both
    /// formats) gone; the next plan is empty and the view followed the ops.
    #[test]
    fn adopts_the_configured_owners_records() {
        adopts_the_configured_owners_records_with(false);
    }

    /// The same from an encrypted registry (`aes_key_file`): its marks are read and
    /// deleted alike, and without the key they would be data.
    #[test]
    fn adopts_the_configured_owners_records_from_encrypted_marks() {
        adopts_the_configured_owners_records_with(true);
    }

    fn adopts_the_configured_owners_records_with(encrypted: bool) {
        let z = zone_keyed(Policy::Sync, ConflictPolicy::Report, encrypted);
        let same = rr("www.example.com", RecordType::A, "192.0.2.1");
        let differs = rr("api.example.com", RecordType::A, "192.0.2.2");
        let want_api = rr("api.example.com", RecordType::A, "192.0.2.9");
        let mut current = marked_in(&z, &same, "cluster-a", true);
        current.extend(marked_in(&z, &differs, "cluster-a", false));
        if encrypted {
            let plain = zone(Policy::Sync, ConflictPolicy::Report);
            assert_eq!(
                view(&plain, &current).data().count(),
                5,
                "no key: marks are data"
            );
        }
        let before = view(&z, &current);
        assert_eq!(before.data().count(), 2, "marks are not data");
        let want = desired(&[same.clone(), want_api.clone()]);
        let plan = plan_zone(&z, ME, &want, &before);
        assert!(plan.blocked.is_empty(), "{:?}", plan.blocked);
        let kinds: Vec<_> = plan.changes.iter().map(|c| c.change.kind).collect();
        assert_eq!(kinds, [ChangeKind::Adopt, ChangeKind::Adopt]);
        let www = plan
            .changes
            .iter()
            .find(|c| c.change.key() == &same.key)
            .unwrap();
        assert_eq!(www.change.ops.len(), 4, "{:?}", www.change.ops);
        assert_eq!(
            www.change.ops[0],
            RRSetOp::update(same.clone(), same.clone())
        );
        let api = plan
            .changes
            .iter()
            .find(|c| c.change.key() == &differs.key)
            .unwrap();
        assert_eq!(
            api.change.ops[0],
            RRSetOp::update(differs.clone(), want_api.clone())
        );
        assert!(
            api.reason.contains("192.0.2.2 → 192.0.2.9"),
            "{}",
            api.reason
        );

        let after = apply(&current, &plan.changes);
        assert_eq!(after.get(&same.key), Some(&same));
        assert_eq!(after.get(&want_api.key), Some(&want_api));
        let reg = Registry::new(z.external_dns.as_ref().unwrap());
        assert!(after.values().all(|r| reg.parse(r).is_none()));
        assert_eq!(
            current.iter().filter(|r| reg.parse(r).is_some()).count(),
            3,
            "the marks were read"
        );
        let fresh = view(&z, &after.values().cloned().collect::<Vec<_>>());
        assert_eq!(fresh.owner_of(&same.key), Some(ME));
        assert_eq!(fresh.owner_of(&want_api.key), Some(ME));
        let again = plan_zone(&z, ME, &want, &fresh);
        assert!(again.changes.is_empty(), "{:?}", again.changes);
        assert_eq!(again.converged, 2);

        // The kept view follows the results as a fresh read would.
        let mut kept = before.clone();
        for c in &plan.changes {
            for op in &c.change.ops {
                kept.apply_op(op, c.change.key());
            }
        }
        assert!(kept.external_owner(&same.key).is_none());
        assert_eq!(kept.len(), fresh.len());
        assert!(plan_zone(&z, ME, &want, &kept).changes.is_empty());
    }

    /// Another external-dns owner's records are conflicts showing that owner, never
    /// touched, whatever the conflict policy; unowned records keep the zone's policy.
    #[test]
    fn other_owners_conflict_and_unowned_keep_the_policy() {
        let theirs = rr("b.example.com", RecordType::A, "192.0.2.3");
        let unowned = rr("u.example.com", RecordType::A, "192.0.2.4");
        let mut current = marked(&theirs, "cluster-b", true);
        current.push(unowned.clone());
        let want = desired(&[theirs.clone(), unowned.clone()]);
        for conflict in [ConflictPolicy::Report, ConflictPolicy::Adopt] {
            let z = zone(Policy::Sync, conflict);
            let plan = plan_zone(&z, ME, &want, &view(&z, &current));
            let b = plan.blocked.iter().find(|b| b.key == theirs.key).unwrap();
            assert_eq!(b.reason, ConflictReason::OwnedByOther);
            assert_eq!(b.observed_owner.as_deref(), Some("cluster-b"));
            assert!(plan.changes.iter().all(|c| {
                c.change
                    .ops
                    .iter()
                    .all(|op| op.key.name.as_str().contains("u.example.com"))
            }));
            match conflict {
                ConflictPolicy::Report => {
                    assert_eq!(plan.blocked.len(), 2);
                    assert_eq!(plan.blocked[1].reason, ConflictReason::Exists);
                    assert!(plan.changes.is_empty());
                }
                ConflictPolicy::Adopt => {
                    assert_eq!(plan.blocked.len(), 1);
                    assert_eq!(plan.changes.len(), 1);
                    assert_eq!(plan.changes[0].change.ops.len(), 2);
                }
            }
        }
    }

    /// Records external-dns owns that are not desired are left alone, marks included
    /// (never delete on doubt); a desired record at a mark's name is not written over it.
    #[test]
    fn never_deletes_undesired_external_dns_records() {
        let z = zone(Policy::Sync, ConflictPolicy::Adopt);
        let mine = rr("www.example.com", RecordType::A, "192.0.2.1");
        let current = marked(&mine, "cluster-a", true);
        let plan = plan_zone(&z, ME, &BTreeMap::new(), &view(&z, &current));
        assert!(plan.changes.is_empty() && plan.blocked.is_empty());
        let over = rr("ext-a-www.example.com", RecordType::Txt, "x");
        let plan = plan_zone(&z, ME, &desired(&[over]), &view(&z, &current));
        assert!(plan.changes.is_empty());
        assert_eq!(plan.blocked[0].reason, ConflictReason::Exists);
    }

    /// An old-format mark owns every type at its name but AAAA: it goes only once all
    /// of them are taken, once, with the last; until then it stays.
    #[test]
    fn a_shared_old_mark_goes_with_the_last_record_it_owns() {
        let z = zone(Policy::Sync, ConflictPolicy::Report);
        let a = rr("www.example.com", RecordType::A, "192.0.2.1");
        let mx = rr("www.example.com", RecordType::Mx, "10 mail.example.com.");
        let v = value("cluster-a", "r");
        let old = rr("ext-www.example.com", RecordType::Txt, &v);
        let current = vec![a.clone(), mx.clone(), old.clone()];
        let only_a = plan_zone(
            &z,
            ME,
            &desired(std::slice::from_ref(&a)),
            &view(&z, &current),
        );
        assert_eq!(only_a.changes.len(), 1);
        assert_eq!(
            only_a.changes[0].change.ops.len(),
            2,
            "the mark stays for MX"
        );
        let after = apply(&current, &only_a.changes);
        assert!(after.contains_key(&old.key));
        let both = plan_zone(
            &z,
            ME,
            &desired(&[a.clone(), mx.clone()]),
            &view(&z, &current),
        );
        let deletes: usize = both
            .changes
            .iter()
            .map(|c| c.change.ops.iter().filter(|op| op.after.is_none()).count())
            .sum();
        assert_eq!(deletes, 1);
        let after = apply(&current, &both.changes);
        assert!(!after.contains_key(&old.key));
        assert_eq!(after.get(&mx.key), Some(&mx));
    }

    /// create-only never updates a record it takes over; the record stays external-dns's.
    #[test]
    fn create_only_adopts_only_equal_records() {
        let z = zone(Policy::CreateOnly, ConflictPolicy::Report);
        let cur = rr("www.example.com", RecordType::A, "192.0.2.1");
        let want = rr("www.example.com", RecordType::A, "192.0.2.2");
        let plan = plan_zone(
            &z,
            ME,
            &desired(&[want]),
            &view(&z, &marked(&cur, "cluster-a", false)),
        );
        assert!(plan.changes.is_empty());
        assert_eq!(plan.blocked[0].observed_owner.as_deref(), Some("cluster-a"));
        let _ = ownership::OWNER_TTL;
    }

    proptest::proptest! {
        /// Whatever is desired: no data record is ever deleted (`apply` panics on
        /// one), another owner's and undesired records keep their values and marks,
        /// every desired record of the configured owner ends dnsplane's with the
        /// desired value, and a second plan is empty.
        #[test]
        fn takeover_converges_and_deletes_no_data(
            records in proptest::collection::btree_map(0..12u8, (0..3u8, 0..3u8, proptest::bool::ANY), 0..12),
            want in proptest::collection::btree_map(0..12u8, 0..3u8, 0..12),
            keyed in proptest::bool::ANY,
        ) {
            // With a key, marks are encrypted or plain (a registry may hold both).
            let z = zone_keyed(Policy::Sync, ConflictPolicy::Report, keyed);
            let ip = |v: u8| format!("192.0.2.{v}");
            let mut current = Vec::new();
            for (n, (owner, v, old)) in &records {
                let r = rr(&format!("h{n}.example.com"), RecordType::A, &ip(*v));
                let sealed = keyed && (n + v) % 2 == 0;
                match (owner, sealed) {
                    (0, false) => current.extend(marked(&r, "cluster-a", *old)),
                    (1, false) => current.extend(marked(&r, "cluster-b", *old)),
                    (0, true) => current.extend(marked_in(&z, &r, "cluster-a", *old)),
                    (1, true) => current.extend(marked_in(&z, &r, "cluster-b", *old)),
                    _ => current.push(r),
                }
            }
            let want: Vec<RRSet> = want
                .iter()
                .map(|(n, v)| rr(&format!("h{n}.example.com"), RecordType::A, &ip(*v)))
                .collect();
            let want = desired(&want);
            let plan = plan_zone(&z, ME, &want, &view(&z, &current));
            let after = apply(&current, &plan.changes);
            let fresh = view(&z, &after.values().cloned().collect::<Vec<_>>());
            for r in &current {
                let n: u8 = r.key.name.as_str()[..].trim_start_matches("ext-a-").trim_start_matches("ext-")
                    .trim_start_matches('h').split('.').next().unwrap().parse().unwrap();
                let (owner, _, _) = records[&n];
                let taken = owner == 0 && want.contains_key(&rr(&format!("h{n}.example.com"), RecordType::A, "192.0.2.1").key);
                if !taken {
                    proptest::prop_assert_eq!(after.get(&r.key), Some(r), "untouched");
                }
            }
            for (key, d) in &want {
                let n: u8 = key.name.first_label()[1..].parse().unwrap();
                if records.get(&n).is_some_and(|(o, _, _)| *o == 0) {
                    proptest::prop_assert_eq!(after.get(key), Some(&d.rrset(key)));
                    proptest::prop_assert_eq!(fresh.owner_of(key), Some(ME));
                    proptest::prop_assert!(fresh.external_owner(key).is_none());
                }
            }
            let again = plan_zone(&z, ME, &want, &fresh);
            proptest::prop_assert!(again.changes.is_empty(), "{:?}", again.changes);
        }
    }
}
