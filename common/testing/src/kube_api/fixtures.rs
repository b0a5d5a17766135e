//! Realistic objects for tests of the Kubernetes sources: what a cluster's API
//! server holds once controllers have done their part (a load balancer's status, an
//! EndpointSlice's conditions, a Gateway's accepted listeners, a route's accepted
//! parents). The built-in kinds pass `kubernetes-validate --strict` and the Gateway
//! API kinds the vendored CRDs (both checked by this module's tests), so that a
//! source's parser meets the shapes it will meet.
//!
//! Annotations are `(key, value)` pairs, e.g.
//! `("external-dns.alpha.kubernetes.io/hostname", "web.example.com")`. Change the
//! returned JSON for anything else.
use serde_json::{Map, Value, json};

/// When controllers "did" what the statuses say.
const SINCE: &str = "2026-01-01T00:00:00Z";

/// An Event as kube-rs's `Recorder` creates it (events.k8s.io/v1): reported by
/// `controller` (instance `planner-0`) about the Service `default/web` whose uid is
/// `uid`, saying `note`.
pub fn recorder_event(controller: &str, note: &str, uid: Value) -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.1872a1b2c3d4e5f6", "namespace": "default"},
        "eventTime": "2026-11-29T03:00:00.000000Z",
        "reportingController": controller, "reportingInstance": "planner-0",
        "action": "Publish", "reason": "Published", "type": "Normal",
        "note": note,
        "regarding": {"apiVersion": "v1", "kind": "Service", "name": "web", "namespace": "default", "uid": uid},
    })
}

fn annotations(pairs: &[(&str, &str)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::from(*v)))
            .collect::<Map<_, _>>(),
    )
}

fn meta(ns: &str, name: &str, annotations_: &[(&str, &str)]) -> Value {
    json!({"name": name, "namespace": ns, "annotations": annotations(annotations_),
           "labels": {"app": name}})
}

/// A load balancer's status entries: an IP (v4 or v6) as `ip`, anything else as
/// `hostname`.
fn lb_ingress(targets: &[&str]) -> Value {
    targets
        .iter()
        .map(|t| {
            if t.parse::<std::net::IpAddr>().is_ok() {
                json!({"ip": t, "ipMode": "VIP"})
            } else {
                json!({"hostname": t})
            }
        })
        .collect()
}

fn port() -> Value {
    json!([{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}])
}

/// A `type: LoadBalancer` Service whose load balancer has `targets` (IPs or
/// hostnames); none: not provisioned yet (or a controller restarted).
pub fn service_load_balancer(
    ns: &str,
    name: &str,
    ann: &[(&str, &str)],
    targets: &[&str],
) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service", "metadata": meta(ns, name, ann),
        "spec": {"type": "LoadBalancer", "selector": {"app": name}, "ports": port(),
                 "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                 "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                 "externalTrafficPolicy": "Cluster", "sessionAffinity": "None"},
        "status": {"loadBalancer": if targets.is_empty() { json!({}) } else { json!({"ingress": lb_ingress(targets)}) }},
    })
}

/// A `type: NodePort` Service (port 80, node port 30080).
pub fn service_node_port(ns: &str, name: &str, ann: &[(&str, &str)]) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service", "metadata": meta(ns, name, ann),
        "spec": {"type": "NodePort", "selector": {"app": name},
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080, "nodePort": 30080}],
                 "clusterIP": "10.96.0.11", "clusterIPs": ["10.96.0.11"],
                 "externalTrafficPolicy": "Cluster", "sessionAffinity": "None"},
        "status": {"loadBalancer": {}},
    })
}

/// A headless `ClusterIP: None` Service; its endpoints are [`endpoint_slice`]s.
pub fn service_headless(ns: &str, name: &str, ann: &[(&str, &str)]) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service", "metadata": meta(ns, name, ann),
        "spec": {"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"],
                 "selector": {"app": name}, "ports": port(), "publishNotReadyAddresses": false,
                 "sessionAffinity": "None"},
        "status": {"loadBalancer": {}},
    })
}

/// A `type: ExternalName` Service naming `external`.
pub fn service_external_name(ns: &str, name: &str, ann: &[(&str, &str)], external: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service", "metadata": meta(ns, name, ann),
        "spec": {"type": "ExternalName", "externalName": external, "sessionAffinity": "None"},
        "status": {"loadBalancer": {}},
    })
}

/// An EndpointSlice of Service `service`, one endpoint per `(address, ready, pod
/// hostname)`; the slice's name is `{service}-{suffix}`.
pub fn endpoint_slice(
    ns: &str,
    service: &str,
    suffix: &str,
    endpoints: &[(&str, bool, Option<&str>)],
) -> Value {
    let eps: Vec<Value> = endpoints
        .iter()
        .enumerate()
        .map(|(i, (addr, ready, hostname))| {
            let mut e = json!({
                "addresses": [addr],
                "conditions": {"ready": ready, "serving": ready, "terminating": false},
                "nodeName": "node-1",
                "targetRef": {"kind": "Pod", "namespace": ns, "name": format!("{service}-{i}"),
                              "uid": format!("00000000-0000-4000-8000-{i:012}")},
            });
            if let Some(h) = hostname {
                e["hostname"] = (*h).into();
            }
            e
        })
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("{service}-{suffix}"), "namespace": ns,
                     "labels": {"kubernetes.io/service-name": service,
                                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
        "addressType": if endpoints.first().is_some_and(|e| e.0.contains(':')) { "IPv6" } else { "IPv4" },
        "endpoints": eps,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    })
}

