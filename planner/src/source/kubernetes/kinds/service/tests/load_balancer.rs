//! TestServiceSource/Endpoints (LoadBalancer and the filters), TestServiceSource/
//! MultipleServices, TestClusterIpServices, TestExternalServices,
//! TestMultipleServicesPointingToSameLoadBalancer.
use super::*;

fn run(svc: Svc, options: Options) -> Translation {
    translate(&svc.build(), &Cluster::default(), &options)
}

fn lb() -> Svc {
    Svc::foo("LoadBalancer")
}

fn types(t: &[&str]) -> Options {
    Options {
        service_types: t.iter().map(|s| s.to_string()).collect(),
        ..opts()
    }
}

fn template(t: &str) -> Options {
    Options {
        fqdn_template: Some(t.into()),
        ..opts()
    }
}

fn a(name: &str, targets: &[&str]) -> Endpoint {
    ep(name, "A", targets)
}

#[test]
fn service_source_endpoints() {
    use Want::*;
    let ignore = Options {
        ignore_hostname_annotation: true,
        ..opts()
    };
    let two = "{{.Name}}.fqdn.org,{{.Name}}.fqdn.com";
    let filter = |f: &str| Options {
        annotation_filter: Some(f.into()),
        ..opts()
    };
    let cases: Vec<(&str, Svc, Options, Want)> = vec![
        (
            // TestServiceSource/Endpoints/"no annotated services return no endpoints"
            "no annotated services return no endpoints",
            lb().lbs(&["1.2.3.4"]),
            opts(),
            Endpoints(vec![]),
        ),
        (
            // TestServiceSource/Endpoints/"no annotated services return no endpoints when ignoring annotations"
            "no annotated services return no endpoints when ignoring annotations",
            lb().lbs(&["1.2.3.4"]),
            ignore.clone(),
            Endpoints(vec![]),
        ),
        (
            // TestServiceSource/Endpoints/"annotated services return an endpoint with target IP"
            "annotated services return an endpoint with target IP",
            lb().ann(HOSTNAME, "foo.example.org.").lbs(&["1.2.3.4"]),
            types(&["LoadBalancer"]),
            Endpoints(vec![a("foo.example.org", &["1.2.3.4"])]),
        ),
        (
            // TestServiceSource/Endpoints/"hostname annotation on services is ignored"
            "hostname annotation on services is ignored",
            lb().ann(HOSTNAME, "foo.example.org.").lbs(&["1.2.3.4"]),
            ignore.clone(),
            Endpoints(vec![]),
        ),
        (
            // TestServiceSource/Endpoints/"annotated ClusterIp aren't processed without explicit authorization"
            "annotated ClusterIp aren't processed without explicit authorization",
            Svc::foo("ClusterIP")
                .ann(HOSTNAME, "foo.example.org.")
                .cluster_ip("1.2.3.4"),
            opts(),
            Endpoints(vec![]),
        ),
        (
            // TestServiceSource/Endpoints/"FQDN template with multiple hostnames return an endpoint with target IP"
            "FQDN template with multiple hostnames return an endpoint with target IP",
            lb().lbs(&["1.2.3.4"]),
            Options {
                service_types: vec!["LoadBalancer".into(), "NodePort".into()],
                ..template(two)
            },
            Endpoints(vec![
                a("foo.fqdn.org", &["1.2.3.4"]),
                a("foo.fqdn.com", &["1.2.3.4"]),
            ]),
        ),
        (
            // TestServiceSource/Endpoints/"with excluded service type should not generate endpoints"
            "with excluded service type should not generate endpoints",
            lb().lbs(&["1.2.3.4"]),
            Options {
                service_types: vec!["NodePort".into()],
                ..template(two)
            },
            Skipped,
        ),
        (
            // TestServiceSource/Endpoints/"FQDN template with multiple hostnames return an endpoint with target IP when ignoring annotations"
            "FQDN template ... when ignoring annotations",
            lb().lbs(&["1.2.3.4"]),
            Options {
                ignore_hostname_annotation: true,
                ..template(two)
            },
            Endpoints(vec![
                a("foo.fqdn.org", &["1.2.3.4"]),
                a("foo.fqdn.com", &["1.2.3.4"]),
            ]),
        ),
        (
            // TestServiceSource/Endpoints/"FQDN template and annotation both with multiple hostnames return an endpoint with target IP"
            "FQDN template and annotation both with multiple hostnames",
            lb().ann(HOSTNAME, "foo.example.org., bar.example.org.")
                .lbs(&["1.2.3.4"]),
            Options {
                combine_fqdn_annotation: true,
                ..template(two)
            },
            Endpoints(vec![
                a("foo.example.org", &["1.2.3.4"]),
                a("bar.example.org", &["1.2.3.4"]),
                a("foo.fqdn.org", &["1.2.3.4"]),
                a("foo.fqdn.com", &["1.2.3.4"]),
            ]),
        ),
        (
            // TestServiceSource/Endpoints/"FQDN template and annotation both with multiple hostnames while ignoring annotations will only return FQDN endpoints"
            "FQDN template and annotation both, ignoring annotations",
            lb().ann(HOSTNAME, "foo.example.org., bar.example.org.")
                .lbs(&["1.2.3.4"]),
            Options {
                combine_fqdn_annotation: true,
                ignore_hostname_annotation: true,
                ..template(two)
            },
            Endpoints(vec![
                a("foo.fqdn.org", &["1.2.3.4"]),
                a("foo.fqdn.com", &["1.2.3.4"]),
            ]),
        ),
        (
            // TestServiceSource/Endpoints/"annotated services with multiple hostnames return an endpoint with target IP"
            "annotated services with multiple hostnames",
            lb().ann(HOSTNAME, "foo.example.org., bar.example.org.")
                .lbs(&["1.2.3.4"]),
            opts(),
            Endpoints(vec![
                a("foo.example.org", &["1.2.3.4"]),
                a("bar.example.org", &["1.2.3.4"]),
            ]),
        ),
        (
            // TestServiceSource/Endpoints/"annotated services with multiple hostnames and without trailing period return an endpoint with target IP"
            "annotated services with multiple hostnames and without trailing period",
            lb().ann(HOSTNAME, "foo.example.org, bar.example.org")
                .lbs(&["1.2.3.4"]),
            opts(),
            Endpoints(vec![
                a("foo.example.org", &["1.2.3.4"]),
                a("bar.example.org", &["1.2.3.4"]),
            ]),
        ),
        (
            // TestServiceSource/Endpoints/"annotated services return an endpoint with target hostname"
            "annotated services return an endpoint with target hostname",
            lb().ann(HOSTNAME, "foo.example.org.")
                .lbs(&["lb.example.com"]),
            opts(),
            Endpoints(vec![ep("foo.example.org", "CNAME", &["lb.example.com"])]),
        ),
        (
            // TestServiceSource/Endpoints/"annotated services can omit trailing dot"
            "annotated services can omit trailing dot",
            lb().ann(HOSTNAME, "foo.example.org")
                .lbs(&["1.2.3.4", "lb.example.com"]),
            opts(),
            Endpoints(vec![
                a("foo.example.org", &["1.2.3.4"]),
                ep("foo.example.org", "CNAME", &["lb.example.com"]),
            ]),
        ),
        (
            // TestServiceSource/Endpoints/"our controller type is kops dns controller"
            "our controller type is kops dns controller",
            lb().ann(CONTROLLER, "dns-controller")
                .ann(HOSTNAME, "foo.example.org.")
                .lbs(&["1.2.3.4"]),
            types(&["LoadBalancer", "NodePort"]),
            Endpoints(vec![a("foo.example.org", &["1.2.3.4"])]),
        ),
        (
            // TestServiceSource/Endpoints/"different controller types are ignored even (with template specified)"
            "different controller types are ignored even (with template specified)",
            lb().ann(CONTROLLER, "some-other-tool")
                .ann(HOSTNAME, "foo.example.org.")
                .lbs(&["1.2.3.4"]),
            template("{{.Name}}.ext-dns.test.com"),
            Skipped,
        ),
        (
            // TestServiceSource/Endpoints/"services are found in all namespaces"
            "services are found in all namespaces",
            Svc::new("other-testing", "foo", "LoadBalancer")
                .ann(HOSTNAME, "foo.example.org.")
                .lbs(&["1.2.3.4"]),
            opts(),
            Endpoints(vec![a("foo.example.org", &["1.2.3.4"])]),
        ),
        (
            // TestServiceSource/Endpoints/"valid matching annotation filter expression"
            "valid matching annotation filter expression",
            lb().ann(HOSTNAME, "foo.example.org.")
                .ann("service.beta.kubernetes.io/external-traffic", "OnlyLocal")
                .lbs(&["1.2.3.4"]),
            filter("service.beta.kubernetes.io/external-traffic in (Global, OnlyLocal)"),
            Endpoints(vec![a("foo.example.org", &["1.2.3.4"])]),
        ),
        (
            // TestServiceSource/Endpoints/"valid non-matching annotation filter expression"
            "valid non-matching annotation filter expression",
            lb().ann(HOSTNAME, "foo.example.org.")
                .ann(
                    "service.beta.kubernetes.io/external-traffic",
                    "SomethingElse",
                )
                .lbs(&["1.2.3.4"]),
            filter("service.beta.kubernetes.io/external-traffic in (Global, OnlyLocal)"),
            Skipped,
        ),
        (
            // TestServiceSource/Endpoints/"valid matching annotation filter label"
            "valid matching annotation filter label",
            lb().ann(HOSTNAME, "foo.example.org.")
                .ann("service.beta.kubernetes.io/external-traffic", "Global")
                .lbs(&["1.2.3.4"]),
            filter("service.beta.kubernetes.io/external-traffic=Global"),
            Endpoints(vec![a("foo.example.org", &["1.2.3.4"])]),
        ),
        (
            // TestServiceSource/Endpoints/"valid non-matching annotation filter label"
            "valid non-matching annotation filter label",
            lb().ann(HOSTNAME, "foo.example.org.")
                .ann("service.beta.kubernetes.io/external-traffic", "OnlyLocal")
                .lbs(&["1.2.3.4"]),
            filter("service.beta.kubernetes.io/external-traffic=Global"),
            Skipped,
        ),
        (
            // TestServiceSource/Endpoints/"no external entrypoints return no endpoints"
            // dnsplane: no endpoints either, and the Service is marked as waiting for its
            // load balancer, so that a flap keeps the last targets for the grace period.
            "no external entrypoints return no endpoints",
            lb().ann(HOSTNAME, "foo.example.org."),
            opts(),
            Waiting,
        ),
        (
            // TestServiceSource/Endpoints/"annotated service with externalIPs returns a single endpoint with multiple targets"
            "annotated service with externalIPs returns a single endpoint with multiple targets",
            lb().ann(HOSTNAME, "foo.example.org.")
                .external_ips(&["10.2.3.4", "11.2.3.4"])
                .lbs(&["1.2.3.4"]),
            opts(),
            Endpoints(vec![a("foo.example.org", &["10.2.3.4", "11.2.3.4"])]),
        ),
        (
            // TestServiceSource/Endpoints/"multiple external entrypoints return a single endpoint with multiple targets"
            "multiple external entrypoints return a single endpoint with multiple targets",
            lb().ann(HOSTNAME, "foo.example.org.")
                .lbs(&["1.2.3.4", "8.8.8.8"]),
            opts(),
            Endpoints(vec![a("foo.example.org", &["1.2.3.4", "8.8.8.8"])]),
        ),
        (
            // TestServiceSource/Endpoints/"services annotated with legacy mate annotations are ignored in default mode"
            "services annotated with legacy mate annotations are ignored in default mode",
            lb().ann("zalando.org/dnsname", "foo.example.org.")
                .lbs(&["1.2.3.4"]),
            opts(),
            Endpoints(vec![]),
        ),
        (
            // TestServiceSource/Endpoints/"not annotated services with set fqdnTemplate return an endpoint with target IP"
            "not annotated services with set fqdnTemplate return an endpoint with target IP",
            lb().lbs(&["1.2.3.4", "elb.com"]),
            template("{{.Name}}.bar.example.com"),
            Endpoints(vec![
                a("foo.bar.example.com", &["1.2.3.4"]),
                ep("foo.bar.example.com", "CNAME", &["elb.com"]),
            ]),
        ),
        (
            // TestServiceSource/Endpoints/"annotated services with set fqdnTemplate annotation takes precedence"
            "annotated services with set fqdnTemplate annotation takes precedence",
            lb().ann(HOSTNAME, "foo.example.org.")
                .lbs(&["1.2.3.4", "elb.com"]),
            template("{{.Name}}.bar.example.com"),
            Endpoints(vec![
                a("foo.example.org", &["1.2.3.4"]),
                ep("foo.example.org", "CNAME", &["elb.com"]),
            ]),
        ),
        (
            // TestServiceSource/Endpoints/"not annotated services with unknown tmpl field should not return anything"
            // Upstream: an error from Endpoints. dnsplane refuses such a template when
            // the configuration is read (check_template); should one reach a Service,
            // the Service is refused with the template named.
            "not annotated services with unknown tmpl field should not return anything",
            lb().lbs(&["1.2.3.4"]),
            template("{{.Calibre}}.bar.example.com"),
            Problem("fqdn_template"),
        ),
        (
            // TestServiceSource/Endpoints/"ttl not annotated should have RecordTTL.IsConfigured set to false"
            "ttl not annotated",
            lb().ann(HOSTNAME, "foo.example.org.").lbs(&["1.2.3.4"]),
            opts(),
            Endpoints(vec![a("foo.example.org", &["1.2.3.4"])]),
        ),
        (
            // TestServiceSource/Endpoints/"ttl annotated but invalid should have RecordTTL.IsConfigured set to false"
            // dnsplane differs on purpose: a TTL of "foo" is refused (the Service keeps
            // its last accepted records and is told why) instead of published without it.
            "ttl annotated but invalid",
            lb().ann(HOSTNAME, "foo.example.org.")
                .ann(TTL, "foo")
                .lbs(&["1.2.3.4"]),
            opts(),
            Problem("external-dns.kubernetes.io/ttl"),
        ),
        (
            // TestServiceSource/Endpoints/"ttl annotated and is valid should set Record.TTL"
            "ttl annotated and is valid",
            lb().ann(HOSTNAME, "foo.example.org.")
                .ann(TTL, "10")
                .lbs(&["1.2.3.4"]),
            opts(),
            Endpoints(vec![with_ttl(a("foo.example.org", &["1.2.3.4"]), 10)]),
        ),
        (
            // TestServiceSource/Endpoints/"ttl annotated (in duration format) and is valid should set Record.TTL"
            "ttl annotated in duration format",
            lb().ann(HOSTNAME, "foo.example.org.")
                .ann(TTL, "1m")
                .lbs(&["1.2.3.4"]),
            opts(),
            Endpoints(vec![with_ttl(a("foo.example.org", &["1.2.3.4"]), 60)]),
        ),
        (
            // TestServiceSource/Endpoints/"Negative ttl is not valid"
            // dnsplane differs on purpose: refused, as a TTL that cannot be read.
            "Negative ttl is not valid",
            lb().ann(HOSTNAME, "foo.example.org.")
                .ann(TTL, "-10")
                .lbs(&["1.2.3.4"]),
            opts(),
            Problem("external-dns.kubernetes.io/ttl"),
        ),
        (
            // TestServiceSource/Endpoints/"filter on service types should include matching services"
            "filter on service types should include matching services",
            lb().ann(HOSTNAME, "foo.example.org.").lbs(&["1.2.3.4"]),
            types(&["LoadBalancer"]),
            Endpoints(vec![a("foo.example.org", &["1.2.3.4"])]),
        ),
        (
            // TestServiceSource/Endpoints/"filter on service types should exclude non-matching services"
            "filter on service types should exclude non-matching services",
            Svc::foo("NodePort")
                .ann(HOSTNAME, "foo.example.org.")
                .lbs(&["1.2.3.4"]),
            types(&["LoadBalancer"]),
            Skipped,
        ),
        (
            // TestServiceSource/Endpoints/"internal-host annotated and host annotated clusterip services return an endpoint with Cluster IP"
            "internal-host annotated and host annotated clusterip services",
            Svc::foo("ClusterIP")
                .ann(HOSTNAME, "foo.example.org.")
                .ann(INTERNAL_HOSTNAME, "foo.internal.example.org.")
                .cluster_ip("1.1.1.1")
                .lbs(&["1.2.3.4"]),
            opts(),
            Endpoints(vec![a("foo.internal.example.org", &["1.1.1.1"])]),
        ),
        (
            // TestServiceSource/Endpoints/"internal-host annotated loadbalancer services return an endpoint with Cluster IP"
            "internal-host annotated loadbalancer services",
            lb().ann(INTERNAL_HOSTNAME, "foo.internal.example.org.")
                .cluster_ip("1.1.1.1")
                .lbs(&["1.2.3.4"]),
            opts(),
            Endpoints(vec![a("foo.internal.example.org", &["1.1.1.1"])]),
        ),
        (
            // TestServiceSource/Endpoints/"internal-host annotated and host annotated loadbalancer services return an endpoint with Cluster IP and an endpoint with lb IP"
            "internal-host annotated and host annotated loadbalancer services",
            lb().ann(HOSTNAME, "foo.example.org.")
                .ann(INTERNAL_HOSTNAME, "foo.internal.example.org.")
                .cluster_ip("1.1.1.1")
                .lbs(&["1.2.3.4"]),
            opts(),
            Endpoints(vec![
                a("foo.internal.example.org", &["1.1.1.1"]),
                a("foo.example.org", &["1.2.3.4"]),
            ]),
        ),
        (
            // TestServiceSource/Endpoints/"dual-stack load-balancer service gets both addresses"
            "dual-stack load-balancer service gets both addresses",
            Svc::new("testing", "foobar", "LoadBalancer")
                .ann(HOSTNAME, "foobar.example.org")
                .cluster_ip("1.1.1.2,2001:db8::2")
                .lbs(&["1.1.1.1", "2001:db8::1"]),
            opts(),
            Endpoints(vec![
                a("foobar.example.org", &["1.1.1.1"]),
                ep("foobar.example.org", "AAAA", &["2001:db8::1"]),
            ]),
        ),
        (
            // TestServiceSource/Endpoints/"IPv6-only load-balancer service gets IPv6 endpoint"
            "IPv6-only load-balancer service gets IPv6 endpoint",
            Svc::new("testing", "foobar-v6", "LoadBalancer")
                .ann(HOSTNAME, "foobar-v6.example.org")
                .cluster_ip("2001:db8::1")
                .lbs(&["2001:db8::2"]),
            opts(),
            Endpoints(vec![ep("foobar-v6.example.org", "AAAA", &["2001:db8::2"])]),
        ),
        (
            // TestServiceSource/Endpoints/"provider-specific annotation is converted to endpoint property"
            "provider-specific annotation is converted to endpoint property",
            lb().ann(HOSTNAME, "foo.example.org")
                .ann("external-dns.kubernetes.io/aws-weight", "10")
                .lbs(&["1.2.3.4"]),
            types(&["LoadBalancer"]),
            Endpoints(vec![Endpoint {
                provider_specific: vec![("aws/weight".into(), "10".into())],
                ..a("foo.example.org", &["1.2.3.4"])
            }]),
        ),
    ];
    for (title, svc, options, want) in cases {
        check(title, &run(svc, options), want);
    }
}

