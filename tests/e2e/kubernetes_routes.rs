//! The Gateway API routes beyond HTTPRoute, end to end (issue 30): GRPCRoute,
//! TLSRoute, TCPRoute and UDPRoute served by the fake API server with the Gateway API
//! project's CRDs, read by the planner process, written by the applier process to a
//! real PowerDNS. TCP and UDP routes have no hostnames: their names come from
//! external-dns's hostname annotation, as external-dns reads them.
use super::kubernetes_kinds::{CONDITION_TIME, HOSTNAME, runtime, stack, wait_dns, zone};
use dnsplane_testing::kube_api::{FakeKubeApi, Resource};
use serde_json::{Value, json};

/// A Gateway with one listener per route protocol (HTTPS for gRPC, TLS passthrough,
/// TCP, UDP), accepting routes of its namespace, at `address`.
fn gateway(zone: &str, address: &str) -> Value {
    let listener = |name: &str, protocol: &str, port: u16, host: bool| {
        let mut l = json!({"name": name, "protocol": protocol, "port": port,
                           "allowedRoutes": {"namespaces": {"from": "Same"}}});
        if host {
            l["hostname"] = format!("*.{zone}").into();
        }
        if protocol == "TLS" {
            l["tls"] = json!({"mode": "Passthrough"});
        }
        l
    };
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "mesh", "namespace": "default"},
        "spec": {"gatewayClassName": "example",
                 "listeners": [listener("grpc", "HTTP", 8080, true),
                               listener("tls", "TLS", 443, true),
                               listener("tcp", "TCP", 5432, false),
                               listener("udp", "UDP", 5353, false)]},
        "status": {"addresses": [{"type": "IPAddress", "value": address}]}
    })
}

/// A route of `kind` through the listener `section` of `mesh`, which accepted it:
/// `host` as its hostname (GRPC, TLS) or its hostname annotation (TCP, UDP). Pinned to
/// its listener: a TCPRoute may also attach to a TLS listener, and would then publish
/// that listener's `*.<zone>` as external-dns does.
fn route(kind: &str, section: &str, name: &str, host: &str) -> Value {
    let mut route = json!({
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"parentRefs": [{"name": "mesh", "sectionName": section}],
                 "rules": [{"backendRefs": [{"name": name, "port": 9000}]}]},
        "status": {"parents": [{
            "parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "mesh",
                          "sectionName": section},
            "controllerName": "example.net/gateway-controller",
            "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted",
                            "message": "accepted by mesh", "observedGeneration": 1,
                            "lastTransitionTime": CONDITION_TIME}]}]}
    });
    match kind {
        "TCPRoute" | "UDPRoute" => {
            route["metadata"]["annotations"] = json!({HOSTNAME: host});
        }
        _ => route["spec"]["hostnames"] = json!([host]),
    }
    route
}

/// Each route kind created reaches PowerDNS at its Gateway's address, moves with the
/// Gateway's address, and goes with its route, leaving the others.
#[test]
fn grpc_tls_tcp_and_udp_routes_created_changed_and_deleted_reach_powerdns() {
    let rt = runtime();
    let _guard = rt.enter();
    let api = rt.block_on(FakeKubeApi::start());
    // (kind, storage, listener, name)
    let kinds = [
        ("GRPCRoute", Resource::GrpcRoute, "grpc", "grpc"),
        ("TLSRoute", Resource::TlsRoute, "tls", "tls"),
        ("TCPRoute", Resource::TcpRoute, "tcp", "db"),
        ("UDPRoute", Resource::UdpRoute, "udp", "dns"),
    ];
    let names: Vec<&str> = kinds.iter().map(|(k, ..)| *k).collect();
    let Some(s) = stack(&api, &names, "") else {
        return;
    };
    let z = zone(&s);
    let host = |name: &str| format!("{name}.{z}");

    api.apply_object(Resource::Gateway, gateway(&z, "192.0.2.70"));
    for (kind, resource, section, name) in kinds {
        api.apply_object(resource, route(kind, section, name, &host(name)));
    }
    for (.., name) in kinds {
        wait_dns(&s, &host(name), "A", &["192.0.2.70"]);
    }
    // Nothing else: no listener's wildcard was published for a route.
    wait_dns(&s, &host("other"), "A", &[]);

    // The Gateway's address moves: every route's record follows.
    api.apply_object(Resource::Gateway, gateway(&z, "192.0.2.71"));
    for (.., name) in kinds {
        wait_dns(&s, &host(name), "A", &["192.0.2.71"]);
    }
    wait_dns(&s, &host("other"), "A", &[]);

    // Each route deleted takes its record, and only its own.
    for (i, (_, resource, _, name)) in kinds.iter().enumerate() {
        assert!(api.delete_object(*resource, "default", name));
        wait_dns(&s, &host(name), "A", &[]);
        for (.., left) in &kinds[i + 1..] {
            wait_dns(&s, &host(left), "A", &["192.0.2.71"]);
        }
    }
}
