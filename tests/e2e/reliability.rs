//! Issue 3, "done when": the failure stories the applier exists for, each against the
//! planner and applier as processes over real gRPC, with faults injected by the
//! applier's own fault decorator (`[[accounts.faults]]` in applier.toml).
//!
//! Evidence comes from the services themselves, never from the test's clock: the
//! applier's GetStatus counters (calls by class, outcomes, faults fired, circuit), the
//! planner's record states, and the applier's log (`Batch done.` lines carry each
//! batch's provider calls; fault lines carry `at_ms`, the applier's own monotonic
//! clock). The periodic sync is 10 minutes in every stack, so a tick never rescues a
//! story.
use crate::stack::{Stack, Tools, endpoints};
use dnsplane_applier::apply::bisection_bound;
use dnsplane_e2e::{num, wait_for};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// One planner batch may carry 1000 changes (the planner's default is 500).
const BIG_BATCHES: &str = "[batch]\nmax_changes = 1000\nmax_bytes = 4194304\n";

/// A manifest of `n` A records `h{i}.<domain>` with `value(i)`.
fn bulk(domain: &str, n: usize, value: impl Fn(usize) -> String) -> String {
    let eps: Vec<(String, [String; 1])> = (0..n)
        .map(|i| (format!("h{i}.{domain}"), [value(i)]))
        .collect();
    let refs: Vec<(&str, &str, &[String; 1])> =
        eps.iter().map(|(n, v)| (n.as_str(), "A", v)).collect();
    let refs: Vec<(&str, &str, Vec<&str>)> = refs
        .iter()
        .map(|(n, t, v)| (*n, *t, v.iter().map(String::as_str).collect()))
        .collect();
    let refs: Vec<(&str, &str, &[&str])> = refs
        .iter()
        .map(|(n, t, v)| (*n, *t, v.as_slice()))
        .collect();
    endpoints(&format!("bulk-{domain}"), &refs)
}

fn value(i: usize) -> String {
    format!("192.0.2.{}", i % 250 + 1)
}

/// The applier's status of one account.
fn account(s: &Stack, name: &str) -> Value {
    let st = s.applier_call("GetStatus", "{}");
    st["accounts"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == name).cloned())
        .unwrap_or_else(|| panic!("no account {name} in {st}"))
}

/// The planner's records of `zone` by state name.
fn planner_states(s: &Stack, zone: &str) -> BTreeMap<String, u64> {
    let st = s.planner_call("GetStatus", "{}");
    let z = st["zones"]
        .as_array()
        .and_then(|zs| zs.iter().find(|z| z["zone"] == zone).cloned())
        .unwrap_or_default();
    z["recordsByState"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), num(v))).collect())
        .unwrap_or_default()
}

/// Waits (bounded) until the planner's states of `zone` are exactly `want`.
/// [`wait_states`] of `example.com.`, within `secs` seconds.
fn settled(s: &Stack, want: &[(&str, u64)], secs: u64) {
    wait_states(s, "example.com.", want, Duration::from_secs(secs));
}

/// A stack of `desired` (in `bulk.yaml`, conflicts reported) with the applier's
/// `faults` and `planner_extra` in planner.toml, started.
fn bulk_stack(tools: Tools, desired: &str, faults: &str, planner_extra: &str) -> Stack {
    let desired = [("bulk.yaml", desired)];
    let mut s = Stack::with_config(tools, &desired, "report", faults, planner_extra);
    s.start();
    s
}

fn wait_states(s: &Stack, zone: &str, want: &[(&str, u64)], timeout: Duration) {
    let want: BTreeMap<String, u64> = want.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut last = BTreeMap::new();
    let ok = wait_for(timeout, || {
        last = planner_states(s, zone);
        last.retain(|_, v| *v > 0);
        (last == want).then_some(())
    });
    assert!(
        ok.is_some(),
        "{zone}: wanted {want:?}, last saw {last:?}; logs:\n{}",
        s.logs()
    );
}

