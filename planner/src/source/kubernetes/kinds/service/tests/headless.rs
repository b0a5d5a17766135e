//! TestHeadlessServices, TestHeadlessServicesHostIP,
//! TestMultipleHeadlessServicesPointingToPodsOnTheSameNode and the headless helpers'
//! unit tests (TestProcessEndpointSlices_*, TestGetTargetsForDomain_*,
//! TestFindPodForEndpoint), through `translate`.
use super::*;

/// One row of the upstream headless tables: `testing/foo`, selector
/// `component=foo`, one pod per name, one EndpointSlice (IPv4) listing them.
#[derive(Debug, Clone)]
struct Headless {
    annotations: Vec<(&'static str, &'static str)>,
    pod_annotations: Vec<(&'static str, &'static str)>,
    pod_ips: Vec<&'static str>,
    host_ips: Vec<&'static str>,
    pod_names: Vec<&'static str>,
    hostnames: Vec<&'static str>,
    ready: Vec<bool>,
    publish_not_ready: bool,
    nodes: Vec<Value>,
    /// `None`: the endpoint has no `targetRef`.
    target_refs: Option<Vec<Value>>,
    /// The slice's addresses, when not the pod IPs (TestHeadlessServicesHostIP).
    slice_addresses: Option<&'static str>,
}

impl Default for Headless {
    fn default() -> Headless {
        Headless {
            annotations: vec![(HOSTNAME, "service.example.org")],
            pod_annotations: vec![],
            pod_ips: vec!["1.1.1.1", "1.1.1.2"],
            host_ips: vec!["", ""],
            pod_names: vec!["foo-0", "foo-1"],
            hostnames: vec!["foo-0", "foo-1"],
            ready: vec![true, true],
            publish_not_ready: false,
            nodes: vec![],
            target_refs: Some(vec![]),
            slice_addresses: None,
        }
    }
}

impl Headless {
    fn run(&self, options: &Options) -> Translation {
        let mut svc = Svc::foo("ClusterIP")
            .cluster_ip("None")
            .label("component", "foo")
            .spec("selector", json!({"component": "foo"}))
            .spec("publishNotReadyAddresses", json!(self.publish_not_ready));
        for (k, v) in &self.annotations {
            svc = svc.ann(k, v);
        }
        let mut pods = Vec::new();
        let mut endpoints = Vec::new();
        for (i, name) in self.pod_names.iter().enumerate() {
            // Upstream's pods carry no nodeName and its node no name (the lister finds
            // "" under ""); here both are called node-1.
            let mut p = Pod::new("testing", name)
                .label("component", "foo")
                .hostname(self.hostnames[i])
                .node("node-1")
                .pod_ip(self.pod_ips[i])
                .host_ip(self.host_ips[i]);
            for (k, v) in &self.pod_annotations {
                p = p.ann(k, v);
            }
            pods.push(p);
            let address = self.slice_addresses.unwrap_or(self.pod_ips[i]);
            let mut e = slice_ep(address, name, self.ready[i]);
            if self.target_refs.is_none() {
                e.as_object_mut().expect("object").remove("targetRef");
            }
            endpoints.push(e);
        }
        let cluster = Cluster::default()
            .with_pods(pods)
            .with_nodes(self.nodes.clone())
            .with_slice("testing/foo", "IPv4", endpoints);
        translate(&svc.build(), &cluster, options)
    }
}

fn types(t: &[&str]) -> Options {
    Options {
        service_types: t.iter().map(|s| s.to_string()).collect(),
        ..opts()
    }
}

fn one_pod(ip: &'static str) -> Headless {
    Headless {
        pod_ips: vec![ip],
        host_ips: vec![""],
        pod_names: vec!["foo"],
        hostnames: vec![""],
        ready: vec![true],
        ..Headless::default()
    }
}

fn node_ext(addresses: &[(&str, &str)]) -> Vec<Value> {
    vec![node("node-1", addresses)]
}

