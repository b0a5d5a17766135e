//! The `webhook` driver's stories against the reference external-dns webhook server
//! (in-process, 127.0.0.1:0, written from the protocol text): what the provider
//! conformance suite does not cover. Every count is read from the server's own
//! request counters, so a blind resend or an extra read would show.
use dnsplane_applier::account::Account;
use dnsplane_applier::apply::{BatchReport, execute};
use dnsplane_applier::provider::call::CallCx;
use dnsplane_applier::provider::webhook::{MAX_ERROR_TEXT, WebhookConfig, WebhookProvider};
use dnsplane_applier::provider::{ErrorClass, Provider};
use dnsplane_applier::retry::RetryPolicy;
use dnsplane_common::{
    Change, ChangeKind, Name, Outcome, RRSet, RRSetOp, RecordKey, RecordType, SetId,
};
use dnsplane_e2e::webhook_reference::{Counts, MEDIA, RefEndpoint, RefProperty, WebhookReference};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Setup {
    server: WebhookReference,
    zone: Name,
    provider: Arc<WebhookProvider>,
}

fn zone() -> Name {
    Name::parse("hook.test").expect("zone")
}

async fn setup_with(filter: serde_json::Value, zones: &[&str], timeout: Duration) -> Setup {
    let server = WebhookReference::start(filter).await;
    let zones: Vec<Name> = zones
        .iter()
        .map(|z| Name::parse(z).expect("zone"))
        .collect();
    let provider = WebhookProvider::new(
        &WebhookConfig {
            url: server.url(),
            timeout,
            ..WebhookConfig::default()
        },
        &zones,
    )
    .expect("provider");
    Setup {
        server,
        zone: zones[0].clone(),
        provider: Arc::new(provider),
    }
}

async fn setup() -> Setup {
    setup_with(
        json!({"include": ["hook.test"]}),
        &["hook.test"],
        Duration::from_secs(15),
    )
    .await
}

fn a(label: &str, ttl: u32, values: &[&str]) -> RRSet {
    let key = RecordKey::new(zone(), zone().prepend(label).expect("name"), RecordType::A);
    RRSet::new(key, ttl, values).expect("set")
}

fn creates(sets: &[RRSet]) -> Vec<Change> {
    sets.iter()
        .map(|s| Change::new(ChangeKind::Create, vec![RRSetOp::create(s.clone())]))
        .collect()
}

async fn run(s: &Setup, changes: &[Change]) -> BatchReport {
    let account = Account::new("hook", s.provider.clone(), std::slice::from_ref(&s.zone));
    let cx = CallCx::new("hook", Some(s.zone.clone()));
    tokio::time::timeout(
        Duration::from_secs(60),
        execute(&account.stack, &cx, changes, &RetryPolicy::default()),
    )
    .await
    .expect("the batch settles in time")
}

fn outcomes(r: &BatchReport) -> Vec<Outcome> {
    r.results.iter().map(|x| x.outcome).collect()
}