/// The planner's non-converged records of `zone` in `state` (e.g. "CONFLICT").
fn records_in(s: &Stack, zone: &str, state: &str) -> Vec<Value> {
    let body = format!(
        "{{\"zone\":\"{zone}\",\"states\":[\"RECORD_STATE_KIND_{state}\"],\"pageSize\":1000}}"
    );
    let r = s.planner_call("ListRecordStates", &body);
    r["records"].as_array().cloned().unwrap_or_default()
}

/// `name=value` from a compact log line (quotes stripped).
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(&format!(" {name}="))? + name.len() + 2;
    let rest = &line[start..];
    let end = rest.find(' ').unwrap_or(rest.len());
    Some(rest[..end].trim_matches('"'))
}

/// One `Batch done.` line of the applier's log.
#[derive(Debug)]
struct BatchLine {
    changes: u64,
    calls: u64,
    outcomes: BTreeMap<String, u64>,
}

fn applier_log(s: &Stack) -> String {
    s.applier.as_ref().expect("applier running").log_text()
}

/// The applier's `Batch done.` lines, in order.
fn batches(s: &Stack) -> Vec<BatchLine> {
    applier_log(s)
        .lines()
        .filter(|l| l.contains("Batch done."))
        .map(|l| {
            let outcomes = l
                .find("outcomes={")
                .map(|i| {
                    let body = &l[i + "outcomes={".len()..];
                    let body = &body[..body.find('}').unwrap_or(body.len())];
                    body.split(", ")
                        .filter_map(|kv| {
                            let (k, v) = kv.split_once(": ")?;
                            Some((k.trim_matches('"').to_string(), v.trim().parse().ok()?))
                        })
                        .collect()
                })
                .unwrap_or_default();
            BatchLine {
                changes: field(l, "changes")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                calls: field(l, "provider_calls")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(u64::MAX),
                outcomes,
            }
        })
        .collect()
}

fn outcomes(line: &BatchLine) -> Vec<(&str, u64)> {
    line.outcomes
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect()
}

/// Story 1, *502 after commit, then 409 forever*: the first 1000-change batch commits but is
/// answered 502. Every record of it comes back ALREADY_APPLIED for 2 calls (the write
/// and one read-back; nothing resent), and the two batches behind it are applied in
/// the same sync, one call each.
#[test]
fn story_502_after_commit_ends_already_applied_and_the_batches_behind_follow() {
    let Some(tools) = Tools::find() else { return };
    let faults =
        "[[accounts.faults]]\nop = \"apply\"\naction = \"ambiguous_after_commit\"\ntimes = 1\n";
    let desired = bulk("example.com", 2500, value);
    let s = bulk_stack(tools, &desired, faults, BIG_BATCHES);
    settled(&s, &[("converged", 2500)], 90);

    let a = account(&s, "embedded");
    assert_eq!(num(&a["faults"]["ambiguous_after_commit"]), 1, "{a}");
    assert_eq!(num(&a["callsByClass"]["ambiguous"]), 1, "{a}");
    assert_eq!(num(&a["outcomes"]["ALREADY_APPLIED"]), 1000, "{a}");
    assert_eq!(num(&a["outcomes"]["APPLIED"]), 1500, "{a}");
    for bad in [
        "CONFLICT",
        "FAILED",
        "DEFERRED",
        "INVALID",
        "REJECTED_PERMANENT",
    ] {
        assert_eq!(num(&a["outcomes"][bad]), 0, "{bad}: {a}");
    }
    let b = batches(&s);
    assert_eq!(b.len(), 3, "three batches, no retries of any: {b:?}");
    assert_eq!(b[0].changes, 1000);
    assert_eq!(outcomes(&b[0]), [("ALREADY_APPLIED", 1000)]);
    assert!(b[0].calls <= 3, "the 502'd batch cost {} calls", b[0].calls);
    assert_eq!((b[1].changes, b[1].calls), (1000, 1));
    assert_eq!(outcomes(&b[1]), [("APPLIED", 1000)]);
    assert_eq!((b[2].changes, b[2].calls), (500, 1));
    assert_eq!(outcomes(&b[2]), [("APPLIED", 500)]);
    assert_eq!(s.dig("h1234.example.com", "A"), [value(1234)]);
}

