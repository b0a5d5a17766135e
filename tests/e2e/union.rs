//! Issue 33, "three clusters, one name": two Kubernetes clusters (two fake API
//! servers, each a LoadBalancer Service asking for `api.<zone>`) and an external-dns
//! webhook push all want one A record set, in a zone with `merge = "union"`. A real
//! PowerDNS serves the union of their addresses. Then cluster B's API goes down: B's
//! address stays (never delete on doubt, per source). Then B deletes its Service:
//! only B's address goes. `dnsplane records NAME` shows each value with its sources.
//! The planner config is docs/targets.md's recipe, read from the page.
use crate::kubernetes_kinds::runtime;
use crate::webhook_server::ExternalDns;
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use dnsplane_e2e::servers::{Kind, RealServer};
use dnsplane_testing::kube_api::fixtures::service_load_balancer;
use dnsplane_testing::kube_api::{FakeKubeApi, Resource};
use dnsplane_testing::wait_for;
use std::time::Duration;

const HOSTNAME: &str = "external-dns.alpha.kubernetes.io/hostname";
/// A safety net for each wait, not a performance claim.
const WAIT: Duration = Duration::from_secs(30);

/// docs/targets.md's multi-cluster recipe with this test's API servers, webhook port
/// and zone: the lines after the recipe's `[[zones]]` table's name and account.
fn recipe(zone: &str, a: &FakeKubeApi, b: &FakeKubeApi, webhook: u16) -> String {
    let block =
        dnsplane_e2e::doc_toml_block("targets.md", "# planner.toml — three clusters, one name");
    // The stack writes the zone's name and account itself: keep the recipe's other
    // zone keys, then its sources and webhook.
    let (_, rest) = block
        .split_once("account = \"pdns\"\n")
        .expect("the recipe's zone names account pdns");
    // The fake API servers take no token and speak plain HTTP.
    let rest: String = rest
        .lines()
        .filter(|l| !l.starts_with("token_file") && !l.starts_with("ca_file"))
        .map(|l| format!("{l}\n"))
        .collect();
    rest.replace("https://cluster-a.example:6443", &a.url())
        .replace("https://cluster-b.example:6443", &b.url())
        .replace("127.0.0.1:8888", &format!("127.0.0.1:{webhook}"))
        .replace("example.com.", zone)
}

fn dig(s: &RealStack, name: &str) -> Vec<String> {
    s.server.dig(&s.tools.dig, name, "A")
}

fn wait_dig(s: &RealStack, name: &str, want: &[&str], when: &str) {
    let mut last = Vec::new();
    let ok = wait_for(WAIT, || {
        last = dig(s, name);
        (last == want).then_some(())
    });
    assert!(
        ok.is_some(),
        "{when}: dig {name} A: wanted {want:?}, saw {last:?}; status:\n{}\nlogs:\n{}",
        s.cli(&["status"]).1,
        s.logs()
    );
}

