//! NodePort Services: the nodes' addresses and the SRV records of the node ports.
use super::super::Endpoint;
use super::super::annotations::ACCESS;
use super::{Service, suitable_type};
use serde_json::Value;
use std::collections::BTreeMap;

/// `extractNodePortTargets`: every node's external addresses (with
/// `--expose-internal-ipv6`, the internal IPv6 ones too); the internal ones when the
/// `access` annotation says `private` or no node has an external address. With
/// `externalTrafficPolicy: Local`, only the nodes that run the Service's pods
/// ([`local_nodes`]). Unschedulable nodes are left out with `exclude_unschedulable`.
pub(super) fn node_port_targets(svc: &Service<'_>) -> Vec<String> {
    let nodes: Vec<&Value> = if svc.spec()["externalTrafficPolicy"].as_str() == Some("Local") {
        local_nodes(svc)
    } else {
        svc.cluster.read().nodes.values().collect()
    };
    let (mut internal, mut external, mut ipv6) = (Vec::new(), Vec::new(), Vec::new());
    for node in nodes {
        if svc.options.exclude_unschedulable && node["spec"]["unschedulable"] == true {
            continue;
        }
        for a in node["status"]["addresses"].as_array().into_iter().flatten() {
            let Some(addr) = a["address"].as_str() else {
                continue;
            };
            match a["type"].as_str() {
                Some("ExternalIP") => external.push(addr.to_string()),
                Some("InternalIP") => {
                    internal.push(addr.to_string());
                    if suitable_type(addr) == "AAAA" {
                        ipv6.push(addr.to_string());
                    }
                }
                _ => {}
            }
        }
    }
    let public = |mut external: Vec<String>| {
        if svc.options.expose_internal_ipv6 {
            external.extend(ipv6.iter().cloned());
        }
        external
    };
    match svc.ann.get(ACCESS).map(|(_, v)| v) {
        Some("public") => public(external),
        Some("private") => internal,
        _ if !external.is_empty() => public(external),
        _ => internal,
    }
}

/// `nodesExternalTrafficPolicyTypeLocal`: the nodes of the Service's running pods, only
/// those at the best readiness any of them reaches (ready and not terminating, else
/// ready and terminating, else running).
fn local_nodes<'a>(svc: &Service<'a>) -> Vec<&'a Value> {
    const NOT_READY: u8 = 1;
    const READY_TERMINATING: u8 = 2;
    const READY: u8 = 3;
    let mut best: BTreeMap<&str, (u8, &'a Value)> = BTreeMap::new();
    let mut max = 0;
    for pod in svc.pods() {
        if pod["status"]["phase"].as_str() != Some("Running") {
            continue;
        }
        let Some(node_name) = pod["spec"]["nodeName"].as_str() else {
            continue;
        };
        let Some(node) = svc.cluster.read().nodes.get(node_name) else {
            continue;
        };
        let p = if !pod_ready(pod) {
            NOT_READY
        } else if pod["metadata"]["deletionTimestamp"].is_null() {
            READY
        } else {
            READY_TERMINATING
        };
        let entry = best.entry(node_name).or_insert((0, node));
        entry.0 = entry.0.max(p);
        max = max.max(p);
    }
    best.into_values()
        .filter(|(p, _)| *p == max && max > 0)
        .map(|(_, n)| n)
        .collect()
}

/// `isPodStatusReady`: the `Ready` condition is `True`.
fn pod_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .is_some_and(|c| c["status"] == "True")
}

/// `extractNodePortEndpoints`: per port with a node port, `_<service>._<proto>.<host>`
/// SRV `0 50 <nodePort> <host>.` (RFC 2782; the protocol lowercased, `tcp` when unset).
pub(super) fn srv_endpoints(svc: &Service<'_>, hostname: &str, ttl: Option<i64>) -> Vec<Endpoint> {
    let mut out = Vec::new();
    for port in svc.spec()["ports"].as_array().into_iter().flatten() {
        let node_port = port["nodePort"].as_i64().unwrap_or(0);
        if node_port <= 0 {
            continue;
        }
        let protocol = port["protocol"]
            .as_str()
            .filter(|p| !p.is_empty())
            .unwrap_or("TCP")
            .to_lowercase();
        let name = format!("_{}._{protocol}.{hostname}", svc.name);
        // NewEndpointWithTTL refuses a name with a label over 63 octets: the service
        // name is a label here (the hostname was checked before).
        if name.split('.').any(|l| l.len() > 63) {
            continue;
        }
        out.push(Endpoint {
            dns_name: name,
            record_type: "SRV".into(),
            targets: vec![format!("0 50 {node_port} {hostname}.")],
            ttl,
            ..Endpoint::default()
        });
    }
    out
}
