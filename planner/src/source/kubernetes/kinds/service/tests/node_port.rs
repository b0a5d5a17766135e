//! TestServiceSourceNodePortServices and TestNodesExternalTrafficPolicyTypeLocal.
use super::*;

/// The two nodes most upstream NodePort cases use.
fn two_nodes() -> Vec<Value> {
    vec![
        node(
            "node1",
            &[
                ("ExternalIP", "54.10.11.1"),
                ("InternalIP", "10.0.1.1"),
                ("ExternalIP", "2001:DB8::1"),
                ("InternalIP", "2001:DB8::2"),
            ],
        ),
        node(
            "node2",
            &[
                ("ExternalIP", "54.10.11.2"),
                ("InternalIP", "10.0.1.2"),
                ("ExternalIP", "2001:DB8::3"),
                ("InternalIP", "2001:DB8::4"),
            ],
        ),
    ]
}

/// The upstream table's Service: `testing/foo`, NodePort 30192.
fn np(policy: &str) -> Svc {
    Svc::foo("NodePort")
        .spec("externalTrafficPolicy", json!(policy))
        .spec("ports", json!([{"nodePort": 30192}]))
}

fn srv(host: &str) -> Endpoint {
    ep(
        &format!("_foo._tcp.{host}"),
        "SRV",
        &[&format!("0 50 30192 {host}.")],
    )
}

/// Pods of the upstream table: labels and annotations as the Service's, on
/// `nodes[i]`, with a phase, readiness and deletion.
fn pods(spec: &[(&str, &str, bool, bool)]) -> Vec<Pod> {
    spec.iter()
        .map(|(name, node, ready, terminating)| {
            let p = Pod::new("testing", name)
                .hostname(name)
                .node(node)
                .running(*ready);
            if *terminating { p.terminating() } else { p }
        })
        .collect()
}

