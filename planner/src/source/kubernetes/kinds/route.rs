//! Gateway API routes (HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute) →
//! endpoints, following external-dns v0.22's `gatewayRouteSource.Endpoints` and its
//! `gatewayRouteResolver`: the route's hosts (`spec.hostnames`, none for TCP and UDP
//! routes; the `hostname` annotation; `--fqdn-template`; the
//! `gateway-hostname-source` annotation choosing), intersected with the hosts of the
//! listeners of every parent Gateway that accepted the route (its `status.parents[]`
//! entry has `Accepted` = True, the parent is in `spec.parentRefs`, the listener's
//! protocol, port and `allowedRoutes` let it in), the targets being the Gateway's
//! `status.addresses` (or its `target` annotation).
//!
//! Differences, each because external-dns publishes something other than asked: a bad
//! TTL is a [`Problem`] (external-dns publishes without a TTL); a host that cannot be
//! a DNS name (an IP address, an underscore, 64-octet label) is a problem (external-dns
//! drops it silently); an unknown `gateway-hostname-source` value is a problem
//! (external-dns falls back to publishing both kinds of host).
use super::annotations::{Annotations, GATEWAY_HOSTNAME_SOURCE, HOSTNAME, Selector};
use super::for_hostname::{Shared, check_host, endpoints_for_hostname, merge_endpoints};
use super::gateway::{self, GROUP};
use super::{Cluster, Kind, Options, Problem, Translation, fqdn_template, object_filter};
use serde_json::Value;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

/// `gateway-hostname-source` values.
pub const ANNOTATION_ONLY: &str = "annotation-only";
pub const DEFINED_HOSTS_ONLY: &str = "defined-hosts-only";

/// The `namespace/name` of every Gateway `route` names in `spec.parentRefs`, so that a
/// Gateway's change re-translates its routes.
pub fn route_parents(route: &Value) -> Vec<String> {
    let route_ns = namespace_of(route);
    let mut out = BTreeSet::new();
    for r in route["spec"]["parentRefs"].as_array().into_iter().flatten() {
        if str_or(&r["group"], GROUP) == GROUP && str_or(&r["kind"], "Gateway") == "Gateway" {
            let name = r["name"].as_str().unwrap_or_default();
            out.insert(format!("{}/{name}", str_or(&r["namespace"], route_ns)));
        }
    }
    out.into_iter().collect()
}

/// The endpoints of one route of `kind`.
pub fn translate(kind: Kind, route: &Value, cluster: &Cluster, options: &Options) -> Translation {
    match object_filter::skip_reason(route, options) {
        Err(p) => return Translation::refused(vec![p]),
        Ok(Some(why)) => return Translation::skipped(why),
        Ok(None) => {}
    }
    let mut found = Vec::new();
    let gateway_labels = match options.gateway_label_filter.as_deref().map(Selector::parse) {
        Some(Err(e)) => {
            found.push(Problem {
                field: "gateway_label_filter".into(),
                message: e,
            });
            None
        }
        Some(Ok(s)) => Some(s),
        None => None,
    };
    let annotations = Annotations::of(route);
    let ttl = annotations.ttl().unwrap_or_else(|p| {
        found.push(p);
        None
    });
    let (provider_specific, set_identifier) = annotations.provider_specific();
    let shared = Shared {
        ttl,
        set_identifier,
        provider_specific,
    };
    let hosts = hosts(kind, route, &annotations, options, &mut found);
    if !found.is_empty() {
        return Translation::refused(found);
    }

    let resolver = Resolver {
        kind,
        route,
        cluster,
        options,
        gateway_labels,
        missing_gateway: Cell::new(false),
    };
    let host_targets = resolver.resolve(&hosts, &mut found);
    if !found.is_empty() {
        return Translation::refused(found);
    }
    let mut endpoints = Vec::new();
    let mut waiting = false;
    for (host, targets) in &host_targets {
        waiting |= targets.is_empty();
        endpoints.extend(endpoints_for_hostname(host, targets, &shared));
    }
    // No records because a Gateway has no address yet, or is gone for now.
    waiting = endpoints.is_empty() && (waiting || resolver.missing_gateway.get());
    Translation {
        endpoints: merge_endpoints(endpoints),
        waiting_for_load_balancer: waiting,
        ..Translation::default()
    }
}

