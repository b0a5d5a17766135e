//! Issue 28, item 2: *a takeover never plans from less than the old leader
//! acknowledged*. Reported: with `[lease] redis` and a state dir per replica, the
//! standby accepted `PutDesired`; 100 records pushed to the leader were deleted by the
//! standby after `kill -9` of the leader (pushed state was not shared); and in a shared
//! state dir the standby planned from what it had read at its start, so an
//! acknowledged push (`p0` → 10.99.0.0) went back to 10.4.0.0.
//!
//! Two planner processes, one applier, a real PowerDNS (and a real Redis for the Redis
//! setup). The mass-change guard is off (`max_change_fraction = 1.0`) so that it cannot
//! hide a deletion behind a held plan: what is under test is what the new leader
//! desires.
use super::{Planner, planner_toml, role, start_applier};
use crate::stack::{Tools, endpoints};
use dnsplane_e2e::redis::Redis;
use dnsplane_e2e::servers::{PowerDns, dig_sorted};
use dnsplane_e2e::{Proc, free_port, grpcurl, wait_for};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the two replicas keep their state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// `[lease] redis`, a config dir (and so a state dir) per replica.
    RedisSeparateDirs,
    /// One config dir for both (so one state dir): the lock-file lease.
    SharedStateDir,
}

/// PowerDNS, one applier, and the replicas' directories (not started).
struct Replicas {
    tools: Tools,
    pdns: PowerDns,
    _redis: Option<Redis>,
    _applier: Proc,
    dir: tempfile::TempDir,
    base: String,
    /// The config dir of the first and of the second replica (the same one for
    /// [`Setup::SharedStateDir`]).
    dirs: [PathBuf; 2],
}

impl Replicas {
    fn start(setup: Setup, webhook: bool) -> Option<Replicas> {
        let tools = Tools::find()?;
        let redis = match setup {
            Setup::RedisSeparateDirs => Some(Redis::start()?),
            Setup::SharedStateDir => None,
        };
        let pdns = PowerDns::start()?;
        let zone = pdns.zone.to_string();
        let base = zone.trim_end_matches('.').to_string();
        let dir = tempfile::tempdir().expect("tempdir");
        let (applier, applier_port) =
            start_applier(&tools, dir.path(), &zone, &pdns.api_url(), &pdns, &[]);
        let dirs = match setup {
            Setup::RedisSeparateDirs => [dir.path().join("first"), dir.path().join("second")],
            Setup::SharedStateDir => [dir.path().join("both"), dir.path().join("both")],
        };
        for (i, d) in dirs.iter().enumerate() {
            std::fs::create_dir_all(d.join("desired")).expect("dir");
            let mut extra = String::from("[safety]\nmax_change_fraction = 1.0\n");
            if let Some(r) = &redis {
                extra.push_str(&format!("[lease]\nredis = \"{}\"\n", r.url()));
            }
            if webhook {
                extra.push_str(&format!(
                    "[webhook]\nlisten = \"127.0.0.1:{}\"\n",
                    webhook_port(d, i)
                ));
            }
            std::fs::write(
                d.join("planner.toml"),
                planner_toml(applier_port, &zone, "pdns", &extra),
            )
            .expect("planner.toml");
            // A record of the file source, the same in every replica: changing it
            // shows that a leader has synced since.
            write_marker(d, &base, "10.0.0.1");
        }
        Some(Replicas {
            tools,
            pdns,
            _redis: redis,
            _applier: applier,
            dir,
            base,
            dirs,
        })
    }

    fn planner(&self, i: usize) -> Planner {
        Planner::start(["first", "second"][i], &self.dirs[i])
    }

    fn wait_dig(&self, name: &str, want: &[&str], what: &str, logs: &[&Planner]) {
        super::wait_dig_a(&self.tools, &self.pdns, (name, want), what, logs);
    }