const NODE_EXTERNAL_IP: (&str, &str) = (ENDPOINTS_TYPE, "NodeExternalIP");
const HOST_IP: (&str, &str) = (ENDPOINTS_TYPE, "HostIP");

#[test]
fn headless_services() {
    let s = "service.example.org";
    let ttl1 = vec![(HOSTNAME, "service.example.org"), (TTL, "1")];
    let v6 = vec!["2001:db8::1", "2001:db8::2"];
    let cases: Vec<(&str, Headless, Options, Vec<Endpoint>)> = vec![
        (
            // TestHeadlessServices/"annotated Headless services return IPv4 endpoints for each selected Pod"
            "annotated Headless services return IPv4 endpoints for each selected Pod",
            Headless::default(),
            opts(),
            vec![
                ep("foo-0.service.example.org", "A", &["1.1.1.1"]),
                ep("foo-1.service.example.org", "A", &["1.1.1.2"]),
                ep(s, "A", &["1.1.1.1", "1.1.1.2"]),
            ],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return IPv6 endpoints for each selected Pod"
            "annotated Headless services return IPv6 endpoints for each selected Pod",
            Headless {
                pod_ips: v6.clone(),
                ..Headless::default()
            },
            types(&["ClusterIP", "LoadBalancer"]),
            vec![
                ep("foo-0.service.example.org", "AAAA", &["2001:db8::1"]),
                ep("foo-1.service.example.org", "AAAA", &["2001:db8::2"]),
                ep(s, "AAAA", &["2001:db8::1", "2001:db8::2"]),
            ],
        ),
        (
            // TestHeadlessServices/"hostname annotated Headless services are ignored"
            "hostname annotated Headless services are ignored",
            Headless::default(),
            Options {
                ignore_hostname_annotation: true,
                ..opts()
            },
            vec![],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return IPv4 endpoints with TTL for each selected Pod"
            "annotated Headless services return IPv4 endpoints with TTL for each selected Pod",
            Headless {
                annotations: ttl1.clone(),
                ..Headless::default()
            },
            opts(),
            vec![
                with_ttl(ep("foo-0.service.example.org", "A", &["1.1.1.1"]), 1),
                with_ttl(ep("foo-1.service.example.org", "A", &["1.1.1.2"]), 1),
                with_ttl(ep(s, "A", &["1.1.1.1", "1.1.1.2"]), 1),
            ],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return IPv6 endpoints with TTL for each selected Pod"
            "annotated Headless services return IPv6 endpoints with TTL for each selected Pod",
            Headless {
                annotations: ttl1,
                pod_ips: v6.clone(),
                ..Headless::default()
            },
            opts(),
            vec![
                with_ttl(ep("foo-0.service.example.org", "AAAA", &["2001:db8::1"]), 1),
                with_ttl(ep("foo-1.service.example.org", "AAAA", &["2001:db8::2"]), 1),
                with_ttl(ep(s, "AAAA", &["2001:db8::1", "2001:db8::2"]), 1),
            ],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return endpoints for each selected Pod, which are in running state"
            "annotated Headless services return endpoints for each selected Pod, which are in running state",
            Headless {
                ready: vec![true, false],
                ..Headless::default()
            },
            opts(),
            vec![
                ep("foo-0.service.example.org", "A", &["1.1.1.1"]),
                ep(s, "A", &["1.1.1.1"]),
            ],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return endpoints for all Pod if publishNotReadyAddresses is set"
            "annotated Headless services return endpoints for all Pod if publishNotReadyAddresses is set",
            Headless {
                ready: vec![true, false],
                publish_not_ready: true,
                ..Headless::default()
            },
            opts(),
            vec![
                ep("foo-0.service.example.org", "A", &["1.1.1.1"]),
                ep("foo-1.service.example.org", "A", &["1.1.1.2"]),
                ep(s, "A", &["1.1.1.1", "1.1.1.2"]),
            ],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return endpoints for pods missing hostname"
            "annotated Headless services return endpoints for pods missing hostname",
            Headless {
                hostnames: vec!["", ""],
                ..Headless::default()
            },
            opts(),
            vec![ep(s, "A", &["1.1.1.1", "1.1.1.2"])],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return only a unique set of IPv4 targets"
            "annotated Headless services return only a unique set of IPv4 targets",
            Headless {
                pod_ips: vec!["1.1.1.1", "1.1.1.1", "1.1.1.2"],
                host_ips: vec!["", "", ""],
                pod_names: vec!["foo-0", "foo-1", "foo-3"],
                hostnames: vec!["", "", ""],
                ready: vec![true, true, true],
                ..Headless::default()
            },
            opts(),
            vec![ep(s, "A", &["1.1.1.1", "1.1.1.2"])],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return only a unique set of IPv6 targets"
            "annotated Headless services return only a unique set of IPv6 targets",
            Headless {
                pod_ips: vec!["2001:db8::1", "2001:db8::1", "2001:db8::2"],
                host_ips: vec!["", "", ""],
                pod_names: vec!["foo-0", "foo-1", "foo-3"],
                hostnames: vec!["", "", ""],
                ready: vec![true, true, true],
                ..Headless::default()
            },
            opts(),
            vec![ep(s, "AAAA", &["2001:db8::1", "2001:db8::2"])],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return IPv4 targets from pod annotation"
            "annotated Headless services return IPv4 targets from pod annotation",
            Headless {
                pod_annotations: vec![(TARGET, "1.2.3.4")],
                ..one_pod("1.1.1.1")
            },
            types(&["ClusterIP"]),
            vec![ep(s, "A", &["1.2.3.4"])],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return IPv6 targets from pod annotation"
            "annotated Headless services return IPv6 targets from pod annotation",
            Headless {
                pod_annotations: vec![(TARGET, "2001:db8::4")],
                ..one_pod("2001:db8::1")
            },
            opts(),
            vec![ep(s, "AAAA", &["2001:db8::4"])],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return IPv4 targets from node external IP if endpoints-type annotation is set"
            "IPv4 targets from node external IP if endpoints-type annotation is set",
            Headless {
                annotations: vec![(HOSTNAME, s), NODE_EXTERNAL_IP],
                nodes: node_ext(&[("ExternalIP", "1.2.3.4")]),
                ..one_pod("1.1.1.1")
            },
            opts(),
            vec![ep(s, "A", &["1.2.3.4"])],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return only external IPv6 targets from node IP if endpoints-type annotation is set and exposeInternalIPv6 flag is unset"
            "only external IPv6 targets from node IP, exposeInternalIPv6 unset",
            Headless {
                annotations: vec![(HOSTNAME, s), NODE_EXTERNAL_IP],
                nodes: node_ext(&[("InternalIP", "2001:db8::4"), ("ExternalIP", "2001:db8::5")]),
                ..one_pod("2001:db8::1")
            },
            opts(),
            vec![ep(s, "AAAA", &["2001:db8::5"])],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return IPv6 targets from node external IP if endpoints-type annotation is set and exposeInternalIPv6 flag set"
            "IPv6 targets from node IP, exposeInternalIPv6 set",
            Headless {
                annotations: vec![(HOSTNAME, s), NODE_EXTERNAL_IP],
                nodes: node_ext(&[("InternalIP", "2001:db8::4")]),
                ..one_pod("2001:db8::1")
            },
            Options {
                expose_internal_ipv6: true,
                ..opts()
            },
            vec![ep(s, "AAAA", &["2001:db8::4"])],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return dual-stack targets from node external IP if endpoints-type annotation is set and exposeInternalIPv6 flag set"
            "dual-stack targets from node IP, exposeInternalIPv6 set",
            Headless {
                annotations: vec![(HOSTNAME, s), NODE_EXTERNAL_IP],
                nodes: node_ext(&[("ExternalIP", "1.2.3.4"), ("InternalIP", "2001:db8::4")]),
                ..one_pod("1.1.1.1")
            },
            Options {
                expose_internal_ipv6: true,
                ..opts()
            },
            vec![ep(s, "A", &["1.2.3.4"]), ep(s, "AAAA", &["2001:db8::4"])],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return IPv4 targets from hostIP if endpoints-type annotation is set"
            "IPv4 targets from hostIP if endpoints-type annotation is set",
            Headless {
                annotations: vec![(HOSTNAME, s), HOST_IP],
                host_ips: vec!["1.2.3.4"],
                ..one_pod("1.1.1.1")
            },
            opts(),
            vec![ep(s, "A", &["1.2.3.4"])],
        ),
        (
            // TestHeadlessServices/"annotated Headless services return IPv6 targets from hostIP if endpoints-type annotation is set"
            "IPv6 targets from hostIP if endpoints-type annotation is set",
            Headless {
                annotations: vec![(HOSTNAME, s), HOST_IP],
                host_ips: vec!["2001:db8::4"],
                ..one_pod("2001:db8::1")
            },
            opts(),
            vec![ep(s, "AAAA", &["2001:db8::4"])],
        ),
        (
            // TestHeadlessServices/"headless service with endpoints-type annotation is outside of serviceTypeFilter scope"
            // external-dns watches no Nodes when the filter leaves NodePort out, so the
            // node's addresses are not there to publish; dnsplane gives the same result.
            "headless service with endpoints-type annotation is outside of serviceTypeFilter scope",
            Headless {
                annotations: vec![(HOSTNAME, s), NODE_EXTERNAL_IP],
                host_ips: vec!["2001:db8::4"],
                nodes: node_ext(&[("ExternalIP", "1.2.3.4"), ("InternalIP", "10.0.10.12")]),
                ..one_pod("2001:db8::1")
            },
            types(&["ClusterIP"]),
            vec![],
        ),
        (
            // TestHeadlessServices/"headless service with endpoints-type annotation is in the scope of serviceTypeFilter"
            "headless service with endpoints-type annotation is in the scope of serviceTypeFilter",
            Headless {
                annotations: vec![(HOSTNAME, s), NODE_EXTERNAL_IP],
                host_ips: vec!["1.2.3.4"],
                nodes: node_ext(&[("ExternalIP", "1.2.3.4"), ("InternalIP", "10.0.10.12")]),
                ..one_pod("2001:db8::1")
            },
            types(&["ClusterIP", "NodePort"]),
            vec![ep(s, "A", &["1.2.3.4"])],
        ),
    ];
    for (title, case, options, want) in cases {
        check(title, &case.run(&options), Want::Endpoints(want));
    }
}

