//! The `cloudflare` driver's stories against its emulator (in-process, 127.0.0.1:0):
//! what the provider conformance suite does not cover. Every count below is read from
//! the emulator's own request counters, so a blind resend or an extra read would show.
use dnsplane_applier::account::Account;
use dnsplane_applier::apply::BatchReport;
use dnsplane_applier::apply::execute;
use dnsplane_applier::provider::call::CallCx;
use dnsplane_applier::provider::cloudflare::{CloudflareConfig, CloudflareProvider};
use dnsplane_applier::provider::{ErrorClass, Provider};
use dnsplane_applier::retry::RetryPolicy;
use dnsplane_common::routing::cloudflare::PROXIED;
use dnsplane_common::{
    Change, ChangeKind, Name, Outcome, RRSet, RRSetOp, RecordKey, RecordType, pb,
};
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use dnsplane_e2e::servers::{Kind, RealServer};
use dnsplane_emulate::cloudflare::{CloudflareEmulator, CloudflareOptions, DEFAULT_TOKEN};
use dnsplane_emulate::{FaultAction, FaultRule};
use std::sync::Arc;
use std::time::Duration;

struct Setup {
    emu: CloudflareEmulator,
    zone: Name,
    zone_id: String,
    provider: Arc<CloudflareProvider>,
    _dir: tempfile::TempDir,
}

async fn setup(zone: &str, token: &str) -> Setup {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let emu = CloudflareEmulator::start(listener, CloudflareOptions::default())
        .await
        .expect("emulator");
    let zone_id = emu.create_zone(zone);
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("token");
    std::fs::write(&path, token).expect("token");
    let provider = CloudflareProvider::new(&CloudflareConfig {
        endpoint: emu.endpoint(),
        api_token_file: Some(path),
        ..CloudflareConfig::default()
    })
    .expect("provider");
    Setup {
        emu,
        zone: Name::parse(zone).expect("zone"),
        zone_id,
        provider: Arc::new(provider),
        _dir: dir,
    }
}

fn a(zone: &Name, label: &str, ttl: u32, values: &[&str]) -> RRSet {
    let key = RecordKey::new(
        zone.clone(),
        zone.prepend(label).expect("name"),
        RecordType::A,
    );
    RRSet::new(key, ttl, values).expect("set")
}

fn creates(sets: &[RRSet]) -> Vec<Change> {
    sets.iter()
        .map(|s| Change::new(ChangeKind::Create, vec![RRSetOp::create(s.clone())]))
        .collect()
}

async fn run(s: &Setup, changes: &[Change]) -> BatchReport {
    let account = Account::new("cf", s.provider.clone(), std::slice::from_ref(&s.zone));
    let cx = CallCx::new("cf", Some(s.zone.clone()));
    tokio::time::timeout(
        Duration::from_secs(30),
        execute(&account.stack, &cx, changes, &RetryPolicy::default()),
    )
    .await
    .expect("the batch settles in time")
}

fn outcomes(r: &BatchReport) -> Vec<Outcome> {
    r.results.iter().map(|x| x.outcome).collect()
}

fn count(emu: &CloudflareEmulator, op: &str) -> u64 {
    emu.stats().requests.get(op).copied().unwrap_or(0)
}