    /// The pushed records of source `app` in PowerDNS: `p<i>` with their values.
    fn pushed_in_dns(&self) -> Vec<(String, String)> {
        let suffix = format!(".{}.", self.base);
        let mut out: Vec<(String, String)> = self
            .pdns
            .axfr(&self.tools.dig)
            .iter()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let name = f.first()?.strip_suffix(suffix.as_str())?;
                (name.starts_with('p') && f.get(2) == Some(&"A"))
                    .then(|| (name.to_string(), f.get(3).unwrap_or(&"").to_string()))
            })
            .collect();
        out.sort();
        out
    }

    fn dig(&self, name: &str) -> Vec<String> {
        dig_sorted(&self.tools.dig, self.pdns.dns_port, name, "A")
    }

    /// Moves the marker to `value` in every replica's source, and waits until a leader
    /// has written it: the new leader has planned (from what it desires) since.
    fn synced_since(&self, value: &str, logs: &[&Planner]) {
        for d in &self.dirs {
            write_marker(d, &self.base, value);
        }
        self.wait_dig(
            &format!("marker.{}", self.base),
            &[value],
            "the new leader syncs",
            logs,
        );
        // A sync writes the marker in its own batch or with the rest: one more sync
        // interval's worth of time for anything else it would do.
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn webhook_port(dir: &Path, i: usize) -> u16 {
    let f = dir.join(format!("webhook-port-{i}"));
    if let Ok(p) = std::fs::read_to_string(&f) {
        return p.trim().parse().expect("port");
    }
    let p = free_port();
    std::fs::write(&f, p.to_string()).expect("port file");
    p
}

fn write_marker(dir: &Path, base: &str, value: &str) {
    let tmp = dir.join("marker.tmp");
    std::fs::write(
        &tmp,
        endpoints("marker", &[(&format!("marker.{base}"), "A", &[value])]),
    )
    .expect("marker");
    std::fs::rename(&tmp, dir.join("desired").join("marker.yaml")).expect("rename");
}

/// `grpcurl -d body` to one planner: (success, output).
fn call(tools: &Tools, p: &Planner, method: &str, body: &str) -> (bool, String) {
    grpcurl(
        &tools.grpcurl,
        &[
            "-d",
            body,
            &format!("127.0.0.1:{}", p.port),
            &format!("dnsplane.v1.Planner/{method}"),
        ],
    )
}

/// A `PutDesired` body of source `app`: `p<i>` → `value(i)` for i in `range`.
fn push_body(base: &str, range: std::ops::Range<usize>, value: impl Fn(usize) -> String) -> String {
    let records: Vec<serde_json::Value> = range
        .map(|i| {
            serde_json::json!({
                "name": format!("p{i}.{base}"),
                "type": "A",
                "values": [value(i)],
            })
        })
        .collect();
    serde_json::json!({"source": "app", "records": records}).to_string()
}

/// The zone's desired records as the planner's status counts them.
fn desired_records(r: &Replicas, p: &Planner) -> u64 {
    let st = p.status(&r.tools).expect("status");
    dnsplane_e2e::num(&st["zones"][0]["desiredRecords"])
}

fn push(r: &Replicas, p: &Planner, body: &str) {
    let (ok, out) = call(&r.tools, p, "PutDesired", body);
    assert!(ok, "PutDesired to the leader: {out}");
}

fn leader_then_standby(r: &Replicas) -> (Planner, Planner) {
    let first = r.planner(0);
    first.wait_lease(&r.tools, "leader", |l| role(l) == "leader");
    let second = r.planner(1);
    second.wait_lease(&r.tools, "standby", |l| role(l) == "standby");
    (first, second)
}

#[test]
fn a_standby_refuses_every_write_naming_the_leaders_address() {
    let Some(r) = Replicas::start(Setup::RedisSeparateDirs, true) else {
        return;
    };
    let (first, second) = leader_then_standby(&r);
    r.wait_dig(
        &format!("marker.{}", r.base),
        &["10.0.0.1"],
        "the leader writes",
        &[&first],
    );
    let leader_addr = format!("127.0.0.1:{}", first.port);
    let zone = r.pdns.zone.to_string();
    let base = &r.base;
    for (method, body) in [
        (
            "PutDesired",
            push_body(base, 0..5, |i| format!("10.4.0.{i}")),
        ),
        (
            "PatchDesired",
            serde_json::json!({"source": "app", "upserts": [
                {"name": format!("p0.{base}"), "type": "A", "values": ["10.4.9.9"]}]})
            .to_string(),
        ),
        (
            "Approve",
            serde_json::json!({"zone": zone, "digest": "0123"}).to_string(),
        ),
        (
            "Release",
            serde_json::json!({"zone": zone, "externalDnsOwner": "ext"}).to_string(),
        ),
    ] {
        let (ok, out) = call(&r.tools, &second, method, &body);
        assert!(!ok, "the standby accepted {method}: {out}");
        assert!(out.contains("Unavailable"), "{method}: {out}");
        assert!(
            out.contains("this planner is standby") && out.contains(&leader_addr),
            "{method} must name the leader's address {leader_addr}: {out}"
        );
    }
    // The webhook's POST: 503, naming the leader.
    let out = std::process::Command::new("curl")
        .args(["-sS", "-o", "-", "-w", "\n%{http_code}", "-X", "POST"])
        .args([
            "-H",
            "Content-Type: application/external.dns.webhook+json;version=1",
            "-H",
            "Accept: application/external.dns.webhook+json;version=1",
        ])
        .arg("--data")
        .arg(
            serde_json::json!({"create": [
                {"dnsName": format!("w.{base}"), "recordType": "A", "targets": ["10.5.0.1"]}]})
            .to_string(),
        )
        .arg(format!(
            "http://127.0.0.1:{}/records",
            webhook_port(&r.dirs[1], 1)
        ))
        .output()
        .expect("curl");
    let out = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.ends_with("503"), "webhook POST to the standby: {out}");
    assert!(
        out.contains("this planner is standby") && out.contains(&leader_addr),
        "{out}"
    );
    // Nothing of it reached the standby's desired state, nor DNS.
    assert_eq!(desired_records(&r, &second), 1, "only the marker");
    assert!(r.dig(&format!("p0.{base}")).is_empty());
    // The leader still takes them.
    push(
        &r,
        &first,
        &push_body(base, 0..5, |i| format!("10.4.0.{i}")),
    );
    r.wait_dig(
        &format!("p4.{base}"),
        &["10.4.0.4"],
        "the leader writes",
        &[&first],
    );
}

