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

/// IRSA: with `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN`, the driver exchanges
/// the token at STS (`AssumeRoleWithWebIdentity`, unsigned, as AWS documents it) and
/// signs with the temporary keys and session token it gets. No STS can run here: a
/// stub on loopback checks the exchange, and that it happens once while the keys last;
/// moto takes the writes signed with them (it checks no signature).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_identity_credentials_are_exchanged_at_sts() {
    use axum::extract::State;
    use std::sync::{Arc, Mutex};
    let Some(moto) = Moto::start() else { return };
    let zone = Name::parse("irsa.test").expect("zone");
    moto.create_zone(&zone, false);
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    async fn sts(State(seen): State<Arc<Mutex<Vec<String>>>>, body: String) -> String {
        seen.lock().expect("seen").push(body);
        r#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIATEMPORARY0000000</AccessKeyId><SecretAccessKey>temporary-secret</SecretAccessKey><SessionToken>session-token-1</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"#.to_string()
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let sts_url = format!("http://{}", listener.local_addr().expect("addr"));
    let app = axum::Router::new()
        .route("/", axum::routing::post(sts))
        .with_state(seen.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().expect("dir");
    let token = dir.path().join("token");
    std::fs::write(&token, "eyJhbGciOi.jwt.token\n").expect("token");
    let token_path = token.to_str().expect("utf-8").to_string();
    let env: dnsplane_applier::provider::route53::credentials::EnvReader =
        std::sync::Arc::new(move |k| match k {
            "AWS_WEB_IDENTITY_TOKEN_FILE" => Some(token_path.clone()),
            "AWS_ROLE_ARN" => Some("arn:aws:iam::123456789012:role/dnsplane".into()),
            _ => None,
        });
    let driver = Route53Provider::with_env(
        &Route53Config {
            sts_endpoint: sts_url,
            ..moto.config()
        },
        env,
    )
    .expect("driver");
    let key = RecordKey::new(
        zone.clone(),
        zone.prepend("www").expect("name"),
        RecordType::A,
    );
    let set = RRSet::new(key, 60, &["192.0.2.10"]).expect("set");
    driver
        .apply(&zone, &[RRSetOp::create(set.clone())])
        .await
        .expect("write with STS keys");
    driver
        .apply(&zone, &[RRSetOp::delete(set)])
        .await
        .expect("a second write, same keys");
    let seen = seen.lock().expect("seen").clone();
    assert_eq!(
        seen.len(),
        1,
        "one exchange, kept until it nears expiry: {seen:?}"
    );
    for field in [
        "Action=AssumeRoleWithWebIdentity",
        "RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fdnsplane",
        "WebIdentityToken=eyJhbGciOi.jwt.token",
        "RoleSessionName=dnsplane",
    ] {
        assert!(seen[0].contains(field), "{field} not in {}", seen[0]);
    }
}

/// Route 53 has no serial, and a listing of a 200,000-set zone is 667 requests at five
/// a second. The driver trusts its own writes: once read, a zone in steady state costs
/// no request per sync, a change one; another writer's set shows once a conflict reads
/// its name, or at the drift check. Counted by the emulator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_zone_costs_no_listing_and_the_drift_check_finds_other_writers() {
    use dnsplane_applier::account::Account;
    use dnsplane_applier::apply::execute;
    use dnsplane_applier::provider::call::CallCx;
    use dnsplane_applier::retry::RetryPolicy;
    use dnsplane_common::{Change, ChangeKind, Outcome};
    use std::sync::Arc;
    use std::time::Duration;

    let (emulator, zone, cfg) = unthrottled_emulator("steady.test").await;
    let env = crate::conformance::subjects::emulator_env;
    let driver = Arc::new(
        Route53Provider::with_env(&cfg, env())
            .expect("driver")
            .with_drift_check(Duration::from_secs(2)),
    );
    let other = Route53Provider::with_env(&cfg, env()).expect("another writer");
    let lists = || {
        emulator
            .stats()
            .requests
            .get("ListResourceRecordSets")
            .copied()
            .unwrap_or(0)
    };
    let a = |label: &str, v: &str| {
        let key = RecordKey::new(
            zone.clone(),
            zone.prepend(label).expect("name"),
            RecordType::A,
        );
        RRSet::new(key, 300, &[v]).expect("set")
    };
    let sets: Vec<RRSet> = (0..700)
        .map(|i| a(&format!("s{i:03}"), "192.0.2.1"))
        .collect();
    for chunk in sets.chunks(350) {
        driver
            .apply(
                &zone,
                &chunk
                    .iter()
                    .cloned()
                    .map(RRSetOp::create)
                    .collect::<Vec<_>>(),
            )
            .await
            .expect("create");
    }
    // The first listing reads the zone whole: 702 sets, 300 a page.
    assert!(
        driver.serial(&zone).await.expect("serial").is_none(),
        "nothing known yet"
    );
    let listed = driver.list(&zone, None).await.expect("list");
    assert_eq!(listed.rrsets.len(), 701, "700 and the apex NS");
    assert_eq!(lists(), 3);
    let serial = driver
        .serial(&zone)
        .await
        .expect("serial")
        .expect("known now");
    // Steady: serials and listings cost nothing.
    for _ in 0..10 {
        assert_eq!(driver.serial(&zone).await.expect("serial"), Some(serial));
        assert_eq!(
            driver.list(&zone, None).await.expect("list").rrsets.len(),
            701
        );
    }
    assert_eq!(lists(), 3, "no listing in steady state");
    // A change of ours: one write, no read, and the count moves by one.
    driver
        .apply(
            &zone,
            &[RRSetOp::update(sets[0].clone(), a("s000", "192.0.2.2"))],
        )
        .await
        .expect("update");
    assert_eq!(
        driver.serial(&zone).await.expect("serial"),
        Some((serial + 1) & 0xffff_ffff)
    );
    let now = driver.list(&zone, None).await.expect("list");
    assert!(now.rrsets.contains(&a("s000", "192.0.2.2")));
    assert_eq!(lists(), 3);

    // Another writer: not seen by the cache, so a create over it is refused by Route 53
    // itself; the read of that one name settles it as CONFLICT and teaches the cache.
    let theirs = a("theirs", "203.0.113.7");
    other
        .apply(&zone, &[RRSetOp::create(theirs.clone())])
        .await
        .expect("theirs");
    assert!(
        !driver
            .list(&zone, None)
            .await
            .expect("list")
            .rrsets
            .contains(&theirs)
    );
    let account = Account::new("aws", driver.clone(), std::slice::from_ref(&zone));
    let cx = CallCx::new("aws", Some(zone.clone()));
    let mine = Change::new(
        ChangeKind::Create,
        vec![RRSetOp::create(a("theirs", "192.0.2.9"))],
    );
    let report = execute(&account.stack, &cx, &[mine], &RetryPolicy::default()).await;
    assert_eq!(
        report.results[0].outcome,
        Outcome::Conflict,
        "{:?}",
        report.results
    );
    assert_eq!(lists(), 4, "one read of one name");
    assert!(
        driver
            .list(&zone, None)
            .await
            .expect("list")
            .rrsets
            .contains(&theirs)
    );

    // A write the cache never hears of shows at the drift check (2 s ±50 % here).
    let quiet = a("quiet", "203.0.113.8");
    other
        .apply(&zone, &[RRSetOp::create(quiet.clone())])
        .await
        .expect("quiet");
    tokio::time::sleep(Duration::from_millis(3100)).await;
    let moved = driver.serial(&zone).await.expect("serial");
    assert_ne!(
        moved,
        Some((serial + 1) & 0xffff_ffff),
        "a drift read gives a new count"
    );
    assert!(
        driver
            .list(&zone, None)
            .await
            .expect("list")
            .rrsets
            .contains(&quiet)
    );
    assert_eq!(
        lists(),
        7,
        "the drift check read the zone whole once more (3 pages)"
    );
}

