//! The `azure` driver's stories against dnsplane's Azure DNS emulator (in-process,
//! 127.0.0.1:0): etag conflicts of one record set, 429 pacing, a refused credential,
//! ambiguous answers read back, a change undone when its second request fails, and
//! tokens from a client secret and a federated token file through the emulator's
//! token endpoint. Request counts are read from the emulator's own counters, so a
//! blind resend or an extra read would show.
use dnsplane_applier::account::{Account, AccountOptions};
use dnsplane_applier::apply::{BatchReport, execute};
use dnsplane_applier::provider::azure::identity::EnvReader;
use dnsplane_applier::provider::azure::{AzureConfig, AzureProvider};
use dnsplane_applier::provider::call::CallCx;
use dnsplane_applier::provider::{ErrorClass, Provider};
use dnsplane_applier::quota::{Quota, QuotaConfig, QuotaSettings};
use dnsplane_applier::retry::RetryPolicy;
use dnsplane_common::{Change, ChangeKind, Name, Outcome, RRSet, RRSetOp, RecordKey, RecordType};
use dnsplane_emulate::azure::{
    AzureEmulator, AzureOptions, DEFAULT_CLIENT_ASSERTION, DEFAULT_CLIENT_ID,
    DEFAULT_CLIENT_SECRET, DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION, DEFAULT_TOKEN,
    ThrottleOptions,
};
use dnsplane_emulate::{FaultAction, FaultRule};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

struct Setup {
    emu: AzureEmulator,
    zone: Name,
    provider: Arc<AzureProvider>,
    dir: tempfile::TempDir,
}

async fn emulator(options: AzureOptions) -> AzureEmulator {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    AzureEmulator::start(listener, options)
        .await
        .expect("emulator")
}

fn config(emu: &AzureEmulator) -> AzureConfig {
    let mut cfg = AzureConfig::new(DEFAULT_SUBSCRIPTION, DEFAULT_RESOURCE_GROUP);
    cfg.endpoint = emu.endpoint();
    cfg.authority_host = emu.endpoint();
    cfg
}

fn env(pairs: &[(&str, String)]) -> EnvReader {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    Arc::new(move |k| map.get(k).cloned())
}

/// A public zone and a driver reading `token` from a file.
async fn setup_with(zone: &str, token: &str, options: AzureOptions) -> Setup {
    let emu = emulator(options).await;
    emu.create_zone(zone);
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("token");
    std::fs::write(&path, format!("{token}\n")).expect("token");
    let mut cfg = config(&emu);
    cfg.token_file = Some(path);
    let provider = AzureProvider::new(&cfg).expect("provider");
    Setup {
        emu,
        zone: Name::parse(zone).expect("zone"),
        provider: Arc::new(provider),
        dir,
    }
}

async fn setup(zone: &str) -> Setup {
    setup_with(zone, DEFAULT_TOKEN, AzureOptions::default()).await
}

fn rr(zone: &Name, label: &str, t: RecordType, values: &[&str]) -> RRSet {
    let key = RecordKey::new(zone.clone(), zone.prepend(label).expect("name"), t);
    RRSet::new(key, 300, values).expect("set")
}

fn creates(sets: &[RRSet]) -> Vec<Change> {
    sets.iter()
        .map(|s| Change::new(ChangeKind::Create, vec![RRSetOp::create(s.clone())]))
        .collect()
}

async fn run_on(account: &Account, zone: &Name, changes: &[Change]) -> BatchReport {
    let cx = CallCx::new(account.name.clone(), Some(zone.clone()));
    tokio::time::timeout(
        Duration::from_secs(60),
        execute(&account.stack, &cx, changes, &RetryPolicy::default()),
    )
    .await
    .expect("the batch settles in time")
}

async fn run(s: &Setup, changes: &[Change]) -> BatchReport {
    let account = Account::new("az", s.provider.clone(), std::slice::from_ref(&s.zone));
    run_on(&account, &s.zone, changes).await
}

fn outcomes(r: &BatchReport) -> Vec<Outcome> {
    r.results.iter().map(|x| x.outcome).collect()
}

fn count(emu: &AzureEmulator, op: &str) -> u64 {
    emu.stats().requests.get(op).copied().unwrap_or(0)
}

/// The records of the set `name`/`rtype` in the emulator (`None`: absent).
fn held(s: &Setup, name: &str, rtype: &str) -> Option<Vec<String>> {
    s.emu
        .record_sets(s.zone.as_str().trim_end_matches('.'))
        .into_iter()
        .find(|v| v.name == name && v.rtype == rtype)
        .map(|v| v.records)
}

