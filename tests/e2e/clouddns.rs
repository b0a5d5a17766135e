//! The `clouddns` driver's own stories against the Cloud DNS emulator (in-process, on
//! 127.0.0.1): what the conformance suite does not cover. No Google service can be
//! reached from here; the emulator reproduces Cloud DNS's documented answers
//! (docs/emulators.md), and its request counts say what each story cost.
use dnsplane_applier::account::{Account, AccountOptions};
use dnsplane_applier::apply::execute;
use dnsplane_applier::cache::ListingCache;
use dnsplane_applier::provider::call::CallCx;
use dnsplane_applier::provider::clouddns::credentials::EnvReader;
use dnsplane_applier::provider::clouddns::{CloudDnsConfig, CloudDnsProvider};
use dnsplane_applier::provider::{ErrorClass, Provider};
use dnsplane_applier::quota::{Quota, QuotaOps, QuotaSettings};
use dnsplane_applier::retry::RetryPolicy;
use dnsplane_common::{
    Change, ChangeKind, Name, Outcome, RRSet, RRSetOp, RecordKey, RecordResult, RecordType,
};
use dnsplane_emulate::clouddns::{CloudDnsEmulator, CloudDnsOptions, DEFAULT_TOKEN, Token};
use dnsplane_emulate::{FaultAction, FaultRule};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ZONE: &str = "clouddns.test";
const MANAGED: &str = "clouddns-test";

async fn emulator(opts: CloudDnsOptions) -> (CloudDnsEmulator, Name) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let emu = CloudDnsEmulator::start(listener, opts)
        .await
        .expect("emulator");
    emu.create_zone(MANAGED, ZONE);
    (emu, Name::parse(ZONE).expect("zone"))
}

fn token_env(token: &str) -> EnvReader {
    let token = token.to_string();
    Arc::new(move |k| (k == "GOOGLE_OAUTH_ACCESS_TOKEN").then(|| token.clone()))
}

/// The `clouddns` driver pointed at `emu`, holding `token`; `tweak` adjusts its config.
pub(crate) fn driver(
    emu: &CloudDnsEmulator,
    token: &str,
    tweak: impl FnOnce(&mut CloudDnsConfig),
) -> CloudDnsProvider {
    let mut cfg = CloudDnsConfig {
        endpoint: emu.endpoint(),
        timeout: Duration::from_secs(5),
        ..CloudDnsConfig::new(emu.project())
    };
    tweak(&mut cfg);
    CloudDnsProvider::with_env(&cfg, token_env(token)).expect("driver")
}

fn a(zone: &Name, label: &str, ttl: u32, ip: &str) -> RRSet {
    RRSet::new(
        RecordKey::new(
            zone.clone(),
            zone.prepend(label).expect("name"),
            RecordType::A,
        ),
        ttl,
        &[ip],
    )
    .expect("set")
}

fn creates(sets: &[RRSet]) -> Vec<Change> {
    sets.iter()
        .map(|s| Change::new(ChangeKind::Create, vec![RRSetOp::create(s.clone())]))
        .collect()
}

/// Runs `changes` through an account's stack and the batch algorithm.
async fn run(account: &Account, zone: &Name, changes: &[Change]) -> Vec<RecordResult> {
    let cx = CallCx::new(account.name.as_str(), Some(zone.clone()));
    execute(&account.stack, &cx, changes, &RetryPolicy::default())
        .await
        .results
}

fn account(provider: CloudDnsProvider, zone: &Name) -> Account {
    Account::new("gcp", Arc::new(provider), std::slice::from_ref(zone))
}

