//! No message limit can be reached at any size (issue 14): a targeted read of more
//! names than fit one gRPC message is cut into requests, and the applier's listing
//! pages end at 1 MiB, so a client with gRPC's default 4 MiB limit reads any zone.
use crate::stack::{Stack, Tools, ZONE};
use dnsplane_common::{Change, ChangeKind, Name, RRSet, RRSetOp, RecordKey, RecordType, pb};
use dnsplane_planner::pool::{ApplierPool, PoolConfig};
use std::time::Duration;

/// 3,000 TXT RRSets of about 2 KB each (6 MB in all), written through the applier in
/// batches that each fit a message.
fn big_txt_zone(s: &Stack) -> Vec<RRSet> {
    // Eight strings of 250 bytes: one TXT value of 2 KB.
    let value = vec![format!("\"{}\"", "v".repeat(250)); 8].join(" ");
    let rrsets: Vec<RRSet> = (0..3000)
        .map(|i| {
            let key = RecordKey::new(
                Name::parse(ZONE).unwrap(),
                Name::parse(&format!("t{i}.example.com")).unwrap(),
                RecordType::Txt,
            );
            RRSet::new(key, 60, &[value.as_str()]).unwrap()
        })
        .collect();
    for part in rrsets.chunks(500) {
        let changes = part
            .iter()
            .map(|r| Change::new(ChangeKind::Create, vec![RRSetOp::create(r.clone())]))
            .collect();
        let results = s.other_writer(changes);
        assert!(
            results
                .iter()
                .all(|r| r.outcome == pb::Outcome::Applied as i32),
            "{results:?}"
        );
    }
    rrsets
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn reads_of_any_size_fit_default_message_limits() {
    let Some(tools) = Tools::find() else { return };
    let mut s = Stack::new(tools, &[], "report");
    s.start_applier();
    let written = big_txt_zone(&s);
    let addr = format!("http://127.0.0.1:{}", s.applier_port);

    runtime().block_on(async {
        // A plain client with gRPC's default 4 MiB decode limit reads the 6 MB zone
        // in full: every page is under it.
        let mut plain = pb::applier_client::ApplierClient::connect(addr.clone())
            .await
            .expect("connect");
        let mut pages = plain
            .list_records(pb::ListRecordsRequest {
                account: "embedded".into(),
                zone: ZONE.into(),
                page_size: 10_000,
                ..Default::default()
            })
            .await
            .expect("list")
            .into_inner();
        let (mut n, mut count) = (0, 0);
        while let Some(page) = pages.message().await.expect("every page decodes") {
            n += page.rrsets.len();
            count += 1;
            if page.last {
                break;
            }
        }
        assert!(n >= written.len(), "{n} RRSets listed");
        assert!(count >= 6, "6 MB came in {count} pages");

        // The planner's targeted read of 3,000 names that exist and 22,000 long ones
        // that do not (about 5 MB of names): cut into requests, all answered.
        let pool = ApplierPool::new(PoolConfig {
            addrs: vec![addr.clone()],
            dns: None,
            health_interval: Duration::from_secs(1),
            resolve_interval: Duration::from_secs(10),
        })
        .expect("pool");
        let member = pool.members().into_iter().next().expect("member");
        let long = format!("{}.{}.{}", "x".repeat(60), "y".repeat(60), "z".repeat(60));
        let mut names: Vec<Name> = written.iter().map(|r| r.key.name.clone()).collect();
        names
            .extend((0..22_000).map(|i| Name::parse(&format!("n{i}.{long}.example.com")).unwrap()));
        let bytes: usize = names.iter().map(|n| n.as_str().len()).sum();
        assert!(bytes > 4 << 20, "the names alone ({bytes} B) exceed 4 MiB");
        let zone = Name::parse(ZONE).unwrap();
        let (rrsets, _) = dnsplane_planner::client::list(&member, "embedded", &zone, true, &names)
            .await
            .expect("a targeted read of 25,000 names");
        assert_eq!(rrsets.len(), written.len());
    });
}