/// TestHeadlessServicesHostIP: `--publish-host-ip`, `--publish-internal-services`; the
/// pods carry the Service's annotations, the slice's addresses are 4.3.2.1.
#[test]
fn headless_services_host_ip() {
    let s = "service.example.org";
    let options = Options {
        publish_host_ip: true,
        publish_internal_services: true,
        exclude_unschedulable: true,
        ..opts()
    };
    let base = Headless {
        pod_annotations: vec![(HOSTNAME, s)],
        pod_ips: vec!["", ""],
        host_ips: vec!["1.1.1.1", "1.1.1.2"],
        slice_addresses: Some("4.3.2.1"),
        ..Headless::default()
    };
    let v6 = vec!["2001:db8::1", "2001:db8::2"];
    let ttl1 = vec![(HOSTNAME, s), (TTL, "1")];
    let cases: Vec<(&str, Headless, Options, Vec<Endpoint>)> = vec![
        (
            // TestHeadlessServicesHostIP/"annotated Headless services return IPv4 endpoints for each selected Pod"
            "annotated Headless services return IPv4 endpoints for each selected Pod",
            base.clone(),
            options.clone(),
            vec![
                ep("foo-0.service.example.org", "A", &["1.1.1.1"]),
                ep("foo-1.service.example.org", "A", &["1.1.1.2"]),
                ep(s, "A", &["1.1.1.1", "1.1.1.2"]),
            ],
        ),
        (
            // TestHeadlessServicesHostIP/"annotated Headless services return IPv6 endpoints for each selected Pod"
            "annotated Headless services return IPv6 endpoints for each selected Pod",
            Headless {
                host_ips: v6.clone(),
                ..base.clone()
            },
            options.clone(),
            vec![
                ep("foo-0.service.example.org", "AAAA", &["2001:db8::1"]),
                ep("foo-1.service.example.org", "AAAA", &["2001:db8::2"]),
                ep(s, "AAAA", &["2001:db8::1", "2001:db8::2"]),
            ],
        ),
        (
            // TestHeadlessServicesHostIP/"hostname annotated Headless services are ignored"
            "hostname annotated Headless services are ignored",
            base.clone(),
            Options {
                ignore_hostname_annotation: true,
                ..options.clone()
            },
            vec![],
        ),
        (
            // TestHeadlessServicesHostIP/"annotated Headless services return IPv4 endpoints with TTL for each selected Pod"
            "annotated Headless services return IPv4 endpoints with TTL for each selected Pod",
            Headless {
                annotations: ttl1.clone(),
                ..base.clone()
            },
            options.clone(),
            vec![
                with_ttl(ep("foo-0.service.example.org", "A", &["1.1.1.1"]), 1),
                with_ttl(ep("foo-1.service.example.org", "A", &["1.1.1.2"]), 1),
                with_ttl(ep(s, "A", &["1.1.1.1", "1.1.1.2"]), 1),
            ],
        ),
        (
            // TestHeadlessServicesHostIP/"annotated Headless services return IPv6 endpoints with TTL for each selected Pod"
            "annotated Headless services return IPv6 endpoints with TTL for each selected Pod",
            Headless {
                annotations: ttl1,
                host_ips: v6.clone(),
                ..base.clone()
            },
            options.clone(),
            vec![
                with_ttl(ep("foo-0.service.example.org", "AAAA", &["2001:db8::1"]), 1),
                with_ttl(ep("foo-1.service.example.org", "AAAA", &["2001:db8::2"]), 1),
                with_ttl(ep(s, "AAAA", &["2001:db8::1", "2001:db8::2"]), 1),
            ],
        ),
        (
            // TestHeadlessServicesHostIP/"annotated Headless services return endpoints for each selected Pod, which are in running state"
            "annotated Headless services return endpoints for each selected Pod, which are in running state",
            Headless {
                ready: vec![true, false],
                ..base.clone()
            },
            options.clone(),
            vec![
                ep("foo-0.service.example.org", "A", &["1.1.1.1"]),
                ep(s, "A", &["1.1.1.1"]),
            ],
        ),
        (
            // TestHeadlessServicesHostIP/"annotated Headless services return endpoints for all Pod if publishNotReadyAddresses is set"
            "annotated Headless services return endpoints for all Pod if publishNotReadyAddresses is set",
            Headless {
                ready: vec![true, false],
                publish_not_ready: true,
                ..base.clone()
            },
            options.clone(),
            vec![
                ep("foo-0.service.example.org", "A", &["1.1.1.1"]),
                ep("foo-1.service.example.org", "A", &["1.1.1.2"]),
                ep(s, "A", &["1.1.1.1", "1.1.1.2"]),
            ],
        ),
        (
            // TestHeadlessServicesHostIP/"annotated Headless services return IPv4 endpoints for pods missing hostname"
            "annotated Headless services return IPv4 endpoints for pods missing hostname",
            Headless {
                hostnames: vec!["", ""],
                ..base.clone()
            },
            options.clone(),
            vec![ep(s, "A", &["1.1.1.1", "1.1.1.2"])],
        ),
        (
            // TestHeadlessServicesHostIP/"annotated Headless services return IPv6 endpoints for pods missing hostname"
            "annotated Headless services return IPv6 endpoints for pods missing hostname",
            Headless {
                hostnames: vec!["", ""],
                host_ips: v6,
                ..base.clone()
            },
            options.clone(),
            vec![ep(s, "AAAA", &["2001:db8::1", "2001:db8::2"])],
        ),
        (
            // TestHeadlessServicesHostIP/"annotated Headless services without a targetRef has no endpoints"
            "annotated Headless services without a targetRef has no endpoints",
            Headless {
                pod_names: vec!["foo-0"],
                hostnames: vec!["foo-0"],
                host_ips: vec!["1.1.1.1"],
                pod_ips: vec![""],
                ready: vec![true],
                target_refs: None,
                ..base.clone()
            },
            options.clone(),
            vec![],
        ),
    ];
    for (title, case, options, want) in cases {
        check(title, &case.run(&options), Want::Endpoints(want));
    }
}

