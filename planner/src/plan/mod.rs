//! The plan: `diff(desired, current, ownership)` for one zone. Pure and synchronous, so
//! it is unit- and property-tested without any I/O.
//!
//! Rules (ARCHITECTURE.md "Ownership"): records owned by another owner and records
//! nobody owns are never written (they are *blocked*, a plan-time `CONFLICT`), except
//! that `conflict = "adopt"` takes an unowned record that already equals the desired
//! one by writing only its ownership record. Policies limit what may change. In a zone
//! with `[zones.external_dns]`, external-dns's marks count as ownership too
//! ([`external_dns`]).
use crate::config::{ConflictPolicy, Policy, ZoneConfig};
use crate::desired::DesiredRecord;
use crate::observed::ZoneView;
use crate::ownership;
use dnsplane_common::ConflictReason;
use dnsplane_common::rrset::at_name;
use dnsplane_common::{Change, ChangeKind, RRSet, RRSetOp, RecordKey, RecordType};
use std::collections::{BTreeMap, BTreeSet};

mod external_dns;
mod release;

pub use release::{ReleasePlan, plan_release};

/// A change and why the planner wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedChange {
    pub change: Change,
    pub reason: String,
}

/// A desired record that this plan will not write, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    pub key: RecordKey,
    pub desired: Option<RRSet>,
    pub observed: Option<RRSet>,
    pub observed_owner: Option<String>,
    /// `Unspecified` when a policy (not a conflict) holds the record back.
    pub reason: ConflictReason,
    pub message: String,
}

#[derive(Debug, Default, Clone)]
pub struct ZonePlan {
    /// Deletes first, then updates and adopts, then creates: a record that replaces
    /// another of a clashing type at the same name comes after its removal.
    pub changes: Vec<PlannedChange>,
    pub blocked: Vec<Blocked>,
    /// How many desired records already hold the desired data and are owned by us.
    pub converged: usize,
}

