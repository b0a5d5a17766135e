//! A zone's read cut off halfway (the applier's stream breaks after a page): never a
//! view, a plan or a write. Views are built page by page as the pages arrive, so a
//! partial listing must be thrown away whole, not planned as if the rest were gone.
use super::*;
use crate::config::ZoneConfig;
use crate::source::DesiredEntry;
use dnsplane_common::pb;
use dnsplane_common::{RRSet, RecordKey, RecordType};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

type Answer<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// An applier whose zone listing comes in two pages, the second of which can be cut
/// off (`cut`); it counts the `Apply` calls it is asked (there should be none).
#[derive(Clone)]
struct CutApplier {
    pages: Arc<[Vec<pb::RrSet>; 2]>,
    cut: Arc<AtomicBool>,
    applies: Arc<AtomicUsize>,
    /// An account whose listings never answer (a stalled read).
    stalled: Option<&'static str>,
}

impl CutApplier {
    /// `records` records desired and held (in two pages, the second cut off while
    /// `cut`), and the applier listing them.
    fn with_records(
        records: usize,
        cut: bool,
        stalled: Option<&'static str>,
    ) -> (Vec<DesiredEntry>, CutApplier) {
        let (entries, listed): (Vec<_>, Vec<_>) = (0..records).map(desired).unzip();
        let half: Vec<Vec<pb::RrSet>> = listed.chunks(records / 2).map(|c| c.concat()).collect();
        let fake = CutApplier {
            pages: Arc::new([half[0].clone(), half[1].clone()]),
            cut: Arc::new(AtomicBool::new(cut)),
            applies: Arc::new(AtomicUsize::new(0)),
            stalled,
        };
        (entries, fake)
    }
}

#[tonic::async_trait]
impl pb::applier_server::Applier for CutApplier {
    type ListRecordsStream = Answer<pb::ListRecordsResponse>;
    type ApplyStream = Answer<pb::ApplyResponse>;

    async fn list_records(
        &self,
        req: Request<pb::ListRecordsRequest>,
    ) -> Result<Response<Self::ListRecordsStream>, Status> {
        if self.stalled == Some(req.get_ref().account.as_str()) {
            return Ok(Response::new(Box::pin(tokio_stream::pending())));
        }
        let page = |i: usize, last| pb::ListRecordsResponse {
            rrsets: self.pages[i].clone(),
            serial: 7,
            last,
            ..Default::default()
        };
        let second = if self.cut.load(Ordering::SeqCst) {
            Err(Status::unavailable("the connection broke"))
        } else {
            Ok(page(1, true))
        };
        let answers = vec![Ok(page(0, false)), second];
        Ok(Response::new(Box::pin(tokio_stream::iter(answers))))
    }

    async fn apply(
        &self,
        _: Request<tonic::Streaming<pb::ApplyRequest>>,
    ) -> Result<Response<Self::ApplyStream>, Status> {
        self.applies.fetch_add(1, Ordering::SeqCst);
        Err(Status::unimplemented("not in this test"))
    }

    async fn get_status(
        &self,
        _: Request<pb::GetApplierStatusRequest>,
    ) -> Result<Response<pb::ApplierStatus>, Status> {
        Err(Status::unimplemented("not in this test"))
    }

    async fn claim(
        &self,
        _: Request<pb::ClaimRequest>,
    ) -> Result<Response<pb::ClaimResponse>, Status> {
        Err(Status::unimplemented("not in this test"))
    }
}

fn zone() -> Name {
    Name::parse("example.com").unwrap()
}

