//! external-dns v0.22.0's `source/gateway_httproute_test.go`
//! (TestGatewayHTTPRouteSourceEndpoints) and the GRPCRoute, TLSRoute, TCPRoute and
//! UDPRoute endpoint tests, ported case by case: each case names the upstream test and
//! case title. Gateways, routes and namespaces are the upstream fixtures as JSON
//! objects; endpoints are compared as upstream's `ValidateEndpoints` does (order
//! ignored), after `MergeEndpoints` over every route of the case. Where dnsplane
//! deliberately differs, the case says so and why.
use super::route::route_parents;
use super::upstream_tests::{
    ALIAS, CONTROLLER, HOSTNAME, TARGET, TTL, Want, check, normalised, translate,
};
use super::{Cluster, Endpoint, Kind, Options};
use serde_json::{Value, json};

const SET_ID: &str = "external-dns.kubernetes.io/set-identifier";
const SOURCE: &str = "external-dns.kubernetes.io/gateway-hostname-source";

/// Sets `pointer` (`/a/b`) in a JSON object, creating the objects on the way.
trait With {
    fn with(self, pointer: &str, v: Value) -> Value;
}

impl With for Value {
    fn with(mut self, pointer: &str, v: Value) -> Value {
        let mut at = &mut self;
        for key in pointer.trim_start_matches('/').split('/') {
            if !at.is_object() {
                *at = json!({});
            }
            at = at
                .as_object_mut()
                .expect("an object")
                .entry(key.to_string())
                .or_insert(Value::Null);
        }
        *at = v;
        self
    }
}

/// Upstream's `gwParentRef(namespace, name)`.
fn parent(ns: &str, name: &str) -> Value {
    json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": name, "namespace": ns})
}

/// A listener of `protocol` (upstream's `v1.Listener{Protocol: …}`).
fn lis(protocol: &str) -> Value {
    json!({"protocol": protocol})
}

/// A listener that allows routes from every namespace (`allowAllNamespaces`).
fn lis_all() -> Value {
    lis("HTTP").with("/allowedRoutes/namespaces/from", json!("All"))
}

fn lis_host(name: &str, host: &str) -> Value {
    lis("HTTP")
        .with("/name", json!(name))
        .with("/hostname", json!(host))
}

/// A Gateway with `listeners` and `status.addresses` of type IPAddress
/// (upstream's `gatewayStatus(ips...)`).
fn gateway(ns: &str, name: &str, listeners: Vec<Value>, ips: &[&str]) -> Value {
    let addresses: Vec<Value> = ips
        .iter()
        .map(|ip| json!({"type": "IPAddress", "value": ip}))
        .collect();
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"listeners": listeners},
        "status": {"addresses": addresses},
    })
}

/// A route with `hostnames`, `spec.parentRefs` = `refs` and, for each of `accepted`,
/// a `status.parents[]` entry with `Accepted` = True (upstream's `httpRouteStatus`).
fn route(
    ns: &str,
    name: &str,
    hostnames: &[&str],
    refs: Vec<Value>,
    accepted: Vec<Value>,
) -> Value {
    let parents: Vec<Value> = accepted
        .into_iter()
        .map(|r| json!({"parentRef": r, "conditions": [{"type": "Accepted", "status": "True"}]}))
        .collect();
    let mut spec = json!({"parentRefs": refs});
    if !hostnames.is_empty() {
        spec["hostnames"] = json!(hostnames);
    }
    json!({
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
        "status": {"parents": parents},
    })
}

/// A route attached to the one Gateway `gw_ns/gw`.
fn attached(ns: &str, name: &str, hostnames: &[&str], gw_ns: &str, gw: &str) -> Value {
    route(
        ns,
        name,
        hostnames,
        vec![parent(gw_ns, gw)],
        vec![parent(gw_ns, gw)],
    )
}

fn namespace(name: &str) -> Value {
    json!({"metadata": {"name": name}})
}