/// Plans one zone.
pub fn plan_zone(
    zone: &ZoneConfig,
    owner_id: &str,
    desired: &BTreeMap<RecordKey, DesiredRecord>,
    current: &ZoneView,
) -> ZonePlan {
    let mut plan = ZonePlan::default();
    let mut deletes = Vec::new();
    let mut updates = Vec::new();
    let mut creates = Vec::new();
    // Records taken from external-dns, by their index in `updates`.
    let mut adopted: BTreeMap<RecordKey, usize> = BTreeMap::new();

    // The maps are sorted by the same key, so both passes are merge-walks: linear, no
    // lookups (a million-record zone plans in a fraction of a second).
    // Owned records no longer desired.
    let mut deleting: BTreeSet<&RecordKey> = BTreeSet::new();
    let mut desired_keys = desired.keys().peekable();
    for (key, owned) in current.owners() {
        if &*owned.mark.owner != owner_id || zone.policy != Policy::Sync {
            continue;
        }
        while desired_keys.next_if(|d| *d < key).is_some() {}
        if desired_keys.peek() == Some(&key) {
            continue;
        }
        let Some(owner_rrset) = current.owner_rrset(key) else {
            continue;
        };
        let mut ops = Vec::new();
        if let Some(cur) = current.get(key) {
            ops.push(RRSetOp::delete(cur));
            deleting.insert(key);
        }
        ops.push(RRSetOp::delete(owner_rrset));
        let reason = if ops.len() == 2 {
            "no longer desired"
        } else {
            "ownership record without its record"
        };
        deletes.push(PlannedChange {
            change: Change::new(ChangeKind::Delete, ops),
            reason: reason.into(),
        });
    }

    let mut data = current.data().peekable();
    let mut owners = current.owners().peekable();
    for (key, want) in desired {
        let want_rr = &want.rrset(key);
        while data.next_if(|(k, _)| *k < key).is_some() {}
        let cur = data.next_if(|(k, _)| *k == key).map(|(k, h)| h.rrset(k));
        let cur = cur.as_ref();
        // A property the desired record leaves to the provider (Cloudflare's proxy
        // status) is what is observed: never a change (`routing::settle`).
        let settled = cur.and_then(|c| want_rr.settled(c));
        let want_rr = settled.as_ref().unwrap_or(want_rr);
        while owners.next_if(|(k, _)| *k < key).is_some() {}
        let owner = owners.next_if(|(k, _)| *k == key).map(|(_, o)| o);
        let blocked = |reason: ConflictReason, observed: Option<&RRSet>, message: String| Blocked {
            key: key.clone(),
            desired: Some(want_rr.clone()),
            observed: observed.cloned(),
            observed_owner: owner.map(|o| o.mark.owner.to_string()),
            reason,
            message,
        };
        if let Some(mark) = owner.map(|o| &o.mark)
            && &*mark.owner != owner_id
        {
            plan.blocked.push(blocked(
                ConflictReason::OwnedByOther,
                cur,
                format!(
                    "owned by {:?}; dnsplane never touches another owner's records",
                    mark.owner
                ),
            ));
            continue;
        }
        if current.is_external_mark(key) {
            plan.blocked.push(blocked(
                ConflictReason::Exists,
                cur,
                "external-dns's ownership record is at this name (`[zones.external_dns]`)".into(),
            ));
            continue;
        }
        if key.rtype == RecordType::Cname && desired_beside_cname(key, desired) {
            plan.blocked.push(blocked(
                ConflictReason::TypeClash,
                cur,
                "other data is desired at this name too; a CNAME cannot share a name with other data".into(),
            ));
            continue;
        }
        let owned = owner.is_some();
        // Built only when a change needs it: the common case (converged) allocates nothing.
        let new_owner =
            || ownership::owner_record_with(key, owner_id, &want.resource, want.data.properties());
        let too_long = || "the name is too long to carry an ownership record".to_string();
        match cur {
            None => {
                if let Some(clash) = type_clash(key, current, &deleting) {
                    plan.blocked.push(blocked(
                        ConflictReason::TypeClash,
                        Some(&clash),
                        format!("{} {} exists at this name; a CNAME cannot share a name with other data", clash.key.name, clash.key.rtype),
                    ));
                    continue;
                }
                let Some(new_owner) = new_owner() else {
                    plan.blocked
                        .push(blocked(ConflictReason::Unspecified, cur, too_long()));
                    continue;
                };
                let owner_op = match current.owner_rrset(key) {
                    Some(old) => RRSetOp::update(old, new_owner),
                    None => RRSetOp::create(new_owner),
                };
                creates.push(PlannedChange {
                    change: Change::new(
                        ChangeKind::Create,
                        vec![RRSetOp::create(want_rr.clone()), owner_op],
                    ),
                    reason: "missing".into(),
                });
            }
            Some(cur) if owned => {
                if cur.same_data(want_rr) {
                    plan.converged += 1;
                    continue;
                }
                if zone.policy == Policy::CreateOnly {
                    plan.blocked.push(blocked(
                        ConflictReason::Unspecified,
                        Some(cur),
                        "differs, but policy create-only forbids updates".into(),
                    ));
                    continue;
                }
                let Some(owner_rrset) = current.owner_rrset(key) else {
                    continue;
                };
                let assert_owner = RRSetOp::update(owner_rrset.clone(), owner_rrset);
                updates.push(PlannedChange {
                    change: Change::new(
                        ChangeKind::Update,
                        vec![RRSetOp::update(cur.clone(), want_rr.clone()), assert_owner],
                    ),
                    reason: describe_difference(cur, want_rr),
                });
            }
            Some(cur) if current.external_owner(key).is_some() => {
                let ext = current.external_owner(key).expect("checked");
                let mark = ownership::adopted_owner_record(
                    key,
                    owner_id,
                    &want.resource,
                    want.data.properties(),
                    &ext.mark.resource,
                );
                match external_dns::adopt(zone, ext, cur, want_rr, mark) {
                    Ok(change) => {
                        adopted.insert(key.clone(), updates.len());
                        updates.push(change);
                    }
                    Err((reason, message)) => plan.blocked.push(Blocked {
                        observed_owner: Some(ext.mark.owner.to_string()),
                        ..blocked(reason, Some(cur), message)
                    }),
                }
            }
            Some(cur) => {
                if zone.conflict == ConflictPolicy::Adopt && cur.same_data(want_rr) {
                    let Some(new_owner) = new_owner() else {
                        plan.blocked.push(blocked(
                            ConflictReason::Unspecified,
                            Some(cur),
                            too_long(),
                        ));
                        continue;
                    };
                    updates.push(PlannedChange {
                        change: Change::new(
                            ChangeKind::Adopt,
                            vec![
                                RRSetOp::update(cur.clone(), cur.clone()),
                                RRSetOp::create(new_owner),
                            ],
                        ),
                        reason: "adopt: equal to the desired record and unowned".into(),
                    });
                    continue;
                }
                let message = if zone.conflict == ConflictPolicy::Adopt {
                    "exists unowned with other data; adopt only takes records equal to the desired ones".to_string()
                } else {
                    "exists and nobody owns it; conflict policy `report` leaves it alone (`adopt` would take it when equal)"
                        .to_string()
                };
                plan.blocked
                    .push(blocked(ConflictReason::Exists, Some(cur), message));
            }
        }
    }
    external_dns::delete_marks(current, &mut updates, &adopted);
    plan.changes.extend(deletes);
    plan.changes.extend(updates);
    plan.changes.extend(creates);
    plan
}

