use super::*;
use dnsplane_common::Change;

#[test]
fn http_statuses_fall_into_the_documented_classes() {
    use ErrorClass::*;
    for (status, class) in [
        (400, Invalid),
        (401, Permanent),
        (403, Permanent),
        (404, Permanent),
        (405, Invalid),
        (408, Transient),
        (409, Conflict),
        (412, Conflict),
        (413, Invalid),
        (422, Invalid),
        (429, Transient),
        (500, Ambiguous),
        (502, Ambiguous),
        (503, Ambiguous),
        (504, Ambiguous),
        (599, Ambiguous),
    ] {
        assert_eq!(ErrorClass::for_http_status(status), class, "HTTP {status}");
    }
    let names: Vec<&str> = ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        names,
        ["ambiguous", "conflict", "invalid", "transient", "permanent"]
    );
    assert!(ProviderError::new(Transient, "x").is_retryable());
    assert!(ProviderError::new(Conflict, "x").is_conflict());
    assert!(!ProviderError::new(Ambiguous, "x").is_retryable());
}

/// Each builder sets its one field and nothing else.
#[test]
fn capability_builders_set_one_field_each() {
    let base = Capabilities::atomic(7, 9);
    assert_eq!(
        base,
        Capabilities {
            atomic_batches: true,
            conditional_writes: true,
            max_changes_per_batch: 7,
            max_bytes_per_batch: 9,
            measure: Measure::Ops,
            has_serial: false,
            routing_sets: false,
            properties: &[],
        }
    );
    let all = base
        .not_atomic()
        .checked_by_read()
        .with_serial()
        .with_sets()
        .with_properties(&["p"])
        .measured_by_values();
    assert_eq!(
        all,
        Capabilities {
            atomic_batches: false,
            conditional_writes: false,
            max_changes_per_batch: 7,
            max_bytes_per_batch: 9,
            measure: Measure::Values,
            has_serial: true,
            routing_sets: true,
            properties: &["p"],
        }
    );
}

/// Route 53's measure: every value of both sides of every op, and its characters;
/// a set without values (never built, but an alias read back) still counts one.
#[test]
fn values_are_counted_on_both_sides_of_every_op() {
    use dnsplane_common::{ChangeKind, RecordType};
    let zone = Name::parse("example.com").unwrap();
    let key = RecordKey::new(zone.clone(), zone.prepend("w").unwrap(), RecordType::A);
    let one = RRSet::new(key.clone(), 60, &["192.0.2.1"]).unwrap();
    let two = RRSet::new(key, 60, &["192.0.2.1", "192.0.2.22"]).unwrap();
    let create = Change::new(ChangeKind::Create, vec![RRSetOp::create(two.clone())]);
    assert_eq!(Measure::Values.weigh(&create), (2, 9 + 10));
    let update = Change::new(ChangeKind::Update, vec![RRSetOp::update(one, two)]);
    assert_eq!(Measure::Values.weigh(&update), (3, 9 + 9 + 10));
    assert_eq!(Measure::Ops.weigh(&update).0, 1);
    // Cloud DNS's count: one op (one deletion and one addition), the rrdata of both.
    assert_eq!(Measure::Rrdata.weigh(&update), (1, 9 + 9 + 10));
    assert_eq!(Measure::Rrdata.weigh(&create), (1, 9 + 10));
}

