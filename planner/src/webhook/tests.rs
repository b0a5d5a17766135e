//! The webhook over real HTTP on loopback, against a real engine and a durable store:
//! what external-dns sends, how it is stored, what it reads back.
use super::*;
use crate::config::PlannerConfig;
use dnsplane_common::Name;
use serde_json::{Value, json};

fn zones() -> Vec<ZoneConfig> {
    vec![ZoneConfig::new(Name::parse("example.com").unwrap(), "a")]
}

struct Served {
    base: String,
    engine: Arc<Engine>,
    stop: CancellationToken,
}

async fn serve(dir: &std::path::Path) -> Served {
    let config = PlannerConfig::with_zones(zones());
    let engine = Engine::for_tests(config);
    engine.set_store(crate::store::DesiredStore::open(dir).unwrap());
    engine.restore_pushes().unwrap();
    let hook = Webhook::new(
        engine.clone(),
        PlannerMetrics::unregistered(),
        &WebhookConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            source: "external-dns".into(),
        },
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    tokio::spawn(hook.serve(listener, None, stop.clone()));
    Served { base, engine, stop }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .unwrap()
}

async fn post(s: &Served, path: &str, body: String) -> (u16, String) {
    let r = client()
        .post(format!("{}{path}", s.base))
        .header("content-type", MEDIA_TYPE)
        .body(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// `GET path`, accepting the webhook's media type.
async fn get(s: &Served, path: &str) -> reqwest::Response {
    let url = format!("{}{path}", s.base);
    let request = client().get(url).header("accept", MEDIA_TYPE);
    request.send().await.unwrap()
}

/// `GET /records` answers `want`, before and after a restart of the webhook on `dir`.
async fn reads_back_across_a_restart(s: Served, dir: &std::path::Path, want: &[Value]) {
    assert_eq!(records(&s).await, want);
    s.stop.cancel();
    let again = serve(dir).await;
    assert_eq!(records(&again).await, want);
    again.stop.cancel();
}

async fn records(s: &Served) -> Vec<Value> {
    let r = get(s, "/records").await;
    assert_eq!(r.status().as_u16(), 200);
    let mut v: Vec<Value> = r.json().await.unwrap();
    v.sort_by_key(|e| e.to_string());
    v
}

fn a(name: &str, target: &str) -> Value {
    json!({"dnsName": name, "targets": [target], "recordType": "A"})
}

/// Negotiation answers the exact media type and the zones as the domain filter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negotiation_names_the_zones_in_the_exact_media_type() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path()).await;
    let r = get(&s, "/").await;
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], MEDIA_TYPE);
    let filter: Value = r.json().await.unwrap();
    assert_eq!(filter, json!({"include": ["example.com"]}));
    s.stop.cancel();
}

