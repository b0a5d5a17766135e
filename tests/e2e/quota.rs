//! Issue 6 (the applier's side): provider quotas shared by applier replicas.
//!
//! First the quota itself against a real `redis-server` (two replicas on one bucket,
//! a throttle seen by one slowing the other, fallback and return). Then the full
//! stack: Redis, three applier processes and one planner (`appliers = [...]`), 30
//! PowerDNS zones spread over the appliers, and a provider that enforces a write
//! quota of Q PATCH per second (a proxy in front of the PowerDNS API answering 429
//! with `Retry-After` above it). With the quota shared through Redis at Q, the
//! appliers together write at ≥ 0.9·Q and draw no 429; with each replica local at Q,
//! the same run draws 429s. Stopping Redis mid-run: the appliers keep applying under
//! their local share and say so in `GetStatus`; restarting it brings them back to the
//! shared quota. Rates are the proxy's own counts; no wall-clock assertion.
use dnsplane_applier::quota::{Mode, Quota, QuotaOps, QuotaSettings};
use dnsplane_e2e::quota_proxy::{ProxyOptions, QuotaProxy, max_in_window, rate};
use dnsplane_e2e::redis::Redis;
use dnsplane_e2e::scaling::{Cluster, ClusterOptions, QuotaToml, create_zones};
use dnsplane_e2e::servers::PowerDns;
use dnsplane_e2e::{grpcurl, tool, wait_for};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The provider's write quota, PATCH per second.
const Q: f64 = 20.0;
const ZONES: usize = 30;
/// Changes per batch: one PATCH per batch, so many writes per zone.
const BATCH: usize = 2;
/// Safety net for a phase; not a performance claim.
const PHASE_TIMEOUT: Duration = Duration::from_secs(180);

