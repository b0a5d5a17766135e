//! Issue 28, *fencing that cannot strand or be poisoned*. Reported: a 4-second second
//! planner (same `owner_id`, its own `state_dir`, no shared lease) won the epoch at
//! the applier, and from then on every batch of the production planner was refused
//! while its status said `healthy`; one `Apply` with the operator's `client.pem` and
//! `leaseEpoch` 2^64-1 locked out every planner of the owner until the appliers
//! restarted.
//!
//! The appliers keep, per owner, a *claim* (the writer's holder identity, its lease
//! epoch and backend, when it was last seen): a planner whose batches the claim of
//! another refuses is `fenced` (status failing, `dnsplane status` exit 2) and takes
//! over once the other has been silent for the lease ttl.
use super::{Planner, manifest, planner_toml, role, start_applier, text};
use crate::stack::Tools;
use dnsplane_e2e::servers::{PowerDns, dig_sorted};
use dnsplane_e2e::{Proc, binary, free_port, wait_for};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The lease ttl of these tests' planners: the time a silent writer keeps its claim.
const TTL: Duration = Duration::from_secs(3);

/// A PowerDNS zone and a plaintext applier in front of it.
struct Setup {
    tools: Tools,
    pdns: PowerDns,
    applier_port: u16,
    _applier: Proc,
    dir: tempfile::TempDir,
}

impl Setup {
    fn start() -> Option<Setup> {
        let tools = Tools::find()?;
        let pdns = PowerDns::start()?;
        let dir = tempfile::tempdir().expect("tempdir");
        let zone = pdns.zone.to_string();
        let (applier, applier_port) =
            start_applier(&tools, dir.path(), &zone, &pdns.api_url(), &pdns, &[]);
        Some(Setup {
            tools,
            pdns,
            applier_port,
            _applier: applier,
            dir,
        })
    }

    fn base(&self) -> String {
        self.pdns.zone.to_string().trim_end_matches('.').to_string()
    }

    /// A planner directory `name` (its own state dir, so its own lock-file lease) with
    /// `records` under the manifest `label`.
    fn planner_dir(
        &self,
        name: &str,
        label: &str,
        records: &[(String, String)],
    ) -> std::path::PathBuf {
        let pdir = self.dir.path().join(name);
        std::fs::create_dir_all(pdir.join("desired")).expect("dir");
        let extra = format!(
            "[lease]\nttl = \"{}ms\"\nretry_interval = \"500ms\"\n[safety]\nmax_change_fraction = 1.0\n",
            TTL.as_millis()
        );
        std::fs::write(
            pdir.join("planner.toml"),
            planner_toml(
                self.applier_port,
                &self.pdns.zone.to_string(),
                "pdns",
                &extra,
            ),
        )
        .expect("planner.toml");
        std::fs::write(
            pdir.join("desired").join("records.yaml"),
            manifest(label, records),
        )
        .expect("desired");
        pdir
    }

    fn dig(&self, name: &str) -> Vec<String> {
        dig_sorted(&self.tools.dig, self.pdns.dns_port, name, "A")
    }

    fn wait_dig(&self, name: &str, want: &[&str], what: &str, logs: &[&Planner]) {
        super::wait_dig_a(&self.tools, &self.pdns, (name, want), what, logs);
    }
}

fn records(base: &str, prefix: &str, net: &str, n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| (format!("{prefix}{i}.{base}"), format!("{net}.{i}")))
        .collect()
}

/// `dnsplane status` against a planner: (exit code, output).
fn status_cli(p: &Planner) -> (Option<i32>, String) {
    let out = std::process::Command::new(binary("dnsplane"))
        .args(["status", "--addr", &format!("http://127.0.0.1:{}", p.port)])
        .env("DNSPLANE_LOG", "warn")
        .output()
        .expect("run dnsplane");
    (out.status.code(), crate::stack::combined(&out))
}

fn signal(p: &Planner, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &p.proc.child.id().to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "kill {sig}");
}

fn epoch(lease: &Value) -> u64 {
    dnsplane_e2e::num(&lease["epoch"])
}

