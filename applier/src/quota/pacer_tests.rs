use super::*;

fn pacer() -> Pacer {
    Pacer::new("acct", PacingConfig::default())
}

fn far() -> Instant {
    Instant::now() + Duration::from_secs(3600)
}

/// Takes `n` slots; the waits in order.
async fn slots(p: &Pacer, n: usize) -> Vec<Duration> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(p.slot(far()).await.expect("a slot"));
    }
    out
}

#[tokio::test(start_paused = true)]
async fn not_paced_until_the_first_throttle() {
    let p = pacer();
    assert!(slots(&p, 50).await.iter().all(Duration::is_zero));
    let st = p.status();
    assert_eq!(
        (st.current_rate, st.throttles, st.throttled_since),
        (None, 0, None)
    );
    assert!(st.reason("acct").is_none());
}

/// The first throttle halves what went in the last second, and the next request
/// waits out the `Retry-After`; then requests are spaced at the halved rate.
#[tokio::test(start_paused = true)]
async fn a_throttle_halves_the_rate_of_the_last_second_and_honours_retry_after() {
    let p = pacer();
    // A read and a write in the same instant, like the PowerDNS driver's.
    slots(&p, 2).await;
    p.throttle(Some(Duration::from_secs(3)));
    let st = p.status();
    assert_eq!(st.current_rate, Some(1.0), "{st:?}");
    assert_eq!(st.throttles, 1);
    assert!(st.throttled_since.is_some());
    let t0 = Instant::now();
    let waits = slots(&p, 3).await;
    assert_eq!(waits[0], Duration::from_secs(3), "the Retry-After first");
    // Then about one per second (the rate climbs a little meanwhile).
    for w in &waits[1..] {
        assert!(
            *w > Duration::from_millis(900) && *w <= Duration::from_secs(1),
            "{waits:?}"
        );
    }
    assert!(Instant::now() - t0 < Duration::from_secs(6));
}

/// Further throttles halve the rate in force, at most once per `Retry-After` (requests
/// in flight together see the same overload), never below the floor.
#[tokio::test(start_paused = true)]
async fn throttles_halve_down_to_the_floor_once_per_hold() {
    let p = Pacer::new(
        "acct",
        PacingConfig {
            floor: 0.25,
            ..PacingConfig::default()
        },
    );
    slots(&p, 8).await;
    p.throttle(None);
    assert_eq!(p.status().current_rate, Some(4.0));
    // Same instant: the same overload, no second halving.
    p.throttle(None);
    assert_eq!(p.status().current_rate, Some(4.0));
    assert_eq!(p.status().throttles, 2);
    let mut last = 4.0;
    for _ in 0..6 {
        tokio::time::advance(Duration::from_secs(1)).await;
        p.throttle(None);
        let r = p.status().current_rate.expect("paced");
        assert!(r < last || r == 0.25, "{r} after {last}");
        last = r;
    }
    assert_eq!(last, 0.25, "the floor");
}

/// Without a throttle the rate creeps back up linearly over `recover`, and after
/// `recover` without one the account is not paced any more.
#[tokio::test(start_paused = true)]
async fn the_rate_climbs_back_and_pacing_ends_after_recover() {
    let p = Pacer::new(
        "acct",
        PacingConfig {
            recover: Duration::from_secs(10),
            ..PacingConfig::default()
        },
    );
    slots(&p, 4).await;
    p.throttle(Some(Duration::from_secs(1)));
    assert_eq!(p.status().current_rate, Some(2.0));
    // Flat while the Retry-After runs, then halfway back 5 s later.
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(p.status().current_rate, Some(2.0));
    tokio::time::advance(Duration::from_secs(5)).await;
    let mid = p.status().current_rate.expect("paced");
    assert!((mid - 3.0).abs() < 1e-9, "{mid}");
    tokio::time::advance(Duration::from_secs(4)).await;
    let st = p.status();
    assert_eq!(
        (st.current_rate, st.throttled_since),
        (None, None),
        "{st:?}"
    );
    assert!(p.slot(far()).await.expect("slot").is_zero());
}

