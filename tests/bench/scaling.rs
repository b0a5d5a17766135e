//! `dnsplane-bench-scaling`: sync throughput with 1, 2 and 3 appliers (docs/scale.md).
//!
//! ```sh
//! cargo build --release --bins && target/release/dnsplane-bench-scaling
//! ```
//!
//! One private PowerDNS behind the quota proxy of the tests
//! (`tests/support/quota_proxy.rs`), which adds `--latency-ms` (20) to every API
//! request, as a cloud provider would, and enforces a write quota; one private Redis
//! holding the appliers' shared quota, set to the provider's. For each quota
//! (`--generous`, 1000 writes/s; `--tight`, 10 writes/s) and each pool size (1, 2, 3
//! appliers), it creates fresh zones (`--zones`, 48), starts the appliers and a
//! planner (`appliers = [...]`), pushes `--records` (50) A records per zone (the
//! tight quota: `--tight-records`, 5) and times the push until the planner reports
//! every record converged. A batch (`--batch`, 10 changes) is one PATCH.
//!
//! Each applier runs `max_concurrent_batches = --concurrency` (2), and every batch
//! takes a few round trips (the precondition read, then the PATCH): with a generous
//! quota an applier's concurrency over the provider's latency is the limit, so more
//! appliers go faster; with a tight one the quota is, and they must not. (A larger
//! concurrency moves the limit to PowerDNS itself: its sqlite backend answers
//! concurrent PATCHes with "database is locked", which the appliers retry.)
//!
//! It needs `pdns_server`, `redis-server` and the `dnsplane-planner` and
//! `dnsplane-applier` binaries next to its own (tests/run-all.sh installs the servers).
use dnsplane_e2e::quota_proxy::{ProxyOptions, QuotaProxy, rate};
use dnsplane_e2e::redis::Redis;
use dnsplane_e2e::scaling::{Cluster, ClusterOptions, QuotaToml, create_zones};
use dnsplane_e2e::servers::PowerDns;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Row {
    quota: f64,
    appliers: usize,
    records: usize,
    patches: usize,
    rejected: u64,
    time: Duration,
    patch_rate: f64,
    /// Zones per applier, as the planner routed them.
    split: String,
    /// Provider answers the appliers retried (PowerDNS's sqlite "database is
    /// locked", 429s), all appliers together.
    retried: u64,
}

struct Args {
    zones: usize,
    records: usize,
    tight_records: usize,
    batch: usize,
    latency_ms: u64,
    generous: f64,
    tight: f64,
    appliers: Vec<usize>,
    concurrency: usize,
}

