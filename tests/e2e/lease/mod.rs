//! Issue 13, *one writer per owner*: two planners with the same `owner_id` never both
//! write. Reported: a second planner started by mistake, with a smaller source,
//! deleted the records only the first one had.
//!
//! The main story runs two planner processes with one Redis lease against one applier
//! and a real PowerDNS, behind a proxy that logs every PATCH (when it was sent, when
//! PowerDNS answered, its body). The two planners' sources differ in every value (the
//! first's are `10.1.*` under the manifest `alpha`, the second's `10.2.*` under `beta`,
//! and only the first has the `a*` names), so each PATCH names its writer by its
//! content alone: that is the provider's log. The applier's log is a second witness:
//! every `Batch done.` line carries the batch id, whose run part is the sending
//! planner's (its lease identity is `host/pid/run`).
//!
//! The backends on their own, and Redis going away: [`backends`].
mod backends;
mod fencing;
mod netbox_write_back;
mod redis_store;
mod takeover;

use crate::stack::{Tools, endpoints};
use dnsplane_e2e::quota_proxy::{Patch, ProxyOptions, QuotaProxy};
use dnsplane_e2e::redis::Redis;
use dnsplane_e2e::servers::{PowerDns, dig_sorted};
use dnsplane_e2e::{Proc, binary, free_port, grpcurl, http_get, wait_for};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The bound: the standby writes within this long after the leader dies.
const TAKEOVER: Duration = Duration::from_secs(15);

/// One planner process and where it answers.
struct Planner {
    proc: Proc,
    port: u16,
    admin: u16,
    dir: PathBuf,
}

/// Waits (60 s at most) until `dig NAME A` at `pdns` answers `want`; panics saying
/// `what`, the last answer and the planners' logs.
fn wait_dig_a(
    tools: &Tools,
    pdns: &PowerDns,
    (name, want): (&str, &[&str]),
    what: &str,
    logs: &[&Planner],
) {
    let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
    let dig = || dig_sorted(&tools.dig, pdns.dns_port, name, "A");
    let answered = wait_for(Duration::from_secs(60), || (dig() == want).then_some(()));
    answered.unwrap_or_else(|| {
        let logs: Vec<String> = logs
            .iter()
            .map(|p| format!("--- {}:\n{}", p.proc.name, p.proc.log_text()))
            .collect();
        let last = dig();
        panic!(
            "{what}: dig {name} never gave {want:?}: {last:?}\n{}",
            logs.join("\n")
        )
    });
}

impl Planner {
    /// The planner `s` started, taken from it (its admin port unknown).
    fn taken_from(s: &mut crate::stack::Stack) -> Planner {
        Planner {
            proc: s.planner.take().expect("planner"),
            port: s.planner_port,
            admin: 0,
            dir: s.dir.path().to_path_buf(),
        }
    }

    /// Starts `dnsplane-planner` with `<dir>/planner.toml`.
    fn start(name: &str, dir: &Path) -> Planner {
        let (port, admin) = (free_port(), free_port());
        let admin_at = format!("127.0.0.1:{admin}");
        let proc = crate::stack::spawn_planner(name, dir, port, &admin_at);
        Planner {
            proc,
            port,
            admin,
            dir: dir.to_path_buf(),
        }
    }

    fn status(&self, tools: &Tools) -> Option<Value> {
        let (ok, out) = grpcurl(
            &tools.grpcurl,
            &[
                &format!("127.0.0.1:{}", self.port),
                "dnsplane.v1.Planner/GetStatus",
            ],
        );
        ok.then(|| serde_json::from_str(&out).ok()).flatten()
    }

    /// Waits until its lease status satisfies `f`; returns it.
    fn wait_lease(&self, tools: &Tools, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        wait_for(Duration::from_secs(30), || {
            let st = self.status(tools)?;
            f(&st["lease"]).then(|| st["lease"].clone())
        })
        .unwrap_or_else(|| {
            panic!(
                "{}: never {what}; last status {:?}; log:\n{}",
                self.proc.name,
                self.status(tools),
                self.proc.log_text()
            )
        })
    }

