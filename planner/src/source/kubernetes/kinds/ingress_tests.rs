//! external-dns v0.22.0's `source/ingress_test.go`, ported case by case: each case
//! names the upstream test function and case title. Fixtures are the upstream ones as
//! JSON objects (`Fake` builds what upstream's `fakeIngress` builds); endpoints are
//! compared as upstream's `ValidateEndpoints` does (order of endpoints and of targets
//! ignored), after external-dns's `MergeEndpoints` over every ingress of the case.
//! Where dnsplane deliberately differs, the case says so and why.
use super::annotations::{ALPHA_PREFIX, PREFIX};
use super::ingress::check_options;
use super::upstream_tests::{ALIAS, CONTROLLER, HOSTNAME, TARGET, TTL, Want, check, translate};
use super::{Cluster, Endpoint, Kind, Options};
use serde_json::{Map, Value, json};

const SOURCE: &str = "external-dns.kubernetes.io/ingress-hostname-source";
const CLASS: &str = "kubernetes.io/ingress.class";

/// Upstream's `fakeIngress`.
#[derive(Default, Clone)]
struct Fake {
    name: &'static str,
    namespace: &'static str,
    dnsnames: Vec<&'static str>,
    tls: Vec<Vec<&'static str>>,
    ips: Vec<&'static str>,
    hostnames: Vec<&'static str>,
    annotations: Vec<(&'static str, &'static str)>,
    class: &'static str,
}

fn fake(name: &'static str, namespace: &'static str) -> Fake {
    Fake {
        name,
        namespace,
        ..Fake::default()
    }
}