/// Another writer's set makes that change alone a CONFLICT naming its values; its
/// batch-mates are applied. An update whose etag went stale is a 412: when the set
/// still holds what dnsplane expects it is retried once with the new etag and
/// applied; when another writer changed its values it is a CONFLICT naming them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_412_is_a_conflict_of_that_record_set_alone() {
    let s = setup("etag.test").await;
    let z = &s.zone;
    s.emu.put_record_set(
        "etag.test",
        "A",
        "b",
        &json!({"properties": {"TTL": 60, "ARecords": [{"ipv4Address": "203.0.113.9"}]}}),
    );
    let sets = [
        rr(z, "a", RecordType::A, &["192.0.2.1"]),
        rr(z, "b", RecordType::A, &["192.0.2.2"]),
        rr(z, "c", RecordType::A, &["192.0.2.3"]),
    ];
    let r = run(&s, &creates(&sets)).await;
    assert_eq!(
        outcomes(&r),
        [Outcome::Applied, Outcome::Conflict, Outcome::Applied]
    );
    assert_eq!(
        held(&s, "b", "A").unwrap(),
        ["203.0.113.9"],
        "never overwritten"
    );
    let observed = r.results[1].observed.as_ref().expect("the observed set");
    assert_eq!(observed.values_vec(), ["203.0.113.9"]);
    assert!(s.emu.stats().preconditions_failed >= 1);

    // The etag of `a` moves, its values do not (someone touched its metadata).
    s.emu.put_record_set(
        "etag.test",
        "A",
        "a",
        &json!({"properties": {"TTL": 300, "metadata": {"by": "portal"}, "ARecords": [{"ipv4Address": "192.0.2.1"}]}}),
    );
    // The values of `c` change under another writer.
    s.emu.put_record_set(
        "etag.test",
        "A",
        "c",
        &json!({"properties": {"TTL": 300, "ARecords": [{"ipv4Address": "198.51.100.7"}]}}),
    );
    let before = s.emu.stats().preconditions_failed;
    let update = |set: &RRSet, to: &str| {
        let after = RRSet::new(set.key.clone(), 300, &[to]).expect("set");
        Change::new(
            ChangeKind::Update,
            vec![RRSetOp::update(set.clone(), after)],
        )
    };
    let r = run(
        &s,
        &[
            update(&sets[0], "192.0.2.11"),
            update(&sets[2], "192.0.2.13"),
        ],
    )
    .await;
    assert_eq!(outcomes(&r), [Outcome::Applied, Outcome::Conflict]);
    assert_eq!(
        s.emu.stats().preconditions_failed - before,
        2,
        "one 412 each"
    );
    assert_eq!(held(&s, "a", "A").unwrap(), ["192.0.2.11"]);
    assert_eq!(held(&s, "c", "A").unwrap(), ["198.51.100.7"]);
    let a_meta = s
        .emu
        .record_sets("etag.test")
        .into_iter()
        .find(|v| v.name == "a")
        .unwrap()
        .metadata;
    assert_eq!(
        a_meta.get("by").map(String::as_str),
        Some("portal"),
        "metadata kept"
    );
}

/// The driver's own conflict message (a single op, straight through the trait)
/// names the values found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_names_the_foreign_values() {
    let s = setup("names.test").await;
    s.emu.put_record_set(
        "names.test",
        "TXT",
        "t",
        &json!({"properties": {"TTL": 60, "TXTRecords": [{"value": ["theirs"]}]}}),
    );
    // A stale driver memory: it read the zone before the foreign write.
    let mine = rr(&s.zone, "t", RecordType::Txt, &["\"mine\""]);
    let e = s
        .provider
        .apply(&s.zone, &[RRSetOp::create(mine)])
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::Conflict);
    assert!(
        e.message.contains("expected absent, found [\"theirs\"]"),
        "{}",
        e.message
    );
}

/// A change of a record and its ownership TXT is two requests; when the record's is
/// refused (another writer's set appeared), the ownership TXT written first is
/// deleted again: the change commits nothing, and ends CONFLICT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_whose_second_request_fails_is_undone() {
    let s = setup("undo.test").await;
    let z = &s.zone;
    s.emu.put_record_set(
        "undo.test",
        "A",
        "www",
        &json!({"properties": {"TTL": 60, "ARecords": [{"ipv4Address": "203.0.113.1"}]}}),
    );
    let record = rr(z, "www", RecordType::A, &["192.0.2.1"]);
    let mark = rr(z, "_own.www", RecordType::Txt, &["\"heritage=dnsplane\""]);
    let change = Change::new(
        ChangeKind::Create,
        vec![RRSetOp::create(record), RRSetOp::create(mark)],
    );
    let r = run(&s, &[change]).await;
    assert_eq!(outcomes(&r), [Outcome::Conflict]);
    assert_eq!(held(&s, "_own.www", "TXT"), None, "the mark was undone");
    assert_eq!(count(&s.emu, "RecordSets_Delete"), 1);
}

