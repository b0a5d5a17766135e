//! A Kubernetes Service → the endpoints external-dns v0.22's service source
//! (`source/service.go`) publishes for it, one object at a time.
//!
//! - [`names`], hostname and target checks (where external-dns skips silently,
//!   dnsplane refuses the object with a [`Problem`]);
//! - [`nodes`], NodePort targets and SRV records;
//! - [`headless`], headless ClusterIP services (one record per ready endpoint);
//! - [`template`], the `--fqdn-template` subset of Go's `text/template`.
//!
//! Records of several Services that share a name are merged by the source with
//! [`merge_endpoints`], as external-dns's `Endpoints` does.
use super::annotations::{self, Annotations, Selector};
use super::{Cluster, Endpoint, Options, Problem, Translation};
use serde_json::Value;
use std::collections::BTreeMap;

mod headless;
pub mod names;
mod nodes;
pub mod template;

#[cfg(test)]
mod tests;

pub use template::check_template;

/// The service types external-dns knows (`knownServiceTypes`).
pub const SERVICE_TYPES: [&str; 4] = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];

/// Where the `--fqdn-template` problems stand.
const TEMPLATE_FIELD: &str = "fqdn_template";

/// The endpoints of one Service (external-dns: `serviceSource.Endpoints` for one
/// service: `endpoints`, then `CombineWithEndpoints` with `endpointsFromTemplate`, then
/// the merge).
pub fn translate(object: &Value, cluster: &Cluster, options: &Options) -> Translation {
    let svc = Service::new(object, cluster, options);
    let ann = svc.ann;
    // The informer's index conditions: annotation filter, service type, controller.
    if let Some(filter) = options.annotation_filter.as_deref() {
        match Selector::parse(filter) {
            Ok(sel) if !sel.matches(|k| ann.raw(k)) => {
                return Translation::skipped(format!(
                    "annotations do not match the annotation filter {filter:?}"
                ));
            }
            Ok(_) => {}
            Err(e) => {
                return Translation::refused_one(Problem {
                    field: "annotation_filter".into(),
                    message: format!("{filter:?} is not a selector: {e}"),
                });
            }
        }
    }
    if !type_selected(&options.service_types, svc.kind) {
        return Translation::skipped(format!(
            "service type {} is not in the service type filter {:?}",
            svc.kind, options.service_types
        ));
    }
    if let Some(why) = ann.controller_mismatch() {
        return Translation::skipped(why);
    }

    let mut problems = Vec::new();
    // The names the object asks for, checked before anything is built.
    let hostnames = if options.ignore_hostname_annotation {
        (Vec::new(), Vec::new())
    } else {
        (
            checked(&ann, annotations::HOSTNAME, &mut problems),
            checked(&ann, annotations::INTERNAL_HOSTNAME, &mut problems),
        )
    };
    let targets = names::target_annotation(&ann, &mut problems);
    let ttl = ann.ttl();
    let (provider_specific, set_identifier) = ann.provider_specific();
    let meta = Meta {
        ttl: ttl.clone().ok().flatten(),
        provider_specific,
        set_identifier,
        targets,
    };
    // serviceSource.endpoints: the annotations' names.
    let mut endpoints = Vec::new();
    if problems.is_empty() {
        for host in &hostnames.0 {
            endpoints.extend(svc.generate(host, &meta, false));
        }
        for host in &hostnames.1 {
            endpoints.extend(svc.generate(host, &meta, true));
        }
    }
    // Engine.CombineWithEndpoints: the template's names when the annotations gave no
    // endpoint, or always with --combine-fqdn-annotation (the template is not run
    // otherwise, so it cannot fail then).
    let mut template_names = Vec::new();
    if let Some(t) = options
        .fqdn_template
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        && (options.combine_fqdn_annotation || endpoints.is_empty())
    {
        template_names = template_names_of(t, object, &mut problems);
        if problems.is_empty() {
            for host in &template_names {
                endpoints.extend(svc.generate(host, &meta, false));
            }
        }
    }
    // A TTL nobody uses is no reason to refuse an object; one that would be used is.
    let names_external = !hostnames.0.is_empty() || !template_names.is_empty();
    if let Err(p) = ttl
        && (names_external || !hostnames.1.is_empty())
    {
        problems.push(p);
    }
    if !problems.is_empty() {
        return Translation {
            problems,
            ..Translation::default()
        };
    }
    // Names that want the load balancer's address, and no address: hold, do not
    // delete (a controller restart empties `status.loadBalancer` for a while).
    let waiting = names_external && svc.waits_for_load_balancer(&meta);
    let skipped = if endpoints.is_empty() && !waiting {
        svc.why_nothing(options, names_external || !hostnames.1.is_empty(), &meta)
    } else {
        None
    };
    Translation {
        endpoints: if waiting {
            Vec::new()
        } else {
            merge_endpoints(endpoints)
        },
        problems: Vec::new(),
        waiting_for_load_balancer: waiting,
        skipped,
        // Set by `kinds::translate`.
        reads_cluster: false,
    }
}

