//! Issue 18, "status that means something" and "review before apply": planner and
//! applier as processes (embedded provider), read through the real `dnsplane` CLI
//! (output and exit code), `GetStatus` over grpcurl, the planner's `/metrics`, the
//! applier's own counters and `dig` against the provider.
use crate::stack::{Stack, Tools, ZONE, dnsplane_cli, endpoints};
use dnsplane_e2e::{free_port, http_get, wait_for};
use serde_json::Value;
use std::time::Duration;

/// Safety net of every wait below; not a performance claim.
const WAIT: Duration = Duration::from_secs(30);

/// `dnsplane ARGS` against the stack: (exit code, stdout + stderr).
fn cli(s: &Stack, args: &[&str]) -> (i32, String) {
    dnsplane_cli(s.planner_port, args, &[])
}

/// The planner's `GetStatus` once it has a reason of `rule`.
fn wait_reason(s: &Stack, rule: &str) -> (Value, Value) {
    let mut last = Value::Null;
    let found = wait_for(WAIT, || {
        last = s.planner_call("GetStatus", "{}");
        let r = last["reasons"]
            .as_array()?
            .iter()
            .find(|r| r["rule"] == rule)?
            .clone();
        Some(r)
    });
    let Some(r) = found else {
        panic!("no {rule} reason; last status {last}; logs:\n{}", s.logs())
    };
    (last, r)
}

/// [`wait_reason`], which must say the zone, and status with it, are degraded.
fn wait_zone_degraded(s: &Stack, rule: &str) -> (Value, Value) {
    let (st, r) = wait_reason(s, rule);
    assert_eq!(st["level"], "degraded", "{st}");
    let want = (&"degraded".into(), &ZONE.into());
    assert_eq!((&r["level"], &r["zone"]), want, "{r}");
    (st, r)
}

