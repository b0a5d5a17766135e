//! Discovery, as `kubectl` reads it to map `service` or `ingress` to a path:
//! `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}`
//! (the legacy, unaggregated documents: kubectl falls back to them when the answer is
//! plain `application/json`). A resource [`uninstall`](super::FakeKubeApi::uninstall)ed
//! is absent, as a CRD that is not installed.
use super::resource::Resource;
use super::store::State;
use serde_json::{Value, json};

/// The Kubernetes version the fake claims.
pub const VERSION: (&str, &str) = ("1", "32");

fn served(st: &State) -> impl Iterator<Item = Resource> + '_ {
    Resource::ALL.into_iter().filter(|r| !st.absent.contains(r))
}

fn resource_list(st: &State, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for r in served(st).filter(|r| (r.info().group, r.info().version) == (group, version)) {
        let i = r.info();
        let verbs: &[&str] = if r.storage() == Resource::Event {
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        } else {
            &["create", "get", "list", "watch"]
        };
        let mut entry = json!({"name": i.plural, "singularName": i.singular,
            "namespaced": i.namespaced, "kind": i.kind, "verbs": verbs});
        if !i.short_names.is_empty() {
            entry["shortNames"] = json!(i.short_names);
        }
        if r == Resource::Gateway || r.info().group == "gateway.networking.k8s.io" {
            entry["categories"] = json!(["gateway-api"]);
        }
        resources.push(entry);
        if r.storage() != Resource::Event {
            resources.push(
                json!({"name": format!("{}/status", i.plural), "singularName": "",
                "namespaced": i.namespaced, "kind": i.kind, "verbs": ["get", "patch", "update"]}),
            );
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": group_version, "resources": resources}))
}

fn group(st: &State, name: &str) -> Option<Value> {
    let mut versions: Vec<&str> = served(st)
        .filter(|r| r.info().group == name)
        .map(|r| r.info().version)
        .collect();
    versions.dedup();
    let first = *versions.first()?;
    let gv = |v: &str| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    Some(json!({"kind": "APIGroup", "apiVersion": "v1", "name": name,
        "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
        "preferredVersion": gv(first)}))
}

/// The discovery document at `parts` (the path's segments), if it is one.
pub fn document(st: &State, parts: &[&str]) -> Option<Value> {
    match parts {
        ["version"] => Some(json!({
            "major": VERSION.0, "minor": VERSION.1,
            "gitVersion": format!("v{}.{}.0-dnsplane-fake", VERSION.0, VERSION.1),
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.23.0", "compiler": "gc", "platform": "linux/amd64"})),
        ["api"] => Some(json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]})),
        ["api", "v1"] => resource_list(st, "", "v1"),
        ["apis"] => {
            let mut names: Vec<&str> = served(st)
                .map(|r| r.info().group)
                .filter(|g| !g.is_empty())
                .collect();
            names.sort_unstable();
            names.dedup();
            let groups: Vec<Value> = names.into_iter().filter_map(|n| group(st, n)).collect();
            Some(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        ["apis", g] => group(st, g),
        ["apis", g, v] => resource_list(st, g, v),
        _ => None,
    }
}