/// `Engine.ExecFQDN` on the Service, each name checked as the annotations' are.
fn template_names_of(template: &str, object: &Value, problems: &mut Vec<Problem>) -> Vec<String> {
    match template::exec_fqdn(template, object, "Service") {
        Ok(names) => {
            for n in &names {
                if let Err(why) = names::check_hostname(n) {
                    problems.push(Problem {
                        field: TEMPLATE_FIELD.into(),
                        message: format!("the template gives {n:?}: {why}"),
                    });
                }
            }
            names
        }
        Err(e) => {
            problems.push(Problem {
                field: TEMPLATE_FIELD.into(),
                message: format!("cannot apply the template to this Service: {e}"),
            });
            Vec::new()
        }
    }
}

/// `newServiceTypesFilter`'s check, for the config loader: every entry a known
/// service type (an empty entry, as external-dns, turns the filter off).
pub fn check_service_types(filter: &[String]) -> Result<(), String> {
    match filter
        .iter()
        .find(|t| !t.is_empty() && !SERVICE_TYPES.contains(&t.as_str()))
    {
        Some(t) => Err(format!(
            "unsupported service type {t:?}: the types are {}",
            SERVICE_TYPES.join(", ")
        )),
        None => Ok(()),
    }
}

/// `newServiceTypesFilter` + `isProcessed`: an empty filter, or one holding `""`,
/// takes every type.
fn type_selected(filter: &[String], kind: &str) -> bool {
    filter.is_empty() || filter.iter().any(|t| t.is_empty() || t == kind)
}

/// Whether the watch of Nodes exists in external-dns for this filter
/// (`isRequired(NodePort)`): without it, headless `NodeExternalIP` services give
/// nothing. Followed so that the same filter gives the same records.
fn nodes_watched(filter: &[String]) -> bool {
    type_selected(filter, "NodePort")
}

fn checked(ann: &Annotations<'_>, name: &str, problems: &mut Vec<Problem>) -> Vec<String> {
    let Some((key, value)) = ann.get(name) else {
        return Vec::new();
    };
    names::hostname_annotation(&key, value, problems)
}

/// What every endpoint of the object carries.
struct Meta {
    ttl: Option<i64>,
    provider_specific: Vec<(String, String)>,
    set_identifier: String,
    /// The `target` annotation's targets (empty: none).
    targets: Vec<String>,
}

/// One Service and what it may look at.
struct Service<'a> {
    object: &'a Value,
    ann: Annotations<'a>,
    cluster: &'a Cluster,
    options: &'a Options,
    namespace: &'a str,
    name: &'a str,
    /// `spec.type`, `ClusterIP` when absent (the API server's default).
    kind: &'a str,
}

impl<'a> Service<'a> {
    fn new(object: &'a Value, cluster: &'a Cluster, options: &'a Options) -> Service<'a> {
        let meta = &object["metadata"];
        Service {
            object,
            ann: Annotations::of(object),
            cluster,
            options,
            namespace: meta["namespace"].as_str().unwrap_or("default"),
            name: meta["name"].as_str().unwrap_or_default(),
            kind: object["spec"]["type"]
                .as_str()
                .filter(|t| !t.is_empty())
                .unwrap_or("ClusterIP"),
        }
    }

    fn spec(&self) -> &'a Value {
        &self.object["spec"]
    }

    fn is_headless(&self) -> bool {
        self.spec()["clusterIP"].as_str() == Some("None")
    }

