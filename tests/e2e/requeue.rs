//! Issue 4: per-record requeue, conflict policy and status, with no head-of-line
//! blocking. The periodic sync is 10 minutes in every stack, so it can never be what
//! made a record converge here.
use crate::stack::{Stack, Tools, a_record, endpoints, seed};
use dnsplane_common::{Change, ChangeKind, RRSetOp};
use dnsplane_e2e::wait_for;
use std::time::{Duration, SystemTime};

fn counts(s: &Stack) -> (u64, u64) {
    let st = s.planner_call("GetStatus", "{}");
    let by = &st["zones"][0]["recordsByState"];
    (
        by["converged"].as_u64().unwrap_or(0),
        by["conflict"].as_u64().unwrap_or(0),
    )
}

/// Waits (30 s at most) until `counts` of `s` are `want` (converged, conflicts);
/// panics with the last counts and the logs.
pub(crate) fn settle(s: &Stack, counts: fn(&Stack) -> (u64, u64), want: (u64, u64)) {
    let settled = wait_for(Duration::from_secs(30), || {
        (counts(s) == want).then_some(())
    });
    let (converged, conflicts) = want;
    assert!(
        settled.is_some(),
        "expected {converged} converged + {conflicts} conflicts, got {:?}; logs:\n{}",
        counts(s),
        s.logs()
    );
}

fn rfc3339(v: &serde_json::Value) -> SystemTime {
    let s = v.as_str().unwrap_or_else(|| panic!("not a timestamp: {v}"));
    humantime::parse_rfc3339_weak(s).unwrap_or_else(|e| panic!("bad timestamp {s}: {e}"))
}

/// 200 desired names of which another writer holds 20 (seeded before the planner
/// starts), with the planner's `[sync]` table edited by `sync`; waits for 180
/// converged + 20 conflicts. Returns the stack and the 20 held records.
fn held_burst(
    tools: Tools,
    sync: impl FnOnce(String) -> String,
) -> (Stack, Vec<dnsplane_common::RRSet>) {
    let eps: Vec<(String, Vec<String>)> = (0..200)
        .map(|i| {
            (
                format!("h{i}.example.com"),
                vec![format!("192.0.2.{}", i % 250)],
            )
        })
        .collect();
    let eps_ref: Vec<(&str, &str, Vec<&str>)> = eps
        .iter()
        .map(|(n, v)| (n.as_str(), "A", v.iter().map(String::as_str).collect()))
        .collect();
    let eps_ref2: Vec<(&str, &str, &[&str])> = eps_ref
        .iter()
        .map(|(n, t, v)| (*n, *t, v.as_slice()))
        .collect();
    let mut s = Stack::new(
        tools,
        &[("burst.yaml", &endpoints("burst", &eps_ref2))],
        "report",
    );
    let config = s.path("planner.toml");
    let text = std::fs::read_to_string(&config).expect("planner.toml");
    std::fs::write(&config, sync(text)).expect("planner.toml");
    let held: Vec<_> = (0..20)
        .map(|i| a_record(&format!("h{i}.example.com"), "198.51.100.1"))
        .collect();
    seed(
        &s.state_dir(),
        &held
            .iter()
            .map(|r| (r.key.name.as_str(), "A", "198.51.100.1"))
            .collect::<Vec<_>>(),
    );
    s.start();
    crate::requeue::settle(&s, counts, (180, 20));
    assert_eq!(
        s.dig("h5.example.com", "A"),
        ["198.51.100.1"],
        "the held name is left alone"
    );
    (s, held)
}

/// The other writer of [`held_burst`] deletes its records; returns when.
fn release(s: &Stack, held: &[dnsplane_common::RRSet]) -> SystemTime {
    let release: Vec<Change> = held
        .iter()
        .map(|r| Change::new(ChangeKind::Delete, vec![RRSetOp::delete(r.clone())]))
        .collect();
    let released_at = SystemTime::now();
    let results = s.other_writer(release);
    assert_eq!(results.len(), 20);
    assert!(
        results
            .iter()
            .all(|r| r.outcome == dnsplane_common::pb::Outcome::Applied as i32),
        "{results:?}"
    );
    released_at
}

/// Waits until all 200 records of [`held_burst`] converged.
fn all_converged(s: &Stack, within: Duration) {
    let all = wait_for(within, || (counts(s) == (200, 0)).then_some(()));
    assert!(
        all.is_some(),
        "never converged after release: {:?}; logs:\n{}",
        counts(s),
        s.logs()
    );
}

/// Another writer holds 20 of 200 desired names when the desired state arrives: the
/// other 180 converge at once; when the writer releases the 20 names, each converges
/// within 2 s of its release, on its own retry clock (cap 1 s in this stack).
#[test]
fn creation_burst_converges_on_release_without_waiting_for_a_tick() {
    let Some(tools) = Tools::find() else { return };
    let (s, held) = held_burst(tools, |t| t);
    let released_at = release(&s, &held);
    all_converged(&s, Duration::from_secs(30));
    let states = s.planner_call(
        "ListRecordStates",
        r#"{"includeConverged":true,"pageSize":1000}"#,
    );
    let recs = states["records"].as_array().expect("records");
    for r in &held {
        let st = recs
            .iter()
            .find(|x| x["key"]["name"] == r.key.name.as_str())
            .unwrap_or_else(|| panic!("{} missing", r.key.name));
        assert_eq!(st["state"], "RECORD_STATE_KIND_CONVERGED", "{st}");
        let converged_at = rfc3339(&st["updated"]);
        let took = converged_at
            .duration_since(released_at)
            .unwrap_or_else(|_| {
                panic!("{} claims to have converged before its release", r.key.name)
            });
        assert!(
            took <= Duration::from_secs(2),
            "{} converged {took:?} after its release",
            r.key.name
        );
    }
    assert_eq!(s.dig("h5.example.com", "A"), ["192.0.2.5"]);
}