/// A change set is stored before 204, idempotent when sent again, its one bad
/// endpoint refused alone (and shown with the source errors until it is fixed); a body
/// external-dns would never send is 400 and changes nothing; what was stored is read
/// back as `GET /records` reports it, and survives a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_are_stored_idempotent_refused_alone_and_restored() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path()).await;
    assert_eq!(records(&s).await, Vec::<Value>::new());
    let registry = json!({"dnsName": "a-www.example.com", "recordType": "TXT",
        "targets": ["\"heritage=external-dns,external-dns/owner=c1,external-dns/resource=ingress/default/web\""],
        "labels": {"ownedRecord": "www.example.com"}});
    // A name in no configured zone is a body external-dns (filtered by the zones)
    // never sends: 400 naming the field and the nearest zone, nothing changed.
    let outside = json!({
        "create": [a("www.example.com", "192.0.2.1"), a("www.exmaple.com", "192.0.2.9")],
    });
    let (code, body) = post(&s, "/records", outside.to_string()).await;
    assert_eq!(code, 400, "{body}");
    assert!(
        body.contains("create[1].dnsName") && body.contains("did you mean example.com?"),
        "{body}"
    );
    assert_eq!(records(&s).await, Vec::<Value>::new());
    let changes = json!({
        "create": [a("www.example.com", "192.0.2.1"), registry, a("bad.example.com", "300.1.1.1")],
    });
    let (code, body) = post(&s, "/records", changes.to_string()).await;
    assert_eq!(code, 204, "{body}");
    let got = records(&s).await;
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!(
        got[1],
        json!({"dnsName": "www.example.com", "targets": ["192.0.2.1"], "recordType": "A", "recordTTL": 300})
    );
    let errors = s.engine.snapshot().source_errors.clone();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors
            .iter()
            .any(|e| e.record == "bad.example.com. A"
                && e.message.contains("not a valid IPv4 address")),
        "{errors:#?}"
    );

    // The same change set again: nothing changes (a create of what is there).
    let (code, _) = post(&s, "/records", changes.to_string()).await;
    assert_eq!(code, 204);
    assert_eq!(records(&s).await, got);

    // An update pairs old and new; a delete of what is not there is no error; the
    // fixed endpoint clears its refusal.
    let changes = json!({
        "updateOld": [a("www.example.com", "192.0.2.1")],
        "updateNew": [a("www.example.com", "192.0.2.2")],
        "create": [a("bad.example.com", "192.0.2.3")],
        "delete": [a("never.example.com", "192.0.2.4"), a("elsewhere.example.org", "192.0.2.9")],
    });
    let (code, body) = post(&s, "/records", changes.to_string()).await;
    assert_eq!(code, 204, "{body}");
    let got = records(&s).await;
    assert_eq!(got.len(), 3, "{got:#?}");
    assert!(got.contains(&json!({"dnsName": "www.example.com", "targets": ["192.0.2.2"], "recordType": "A", "recordTTL": 300})), "{got:#?}");
    assert!(
        s.engine.snapshot().source_errors.is_empty(),
        "{:#?}",
        s.engine.snapshot().source_errors
    );

    // Malformed: 400, nothing changed.
    for bad in [
        "{not json",
        r#"{"create": [{"dnsName": 5}]}"#,
        r#"{"updateOld": [], "updateNew": [{"dnsName": "x.example.com", "recordType": "A", "targets": ["192.0.2.1"]}]}"#,
    ] {
        let (code, _) = post(&s, "/records", bad.to_string()).await;
        assert_eq!(code, 400, "{bad}");
    }
    // A restart reads back what was stored.
    reads_back_across_a_restart(s, dir.path(), &got).await;
}

/// A body over the documented 64 MiB is refused whole with 413 before it is parsed:
/// nothing of it is stored, and what was stored before stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_is_413_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path()).await;
    let first = json!({"create": [a("www.example.com", "192.0.2.1")]});
    assert_eq!(post(&s, "/records", first.to_string()).await.0, 204);
    let before = records(&s).await;
    // A valid change set padded past the limit with whitespace JSON allows.
    let mut big = json!({"create": [a("big.example.com", "192.0.2.2")]}).to_string();
    big.push_str(&" ".repeat(MAX_BODY + 1 - big.len()));
    let (code, body) = post(&s, "/records", big).await;
    assert_eq!(code, 413, "{body}");
    assert_eq!(records(&s).await, before);
    // Just under the limit is taken.
    let mut fits = json!({"create": [a("fits.example.com", "192.0.2.3")]}).to_string();
    fits.push_str(&" ".repeat(MAX_BODY - fits.len()));
    assert_eq!(post(&s, "/records", fits).await.0, 204);
    assert_eq!(records(&s).await.len(), 2);
    s.stop.cancel();
}

