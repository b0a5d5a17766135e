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
