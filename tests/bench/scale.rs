//! Planner at scale (issue 8): for worlds of 10k, 100k and 1M records across 100 zones
//! on the embedded provider, prints
//! - the full plan time (desired vs current, one thread), for a converged world and
//!   for an empty provider (every record a create);
//! - the planner's resident memory per record once it holds the desired and the
//!   observed state (the applier runs as its own process, so it is not counted);
//! - the latency from a one-record change in a source to `APPLIED`.
//!
//! Run: `cargo build --release --bins && cargo bench -p dnsplane-e2e --bench scale`
//! (`-- 10000 100000` for a subset of sizes). `-- 200000 targets=3` serves every zone
//! from three accounts at once (issue 33: three targets per zone sharing one desired
//! state), and adds the no-op sync of every target.
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
use dnsplane_planner::config::{BatchConfig, PlannerConfig, SyncConfig, ZoneConfig};
use dnsplane_planner::engine::{Engine, Scope};
use dnsplane_planner::metrics::PlannerMetrics;
use dnsplane_planner::observed::ZoneView;
use dnsplane_planner::ownership;
use dnsplane_planner::plan::plan_zone;
use dnsplane_planner::source::{DesiredEntry, Origin};
use std::time::{Duration, Instant, SystemTime};

/// The allocator of the `dnsplane-planner` binary, with its settings (`main` applies
/// them), so that RSS is what the deployed planner's would be.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ZONES: usize = 100;
const OWNER: &str = "bench";

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn zone_name(z: usize) -> Name {
    Name::parse(&format!("z{z}.bench.test")).expect("zone")
}

