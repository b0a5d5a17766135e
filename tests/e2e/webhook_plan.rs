//! dnsplane's webhook judged by external-dns's own planner (support/external_dns_plan.rs,
//! ported from external-dns v0.22.0): after any `POST /records`, what `GET /records`
//! lists must make external-dns plan nothing for the endpoints it posted, loop after
//! loop; each target must come back byte for byte as it was posted (TXT included:
//! quoted or not, with spaces, quotes, backslashes, several strings, above 255 bytes);
//! `POST /adjustendpoints` must answer what `GET /records` then lists; and all of it
//! must hold after a planner restart and at 5,000 endpoints.
//!
//! The desired endpoints are compared as posted, never as adjusted: a comparison after
//! dnsplane's own normalisation (quoting TXT on both sides) is what let the quoted TXT
//! round trip pass before (docs/external-dns.md).
use dnsplane_e2e::external_dns_plan::{Endpoint, plan_strict};
use dnsplane_planner::config::{PlannerConfig, WebhookConfig, ZoneConfig};
use dnsplane_planner::engine::Engine;
use dnsplane_planner::metrics::PlannerMetrics;
use dnsplane_planner::webhook::Webhook;
use dnsplane_planner::webhook::wire::MEDIA_TYPE;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const ZONE: &str = "plan.test";

/// The planner's webhook in-process on 127.0.0.1:0, its durable store in `dir`: a new
/// one on the same `dir` is a restart (the pushed source read back from the store).
struct Hook {
    base: String,
    engine: Arc<Engine>,
    stop: tokio_util::sync::CancellationToken,
    http: reqwest::Client,
}

impl Hook {
    async fn start(dir: &Path) -> Hook {
        let zone = dnsplane_common::Name::parse(ZONE).expect("zone");
        let engine = Engine::new(
            PlannerConfig::with_zones(vec![ZoneConfig::new(zone, "webhook")]),
            PlannerMetrics::unregistered(),
            dnsplane_planner::lease::LeaseHandle::sole_writer(),
        )
        .expect("engine");
        engine.set_store(dnsplane_planner::store::DesiredStore::open(dir).expect("store"));
        engine.restore_pushes().expect("restore");
        let hook = Webhook::new(
            engine.clone(),
            PlannerMetrics::unregistered(),
            &WebhookConfig {
                listen: "127.0.0.1:0".parse().expect("addr"),
                source: "external-dns".into(),
            },
        );
        let listener = dnsplane_e2e::loopback().await;
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let stop = tokio_util::sync::CancellationToken::new();
        tokio::spawn(hook.serve(listener, None, stop.clone()));
        Hook {
            base,
            engine,
            stop,
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("client"),
        }
    }

    async fn post(&self, path: &str, body: String) -> (u16, String) {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", MEDIA_TYPE)
            .header("accept", MEDIA_TYPE)
            .body(body)
            .send()
            .await
            .expect("post");
        (r.status().as_u16(), r.text().await.expect("body"))
    }

    async fn records(&self) -> Vec<Value> {
        let r = self
            .http
            .get(format!("{}/records", self.base))
            .header("accept", MEDIA_TYPE)
            .send()
            .await
            .expect("records");
        assert_eq!(r.status().as_u16(), 200);
        r.json().await.expect("a JSON list")
    }

    async fn adjust(&self, desired: &[Value]) -> Vec<Value> {
        let (code, body) = self
            .post(
                "/adjustendpoints",
                Value::from(desired.to_vec()).to_string(),
            )
            .await;
        assert_eq!(code, 200, "{body}");
        serde_json::from_str(&body).expect("a JSON list")
    }

    /// Posts `changes`; 204 expected.
    async fn apply(&self, changes: Value) {
        let (code, body) = self.post("/records", changes.to_string()).await;
        assert_eq!(code, 204, "{body}");
    }
}

/// external-dns's key of an endpoint, as its plan table has it.
fn key(e: &Value) -> (String, String, String) {
    let ep = Endpoint::from_json(e);
    (
        dnsplane_e2e::external_dns_plan::normalize_dns_name(&ep.dns_name),
        ep.record_type,
        ep.set_identifier,
    )
}