#[test]
fn node_port_services() {
    let host = "foo.example.org";
    let cases: Vec<(&str, Svc, Cluster, Options, Vec<Endpoint>)> = vec![
        (
            // TestServiceSourceNodePortServices/"annotated NodePort services return an endpoint with IP addresses of the cluster's nodes"
            "annotated NodePort services return an endpoint with IP addresses of the cluster's nodes",
            np("Cluster").ann(HOSTNAME, "foo.example.org."),
            Cluster::default().with_nodes(two_nodes()),
            opts(),
            vec![
                srv(host),
                ep(host, "A", &["54.10.11.1", "54.10.11.2"]),
                ep(host, "AAAA", &["2001:DB8::1", "2001:DB8::3"]),
            ],
        ),
        (
            // TestServiceSourceNodePortServices/"hostname annotated NodePort services are ignored"
            "hostname annotated NodePort services are ignored",
            np("Cluster").ann(HOSTNAME, "foo.example.org."),
            Cluster::default().with_nodes(two_nodes()),
            Options {
                ignore_hostname_annotation: true,
                ..opts()
            },
            vec![],
        ),
        (
            // TestServiceSourceNodePortServices/"non-annotated NodePort services with set fqdnTemplate return an endpoint with target IP"
            "non-annotated NodePort services with set fqdnTemplate return an endpoint with target IP",
            np("Cluster"),
            Cluster::default().with_nodes(two_nodes()),
            Options {
                fqdn_template: Some("{{.Name}}.bar.example.com".into()),
                ..opts()
            },
            vec![
                srv("foo.bar.example.com"),
                ep("foo.bar.example.com", "A", &["54.10.11.1", "54.10.11.2"]),
                ep(
                    "foo.bar.example.com",
                    "AAAA",
                    &["2001:DB8::1", "2001:DB8::3"],
                ),
            ],
        ),
        (
            // TestServiceSourceNodePortServices/"annotated NodePort services return an endpoint with IP addresses of the private cluster's nodes"
            "annotated NodePort services return an endpoint with IP addresses of the private cluster's nodes",
            np("Cluster").ann(HOSTNAME, "foo.example.org."),
            Cluster::default().with_nodes(vec![
                node(
                    "node1",
                    &[("InternalIP", "10.0.1.1"), ("InternalIP", "2001:DB8::1")],
                ),
                node(
                    "node2",
                    &[("InternalIP", "10.0.1.2"), ("InternalIP", "2001:DB8::2")],
                ),
            ]),
            opts(),
            vec![
                srv(host),
                ep(host, "A", &["10.0.1.1", "10.0.1.2"]),
                ep(host, "AAAA", &["2001:DB8::1", "2001:DB8::2"]),
            ],
        ),
        (
            // TestServiceSourceNodePortServices/"annotated NodePort services with ExternalTrafficPolicy=Local return an endpoint with IP addresses of the cluster's nodes where pods is running only"
            "ExternalTrafficPolicy=Local: nodes where pods run only",
            np("Local").ann(HOSTNAME, "foo.example.org."),
            Cluster::default()
                .with_nodes(two_nodes())
                .with_pods(pods(&[("pod-0", "node2", false, true)])),
            opts(),
            vec![
                srv(host),
                ep(host, "A", &["54.10.11.2"]),
                ep(host, "AAAA", &["2001:DB8::3"]),
            ],
        ),
        (
            // TestServiceSourceNodePortServices/"annotated NodePort services with ExternalTrafficPolicy=Local and multiple pods on a single node return an endpoint with unique IP addresses of the cluster's nodes where pods is running only"
            "ExternalTrafficPolicy=Local and multiple pods on a single node",
            np("Local").ann(HOSTNAME, "foo.example.org."),
            Cluster::default().with_nodes(two_nodes()).with_pods(pods(&[
                ("pod-0", "node2", false, true),
                ("pod-1", "node2", false, true),
            ])),
            opts(),
            vec![
                srv(host),
                ep(host, "A", &["54.10.11.2"]),
                ep(host, "AAAA", &["2001:DB8::3"]),
            ],
        ),
        (
            // TestServiceSourceNodePortServices/"annotated NodePort services with ExternalTrafficPolicy=Local return pods in Ready & Running state"
            "ExternalTrafficPolicy=Local return pods in Ready & Running state",
            np("Local").ann(HOSTNAME, "foo.example.org."),
            Cluster::default()
                .with_nodes(vec![
                    node(
                        "node1",
                        &[("ExternalIP", "54.10.11.1"), ("InternalIP", "10.0.1.1")],
                    ),
                    node(
                        "node2",
                        &[("ExternalIP", "54.10.11.2"), ("InternalIP", "10.0.1.2")],
                    ),
                ])
                .with_pods(pods(&[
                    ("pod-0", "node1", true, true),
                    ("pod-1", "node2", false, true),
                ])),
            opts(),
            vec![srv(host), ep(host, "A", &["54.10.11.1"])],
        ),
        (
            // TestServiceSourceNodePortServices/"annotated NodePort services with ExternalTrafficPolicy=Local return pods in Ready & Running state & not in Terminating"
            "ExternalTrafficPolicy=Local return pods in Ready & Running state & not in Terminating",
            np("Local").ann(HOSTNAME, "foo.example.org."),
            Cluster::default()
                .with_nodes(vec![
                    node(
                        "node1",
                        &[("ExternalIP", "54.10.11.1"), ("InternalIP", "10.0.1.1")],
                    ),
                    node(
                        "node2",
                        &[("ExternalIP", "54.10.11.2"), ("InternalIP", "10.0.1.2")],
                    ),
                    node(
                        "node3",
                        &[("ExternalIP", "54.10.11.3"), ("InternalIP", "10.0.1.3")],
                    ),
                ])
                .with_pods(pods(&[
                    ("pod-0", "node1", true, false),
                    ("pod-1", "node2", false, false),
                    ("pod-2", "node3", true, true),
                ])),
            opts(),
            vec![srv(host), ep(host, "A", &["54.10.11.1"])],
        ),
        (
            // TestServiceSourceNodePortServices/"access=private annotation NodePort services return an endpoint with private IP addresses of the cluster's nodes"
            "access=private annotation NodePort services return private IP addresses",
            np("Cluster")
                .ann(HOSTNAME, "foo.example.org.")
                .ann(ACCESS, "private"),
            Cluster::default().with_nodes(vec![
                node(
                    "node1",
                    &[
                        ("ExternalIP", "54.10.11.1"),
                        ("InternalIP", "10.0.1.1"),
                        ("InternalIP", "2001:DB8::1"),
                    ],
                ),
                node(
                    "node2",
                    &[
                        ("ExternalIP", "54.10.11.2"),
                        ("InternalIP", "10.0.1.2"),
                        ("InternalIP", "2001:DB8::2"),
                    ],
                ),
            ]),
            opts(),
            vec![
                srv(host),
                ep(host, "A", &["10.0.1.1", "10.0.1.2"]),
                ep(host, "AAAA", &["2001:DB8::1", "2001:DB8::2"]),
            ],
        ),
        (
            // TestServiceSourceNodePortServices/"access=public annotation NodePort services return an endpoint with external IP addresses of the cluster's nodes if exposeInternalIPv6 is unset"
            "access=public, exposeInternalIPv6 unset",
            np("Cluster")
                .ann(HOSTNAME, "foo.example.org.")
                .ann(ACCESS, "public"),
            Cluster::default().with_nodes(two_nodes()),
            opts(),
            vec![
                srv(host),
                ep(host, "A", &["54.10.11.1", "54.10.11.2"]),
                ep(host, "AAAA", &["2001:DB8::1", "2001:DB8::3"]),
            ],
        ),
        (
            // TestServiceSourceNodePortServices/"access=public annotation NodePort services return an endpoint with public IP addresses of the cluster's nodes if exposeInternalIPv6 is set to true"
            "access=public, exposeInternalIPv6 set",
            np("Cluster")
                .ann(HOSTNAME, "foo.example.org.")
                .ann(ACCESS, "public"),
            Cluster::default().with_nodes(two_nodes()),
            Options {
                expose_internal_ipv6: true,
                ..opts()
            },
            vec![
                srv(host),
                ep(host, "A", &["54.10.11.1", "54.10.11.2"]),
                ep(
                    host,
                    "AAAA",
                    &["2001:DB8::1", "2001:DB8::2", "2001:DB8::3", "2001:DB8::4"],
                ),
            ],
        ),
        (
            // TestServiceSourceNodePortServices/"NodePort services ignore unschedulable node"
            "NodePort services ignore unschedulable node",
            np("Cluster")
                .ann(HOSTNAME, "foo.example.org.")
                .ann(ACCESS, "public"),
            Cluster::default().with_nodes({
                let mut n = two_nodes();
                n[0]["spec"]["unschedulable"] = json!(true);
                n[1]["spec"]["unschedulable"] = json!(false);
                n
            }),
            Options {
                exclude_unschedulable: true,
                ..opts()
            },
            vec![
                srv(host),
                ep(host, "A", &["54.10.11.2"]),
                ep(host, "AAAA", &["2001:DB8::3"]),
            ],
        ),
        (
            // TestServiceSourceNodePortServices/"annotated NodePort service with TTL produces SRV endpoint with TTL"
            "annotated NodePort service with TTL produces SRV endpoint with TTL",
            np("Cluster")
                .ann(HOSTNAME, "foo.example.org.")
                .ann(TTL, "300"),
            Cluster::default().with_nodes(two_nodes()),
            opts(),
            vec![
                with_ttl(srv(host), 300),
                with_ttl(ep(host, "A", &["54.10.11.1", "54.10.11.2"]), 300),
                with_ttl(ep(host, "AAAA", &["2001:DB8::1", "2001:DB8::3"]), 300),
            ],
        ),
    ];
    for (title, svc, cluster, options, want) in cases {
        check(
            title,
            &translate(&svc.build(), &cluster, &options),
            Want::Endpoints(want),
        );
    }
}