fn entries(z: usize, per_zone: usize) -> Vec<DesiredEntry> {
    (0..per_zone)
        .map(|i| DesiredEntry {
            name: Name::parse(&format!("r{i}.z{z}.bench.test")).expect("name"),
            rtype: RecordType::A,
            ttl: Some(300),
            values: vec![format!("10.{}.{}.{}", z % 250, (i / 250) % 250, i % 250)],
            set: dnsplane_common::SetId::NONE,
            properties: Vec::new(),
            labels: Default::default(),
            origin: Origin {
                source: "push:bench".into(),
                location: format!("records[{i}]").into(),
                resource: format!("push/bulk-{z}").into(),
            },
        })
        .collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

struct Applier(std::process::Child);
impl Drop for Applier {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Seeds the embedded provider with the world (records and their ownership records, as
/// dnsplane would have written them). Runs in a child process of the bench, so that
/// what it allocates does not sit in the bench's heap and blur the planner's RSS.
fn seed(state: &std::path::Path, per_zone: usize) {
    let store = dnsplane_applier::MemoryStore::open(state).expect("store");
    let zones: Vec<Name> = (0..ZONES).map(zone_name).collect();
    store.ensure_zones(&zones).expect("zones");
    for (z, zone) in zones.iter().enumerate() {
        let mut ops = Vec::with_capacity(per_zone * 2);
        for e in entries(z, per_zone) {
            let key = RecordKey::new(zone.clone(), e.name.clone(), e.rtype);
            let rr = RRSet::from_canonical(key.clone(), 300, e.values).expect("rrset");
            ops.push(RRSetOp::create(
                ownership::owner_record(&key, OWNER, &e.origin.resource).expect("owner"),
            ));
            ops.push(RRSetOp::create(rr));
        }
        store.apply(zone, &ops).expect("seed");
    }
}

/// The applier's accounts: `embedded`, or `embedded-<i>` for each of `targets`.
fn accounts(targets: usize) -> Vec<String> {
    if targets == 1 {
        vec!["embedded".into()]
    } else {
        (0..targets).map(|i| format!("embedded-{i}")).collect()
    }
}

/// Seeds the world (in a child process) once per account and starts the applier
/// process on them.
fn start_applier(dir: &std::path::Path, per_zone: usize, targets: usize) -> (Applier, u16) {
    let zones: Vec<Name> = (0..ZONES).map(zone_name).collect();
    let zones_toml: Vec<String> = zones.iter().map(|z| format!("\"{z}\"")).collect();
    let mut config_text = "max_concurrent_batches = 8\n".to_string();
    for account in accounts(targets) {
        let state = dir.join(format!("state-{account}"));
        let seeded = std::process::Command::new(std::env::current_exe().expect("exe"))
            .env(
                "DNSPLANE_BENCH_SEED",
                format!("{}|{per_zone}", state.display()),
            )
            .status()
            .expect("seed");
        assert!(seeded.success(), "seeding failed");
        config_text.push_str(&format!(
            "[[accounts]]\nname = \"{account}\"\ndriver = \"memory\"\nzones = [{}]\nstate_dir = \"{}\"\n",
            zones_toml.join(", "),
            state.display()
        ));
    }
    let port = free_port();
    let config = dir.join("applier.toml");
    std::fs::write(&config, config_text).expect("config");
    let exe = std::env::current_exe().expect("exe");
    let bin = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target dir")
        .join("dnsplane-applier");
    assert!(
        bin.exists(),
        "{} missing: run `cargo build --release --bins` first",
        bin.display()
    );
    let child = std::process::Command::new(bin)
        .args([
            "--config",
            config.to_str().expect("utf8"),
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .env("DNSPLANE_LOG", "warn")
        .spawn()
        .expect("spawn applier");
    (Applier(child), port)
}

fn config(port: u16, targets: usize) -> PlannerConfig {
    PlannerConfig {
        owner_id: OWNER.into(),
        applier: format!("http://127.0.0.1:{port}"),
        sync: SyncConfig {
            interval: Duration::from_secs(3600),
            // Measured without the source debounce (default 500 ms), which is a knob.
            min_interval: Duration::from_millis(0),
            ..SyncConfig::default()
        },
        batch: BatchConfig::default(),
        ..PlannerConfig::with_zones(
            (0..ZONES)
                .map(|z| ZoneConfig {
                    account: String::new(),
                    accounts: accounts(targets),
                    ..ZoneConfig::new(zone_name(z), "")
                })
                .collect(),
        )
    }
}

struct Row {
    records: usize,
    targets: usize,
    /// One sync of every target with nothing to do (serials unchanged: planned
    /// against the kept views).
    noop_sync: Duration,
    initial_sync: Duration,
    plan_converged: Duration,
    plan_empty: Duration,
    bytes_per_record: f64,
    latency_p50: Duration,
    latency_p90: Duration,
}

fn run(records: usize, targets: usize, rt: &tokio::runtime::Runtime) -> Row {
    let per_zone = records / ZONES;
    let dir = tempfile::tempdir().expect("tempdir");
    let (_applier, port) = start_applier(dir.path(), per_zone, targets);
    let baseline = rss_bytes();
    let engine = rt.block_on(async {
        Engine::new(
            config(port, targets),
            PlannerMetrics::unregistered(),
            dnsplane_planner::lease::LeaseHandle::sole_writer(),
        )
        .expect("engine")
    });
    for z in 0..ZONES {
        engine.set_source(&format!("bulk-{z}"), entries(z, per_zone), vec![]);
    }
    // Wait for the applier, then let the zone loops do their initial full sync.
    let cancel = tokio_util::sync::CancellationToken::new();
    let started = Instant::now();
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(Instant::now() < deadline, "applier did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    rt.block_on(async { engine.start(cancel.clone()) });
    loop {
        let done = engine
            .snapshot()
            .zones
            .iter()
            .all(|z| z.status.initial_sync_done);
        if done {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let initial_sync = started.elapsed();
    let bytes_per_record = (rss_bytes().saturating_sub(baseline)) as f64 / records as f64;

    // Full plan time, one thread: converged world, then an empty provider.
    let zones: Vec<Name> = engine.zone_names().cloned().collect();
    let t = Instant::now();
    let mut changes = 0;
    for zone in &zones {
        changes += engine
            .with_zone(zone, |cfg, desired, view| {
                plan_zone(cfg, OWNER, desired, view.expect("observed"))
                    .changes
                    .len()
            })
            .expect("zone");
    }
    let plan_converged = t.elapsed();
    assert_eq!(changes, 0, "the world was seeded converged");
    let nothing = ZoneView::default();
    let t = Instant::now();
    for zone in &zones {
        changes += engine
            .with_zone(zone, |cfg, desired, _| {
                plan_zone(cfg, OWNER, desired, &nothing).changes.len()
            })
            .expect("zone");
    }
    let plan_empty = t.elapsed();
    assert_eq!(changes, records);

    // The no-op sync: every target once, nothing changed (each asks its serial and
    // plans against its kept view).
    let all: Vec<_> = engine.targets().cloned().collect();
    assert_eq!(all.len(), ZONES * targets);
    let t = Instant::now();
    rt.block_on(async {
        for target in &all {
            let done = engine
                .sync(target, &Scope::Zone, false, None)
                .await
                .expect("no-op sync");
            assert_eq!(done.planned, 0, "{target}: the world was converged");
        }
    });
    let noop_sync = t.elapsed();

    // One-record change in a source → APPLIED.
    let mut lat = Vec::new();
    for i in 0..30u32 {
        let entry = DesiredEntry {
            name: Name::parse("probe.z0.bench.test").expect("name"),
            rtype: RecordType::A,
            ttl: Some(60),
            values: vec![format!("192.0.2.{}", i % 250)],
            set: dnsplane_common::SetId::NONE,
            properties: Vec::new(),
            labels: Default::default(),
            origin: Origin {
                source: "push:probe".into(),
                location: "records[0]".into(),
                resource: "push/probe".into(),
            },
        };
        let key = RecordKey::new(zone_name(0), entry.name.clone(), RecordType::A);
        let t0 = SystemTime::now();
        let start = Instant::now();
        engine.set_source("probe", vec![entry], vec![]);
        loop {
            let done = engine
                .converged_at(&zone_name(0), &key)
                .is_some_and(|t| t >= t0);
            if done {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "probe never converged"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        lat.push(start.elapsed());
    }
    cancel.cancel();
    lat.sort();
    Row {
        records,
        targets,
        noop_sync,
        initial_sync,
        plan_converged,
        plan_empty,
        bytes_per_record,
        latency_p50: lat[lat.len() / 2],
        latency_p90: lat[lat.len() * 9 / 10],
    }
}

fn main() {
    dnsplane_common::allocator::apply_settings();
    if let Ok(spec) = std::env::var("DNSPLANE_BENCH_SEED") {
        let (dir, per_zone) = spec.rsplit_once('|').expect("dir|per_zone");
        seed(
            std::path::Path::new(dir),
            per_zone.parse().expect("per_zone"),
        );
        return;
    }
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect::<Vec<_>>();
    let targets: usize = std::env::args()
        .filter_map(|a| a.strip_prefix("targets=")?.parse().ok())
        .next()
        .unwrap_or(1);
    let sizes = if sizes.is_empty() {
        vec![10_000, 100_000, 1_000_000]
    } else {
        sizes
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "| records | zones | targets per zone | initial read + sync | full plan, converged | full plan, from empty | no-op sync, every target | planner RSS / record | one-record change → APPLIED (p50 / p90) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in sizes {
        let r = run(n, targets, &rt);
        println!(
            "| {} | {ZONES} | {} | {:.2} s | {:.1} ms | {:.1} ms | {:.1} ms | {:.0} B | {:.1} ms / {:.1} ms |",
            r.records,
            r.targets,
            r.initial_sync.as_secs_f64(),
            r.plan_converged.as_secs_f64() * 1e3,
            r.plan_empty.as_secs_f64() * 1e3,
            r.noop_sync.as_secs_f64() * 1e3,
            r.bytes_per_record,
            r.latency_p50.as_secs_f64() * 1e3,
            r.latency_p90.as_secs_f64() * 1e3,
        );
    }
}
