//! Pushes of any size (issue 14): `PutDesiredStream` takes a source past the one
//! message limit of `PutDesired`, in chunks, and a stream that breaks changes nothing;
//! `PatchDesired` changes one record of a large source, reaches DNS and survives a
//! restart. Meanwhile `/healthz`, `/metrics` and `GetStatus` answer while a large
//! push is still being taken in.
use crate::stack::{Stack, Tools, ZONE, endpoints};
use dnsplane_common::pb;
use dnsplane_common::pb::planner_client::PlannerClient;
use dnsplane_e2e::{free_port, http_get, wait_for};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tonic::transport::Channel;

/// Records of the large push: TXT values of 250 octets, so that 20,000 of them
/// (≈ 5.6 MB) are past the 4 MiB one gRPC message may carry.
const N: usize = 20_000;
const CHUNK: usize = 1_000;
const LEN: usize = 250;

fn txt(i: usize, version: &str) -> pb::DesiredRecord {
    named("r", i, version)
}

fn named(prefix: &str, i: usize, version: &str) -> pb::DesiredRecord {
    pb::DesiredRecord {
        name: format!("{prefix}{i}.{ZONE}"),
        r#type: "TXT".into(),
        ttl: 0,
        values: vec![format!("{version}{}", "x".repeat(LEN - version.len()))],
        ..Default::default()
    }
}

/// The push of `source` in chunks, the last one marked so.
fn chunks(source: &str, prefix: &str, version: &str) -> Vec<pb::PutDesiredChunk> {
    (0..N)
        .step_by(CHUNK)
        .enumerate()
        .map(|(c, start)| pb::PutDesiredChunk {
            // Only the first chunk needs to name the source.
            source: if c == 0 { source.into() } else { String::new() },
            records: (start..(start + CHUNK).min(N))
                .map(|i| named(prefix, i, version))
                .collect(),
            last: start + CHUNK >= N,
        })
        .collect()
}

/// Starts the stack with the planner's admin port; returns that port.
fn start(s: &mut Stack) -> u16 {
    s.start_applier();
    let admin_port = free_port();
    spawn_planner(s, admin_port);
    admin_port
}

fn spawn_planner(s: &mut Stack, admin_port: u16) {
    s.start_planner_with_admin(admin_port);
}

fn client(rt: &tokio::runtime::Runtime, port: u16) -> PlannerClient<Channel> {
    rt.block_on(PlannerClient::connect(format!("http://127.0.0.1:{port}")))
        .expect("connect to the planner")
}

fn desired_records(rt: &tokio::runtime::Runtime, c: &PlannerClient<Channel>) -> u32 {
    let mut c = c.clone();
    rt.block_on(c.get_status(pb::GetStatusRequest::default()))
        .expect("GetStatus")
        .into_inner()
        .zones[0]
        .desired_records
}

