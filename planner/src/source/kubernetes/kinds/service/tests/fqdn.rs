//! TestServiceFQDNTemplate (`source/service_fqdn_test.go`), the `--fqdn-template`
//! cases. The upstream harness: one node `test-node` (203.0.113.10 external,
//! 10.0.0.10 internal), a pod per EndpointSlice endpoint (its hostname, on
//! `test-node`, host IP 10.1.20.4<i>), and `PublishInternal`,
//! `AlwaysPublishNotReadyAddresses`, `ExposeInternalIPv6`, `ExcludeUnschedulable`.
use super::*;

/// An EndpointSlice endpoint: address, hostname, pod.
type SliceEp = (&'static str, Option<&'static str>, &'static str);

#[derive(Debug)]
struct Fqdn {
    services: Vec<Value>,
    /// (namespace, service, endpoints)
    slices: Vec<(&'static str, &'static str, Vec<SliceEp>)>,
    template: &'static str,
    publish_host_ip: bool,
    service_types: Vec<String>,
}

impl Fqdn {
    fn new(template: &'static str, services: Vec<Svc>) -> Fqdn {
        Fqdn {
            services: services.into_iter().map(Svc::build).collect(),
            slices: Vec::new(),
            template,
            publish_host_ip: false,
            service_types: Vec::new(),
        }
    }

    fn slice(mut self, ns: &'static str, svc: &'static str, eps: Vec<SliceEp>) -> Fqdn {
        self.slices.push((ns, svc, eps));
        self
    }

    fn run(&self) -> Translation {
        let mut cluster = Cluster::default().with_nodes(vec![node(
            "test-node",
            &[("ExternalIP", "203.0.113.10"), ("InternalIP", "10.0.0.10")],
        )]);
        for (ns, svc, eps) in &self.slices {
            let mut endpoints = Vec::new();
            let mut pods = Vec::new();
            for (i, (addr, hostname, pod)) in eps.iter().enumerate() {
                let mut e = json!({"addresses": [addr], "targetRef": {"kind": "Pod", "name": pod, "namespace": ns}});
                if let Some(h) = hostname {
                    e["hostname"] = json!(h);
                }
                endpoints.push(e);
                pods.push(
                    Pod::new(ns, pod)
                        .hostname(hostname.unwrap_or(""))
                        .node("test-node")
                        .host_ip(&format!("10.1.20.4{i}")),
                );
            }
            cluster = cluster
                .with_pods(pods)
                .with_slice(&format!("{ns}/{svc}"), "IPv4", endpoints);
        }
        let options = Options {
            fqdn_template: Some(self.template.into()),
            publish_host_ip: self.publish_host_ip,
            service_types: self.service_types.clone(),
            publish_internal_services: true,
            always_publish_not_ready_addresses: true,
            expose_internal_ipv6: true,
            exclude_unschedulable: true,
            ..opts()
        };
        translate_all(&self.services, &cluster, &options)
    }
}

fn my_svc() -> Svc {
    Svc::new("default", "my-svc", "ClusterIP").cluster_ip("10.0.0.1")
}

fn headless(ns: &str, name: &str) -> Svc {
    Svc::new(ns, name, "ClusterIP")
        .cluster_ip("None")
        .spec("ports", json!([{"name": "http", "port": 8080}]))
}

/// The three headless Services and their slices of the pod-IP/host-IP cases.
fn three_headless(template: &'static str) -> Fqdn {
    Fqdn::new(
        template,
        vec![
            headless("default", "service-one"),
            headless("default", "service-two"),
            headless("default", "service-three"),
        ],
    )
    .slice(
        "default",
        "service-one",
        vec![("100.66.2.241", Some("ip-10-1-164-158.internal"), "pod-1")],
    )
    .slice(
        "default",
        "service-two",
        vec![("100.66.2.244", Some("ip-10-1-164-152.internal"), "pod-2")],
    )
    .slice(
        "default",
        "service-three",
        vec![
            ("100.66.2.246", Some("ip-10-1-164-158.internal"), "pod-3"),
            ("100.66.2.247", Some("ip-10-1-164-158.internal"), "pod-4"),
        ],
    )
}

fn a(name: &str, targets: &[&str]) -> Endpoint {
    ep(name, "A", targets)
}

#[test]
fn service_fqdn_template() {
    let node_external = |types: Vec<String>| {
        let mut f = Fqdn::new(
            "{{.Name}}.{{.Namespace}}.cluster.com",
            vec![
                Svc::new("svc-ns", "svc-one", "ClusterIP")
                    .ann(ENDPOINTS_TYPE, "NodeExternalIP")
                    .cluster_ip("None"),
            ],
        )
        .slice(
            "svc-ns",
            "svc-one",
            vec![
                ("100.66.2.246", Some("ip-10-1-164-158.internal"), "pod-1"),
                ("100.66.2.247", Some("ip-10-1-164-158.internal"), "pod-2"),
            ],
        );
        f.service_types = types;
        f
    };
    let mut host_ip = three_headless("{{ .Name }}.org.tld");
    host_ip.publish_host_ip = true;
    let cases: Vec<(&str, Fqdn, Vec<Endpoint>)> = vec![
        (
            // TestServiceFQDNTemplate/"fqdn-template can reference .Kind"
            "fqdn-template can reference .Kind",
            Fqdn::new("{{.Kind | toLower}}.{{.Name}}.example.com", vec![my_svc()]),
            vec![a("service.my-svc.example.com", &["10.0.0.1"])],
        ),
        (
            // TestServiceFQDNTemplate/"fqdn-template with combine across multiple services"
            // (combine has no annotation to combine with here)
            "fqdn-template with combine across multiple services",
            Fqdn::new(
                "{{ .Name }}.{{ .Namespace }}.example.tld, all.example.org",
                vec![
                    Svc::new("default", "service-1", "ClusterIP").cluster_ip("170.19.58.167"),
                    Svc::new("kube-system", "service-2", "ClusterIP").cluster_ip("127.20.24.218"),
                ],
            ),
            vec![
                a("all.example.org", &["127.20.24.218", "170.19.58.167"]),
                a("service-1.default.example.tld", &["170.19.58.167"]),
                a("service-2.kube-system.example.tld", &["127.20.24.218"]),
            ],
        ),
        (
            // TestServiceFQDNTemplate/"fqdn-template filters by service type"
            "fqdn-template filters by service type",
            Fqdn::new(
                r#"{{ if eq .Spec.Type "ExternalName" }}{{ .Name }}.external.example.tld{{ end}}"#,
                vec![
                    Svc::new("default", "service-one", "LoadBalancer").lbs(&["service-one.example.tld"]),
                    Svc::new("default", "service-two", "ExternalName")
                        .spec("externalName", json!("bucket-name.s3.us-east-1.amazonaws.com")),
                ],
            ),
            vec![ep(
                "service-two.external.example.tld",
                "CNAME",
                &["bucket-name.s3.us-east-1.amazonaws.com"],
            )],
        ),
        (
            // TestServiceFQDNTemplate/"fqdn-template filters by selector value"
            "fqdn-template filters by selector value",
            Fqdn::new(
                r#"{{ if eq (index .Spec.Selector "app") "my-website" }}www.{{ .Name }}.website.example.tld{{ end}}"#,
                vec![
                    Svc::new("default", "service-one", "ExternalName")
                        .spec("externalName", json!("api.example.tld"))
                        .spec("selector", json!({"app": "my-app"})),
                    Svc::new("default", "service-two", "ExternalName")
                        .spec("externalName", json!("www.bucket-name.amazonaws.com"))
                        .spec("selector", json!({"app": "my-website"})),
                ],
            ),
            vec![ep(
                "www.service-two.website.example.tld",
                "CNAME",
                &["www.bucket-name.amazonaws.com"],
            )],
        ),
        (
            // TestServiceFQDNTemplate/"fqdn-template with NodeExternalIP endpoint type and loose service filter"
            "fqdn-template with NodeExternalIP endpoint type and loose service filter",
            node_external(vec![]),
            vec![
                a("ip-10-1-164-158.internal.svc-one.svc-ns.cluster.com", &["203.0.113.10"]),
                a("svc-one.svc-ns.cluster.com", &["203.0.113.10"]),
            ],
        ),
        (
            // TestServiceFQDNTemplate/"fqdn-template filtered out when service type filter excludes ClusterIP"
            "fqdn-template filtered out when service type filter excludes ClusterIP",
            node_external(vec!["ClusterIP".into()]),
            vec![],
        ),
        (
            // TestServiceFQDNTemplate/"fqdn-template with TrafficDistribution zone annotation"
            "fqdn-template with TrafficDistribution zone annotation",
            Fqdn::new(
                r#"{{ $annotations := .ObjectMeta.Annotations }}{{ .Name }}{{ if eq (.Spec.TrafficDistribution | printf) "PreferSameZone" }}.zone.{{ index $annotations "topology.kubernetes.io/zone" }}{{ else }}.close{{ end }}.example.tld"#,
                [
                    ("service-one", "us-west-1a", "192.51.100.22", "198.51.100.30", "PreferSameZone"),
                    ("service-two", "us-west-1c", "192.51.100.5", "198.51.100.32", "PreferSameZone"),
                    ("service-three", "us-west-1a", "192.51.100.33", "198.51.100.70", "PreferClose"),
                ]
                .into_iter()
                .map(|(name, zone, cip, ext, dist)| {
                    Svc::new("default", name, "ClusterIP")
                        .ann("topology.kubernetes.io/zone", zone)
                        .cluster_ip(cip)
                        .external_ips(&[ext])
                        .spec("trafficDistribution", json!(dist))
                })
                .collect(),
            ),
            vec![
                a("service-one.zone.us-west-1a.example.tld", &["192.51.100.22"]),
                a("service-two.zone.us-west-1c.example.tld", &["192.51.100.5"]),
                a("service-three.close.example.tld", &["192.51.100.33"]),
            ],
        ),
        (
            // TestServiceFQDNTemplate/"fqdn-template with specific port names"
            "fqdn-template with specific port names",
            Fqdn::new(
                r#"{{ $name := .Name }}{{ range .Spec.Ports -}}{{ $name }}{{ if eq .Name "http2" }}.http2{{ else if eq .Name "debug" }}.debug{{ end }}.example.tld.{{printf "," }}{{ end }}"#,
                vec![
                    Svc::new("default", "service-one", "ClusterIP")
                        .cluster_ip("192.51.100.22")
                        .spec("ports", json!([{"name": "http", "port": 8080}, {"name": "debug", "port": 8082}])),
                    Svc::new("default", "service-two", "ClusterIP")
                        .cluster_ip("192.51.100.5")
                        .spec("ports", json!([{"name": "http", "port": 8080}, {"name": "http2", "port": 8086}])),
                    Svc::new("default", "service-three", "ClusterIP")
                        .cluster_ip("2041:0000:140F::875B:131B")
                        .spec("ports", json!([{"name": "debug", "port": 8082}, {"name": "http2", "port": 8086}])),
                ],
            ),
            vec![
                a("service-one.debug.example.tld", &["192.51.100.22"]),
                a("service-one.example.tld", &["192.51.100.22"]),
                ep("service-three.debug.example.tld", "AAAA", &["2041:0000:140F::875B:131B"]),
                ep("service-three.http2.example.tld", "AAAA", &["2041:0000:140F::875B:131B"]),
                a("service-two.example.tld", &["192.51.100.5"]),
                a("service-two.http2.example.tld", &["192.51.100.5"]),
            ],
        ),
        (
            // TestServiceFQDNTemplate/"fqdn-template resolves headless services using pod IPs"
            "fqdn-template resolves headless services using pod IPs",
            three_headless("{{ .Name }}.org.tld"),
            vec![
                a("ip-10-1-164-152.internal.service-two.org.tld", &["100.66.2.244"]),
                a("ip-10-1-164-158.internal.service-one.org.tld", &["100.66.2.241"]),
                a("ip-10-1-164-158.internal.service-three.org.tld", &["100.66.2.246", "100.66.2.247"]),
                a("service-one.org.tld", &["100.66.2.241"]),
                a("service-three.org.tld", &["100.66.2.246", "100.66.2.247"]),
                a("service-two.org.tld", &["100.66.2.244"]),
            ],
        ),
        (
            // TestServiceFQDNTemplate/"fqdn-template resolves headless services using host IP"
            "fqdn-template resolves headless services using host IP",
            host_ip,
            vec![
                a("ip-10-1-164-152.internal.service-two.org.tld", &["10.1.20.40"]),
                a("ip-10-1-164-158.internal.service-one.org.tld", &["10.1.20.40"]),
                a("ip-10-1-164-158.internal.service-three.org.tld", &["10.1.20.40", "10.1.20.41"]),
                a("service-one.org.tld", &["10.1.20.40"]),
                a("service-three.org.tld", &["10.1.20.40", "10.1.20.41"]),
                a("service-two.org.tld", &["10.1.20.40"]),
            ],
        ),
        (
            // TestServiceFQDNTemplate/"fqdn-template for NodePort services produces SRV records"
            "fqdn-template for NodePort services produces SRV records",
            Fqdn::new(
                r#"{{ if eq .Spec.Type "NodePort" }}{{ range .Spec.Ports }}{{ .Name }}.host.tld{{printf "," }}{{end}}{{ end }}"#,
                vec![
                    Svc::new("default", "service-one", "NodePort")
                        .cluster_ip("10.96.41.131")
                        .spec("ports", json!([
                            {"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30080},
                            {"name": "debug", "port": 8082, "targetPort": 8082, "nodePort": 30082},
                        ])),
                    Svc::new("default", "service-two", "ClusterIP")
                        .cluster_ip("10.96.41.132")
                        .spec("ports", json!([{"name": "http", "port": 8080}, {"name": "http2", "port": 8086}])),
                    Svc::new("default", "service-three", "NodePort")
                        .cluster_ip("10.96.41.133")
                        .spec("ports", json!([
                            {"name": "debug", "port": 8082, "targetPort": 8083, "protocol": "UDP", "nodePort": 30083},
                            {"name": "minecraft", "port": 2525, "targetPort": 25256, "nodePort": 25565},
                        ])),
                ],
            ),
            vec![
                ep("_service-one._tcp.debug.host.tld", "SRV", &["0 50 30080 debug.host.tld.", "0 50 30082 debug.host.tld."]),
                ep("_service-one._tcp.http.host.tld", "SRV", &["0 50 30080 http.host.tld.", "0 50 30082 http.host.tld."]),
                ep("_service-three._tcp.debug.host.tld", "SRV", &["0 50 25565 debug.host.tld."]),
                ep("_service-three._tcp.minecraft.host.tld", "SRV", &["0 50 25565 minecraft.host.tld."]),
                ep("_service-three._udp.debug.host.tld", "SRV", &["0 50 30083 debug.host.tld."]),
                ep("_service-three._udp.minecraft.host.tld", "SRV", &["0 50 30083 minecraft.host.tld."]),
                a("debug.host.tld", &["203.0.113.10"]),
                a("http.host.tld", &["203.0.113.10"]),
                a("minecraft.host.tld", &["203.0.113.10"]),
            ],
        ),
        (
            // TestServiceFQDNTemplate/"fqdn-template can reference .Kind and label contains"
            "fqdn-template can reference .Kind and label contains",
            Fqdn::new(
                "{{ if eq .Kind \"Service\" }}{{ range $key, $value := .Labels }}\n\t\t\t\t{{ if and (contains $key \"app\") (contains $value \"my-service-\") }}\n\t\t\t\t{{ $.Name }}.{{ $value }}.example.com,{{ end }}{{ end }}{{ end }}",
                vec![
                    headless("default", "service-one").label("app1", "my-service-123"),
                    headless("default", "service-two").label("app2", "my-service-345"),
                ],
            )
            .slice("default", "service-one", vec![("100.66.2.241", None, "pod-1")])
            .slice("default", "service-two", vec![("100.66.2.244", None, "pod-2")]),
            vec![
                a("service-one.my-service-123.example.com", &["100.66.2.241"]),
                a("service-two.my-service-345.example.com", &["100.66.2.244"]),
            ],
        ),
    ];
    for (title, case, want) in cases {
        check(title, &case.run(), Want::Endpoints(want));
    }
}

/// TestServiceFQDNTemplate/"fqdn-template with combine alongside internal hostname
/// annotation": a LoadBalancer Service with an internal-hostname annotation, combined.
#[test]
fn service_fqdn_template_combined_with_internal_hostname() {
    let svc = Svc::new("default", "service-one", "LoadBalancer")
        .ann(
            INTERNAL_HOSTNAME,
            "service-one.internal.tld,service-one.internal.example.tld",
        )
        .cluster_ip("192.240.240.3")
        .spec("clusterIPs", json!(["192.240.240.3", "192.240.240.4"]))
        .lbs(&["service-one.example.tld"])
        .build();
    let options = Options {
        fqdn_template: Some("{{.Name }}.example.tld".into()),
        combine_fqdn_annotation: true,
        publish_internal_services: true,
        ..opts()
    };
    check(
        "fqdn-template with combine alongside internal hostname annotation",
        &translate(&svc, &Cluster::default(), &options),
        Want::Endpoints(vec![
            ep(
                "service-one.example.tld",
                "CNAME",
                &["service-one.example.tld"],
            ),
            a("service-one.internal.example.tld", &["192.240.240.3"]),
            a("service-one.internal.tld", &["192.240.240.3"]),
        ]),
    );
}
