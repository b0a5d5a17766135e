//! How many provider calls the applier needs to isolate `k` bad records in a batch of
//! `n = 1000`, by the two strategies of the batch algorithm:
//!
//! - **read-back partition** for conflicts (another writer got there first): the batch
//!   fails, one read shows who conflicts, one resubmission lands the rest;
//! - **bisection** for values the provider rejects (a read cannot explain those): the
//!   batch is halved recursively down to the bad records.
//!
//! Runs the real batch algorithm against the real `memory` driver behind the fault
//! decorator (`other_writer` and `reject_values` rules), and prints a table.
//!
//! ```text
//! cargo bench -p dnsplane-applier --bench isolation --profile dev
//! ```
use dnsplane_applier::MemoryStore;
use dnsplane_applier::account::{Account, AccountOptions};
use dnsplane_applier::apply::{BatchReport, bisection_bound, execute};
use dnsplane_applier::provider::call::CallCx;
use dnsplane_applier::provider::fault::{FaultRuleConfig, compile_rules};
use dnsplane_applier::provider::memory::MemoryProvider;
use dnsplane_applier::retry::RetryPolicy;
use dnsplane_common::{Change, ChangeKind, Name, Outcome, RRSet, RRSetOp, RecordKey, RecordType};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::index::sample;
use std::sync::Arc;
use std::time::Instant;

const N: usize = 1000;
const RANDOM_SEEDS: u64 = 5;

fn zone() -> Name {
    Name::parse("example.com").expect("zone")
}

fn a(i: usize, value: &str) -> RRSet {
    let key = RecordKey::new(
        zone(),
        zone().prepend(&format!("h{i}")).expect("name"),
        RecordType::A,
    );
    RRSet::new(key, 300, &[value]).expect("rrset")
}

#[derive(serde::Deserialize)]
struct Rules {
    faults: Vec<FaultRuleConfig>,
}

/// Runs one batch of `changes` against a fresh memory store behind `rules`.
fn run(rt: &tokio::runtime::Runtime, rules: &str, changes: &[Change]) -> BatchReport {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(MemoryStore::open(dir.path()).expect("store"));
    let memory = MemoryProvider::new(store, vec![zone()]).expect("memory");
    let rules: Rules = toml::from_str(rules).expect("rules");
    let rules = compile_rules(&rules.faults, &[zone()]).expect("valid rules");
    let options = AccountOptions {
        faults: rules,
        ..AccountOptions::default()
    };
    let account = Account::with_options("bench", Arc::new(memory), &[zone()], options);
    let cx = CallCx::new("bench", Some(zone()));
    rt.block_on(execute(
        &account.stack,
        &cx,
        changes,
        &RetryPolicy::default(),
    ))
}

fn count(report: &BatchReport, outcome: Outcome) -> usize {
    report
        .results
        .iter()
        .filter(|r| r.outcome == outcome)
        .count()
}

/// Calls to settle `n` creates of which those at `bad` were taken by another writer.
fn read_back(rt: &tokio::runtime::Runtime, bad: &[usize]) -> u32 {
    let records: Vec<String> = bad
        .iter()
        .map(|i| {
            format!("{{ name = \"h{i}.example.com.\", type = \"A\", values = [\"198.51.100.1\"] }}")
        })
        .collect();
    let rules = format!(
        "[[faults]]\nop = \"apply\"\naction = \"other_writer\"\ntimes = 1\nrecords = [{}]\n",
        records.join(", ")
    );
    let changes: Vec<Change> = (0..N)
        .map(|i| Change::new(ChangeKind::Create, vec![RRSetOp::create(a(i, "192.0.2.1"))]))
        .collect();
    let report = run(rt, &rules, &changes);
    assert_eq!(count(&report, Outcome::Conflict), bad.len());
    assert_eq!(count(&report, Outcome::Applied), N - bad.len());
    report.provider_calls
}

/// Calls to settle `n` creates of which those at `bad` carry a value the provider rejects.
fn bisection(rt: &tokio::runtime::Runtime, bad: &[usize]) -> u32 {
    let value = |i: usize| format!("10.66.{}.{}", i / 250, i % 250);
    let values: Vec<String> = bad.iter().map(|&i| value(i)).collect();
    let rules =
        format!("[[faults]]\nop = \"apply\"\naction = \"reject_values\"\nvalues = {values:?}\n");
    let changes: Vec<Change> = (0..N)
        .map(|i| {
            let v = if bad.contains(&i) {
                value(i)
            } else {
                "192.0.2.1".to_string()
            };
            Change::new(ChangeKind::Create, vec![RRSetOp::create(a(i, &v))])
        })
        .collect();
    let report = run(rt, &rules, &changes);
    assert_eq!(count(&report, Outcome::Invalid), bad.len());
    assert_eq!(count(&report, Outcome::Applied), N - bad.len());
    report.provider_calls
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "Provider calls to isolate k bad records in one batch of n = {N} (memory driver + fault decorator)"
    );
    println!();
    println!(
        "| k | read-back partition (conflicts) | bisection, evenly spread (invalid) | bisection, random (mean / max of {RANDOM_SEEDS}) | bisection bound | 2k·log2(n/k) | time |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for k in [1usize, 10, 100] {
        let started = Instant::now();
        let spread: Vec<usize> = (0..k).map(|j| j * N / k + N / (2 * k)).collect();
        let rb = read_back(&rt, &spread);
        let even = bisection(&rt, &spread);
        let mut random = Vec::new();
        for seed in 0..RANDOM_SEEDS {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut bad = sample(&mut rng, N, k).into_vec();
            bad.sort_unstable();
            random.push(bisection(&rt, &bad));
        }
        let mean = f64::from(random.iter().sum::<u32>()) / random.len() as f64;
        let max = random.iter().max().copied().unwrap_or_default();
        let bound = bisection_bound(N, k);
        assert!(
            u64::from(even) <= bound && u64::from(max) <= bound,
            "bisection above its bound"
        );
        let approx = 2.0 * k as f64 * (N as f64 / k as f64).log2();
        println!(
            "| {k} | {rb} | {even} | {mean:.0} / {max} | {bound} | {approx:.0} | {:.1} s |",
            started.elapsed().as_secs_f64()
        );
    }
}