/// A 502 after Cloudflare committed the batch: the driver reports it ambiguous, the
/// batch algorithm reads the names back, finds them there and ends ALREADY_APPLIED —
/// never resending the batch blind. The ambiguous answer costs one request (the
/// read-back) over the same thousand changes without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_502_after_commit_ends_already_applied_without_a_blind_resend() {
    let s = setup("amb.test", DEFAULT_TOKEN).await;
    let sets = |prefix: &str| -> Vec<RRSet> {
        (0..1000)
            .map(|i| {
                a(
                    &s.zone,
                    &format!("{prefix}{i:04}"),
                    300,
                    &[&format!("10.0.{}.{}", i / 250, i % 250 + 1)],
                )
            })
            .collect()
    };
    // Baseline: the same thousand changes, no fault (the zone id is looked up first).
    let zone_lookup = 1;
    let clean = run(&s, &creates(&sets("c"))).await;
    assert!(outcomes(&clean).iter().all(|o| *o == Outcome::Applied));
    let clean_requests = s.emu.stats().total_requests() - zone_lookup;
    let batches = count(&s.emu, "BatchDnsRecords");

    s.emu.add_fault(
        FaultRule::new(FaultAction::AmbiguousAfterCommit)
            .op("batch")
            .times(1),
    );
    let report = run(&s, &creates(&sets("x"))).await;
    let out = outcomes(&report);
    let already = out
        .iter()
        .filter(|o| **o == Outcome::AlreadyApplied)
        .count();
    assert!(
        already > 0,
        "the committed chunk is settled by the read-back: {out:?}"
    );
    assert!(
        out.iter()
            .all(|o| matches!(o, Outcome::AlreadyApplied | Outcome::Applied)),
        "{out:?}"
    );
    let st = s.emu.stats();
    assert_eq!(st.faults.get("ambiguous_after_commit"), Some(&1));
    assert_eq!(
        count(&s.emu, "BatchDnsRecords") - batches,
        batches,
        "each chunk's batch sent once, none resent"
    );
    let faulty_requests = st.total_requests() - zone_lookup - clean_requests;
    let extra = faulty_requests.saturating_sub(clean_requests);
    assert!(
        faulty_requests > clean_requests && extra <= 3,
        "settling the ambiguous answer took {extra} more requests ({faulty_requests} against {clean_requests})"
    );
    assert_eq!(
        s.emu.records(&s.zone_id).len(),
        2000,
        "every record exactly once"
    );
}

/// Another writer holds some of the names: those changes end CONFLICT, each with the
/// values Cloudflare holds there; the rest is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_burst_ends_conflict_with_the_observed_values() {
    let s = setup("conflict.test", DEFAULT_TOKEN).await;
    let foreign: Vec<RRSet> = [2usize, 5, 6, 13]
        .iter()
        .map(|i| {
            a(
                &s.zone,
                &format!("h{i}"),
                120,
                &["203.0.113.7", "203.0.113.8"],
            )
        })
        .collect();
    s.provider
        .apply(
            &s.zone,
            &foreign
                .iter()
                .cloned()
                .map(RRSetOp::create)
                .collect::<Vec<_>>(),
        )
        .await
        .expect("foreign writes");
    let ours: Vec<RRSet> = (0..16)
        .map(|i| a(&s.zone, &format!("h{i}"), 300, &["192.0.2.1"]))
        .collect();
    let report = run(&s, &creates(&ours)).await;
    for (i, r) in report.results.iter().enumerate() {
        if let Some(f) = foreign.iter().find(|f| f.key == ours[i].key) {
            assert_eq!(r.outcome, Outcome::Conflict, "h{i}: {r:?}");
            let seen = r.observed.as_ref().expect("observed values");
            assert!(seen.same_data(f), "h{i}: observed {seen}, held {f}");
        } else {
            assert_eq!(r.outcome, Outcome::Applied, "h{i}: {r:?}");
        }
    }
}

/// Values dnsplane accepts but Cloudflare refuses (a TTL under the plan's 60 s): the
/// batch algorithm bisects Cloudflare's first-error-only answers down to those
/// changes, which end INVALID with Cloudflare's text; the rest is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_few_bad_records_end_invalid_and_the_rest_applied() {
    let s = setup("invalid.test", DEFAULT_TOKEN).await;
    let bad = [4usize, 17, 18];
    let sets: Vec<RRSet> = (0..24)
        .map(|i| {
            let ttl = if bad.contains(&i) { 10 } else { 300 };
            a(&s.zone, &format!("v{i}"), ttl, &["192.0.2.10"])
        })
        .collect();
    let report = run(&s, &creates(&sets)).await;
    for (i, r) in report.results.iter().enumerate() {
        if bad.contains(&i) {
            assert_eq!(r.outcome, Outcome::Invalid, "v{i}: {r:?}");
            assert!(
                r.message.contains("9021") && r.message.contains("Invalid TTL"),
                "{}",
                r.message
            );
            assert!(
                r.message.contains(&format!("v{i}.invalid.test.")),
                "names the record: {}",
                r.message
            );
        } else {
            assert_eq!(r.outcome, Outcome::Applied, "v{i}: {r:?}");
        }
    }
    assert_eq!(s.emu.records(&s.zone_id).len(), 21);
}