fn shared_settings(url: &str, rate: f64, burst: u32) -> QuotaSettings {
    QuotaSettings {
        rate,
        burst,
        ops: QuotaOps::Writes,
        redis: Some(url.to_string().into()),
        replicas: 2,
        key: None,
        max_wait: Duration::from_secs(30),
        recover: Duration::from_secs(20),
        redis_timeout: Duration::from_millis(500),
        probe_interval: Duration::from_millis(100),
        // The sharing's own arithmetic, exactly at the rate.
        headroom: 0.0,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    crate::stack::threaded_runtime(2)
}

/// Two replicas of one account, 4 callers each, hammering one Redis bucket for 3 s:
/// no 1 s window ever holds more than rate + burst tokens (plus one for timer
/// jitter at the window's edges), and together they still use most of the quota.
#[test]
fn two_replicas_sharing_a_redis_bucket_never_exceed_rate_plus_burst() {
    let Some(redis) = Redis::start() else { return };
    let (rate_q, burst) = (20.0, 4u32);
    let rt = runtime();
    let grants: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let quotas: Vec<Arc<Quota>> = (0..2)
        .map(|_| {
            Arc::new(
                Quota::new("acct", shared_settings(&redis.url(), rate_q, burst)).expect("quota"),
            )
        })
        .collect();
    let stop = Instant::now() + Duration::from_secs(3);
    rt.block_on(async {
        let mut tasks = Vec::new();
        for q in &quotas {
            for _ in 0..4 {
                let (q, grants) = (q.clone(), grants.clone());
                tasks.push(tokio::spawn(async move {
                    while Instant::now() < stop {
                        if q.acquire(Duration::from_secs(1)).await.is_ok() {
                            grants.lock().expect("grants").push(Instant::now());
                        }
                    }
                }));
            }
        }
        for t in tasks {
            t.await.expect("caller");
        }
    });
    let mut g = grants.lock().expect("grants").clone();
    g.sort();
    let busiest = max_in_window(&g, Duration::from_secs(1));
    let limit = f64::from(burst) + rate_q + 1.0;
    eprintln!(
        "{} grants, busiest second {busiest}, rate {:.1}/s",
        g.len(),
        rate(&g)
    );
    assert!(
        busiest as f64 <= limit,
        "{busiest} tokens in one second > {limit}"
    );
    assert!(
        rate(&g) >= 0.9 * rate_q,
        "only {:.1}/s of {rate_q}",
        rate(&g)
    );
    for q in &quotas {
        let st = q.status();
        assert_eq!(st.mode, Mode::Shared, "{st:?}");
        assert!(
            st.granted > 0 && st.waited > 0,
            "both replicas took and waited: {st:?}"
        );
    }
}

/// A 429 seen by one replica holds back the other too (the shared bucket carries the
/// `Retry-After` and the halved rate).
#[test]
fn a_throttle_seen_by_one_replica_slows_the_other() {
    let Some(redis) = Redis::start() else { return };
    let rt = runtime();
    let a = Arc::new(Quota::new("acct", shared_settings(&redis.url(), 10.0, 2)).expect("quota"));
    let b = Arc::new(Quota::new("acct", shared_settings(&redis.url(), 10.0, 2)).expect("quota"));
    rt.block_on(async {
        b.acquire(Duration::ZERO).await.expect("a full bucket");
        a.throttle(Some(Duration::from_secs(2))).await;
        // b has not seen the 429, but the bucket has: nothing for about 2 s.
        let retry = b
            .acquire(Duration::from_millis(100))
            .await
            .expect_err("held back");
        assert!(retry >= Duration::from_millis(1500), "{retry:?}");
    });
    assert_eq!(a.status().throttled, 1);
    let st = b.status();
    assert_eq!((st.mode, st.denied, st.throttled), (Mode::Shared, 1, 0));
    assert!(
        (st.current_rate - 5.0).abs() < 0.01,
        "halved for everyone: {st:?}"
    );
}

/// Redis stops: the replica keeps granting under its local share and says so; Redis
/// comes back: the probe returns it to the shared bucket.
#[test]
fn a_replica_falls_back_while_redis_is_down_and_returns_when_it_is_back() {
    let Some(mut redis) = Redis::start() else {
        return;
    };
    let rt = runtime();
    let q = Arc::new(Quota::new("acct", shared_settings(&redis.url(), 10.0, 4)).expect("quota"));
    rt.block_on(q.acquire(Duration::ZERO)).expect("token");
    assert_eq!(q.mode(), Mode::Shared);
    redis.stop();
    rt.block_on(q.acquire(Duration::from_secs(1)))
        .expect("a local token");
    let st = q.status();
    assert_eq!(st.mode, Mode::Fallback);
    assert_eq!(st.fallbacks, 1);
    assert!(
        (st.current_rate - 5.0).abs() < 1e-9,
        "rate / 2 replicas: {st:?}"
    );
    assert!(st.reason("acct").is_some_and(|r| r.contains("unreachable")));
    redis.restart();
    let back = wait_for(Duration::from_secs(20), || {
        (q.mode() == Mode::Shared).then_some(())
    });
    assert!(back.is_some(), "still {:?}", q.status());
    rt.block_on(q.acquire(Duration::from_secs(1)))
        .expect("a shared token");
    let st = q.status();
    assert_eq!((st.mode, st.fallbacks), (Mode::Shared, 1));
    assert!(st.reason("acct").is_none());
}

/// Redis, PowerDNS with `ZONES` zones behind the quota proxy, and a started cluster.
struct Stack {
    cluster: Cluster,
    proxy: QuotaProxy,
    _pdns: PowerDns,
}

fn stack(redis: Option<&Redis>) -> Option<Stack> {
    let pdns = PowerDns::start()?;
    let zones = create_zones(&pdns, "q", ZONES);
    // The provider: Q writes per second, bursts up to one second's worth.
    let proxy = QuotaProxy::start(
        &pdns.api_url(),
        ProxyOptions {
            write_rate: Q,
            write_burst: Q,
            latency: Duration::ZERO,
            retry_after_secs: 1,
            all_requests: false,
        },
    );
    let quota = QuotaToml {
        rate: Q,
        burst: 5,
        redis: redis.map(Redis::url),
        // Shared: the three split it; local: each replica believes it has Q.
        replicas: if redis.is_some() { 3 } else { 1 },
    };
    let cluster = Cluster::start(
        &pdns,
        &proxy.url(),
        &zones,
        ClusterOptions {
            appliers: 3,
            quota: Some(quota),
            batch_max_changes: BATCH,
            ..ClusterOptions::default()
        },
    );
    Some(Stack {
        cluster,
        proxy,
        _pdns: pdns,
    })
}

#[test]
fn three_appliers_share_the_providers_quota_through_redis_and_survive_its_outage() {
    let Some(grpcurl_bin) = tool("DNSPLANE_GRPCURL", "grpcurl") else {
        return;
    };
    let Some(mut redis) = Redis::start() else {
        return;
    };
    // Bound whole: dropping the stack stops PowerDNS.
    let Some(env) = stack(Some(&redis)) else {
        return;
    };
    let (cluster, proxy) = (&env.cluster, &env.proxy);

    // Phase 1: 30 zones × 12 records in batches of 2: 180 PATCH at least.
    let per_zone = 12;
    let t1 = Instant::now();
    let pushed = SystemTime::now();
    cluster.push("phase1", cluster.records("a", per_zone));
    let n1 = (ZONES * per_zone) as u64;
    cluster.wait_converged(n1, pushed, PHASE_TIMEOUT);
    let counts = proxy.counts();
    let writes = counts.writes_since(t1);
    let achieved = rate(&writes);
    eprintln!(
        "shared quota: {} PATCH at {achieved:.2}/s (quota {Q}/s), {} answered 429, busiest second {}",
        writes.len(),
        counts.rejected,
        max_in_window(&writes, Duration::from_secs(1))
    );
    assert!(
        writes.len() >= ZONES * per_zone / BATCH,
        "{} PATCH",
        writes.len()
    );
    assert_eq!(
        counts.rejected, 0,
        "the provider answered 429 although the quota was shared"
    );
    assert!(achieved >= 0.9 * Q, "write rate {achieved:.2}/s < 0.9·{Q}");
    let mut writers = 0;
    for i in 0..3 {
        let q = cluster.quota(i).expect("every applier reports its quota");
        assert_eq!(q.mode, "shared", "applier{i}: {q:?}");
        assert_eq!(
            (q.rate, q.replicas, q.throttled),
            (Q, 3, 0),
            "applier{i}: {q:?}"
        );
        if q.granted > 0 {
            writers += 1;
        }
    }
    assert!(writers >= 2, "the zones were spread over the appliers");

    // Phase 2: Redis stops in the middle of the next run.
    let per_zone2 = 16;
    let before = proxy.counts().writes.len();
    let pushed = SystemTime::now();
    cluster.push("phase2", cluster.records("b", per_zone2));
    let started = wait_for(PHASE_TIMEOUT, || {
        (proxy.counts().writes.len() >= before + 30).then_some(())
    });
    assert!(
        started.is_some(),
        "phase 2 never started writing; {}",
        cluster.logs()
    );
    redis.stop();
    let fell_back = wait_for(Duration::from_secs(30), || {
        (0..3).find(|&i| cluster.quota(i).is_some_and(|q| q.mode == "fallback"))
    })
    .unwrap_or_else(|| panic!("no applier reported the fallback; {}", cluster.logs()));
    // It keeps applying under its local share...
    let at = proxy.counts().writes.len();
    let kept_on = wait_for(Duration::from_secs(30), || {
        (proxy.counts().writes.len() >= at + 20).then_some(())
    });
    assert!(
        kept_on.is_some(),
        "writes stopped with Redis down; {}",
        cluster.logs()
    );
    // ...and says so, as a user sees it (the real grpcurl).
    let addr = format!("127.0.0.1:{}", cluster.applier_ports[fell_back]);
    let (ok, out) = grpcurl(&grpcurl_bin, &[&addr, "dnsplane.v1.Applier/GetStatus"]);
    assert!(ok, "GetStatus: {out}");
    let st: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let quota = &st["accounts"][0]["quota"];
    assert_eq!(quota["mode"], "fallback", "{st}");
    let share = quota["currentRate"].as_f64().unwrap_or(0.0);
    // A third of the quota, paced with the default headroom under it.
    let third = Q * (1.0 - dnsplane_applier::quota::config::default_headroom()) / 3.0;
    assert!(
        (share - third).abs() < 0.01,
        "local share {share} ≠ Q/3 less the headroom ({third}): {st}"
    );
    assert_eq!(st["level"], "degraded", "{st}");
    assert!(
        st["reason"]
            .as_str()
            .is_some_and(|r| r.contains("unreachable")),
        "{st}"
    );
    assert!(!redis.running() && !redis.ping(), "Redis is down meanwhile");

    // Redis is back: every applier returns to the shared quota.
    redis.restart();
    let shared_again = wait_for(Duration::from_secs(30), || {
        (0..3)
            .all(|i| cluster.quota(i).is_some_and(|q| q.mode == "shared"))
            .then_some(())
    });
    assert!(
        shared_again.is_some(),
        "not back to shared; {}",
        cluster.logs()
    );
    cluster.wait_converged(n1 + (ZONES * per_zone2) as u64, pushed, PHASE_TIMEOUT);
    let q = cluster.quota(fell_back).expect("status");
    assert!(q.fallbacks >= 1 && !q.last_redis_error.is_empty(), "{q:?}");
    let st = cluster.applier_status(fell_back).expect("status");
    assert_eq!(st.level, "healthy", "{}", st.reason);
    let total = proxy.counts();
    eprintln!(
        "with the Redis outage: {} PATCH in all, {} answered 429",
        total.writes.len(),
        total.rejected
    );
    // The local shares add up to the quota, and each hand-over (shared → local,
    // local → shared) waits for the reservations of the other side: still no 429.
    assert_eq!(
        total.rejected, 0,
        "the provider answered 429 around the Redis outage"
    );
}

#[test]
fn three_appliers_each_local_at_the_full_quota_draw_429s() {
    let Some(env) = stack(None) else { return };
    let (cluster, proxy) = (&env.cluster, &env.proxy);
    let per_zone = 12;
    let t0 = Instant::now();
    let pushed = SystemTime::now();
    cluster.push("phase1", cluster.records("a", per_zone));
    cluster.wait_converged((ZONES * per_zone) as u64, pushed, PHASE_TIMEOUT);
    let counts = proxy.counts();
    let writes = counts.writes_since(t0);
    eprintln!(
        "local quotas: {} PATCH at {:.2}/s, {} answered 429",
        writes.len(),
        rate(&writes),
        counts.rejected
    );
    assert!(counts.rejected > 0, "three replicas each at Q drew no 429");
    let mut throttled = 0;
    for i in 0..3 {
        let q = cluster.quota(i).expect("every applier reports its quota");
        assert_eq!(q.mode, "local", "applier{i}: {q:?}");
        throttled += q.throttled;
    }
    // The 429s were fed back into the appliers' buckets.
    assert!(throttled > 0, "no applier saw a throttle");
}