/// A 1,000-record batch whose Change commits but is answered with Google's 502 page
/// ("…Please try again in 30 seconds."): the driver calls it ambiguous, the read-back
/// finds every record and settles them ALREADY_APPLIED. Nothing is sent again, and the
/// read-back is the whole zone in the server's pages (1,002 sets: three requests), not
/// a thousand reads by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_502_after_commit_settles_already_applied_without_a_resend() {
    let (emu, zone) = emulator(CloudDnsOptions::default()).await;
    emu.add_fault(
        FaultRule::new(FaultAction::AmbiguousAfterCommit)
            .op("change")
            .times(1),
    );
    let sets: Vec<RRSet> = (0..1000)
        .map(|i| {
            a(
                &zone,
                &format!("r{i:04}"),
                300,
                &format!("198.51.{}.{}", i / 250, i % 250 + 1),
            )
        })
        .collect();
    let acct = account(driver(&emu, DEFAULT_TOKEN, |_| {}), &zone);
    let before = emu.stats();
    let results = run(&acct, &zone, &creates(&sets)).await;
    let outcomes: Vec<Outcome> = results.iter().map(|r| r.outcome).collect();
    assert!(
        outcomes.iter().all(|o| *o == Outcome::AlreadyApplied),
        "{:?}",
        results
            .iter()
            .find(|r| r.outcome != Outcome::AlreadyApplied)
    );
    let stats = emu.stats();
    assert_eq!(stats.faults.get("ambiguous_after_commit"), Some(&1));
    assert_eq!(stats.calls("dns.changes.create"), 1, "no resend: {stats:?}");
    let zone_lookups = stats.calls("dns.managedZones.list") - before.calls("dns.managedZones.list");
    let settle = stats.total_requests() - before.total_requests() - 1 - zone_lookups;
    assert!(
        settle <= 3,
        "{settle} requests to settle after the 502: {stats:?}"
    );
    assert_eq!(emu.rrsets(MANAGED).len(), 1002, "SOA, NS and the thousand");
}

/// Another writer got to some names between the plan and the write: the Change is
/// refused with every failing entry (409 `alreadyExists` by index), the read-back
/// settles those CONFLICT with what the other writer put there, and the rest apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_burst_ends_conflict_with_the_observed_values() {
    let (emu, zone) = emulator(CloudDnsOptions::default()).await;
    let sets: Vec<RRSet> = (0..40)
        .map(|i| a(&zone, &format!("c{i}"), 300, "192.0.2.1"))
        .collect();
    let taken = [4usize, 9, 22, 31, 39];
    let other = driver(&emu, DEFAULT_TOKEN, |_| {});
    let foreign: Vec<RRSetOp> = taken
        .iter()
        .map(|&i| RRSetOp::create(a(&zone, &format!("c{i}"), 60, "203.0.113.7")))
        .collect();
    other
        .apply(&zone, &foreign)
        .await
        .expect("the other writer");
    let acct = account(driver(&emu, DEFAULT_TOKEN, |_| {}), &zone);
    let results = run(&acct, &zone, &creates(&sets)).await;
    for (i, r) in results.iter().enumerate() {
        if taken.contains(&i) {
            assert_eq!(r.outcome, Outcome::Conflict, "change {i}: {r:?}");
            let seen = r.observed.as_ref().expect("observed");
            assert_eq!(
                (seen.ttl, seen.values_vec()),
                (60, vec!["203.0.113.7".to_string()]),
                "{r:?}"
            );
        } else {
            assert_eq!(r.outcome, Outcome::Applied, "change {i}: {r:?}");
        }
    }
    assert_eq!(emu.rrsets(MANAGED).len(), 42);
}

/// Sets over Google's 100 records per set make the Change a 403 `quotaExceeded`:
/// invalid, bisected down to those records, which end INVALID with Google's words;
/// the rest apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_cloud_dns_refuses_end_invalid_and_the_rest_apply() {
    let (emu, zone) = emulator(CloudDnsOptions::default()).await;
    let bad = [3usize, 17];
    let sets: Vec<RRSet> = (0..24)
        .map(|i| {
            let key = RecordKey::new(
                zone.clone(),
                zone.prepend(&format!("v{i}")).expect("name"),
                RecordType::A,
            );
            let n = if bad.contains(&i) { 101 } else { 2 };
            let ips: Vec<String> = (0..n)
                .map(|j| format!("10.0.{}.{}", j / 200, j % 200 + 1))
                .collect();
            RRSet::new(key, 300, &ips).expect("set")
        })
        .collect();
    let acct = account(driver(&emu, DEFAULT_TOKEN, |_| {}), &zone);
    let results = run(&acct, &zone, &creates(&sets)).await;
    for (i, r) in results.iter().enumerate() {
        if bad.contains(&i) {
            assert_eq!(r.outcome, Outcome::Invalid, "change {i}: {r:?}");
            assert!(
                r.message
                    .contains("The change would exceed quota for resource records per rrset."),
                "{}",
                r.message
            );
        } else {
            assert_eq!(r.outcome, Outcome::Applied, "change {i}: {r:?}");
        }
    }
    assert_eq!(emu.rrsets(MANAGED).len(), 2 + 22);
}