/// `www<i>.example.com. A 192.0.2.<i>`, as pushed and as owned at the provider.
fn desired(i: usize) -> (DesiredEntry, Vec<pb::RrSet>) {
    let name = Name::parse(&format!("www{i}.example.com")).unwrap();
    let value = format!("10.0.{}.{}", i / 250, i % 250);
    let key = RecordKey::new(zone(), name.clone(), RecordType::A);
    let data = RRSet::new(key.clone(), 300, &[value.as_str()]).unwrap();
    let mark = crate::ownership::owner_record(&key, "dnsplane", "test").unwrap();
    let entry = crate::source::testing::pushed(name.as_str(), &value, Some(300), i);
    (entry, vec![(&data).into(), (&mark).into()])
}

/// Serves `fake` on loopback; the address and the server's task.
fn serve(fake: &CutApplier) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let server = tonic::transport::Server::builder()
        .add_service(pb::applier_server::ApplierServer::new(fake.clone()))
        .serve(addr);
    let served = tokio::spawn(async move {
        server.await.unwrap();
    });
    (addr, served)
}

/// An engine for `example.com.` at `accounts`, reaching its appliers at `addr`.
fn engine_at(addr: std::net::SocketAddr, accounts: &[&str]) -> Arc<Engine> {
    engine_for(
        addr,
        vec![ZoneConfig {
            account: String::new(),
            accounts: accounts.iter().map(|a| a.to_string()).collect(),
            ..ZoneConfig::new(zone(), "")
        }],
    )
}

fn engine_for(addr: std::net::SocketAddr, zones: Vec<ZoneConfig>) -> Arc<Engine> {
    let mut config = PlannerConfig::with_zones(zones);
    config.applier = format!("http://{addr}");
    config.validate().unwrap();
    Engine::for_tests(config)
}

/// A sync of `t`, retried while the server may still be starting (a refused
/// connection is no answer yet).
async fn synced(e: &Engine, t: &crate::target::Target) -> Result<SyncSummary, SyncError> {
    for _ in 0..100 {
        match e.sync(t, &Scope::Zone, true, None).await {
            Err(SyncError::List { source, .. }) if source.is_transport() => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => return other,
        }
    }
    e.sync(t, &Scope::Zone, true, None).await
}

#[tokio::test]
async fn a_read_cut_off_halfway_plans_nothing_and_keeps_the_last_view() {
    // Page one holds www0..www2, page two www3..www5: all desired and owned.
    let (entries, fake) = CutApplier::with_records(6, true, None);
    let (addr, served) = serve(&fake);
    let e = engine_at(addr, &["a"]);
    e.set_source("push", entries, Vec::new());
    let t = e.target("example.com", "a").unwrap();
    let z = e.runtime(&t).unwrap();
    let synced = || synced(&e, &t);

    // Cut off before anything was ever read: no view, no state, no write.
    let r = synced().await;
    assert!(matches!(r, Err(SyncError::List { .. })), "{r:?}");
    assert!(lock(&z.view).is_none());
    assert!(lock(&z.states).is_empty());
    assert_eq!(fake.applies.load(Ordering::SeqCst), 0);

    // Whole: the zone is converged, nothing to write.
    fake.cut.store(false, Ordering::SeqCst);
    let r = synced().await;
    assert!(r.is_ok(), "{r:?}");
    let kept = lock(&z.view).clone().expect("a view");
    assert_eq!(kept.len(), 12);

    // Cut off again: the view read whole stays, and nothing is planned from half a
    // zone (its missing half would have looked like records to create).
    fake.cut.store(true, Ordering::SeqCst);
    let r = synced().await;
    assert!(matches!(r, Err(SyncError::List { .. })), "{r:?}");
    let after = lock(&z.view).clone().expect("a view");
    assert!(Arc::ptr_eq(&kept, &after));
    assert!(lock(&z.states).is_empty());
    assert_eq!(fake.applies.load(Ordering::SeqCst), 0);
    served.abort();
}