/// A Pod with `hostname` and `ip` (headless Services' records can name pods).
pub fn pod(ns: &str, name: &str, hostname: &str, ip: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
        "spec": {"hostname": hostname, "nodeName": "node-1",
                 "containers": [{"name": "app", "image": "registry.example/app:1"}]},
        "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "198.51.100.1"},
    })
}

/// A Node with these external and internal addresses.
pub fn node(name: &str, external: &[&str], internal: &[&str]) -> Value {
    let mut addresses: Vec<Value> = external
        .iter()
        .map(|a| json!({"type": "ExternalIP", "address": a}))
        .chain(
            internal
                .iter()
                .map(|a| json!({"type": "InternalIP", "address": a})),
        )
        .collect();
    addresses.push(json!({"type": "Hostname", "address": name}));
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"podCIDR": "10.244.0.0/24"},
        "status": {"addresses": addresses,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "message": "kubelet is posting ready status",
                                   "lastHeartbeatTime": SINCE, "lastTransitionTime": SINCE}]},
    })
}

/// An Ingress of class `class` (none: no `ingressClassName`) with a rule per host,
/// `tls_hosts` in one TLS entry, and a load balancer with `targets`.
pub fn ingress(
    ns: &str,
    name: &str,
    ann: &[(&str, &str)],
    class: Option<&str>,
    hosts: &[&str],
    tls_hosts: &[&str],
    targets: &[&str],
) -> Value {
    let rules: Vec<Value> = hosts
        .iter()
        .map(|h| {
            json!({"host": h, "http": {"paths": [{"path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": name, "port": {"number": 80}}}}]}})
        })
        .collect();
    let mut spec = json!({"rules": rules});
    if let Some(c) = class {
        spec["ingressClassName"] = c.into();
    }
    if !tls_hosts.is_empty() {
        spec["tls"] = json!([{"hosts": tls_hosts, "secretName": format!("{name}-tls")}]);
    }
    let lb: Vec<Value> = lb_ingress(targets)
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let mut e = e.clone();
            if let Some(m) = e.as_object_mut() {
                m.remove("ipMode"); // not in Ingress's load balancer status
            }
            e
        })
        .collect();
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta(ns, name, ann),
        "spec": spec,
        "status": {"loadBalancer": if lb.is_empty() { json!({}) } else { json!({"ingress": lb}) }},
    })
}

fn condition(ty: &str, ok: bool, reason: &str, generation: i64) -> Value {
    json!({"type": ty, "status": if ok { "True" } else { "False" }, "reason": reason,
           "message": "", "lastTransitionTime": SINCE, "observedGeneration": generation})
}

/// A Gateway with one HTTP listener per `(name, hostname)` (port 80), accepted and
/// programmed with `addresses` (IPs as `IPAddress`, others as `Hostname`).
pub fn gateway(
    ns: &str,
    name: &str,
    listeners: &[(&str, Option<&str>)],
    addresses: &[&str],
) -> Value {
    let spec_listeners: Vec<Value> = listeners
        .iter()
        .map(|(l, host)| {
            let mut v = json!({"name": l, "port": 80, "protocol": "HTTP",
                               "allowedRoutes": {"namespaces": {"from": "All"}}});
            if let Some(h) = host {
                v["hostname"] = (*h).into();
            }
            v
        })
        .collect();
    let status_listeners: Vec<Value> = listeners
        .iter()
        .map(|(l, _)| json!({"name": l, "attachedRoutes": 1,
            "supportedKinds": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"}],
            "conditions": [condition("Accepted", true, "Accepted", 1), condition("Programmed", true, "Programmed", 1)]}))
        .collect();
    let addrs: Vec<Value> = addresses
        .iter()
        .map(|a| {
            let ty = if a.parse::<std::net::IpAddr>().is_ok() {
                "IPAddress"
            } else {
                "Hostname"
            };
            json!({"type": ty, "value": a})
        })
        .collect();
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"gatewayClassName": "example", "listeners": spec_listeners},
        "status": {"addresses": addrs, "listeners": status_listeners,
                   "conditions": [condition("Accepted", true, "Accepted", 1), condition("Programmed", true, "Programmed", 1)]},
    })
}

