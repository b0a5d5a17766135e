//! The lease's backends through the planner: the lock file shared by two planners on
//! one state directory, a Redis lease while Redis goes away and comes back, and the
//! Redis backend's compare-and-set operations against a real Redis.
use super::{Planner, TAKEOVER, role, run_of, text};
use crate::stack::{Stack, Tools, endpoints};
use dnsplane_e2e::redis::Redis;
use dnsplane_e2e::{grpcurl, wait_for};
use dnsplane_planner::lease::{Acquire, LeaseBackend, RedisBackend};
use std::time::{Duration, Instant};

#[test]
fn two_planners_on_one_state_dir_the_second_stands_by_until_the_first_dies() {
    let Some(tools) = Tools::find() else { return };
    let mut s = Stack::www_running(tools.clone());
    // The same config file, so the same state directory: a planner started twice.
    let first = Planner::taken_from(&mut s);
    let first_lease = first.wait_lease(&tools, "leader", |l| role(l) == "leader");
    assert_eq!(text(&first_lease, "backend"), "file");
    assert!(
        text(&first_lease, "location").ends_with(".dnsplane-state/lease.lock"),
        "{first_lease}"
    );
    let second = Planner::start("second", s.dir.path());
    let second_lease = second.wait_lease(&tools, "standby, seeing the holder", |l| {
        role(l) == "standby" && text(l, "holder") == text(&first_lease, "identity")
    });
    let mut first = first;
    first.proc.kill();

    // The kernel drops the lock with the process; the second takes it at its next try.
    let took = Instant::now();
    second.wait_lease(&tools, "leader", |l| role(l) == "leader");
    assert!(took.elapsed() <= TAKEOVER, "{:?}", took.elapsed());
    s.write_desired(
        "web.yaml",
        &endpoints("web", &[("www.example.com", "A", &["192.0.2.11"])]),
    );
    s.wait_dns("www.example.com", "A", &["192.0.2.11"]);
    let run = run_of(text(&second_lease, "identity"));
    let log = s.applier.as_ref().expect("applier").log_text();
    let last = log
        .lines()
        .rfind(|l| l.contains("Batch done."))
        .expect("a batch");
    assert!(last.contains(&format!("-{run}-")), "{last}");
}