/// A change larger than one request of an exact-limit driver is refused before
/// any call, naming its key; one that fits is not.
#[test]
fn a_change_larger_than_a_request_is_refused_by_name() {
    use dnsplane_common::{ChangeKind, RecordType};
    let zone = Name::parse("example.com").unwrap();
    let key = RecordKey::new(zone.clone(), zone.prepend("t").unwrap(), RecordType::Txt);
    // Ten values of 202 characters each (quotes included).
    let values: Vec<String> = (0..10)
        .map(|i| format!("\"{i}{}\"", "x".repeat(199)))
        .collect();
    let big = RRSet::new(key, 60, &values).unwrap();
    let change = Change::new(ChangeKind::Create, vec![RRSetOp::create(big)]);
    let caps = Capabilities::atomic(1000, 1000).measured_by_values();
    let why = caps.refusal("route53", &change).expect("refused");
    assert!(
        why.starts_with("t.example.com. TXT is too large for route53")
            && why.contains("2020 value characters"),
        "{why}"
    );
    assert_eq!(
        Capabilities::atomic(1000, 1000).refusal("x", &change),
        None,
        "Ops: an estimate, not refused"
    );
    assert_eq!(
        Capabilities::atomic(1000, 5000)
            .measured_by_values()
            .refusal("x", &change),
        None
    );
    // Cloud DNS's 100,000 bytes of rrdata, as its driver says them.
    let clouddns = Capabilities::atomic(1000, 2000).measured_by_rrdata();
    let why = clouddns.refusal("clouddns", &change).expect("refused");
    assert!(
        why.contains("1 record set changes and 2020 value characters"),
        "{why}"
    );
    assert_eq!(
        Capabilities::atomic(1000, 2020)
            .measured_by_rrdata()
            .refusal("x", &change),
        None
    );
}

/// A set or a property the driver does not write is refused, whichever side of
/// which op carries it; what it writes passes.
#[test]
fn refusals_name_the_set_or_the_property() {
    use dnsplane_common::{ChangeKind, RecordType, SetId};
    let zone = Name::parse("example.com").unwrap();
    let key = RecordKey::new(zone.clone(), zone.prepend("w").unwrap(), RecordType::A);
    let rr = |key: RecordKey, props: &[(&str, &str)]| {
        RRSet::with_properties(key, 60, &["192.0.2.1"], props).unwrap()
    };
    let plain = rr(key.clone(), &[]);
    let weighted = rr(
        key.clone().in_set(SetId::new("eu").unwrap()),
        &[("aws/weight", "1")],
    );
    let tagged = rr(key.clone(), &[("aws/region", "eu-west-1")]);
    let none = Capabilities {
        atomic_batches: true,
        conditional_writes: true,
        max_changes_per_batch: 1,
        max_bytes_per_batch: 1,
        measure: Measure::Ops,
        has_serial: false,
        routing_sets: false,
        properties: &[],
    };
    let change = |ops| Change::new(ChangeKind::Update, ops);
    assert_eq!(
        none.refusal("x", &change(vec![RRSetOp::create(plain.clone())])),
        None
    );
    let why = none
        .refusal("pdns", &change(vec![RRSetOp::create(weighted.clone())]))
        .unwrap();
    assert!(
        why.starts_with("pdns has no routing-policy sets (setIdentifier)"),
        "{why}"
    );
    let why = none
        .refusal(
            "pdns",
            &change(vec![
                RRSetOp::create(plain.clone()),
                RRSetOp::delete(tagged.clone()),
            ]),
        )
        .unwrap();
    assert!(
        why.starts_with("pdns cannot write provider-specific property \"aws/region\""),
        "{why}"
    );
    // Cloudflare's proxy status, on a driver that is not Cloudflare's.
    let proxied = rr(
        key.clone(),
        &[(dnsplane_common::routing::cloudflare::PROXIED, "true")],
    );
    let why = none
        .refusal("pdns", &change(vec![RRSetOp::create(proxied)]))
        .unwrap();
    assert!(
        why.starts_with(
            "pdns cannot write provider-specific property \"external-dns.alpha.kubernetes.io/cloudflare-proxied\""
        ),
        "{why}"
    );
    let some = Capabilities {
        routing_sets: true,
        properties: &["aws/weight"],
        ..none
    };
    assert_eq!(
        some.refusal("x", &change(vec![RRSetOp::create(weighted)])),
        None
    );
    assert!(
        some.refusal("x", &change(vec![RRSetOp::create(tagged)]))
            .is_some()
    );
}