    fn write_desired(&self, text: &str) {
        let tmp = self.dir.join("desired.tmp");
        std::fs::write(&tmp, text).expect("write");
        std::fs::rename(&tmp, self.dir.join("desired").join("records.yaml")).expect("rename");
    }
}

/// A `dnsplane-applier` with one PowerDNS account `pdns` for `zone` at `api_url`,
/// serving gRPC on the port it returns once it answers (logs in `<dir>/applier.log`).
fn start_applier(
    tools: &Tools,
    dir: &Path,
    zone: &str,
    api_url: &str,
    pdns: &PowerDns,
    env: &[(&str, &str)],
) -> (Proc, u16) {
    let applier_port = free_port();
    std::fs::write(
        dir.join("applier.toml"),
        format!(
            "[[accounts]]\nname = \"pdns\"\ndriver = \"pdns\"\nzones = [\"{zone}\"]\n\
             api_url = \"{api_url}\"\napi_key_file = \"{}\"\n",
            pdns.api_key_file.display()
        ),
    )
    .expect("applier.toml");
    let applier = Proc::spawn_with_env(
        "applier",
        &binary("dnsplane-applier"),
        &[
            "--config",
            dir.join("applier.toml").to_str().expect("utf8"),
            "--listen",
            &format!("127.0.0.1:{applier_port}"),
            "--admin-listen",
            "off",
        ],
        env,
        dir.join("applier.log"),
    );
    wait_for(Duration::from_secs(20), || {
        let (ok, out) = grpcurl(
            &tools.grpcurl,
            &[&format!("127.0.0.1:{applier_port}"), "list"],
        );
        (ok && out.contains("dnsplane.v1.Applier")).then_some(())
    })
    .expect("applier up");
    (applier, applier_port)
}

fn role(lease: &Value) -> &str {
    lease["role"].as_str().unwrap_or("")
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field].as_str().unwrap_or("")
}

/// The run of a lease identity `host/pid/run`.
fn run_of(identity: &str) -> String {
    identity.rsplit('/').next().unwrap_or("").to_string()
}

fn planner_toml(applier_port: u16, zone: &str, account: &str, extra: &str) -> String {
    format!(
        "owner_id = \"e2e\"\napplier = \"http://127.0.0.1:{applier_port}\"\n{extra}\n\
         [sync]\ninterval = \"10m\"\nmin_interval = \"100ms\"\nsource_poll = \"200ms\"\n\
         retry_min = \"200ms\"\nretry_max = \"1s\"\n\
         [[zones]]\nname = \"{zone}\"\naccount = \"{account}\"\n\
         [[sources]]\ntype = \"file\"\npaths = [\"desired\"]\n"
    )
}

/// `(name, values)` as a `DNSEndpoint` manifest called `manifest`, A records only.
fn manifest(manifest: &str, records: &[(String, String)]) -> String {
    let eps: Vec<(&str, &str, [&str; 1])> = records
        .iter()
        .map(|(n, v)| (n.as_str(), "A", [v.as_str()]))
        .collect();
    let eps: Vec<(&str, &str, &[&str])> = eps.iter().map(|(n, t, v)| (*n, *t, &v[..])).collect();
    endpoints(manifest, &eps)
}

/// Who sent a PATCH, by its content alone (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writer {
    First,
    Second,
}

fn writer(p: &Patch) -> Writer {
    let first = p.body.contains("10.1.") || p.body.contains("alpha");
    let second = p.body.contains("10.2.") || p.body.contains("beta");
    match (first, second) {
        (true, false) => Writer::First,
        (false, true) => Writer::Second,
        // Only deletions: of the names only the first planner desires, which the first
        // never deletes.
        (false, false) if p.body.contains("\"a0.") => Writer::Second,
        _ => panic!("a PATCH that names no single writer: {}", p.body),
    }
}