/// TestMultipleHeadlessServicesPointingToPodsOnTheSameNode: two headless Services
/// (`kafka`, `kafka-2`) of one name over the same three pods.
#[test]
fn multiple_headless_services_pointing_to_pods_on_the_same_node() {
    let svc = |name: &str| {
        Svc::new("default", name, "ClusterIP")
            .label("app", "kafka")
            .ann(HOSTNAME, "example.org")
            .cluster_ip("None")
            .spec("selector", json!({"app": "kafka"}))
            .build()
    };
    let ips = ["10.244.1.2", "10.244.1.3", "10.244.1.4"];
    let pods = (0..3)
        .map(|i| {
            Pod::new("default", &format!("kafka-{i}"))
                .label("app", "kafka")
                .hostname(&format!("kafka-{i}"))
                .node("local-dev-worker")
                .pod_ip(ips[i])
                .host_ip("172.18.0.2")
                .running(true)
        })
        .collect();
    let slice = || -> Vec<Value> {
        (0..3)
            .map(|i| slice_ep(ips[i], &format!("kafka-{i}"), true))
            .collect()
    };
    let cluster = Cluster::default()
        .with_pods(pods)
        .with_slice("default/kafka", "IPv4", slice())
        .with_slice("default/kafka-2", "IPv4", slice());
    let options = Options {
        exclude_unschedulable: true,
        ..opts()
    };
    check(
        "TestMultipleHeadlessServicesPointingToPodsOnTheSameNode",
        &translate_all(&[svc("kafka"), svc("kafka-2")], &cluster, &options),
        Want::Endpoints(vec![
            ep("example.org", "A", &ips),
            ep("kafka-0.example.org", "A", &["10.244.1.2"]),
            ep("kafka-1.example.org", "A", &["10.244.1.3"]),
            ep("kafka-2.example.org", "A", &["10.244.1.4"]),
        ]),
    );
}