/// dnsplane's own: the SRV record's protocol and several ports (upstream covers them
/// in TestServiceFQDNTemplate/"fqdn-template for NodePort services produces SRV
/// records", see fqdn.rs); an unschedulable node is kept without the option; the
/// provider-specific properties and set identifier reach the SRV record too.
#[test]
fn node_port_srv_records_carry_the_object_properties() {
    let svc = Svc::foo("NodePort")
        .ann(HOSTNAME, "foo.example.org")
        .ann(SET_IDENTIFIER, "blue")
        .ann("external-dns.kubernetes.io/aws-weight", "10")
        .spec(
            "ports",
            json!([{"nodePort": 30053, "protocol": "UDP"}, {"port": 80}]),
        );
    let mut cluster = Cluster::default().with_nodes(two_nodes());
    cluster.nodes.get_mut("node1").expect("node1")["spec"]["unschedulable"] = json!(true);
    let got = translate(&svc.build(), &cluster, &opts());
    let props = |e: Endpoint| Endpoint {
        set_identifier: "blue".into(),
        provider_specific: vec![("aws/weight".into(), "10".into())],
        ..e
    };
    check(
        "SRV with UDP, properties on every record",
        &got,
        Want::Endpoints(vec![
            props(ep(
                "_foo._udp.foo.example.org",
                "SRV",
                &["0 50 30053 foo.example.org."],
            )),
            props(ep("foo.example.org", "A", &["54.10.11.1", "54.10.11.2"])),
            props(ep(
                "foo.example.org",
                "AAAA",
                &["2001:DB8::1", "2001:DB8::3"],
            )),
        ]),
    );
}