/// A 429 with `retry-after`: the driver marks it a throttle (fed to the account's
/// quota) carrying the delay; the batch algorithm waits it out and retries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_a_throttle_and_is_retried() {
    let s = setup("throttle.test", DEFAULT_TOKEN).await;
    let mut rule = FaultRule::new(FaultAction::Throttle).op("batch").times(2);
    rule.retry_after = Some(Duration::from_secs(1));
    s.emu.add_fault(rule);
    let set = a(&s.zone, "t", 300, &["192.0.2.5"]);
    let e = s
        .provider
        .apply(&s.zone, &[RRSetOp::create(set.clone())])
        .await
        .expect_err("throttled");
    assert_eq!(e.class, ErrorClass::Transient, "{e}");
    assert!(e.throttled, "{e:?}");
    assert_eq!(e.retry_after, Some(Duration::from_secs(1)));
    assert!(e.message.contains("971"), "{e}");

    let report = run(&s, &creates(&[set])).await;
    assert_eq!(outcomes(&report), vec![Outcome::Applied]);
    let st = s.emu.stats();
    assert_eq!(st.throttled, 2, "both 429s counted");
    assert_eq!(
        count(&s.emu, "BatchDnsRecords"),
        3,
        "two refused, one retry that landed"
    );
    assert_eq!(s.emu.records(&s.zone_id).len(), 1);
}

/// A token Cloudflare does not know: every change ends REJECTED_PERMANENT with
/// Cloudflare's own words, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_token_ends_rejected_permanent_with_cloudflares_message() {
    let s = setup("token.test", "not-the-emulator-token").await;
    let sets: Vec<RRSet> = (0..3)
        .map(|i| a(&s.zone, &format!("k{i}"), 300, &["192.0.2.3"]))
        .collect();
    let report = run(&s, &creates(&sets)).await;
    for r in &report.results {
        assert_eq!(r.outcome, Outcome::RejectedPermanent, "{r:?}");
        assert!(
            r.message.contains("9109") && r.message.contains("Invalid access token"),
            "{}",
            r.message
        );
    }
    assert!(s.emu.records(&s.zone_id).is_empty());
    assert!(s.emu.stats().auth_failures >= 1);
}

/// Records set up in the dashboard with `proxied`, automatic TTL, a comment and tags:
/// an update of the set's values keeps all of it on the records it patches, and
/// leaves the records whose value stays untouched (same id, same everything).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxied_ttl_auto_comment_and_tags_survive_an_update() {
    let s = setup("keep.test", DEFAULT_TOKEN).await;
    let http = reqwest::Client::new();
    for (content, proxied) in [("192.0.2.1", true), ("192.0.2.2", true)] {
        let resp = http
            .post(format!(
                "{}/zones/{}/dns_records",
                s.emu.endpoint(),
                s.zone_id
            ))
            .bearer_auth(DEFAULT_TOKEN)
            .json(&serde_json::json!({
                "name": "www", "type": "A", "content": content, "ttl": 1,
                "proxied": proxied, "comment": "set by hand", "tags": ["team:web"],
            }))
            .send()
            .await
            .expect("post");
        assert_eq!(resp.status(), 200);
    }
    let resp = http
        .post(format!(
            "{}/zones/{}/dns_records",
            s.emu.endpoint(),
            s.zone_id
        ))
        .bearer_auth(DEFAULT_TOKEN)
        .json(&serde_json::json!({
            "name": "txt", "type": "TXT", "content": "\"v=1\"", "ttl": 1, "comment": "keep me",
        }))
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status(), 200);
    let before = s.emu.records(&s.zone_id);

    let names = vec![
        s.zone.prepend("www").expect("n"),
        s.zone.prepend("txt").expect("n"),
    ];
    let listed = s
        .provider
        .list(&s.zone, Some(&names))
        .await
        .expect("list")
        .rrsets;
    let www = listed
        .iter()
        .find(|r| r.key.rtype == RecordType::A)
        .expect("www")
        .clone();
    let txt = listed
        .iter()
        .find(|r| r.key.rtype == RecordType::Txt)
        .expect("txt")
        .clone();
    assert_eq!((www.ttl, txt.ttl), (1, 1), "automatic TTL reads as 1");
    let www_after = RRSet::new(www.key.clone(), 1, &["192.0.2.1", "192.0.2.9"]).expect("set");
    let txt_after = RRSet::new(txt.key.clone(), 1, &["\"v=2\""]).expect("set");
    s.provider
        .apply(
            &s.zone,
            &[
                RRSetOp::update(www, www_after),
                RRSetOp::update(txt, txt_after),
            ],
        )
        .await
        .expect("update");

    let after = s.emu.records(&s.zone_id);
    assert_eq!(after.len(), 3, "{after:#?}");
    let kept = after
        .iter()
        .find(|r| r.content == "192.0.2.1")
        .expect("kept");
    let old_kept = before
        .iter()
        .find(|r| r.content == "192.0.2.1")
        .expect("kept before");
    assert_eq!(kept, old_kept, "a record whose value stays is not touched");
    let changed = after
        .iter()
        .find(|r| r.content == "192.0.2.9")
        .expect("changed");
    assert!(
        before.iter().any(|r| r.id == changed.id),
        "patched in place, same id"
    );
    assert!(changed.proxied && changed.ttl == 1);
    assert_eq!(changed.comment.as_deref(), Some("set by hand"));
    assert_eq!(changed.tags, vec!["team:web".to_string()]);
    let t = after.iter().find(|r| r.rtype == "TXT").expect("txt");
    assert_eq!(
        (t.content.as_str(), t.ttl, t.comment.as_deref()),
        ("\"v=2\"", 1, Some("keep me"))
    );
}

