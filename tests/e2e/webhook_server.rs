//! dnsplane as external-dns's webhook provider, checked by a client that acts as
//! external-dns does (INTEROP.md §1.6), against the planner and applier processes and
//! a real PowerDNS: negotiation, records round-trip with the TXT registry's records,
//! adjust idempotent (a converged world plans nothing, loop after loop), 204 semantics,
//! an idempotent re-post, one bad endpoint refused alone, 400 for a body external-dns
//! never sends, 5xx only while it is worth retrying, and a 5,000-endpoint change set.
//!
//! The client is written from the protocol text, not from dnsplane's webhook types:
//! its own JSON, external-dns v0.22's own planner (support/external_dns_plan.rs), its
//! own TXT registry records. After every `POST /records` the endpoints as given (not as
//! adjusted) must plan nothing against `GET /records`; user TXT records (unquoted) sit
//! beside the registry's (quoted), and a planner restart changes nothing.
use dnsplane_e2e::external_dns_plan::{self as edns_plan, Endpoint};
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use dnsplane_e2e::servers::{Kind, RealServer};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

const MEDIA: &str = "application/external.dns.webhook+json;version=1";
const OWNER: &str = "e2e-cluster";

/// external-dns's webhook client, as it calls the planner (also used by the labels test).
pub(crate) struct ExternalDns {
    base: String,
    http: reqwest::Client,
    rt: tokio::runtime::Runtime,
}

impl ExternalDns {
    pub(crate) fn new(port: u16) -> ExternalDns {
        ExternalDns {
            base: format!("http://127.0.0.1:{port}"),
            // external-dns's one timeout for a round trip: read 5 s + write 10 s. No
            // idle connection is kept: tests kill the planner in between.
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(15))
                .pool_max_idle_per_host(0)
                .build()
                .expect("client"),
            rt: crate::stack::runtime(),
        }
    }

    /// `GET path`, accepting the webhook's media type.
    async fn get(&self, path: &str) -> reqwest::Result<reqwest::Response> {
        let url = format!("{}{path}", self.base);
        self.http.get(url).header("accept", MEDIA).send().await
    }

    fn negotiate(&self) -> (u16, String, Value) {
        self.rt.block_on(async {
            let r = self.get("/").await.expect("negotiate");
            let ct = r
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap_or("").to_string())
                .unwrap_or_default();
            (
                r.status().as_u16(),
                ct,
                r.json().await.unwrap_or(Value::Null),
            )
        })
    }

    pub(crate) fn records(&self) -> Vec<Value> {
        self.rt.block_on(async {
            let r = self.get("/records").await.expect("records");
            assert_eq!(r.status().as_u16(), 200, "Records must answer 200 exactly");
            r.json().await.expect("a JSON list")
        })
    }

    fn adjust(&self, desired: &[Value]) -> Vec<Value> {
        self.rt.block_on(async {
            let r = self
                .http
                .post(format!("{}/adjustendpoints", self.base))
                .header("content-type", MEDIA)
                .header("accept", MEDIA)
                .body(Value::from(desired.to_vec()).to_string())
                .send()
                .await
                .expect("adjust");
            assert_eq!(
                r.status().as_u16(),
                200,
                "AdjustEndpoints must answer 200 exactly"
            );
            r.json().await.expect("a JSON list")
        })
    }

    pub(crate) fn apply(&self, body: String) -> u16 {
        self.rt.block_on(async {
            self.http
                .post(format!("{}/records", self.base))
                .header("content-type", MEDIA)
                .body(body)
                .send()
                .await
                .expect("apply")
                .status()
                .as_u16()
        })
    }

    /// One reconcile loop as external-dns runs it: records, adjust, plan (external-dns's
    /// planner, every type managed), apply when the plan has changes. Returns (the
    /// plan's changes, the apply's status).
    fn reconcile(&self, desired: &[Value]) -> (Value, Option<u16>) {
        let current: Vec<Endpoint> = self.records().iter().map(Endpoint::from_json).collect();
        let adjusted: Vec<Endpoint> = self
            .adjust(desired)
            .iter()
            .map(Endpoint::from_json)
            .collect();
        let plan = edns_plan::plan_strict(&adjusted, &current);
        let status = plan
            .has_changes()
            .then(|| self.apply(serde_json::to_string(&plan).expect("json")));
        (serde_json::to_value(&plan).expect("json"), status)
    }

    /// external-dns plans nothing for `desired` as given (not adjusted) against what the
    /// webhook lists: every target came back as it was posted.
    fn assert_converged(&self, desired: &[Value], what: &str) {
        let current: Vec<Endpoint> = self.records().iter().map(Endpoint::from_json).collect();
        let want: Vec<Endpoint> = desired.iter().map(Endpoint::from_json).collect();
        let plan = edns_plan::plan_strict(&want, &current);
        assert_eq!(plan.count(), 0, "{what}: external-dns would plan {plan:#?}");
    }
}

