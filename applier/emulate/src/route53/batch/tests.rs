use super::*;
use crate::route53::model::{Alias, Zone};

fn zone() -> Zone {
    Zone::new(
        "Z0ZONE".into(),
        "example.com.".into(),
        "ref".into(),
        None,
        None,
    )
}

fn rr(name: &str, rtype: &str, ttl: u64, values: &[&str]) -> RRSet {
    RRSet::simple(
        name,
        rtype,
        ttl,
        values.iter().map(|v| v.to_string()).collect(),
    )
}

fn ch(action: Action, rrset: RRSet) -> Change {
    Change {
        action,
        rrset,
        problems: Vec::new(),
    }
}

fn names(z: &Zone) -> Vec<String> {
    z.rrsets
        .values()
        .map(|r| format!("{} {}", r.name, r.rtype))
        .collect()
}

#[test]
fn all_or_nothing_and_every_failure_reported() {
    let mut z = zone();
    let before = names(&z);
    let err = apply(
        &mut z,
        &[
            ch(
                Action::Create,
                rr("a.example.com.", "A", 60, &["192.0.2.1"]),
            ),
            ch(
                Action::Create,
                rr("b.example.org.", "A", 60, &["192.0.2.1"]),
            ),
            ch(
                Action::Delete,
                rr("c.example.com.", "A", 60, &["192.0.2.1"]),
            ),
        ],
    )
    .unwrap_err();
    assert_eq!(
        err,
        vec![
            "RRSet with DNS name b.example.org. is not permitted in zone example.com.",
            "Tried to delete resource record set [name='c.example.com.', type='A'] but it was not found",
        ]
    );
    assert_eq!(names(&z), before, "nothing applied");
}

#[test]
fn delete_must_match_exactly() {
    let mut z = zone();
    apply(
        &mut z,
        &[ch(
            Action::Create,
            rr("a.example.com.", "A", 60, &["192.0.2.1", "192.0.2.2"]),
        )],
    )
    .unwrap();
    for stale in [
        rr("a.example.com.", "A", 300, &["192.0.2.1", "192.0.2.2"]),
        rr("a.example.com.", "A", 60, &["192.0.2.1"]),
    ] {
        let err = apply(&mut z, &[ch(Action::Delete, stale)]).unwrap_err();
        assert_eq!(
            err,
            vec![
                "Tried to delete resource record set [name='a.example.com.', type='A'] but the values provided do not match the current values"
            ]
        );
    }
    // Values are a set: their order does not matter.
    apply(
        &mut z,
        &[ch(
            Action::Delete,
            rr("a.example.com.", "A", 60, &["192.0.2.2", "192.0.2.1"]),
        )],
    )
    .unwrap();
    assert_eq!(z.rrsets.len(), 2);
}

#[test]
fn working_copy_order() {
    let mut z = zone();
    let old = rr("a.example.com.", "TXT", 60, &["\"old\""]);
    apply(&mut z, &[ch(Action::Create, old.clone())]).unwrap();
    // DELETE then CREATE of one set: the compare-and-swap idiom.
    apply(
        &mut z,
        &[
            ch(Action::Delete, old.clone()),
            ch(
                Action::Create,
                rr("a.example.com.", "TXT", 60, &["\"new\""]),
            ),
        ],
    )
    .unwrap();
    // Deleting twice, creating twice, UPSERT twice: an invalid set of changes.
    let cur = rr("a.example.com.", "TXT", 60, &["\"new\""]);
    for batch in [
        vec![
            ch(Action::Delete, cur.clone()),
            ch(Action::Delete, cur.clone()),
        ],
        vec![
            ch(Action::Upsert, cur.clone()),
            ch(Action::Upsert, cur.clone()),
        ],
        vec![
            ch(Action::Create, rr("n.example.com.", "TXT", 60, &["\"x\""])),
            ch(Action::Create, rr("n.example.com.", "TXT", 60, &["\"x\""])),
        ],
        vec![
            ch(Action::Delete, cur.clone()),
            ch(Action::Create, cur.clone()),
            ch(Action::Delete, cur.clone()),
        ],
    ] {
        let err = apply(&mut z, &batch).unwrap_err();
        assert!(
            err.iter().any(|m| m.starts_with(
                "The request contains an invalid set of changes for a resource record set 'TXT "
            )),
            "{err:?}"
        );
    }
    assert_eq!(
        z.rrsets
            .values()
            .find(|r| r.rtype == "TXT")
            .unwrap()
            .records,
        vec!["\"new\""]
    );
}