/// Cloudflare has no zone serial: the driver keeps each zone as it last read it whole
/// and follows it with its own batches, so a steady-state listing costs no request and
/// the serial it reports is the cache's own count; a `fresh` read asks Cloudflare.
/// Counted by the emulator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_zone_is_listed_without_a_request() {
    let s = setup("steady.test", DEFAULT_TOKEN).await;
    let lists = || {
        s.emu
            .stats()
            .requests
            .get("ListDnsRecords")
            .copied()
            .unwrap_or(0)
    };
    let sets: Vec<RRSet> = (0..20)
        .map(|i| a(&s.zone, &format!("s{i}"), 300, &["192.0.2.1"]))
        .collect();
    s.provider
        .apply(
            &s.zone,
            &sets
                .iter()
                .cloned()
                .map(RRSetOp::create)
                .collect::<Vec<_>>(),
        )
        .await
        .expect("create");
    assert!(s.provider.serial(&s.zone).await.expect("serial").is_none());
    let before = lists();
    let listed = s.provider.list(&s.zone, None).await.expect("list");
    assert_eq!(listed.rrsets.len(), 20);
    let filled = lists();
    assert!(filled > before, "the first listing reads the zone");
    let serial = s
        .provider
        .serial(&s.zone)
        .await
        .expect("serial")
        .expect("a count");
    for _ in 0..5 {
        assert_eq!(
            s.provider
                .list(&s.zone, None)
                .await
                .expect("list")
                .rrsets
                .len(),
            20
        );
        assert_eq!(
            s.provider.serial(&s.zone).await.expect("serial"),
            Some(serial)
        );
    }
    assert_eq!(lists(), filled, "no request in steady state");
    // A batch of ours reads its names (fresh, for the preconditions) and moves the count.
    let changed = a(&s.zone, "s0", 300, &["192.0.2.2"]);
    s.provider
        .apply(
            &s.zone,
            &[RRSetOp::update(sets[0].clone(), changed.clone())],
        )
        .await
        .expect("update");
    assert_eq!(
        s.provider.serial(&s.zone).await.expect("serial"),
        Some((serial + 1) & 0xffff_ffff)
    );
    let after_write = lists();
    assert!(
        s.provider
            .list(&s.zone, None)
            .await
            .expect("list")
            .rrsets
            .contains(&changed)
    );
    assert_eq!(
        lists(),
        after_write,
        "the listing follows the batch without a read"
    );
    // A fresh read asks Cloudflare.
    let stack = dnsplane_applier::provider::call::Stack::driver_only(s.provider.clone());
    let cx = CallCx::new("cf", Some(s.zone.clone())).with_fresh(true);
    stack.list(&cx, None).await.expect("fresh list");
    assert!(lists() > after_write, "a fresh read is a read");
}

/// One desired record of the proxy story, with `cloudflare-proxied` when given.
fn desired(
    zone: &str,
    label: &str,
    rtype: &str,
    values: &[&str],
    proxied: Option<&str>,
) -> pb::DesiredRecord {
    pb::DesiredRecord {
        name: format!("{label}.{zone}"),
        r#type: rtype.into(),
        ttl: 60,
        values: values.iter().map(|v| v.to_string()).collect(),
        provider_specific: proxied
            .map(|v| pb::Property {
                name: PROXIED.into(),
                value: v.into(),
            })
            .into_iter()
            .collect(),
        ..Default::default()
    }
}