fn changes(plan: &Value) -> usize {
    ["create", "updateNew", "delete"]
        .iter()
        .map(|k| plan[k].as_array().map_or(0, Vec::len))
        .sum()
}

/// An A endpoint and the TXT registry's record for it (new format, `a-` prefix), as
/// external-dns's registry adds them to the desired state.
fn with_registry(zone: &str, label: &str, ip: &str) -> [Value; 2] {
    with_registry_of(zone, label, "A", &[ip])
}

/// A user's SPF record (unquoted, as users write it) and the registry's record for it.
fn txt_with_registry(zone: &str, label: &str, ip: &str) -> [Value; 2] {
    let spf = format!("v=spf1 ip4:{ip} include:_spf.example.com ~all");
    with_registry_of(zone, label, "TXT", &[&spf])
}

fn with_registry_of(zone: &str, label: &str, rtype: &str, targets: &[&str]) -> [Value; 2] {
    [
        json!({"dnsName": format!("{label}.{zone}"), "recordType": rtype, "targets": targets,
               "labels": {"owner": OWNER, "resource": "ingress/default/web"}}),
        json!({"dnsName": format!("a-{label}.{zone}"), "recordType": "TXT",
               "targets": [format!("\"heritage=external-dns,external-dns/owner={OWNER},external-dns/resource=ingress/default/web\"")],
               "labels": {"ownedRecord": format!("{label}.{zone}")}}),
    ]
}

fn desired(zone: &str, n: usize, first_ip: &str) -> Vec<Value> {
    (0..n)
        .flat_map(|i| {
            let ip = if i == 0 {
                first_ip.to_string()
            } else {
                format!("192.0.2.{}", i % 250 + 1)
            };
            match i % 5 {
                4 => txt_with_registry(zone, &format!("app{i}"), &ip),
                _ => with_registry(zone, &format!("app{i}"), &ip),
            }
        })
        .collect()
}

fn wait_converged(s: &RealStack, n: u32) {
    let mut last = BTreeMap::new();
    let ok = dnsplane_e2e::wait_for(Duration::from_secs(60), || {
        last = s.states_count();
        (last.get("converged") == Some(&n) && last.len() == 1).then_some(())
    });
    assert!(
        ok.is_some(),
        "wanted {n} converged, last saw {last:?}; logs:\n{}",
        s.logs()
    );
}