/// 429s with `Retry-After` from the subscription's write quota: the driver marks them
/// throttled, the account's pacing slows down, and every change is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_paces_the_account_and_every_change_lands() {
    let options = AzureOptions {
        throttle: ThrottleOptions {
            writes_per_second: 4.0,
            write_burst: 2,
            ..ThrottleOptions::default()
        },
        ..AzureOptions::default()
    };
    let s = setup_with("slow.test", DEFAULT_TOKEN, options).await;
    let account = Account::new("az", s.provider.clone(), std::slice::from_ref(&s.zone));
    let sets: Vec<RRSet> = (0..8)
        .map(|i| rr(&s.zone, &format!("h{i}"), RecordType::A, &["192.0.2.1"]))
        .collect();
    let r = run_on(&account, &s.zone, &creates(&sets)).await;
    assert!(
        outcomes(&r).iter().all(|o| *o == Outcome::Applied),
        "{:?}",
        r.results
    );
    let status = account.pacer.status();
    assert!(
        status.throttles >= 1,
        "the account was paced: {status:?}, emulator throttled {}",
        s.emu.stats().throttled
    );
}

/// A token Azure refuses: one new token is asked for (the file again), then every
/// change is REJECTED_PERMANENT with ARM's code, without a retry storm.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_credential_is_rejected_with_the_arm_code() {
    let s = setup_with("auth.test", "not-a-token", AzureOptions::default()).await;
    let sets: Vec<RRSet> = (0..5)
        .map(|i| rr(&s.zone, &format!("r{i}"), RecordType::A, &["192.0.2.1"]))
        .collect();
    let account = Account::new("az", s.provider.clone(), std::slice::from_ref(&s.zone));
    let r = run_on(&account, &s.zone, &creates(&sets)).await;
    let circuit = account.circuit.status();
    assert_eq!(circuit.state, "open", "{circuit:?}");
    assert!(
        circuit
            .reason
            .is_some_and(|why| why.contains("InvalidAuthenticationToken"))
    );
    assert!(
        outcomes(&r)
            .iter()
            .all(|o| *o == Outcome::RejectedPermanent),
        "{:?}",
        r.results
    );
    let msg = &r.results[0].message;
    assert!(
        msg.contains("401 InvalidAuthenticationToken") && msg.contains("the token in file"),
        "{msg}"
    );
    assert_eq!(
        s.emu.stats().total_requests(),
        2,
        "one request and one with a fresh token, then nothing"
    );
    // The file is fixed: the next batch reads it again and goes through.
    std::fs::write(s.dir.path().join("token"), DEFAULT_TOKEN).expect("token");
    let r = run(&s, &creates(&sets[..1])).await;
    assert_eq!(outcomes(&r), [Outcome::Applied]);
}

/// A 502 after Azure committed the PUT: the set is read back at once, found at its
/// target, and the change is APPLIED without a second PUT. A 500 that did not
/// commit: the read shows it unchanged, and the change is retried and applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ambiguous_answer_is_read_back_not_resent_blind() {
    let s = setup("amb.test").await;
    s.emu.add_fault(
        FaultRule::new(FaultAction::AmbiguousAfterCommit)
            .op("put_record_set")
            .times(1),
    );
    let one = [rr(&s.zone, "one", RecordType::A, &["192.0.2.1"])];
    let r = run(&s, &creates(&one)).await;
    assert_eq!(outcomes(&r), [Outcome::Applied]);
    assert_eq!(
        count(&s.emu, "RecordSets_CreateOrUpdate"),
        1,
        "no blind resend"
    );
    assert_eq!(count(&s.emu, "RecordSets_Get"), 1, "one read-back");

    s.emu.add_fault(
        FaultRule::new(FaultAction::Error)
            .op("put_record_set")
            .status(500)
            .times(1),
    );
    let two = [rr(&s.zone, "two", RecordType::A, &["192.0.2.2"])];
    let r = run(&s, &creates(&two)).await;
    assert_eq!(outcomes(&r), [Outcome::Applied], "{:?}", r.results);
    assert_eq!(count(&s.emu, "RecordSets_CreateOrUpdate"), 3);
    assert_eq!(held(&s, "two", "A").unwrap(), ["192.0.2.2"]);
}