/// What the webhook must answer for `desired` (as posted): external-dns's planner plans
/// nothing; each endpoint is listed with its targets byte for byte, in the order posted;
/// and `POST /adjustendpoints` answers exactly what `GET /records` lists.
async fn assert_round_trip(hook: &Hook, desired: &[Value], what: &str) {
    let listed = hook.records().await;
    let want: Vec<Endpoint> = desired.iter().map(Endpoint::from_json).collect();
    let got: Vec<Endpoint> = listed.iter().map(Endpoint::from_json).collect();
    let plan = plan_strict(&want, &got);
    assert_eq!(
        plan.count(),
        0,
        "{what}: external-dns v0.22 would plan {} changes, every loop:\n{}",
        plan.count(),
        serde_json::to_string_pretty(&plan).unwrap_or_default()
    );
    assert!(!plan.has_changes(), "{what}");
    let by_key: BTreeMap<_, &Value> = listed.iter().map(|e| (key(e), e)).collect();
    assert_eq!(by_key.len(), listed.len(), "{what}: one endpoint per key");
    for d in desired {
        let l = by_key
            .get(&key(d))
            .unwrap_or_else(|| panic!("{what}: {d} is not listed"));
        assert_eq!(
            l["targets"], d["targets"],
            "{what}: the targets come back as posted"
        );
    }
    let adjusted = hook.adjust(desired).await;
    for a in &adjusted {
        let l = by_key
            .get(&key(a))
            .unwrap_or_else(|| panic!("{what}: adjusted {a} is not listed"));
        assert_eq!(
            &a, l,
            "{what}: /adjustendpoints answers what /records lists"
        );
    }
}

fn ep(name: &str, rtype: &str, targets: &[&str]) -> Value {
    json!({"dnsName": format!("{name}.{ZONE}"), "recordType": rtype, "targets": targets})
}

/// The registry's TXT record for `name`, as external-dns's TXT registry writes it
/// (quotes in the target).
fn registry(name: &str, owner: &str) -> Value {
    json!({"dnsName": format!("a-{name}.{ZONE}"), "recordType": "TXT",
           "targets": [format!("\"heritage=external-dns,external-dns/owner={owner},external-dns/resource=ingress/default/{name}\"")],
           "labels": {"ownedRecord": format!("{name}.{ZONE}")}})
}

/// What external-dns users post: every type, and TXT in every form it comes in.
fn desired() -> Vec<Value> {
    let long = "k=rsa; p=".to_string() + &"A".repeat(400);
    vec![
        json!({"dnsName": format!("www.{ZONE}"), "recordType": "A", "targets": ["192.0.2.2", "192.0.2.1"],
               "labels": {"owner": "c1", "resource": "ingress/default/www"}}),
        registry("www", "c1"),
        ep("v6", "AAAA", &["2001:DB8::1"]),
        ep("alias", "CNAME", &["Target.Example.net"]),
        ep("spf", "TXT", &["v=spf1 include:_spf.example.com ~all"]),
        ep("quoted", "TXT", &["\"v=spf1 -all\""]),
        ep("spaces", "TXT", &["  two  spaces  "]),
        ep("inner", "TXT", &["say \"hi\" and a \\ backslash"]),
        ep("strings", "TXT", &["\"first string\" \"second string\""]),
        ep("several", "TXT", &["one", "two words", "\"three\""]),
        ep("dkim._domainkey", "TXT", &[long.as_str()]),
        ep("utf8", "TXT", &["café"]),
        ep("mx", "MX", &["10 mail.example.net"]),
        ep("_sip._tcp", "SRV", &["10 60 5060 sip.example.net"]),
        json!({"dnsName": format!("api.{ZONE}"), "recordType": "A", "targets": ["192.0.2.9"],
               "setIdentifier": "eu", "recordTTL": 60,
               "providerSpecific": [{"name": "aws/weight", "value": "10"}]}),
    ]
}

