//! What the soak counted, and the settings and tables it prints.
use crate::args::Args;
use crate::model::{Model, Taken};
use crate::zone::Report;
use dnsplane_common::pb;
use dnsplane_e2e::scaling::{ACCOUNT, Cluster};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The `pdns` account's counters of one applier process (`GetStatus`).
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Provider calls by class, reads and writes; injected faults included (they look
    /// like the provider's answers to the applier), the other writer's own calls not.
    pub calls: BTreeMap<String, u64>,
    pub faults: BTreeMap<String, u64>,
    pub outcomes: BTreeMap<String, u64>,
    pub batches: u64,
}

impl Counts {
    fn of(st: &pb::ApplierStatus) -> Option<Counts> {
        let a = st.accounts.iter().find(|a| a.name == ACCOUNT)?;
        Some(Counts {
            calls: a.calls_by_class.clone().into_iter().collect(),
            faults: a.faults.clone().into_iter().collect(),
            outcomes: a.outcomes.clone().into_iter().collect(),
            batches: a.batches,
        })
    }

    fn add(&mut self, o: &Counts) {
        for (mine, theirs) in [
            (&mut self.calls, &o.calls),
            (&mut self.faults, &o.faults),
            (&mut self.outcomes, &o.outcomes),
        ] {
            for (k, v) in theirs {
                *mine.entry(k.clone()).or_default() += v;
            }
        }
        self.batches += o.batches;
    }

    pub fn total_calls(&self) -> u64 {
        self.calls.values().sum()
    }
}

/// Counters across applier restarts: a killed process takes its counters with it, so
/// each one's last scrape is banked before the kill.
#[derive(Debug)]
pub struct Meter {
    banked: Counts,
    last: Vec<Option<Counts>>,
}

impl Meter {
    pub fn new(appliers: usize) -> Meter {
        Meter {
            banked: Counts::default(),
            last: vec![None; appliers],
        }
    }

    /// Scrapes applier `i` (keeps the last scrape when it does not answer).
    pub fn refresh(&mut self, cluster: &Cluster, i: usize) {
        if let Some(c) = cluster.applier_status(i).as_ref().and_then(Counts::of) {
            self.last[i] = Some(c);
        }
    }

    /// Banks applier `i`'s last scrape: call it just before killing the process.
    pub fn bank(&mut self, i: usize) {
        if let Some(c) = self.last[i].take() {
            self.banked.add(&c);
        }
    }

    pub fn total(&self) -> Counts {
        let mut t = self.banked.clone();
        for c in self.last.iter().flatten() {
            t.add(c);
        }
        t
    }
}

/// Everything the run observed.
#[derive(Debug, Default)]
pub struct Outcome {
    pub initial_sync: Duration,
    pub settled: bool,
    pub settle_time: Duration,
    pub kills: usize,
    /// Kills that hit the applier of a zone being synced.
    pub kills_mid_sync: usize,
    pub rewrites: usize,
    pub breaks: usize,
    pub takeovers: usize,
    /// Desired records that vanished between two audits during the chaos.
    pub vanished: Vec<String>,
    /// Their slots: those desired at the end are records deleted that were desired at
    /// the end.
    pub vanished_slots: Vec<usize>,
    /// Failover mode: leaders killed, the longest wait for the next leader, pushes
    /// acknowledged and their changes, refusals retried, pushes never acknowledged.
    pub failovers: usize,
    pub takeover_max: Duration,
    pub pushes: usize,
    pub pushed_changes: usize,
    pub push_retries: usize,
    pub push_unacked: Vec<String>,
    pub counts: Counts,
    /// The planner's non-converged records at the end.
    pub states: Vec<pb::RecordState>,
    pub zone: Report,
    /// Desired records as the planner counts them at the end.
    pub planner_desired: usize,
}

fn absolute(name: &str) -> String {
    let n = name.to_ascii_lowercase();
    if n.ends_with('.') { n } else { format!("{n}.") }
}