/// 100 records pushed to the leader and acknowledged, then `kill -9` of the leader:
/// the standby takes over and every one of them stays in PowerDNS.
fn pushed_records_survive_the_leaders_death(setup: Setup) {
    let Some(r) = Replicas::start(setup, false) else {
        return;
    };
    let (mut first, second) = leader_then_standby(&r);
    push(
        &r,
        &first,
        &push_body(&r.base, 0..100, |i| format!("10.4.0.{i}")),
    );
    r.wait_dig(
        &format!("p99.{}", r.base),
        &["10.4.0.99"],
        "the leader writes",
        &[&first],
    );
    let want: Vec<(String, String)> = {
        let mut w: Vec<(String, String)> = (0..100)
            .map(|i| (format!("p{i}"), format!("10.4.0.{i}")))
            .collect();
        w.sort();
        w
    };
    assert_eq!(r.pushed_in_dns(), want);

    first.proc.kill();
    second.wait_lease(&r.tools, "leader", |l| role(l) == "leader");
    r.synced_since("10.0.0.2", &[&second]);
    assert_eq!(
        r.pushed_in_dns(),
        want,
        "the new leader deleted pushed records; its log:\n{}",
        second.proc.log_text()
    );
    // It desires them, too (not merely left them).
    assert_eq!(
        desired_records(&r, &second),
        101,
        "the marker and the pushes"
    );
    drop(r.dir);
}

#[test]
fn pushed_records_survive_kill_9_of_the_leader_with_a_redis_lease_and_a_state_dir_each() {
    pushed_records_survive_the_leaders_death(Setup::RedisSeparateDirs);
}

#[test]
fn pushed_records_survive_kill_9_of_the_leader_in_a_shared_state_dir() {
    pushed_records_survive_the_leaders_death(Setup::SharedStateDir);
}

/// The issue's `p0` case: a push acknowledged after the standby started (so after it
/// last read the state dir) is what the new leader plans from.
#[test]
fn a_push_made_after_the_standby_started_survives_the_failover() {
    let Some(r) = Replicas::start(Setup::SharedStateDir, false) else {
        return;
    };
    let first = r.planner(0);
    first.wait_lease(&r.tools, "leader", |l| role(l) == "leader");
    push(
        &r,
        &first,
        &push_body(&r.base, 0..10, |i| format!("10.4.0.{i}")),
    );
    r.wait_dig(
        &format!("p0.{}", r.base),
        &["10.4.0.0"],
        "the leader writes",
        &[&first],
    );
    let second = r.planner(1);
    second.wait_lease(&r.tools, "standby", |l| role(l) == "standby");
    // The standby has read the state dir (it answers reads with it).
    wait_for(Duration::from_secs(20), || {
        (desired_records(&r, &second) == 11).then_some(())
    })
    .expect("the standby reads the pushes");
    // Now p0 → 10.99.0.0, acknowledged, in DNS.
    push(
        &r,
        &first,
        &push_body(&r.base, 0..10, |i| match i {
            0 => "10.99.0.0".to_string(),
            _ => format!("10.4.0.{i}"),
        }),
    );
    r.wait_dig(
        &format!("p0.{}", r.base),
        &["10.99.0.0"],
        "the leader writes",
        &[&first],
    );
    let mut first = first;
    first.proc.kill();
    second.wait_lease(&r.tools, "leader", |l| role(l) == "leader");
    r.synced_since("10.0.0.2", &[&second]);
    assert_eq!(
        r.dig(&format!("p0.{}", r.base)),
        ["10.99.0.0"],
        "the new leader reverted an acknowledged push; its log:\n{}",
        second.proc.log_text()
    );
    assert_eq!(r.pushed_in_dns().len(), 10);
}
