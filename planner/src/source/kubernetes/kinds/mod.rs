//! From the objects Kubernetes users already have (Services, Ingresses, Gateway API
//! routes) to the endpoints external-dns v0.22 would publish for them: pure functions
//! of an object, the cluster objects it refers to ([`Cluster`]) and the source's
//! options ([`Options`]), so that external-dns's own source tests can be ported case by
//! case without an API server.
//!
//! The result is an external-dns endpoint list ([`Endpoint`]); the source turns it into
//! a DNSEndpoint spec and hands it to the shared manifest parser, so names, targets and
//! TTLs are validated and normalised exactly as for DNSEndpoint objects.
//!
//! Where external-dns logs a warning and goes on with a default (a TTL of "abc" becomes
//! "no TTL"), dnsplane refuses the object instead ([`Problem`]): the object keeps its
//! last accepted records and is told why, because publishing a record with a value its
//! owner did not ask for is a change nobody reviewed.
//!
//! - [`annotations`]: external-dns's annotations (both the GA prefix
//!   `external-dns.kubernetes.io/` and the older `external-dns.alpha.kubernetes.io/`);
//! - [`ingress`]: Ingress; [`route`] and [`gateway`]: Gateway API routes and their
//!   parent Gateways; [`for_hostname`]: names and targets to endpoints;
//!   [`object_filter`]: annotation filter and controller; [`fqdn_template`].
//! - [`service`], Services (LoadBalancer, NodePort, ClusterIP, headless, ExternalName)
//!   and the `fqdn_template` engine ([`service::check_template`]);
use serde_json::Value;
use std::collections::BTreeMap;

pub mod annotations;
pub mod for_hostname;
pub mod fqdn_template;
pub mod gateway;
pub mod ingress;
#[cfg(test)]
mod ingress_tests;
pub mod kept;
pub mod object_filter;
pub mod route;
pub use route::route_parents;
#[cfg(test)]
mod route_tests;
pub mod service;
#[cfg(test)]
mod upstream_tests;

/// One endpoint, as external-dns's `endpoint.Endpoint` has it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Endpoint {
    /// `dnsName` (without a trailing dot, as external-dns writes it).
    pub dns_name: String,
    /// `A`, `AAAA`, `CNAME`, `SRV`, `TXT`, …
    pub record_type: String,
    /// In the order external-dns produces them.
    pub targets: Vec<String>,
    /// `recordTTL`; `None` when not configured (external-dns's 0).
    pub ttl: Option<i64>,
    /// `setIdentifier`, or empty.
    pub set_identifier: String,
    /// `providerSpecific` (name, value), in external-dns's order.
    pub provider_specific: Vec<(String, String)>,
}

/// Something in an object that cannot be read: the object keeps its last accepted
/// records and gets a Warning event naming `field`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where: `metadata.annotations["external-dns.kubernetes.io/ttl"]`,
    /// `spec.rules[0].host`.
    pub field: String,
    /// Why, naming the value: `"abc" is not a TTL (seconds, or a duration like 10m)`.
    pub message: String,
}

/// What one object asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Translation {
    pub endpoints: Vec<Endpoint>,
    /// Non-empty: the object cannot be used as it is.
    pub problems: Vec<Problem>,
    /// The object names hosts but has no targets *because its load balancer has no
    /// address* (`status.loadBalancer.ingress` empty, a Gateway without addresses): a
    /// controller restart looks like this, so the source keeps the last targets for
    /// `target_loss_grace` instead of deleting at once.
    pub waiting_for_load_balancer: bool,
    /// The object is not for this source (annotation filter, controller annotation,
    /// ingress class, service type): it gives no records, and that is not a problem.
    pub skipped: Option<String>,
    /// The translation looked at other objects ([`Cluster::read`]): it must run again
    /// when they change. Set by [`translate`].
    pub reads_cluster: bool,
}

impl Translation {
    /// Not for this source (a filter, another controller's): no records, no problem.
    pub fn skipped(why: String) -> Translation {
        Translation {
            skipped: Some(why),
            ..Translation::default()
        }
    }

    /// Cannot be used as it is: the object keeps its last accepted records.
    pub fn refused(problems: Vec<Problem>) -> Translation {
        Translation {
            problems,
            ..Translation::default()
        }
    }

    pub fn refused_one(problem: Problem) -> Translation {
        Translation::refused(vec![problem])
    }
}