/// Upstream's `newTestEndpoint`: an A record.
fn a(name: &str, ips: &[&str]) -> Endpoint {
    Endpoint {
        dns_name: name.to_string(),
        record_type: "A".to_string(),
        targets: ips.iter().map(|t| t.to_string()).collect(),
        ..Endpoint::default()
    }
}

struct Case {
    upstream: &'static str,
    kind: Kind,
    options: Options,
    namespaces: Vec<Value>,
    gateways: Vec<Value>,
    routes: Vec<Value>,
    want: Want,
}

fn http(
    upstream: &'static str,
    options: Options,
    gateways: Vec<Value>,
    routes: Vec<Value>,
    want: Vec<Endpoint>,
) -> Case {
    Case {
        upstream,
        kind: Kind::HttpRoute,
        options,
        namespaces: ["default", "gateway-namespace", "route-namespace", "test"]
            .map(namespace)
            .to_vec(),
        gateways,
        routes,
        want: Want::Endpoints(want),
    }
}

fn run(cases: Vec<Case>) {
    let mut failures = Vec::new();
    for c in cases {
        let cluster = Cluster {
            gateways: c
                .gateways
                .iter()
                .map(|g| (super::object_key(g), g.clone()))
                .collect(),
            namespaces: c
                .namespaces
                .iter()
                .map(|n| {
                    (
                        n["metadata"]["name"].as_str().unwrap().to_string(),
                        n.clone(),
                    )
                })
                .collect(),
            ..Cluster::default()
        };
        // A route's problem may come with the endpoints of its other parents.
        let checked = check(
            c.upstream, c.kind, &c.routes, &cluster, &c.options, &c.want, false,
        );
        failures.extend(checked.err());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn opts() -> Options {
    Options::default()
}

/// The default Gateway of most cases: `default/test`, one HTTP listener, 1.2.3.4.
fn default_gateway() -> Vec<Value> {
    vec![gateway("default", "test", vec![lis("HTTP")], &["1.2.3.4"])]
}

#[test]
fn gateway_httproute_source_endpoints() {
    let gwns = "gateway-namespace";
    let both = |a_name: &str, b_name: &str| {
        (
            vec![parent(gwns, a_name), parent(gwns, b_name)],
            vec![parent(gwns, a_name), parent(gwns, b_name)],
        )
    };
    let (refs, accepted) = both("gateway-name", "not-gateway-name");
    let mut not_accepted = attached(
        "route-namespace",
        "old-test",
        &["test.example.internal"],
        gwns,
        "gateway-name",
    );
    not_accepted["status"]["parents"][0]["conditions"][0]["type"] = json!("NotAccepted");
    let section_route = |r: Value| r.with("/sectionName", json!("foo"));
    let port_route = |r: Value| r.with("/port", json!(80));
    let two_gateways = vec![
        gateway("default", "one", vec![lis("HTTP")], &["1.2.3.4"]),
        gateway("default", "two", vec![lis("HTTP")], &["2.3.4.5"]),
    ];
    let one_two = || {
        route(
            "default",
            "test",
            &["test.example.internal"],
            vec![parent("default", "one"), parent("default", "two")],
            vec![parent("default", "one"), parent("default", "two")],
        )
    };
    let listeners_foo_bar = vec![
        lis_host("foo", "foo.example.internal"),
        lis_host("bar", "bar.example.internal"),
    ];
    let wildcard_gateway = |host: &str| {
        vec![gateway(
            "default",
            "test",
            vec![lis("HTTP").with("/hostname", json!(host))],
            &["1.2.3.4"],
        )]
    };
    let with_ann = |r: Value, ann: Value| r.with("/metadata/annotations", ann);
    let overridden = gateway(gwns, "overridden-gateway", vec![lis_all()], &["1.2.3.4"])
        .with("/metadata/annotations", json!({TARGET: "4.3.2.1"}));
    let selector_gateway = |labels: Value| {
        vec![gateway(
            "default",
            "test",
            vec![
                lis("HTTP")
                    .with("/allowedRoutes/namespaces/from", json!("Selector"))
                    .with("/allowedRoutes/namespaces/selector/matchLabels", labels),
            ],
            &["1.2.3.4"],
        )]
    };
    let gw_ns_opts = || Options {
        gateway_namespace: Some(gwns.into()),
        ..opts()
    };
    let cases = vec![
        // TestGatewayHTTPRouteSourceEndpoints/GatewayName
        http(
            "GatewayName",
            Options {
                gateway_name: Some("gateway-name".into()),
                ..opts()
            },
            vec![
                gateway(gwns, "gateway-name", vec![lis_all()], &["1.2.3.4"]),
                gateway(gwns, "not-gateway-name", vec![lis_all()], &["2.3.4.5"]),
            ],
            vec![route(
                "route-namespace",
                "test",
                &["test.example.internal"],
                refs,
                accepted,
            )],
            vec![a("test.example.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/GatewayNameNoneAccepted
        http(
            "GatewayNameNoneAccepted",
            Options {
                gateway_name: Some("gateway-name".into()),
                ..opts()
            },
            vec![gateway(gwns, "gateway-name", vec![lis_all()], &["1.2.3.4"])],
            vec![not_accepted],
            vec![],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/GatewayNamespace
        http(
            "GatewayNamespace",
            gw_ns_opts(),
            vec![
                gateway(gwns, "test", vec![lis_all()], &["1.2.3.4"]),
                gateway(
                    "not-gateway-namespace",
                    "test",
                    vec![lis("HTTP")],
                    &["2.3.4.5"],
                ),
            ],
            vec![route(
                "route-namespace",
                "test",
                &["test.example.internal"],
                vec![
                    parent(gwns, "test"),
                    parent("not-gateway-namespace", "test"),
                ],
                vec![
                    parent(gwns, "test"),
                    parent("not-gateway-namespace", "test"),
                ],
            )],
            vec![a("test.example.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/GatewayLabelFilter
        http(
            "GatewayLabelFilter",
            Options {
                gateway_label_filter: Some("foo=bar".into()),
                ..opts()
            },
            vec![
                gateway("default", "labels-match", vec![lis("HTTP")], &["1.2.3.4"])
                    .with("/metadata/labels", json!({"foo": "bar"})),
                gateway(
                    "default",
                    "labels-dont-match",
                    vec![lis("HTTP")],
                    &["2.3.4.5"],
                )
                .with("/metadata/labels", json!({"foo": "qux"})),
            ],
            vec![route(
                "default",
                "test",
                &["test.example.internal"],
                vec![
                    parent("default", "labels-match"),
                    parent("default", "labels-dont-match"),
                ],
                vec![
                    parent("default", "labels-match"),
                    parent("default", "labels-dont-match"),
                ],
            )],
            vec![a("test.example.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/RouteAnnotationFilter
        http(
            "RouteAnnotationFilter",
            Options {
                annotation_filter: Some("foo=bar".into()),
                ..opts()
            },
            default_gateway(),
            vec![
                with_ann(
                    attached(
                        "default",
                        "annotations-match",
                        &["annotations-match.example.internal"],
                        "default",
                        "test",
                    ),
                    json!({"foo": "bar"}),
                ),
                with_ann(
                    attached(
                        "default",
                        "annotations-dont-match",
                        &["annotations-dont-match.example.internal"],
                        "default",
                        "test",
                    ),
                    json!({"foo": "qux"}),
                ),
            ],
            vec![a("annotations-match.example.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/SkipControllerAnnotation
        http(
            "SkipControllerAnnotation",
            opts(),
            default_gateway(),
            vec![with_ann(
                attached(
                    "default",
                    "api",
                    &["api.example.internal"],
                    "default",
                    "test",
                ),
                json!({CONTROLLER: "something-else"}),
            )],
            vec![],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/MultipleGateways
        http(
            "MultipleGateways",
            opts(),
            two_gateways.clone(),
            vec![one_two()],
            vec![a("test.example.internal", &["1.2.3.4", "2.3.4.5"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/MultipleListeners
        http(
            "MultipleListeners",
            opts(),
            vec![gateway(
                "default",
                "one",
                listeners_foo_bar.clone(),
                &["1.2.3.4"],
            )],
            vec![attached(
                "default",
                "test",
                &["*.example.internal"],
                "default",
                "one",
            )],
            vec![
                a("foo.example.internal", &["1.2.3.4"]),
                a("bar.example.internal", &["1.2.3.4"]),
            ],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/SectionNameMatch
        http(
            "SectionNameMatch",
            opts(),
            vec![gateway("default", "test", listeners_foo_bar, &["1.2.3.4"])],
            vec![route(
                "default",
                "test",
                &["*.example.internal"],
                vec![section_route(parent("default", "test"))],
                vec![section_route(parent("default", "test"))],
            )],
            vec![a("foo.example.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/PortNumberMatch
        http(
            "PortNumberMatch",
            opts(),
            vec![gateway(
                "default",
                "test",
                vec![
                    lis_host("foo", "foo.example.internal").with("/port", json!(80)),
                    lis_host("bar", "bar.example.internal").with("/port", json!(80)),
                    lis_host("qux", "qux.example.internal").with("/port", json!(8080)),
                ],
                &["1.2.3.4"],
            )],
            vec![route(
                "default",
                "test",
                &["*.example.internal"],
                vec![port_route(parent("default", "test"))],
                vec![port_route(parent("default", "test"))],
            )],
            vec![
                a("foo.example.internal", &["1.2.3.4"]),
                a("bar.example.internal", &["1.2.3.4"]),
            ],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/WildcardInGateway
        http(
            "WildcardInGateway",
            opts(),
            wildcard_gateway("*.example.internal"),
            vec![attached(
                "default",
                "no-hostname",
                &["foo.example.internal"],
                "default",
                "test",
            )],
            vec![a("foo.example.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/WildcardInRoute
        http(
            "WildcardInRoute",
            opts(),
            wildcard_gateway("foo.example.internal"),
            vec![attached(
                "default",
                "no-hostname",
                &["*.example.internal"],
                "default",
                "test",
            )],
            vec![a("foo.example.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/WildcardInRouteAndGateway
        http(
            "WildcardInRouteAndGateway",
            opts(),
            wildcard_gateway("*.example.internal"),
            vec![attached(
                "default",
                "no-hostname",
                &["*.example.internal"],
                "default",
                "test",
            )],
            vec![a("*.example.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/NoRouteHostname
        http(
            "NoRouteHostname",
            opts(),
            wildcard_gateway("foo.example.internal"),
            vec![attached("default", "no-hostname", &[], "default", "test")],
            vec![a("foo.example.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/NoGateways
        http(
            "NoGateways",
            opts(),
            vec![],
            vec![route(
                "default",
                "test",
                &["example.internal"],
                vec![],
                vec![],
            )],
            vec![],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/NoHostnames
        http(
            "NoHostnames",
            opts(),
            default_gateway(),
            vec![attached("default", "no-hostname", &[], "default", "test")],
            vec![],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/HostnameAnnotation
        http(
            "HostnameAnnotation",
            opts(),
            default_gateway(),
            vec![
                with_ann(
                    attached("default", "without-hostame", &[], "default", "test"),
                    json!({HOSTNAME: "annotation.without-hostname.internal"}),
                ),
                with_ann(
                    attached(
                        "default",
                        "with-hostame",
                        &["with-hostname.internal"],
                        "default",
                        "test",
                    ),
                    json!({HOSTNAME: "annotation.with-hostname.internal"}),
                ),
            ],
            vec![
                a("annotation.without-hostname.internal", &["1.2.3.4"]),
                a("annotation.with-hostname.internal", &["1.2.3.4"]),
                a("with-hostname.internal", &["1.2.3.4"]),
            ],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/IgnoreHostnameAnnotation
        http(
            "IgnoreHostnameAnnotation",
            Options {
                ignore_hostname_annotation: true,
                ..opts()
            },
            default_gateway(),
            vec![with_ann(
                attached(
                    "default",
                    "with-hostame",
                    &["with-hostname.internal"],
                    "default",
                    "test",
                ),
                json!({HOSTNAME: "annotation.with-hostname.internal"}),
            )],
            vec![a("with-hostname.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/FQDNTemplate
        http(
            "FQDNTemplate",
            Options {
                fqdn_template: Some(
                    "{{.Name}}.zero.internal, {{.Name}}.one.internal. ,  {{.Name}}.two.internal  "
                        .into(),
                ),
                ..opts()
            },
            default_gateway(),
            vec![
                attached(
                    "default",
                    "fqdn-with-hostnames",
                    &["fqdn-with-hostnames.internal"],
                    "default",
                    "test",
                ),
                attached("default", "fqdn-without-hostnames", &[], "default", "test"),
            ],
            vec![
                a("fqdn-without-hostnames.zero.internal", &["1.2.3.4"]),
                a("fqdn-without-hostnames.one.internal", &["1.2.3.4"]),
                a("fqdn-without-hostnames.two.internal", &["1.2.3.4"]),
                a("fqdn-with-hostnames.internal", &["1.2.3.4"]),
            ],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/CombineFQDN
        http(
            "CombineFQDN",
            Options {
                fqdn_template: Some("combine-{{.Name}}.internal".into()),
                combine_fqdn_annotation: true,
                ..opts()
            },
            default_gateway(),
            vec![attached(
                "default",
                "fqdn-with-hostnames",
                &["fqdn-with-hostnames.internal"],
                "default",
                "test",
            )],
            vec![
                a("fqdn-with-hostnames.internal", &["1.2.3.4"]),
                a("combine-fqdn-with-hostnames.internal", &["1.2.3.4"]),
            ],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/TTL, the valid route: ported as upstream.
        http(
            "TTL (valid-ttl)",
            opts(),
            default_gateway(),
            vec![with_ann(
                attached(
                    "default",
                    "valid-ttl",
                    &["valid-ttl.internal"],
                    "default",
                    "test",
                ),
                json!({TTL: "15s"}),
            )],
            vec![Endpoint {
                ttl: Some(15),
                ..a("valid-ttl.internal", &["1.2.3.4"])
            }],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/TTL, the invalid route: dnsplane differs.
        // Upstream publishes "invalid-ttl.internal" without a TTL (the provider's
        // default); dnsplane refuses the route and names the annotation, so a typo
        // does not silently change how long resolvers cache the answer.
        Case {
            upstream: "TTL (invalid-ttl)",
            want: Want::Problem("metadata.annotations[\"external-dns.kubernetes.io/ttl\"]"),
            ..http(
                "",
                opts(),
                default_gateway(),
                vec![with_ann(
                    attached(
                        "default",
                        "invalid-ttl",
                        &["invalid-ttl.internal"],
                        "default",
                        "test",
                    ),
                    json!({TTL: "abc"}),
                )],
                vec![],
            )
        },
        // TestGatewayHTTPRouteSourceEndpoints/ProviderAnnotations
        http(
            "ProviderAnnotations",
            opts(),
            default_gateway(),
            vec![with_ann(
                attached(
                    "default",
                    "provider-annotations",
                    &["provider-annotations.com"],
                    "default",
                    "test",
                ),
                json!({SET_ID: "test-set-identifier", ALIAS: "true"}),
            )],
            vec![Endpoint {
                set_identifier: "test-set-identifier".into(),
                provider_specific: vec![("alias".into(), "true".into())],
                ..a("provider-annotations.com", &["1.2.3.4"])
            }],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/DifferentHostnameDifferentGateway
        http(
            "DifferentHostnameDifferentGateway",
            opts(),
            vec![
                gateway(
                    "default",
                    "one",
                    vec![lis("HTTP").with("/hostname", json!("*.one.internal"))],
                    &["1.2.3.4"],
                ),
                gateway(
                    "default",
                    "two",
                    vec![lis("HTTP").with("/hostname", json!("*.two.internal"))],
                    &["2.3.4.5"],
                ),
            ],
            vec![one_two().with(
                "/spec/hostnames",
                json!(["test.one.internal", "test.two.internal"]),
            )],
            vec![
                a("test.one.internal", &["1.2.3.4"]),
                a("test.two.internal", &["2.3.4.5"]),
            ],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/AllowedRoutesSameNamespace
        http(
            "AllowedRoutesSameNamespace",
            opts(),
            vec![gateway(
                "same-namespace",
                "test",
                vec![lis("HTTP").with("/allowedRoutes/namespaces/from", json!("Same"))],
                &["1.2.3.4"],
            )],
            vec![
                attached(
                    "same-namespace",
                    "test",
                    &["same-namespace.example.internal"],
                    "same-namespace",
                    "test",
                ),
                attached(
                    "other-namespace",
                    "test",
                    &["other-namespace.example.internal"],
                    "same-namespace",
                    "test",
                ),
            ],
            vec![a("same-namespace.example.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/AllowedRoutesNamespaceSelector
        Case {
            namespaces: vec![
                namespace("default"),
                namespace("foo").with("/metadata/labels", json!({"team": "foo"})),
                namespace("bar").with("/metadata/labels", json!({"team": "bar"})),
            ],
            ..http(
                "AllowedRoutesNamespaceSelector",
                opts(),
                selector_gateway(json!({"team": "foo"})),
                vec![
                    attached("foo", "test", &["foo.example.internal"], "default", "test"),
                    attached("bar", "test", &["bar.example.internal"], "default", "test"),
                ],
                vec![a("foo.example.internal", &["1.2.3.4"])],
            )
        },
        // TestGatewayHTTPRouteSourceEndpoints/MissingNamespace
        Case {
            namespaces: vec![],
            ..http(
                "MissingNamespace",
                opts(),
                selector_gateway(json!({"foo": "bar"})),
                vec![attached(
                    "default",
                    "test",
                    &["example.internal"],
                    "default",
                    "test",
                )],
                vec![],
            )
        },
        // TestGatewayHTTPRouteSourceEndpoints/AnnotationOverride
        http(
            "AnnotationOverride",
            gw_ns_opts(),
            vec![overridden.clone()],
            vec![attached(
                "route-namespace",
                "test",
                &["test.example.internal"],
                gwns,
                "overridden-gateway",
            )],
            vec![a("test.example.internal", &["4.3.2.1"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/MutlipleGatewaysOneAnnotationOverride
        http(
            "MutlipleGatewaysOneAnnotationOverride",
            gw_ns_opts(),
            vec![
                overridden,
                gateway(gwns, "test", vec![lis_all()], &["2.3.4.5"]),
            ],
            vec![route(
                "route-namespace",
                "test",
                &["test.example.internal"],
                vec![parent(gwns, "overridden-gateway"), parent(gwns, "test")],
                vec![parent(gwns, "overridden-gateway"), parent(gwns, "test")],
            )],
            vec![a("test.example.internal", &["4.3.2.1", "2.3.4.5"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/MultipleGatewaysMultipleRoutes
        http(
            "MultipleGatewaysMultipleRoutes",
            opts(),
            two_gateways,
            vec![
                attached("default", "one", &["test.one.internal"], "default", "one"),
                attached("default", "two", &["test.two.internal"], "default", "two"),
            ],
            vec![
                a("test.one.internal", &["1.2.3.4"]),
                a("test.two.internal", &["2.3.4.5"]),
            ],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/NoParentRefs
        http(
            "NoParentRefs",
            gw_ns_opts(),
            vec![gateway(gwns, "test", vec![lis_all()], &["1.2.3.4"])],
            vec![route(
                "route-namespace",
                "test",
                &["test.example.internal"],
                vec![],
                vec![parent(gwns, "test")],
            )],
            vec![],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/ParentRefsMismatch
        http(
            "ParentRefsMismatch",
            gw_ns_opts(),
            vec![gateway(gwns, "test", vec![lis_all()], &["1.2.3.4"])],
            vec![route(
                "route-namespace",
                "test",
                &["test.example.internal"],
                vec![parent(gwns, "default-gateway")],
                vec![parent(gwns, "other-gateway")],
            )],
            vec![],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/SourceAnnotation
        http(
            "SourceAnnotation",
            gw_ns_opts(),
            vec![gateway(gwns, "test", vec![lis_all()], &["1.2.3.4"])],
            vec![with_ann(
                attached(
                    "test",
                    "route-test",
                    &["test.example.internal"],
                    gwns,
                    "test",
                ),
                json!({SOURCE: "defined-hosts-only", HOSTNAME: "test.org.internal"}),
            )],
            vec![a("test.example.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/OnlyAnnotationHost
        http(
            "OnlyAnnotationHost",
            gw_ns_opts(),
            vec![gateway(gwns, "test", vec![lis_all()], &["1.2.3.4"])],
            vec![with_ann(
                attached(
                    "test",
                    "route-test",
                    &["test.example.internal"],
                    gwns,
                    "test",
                ),
                json!({SOURCE: "annotation-only", HOSTNAME: "test.org.internal"}),
            )],
            vec![a("test.org.internal", &["1.2.3.4"])],
        ),
        // TestGatewayHTTPRouteSourceEndpoints/InvalidSourceAnnotation: dnsplane differs.
        // Upstream logs a warning and publishes both the route's and the annotation's
        // hosts; dnsplane refuses the route and names the annotation, since the owner
        // asked for something it cannot tell.
        Case {
            upstream: "InvalidSourceAnnotation",
            want: Want::Problem(
                "metadata.annotations[\"external-dns.kubernetes.io/gateway-hostname-source\"]",
            ),
            ..http(
                "",
                opts(),
                default_gateway(),
                vec![with_ann(
                    attached(
                        "default",
                        "invalid-annotation",
                        &["route.invalid.internal"],
                        "default",
                        "test",
                    ),
                    json!({SOURCE: "invalid-value", HOSTNAME: "annotation.invalid.internal"}),
                )],
                vec![],
            )
        },
    ];
    run(cases);
}

/// The GRPCRoute, TLSRoute, TCPRoute and UDPRoute endpoint tests: one Gateway
/// `default/internal` with one listener of the route's protocol and two addresses, one
/// route `api` with a hostname annotation (and `spec.hostnames` for GRPC and TLS), the
/// template `{{.Name}}-template.foobar.internal` combined.
#[test]
fn gateway_grpc_tls_tcp_udp_route_source_endpoints() {
    let ips = ["10.64.0.1", "10.64.0.2"];
    let mut cases = Vec::new();
    for (upstream, kind, protocol, with_spec_host) in [
        (
            "TestGatewayGRPCRouteSourceEndpoints",
            Kind::GrpcRoute,
            "HTTPS",
            true,
        ),
        (
            "TestGatewayTLSRouteSourceEndpoints",
            Kind::TlsRoute,
            "TLS",
            true,
        ),
        (
            "TestGatewayTCPRouteSourceEndpoints",
            Kind::TcpRoute,
            "TCP",
            false,
        ),
        (
            "TestGatewayUDPRouteSourceEndpoints",
            Kind::UdpRoute,
            "UDP",
            false,
        ),
    ] {
        let hostnames: &[&str] = if with_spec_host {
            &["api-hostnames.foobar.internal"]
        } else {
            &[]
        };
        let mut want = vec![
            a("api-annotation.foobar.internal", &ips),
            a("api-template.foobar.internal", &ips),
        ];
        if with_spec_host {
            want.push(a("api-hostnames.foobar.internal", &ips));
        }
        cases.push(Case {
            upstream,
            kind,
            options: Options {
                fqdn_template: Some("{{.Name}}-template.foobar.internal".into()),
                combine_fqdn_annotation: true,
                ..opts()
            },
            namespaces: vec![namespace("default")],
            gateways: vec![gateway("default", "internal", vec![lis(protocol)], &ips)],
            routes: vec![
                attached("default", "api", hostnames, "default", "internal").with(
                    "/metadata/annotations",
                    json!({HOSTNAME: "api-annotation.foobar.internal"}),
                ),
            ],
            want: Want::Endpoints(want),
        });
    }
    run(cases);
}

/// dnsplane's own cases: parents for re-translation, a Gateway without addresses,
/// bad input named, hostnames and Hostname addresses.
#[test]
fn dnsplane_route_cases() {
    let r = route(
        "apps",
        "web",
        &["web.example.org"],
        vec![
            parent("infra", "edge"),
            json!({"name": "local"}),
            json!({"name": "ls", "kind": "ListenerSet"}),
        ],
        vec![],
    );
    assert_eq!(route_parents(&r), vec!["apps/local", "infra/edge"]);

    let cluster = |gw: Value| Cluster {
        gateways: [(super::object_key(&gw), gw)].into_iter().collect(),
        ..Cluster::default()
    };
    let web = attached("default", "web", &["web.example.org"], "default", "test");
    let t = translate(
        Kind::HttpRoute,
        &web,
        &cluster(gateway("default", "test", vec![lis("HTTP")], &[])),
        &opts(),
    );
    assert!(t.waiting_for_load_balancer && t.endpoints.is_empty() && t.problems.is_empty());

    let t = translate(Kind::HttpRoute, &web, &Cluster::default(), &opts());
    assert!(t.waiting_for_load_balancer && t.endpoints.is_empty() && t.problems.is_empty());
    let mut refused = web.clone();
    refused["status"]["parents"][0]["conditions"][0]["status"] = json!("False");
    let t = translate(Kind::HttpRoute, &refused, &Cluster::default(), &opts());
    assert!(!t.waiting_for_load_balancer);

    let lb = gateway("default", "test", vec![lis("HTTP")], &[]).with(
        "/status/addresses",
        json!([{"type": "Hostname", "value": "lb.example.net"}]),
    );
    let t = translate(Kind::HttpRoute, &web, &cluster(lb), &opts());
    assert_eq!(
        t.endpoints,
        vec![Endpoint {
            record_type: "CNAME".into(),
            ..a("web.example.org", &["lb.example.net"])
        }]
    );

    let bad_target = gateway("default", "test", vec![lis("HTTP")], &["1.2.3.4"]).with(
        "/metadata/annotations",
        json!({TARGET: "lb.example.net:443"}),
    );
    let t = translate(Kind::HttpRoute, &web, &cluster(bad_target), &opts());
    assert_eq!(
        t.problems[0].field,
        "Gateway default/test metadata.annotations[\"external-dns.kubernetes.io/target\"]"
    );

    let dotted = web.clone().with(
        "/metadata/annotations",
        json!({HOSTNAME: "www.example.org."}),
    );
    let t = translate(
        Kind::HttpRoute,
        &dotted,
        &cluster(gateway("default", "test", vec![lis("HTTP")], &["1.2.3.4"])),
        &opts(),
    );
    assert_eq!(
        normalised(t.endpoints),
        normalised(vec![
            a("web.example.org", &["1.2.3.4"]),
            a("www.example.org", &["1.2.3.4"])
        ])
    );

    let ip_host = web
        .clone()
        .with("/metadata/annotations", json!({HOSTNAME: "10.0.0.1"}));
    let t = translate(
        Kind::HttpRoute,
        &ip_host,
        &cluster(gateway("default", "test", vec![lis("HTTP")], &["1.2.3.4"])),
        &opts(),
    );
    assert_eq!(
        t.problems[0].field,
        "metadata.annotations[\"external-dns.kubernetes.io/hostname\"]"
    );
}

// Upstream cases NOT ported, and why:
// - TestGatewayHTTPRouteSourceEndpoints/RouteNamespace: the routes' namespace is chosen
//   by the watch (the source's `namespaces`), not by the translation.
// - TestGatewayHTTPRouteSourceEndpoints/RouteLabelFilter: the label selector goes to the
//   API server's list/watch (`label_selector`).
// - The `logExpectations` of the ported cases: dnsplane reports through `Translation`
//   (problems, skipped), not log lines.
// - TestGatewayHTTPRouteSource_RouteInformerTransform, _InformerTransform and the
//   other kinds' _InformerTransform: informer plumbing dnsplane has not.
// - gateway_listenerset_test.go: ListenerSet parents need `--gateway-listener-sets`
//   (experimental in v0.22); dnsplane treats them as external-dns does without the
//   flag (not found).