/// Sends one batch straight to the applier at `port`; its results.
fn send_batch(
    port: u16,
    batch: dnsplane_common::pb::Batch,
) -> Vec<dnsplane_common::pb::RecordResult> {
    use dnsplane_common::pb;
    let rt = crate::stack::runtime();
    rt.block_on(async move {
        let mut client =
            pb::applier_client::ApplierClient::connect(format!("http://127.0.0.1:{port}"))
                .await
                .expect("connect applier");
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tx.send(pb::ApplyRequest { batch: Some(batch) })
            .await
            .expect("queue");
        let mut stream = client
            .apply(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
            .expect("apply")
            .into_inner();
        let mut results = Vec::new();
        while let Some(msg) = stream.message().await.expect("apply stream") {
            results.extend(msg.results);
            if msg.done {
                break;
            }
        }
        drop(tx);
        results
    })
}

/// The batch ids of the applier's `Batch done.` lines (JSON log), in order.
fn applier_batches(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["fields"]["message"] == "Batch done.")
        .map(|v| text(&v["span"], "batch.id").to_string())
        .collect()
}

#[test]
fn two_planners_one_redis_lease_only_the_leader_writes_and_the_standby_takes_over() {
    let Some(tools) = Tools::find() else { return };
    let Some(redis) = Redis::start() else { return };
    let Some(pdns) = PowerDns::start() else {
        return;
    };
    let proxy = QuotaProxy::start(&pdns.api_url(), ProxyOptions::default());
    let zone = pdns.zone.to_string();
    let base = zone.trim_end_matches('.').to_string();
    let dir = tempfile::tempdir().expect("tempdir");

    let (applier, applier_port) = start_applier(
        &tools,
        dir.path(),
        &zone,
        &proxy.url(),
        &pdns,
        &[("DNSPLANE_LOG_FORMAT", "json")],
    );

    // The first planner's source: shared names and names only it has. The second's:
    // the shared names with other values, nothing else (the smaller source).
    let shared: Vec<String> = (0..5).map(|i| format!("s{i}.{base}")).collect();
    let only_first: Vec<String> = (0..5).map(|i| format!("a{i}.{base}")).collect();
    let mut first_records: Vec<(String, String)> = shared
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), format!("10.1.0.{i}")))
        .chain(
            only_first
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), format!("10.1.1.{i}"))),
        )
        .collect();
    let mut second_records: Vec<(String, String)> = shared
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), format!("10.2.0.{i}")))
        .collect();
    // Same owner id, same Redis, the default ttl (10 s) and retry (2 s). The second
    // planner's smaller source updates every shared record and deletes the first's
    // own ones: the mass-change guard would (rightly) hold that plan for approval
    // (tests/e2e/safety.rs); it is off here, because what is under test is who writes.
    let lease = format!(
        "[lease]\nredis = \"{}\"\n[safety]\nmax_change_fraction = 1.0\n",
        redis.url()
    );
    let mut planners = Vec::new();
    for (name, records, label) in [
        ("first", &first_records, "alpha"),
        ("second", &second_records, "beta"),
    ] {
        let pdir = dir.path().join(name);
        std::fs::create_dir_all(pdir.join("desired")).expect("dir");
        std::fs::write(
            pdir.join("planner.toml"),
            planner_toml(applier_port, &zone, "pdns", &lease),
        )
        .expect("planner.toml");
        std::fs::write(
            pdir.join("desired").join("records.yaml"),
            manifest(label, records),
        )
        .expect("desired");
        planners.push(pdir);
    }
    let dig = |name: &str| dig_sorted(&tools.dig, pdns.dns_port, name, "A");
    let wait_dig = |name: &str, want: &[&str], what: &str| {
        let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        wait_for(Duration::from_secs(30), || {
            (dig(name) == want).then_some(())
        })
        .unwrap_or_else(|| panic!("{what}: dig {name} never gave {want:?}: {:?}", dig(name)));
    };

    // The first planner leads and writes its records.
    let mut first = Planner::start("first", &planners[0]);
    let first_lease = first.wait_lease(&tools, "leader", |l| role(l) == "leader");
    assert_eq!(text(&first_lease, "backend"), "redis");
    let first_id = text(&first_lease, "identity").to_string();
    assert!(
        first_id.contains(&format!("/{}/", first.proc.child.id())),
        "identity {first_id} names the process"
    );
    wait_dig(&only_first[4], &["10.1.1.4"], "the first planner writes");

    // The second stands by: it names the holder, is not degraded, and refuses to sync.
    let second = Planner::start("second", &planners[1]);
    let second_lease = second.wait_lease(&tools, "standby, seeing the holder", |l| {
        role(l) == "standby" && text(l, "holder") == first_id
    });
    let second_id = text(&second_lease, "identity").to_string();
    assert_ne!(run_of(&first_id), run_of(&second_id));
    let st = second.status(&tools).expect("status");
    assert_ne!(
        text(&st, "level"),
        "degraded",
        "a standby is not degraded: {st}"
    );
    let cli = |p: &Planner, args: &[&str]| {
        let out = std::process::Command::new(binary("dnsplane"))
            .args(args)
            .args(["--addr", &format!("http://127.0.0.1:{}", p.port)])
            .env("DNSPLANE_LOG", "warn")
            .output()
            .expect("run dnsplane");
        (out.status, crate::stack::combined(&out))
    };
    // A standby is not degraded, but it is not the one doing the work: exit 3.
    let (code, out) = cli(&second, &["status"]);
    assert_eq!(code.code(), Some(3), "{out}");
    assert!(
        out.contains(&format!(
            "lease: standby (held by {first_id}; redis 127.0.0.1:"
        )),
        "{out}"
    );
    let (_, out) = cli(&first, &["status"]);
    assert!(out.contains("lease: leader (redis 127.0.0.1:"), "{out}");
    let (code, out) = cli(&second, &["sync"]);
    assert!(!code.success(), "a standby's sync fails: {out}");
    assert!(out.contains("standby") && out.contains(&first_id), "{out}");
    // The admin port says the same.
    let (_, json) = http_get(second.admin, "/status");
    let json: Value = serde_json::from_str(&json).expect("/status JSON");
    assert_eq!(json["lease"]["role"], "standby", "{json}");
    assert_eq!(json["lease"]["holder"], first_id.as_str(), "{json}");
    let metric = |p: &Planner, line: &str| {
        let (_, m) = http_get(p.admin, "/metrics");
        m.lines().any(|l| l == line)
    };
    assert!(metric(&first, "dnsplane_planner_lease_leader 1"));
    assert!(metric(&second, "dnsplane_planner_lease_leader 0"));

    // While the first leads, it keeps writing, and the second's changes go nowhere.
    first_records.push((format!("a5.{base}"), "10.1.1.5".into()));
    first.write_desired(&manifest("alpha", &first_records));
    second_records.push((format!("b0.{base}"), "10.2.9.9".into()));
    second.write_desired(&manifest("beta", &second_records));
    wait_dig(&format!("a5.{base}"), &["10.1.1.5"], "the leader writes on");
    // The standby has read its new source (its Plan shows what it would do) ...
    wait_for(Duration::from_secs(30), || {
        let (ok, out) = cli(&second, &["plan"]);
        (ok.success() && out.contains(&format!("b0.{base}."))).then_some(())
    })
    .expect("the standby plans its change");
    // ... and has tried for the lease since, and stands by still.
    let tries = |p: &Planner| {
        std::fs::read_to_string(&p.proc.log).map_or(0, |l| {
            l.lines()
                .filter(|l| l.contains("Lease held by another planner"))
                .count()
        })
    };
    assert_eq!(tries(&second), 1, "logged once, not at every try");
    for name in only_first.iter().chain(&shared) {
        assert!(!dig(name).is_empty(), "{name} is still there");
    }
    assert!(
        dig(&format!("b0.{base}")).is_empty(),
        "the standby wrote b0"
    );
    assert!(
        proxy.patches().iter().all(|p| writer(p) == Writer::First),
        "only the leader wrote"
    );

    // kill -9 the leader: the standby takes over and writes within the bound.
    first.proc.kill();
    let killed = Instant::now();
    let second_wrote = wait_for(TAKEOVER * 2, || {
        proxy
            .patches()
            .into_iter()
            .find(|p| writer(p) == Writer::Second)
    })
    .unwrap_or_else(|| {
        panic!(
            "the standby never wrote; its log:\n{}",
            second.proc.log_text()
        )
    });
    let took = second_wrote.sent.saturating_duration_since(killed);
    assert!(
        took <= TAKEOVER,
        "the standby wrote {took:?} after the leader died (bound {TAKEOVER:?})"
    );
    let second_lease = second.wait_lease(&tools, "leader", |l| role(l) == "leader");
    assert!(
        second_lease["epoch"]
            .as_str()
            .and_then(|e| e.parse::<u64>().ok())
            > first_lease["epoch"]
                .as_str()
                .and_then(|e| e.parse::<u64>().ok()),
        "a new epoch: {second_lease} after {first_lease}"
    );
    // Its desired state now, whole: the first planner's names go with it.
    wait_dig(
        &format!("b0.{base}"),
        &["10.2.9.9"],
        "the new leader writes",
    );
    wait_dig(&shared[0], &["10.2.0.0"], "the new leader writes");
    wait_dig(
        &only_first[0],
        &[],
        "the new leader deletes what it does not desire",
    );

    // The provider's log: every PATCH of the first planner was answered before any of
    // the second's was sent, and none of the second's went out while the first lived.
    let patches = proxy.patches();
    let (firsts, seconds): (Vec<&Patch>, Vec<&Patch>) =
        patches.iter().partition(|p| writer(p) == Writer::First);
    assert!(!firsts.is_empty() && !seconds.is_empty());
    let first_done = firsts.iter().map(|p| p.answered).max().expect("some");
    let second_start = seconds.iter().map(|p| p.sent).min().expect("some");
    assert!(
        first_done < second_start,
        "the two planners' writes overlap: the first's last ended {:?} after the second's first began",
        first_done - second_start
    );
    assert!(
        second_start > killed,
        "the second wrote while the first lived"
    );
    eprintln!(
        "lease: {} PATCHes by the first planner, {} by the second; the second's first write \
         {took:?} after kill -9 of the first, {:?} after the first's last write ended",
        firsts.len(),
        seconds.len(),
        second_start - first_done
    );
    assert!(patches.iter().all(|p| p.status < 300), "{patches:?}");

    // The applier's log agrees: the first planner's batches, then the second's, and
    // no one else's.
    let ids = applier_batches(&applier.log_text());
    let (run1, run2) = (run_of(&first_id), run_of(&second_id));
    let runs: Vec<String> = ids
        .iter()
        .map(|id| {
            let rest = id.strip_prefix(&format!("{zone}-")).expect("zone prefix");
            rest.split('-').next().unwrap_or("").to_string()
        })
        .collect();
    let switch = runs
        .iter()
        .position(|r| *r == run2)
        .expect("second's batches");
    assert!(switch > 0, "{ids:?}");
    assert!(runs[..switch].iter().all(|r| *r == run1), "{ids:?}");
    assert!(runs[switch..].iter().all(|r| *r == run2), "{ids:?}");

    // Fencing: a batch the first planner had sent under its epoch and that reaches the
    // applier only now (a zombie) is not attempted: the second's batches came with a
    // later epoch.
    let epoch = |l: &Value| l["epoch"].as_str().and_then(|e| e.parse::<u64>().ok());
    let zombie = dnsplane_common::Change::new(
        dnsplane_common::ChangeKind::Create,
        vec![dnsplane_common::RRSetOp::create(
            dnsplane_common::RRSet::new(
                dnsplane_common::RecordKey::new(
                    pdns.zone.clone(),
                    dnsplane_common::Name::parse(&only_first[0]).expect("name"),
                    dnsplane_common::RecordType::A,
                ),
                60,
                &["10.1.1.0"],
            )
            .expect("rrset"),
        )],
    );
    let before = proxy.patches().len();
    let results = send_batch(
        applier_port,
        dnsplane_common::pb::Batch {
            batch_id: format!("{zone}-{run1}-zombie-0"),
            account: "pdns".into(),
            zone: zone.clone(),
            changes: vec![(&zombie).into()],
            owner: "e2e".into(),
            lease_epoch: epoch(&first_lease).expect("first epoch"),
            ..Default::default()
        },
    );
    assert_eq!(
        results[0].outcome(),
        dnsplane_common::pb::Outcome::Deferred,
        "{results:?}"
    );
    assert_eq!(proxy.patches().len(), before, "the zombie reached PowerDNS");
    assert!(dig(&only_first[0]).is_empty());
    drop(applier);
}
