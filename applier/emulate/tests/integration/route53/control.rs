//! The unsigned `/_emulator/` API.
use crate::support::{change, opts, start};
use dnsplane_emulate::route53::{RRSetView, Stats};
use serde_json::{Value, json};

#[tokio::test]
async fn faults_stats_zones_and_rrsets_over_http() {
    let (emu, c) = start(opts()).await;
    let base = format!("{}/_emulator", emu.endpoint());
    let http = &c.http;
    // Zones.
    let r = http
        .post(format!("{base}/zones"))
        .json(&json!({"name": "example.com"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let zone = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let zones: Value = http
        .get(format!("{base}/zones"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(zones[0]["name"], "example.com.");
    // A fault rule as JSON, then a list of two.
    let r = http
        .post(format!("{base}/faults"))
        .json(&json!({"action": "throttle", "op": "change", "times": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = http
        .post(format!("{base}/faults"))
        .json(&json!([{"action": "latency", "delay": "10ms"}, {"action": "error", "op": "get_change", "status": 500}]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["added"], 2);
    // An invalid rule names its field.
    let r = http
        .post(format!("{base}/faults"))
        .json(&json!({"action": "throttle", "op": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let msg = r.json::<Value>().await.unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("op:"), "{msg}");
    let r = http
        .post(format!("{base}/faults"))
        .json(&json!({"action": "throttle", "tims": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("tims"));
    // The rule acts on the API.
    let a = change("CREATE", "a.example.com", "A", 60, &["192.0.2.1"]);
    assert_eq!(
        c.change(&zone, std::slice::from_ref(&a)).await.code(),
        "Throttling"
    );
    let rules: Value = http
        .get(format!("{base}/faults"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rules[0]["fired"], 1);
    assert_eq!(rules.as_array().unwrap().len(), 3);
    let r = http.delete(format!("{base}/faults")).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(c.change(&zone, &[a]).await.status, 200);
    // Stats and record sets.
    let stats: Stats = http
        .get(format!("{base}/stats"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats.requests.get("ChangeResourceRecordSets"), Some(&2));
    assert_eq!(stats.changes_committed, 1);
    assert_eq!(stats.throttled, 1);
    assert_eq!(stats, emu.stats());
    let sets: Vec<RRSetView> = http
        .get(format!("{base}/zones/{zone}/rrsets"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sets, emu.rrsets(&zone));
    assert_eq!(sets.len(), 3);
    let r = http
        .get(format!("{base}/zones/Z0NOPE/rrsets"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    emu.stop().await;
}
