//! The `pdns` driver's record cache against a real PowerDNS, seen from the wire: a
//! recording proxy in front of the API logs every request. Once warm, a batch costs
//! one serial GET (`?rrsets=false`) and one PATCH, never a GET of the whole zone; a
//! change made by another API client between two batches moves the serial and still
//! ends CONFLICT with the value the server holds; a PATCH whose answer is lost (a 502
//! from the proxy after PowerDNS committed it) drops the cache instead of guessing,
//! and the batch ends ALREADY_APPLIED from a fresh read; a listing answers from the
//! cache with exactly what the server holds. A PowerDNS whose PATCHes grow slower
//! than the account's `timeout` (its whole-zone rectify in a large zone, simulated by
//! holding each PATCH before it reaches PowerDNS) still gets every write answered:
//! the zone's deadline follows what PowerDNS takes.
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use dnsplane_applier::account::Account;
use dnsplane_applier::apply::execute;
use dnsplane_applier::provider::Provider;
use dnsplane_applier::provider::call::CallCx;
use dnsplane_applier::provider::pdns::PdnsProvider;
use dnsplane_applier::retry::RetryPolicy;
use dnsplane_common::{Change, ChangeKind, Name, Outcome, RRSet, RRSetOp, RecordKey, RecordType};
use dnsplane_e2e::servers::PowerDns;
use std::sync::{Arc, Mutex};

/// One request the proxy forwarded.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    /// Path and query.
    uri: String,
    /// Bytes of the answer's body.
    bytes: usize,
}

impl Seen {
    /// A GET of a zone with its RRSets, not restricted to one name: the whole zone.
    fn whole_zone_get(&self) -> bool {
        self.method == "GET"
            && self.uri.contains("/zones/")
            && !self.uri.contains("rrsets=false")
            && !self.uri.contains("rrset_name=")
    }
    fn serial_get(&self) -> bool {
        self.method == "GET" && self.uri.contains("rrsets=false")
    }
}

#[derive(Debug)]
struct Recorder {
    upstream: String,
    http: reqwest::Client,
    log: Mutex<Vec<Seen>>,
    /// Answer the next PATCH 502 after PowerDNS committed it.
    lose_next_patch_answer: std::sync::atomic::AtomicBool,
    /// Hold each next PATCH this long before forwarding it (as PowerDNS takes longer
    /// to commit); the forwarding goes on if the client gives up, as PowerDNS's does.
    patch_delays: Mutex<std::collections::VecDeque<std::time::Duration>>,
}

impl Recorder {
    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.log.lock().expect("log"))
    }
}

async fn forward(State(rec): State<Arc<Recorder>>, req: Request) -> Response {
    // Spawned: a client that hangs up does not stop the request, as it does not stop
    // PowerDNS's.
    tokio::spawn(forward_whole(rec, req))
        .await
        .expect("forwarding task")
}

async fn forward_whole(rec: Arc<Recorder>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let uri = parts
        .uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .expect("request body");
    let mut out = rec
        .http
        .request(parts.method.clone(), format!("{}{uri}", rec.upstream));
    for (k, v) in &parts.headers {
        if k != "host" && k != "content-length" {
            out = out.header(k, v);
        }
    }
    if parts.method == axum::http::Method::PATCH {
        let delay = rec.patch_delays.lock().expect("delays").pop_front();
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
    }
    let resp = out.body(body).send().await.expect("upstream answer");
    let mut status = resp.status();
    if parts.method == axum::http::Method::PATCH
        && rec
            .lose_next_patch_answer
            .swap(false, std::sync::atomic::Ordering::SeqCst)
    {
        status = axum::http::StatusCode::BAD_GATEWAY;
    }
    let bytes = resp.bytes().await.expect("upstream body");
    rec.log.lock().expect("log").push(Seen {
        method: parts.method.to_string(),
        uri,
        bytes: bytes.len(),
    });
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(bytes))
        .expect("response")
}