/// TestNodesExternalTrafficPolicyTypeLocal, through the A record of a NodePort Service
/// with `externalTrafficPolicy: Local` (one external address per node).
#[test]
fn nodes_external_traffic_policy_local() {
    let svc = np("Local").ann(HOSTNAME, "foo.example.org").build();
    let nodes = || {
        vec![
            node("node1", &[("ExternalIP", "54.10.11.1")]),
            node("node2", &[("ExternalIP", "54.10.11.2")]),
            node("node3", &[("ExternalIP", "54.10.11.3")]),
        ]
    };
    let host = "foo.example.org";
    let cases: Vec<(&str, Cluster, Vec<&str>)> = vec![
        (
            // TestNodesExternalTrafficPolicyTypeLocal/"best pod wins during rolling update regardless of iteration order"
            "best pod wins during rolling update regardless of iteration order",
            Cluster::default().with_nodes(nodes()).with_pods(pods(&[
                ("pod-0", "node1", false, false),
                ("pod-1", "node1", true, false),
                ("pod-2", "node2", true, false),
            ])),
            vec!["54.10.11.1", "54.10.11.2"],
        ),
        (
            // TestNodesExternalTrafficPolicyTypeLocal/"best pod state wins per node deterministically"
            "best pod state wins per node deterministically",
            Cluster::default().with_nodes(nodes()).with_pods(pods(&[
                ("pod-0", "node1", false, false),
                ("pod-1", "node1", true, false),
                ("pod-2", "node2", false, false),
                ("pod-3", "node2", true, true),
                ("pod-4", "node3", false, false),
            ])),
            vec!["54.10.11.1"],
        ),
        (
            // TestNodesExternalTrafficPolicyTypeLocal/"falls back to nodesReady when all ready pods are terminating"
            "falls back to nodesReady when all ready pods are terminating",
            Cluster::default()
                .with_nodes(nodes())
                .with_pods(pods(&[("pod-0", "node1", true, true)])),
            vec!["54.10.11.1"],
        ),
        (
            // TestNodesExternalTrafficPolicyTypeLocal/"falls back to nodesRunning when no pod is ready"
            "falls back to nodesRunning when no pod is ready",
            Cluster::default()
                .with_nodes(nodes())
                .with_pods(pods(&[("pod-0", "node1", false, false)])),
            vec!["54.10.11.1"],
        ),
        (
            // TestNodesExternalTrafficPolicyTypeLocal/"skips pods that are not in Running phase"
            "skips pods that are not in Running phase",
            Cluster::default().with_nodes(nodes()).with_pods(vec![{
                let mut p = Pod::new("testing", "pod-pending").node("node1");
                p.0["status"]["phase"] = json!("Pending");
                p
            }]),
            vec![],
        ),
        (
            // TestNodesExternalTrafficPolicyTypeLocal/"skips pods whose node is not found in the informer"
            "skips pods whose node is not found in the informer",
            Cluster::default().with_pods(pods(&[("pod-0", "node1", true, false)])),
            vec![],
        ),
        (
            // TestNodesExternalTrafficPolicyTypeLocal/"returns nil when pod list is empty"
            "returns nil when pod list is empty",
            Cluster::default().with_nodes(nodes()),
            vec![],
        ),
        (
            // TestNodesExternalTrafficPolicyTypeLocal/"returns only non-terminating ready nodes when mixed with terminating ready nodes"
            "returns only non-terminating ready nodes when mixed with terminating ready nodes",
            Cluster::default().with_nodes(nodes()).with_pods(pods(&[
                ("pod-0", "node1", true, false),
                ("pod-1", "node2", true, true),
            ])),
            vec!["54.10.11.1"],
        ),
    ];
    for (title, cluster, addresses) in cases {
        let mut want = vec![srv(host)];
        if !addresses.is_empty() {
            want.push(ep(host, "A", &addresses));
        }
        check(
            title,
            &translate(&svc, &cluster, &opts()),
            Want::Endpoints(want),
        );
    }
}