/// TestServiceSource/MultipleServices: Services named `foo<lb>`, one LB address each.
#[test]
fn multiple_services() {
    let services = |list: &[(&str, &[(&str, &str)])]| -> Vec<Value> {
        list.iter()
            .map(|(lb, anns)| {
                let mut s = Svc::new("testing", &format!("foo{lb}"), "LoadBalancer").lbs(&[lb]);
                for (k, v) in anns.iter() {
                    s = s.ann(k, v);
                }
                s.build()
            })
            .collect()
    };
    let foo: &[(&str, &str)] = &[(HOSTNAME, "foo.example.org")];
    let bar: &[(&str, &str)] = &[(HOSTNAME, "bar.example.org")];
    let cases: Vec<(&str, Vec<Value>, Vec<Endpoint>)> = vec![
        (
            // TestServiceSource/MultipleServices/"test service returns a correct end point"
            "test service returns a correct end point",
            services(&[("1.2.3.4", foo)]),
            vec![a("foo.example.org", &["1.2.3.4"])],
        ),
        (
            // TestServiceSource/MultipleServices/"multiple services that share same DNS should be merged into one endpoint"
            "multiple services that share same DNS should be merged into one endpoint",
            services(&[("1.2.3.4", foo), ("1.2.3.5", foo), ("1.2.3.6", foo)]),
            vec![a("foo.example.org", &["1.2.3.4", "1.2.3.5", "1.2.3.6"])],
        ),
        (
            // TestServiceSource/MultipleServices/"test that services with different hostnames do not get merged together"
            "test that services with different hostnames do not get merged together",
            services(&[
                ("1.2.3.5", foo),
                ("10.1.1.3", bar),
                ("10.1.1.1", bar),
                ("1.2.3.4", foo),
                ("10.1.1.2", bar),
                ("20.1.1.1", &[(HOSTNAME, "foobar.example.org")]),
                ("1.2.3.6", foo),
            ]),
            vec![
                a("foo.example.org", &["1.2.3.4", "1.2.3.5", "1.2.3.6"]),
                a("bar.example.org", &["10.1.1.1", "10.1.1.2", "10.1.1.3"]),
                a("foobar.example.org", &["20.1.1.1"]),
            ],
        ),
        (
            // TestServiceSource/MultipleServices/"test that services with different set-identifier do not get merged together"
            "test that services with different set-identifier do not get merged together",
            services(&[
                (
                    "1.2.3.5",
                    &[(HOSTNAME, "foo.example.org"), (SET_IDENTIFIER, "a")],
                ),
                (
                    "10.1.1.3",
                    &[(HOSTNAME, "foo.example.org"), (SET_IDENTIFIER, "b")],
                ),
            ]),
            vec![
                Endpoint {
                    set_identifier: "a".into(),
                    ..a("foo.example.org", &["1.2.3.5"])
                },
                Endpoint {
                    set_identifier: "b".into(),
                    ..a("foo.example.org", &["10.1.1.3"])
                },
            ],
        ),
    ];
    for (title, svcs, want) in cases {
        check(
            title,
            &translate_all(&svcs, &Cluster::default(), &opts()),
            Want::Endpoints(want),
        );
    }
    // TestServiceSource/MultipleServices/"test that services with CNAME types do not get merged together"
    let svcs: Vec<Value> = ["a.elb.com", "b.elb.com"]
        .iter()
        .map(|lb| {
            Svc::new("testing", &format!("foo{lb}"), "LoadBalancer")
                .ann(HOSTNAME, "foo.example.org")
                .lbs(&[lb])
                .build()
        })
        .collect();
    check(
        "test that services with CNAME types do not get merged together",
        &translate_all(&svcs, &Cluster::default(), &opts()),
        Want::Endpoints(vec![
            ep("foo.example.org", "CNAME", &["a.elb.com"]),
            ep("foo.example.org", "CNAME", &["b.elb.com"]),
        ]),
    );
}

