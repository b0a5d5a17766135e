//! Issue 32, item 4: each cloud driver packs its batches to its provider's own
//! documented limits, counted as the provider counts them, not to a cautious
//! estimate, and the emulators (which enforce those limits) refuse none. The loads are
//! what a planner sends: records each with its ownership mark.
use dnsplane_applier::account::Account;
use dnsplane_applier::apply::execute;
use dnsplane_applier::provider::Provider;
use dnsplane_applier::provider::call::CallCx;
use dnsplane_applier::provider::cloudflare::{CloudflareConfig, CloudflareProvider, Plan};
use dnsplane_applier::retry::RetryPolicy;
use dnsplane_common::{Change, ChangeKind, Name, Outcome, RRSet, RRSetOp, RecordKey, RecordType};
use dnsplane_emulate::clouddns::{CloudDnsEmulator, CloudDnsOptions, DEFAULT_TOKEN};
use dnsplane_emulate::cloudflare::{CloudflareEmulator, CloudflareOptions};
use std::sync::Arc;

/// `n` creates of an A record and its ownership mark (a TXT of 84 characters), as
/// the planner sends them: 2 sets, 2 values and 94 value characters a change; each
/// label `pad` characters longer than `h0000`.
pub fn marked_creates(zone: &Name, n: usize, pad: usize) -> Vec<Change> {
    let pad = "x".repeat(pad);
    let set = |label: String, rtype: RecordType, v: &str| {
        let key = RecordKey::new(zone.clone(), zone.prepend(&label).expect("name"), rtype);
        RRSet::new(key, 300, &[v]).expect("set")
    };
    (0..n)
        .map(|i| {
            let mark = format!(
                "\"heritage=dnsplane,dnsplane/owner=bench,dnsplane/resource=DNSEndpoint default/h{i:04}\""
            );
            Change::new(
                ChangeKind::Create,
                vec![
                    RRSetOp::create(set(format!("h{i:04}{pad}"), RecordType::A, "192.0.2.10")),
                    RRSetOp::create(set(
                        format!("_dnsplane-a.h{i:04}{pad}"),
                        RecordType::Txt,
                        &mark,
                    )),
                ],
            )
        })
        .collect()
}

/// Runs `changes` through an account of `driver` for `zone`; every one must end
/// APPLIED.
async fn apply_all(driver: Arc<dyn Provider>, zone: &Name, changes: &[Change]) {
    let account = Account::new("cloud", driver, std::slice::from_ref(zone));
    let cx = CallCx::new("cloud", Some(zone.clone()));
    let report = execute(&account.stack, &cx, changes, &RetryPolicy::default()).await;
    assert!(
        report.results.iter().all(|r| r.outcome == Outcome::Applied),
        "{:?}",
        report
            .results
            .iter()
            .find(|r| r.outcome != Outcome::Applied)
    );
}

async fn listener() -> tokio::net::TcpListener {
    tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind")
}

/// Cloud DNS takes 1,000 set additions, 1,000 deletions and 100,000 bytes of rrdata
/// per change. 950 marked records of 60-character labels are 1,900 additions and
/// 89,300 bytes of rrdata: two changes (1,000 + 900 additions). The estimate the
/// driver packed to before (`approx_bytes`, which counts names too: about 300 bytes a
/// marked record here, against 100,000) made three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cloud_dns_changes_are_packed_to_googles_own_limits() {
    let mut opts = CloudDnsOptions::default();
    opts.limits.rrsets_per_zone = 5_000;
    let emu = CloudDnsEmulator::start(listener().await, opts)
        .await
        .expect("emulator");
    emu.create_zone("packed", "packed.test");
    let zone = Name::parse("packed.test").expect("zone");
    let driver = crate::clouddns::driver(&emu, DEFAULT_TOKEN, |_| {});
    apply_all(Arc::new(driver), &zone, &marked_creates(&zone, 950, 55)).await;
    let stats = emu.stats();
    assert_eq!(
        stats.requests.get("dns.changes.create").copied(),
        Some(2),
        "{stats:?}"
    );
    assert_eq!(stats.changes_committed, 2, "{stats:?}");
    assert_eq!(
        emu.rrsets("packed").len(),
        1900 + 2,
        "SOA and NS beside them"
    );
}

/// Cloudflare's batch endpoint takes as many records as the plan allows (Free 200,
/// paid 3,500). 1,800 marked records on a paid plan are 3,600 records: two batches;
/// 150 on the Free plan, 300 records: two batches. (The estimate the driver packed to
/// before, 13 `approx_bytes` a record, made eight and twelve.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cloudflare_batches_are_packed_to_the_plans_record_limit() {
    for (plan, emu_plan, n, batches) in [
        (Plan::Pro, dnsplane_emulate::cloudflare::Plan::Pro, 1800, 2),
        (Plan::Free, dnsplane_emulate::cloudflare::Plan::Free, 150, 2),
    ] {
        let emu = CloudflareEmulator::start(
            listener().await,
            CloudflareOptions {
                plan: emu_plan,
                ..CloudflareOptions::default()
            },
        )
        .await
        .expect("emulator");
        emu.create_zone("packed.test");
        let zone = Name::parse("packed.test").expect("zone");
        let dir = tempfile::tempdir().expect("dir");
        let token = dir.path().join("token");
        std::fs::write(&token, dnsplane_emulate::cloudflare::DEFAULT_TOKEN).expect("token");
        let driver = CloudflareProvider::new(&CloudflareConfig {
            endpoint: emu.endpoint(),
            api_token_file: Some(token),
            plan,
            ..CloudflareConfig::default()
        })
        .expect("driver");
        apply_all(Arc::new(driver), &zone, &marked_creates(&zone, n, 0)).await;
        let stats = emu.stats();
        assert_eq!(
            stats.requests.get("BatchDnsRecords").copied(),
            Some(batches),
            "{plan:?}: {stats:?}"
        );
        assert_eq!(stats.throttled, 0, "{plan:?}: {stats:?}");
    }
}
