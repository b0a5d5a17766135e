//! What a desired-state update costs as a source grows: loading a source of N records,
//! replacing it with a snapshot that differs in one record (a file source's edit), a
//! one-record patch (`PatchDesired`), and validating a whole push of N records
//! (`PutDesired`). Each step should grow linearly with N (the first and last) or not
//! at all (the patch); none quadratically.
//!
//! `cargo bench -p dnsplane-planner --bench desired -- 10000 100000 1000000`
use dnsplane_common::{Name, RecordType, pb};
use dnsplane_planner::config::{ConflictPolicy, Policy, ZoneConfig};
use dnsplane_planner::desired::DesiredIndex;
use dnsplane_planner::service::validate_push;
use dnsplane_planner::source::{DesiredEntry, Origin};
use std::time::Instant;

fn zones() -> Vec<ZoneConfig> {
    (0..100)
        .map(|z| ZoneConfig {
            name: Name::parse(&format!("z{z}.example.com")).expect("zone"),
            account: "a".into(),
            policy: Policy::Sync,
            conflict: ConflictPolicy::Report,
            default_ttl: 300,
            external_dns: None,
            merge: Default::default(),
        })
        .collect()
}

fn entry(i: usize, last_octet: usize) -> DesiredEntry {
    DesiredEntry {
        name: Name::parse(&format!("h{i}.z{}.example.com", i % 100)).expect("name"),
        rtype: RecordType::A,
        ttl: None,
        values: vec![format!(
            "10.{}.{}.{}",
            (i >> 16) & 255,
            (i >> 8) & 255,
            last_octet
        )],
        set: dnsplane_common::SetId::NONE,
        properties: Vec::new(),
        labels: Default::default(),
        origin: Origin {
            source: "file".into(),
            location: format!("bench.yaml:{i}").into(),
            resource: format!("DNSEndpoint default/e{}", i / 10).into(),
        },
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10_000, 50_000, 200_000]
    } else {
        sizes
    };
    let zones = zones();
    println!(
        "| records | load | one-record change (whole snapshot) | one-record patch | validate a push |"
    );
    println!("|---:|---:|---:|---:|---:|");
    for n in sizes {
        let entries: Vec<DesiredEntry> = (0..n).map(|i| entry(i, i & 255)).collect();
        let mut idx = DesiredIndex::new(&zones);
        let t = Instant::now();
        idx.update_source("file:0", &entries, Vec::new());
        let load = ms(t);
        assert_eq!(idx.len(), n);

        let mut changed = entries.clone();
        changed[n / 2] = entry(n / 2, (n / 2 + 1) & 255);
        let t = Instant::now();
        let touched = idx.update_source("file:0", &changed, Vec::new());
        let change = ms(t);
        assert_eq!(touched.values().map(|s| s.len()).sum::<usize>(), 1);

        // The best of a few, a patch being too short to time once on a busy machine.
        let mut patch = f64::MAX;
        for k in 0..5 {
            let t = Instant::now();
            let touched = idx.patch_source("file:0", &[entry(n / 3, (n / 3 + k) & 255)], &[]);
            patch = patch.min(ms(t));
            assert!(touched.values().map(|s| s.len()).sum::<usize>() <= 1);
        }

        let req = pb::PutDesiredRequest {
            source: "bench".into(),
            records: entries
                .iter()
                .map(|e| pb::DesiredRecord {
                    name: e.name.to_string(),
                    r#type: e.rtype.as_str().into(),
                    ttl: 0,
                    values: e.values.clone(),
                    ..Default::default()
                })
                .collect(),
        };
        let t = Instant::now();
        let accepted = validate_push(&zones, &req).expect("valid");
        let validate = ms(t);
        assert_eq!(accepted.len(), n);
        println!("| {n} | {load:.1} ms | {change:.1} ms | {patch:.3} ms | {validate:.1} ms |");
    }
}
