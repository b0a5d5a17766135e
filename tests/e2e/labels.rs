//! Endpoint labels kept end to end (issue 18), against the planner and applier
//! processes and a real PowerDNS: labels given in a DNSEndpoint file and through the
//! webhook come back from `dnsplane records -o json` and from the webhook's
//! `GET /records`, after a `kill -9` of the planner too; a change of labels alone is
//! read back and plans nothing for the provider.
use crate::webhook_server::ExternalDns;
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use dnsplane_e2e::servers::{Kind, RealServer};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

fn manifest(zone: &str, owner: &str) -> String {
    format!(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\n\
         metadata: {{name: web, namespace: default}}\nspec:\n  endpoints:\n\
         \x20   - dnsName: web.{zone}\n      recordType: A\n      targets: [192.0.2.10]\n\
         \x20     labels:\n        owner: {owner}\n        resource: ingress/default/web\n"
    )
}

/// What external-dns would send for one endpoint of its own.
fn endpoint(zone: &str, owner: &str) -> Value {
    json!({"dnsName": format!("api.{zone}"), "recordType": "A", "targets": ["192.0.2.20"],
           "recordTTL": 300, "labels": {"owner": owner, "resource": "service/default/api"}})
}

/// The labels `dnsplane records --all -o json` shows, by record name.
fn listed(s: &RealStack) -> BTreeMap<String, Value> {
    let (code, out) = s.cli(&["records", "--all", "-o", "json"]);
    assert!(code == 0 || code == 2, "dnsplane records: {code}\n{out}");
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    doc["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| {
            let name = r["name"].as_str().expect("name").to_string();
            (name, r["labels"].clone())
        })
        .collect()
}

/// One webhook `POST /records`, which must be taken (204).
fn apply(hook: &ExternalDns, changes: Value) {
    assert_eq!(hook.apply(changes.to_string()), 204, "{changes}");
}

fn wait_listening(s: &RealStack, port: u16) {
    let up = dnsplane_e2e::wait_for(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(up.is_some(), "the webhook listens; logs:\n{}", s.logs());
}

#[test]
fn labels_come_back_from_records_json_and_the_webhook_after_a_restart() {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = RealServer::start(Kind::Pdns) else {
        return;
    };
    let port = dnsplane_testing::tools::free_port();
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("web.yaml");
    let zone = server.zone().to_string();
    let zone = zone.trim_end_matches('.').to_string();
    std::fs::write(&file, manifest(&zone, "team-a")).expect("write the manifest");
    let mut s = RealStack::start(
        server,
        tools,
        Options {
            planner_extra: format!(
                "[[sources]]\ntype = \"file\"\npaths = [{:?}]\n\n[webhook]\nlisten = \"127.0.0.1:{port}\"\n",
                file.display().to_string()
            ),
            ..Options::default()
        },
    );
    wait_listening(&s, port);
    let hook = ExternalDns::new(port);
    apply(&hook, json!({"create": [endpoint(&zone, "c1")]}));
    s.assert_states(&[("converged", 2)]);
    assert_eq!(s.dig(&format!("web.{zone}"), "A"), ["192.0.2.10"]);

    let (web, api) = (format!("web.{zone}."), format!("api.{zone}."));
    let labels = listed(&s);
    assert_eq!(
        labels[&web],
        json!({"owner": "team-a", "resource": "ingress/default/web"})
    );
    assert_eq!(
        labels[&api],
        json!({"owner": "c1", "resource": "service/default/api"})
    );
    assert_eq!(hook.records(), [endpoint(&zone, "c1")]);

    // Labels alone change, in the file and through the webhook: read back, and a
    // sync plans nothing for the provider: no batch since, automatic syncs included.
    let before = s.counters();
    std::fs::write(&file, manifest(&zone, "team-b")).expect("rewrite the manifest");
    apply(
        &hook,
        json!({"updateOld": [endpoint(&zone, "c1")], "updateNew": [endpoint(&zone, "c2")]}),
    );
    let moved = dnsplane_e2e::wait_for(Duration::from_secs(30), || {
        (listed(&s)[&web]["owner"] == "team-b").then_some(())
    });
    assert!(
        moved.is_some(),
        "the file's new labels; logs:\n{}",
        s.logs()
    );
    assert_eq!(hook.records(), [endpoint(&zone, "c2")]);
    let progress = s.sync(true);
    assert_eq!(progress.phase, "done", "{progress:?}");
    assert_eq!(
        progress.changes_planned, 0,
        "labels are no data: {progress:?}"
    );
    assert_eq!(s.counters().since(&before).batches, 0, "nothing written");
    s.assert_states(&[("converged", 2)]);

    // kill -9 and start again: the webhook's labels from the store, the file's from
    // the file.
    s.restart_planner_with(|| {});
    wait_listening(&s, port);
    assert_eq!(hook.records(), [endpoint(&zone, "c2")]);
    let want = BTreeMap::from([
        (
            api.clone(),
            json!({"owner": "c2", "resource": "service/default/api"}),
        ),
        (
            web.clone(),
            json!({"owner": "team-b", "resource": "ingress/default/web"}),
        ),
    ]);
    let mut last = BTreeMap::new();
    let back = dnsplane_e2e::wait_for(Duration::from_secs(30), || {
        last = listed(&s);
        (last == want).then_some(())
    });
    assert!(
        back.is_some(),
        "after the restart: {last:?}; logs:\n{}",
        s.logs()
    );
}
