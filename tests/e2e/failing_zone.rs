//! Issue 4: no head-of-line blocking between zones. Zone `example.net.` sits on a
//! provider account that refuses everything (401) or hangs (timeouts); zone
//! `example.com.` converges exactly as it does when its neighbour is healthy.
use crate::stack::{Stack, Tools, endpoints};
use dnsplane_e2e::{num, wait_for};
use std::time::Duration;

const RECORDS: usize = 40;

/// What zone example.com. cost, from the applier's counters: (APPLIED outcomes,
/// batches, provider calls).
type Cost = (u64, u64, u64);

fn run(tools: Tools, fault: &str) -> Cost {
    let other_state = tempfile::tempdir().expect("tempdir");
    let mut eps: Vec<(String, &str, Vec<String>)> = (0..RECORDS)
        .map(|i| {
            (
                format!("b{i}.example.com"),
                "A",
                vec![format!("192.0.2.{i}")],
            )
        })
        .collect();
    eps.extend((0..RECORDS).map(|i| {
        (
            format!("a{i}.example.net"),
            "A",
            vec![format!("198.51.100.{i}")],
        )
    }));
    let refs: Vec<(&str, &str, Vec<&str>)> = eps
        .iter()
        .map(|(n, t, v)| (n.as_str(), *t, v.iter().map(String::as_str).collect()))
        .collect();
    let refs: Vec<(&str, &str, &[&str])> = refs
        .iter()
        .map(|(n, t, v)| (*n, *t, v.as_slice()))
        .collect();
    let applier_extra = format!(
        "\n[[accounts]]\nname = \"other\"\ndriver = \"memory\"\nzones = [\"example.net.\"]\nstate_dir = \"{}\"\n{fault}\n",
        other_state.path().display()
    );
    let planner_extra = "[[zones]]\nname = \"example.net.\"\naccount = \"other\"\n";
    let mut s = Stack::with_config(
        tools,
        &[("both.yaml", &endpoints("both", &refs))],
        "report",
        &applier_extra,
        planner_extra,
    );
    s.start();
    let zone_b = |st: &serde_json::Value| -> serde_json::Value {
        st["zones"]
            .as_array()
            .and_then(|z| z.iter().find(|z| z["zone"] == "example.com.").cloned())
            .unwrap_or_default()
    };
    let zone_a = |st: &serde_json::Value| -> serde_json::Value {
        st["zones"]
            .as_array()
            .and_then(|z| z.iter().find(|z| z["zone"] == "example.net.").cloned())
            .unwrap_or_default()
    };
    let done = wait_for(Duration::from_secs(30), || {
        let st = s.planner_call("GetStatus", "{}");
        (zone_b(&st)["recordsByState"]["converged"] == RECORDS).then_some(st)
    })
    .unwrap_or_else(|| {
        panic!(
            "example.com. never converged with fault {fault:?}; logs:\n{}",
            s.logs()
        )
    });
    if !fault.is_empty() {
        // Ordering: example.com. was done while example.net. still was not.
        let a = zone_a(&done);
        assert_ne!(
            a["recordsByState"]["converged"], RECORDS,
            "the broken zone cannot have converged: {a}"
        );
    }
    let applier = s.applier_call("GetStatus", "{}");
    let acct = applier["accounts"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["name"] == "embedded").cloned())
        .expect("embedded account");
    let calls: u64 = acct["callsByClass"]
        .as_object()
        .map(|m| m.values().map(num).sum())
        .unwrap_or(0);
    if fault.contains("401") {
        let wait = wait_for(Duration::from_secs(20), || {
            let st = s.planner_call("GetStatus", "{}");
            (st["level"] == "degraded"
                && zone_a(&st)["lastError"]
                    .as_str()
                    .is_some_and(|e| !e.is_empty()))
            .then_some(())
        });
        assert!(
            wait.is_some(),
            "the broken zone is not reported; logs:\n{}",
            s.logs()
        );
    }
    (
        num(&acct["outcomes"]["APPLIED"]),
        num(&acct["batches"]),
        calls,
    )
}

#[test]
fn a_failing_zone_does_not_slow_another() {
    let Some(tools) = Tools::find() else { return };
    let healthy = run(tools.clone(), "");
    let refused = run(
        tools.clone(),
        "[[accounts.faults]]\naction = \"error\"\nstatus = 401\n",
    );
    let hanging = run(
        tools,
        "[[accounts.faults]]\naction = \"timeout\"\ndelay = \"5s\"\n",
    );
    assert_eq!(healthy.0, RECORDS as u64, "{healthy:?}");
    // The healthy zone did exactly the same work, in the same number of batches and
    // provider calls, whatever its neighbour did.
    assert_eq!(refused, healthy, "with a neighbour answering 401");
    assert_eq!(hanging, healthy, "with a neighbour that times out");
}