/// Adjusting answers what `GET /records` will report, so that a converged world plans
/// nothing: adjusted desired endpoints, applied, read back equal, and adjusting twice
/// changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adjusted_endpoints_read_back_equal_once_applied() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path()).await;
    let desired = json!([
        {"dnsName": "WWW.example.com", "recordType": "A", "targets": ["192.0.2.2", "192.0.2.1"], "labels": {"resource": "ingress/default/web"}},
        {"dnsName": "cname.example.com", "recordType": "CNAME", "targets": ["www.Example.com."]},
        {"dnsName": "api.example.com", "recordType": "A", "targets": ["192.0.2.5"], "setIdentifier": "eu",
         "recordTTL": 60, "providerSpecific": [{"name": "aws/weight", "value": "10"}]},
    ]);
    let (code, body) = post(&s, "/adjustendpoints", desired.to_string()).await;
    assert_eq!(code, 200, "{body}");
    let adjusted: Vec<Value> = serde_json::from_str(&body).unwrap();
    let (_, twice) = post(&s, "/adjustendpoints", body.clone()).await;
    assert_eq!(
        serde_json::from_str::<Vec<Value>>(&twice).unwrap(),
        adjusted
    );
    assert_eq!(
        adjusted[0]["labels"],
        json!({"resource": "ingress/default/web"})
    );
    let (code, _) = post(&s, "/records", json!({"create": adjusted}).to_string()).await;
    assert_eq!(code, 204);
    let mut applied = adjusted.clone();
    applied.sort_by_key(|e| e.to_string());
    // Read back with the labels they were given, as external-dns's in-memory provider
    // keeps them; and again after a restart (persisted with the desired state).
    reads_back_across_a_restart(s, dir.path(), &applied).await;
}

/// A change of labels alone is stored and read back, and re-plans nothing (no name
/// is touched, so nothing is written to the provider); a bad label refuses its
/// endpoint alone, saying which label.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_alone_change_nothing_planned_and_bad_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path()).await;
    let web = |owner: &str| {
        json!({"dnsName": "www.example.com", "recordType": "A", "targets": ["192.0.2.1"],
               "recordTTL": 300, "labels": {"owner": owner}})
    };
    let (code, _) = post(&s, "/records", json!({"create": [web("c1")]}).to_string()).await;
    assert_eq!(code, 204);
    let zone = Name::parse("example.com").unwrap();
    let dirty = |s: &Served| s.engine.take_dirty(&zone);
    assert!(!dirty(&s).is_empty(), "a new record is to be planned");
    let changes = json!({"updateOld": [web("c1")], "updateNew": [web("c2")]});
    let (code, _) = post(&s, "/records", changes.to_string()).await;
    assert_eq!(code, 204);
    assert_eq!(records(&s).await, vec![web("c2")]);
    assert!(dirty(&s).is_empty(), "labels alone re-plan nothing");

    let long = "v".repeat(crate::source::labels::MAX_LABEL_VALUE + 1);
    let bad = json!({"dnsName": "bad.example.com", "recordType": "A", "targets": ["192.0.2.2"],
                     "labels": {"resource": long}});
    let (code, _) = post(&s, "/records", json!({"create": [bad]}).to_string()).await;
    assert_eq!(code, 204);
    assert_eq!(records(&s).await, vec![web("c2")]);
    let errors = s.engine.snapshot().source_errors.clone();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].record, "bad.example.com. A");
    assert!(
        errors[0]
            .message
            .starts_with("create[0].labels: label \"resource\""),
        "{errors:#?}"
    );
    s.stop.cancel();
}

/// The planner config docs/external-dns.md gives loads as it is.
#[test]
fn the_documented_config_loads() {
    let doc = include_str!("../../../docs/external-dns.md");
    let block = dnsplane_testing::docs::code_blocks(doc, "toml")[0];
    let config: PlannerConfig = toml::from_str(block).unwrap_or_else(|e| panic!("{e}\n{block}"));
    config.validate().expect("valid");
    let hook = config.webhook.expect("[webhook]");
    assert_eq!(hook.listen, "127.0.0.1:8888".parse().unwrap());
    assert_eq!(hook.source, "external-dns");
}