/// `gatewayRouteResolver.hosts`: the route's hosts, each with the field it came from.
/// The empty host stands for "the listener's": a route without hostnames takes its
/// listeners' (useful for HTTP and TLS routes, harmless for TCP and UDP ones).
fn hosts(
    kind: Kind,
    route: &Value,
    annotations: &Annotations,
    options: &Options,
    found: &mut Vec<Problem>,
) -> Vec<(String, String)> {
    // TCPRoute and UDPRoute have no hostnames (`Hostnames()` returns nil).
    let spec_hosts: Vec<(String, String)> = if matches!(kind, Kind::TcpRoute | Kind::UdpRoute) {
        Vec::new()
    } else {
        route["spec"]["hostnames"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(i, h)| Some((format!("spec.hostnames[{i}]"), h.as_str()?.to_string())))
            .collect()
    };
    let mut defined = spec_hosts.clone();
    if let Some(template) = options.fqdn_template.as_deref()
        && (spec_hosts.is_empty() || options.combine_fqdn_annotation)
    {
        match fqdn_template::hosts(template, route, kind.as_str()) {
            Ok(names) => defined.extend(
                names
                    .into_iter()
                    .map(|n| (fqdn_template::FIELD.to_string(), n)),
            ),
            Err(p) => found.push(p),
        }
    }
    let annotated = || -> Vec<(String, String)> {
        match (annotations.hostnames(), annotations.get(HOSTNAME)) {
            (Some(names), Some((key, _))) => {
                let field = Annotations::field(&key);
                names.into_iter().map(|n| (field.clone(), n)).collect()
            }
            _ => Vec::new(),
        }
    };
    let chosen = match annotations.get(GATEWAY_HOSTNAME_SOURCE) {
        None => {
            let mut all = defined;
            if spec_hosts.is_empty() {
                all.push((String::new(), String::new()));
            }
            if !options.ignore_hostname_annotation {
                all.extend(annotated());
            }
            all
        }
        Some((key, source)) => match source.to_ascii_lowercase().as_str() {
            ANNOTATION_ONLY if options.ignore_hostname_annotation => Vec::new(),
            ANNOTATION_ONLY => annotated(),
            DEFINED_HOSTS_ONLY => defined,
            _ => {
                found.push(Problem {
                    field: Annotations::field(&key),
                    message: format!(
                        "{source:?} is not a hostname source: {ANNOTATION_ONLY:?} or {DEFINED_HOSTS_ONLY:?}"
                    ),
                });
                Vec::new()
            }
        },
    };
    for (field, host) in &chosen {
        if host.is_empty() {
            continue;
        }
        if gateway::canonical_host(host).is_none() {
            found.push(Problem {
                field: field.clone(),
                message: format!("{host:?} is not a host name a Gateway listener can match"),
            });
        } else if let Err(p) = check_host(field, host.strip_prefix("*.").unwrap_or(host)) {
            found.push(p);
        }
    }
    chosen.into_iter().map(|(f, h)| (h, f)).collect()
}

/// One parent, as `resolveParentRef` accepts it.
struct Parent<'a> {
    gateway: &'a Value,
    section: String,
    port: Option<i64>,
}

struct Resolver<'a> {
    kind: Kind,
    route: &'a Value,
    cluster: &'a Cluster,
    options: &'a Options,
    gateway_labels: Option<Selector>,
    /// An accepted parent's Gateway is not in the cluster.
    missing_gateway: Cell<bool>,
}

