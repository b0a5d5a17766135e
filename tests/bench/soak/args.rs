//! The soak's settings: flags, each also read from `DNSPLANE_SOAK_<FLAG>` (e.g.
//! `DNSPLANE_SOAK_DURATION=90s`) so CI can size a run without editing a command line.
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Args {
    pub duration: Duration,
    pub records: usize,
    pub zones: usize,
    pub files: usize,
    pub kill_interval: Duration,
    pub restart_after: Duration,
    pub source_interval: Duration,
    /// Fraction of the records one rewrite changes.
    pub churn: f64,
    /// Fraction of the records other writers take.
    pub foreign: f64,
    pub seed: u64,
    /// Bound of the wait for convergence, at the start and at the end.
    pub settle: Duration,
    pub batch: usize,
    pub sync_interval: Duration,
    pub retry_max: Duration,
    /// Per-call fault probabilities.
    pub p502: f64,
    pub p503: f64,
    pub ptimeout: f64,
    pub timeout_delay: Duration,
    /// Planner replicas: 1 (no lease backend), or 2 sharing a Redis lease, each with
    /// its own state dir, the leader killed every `failover_interval`.
    pub planners: usize,
    pub failover_interval: Duration,
    /// Failover mode: a `PatchDesired` of `push_size` changes every `push_interval`.
    pub push_interval: Duration,
    pub push_size: usize,
    /// Keep the temp dirs (configs, logs, source) even when the run passes.
    pub keep: bool,
}

const FLAGS: &[(&str, &str)] = &[
    ("--duration", "10m"),
    ("--records", "10000"),
    ("--zones", "4"),
    ("--files", "20"),
    ("--kill-interval", "60s"),
    ("--restart-after", "5s"),
    ("--source-interval", "20s"),
    ("--churn", "0.02"),
    ("--foreign", "0.01"),
    ("--seed", "1"),
    ("--settle", "5m"),
    ("--batch", "200"),
    ("--sync-interval", "15s"),
    ("--retry-max", "5s"),
    ("--p502", "0.05"),
    ("--p503", "0.05"),
    ("--ptimeout", "0.02"),
    ("--timeout-delay", "2s"),
    ("--planners", "1"),
    ("--failover-interval", "2m"),
    ("--push-interval", "5s"),
    ("--push-size", "20"),
];

pub fn parse() -> Args {
    let mut values: Vec<(String, String)> = FLAGS
        .iter()
        .map(|(f, d)| {
            let env = format!(
                "DNSPLANE_SOAK_{}",
                f.trim_start_matches('-').replace('-', "_").to_uppercase()
            );
            (
                f.to_string(),
                std::env::var(env).unwrap_or_else(|_| d.to_string()),
            )
        })
        .collect();
    let mut keep = std::env::var("DNSPLANE_SOAK_KEEP").is_ok_and(|v| v == "1");
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "-h" | "--help" => usage(""),
            "--keep" => keep = true,
            f => {
                let Some(slot) = values.iter_mut().find(|(k, _)| k == f) else {
                    usage(&format!("unknown argument {f:?}"))
                };
                slot.1 = it
                    .next()
                    .unwrap_or_else(|| usage(&format!("{f} needs a value")));
            }
        }
    }
    let get = |f: &str| -> &str { &values.iter().find(|(k, _)| k == f).expect("a known flag").1 };
    let dur = |f: &str| {
        humantime::parse_duration(get(f))
            .unwrap_or_else(|e| usage(&format!("{f} {:?}: {e}", get(f))))
    };
    let num = |f: &str| -> f64 {
        get(f)
            .parse()
            .unwrap_or_else(|_| usage(&format!("{f} {:?}: not a number", get(f))))
    };
    let a = Args {
        duration: dur("--duration"),
        records: num("--records") as usize,
        zones: num("--zones") as usize,
        files: num("--files") as usize,
        kill_interval: dur("--kill-interval"),
        restart_after: dur("--restart-after"),
        source_interval: dur("--source-interval"),
        churn: num("--churn"),
        foreign: num("--foreign"),
        seed: num("--seed") as u64,
        settle: dur("--settle"),
        batch: num("--batch") as usize,
        sync_interval: dur("--sync-interval"),
        retry_max: dur("--retry-max"),
        p502: num("--p502"),
        p503: num("--p503"),
        ptimeout: num("--ptimeout"),
        timeout_delay: dur("--timeout-delay"),
        planners: num("--planners") as usize,
        failover_interval: dur("--failover-interval"),
        push_interval: dur("--push-interval"),
        push_size: num("--push-size") as usize,
        keep,
    };
    if a.records < 10 || a.zones == 0 || a.files == 0 || a.files > a.records {
        usage("need --records >= 10, --zones >= 1 and 1 <= --files <= --records");
    }
    if !(1..=2).contains(&a.planners) || a.push_size == 0 {
        usage("need --planners 1 or 2 and --push-size >= 1");
    }
    a
}

fn usage(problem: &str) -> ! {
    if !problem.is_empty() {
        eprintln!("dnsplane-bench-soak: {problem}");
    }
    let flags: Vec<String> = FLAGS.iter().map(|(f, d)| format!("[{f} {d}]")).collect();
    eprintln!(
        "usage: dnsplane-bench-soak {} [--keep]\n(each flag also as DNSPLANE_SOAK_<FLAG>, e.g. DNSPLANE_SOAK_DURATION=90s)",
        flags.join(" ")
    );
    std::process::exit(2)
}