/// Creates, an update, the same change sets again, a restart and deletes: after each,
/// external-dns's planner plans nothing and every target comes back as posted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_dns_plans_nothing_after_any_post() {
    let dir = tempfile::tempdir().expect("temp dir");
    let hook = Hook::start(dir.path()).await;
    let first = desired();
    hook.apply(json!({"create": first})).await;
    assert_round_trip(&hook, &first, "after the creates").await;
    assert!(
        hook.engine.snapshot().source_errors.is_empty(),
        "{:#?}",
        hook.engine.snapshot().source_errors
    );

    // An update as external-dns sends it: the listed endpoint old, the desired new.
    let listed = hook.records().await;
    let old = |name: &str| {
        listed
            .iter()
            .find(|e| e["dnsName"] == format!("{name}.{ZONE}"))
            .cloned()
            .expect("listed")
    };
    let mut second = first.clone();
    second[4] = ep("spf", "TXT", &["v=spf1 include:_spf.example.org -all"]);
    second[5] = ep("quoted", "TXT", &["v=spf1 -all"]);
    second[0]["targets"] = json!(["192.0.2.3"]);
    hook.apply(json!({
        "updateOld": [old("spf"), old("quoted"), old("www")],
        "updateNew": [second[4], second[5], second[0]],
    }))
    .await;
    assert_round_trip(&hook, &second, "after the updates").await;

    // The same change set again (external-dns resends after any failure).
    hook.apply(json!({"create": second})).await;
    assert_round_trip(&hook, &second, "after a re-post").await;

    // A restart: what was posted is read back from the store, spelled as posted.
    hook.stop.cancel();
    let hook = Hook::start(dir.path()).await;
    assert_round_trip(&hook, &second, "after a restart").await;

    // Deletes.
    let (gone, kept) = second.split_at(5);
    hook.apply(json!({"delete": gone})).await;
    assert_round_trip(&hook, kept, "after the deletes").await;
    assert_eq!(hook.records().await.len(), kept.len());
    hook.stop.cancel();
}

/// A TXT target dnsplane cannot hold is refused alone, saying what is wrong with it
/// and how to write it; the rest of the change set is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_txt_target_that_cannot_be_represented_is_refused_clearly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let hook = Hook::start(dir.path()).await;
    let long_quoted = format!("\"{}\"", "x".repeat(256));
    let good = ep("good", "TXT", &["fine"]);
    hook.apply(json!({"create": [
        good,
        ep("unterminated", "TXT", &["\"v=spf1 -all"]),
        ep("between", "TXT", &["\"a\" b"]),
        ep("escape", "TXT", &["\"\\256\""]),
        ep("long", "TXT", &[long_quoted.as_str()]),
    ]}))
    .await;
    assert_round_trip(&hook, &[good], "the good one").await;
    let errors = hook.engine.snapshot().source_errors.clone();
    let message = |label: &str| {
        errors
            .iter()
            .find(|e| e.record.starts_with(&format!("{label}.{ZONE}")))
            .map(|e| e.message.clone())
            .unwrap_or_else(|| panic!("{label} refused: {errors:#?}"))
    };
    assert!(
        message("unterminated").contains("unterminated quoted string"),
        "{errors:#?}"
    );
    assert!(
        message("between").contains("quote the whole value or none of it"),
        "{errors:#?}"
    );
    assert!(message("escape").contains("above 255"), "{errors:#?}");
    assert!(
        message("long").contains("256 bytes") && message("long").contains("unquoted"),
        "{errors:#?}"
    );
    assert_eq!(errors.len(), 4, "{errors:#?}");
    hook.stop.cancel();
}

/// 5,000 endpoints in one change set (half of them the registry's TXT records, a fifth
/// of the rest user TXT records unquoted), then the same after a restart: external-dns
/// plans nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_endpoints_plan_nothing_before_and_after_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let hook = Hook::start(dir.path()).await;
    let many: Vec<Value> = (0..2500)
        .flat_map(|i| {
            let name = format!("app{i}");
            let record = match i % 5 {
                0 => ep(&name, "TXT", &[&format!("v=verification {i} token")]),
                _ => ep(&name, "A", &[&format!("192.0.2.{}", i % 250 + 1)]),
            };
            [record, registry(&name, "c1")]
        })
        .collect();
    hook.apply(json!({"create": many})).await;
    assert_eq!(hook.records().await.len(), 5000);
    assert_round_trip(&hook, &many, "5,000 endpoints").await;
    hook.stop.cancel();
    let hook = Hook::start(dir.path()).await;
    assert_round_trip(&hook, &many, "5,000 endpoints, after a restart").await;
    hook.stop.cancel();
}