impl Fake {
    fn hosts(mut self, h: &[&'static str]) -> Self {
        self.dnsnames = h.to_vec();
        self
    }
    fn tls(mut self, t: &[&[&'static str]]) -> Self {
        self.tls = t.iter().map(|h| h.to_vec()).collect();
        self
    }
    fn ips(mut self, i: &[&'static str]) -> Self {
        self.ips = i.to_vec();
        self
    }
    fn lb(mut self, h: &[&'static str]) -> Self {
        self.hostnames = h.to_vec();
        self
    }
    fn ann(mut self, a: &[(&'static str, &'static str)]) -> Self {
        self.annotations = a.to_vec();
        self
    }
    fn class(mut self, c: &'static str) -> Self {
        self.class = c;
        self
    }
    /// The Ingress object, as `fakeIngress.Ingress()` builds it.
    fn build(&self) -> Value {
        let annotations: Map<String, Value> = self
            .annotations
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        let mut lbs: Vec<Value> = self.ips.iter().map(|ip| json!({"ip": ip})).collect();
        lbs.extend(self.hostnames.iter().map(|h| json!({"hostname": h})));
        json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": self.name, "namespace": self.namespace, "annotations": annotations},
            "spec": {
                "ingressClassName": self.class,
                "rules": self.dnsnames.iter().map(|h| json!({"host": h})).collect::<Vec<_>>(),
                "tls": self.tls.iter().map(|h| json!({"hosts": h})).collect::<Vec<_>>(),
            },
            "status": {"loadBalancer": {"ingress": lbs}},
        })
    }
}

fn ep(name: &str, record_type: &str, targets: &[&str]) -> Endpoint {
    Endpoint {
        dns_name: name.to_string(),
        record_type: record_type.to_string(),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        ..Endpoint::default()
    }
}

fn with_ttl(mut e: Endpoint, ttl: i64) -> Endpoint {
    e.ttl = Some(ttl);
    e
}

struct Case {
    upstream: &'static str,
    items: Vec<Value>,
    options: Options,
    want: Want,
}

fn case(upstream: &'static str, items: &[Fake], options: Options, want: Vec<Endpoint>) -> Case {
    Case {
        upstream,
        items: items.iter().map(Fake::build).collect(),
        options,
        want: Want::Endpoints(want),
    }
}

fn run(cases: Vec<Case>) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            let (cluster, kind) = (Cluster::default(), Kind::Ingress);
            check(
                c.upstream, kind, &c.items, &cluster, &c.options, &c.want, true,
            )
            .err()
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn opts() -> Options {
    Options::default()
}

fn template(t: &str, combine: bool) -> Options {
    Options {
        fqdn_template: Some(t.to_string()),
        combine_fqdn_annotation: combine,
        ..Options::default()
    }
}

#[test]
fn endpoints_from_ingress() {
    let i = |f: Fake| f;
    let base = fake("", "");
    run(vec![
        // TestIngress/endpointsFromIngress/"one rule.host one lb.hostname"
        case(
            "one rule.host one lb.hostname",
            &[i(base.clone().hosts(&["foo.bar"]).lb(&["lb.com"]))],
            opts(),
            vec![ep("foo.bar", "CNAME", &["lb.com"])],
        ),
        // TestIngress/endpointsFromIngress/"one rule.host one lb.IP"
        case(
            "one rule.host one lb.IP",
            &[base.clone().hosts(&["foo.bar"]).ips(&["8.8.8.8"])],
            opts(),
            vec![ep("foo.bar", "A", &["8.8.8.8"])],
        ),
        // TestIngress/endpointsFromIngress/"one rule.host one lb.IPv6"
        case(
            "one rule.host one lb.IPv6",
            &[base.clone().hosts(&["foo.bar"]).ips(&["2606:4700:4700::1111"])],
            opts(),
            vec![ep("foo.bar", "AAAA", &["2606:4700:4700::1111"])],
        ),
        // TestIngress/endpointsFromIngress/"one rule.host two lb.IP, two lb.IPv6 and two lb.Hostname"
        case(
            "one rule.host two lb.IP, two lb.IPv6 and two lb.Hostname",
            &[base
                .clone()
                .hosts(&["foo.bar"])
                .ips(&["8.8.8.8", "127.0.0.1", "2606:4700:4700::1111", "2606:4700:4700::1001"])
                .lb(&["elb.com", "alb.com"])],
            opts(),
            vec![
                ep("foo.bar", "A", &["8.8.8.8", "127.0.0.1"]),
                ep("foo.bar", "AAAA", &["2606:4700:4700::1111", "2606:4700:4700::1001"]),
                ep("foo.bar", "CNAME", &["elb.com", "alb.com"]),
            ],
        ),
        // TestIngress/endpointsFromIngress/"no rule.host"
        case(
            "no rule.host",
            &[base.clone().ips(&["8.8.8.8", "127.0.0.1"]).lb(&["elb.com", "alb.com"])],
            opts(),
            vec![],
        ),
        // TestIngress/endpointsFromIngress/"one empty rule.host"
        case(
            "one empty rule.host",
            &[base
                .clone()
                .hosts(&[""])
                .ips(&["8.8.8.8", "127.0.0.1"])
                .lb(&["elb.com", "alb.com"])],
            opts(),
            vec![],
        ),
        // TestIngress/endpointsFromIngress/"no targets"
        case("no targets", &[base.clone().hosts(&[""])], opts(), vec![]),
        // TestIngress/endpointsFromIngress/"ignore rules with one rule.host one lb.hostname"
        case(
            "ignore rules with one rule.host one lb.hostname",
            &[base.clone().hosts(&["test"]).lb(&["lb.com"])],
            Options {
                ignore_ingress_rules_spec: true,
                ..opts()
            },
            vec![],
        ),
        // TestIngress/endpointsFromIngress/"invalid hostname does not generate endpoints"
        // dnsplane differs: upstream logs and drops the host (the ingress then publishes
        // nothing, silently); dnsplane reports the host's field so its owner sees why.
        Case {
            upstream: "invalid hostname does not generate endpoints",
            items: vec![base
                .clone()
                .hosts(&["this-is-an-exceedingly-long-label-that-external-dns-should-reject.example.org"])
                .build()],
            options: opts(),
            want: Want::Problem("spec.rules[0].host"),
        },
    ]);
}

#[test]
fn endpoints_from_ingress_hostname_source_annotation() {
    let base = fake("", "").hosts(&["foo.bar"]).lb(&["lb.com"]);
    let both = vec![
        ep("foo.bar", "CNAME", &["lb.com"]),
        ep("foo.baz", "CNAME", &["lb.com"]),
    ];
    run(vec![
        // TestIngress/endpointsFromIngressHostnameSourceAnnotation/"No ingress-hostname-source annotation, one rule.host, one annotation host"
        case(
            "No ingress-hostname-source annotation, one rule.host, one annotation host",
            &[base.clone().ann(&[(HOSTNAME, "foo.baz")])],
            opts(),
            both.clone(),
        ),
        // TestIngress/endpointsFromIngressHostnameSourceAnnotation/"No ingress-hostname-source annotation, one rule.host"
        case(
            "No ingress-hostname-source annotation, one rule.host",
            std::slice::from_ref(&base),
            opts(),
            vec![ep("foo.bar", "CNAME", &["lb.com"])],
        ),
        // TestIngress/endpointsFromIngressHostnameSourceAnnotation/"No ingress-hostname-source annotation, one rule.host, one annotation host" (the table's second copy)
        case(
            "No ingress-hostname-source annotation, one rule.host, one annotation host #2",
            &[base.clone().ann(&[(HOSTNAME, "foo.baz")])],
            opts(),
            both,
        ),
        // TestIngress/endpointsFromIngressHostnameSourceAnnotation/"Ingress-hostname-source=defined-hosts-only, one rule.host, one annotation host"
        case(
            "Ingress-hostname-source=defined-hosts-only, one rule.host, one annotation host",
            &[base
                .clone()
                .ann(&[(HOSTNAME, "foo.baz"), (SOURCE, "defined-hosts-only")])],
            opts(),
            vec![ep("foo.bar", "CNAME", &["lb.com"])],
        ),
        // TestIngress/endpointsFromIngressHostnameSourceAnnotation/"Ingress-hostname-source=annotation-only, one rule.host, one annotation host"
        case(
            "Ingress-hostname-source=annotation-only, one rule.host, one annotation host",
            &[base
                .clone()
                .ann(&[(HOSTNAME, "foo.baz"), (SOURCE, "annotation-only")])],
            opts(),
            vec![ep("foo.baz", "CNAME", &["lb.com"])],
        ),
        // Not upstream: a value that is neither. Upstream publishes nothing for the
        // ingress without saying why; dnsplane names the annotation.
        Case {
            upstream: "dnsplane: unknown ingress-hostname-source value",
            items: vec![base.clone().ann(&[(SOURCE, "both")]).build()],
            options: opts(),
            want: Want::Problem(
                "metadata.annotations[\"external-dns.kubernetes.io/ingress-hostname-source\"]",
            ),
        },
    ]);
}

#[test]
fn ingress_endpoints() {
    let ns = "testing";
    let fake1 = fake("fake1", ns);
    let fake2 = fake("fake2", ns);
    let fake3 = fake("fake3", ns);
    let two_simple = [
        fake1.clone().hosts(&["example.org"]).ips(&["8.8.8.8"]),
        fake2.clone().hosts(&["new.org"]).lb(&["lb.com"]),
    ];
    let two_simple_want = vec![
        ep("example.org", "A", &["8.8.8.8"]),
        ep("new.org", "CNAME", &["lb.com"]),
    ];
    let filter = |f: &str| Options {
        annotation_filter: Some(f.to_string()),
        ..opts()
    };
    let example_a = vec![ep("example.org", "A", &["8.8.8.8"])];
    let annotated = |class: &'static str| {
        fake1
            .clone()
            .ann(&[(CLASS, class)])
            .hosts(&["example.org"])
            .ips(&["8.8.8.8"])
    };
    let tls_1234 = |hosts: &[&[&'static str]]| fake1.clone().tls(hosts).ips(&["1.2.3.4"]);
    let a1234 = |names: &[&str]| {
        names
            .iter()
            .map(|n| ep(n, "A", &["1.2.3.4"]))
            .collect::<Vec<_>>()
    };
    run(vec![
        // TestIngress/Endpoints/"no ingress"
        case("no ingress", &[], opts(), vec![]),
        // TestIngress/Endpoints/"two simple ingresses"
        case(
            "two simple ingresses",
            &two_simple,
            opts(),
            two_simple_want.clone(),
        ),
        // TestIngress/Endpoints/"ipv6 ingress"
        case(
            "ipv6 ingress",
            &[fake1.clone().hosts(&["example.org"]).ips(&["2001:DB8::1"])],
            opts(),
            vec![ep("example.org", "AAAA", &["2001:DB8::1"])],
        ),
        // TestIngress/Endpoints/"dualstack ingress"
        case(
            "dualstack ingress",
            &[fake1
                .clone()
                .hosts(&["example.org"])
                .ips(&["8.8.8.8", "2001:DB8::1"])],
            opts(),
            vec![
                ep("example.org", "A", &["8.8.8.8"]),
                ep("example.org", "AAAA", &["2001:DB8::1"]),
            ],
        ),
        // TestIngress/Endpoints/"ignore rules"
        case(
            "ignore rules",
            &two_simple,
            Options {
                ignore_ingress_rules_spec: true,
                ..opts()
            },
            vec![],
        ),
        // TestIngress/Endpoints/"two simple ingresses on different namespaces"
        case(
            "two simple ingresses on different namespaces",
            &[
                fake("fake1", "testing1")
                    .hosts(&["example.org"])
                    .ips(&["8.8.8.8"]),
                fake("fake2", "testing2")
                    .hosts(&["new.org"])
                    .lb(&["lb.com"]),
            ],
            opts(),
            two_simple_want,
        ),
        // TestIngress/Endpoints/"valid matching annotation filter expression"
        case(
            "valid matching annotation filter expression",
            &[annotated("nginx")],
            filter("kubernetes.io/ingress.class in (alb, nginx)"),
            example_a.clone(),
        ),
        // TestIngress/Endpoints/"valid non-matching annotation filter expression"
        case(
            "valid non-matching annotation filter expression",
            &[annotated("tectonic")],
            filter("kubernetes.io/ingress.class in (alb, nginx)"),
            vec![],
        ),
        // TestIngress/Endpoints/"invalid annotation filter expression"
        // dnsplane differs: upstream drops a filter it cannot parse and publishes every
        // ingress; dnsplane refuses, so a typo in the filter never widens what is
        // published.
        Case {
            upstream: "invalid annotation filter expression",
            items: vec![annotated("alb").build()],
            options: filter("kubernetes.io/ingress.name in (a b)"),
            want: Want::Problem("annotation_filter"),
        },
        // TestIngress/Endpoints/"valid matching annotation filter label"
        case(
            "valid matching annotation filter label",
            &[annotated("nginx")],
            filter("kubernetes.io/ingress.class=nginx"),
            example_a.clone(),
        ),
        // TestIngress/Endpoints/"valid non-matching annotation filter label"
        case(
            "valid non-matching annotation filter label",
            &[annotated("alb")],
            filter("kubernetes.io/ingress.class=nginx"),
            vec![],
        ),
        // TestIngress/Endpoints/"our controller type is dns-controller"
        case(
            "our controller type is dns-controller",
            &[fake1
                .clone()
                .ann(&[(CONTROLLER, "dns-controller")])
                .hosts(&["example.org"])
                .ips(&["8.8.8.8"])],
            opts(),
            example_a.clone(),
        ),
        // TestIngress/Endpoints/"different controller types are ignored"
        case(
            "different controller types are ignored",
            &[fake1
                .clone()
                .ann(&[(CONTROLLER, "some-other-tool")])
                .hosts(&["example.org"])
                .ips(&["8.8.8.8"])],
            opts(),
            vec![],
        ),
        // TestIngress/Endpoints/"template for ingress if host is missing"
        case(
            "template for ingress if host is missing",
            &[fake1
                .clone()
                .ann(&[(CONTROLLER, "dns-controller")])
                .ips(&["8.8.8.8"])
                .lb(&["elb.com"])],
            template("{{.Name}}.ext-dns.test.com", false),
            vec![
                ep("fake1.ext-dns.test.com", "A", &["8.8.8.8"]),
                ep("fake1.ext-dns.test.com", "CNAME", &["elb.com"]),
            ],
        ),
        // TestIngress/Endpoints/"another controller annotation skipped even with template"
        case(
            "another controller annotation skipped even with template",
            &[fake1
                .clone()
                .ann(&[(CONTROLLER, "other-controller")])
                .ips(&["8.8.8.8"])],
            template("{{.Name}}.ext-dns.test.com", false),
            vec![],
        ),
        // TestIngress/Endpoints/"multiple FQDN template hostnames" (the first)
        case(
            "multiple FQDN template hostnames #1",
            &[fake1.clone().ips(&["8.8.8.8"])],
            template(
                "{{.Name}}.ext-dns.test.com, {{.Name}}.ext-dna.test.com",
                false,
            ),
            vec![
                ep("fake1.ext-dns.test.com", "A", &["8.8.8.8"]),
                ep("fake1.ext-dna.test.com", "A", &["8.8.8.8"]),
            ],
        ),
        // TestIngress/Endpoints/"multiple FQDN template hostnames" (the second, combined)
        case(
            "multiple FQDN template hostnames #2",
            &[
                fake1.clone().ips(&["8.8.8.8"]),
                fake2
                    .clone()
                    .ann(&[(TARGET, "ingress-target.com")])
                    .hosts(&["example.org"]),
            ],
            template(
                "{{.Name}}.ext-dns.test.com, {{.Name}}.ext-dna.test.com",
                true,
            ),
            vec![
                ep("fake1.ext-dns.test.com", "A", &["8.8.8.8"]),
                ep("fake1.ext-dna.test.com", "A", &["8.8.8.8"]),
                ep("example.org", "CNAME", &["ingress-target.com"]),
                ep("fake2.ext-dns.test.com", "CNAME", &["ingress-target.com"]),
                ep("fake2.ext-dna.test.com", "CNAME", &["ingress-target.com"]),
            ],
        ),
        // TestIngress/Endpoints/"ingress rules with annotation"
        case(
            "ingress rules with annotation",
            &[
                fake1
                    .clone()
                    .ann(&[(TARGET, "ingress-target.com")])
                    .hosts(&["example.org"]),
                fake2
                    .clone()
                    .ann(&[(TARGET, "ingress-target.com")])
                    .hosts(&["example2.org"])
                    .ips(&["8.8.8.8"]),
                fake3
                    .clone()
                    .ann(&[(TARGET, "1.2.3.4")])
                    .hosts(&["example3.org"]),
            ],
            opts(),
            vec![
                ep("example.org", "CNAME", &["ingress-target.com"]),
                ep("example2.org", "CNAME", &["ingress-target.com"]),
                ep("example3.org", "A", &["1.2.3.4"]),
            ],
        ),
        // TestIngress/Endpoints/"ingress rules with single tls having single hostname"
        case(
            "ingress rules with single tls having single hostname",
            &[tls_1234(&[&["example.org"]])],
            opts(),
            a1234(&["example.org"]),
        ),
        // TestIngress/Endpoints/"ingress rules with single tls having multiple hostnames"
        case(
            "ingress rules with single tls having multiple hostnames",
            &[tls_1234(&[&["example.org", "example2.org"]])],
            opts(),
            a1234(&["example.org", "example2.org"]),
        ),
        // TestIngress/Endpoints/"ingress rules with multiple tls having multiple hostnames"
        case(
            "ingress rules with multiple tls having multiple hostnames",
            &[tls_1234(&[
                &["example.org", "example2.org"],
                &["example3.org", "example4.org"],
            ])],
            opts(),
            a1234(&[
                "example.org",
                "example2.org",
                "example3.org",
                "example4.org",
            ]),
        ),
        // TestIngress/Endpoints/"ingress rules with hostname annotation"
        case(
            "ingress rules with hostname annotation",
            &[fake1
                .clone()
                .ann(&[(HOSTNAME, "dns-through-hostname.com")])
                .hosts(&["example.org"])
                .ips(&["1.2.3.4"])],
            opts(),
            a1234(&["example.org", "dns-through-hostname.com"]),
        ),
        // TestIngress/Endpoints/"ingress rules with hostname annotation having multiple hostnames"
        case(
            "ingress rules with hostname annotation having multiple hostnames",
            &[fake1
                .clone()
                .ann(&[(
                    HOSTNAME,
                    "dns-through-hostname.com, another-dns-through-hostname.com",
                )])
                .hosts(&["example.org"])
                .ips(&["1.2.3.4"])],
            opts(),
            a1234(&[
                "example.org",
                "dns-through-hostname.com",
                "another-dns-through-hostname.com",
            ]),
        ),
        // TestIngress/Endpoints/"ingress rules with hostname and target annotation"
        case(
            "ingress rules with hostname and target annotation",
            &[fake1
                .clone()
                .ann(&[
                    (HOSTNAME, "dns-through-hostname.com"),
                    (TARGET, "ingress-target.com"),
                ])
                .hosts(&["example.org"])],
            opts(),
            vec![
                ep("example.org", "CNAME", &["ingress-target.com"]),
                ep("dns-through-hostname.com", "CNAME", &["ingress-target.com"]),
            ],
        ),
        // TestIngress/Endpoints/"ingress rules with annotation and custom TTL"
        case(
            "ingress rules with annotation and custom TTL",
            &[
                fake1
                    .clone()
                    .ann(&[(TARGET, "ingress-target.com"), (TTL, "6")])
                    .hosts(&["example.org"]),
                fake2
                    .clone()
                    .ann(&[(TARGET, "ingress-target.com"), (TTL, "1")])
                    .hosts(&["example2.org"])
                    .ips(&["8.8.8.8"]),
                fake3
                    .clone()
                    .ann(&[(TARGET, "ingress-target.com"), (TTL, "10s")])
                    .hosts(&["example3.org"])
                    .ips(&["8.8.4.4"]),
            ],
            opts(),
            vec![
                with_ttl(ep("example.org", "CNAME", &["ingress-target.com"]), 6),
                with_ttl(ep("example2.org", "CNAME", &["ingress-target.com"]), 1),
                with_ttl(ep("example3.org", "CNAME", &["ingress-target.com"]), 10),
            ],
        ),
        // TestIngress/Endpoints/"ingress rules with alias and target annotation"
        case(
            "ingress rules with alias and target annotation",
            &[fake1
                .clone()
                .ann(&[(TARGET, "ingress-target.com"), (ALIAS, "true")])
                .hosts(&["example.org"])],
            opts(),
            vec![Endpoint {
                provider_specific: vec![("alias".into(), "true".into())],
                ..ep("example.org", "CNAME", &["ingress-target.com"])
            }],
        ),
        // TestIngress/Endpoints/"ingress rules with alias set false and target annotation"
        case(
            "ingress rules with alias set false and target annotation",
            &[fake1
                .clone()
                .ann(&[(TARGET, "ingress-target.com"), (ALIAS, "false")])
                .hosts(&["example.org"])],
            opts(),
            vec![ep("example.org", "CNAME", &["ingress-target.com"])],
        ),
        // TestIngress/Endpoints/"template for ingress with annotation"
        case(
            "template for ingress with annotation",
            &[
                fake1.clone().ann(&[(TARGET, "ingress-target.com")]),
                fake2
                    .clone()
                    .ann(&[(TARGET, "ingress-target.com")])
                    .ips(&["8.8.8.8"]),
                fake3.clone().ann(&[(TARGET, "1.2.3.4")]),
            ],
            template("{{.Name}}.ext-dns.test.com", false),
            vec![
                ep("fake1.ext-dns.test.com", "CNAME", &["ingress-target.com"]),
                ep("fake2.ext-dns.test.com", "CNAME", &["ingress-target.com"]),
                ep("fake3.ext-dns.test.com", "A", &["1.2.3.4"]),
            ],
        ),
        // TestIngress/Endpoints/"Ingress with empty annotation"
        case(
            "Ingress with empty annotation",
            &[fake1.clone().ann(&[(TARGET, "")])],
            template("{{.Name}}.ext-dns.test.com", false),
            vec![],
        ),
        // TestIngress/Endpoints/"ignore hostname annotation"
        case(
            "ignore hostname annotation",
            &[
                fake1.clone().hosts(&["example.org"]).ips(&["8.8.8.8"]),
                fake2
                    .clone()
                    .ann(&[(HOSTNAME, "dns-through-hostname.com")])
                    .hosts(&["new.org"])
                    .lb(&["lb.com"]),
            ],
            Options {
                ignore_hostname_annotation: true,
                ..opts()
            },
            vec![
                ep("example.org", "A", &["8.8.8.8"]),
                ep("new.org", "CNAME", &["lb.com"]),
            ],
        ),
        // TestIngress/Endpoints/"ignore tls section"
        case(
            "ignore tls section",
            &[tls_1234(&[&["example.org"]])],
            Options {
                ignore_ingress_tls_spec: true,
                ..opts()
            },
            vec![],
        ),
        // TestIngress/Endpoints/"reading tls section"
        case(
            "reading tls section",
            &[tls_1234(&[&["example.org"]])],
            opts(),
            a1234(&["example.org"]),
        ),
        // TestIngress/Endpoints/"ingressClassName filtering"
        case(
            "ingressClassName filtering",
            &[
                fake("none", ns)
                    .tls(&[&["none.example.org"]])
                    .ips(&["1.0.0.0"]),
                fake("fake-public", ns)
                    .tls(&[&["example.org"]])
                    .ips(&["1.2.3.4"])
                    .class("public"),
                fake("fake-internal", ns)
                    .tls(&[&["int.example.org"]])
                    .ips(&["2.3.4.5"])
                    .class("internal"),
                fake("fake-dmz", ns)
                    .tls(&[&["dmz.example.org"]])
                    .ips(&["3.4.5.6"])
                    .class("dmz"),
                fake("annotated-dmz", ns)
                    .tls(&[&["annodmz.example.org"]])
                    .ips(&["4.5.6.7"])
                    .ann(&[(CLASS, "dmz")]),
                fake("fake-internal-annotated-dmz", ns)
                    .tls(&[&["int-annodmz.example.org"]])
                    .ips(&["5.6.7.8"])
                    .ann(&[(CLASS, "dmz")])
                    .class("internal"),
                fake("fake-dmz-annotated-internal", ns)
                    .tls(&[&["dmz-annoint.example.org"]])
                    .ips(&["6.7.8.9"])
                    .ann(&[(CLASS, "internal")])
                    .class("dmz"),
                fake("empty-annotated-dmz", ns)
                    .tls(&[&["empty-annotdmz.example.org"]])
                    .ips(&["7.8.9.0"])
                    .ann(&[(CLASS, "dmz")]),
                fake("empty-annotated-internal", ns)
                    .tls(&[&["empty-annotint.example.org"]])
                    .ips(&["8.9.0.1"])
                    .ann(&[(CLASS, "internal")]),
            ],
            Options {
                ingress_classes: vec!["public".into(), "dmz".into()],
                ..opts()
            },
            vec![
                ep("example.org", "A", &["1.2.3.4"]),
                ep("dmz.example.org", "A", &["3.4.5.6"]),
                ep("annodmz.example.org", "A", &["4.5.6.7"]),
                ep("dmz-annoint.example.org", "A", &["6.7.8.9"]),
                ep("empty-annotdmz.example.org", "A", &["7.8.9.0"]),
            ],
        ),
    ]);
}

#[test]
fn new_ingress_source() {
    let o = |filter: &str, classes: &[&str]| Options {
        annotation_filter: (!filter.is_empty()).then(|| filter.to_string()),
        ingress_classes: classes.iter().map(|c| c.to_string()).collect(),
        ..opts()
    };
    // TestNewIngressSource/"non-empty annotation filter label"
    assert!(check_options(&o("kubernetes.io/ingress.class=nginx", &[])).is_ok());
    // TestNewIngressSource/"non-empty ingress class name list"
    assert!(check_options(&o("", &["internal", "external"])).is_ok());
    // TestNewIngressSource/"ingress class name and annotation filter jointly specified"
    assert!(
        check_options(&o(
            "kubernetes.io/ingress.class=nginx",
            &["internal", "external"]
        ))
        .is_err()
    );
}

/// Upstream builds these as `networkv1.Ingress` literals; here as the JSON the API
/// server serves.
fn literal(
    name: &str,
    namespace: &str,
    annotations: Value,
    class: Option<&str>,
    tls: &[&str],
    rules: &[&str],
    lbs: Value,
) -> Value {
    json!({
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "ingressClassName": class,
            "tls": if tls.is_empty() { json!(null) } else { json!([{"hosts": tls}]) },
            "rules": rules.iter().map(|h| json!({"host": h})).collect::<Vec<_>>(),
        },
        "status": {"loadBalancer": {"ingress": lbs}},
    })
}

#[test]
fn ingress_with_configuration() {
    let c = |upstream, items: Vec<Value>, options, want| Case {
        upstream,
        items,
        options,
        want: Want::Endpoints(want),
    };
    let nlb = json!([
        {"hostname": "internal-k8s-some-domain.us-east-1.elb.amazonaws.com"},
        {"hostname": "k8s-another-domain-nlb-123456789.elb.us-east-1.amazonaws.com"},
    ]);
    let nlb_annotations = json!({
        "alb.ingress.kubernetes.io/enable-frontend-nlb": "true",
        "alb.ingress.kubernetes.io/frontend-nlb-scheme": "internal",
    });
    let mut nlb_with_target = nlb_annotations.clone();
    nlb_with_target[TARGET] = json!("k8s-another-domain-nlb-123456789.elb.us-east-1.amazonaws.com");
    let wildcard = |ignore_tls| Options {
        ignore_ingress_tls_spec: ignore_tls,
        ..opts()
    };
    let wildcard_ingress = || {
        literal(
            "my-ingress",
            "default",
            json!({}),
            Some("alb"),
            &["*.example.com"],
            &["abc.example.com"],
            json!([{"ip": "1.2.3.4"}]),
        )
    };
    run(vec![
        // TestIngressWithConfiguration/"hostname and targets configured as annotations"
        c(
            "hostname and targets configured as annotations",
            vec![literal(
                "my-ingress",
                "default",
                json!({HOSTNAME: "bla.example.org", TARGET: "target.example.org"}),
                Some("nginx"),
                &[],
                &["app.example.com"],
                json!([{"ip": "1.2.3.4"}]),
            )],
            opts(),
            vec![
                ep("app.example.com", "CNAME", &["target.example.org"]),
                ep("bla.example.org", "CNAME", &["target.example.org"]),
            ],
        ),
        // TestIngressWithConfiguration/"ingress with spec.tls with wildcard domains and tls not ignored"
        c(
            "ingress with spec.tls with wildcard domains and tls not ignored",
            vec![wildcard_ingress()],
            wildcard(false),
            vec![
                ep("abc.example.com", "A", &["1.2.3.4"]),
                ep("*.example.com", "A", &["1.2.3.4"]),
            ],
        ),
        // TestIngressWithConfiguration/"ingress with spec.tls with wildcard domains and tls is ignored"
        c(
            "ingress with spec.tls with wildcard domains and tls is ignored",
            vec![wildcard_ingress()],
            wildcard(true),
            vec![ep("abc.example.com", "A", &["1.2.3.4"])],
        ),
        // TestIngressWithConfiguration/"multiple ingresses with same hostname, different CNAME targets and hostname annotation override"
        c(
            "multiple ingresses with same hostname, different CNAME targets and hostname annotation override",
            vec![
                literal(
                    "keycloak",
                    "default",
                    json!({HOSTNAME: "keycloak.blah.com"}),
                    None,
                    &[],
                    &["keycloak.blah.com"],
                    json!([{"hostname": "blah-1922533626.us-west-2.elb.amazonaws.com"}]),
                ),
                literal(
                    "keycloak-another",
                    "default",
                    json!({HOSTNAME: "anotherkeycloak.blah.com"}),
                    Some("alb"),
                    &[],
                    &["keycloak.blah.com"],
                    json!([{"hostname": "blah-3488114.us-west-2.elb.amazonaws.com"}]),
                ),
            ],
            opts(),
            vec![
                ep(
                    "keycloak.blah.com",
                    "CNAME",
                    &["blah-1922533626.us-west-2.elb.amazonaws.com"],
                ),
                ep(
                    "keycloak.blah.com",
                    "CNAME",
                    &["blah-3488114.us-west-2.elb.amazonaws.com"],
                ),
                ep(
                    "anotherkeycloak.blah.com",
                    "CNAME",
                    &["blah-3488114.us-west-2.elb.amazonaws.com"],
                ),
            ],
        ),
        // TestIngressWithConfiguration/"multiple ingresses with same hostname, different IPs from different ingressClasses are merged"
        c(
            "multiple ingresses with same hostname, different IPs from different ingressClasses are merged",
            vec![
                literal(
                    "my-service",
                    "old-ns",
                    json!({}),
                    Some("old-class"),
                    &[],
                    &["my-service.example.com"],
                    json!([{"ip": "10.0.0.1"}]),
                ),
                literal(
                    "my-service",
                    "new-ns",
                    json!({}),
                    Some("new-class"),
                    &[],
                    &["my-service.example.com"],
                    json!([{"ip": "10.0.0.2"}]),
                ),
            ],
            opts(),
            vec![ep("my-service.example.com", "A", &["10.0.0.1", "10.0.0.2"])],
        ),
        // TestIngressWithConfiguration/"ingress with when AWS ALB controller and NLB type generates two targets for CNAME"
        c(
            "ingress with when AWS ALB controller and NLB type generates two targets for CNAME",
            vec![literal(
                "my-ingress",
                "default",
                nlb_annotations,
                Some("alb"),
                &[],
                &["some.subdomain.mydomain.com"],
                nlb.clone(),
            )],
            opts(),
            vec![ep(
                "some.subdomain.mydomain.com",
                "CNAME",
                &[
                    "internal-k8s-some-domain.us-east-1.elb.amazonaws.com",
                    "k8s-another-domain-nlb-123456789.elb.us-east-1.amazonaws.com",
                ],
            )],
        ),
        // TestIngressWithConfiguration/"ingress with when AWS ALB controller and NLB with target annotation and CNAME with single target"
        c(
            "ingress with when AWS ALB controller and NLB with target annotation and CNAME with single target",
            vec![literal(
                "my-ingress",
                "default",
                nlb_with_target,
                Some("alb"),
                &[],
                &["some.subdomain.mydomain.com"],
                nlb,
            )],
            opts(),
            vec![ep(
                "some.subdomain.mydomain.com",
                "CNAME",
                &["k8s-another-domain-nlb-123456789.elb.us-east-1.amazonaws.com"],
            )],
        ),
        // TestIngressWithConfiguration/"no annotations, multiple ingresses, mixed IP and Hostname targets"
        c(
            "no annotations, multiple ingresses, mixed IP and Hostname targets",
            vec![literal(
                "my-ingress",
                "default",
                json!(null),
                Some("alb"),
                &[],
                &["app.example.com"],
                json!([{"ip": "1.2.3.4"}, {"hostname": "foo.tld"}]),
            )],
            opts(),
            vec![
                ep("app.example.com", "A", &["1.2.3.4"]),
                ep("app.example.com", "CNAME", &["foo.tld"]),
            ],
        ),
    ]);
}

/// Upstream's `createTestIngresses`: `count` ingresses `ing-<i>` with a hostname and a
/// target annotation each; `extra(i)` adds annotations.
fn indexed(count: usize, extra: impl Fn(usize) -> Vec<(&'static str, &'static str)>) -> Vec<Value> {
    (0..count)
        .map(|i| {
            let mut annotations = json!({
                HOSTNAME: format!("ing-{i}.example.org"),
                TARGET: format!("target-{i}.example.com"),
            });
            for (k, v) in extra(i) {
                annotations[k] = json!(v);
            }
            json!({"metadata": {"name": format!("ing-{i}"), "namespace": "default", "annotations": annotations}})
        })
        .collect()
}

#[test]
fn ingress_indexer() {
    let count = |items: Vec<Value>, options: &Options| {
        let mut n = 0;
        for item in &items {
            let t = translate(Kind::Ingress, item, &Cluster::default(), options);
            assert!(t.problems.is_empty(), "{:?}", t.problems);
            n += t.endpoints.len();
        }
        n
    };
    let filter = |f: &str| Options {
        annotation_filter: Some(f.to_string()),
        ..opts()
    };
    let frontend = |n: usize| {
        move |i: usize| {
            if i < n {
                vec![("tier", "frontend")]
            } else {
                vec![]
            }
        }
    };
    // TestIngressIndexer/"no filters returns all ingresses"
    assert_eq!(count(indexed(5, |_| vec![]), &opts()), 5);
    // TestIngressIndexer/"annotation filter matches subset"
    assert_eq!(count(indexed(5, frontend(3)), &filter("tier=frontend")), 3);
    // TestIngressIndexer/"annotation filter no match returns empty"
    assert_eq!(count(indexed(3, frontend(3)), &filter("tier=backend")), 0);
    // TestIngressIndexer/"controller mismatch excludes ingress"
    let other = |i: usize| {
        if i >= 3 {
            vec![(CONTROLLER, "other-controller")]
        } else {
            vec![]
        }
    };
    assert_eq!(count(indexed(5, other), &opts()), 3);
    // TestIngressIndexer/"invalid annotation filter is silently ignored and all ingresses pass through"
    // dnsplane differs (see "invalid annotation filter expression"): refused.
    for item in indexed(3, |_| vec![]) {
        let t = translate(
            Kind::Ingress,
            &item,
            &Cluster::default(),
            &filter("tier in (x y)"),
        );
        assert_eq!(t.problems[0].field, "annotation_filter");
        assert!(t.endpoints.is_empty());
    }
}

#[test]
fn ingress_source_errors() {
    // TestIngressSource_Errors/"endpointsFromTemplate ExecFQDN error propagates"
    let ing = json!({"metadata": {"name": "foo", "namespace": "default"}});
    let t = translate(
        Kind::Ingress,
        &ing,
        &Cluster::default(),
        &template("{{index . 0}}", false),
    );
    assert_eq!(t.problems[0].field, "fqdn_template");
}

#[test]
fn ingress_source_fqdn_templating_examples() {
    // ingress_fqdn_test.go runs every case with `combine_fqdn_annotation`.
    let c = |upstream, template: &str, lbs: Value, want| Case {
        upstream,
        items: vec![literal(
            "my-ingress",
            "default",
            json!(null),
            Some("my-ingress"),
            &[],
            &["example.org"],
            lbs,
        )],
        options: Options {
            fqdn_template: Some(template.to_string()),
            combine_fqdn_annotation: true,
            ..opts()
        },
        want: Want::Endpoints(want),
    };
    run(vec![
        // TestIngressSourceFqdnTemplatingExamples/"templating resolve Ingress source hostnames to IP"
        c(
            "templating resolve Ingress source hostnames to IP",
            "{{.Name }}.nip.io",
            json!([{"hostname": "10.200.130.84.nip.io"}]),
            vec![
                ep("example.org", "CNAME", &["10.200.130.84.nip.io"]),
                ep("my-ingress.nip.io", "CNAME", &["10.200.130.84.nip.io"]),
            ],
        ),
        // TestIngressSourceFqdnTemplatingExamples/"templating resolve hostnames with nip.io and status IP"
        c(
            "templating resolve hostnames with nip.io and status IP",
            "nip.io",
            json!([{"ip": "10.200.130.84"}]),
            vec![
                ep("example.org", "A", &["10.200.130.84"]),
                ep("nip.io", "A", &["10.200.130.84"]),
            ],
        ),
        // TestIngressSourceFqdnTemplatingExamples/"templating resolve hostnames with nip.io"
        c(
            "templating resolve hostnames with nip.io",
            r#"{{ range .Status.LoadBalancer.Ingress }}{{ if contains .Hostname "nip.io" }}example.org{{end}}{{end}}"#,
            json!([{"hostname": "10.200.130.84.nip.io"}]),
            vec![ep("example.org", "CNAME", &["10.200.130.84.nip.io"])],
        ),
    ]);
}

/// dnsplane's own cases: bad input is a problem naming the field, the alpha prefix is
/// read, and an ingress waiting for its load balancer says so.
#[test]
fn dnsplane_bad_input_and_waiting() {
    let base = fake("web", "default").hosts(&["web.example.org"]);
    let alpha_target = format!("{ALPHA_PREFIX}target");
    let alpha_target: &'static str = Box::leak(alpha_target.into_boxed_str());
    let long_host: &'static str =
        Box::leak(format!("{}.example.org", "a.".repeat(125)).into_boxed_str());
    run(vec![
        Case {
            upstream: "dnsplane: a TTL of \"abc\" is refused (upstream: no TTL)",
            items: vec![base.clone().ips(&["1.2.3.4"]).ann(&[(TTL, "abc")]).build()],
            options: opts(),
            want: Want::Problem("metadata.annotations[\"external-dns.kubernetes.io/ttl\"]"),
        },
        Case {
            upstream: "dnsplane: a target that is neither IP nor name",
            items: vec![base.clone().ann(&[(TARGET, "lb.example.com:443")]).build()],
            options: opts(),
            want: Want::Problem("metadata.annotations[\"external-dns.kubernetes.io/target\"]"),
        },
        Case {
            upstream: "dnsplane: a host over 253 octets",
            items: vec![
                fake("web", "default")
                    .ips(&["1.2.3.4"])
                    .ann(&[(HOSTNAME, long_host)])
                    .build(),
            ],
            options: opts(),
            want: Want::Problem("metadata.annotations[\"external-dns.kubernetes.io/hostname\"]"),
        },
        case(
            "dnsplane: the alpha prefix is read",
            &[base.clone().ann(&[(alpha_target, "lb.example.net.")])],
            opts(),
            vec![ep("web.example.org", "CNAME", &["lb.example.net"])],
        ),
    ]);
    assert!(PREFIX.ends_with('/'));
    let waiting = translate(Kind::Ingress, &base.build(), &Cluster::default(), &opts());
    assert!(waiting.waiting_for_load_balancer && waiting.endpoints.is_empty());
    let with_target = base.clone().ann(&[(TARGET, "lb.example.net")]).build();
    let t = translate(Kind::Ingress, &with_target, &Cluster::default(), &opts());
    assert!(!t.waiting_for_load_balancer);
    let skipped = base.ann(&[(CONTROLLER, "other")]).build();
    let t = translate(Kind::Ingress, &skipped, &Cluster::default(), &opts());
    assert!(t.skipped.is_some() && !t.waiting_for_load_balancer);
}

// Upstream cases NOT ported, and why:
// - TestIngress/Endpoints/"two simple ingresses on different namespaces with target
//   namespace": the namespace is chosen by the watch (the source's `namespaces`), not
//   by the translation; the source's own tests cover it.
// - TestIngress/Endpoints/"ingress with matching labels", "ingress without matching
//   labels", TestIngressIndexer/"label filter matches subset", "annotation and label
//   filter intersection": the label selector goes to the API server's list/watch
//   (`label_selector`), not to the translation.
// - IngressSuite/TestResourceLabelIsSet, TestProcessEndpoint_Ingress_RefObjectExist:
//   the resource label and the object reference are the source's (events), not the
//   endpoints'.
// - TestTransformerInIngressSource, TestNewIngressSource_Errors,
//   TestIngressSource_AddEventHandler: informer plumbing external-dns has and dnsplane
//   has not.
// - ingress_fqdn_test.go, TestIngressSourceFqdnTemplatingExamples/"templating resolve
//   hostnames with nip.io", "... and target annotation", "templating resolve with
//   different hostnames and rules", "templating resolve with rules and tls": their
//   templates use `range`, `if`, `contains`, `break`, `replace` over `.Spec`/`.Status`;
//   dnsplane's template reads `.Name`, `.Namespace`, `.Kind`, labels and annotations
//   only and refuses the rest with a problem (the last case of
//   `ingress_source_fqdn_templating_examples`).
