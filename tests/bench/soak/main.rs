//! `dnsplane-bench-soak`: the chaos soak (docs/reliability.md, "Chaos soak").
//!
//! ```sh
//! cargo build --release --bins && target/release/dnsplane-bench-soak --duration 10m
//! ```
//!
//! A private PowerDNS with `--zones` zones; two `dnsplane-applier` processes whose
//! `pdns` account runs behind the fault decorator (per call: 5 % 502 after commit, 5 %
//! 503, 2 % timeouts); one `dnsplane-planner` with `appliers = [both]` and a file
//! source of `--files` DNSEndpoint files holding `--records` records. 1 % of the names
//! are taken by other writers: half by an `other_writer` rule just before dnsplane's
//! first write of them, half through PowerDNS's API after dnsplane created them.
//!
//! After the initial sync, for `--duration`: every `--kill-interval` one applier is
//! killed (SIGKILL) and restarted `--restart-after` later; every `--source-interval`
//! the source is rewritten (values changed, records removed and added), or a file is
//! broken (invalid YAML, zero bytes, NUL bytes, in turn), or the broken file is fixed.
//! The bench keeps its own model of what is desired. Then the chaos stops, the stack
//! gets `--settle` to converge, and the zones are read straight from PowerDNS and
//! compared with the model. It prints the settings and a table, and exits 1 when a
//! record was lost or doubled, a broken file lost records, another writer's record
//! was overwritten, or the conflicts reported are not the ones injected.
//!
//! With `--planners 2` (failover mode, [`failover`]): two planners share a Redis
//! lease, each with its own state dir; every `--failover-interval` the leader is
//! killed (SIGKILL) and restarted `--restart-after` later, and every `--push-interval`
//! a `PatchDesired` goes to the leader (to the other planner on a refusal); every
//! acknowledged push enters the model. The zones are audited every 3 s. The bench also
//! exits 1 when an acknowledged pushed change is lost, a record desired at the end was
//! deleted at some point, or a push was never acknowledged. It needs `redis-server`.
//!
//! It needs `pdns_server` (tests/run-all.sh installs it) and `dnsplane-planner` and
//! `dnsplane-applier` next to its own binary.
mod args;
mod failover;
mod model;
mod report;
mod zone;

use args::Args;
use dnsplane_e2e::redis::Redis;
use dnsplane_e2e::scaling::{Cluster, ClusterOptions, create_zones};
use dnsplane_e2e::servers::PowerDns;
use failover::Failover;
use model::{Break, Model, Taken};
use rand::SeedableRng;
use rand::rngs::StdRng;
use report::{Meter, Outcome};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

fn main() {
    let args = args::parse();
    // Everything (the servers, the processes, the temp dirs) is dropped before exiting.
    let ok = run(&args);
    std::process::exit(if ok { 0 } else { 1 });
}

/// The whole soak; true when it passed.
fn run(args: &Args) -> bool {
    let bin_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .expect("the benchmark's own directory");
    let pdns = PowerDns::start().unwrap_or_else(|| {
        eprintln!("dnsplane-bench-soak: PowerDNS is not installed (tests/run-all.sh installs it)");
        std::process::exit(2)
    });
    // Failover mode's lease: declared before the cluster, so it outlives the planners.
    let redis = (args.planners > 1).then(|| {
        Redis::start().unwrap_or_else(|| {
            eprintln!(
                "dnsplane-bench-soak: redis-server is not installed (tests/run-all.sh installs it)"
            );
            std::process::exit(2)
        })
    });
    let zones = create_zones(&pdns, "soak", args.zones);
    let mut rng = StdRng::seed_from_u64(args.seed);
    let mut model = Model::new(
        &mut rng,
        args.records,
        zones.iter().map(ToString::to_string).collect(),
        args.files,
        args.foreign,
    );
    let source = tempfile::tempdir().expect("temp dir");
    for f in 0..args.files {
        write_atomic(source.path(), f, &model.render(f));
    }
    let mut cluster = Cluster::start(
        &pdns,
        &pdns.api_url(),
        &zones,
        ClusterOptions {
            appliers: 2,
            batch_max_changes: args.batch,
            bin_dir,
            account_extra: format!("{}{}", model.other_writer_rules(), fault_rules(args)),
            planner_extra: format!(
                "[[sources]]\ntype = \"file\"\npaths = [\"{}\"]\n",
                source.path().display()
            ),
            sync_interval: humantime::format_duration(args.sync_interval).to_string(),
            retry_max: humantime::format_duration(args.retry_max).to_string(),
            planners: args.planners,
            lease_redis: redis.as_ref().map(Redis::url),
            ..ClusterOptions::default()
        },
    );
    let mut meter = Meter::new(2);
    let mut out = Outcome::default();

    // The initial sync, under the faults: every name taken before creation conflicts.
    let t = Instant::now();
    let conflicts = model.taken(Taken::BeforeCreate).count();
    let since = SystemTime::now();
    if !wait_settled(&cluster, &model, conflicts, since, args.settle) {
        eprintln!("initial sync not settled within {:?}", args.settle);
    }
    out.initial_sync = t.elapsed();
    for s in model.slots.iter_mut() {
        if let Some(f) = s.foreign.as_mut().filter(|f| f.how == Taken::BeforeCreate) {
            f.injected = true;
        }
    }
    log(
        t,
        &format!("initial sync of {} records settled", args.records),
    );

    chaos(
        args,
        &pdns,
        &mut cluster,
        &mut model,
        &mut rng,
        &mut meter,
        &mut out,
        source.path(),
    );

    // Settle: every applier up, the source whole, then a bounded wait.
    let t = Instant::now();
    let since = SystemTime::now();
    let injected = model
        .slots
        .iter()
        .filter(|s| s.live && s.foreign.as_ref().is_some_and(|f| f.injected))
        .count();
    out.settled = wait_settled(&cluster, &model, injected, since, args.settle);
    out.settle_time = t.elapsed();
    log(t, &format!("settled: {}", out.settled));
    for i in 0..2 {
        meter.refresh(&cluster, i);
    }
    out.counts = meter.total();
    out.states = cluster.record_states();
    out.zone = zone::compare(&model, &zone::read_all(&pdns, &model));
    out.planner_desired = cluster
        .planner_status()
        .zones
        .iter()
        .map(|z| z.desired_records as usize)
        .sum();
    let ok = report::print(args, &model, &out);
    if !ok || args.keep {
        let (logs, files) = (cluster.dir.keep(), source.keep());
        eprintln!(
            "kept: logs and configs in {}, the source in {}",
            logs.display(),
            files.display()
        );
    }
    ok
}

