//! Issue 7: both services' `/metrics` after a sync with an injected conflict and an
//! injected retry, parsed as Prometheus text, with the exact counts the sync must
//! produce; and the applier's `/status`, `/healthz` and `/readyz`.
//!
//! The sync: four desired records; on the applier's first write another writer puts
//! `b` in place (equal to the desired record, unowned) and the provider answers 429
//! once. The applier retries (one retry), meets the conflict on `b`, reads the names
//! back and applies the other three; the planner reports `b` CONFLICT, re-plans it alone
//! and, the zone being `conflict = "adopt"`, adopts it (ownership record only). The
//! account has a (generous) quota: every write takes a token, the 429 is fed back.
use crate::stack::{Stack, Tools, ZONE, endpoints};
use dnsplane_e2e::{Proc, binary, free_port, grpcurl, http_get, wait_for};
use std::collections::BTreeMap;
use std::time::Duration;

/// One sample: metric name and labels.
pub(crate) type Series = (String, BTreeMap<String, String>);

/// Parses the Prometheus/OpenMetrics text format into `(name, labels) -> value`.
pub(crate) fn parse_metrics(text: &str) -> BTreeMap<Series, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad sample line {line:?}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|e| panic!("bad value in {line:?}: {e}"));
        let (name, labels) = match series.split_once('{') {
            None => (series.to_string(), BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest
                    .strip_suffix('}')
                    .unwrap_or_else(|| panic!("bad labels in {line:?}"));
                let mut labels = BTreeMap::new();
                // Label values here never hold `",` (names, zones, classes).
                for pair in body.split("\",").filter(|p| !p.is_empty()) {
                    let (k, v) = pair
                        .split_once("=\"")
                        .unwrap_or_else(|| panic!("bad label in {line:?}"));
                    labels.insert(k.to_string(), v.trim_end_matches('"').to_string());
                }
                (name.to_string(), labels)
            }
        };
        out.insert((name, labels), value);
    }
    out
}

/// The value of `name` with exactly `labels` (and, on a zone-labelled family, the
/// zone's target's `account`), if present.
pub(crate) fn sample(
    m: &BTreeMap<Series, f64>,
    name: &str,
    labels: &[(&str, &str)],
) -> Option<f64> {
    let mut found = m.iter().filter(|((n, l), _)| {
        n == name
            && l.len() <= labels.len() + 1
            && labels
                .iter()
                .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
            // The one label a series may carry beyond those named: a zone's
            // target's account.
            && l.keys().all(|k| k == "account" || labels.iter().any(|(n, _)| n == k))
    });
    let first = found.next().map(|(_, v)| *v);
    assert!(
        found.next().is_none(),
        "{name} {labels:?} matches several series (name the account)"
    );
    first
}

/// The sum of `name` over every series whose labels include `labels`.
pub(crate) fn sum(m: &BTreeMap<Series, f64>, name: &str, labels: &[(&str, &str)]) -> f64 {
    m.iter()
        .filter(|((n, l), _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, v)| v)
        .sum()
}

/// Asserts that `ours` holds every field of `theirs` with the same value (numbers as
/// numbers: `1000` and `1000.0` are equal), except the `skip` keys.
fn json_subset(theirs: &serde_json::Value, ours: &serde_json::Value, at: &str, skip: &[&str]) {
    match (theirs, ours) {
        (serde_json::Value::Object(t), serde_json::Value::Object(o)) => {
            for (k, v) in t.iter().filter(|(k, _)| !skip.contains(&k.as_str())) {
                let mine = o
                    .get(k)
                    .unwrap_or_else(|| panic!("/status {at}.{k} missing: {ours}"));
                json_subset(v, mine, &format!("{at}.{k}"), skip);
            }
        }
        (serde_json::Value::Number(t), serde_json::Value::Number(o)) => {
            assert_eq!(t.as_f64(), o.as_f64(), "/status {at}");
        }
        _ => assert_eq!(theirs, ours, "/status {at}"),
    }
}

fn wait_serving(tools: &Tools, port: u16, service: &str, logs: impl Fn() -> String) {
    let body = format!("{{\"service\":\"{service}\"}}");
    let addr = format!("127.0.0.1:{port}");
    let ok = wait_for(Duration::from_secs(30), || {
        let (ok, out) = grpcurl(
            &tools.grpcurl,
            &["-d", &body, &addr, "grpc.health.v1.Health/Check"],
        );
        (ok && out.contains("\"SERVING\"")).then_some(())
    });
    assert!(
        ok.is_some(),
        "{service} on {addr} not serving; logs:\n{}",
        logs()
    );
}