/// Throttled for longer than `degraded_after` (429s within `recover` of each other),
/// the status gives the reason, with what to do.
#[tokio::test(start_paused = true)]
async fn throttled_longer_than_degraded_after_gives_a_reason() {
    let p = Pacer::new(
        "acct",
        PacingConfig {
            degraded_after: Duration::from_secs(60),
            recover: Duration::from_secs(30),
            ..PacingConfig::default()
        },
    );
    p.throttle(None);
    for _ in 0..3 {
        tokio::time::advance(Duration::from_secs(20)).await;
        p.throttle(None);
    }
    assert!(
        p.status().reason("acct").is_none(),
        "60 s is not more than 1m"
    );
    tokio::time::advance(Duration::from_secs(5)).await;
    let st = p.status();
    let why = st.reason("acct").expect("degraded after 65 s of throttles");
    assert!(why.contains("account acct: throttled"), "{why}");
    assert!(why.contains("[accounts.quota]"), "{why}");
    // Quiet for `recover`: not paced, no reason.
    tokio::time::advance(Duration::from_secs(30)).await;
    assert!(p.status().reason("acct").is_none());
}

/// A slot that would come after the deadline is refused with when it would come,
/// and reserves nothing.
#[tokio::test(start_paused = true)]
async fn a_slot_past_the_deadline_is_refused_and_reserves_nothing() {
    let p = pacer();
    p.throttle(Some(Duration::from_secs(5)));
    let soon = Instant::now() + Duration::from_secs(1);
    let hint = p.slot(soon).await.expect_err("past the deadline");
    assert_eq!(hint, Duration::from_secs(5));
    assert_eq!(p.status().denied, 1);
    assert_eq!(p.slot(far()).await, Ok(Duration::from_secs(5)));
}

/// While paced, one unit at a time: a second call waits for the first one's turn,
/// so its read cannot take the slot between the first one's read and write.
#[tokio::test(start_paused = true)]
async fn while_paced_units_take_turns_and_their_slots_stay_together() {
    let p = Arc::new(pacer());
    slots(&p, 2).await;
    p.throttle(Some(Duration::from_secs(1)));
    let order: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let run = |name: [&'static str; 2]| {
        let (p, order) = (p.clone(), order.clone());
        tokio::spawn(async move {
            let _unit = p.unit(far()).await.expect("turn");
            for step in name {
                p.slot(far()).await.expect("slot");
                order.lock().unwrap().push(step);
                tokio::task::yield_now().await;
            }
        })
    };
    let a = run(["a.read", "a.write"]);
    tokio::task::yield_now().await;
    let b = run(["b.read", "b.write"]);
    a.await.unwrap();
    b.await.unwrap();
    assert_eq!(
        *order.lock().unwrap(),
        ["a.read", "a.write", "b.read", "b.write"]
    );
}

/// A turn that does not come before the deadline is refused.
#[tokio::test(start_paused = true)]
async fn a_turn_that_does_not_come_in_time_is_refused() {
    let p = pacer();
    p.throttle(None);
    let held = p.unit(far()).await.expect("turn");
    let soon = Instant::now() + Duration::from_millis(100);
    assert!(p.unit(soon).await.is_err());
    drop(held);
    assert!(p.unit(soon + Duration::from_secs(1)).await.is_ok());
}

/// `enabled = false`: a throttle is counted, nothing is paced.
#[tokio::test(start_paused = true)]
async fn disabled_pacing_only_counts() {
    let p = Pacer::new(
        "acct",
        PacingConfig {
            enabled: false,
            ..PacingConfig::default()
        },
    );
    p.throttle(Some(Duration::from_secs(5)));
    assert!(p.slot(far()).await.expect("slot").is_zero());
    let st = p.status();
    assert_eq!(
        (st.enabled, st.throttles, st.current_rate),
        (false, 1, None)
    );
}

#[test]
fn the_keys_are_checked_and_named() {
    assert!(PacingConfig::default().problems("p").is_empty());
    let bad = PacingConfig {
        floor: 0.0,
        recover: Duration::from_millis(10),
        degraded_after: Duration::ZERO,
        ..PacingConfig::default()
    };
    let p = bad.problems("accounts[0].pacing").join("; ");
    for key in ["pacing.floor", "pacing.recover", "pacing.degraded_after"] {
        assert!(p.contains(key), "{key} not in {p}");
    }
}