    /// `generateEndpoints`: the endpoints of one name.
    fn generate(&self, hostname: &str, meta: &Meta, use_cluster_ip: bool) -> Vec<Endpoint> {
        let hostname = hostname.trim_end_matches('.');
        let mut endpoints = Vec::new();
        let mut targets = meta.targets.clone();
        if targets.is_empty() {
            match self.kind {
                "LoadBalancer" if use_cluster_ip => targets = self.cluster_ips(),
                "LoadBalancer" => targets = self.load_balancer_targets(),
                "ClusterIP" if self.is_headless() => {
                    endpoints.extend(headless::endpoints(self, hostname, meta.ttl));
                }
                "ClusterIP" if use_cluster_ip || self.options.publish_internal_services => {
                    targets = self.cluster_ips();
                }
                "NodePort" => {
                    targets = nodes::node_port_targets(self);
                    endpoints.extend(nodes::srv_endpoints(self, hostname, meta.ttl));
                }
                "ExternalName" => targets = self.external_name_targets(),
                _ => {}
            }
            for e in &mut endpoints {
                e.provider_specific = meta.provider_specific.clone();
                e.set_identifier = meta.set_identifier.clone();
            }
        }
        endpoints.extend(endpoints_for_hostname(hostname, &targets, meta));
        endpoints
    }

    /// Why a Service gives nothing by design (external-dns says nothing): it asks for
    /// no name, or it is a ClusterIP Service and internal Services are not published.
    /// `None` when the emptiness is the cluster's state (no ready endpoint, no node).
    fn why_nothing(&self, options: &Options, names: bool, meta: &Meta) -> Option<String> {
        if !names {
            let hostname = if options.ignore_hostname_annotation {
                "hostname annotations are ignored (ignore_hostname_annotation)"
            } else {
                "no hostname annotation"
            };
            let template = if options.fqdn_template.is_some() {
                "the fqdn template gives no name"
            } else {
                "no fqdn template"
            };
            return Some(format!("asks for no name: {hostname}, {template}"));
        }
        let internal_only = self.kind == "ClusterIP"
            && !self.is_headless()
            && meta.targets.is_empty()
            && !options.publish_internal_services
            && self.ann.get(annotations::INTERNAL_HOSTNAME).is_none();
        internal_only.then(|| {
            "a ClusterIP Service is published only with publish_internal_services, an \
             internal-hostname or a target annotation"
                .to_string()
        })
    }

    /// `extractServiceIps`: the cluster IP, none for a headless service.
    fn cluster_ips(&self) -> Vec<String> {
        match self.spec()["clusterIP"].as_str() {
            Some("None") | Some("") | None => Vec::new(),
            Some(ip) => vec![ip.to_string()],
        }
    }

    /// `spec.externalIPs`.
    fn external_ips(&self) -> Vec<String> {
        strings(&self.spec()["externalIPs"])
    }

    /// `extractServiceExternalName`: the external IPs, else `spec.externalName`.
    fn external_name_targets(&self) -> Vec<String> {
        let ips = self.external_ips();
        if !ips.is_empty() {
            return ips;
        }
        match self.spec()["externalName"].as_str() {
            Some(n) if !n.is_empty() => vec![n.to_string()],
            _ => Vec::new(),
        }
    }

    /// `extractLoadBalancerTargets` (without `--resolve-service-load-balancer-hostname`,
    /// which asks DNS and is not followed): the external IPs, else every ingress's IP
    /// and hostname.
    fn load_balancer_targets(&self) -> Vec<String> {
        let ips = self.external_ips();
        if !ips.is_empty() {
            return ips;
        }
        let mut targets = Vec::new();
        for lb in self.object["status"]["loadBalancer"]["ingress"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for key in ["ip", "hostname"] {
                if let Some(t) = lb[key].as_str().filter(|t| !t.is_empty()) {
                    targets.push(t.to_string());
                }
            }
        }
        targets
    }

    /// A LoadBalancer Service whose names have no target only because its load
    /// balancer has no address yet (or no more: a controller restart).
    fn waits_for_load_balancer(&self, meta: &Meta) -> bool {
        self.kind == "LoadBalancer"
            && meta.targets.is_empty()
            && self.load_balancer_targets().is_empty()
    }