/// A route of `kind` (`HTTPRoute`, `GRPCRoute`, `TLSRoute`, `TCPRoute`, `UDPRoute`)
/// attached to the Gateways `parents` (`(namespace, name)`), each parent's
/// `Accepted` condition `accepted`, with `hostnames` (ignored for TCP and UDP
/// routes, which have none).
pub fn route(
    kind: &str,
    ns: &str,
    name: &str,
    ann: &[(&str, &str)],
    parents: &[(&str, &str)],
    hostnames: &[&str],
    accepted: bool,
) -> Value {
    let refs: Vec<Value> = parents
        .iter()
        .map(|(pns, pname)| {
            json!({"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                    "namespace": pns, "name": pname})
        })
        .collect();
    let rule = match kind {
        "TCPRoute" | "UDPRoute" | "TLSRoute" => {
            json!({"backendRefs": [{"name": name, "port": 443}]})
        }
        _ => json!({"backendRefs": [{"name": name, "port": 80}]}),
    };
    let mut spec = json!({"parentRefs": refs, "rules": [rule]});
    if !matches!(kind, "TCPRoute" | "UDPRoute") {
        spec["hostnames"] = json!(hostnames);
    }
    let reason = if accepted {
        "Accepted"
    } else {
        "NotAllowedByListeners"
    };
    let status_parents: Vec<Value> = refs
        .iter()
        .map(|r| {
            json!({"parentRef": r, "controllerName": "example.com/gateway-controller",
                        "conditions": [condition("Accepted", accepted, reason, 1)]})
        })
        .collect();
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": kind,
        "metadata": meta(ns, name, ann),
        "spec": spec,
        "status": {"parents": status_parents},
    })
}

/// The HTTPRoute `default/web`, attached to the Gateway `default/gw` and accepted,
/// with `hostnames`.
pub fn web_route(hostnames: &[&str]) -> Value {
    route(
        "HTTPRoute",
        "default",
        "web",
        &[],
        &[("default", "gw")],
        hostnames,
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube_api::{FakeKubeApi, Resource};

    fn built_in() -> Vec<Value> {
        let h = [(
            "external-dns.alpha.kubernetes.io/hostname",
            "web.example.com",
        )];
        vec![
            service_load_balancer(
                "default",
                "web",
                &h,
                &["192.0.2.1", "2001:db8::1", "lb.example.net"],
            ),
            service_load_balancer("default", "pending", &h, &[]),
            service_node_port("default", "np", &h),
            service_headless("default", "db", &h),
            service_external_name("default", "ext", &h, "target.example.net"),
            endpoint_slice(
                "default",
                "db",
                "abc12",
                &[
                    ("10.244.0.5", true, Some("db-0")),
                    ("10.244.0.6", false, None),
                ],
            ),
            pod("default", "db-0", "db-0", "10.244.0.5"),
            node("node-1", &["198.51.100.1"], &["10.0.0.1"]),
            ingress(
                "default",
                "web",
                &[],
                Some("nginx"),
                &["web.example.com"],
                &["web.example.com"],
                &["192.0.2.1"],
            ),
        ]
    }

    /// kubernetes-validate (the API's OpenAPI schemas) accepts every built-in fixture.
    #[test]
    fn built_in_fixtures_are_valid_kubernetes_objects() {
        let Some(validate) = crate::tool("DNSPLANE_KUBERNETES_VALIDATE", "kubernetes-validate")
        else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let docs: Vec<String> = built_in().iter().map(Value::to_string).collect();
        let file = dir.path().join("fixtures.yaml");
        std::fs::write(&file, docs.join("\n---\n")).unwrap();
        let out = std::process::Command::new(validate)
            .arg("--strict")
            .arg(&file)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        assert_eq!(text.matches(" passed ").count(), docs.len(), "{text}");
    }

    /// The Gateway API fixtures pass the vendored CRDs, unchanged but for defaults.
    #[tokio::test]
    async fn gateway_fixtures_pass_their_crds() {
        let api = FakeKubeApi::start().await;
        api.apply_object(
            Resource::Gateway,
            gateway(
                "infra",
                "gw",
                &[("http", Some("*.example.com")), ("any", None)],
                &["192.0.2.7", "gw.example.net"],
            ),
        );
        for (kind, r) in [
            ("HTTPRoute", Resource::HttpRoute),
            ("GRPCRoute", Resource::GrpcRoute),
            ("TLSRoute", Resource::TlsRoute),
            ("TCPRoute", Resource::TcpRoute),
            ("UDPRoute", Resource::UdpRoute),
        ] {
            let given = route(
                kind,
                "default",
                "web",
                &[],
                &[("infra", "gw")],
                &["web.example.com"],
                true,
            );
            let stored = api
                .try_apply_object(r, given.clone())
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(
                stored["spec"]["parentRefs"], given["spec"]["parentRefs"],
                "{kind}"
            );
            assert_eq!(stored["status"], given["status"], "{kind}");
        }
        for o in built_in() {
            let r = match o["kind"].as_str().unwrap() {
                "Service" => Resource::Service,
                "EndpointSlice" => Resource::EndpointSlice,
                "Pod" => Resource::Pod,
                "Node" => Resource::Node,
                _ => Resource::Ingress,
            };
            api.apply_object(r, o);
        }
        assert_eq!(api.objects(Resource::Service).len(), 5);
    }
}