/// Starts `s`'s applier and planner, each with an admin port, and waits until both
/// serve; returns the admin ports (applier, planner).
pub(crate) fn start_with_admin(s: &mut Stack, tools: &Tools) -> (u16, u16) {
    let (applier_admin, planner_admin) = (free_port(), free_port());
    let (applier_cfg, planner_cfg) = (s.path("applier.toml"), s.path("planner.toml"));
    s.applier = Some(Proc::spawn(
        "applier",
        &binary("dnsplane-applier"),
        &[
            "--config",
            applier_cfg.to_str().expect("utf8"),
            "--listen",
            &format!("127.0.0.1:{}", s.applier_port),
            "--admin-listen",
            &format!("127.0.0.1:{applier_admin}"),
        ],
        s.path("applier.log"),
    ));
    wait_serving(tools, s.applier_port, "dnsplane.v1.Applier", || s.logs());
    s.planner = Some(Proc::spawn(
        "planner",
        &binary("dnsplane-planner"),
        &[
            "--config",
            planner_cfg.to_str().expect("utf8"),
            "--listen",
            &format!("127.0.0.1:{}", s.planner_port),
            "--admin-listen",
            &format!("127.0.0.1:{planner_admin}"),
        ],
        s.path("planner.log"),
    ));
    wait_serving(tools, s.planner_port, "dnsplane.v1.Planner", || s.logs());
    (applier_admin, planner_admin)
}

/// A stack of `names` (`a` → a.example.com A 192.0.2.1, …, `b` among them), whose
/// first write meets another writer on `b` and a 429 ([`FAULTS`]), zone `adopt`,
/// started with admin ports: (stack, applier admin, planner admin).
pub(crate) fn faulted_stack(tools: &Tools, names: &[&str]) -> (Stack, u16, u16) {
    let hosts: Vec<(String, [String; 1])> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (format!("{n}.example.com"), [format!("192.0.2.{}", i + 1)]))
        .collect();
    let values: Vec<[&str; 1]> = hosts.iter().map(|(_, v)| [v[0].as_str()]).collect();
    let records: Vec<(&str, &str, &[&str])> = hosts
        .iter()
        .zip(&values)
        .map(|((h, _), v)| (h.as_str(), "A", &v[..]))
        .collect();
    let desired = endpoints("web", &records);
    let mut s = Stack::with_config(
        tools.clone(),
        &[("web.yaml", &desired)],
        "adopt",
        FAULTS,
        "",
    );
    let (applier_admin, planner_admin) = start_with_admin(&mut s, tools);
    (s, applier_admin, planner_admin)
}

const FAULTS: &str = r#"
[[accounts.faults]]
op = "apply"
action = "other_writer"
times = 1
records = [{ name = "b.example.com.", type = "A", ttl = 60, values = ["192.0.2.2"] }]

[[accounts.faults]]
op = "apply"
action = "rate_limited"
retry_after = "50ms"
times = 1

[accounts.quota]
rate = 1000.0
burst = 100
"#;

