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
    crate::stack::threaded_runtime(1)
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
            tls: None,
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

/// A zone whose serial a planner already knows is not listed again: `unless_serial`
/// answers one empty page marked `unchanged`; once the zone changed, the listing.
#[test]
fn a_zone_with_the_known_serial_is_not_listed_again() {
    let Some(tools) = Tools::find() else { return };
    let mut s = Stack::new(tools, &[], "report");
    s.start_applier();
    let written = big_txt_zone(&s);
    let addr = format!("http://127.0.0.1:{}", s.applier_port);
    let list = |unless_serial: u64| {
        let addr = addr.clone();
        runtime().block_on(async move {
            let mut c = pb::applier_client::ApplierClient::connect(addr)
                .await
                .expect("connect");
            let mut pages = c
                .list_records(pb::ListRecordsRequest {
                    account: "embedded".into(),
                    zone: ZONE.into(),
                    unless_serial,
                    ..Default::default()
                })
                .await
                .expect("list")
                .into_inner();
            let mut out = Vec::new();
            while let Some(page) = pages.message().await.expect("page") {
                let last = page.last;
                out.push(page);
                if last {
                    break;
                }
            }
            out
        })
    };
    let full = list(0);
    let serial = full[0].serial;
    assert_ne!(serial, 0, "the memory provider has a serial");
    assert_eq!(
        full.iter().map(|p| p.rrsets.len()).sum::<usize>(),
        written.len()
    );
    let same = list(serial);
    assert_eq!(same.len(), 1);
    assert!(same[0].unchanged && same[0].last && same[0].rrsets.is_empty());

    // Someone writes: the serial moves and the same request lists the zone.
    let extra = crate::stack::a_record("moved.example.com", "192.0.2.9");
    let results = s.other_writer(vec![Change::new(
        ChangeKind::Create,
        vec![RRSetOp::create(extra)],
    )]);
    assert_eq!(results[0].outcome, pb::Outcome::Applied as i32);
    let after = list(serial);
    assert!(after.iter().all(|p| !p.unchanged));
    assert_eq!(
        after.iter().map(|p| p.rrsets.len()).sum::<usize>(),
        written.len() + 1
    );
}