/// Story 2, *Conflict burst*: another writer takes 7 of 1000 names between the plan and the
/// write. The batch costs 3 calls (write, read-back, resubmission of the 993); the 7
/// are CONFLICT with the other writer's values, and stay listed as such.
#[test]
fn story_conflict_burst_settles_993_and_reports_7_with_observed_values() {
    let Some(tools) = Tools::find() else { return };
    let taken: Vec<usize> = vec![3, 150, 151, 400, 612, 877, 999];
    let theirs = |i: usize| format!("198.51.100.{}", i % 250 + 1);
    let records: Vec<String> = taken
        .iter()
        .map(|&i| {
            format!(
                "{{ name = \"h{i}.example.com.\", type = \"A\", ttl = 60, values = [\"{}\"] }}",
                theirs(i)
            )
        })
        .collect();
    let faults = format!(
        "[[accounts.faults]]\nop = \"apply\"\naction = \"other_writer\"\ntimes = 1\nrecords = [{}]\n",
        records.join(", ")
    );
    let desired = bulk("example.com", 1000, value);
    let s = bulk_stack(tools, &desired, &faults, BIG_BATCHES);
    settled(&s, &[("converged", 993), ("conflict", 7)], 60);

    let b = batches(&s);
    assert_eq!(b[0].changes, 1000, "{b:?}");
    assert!(
        b[0].calls <= 3,
        "the conflict burst cost {} calls",
        b[0].calls
    );
    assert_eq!(outcomes(&b[0]), [("APPLIED", 993), ("CONFLICT", 7)]);
    let a = account(&s, "embedded");
    assert_eq!(num(&a["faults"]["other_writer"]), 1, "{a}");
    assert_eq!(num(&a["outcomes"]["APPLIED"]), 993, "{a}");

    let conflicts = records_in(&s, "example.com.", "CONFLICT");
    assert_eq!(conflicts.len(), 7, "{conflicts:?}");
    for &i in &taken {
        let name = format!("h{i}.example.com.");
        let r = conflicts
            .iter()
            .find(|r| r["key"]["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{name} not a conflict: {conflicts:?}"));
        assert_eq!(r["observed"]["values"][0], theirs(i).as_str(), "{r}");
        assert_eq!(r["conflictReason"], "CONFLICT_REASON_EXISTS", "{r}");
        assert_eq!(
            s.dig(&name, "A"),
            [theirs(i)],
            "the other writer's value is left alone"
        );
    }
}

/// Story 3, *Bad records in a big batch*: the provider refuses 3 values among 1000. Bisection
/// isolates them within its bound; 997 land; the 3 are INVALID with the provider's own
/// message and parked (not retried).
#[test]
fn story_bad_records_in_a_big_batch_are_isolated_with_the_providers_message() {
    let Some(tools) = Tools::find() else { return };
    let bad: BTreeMap<usize, &str> = BTreeMap::from([
        (17, "203.0.113.66"),
        (500, "203.0.113.77"),
        (998, "203.0.113.88"),
    ]);
    let faults = "[[accounts.faults]]\nop = \"apply\"\naction = \"reject_values\"\n\
                  values = [\"203.0.113.66\", \"203.0.113.77\", \"203.0.113.88\"]\n\
                  message = \"422 Unprocessable Entity: {name} {type}: {value} is on the provider's blocklist\"\n";
    let desired = bulk("example.com", 1000, |i| {
        bad.get(&i).map_or_else(|| value(i), |v| v.to_string())
    });
    let s = bulk_stack(tools, &desired, faults, BIG_BATCHES);
    settled(&s, &[("converged", 997), ("invalid", 3)], 60);

    let b = batches(&s);
    assert_eq!(b.len(), 1, "invalid records are parked, not resent: {b:?}");
    assert_eq!(outcomes(&b[0]), [("APPLIED", 997), ("INVALID", 3)]);
    let bound = bisection_bound(1000, 3);
    assert!(
        b[0].calls <= bound,
        "bisection cost {} calls, bound {bound}",
        b[0].calls
    );
    let a = account(&s, "embedded");
    let refusals = num(&a["callsByClass"]["invalid"]);
    assert!(
        refusals >= 3,
        "each bad record was refused alone at least: {a}"
    );
    assert_eq!(
        num(&a["faults"]["reject_values"]),
        refusals,
        "every refusal was the provider rule's: {a}"
    );

    let invalid = records_in(&s, "example.com.", "INVALID");
    assert_eq!(invalid.len(), 3, "{invalid:?}");
    for (i, v) in &bad {
        let name = format!("h{i}.example.com.");
        let r = invalid
            .iter()
            .find(|r| r["key"]["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{name} not invalid: {invalid:?}"));
        let want =
            format!("422 Unprocessable Entity: {name} A: {v} is on the provider's blocklist");
        assert_eq!(r["lastError"], want.as_str(), "{r}");
        assert!(s.dig(&name, "A").is_empty(), "{name} never landed");
    }
}