#[test]
fn the_redis_backend_is_compare_and_set_on_the_holder() {
    let Some(mut redis) = Redis::start() else {
        return;
    };
    crate::stack::runtime().block_on(async {
        let timeout = Duration::from_secs(2);
        let a = RedisBackend::new(&redis.url(), "e2e-cas", timeout).expect("a");
        let b = RedisBackend::new(&redis.url(), "e2e-cas", timeout).expect("b");
        assert_eq!(a.key(), "dnsplane:lease:e2e-cas");
        let ttl = Duration::from_millis(600);
        let acquired = |a: Acquire| match a {
            Acquire::Acquired { epoch } => epoch,
            other => panic!("not acquired: {other:?}"),
        };
        let first = acquired(a.try_acquire("a", ttl).await.unwrap());
        let held_by_a = Acquire::Held {
            holder: "a".into(),
            epoch: first,
        };
        assert_eq!(b.try_acquire("b", ttl).await.unwrap(), held_by_a);
        assert!(!b.renew("b", ttl).await.unwrap(), "only the holder renews");
        b.release("b").await.unwrap();
        assert!(
            a.renew("a", ttl).await.unwrap(),
            "b's release changed nothing"
        );

        // Not renewed: it lapses on Redis's clock, and b takes it under a new epoch.
        let second = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Acquire::Acquired { epoch } = b.try_acquire("b", ttl).await.unwrap() {
                    return epoch;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("the lease lapses");
        assert!(second > first);
        assert!(!a.renew("a", ttl).await.unwrap(), "a lost it");
        a.release("a").await.unwrap();
        assert!(b.renew("b", Duration::from_secs(30)).await.unwrap());

        // Released by its holder: free at once, and the epoch goes on.
        b.release("b").await.unwrap();
        let third = acquired(a.try_acquire("a", Duration::from_secs(30)).await.unwrap());
        assert!(third > second);
        // Re-acquiring one's own lease is a new epoch too.
        let fourth = acquired(a.try_acquire("a", Duration::from_secs(30)).await.unwrap());
        assert!(fourth > third);

        // A bump (a fenced leader taking over again) is the next epoch, for the holder
        // only.
        assert_eq!(
            a.bump("a", Duration::from_secs(30)).await.unwrap(),
            Some(fourth + 1)
        );
        assert_eq!(b.bump("b", ttl).await.unwrap(), None, "b does not hold it");

        // Epochs are a counter, never a clock (which can step back, and which anyone
        // can outbid): a Redis that restarts empty counts from 1 again. The appliers'
        // claims let the new holder in once the old writer has been silent for its ttl
        // (tests/e2e/lease/fencing.rs).
        redis.restart();
        let fifth = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                // The first call after the restart may find the old connection gone.
                if let Ok(a) = b.try_acquire("b", ttl).await {
                    return acquired(a);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("Redis is back");
        assert_eq!(fifth, 1, "{fifth} after {fourth}");

        // Redis gone: every operation fails (the driver then stands by).
        redis.stop();
        assert!(a.renew("a", ttl).await.is_err());
        assert!(b.try_acquire("b", ttl).await.is_err());
    });
}

#[test]
fn redis_down_the_leader_stops_when_its_window_closes_and_writes_again_after() {
    let Some(tools) = Tools::find() else { return };
    let Some(mut redis) = Redis::start() else {
        return;
    };
    let ttl = Duration::from_secs(3);
    let desired = |v: &str| endpoints("web", &[("www.example.com", "A", &[v])]);
    let mut s = Stack::with_config(
        tools.clone(),
        &[("web.yaml", &desired("192.0.2.10"))],
        "report",
        "",
        &format!(
            "[lease]\nredis = \"{}\"\nttl = \"{}s\"\nretry_interval = \"500ms\"\n",
            redis.url(),
            ttl.as_secs()
        ),
    );
    s.start_until_www();
    let planner = Planner::taken_from(&mut s);
    planner.wait_lease(&tools, "leader", |l| role(l) == "leader");

    // Redis goes: no renewal succeeds, and the leader stands by once its window
    // (ttl − ttl/5 after its last renewal began, which was before Redis went) closes.
    redis.stop();
    let stopped = Instant::now();
    planner.wait_lease(&tools, "standby", |l| role(l) == "standby");
    assert!(
        stopped.elapsed() < ttl + Duration::from_secs(1),
        "still leader {:?} after Redis went (ttl {ttl:?})",
        stopped.elapsed()
    );
    let st = planner.status(&tools).expect("status");
    assert_eq!(text(&st, "level"), "degraded", "{st}");
    assert!(text(&st, "reason").contains("lease (redis"), "{st}");

    // Meanwhile nothing is written: the planner has read a change and refuses to sync.
    s.write_desired("web.yaml", &desired("192.0.2.11"));
    wait_for(Duration::from_secs(30), || {
        let (ok, out) = grpcurl(
            &tools.grpcurl,
            &[
                &format!("127.0.0.1:{}", planner.port),
                "dnsplane.v1.Planner/Plan",
            ],
        );
        (ok && out.contains("192.0.2.11")).then_some(())
    })
    .expect("the planner plans the change");
    let (_, out) = grpcurl(
        &tools.grpcurl,
        &[
            &format!("127.0.0.1:{}", planner.port),
            "dnsplane.v1.Planner/Sync",
        ],
    );
    assert!(out.contains("failed") && out.contains("standby"), "{out}");
    assert_eq!(s.dig("www.example.com", "A"), ["192.0.2.10"]);

    // Redis is back (empty): the planner takes the lease again and writes.
    redis.restart();
    planner.wait_lease(&tools, "leader again", |l| role(l) == "leader");
    wait_for(Duration::from_secs(30), || {
        (s.dig("www.example.com", "A") == ["192.0.2.11"]).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the leader again did not write 192.0.2.11; planner log:\n{}\n{}",
            std::fs::read_to_string(planner.dir.join("planner.log")).unwrap_or_default(),
            s.logs()
        )
    });
    let st = planner.status(&tools).expect("status");
    assert_ne!(text(&st, "level"), "degraded", "{st}");
}