fn ep(name: &str, rtype: &str, targets: &[&str]) -> RefEndpoint {
    RefEndpoint {
        dns_name: name.into(),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        record_type: rtype.into(),
        ..RefEndpoint::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negotiation_requires_the_exact_media_type_and_fails_clearly() {
    let s = setup().await;
    // The same type with a space after `;` is another string to external-dns.
    s.server.faults(|f| {
        f.negotiate_content_type = Some("application/external.dns.webhook+json; version=1".into())
    });
    let e = s
        .provider
        .list(&s.zone, None)
        .await
        .expect_err("a wrong media type");
    assert_eq!(e.class, ErrorClass::Permanent, "{e}");
    assert!(
        e.message.contains("Content-Type") && e.message.contains(MEDIA),
        "{e}"
    );
    assert_eq!(
        s.server.counts().negotiations,
        1,
        "a permanent answer is not retried"
    );
    assert_eq!(
        s.server.counts().reads,
        0,
        "nothing else before a negotiation"
    );
    // Not remembered: once the server answers right, the next call negotiates again,
    // and only once for every call after it.
    s.server.faults(|f| f.negotiate_content_type = None);
    s.provider.list(&s.zone, None).await.expect("negotiated");
    // A fresh read (the listing cache would answer the second listing itself).
    s.provider.forget(&s.zone);
    s.provider.list(&s.zone, None).await.expect("listed");
    assert_eq!(s.server.counts().negotiations, 2);
    assert_eq!(s.server.counts().reads, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_be_reached_is_transient_after_bounded_tries() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let provider = WebhookProvider::new(
        &WebhookConfig {
            url: format!("http://127.0.0.1:{port}"),
            ..WebhookConfig::default()
        },
        &[zone()],
    )
    .expect("provider");
    let started = Instant::now();
    let e = provider
        .list(&zone(), None)
        .await
        .expect_err("nobody listens");
    assert_eq!(e.class, ErrorClass::Transient, "{e}");
    assert!(e.message.contains("cannot connect"), "{e}");
    assert_eq!(provider.negotiations(), 5, "external-dns's five tries");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "bounded backoff"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zone_outside_the_domain_filter_is_refused_permanently() {
    let s = setup_with(
        json!({"include": ["other.test"], "exclude": []}),
        &["hook.test"],
        Duration::from_secs(15),
    )
    .await;
    let e = s
        .provider
        .list(&s.zone, None)
        .await
        .expect_err("outside the filter");
    assert_eq!(e.class, ErrorClass::Permanent, "{e}");
    assert!(
        e.message.contains("hook.test.")
            && e.message.contains("domain filter")
            && e.message.contains("other.test"),
        "{e}"
    );
    let report = run(&s, &creates(&[a("x", 300, &["192.0.2.1"])])).await;
    assert_eq!(outcomes(&report), [Outcome::RejectedPermanent]);
    assert_eq!(s.server.counts().applies, 0, "nothing is sent");
    assert!(s.provider.zones().await.expect("zones").is_empty());

    // Regex mode: an excluded name inside an admitted zone is refused as invalid.
    let r = setup_with(
        json!({"regexInclude": "hook\\.test$", "regexExclude": "^int\\."}),
        &["hook.test"],
        Duration::from_secs(15),
    )
    .await;
    let e = r
        .provider
        .apply(&r.zone, &[RRSetOp::create(a("int", 300, &["192.0.2.1"]))])
        .await
        .expect_err("an excluded name");
    assert_eq!(e.class, ErrorClass::Invalid, "{e}");
    assert_eq!(r.server.counts().applies, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_instead_of_204_is_an_error_and_is_read_back() {
    let s = setup().await;
    s.server.faults(|f| f.answer_200 = true);
    let set = a("ok200", 300, &["192.0.2.1"]);
    let e = s
        .provider
        .apply(&s.zone, &[RRSetOp::create(set.clone())])
        .await
        .expect_err("200 is not the protocol's success");
    assert_eq!(e.class, ErrorClass::Ambiguous, "{e}");
    assert!(
        e.message.contains("200") && e.message.contains("204"),
        "{e}"
    );
    assert_eq!(e.key.as_ref(), Some(&set.key));
    // Through the batch algorithm: read back, and what the server did is settled.
    let other = a("ok200b", 300, &["192.0.2.2"]);
    let before = s.server.counts();
    let report = run(&s, &creates(&[other])).await;
    assert_eq!(outcomes(&report), [Outcome::AlreadyApplied]);
    assert_eq!(s.server.counts().applies - before.applies, 1, "no resend");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_then_502_settles_already_applied_with_one_read_back_and_no_resend() {
    let s = setup().await;
    s.provider.list(&s.zone, None).await.expect("negotiated");
    s.server.faults(|f| f.commit_then_502 = true);
    let sets: Vec<RRSet> = (0..3)
        .map(|i| a(&format!("c{i}"), 300, &["192.0.2.9"]))
        .collect();
    let before = s.server.counts();
    let report = run(&s, &creates(&sets)).await;
    assert_eq!(outcomes(&report), vec![Outcome::AlreadyApplied; 3]);
    let after = s.server.counts();
    assert_eq!(
        after,
        Counts {
            negotiations: before.negotiations,
            // The driver's read before the POST, and the one read-back.
            reads: before.reads + 2,
            applies: before.applies + 1,
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_failures_are_classified_where_they_are_read() {
    let s = setup_with(json!({}), &["hook.test"], Duration::from_secs(1)).await;
    let set = a("f", 300, &["192.0.2.1"]);
    // A 4xx: invalid, with the server's body cut short.
    let body = format!("record refused: {}", "x".repeat(2000));
    s.server.faults(|f| f.apply_status = Some((422, body)));
    let e = s
        .provider
        .apply(&s.zone, &[RRSetOp::create(set.clone())])
        .await
        .expect_err("422");
    assert_eq!(e.class, ErrorClass::Invalid, "{e}");
    assert!(
        e.message.contains("422") && e.message.contains("record refused: xxx"),
        "{e}"
    );
    assert!(
        e.message.len() < MAX_ERROR_TEXT + 100,
        "{}",
        e.message.len()
    );
    // A 5xx to the POST: ambiguous (it may have committed).
    s.server
        .faults(|f| f.apply_status = Some((500, "boom".into())));
    let e = s
        .provider
        .apply(&s.zone, &[RRSetOp::create(set.clone())])
        .await
        .expect_err("500");
    assert_eq!(e.class, ErrorClass::Ambiguous, "{e}");
    // Sleeping past the client's timeout: ambiguous, not a blind resend.
    s.server.faults(|f| {
        f.apply_status = None;
        f.sleep = Some(Duration::from_secs(3));
    });
    let started = Instant::now();
    let e = s
        .provider
        .apply(&s.zone, &[RRSetOp::create(set.clone())])
        .await
        .expect_err("timeout");
    assert_eq!(e.class, ErrorClass::Ambiguous, "{e}");
    assert!(e.message.contains("timed out"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(3));
    // A 5xx to a read: transient.
    s.server.faults(|f| {
        f.sleep = None;
        f.records_status = Some(503);
    });
    let e = s.provider.list(&s.zone, None).await.expect_err("503");
    assert_eq!(e.class, ErrorClass::Transient, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_records_are_an_error_never_an_empty_zone() {
    let s = setup().await;
    let set = a("keep", 300, &["192.0.2.1"]);
    s.provider
        .apply(&s.zone, &[RRSetOp::create(set.clone())])
        .await
        .expect("create");
    for body in [
        "",
        "{\"records\": []}",
        "[{\"dnsName\": 5}]",
        "<html>oops</html>",
    ] {
        s.server.faults(|f| f.records_body = Some(body.into()));
        let e = s.provider.list(&s.zone, None).await.expect_err(body);
        assert_eq!(e.class, ErrorClass::Transient, "{body}: {e}");
        assert!(e.message.contains("cannot be decoded"), "{e}");
    }
    // A delete on doubt is not sent.
    let report = run(
        &s,
        &[Change::new(
            ChangeKind::Delete,
            vec![RRSetOp::delete(set.clone())],
        )],
    )
    .await;
    assert_eq!(outcomes(&report), [Outcome::Failed]);
    assert_eq!(s.server.counts().applies, 1, "only the create");
    // Go's `null` for an empty slice is an empty server, as external-dns reads it.
    s.server.faults(|f| f.records_body = Some("null".into()));
    assert!(
        s.provider
            .list(&s.zone, None)
            .await
            .expect("null")
            .rrsets
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_204_that_applied_nothing_ends_in_conflict_not_applied() {
    let s = setup().await;
    s.server.faults(|f| f.drop_writes = true);
    let report = run(&s, &creates(&[a("dropped", 300, &["192.0.2.1"])])).await;
    assert_eq!(outcomes(&report), [Outcome::Conflict]);
    assert!(
        report.results[0].message.contains("did not take"),
        "{:?}",
        report.results[0]
    );
    // The read-back explains nothing (the precondition still holds): reported with
    // what is there, not resent.
    assert_eq!(s.server.counts().applies, 1, "no resend");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sets_and_properties_round_trip_as_external_dns_writes_them() {
    let s = setup().await;
    let key = |label: &str, t: RecordType, set: &str| {
        RecordKey::new(zone(), zone().prepend(label).expect("name"), t)
            .in_set(SetId::new(set).expect("set"))
    };
    let eu = RRSet::with_properties(
        key("www", RecordType::A, "eu"),
        60,
        &["192.0.2.1"],
        &[("webhook/weight", "10")],
    )
    .expect("set");
    let us = RRSet::with_properties(
        key("www", RecordType::A, "us"),
        60,
        &["192.0.2.2"],
        &[("webhook/weight", "90")],
    )
    .expect("set");
    let txt = RRSet::new(
        key("www", RecordType::Txt, ""),
        300,
        &["\"heritage=external-dns,external-dns/owner=dnsplane\""],
    )
    .expect("txt");
    let cname = RRSet::new(
        key("alias", RecordType::Cname, ""),
        300,
        &["www.hook.test."],
    )
    .expect("cname");
    let all = [eu.clone(), us.clone(), txt.clone(), cname.clone()];
    s.provider
        .apply(
            &s.zone,
            &all.iter().cloned().map(RRSetOp::create).collect::<Vec<_>>(),
        )
        .await
        .expect("create");
    let mut listed = s.provider.list(&s.zone, None).await.expect("list").rrsets;
    listed.sort_by(|x, y| x.key.cmp(&y.key));
    let mut want = all.to_vec();
    want.sort_by(|x, y| x.key.cmp(&y.key));
    assert_eq!(listed, want);
    // On the wire: no trailing dots, literal TXT quotes, the set and its properties.
    let stored = s.server.records();
    let www_eu = stored
        .iter()
        .find(|e| e.set_identifier == "eu")
        .expect("the eu set");
    assert_eq!(www_eu.dns_name, "www.hook.test");
    assert_eq!(www_eu.record_ttl, 60);
    assert_eq!(
        www_eu.provider_specific,
        [RefProperty {
            name: "webhook/weight".into(),
            value: "10".into()
        }]
    );
    let t = stored.iter().find(|e| e.record_type == "TXT").expect("txt");
    assert_eq!(
        t.targets,
        ["\"heritage=external-dns,external-dns/owner=dnsplane\""]
    );
    let c = stored
        .iter()
        .find(|e| e.record_type == "CNAME")
        .expect("cname");
    assert_eq!(c.targets, ["www.hook.test"]);

    // An update of one set names it, leaves the other alone, and keeps the labels the
    // server holds.
    s.server.insert(RefEndpoint {
        labels: [("owner".to_string(), "c1".to_string())].into(),
        ..s.server
            .records()
            .into_iter()
            .find(|e| e.set_identifier == "us")
            .expect("us")
    });
    let us2 = RRSet::with_properties(
        us.key.clone(),
        60,
        &["192.0.2.3"],
        &[("webhook/weight", "50")],
    )
    .expect("us2");
    s.provider
        .apply(&s.zone, &[RRSetOp::update(us.clone(), us2.clone())])
        .await
        .expect("update");
    let changes = s.server.last_changes().expect("a POST");
    assert_eq!(changes["updateOld"][0]["setIdentifier"], "us");
    assert_eq!(changes["updateNew"][0]["labels"]["owner"], "c1");
    assert_eq!(changes["updateNew"][0]["targets"], json!(["192.0.2.3"]));
    assert!(
        changes.get("create").is_none() && changes.get("delete").is_none(),
        "{changes}"
    );
    let listed = s
        .provider
        .list(&s.zone, Some(std::slice::from_ref(&eu.key.name)))
        .await
        .expect("list")
        .rrsets;
    assert!(listed.contains(&eu) && listed.contains(&us2), "{listed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_keep_to_the_zone_and_what_dnsplane_models() {
    let s = setup_with(
        json!({"include": ["hook.test"], "exclude": ["hidden.hook.test"]}),
        &["hook.test", "sub.hook.test"],
        Duration::from_secs(15),
    )
    .await;
    s.server.insert(ep(
        "hook.test",
        "SOA",
        &["ns1.hook.test hostmaster.hook.test 1 7200 3600 1209600 300"],
    ));
    s.server
        .insert(ep("hinfo.hook.test", "HINFO", &["\"pc\" \"linux\""]));
    s.server.insert(ep("a.sub.hook.test", "A", &["192.0.2.5"]));
    s.server.insert(ep("a.other.test", "A", &["192.0.2.6"]));
    s.server
        .insert(ep("x.hidden.hook.test", "A", &["192.0.2.7"]));
    // Written without a TTL: read as the account's default, and a write of that TTL
    // reads back equal.
    s.server.insert(ep("nottl.hook.test", "A", &["192.0.2.8"]));
    let listed = s.provider.list(&s.zone, None).await.expect("list").rrsets;
    assert_eq!(listed, [a("nottl", 300, &["192.0.2.8"])]);
    let child = s
        .provider
        .list(&Name::parse("sub.hook.test").expect("zone"), None)
        .await
        .expect("the child zone")
        .rrsets;
    assert_eq!(child.len(), 1);
    assert_eq!(child[0].key.name.as_str(), "a.sub.hook.test.");
    // The SOA is never written over: a create of the zone's apex A leaves it there.
    let apex = RRSet::new(
        RecordKey::new(zone(), zone(), RecordType::A),
        300,
        &["192.0.2.1"],
    )
    .expect("apex");
    let report = run(&s, &creates(&[apex])).await;
    assert_eq!(outcomes(&report), [Outcome::Applied]);
    assert!(s.server.records().iter().any(|e| e.record_type == "SOA"));
}

/// Issue 32, item 5: the driver keeps a listing cache as the others do. A batch makes
/// two `GET /records` (the fresh precondition read and the read-back), the listing
/// after it none, and the cache's serial moves with the batch; a foreign write shows
/// at a fresh read (`forget`), never through the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_state_listing_reads_nothing_and_a_batch_reads_twice() {
    let s = setup().await;
    assert_eq!(
        s.provider.serial(&s.zone).await.expect("serial"),
        None,
        "no count before the first whole read"
    );
    let first = s.provider.list(&s.zone, None).await.expect("list");
    let filled = s.provider.serial(&s.zone).await.expect("serial");
    assert!(
        filled.is_some() && first.serial == filled,
        "{first:?} {filled:?}"
    );
    let before = s.server.counts();
    let sets: Vec<RRSet> = (0..3)
        .map(|i| a(&format!("s{i}"), 300, &["192.0.2.3"]))
        .collect();
    let report = run(&s, &creates(&sets)).await;
    assert_eq!(outcomes(&report), vec![Outcome::Applied; 3]);
    let after_batch = s.server.counts();
    assert_eq!(after_batch.reads, before.reads + 2, "read, then read back");
    assert_eq!(after_batch.applies, before.applies + 1);
    let listed = s.provider.list(&s.zone, None).await.expect("list");
    assert_eq!(
        s.server.counts(),
        after_batch,
        "the listing after the batch comes from the cache"
    );
    let mut got = listed.rrsets.clone();
    got.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(got, sets);
    assert_ne!(listed.serial, filled, "the batch moved the cache's count");
    // A foreign write: not in the cache, but in a fresh read.
    s.server
        .insert(ep("foreign.hook.test", "A", &["192.0.2.77"]));
    let cached = s.provider.list(&s.zone, None).await.expect("list");
    assert_eq!(cached.rrsets.len(), 3);
    s.provider.forget(&s.zone);
    let fresh = s.provider.list(&s.zone, None).await.expect("list");
    assert_eq!(fresh.rrsets.len(), 4, "{:?}", fresh.rrsets);
    assert_eq!(s.server.counts().reads, after_batch.reads + 1);
}