/// The reported case, made deterministic: the production planner is paused (a VM
/// pause, a stop signal) for longer than the lease ttl, a second planner of the same
/// owner with its own state dir writes meanwhile for a few seconds, then goes away.
/// The production planner must say it is fenced while the other writes, never write
/// then, and take over by itself once the other has been silent for the ttl.
#[test]
fn a_brief_second_planner_fences_the_production_one_only_while_it_writes() {
    let Some(s) = Setup::start() else { return };
    let base = s.base();
    let mut prod_records = records(&base, "p", "10.1.0", 5);
    let brief_records = records(&base, "p", "10.2.0", 5);
    let prod_dir = s.planner_dir("prod", "alpha", &prod_records);
    let brief_dir = s.planner_dir("brief", "beta", &brief_records);

    let prod = Planner::start("prod", &prod_dir);
    let first = prod.wait_lease(&s.tools, "leader", |l| role(l) == "leader");
    s.wait_dig(
        &format!("p4.{base}"),
        &["10.1.0.4"],
        "the production planner writes",
        &[&prod],
    );

    // Paused for longer than its ttl: its claim at the applier goes stale.
    signal(&prod, "-STOP");
    std::thread::sleep(TTL + Duration::from_secs(1));
    let mut brief = Planner::start("brief", &brief_dir);
    s.wait_dig(
        &format!("p0.{base}"),
        &["10.2.0.0"],
        "the brief planner writes",
        &[&brief],
    );
    signal(&prod, "-CONT");

    // Something for the production planner to send, while the other still writes.
    prod_records.push((format!("q0.{base}"), "10.1.9.9".into()));
    prod.write_desired(&manifest("alpha", &prod_records));
    let fenced = prod.wait_lease(&s.tools, "fenced", |l| role(l) == "fenced");
    let brief_id = brief
        .status(&s.tools)
        .map(|st| text(&st["lease"], "identity").to_string())
        .expect("brief status");
    assert_eq!(
        text(&fenced, "holder"),
        brief_id,
        "fenced by the brief one: {fenced}"
    );
    let st = prod.status(&s.tools).expect("status");
    assert_eq!(text(&st, "level"), "failing", "{st}");
    let (code, out) = status_cli(&prod);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("lease: fenced by epoch"), "{out}");
    assert!(out.contains(&brief_id), "names the other writer: {out}");
    // It stops sending: what it wants now does not reach the zone while fenced.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        s.dig(&format!("q0.{base}")).is_empty(),
        "a fenced planner wrote"
    );
    assert_eq!(s.dig(&format!("p0.{base}")), vec!["10.2.0.0".to_string()]);

    // The brief one goes away; after the ttl the production planner takes over by
    // itself, with a new epoch from its backend, says so, and converges.
    brief.proc.kill();
    let back = prod.wait_lease(&s.tools, "leader again", |l| role(l) == "leader");
    assert!(
        epoch(&back) > epoch(&first),
        "a new epoch: {back} after {first}"
    );
    s.wait_dig(
        &format!("q0.{base}"),
        &["10.1.9.9"],
        "the production planner writes again",
        &[&prod],
    );
    for (name, value) in &prod_records {
        s.wait_dig(
            name,
            &[value.as_str()],
            "the production planner converges",
            &[&prod],
        );
    }
    let (code, out) = status_cli(&prod);
    assert_ne!(code, Some(2), "{out}");
    let log = prod.proc.log_text();
    assert!(log.contains("Fenced by another planner"), "{log}");
    assert!(log.contains("Took over at the appliers"), "{log}");
}

/// Two planners of one owner with no shared lease backend, both running: the appliers
/// see two holders, serve the one that was there first, and refuse the other with a
/// message that names the fix.
#[test]
fn two_planners_without_a_shared_lease_are_refused_with_the_fix_named() {
    let Some(s) = Setup::start() else { return };
    let base = s.base();
    let mut first_records = records(&base, "p", "10.1.0", 5);
    let second_records = records(&base, "p", "10.2.0", 5);
    let first_dir = s.planner_dir("first", "alpha", &first_records);
    let second_dir = s.planner_dir("second", "beta", &second_records);

    let first = Planner::start("first", &first_dir);
    first.wait_lease(&s.tools, "leader", |l| role(l) == "leader");
    s.wait_dig(
        &format!("p4.{base}"),
        &["10.1.0.4"],
        "the first planner writes",
        &[&first],
    );
    let first_id = text(
        &first.status(&s.tools).expect("status")["lease"],
        "identity",
    )
    .to_string();

    let second = Planner::start("second", &second_dir);
    let fenced = second.wait_lease(&s.tools, "fenced", |l| role(l) == "fenced");
    assert_eq!(text(&fenced, "holder"), first_id, "{fenced}");
    let st = second.status(&s.tools).expect("status");
    assert_eq!(text(&st, "level"), "failing", "{st}");
    let (code, out) = status_cli(&second);
    assert_eq!(code, Some(2), "{out}");
    for fix in ["[lease] redis", "state_dir"] {
        assert!(out.contains(fix), "the fix ({fix}) is named: {out}");
    }
    // The first writes on; the second's values never reach the zone.
    first_records.push((format!("q0.{base}"), "10.1.9.9".into()));
    first.write_desired(&manifest("alpha", &first_records));
    s.wait_dig(
        &format!("q0.{base}"),
        &["10.1.9.9"],
        "the first planner writes on",
        &[&first, &second],
    );
    std::thread::sleep(TTL);
    for (name, value) in &first_records {
        assert_eq!(s.dig(name), vec![value.clone()], "{name}");
    }
    assert_eq!(
        first
            .status(&s.tools)
            .map(|st| text(&st["lease"], "role").to_string()),
        Some("leader".into())
    );
}