fn main() {
    let args = parse_args();
    let bin_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        .expect("the benchmark's own directory");
    let pdns = PowerDns::start().unwrap_or_else(|| usage("PowerDNS is not installed"));
    let mut redis = Redis::start().unwrap_or_else(|| usage("redis-server is not installed"));
    let mut rows = Vec::new();
    for (quota, per_zone) in [
        (args.generous, args.records),
        (args.tight, args.tight_records),
    ] {
        for &n in &args.appliers {
            // A fresh Redis (an empty bucket) and fresh zones for every run.
            redis.restart();
            let tag = format!("{}{n}-", if quota == args.generous { "g" } else { "t" });
            let zones = create_zones(&pdns, &tag, args.zones);
            let proxy = QuotaProxy::start(
                &pdns.api_url(),
                ProxyOptions {
                    write_rate: quota,
                    write_burst: quota.max(1.0),
                    latency: Duration::from_millis(args.latency_ms),
                    retry_after_secs: 1,
                    all_requests: false,
                },
            );
            let cluster = Cluster::start(
                &pdns,
                &proxy.url(),
                &zones,
                ClusterOptions {
                    appliers: n,
                    quota: Some(QuotaToml {
                        rate: quota,
                        burst: (quota / 10.0).ceil().max(1.0) as u32,
                        redis: Some(redis.url()),
                        replicas: n as u32,
                    }),
                    batch_max_changes: args.batch,
                    max_concurrent_batches: args.concurrency,
                    bin_dir: bin_dir.clone(),
                    log_filter: "warn".into(),
                    ..ClusterOptions::default()
                },
            );
            // The planner's first read of every zone, before the clock starts.
            let ready = dnsplane_e2e::wait_for(Duration::from_secs(120), || {
                let st = cluster.planner_status();
                (st.zones.len() == zones.len() && st.zones.iter().all(|z| z.initial_sync_done))
                    .then_some(())
            });
            assert!(ready.is_some(), "initial sync not done; {}", cluster.logs());
            let mut split: Vec<u32> = cluster
                .planner_status()
                .appliers
                .iter()
                .map(|a| a.zones)
                .collect();
            split.sort_unstable_by(|a, b| b.cmp(a));
            let records = cluster.records("r", per_zone);
            let total = records.len();
            let before = proxy.counts();
            let t0 = Instant::now();
            let pushed = std::time::SystemTime::now();
            cluster.push("bench", records);
            loop {
                if cluster.converged_since(total as u64, pushed) {
                    break;
                }
                assert!(
                    t0.elapsed() < Duration::from_secs(600),
                    "not converged after 10 min; {}",
                    cluster.logs()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            let time = t0.elapsed();
            let counts = proxy.counts();
            let writes = counts.writes_since(t0);
            let retried = (0..n)
                .filter_map(|i| cluster.applier_status(i))
                .flat_map(|st| st.accounts)
                .flat_map(|a| a.calls_by_class)
                .filter(|(class, _)| class != "success")
                .map(|(_, v)| v)
                .sum();
            let row = Row {
                quota,
                appliers: n,
                records: total,
                patches: writes.len(),
                rejected: counts.rejected - before.rejected,
                time,
                patch_rate: rate(&writes),
                split: split
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("/"),
                retried,
            };
            eprintln!("{row:?}");
            rows.push(row);
        }
    }
    println!(
        "\n{} zones, {} ms provider latency, batches of {} changes (one PATCH each), {} concurrent batches per applier\n",
        args.zones, args.latency_ms, args.batch, args.concurrency
    );
    println!(
        "| provider write quota | appliers | zones per applier | records | PATCH | retried | 429 | time | records/s | PATCH/s |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {}/s | {} | {} | {} | {} | {} | {} | {:.2} s | {:.0} | {:.1} |",
            r.quota,
            r.appliers,
            r.split,
            r.records,
            r.patches,
            r.retried,
            r.rejected,
            r.time.as_secs_f64(),
            r.records as f64 / r.time.as_secs_f64(),
            r.patch_rate
        );
    }
}

fn parse_args() -> Args {
    let mut a = Args {
        zones: 48,
        records: 50,
        tight_records: 5,
        batch: 10,
        latency_ms: 20,
        generous: 1000.0,
        tight: 10.0,
        appliers: vec![1, 2, 3],
        concurrency: 2,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        let num = |v: String| -> f64 {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("not a number: {v}")))
        };
        match flag.as_str() {
            "--zones" => a.zones = num(value()) as usize,
            "--records" => a.records = num(value()) as usize,
            "--tight-records" => a.tight_records = num(value()) as usize,
            "--batch" => a.batch = num(value()) as usize,
            "--latency-ms" => a.latency_ms = num(value()) as u64,
            "--generous" => a.generous = num(value()),
            "--tight" => a.tight = num(value()),
            "--concurrency" => a.concurrency = num(value()) as usize,
            "--appliers" => {
                a.appliers = value()
                    .split(',')
                    .map(|s| num(s.trim().to_string()) as usize)
                    .collect()
            }
            "-h" | "--help" => usage(""),
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    a
}

fn usage(problem: &str) -> ! {
    if !problem.is_empty() {
        eprintln!("dnsplane-bench-scaling: {problem}");
    }
    eprintln!(
        "usage: dnsplane-bench-scaling [--zones 48] [--records 50] [--tight-records 5] [--batch 10] \
         [--latency-ms 20] [--generous 1000] [--tight 10] [--appliers 1,2,3] [--concurrency 2]"
    );
    std::process::exit(2)
}