/// Tokens from the emulator's token endpoint: by client secret, kept across calls;
/// by a federated token file, read again for every token, so a rotated file is
/// followed and a refused assertion is permanent with Entra's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_come_from_a_client_secret_or_a_federated_token_file() {
    let emu = emulator(AzureOptions::default()).await;
    emu.create_zone("id.test");
    let zone = Name::parse("id.test").unwrap();
    let ids = |extra: (&str, String)| {
        env(&[
            ("AZURE_TENANT_ID", "tenant-1".into()),
            ("AZURE_CLIENT_ID", DEFAULT_CLIENT_ID.into()),
            extra,
        ])
    };
    let secret = AzureProvider::with_env(
        &config(&emu),
        ids(("AZURE_CLIENT_SECRET", DEFAULT_CLIENT_SECRET.into())),
    )
    .unwrap();
    assert_eq!(secret.zones().await.unwrap(), std::slice::from_ref(&zone));
    assert!(!secret.list(&zone, None).await.unwrap().rrsets.is_empty());
    assert_eq!(emu.stats().tokens_issued, 1, "the token is kept");
    // Azure stops accepting it: the 401 drops it, one new token is asked for, and the
    // call goes through.
    emu.revoke_tokens();
    assert_eq!(secret.zones().await.unwrap(), std::slice::from_ref(&zone));
    assert_eq!(emu.stats().tokens_issued, 2, "one new token after the 401");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("azure-identity-token");
    std::fs::write(&file, "a-stale-assertion\n").unwrap();
    let federated = AzureProvider::with_env(
        &config(&emu),
        ids((
            "AZURE_FEDERATED_TOKEN_FILE",
            file.to_string_lossy().into_owned(),
        )),
    )
    .unwrap();
    let e = federated.zones().await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Permanent);
    assert!(e.message.contains("invalid_client"), "{}", e.message);
    std::fs::write(&file, format!("  {DEFAULT_CLIENT_ASSERTION}\n")).unwrap();
    assert_eq!(federated.zones().await.unwrap(), [zone]);
    assert_eq!(emu.stats().tokens_issued, 3);
}

/// Private DNS: its own paths and casing; an NS set, which it has none of, and a set
/// over Azure's 20 records are INVALID before any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_zones_and_limits() {
    let emu = emulator(AzureOptions::default()).await;
    emu.create_private_zone("corp.internal");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, DEFAULT_TOKEN).unwrap();
    let mut cfg = config(&emu);
    cfg.private = true;
    cfg.token_file = Some(path);
    let s = Setup {
        provider: Arc::new(AzureProvider::new(&cfg).unwrap()),
        zone: Name::parse("corp.internal").unwrap(),
        emu,
        dir,
    };
    let z = &s.zone;
    let ips: Vec<String> = (1..=21).map(|i| format!("10.0.0.{i}")).collect();
    let big = RRSet::new(rr(z, "big", RecordType::A, &["10.0.0.1"]).key, 300, &ips).unwrap();
    let sets = [
        rr(z, "db", RecordType::A, &["10.0.0.5"]),
        rr(z, "db", RecordType::Txt, &["\"primary\""]),
        rr(z, "sub", RecordType::Ns, &["ns1.example.net."]),
        big,
    ];
    let r = run(&s, &creates(&sets)).await;
    assert_eq!(
        outcomes(&r),
        [
            Outcome::Applied,
            Outcome::Applied,
            Outcome::Invalid,
            Outcome::Invalid
        ]
    );
    assert!(
        r.results[2].message.contains("Private DNS has no NS"),
        "{}",
        r.results[2].message
    );
    assert!(
        r.results[3].message.contains("at most 20"),
        "{}",
        r.results[3].message
    );
    assert_eq!(
        count(&s.emu, "RecordSets_CreateOrUpdate"),
        2,
        "nothing sent for the invalid"
    );
    assert_eq!(held(&s, "db", "TXT").unwrap(), ["\"primary\""]);
    // Private DNS lists every set under `/ALL`; its apex SOA is Azure's, not listed.
    let listed = s.provider.list(&s.zone, None).await.unwrap();
    let mut keys: Vec<String> = listed.rrsets.iter().map(|r| r.key.to_string()).collect();
    keys.sort();
    assert_eq!(keys, ["db.corp.internal. A", "db.corp.internal. TXT"]);
    assert_eq!(count(&s.emu, "RecordSets_ListAllByDnsZone"), 1);
}