#[test]
fn three_clusters_feed_one_name_and_each_takes_only_its_own_away() {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = RealServer::start(Kind::Pdns) else {
        return;
    };
    let rt = runtime();
    let a = rt.block_on(FakeKubeApi::start());
    let b = rt.block_on(FakeKubeApi::start());
    let webhook = dnsplane_testing::tools::free_port();
    let zone = server.zone().to_string();
    let host = format!("api.{}", zone.trim_end_matches('.'));
    let service =
        |ip: &str| service_load_balancer("default", "api", &[(HOSTNAME, host.as_str())], &[ip]);
    a.apply_object(Resource::Service, service("192.0.2.1"));
    b.apply_object(Resource::Service, service("192.0.2.2"));
    let extra = recipe(&zone, &a, &b, webhook);
    assert!(extra.contains("merge = \"union\""), "{extra}");
    let s = RealStack::start(
        server,
        tools,
        Options {
            planner_extra: extra,
            ..Options::default()
        },
    );
    // Cluster A and B first.
    wait_dig(&s, &host, &["192.0.2.1", "192.0.2.2"], "two clusters");

    // external-dns pushes the third address through the webhook.
    let edns = ExternalDns::new(webhook);
    let up = wait_for(WAIT, || {
        std::net::TcpStream::connect(("127.0.0.1", webhook)).ok()
    });
    assert!(up.is_some(), "the webhook listens; logs:\n{}", s.logs());
    let body = serde_json::json!({
        "Create": [{"dnsName": host, "targets": ["192.0.2.3"], "recordType": "A",
                    "recordTTL": 300, "labels": {}}],
        "UpdateOld": [], "UpdateNew": [], "Delete": []
    });
    assert_eq!(edns.apply(body.to_string()), 204);
    wait_dig(
        &s,
        &host,
        &["192.0.2.1", "192.0.2.2", "192.0.2.3"],
        "three sources",
    );

    // Each cluster's Service is told its record is published, though the set in
    // force is a merge (one source's name on it).
    for (cluster, api) in [("A", &a), ("B", &b)] {
        let told = wait_for(WAIT, || {
            api.events().into_iter().find(|e| {
                e["involvedObject"]["kind"] == "Service"
                    && e["involvedObject"]["name"] == "api"
                    && e["reason"] == "Published"
            })
        });
        assert!(
            told.is_some(),
            "cluster {cluster}'s Service was never told: {:#?}\nlogs:\n{}",
            api.events(),
            s.logs()
        );
    }

    // Each value with its sources.
    let (code, out) = s.cli(&["records", &host, "-o", "json"]);
    assert_eq!(code, 0, "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    let record = doc["records"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["type"] == "A"))
        .unwrap_or_else(|| panic!("no A record at {host}: {out}"));
    let by_value: std::collections::BTreeMap<String, Vec<String>> = record["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .map(|v| {
            let sources = v["sources"].as_array().expect("list");
            (
                v["value"].as_str().expect("value").to_string(),
                sources
                    .iter()
                    .map(|s| s.as_str().unwrap_or_default().to_string())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(by_value.len(), 3, "{out}");
    assert!(
        by_value["192.0.2.1"]
            .iter()
            .any(|s| s.contains("cluster-a")),
        "{out}"
    );
    assert!(
        by_value["192.0.2.2"]
            .iter()
            .any(|s| s.contains("cluster-b")),
        "{out}"
    );
    assert_eq!(by_value["192.0.2.3"], ["push:external-dns"], "{out}");

    // Cluster B's API goes down: its source is not ready and keeps its address.
    b.set_failing(true);
    let b_ready = |s: &RealStack| {
        let (_, st) = s.cli(&["status", "-o", "json"]);
        let doc: serde_json::Value = serde_json::from_str(&st).ok()?;
        let sources = doc["sources"].as_array()?.clone();
        let b = sources
            .iter()
            .find(|x| x["name"].as_str().is_some_and(|n| n.contains("cluster-b")))?;
        b["ready"].as_bool()
    };
    let not_ready = wait_for(WAIT, || (b_ready(&s) == Some(false)).then_some(()));
    assert!(
        not_ready.is_some(),
        "status never showed cluster B's source not ready:\n{}",
        s.cli(&["status"]).1
    );
    // Cluster A changes meanwhile: the union follows A, and keeps B's address.
    a.apply_object(Resource::Service, service("192.0.2.11"));
    wait_dig(
        &s,
        &host,
        &["192.0.2.11", "192.0.2.2", "192.0.2.3"],
        "cluster B down, cluster A changed",
    );

    // B is back and deletes its Service: only B's address goes.
    b.set_failing(false);
    let ready = wait_for(WAIT, || (b_ready(&s) == Some(true)).then_some(()));
    assert!(ready.is_some(), "cluster B's source never came back");
    assert!(b.delete_object(Resource::Service, "default", "api"));
    wait_dig(
        &s,
        &host,
        &["192.0.2.11", "192.0.2.3"],
        "cluster B's Service deleted",
    );
}