/// A burst of 429 `rateLimitExceeded`: retried with backoff until it passes, and each
/// one fed back to the account's quota as a throttle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_answers_are_retried_and_counted_as_throttles() {
    let (emu, zone) = emulator(CloudDnsOptions::default()).await;
    emu.add_fault(FaultRule::new(FaultAction::Throttle).op("change").times(2));
    let quota = Arc::new(
        Quota::new(
            "gcp",
            QuotaSettings {
                rate: 50.0,
                burst: 10,
                ops: QuotaOps::All,
                redis: None,
                replicas: 1,
                key: None,
                max_wait: Duration::from_secs(10),
                recover: Duration::from_secs(5),
                redis_timeout: Duration::from_millis(500),
                probe_interval: Duration::from_millis(100),
                headroom: 0.0,
            },
        )
        .expect("quota"),
    );
    let options = AccountOptions {
        quota: Some(quota.clone()),
        ..AccountOptions::default()
    };
    let acct = Account::with_options(
        "gcp",
        Arc::new(driver(&emu, DEFAULT_TOKEN, |_| {})),
        std::slice::from_ref(&zone),
        options,
    );
    let sets: Vec<RRSet> = (0..5)
        .map(|i| a(&zone, &format!("t{i}"), 300, "192.0.2.9"))
        .collect();
    let results = run(&acct, &zone, &creates(&sets)).await;
    assert!(
        results.iter().all(|r| r.outcome == Outcome::Applied),
        "{results:?}"
    );
    let stats = emu.stats();
    assert_eq!(stats.throttled, 2, "{stats:?}");
    assert_eq!(
        stats.calls("dns.changes.create"),
        3,
        "two refused, one applied"
    );
    assert_eq!(quota.status().throttled, 2);
}

/// A token Google does not know, or one without access to the project: the batch ends
/// REJECTED_PERMANENT with Google's message, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_credentials_are_rejected_permanently_with_googles_words() {
    let opts = CloudDnsOptions {
        tokens: vec![
            Token::new(DEFAULT_TOKEN),
            Token::scoped("other-project-token", &["other-project"]),
        ],
        ..CloudDnsOptions::default()
    };
    let (emu, zone) = emulator(opts).await;
    let sets = vec![a(&zone, "www", 300, "192.0.2.1")];
    for (token, words) in [
        (
            "ya29.expired",
            "Request had invalid authentication credentials.",
        ),
        ("other-project-token", "Forbidden"),
    ] {
        let acct = account(driver(&emu, token, |_| {}), &zone);
        let results = run(&acct, &zone, &creates(&sets)).await;
        assert_eq!(
            results[0].outcome,
            Outcome::RejectedPermanent,
            "{token}: {:?}",
            results[0]
        );
        assert!(
            results[0].message.contains(words),
            "{token}: {}",
            results[0].message
        );
    }
    assert_eq!(emu.stats().auth_failures, 2, "one request each: no retries");
    assert_eq!(emu.rrsets(MANAGED).len(), 2);
    let e = driver(&emu, "ya29.expired", |_| {})
        .zones()
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Permanent);
}

/// With `wait_done`, an accepted Change counts as applied once `changes.get` says
/// `done` (the emulator answers `pending` twice); a Change that stays pending is
/// reported applied after `done_timeout`, because it committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_done_follows_pending_to_done() {
    let (emu, zone) = emulator(CloudDnsOptions {
        pending_polls: 2,
        ..CloudDnsOptions::default()
    })
    .await;
    let p = driver(&emu, DEFAULT_TOKEN, |c| {
        c.wait_done = true;
        c.done_timeout = Duration::from_millis(1500);
    });
    p.apply(&zone, &[RRSetOp::create(a(&zone, "w1", 300, "192.0.2.1"))])
        .await
        .expect("applied");
    assert_eq!(
        emu.stats().calls("dns.changes.get"),
        3,
        "pending, pending, done"
    );
    emu.add_fault(FaultRule::new(FaultAction::PendingForever).op("change"));
    let started = Instant::now();
    p.apply(&zone, &[RRSetOp::create(a(&zone, "w2", 300, "192.0.2.2"))])
        .await
        .expect("applied after the wait");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1000) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    assert!(emu.stats().calls("dns.changes.get") > 4);
    // Without wait_done nothing is polled.
    let before = emu.stats().calls("dns.changes.get");
    driver(&emu, DEFAULT_TOKEN, |_| {})
        .apply(&zone, &[RRSetOp::create(a(&zone, "w3", 300, "192.0.2.3"))])
        .await
        .expect("applied");
    assert_eq!(emu.stats().calls("dns.changes.get"), before);
}