#[test]
fn external_dns_drives_dnsplane_through_the_webhook_protocol() {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = RealServer::start(Kind::Pdns) else {
        return;
    };
    let port = dnsplane_testing::tools::free_port();
    let mut s = RealStack::start(
        server,
        tools,
        Options {
            planner_extra: format!("\n[webhook]\nlisten = \"127.0.0.1:{port}\"\n"),
            ..Options::default()
        },
    );
    let zone = s.zone().to_string();
    let zone = zone.trim_end_matches('.').to_string();
    let edns = ExternalDns::new(port);
    let up = dnsplane_e2e::wait_for(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(up.is_some(), "the webhook listens; logs:\n{}", s.logs());

    // Negotiation: the exact media type, the zone as the domain filter.
    let (status, ct, filter) = edns.negotiate();
    assert_eq!((status, ct.as_str()), (200, MEDIA));
    assert_eq!(filter, json!({"include": [zone]}));

    // The first loop creates everything, registry records included; 204.
    assert_eq!(edns.records(), Vec::<Value>::new());
    let want = desired(&zone, 50, "192.0.2.200");
    let (plan, status) = edns.reconcile(&want);
    assert_eq!((changes(&plan), status), (100, Some(204)), "{plan}");
    edns.assert_converged(&want, "after the creates");
    wait_converged(&s, 100);
    assert_eq!(
        s.dig(&format!("app4.{zone}"), "TXT"),
        ["\"v=spf1 ip4:192.0.2.5 include:_spf.example.com ~all\""],
        "the provider gets the TXT data quoted"
    );
    assert_eq!(s.dig(&format!("app0.{zone}"), "A"), ["192.0.2.200"]);
    assert_eq!(
        s.dig(&format!("a-app0.{zone}"), "TXT"),
        [format!(
            "\"heritage=external-dns,external-dns/owner={OWNER},external-dns/resource=ingress/default/web\""
        )]
    );

    // A converged world plans nothing, loop after loop; the registry's records round-trip.
    for i in 0..10 {
        let (plan, status) = edns.reconcile(&want);
        assert_eq!((changes(&plan), status), (0, None), "loop {i}: {plan}");
    }
    // A planner restart (kill -9) changes nothing external-dns sees.
    s.restart_planner_with(|| {});
    let up = dnsplane_e2e::wait_for(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(
        up.is_some(),
        "the webhook listens again; logs:\n{}",
        s.logs()
    );
    edns.assert_converged(&want, "after a planner restart");
    let (plan, status) = edns.reconcile(&want);
    assert_eq!(
        (changes(&plan), status),
        (0, None),
        "after a restart: {plan}"
    );
    let records = edns.records();
    assert_eq!(records.len(), 100);
    assert!(
        records
            .iter()
            .any(|e| e["dnsName"] == format!("a-app7.{zone}") && e["recordType"] == "TXT")
    );

    // One change is one update; it reaches PowerDNS.
    let changed = desired(&zone, 50, "192.0.2.201");
    let (plan, status) = edns.reconcile(&changed);
    assert_eq!((changes(&plan), status), (1, Some(204)), "{plan}");
    edns.assert_converged(&changed, "after an update");
    wait_converged(&s, 100);
    assert_eq!(s.dig(&format!("app0.{zone}"), "A"), ["192.0.2.201"]);

    // Idempotent: the same creates posted again are no error and change nothing.
    let creates = json!({"create": edns.adjust(&changed)}).to_string();
    assert_eq!(edns.apply(creates), 204);
    edns.assert_converged(&changed, "after a re-post");
    assert_eq!(edns.reconcile(&changed).0["create"], json!([]));

    // One endpoint dnsplane cannot take: 204, the rest applied, the refusal in status.
    let mut with_bad = changed.clone();
    with_bad.push(
        json!({"dnsName": format!("bad.{zone}"), "recordType": "A", "targets": ["300.1.1.1"]}),
    );
    with_bad.extend(with_registry(&zone, "extra", "192.0.2.77"));
    let (_, status) = edns.reconcile(&with_bad);
    assert_eq!(status, Some(204));
    wait_converged(&s, 102);
    assert_eq!(s.dig(&format!("extra.{zone}"), "A"), ["192.0.2.77"]);
    let errors = s.planner_status().source_errors;
    assert!(
        errors
            .iter()
            .any(|e| e.record.starts_with(&format!("bad.{zone}")) && e.message.contains("IPv4")),
        "{errors:?}"
    );

    // A body external-dns never sends: 400, nothing changes.
    assert_eq!(edns.apply("{\"create\": [".into()), 400);
    assert_eq!(edns.records().len(), 102);

    // The store cannot be written: 503 (external-dns logs a soft error and comes back
    // next loop); once it can, the same change goes in.
    let desired_dir = s.dir().join(".dnsplane-state/desired");
    let aside = s.dir().join("desired-aside");
    std::fs::rename(&desired_dir, &aside).expect("move the store aside");
    std::fs::write(&desired_dir, "not a directory").expect("block the store");
    let later = desired(&zone, 51, "192.0.2.201");
    let (_, status) = edns.reconcile(&later);
    assert_eq!(status, Some(503));
    assert_eq!(edns.records().len(), 102, "nothing changed");
    std::fs::remove_file(&desired_dir).expect("unblock");
    std::fs::rename(&aside, &desired_dir).expect("put the store back");
    let (_, status) = edns.reconcile(&later);
    assert_eq!(status, Some(204));
    edns.assert_converged(&later, "once the store is back");
    wait_converged(&s, 102);

    // 5,000 endpoints in one change set: acknowledged (its time is in the benchmark).
    let big = desired(&zone, 2500, "192.0.2.201");
    let (plan, status) = edns.reconcile(&big);
    assert_eq!(status, Some(204), "{}", changes(&plan));
    assert_eq!(edns.records().len(), 5000);
    edns.assert_converged(&big, "5,000 endpoints");
    wait_converged(&s, 5000);
}
