//! The benchmark's flags.
use dnsplane_e2e::servers::Kind;
use dnsplane_emulate::cloudflare::Plan;

/// Every phase, in the order they run.
pub const PHASES: &[&str] = &[
    "create", "change", "noop", "oneshot", "conflict", "wrongkey", "quota", "pacing", "large",
    "rss",
];

#[derive(Clone, Debug)]
pub struct Args {
    pub phases: Vec<String>,
    pub records: usize,
    pub large: Vec<usize>,
    pub kinds: Vec<Kind>,
    pub batch: usize,
    /// One-record changes measured by `oneshot`.
    pub samples: usize,
    /// Records of the conflict-release phase.
    pub conflicts: usize,
    /// Skip the PowerDNS floor of the `large` phase (writing the same records into a
    /// fresh zone again: as long as the load itself at a million records).
    pub no_large_floor: bool,
    /// The Cloudflare emulator's plan, and the account's (`--cloudflare-plan`).
    pub cloudflare_plan: Plan,
}

impl Args {
    pub fn has(&self, phase: &str) -> bool {
        self.phases.iter().any(|p| p == phase)
    }
}

pub fn parse() -> Args {
    let mut a = Args {
        phases: PHASES.iter().map(|p| p.to_string()).collect(),
        records: 10_000,
        large: vec![200_000, 1_000_000],
        kinds: vec![Kind::Pdns, Kind::Bind],
        // The planner's own defaults.
        batch: 0,
        samples: 20,
        conflicts: 200,
        no_large_floor: false,
        cloudflare_plan: Plan::Pro,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        let num = |v: String, what: &str| -> usize {
            v.replace('_', "")
                .parse()
                .unwrap_or_else(|_| usage(&format!("{what}: not a number: {v:?}")))
        };
        match flag.as_str() {
            "--phases" => {
                a.phases = value().split(',').map(|p| p.trim().to_string()).collect();
                if let Some(bad) = a.phases.iter().find(|p| !PHASES.contains(&p.as_str())) {
                    usage(&format!("unknown phase {bad:?}"));
                }
            }
            "--records" => a.records = num(value(), "--records"),
            "--large" => {
                a.large = value()
                    .split(',')
                    .map(|v| num(v.trim().into(), "--large"))
                    .collect();
            }
            "--batch" => a.batch = num(value(), "--batch"),
            "--samples" => a.samples = num(value(), "--samples").max(1),
            "--conflicts" => a.conflicts = num(value(), "--conflicts").max(1),
            "--no-large-floor" => a.no_large_floor = true,
            "--cloudflare-plan" => {
                a.cloudflare_plan = match value().as_str() {
                    "free" => Plan::Free,
                    "pro" => Plan::Pro,
                    other => usage(&format!("--cloudflare-plan: free or pro, not {other:?}")),
                }
            }
            "--servers" => a.kinds = Kind::parse_list(&value()).unwrap_or_else(|e| usage(&e)),
            "-h" | "--help" => usage(""),
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    a
}

pub fn usage(problem: &str) -> ! {
    if !problem.is_empty() {
        eprintln!("dnsplane-bench-linear: {problem}");
    }
    eprintln!(
        "usage: dnsplane-bench-linear [--phases {}] [--records N] [--large N,N]\n\
         \x20      [--servers pdns,bind,route53,clouddns,cloudflare,azure] [--batch N] [--samples N]\n\
         \x20      [--conflicts N] [--no-large-floor] [--cloudflare-plan free|pro]\n\
         (build first: cargo build --release --bins; run target/release/dnsplane-bench-linear)",
        PHASES.join(",")
    );
    std::process::exit(if problem.is_empty() { 0 } else { 2 })
}