/// Issue 32, item 4: batches are packed to Route 53's own limits (1,000 values and
/// 32,000 value characters a request), not to a cautious estimate. 600 changes of an
/// A record and its ownership mark — 1,200 values and about 57,000 characters — are
/// two change batches (the estimate made four), every one APPLIED, and the emulator,
/// which enforces both limits, refuses none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_are_packed_to_route53s_own_limits() {
    use dnsplane_applier::account::Account;
    use dnsplane_applier::apply::execute;
    use dnsplane_applier::provider::call::CallCx;
    use dnsplane_applier::retry::RetryPolicy;
    use dnsplane_common::{Change, ChangeKind, Outcome};
    use std::sync::Arc;

    let (emulator, zone, cfg) = unthrottled_emulator("packed.test").await;
    let driver = Arc::new(
        Route53Provider::with_env(&cfg, crate::conformance::subjects::emulator_env())
            .expect("driver"),
    );
    let mut changes = crate::packing::marked_creates(&zone, 600, 0);
    // A set no request can carry (200 values, 40,600 characters): INVALID, named,
    // before any request; its batch-mates go on.
    let values: Vec<String> = (0..200)
        .map(|i| format!("\"{i:03}{}\"", "x".repeat(197)))
        .collect();
    let key = RecordKey::new(
        zone.clone(),
        zone.prepend("huge").expect("name"),
        RecordType::Txt,
    );
    let huge = RRSet::new(key, 300, &values).expect("set");
    changes.push(Change::new(ChangeKind::Create, vec![RRSetOp::create(huge)]));
    let account = Account::new("aws", driver, std::slice::from_ref(&zone));
    let cx = CallCx::new("aws", Some(zone.clone()));
    let report = execute(&account.stack, &cx, &changes, &RetryPolicy::default()).await;
    let (last, rest) = report.results.split_last().expect("results");
    assert!(
        rest.iter().all(|r| r.outcome == Outcome::Applied),
        "{:?}",
        rest.iter().find(|r| r.outcome != Outcome::Applied)
    );
    assert_eq!(last.outcome, Outcome::Invalid, "{last:?}");
    assert!(
        last.message
            .contains("huge.packed.test. TXT is too large for route53"),
        "{}",
        last.message
    );
    let stats = emulator.stats();
    assert_eq!(
        stats.requests.get("ChangeResourceRecordSets").copied(),
        Some(2),
        "{stats:?}"
    );
    assert_eq!(stats.changes_committed, 2, "{stats:?}");
    emulator.stop().await;
}

/// A Route 53 emulator without AWS's request quota, holding one public zone `zone`, and
/// a driver config pointed at it.
async fn unthrottled_emulator(
    zone: &str,
) -> (dnsplane_emulate::Route53Emulator, Name, Route53Config) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let emulator = dnsplane_emulate::Route53Emulator::start(
        listener,
        dnsplane_emulate::Route53Options {
            rate: 0.0,
            ..Default::default()
        },
    )
    .await
    .expect("emulator");
    let zone = Name::parse(zone).expect("zone");
    emulator.create_zone(zone.as_str(), false);
    let cfg = Route53Config {
        endpoint: emulator.endpoint(),
        ..Route53Config::default()
    };
    (emulator, zone, cfg)
}
