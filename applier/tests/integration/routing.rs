//! Routing-policy sets and provider-specific properties through the batch algorithm:
//! Route 53 (real HTTP to its emulator) writes and reads them back equal; a driver
//! that cannot write them refuses those changes alone as INVALID.
use dnsplane_applier::MemoryStore;
use dnsplane_applier::account::Account;
use dnsplane_applier::apply::execute;
use dnsplane_applier::provider::call::CallCx;
use dnsplane_applier::provider::memory::MemoryProvider;
use dnsplane_applier::provider::route53::{Route53Config, Route53Provider};
use dnsplane_applier::provider::{ErrorClass, Provider};
use dnsplane_applier::retry::RetryPolicy;
use dnsplane_common::{
    Change, ChangeKind, Name, Outcome, RRSet, RRSetOp, RecordKey, RecordResult, RecordType, SetId,
};
use dnsplane_emulate::{Route53Emulator, Route53Options};
use std::sync::Arc;

fn zone() -> Name {
    Name::parse("sets.test").unwrap()
}

/// An emulator with zone `sets.test.`, its hosted zone id, and its config.
async fn route53() -> (Route53Emulator, String, Route53Config) {
    crate::support::route53_with_zone(&zone(), Route53Options::default()).await
}

fn driver(cfg: &Route53Config) -> Arc<Route53Provider> {
    Arc::new(crate::support::route53_driver(cfg))
}

fn key(label: &str, t: RecordType, set: &str) -> RecordKey {
    RecordKey::new(zone(), zone().prepend(label).unwrap(), t).in_set(SetId::new(set).unwrap())
}

fn set(key: RecordKey, ttl: u32, values: &[&str], props: &[(&str, &str)]) -> RRSet {
    RRSet::with_properties(key, ttl, values, props).unwrap()
}

fn change(kind: ChangeKind, op: RRSetOp) -> Change {
    Change::new(kind, vec![op])
}

async fn run(provider: Arc<dyn Provider>, changes: &[Change]) -> Vec<RecordResult> {
    let account = Account::new("test", provider, &[zone()]);
    let cx = CallCx::new("test", Some(zone()));
    execute(&account.stack, &cx, changes, &RetryPolicy::default())
        .await
        .results
}

fn outcomes(results: &[RecordResult]) -> Vec<Outcome> {
    results.iter().map(|r| r.outcome).collect()
}

/// What a driver that remembers nothing reads at `label`.
async fn read_at(cfg: &Route53Config, label: &str) -> Vec<RRSet> {
    let names = [zone().prepend(label).unwrap()];
    let fresh = driver(cfg);
    let by_name = fresh.list(&zone(), Some(&names)).await.unwrap().rrsets;
    let whole: Vec<RRSet> = fresh
        .list(&zone(), None)
        .await
        .unwrap()
        .rrsets
        .into_iter()
        .filter(|r| r.key.name == names[0])
        .collect();
    assert_eq!(by_name, whole, "a read of names and of the zone agree");
    by_name
}

