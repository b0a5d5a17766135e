//! DNS as code at 100,000 records (issue 31), on the embedded provider, with the
//! release binaries as a user runs them (planner, applier and the `dnsplane` CLI as
//! separate processes over gRPC on loopback). Prints
//! - `dnsplane import` of a live zone of N unowned records (A, AAAA, TXT, MX, CNAME)
//!   into DNSEndpoint files, wall time of the command;
//! - `dnsplane adopt` of all of them once the planner reads the files;
//! - `dnsplane plan --desired DIR` of the imported directory against the converged
//!   zone (reading and checking N records, sending them, planning, answering), with
//!   no change and with one.
//!
//! Run: `cargo build --release --bins && cargo bench -p dnsplane-e2e --bench dns_as_code`
//! (`-- 10000` for another size). Goal: each ≤ 5 s at 100,000 records.
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const ZONE: &str = "bench.test.";

struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("exe");
    let bin = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target dir")
        .join(name);
    assert!(
        bin.exists(),
        "{} missing: run `cargo build --release --bins` first",
        bin.display()
    );
    bin
}

/// Record `i` of the live zone: a mix of the types a real zone holds.
fn record(zone: &Name, i: usize) -> RRSet {
    let name = Name::parse(&format!("h{i}.{ZONE}")).expect("name");
    let (rtype, value) = match i % 5 {
        0 => (
            RecordType::A,
            format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255),
        ),
        1 => (
            RecordType::Aaaa,
            format!("2001:db8::{:x}:{:x}", i >> 16, i & 0xffff),
        ),
        2 => (RecordType::Txt, format!("\"site-verification={i:08}\"")),
        3 => (RecordType::Mx, format!("10 mx{}.{ZONE}", i % 7)),
        _ => (RecordType::Cname, format!("target{}.example.net.", i % 97)),
    };
    let key = RecordKey::new(zone.clone(), name, rtype);
    RRSet::new(key, 300, &[value.as_str()]).expect("rrset")
}

fn seed(state: &Path, n: usize) {
    let zone = Name::parse(ZONE).expect("zone");
    let store = dnsplane_applier::MemoryStore::open(state).expect("store");
    store
        .ensure_zones(std::slice::from_ref(&zone))
        .expect("zone");
    let ops: Vec<RRSetOp> = (0..n).map(|i| RRSetOp::create(record(&zone, i))).collect();
    store.apply(&zone, &ops).expect("seed");
}

fn wait_serving(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "port {port} never served");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn planner_toml(dir: &Path, applier: u16, source: &Path) {
    std::fs::write(
        dir.join("planner.toml"),
        format!(
            "owner_id = \"bench\"\napplier = \"http://127.0.0.1:{applier}\"\n\
             [sync]\ninterval = \"1h\"\nmin_interval = \"0s\"\n\
             [[zones]]\nname = \"{ZONE}\"\naccount = \"embedded\"\nconflict = \"report\"\n\
             [[sources]]\ntype = \"file\"\npaths = [\"{}\"]\n",
            source.display()
        ),
    )
    .expect("planner.toml");
}