#[test]
fn cname_rules() {
    let mut z = zone();
    apply(
        &mut z,
        &[ch(
            Action::Create,
            rr("a.example.com.", "A", 60, &["192.0.2.1"]),
        )],
    )
    .unwrap();
    let err = apply(
        &mut z,
        &[ch(
            Action::Create,
            rr("a.example.com.", "CNAME", 60, &["t.example.net."]),
        )],
    )
    .unwrap_err();
    assert_eq!(
        err,
        vec![
            "RRSet of type CNAME with DNS name a.example.com. is not permitted as it conflicts with other records with the same DNS name in zone example.com."
        ]
    );
    apply(
        &mut z,
        &[ch(
            Action::Create,
            rr("c.example.com.", "CNAME", 60, &["t.example.net."]),
        )],
    )
    .unwrap();
    let err = apply(
        &mut z,
        &[ch(
            Action::Create,
            rr("c.example.com.", "TXT", 60, &["\"x\""]),
        )],
    )
    .unwrap_err();
    assert_eq!(
        err,
        vec![
            "RRSet of type TXT with DNS name c.example.com. is not permitted because a conflicting RRSet of type  CNAME with the same DNS name already exists in zone example.com."
        ]
    );
    let err = apply(
        &mut z,
        &[ch(
            Action::Upsert,
            rr("example.com.", "CNAME", 60, &["t.example.net."]),
        )],
    )
    .unwrap_err();
    assert_eq!(
        err,
        vec![
            "RRSet of type CNAME with DNS name example.com. is not permitted at apex in zone example.com."
        ]
    );
    // Replace an A with a CNAME in one batch: legal in this order.
    apply(
        &mut z,
        &[
            ch(
                Action::Delete,
                rr("a.example.com.", "A", 60, &["192.0.2.1"]),
            ),
            ch(
                Action::Create,
                rr("a.example.com.", "CNAME", 60, &["t.example.net."]),
            ),
        ],
    )
    .unwrap();
    let err = apply(
        &mut z,
        &[ch(
            Action::Create,
            rr(
                "two.example.com.",
                "CNAME",
                60,
                &["a.example.net.", "b.example.net."],
            ),
        )],
    )
    .unwrap_err();
    assert!(err[0].contains("a CNAME set holds exactly one"), "{err:?}");
    // Loops.
    let err = apply(
        &mut z,
        &[ch(
            Action::Create,
            rr("l.example.com.", "CNAME", 60, &["l.example.com."]),
        )],
    )
    .unwrap_err();
    assert!(
        err[0].ends_with("is not permitted as it creates a CNAME or alias loop in the zone."),
        "{err:?}"
    );
    apply(
        &mut z,
        &[ch(
            Action::Create,
            rr("x.example.com.", "CNAME", 60, &["y.example.com."]),
        )],
    )
    .unwrap();
    let err = apply(
        &mut z,
        &[ch(
            Action::Create,
            rr("y.example.com.", "CNAME", 60, &["x.example.com"]),
        )],
    )
    .unwrap_err();
    assert!(err[0].contains("loop"), "{err:?}");
}

#[test]
fn apex_soa_and_ns() {
    let mut z = zone();
    let soa = z
        .rrsets
        .values()
        .find(|r| r.rtype == "SOA")
        .unwrap()
        .clone();
    let ns = z.rrsets.values().find(|r| r.rtype == "NS").unwrap().clone();
    assert_eq!(
        apply(&mut z, &[ch(Action::Delete, soa.clone())]).unwrap_err(),
        vec!["A HostedZone must contain exactly one SOA record."]
    );
    assert_eq!(
        apply(&mut z, &[ch(Action::Delete, ns.clone())]).unwrap_err(),
        vec!["A HostedZone must contain at least one NS record for the zone itself."]
    );
    let mut soa2 = soa.clone();
    soa2.ttl = Some(60);
    apply(
        &mut z,
        &[ch(Action::Delete, soa), ch(Action::Create, soa2.clone())],
    )
    .unwrap();
    let mut soa3 = soa2.clone();
    soa3.ttl = Some(120);
    apply(&mut z, &[ch(Action::Upsert, soa3)]).unwrap();
    // NS below the apex is a delegation and may come and go.
    let sub = rr("sub.example.com.", "NS", 60, &["ns1.example.net."]);
    apply(&mut z, &[ch(Action::Create, sub.clone())]).unwrap();
    apply(&mut z, &[ch(Action::Delete, sub)]).unwrap();
}