/// The source's options, external-dns's flags of the same meaning.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--annotation-filter`: a label-selector over annotations (`k=v`, `k!=v`, `k`,
    /// `!k`, `k in (a,b)`, `k notin (a,b)`, comma-separated).
    pub annotation_filter: Option<String>,
    /// `--fqdn-template`: names for objects without a hostname annotation (several,
    /// comma-separated, as external-dns).
    pub fqdn_template: Option<String>,
    /// `--combine-fqdn-annotation`: the template's names are added to the annotation's.
    pub combine_fqdn_annotation: bool,
    /// `--ignore-hostname-annotation`.
    pub ignore_hostname_annotation: bool,
    /// `--publish-internal-services`: ClusterIP services get records.
    pub publish_internal_services: bool,
    /// `--publish-host-ip`: headless services publish the pods' host IPs.
    pub publish_host_ip: bool,
    /// `--always-publish-not-ready-addresses`.
    pub always_publish_not_ready_addresses: bool,
    /// `--service-type-filter`: empty, every type.
    pub service_types: Vec<String>,
    /// `--expose-internal-ipv6`.
    pub expose_internal_ipv6: bool,
    /// `--exclude-unschedulable` (NodePort: nodes marked unschedulable are left out).
    pub exclude_unschedulable: bool,
    /// `--ingress-class`: empty, every class.
    pub ingress_classes: Vec<String>,
    /// `--ignore-ingress-tls-spec`.
    pub ignore_ingress_tls_spec: bool,
    /// `--ignore-ingress-rules-spec`.
    pub ignore_ingress_rules_spec: bool,
    /// `--gateway-name`: only routes attached to Gateways of this name.
    pub gateway_name: Option<String>,
    /// `--gateway-namespace`: only Gateways in this namespace.
    pub gateway_namespace: Option<String>,
    /// `--gateway-label-filter`: a label selector over Gateways.
    pub gateway_label_filter: Option<String>,
}

/// The other objects a translation may look at, by `namespace/name` (cluster-scoped
/// ones by name). Kept by the source from its own watches.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// Nodes (NodePort services, headless services with `--publish-host-ip`).
    pub nodes: BTreeMap<String, Value>,
    /// EndpointSlices by the service they belong to (`kubernetes.io/service-name`):
    /// `namespace/service` → slices.
    pub endpoint_slices: BTreeMap<String, Vec<Value>>,
    /// Pods (headless services: hostnames, host IPs).
    pub pods: BTreeMap<String, Value>,
    /// Gateways (`gateway.networking.k8s.io`), by `namespace/name`.
    pub gateways: BTreeMap<String, Value>,
    /// Namespaces, by name: a listener's `allowedRoutes.namespaces.from: Selector`
    /// matches the labels of the route's namespace.
    pub namespaces: BTreeMap<String, Value>,
    /// Whether the translation under way has looked at any of the above ([`read`]).
    ///
    /// [`read`]: Cluster::read
    looked: std::cell::Cell<bool>,
}

impl Cluster {
    /// The cluster objects, for a translation that reads them: every read goes through
    /// here, so that [`translate`] can tell whether an object's records depend on
    /// other objects (the source then keeps it, to translate it again when they
    /// change) or on itself alone (it is not kept).
    pub fn read(&self) -> &Cluster {
        self.looked.set(true);
        self
    }
}

/// The kinds of object a Kubernetes source can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Kind {
    #[default]
    DnsEndpoint,
    Service,
    Ingress,
    HttpRoute,
    GrpcRoute,
    TlsRoute,
    TcpRoute,
    UdpRoute,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::DnsEndpoint,
        Kind::Service,
        Kind::Ingress,
        Kind::HttpRoute,
        Kind::GrpcRoute,
        Kind::TlsRoute,
        Kind::TcpRoute,
        Kind::UdpRoute,
    ];

    /// The name in `kinds = [...]`, events and status: the API's `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::DnsEndpoint => "DNSEndpoint",
            Kind::Service => "Service",
            Kind::Ingress => "Ingress",
            Kind::HttpRoute => "HTTPRoute",
            Kind::GrpcRoute => "GRPCRoute",
            Kind::TlsRoute => "TLSRoute",
            Kind::TcpRoute => "TCPRoute",
            Kind::UdpRoute => "UDPRoute",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn is_route(self) -> bool {
        matches!(
            self,
            Kind::HttpRoute | Kind::GrpcRoute | Kind::TlsRoute | Kind::TcpRoute | Kind::UdpRoute
        )
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The endpoints of one object of `kind` (not DNSEndpoint: that one is parsed as a
/// manifest).
pub fn translate(kind: Kind, object: &Value, cluster: &Cluster, options: &Options) -> Translation {
    cluster.looked.set(false);
    let mut t = match kind {
        Kind::DnsEndpoint => Translation::default(),
        Kind::Ingress => ingress::translate(object, cluster, options),
        k if k.is_route() => route::translate(k, object, cluster, options),
        Kind::Service => service::translate(object, cluster, options),
        _ => Translation {
            skipped: Some(format!("{kind} is not read yet")),
            ..Translation::default()
        },
    };
    t.reads_cluster = cluster.looked.get();
    t
}

/// `metadata.namespace/metadata.name` of an object (`default` when it has none).
pub fn object_key(object: &Value) -> String {
    let meta = &object["metadata"];
    let ns = meta["namespace"].as_str().unwrap_or("default");
    let name = meta["name"].as_str().unwrap_or_default();
    format!("{ns}/{name}")
}