fn start_planner(dir: &Path, port: u16) -> Proc {
    let child = Command::new(bin("dnsplane-planner"))
        .args([
            "--config",
            "planner.toml",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--admin-listen", "off"])
        .current_dir(dir)
        .env("DNSPLANE_LOG", "warn,dnsplane_planner::service=info")
        .spawn()
        .expect("planner");
    wait_serving(port);
    Proc(child)
}

/// Runs `dnsplane ARGS --addr …`; returns (seconds, stdout), asserting `want` exit.
fn cli(port: u16, args: &[&str], want: i32) -> (f64, String) {
    let start = Instant::now();
    let out = Command::new(bin("dnsplane"))
        .args(args)
        .args(["--addr", &format!("http://127.0.0.1:{port}")])
        .output()
        .expect("dnsplane");
    let secs = start.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(want),
        "dnsplane {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (secs, text)
}

/// Waits until `dnsplane status -o json` shows the zone's `n` desired records and its
/// first sync done.
fn wait_read(port: u16, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let out = Command::new(bin("dnsplane"))
            .args([
                "status",
                "-o",
                "json",
                "--addr",
                &format!("http://127.0.0.1:{port}"),
            ])
            .output()
            .expect("dnsplane status");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let z = &v["zones"][0];
        if z["desired_records"] == n && z["initial_sync_done"] == true {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the planner never read {n} records"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits until `dnsplane plan -o json` says `changes` and `blocked` are as given.
fn wait_plan(port: u16, changes: usize, blocked: usize) {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let (_, out) = cli(port, &["plan", "-o", "json"], 0);
        let v: serde_json::Value = serde_json::from_str(&out).expect("plan json");
        if v["changes"] == changes && v["blocked"] == blocked {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "plan never reached {changes}/{blocked}: {}",
            &out[..out.len().min(400)]
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("dir");
    let dir = dir.path();
    let state = dir.join("state");
    seed(&state, n);
    let applier_port = free_port();
    std::fs::write(
        dir.join("applier.toml"),
        format!(
            "[[accounts]]\nname = \"embedded\"\ndriver = \"memory\"\nzones = [\"{ZONE}\"]\nstate_dir = \"{}\"\n",
            state.display()
        ),
    )
    .expect("applier.toml");
    let _applier = Proc(
        Command::new(bin("dnsplane-applier"))
            .args([
                "--config",
                "applier.toml",
                "--listen",
                &format!("127.0.0.1:{applier_port}"),
            ])
            .args(["--admin-listen", "off"])
            .current_dir(dir)
            .env("DNSPLANE_LOG", "warn")
            .spawn()
            .expect("applier"),
    );
    wait_serving(applier_port);
    // First the planner reads a source that declares nothing (explicitly).
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).expect("dir");
    std::fs::write(
        empty.join("none.yaml"),
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {name: none}\nspec: {endpoints: []}\n",
    )
    .expect("empty source");
    planner_toml(dir, applier_port, &empty);
    let port = free_port();
    let planner = start_planner(dir, port);

    let out = dir.join("imported");
    let (import, text) = cli(
        port,
        &["import", ZONE, "--out", out.to_str().expect("utf8")],
        0,
    );
    assert!(text.contains(&format!("wrote {n} record(s)")), "{text}");

    drop(planner);
    planner_toml(dir, applier_port, &out);
    let started = Instant::now();
    let _planner = start_planner(dir, port);
    wait_read(port, n);
    let read = started.elapsed().as_secs_f64();
    let (adopt, text) = cli(port, &["adopt", ZONE], 0);
    assert!(text.contains(&format!("adopted {n} of {n}")), "{text}");
    wait_plan(port, 0, 0);

    let desired = out.to_str().expect("utf8");
    let (plan_same, text) = cli(port, &["plan", "--desired", desired, "-o", "json"], 0);
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(v["changes"], 0, "the imported files are the zone");
    // One record changed in a copy: one update.
    let edited = dir.join("edited");
    std::fs::create_dir(&edited).expect("dir");
    for f in std::fs::read_dir(&out).expect("read") {
        let f = f.expect("entry").path();
        let text = std::fs::read_to_string(&f).expect("read");
        std::fs::write(
            edited.join(f.file_name().expect("name")),
            text.replace("\"10.0.0.0\"", "\"10.0.0.1\""),
        )
        .expect("write");
    }
    let (plan_one, text) = cli(
        port,
        &[
            "plan",
            "--desired",
            edited.to_str().expect("utf8"),
            "-o",
            "json",
        ],
        0,
    );
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(v["changes"], 1, "one record edited");

    println!(
        "dns_as_code bench, {n} records (embedded provider, release binaries, 2-core machine):"
    );
    println!("  dnsplane import ZONE --out DIR            {import:.2} s");
    println!("  planner start + read of the imported DIR   {read:.2} s");
    println!("  dnsplane adopt ZONE                       {adopt:.2} s");
    println!("  dnsplane plan --desired DIR (no change)    {plan_same:.2} s");
    println!("  dnsplane plan --desired DIR (one change)   {plan_one:.2} s");
}