/// external-dns's `cloudflare-proxied` through the planner, the applier and the
/// emulator: `true` proxies a pushed A set (TTL automatic), and a fresh sync reads it
/// back equal and writes nothing; a record without the property that someone proxies
/// by hand in the dashboard stays proxied, also through that sync; `false` un-proxies
/// the set in place, with its own TTL; `true` on a TXT ends INVALID, naming the
/// property, and is never sent.
#[test]
fn proxied_records_are_written_read_back_equal_and_flipped() {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = RealServer::start(Kind::Cloudflare) else {
        return;
    };
    let s = RealStack::start(server, tools, Options::default());
    let RealServer::Cloudflare(cf) = &s.server else {
        unreachable!("started as Cloudflare")
    };
    let zone = s.zone().to_string();
    let zone = zone.trim_end_matches('.').to_string();
    let workload = |www: &str| {
        vec![
            desired(&zone, "www", "A", &["192.0.2.10", "192.0.2.11"], Some(www)),
            desired(&zone, "hand", "A", &["192.0.2.20"], None),
            desired(&zone, "txt", "TXT", &["\"v=1\""], Some("true")),
        ]
    };
    let at = |label: &str| {
        let name = format!("{label}.{zone}");
        let mut recs: Vec<_> = cf
            .emulator
            .records(&cf.zone_id)
            .into_iter()
            .filter(|r| r.name == name && (r.rtype == "A" || r.content.contains("v=1")))
            .collect();
        recs.sort_by(|a, b| a.content.cmp(&b.content));
        recs
    };
    s.push(workload("true"));
    assert_eq!(s.sync(false).phase, "done");
    s.wait_quiet();
    s.assert_states(&[("converged", 2), ("invalid", 1)]);
    let www = at("www");
    assert_eq!(www.len(), 2, "{www:#?}");
    assert!(www.iter().all(|r| r.proxied && r.ttl == 1), "{www:#?}");
    let hand = at("hand");
    assert!(
        hand.len() == 1 && !hand[0].proxied && hand[0].ttl == 60,
        "{hand:#?}"
    );
    assert!(at("txt").is_empty(), "the proxied TXT was never written");
    let txt = s
        .record_states(false)
        .into_iter()
        .find(|r| r.key.as_ref().is_some_and(|k| k.name.starts_with("txt.")))
        .expect("the TXT's state");
    assert_eq!(dnsplane_planner::service::kind_name(txt.state), "invalid");
    let why = format!("{} {}", txt.reason, txt.last_error);
    assert!(why.contains(PROXIED) && why.contains("TXT"), "{why}");

    // Someone proxies `hand` in the dashboard.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let resp = rt
        .block_on(
            reqwest::Client::new()
                .patch(format!(
                    "{}/zones/{}/dns_records/{}",
                    cf.emulator.endpoint(),
                    cf.zone_id,
                    hand[0].id
                ))
                .bearer_auth(DEFAULT_TOKEN)
                .json(&serde_json::json!({ "proxied": true }))
                .send(),
        )
        .expect("patch");
    assert_eq!(resp.status(), 200);

    // A fresh sync reads both back equal to what is desired: nothing is written.
    let (writes, c0) = (s.soa_serial(), s.counters());
    assert_eq!(s.sync(true).phase, "done");
    s.wait_quiet();
    let d = s.counters().since(&c0);
    assert_eq!(d.outcome("APPLIED"), 0, "{d:?}");
    assert_eq!(s.soa_serial(), writes, "a converged zone costs no write");
    s.assert_states(&[("converged", 2), ("invalid", 1)]);
    assert!(at("hand")[0].proxied, "proxied by hand, and left so");

    // `false` un-proxies the set in place, with its TTL; then it stays converged.
    s.push(workload("false"));
    assert_eq!(s.sync(false).phase, "done");
    s.wait_quiet();
    s.assert_states(&[("converged", 2), ("invalid", 1)]);
    let off = at("www");
    assert!(off.iter().all(|r| !r.proxied && r.ttl == 60), "{off:#?}");
    let ids = |v: &[dnsplane_emulate::cloudflare::RecordView]| {
        v.iter().map(|r| r.id.clone()).collect::<Vec<_>>()
    };
    assert_eq!(ids(&off), ids(&www), "patched in place");
    let (writes, c1) = (s.soa_serial(), s.counters());
    assert_eq!(s.sync(true).phase, "done");
    s.wait_quiet();
    assert_eq!(s.counters().since(&c1).outcome("APPLIED"), 0);
    assert_eq!(s.soa_serial(), writes);
}
