//! The 10k phases: a zone created from empty, a 10 % change, a sync with nothing to do
//! (`bulk`); and a one-record change in a 10k-record source, from the push to the
//! answer served on the server's DNS port (`oneshot`).
use crate::floor::{self, Curl, Floor};
use crate::probe::Ops;
use crate::stats::{fmt, quantile, spread};
use crate::{Ctx, Grpc, Row, wait_converged};
use dnsplane_common::pb;
use dnsplane_e2e::servers::stack::{RealStack, workload};
use dnsplane_e2e::servers::{Kind, RealServer};
use std::time::{Duration, Instant};

/// A PowerDNS floor writer when the stack's server is PowerDNS.
pub fn curl(s: &RealStack) -> Option<Curl> {
    match &s.server {
        RealServer::Pdns(p) => Some(Curl::new(p)),
        _ => None,
    }
}

/// `time / floor`, e.g. `1.37×`.
pub fn ratio(time: Duration, floor: Duration) -> f64 {
    time.as_secs_f64() / floor.as_secs_f64().max(1e-9)
}

/// One timed step: push `recs` (unless `None`), then one `Sync`; the wall time and the
/// provider calls it cost. Panics unless the applier answered `APPLIED` for `changes`
/// records.
fn step(
    s: &RealStack,
    recs: Option<&[workload::Rec]>,
    changes: usize,
    fresh: bool,
) -> (Duration, Ops) {
    let port = s.applier_admin_port.expect("admin ports");
    let zone = s.zone().clone();
    let desired = recs.map(|r| r.iter().map(|r| r.desired(&zone)).collect::<Vec<_>>());
    s.wait_quiet();
    let ops0 = Ops::of(port);
    let c0 = s.counters();
    let t0 = Instant::now();
    if let Some(d) = desired {
        let n = d.len();
        assert_eq!(s.push(d) as usize, n, "every record accepted");
    }
    let p = s.sync(fresh);
    let time = t0.elapsed();
    assert_eq!(p.phase, "done", "{p:?}; logs:\n{}", s.logs());
    s.wait_quiet();
    let applied = s.counters().since(&c0).outcome("APPLIED");
    assert_eq!(applied, changes as u64, "APPLIED; logs:\n{}", s.logs());
    (time, Ops::of(port).since(ops0))
}

fn calls(o: Ops) -> String {
    format!("{} / {}", o.reads, o.writes)
}