/// The per-call faults of every applier (the other writer's rules come before them:
/// a rule that answers ends the list).
fn fault_rules(a: &Args) -> String {
    let delay = humantime::format_duration(a.timeout_delay);
    format!(
        "[[accounts.faults]]\nop = \"apply\"\naction = \"ambiguous_after_commit\"\nprobability = {}\nseed = {}\n\n\
         [[accounts.faults]]\naction = \"unavailable\"\nprobability = {}\nseed = {}\n\n\
         [[accounts.faults]]\nop = \"apply\"\naction = \"timeout\"\ncommit = true\ndelay = \"{delay}\"\nprobability = {}\nseed = {}\n\n\
         [[accounts.faults]]\naction = \"timeout\"\ndelay = \"{delay}\"\nprobability = {}\nseed = {}\n",
        a.p502,
        a.seed + 1,
        a.p503,
        a.seed + 2,
        a.ptimeout / 2.0,
        a.seed + 3,
        a.ptimeout / 2.0,
        a.seed + 4,
    )
}

/// The chaos phase: kills and restarts, source rewrites, breaks and fixes, takeovers.
#[allow(clippy::too_many_arguments)]
fn chaos(
    args: &Args,
    pdns: &PowerDns,
    cluster: &mut Cluster,
    model: &mut Model,
    rng: &mut StdRng,
    meter: &mut Meter,
    out: &mut Outcome,
    source: &Path,
) {
    let t0 = Instant::now();
    let end = t0 + args.duration;
    let mut next_kill = t0 + args.kill_interval;
    let mut restart: Option<(usize, Instant)> = None;
    let mut turn = 0;
    let mut next_source = t0 + args.source_interval;
    let mut step = 0usize;
    let mut audit = zone::Audit::default();
    check(pdns, model, &mut audit, out, t0);
    let takeovers: Vec<usize> = model.taken(Taken::Takeover).map(|(i, _)| i).collect();
    let every = args.duration / (takeovers.len() as u32 + 1);
    let mut next_takeover = t0 + every;
    let mut taken = 0;
    let mut next_scrape = t0;
    let mut failover = (args.planners > 1).then(|| Failover::new(args, cluster, t0));
    let mut next_audit = t0;
    while Instant::now() < end {
        if let Some(f) = failover.as_mut() {
            f.step(args, cluster, model, rng, out, t0);
            if Instant::now() >= next_audit {
                next_audit = Instant::now() + Duration::from_secs(3);
                check(pdns, model, &mut audit, out, t0);
            }
        }
        let now = Instant::now();
        if now >= next_scrape {
            for i in 0..2 {
                meter.refresh(cluster, i);
            }
            next_scrape = now + Duration::from_secs(2);
        }
        if let Some((i, at)) = restart
            && now >= at
        {
            cluster.restart_applier(i);
            restart = None;
            log(t0, &format!("applier{i} restarted"));
        }
        if now >= next_kill && restart.is_none() {
            // The appliers in turn, each when a zone routed to it is being synced (work
            // in flight); when none is within a source interval, anyway.
            let port = format!(":{}", cluster.applier_ports[turn]);
            let busy = cluster
                .planner_status()
                .zones
                .iter()
                .any(|z| z.syncing && z.applier.ends_with(&port))
                .then_some(turn);
            let victim = busy.or((now >= next_kill + args.source_interval).then_some(turn));
            if let Some(v) = victim {
                next_kill += args.kill_interval;
                meter.refresh(cluster, v);
                meter.bank(v);
                cluster.kill_applier(v);
                out.kills += 1;
                out.kills_mid_sync += usize::from(busy.is_some());
                let when = if busy.is_some() { " mid-sync" } else { "" };
                log(t0, &format!("applier{v} killed (SIGKILL){when}"));
                restart = Some((v, now + args.restart_after));
                turn = (v + 1) % 2;
            }
        }
        if now >= next_source {
            next_source += args.source_interval;
            check(pdns, model, &mut audit, out, t0);
            match step % 3 {
                0 => {
                    let (churn, files) = model.rewrite(rng, args.churn);
                    for &f in &files {
                        write_atomic(source, f, &model.render(f));
                    }
                    out.rewrites += 1;
                    log(
                        t0,
                        &format!(
                            "source rewritten: {} updated, {} removed, {} added in {} files",
                            churn.updated,
                            churn.removed,
                            churn.added,
                            files.len()
                        ),
                    );
                }
                1 => {
                    let f = rand::Rng::random_range(rng, 0..args.files);
                    let how = Break::ALL[out.breaks % Break::ALL.len()];
                    let bytes = model.break_file(f, how);
                    std::fs::write(source.join(Model::file_name(f)), bytes).expect("break");
                    out.breaks += 1;
                    log(
                        t0,
                        &format!("{} broken ({})", Model::file_name(f), how.as_str()),
                    );
                }
                _ => fix(model, source, t0),
            }
            step += 1;
        }
        if taken < takeovers.len() && now >= next_takeover {
            next_takeover += every;
            let s = &model.slots[takeovers[taken]];
            let name = model.name(s);
            let f = s.foreign.as_ref().expect("taken");
            zone::take_over(pdns, &model.zones[s.zone], &name, &f.value);
            model.slots[takeovers[taken]]
                .foreign
                .as_mut()
                .expect("taken")
                .injected = true;
            taken += 1;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    check(pdns, model, &mut audit, out, t0);
    fix(model, source, t0);
    if let Some(f) = failover.as_mut() {
        f.finish(cluster, t0);
    }
    if let Some((i, _)) = restart {
        cluster.restart_applier(i);
        log(t0, &format!("applier{i} restarted; chaos over"));
    }
    out.takeovers = taken;
}

/// Audits the zones: a desired record that was there at the last audit and is gone
/// was deleted by mistake (the end state cannot show it: a fixed file brings it back).
fn check(pdns: &PowerDns, model: &Model, audit: &mut zone::Audit, out: &mut Outcome, t0: Instant) {
    let gone = audit.run(pdns, model);
    out.vanished_slots.extend(&gone);
    for &i in &gone {
        let s = &model.slots[i];
        let file = Model::file_name(s.file);
        let why = match model.broken {
            Some((f, how)) if f == s.file => format!("{file} broken: {}", how.as_str()),
            _ => file,
        };
        out.vanished
            .push(format!("{} {} ({why})", model.name(s), s.rec.rtype));
    }
    if !gone.is_empty() {
        log(
            t0,
            &format!("{} desired records vanished from the zones", gone.len()),
        );
    }
}

/// Restores the broken file, if one is.
fn fix(model: &mut Model, source: &Path, t0: Instant) {
    let Some((f, _)) = model.broken.take() else {
        return;
    };
    write_atomic(source, f, &model.render(f));
    log(t0, &format!("{} fixed", Model::file_name(f)));
}

/// Writes a source file as editors and config managers do: a hidden temp file (the
/// source skips dot files), renamed over the old one.
fn write_atomic(dir: &Path, f: usize, text: &str) {
    let name = Model::file_name(f);
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).expect("write source file");
    std::fs::rename(&tmp, dir.join(name)).expect("rename source file");
}

/// Waits (at most `timeout`) until every zone finished a sync that started after
/// `since`, none is syncing, the planner holds the model's desired records, and every
/// record is converged but `conflicts` in conflict.
fn wait_settled(
    cluster: &Cluster,
    model: &Model,
    conflicts: usize,
    since: SystemTime,
    timeout: Duration,
) -> bool {
    let live = model.live();
    dnsplane_e2e::wait_for(timeout, || {
        std::thread::sleep(Duration::from_millis(400));
        let st = cluster.planner_status();
        let synced = st.zones.iter().all(|z| {
            !z.syncing
                && z.last_success.as_ref().is_some_and(|t| {
                    SystemTime::UNIX_EPOCH
                        + Duration::new(t.seconds.max(0) as u64, t.nanos.max(0) as u32)
                        >= since
                })
        });
        let desired: usize = st.zones.iter().map(|z| z.desired_records as usize).sum();
        let mut other = 0;
        let mut in_conflict = 0;
        for (state, n) in st.zones.iter().flat_map(|z| &z.records_by_state) {
            match state.as_str() {
                "converged" => {}
                "conflict" => in_conflict += *n as usize,
                _ => other += *n as usize,
            }
        }
        (synced && desired == live && other == 0 && in_conflict == conflicts).then_some(())
    })
    .is_some()
}

fn log(t0: Instant, what: &str) {
    eprintln!("[{:>7.1}s] {what}", t0.elapsed().as_secs_f64());
}
