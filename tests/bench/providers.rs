//! `dnsplane-bench-providers`: the full stack (planner and applier processes) against
//! a private PowerDNS and a private BIND, as in `tests/e2e/real_providers.rs`, timed.
//! For each server it prints the wall time and the provider calls of three phases:
//! creating a zone of 10,000 records from empty, a 10% change (updates, deletes and
//! creates), and a sync that finds nothing to do.
//!
//! ```sh
//! cargo build --release --bins && target/release/dnsplane-bench-providers
//! ```
//!
//! Flags: `--records N` (default 10000), `--servers pdns,bind` (default both),
//! `--batch N` (the planner's `batch.max_changes`, default 1000). It uses the
//! `dnsplane-planner` and `dnsplane-applier` next to its own binary, `dig` from PATH
//! (or `$DNSPLANE_DIG`), and `pdns_server`/`named` as the tests do (tests/run-all.sh
//! installs them).
//!
//! A phase's time runs from pushing the desired state (gRPC `PutDesired`) to the end
//! of the `Sync` that applies it, as the planner reports it. Provider calls are the
//! applier's own count (`Applier.GetStatus`, every driver call: listings and writes);
//! "server serial +" is how far the zone's SOA serial moved, the server's own count of
//! the writes it committed (BIND: +1 per UPDATE; PowerDNS: +1 per PATCH once the serial
//! has its YYYYMMDDnn form).
use dnsplane_e2e::servers::stack::{Counters, Options, RealStack, Tools, workload};
use dnsplane_e2e::servers::{Kind, RealServer};
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Row {
    server: &'static str,
    phase: String,
    changes: usize,
    time: Duration,
    calls: Counters,
    serial_delta: u64,
}

fn main() {
    let mut records = 10_000usize;
    let mut batch = 1_000usize;
    let mut kinds = vec![Kind::Pdns, Kind::Bind];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--records" => records = value().parse().unwrap_or_else(|_| usage("--records N")),
            "--batch" => batch = value().parse().unwrap_or_else(|_| usage("--batch N")),
            "--servers" => kinds = Kind::parse_list(&value()).unwrap_or_else(|e| usage(&e)),
            "-h" | "--help" => usage(""),
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    let bin_dir = dnsplane_e2e::servers::own_dir();
    let dig = dnsplane_e2e::tool("DNSPLANE_DIG", "dig")
        .unwrap_or_else(|| usage("dig not found (Debian package bind9-dnsutils)"));
    // grpcurl is not used here (the stack's own gRPC client reads the counters).
    let tools = Tools {
        dig,
        grpcurl: "grpcurl".into(),
    };

    let mut rows = Vec::new();
    for kind in kinds {
        eprintln!("== {}: {records} records", kind.server());
        let server = RealServer::start(kind).unwrap_or_else(|| {
            usage(&format!(
                "{} is not installed (tests/run-all.sh installs it)",
                kind.server()
            ))
        });
        let opts = Options {
            batch_max_changes: batch,
            bin_dir: bin_dir.clone(),
            log_filter: "warn".into(),
            // Only the benchmark's own `Sync` calls sync: a push does not start one.
            min_interval: "1h".into(),
            ..Options::default()
        };
        let s = RealStack::start(server, tools.clone(), opts);
        s.wait_quiet();
        let zone = s.zone().clone();
        let initial = workload::initial(records);
        let (changed, counts) = workload::changed(records);
        let phases: [(String, Vec<workload::Rec>, usize, bool); 3] = [
            (format!("create {records} records"), initial, records, false),
            (
                format!(
                    "10% change ({} updates, {} deletes, {} creates)",
                    counts.updates, counts.deletes, counts.creates
                ),
                changed.clone(),
                counts.total(),
                false,
            ),
            ("no-op sync (fresh read)".to_string(), changed, 0, true),
        ];
        for (phase, recs, changes, fresh) in phases {
            let c0 = s.counters();
            let serial0 = s.soa_serial();
            let t0 = Instant::now();
            let accepted = s.push(recs.iter().map(|r| r.desired(&zone)).collect());
            assert_eq!(accepted as usize, recs.len());
            let p = s.sync(fresh);
            let time = t0.elapsed();
            assert_eq!(p.phase, "done", "{p:?}");
            s.wait_quiet();
            let calls = s.counters().since(&c0);
            assert_eq!(
                calls.outcome("APPLIED"),
                changes as u64,
                "{phase}: {calls:?}; logs:\n{}",
                s.logs()
            );
            let serial_delta = s.soa_serial().wrapping_sub(serial0);
            let row = Row {
                server: kind.server(),
                phase,
                changes,
                time,
                calls,
                serial_delta,
            };
            eprintln!("{row:?}");
            rows.push(row);
        }
    }
    print_table(&rows, records, batch);
}

fn print_table(rows: &[Row], records: usize, batch: usize) {
    println!(
        "\n{records} records, planner batch.max_changes = {batch}, {} cores\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "| server | phase | records written | time | provider calls | by answer | planner batches | writes seen by the server (SOA serial +) |"
    );
    println!("|---|---|---:|---:|---:|---|---:|---:|");
    for r in rows {
        let by: Vec<String> = r
            .calls
            .calls
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let serial = if r.serial_delta > 1_000_000 {
            // PowerDNS's first write moves the serial to its YYYYMMDDnn form.
            "(date form)".to_string()
        } else {
            r.serial_delta.to_string()
        };
        println!(
            "| {} | {} | {} | {:.2} s | {} | {} | {} | {} |",
            r.server,
            r.phase,
            r.changes,
            r.time.as_secs_f64(),
            r.calls.total_calls(),
            by.join(", "),
            r.calls.batches,
            serial
        );
    }
}

fn usage(problem: &str) -> ! {
    if !problem.is_empty() {
        eprintln!("dnsplane-bench-providers: {problem}");
    }
    eprintln!(
        "usage: dnsplane-bench-providers [--records N] [--servers pdns,bind] [--batch N]\n\
         (build first: cargo build --release --bins; run target/release/dnsplane-bench-providers)"
    );
    std::process::exit(if problem.is_empty() { 0 } else { 2 })
}