/// Three targets holding the same records hold them once (issue 33): each view read is
/// its own, and at rest shares every chunk equal to another target's. A change to one
/// target's view is its own.
#[tokio::test]
async fn targets_holding_the_same_records_hold_them_once() {
    let (entries, fake) = CutApplier::with_records(2_000, false, None);
    let (addr, served) = serve(&fake);
    let e = engine_at(addr, &["a", "b", "c"]);
    e.set_source("push", entries, Vec::new());
    let mut views = Vec::new();
    for account in ["a", "b", "c"] {
        let t = e.target("example.com", account).unwrap();
        let r = synced(&e, &t).await;
        assert!(r.is_ok(), "{account}: {r:?}");
        views.push(lock(&e.runtime(&t).unwrap().view).clone().expect("a view"));
    }
    assert_eq!(
        fake.applies.load(Ordering::SeqCst),
        0,
        "converged: nothing to write"
    );
    let chunks = views[0].chunks();
    assert!(chunks > 10, "{chunks} chunks");
    for v in &views[1..] {
        assert_eq!(v.len(), 4_000);
        assert_eq!(v.chunks_shared_with(&views[0]), chunks, "not shared");
    }

    // One target's record changes: only its view sees it.
    let key = RecordKey::new(
        zone(),
        Name::parse("www5.example.com").unwrap(),
        RecordType::A,
    );
    let t = e.target("example.com", "b").unwrap();
    let z = e.runtime(&t).unwrap();
    let gone = dnsplane_common::RRSetOp {
        before: views[1].get(&key),
        after: None,
        key: key.clone(),
    };
    if let Some(v) = lock(&z.view).as_mut() {
        Arc::make_mut(v).apply_op(&gone, &key);
    }
    assert!(!lock(&z.view).as_ref().unwrap().contains(&key));
    for v in [&views[0], &views[2]] {
        assert!(v.contains(&key), "another target's view changed");
    }
    served.abort();
}

/// Whole-zone reads take turns, and a read that receives nothing gives its turn back
/// (`turns`): with every turn held by reads from an applier that never answers, another
/// zone's read still waits only that long, then completes. (Before, a read went ahead
/// after waiting 5 s for its turn, whatever the reads holding the turns were doing: at
/// start with many targets, all of them went at once.)
#[tokio::test]
async fn a_read_that_receives_nothing_gives_its_turn_back() {
    let (entries, fake) = CutApplier::with_records(6, false, Some("stalled"));
    let (addr, served) = serve(&fake);
    let turns = super::turns::WHOLE_READS_AT_ONCE;
    let mut zones: Vec<ZoneConfig> = (0..turns)
        .map(|i| ZoneConfig::new(Name::parse(&format!("z{i}.test")).unwrap(), "stalled"))
        .collect();
    zones.push(ZoneConfig::new(zone(), "a"));
    let e = engine_for(addr, zones);
    let stall = Duration::from_millis(300);
    e.whole_read_stall_ms
        .store(stall.as_millis() as u64, Ordering::Relaxed);
    e.set_source("push", entries, Vec::new());
    // Reachable first, so that the stalled reads are stalled, not refused.
    let t = e.target("example.com", "a").unwrap();
    assert!(synced(&e, &t).await.is_ok());

    let started = tokio::time::Instant::now();
    let stalled: Vec<_> = (0..turns)
        .map(|i| {
            let e = e.clone();
            let t = e.target(&format!("z{i}.test"), "stalled").unwrap();
            tokio::spawn(async move { e.sync(&t, &Scope::Zone, true, None).await })
        })
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while e.whole_reads.available_permits() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stalled reads took no turn"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let r = tokio::time::timeout(Duration::from_secs(10), synced(&e, &t)).await;
    let r = r.expect("a read waited behind stalled reads for good");
    assert!(r.is_ok(), "{r:?}");
    assert!(started.elapsed() >= stall, "{:?}", started.elapsed());
    // The stalled reads are still reading; none of them holds a turn now.
    assert_eq!(e.whole_reads.available_permits(), turns);
    assert!(stalled.iter().all(|s| !s.is_finished()));
    for s in stalled {
        s.abort();
    }
    served.abort();
}