pub fn bulk(ctx: &mut Ctx, kind: Kind) {
    let n = ctx.args.records;
    eprintln!("== {}: create / change / no-op, {n} records", kind.server());
    let s = ctx.stack(ctx.server(kind), ctx.options());
    let zone = s.zone().to_string();
    let mut curl = curl(&s);
    let server = kind.server();

    // Create: the floor is the RRSets dnsplane wrote (records and their ownership
    // TXTs), read back and PATCHed into a fresh zone.
    let (time, ops) = step(&s, Some(&workload::initial(n)), n, false);
    let states = s.states_count();
    let mut floor_zone = None;
    let (floor, ratio_) = match curl.as_mut() {
        Some(c) => {
            let (after, _) = c.read(&zone);
            let fz = c.fresh_zone();
            let f = c.patch(&zone, &fz, &floor::empty(), &after);
            floor_zone = Some((fz, after));
            (Some(f), Some(ratio(time, f.time)))
        }
        None => (None, None),
    };
    if ctx.args.has("create") {
        ctx.push(Row {
            server,
            phase: format!("create {n} records"),
            records: n,
            time: fmt(time),
            floor: floor.map_or(String::new(), |f| f.describe("PATCH")),
            ratio: ratio_.map_or(String::new(), |r| format!("{r:.2}×")),
            calls: calls(ops),
            goal: "≤ 1.5× floor".into(),
            pass: ratio_.map(|r| r <= 1.5),
            note: format!("{n} APPLIED; planner states then: {states:?}"),
        });
    }

    // A 10 % change: the floor PATCHes only what changed between the two reads.
    let (changed, counts) = workload::changed(n);
    let (time, ops) = step(&s, Some(&changed), counts.total(), false);
    let floor = match (curl.as_mut(), floor_zone.as_mut()) {
        (Some(c), Some((fz, before))) => {
            let (after, _) = c.read(&zone);
            let f = c.patch(&zone, fz, before, &after);
            *before = after;
            Some(f)
        }
        _ => None,
    };
    if ctx.args.has("change") {
        ctx.push(Row {
            server,
            phase: format!(
                "10 % change ({} updates, {} deletes, {} creates)",
                counts.updates, counts.deletes, counts.creates
            ),
            records: counts.total(),
            time: fmt(time),
            floor: floor.map_or(String::new(), |f| f.describe("PATCH")),
            ratio: floor.map_or(String::new(), |f| format!("{:.2}×", ratio(time, f.time))),
            calls: calls(ops),
            // Route 53 allows five requests a second: its floor is the quota's; the
            // other clouds' emulators are paced by their drivers' default quotas.
            goal: if kind.emulated() {
                String::new()
            } else {
                "≤ 0.5 s".into()
            },
            pass: (!kind.emulated()).then_some(time <= Duration::from_millis(500)),
            note: if kind == Kind::Route53 {
                format!(
                    "at Route 53's 5 requests/s, {} requests take ≥ {:.1} s after a burst of 5",
                    ops.reads + ops.writes,
                    (ops.reads + ops.writes).saturating_sub(5) as f64 / 5.0
                )
            } else {
                String::new()
            },
        });
    }

    if ctx.args.has("noop") {
        // Nothing to do, through the applier's cache (revalidated by the zone serial).
        let (time, ops) = step(&s, None, 0, false);
        ctx.push(Row {
            server,
            phase: "no-op sync".into(),
            records: 0,
            time: fmt(time),
            calls: calls(ops),
            goal: "≤ 50 ms, 0 writes, ≤ 1 read".into(),
            pass: Some(time <= Duration::from_millis(50) && ops.writes == 0 && ops.reads <= 1),
            note: "`Sync` without `fresh`".into(),
            ..Row::default()
        });
        // The same with a fresh read of the whole zone; its floor is one GET of it.
        let (time, ops) = step(&s, None, 0, true);
        let get: Option<Floor> = curl.as_ref().map(|c| c.read(&zone).1);
        ctx.push(Row {
            server,
            phase: "no-op sync, fresh read".into(),
            records: 0,
            time: fmt(time),
            floor: get.map_or(String::new(), |f| f.describe("GET")),
            ratio: get.map_or(String::new(), |f| format!("{:.2}×", ratio(time, f.time))),
            calls: calls(ops),
            note: "`Sync` with `fresh`: the drift check's cost".into(),
            ..Row::default()
        });
    }
}