impl Resolver<'_> {
    /// `gatewayRouteResolver.resolve`: every host the route gets, with its targets
    /// (sorted, deduplicated: a Gateway matching twice gives its addresses once).
    fn resolve(
        &self,
        hosts: &[(String, String)],
        found: &mut Vec<Problem>,
    ) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let parent_refs = self.route["spec"]["parentRefs"].as_array();
        if parent_refs.is_none_or(|r| r.is_empty()) {
            return out;
        }
        for status in self.route["status"]["parents"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let Some(parent) = self.parent(status) else {
                continue;
            };
            let targets = gateway::targets(parent.gateway, found);
            for listener in self.listeners(&parent) {
                self.match_listener(hosts, &parent, listener, &targets, &mut out);
            }
        }
        for targets in out.values_mut() {
            targets.sort();
            targets.dedup();
        }
        out
    }

    /// `resolveParentRef`: the Gateway of a `status.parents[]` entry, when the route
    /// names it in `spec.parentRefs`, it passes the Gateway filters, and its `Accepted`
    /// condition is True.
    fn parent(&self, status: &Value) -> Option<Parent<'_>> {
        let r = &status["parentRef"];
        let route_ns = namespace_of(self.route);
        let ns = str_or(&r["namespace"], route_ns);
        let name = r["name"].as_str().unwrap_or_default();
        let (group, kind) = (str_or(&r["group"], GROUP), str_or(&r["kind"], "Gateway"));
        let named = self.route["spec"]["parentRefs"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| {
                str_or(&p["group"], GROUP) == group
                    && str_or(&p["kind"], "Gateway") == kind
                    && p["name"].as_str() == Some(name)
                    && str_or(&p["namespace"], route_ns) == ns
            });
        // ListenerSet parents need `--gateway-listener-sets`, which dnsplane does not
        // read: like external-dns without it, they are not found.
        if !named || group != GROUP || kind != "Gateway" {
            return None;
        }
        let filtered_out = |filter: &Option<String>, value: &str| {
            filter
                .as_deref()
                .is_some_and(|f| !f.is_empty() && f != value)
        };
        if filtered_out(&self.options.gateway_namespace, ns)
            || filtered_out(&self.options.gateway_name, name)
        {
            return None;
        }
        let accepted = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Accepted")
            .is_some_and(|c| c["status"] == "True");
        if !accepted {
            return None;
        }
        let Some(gateway) = self.cluster.read().gateways.get(&format!("{ns}/{name}")) else {
            // Accepted by a Gateway the source does not have (deleted, or not listed
            // yet): like a load balancer without an address, not a reason to delete
            // at once.
            self.missing_gateway.set(true);
            return None;
        };
        if let Some(sel) = &self.gateway_labels {
            let labels = &gateway["metadata"]["labels"];
            if !sel.matches(|k| labels[k].as_str()) {
                return None;
            }
        }
        Some(Parent {
            gateway,
            section: str_or(&r["sectionName"], "").to_string(),
            port: r["port"].as_i64(),
        })
    }

    /// The listeners a parent's `sectionName` picks (all of them without one).
    fn listeners<'g>(&self, parent: &Parent<'g>) -> Vec<&'g Value> {
        parent.gateway["spec"]["listeners"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| parent.section.is_empty() || l["name"].as_str() == Some(&parent.section))
            .collect()
    }

    /// `matchRouteToListener`: each route host that intersects the listener's host
    /// gets the Gateway's targets.
    fn match_listener(
        &self,
        hosts: &[(String, String)],
        parent: &Parent,
        listener: &Value,
        targets: &[String],
        out: &mut BTreeMap<String, Vec<String>>,
    ) {
        let protocol = listener["protocol"].as_str().unwrap_or_default();
        if !gateway::protocol_matches(gateway::route_protocol(self.kind), protocol) {
            return;
        }
        if parent
            .port
            .is_some_and(|p| Some(p) != listener["port"].as_i64())
        {
            return;
        }
        let gateway_ns = namespace_of(parent.gateway);
        let route_ns = namespace_of(self.route);
        if !gateway::route_is_allowed(
            gateway_ns,
            listener,
            self.kind,
            route_ns,
            &self.cluster.read().namespaces,
        ) {
            return;
        }
        let listener_host = listener["hostname"].as_str().unwrap_or_default();
        for (host, _) in hosts {
            if listener_host.is_empty() && host.is_empty() {
                continue;
            }
            if let Some(h) = gateway::matching_host(listener_host, host) {
                out.entry(h).or_default().extend(targets.iter().cloned());
            }
        }
    }
}

fn namespace_of(object: &Value) -> &str {
    object["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
}

/// external-dns's `strVal`: the string, or `default` when absent or empty.
fn str_or<'a>(v: &'a Value, default: &'a str) -> &'a str {
    v.as_str().filter(|s| !s.is_empty()).unwrap_or(default)
}
