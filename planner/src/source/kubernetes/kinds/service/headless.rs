//! Headless Services (`clusterIP: None`): a record per ready endpoint of the
//! Service's EndpointSlices, under the Service's name and, for pods with a
//! `spec.hostname`, under `<hostname>.<name>`.
use super::super::Endpoint;
use super::super::annotations::{Annotations, ENDPOINTS_TYPE};
use super::names::check_target;
use super::{Service, nodes_watched, suitable_type};
use serde_json::Value;
use std::collections::BTreeMap;

/// `endpoints-type` values (`EndpointsTypeNodeExternalIP`, `EndpointsTypeHostIP`).
const NODE_EXTERNAL_IP: &str = "NodeExternalIP";
const HOST_IP: &str = "HostIP";

/// `extractHeadlessEndpoints` + `processHeadlessEndpointsFromSlices` +
/// `buildHeadlessEndpoints`: targets grouped by (name, type), deduplicated in the
/// order they come, sorted by name then type.
pub(super) fn endpoints(svc: &Service<'_>, hostname: &str, ttl: Option<i64>) -> Vec<Endpoint> {
    let endpoints_type = svc.ann.get(ENDPOINTS_TYPE).map(|(_, v)| v).unwrap_or("");
    let publish_pod_ips = endpoints_type != NODE_EXTERNAL_IP
        && endpoints_type != HOST_IP
        && !svc.options.publish_host_ip;
    let publish_not_ready = svc.spec()["publishNotReadyAddresses"] == true
        || svc.options.always_publish_not_ready_addresses;
    let pods = svc.pods();
    let key = format!("{}/{}", svc.namespace, svc.name);
    let mut by_key: BTreeMap<(String, &'static str), Vec<String>> = BTreeMap::new();
    for slice in svc
        .cluster
        .read()
        .endpoint_slices
        .get(&key)
        .into_iter()
        .flatten()
    {
        let address_type = slice["addressType"].as_str().unwrap_or_default();
        for ep in slice["endpoints"].as_array().into_iter().flatten() {
            // conditionToBool: an absent `ready` counts as ready.
            let ready = ep["conditions"]["ready"].as_bool().unwrap_or(true);
            if !ready && !publish_not_ready {
                continue;
            }
            if publish_pod_ips && address_type != "IPv4" && address_type != "IPv6" {
                continue;
            }
            let Some(pod) = pod_of(ep, &pods) else {
                continue;
            };
            let mut domains = vec![hostname.to_string()];
            if let Some(h) = pod["spec"]["hostname"].as_str().filter(|h| !h.is_empty()) {
                domains.push(format!("{h}.{hostname}"));
            }
            for domain in domains {
                for target in targets(svc, pod, ep, endpoints_type) {
                    by_key
                        .entry((domain.clone(), suitable_type(&target)))
                        .or_default()
                        .push(target);
                }
            }
        }
    }
    by_key
        .into_iter()
        .filter(|((name, _), _)| name.split('.').all(|l| l.len() <= 63))
        .map(|((name, rt), all)| {
            let mut targets: Vec<String> = Vec::new();
            for t in all {
                if !targets.contains(&t) {
                    targets.push(t);
                }
            }
            Endpoint {
                dns_name: name,
                record_type: rt.to_string(),
                targets,
                ttl,
                ..Endpoint::default()
            }
        })
        .collect()
}

/// `findPodForEndpoint`: the endpoint's `targetRef` must name a Pod (core group) among
/// the Service's pods.
fn pod_of<'a>(ep: &Value, pods: &[&'a Value]) -> Option<&'a Value> {
    let r = ep.get("targetRef").filter(|r| r.is_object())?;
    if r["kind"] != "Pod" || r["apiVersion"].as_str().is_some_and(|v| !v.is_empty()) {
        return None;
    }
    let name = r["name"].as_str()?;
    pods.iter()
        .copied()
        .find(|p| p["metadata"]["name"].as_str() == Some(name))
}

/// `getTargetsForDomain`: the pod's own `target` annotation; else, by `endpoints-type`,
/// its node's external addresses, its host IP, or the endpoint's first address.
///
/// A pod `target` annotation that does not read (neither IP nor name) is published
/// by external-dns as a CNAME to it; here the pod is left out instead, as a pod that
/// is not ready would be: the pod's owner wrote it, and one pod must neither publish
/// garbage nor hold the Service's other records back.
fn targets(svc: &Service<'_>, pod: &Value, ep: &Value, endpoints_type: &str) -> Vec<String> {
    let from_pod = Annotations::of(pod).targets();
    if from_pod.iter().any(|t| check_target(t).is_err()) {
        return Vec::new();
    }
    if !from_pod.is_empty() {
        return from_pod;
    }
    if endpoints_type == NODE_EXTERNAL_IP {
        if !nodes_watched(&svc.options.service_types) {
            return Vec::new();
        }
        let Some(node) = pod["spec"]["nodeName"]
            .as_str()
            .and_then(|n| svc.cluster.read().nodes.get(n))
        else {
            return Vec::new();
        };
        return node["status"]["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| {
                let addr = a["address"].as_str()?;
                let take = a["type"] == "ExternalIP"
                    || (svc.options.expose_internal_ipv6
                        && a["type"] == "InternalIP"
                        && suitable_type(addr) == "AAAA");
                take.then(|| addr.to_string())
            })
            .collect();
    }
    if endpoints_type == HOST_IP || svc.options.publish_host_ip {
        // external-dns publishes "" for a pod without a host IP yet; nothing is better.
        return pod["status"]["hostIP"]
            .as_str()
            .filter(|ip| !ip.is_empty())
            .map(|ip| vec![ip.to_string()])
            .unwrap_or_default();
    }
    ep["addresses"][0]
        .as_str()
        .map(|a| vec![a.to_string()])
        .unwrap_or_default()
}