/// `up`'s operator certificate reads from the applier but cannot write: an `Apply`
/// with it (and the largest epoch there is) is refused, and the planner writes on.
#[test]
fn the_operator_certificate_cannot_poison_the_epoch() {
    let Some(tools) = Tools::find() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf();
    let dir = tempfile::tempdir().expect("tempdir");
    let desired = dir.path().join("desired");
    std::fs::create_dir_all(&desired).expect("dir");
    for f in std::fs::read_dir(root.join("deploy/examples/desired")).expect("examples") {
        let f = f.expect("entry").path();
        std::fs::copy(&f, desired.join(f.file_name().expect("name"))).expect("copy");
    }
    let (planner, applier, dns, admin) = (free_port(), free_port(), free_port(), free_port());
    let state = dir.path().join("s");
    let listen = [
        ("planner", planner),
        ("applier", applier),
        ("dns", dns),
        ("admin", admin),
    ];
    let _up = crate::up::spawn_up(&[], &desired, &listen, &state, dir.path().join("up.log"));
    let dig = |name: &str| dnsplane_e2e::dig(&tools.dig, dns, name, "A", false);
    wait_for(Duration::from_secs(60), || {
        (dig("www.example.com") == vec!["192.0.2.10".to_string()]).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "up never served www: {}",
            std::fs::read_to_string(dir.path().join("up.log")).unwrap_or_default()
        )
    });

    let tls_grpcurl = |args: &[&str]| {
        let out = std::process::Command::new(&tools.grpcurl)
            .arg("-cacert")
            .arg(state.join("ca.pem"))
            .arg("-cert")
            .arg(state.join("client.pem"))
            .arg("-key")
            .arg(state.join("client-key.pem"))
            .args(args)
            .output()
            .expect("grpcurl");
        (out.status.success(), crate::stack::combined(&out))
    };
    // The operator's certificate reads ...
    let (ok, out) = tls_grpcurl(&[
        &format!("127.0.0.1:{applier}"),
        "dnsplane.v1.Applier/GetStatus",
    ]);
    assert!(ok, "{out}");
    // ... but its batch is refused, whatever epoch it claims.
    let batch = serde_json::json!({
        "batch": {
            "batchId": "poison",
            "account": "embedded",
            "zone": "example.com.",
            "owner": "dnsplane",
            "leaseEpoch": "18446744073709551615",
            "changes": [{
                "id": "c0",
                "kind": "CHANGE_KIND_CREATE",
            }],
        }
    });
    let (ok, out) = tls_grpcurl(&[
        "-d",
        &batch.to_string(),
        &format!("127.0.0.1:{applier}"),
        "dnsplane.v1.Applier/Apply",
    ]);
    assert!(!ok, "the operator's Apply was served: {out}");
    assert!(out.contains("PermissionDenied"), "{out}");
    assert!(out.contains("writer_names"), "says why: {out}");

    // Nobody is locked out: the planner writes a change made after it.
    let web = desired.join("web.yaml");
    let text = std::fs::read_to_string(&web).expect("web.yaml");
    std::fs::write(&web, text.replacen("192.0.2.10", "192.0.2.99", 1)).expect("edit");
    wait_for(Duration::from_secs(40), || {
        (dig("www.example.com") == vec!["192.0.2.99".to_string()]).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the planner was locked out: {}",
            std::fs::read_to_string(dir.path().join("up.log")).unwrap_or_default()
        )
    });
}