/// Listings: paged through `nextLink`; the second whole listing comes from the cache
/// (no request); a failed page fails the read rather than showing an empty zone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_page_are_cached_and_never_empty_on_failure() {
    let s = setup("list.test").await;
    let sets: Vec<RRSet> = (0..250)
        .map(|i| rr(&s.zone, &format!("n{i:03}"), RecordType::A, &["192.0.2.1"]))
        .collect();
    for set in &sets {
        let rel = set
            .key
            .name
            .as_str()
            .trim_end_matches(".list.test.")
            .to_string();
        s.emu.put_record_set(
            "list.test",
            "A",
            &rel,
            &json!({"properties": {"TTL": 300, "ARecords": [{"ipv4Address": "192.0.2.1"}]}}),
        );
    }
    let first = s.provider.list(&s.zone, None).await.unwrap();
    assert_eq!(
        first
            .rrsets
            .iter()
            .filter(|r| r.key.rtype == RecordType::A)
            .count(),
        250
    );
    let pages = count(&s.emu, "RecordSets_ListAllByDnsZone");
    assert_eq!(pages, 3, "252 sets (SOA and NS too) in pages of 100");
    let again = s.provider.list(&s.zone, None).await.unwrap();
    assert_eq!(again.rrsets.len(), first.rrsets.len());
    assert_eq!(
        count(&s.emu, "RecordSets_ListAllByDnsZone"),
        pages,
        "from the cache"
    );

    s.provider.forget(&s.zone);
    s.emu.add_fault(
        FaultRule::new(FaultAction::Error)
            .op("list_record_sets")
            .status(500)
            .skip(1)
            .times(1),
    );
    let e = s.provider.list(&s.zone, None).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Transient, "{e}");
}

/// Azure's `x-ms-ratelimit-remaining-subscription-writes: 0` on a successful answer
/// paces the account before any 429 comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn none_remaining_paces_the_account_before_a_429() {
    let options = AzureOptions {
        throttle: ThrottleOptions {
            writes_per_second: 0.05,
            write_burst: 2,
            ..ThrottleOptions::default()
        },
        ..AzureOptions::default()
    };
    let s = setup_with("left.test", DEFAULT_TOKEN, options).await;
    let quota_table: QuotaConfig = toml::from_str("rate = 100.0\nburst = 10\n").unwrap();
    let settings = QuotaSettings::resolve("azure", Some(&quota_table))
        .unwrap()
        .expect("a quota");
    let quota = Arc::new(Quota::new("az", settings).unwrap());
    let account = Account::with_options(
        "az",
        s.provider.clone(),
        std::slice::from_ref(&s.zone),
        AccountOptions {
            quota: Some(quota.clone()),
            ..AccountOptions::default()
        },
    );
    let sets: Vec<RRSet> = (0..2)
        .map(|i| rr(&s.zone, &format!("h{i}"), RecordType::A, &["192.0.2.1"]))
        .collect();
    assert!(!account.pacer.paced());
    let r = run_on(&account, &s.zone, &creates(&sets)).await;
    assert_eq!(outcomes(&r), [Outcome::Applied, Outcome::Applied]);
    assert_eq!(s.emu.stats().throttled, 0, "no 429 was needed");
    assert!(account.pacer.paced(), "{:?}", account.pacer.status());
    assert_eq!(quota.status().throttled, 1, "the quota slowed down too");
}

/// A PUT that times out after Azure committed it: the set is read back, found at its
/// target with a new etag, and the change is APPLIED without a second PUT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_after_commit_is_read_back() {
    let emu = emulator(AzureOptions::default()).await;
    emu.create_zone("slow-put.test");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, DEFAULT_TOKEN).unwrap();
    let mut cfg = config(&emu);
    cfg.token_file = Some(path);
    cfg.timeout = Duration::from_secs(1);
    let s = Setup {
        provider: Arc::new(AzureProvider::new(&cfg).unwrap()),
        zone: Name::parse("slow-put.test").unwrap(),
        emu,
        dir,
    };
    s.emu.add_fault(
        FaultRule::new(FaultAction::Timeout)
            .op("put_record_set")
            .delay(Duration::from_secs(3))
            .commit(true)
            .times(1),
    );
    let one = [rr(&s.zone, "late", RecordType::A, &["192.0.2.9"])];
    let r = run(&s, &creates(&one)).await;
    assert_eq!(outcomes(&r), [Outcome::Applied], "{:?}", r.results);
    assert_eq!(
        count(&s.emu, "RecordSets_CreateOrUpdate"),
        1,
        "no blind resend"
    );
    assert_eq!(held(&s, "late", "A").unwrap(), ["192.0.2.9"]);
}
