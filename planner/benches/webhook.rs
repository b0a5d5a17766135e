//! What external-dns waits for: the time from sending a change set to the webhook's
//! 204 (stored, durable), over loopback HTTP against a real engine and store, for
//! change sets of N endpoints (the default 5,000: the issue's "a 5,000-endpoint
//! ApplyChanges acknowledged in under 1 s"), each into a source that already holds
//! what the runs before it stored; and one endpoint changed in that source.
//!
//! `cargo bench -p dnsplane-planner --bench webhook -- 5000 20000`
use dnsplane_common::Name;
use dnsplane_planner::config::{ConflictPolicy, PlannerConfig, Policy, WebhookConfig, ZoneConfig};
use dnsplane_planner::engine::Engine;
use dnsplane_planner::metrics::PlannerMetrics;
use dnsplane_planner::webhook::Webhook;
use std::time::{Duration, Instant};

const RUNS: usize = 5;

fn endpoints(n: usize, round: usize) -> Vec<serde_json::Value> {
    (0..n)
        .map(|i| {
            serde_json::json!({
                "dnsName": format!("r{round}-h{i}.example.com"),
                "recordType": "A",
                "targets": [format!("10.{}.{}.{}", round, (i >> 8) & 255, i & 255)],
                "labels": {"owner": "bench", "resource": "ingress/default/web"},
            })
        })
        .collect()
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() { vec![5000] } else { sizes };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "| endpoints | POST /records → 204 (p50 / max of {RUNS}) | one endpoint changed → 204 (p50) |"
    );
    println!("|---:|---:|---:|");
    for n in sizes {
        rt.block_on(async {
            let dir = tempfile::tempdir().expect("dir");
            let config = PlannerConfig::with_zones(vec![ZoneConfig {
                name: Name::parse("example.com").expect("zone"),
                account: "a".into(),
                policy: Policy::Sync,
                conflict: ConflictPolicy::Report,
                default_ttl: 300,
                external_dns: None,
                merge: Default::default(),
            }]);
            let engine = Engine::new(
                config,
                PlannerMetrics::unregistered(),
                dnsplane_planner::lease::LeaseHandle::sole_writer(),
            )
            .expect("engine");
            engine
                .set_store(dnsplane_planner::store::DesiredStore::open(dir.path()).expect("store"));
            let hook = Webhook::new(
                engine,
                PlannerMetrics::unregistered(),
                &WebhookConfig {
                    listen: "127.0.0.1:0".parse().expect("addr"),
                    source: "external-dns".into(),
                },
            );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let url = format!("http://{}/records", listener.local_addr().expect("addr"));
            let stop = tokio_util::sync::CancellationToken::new();
            tokio::spawn(hook.serve(listener, None, stop.clone()));
            let client = reqwest::Client::new();
            let post = async |body: String| {
                let t = Instant::now();
                let r = client
                    .post(&url)
                    .header("content-type", dnsplane_planner::webhook::wire::MEDIA_TYPE)
                    .body(body)
                    .send()
                    .await
                    .expect("post");
                assert_eq!(r.status().as_u16(), 204);
                t.elapsed()
            };
            let mut whole: Vec<Duration> = Vec::new();
            for round in 0..RUNS {
                let body = serde_json::json!({"create": endpoints(n, round)}).to_string();
                whole.push(post(body).await);
            }
            let mut one: Vec<Duration> = Vec::new();
            for i in 0..RUNS {
                let ep = serde_json::json!({"dnsName": "r0-h0.example.com", "recordType": "A",
                    "targets": [format!("10.99.0.{i}")]});
                let body =
                    serde_json::json!({"updateOld": [ep.clone()], "updateNew": [ep]}).to_string();
                one.push(post(body).await);
            }
            whole.sort();
            one.sort();
            let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
            println!(
                "| {n} | {} / {} | {} |",
                ms(whole[RUNS / 2]),
                ms(whole[RUNS - 1]),
                ms(one[RUNS / 2])
            );
            stop.cancel();
        });
    }
}