/// `dnsplane status` exits 2 with the rule's line, once status has it.
fn status_exits_2_with(s: &Stack, rule: &str, level: &str) -> String {
    let (code, out) = cli(s, &["status"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains(&format!("planner: {level}")), "{out}");
    assert!(out.contains(&format!("{level} [{rule}]")), "{out}");
    out
}

/// Writes the applier's batches for `account` as its GetStatus counts them.
fn batches(s: &Stack, account: &str) -> u64 {
    let st = s.applier_call("GetStatus", "{}");
    let a = st["accounts"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == account).cloned())
        .unwrap_or_else(|| panic!("no account {account} in {st}"));
    a["batches"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .or_else(|| a["batches"].as_u64())
        .unwrap_or(0)
}

/// A conflict makes the planner degraded under the `conflicts` rule, for the CLI
/// (exit 2), `GetStatus` and the `dnsplane_planner_health` gauge.
#[test]
fn a_conflict_degrades_status_and_the_cli_exits_2() {
    let Some(tools) = Tools::find() else { return };
    let mut s = Stack::one_conflict(tools);
    let admin = free_port();
    s.start_applier();
    s.start_planner_with_admin(admin);
    s.wait_dns("www.example.com", "A", &["192.0.2.10"]);

    let (st, _) = wait_zone_degraded(&s, "conflicts");
    assert_eq!(st["safetyMode"], "automatic", "{st}");
    assert!(
        st["reason"].as_str().unwrap().contains("in conflict"),
        "{st}"
    );
    let out = status_exits_2_with(&s, "conflicts", "degraded");
    assert!(out.contains("1 record(s) in conflict"), "{out}");

    let metrics = http_get(admin, "/metrics").1;
    for (level, v) in [("degraded", 1), ("healthy", 0), ("failing", 0)] {
        let line = format!("dnsplane_planner_health{{level=\"{level}\"}} {v}");
        assert!(metrics.contains(&line), "{line} missing:\n{metrics}");
    }
}

/// A free-space floor above what the state directory's filesystem has makes the
/// planner failing under `disk_low`; records still flow.
#[test]
fn a_state_directory_below_its_floor_fails_status() {
    let Some(tools) = Tools::find() else { return };
    // i64::MAX: more than any filesystem here has.
    let mut s = Stack::www(tools, "[state]\nmin_free_bytes = 9223372036854775807\n");
    s.start_until_www();
    let (st, r) = wait_reason(&s, "disk_low");
    assert_eq!(st["level"], "failing", "{st}");
    assert_eq!(r["level"], "failing");
    assert!(
        r["message"].as_str().unwrap().contains("min_free_bytes"),
        "{r}"
    );
    status_exits_2_with(&s, "disk_low", "failing");
}

/// A state directory the planner cannot write (its `desired/` replaced by a file, which
/// stops root too) makes the planner failing under `state_write` once a source
/// changes: the change is not accepted, and nothing already applied is deleted. With
/// the directory back, the source's change is accepted and the reason clears.
#[test]
fn a_failed_state_write_fails_status_and_deletes_nothing() {
    let Some(tools) = Tools::find() else { return };
    let one = endpoints("web", &[("www.example.com", "A", &["192.0.2.10"])]);
    let mut s = Stack::with_config(tools, &[("web.yaml", &one)], "report", "", "");
    s.start_until_www();
    let kept = s.path(".dnsplane-state/desired");
    assert!(
        kept.is_dir(),
        "the planner's state is at {}",
        kept.display()
    );
    let aside = s.path(".dnsplane-state/desired.aside");
    std::fs::rename(&kept, &aside).expect("move the state aside");
    std::fs::write(&kept, "not a directory").expect("block it");

    // The source changes: one record more, and www's value moves.
    let two = endpoints(
        "web",
        &[
            ("www.example.com", "A", &["192.0.2.11"]),
            ("api.example.com", "A", &["192.0.2.20"]),
        ],
    );
    s.write_desired("web.yaml", &two);
    let (st, r) = wait_reason(&s, "state_write");
    assert_eq!(st["level"], "failing", "{st}");
    assert!(
        r["message"].as_str().unwrap().contains("last write failed"),
        "{r}"
    );
    status_exits_2_with(&s, "state_write", "failing");
    // Not accepted, so not applied; and nothing deleted.
    let (_, out) = cli(&s, &["sync"]);
    assert!(out.contains("done"), "{out}");
    assert_eq!(s.dig("www.example.com", "A"), ["192.0.2.10"]);
    assert!(s.dig("api.example.com", "A").is_empty());

    // The directory is back: the source's change is accepted (the file source retries
    // what it could not persist) and applied, and the reason clears.
    std::fs::remove_file(&kept).expect("unblock");
    std::fs::rename(&aside, &kept).expect("move the state back");
    s.wait_dns("api.example.com", "A", &["192.0.2.20"]);
    s.wait_dns("www.example.com", "A", &["192.0.2.11"]);
    let cleared = wait_for(WAIT, || {
        let st = s.planner_call("GetStatus", "{}");
        let rules: Vec<Value> = st["reasons"]
            .as_array()
            .map(|r| r.iter().map(|x| x["rule"].clone()).collect())
            .unwrap_or_default();
        (!rules.contains(&"state_write".into())).then_some(())
    });
    assert!(cleared.is_some(), "state_write stayed; logs:\n{}", s.logs());
}

/// An account whose writes are refused with 401 opens its circuit at the applier; the
/// planner's status shows it under `circuit_open`.
#[test]
fn an_open_circuit_shows_in_the_planners_status() {
    let Some(tools) = Tools::find() else { return };
    let desired = endpoints("web", &[("www.example.com", "A", &["192.0.2.10"])]);
    let faults = "[[accounts.faults]]\nop = \"apply\"\naction = \"error\"\nstatus = 401\n\
         message = \"401 Unauthorized: the API key was revoked\"\n\
         [accounts.circuit]\ncool_down = \"60s\"\nmax_cool_down = \"60s\"\njitter = 0.1\n";
    let mut s = Stack::with_config(tools, &[("web.yaml", &desired)], "report", faults, "");
    s.start();
    let (st, r) = wait_reason(&s, "circuit_open");
    assert_eq!(st["level"], "degraded", "{st}");
    assert!(r["message"].as_str().unwrap().contains("embedded"), "{r}");
    status_exits_2_with(&s, "circuit_open", "degraded");
}

/// Observe mode plans and reports but writes nothing, not even an ownership record:
/// the applier receives no batch, `dig` finds nothing, while `plan`, `status` and
/// `ListRecordStates` show the pending change. Switched to automatic by config and a
/// restart, the planner applies that plan.
#[test]
fn observe_mode_writes_nothing_until_switched_to_automatic() {
    let Some(tools) = Tools::find() else { return };
    let mut s = Stack::www(tools, "[safety]\nmode = \"observe\"\n");
    s.start();
    let mut last = Value::Null;
    let pending = wait_for(WAIT, || {
        last = s.planner_call("GetStatus", "{}");
        let z = &last["zones"][0];
        (z["initialSyncDone"] == true && z["recordsByState"]["pending"] == 1).then_some(())
    });
    assert!(pending.is_some(), "{last}; logs:\n{}", s.logs());
    assert_eq!(last["safetyMode"], "observe", "{last}");
    assert_eq!(last["level"], "healthy", "{last}");

    let (code, out) = cli(&s, &["status"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("mode: observe") && out.contains("pending=1"),
        "{out}"
    );
    let (code, out) = cli(&s, &["plan"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("www.example.com."),
        "the plan shows the change: {out}"
    );
    let body = format!("{{\"zone\":\"{ZONE}\",\"pageSize\":100}}");
    let recs = s.planner_call("ListRecordStates", &body);
    let rec = &recs["records"][0];
    assert_eq!(rec["state"], "RECORD_STATE_KIND_PENDING", "{recs}");
    assert!(
        rec["reason"]
            .as_str()
            .unwrap_or("")
            .contains("observe mode"),
        "{recs}"
    );

    // A forced sync writes nothing either.
    let (_, out) = cli(&s, &["sync"]);
    assert!(out.contains("done"), "{out}");
    assert_eq!(batches(&s, "embedded"), 0, "no batch reached the applier");
    assert!(s.dig("www.example.com", "A").is_empty());
    let all = s.dig("_dnsplane-a.www.example.com", "TXT");
    assert!(all.is_empty(), "no ownership record: {all:?}");

    // Automatic by config and a restart: the same plan is applied.
    let cfg = s.path("planner.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replace("mode = \"observe\"", "mode = \"automatic\""),
    )
    .unwrap();
    drop(s.planner.take());
    s.start_planner();
    s.wait_dns("www.example.com", "A", &["192.0.2.10"]);
    assert!(batches(&s, "embedded") >= 1);
}

/// Approve mode holds every plan, creates included, until `dnsplane approve`; the
/// approved plan is applied, and the next change is held again.
#[test]
fn approve_mode_holds_each_plan_until_approved() {
    let Some(tools) = Tools::find() else { return };
    let mut s = Stack::www(tools, "[safety]\nmode = \"approve\"\n");
    s.start();
    let (st, r) = wait_reason(&s, "held_plan");
    assert_eq!(st["safetyMode"], "approve", "{st}");
    assert_eq!(st["zones"][0]["state"], "HELD", "{st}");
    assert_eq!(st["zones"][0]["held"]["creates"], 1, "{st}");
    assert!(r["message"].as_str().unwrap().contains("approve"), "{r}");
    let out = status_exits_2_with(&s, "held_plan", "degraded");
    assert!(out.contains("HELD: 1 creates"), "{out}");
    assert_eq!(batches(&s, "embedded"), 0, "nothing sent while held");
    assert!(s.dig("www.example.com", "A").is_empty());

    let (code, out) = cli(&s, &["approve", ZONE]);
    assert_eq!(code, 0, "{out}");
    s.wait_dns("www.example.com", "A", &["192.0.2.10"]);

    // The next change is held again; the first record stays.
    let desired = endpoints(
        "web",
        &[
            ("www.example.com", "A", &["192.0.2.10"]),
            ("api.example.com", "A", &["192.0.2.20"]),
        ],
    );
    s.write_desired("web.yaml", &desired);
    let held = wait_for(WAIT, || {
        let st = s.planner_call("GetStatus", "{}");
        (st["zones"][0]["state"] == "HELD").then_some(st)
    });
    assert!(held.is_some(), "the second change was not held");
    assert!(s.dig("api.example.com", "A").is_empty());
    assert_eq!(s.dig("www.example.com", "A"), ["192.0.2.10"]);
    let (code, out) = cli(&s, &["approve", ZONE]);
    assert_eq!(code, 0, "{out}");
    s.wait_dns("api.example.com", "A", &["192.0.2.20"]);
}

/// Records whose transient failures outlive the applier's retries (every write of
/// the zone answered 503) are `failed`, and status says so with their count, for
/// `GetStatus` and the CLI (exit 2). Before, status said `healthy` throughout.
#[test]
fn failed_records_degrade_status_with_their_count() {
    let Some(tools) = Tools::find() else { return };
    let desired = endpoints(
        "web",
        &[
            ("a.example.com", "A", &["192.0.2.1"]),
            ("b.example.com", "A", &["192.0.2.2"]),
        ],
    );
    let mut s = Stack::with_config(
        tools,
        &[("web.yaml", &desired)],
        "report",
        "[[accounts.faults]]\nop = \"apply\"\naction = \"unavailable\"\n\
         [retry]\nmax_attempts = 2\nbase_delay = \"10ms\"\nmax_delay = \"20ms\"\n",
        "",
    );
    s.start();
    let (_, r) = wait_zone_degraded(&s, "records_failed");
    assert!(
        r["message"].as_str().unwrap().contains("record(s) failed"),
        "{r}"
    );
    // The records are retried on their own clock, so one may be in flight at a given
    // moment: the CLI is asked until it shows the rule.
    let out = wait_for(WAIT, || {
        let (code, out) = cli(&s, &["status"]);
        (code == 2 && out.contains("degraded [records_failed]")).then_some(out)
    });
    assert!(
        out.is_some_and(|o| o.contains("record(s) failed")),
        "{}",
        s.logs()
    );
}