#[test]
fn set_identifiers_and_aliases() {
    let mut z = zone();
    let mut w1 = rr("w.example.com.", "A", 60, &["192.0.2.1"]);
    w1.set_identifier = Some("one".into());
    w1.weight = Some(10);
    let mut w2 = w1.clone();
    w2.set_identifier = Some("two".into());
    apply(
        &mut z,
        &[ch(Action::Create, w1.clone()), ch(Action::Create, w2)],
    )
    .unwrap();
    assert_eq!(
        apply(&mut z, &[ch(Action::Create, w1.clone())]).unwrap_err(),
        vec![
            "Tried to create resource record set [name='w.example.com.', type='A', set-identifier='one'] but it already exists"
        ]
    );
    let mut w1_other_weight = w1.clone();
    w1_other_weight.weight = Some(20);
    assert!(apply(&mut z, &[ch(Action::Delete, w1_other_weight)]).is_err());
    let alias = |target: &str| RRSet {
        ttl: None,
        records: Vec::new(),
        alias: Some(Alias {
            hosted_zone_id: "Z0ZONE".into(),
            dns_name: target.into(),
            evaluate_target_health: false,
        }),
        ..rr("al.example.com.", "A", 0, &[])
    };
    assert_eq!(
        apply(&mut z, &[ch(Action::Create, alias("missing.example.com."))]).unwrap_err(),
        vec![
            "Tried to create an alias that targets missing.example.com., type A in zone Z0ZONE, but that target was not found"
        ]
    );
    apply(&mut z, &[ch(Action::Create, alias("w.example.com."))]).unwrap();
}

#[test]
fn limits_count_upsert_twice() {
    let values: Vec<String> = (0..500)
        .map(|i| format!("10.0.{}.{}", i / 256, i % 256))
        .collect();
    let big = RRSet::simple("a.example.com.", "A", 60, values.clone());
    let mut z = zone();
    assert_eq!(check_limits(&[ch(Action::Create, big.clone())]), None);
    assert_eq!(
        check_limits(&[ch(Action::Upsert, big.clone())]),
        None,
        "500 x 2 = 1000 is allowed"
    );
    let mut one_more = values.clone();
    one_more.push("10.9.9.9".into());
    let bigger = RRSet::simple("a.example.com.", "A", 60, one_more);
    assert_eq!(
        apply(&mut z, &[ch(Action::Upsert, bigger)]).unwrap_err(),
        vec!["Number of records limit of 1000 exceeded."]
    );
    let txt = |n: usize| {
        RRSet::simple(
            "t.example.com.",
            "TXT",
            60,
            vec![format!("\"{}\"", "x".repeat(n - 2))],
        )
    };
    assert_eq!(check_limits(&[ch(Action::Upsert, txt(16_000))]), None);
    assert!(check_limits(&[ch(Action::Upsert, txt(16_001))]).is_some());
    assert!(check_limits(&[ch(Action::Create, txt(16_001))]).is_none());
}

/// One name and type holds one plain set or sets of one routing policy, in AWS's
/// words; a set may replace the plain set in one batch.
#[test]
fn plain_and_routing_sets_do_not_mix() {
    let mut z = zone();
    let plain = rr("m.example.com.", "A", 60, &["192.0.2.1"]);
    apply(&mut z, &[ch(Action::Create, plain.clone())]).unwrap();
    let mut w = rr("m.example.com.", "A", 60, &["192.0.2.2"]);
    w.set_identifier = Some("eu".into());
    w.weight = Some(1);
    assert_eq!(
        apply(&mut z, &[ch(Action::Create, w.clone())]).unwrap_err(),
        vec![
            "RRSet with DNS name m.example.com., type A, SetIdentifier eu cannot be created as a non-weighted set exists with the same name and type."
        ]
    );
    apply(
        &mut z,
        &[
            ch(Action::Delete, plain.clone()),
            ch(Action::Create, w.clone()),
        ],
    )
    .unwrap();
    assert_eq!(
        apply(&mut z, &[ch(Action::Create, plain)]).unwrap_err(),
        vec![
            "RRSet with DNS name m.example.com., type A cannot be created as other RRSets exist with the same name and type."
        ]
    );
    let mut latency = rr("m.example.com.", "A", 60, &["192.0.2.3"]);
    latency.set_identifier = Some("us".into());
    latency.region = Some("us-east-1".into());
    let e = apply(&mut z, &[ch(Action::Create, latency)]).unwrap_err();
    assert!(e[0].contains("as a non-latency set exists"), "{e:?}");
    // Another type at the name is no clash; a second weighted set is none either.
    let mut w2 = w.clone();
    w2.set_identifier = Some("us".into());
    apply(
        &mut z,
        &[
            ch(Action::Create, w2),
            ch(Action::Create, rr("m.example.com.", "TXT", 60, &["\"x\""])),
        ],
    )
    .unwrap();
    // An UPSERT of a set over itself is no clash.
    let mut heavier = w;
    heavier.weight = Some(5);
    apply(&mut z, &[ch(Action::Upsert, heavier)]).unwrap();
}
