//! The `route53` driver against servers that speak Route 53's API: what the provider
//! conformance suite does not cover (it runs every driver the same way).
use dnsplane_applier::provider::route53::{Route53Config, Route53Provider, ZoneVisibility};
use dnsplane_applier::provider::{ErrorClass, Provider};
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
use dnsplane_e2e::moto::Moto;
use std::collections::BTreeMap;

/// A public and a private hosted zone of one name are two zones: `zone_ids` or
/// `zone_visibility` says which one an account means, and without either the name is
/// refused as ambiguous rather than written to whichever came first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_and_a_private_zone_of_one_name_are_kept_apart() {
    let Some(moto) = Moto::start() else { return };
    let zone = Name::parse("split.test").expect("zone");
    let public = moto.create_zone(&zone, false);
    let private = moto.create_zone(&zone, true);
    let driver = |cfg: Route53Config| Route53Provider::with_env(&cfg, Moto::env()).expect("driver");
    let by_id = |id: &str| {
        driver(Route53Config {
            zone_ids: BTreeMap::from([(zone.clone(), id.to_string())]),
            ..moto.config()
        })
    };
    let key = RecordKey::new(
        zone.clone(),
        zone.prepend("www").expect("name"),
        RecordType::A,
    );
    let inside = RRSet::new(key.clone(), 60, &["10.0.0.1"]).expect("set");
    let outside = RRSet::new(key.clone(), 60, &["192.0.2.1"]).expect("set");
    by_id(&private)
        .apply(&zone, &[RRSetOp::create(inside.clone())])
        .await
        .expect("private write");
    let public_view = driver(Route53Config {
        zone_visibility: ZoneVisibility::Public,
        ..moto.config()
    });
    public_view
        .apply(&zone, &[RRSetOp::create(outside.clone())])
        .await
        .expect("public write");

    let names = vec![key.name.clone()];
    let read = async |p: Route53Provider| p.list(&zone, Some(&names)).await.expect("list").rrsets;
    assert_eq!(read(by_id(&private)).await, vec![inside]);
    assert_eq!(read(by_id(&public)).await, vec![outside.clone()]);
    assert_eq!(read(public_view).await, vec![outside]);

    let e = driver(moto.config())
        .list(&zone, None)
        .await
        .expect_err("two zones of one name");
    assert_eq!(e.class, ErrorClass::Permanent, "{e}");
    assert!(
        e.message.contains("ambiguous")
            && e.message.contains(&private)
            && e.message.contains(&public),
        "{e}"
    );
    let e = driver(moto.config())
        .list(&Name::parse("missing.test").expect("zone"), None)
        .await
        .expect_err("no such zone");
    assert!(e.message.contains("does not exist"), "{e}");
}