/// One-record changes in a source of `--records` records: the `PutDesired` round trip
/// and the time until the server answers the new value on its DNS port (polled every
/// 2 ms over UDP). The planner syncs by itself here, with `sync.min_interval = 0`
/// (its default, 500 ms, is a debounce knob, not a cost).
pub fn oneshot(ctx: &mut Ctx, kind: Kind) {
    if kind.emulated() {
        // The emulators answer the clouds' APIs, not DNS: there is no "served" to time.
        return;
    }
    let n = ctx.args.records;
    eprintln!("== {}: one-record changes in {n} records", kind.server());
    let mut opts = ctx.options();
    opts.min_interval = "0s".into();
    let s = ctx.stack(ctx.server(kind), opts);
    let zone = s.zone().clone();
    let mut recs = workload::initial(n);
    s.push(recs.iter().map(|r| r.desired(&zone)).collect());
    wait_converged(
        &s,
        n as u32,
        Duration::from_millis(200),
        Duration::from_secs(600),
    )
    .unwrap_or_else(|| panic!("{n} records not converged; logs:\n{}", s.logs()));
    s.wait_quiet();
    let mut grpc = Grpc::new(&s);
    let mut asker = crate::dnsq::Asker::new(s.server.dns_port().expect("a DNS port"));
    let mut sample = |k: usize, patch: bool| -> (Duration, Duration) {
        // An A record (i % 10 >= 3), a different one each time.
        let i = ((k * 7919) % n) / 10 * 10 + 5;
        let i = i.min(n - 1);
        recs[i] = workload::rec("r", i, k as u32);
        let want: std::net::Ipv4Addr = recs[i].value.parse().expect("an A record");
        let name = recs[i].name(&zone);
        let records: Vec<pb::DesiredRecord> = if patch {
            vec![recs[i].desired(&zone)]
        } else {
            recs.iter().map(|r| r.desired(&zone)).collect()
        };
        let t0 = Instant::now();
        if patch {
            grpc.rt
                .block_on(grpc.planner.patch_desired(pb::PatchDesiredRequest {
                    source: "bench".into(),
                    upserts: records,
                    deletes: Vec::new(),
                }))
                .expect("PatchDesired");
        } else {
            grpc.rt
                .block_on(grpc.planner.put_desired(pb::PutDesiredRequest {
                    source: "bench".into(),
                    records,
                }))
                .expect("PutDesired");
        }
        let rtt = t0.elapsed();
        loop {
            if asker.a(&name) == [want] {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "{name} never served {want}; logs:\n{}",
                s.logs()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let served = t0.elapsed();
        // Apart from the next push, so each is a change of its own.
        std::thread::sleep(Duration::from_millis(200));
        (rtt, served)
    };
    let samples = ctx.args.samples;
    let (rtt, served): (Vec<Duration>, Vec<Duration>) =
        (1..=samples).map(|k| sample(k, false)).unzip();
    let (patch_rtt, patch_served): (Vec<Duration>, Vec<Duration>) =
        (1..=samples).map(|k| sample(samples + k, true)).unzip();
    // What the server alone takes for a one-record write into this zone.
    let floor = curl(&s).map(|c| c.one_record(zone.as_str(), &format!("floor-probe.{zone}"), 5));
    // PowerDNS again with the zone's API-RECTIFY off (right for a zone without
    // DNSSEC; the operator's choice, which dnsplane does not make): what is left is
    // dnsplane's own part and PowerDNS's write without the whole-zone rectify.
    let unrectified = curl(&s).map(|c| {
        c.set_api_rectify(zone.as_str(), false);
        let served: Vec<Duration> = (1..=samples)
            .map(|k| sample(2 * samples + k, true).1)
            .collect();
        let floor = c.one_record(zone.as_str(), &format!("floor-probe.{zone}"), 5);
        c.set_api_rectify(zone.as_str(), true);
        (served, floor)
    });
    let server = kind.server();
    ctx.push(Row {
        server,
        phase: "one-record change: `PutDesired` round trip".into(),
        records: n,
        time: spread(&rtt),
        goal: "≤ 50 ms (p99)".into(),
        pass: Some(quantile(&rtt, 0.99) <= Duration::from_millis(50)),
        note: format!("p50 / p99 / max of {samples}; the whole {n}-record source each push"),
        ..Row::default()
    });
    ctx.push(Row {
        server,
        phase: "one-record change: push → served on the DNS port".into(),
        records: n,
        time: spread(&served),
        floor: floor.map_or(String::new(), |f| {
            format!(
                "{} (1 PATCH of 1 RRSet into this zone, median of 5)",
                crate::stats::fmt(f)
            )
        }),
        ratio: floor.map_or(String::new(), |f| {
            format!("{:.2}×", ratio(quantile(&served, 0.5), f))
        }),
        goal: "≤ 100 ms (p99)".into(),
        pass: Some(quantile(&served, 0.99) <= Duration::from_millis(100)),
        note: format!(
            "p50 / p99 / max of {samples}; `sync.min_interval = 0`, UDP polled every 2 ms"
        ),
        ..Row::default()
    });
    ctx.push(Row {
        server,
        phase: "one-record change by `PatchDesired`: round trip".into(),
        records: n,
        time: spread(&patch_rtt),
        note: format!(
            "p50 / p99 / max of {samples}; the one record, appended to the source's journal"
        ),
        ..Row::default()
    });
    ctx.push(Row {
        server,
        phase: "one-record change by `PatchDesired`: push → served on the DNS port".into(),
        records: n,
        time: spread(&patch_served),
        floor: floor.map_or(String::new(), |f| {
            format!(
                "{} (1 PATCH of 1 RRSet into this zone, median of 5)",
                crate::stats::fmt(f)
            )
        }),
        ratio: floor.map_or(String::new(), |f| {
            format!("{:.2}×", ratio(quantile(&patch_served, 0.5), f))
        }),
        goal: "≤ 100 ms (p99)".into(),
        pass: Some(quantile(&patch_served, 0.99) <= Duration::from_millis(100)),
        note: format!("p50 / p99 / max of {samples}; as above"),
        ..Row::default()
    });
    if let Some((served, floor)) = unrectified {
        ctx.push(Row {
            server,
            phase: "one-record change by `PatchDesired`: push → served, zone `API-RECTIFY` 0"
                .into(),
            records: n,
            time: spread(&served),
            floor: format!(
                "{} (1 PATCH of 1 RRSet into this zone, median of 5)",
                crate::stats::fmt(floor)
            ),
            ratio: format!("{:.2}×", ratio(quantile(&served, 0.5), floor)),
            note: format!(
                "p50 / p99 / max of {samples}; the same zone with its API-RECTIFY metadata \
                 set to 0 (PowerDNS then skips rectifying the whole zone after each PATCH)"
            ),
            ..Row::default()
        });
    }
}