/// With retry clocks of minutes, released conflicts still converge at once: the
/// conflict watch (`sync.conflict_watch`, default 1 s) sees the zone's serial move and
/// re-plans the conflicting names whatever their clocks say. Without it nothing could
/// converge before the first retry, five minutes away.
#[test]
fn released_conflicts_converge_on_the_conflict_watch_not_their_clock() {
    let Some(tools) = Tools::find() else { return };
    let (s, held) = held_burst(tools, |t| {
        let slow = t.replace(
            "retry_min = \"200ms\"\nretry_max = \"1s\"",
            "retry_min = \"5m\"\nretry_max = \"10m\"",
        );
        assert_ne!(slow, t, "the stack's retry clocks were not found");
        slow
    });
    let states = s.planner_call("ListRecordStates", r#"{"pageSize":1000}"#);
    let next_retry = states["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| rfc3339(&r["nextRetry"]))
        .min()
        .expect("conflicts listed");
    release(&s, &held);
    all_converged(&s, Duration::from_secs(60));
    assert!(
        SystemTime::now() < next_retry,
        "converged only when the retry clock came due"
    );
    assert_eq!(s.dig("h5.example.com", "A"), ["192.0.2.5"]);
}

/// `adopt` takes an unowned record that equals the desired one (writing only its
/// ownership record); `report` leaves it as a listed CONFLICT.
#[test]
fn adopt_takes_equal_unowned_records_and_report_lists_them() {
    let Some(tools) = Tools::find() else { return };
    let desired = endpoints(
        "web",
        &[
            ("same.example.com", "A", &["192.0.2.7"]),
            ("differs.example.com", "A", &["192.0.2.8"]),
        ],
    );
    for policy in ["adopt", "report"] {
        let mut s = Stack::new(tools.clone(), &[("web.yaml", &desired)], policy);
        seed(
            &s.state_dir(),
            &[
                ("same.example.com", "A", "192.0.2.7"),
                ("differs.example.com", "A", "198.51.100.8"),
            ],
        );
        s.start();
        let want = if policy == "adopt" { (1, 1) } else { (0, 2) };
        let got = wait_for(Duration::from_secs(20), || {
            (counts(&s) == want).then_some(())
        });
        assert!(
            got.is_some(),
            "{policy}: wanted {want:?}, got {:?}; logs:\n{}",
            counts(&s),
            s.logs()
        );
        let owner = s.dig("_dnsplane-a.same.example.com", "TXT");
        let listed = s.planner_call("ListRecordStates", r#"{"zone":"example.com."}"#);
        let names: Vec<&str> = listed["records"]
            .as_array()
            .map(|r| r.iter().filter_map(|x| x["key"]["name"].as_str()).collect())
            .unwrap_or_default();
        if policy == "adopt" {
            assert!(
                owner.iter().any(|v| v.contains("dnsplane/owner=e2e")),
                "adopted: {owner:?}"
            );
            assert_eq!(
                names,
                ["differs.example.com."],
                "only the differing record is listed"
            );
        } else {
            assert!(owner.is_empty(), "report writes no ownership: {owner:?}");
            assert_eq!(names, ["differs.example.com.", "same.example.com."]);
        }
        assert_eq!(
            s.dig("differs.example.com", "A"),
            ["198.51.100.8"],
            "{policy}: never overwritten"
        );
    }
}

/// The planner answers gRPC and health at once, even with no applier reachable; its
/// status says why the zone is not synced; once the applier comes up, the zone
/// converges without a restart or a periodic tick.
#[test]
fn startup_does_not_block_on_the_applier() {
    let Some(tools) = Tools::find() else { return };
    let mut s = Stack::www(tools, "");
    s.start_planner();
    let degraded = wait_for(Duration::from_secs(20), || {
        let st = s.planner_call("GetStatus", "{}");
        // No applier is healthy: failing (docs/reliability.md, rule no_applier).
        (st["level"] == "failing"
            && st["zones"][0]["lastError"]
                .as_str()
                .is_some_and(|e| e.contains("applier")))
        .then_some(st)
    })
    .unwrap_or_else(|| {
        panic!(
            "planner never reported the unreachable applier; logs:\n{}",
            s.logs()
        )
    });
    assert_ne!(degraded["zones"][0]["initialSyncDone"], true, "{degraded}");
    assert!(
        degraded["zones"][0]["initialSyncStarted"].is_string(),
        "{degraded}"
    );

    s.start_applier();
    s.wait_dns("www.example.com", "A", &["192.0.2.10"]);
    let healthy = wait_for(Duration::from_secs(20), || {
        let st = s.planner_call("GetStatus", "{}");
        (st["level"] == "healthy").then_some(st)
    });
    assert!(
        healthy.is_some(),
        "status never became healthy; logs:\n{}",
        s.logs()
    );
}