    /// `spec.selector` as a label selector over pods (`labels.Set.AsSelector`: an
    /// empty selector takes every pod, as external-dns's lister does).
    fn selects(&self, pod: &Value) -> bool {
        let labels = &pod["metadata"]["labels"];
        self.spec()["selector"]
            .as_object()
            .into_iter()
            .flatten()
            .all(|(k, v)| labels[k].as_str() == v.as_str())
    }

    /// The pods of the Service's namespace its selector takes (`serviceSource.pods`).
    fn pods(&self) -> Vec<&'a Value> {
        let prefix = format!("{}/", self.namespace);
        self.cluster
            .read()
            .pods
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(_, p)| p)
            .filter(|p| self.selects(p))
            .collect()
    }
}

/// Strings of a JSON array (others left out).
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// external-dns's `SuitableType`: `A` for IPv4, `AAAA` for IPv6 (IPv4-mapped included),
/// `CNAME` for anything else.
pub fn suitable_type(target: &str) -> &'static str {
    match target.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => "A",
        Ok(std::net::IpAddr::V6(_)) => "AAAA",
        Err(_) => "CNAME",
    }
}

/// `endpoint.EndpointsForHostname`: one endpoint per record type (A, AAAA, CNAME), in
/// that order, trailing dots removed from the targets.
fn endpoints_for_hostname(hostname: &str, targets: &[String], meta: &Meta) -> Vec<Endpoint> {
    let mut by_type: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for t in targets {
        by_type
            .entry(suitable_type(t))
            .or_default()
            .push(t.trim_end_matches('.').to_string());
    }
    ["A", "AAAA", "CNAME"]
        .into_iter()
        .filter_map(|rt| {
            let targets = by_type.remove(rt)?;
            Some(Endpoint {
                dns_name: hostname.to_string(),
                record_type: rt.to_string(),
                targets,
                ttl: meta.ttl,
                set_identifier: meta.set_identifier.clone(),
                provider_specific: meta.provider_specific.clone(),
            })
        })
        .collect()
}

/// external-dns's merge of a service source's endpoints (`serviceSource.Endpoints`'s
/// loop, then `endpoint.MergeEndpoints`): endpoints of one name, type and set
/// identifier become one, targets sorted and deduplicated, the first one's TTL and
/// properties kept; CNAMEs are never merged (one CNAME per name), only deduplicated.
/// The result is sorted by name, then type. Across objects, pass the endpoints in
/// the order of their objects' `namespace/name` (external-dns sorts by its resource
/// label `service/<namespace>/<name>` first), so that the same object's TTL and
/// properties win every time.
pub fn merge_endpoints(endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
    // The service source's loop: key = name, type, set identifier.
    let mut merged: Vec<Endpoint> = Vec::new();
    let mut index: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for ep in endpoints {
        let key = (
            ep.dns_name.clone(),
            ep.record_type.clone(),
            ep.set_identifier.clone(),
        );
        match index.get(&key) {
            Some(&i) if ep.record_type != "CNAME" => merged[i].targets.extend(ep.targets),
            _ => {
                index.insert(key, merged.len());
                merged.push(ep);
            }
        }
    }
    // MergeEndpoints: key = name, type, set identifier, TTL (and the target of a CNAME).
    let mut out: Vec<Endpoint> = Vec::new();
    let mut index: BTreeMap<(String, String, String, Option<i64>, String), usize> = BTreeMap::new();
    for ep in merged {
        let single = matches!(ep.record_type.as_str(), "CNAME" | "DNAME");
        if single && ep.targets.is_empty() {
            continue;
        }
        let first = if single {
            ep.targets[0].clone()
        } else {
            String::new()
        };
        let key = (
            ep.dns_name.clone(),
            ep.record_type.clone(),
            ep.set_identifier.clone(),
            ep.ttl,
            first,
        );
        match index.get(&key) {
            Some(&i) => out[i].targets.extend(ep.targets),
            None => {
                index.insert(key, out.len());
                out.push(ep);
            }
        }
    }
    for ep in &mut out {
        ep.targets.sort();
        ep.targets.dedup();
    }
    out.sort();
    out
}
