//! What the `memory` driver's store costs as a zone grows: a first sync's worth of
//! batches (2,000 RRSet ops each: 1,000 records and their ownership records, the
//! planner's batch size) into one zone, then one small batch into the full zone,
//! then reopening the store (loading every zone from disk).
//!
//! ```text
//! cargo bench -p dnsplane-applier --bench store -- 10000 100000 1000000
//! ```
//! Prints one line per size: total and per-record fill time, the slowest batch, one
//! small batch at the end, the reopen time, and the bytes on disk.
use dnsplane_applier::MemoryStore;
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
use std::time::{Duration, Instant};

const OPS_PER_BATCH: usize = 2_000;

fn zone() -> Name {
    Name::parse("example.com").expect("zone")
}

fn op(i: usize) -> RRSetOp {
    let (name, rtype, value) = if i.is_multiple_of(2) {
        (
            format!("h{}", i / 2),
            RecordType::A,
            "192.0.2.1".to_string(),
        )
    } else {
        (
            format!("a-h{}", i / 2),
            RecordType::Txt,
            "\"heritage=dnsplane,owner=bench\"".to_string(),
        )
    };
    let key = RecordKey::new(zone(), zone().prepend(&name).expect("name"), rtype);
    RRSetOp::create(RRSet::new(key, 300, &[value]).expect("rrset"))
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10_000, 100_000]
    } else {
        sizes
    };
    println!("| records | fill | per record | slowest batch | one more batch | reopen | on disk |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for records in sizes {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = MemoryStore::open(dir.path()).expect("store");
        store.ensure_zones(&[zone()]).expect("zone");
        let ops: Vec<RRSetOp> = (0..records * 2).map(op).collect();
        let start = Instant::now();
        let mut slowest = Duration::ZERO;
        for batch in ops.chunks(OPS_PER_BATCH) {
            let t = Instant::now();
            store.apply(&zone(), batch).expect("apply");
            slowest = slowest.max(t.elapsed());
        }
        let fill = start.elapsed();
        let t = Instant::now();
        store
            .apply(&zone(), &[op(records * 2), op(records * 2 + 1)])
            .expect("apply");
        let one = t.elapsed();
        drop(store);
        let t = Instant::now();
        let store = MemoryStore::open(dir.path()).expect("reopen");
        let reopen = t.elapsed();
        assert_eq!(
            store.list(&zone(), None).expect("list").0.len(),
            records * 2 + 2
        );
        println!(
            "| {records} | {:.2} s | {:.1} µs | {:.1} ms | {:.1} ms | {:.2} s | {} MB |",
            fill.as_secs_f64(),
            fill.as_secs_f64() * 1e6 / records as f64,
            slowest.as_secs_f64() * 1e3,
            one.as_secs_f64() * 1e3,
            reopen.as_secs_f64(),
            dir_bytes(dir.path()) >> 20,
        );
    }
}