/// Two weighted sets at one name: created, read back equal (in key order), one's
/// weight changed, both deleted; each step one batch that Route 53 accepts.
#[tokio::test]
async fn weighted_sets_are_written_read_back_equal_updated_and_deleted() {
    let (emulator, id, cfg) = route53().await;
    let driver = driver(&cfg);
    let eu = set(
        key("w", RecordType::A, "eu"),
        60,
        &["192.0.2.1"],
        &[("aws/weight", "10")],
    );
    let us = set(
        key("w", RecordType::A, "us"),
        60,
        &["192.0.2.2", "192.0.2.3"],
        &[("aws/weight", "20"), ("aws/health-check-id", "hc-1")],
    );
    let r = run(
        driver.clone(),
        &[
            change(ChangeKind::Create, RRSetOp::create(us.clone())),
            change(ChangeKind::Create, RRSetOp::create(eu.clone())),
        ],
    )
    .await;
    assert_eq!(outcomes(&r), [Outcome::Applied; 2], "{r:?}");
    assert_eq!(read_at(&cfg, "w").await, [eu.clone(), us.clone()]);
    let weights: Vec<(Option<String>, Option<u64>)> = emulator
        .rrsets(&id)
        .into_iter()
        .filter(|v| v.name == "w.sets.test.")
        .map(|v| (v.set_identifier, v.weight))
        .collect();
    assert_eq!(
        weights,
        [(Some("eu".into()), Some(10)), (Some("us".into()), Some(20))]
    );

    let heavier = set(eu.key.clone(), 60, &["192.0.2.1"], &[("aws/weight", "30")]);
    let r = run(
        driver.clone(),
        &[change(
            ChangeKind::Update,
            RRSetOp::update(eu.clone(), heavier.clone()),
        )],
    )
    .await;
    assert_eq!(outcomes(&r), [Outcome::Applied], "{r:?}");
    assert_eq!(read_at(&cfg, "w").await, [heavier.clone(), us.clone()]);

    // Deleted by a driver that only knows what it read: Route 53 compares exactly.
    let other = self::driver(&cfg);
    let r = run(
        other,
        &[
            change(ChangeKind::Delete, RRSetOp::delete(heavier)),
            change(ChangeKind::Delete, RRSetOp::delete(us)),
        ],
    )
    .await;
    assert_eq!(outcomes(&r), [Outcome::Applied; 2], "{r:?}");
    assert!(read_at(&cfg, "w").await.is_empty());
}

/// An alias to a name of the zone needs no property and targets the zone's own hosted
/// zone; one elsewhere names its hosted zone, and can turn off target health. Both
/// read back equal and are deleted as read.
#[tokio::test]
async fn aliases_are_written_and_read_back_equal() {
    let (emulator, id, cfg) = route53().await;
    let driver = driver(&cfg);
    let target = set(key("target", RecordType::A, ""), 300, &["192.0.2.5"], &[]);
    let same_zone = set(
        key("www", RecordType::A, ""),
        300,
        &["Target.Sets.Test"],
        &[("alias", "true")],
    );
    let elb = set(
        key("lb", RecordType::A, "blue"),
        0,
        &["dualstack.lb-1.eu-west-1.elb.amazonaws.com"],
        &[
            ("alias", "true"),
            ("aws/target-hosted-zone", "/hostedzone/z32o12xqlntsw2"),
            ("aws/evaluate-target-health", "false"),
            ("aws/failover", "primary"),
        ],
    );
    assert_eq!(same_zone.ttl, 0, "an alias has no TTL of its own");
    let r = run(
        driver.clone(),
        &[
            change(ChangeKind::Create, RRSetOp::create(target.clone())),
            change(ChangeKind::Create, RRSetOp::create(same_zone.clone())),
            change(ChangeKind::Create, RRSetOp::create(elb.clone())),
        ],
    )
    .await;
    assert_eq!(outcomes(&r), [Outcome::Applied; 3], "{r:?}");
    assert_eq!(read_at(&cfg, "www").await, std::slice::from_ref(&same_zone));
    assert_eq!(read_at(&cfg, "lb").await, std::slice::from_ref(&elb));

    // As Route 53 holds them.
    let views = emulator.rrsets(&id);
    let view = |name: &str| {
        views
            .iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("{name} in {views:?}"))
    };
    let www = view("www.sets.test.");
    let alias = www.alias.as_ref().unwrap();
    assert_eq!(
        (alias.hosted_zone_id.as_str(), alias.dns_name.as_str()),
        (id.as_str(), "target.sets.test.")
    );
    assert!(alias.evaluate_target_health && www.ttl.is_none() && www.values.is_empty());
    let lb = view("lb.sets.test.");
    let alias = lb.alias.as_ref().unwrap();
    assert_eq!(alias.hosted_zone_id, "Z32O12XQLNTSW2");
    assert!(!alias.evaluate_target_health);
    assert_eq!(
        (lb.set_identifier.as_deref(), lb.failover.as_deref()),
        (Some("blue"), Some("PRIMARY"))
    );

    let r = run(
        self::driver(&cfg),
        &[
            change(ChangeKind::Delete, RRSetOp::delete(elb)),
            change(ChangeKind::Delete, RRSetOp::delete(same_zone)),
        ],
    )
    .await;
    assert_eq!(outcomes(&r), [Outcome::Applied; 2], "{r:?}");
    assert!(read_at(&cfg, "www").await.is_empty() && read_at(&cfg, "lb").await.is_empty());
}