#[test]
fn a_large_push_streams_in_chunks_and_a_patch_changes_one_record() {
    let Some(tools) = Tools::find() else { return };
    let base = endpoints("base", &[("www.example.com", "A", &["192.0.2.10"])]);
    let mut s = Stack::new(tools, &[("base.yaml", &base)], "report");
    let admin = start(&mut s);
    let rt = crate::stack::threaded_runtime(2);
    let c = client(&rt, s.planner_port);
    let ready = wait_for(Duration::from_secs(30), || {
        (desired_records(&rt, &c) == 1).then_some(())
    });
    assert!(ready.is_some(), "the file source loads; {}", s.logs());

    // One message cannot carry it: PutDesired is refused by size and changes nothing.
    let whole = pb::PutDesiredRequest {
        source: "bulk".into(),
        records: (0..N).map(|i| txt(i, "v1")).collect(),
    };
    let refused = rt
        .block_on(
            c.clone()
                .max_encoding_message_size(64 << 20)
                .put_desired(whole),
        )
        .expect_err("past the decode limit");
    assert_ne!(refused.code(), tonic::Code::Ok);
    assert_eq!(desired_records(&rt, &c), 1);

    // A stream with no chunk names no source: refused, nothing changes (it is not a
    // push of nothing).
    let e = rt
        .block_on(
            c.clone()
                .put_desired_stream(tokio_stream::iter(Vec::<pb::PutDesiredChunk>::new())),
        )
        .expect_err("no chunk");
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    assert!(e.message().starts_with("source: "), "{e:?}");

    // A stream cancelled after some chunks changes nothing, and so does one that
    // ends without its last chunk.
    let some = chunks("broken", "b", "v0").into_iter().take(3);
    let mut bc = c.clone();
    let broken = rt.block_on(async move {
        let stream =
            tokio_stream::StreamExt::chain(tokio_stream::iter(some), tokio_stream::pending());
        tokio::time::timeout(Duration::from_secs(2), bc.put_desired_stream(stream)).await
    });
    assert!(broken.is_err(), "the stream never completes: {broken:?}");
    let e = rt
        .block_on(c.clone().put_desired_stream(tokio_stream::iter(
            chunks("broken", "b", "v0").into_iter().take(3),
        )))
        .expect_err("no last chunk");
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    assert!(e.message().starts_with("last: "), "{e:?}");

    // The stream in chunks; /healthz, /metrics and GetStatus answer while the planner
    // is still taking it in (the call has not returned).
    let done = Arc::new(AtomicBool::new(false));
    let push = {
        let (mut c, done) = (c.clone(), done.clone());
        rt.spawn(async move {
            let r = c
                .put_desired_stream(tokio_stream::iter(chunks("bulk", "r", "v1")))
                .await;
            done.store(true, Ordering::SeqCst);
            r
        })
    };
    let (mut health, mut metrics, mut status) = (0, 0, 0);
    while !done.load(Ordering::SeqCst) {
        assert_eq!(http_get(admin, "/healthz"), (200, "ok\n".to_string()));
        health += usize::from(!done.load(Ordering::SeqCst));
        let (code, _) = http_get(admin, "/metrics");
        assert_eq!(code, 200);
        metrics += usize::from(!done.load(Ordering::SeqCst));
        let mut sc = c.clone();
        let st = rt.block_on(async move {
            let ask = sc.get_status(pb::GetStatusRequest::default());
            tokio::time::timeout(Duration::from_secs(5), ask).await
        });
        assert!(matches!(st, Ok(Ok(_))), "GetStatus within 5 s: {st:?}");
        status += usize::from(!done.load(Ordering::SeqCst));
    }
    let accepted = rt
        .block_on(push)
        .expect("push task")
        .expect("PutDesiredStream")
        .into_inner()
        .accepted;
    assert_eq!(accepted as usize, N);
    assert!(
        health > 0 && metrics > 0 && status > 0,
        "answers while the push ran: /healthz {health}, /metrics {metrics}, GetStatus {status}"
    );
    assert_eq!(
        desired_records(&rt, &c) as usize,
        N + 1,
        "all of the stream, none of the broken one"
    );
    s.wait_dns(
        "r7.example.com",
        "TXT",
        &[&format!("\"v1{}\"", "x".repeat(LEN - 2))],
    );
    assert!(
        s.dig("b7.example.com", "TXT").is_empty(),
        "nothing of the broken streams"
    );

    // A one-record patch: r0 changes, r1 goes, the rest stays.
    let patched = rt
        .block_on(c.clone().patch_desired(pb::PatchDesiredRequest {
            source: "bulk".into(),
            upserts: vec![txt(0, "v2")],
            deletes: vec![pb::DesiredRecordRef {
                name: format!("r1.{ZONE}"),
                r#type: "TXT".into(),
                ..Default::default()
            }],
        }))
        .expect("PatchDesired")
        .into_inner();
    assert_eq!(
        (patched.upserted, patched.deleted, patched.records as usize),
        (1, 1, N - 1)
    );
    let v2 = format!("\"v2{}\"", "x".repeat(LEN - 2));
    s.wait_dns("r0.example.com", "TXT", &[&v2]);
    s.wait_dns("r1.example.com", "TXT", &[]);
    assert_eq!(desired_records(&rt, &c) as usize, N);

    // The patch was persisted: a restarted planner keeps it.
    s.planner.take().expect("planner").kill();
    spawn_planner(&mut s, free_port());
    let c = client(&rt, s.planner_port);
    let kept = wait_for(Duration::from_secs(30), || {
        (desired_records(&rt, &c) as usize == N).then_some(())
    });
    assert!(
        kept.is_some(),
        "{} desired after restart; {}",
        desired_records(&rt, &c),
        s.logs()
    );
    s.wait_dns("r0.example.com", "TXT", &[&v2]);
    s.wait_dns("r1.example.com", "TXT", &[]);
}
