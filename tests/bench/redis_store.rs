//! What a push costs in the Redis push store (`[lease] redis`, docs/scale.md): a whole
//! push of a large source, a patch of part of it (O(patch): one Lua script setting and
//! deleting its fields only), and the read a new leader makes when it takes over.
//! Real records (the planner's own encoding), a private `redis-server` on loopback.
//!
//! `cargo build --release -p dnsplane-e2e --bin dnsplane-bench-redis-store &&
//! target/release/dnsplane-bench-redis-store [records] [patch]` (default 100000 1000).
use dnsplane_common::{Name, RecordType, SetId};
use dnsplane_e2e::redis::Redis;
use dnsplane_planner::engine::{Patch, PushStore};
use dnsplane_planner::lease::{Acquire, LeaseBackend, RedisBackend};
use dnsplane_planner::redis_store::{RedisStore, Writer};
use dnsplane_planner::source::{DesiredEntry, Labels, Origin};
use std::time::{Duration, Instant};

fn entry(i: usize, value: &str) -> DesiredEntry {
    DesiredEntry {
        name: Name::parse(&format!("host-{i}.bench.example.com")).expect("name"),
        rtype: RecordType::A,
        ttl: Some(300),
        values: vec![value.to_string()],
        set: SetId::default(),
        properties: Vec::new(),
        labels: Labels::default(),
        origin: Origin {
            source: "push:bench".into(),
            location: format!("records[{i}]").into(),
            resource: "push/bench".into(),
        },
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let records: usize = args.next().map_or(100_000, |a| a.parse().expect("records"));
    let patch_size: usize = args.next().map_or(1_000, |a| a.parse().expect("patch"));
    let redis = Redis::start().expect("redis-server");
    let timeout = Duration::from_secs(30);
    let lease = RedisBackend::new(&redis.url(), "bench", timeout).expect("lease");
    let Acquire::Acquired { epoch } = lease
        .try_acquire("bench", Duration::from_secs(600))
        .await
        .expect("acquire")
    else {
        panic!("lease not acquired")
    };
    let writer = Some(Writer {
        holder: "bench",
        epoch,
    });
    let store = PushStore::Redis(Box::new(
        RedisStore::new(&redis.url(), "bench", timeout).expect("store"),
    ));
    let entries: Vec<DesiredEntry> = (0..records)
        .map(|i| {
            entry(
                i,
                &format!("10.{}.{}.{}", i >> 16 & 255, i >> 8 & 255, i & 255),
            )
        })
        .collect();
    let t = Instant::now();
    store.put(writer, "push:bench", &entries).expect("put");
    let put = t.elapsed();
    let patch = Patch {
        upserts: (0..patch_size)
            .map(|i| entry(i * 7 % records, "192.0.2.1"))
            .collect(),
        deletes: Vec::new(),
    };
    let mut patches = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        store.patch(writer, "push:bench", &patch).expect("patch");
        patches.push(t.elapsed());
    }
    patches.sort();
    let t = Instant::now();
    let all = store.read_all().expect("read");
    let read = t.elapsed();
    assert_eq!(all[0].1.len(), records);
    println!(
        "redis push store, {records} records: whole push {put:.2?}; {patch_size}-record patch {:.2?} (median of 5); takeover read {read:.2?}",
        patches[2]
    );
}
