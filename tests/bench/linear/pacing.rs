//! The `pacing` phase (issue 28): PowerDNS behind the tests' proxy allowing 1 request
//! per second, burst 1, reads included, 429 with `Retry-After: 1` above it, and the
//! applier's account with **no** `[accounts.quota]`: only its default pacing stands
//! between it and the livelock it had (the precondition GET took the only token, the
//! PATCH drew a 429, for ever). 2,000 records (the figure) are pushed; the
//! time until every one is converged, with the planner's default batches (one PATCH)
//! and with `batch.max_changes = 250` (eight), as `tests/e2e/pacing.rs` runs it.
use crate::probe::Ops;
use crate::stats::fmt;
use crate::{Ctx, Grpc, Row, wait_converged};
use dnsplane_e2e::quota_proxy::{ProxyOptions, QuotaProxy};
use dnsplane_e2e::servers::{Kind, RealServer};
use std::time::{Duration, Instant};

/// The figure.
const N: usize = 2_000;

pub fn run(ctx: &mut Ctx, kind: Kind) {
    if kind != Kind::Pdns {
        // The proxy speaks PowerDNS's HTTP API.
        return;
    }
    for batch in [0, 250] {
        one(ctx, batch);
    }
}

fn one(ctx: &mut Ctx, batch: usize) {
    eprintln!("== PowerDNS: pacing, 1 request/s burst 1, no quota, batch {batch}, {N} records");
    let server = ctx.server(Kind::Pdns);
    let RealServer::Pdns(p) = &server else {
        unreachable!("PowerDNS")
    };
    let proxy = QuotaProxy::start(
        &p.api_url(),
        ProxyOptions {
            write_rate: 1.0,
            write_burst: 1.0,
            retry_after_secs: 1,
            all_requests: true,
            ..ProxyOptions::default()
        },
    );
    let mut opts = ctx.options();
    opts.min_interval = "100ms".into();
    opts.api_url = Some(proxy.url());
    opts.batch_max_changes = batch;
    let s = ctx.stack(server, opts);
    s.wait_quiet();
    let zone = s.zone().clone();
    let port = s.applier_admin_port.expect("admin ports");
    let ops0 = Ops::of(port);
    let before = proxy.counts();
    let t0 = Instant::now();
    s.push(
        dnsplane_e2e::servers::stack::workload::initial(N)
            .iter()
            .map(|r| r.desired(&zone))
            .collect(),
    );
    let limit = Duration::from_secs(600);
    let done = wait_converged(&s, N as u32, Duration::from_millis(100), limit);
    let time = t0.elapsed();
    let ops = Ops::of(port).since(ops0);
    let seen = proxy.counts();
    let requests = seen.requests - before.requests;
    let rejected = seen.rejected - before.rejected;
    let patches = seen.writes_since(t0).len();
    let pacing = Grpc::new(&s).account(&s.account).pacing.unwrap_or_default();
    // The least time the requests the proxy let through take at 1/s.
    let through = requests - rejected;
    let floor = Duration::from_secs(through.saturating_sub(1));
    ctx.push(Row {
        server: "PowerDNS",
        phase: format!(
            "pacing: 1 request/s burst 1, no quota, batch.max_changes {}",
            if batch == 0 { "default".into() } else { batch.to_string() }
        ),
        records: N,
        time: if done.is_some() {
            fmt(time)
        } else {
            format!("not converged in {}", fmt(limit))
        },
        floor: format!("{} ({through} requests at 1/s)", fmt(floor)),
        ratio: format!("{:.2}×", crate::quick::ratio(time, floor)),
        calls: format!("{} / {}", ops.reads, ops.writes),
        goal: "converges".into(),
        pass: Some(done.is_some()),
        note: format!(
            "{patches} PATCHes; 429 answers: {rejected} of {requests} requests; throttles seen by the pacer: {}",
            pacing.throttles
        ),
    });
}
