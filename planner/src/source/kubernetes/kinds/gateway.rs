//! The Gateway side of a route's translation, following external-dns v0.22's
//! `source/gateway.go`: which listeners of a parent Gateway a route attaches to
//! (`matchRouteToListener`: protocol, port, `allowedRoutes`), how a route's host and a
//! listener's host intersect (`gwMatchingHost`), and the Gateway's targets
//! (`status.addresses`, or its `target` annotation).
use super::annotations::Annotations;
use super::{Kind, Problem};
use serde_json::Value;
use std::collections::BTreeMap;

/// The Gateway API group.
pub const GROUP: &str = "gateway.networking.k8s.io";

/// `gwProtocolMatches`: HTTPS is HTTP, and a TLS listener takes TCP routes.
pub fn protocol_matches(route: &str, listener: &str) -> bool {
    let norm = |p: &str| if p == "HTTPS" { "HTTP" } else { p }.to_string();
    let (a, mut b) = (norm(route), norm(listener));
    if a == "TCP" && b == "TLS" {
        b = "TCP".into();
    }
    a == b
}

/// The protocol a route kind attaches with (each kind's `Protocol()`).
pub fn route_protocol(kind: Kind) -> &'static str {
    match kind {
        Kind::GrpcRoute => "HTTPS",
        Kind::TlsRoute => "TLS",
        Kind::TcpRoute => "TCP",
        Kind::UdpRoute => "UDP",
        _ => "HTTP",
    }
}

/// `gwMatchingHost`: the most specific host both `a` and `b` cover, if any. A leading
/// `*.` matches one or more labels (not the parent itself); an empty host matches
/// anything; IP addresses and names that are not RFC 1123 match nothing.
pub fn matching_host(a: &str, b: &str) -> Option<String> {
    let mut a = canonical_host(a)?;
    let mut b = canonical_host(b)?;
    if a.is_empty() {
        return Some(b);
    }
    if b.is_empty() || a == b {
        return Some(a);
    }
    let (na, nb) = (a.len(), b.len());
    if nb < na || (na == nb && b.starts_with("*.")) {
        std::mem::swap(&mut a, &mut b);
    }
    (a.starts_with("*.") && b.ends_with(&a[1..])).then_some(b)
}

/// `gwHost`: the lower-cased host, or `None` for an IP address or a name that is not
/// RFC 1123 (a leading `*.` aside). `Some("")` for the empty host.
pub fn canonical_host(host: &str) -> Option<String> {
    if host.is_empty() {
        return Some(String::new());
    }
    if host.parse::<std::net::IpAddr>().is_ok()
        || !is_dns1123_domain(host.strip_prefix("*.").unwrap_or(host))
    {
        return None;
    }
    Some(host.to_ascii_lowercase())
}

/// `isDNS1123Domain`: 1 to 255 octets of labels of 1 to 63 letters, digits and inner
/// dashes. One trailing dot is accepted, as Go's label loop (`strings.Cut`) does.
pub fn is_dns1123_domain(s: &str) -> bool {
    if s.is_empty() || s.len() > 255 {
        return false;
    }
    let s = s.strip_suffix('.').unwrap_or(s);
    s.split('.').all(|label| {
        let b = label.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
    })
}

/// `routeIsAllowed`: the listener's `allowedRoutes` let a route of `kind` in
/// `route_namespace` attach (namespaces `Same` (the default), `All` or `Selector` over
/// the namespace's labels; `kinds`, when listed).
pub fn route_is_allowed(
    gateway_namespace: &str,
    listener: &Value,
    kind: Kind,
    route_namespace: &str,
    namespaces: &BTreeMap<String, Value>,
) -> bool {
    let allow = &listener["allowedRoutes"];
    let from = allow["namespaces"]["from"]
        .as_str()
        .filter(|f| !f.is_empty())
        .unwrap_or("Same");
    let namespace_ok = match from {
        "All" => true,
        "Same" => gateway_namespace == route_namespace,
        "Selector" => namespaces.get(route_namespace).is_some_and(|ns| {
            label_selector_matches(&allow["namespaces"]["selector"], &ns["metadata"]["labels"])
        }),
        _ => false,
    };
    if !namespace_ok {
        return false;
    }
    match allow["kinds"].as_array() {
        Some(kinds) if !kinds.is_empty() => kinds.iter().any(|gk| {
            let group = gk["group"]
                .as_str()
                .filter(|g| !g.is_empty())
                .unwrap_or(GROUP);
            group == GROUP && gk["kind"].as_str() == Some(kind.as_str())
        }),
        _ => true,
    }
}