/// True when other types are desired at the name of the CNAME `key`.
fn desired_beside_cname(key: &RecordKey, desired: &BTreeMap<RecordKey, DesiredRecord>) -> bool {
    at_name(desired, &key.zone, &key.name).any(|(k, _)| k.rtype != RecordType::Cname)
}

/// Existing data at `key.name` that a new `key` would clash with (CNAME beside other
/// data), unless that data is being deleted by this plan.
fn type_clash(
    key: &RecordKey,
    current: &ZoneView,
    deleting: &BTreeSet<&RecordKey>,
) -> Option<RRSet> {
    current
        .data_at(&key.zone, &key.name)
        .find(|(k, _)| {
            k.rtype != key.rtype
                && (k.rtype == RecordType::Cname || key.rtype == RecordType::Cname)
                && !deleting.contains(k)
        })
        .map(|(k, h)| h.rrset(k))
}

fn describe_difference(cur: &RRSet, want: &RRSet) -> String {
    let mut parts = Vec::new();
    if cur.values() != want.values() {
        parts.push(format!(
            "values {} → {}",
            cur.values().collect::<Vec<_>>().join(" "),
            want.values().collect::<Vec<_>>().join(" ")
        ));
    }
    if cur.ttl != want.ttl {
        parts.push(format!("ttl {} → {}", cur.ttl, want.ttl));
    }
    if !cur.properties().eq(want.properties()) {
        let shown = |r: &RRSet| {
            let p: Vec<String> = r.properties().map(|(n, v)| format!("{n}={v}")).collect();
            if p.is_empty() {
                "(none)".to_string()
            } else {
                p.join(" ")
            }
        };
        parts.push(format!("properties {} → {}", shown(cur), shown(want)));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use dnsplane_common::Name;
    use proptest::prelude::*;

    const ME: &str = "me";

    fn zone_cfg(policy: Policy, conflict: ConflictPolicy) -> ZoneConfig {
        ZoneConfig {
            policy,
            conflict,
            ..ZoneConfig::new(Name::parse("example.com").unwrap(), "a")
        }
    }

    fn rr(name: &str, t: RecordType, v: &str) -> RRSet {
        let key = RecordKey::new(
            Name::parse("example.com").unwrap(),
            Name::parse(name).unwrap(),
            t,
        );
        RRSet::new(key, 300, &[v]).unwrap()
    }

    fn desired(records: &[RRSet]) -> BTreeMap<RecordKey, DesiredRecord> {
        crate::desired::desired_map(records, "test", "r")
    }

    fn owned(r: &RRSet, owner: &str) -> Vec<RRSet> {
        vec![
            r.clone(),
            ownership::owner_record(&r.key, owner, "r").unwrap(),
        ]
    }

    /// What an atomic conditional provider would hold after applying `changes`;
    /// panics on a failed precondition, which a plan computed from `current` must
    /// never contain.
    pub(super) fn apply(
        current: &[RRSet],
        changes: &[PlannedChange],
    ) -> BTreeMap<RecordKey, RRSet> {
        let mut state: BTreeMap<RecordKey, RRSet> =
            current.iter().map(|r| (r.key.clone(), r.clone())).collect();
        for c in changes {
            for op in &c.change.ops {
                assert!(
                    op.precondition_holds(state.get(&op.key)),
                    "precondition of {op:?}"
                );
                match &op.after {
                    Some(a) => state.insert(op.key.clone(), a.clone()),
                    None => state.remove(&op.key),
                };
            }
        }
        state
    }

    /// Each set of a routing policy is planned and owned on its own: its mark is a set
    /// of the same identifier carrying the set's policy; a plan applied once converges.
    #[test]
    fn routing_sets_are_planned_and_owned_each_on_its_own() {
        let z = zone_cfg(Policy::Sync, ConflictPolicy::Report);
        let set = |id: &str, v: &str, w: &str| {
            let key = rr("www.example.com", RecordType::A, v)
                .key
                .in_set(dnsplane_common::SetId::new(id).unwrap());
            RRSet::with_properties(key, 60, &[v], &[("aws/weight", w)]).unwrap()
        };
        let (eu, us) = (set("eu", "192.0.2.1", "10"), set("us", "192.0.2.2", "20"));
        let plan = plan_zone(
            &z,
            ME,
            &desired(&[eu.clone(), us.clone()]),
            &ZoneView::new(vec![]),
        );
        assert_eq!(plan.changes.len(), 2);
        let after = apply(&[], &plan.changes);
        let mark = after
            .get(&ownership::owner_record_key(&us.key).unwrap())
            .expect("the us set's mark");
        assert_eq!(mark.key.set.as_str(), "us");
        assert_eq!(mark.property("aws/weight"), Some("20"));
        let current: Vec<RRSet> = after.values().cloned().collect();
        let view = ZoneView::new(current.clone());
        assert_eq!(view.owner_of(&eu.key), Some(ME));
        let again = plan_zone(&z, ME, &desired(&[eu.clone(), us.clone()]), &view);
        assert!(again.changes.is_empty(), "{:?}", again.changes);
        assert_eq!(again.converged, 2);
        // A new weight is an update of that set alone; dropping a set deletes it alone.
        let heavier = set("eu", "192.0.2.1", "30");
        let plan = plan_zone(&z, ME, &desired(std::slice::from_ref(&heavier)), &view);
        let kinds: Vec<ChangeKind> = plan.changes.iter().map(|c| c.change.kind).collect();
        assert_eq!(kinds, [ChangeKind::Delete, ChangeKind::Update]);
        let reason = &plan.changes[1].reason;
        assert!(reason.contains("aws/weight=10 → aws/weight=30"), "{reason}");
        let after = apply(&current, &plan.changes);
        assert_eq!(after.get(&heavier.key), Some(&heavier));
        assert!(!after.contains_key(&us.key));
    }

    /// Cloudflare's proxy status: a desired record without it leaves a set proxied by
    /// hand as it is (no change, although its TTL reads 1); `false` un-proxies it and
    /// then converges on the DNS-only set, which reads back without the property.
    #[test]
    fn a_proxy_status_left_out_is_never_a_change() {
        use dnsplane_common::routing::cloudflare::PROXIED;
        let z = zone_cfg(Policy::Sync, ConflictPolicy::Report);
        let plain = rr("www.example.com", RecordType::A, "192.0.2.1");
        let by_hand =
            RRSet::with_properties(plain.key.clone(), 300, &["192.0.2.1"], &[(PROXIED, "true")])
                .unwrap();
        assert_eq!(by_hand.ttl, 1);
        let view = ZoneView::new(owned(&by_hand, ME));
        let plan = plan_zone(&z, ME, &desired(std::slice::from_ref(&plain)), &view);
        assert!(plan.changes.is_empty(), "{:?}", plan.changes);
        assert_eq!(plan.converged, 1);
        let off = RRSet::with_properties(
            plain.key.clone(),
            300,
            &["192.0.2.1"],
            &[(PROXIED, "false")],
        )
        .unwrap();
        let plan = plan_zone(&z, ME, &desired(std::slice::from_ref(&off)), &view);
        assert_eq!(plan.changes.len(), 1, "{:?}", plan.changes);
        assert_eq!(plan.changes[0].change.ops[0].after.as_ref(), Some(&off));
        let view = ZoneView::new(owned(&plain, ME));
        let plan = plan_zone(&z, ME, &desired(std::slice::from_ref(&off)), &view);
        assert!(plan.changes.is_empty(), "{:?}", plan.changes);
    }

    #[test]
    fn creates_updates_deletes_with_ownership() {
        let z = zone_cfg(Policy::Sync, ConflictPolicy::Report);
        let a1 = rr("a.example.com", RecordType::A, "192.0.2.1");
        let a2 = rr("a.example.com", RecordType::A, "192.0.2.2");
        let gone = rr("gone.example.com", RecordType::A, "192.0.2.3");
        let new = rr("new.example.com", RecordType::A, "192.0.2.4");
        let mut current = owned(&a1, ME);
        current.extend(owned(&gone, ME));
        let plan = plan_zone(
            &z,
            ME,
            &desired(&[a2.clone(), new.clone()]),
            &ZoneView::new(current.clone()),
        );
        let kinds: Vec<ChangeKind> = plan.changes.iter().map(|c| c.change.kind).collect();
        assert_eq!(
            kinds,
            [ChangeKind::Delete, ChangeKind::Update, ChangeKind::Create]
        );
        let after = apply(&current, &plan.changes);
        assert_eq!(after.get(&a2.key), Some(&a2));
        assert_eq!(after.get(&new.key), Some(&new));
        assert!(!after.contains_key(&gone.key));
        assert!(after.contains_key(&ownership::owner_record_key(&new.key).unwrap()));
        assert!(!after.contains_key(&ownership::owner_record_key(&gone.key).unwrap()));
    }

    #[test]
    fn never_touches_unowned_or_foreign_records() {
        let z = zone_cfg(Policy::Sync, ConflictPolicy::Report);
        let theirs = rr("theirs.example.com", RecordType::A, "192.0.2.1");
        let unowned = rr("unowned.example.com", RecordType::A, "192.0.2.2");
        let mut current = owned(&theirs, "other");
        current.push(unowned.clone());
        let want = [
            rr("theirs.example.com", RecordType::A, "192.0.2.9"),
            rr("unowned.example.com", RecordType::A, "192.0.2.9"),
        ];
        let plan = plan_zone(&z, ME, &desired(&want), &ZoneView::new(current));
        assert!(plan.changes.is_empty());
        let reasons: Vec<_> = plan
            .blocked
            .iter()
            .map(|b| (b.reason, b.observed_owner.clone()))
            .collect();
        assert_eq!(
            reasons,
            [
                (ConflictReason::OwnedByOther, Some("other".into())),
                (ConflictReason::Exists, None)
            ]
        );
        assert_eq!(plan.blocked[1].observed.as_ref(), Some(&unowned));
        // Not desired and not ours: not deleted either.
        let plan = plan_zone(
            &z,
            ME,
            &BTreeMap::new(),
            &ZoneView::new(owned(&theirs, "other")),
        );
        assert!(plan.changes.is_empty());
    }

    #[test]
    fn adopt_only_equal_records() {
        let z = zone_cfg(Policy::Sync, ConflictPolicy::Adopt);
        let same = rr("same.example.com", RecordType::A, "192.0.2.1");
        let differs = rr("differs.example.com", RecordType::A, "192.0.2.2");
        let current = vec![same.clone(), differs.clone()];
        let want = [
            same.clone(),
            rr("differs.example.com", RecordType::A, "192.0.2.9"),
        ];
        let plan = plan_zone(&z, ME, &desired(&want), &ZoneView::new(current.clone()));
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(plan.changes[0].change.kind, ChangeKind::Adopt);
        assert_eq!(plan.blocked.len(), 1);
        let after = apply(&current, &plan.changes);
        let view = ZoneView::new(after.into_values());
        assert_eq!(view.owner_of(&same.key), Some(ME));
        assert_eq!(view.get(&same.key), Some(same));
    }

    #[test]
    fn policies_limit_changes() {
        let a1 = rr("a.example.com", RecordType::A, "192.0.2.1");
        let a2 = rr("a.example.com", RecordType::A, "192.0.2.2");
        let gone = rr("gone.example.com", RecordType::A, "192.0.2.3");
        let mut current = owned(&a1, ME);
        current.extend(owned(&gone, ME));
        let view = ZoneView::new(current);
        let upsert = plan_zone(
            &zone_cfg(Policy::UpsertOnly, ConflictPolicy::Report),
            ME,
            &desired(std::slice::from_ref(&a2)),
            &view,
        );
        assert_eq!(upsert.changes.len(), 1);
        assert_eq!(upsert.changes[0].change.kind, ChangeKind::Update);
        let create = plan_zone(
            &zone_cfg(Policy::CreateOnly, ConflictPolicy::Report),
            ME,
            &desired(&[a2]),
            &view,
        );
        assert!(create.changes.is_empty());
        assert_eq!(create.blocked.len(), 1);
    }

    #[test]
    fn cname_clash_is_blocked_unless_the_other_is_being_deleted() {
        let z = zone_cfg(Policy::Sync, ConflictPolicy::Report);
        let a = rr("x.example.com", RecordType::A, "192.0.2.1");
        let c = rr("x.example.com", RecordType::Cname, "target.example.net");
        // Unowned A at x: the CNAME is blocked as a type clash.
        let plan = plan_zone(
            &z,
            ME,
            &desired(std::slice::from_ref(&c)),
            &ZoneView::new(vec![a.clone()]),
        );
        assert_eq!(plan.blocked[0].reason, ConflictReason::TypeClash);
        // Our own A at x, no longer desired: delete it, then create the CNAME.
        let current = owned(&a, ME);
        let plan = plan_zone(
            &z,
            ME,
            &desired(std::slice::from_ref(&c)),
            &ZoneView::new(current.clone()),
        );
        assert!(plan.blocked.is_empty());
        let after = apply(&current, &plan.changes);
        assert_eq!(after.get(&c.key), Some(&c));
        assert!(!after.contains_key(&a.key));
    }

    fn arb_rr() -> impl Strategy<Value = RRSet> {
        (
            0..12u8,
            prop_oneof![Just(RecordType::A), Just(RecordType::Txt)],
            0..4u8,
            prop_oneof![Just(60u32), Just(300)],
        )
            .prop_map(|(n, t, v, ttl)| {
                let key = RecordKey::new(
                    Name::parse("example.com").unwrap(),
                    Name::parse(&format!("h{n}.example.com")).unwrap(),
                    t,
                );
                let value = match t {
                    RecordType::A => format!("192.0.2.{v}"),
                    _ => format!("v{v}"),
                };
                RRSet::new(key, ttl, &[value]).unwrap()
            })
    }

    proptest! {
        /// Applying the plan to the current state yields the desired state for every
        /// record we may write; a second plan is empty; nothing unowned or foreign moves.
        #[test]
        fn plan_converges_and_is_idempotent(
            want in proptest::collection::vec(arb_rr(), 0..20),
            mine in proptest::collection::vec(arb_rr(), 0..10),
            theirs in proptest::collection::vec(arb_rr(), 0..5),
            unowned in proptest::collection::vec(arb_rr(), 0..5),
            adopt in any::<bool>(),
        ) {
            let z = zone_cfg(Policy::Sync, if adopt { ConflictPolicy::Adopt } else { ConflictPolicy::Report });
            let mut current: BTreeMap<RecordKey, RRSet> = BTreeMap::new();
            for r in &unowned { current.insert(r.key.clone(), r.clone()); }
            for r in &theirs { for x in owned(r, "other") { current.insert(x.key.clone(), x); } }
            for r in &mine { for x in owned(r, ME) { current.insert(x.key.clone(), x); } }
            let current: Vec<RRSet> = current.into_values().collect();
            let want = desired(&want);
            let before = ZoneView::new(current.clone());
            let plan = plan_zone(&z, ME, &want, &before);
            let after_map = apply(&current, &plan.changes);
            let after = ZoneView::new(after_map.values().cloned());
            for (key, d) in &want {
                let blocked = plan.blocked.iter().any(|b| &b.key == key);
                if blocked {
                    // Untouched.
                    prop_assert_eq!(after.get(key), before.get(key));
                } else {
                    prop_assert_eq!(after.get(key), Some(d.rrset(key)));
                    prop_assert_eq!(after.owner_of(key), Some(ME));
                }
            }
            // Owned but undesired records are gone; foreign and unowned ones are intact.
            for (key, owned) in before.owners() {
                let mark = &owned.mark;
                if &*mark.owner == ME && !want.contains_key(key) {
                    prop_assert!(!after.contains(key));
                    prop_assert!(after.owner_of(key).is_none());
                }
                if &*mark.owner != ME {
                    prop_assert_eq!(after.get(key), before.get(key));
                    prop_assert_eq!(after.owner_of(key), Some(&*mark.owner));
                }
            }
            for r in before.rrsets() {
                let key = &r.key;
                let adopted = adopt && want.get(key).is_some_and(|d| d.data.same_as(&r));
                if before.owner(key).is_none() && !adopted {
                    prop_assert_eq!(after.get(key), Some(r.clone()));
                    prop_assert!(after.owner_of(key).is_none());
                }
            }
            let again = plan_zone(&z, ME, &want, &after);
            prop_assert!(again.changes.is_empty(), "second plan: {:?}", again.changes);
        }
    }
}
