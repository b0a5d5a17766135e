//! The `route53` driver against a server that checks a batch's CREATEs against the
//! zone before the batch (moto, LocalStack; the emulator's
//! `creates_checked_before_batch`): updates and an asserted ownership record still
//! apply, by UPSERT after the DELETE, learnt from the first refusal and retried at
//! once; the DELETE still checks, and a CREATE alone still fails over a set. Against
//! AWS's order, no batch is ever refused or sent twice.
use dnsplane_applier::provider::route53::Route53Provider;
use dnsplane_applier::provider::{ErrorClass, Provider};
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
use dnsplane_emulate::{Route53Emulator, Route53Options};

fn zone() -> Name {
    Name::parse("order.test").unwrap()
}

async fn server(creates_checked_before_batch: bool) -> (Route53Emulator, String, Route53Provider) {
    let options = Route53Options {
        creates_checked_before_batch,
        ..Default::default()
    };
    let (emulator, id, cfg) = crate::support::route53_with_zone(&zone(), options).await;
    (emulator, id, crate::support::route53_driver(&cfg))
}

fn a(label: &str, ttl: u32, value: &str) -> RRSet {
    let key = RecordKey::new(zone(), zone().prepend(label).unwrap(), RecordType::A);
    RRSet::new(key, ttl, &[value]).unwrap()
}

fn update(before: &RRSet, after: &RRSet) -> RRSetOp {
    RRSetOp {
        key: before.key.clone(),
        before: Some(before.clone()),
        after: Some(after.clone()),
    }
}

/// Change batches the emulator was sent so far.
fn batches(e: &Route53Emulator) -> u64 {
    e.stats()
        .requests
        .get("ChangeResourceRecordSets")
        .copied()
        .unwrap_or(0)
}

#[tokio::test]
async fn updates_apply_where_creates_are_checked_before_the_batch() {
    let (emulator, id, driver) = server(true).await;
    let z = zone();
    let (v1, v2) = (a("www", 300, "192.0.2.1"), a("www", 60, "192.0.2.2"));
    let mark = a("owner", 300, "192.0.2.9");
    driver
        .apply(
            &z,
            &[RRSetOp::create(v1.clone()), RRSetOp::create(mark.clone())],
        )
        .await
        .unwrap();
    assert_eq!(batches(&emulator), 1);

    // The first update with an unchanged mark asserted: refused once, resent at once.
    driver
        .apply(&z, &[update(&v1, &v2), update(&mark, &mark)])
        .await
        .expect("applied by UPSERT after the DELETE");
    assert_eq!(batches(&emulator), 3, "the refused batch and its resend");
    let notes = driver.notes();
    assert!(
        notes.len() == 1 && notes[0].contains("sent as UPSERT"),
        "the account's status says so: {notes:?}"
    );
    let held: Vec<_> = emulator
        .rrsets(&id)
        .into_iter()
        .filter(|s| s.name == "www.order.test.")
        .map(|s| (s.ttl, s.values))
        .collect();
    assert_eq!(held, [(Some(60), vec!["192.0.2.2".to_string()])]);

    // From then on, one batch each: back to the first value too.
    driver
        .apply(&z, &[update(&v2, &v1), update(&mark, &mark)])
        .await
        .unwrap();
    assert_eq!(batches(&emulator), 4);

    // The preconditions hold: a stale DELETE and a CREATE over a set are conflicts.
    let e = driver
        .apply(&z, &[update(&v2, &v1)])
        .await
        .expect_err("www holds v1, not v2");
    assert_eq!(e.class, ErrorClass::Conflict, "{e}");
    let e = driver
        .apply(&z, &[RRSetOp::create(v2.clone())])
        .await
        .expect_err("www exists");
    assert_eq!(e.class, ErrorClass::Conflict, "{e}");
}

#[tokio::test]
async fn in_aws_order_an_update_is_one_batch() {
    let (emulator, _, driver) = server(false).await;
    let z = zone();
    let (v1, v2) = (a("www", 300, "192.0.2.1"), a("www", 60, "192.0.2.2"));
    driver
        .apply(&z, &[RRSetOp::create(v1.clone())])
        .await
        .unwrap();
    driver.apply(&z, &[update(&v1, &v2)]).await.unwrap();
    driver.apply(&z, &[update(&v2, &v1)]).await.unwrap();
    assert_eq!(batches(&emulator), 3, "no batch refused or resent");
    assert!(driver.notes().is_empty());
}