/// Story 4, *Rate limited*: the provider answers 429 with `Retry-After: 2`. The applier's
/// next attempt comes no earlier than 2 s later on the applier's own clock (the fault
/// layer's `at_ms`), the batch succeeds, and it took 2 attempts of the 4 allowed.
#[test]
fn story_rate_limited_waits_out_retry_after_then_succeeds_within_budget() {
    let Some(tools) = Tools::find() else { return };
    let faults = "[[accounts.faults]]\nop = \"apply\"\naction = \"rate_limited\"\nretry_after = \"2s\"\ntimes = 1\n";
    let desired = bulk("example.com", 50, value);
    let s = bulk_stack(tools, &desired, faults, "");
    settled(&s, &[("converged", 50)], 30);

    let log = applier_log(&s);
    let fired = log
        .lines()
        .find(|l| l.contains("Fault injected.") && field(l, "action") == Some("rate_limited"))
        .unwrap_or_else(|| panic!("no 429 injected; log:\n{log}"));
    let at = |l: &str| {
        field(l, "at_ms")
            .and_then(|v| v.parse::<u64>().ok())
            .expect("at_ms")
    };
    let call = |l: &str| {
        field(l, "call")
            .and_then(|v| v.parse::<u64>().ok())
            .expect("call")
    };
    let (limited_at, limited_call) = (at(fired), call(fired));
    let next = log
        .lines()
        .filter(|l| l.contains("Provider call.") && field(l, "op") == Some("apply"))
        .find(|l| call(l) > limited_call)
        .unwrap_or_else(|| panic!("no attempt after the 429; log:\n{log}"));
    let waited = at(next) - limited_at;
    assert!(
        waited >= 2000,
        "the next attempt came {waited} ms after the 429 with Retry-After: 2"
    );

    let b = batches(&s);
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(outcomes(&b[0]), [("APPLIED", 50)]);
    let budget = dnsplane_applier::retry::RetryPolicy::default().max_attempts;
    assert_eq!(b[0].calls, 2, "one 429, one success");
    assert!(b[0].calls <= u64::from(budget));
    let a = account(&s, "embedded");
    assert_eq!(num(&a["callsByClass"]["transient"]), 1, "{a}");
    assert_eq!(num(&a["faults"]["rate_limited"]), 1, "{a}");
}