/// A property Route 53's driver does not know is refused before any call, naming it;
/// its batch-mate is written. A direct call is refused the same way.
#[tokio::test]
async fn an_unknown_property_is_invalid_and_its_batch_mates_are_written() {
    let (emulator, _, cfg) = route53().await;
    let driver = driver(&cfg);
    let odd = set(
        key("odd", RecordType::A, ""),
        60,
        &["192.0.2.8"],
        &[("webhook/colour", "blue")],
    );
    let plain = set(key("plain", RecordType::A, ""), 60, &["192.0.2.9"], &[]);
    let writes = || {
        emulator
            .stats()
            .requests
            .get("ChangeResourceRecordSets")
            .copied()
            .unwrap_or(0)
    };
    let r = run(
        driver.clone(),
        &[
            change(ChangeKind::Create, RRSetOp::create(odd.clone())),
            change(ChangeKind::Create, RRSetOp::create(plain.clone())),
        ],
    )
    .await;
    assert_eq!(outcomes(&r), [Outcome::Invalid, Outcome::Applied], "{r:?}");
    assert!(
        r[0].message
            .contains("route53 cannot write provider-specific property \"webhook/colour\""),
        "{}",
        r[0].message
    );
    assert_eq!(writes(), 1, "one batch, without the refused change");
    assert_eq!(read_at(&cfg, "plain").await, [plain]);
    assert!(read_at(&cfg, "odd").await.is_empty());

    let e = driver
        .apply(&zone(), &[RRSetOp::create(odd.clone())])
        .await
        .unwrap_err();
    assert_eq!(
        (e.class, e.key.as_ref()),
        (ErrorClass::Invalid, Some(&odd.key))
    );
    assert!(e.message.contains("webhook/colour"), "{e}");
    assert_eq!(writes(), 1, "refused before any call");
}

/// The memory driver has no sets and no properties: a change with either is INVALID,
/// saying so; its batch-mate is written, and nothing is written without them.
#[tokio::test]
async fn the_memory_driver_refuses_sets_and_properties() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::open(dir.path()).unwrap());
    let memory = Arc::new(MemoryProvider::new(store, vec![zone()]).unwrap());
    let in_set = set(
        key("w", RecordType::A, "eu"),
        60,
        &["192.0.2.1"],
        &[("aws/weight", "10")],
    );
    let with_property = set(
        key("p", RecordType::A, ""),
        60,
        &["192.0.2.2"],
        &[("aws/health-check-id", "hc")],
    );
    let plain = set(key("plain", RecordType::A, ""), 60, &["192.0.2.3"], &[]);
    let r = run(
        memory.clone(),
        &[
            change(ChangeKind::Create, RRSetOp::create(in_set)),
            change(ChangeKind::Create, RRSetOp::create(with_property)),
            change(ChangeKind::Create, RRSetOp::create(plain.clone())),
        ],
    )
    .await;
    assert_eq!(
        outcomes(&r),
        [Outcome::Invalid, Outcome::Invalid, Outcome::Applied],
        "{r:?}"
    );
    assert!(
        r[0].message
            .contains("memory has no routing-policy sets (setIdentifier)"),
        "{}",
        r[0].message
    );
    assert!(
        r[1].message
            .contains("memory cannot write provider-specific property \"aws/health-check-id\""),
        "{}",
        r[1].message
    );
    let listed = memory.list(&zone(), None).await.unwrap().rrsets;
    assert_eq!(listed, [plain]);
}
