//! The large loads: `--large` records (200k, 1M) created into one zone through the
//! planner's file source (DNSEndpoint manifests: no gRPC message limit), synced to
//! convergence, with the time of every batch, a prober on `/healthz` and `GetStatus`
//! during the load, and the planner's resident memory afterwards.
use crate::floor;
use crate::probe::{Ops, Prober, rss};
use crate::quick::{curl, ratio};
use crate::quota_floor;
use crate::stats::{fmt, mean, quantile, spread};
use crate::{Ctx, Row};
use dnsplane_e2e::servers::stack::workload::{self, TTL};
use dnsplane_e2e::servers::{Kind, RealServer};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Endpoints per manifest file (well under the file source's 4 MiB per file).
const PER_FILE: usize = 10_000;

/// How long the applied count may stand still before a load counts as stalled.
const STALL: Duration = Duration::from_secs(120);

/// Safety net of one large sync; not a performance claim.
const SYNC_LIMIT: Duration = Duration::from_secs(4 * 3600);

/// `dir` with the records as DNSEndpoint manifests, `PER_FILE` endpoints each.
fn write_manifests(dir: &Path, zone: &dnsplane_common::Name, recs: &[workload::Rec]) {
    std::fs::create_dir_all(dir).expect("create the manifest dir");
    for (f, chunk) in recs.chunks(PER_FILE).enumerate() {
        let file = std::fs::File::create(dir.join(format!("part-{f:04}.yaml"))).expect("create");
        let mut w = std::io::BufWriter::new(file);
        write!(
            w,
            "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\n\
             metadata: {{name: part-{f:04}, namespace: bench}}\nspec:\n  endpoints:\n"
        )
        .expect("write");
        for r in chunk {
            let name = r.name(zone);
            writeln!(
                w,
                "    - {{dnsName: {}, recordType: {}, recordTTL: {TTL}, targets: [{}]}}",
                name.trim_end_matches('.'),
                r.rtype,
                serde_json::to_string(&r.value).expect("json")
            )
            .expect("write");
        }
        w.flush().expect("flush");
    }
}

/// Per size: (records, total time) for the scaling row.
pub fn run(ctx: &mut Ctx, kind: Kind) {
    let mut totals = Vec::new();
    for n in ctx.args.large.clone() {
        totals.push((n, one(ctx, kind, n)));
    }
    if let [(n1, Some(t1)), .., (n2, Some(t2))] = totals[..] {
        let allowed = 1.2 * n2 as f64 / n1 as f64;
        let r = ratio(t2, t1);
        ctx.push(Row {
            server: kind.server(),
            phase: format!("large: {n2} vs {n1} records, total time"),
            records: n2,
            time: format!("{} vs {}", fmt(t2), fmt(t1)),
            ratio: format!("{r:.2}×"),
            goal: format!(
                "≤ {allowed:.1}× ({:.1}× the records)",
                n2 as f64 / n1 as f64
            ),
            pass: Some(r <= allowed),
            ..Row::default()
        });
    }
}

/// One large load; returns its total time (files written → converged), `None` when it
/// stalled.
fn one(ctx: &mut Ctx, kind: Kind, n: usize) -> Option<Duration> {
    eprintln!("== {}: large load, {n} records", kind.server());
    // The source starts with one valid, empty manifest (a missing or empty path is
    // "not ready"); the records are written into a hidden directory beside it (the
    // source skips dot names) and renamed into view: it sees all of them at once.
    let source = tempfile::tempdir().expect("temp dir");
    let desired = source.path().join("desired");
    std::fs::create_dir(&desired).expect("create the source dir");
    std::fs::write(
        desired.join("empty.yaml"),
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\n\
         metadata: {name: empty, namespace: bench}\nspec:\n  endpoints: []\n",
    )
    .expect("write empty.yaml");
    let mut opts = ctx.options();
    opts.planner_extra = format!(
        "[[sources]]\ntype = \"file\"\npaths = [\"{}\"]\n",
        desired.display()
    );
    let s = ctx.stack(ctx.server_at_limits(kind, n), opts);
    s.wait_quiet();
    let zone = s.zone().clone();
    // The first source change of a quiet zone is planned at once; later ones wait out
    // `min_interval` (an hour here). One small change first, so that the load below
    // waits for the benchmark's own `Sync`, whose progress times the batches.
    std::fs::write(
        desired.join("prime.yaml"),
        format!(
            "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\n\
             metadata: {{name: prime, namespace: bench}}\nspec:\n  endpoints:\n  \
             - {{dnsName: prime.{}, recordType: A, targets: [192.0.2.1]}}\n",
            zone.as_str().trim_end_matches('.')
        ),
    )
    .expect("write prime.yaml");
    s.wait_until("the priming change applied", SYNC_LIMIT, |s| {
        let st = s.planner_status();
        let z = st.zones.first()?;
        (z.desired_records == 1).then_some(())
    });
    s.wait_quiet();
    let recs = workload::initial(n);
    let staging = desired.join(".staging");
    write_manifests(&staging, &zone, &recs);
    drop(recs);
    let port = s.applier_admin_port.expect("admin ports");
    let ops0 = Ops::of(port);
    let c0 = s.counters();
    let (rss_before, _) = rss(s.planner_pid());
    let prober = Prober::start(s.planner_admin_port.expect("admin ports"), s.planner_port);
    let t0 = Instant::now();
    std::fs::rename(&staging, desired.join("records")).expect("rename the manifests");
    s.wait_until("the source loaded", SYNC_LIMIT, |s| {
        let st = s.planner_status();
        if let Some(e) = st.source_errors.first() {
            panic!("the source has errors: {e:?}");
        }
        let desired = st.zones.first().map_or(0, |z| z.desired_records as usize);
        (desired >= n).then_some(())
    });
    let loaded = t0.elapsed();
    let sync0 = Instant::now();
    let mut marks: Vec<(Instant, u32)> = Vec::new();
    let p = s.sync_following(false, SYNC_LIMIT, |p| {
        if p.phase == "applying" {
            marks.push((Instant::now(), p.changes_done));
        }
    });
    assert_eq!(p.phase, "done", "{p:?}; logs:\n{}", s.logs());
    let synced = t0.elapsed();
    // Converged: the applier applied every record (the planner's own counts are not
    // used here: names pushed while only `Sync` calls sync stay "pending" in them).
    // Records the sync did not get through (a batch past its deadline: a provider
    // whose quota is slower than a batch, as Azure's one request per record set) are
    // DEFERRED: the next sync sends them again. The benchmark is the only one to
    // sync here (`min_interval` is an hour), so it syncs again whenever nothing moved
    // for a second; when nothing more is applied for `STALL`, the row says how far
    // it got instead.
    let mut applied = 0;
    let mut moved = Instant::now();
    let mut resyncs = 0;
    while applied < n as u64 && moved.elapsed() < STALL {
        let now = s.counters().since(&c0).outcome("APPLIED");
        if now > applied {
            (applied, moved) = (now, Instant::now());
        } else if moved.elapsed() > Duration::from_secs(1) {
            s.sync_following(false, SYNC_LIMIT, |_| {});
            resyncs += 1;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let converged = applied >= n as u64;
    let total = t0.elapsed();
    let probes = prober.stop();
    let ops = Ops::of(port).since(ops0);
    // Resident memory at rest: once no sync runs any more (the applier may have
    // answered the last batch while the planner still holds that sync's plan), and
    // after the allocator's purge delay (`MIMALLOC_PURGE_DELAY`, 50 ms) has passed.
    let idle = Instant::now();
    while s.planner_status().zones.iter().any(|z| z.syncing) && idle.elapsed() < STALL {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    let (vm_rss, vm_hwm) = rss(s.planner_pid());

    // Batch times: between consecutive progress messages that moved `changes_done`;
    // the first message ends the planning.
    let planning = marks.first().map_or(Duration::ZERO, |(t, _)| *t - sync0);
    let batches: Vec<Duration> = marks
        .windows(2)
        .filter(|w| w[1].1 > w[0].1)
        .map(|w| w[1].0 - w[0].0)
        .collect();
    let tenth = (batches.len() / 10).max(1);
    let first = mean(&batches[..tenth.min(batches.len())]);
    let last = mean(&batches[batches.len().saturating_sub(tenth)..]);

    let floor = curl(&s).filter(|_| !ctx.args.no_large_floor).map(|mut c| {
        let (after, _) = c.read(&zone.to_string());
        let fz = c.fresh_zone();
        c.patch(&zone.to_string(), &fz, &floor::empty(), &after)
    });
    let server = kind.server();
    let big = ctx.args.large.iter().max().copied().unwrap_or(n);
    if ctx.args.has("large") {
        ctx.push(Row {
            server,
            phase: format!("large: create {n} records (file source → converged)"),
            records: n,
            time: if converged {
                fmt(total)
            } else {
                format!("stalled: {applied} of {n} APPLIED, none for {}", fmt(STALL))
            },
            goal: "converges".into(),
            pass: Some(converged),
            floor: floor.map_or(String::new(), |f| f.describe("PATCH")),
            ratio: floor
                .filter(|_| converged)
                .map_or(String::new(), |f| format!("{:.2}×", ratio(total, f.time))),
            calls: format!("{} / {}", ops.reads, ops.writes),
            note: format!(
                "source loaded in {}, planned in {}, {} batches; `Sync` done in {} with {:?}{}",
                fmt(loaded),
                fmt(planning),
                batches.len(),
                fmt(synced),
                p.outcomes,
                if resyncs > 0 {
                    format!("; {resyncs} more `Sync` calls sent the DEFERRED again")
                } else {
                    String::new()
                }
            ),
        });
        let r = ratio(last, first);
        ctx.push(Row {
            server,
            phase: format!("large {n}: batch time, first 10 % vs last 10 %"),
            records: n,
            time: format!("{} vs {}", fmt(first), fmt(last)),
            ratio: format!("{r:.2}×"),
            goal: "≤ 1.5×".into(),
            // A stalled load's last batches come back DEFERRED at once: not a figure.
            pass: Some(converged && !batches.is_empty() && r <= 1.5),
            note: format!(
                "mean of {tenth} batches each; all: p50 / p99 / max {}{}",
                spread(&batches),
                if converged {
                    ""
                } else {
                    "; the load stalled (DEFERRED batches return at once)"
                }
            ),
            ..Row::default()
        });
        for (what, l) in [
            ("`/healthz`", &probes.healthz),
            ("`GetStatus`", &probes.status),
        ] {
            ctx.push(Row {
                server,
                phase: format!("large {n}: {what} during the load"),
                records: n,
                time: spread(l),
                goal: "≤ 100 ms (p99)".into(),
                pass: Some(probes.errors == 0 && quantile(l, 0.99) <= Duration::from_millis(100)),
                note: format!(
                    "p50 / p99 / max of {} probes every 50 ms; {} failed",
                    l.len(),
                    probes.errors
                ),
                ..Row::default()
            });
        }
    }
    if ctx.args.has("rss") {
        let per = vm_rss as f64 / n as f64;
        ctx.push(Row {
            server,
            phase: format!("large {n}: planner RSS after convergence"),
            records: n,
            time: format!("{per:.0} B/record"),
            goal: if n == big {
                "≤ 300 B/record".into()
            } else {
                String::new()
            },
            pass: (n == big).then_some(per <= 300.0),
            note: format!(
                "VmRSS {} MiB, peak VmHWM {} MiB ({:.0} B/record); before the load {} MiB \
                 (after minus before: {:.0} B/record)",
                vm_rss >> 20,
                vm_hwm >> 20,
                vm_hwm as f64 / n as f64,
                rss_before >> 20,
                vm_rss.saturating_sub(rss_before) as f64 / n as f64
            ),
            ..Row::default()
        });
    }
    if converged {
        quota_floor::row(ctx, &s.server, n, total);
    }
    if let RealServer::Route53(r) = &s.server
        && converged
    {
        steady_route53(ctx, &s, r, &desired, &zone, n);
    }
    converged.then_some(total)
}

/// Route 53's read cost in steady state, counted as Route 53 counts it (HTTP requests
/// at the emulator, not driver calls: one listing of a large zone is hundreds of
/// requests): a sync with nothing to do, then a sync of a one-record change.
fn steady_route53(
    ctx: &mut Ctx,
    s: &dnsplane_e2e::servers::stack::RealStack,
    r: &dnsplane_e2e::servers::route53::EmulatedRoute53,
    desired: &Path,
    zone: &dnsplane_common::Name,
    n: usize,
) {
    let requests = || -> u64 { r.emulator.stats().requests.values().sum() };
    let full_read = (n * 2).div_ceil(300);
    s.wait_quiet();
    let before = requests();
    let t0 = Instant::now();
    let p = s.sync(false);
    let noop_time = t0.elapsed();
    let noop = requests() - before;
    ctx.push(Row {
        server: "Route 53 (emulated)",
        phase: format!("large {n}: steady-state sync, Route 53 requests"),
        records: n,
        time: fmt(noop_time),
        calls: format!("{noop} requests"),
        goal: "0 requests".into(),
        pass: Some(noop == 0 && p.changes_planned == 0),
        note: format!(
            "a full listing of this zone is {full_read} requests (300 sets a page), {:.0} s at 5/s",
            full_read as f64 / 5.0
        ),
        ..Row::default()
    });
    // One record changed in the source: the file source sees it within its poll.
    std::fs::write(
        desired.join("prime.yaml"),
        format!(
            "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\n\
             metadata: {{name: prime, namespace: bench}}\nspec:\n  endpoints:\n  \
             - {{dnsName: prime.{}, recordType: A, targets: [192.0.2.2]}}\n",
            zone.as_str().trim_end_matches('.')
        ),
    )
    .expect("rewrite prime.yaml");
    // The file source sees the rewrite at its next poll: sync until the change is
    // planned (a busy machine polls late), at most 30 s. A sync that plans nothing
    // writes nothing, so the count of requests stays the change's own.
    s.wait_quiet();
    let before = requests();
    let t0 = Instant::now();
    let mut p = s.sync(false);
    while p.changes_planned == 0 && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(500));
        p = s.sync(false);
    }
    s.wait_quiet();
    let change_time = t0.elapsed();
    let change = requests() - before;
    ctx.push(Row {
        server: "Route 53 (emulated)",
        phase: format!("large {n}: one-record change, Route 53 requests"),
        records: n,
        time: fmt(change_time),
        calls: format!("{change} requests"),
        goal: "≤ 2 requests".into(),
        pass: Some(change <= 2 && p.changes_planned >= 1),
        note: format!(
            "{} change(s) planned; the time includes waiting for the file source's poll",
            p.changes_planned
        ),
        ..Row::default()
    });
}