/// Story 5, *Bad credentials*: every write of one account is answered 401. Its records come
/// back REJECTED_PERMANENT, its circuit opens, the applier says degraded and why; the
/// planner keeps asking (its retry cap is 1 s here, and the desired state keeps
/// changing), yet the provider sees only a handful of calls — the circuit answers the
/// rest. Another account on the same applier keeps converging throughout.
#[test]
fn story_bad_credentials_open_the_circuit_and_other_accounts_keep_working() {
    let Some(tools) = Tools::find() else { return };
    let other_dir = tempfile::tempdir().expect("tempdir");
    let applier_extra = format!(
        "[[accounts.faults]]\nop = \"apply\"\naction = \"error\"\nstatus = 401\n\
         message = \"401 Unauthorized: the API key was revoked\"\n\
         [accounts.circuit]\ncool_down = \"1s\"\nmax_cool_down = \"16s\"\njitter = 0.1\n\
         [[accounts]]\nname = \"other\"\ndriver = \"memory\"\nzones = [\"example.org.\"]\nstate_dir = \"{}\"\n",
        other_dir.path().display()
    );
    let planner_extra =
        "[[zones]]\nname = \"example.org.\"\naccount = \"other\"\nconflict = \"report\"\n";
    let com = |round: usize| bulk("example.com", 5 + round, value);
    let org = |round: usize| bulk("example.org", 5 + round, value);
    let mut s = Stack::with_config(
        tools,
        &[("com.yaml", &com(0)), ("org.yaml", &org(0))],
        "report",
        &applier_extra,
        planner_extra,
    );
    s.start();
    wait_states(
        &s,
        "example.org.",
        &[("converged", 5)],
        Duration::from_secs(30),
    );
    settled(&s, &[("rejected", 5)], 30);

    // A storm: the planner retries the rejected records every second, and the desired
    // state changes every 400 ms for ~8 s, each change a new batch for both zones.
    let rounds = 20;
    for round in 1..=rounds {
        s.write_desired("com.yaml", &com(round));
        s.write_desired("org.yaml", &org(round));
        std::thread::sleep(Duration::from_millis(400));
    }
    wait_states(
        &s,
        "example.org.",
        &[("converged", 5 + rounds as u64)],
        Duration::from_secs(30),
    );

    // Cool-down 1 s, doubling up to 16 s: besides the first refusal, probes come near
    // 1, 3, 7 and 15 s — at most 5 calls for a storm of up to ~30 s (a minute-long
    // storm would add one more), where each of its batches would otherwise cost one.
    let refused = account(&s, "embedded");
    let calls = num(&refused["callsByClass"]["permanent"]);
    let batches = num(&refused["batches"]);
    assert!(
        batches >= 15,
        "the storm sent only {batches} batches: {refused}"
    );
    assert!(
        (1..=5).contains(&calls),
        "{calls} provider calls for {batches} batches: the circuit should have answered all but a handful; {refused}"
    );
    assert!(
        num(&refused["callsByClass"]["success"]) > 0,
        "reads still work: {refused}"
    );
    assert!(
        num(&refused["outcomes"]["REJECTED_PERMANENT"]) >= batches,
        "{refused}"
    );
    assert_eq!(num(&refused["outcomes"]["APPLIED"]), 0, "{refused}");
    assert!(
        matches!(refused["circuit"].as_str(), Some("open" | "half_open")),
        "{refused}"
    );

    let status = s.applier_call("GetStatus", "{}");
    assert_eq!(status["level"], "degraded", "{status}");
    let reason = status["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("\"embedded\"")
            && reason.contains("401 Unauthorized: the API key was revoked"),
        "{reason}"
    );
    assert!(!reason.contains("\"other\""), "{reason}");

    let other = account(&s, "other");
    assert_eq!(other["circuit"], "closed", "{other}");
    assert_eq!(num(&other["callsByClass"]["permanent"]), 0, "{other}");
    assert!(
        num(&other["outcomes"]["APPLIED"]) >= 5 + rounds as u64,
        "{other}"
    );
    // Each record is rejected again on every planner retry; between two it may be in
    // flight for a moment.
    let mut rejected = Vec::new();
    let all = wait_for(Duration::from_secs(10), || {
        rejected = records_in(&s, "example.com.", "REJECTED");
        (rejected.len() == 5 + rounds).then_some(())
    });
    assert!(all.is_some(), "{rejected:?}");
    assert!(
        rejected.iter().all(|r| r["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("401 Unauthorized"))),
        "{rejected:?}"
    );
}

/// Story 6, *Applier killed mid-batch*: a batch commits, then is held in flight (latency
/// after commit) when the applier is killed with SIGKILL; the batch behind it is
/// queued. The applier restarts (without the fault); the planner resends what got no
/// result. Every record ends converged, the zone holds exactly the desired records —
/// none lost, none doubled — and the restarted applier saw no conflict.
#[test]
fn story_applier_killed_mid_batch_loses_and_doubles_nothing() {
    let Some(tools) = Tools::find() else { return };
    let faults = "[[accounts.faults]]\nop = \"apply\"\naction = \"latency\"\ndelay = \"60s\"\ncommit = true\nskip = 1\ntimes = 1\n";
    let n = 1500;
    let desired = bulk("example.com", n, value);
    let mut s = bulk_stack(tools, &desired, faults, "[batch]\nmax_changes = 500\n");
    let held = wait_for(Duration::from_secs(60), || {
        applier_log(&s)
            .lines()
            .any(|l| l.contains("Fault injected.") && field(l, "action") == Some("latency"))
            .then_some(())
    });
    assert!(
        held.is_some(),
        "the second batch was never held; logs:\n{}",
        s.logs()
    );
    let before = batches(&s);
    assert_eq!(
        before.len(),
        1,
        "one batch done, one held, one queued: {before:?}"
    );

    s.applier.take().expect("applier").kill();
    let config = s.path("applier.toml");
    let text = std::fs::read_to_string(&config).expect("applier.toml");
    std::fs::write(&config, text.replace(faults, "")).expect("applier.toml");
    s.start_applier();
    settled(&s, &[("converged", n as u64)], 60);

    let a = account(&s, "embedded");
    let landed = num(&a["outcomes"]["APPLIED"]) + num(&a["outcomes"]["ALREADY_APPLIED"]);
    assert!(landed >= 500, "the queued batch was resent and landed: {a}");
    for bad in ["CONFLICT", "FAILED", "INVALID", "REJECTED_PERMANENT"] {
        assert_eq!(num(&a["outcomes"][bad]), 0, "{bad}: {a}");
    }
    let listing = s.applier_call(
        "ListRecords",
        r#"{"account":"embedded","zone":"example.com.","fresh":true,"pageSize":10000}"#,
    );
    let rrsets = listing["rrsets"].as_array().expect("rrsets");
    let mut a_records = BTreeMap::new();
    let mut owners = 0;
    for r in rrsets {
        let name = r["key"]["name"].as_str().unwrap_or_default().to_string();
        let values: Vec<String> = r["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        match r["key"]["type"].as_str() {
            Some("A") => assert!(
                a_records.insert(name, values).is_none(),
                "an RRSet listed twice"
            ),
            Some("TXT") if name.starts_with("_dnsplane-a.") => owners += 1,
            other => panic!("unexpected record {other:?} {name}"),
        }
    }
    let want: BTreeMap<String, Vec<String>> = (0..n)
        .map(|i| (format!("h{i}.example.com."), vec![value(i)]))
        .collect();
    assert_eq!(a_records.len(), n, "records lost or extra");
    assert!(a_records == want, "the zone differs from the desired state");
    assert_eq!(owners, n, "one ownership record per record");
}

/// A sync far longer than `sync.batch_deadline` is not cut while it makes progress:
/// 30 batches of 20 that each take 300 ms (9 s in all) under a 2 s deadline all
/// commit. The deadline counts per batch, from when the batch leaves the planner, and
/// the planner lets only two batches of a stream be on their way at once; before, all
/// of them left at once and everything past the deadline came back DEFERRED.
#[test]
fn a_long_sync_that_makes_progress_is_never_cut_by_the_batch_deadline() {
    let Some(tools) = Tools::find() else { return };
    let slow_writes =
        "[[accounts.faults]]\nop = \"apply\"\naction = \"latency\"\ndelay = \"300ms\"\n";
    let desired = bulk("example.com", 600, |i| format!("192.0.2.{}", i % 250));
    let mut s = Stack::with_config(
        tools,
        &[("bulk.yaml", &desired)],
        "report",
        slow_writes,
        "[batch]\nmax_changes = 20\n",
    );
    let config = s.path("planner.toml");
    let text = std::fs::read_to_string(&config).expect("planner.toml");
    let short = text.replace(
        "retry_max = \"1s\"\n",
        "retry_max = \"1s\"\nbatch_deadline = \"2s\"\n",
    );
    assert_ne!(short, text, "the stack's [sync] table was not found");
    std::fs::write(&config, short).expect("planner.toml");
    s.start();
    settled(&s, &[("converged", 600)], 120);
    let a = account(&s, "embedded");
    assert_eq!(num(&a["outcomes"]["APPLIED"]), 600, "{a}");
    assert_eq!(num(&a["outcomes"]["DEFERRED"]), 0, "{a}");
    let b = batches(&s);
    assert_eq!(b.len(), 30, "every batch once, none retried: {b:?}");
}