/// TestMultipleServicesPointingToSameLoadBalancer: two LoadBalancer Services (with node
/// ports, TCP and UDP) of one name and one address give one A record, no SRV.
#[test]
fn multiple_services_pointing_to_same_load_balancer() {
    let svc = |name: &str, port: Value| {
        Svc::new("default", name, "LoadBalancer")
            .label("app", name)
            .label("istio", "ingressgateway")
            .ann(HOSTNAME, "example.org")
            .cluster_ip("10.118.223.3")
            .spec("externalTrafficPolicy", json!("Cluster"))
            .spec("ports", json!([port]))
            .spec("selector", json!({"app": name, "istio": "ingressgateway"}))
            .lbs(&["34.66.66.77"])
            .build()
    };
    let services = [
        svc(
            "istio-ingressgateway",
            json!({"name": "http2", "port": 80, "protocol": "TCP", "targetPort": 8080, "nodePort": 30127}),
        ),
        svc(
            "istio-ingressgatewayudp",
            json!({"name": "upd-dns", "port": 53, "protocol": "UDP", "targetPort": 5353, "nodePort": 30873}),
        ),
    ];
    let options = Options {
        exclude_unschedulable: true,
        ..opts()
    };
    check(
        "TestMultipleServicesPointingToSameLoadBalancer",
        &translate_all(&services, &Cluster::default(), &options),
        Want::Endpoints(vec![a("example.org", &["34.66.66.77"])]),
    );
}