/// The headless helpers' unit tests, through `translate`.
#[test]
fn headless_helpers() {
    let s = "test.example.com";
    let svc = || {
        Svc::new("default", "svc", "ClusterIP")
            .cluster_ip("None")
            .ann(HOSTNAME, s)
    };
    let pod = |name: &str| Pod::new("default", name).pod_ip("10.0.0.1");
    let run = |svc: Svc, cluster: Cluster| translate(&svc.build(), &cluster, &opts());
    let ready = json!({"ready": true});
    let cases: Vec<(&str, Svc, Cluster, Vec<Endpoint>)> = vec![
        (
            // TestProcessEndpointSlices_PublishPodIPsPodNil
            "TestProcessEndpointSlices_PublishPodIPsPodNil",
            svc(),
            Cluster::default().with_slice(
                "default/svc",
                "IPv4",
                vec![json!({"targetRef": {"kind": "Pod", "name": "missing-pod"}, "conditions": ready})],
            ),
            vec![],
        ),
        (
            // TestProcessEndpointSlices_PublishPodIPsUnsupportedAddressType
            "TestProcessEndpointSlices_PublishPodIPsUnsupportedAddressType",
            svc(),
            Cluster::default()
                .with_pods(vec![pod("some-pod")])
                .with_slice("default/svc", "FQDN", vec![slice_ep("pod.example", "some-pod", true)]),
            vec![],
        ),
        (
            // TestProcessEndpointSlices_PublishPodIPsFalse (the HostIP endpoints type)
            "TestProcessEndpointSlices_PublishPodIPsFalse",
            svc().ann(ENDPOINTS_TYPE, "HostIP"),
            Cluster::default()
                .with_pods(vec![pod("test-pod").host_ip("192.168.1.100")])
                .with_slice("default/svc", "FQDN", vec![slice_ep("10.0.0.1", "test-pod", true)]),
            vec![ep(s, "A", &["192.168.1.100"])],
        ),
        (
            // TestProcessEndpointSlices_NotReadyWithPublishNotReady
            "TestProcessEndpointSlices_NotReadyWithPublishNotReady",
            svc().spec("publishNotReadyAddresses", json!(true)),
            Cluster::default()
                .with_pods(vec![pod("test-pod")])
                .with_slice("default/svc", "IPv4", vec![slice_ep("10.0.0.1", "test-pod", false)]),
            vec![ep(s, "A", &["10.0.0.1"])],
        ),
        (
            // TestGetTargetsForDomain_EmptyAddresses
            "TestGetTargetsForDomain_EmptyAddresses",
            svc(),
            Cluster::default().with_pods(vec![pod("test-pod")]).with_slice(
                "default/svc",
                "IPv4",
                vec![json!({"addresses": [], "targetRef": {"kind": "Pod", "name": "test-pod"}})],
            ),
            vec![],
        ),
        (
            // TestGetTargetsForDomain_HostIP
            "TestGetTargetsForDomain_HostIP",
            svc().ann(ENDPOINTS_TYPE, "HostIP"),
            Cluster::default()
                .with_pods(vec![pod("test-pod").host_ip("192.168.1.100")])
                .with_slice("default/svc", "IPv4", vec![slice_ep("10.0.0.1", "test-pod", true)]),
            vec![ep(s, "A", &["192.168.1.100"])],
        ),
        (
            // TestGetTargetsForDomain_NodeExternalIP
            "TestGetTargetsForDomain_NodeExternalIP",
            svc().ann(ENDPOINTS_TYPE, "NodeExternalIP"),
            Cluster::default()
                .with_nodes(vec![node(
                    "test-node",
                    &[("ExternalIP", "203.0.113.10"), ("InternalIP", "10.0.0.10")],
                )])
                .with_pods(vec![pod("test-pod").node("test-node")])
                .with_slice("default/svc", "IPv4", vec![slice_ep("10.0.0.1", "test-pod", true)]),
            vec![ep(s, "A", &["203.0.113.10"])],
        ),
        (
            // TestFindPodForEndpoint/"returns nil for non-Pod kind"
            "TestFindPodForEndpoint/returns nil for non-Pod kind",
            svc(),
            Cluster::default().with_pods(vec![pod("pod1")]).with_slice(
                "default/svc",
                "IPv4",
                vec![json!({"addresses": ["10.0.0.1"], "targetRef": {"kind": "Service", "name": "pod1"}})],
            ),
            vec![],
        ),
        (
            // TestFindPodForEndpoint/"returns nil for non-empty APIVersion"
            "TestFindPodForEndpoint/returns nil for non-empty APIVersion",
            svc(),
            Cluster::default().with_pods(vec![pod("pod1")]).with_slice(
                "default/svc",
                "IPv4",
                vec![json!({"addresses": ["10.0.0.1"], "targetRef": {"kind": "Pod", "name": "pod1", "apiVersion": "v1"}})],
            ),
            vec![],
        ),
        (
            // TestProcessEndpointSlices_PodWithHostname
            "TestProcessEndpointSlices_PodWithHostname",
            svc(),
            Cluster::default()
                .with_pods(vec![pod("test-pod").hostname("my-pod")])
                .with_slice("default/svc", "IPv4", vec![slice_ep("10.0.0.1", "test-pod", true)]),
            vec![ep(s, "A", &["10.0.0.1"]), ep("my-pod.test.example.com", "A", &["10.0.0.1"])],
        ),
    ];
    for (title, svc, cluster, want) in cases {
        check(title, &run(svc, cluster), Want::Endpoints(want));
    }
}