#[test]
fn metrics_of_both_services_count_a_sync_with_a_conflict_and_a_retry() {
    let Some(tools) = Tools::find() else { return };
    let (mut s, applier_admin, planner_admin) = faulted_stack(&tools, &["a", "b", "c", "d"]);
    // Both services run with the allocator settings the binaries give themselves
    // (`dnsplane_cli::tune_allocator`: freed pages back within 50 ms, no transparent
    // huge pages), or with what the environment says instead.
    for proc in [s.applier.as_ref(), s.planner.as_ref()]
        .into_iter()
        .flatten()
    {
        let environ = std::fs::read(format!("/proc/{}/environ", proc.child.id()))
            .expect("the service's environment");
        let vars: Vec<&[u8]> = environ.split(|b| *b == 0).collect();
        for (name, default) in [("MIMALLOC_PURGE_DELAY", "50"), ("MIMALLOC_ALLOW_THP", "0")] {
            let want = format!(
                "{name}={}",
                std::env::var(name).unwrap_or_else(|_| default.to_string())
            );
            assert!(
                vars.contains(&want.as_bytes()),
                "{}: {want} not in its environment",
                proc.name
            );
        }
    }

    // Converged: all four records, b adopted after its conflict.
    let zone = ZONE;
    // A record's state is folded before its sync ends and counts itself: wait for both.
    let planner = wait_for(Duration::from_secs(30), || {
        let m = parse_metrics(&http_get(planner_admin, "/metrics").1);
        let syncs = sum(
            &m,
            "dnsplane_planner_sync_duration_seconds_count",
            &[("zone", zone), ("result", "ok")],
        );
        (sample(
            &m,
            "dnsplane_planner_records",
            &[("zone", zone), ("state", "converged")],
        ) == Some(4.0)
            && syncs >= 2.0)
            .then_some(m)
    })
    .unwrap_or_else(|| panic!("the zone did not converge; logs:\n{}", s.logs()));
    let applier_text = http_get(applier_admin, "/metrics").1;
    let applier = parse_metrics(&applier_text);

    // The planner: what it planned and what came back.
    for (name, labels, want) in [
        (
            "dnsplane_planner_plan_changes_total",
            [("zone", zone), ("kind", "create")],
            4.0,
        ),
        (
            "dnsplane_planner_plan_changes_total",
            [("zone", zone), ("kind", "adopt")],
            1.0,
        ),
        (
            "dnsplane_planner_record_outcomes_total",
            [("zone", zone), ("outcome", "applied")],
            4.0,
        ),
        (
            "dnsplane_planner_record_outcomes_total",
            [("zone", zone), ("outcome", "conflict")],
            1.0,
        ),
        (
            "dnsplane_planner_records",
            [("zone", zone), ("state", "conflict")],
            0.0,
        ),
    ] {
        assert_eq!(
            sample(&planner, name, &labels),
            Some(want),
            "planner {name}{labels:?}; logs:\n{}",
            s.logs()
        );
    }
    for kind in ["update", "delete"] {
        assert_eq!(
            sum(
                &planner,
                "dnsplane_planner_plan_changes_total",
                &[("kind", kind)]
            ),
            0.0,
            "{kind}"
        );
    }
    for outcome in [
        "already_applied",
        "invalid",
        "deferred",
        "failed",
        "rejected_permanent",
    ] {
        assert_eq!(
            sum(
                &planner,
                "dnsplane_planner_record_outcomes_total",
                &[("outcome", outcome)]
            ),
            0.0,
            "{outcome}"
        );
    }
    assert_eq!(
        sample(
            &planner,
            "dnsplane_planner_desired_records",
            &[("zone", zone)]
        ),
        Some(4.0)
    );
    assert!(
        sum(
            &planner,
            "dnsplane_planner_sync_duration_seconds_count",
            &[("zone", zone), ("result", "ok")]
        ) >= 2.0,
        "the zone sync and the conflict's re-plan"
    );

    // The applier: every provider request by class, the retry, the outcomes, the
    // faults that caused them, the circuit.
    let acct = [("account", "embedded"), ("provider", "memory")];
    let with = |extra: &[(&'static str, &'static str)]| -> Vec<(&'static str, &'static str)> {
        acct.iter().chain(extra).copied().collect()
    };
    for (name, labels, want) in [
        // 429 first, then the conflict on b, then the other three; then b's adoption.
        (
            "dnsplane_applier_provider_requests_total",
            with(&[("operation", "apply"), ("class", "transient")]),
            1.0,
        ),
        (
            "dnsplane_applier_provider_requests_total",
            with(&[("operation", "apply"), ("class", "conflict")]),
            1.0,
        ),
        (
            "dnsplane_applier_provider_requests_total",
            with(&[("operation", "apply"), ("class", "success")]),
            2.0,
        ),
        (
            "dnsplane_applier_provider_retries_total",
            with(&[("operation", "apply")]),
            1.0,
        ),
        (
            "dnsplane_applier_record_outcomes_total",
            with(&[("outcome", "applied")]),
            4.0,
        ),
        (
            "dnsplane_applier_record_outcomes_total",
            with(&[("outcome", "conflict")]),
            1.0,
        ),
        (
            "dnsplane_applier_record_outcomes_total",
            with(&[("outcome", "failed")]),
            0.0,
        ),
        (
            "dnsplane_applier_record_outcomes_total",
            with(&[("outcome", "deferred")]),
            0.0,
        ),
        ("dnsplane_applier_batches_total", with(&[]), 2.0),
        (
            "dnsplane_applier_faults_injected_total",
            vec![("account", "embedded"), ("action", "other_writer")],
            1.0,
        ),
        (
            "dnsplane_applier_faults_injected_total",
            vec![("account", "embedded"), ("action", "rate_limited")],
            1.0,
        ),
        (
            "dnsplane_applier_circuit_state",
            vec![("account", "embedded"), ("state", "closed")],
            1.0,
        ),
        (
            "dnsplane_applier_circuit_state",
            vec![("account", "embedded"), ("state", "open")],
            0.0,
        ),
        (
            "dnsplane_applier_provider_request_duration_seconds_count",
            vec![("provider", "memory"), ("operation", "apply")],
            4.0,
        ),
        // Writes take quota tokens (reads do not, `ops = "writes"`): one per apply call.
        (
            "dnsplane_applier_quota_wait_seconds_count",
            vec![("account", "embedded")],
            4.0,
        ),
        (
            "dnsplane_applier_quota_granted_total",
            vec![("account", "embedded")],
            4.0,
        ),
        (
            "dnsplane_applier_quota_throttled_total",
            vec![("account", "embedded")],
            1.0,
        ),
        (
            "dnsplane_applier_quota_denied_total",
            vec![("account", "embedded")],
            0.0,
        ),
        (
            "dnsplane_applier_quota_rate",
            vec![("account", "embedded"), ("kind", "configured")],
            1000.0,
        ),
        (
            "dnsplane_applier_quota_mode",
            vec![("account", "embedded"), ("mode", "local")],
            1.0,
        ),
    ] {
        assert_eq!(
            sample(&applier, name, &labels),
            Some(want),
            "applier {name}{labels:?} in:\n{applier_text}"
        );
    }
    // No request failed in any other way; reads all succeeded (the initial read, the
    // read-back after the conflict, the re-plan's read of b).
    for class in ["ambiguous", "invalid", "permanent"] {
        assert_eq!(
            sum(
                &applier,
                "dnsplane_applier_provider_requests_total",
                &[("class", class)]
            ),
            0.0,
            "{class}"
        );
    }
    let lists = sample(
        &applier,
        "dnsplane_applier_provider_requests_total",
        &with(&[("operation", "list"), ("class", "success")]),
    )
    .unwrap_or_else(|| panic!("no successful list in:\n{applier_text}"));
    assert!(
        lists >= 2.0,
        "the planner's read and the read-back: {lists}"
    );
    assert_eq!(
        sample(
            &applier,
            "dnsplane_applier_provider_request_duration_seconds_count",
            &[("provider", "memory"), ("operation", "list")]
        ),
        Some(lists)
    );
    let cache = sample(&applier, "dnsplane_applier_cache_hits_total", &[]).expect("cache hits")
        + sample(&applier, "dnsplane_applier_cache_misses_total", &[]).expect("cache misses");
    assert!(cache >= 1.0, "the planner's reads go through the cache");
    assert!(
        applier_text.contains("dnsplane_build_info{service=\"dnsplane-applier\","),
        "{applier_text}"
    );

    // /status is GetStatus: the same counters as grpcurl shows, which /metrics mirrors.
    let (code, body) = http_get(applier_admin, "/status");
    assert_eq!(code, 200);
    let status: serde_json::Value =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("/status: {e}: {body}"));
    let (ok, out) = grpcurl(
        &tools.grpcurl,
        &[
            &format!("127.0.0.1:{}", s.applier_port),
            "dnsplane.v1.Applier/GetStatus",
        ],
    );
    assert!(ok, "{out}");
    let grpc: serde_json::Value = serde_json::from_str(&out).expect("GetStatus JSON");
    assert_eq!(status["level"], grpc["level"]);
    // Every field grpcurl shows (it leaves defaults out), with the same value; the
    // quota's current rate recovers from the 429 between the two calls.
    json_subset(
        &grpc["accounts"][0],
        &status["accounts"][0],
        "accounts[0]",
        &["currentRate"],
    );
    let calls: f64 = status["accounts"][0]["callsByClass"]
        .as_object()
        .expect("callsByClass")
        .values()
        .map(|v| {
            v.as_str()
                .and_then(|s| s.parse::<f64>().ok())
                .expect("a uint64 string")
        })
        .sum();
    assert_eq!(
        sum(&applier, "dnsplane_applier_provider_requests_total", &acct),
        calls,
        "/metrics and GetStatus agree"
    );
    assert_eq!(status["accounts"][0]["outcomes"]["CONFLICT"], "1");
    assert_eq!(
        http_get(applier_admin, "/healthz"),
        (200, "ok\n".to_string())
    );
    assert_eq!(
        http_get(applier_admin, "/readyz"),
        (200, "ready\n".to_string())
    );

    let exit = s.applier.as_mut().expect("applier").terminate();
    assert!(
        exit.is_some_and(|e| e.success()),
        "applier exit {exit:?}; logs:\n{}",
        s.logs()
    );
}