/// TestClusterIpServices (with `PublishInternal: true`).
#[test]
fn cluster_ip_services() {
    use Want::*;
    let internal = Options {
        publish_internal_services: true,
        ..opts()
    };
    let ignore = Options {
        ignore_hostname_annotation: true,
        ..internal.clone()
    };
    let tmpl = Options {
        fqdn_template: Some("{{.Name}}.bar.example.com".into()),
        ..internal.clone()
    };
    let cip = || Svc::foo("ClusterIP").cluster_ip("1.2.3.4");
    let cases: Vec<(&str, Svc, Options, Want)> = vec![
        (
            // TestClusterIpServices/"hostname annotated ClusterIp services return an endpoint with Cluster IP"
            "hostname annotated ClusterIp services return an endpoint with Cluster IP",
            cip().ann(HOSTNAME, "foo.example.org."),
            internal.clone(),
            Endpoints(vec![a("foo.example.org", &["1.2.3.4"])]),
        ),
        (
            // TestClusterIpServices/"target annotated ClusterIp services return an endpoint with the specified A"
            "target annotated ClusterIp services return an endpoint with the specified A",
            cip()
                .ann(HOSTNAME, "foo.example.org.")
                .ann(TARGET, "4.3.2.1"),
            internal.clone(),
            Endpoints(vec![a("foo.example.org", &["4.3.2.1"])]),
        ),
        (
            // TestClusterIpServices/"target annotated ClusterIp services return an endpoint with the specified CNAME"
            "target annotated ClusterIp services return an endpoint with the specified CNAME",
            cip()
                .ann(HOSTNAME, "foo.example.org.")
                .ann(TARGET, "bar.example.org."),
            internal.clone(),
            Endpoints(vec![ep("foo.example.org", "CNAME", &["bar.example.org"])]),
        ),
        (
            // TestClusterIpServices/"target annotated ClusterIp services return an endpoint with the specified AAAA"
            "target annotated ClusterIp services return an endpoint with the specified AAAA",
            cip()
                .ann(HOSTNAME, "foo.example.org.")
                .ann(TARGET, "2001:DB8::1"),
            internal.clone(),
            Endpoints(vec![ep("foo.example.org", "AAAA", &["2001:DB8::1"])]),
        ),
        (
            // TestClusterIpServices/"multiple target annotated ClusterIp services return an endpoint with the specified CNAMES"
            "multiple target annotated ClusterIp services return an endpoint with the specified CNAMES",
            cip()
                .ann(HOSTNAME, "foo.example.org.")
                .ann(TARGET, "bar.example.org.,baz.example.org."),
            internal.clone(),
            Endpoints(vec![ep(
                "foo.example.org",
                "CNAME",
                &["bar.example.org", "baz.example.org"],
            )]),
        ),
        (
            // TestClusterIpServices/"multiple target annotated ClusterIp services return two endpoints with the specified CNAMES and AAAA"
            "multiple target annotated ClusterIp services return two endpoints with the specified CNAMES and AAAA",
            cip()
                .ann(HOSTNAME, "foo.example.org.")
                .ann(TARGET, "bar.example.org.,baz.example.org.,2001:DB8::1"),
            internal.clone(),
            Endpoints(vec![
                ep(
                    "foo.example.org",
                    "CNAME",
                    &["bar.example.org", "baz.example.org"],
                ),
                ep("foo.example.org", "AAAA", &["2001:DB8::1"]),
            ]),
        ),
        (
            // TestClusterIpServices/"hostname annotated ClusterIp services are ignored"
            "hostname annotated ClusterIp services are ignored",
            cip().ann(HOSTNAME, "foo.example.org."),
            ignore.clone(),
            Endpoints(vec![]),
        ),
        (
            // TestClusterIpServices/"hostname and target annotated ClusterIp services are ignored"
            "hostname and target annotated ClusterIp services are ignored",
            cip()
                .ann(HOSTNAME, "foo.example.org.")
                .ann(TARGET, "bar.example.org."),
            ignore,
            Endpoints(vec![]),
        ),
        (
            // TestClusterIpServices/"hostname and target annotated ClusterIp services return an endpoint with the specified CNAME"
            "hostname and target annotated ClusterIp services return an endpoint with the specified CNAME",
            cip()
                .ann(HOSTNAME, "foo.example.org.")
                .ann(TARGET, "bar.example.org."),
            internal.clone(),
            Endpoints(vec![ep("foo.example.org", "CNAME", &["bar.example.org"])]),
        ),
        (
            // TestClusterIpServices/"non-annotated ClusterIp services with set fqdnTemplate return an endpoint with target IP"
            "non-annotated ClusterIp services with set fqdnTemplate return an endpoint with target IP",
            Svc::foo("ClusterIP").cluster_ip("4.5.6.7"),
            tmpl,
            Endpoints(vec![a("foo.bar.example.com", &["4.5.6.7"])]),
        ),
        (
            // TestClusterIpServices/"Headless services do not generate endpoints"
            "Headless services do not generate endpoints",
            Svc::foo("ClusterIP").cluster_ip("None"),
            internal.clone(),
            Endpoints(vec![]),
        ),
        (
            // TestClusterIpServices/"Headless services generate endpoints when target is specified"
            "Headless services generate endpoints when target is specified",
            Svc::foo("ClusterIP")
                .cluster_ip("None")
                .ann(HOSTNAME, "foo.example.org.")
                .ann(TARGET, "bar.example.org."),
            internal.clone(),
            Endpoints(vec![ep("foo.example.org", "CNAME", &["bar.example.org"])]),
        ),
        (
            // TestClusterIpServices/"invalid hostname does not generate endpoints"
            // Upstream drops the name silently (a label over 63 octets); dnsplane refuses
            // the Service with the annotation named.
            "invalid hostname does not generate endpoints",
            cip().ann(
                HOSTNAME,
                "this-is-an-exceedingly-long-label-that-external-dns-should-reject.example.org.",
            ),
            internal,
            Problem("external-dns.kubernetes.io/hostname"),
        ),
    ];
    for (title, svc, options, want) in cases {
        check(title, &run(svc, options), want);
    }
}

