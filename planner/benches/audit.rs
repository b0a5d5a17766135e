//! What the audit trail costs per record change: building the events of a batch (an
//! attempt and an outcome per change) and recording them, as the engine does, with
//! - the log at `info` in JSON to a sink (the default, `DNSPLANE_LOG` unset, with
//!   `DNSPLANE_LOG_FORMAT=json`), and the JSONL audit file off or on;
//! - `DNSPLANE_LOG=info,dnsplane::audit=off` (audit events out of the log).
//!
//! ```text
//! cargo bench -p dnsplane-planner --bench audit -- 100000
//! ```
//! Prints µs per change and what a first sync of a million records would spend.
use dnsplane_common::{Change, ChangeKind, Name, Outcome, RRSet, RRSetOp, RecordKey, RecordType};
use dnsplane_planner::audit::{ATTEMPT, AuditEvent, AuditFile, AuditTrail, Origin};
use dnsplane_planner::metrics::PlannerMetrics;
use std::time::{Duration, Instant};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{EnvFilter, Registry};

const BATCH: usize = 1_000;

fn change(i: usize) -> Change {
    let zone = Name::parse("example.com").expect("zone");
    let key = RecordKey::new(
        zone.clone(),
        zone.prepend(&format!("h{i}")).expect("name"),
        RecordType::A,
    );
    let after = RRSet::new(key, 300, &["192.0.2.1"]).expect("rrset");
    Change::new(ChangeKind::Create, vec![RRSetOp::create(after)])
}

/// Records the attempt and the outcome of `changes` in batches; the time taken.
fn run(trail: &AuditTrail, changes: &[Change]) -> Duration {
    let origin = Origin {
        source: "file:0".into(),
        caller: String::new(),
    };
    let start = Instant::now();
    for batch in changes.chunks(BATCH) {
        let attempts: Vec<AuditEvent> = batch
            .iter()
            .map(|c| AuditEvent::of_change(ATTEMPT, c, &origin))
            .collect();
        trail.record(&attempts);
        let outcomes: Vec<AuditEvent> = attempts
            .into_iter()
            .map(|e| e.outcome(Outcome::Applied, ""))
            .collect();
        trail.record(&outcomes);
    }
    start.elapsed()
}

fn subscriber(filter: &str) -> impl tracing::Subscriber + Send + Sync {
    Registry::default().with(
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::sink)
            .with_filter(EnvFilter::new(filter)),
    )
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100_000);
    let changes: Vec<Change> = (0..n).map(change).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    println!("| log | audit file | per change | a first sync of 1M records |");
    println!("|---|---|---:|---:|");
    for (log, filter, file) in [
        ("info, JSON", "info", false),
        ("info, JSON", "info", true),
        ("`dnsplane::audit=off`", "info,dnsplane::audit=off", false),
        ("`dnsplane::audit=off`", "info,dnsplane::audit=off", true),
    ] {
        let trail = AuditTrail::new(PlannerMetrics::unregistered());
        if file {
            let path = dir.path().join(format!("audit-{filter}.jsonl"));
            // Rotated at 100 MiB, as an operator would set it.
            trail.attach(AuditFile::open(&path, 100 << 20, 3).expect("audit file"));
        }
        let took = tracing::subscriber::with_default(subscriber(filter), || run(&trail, &changes));
        let per = took.as_secs_f64() / n as f64;
        println!(
            "| {log} | {} | {:.2} µs | {:.1} s |",
            if file { "on" } else { "off" },
            per * 1e6,
            per * 1e6,
        );
    }
}