fn pct(p: f64) -> String {
    format!("{}%", (p * 1000.0).round() / 10.0)
}

fn join(m: &BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k} {v}")).collect();
    parts.join(", ")
}

/// Prints the settings, the table and the problems found; true when the run passed.
pub fn print(a: &Args, model: &Model, out: &Outcome) -> bool {
    let injected: BTreeSet<(String, String)> = model
        .slots
        .iter()
        .filter(|s| s.live && s.foreign.as_ref().is_some_and(|f| f.injected))
        .map(|s| (model.name(s), s.rec.rtype.to_string()))
        .collect();
    let conflict = pb::RecordStateKind::Conflict as i32;
    let reported: BTreeSet<(String, String)> = out
        .states
        .iter()
        .filter(|s| s.state == conflict)
        .filter_map(|s| s.key.as_ref())
        .map(|k| (absolute(&k.name), k.r#type.clone()))
        .collect();
    let mut others: BTreeMap<String, u64> = BTreeMap::new();
    for s in out.states.iter().filter(|s| s.state != conflict) {
        let kind = pb::RecordStateKind::try_from(s.state)
            .map_or("unknown", |k| k.as_str_name())
            .trim_start_matches("RECORD_STATE_KIND_")
            .to_ascii_lowercase();
        *others.entry(kind).or_default() += 1;
    }
    let before = model.taken(Taken::BeforeCreate).count();
    let calls = out.counts.total_calls();
    let z = &out.zone;

    println!(
        "\nChaos soak: {} records in {} zones ({} DNSEndpoint files), one PowerDNS (sqlite), 2 appliers, {}; seed {}\n",
        a.records,
        a.zones,
        a.files,
        if a.planners > 1 {
            "2 planners (one Redis lease, a state dir each)"
        } else {
            "1 planner"
        },
        a.seed
    );
    if a.planners > 1 {
        println!(
            "- failovers: every {} the leader planner is killed (SIGKILL) and restarted {} later (as the standby); every {} a `PatchDesired` of {} changes (new records, new values, withdrawals) goes to the leader, retried at the other planner until acknowledged",
            humantime::format_duration(a.failover_interval),
            humantime::format_duration(a.restart_after),
            humantime::format_duration(a.push_interval),
            a.push_size
        );
    }
    println!(
        "- chaos for {}: an applier killed (SIGKILL) every {} and restarted {} later, in turn; every {} the source is rewritten ({} of the records: values changed, removed, added), or a file is broken (invalid YAML, zero bytes, NUL bytes, in turn), or it is fixed",
        humantime::format_duration(a.duration),
        humantime::format_duration(a.kill_interval),
        humantime::format_duration(a.restart_after),
        humantime::format_duration(a.source_interval),
        pct(a.churn)
    );
    println!(
        "- faults per provider call (`[[accounts.faults]]`, both appliers): {} 502 after commit (writes), {} 503 (any call), {} timeouts after {} (half on writes that commit, half on any call before it arrives)",
        pct(a.p502),
        pct(a.p503),
        pct(a.ptimeout),
        humantime::format_duration(a.timeout_delay)
    );
    println!(
        "- other writers: {} of the names ({}): {before} written by an `other_writer` rule just before dnsplane's first write of them, {} taken over (record and an ownership record of owner `intruder`) through PowerDNS's API during the chaos",
        pct(a.foreign),
        before + out.takeovers,
        out.takeovers
    );
    println!(
        "- planner: `sync.interval = \"{}\"`, `retry_min = \"200ms\"`, `retry_max = \"{}\"`, `min_interval = \"100ms\"`, `batch.max_changes = {}`, `pool.health_interval = \"200ms\"`, `[safety]` default (30 %); applier: `max_concurrent_batches = 8`, `cache_ttl = \"10m\"`, `[retry]` default",
        humantime::format_duration(a.sync_interval),
        humantime::format_duration(a.retry_max),
        a.batch
    );
    println!(
        "- initial sync (under the faults) {:.1} s; after the chaos, {} {:.1} s; {} of the {} kills hit the applier of a zone being synced\n",
        out.initial_sync.as_secs_f64(),
        if out.settled {
            "converged in"
        } else {
            "NOT converged within"
        },
        out.settle_time.as_secs_f64(),
        out.kills_mid_sync,
        out.kills
    );
    println!(
        "| records at the end | record changes | lost | doubled | vanished during the chaos | foreign records overwritten | conflicts reported / injected | provider calls | calls per change | applier kills | rewrites / breaks |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {} | {} | {} | {} | {} | {} / {} | {} | {:.2} | {} | {} / {} |",
        z.desired,
        model.changes,
        z.lost.len(),
        z.doubled.len(),
        out.vanished.len(),
        z.foreign_overwritten.len(),
        reported.len(),
        injected.len(),
        calls,
        calls as f64 / model.changes.max(1) as f64,
        out.kills,
        out.rewrites,
        out.breaks
    );
    println!(
        "\nProvider calls by class: {}. Faults fired: {}. Record outcomes: {}. Batches: {}.",
        join(&out.counts.calls),
        join(&out.counts.faults),
        join(&out.counts.outcomes),
        out.counts.batches
    );

    let deleted_desired: Vec<String> = out
        .vanished_slots
        .iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|&i| &model.slots[i])
        .filter(|s| s.live)
        .map(|s| format!("{} {}", model.name(s), s.rec.rtype))
        .collect();
    if a.planners > 1 {
        println!(
            "\n| leader kills | longest takeover | pushes acknowledged | pushed changes acknowledged | refusals retried | acknowledged pushed changes lost | records deleted that were desired at the end |"
        );
        println!("|---:|---:|---:|---:|---:|---:|---:|");
        println!(
            "| {} | {:.1} s | {} | {} | {} | {} | {} |",
            out.failovers,
            out.takeover_max.as_secs_f64(),
            out.pushes,
            out.pushed_changes,
            out.push_retries,
            z.pushed_lost.len(),
            deleted_desired.len()
        );
    }

    let mut problems: Vec<(String, Vec<String>)> = vec![
        (
            "acknowledged pushed changes lost".into(),
            z.pushed_lost.clone(),
        ),
        (
            "records deleted that were desired at the end".into(),
            deleted_desired,
        ),
        ("pushes never acknowledged".into(), out.push_unacked.clone()),
        ("lost".into(), z.lost.clone()),
        ("doubled".into(), z.doubled.clone()),
        (
            "desired records that vanished during the chaos".into(),
            out.vanished.clone(),
        ),
        (
            "another writer's record overwritten".into(),
            z.foreign_overwritten.clone(),
        ),
    ];
    let show = |s: &BTreeSet<(String, String)>| -> Vec<String> {
        s.iter().map(|(n, t)| format!("{n} {t}")).collect()
    };
    problems.push((
        "injected, not reported as a conflict".into(),
        show(&injected.difference(&reported).cloned().collect()),
    ));
    problems.push((
        "reported as a conflict, not injected".into(),
        show(&reported.difference(&injected).cloned().collect()),
    ));
    if !others.is_empty() {
        problems.push((
            "records not converged at the end".into(),
            others.iter().map(|(k, v)| format!("{k}: {v}")).collect(),
        ));
    }
    if out.planner_desired != z.desired {
        problems.push((
            "desired records, planner vs model".into(),
            vec![format!("{} vs {}", out.planner_desired, z.desired)],
        ));
    }
    let mut ok = true;
    for (what, list) in problems.iter().filter(|(_, l)| !l.is_empty()) {
        ok = false;
        eprintln!("\n{what}: {}", list.len());
        for l in list.iter().take(20) {
            eprintln!("  {l}");
        }
    }
    println!("\n{}", if ok { "PASS" } else { "FAIL" });
    ok
}