/// TestExternalServices.
#[test]
fn external_services() {
    let ext = |name: &str, ips: &[&str]| {
        Svc::foo("ExternalName")
            .label("component", "foo")
            .ann(HOSTNAME, "service.example.org")
            .spec("externalName", json!(name))
            .external_ips(ips)
    };
    let cases: Vec<(&str, Svc, Options, Want)> = vec![
        (
            // TestExternalServices/"external services return an A endpoint for the external name that is an IPv4 address"
            "external services return an A endpoint for the external name that is an IPv4 address",
            ext("111.111.111.111", &[]),
            types(&["NodePort", "ExternalName"]),
            Want::Endpoints(vec![a("service.example.org", &["111.111.111.111"])]),
        ),
        (
            // TestExternalServices/"external services return an AAAA endpoint for the external name that is an IPv6 address"
            "external services return an AAAA endpoint for the external name that is an IPv6 address",
            ext("2001:db8::111", &[]),
            opts(),
            Want::Endpoints(vec![ep("service.example.org", "AAAA", &["2001:db8::111"])]),
        ),
        (
            // TestExternalServices/"external services return a CNAME endpoint for the external name that is a domain"
            "external services return a CNAME endpoint for the external name that is a domain",
            ext("remote.example.com", &[]),
            types(&["ExternalName"]),
            Want::Endpoints(vec![ep(
                "service.example.org",
                "CNAME",
                &["remote.example.com"],
            )]),
        ),
        (
            // TestExternalServices/"annotated ExternalName service with externalIPs returns a single endpoint with multiple targets"
            "annotated ExternalName service with externalIPs returns a single endpoint with multiple targets",
            ext("service.example.org", &["10.2.3.4", "11.2.3.4"]),
            opts(),
            Want::Endpoints(vec![a("service.example.org", &["10.2.3.4", "11.2.3.4"])]),
        ),
        (
            // TestExternalServices/"annotated ExternalName service with externalIPs of dualstack addresses returns 2 endpoints with multiple targets"
            "annotated ExternalName service with externalIPs of dualstack addresses",
            ext(
                "service.example.org",
                &["10.2.3.4", "11.2.3.4", "2001:db8::1", "2001:db8::2"],
            ),
            types(&["NodePort", "ExternalName"]),
            Want::Endpoints(vec![
                a("service.example.org", &["10.2.3.4", "11.2.3.4"]),
                ep(
                    "service.example.org",
                    "AAAA",
                    &["2001:db8::1", "2001:db8::2"],
                ),
            ]),
        ),
        (
            // TestExternalServices/"annotated ExternalName service with externalIPs of dualstack and excluded in serviceTypeFilter"
            "annotated ExternalName service with externalIPs of dualstack and excluded in serviceTypeFilter",
            ext(
                "service.example.org",
                &["10.2.3.4", "11.2.3.4", "2001:db8::1", "2001:db8::2"],
            ),
            types(&["NodePort", "ClusterIP"]),
            Want::Skipped,
        ),
    ];
    for (title, svc, options, want) in cases {
        check(title, &run(svc, options), want);
    }
}

/// TestNewServiceTypes and TestNewServiceSourceWithServiceTypeFilters_Unsupported:
/// the filter is checked when the configuration is read.
#[test]
fn service_type_filter_is_checked() {
    // TestNewServiceTypes/"empty filter disables serviceTypes", "filter with empty
    // string disables serviceTypes", "valid filter enables serviceTypes"
    for ok in [
        vec![],
        vec!["".to_string()],
        vec!["LoadBalancer".to_string()],
    ] {
        assert_eq!(super::super::check_service_types(&ok), Ok(()), "{ok:?}");
    }
    // TestNewServiceTypes/"filter with unknown type returns error",
    // TestNewServiceSourceWithServiceTypeFilters_Unsupported
    let e = super::super::check_service_types(&["UnknownType".to_string()]).unwrap_err();
    assert!(
        e.contains("UnknownType") && e.contains("LoadBalancer"),
        "{e}"
    );
}