/// The latest Change id is the zone's serial: it moves by one per Change, a whole-zone
/// listing carries it, and the applier's listing cache revalidates with one
/// `changes.list` instead of listing the zone again — until someone else writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_change_counter_lets_a_cache_skip_the_listing() {
    let (emu, zone) = emulator(CloudDnsOptions::default()).await;
    let p = driver(&emu, DEFAULT_TOKEN, |_| {});
    assert_eq!(
        p.serial(&zone).await.expect("serial"),
        Some(0),
        "the zone's creation"
    );
    p.apply(&zone, &[RRSetOp::create(a(&zone, "s1", 300, "192.0.2.1"))])
        .await
        .expect("write");
    assert_eq!(p.serial(&zone).await.expect("serial"), Some(1));
    let listing = p.list(&zone, None).await.expect("list");
    assert_eq!(listing.serial, emu.last_change(MANAGED));

    let acct = account(driver(&emu, DEFAULT_TOKEN, |_| {}), &zone);
    let cache = ListingCache::new(Duration::ZERO);
    let cx = CallCx::new("gcp", Some(zone.clone()));
    let lists = || emu.stats().calls("dns.resourceRecordSets.list");
    cache
        .get(&acct.stack, &cx, None, false)
        .await
        .expect("fill");
    let after_fill = lists();
    let again = cache
        .get(&acct.stack, &cx, None, false)
        .await
        .expect("revalidated");
    assert_eq!(
        lists(),
        after_fill,
        "served from the cache after a serial check"
    );
    assert_eq!(again.rrsets.len(), 2, "NS and s1 (SOA is not listed)");
    assert_eq!(cache.stats().hits, 1);
    // Someone else writes: the counter moves, the cache lists again.
    p.apply(&zone, &[RRSetOp::create(a(&zone, "s2", 300, "192.0.2.2"))])
        .await
        .expect("write");
    let fresh = cache
        .get(&acct.stack, &cx, None, false)
        .await
        .expect("relisted");
    assert!(lists() > after_fill);
    assert_eq!(fresh.rrsets.len(), 3);
}

/// A 404 on a read right after a successful write is Cloud DNS's read-after-write
/// lag: retried, not a missing zone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_404_read_right_after_a_write_is_retried() {
    let (emu, zone) = emulator(CloudDnsOptions::default()).await;
    let set = a(&zone, "lag", 300, "192.0.2.1");
    let acct = account(driver(&emu, DEFAULT_TOKEN, |_| {}), &zone);
    let results = run(&acct, &zone, &creates(std::slice::from_ref(&set))).await;
    assert_eq!(results[0].outcome, Outcome::Applied);
    emu.add_fault(
        FaultRule::new(FaultAction::Error)
            .op("list_rrsets")
            .status(404)
            .times(1),
    );
    let cx = CallCx::new("gcp", Some(zone.clone()));
    let listing = acct
        .stack
        .list(&cx, Some(std::slice::from_ref(&set.key.name)))
        .await
        .expect("read after the lag");
    assert_eq!(listing.rrsets, vec![set]);
    assert_eq!(emu.stats().faults.get("error"), Some(&1));
    // A zone nobody has touched answering 404 is a missing zone: permanent.
    emu.add_fault(
        FaultRule::new(FaultAction::Error)
            .op("list_rrsets")
            .status(404)
            .times(1),
    );
    let cold = driver(&emu, DEFAULT_TOKEN, |c| {
        c.zone_names.insert(zone.clone(), MANAGED.to_string());
    });
    let e = cold
        .list(&zone, Some(std::slice::from_ref(&zone)))
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Permanent, "{e}");
    assert!(e.message.contains("does not exist"), "{e}");
}

/// Failures below HTTP read as every other driver's (one classifier): a refused
/// connection is transient and says "cannot connect", and the message never shows a
/// password the endpoint URL carries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_transient_and_names_no_password() {
    let (emu, zone) = emulator(CloudDnsOptions::default()).await;
    let port = emu.endpoint().rsplit(':').next().expect("port").to_string();
    let provider = driver(&emu, DEFAULT_TOKEN, |c| {
        c.endpoint = format!("http://user:s3cret-pw@127.0.0.1:{port}");
    });
    emu.stop().await;
    let e = provider
        .list(&zone, None)
        .await
        .expect_err("nothing listens");
    assert_eq!(e.class, ErrorClass::Transient, "{e}");
    assert!(e.message.contains("cannot connect"), "{e}");
    assert!(!e.message.contains("s3cret-pw"), "{e}");
}