/// A `metav1.LabelSelector` (`matchLabels`, `matchExpressions` with `In`, `NotIn`,
/// `Exists`, `DoesNotExist`) over `labels`, as `LabelSelectorAsSelector` reads it: no
/// selector selects nothing, an empty one everything, an unknown operator nothing.
pub fn label_selector_matches(selector: &Value, labels: &Value) -> bool {
    if selector.is_null() {
        return false;
    }
    let label = |k: &str| labels[k].as_str();
    let by_labels = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    let by_expressions = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e["key"].as_str().unwrap_or_default();
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match e["operator"].as_str() {
                Some("In") => label(key).is_some_and(|v| values.contains(&v)),
                Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
                Some("Exists") => label(key).is_some(),
                Some("DoesNotExist") => label(key).is_none(),
                _ => false,
            }
        });
    by_labels && by_expressions
}

/// A Gateway's targets for its routes: its `target` annotation when set
/// (`overrides`), else the values of `status.addresses` (IP or host name alike).
pub fn targets(gateway: &Value, found: &mut Vec<Problem>) -> Vec<String> {
    let key = super::object_key(gateway);
    let annotations = Annotations::of(gateway);
    let overrides = annotations.targets();
    let check = |field: String, t: &str, found: &mut Vec<Problem>| {
        if let Err(mut p) = super::for_hostname::check_target(&field, t) {
            p.field = format!("Gateway {key} {}", p.field);
            found.push(p);
        }
    };
    if !overrides.is_empty() {
        let (ann_key, _) = annotations
            .get(super::annotations::TARGET)
            .unwrap_or_default();
        for t in &overrides {
            check(Annotations::field(&ann_key), t, found);
        }
        return overrides;
    }
    let mut out = Vec::new();
    for (i, addr) in gateway["status"]["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(v) = addr["value"].as_str().filter(|v| !v.is_empty()) {
            check(format!("status.addresses[{i}].value"), v, found);
            out.push(v.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// external-dns v0.22.0 `source/gateway_test.go` TestGatewayMatchingHost, every case,
    /// both ways round as upstream checks them.
    #[test]
    fn gateway_matching_host() {
        for (desc, a, b, host) in [
            ("ipv4-rejected", "1.2.3.4", "", None),
            (
                "ipv6-rejected",
                "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
                "",
                None,
            ),
            ("empty-matches-empty", "", "", Some("")),
            (
                "empty-matches-nonempty",
                "example.net",
                "",
                Some("example.net"),
            ),
            (
                "simple-match",
                "example.net",
                "example.net",
                Some("example.net"),
            ),
            (
                "wildcard-matches-longer",
                "*.example.net",
                "test.example.net",
                Some("test.example.net"),
            ),
            (
                "wildcard-matches-equal-length",
                "*.example.net",
                "a.example.net",
                Some("a.example.net"),
            ),
            (
                "wildcard-matches-multiple-subdomains",
                "*.example.net",
                "foo.bar.test.example.net",
                Some("foo.bar.test.example.net"),
            ),
            (
                "wildcard-doesnt-match-parent",
                "*.example.net",
                "example.net",
                None,
            ),
            (
                "wildcard-must-be-complete-label",
                "*example.net",
                "test.example.net",
                None,
            ),
        ] {
            let want = host.map(str::to_string);
            assert_eq!(matching_host(a, b), want, "{desc}");
            assert_eq!(matching_host(b, a), want, "{desc} (swapped)");
        }
    }

    /// TestGatewayMatchingProtocol, every case.
    #[test]
    fn gateway_matching_protocol() {
        for (route, lis, ok) in [
            ("HTTP", "HTTPS", true),
            ("TCP", "HTTPS", false),
            ("TLS", "TLS", true),
            ("TCP", "TLS", true),
            ("TLS", "TCP", false),
        ] {
            assert_eq!(protocol_matches(route, lis), ok, "{route} on {lis}");
        }
    }

    /// Not upstream cases: `allowedRoutes.kinds` and a selector's `matchExpressions`.
    #[test]
    fn allowed_routes_kinds_and_selectors() {
        use serde_json::json;
        let namespaces: BTreeMap<String, Value> = [
            (
                "apps".to_string(),
                json!({"metadata": {"name": "apps", "labels": {"tier": "web"}}}),
            ),
            ("ops".to_string(), json!({"metadata": {"name": "ops"}})),
        ]
        .into_iter()
        .collect();
        let grpc_only = json!({"allowedRoutes": {
            "namespaces": {"from": "All"},
            "kinds": [{"kind": "GRPCRoute"}],
        }});
        assert!(route_is_allowed(
            "gw",
            &grpc_only,
            Kind::GrpcRoute,
            "apps",
            &namespaces
        ));
        assert!(!route_is_allowed(
            "gw",
            &grpc_only,
            Kind::HttpRoute,
            "apps",
            &namespaces
        ));
        let other_group = json!({"allowedRoutes": {
            "namespaces": {"from": "All"},
            "kinds": [{"group": "example.com", "kind": "HTTPRoute"}],
        }});
        assert!(!route_is_allowed(
            "gw",
            &other_group,
            Kind::HttpRoute,
            "apps",
            &namespaces
        ));
        let selector = |expr: Value| json!({"allowedRoutes": {"namespaces": {"from": "Selector", "selector": {"matchExpressions": [expr]}}}});
        let in_web = selector(json!({"key": "tier", "operator": "In", "values": ["web", "api"]}));
        assert!(route_is_allowed(
            "gw",
            &in_web,
            Kind::HttpRoute,
            "apps",
            &namespaces
        ));
        assert!(!route_is_allowed(
            "gw",
            &in_web,
            Kind::HttpRoute,
            "ops",
            &namespaces
        ));
        let no_tier = selector(json!({"key": "tier", "operator": "DoesNotExist"}));
        assert!(route_is_allowed(
            "gw",
            &no_tier,
            Kind::HttpRoute,
            "ops",
            &namespaces
        ));
        assert!(!route_is_allowed(
            "gw",
            &no_tier,
            Kind::HttpRoute,
            "unknown",
            &namespaces
        ));
        let unknown_from = json!({"allowedRoutes": {"namespaces": {"from": "Nowhere"}}});
        assert!(!route_is_allowed(
            "apps",
            &unknown_from,
            Kind::HttpRoute,
            "apps",
            &namespaces
        ));
        assert!(route_is_allowed(
            "apps",
            &json!({}),
            Kind::HttpRoute,
            "apps",
            &namespaces
        ));
        assert!(!route_is_allowed(
            "gw",
            &json!({}),
            Kind::HttpRoute,
            "apps",
            &namespaces
        ));
    }

    /// TestIsDNS1123Domain, every case.
    #[test]
    fn is_dns1123_domain_cases() {
        let label64 = format!("{}.example.net", "x".repeat(64));
        let too_long = format!("{}example.net", "testing.".repeat(256 / 8));
        for (desc, input, ok) in [
            ("empty", "", false),
            ("label-too-long", label64.as_str(), false),
            ("domain-too-long", too_long.as_str(), false),
            ("hostname", "example", true),
            ("domain", "example.net", true),
            ("subdomain", "test.example.net", true),
            ("dashes", "test-with-dash.example.net", true),
            ("dash-prefix", "-dash-prefix.example.net", false),
            ("dash-suffix", "dash-suffix-.example.net", false),
            ("underscore", "under_score.example.net", false),
            ("plus", "pl+us.example.net", false),
            ("brackets", "bra[k]ets.example.net", false),
            ("parens", "pa[re]ns.example.net", false),
            ("wild", "*.example.net", false),
            // Not upstream cases: Go's loop accepts one trailing dot, not two.
            ("trailing-dot", "example.net.", true),
            ("two-trailing-dots", "example.net..", false),
            ("dot", ".", false),
        ] {
            assert_eq!(is_dns1123_domain(input), ok, "{desc}");
        }
    }
}