async fn start_recorder(upstream: String) -> (Arc<Recorder>, String) {
    let rec = Arc::new(Recorder {
        upstream,
        http: reqwest::Client::new(),
        log: Mutex::default(),
        lose_next_patch_answer: std::sync::atomic::AtomicBool::new(false),
        patch_delays: Mutex::default(),
    });
    let listener = dnsplane_e2e::loopback().await;
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let app = Router::new().fallback(forward).with_state(rec.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (rec, url)
}

fn rrset(zone: &Name, label: &str, value: &str) -> RRSet {
    let key = RecordKey::new(
        zone.clone(),
        zone.prepend(label).expect("name"),
        RecordType::A,
    );
    RRSet::new(key, 60, &[value]).expect("rrset")
}

fn creates(zone: &Name, prefix: &str, n: usize) -> Vec<Change> {
    (0..n)
        .map(|i| {
            Change::new(
                ChangeKind::Create,
                vec![RRSetOp::create(rrset(
                    zone,
                    &format!("{prefix}{i}"),
                    &format!("192.0.2.{}", i % 250 + 1),
                ))],
            )
        })
        .collect()
}

async fn run(account: &Account, zone: &Name, changes: &[Change]) -> Vec<Outcome> {
    let cx = CallCx::new(account.name.as_str(), Some(zone.clone()));
    crate::conformance::outcomes(account, &cx, changes).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdns_warm_batches_read_only_the_serial_and_still_see_other_writers() {
    let Some(srv) = PowerDns::start() else { return };
    let zone = srv.zone.clone();
    let (rec, url) = start_recorder(srv.api_url()).await;
    let cfg = dnsplane_applier::provider::pdns::PdnsConfig {
        api_url: url,
        ..srv.config()
    };
    let provider = Arc::new(PdnsProvider::new(&cfg).expect("provider"));
    let account = Account::new("pdns", provider.clone(), std::slice::from_ref(&zone));

    // Cold: the first batch of more than 32 names reads the zone whole once.
    let out = run(&account, &zone, &creates(&zone, "a", 100)).await;
    assert!(out.iter().all(|o| *o == Outcome::Applied), "{out:?}");
    let cold = rec.take();
    assert_eq!(
        cold.iter().filter(|s| s.whole_zone_get()).count(),
        1,
        "{cold:?}"
    );

    // Warm: each batch is one serial GET and one PATCH, however big the zone gets.
    for b in 0..4 {
        let out = run(&account, &zone, &creates(&zone, &format!("w{b}-"), 100)).await;
        assert!(out.iter().all(|o| *o == Outcome::Applied), "{out:?}");
        let seen = rec.take();
        let kinds: Vec<(&str, bool)> = seen
            .iter()
            .map(|s| (s.method.as_str(), s.serial_get()))
            .collect();
        assert_eq!(kinds, [("GET", true), ("PATCH", false)], "{seen:?}");
        assert!(seen[0].bytes < 2_000, "the serial GET is small: {seen:?}");
    }
    assert_eq!(provider.record_cache().stats().fills, 1);

    // Another API client writes between two batches: the serial moved one more than
    // our writes explain, the zone is read again, and the write that would overwrite
    // it ends CONFLICT while the rest of the batch applies.
    let (status, body) = srv.api(
        "PATCH",
        &format!("/api/v1/servers/localhost/zones/{zone}"),
        &format!(
            r#"{{"rrsets":[{{"name":"taken.{zone}","type":"A","ttl":120,"changetype":"REPLACE","records":[{{"content":"203.0.113.9","disabled":false}}]}}]}}"#
        ),
    );
    assert_eq!(status, 204, "{body}");
    let mut batch = creates(&zone, "c", 50);
    batch.push(Change::new(
        ChangeKind::Create,
        vec![RRSetOp::create(rrset(&zone, "taken", "192.0.2.77"))],
    ));
    let cx = CallCx::new(account.name.as_str(), Some(zone.clone()));
    let report = execute(&account.stack, &cx, &batch, &RetryPolicy::default()).await;
    let last = report.results.last().expect("a result");
    assert_eq!(last.outcome, Outcome::Conflict, "{last:?}");
    let observed = last.observed.as_ref().expect("observed");
    assert_eq!(observed.values(), ["203.0.113.9"], "{last:?}");
    assert!(
        report.results[..50]
            .iter()
            .all(|r| r.outcome == Outcome::Applied),
        "{:?}",
        report.results
    );
    let seen = rec.take();
    assert!(
        seen.iter().any(Seen::whole_zone_get),
        "the unexplained serial made the driver read the zone again: {seen:?}"
    );

    // A PATCH that committed but whose answer is lost: the driver cannot know, so it
    // drops the cache; the read-back (a whole-zone read, refilling it) shows the
    // writes there, and they end ALREADY_APPLIED.
    let invalidated = provider.record_cache().stats().invalidations;
    rec.lose_next_patch_answer
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let out = run(&account, &zone, &creates(&zone, "lost", 40)).await;
    assert!(out.iter().all(|o| *o == Outcome::AlreadyApplied), "{out:?}");
    assert_eq!(
        provider.record_cache().stats().invalidations,
        invalidated + 1
    );
    let seen = rec.take();
    assert_eq!(
        seen.iter().filter(|s| s.method == "PATCH").count(),
        1,
        "{seen:?}"
    );
    assert!(seen.iter().any(Seen::whole_zone_get), "{seen:?}");

    // A listing when warm: one serial GET, and exactly what the server holds.
    let listed = provider.list(&zone, None).await.expect("list");
    let seen = rec.take();
    assert!(
        seen.len() == 1 && seen[0].serial_get(),
        "a warm listing reads the serial only: {seen:?}"
    );
    let truth = PdnsProvider::new(&srv.config())
        .expect("uncached provider")
        .with_drift_check(std::time::Duration::ZERO)
        .list(&zone, None)
        .await
        .expect("list");
    let (mut a, mut b) = (listed.rrsets, truth.rrsets);
    a.sort_by(|x, y| x.key.cmp(&y.key));
    b.sort_by(|x, y| x.key.cmp(&y.key));
    assert_eq!(
        a.len(),
        100 + 400 + 50 + 1 + 40 + 1,
        "records plus the zone's NS"
    );
    assert_eq!(a, b, "the cache holds what the server holds");
    assert_eq!(listed.serial, truth.serial);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdns_writes_wait_as_long_as_powerdns_takes_for_the_zone() {
    use std::time::Duration;
    let Some(srv) = PowerDns::start() else { return };
    let zone = srv.zone.clone();
    let (rec, url) = start_recorder(srv.api_url()).await;
    let timeout = Duration::from_millis(500);
    let cfg = dnsplane_applier::provider::pdns::PdnsConfig {
        api_url: url,
        timeout,
        ..srv.config()
    };
    let provider = Arc::new(PdnsProvider::new(&cfg).expect("provider"));
    let account = Account::new("pdns", provider.clone(), std::slice::from_ref(&zone));

    // Each PATCH takes PowerDNS longer than the last, from under the account's
    // timeout to more than twice it, as a growing zone's rectify does.
    let delays: Vec<Duration> = [200, 400, 600, 800, 1000, 1200]
        .map(Duration::from_millis)
        .to_vec();
    rec.patch_delays
        .lock()
        .expect("delays")
        .extend(delays.iter().copied());
    for (b, delay) in delays.iter().enumerate() {
        let out = run(&account, &zone, &creates(&zone, &format!("slow{b}-"), 40)).await;
        assert!(
            out.iter().all(|o| *o == Outcome::Applied),
            "batch {b}, PATCH held {delay:?} (timeout {timeout:?}): {out:?}"
        );
        let seen = rec.take();
        assert_eq!(
            seen.iter().filter(|s| s.method == "PATCH").count(),
            1,
            "batch {b}: one PATCH, none resent after a timeout: {seen:?}"
        );
    }
    assert_eq!(
        provider.record_cache().stats().invalidations,
        0,
        "no write was ambiguous"
    );
}
