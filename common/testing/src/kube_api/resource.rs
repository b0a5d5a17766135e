//! The resources the fake serves, each as a real API server names it: group, version,
//! plural, kind, scope. A test names one by [`Resource`]; the HTTP side finds one by
//! its path (`/api/v1/…` for the core group, `/apis/{group}/{version}/…` for the rest).

/// A resource of the fake API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    /// `externaldns.k8s.io/v1alpha1` `dnsendpoints`.
    DnsEndpoint,
    /// core `v1` `services`.
    Service,
    /// `discovery.k8s.io/v1` `endpointslices`: a headless Service's endpoints.
    EndpointSlice,
    /// core `v1` `pods` (their hostnames, for headless Services).
    Pod,
    /// core `v1` `nodes` (cluster-scoped): NodePort Services' addresses.
    Node,
    /// core `v1` `namespaces` (cluster-scoped): their labels, for a Gateway listener's
    /// `allowedRoutes.namespaces.from: Selector`.
    Namespace,
    /// `networking.k8s.io/v1` `ingresses`.
    Ingress,
    /// `gateway.networking.k8s.io/v1` `gateways`.
    Gateway,
    /// `gateway.networking.k8s.io/v1` `httproutes`.
    HttpRoute,
    /// `gateway.networking.k8s.io/v1` `grpcroutes`.
    GrpcRoute,
    /// `gateway.networking.k8s.io/v1` `tlsroutes` (standard channel since v1.5).
    TlsRoute,
    /// `gateway.networking.k8s.io/v1` `tcproutes`.
    TcpRoute,
    /// `gateway.networking.k8s.io/v1` `udproutes`.
    UdpRoute,
    /// core `v1` `events`: what `kubectl describe` shows.
    Event,
    /// `events.k8s.io/v1` `events`: the same objects as [`Resource::Event`] (one
    /// storage, two shapes, as in a real API server), what kube-rs's `Recorder` writes.
    EventV1,
}

/// What a real API server's discovery says of a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceInfo {
    /// `""` for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
}

impl Resource {
    /// Every resource served, in discovery order.
    pub const ALL: [Resource; 15] = [
        Resource::DnsEndpoint,
        Resource::Service,
        Resource::EndpointSlice,
        Resource::Pod,
        Resource::Node,
        Resource::Namespace,
        Resource::Ingress,
        Resource::Gateway,
        Resource::HttpRoute,
        Resource::GrpcRoute,
        Resource::TlsRoute,
        Resource::TcpRoute,
        Resource::UdpRoute,
        Resource::Event,
        Resource::EventV1,
    ];

    pub const fn info(self) -> ResourceInfo {
        const fn r(
            group: &'static str,
            version: &'static str,
            plural: &'static str,
            singular: &'static str,
            kind: &'static str,
            namespaced: bool,
            short_names: &'static [&'static str],
        ) -> ResourceInfo {
            ResourceInfo {
                group,
                version,
                plural,
                singular,
                kind,
                namespaced,
                short_names,
            }
        }
        const GW: &str = "gateway.networking.k8s.io";
        match self {
            Resource::DnsEndpoint => r(
                "externaldns.k8s.io",
                "v1alpha1",
                "dnsendpoints",
                "dnsendpoint",
                "DNSEndpoint",
                true,
                &[],
            ),
            Resource::Service => r("", "v1", "services", "service", "Service", true, &["svc"]),
            Resource::EndpointSlice => r(
                "discovery.k8s.io",
                "v1",
                "endpointslices",
                "endpointslice",
                "EndpointSlice",
                true,
                &[],
            ),
            Resource::Pod => r("", "v1", "pods", "pod", "Pod", true, &["po"]),
            Resource::Node => r("", "v1", "nodes", "node", "Node", false, &["no"]),
            Resource::Namespace => r(
                "",
                "v1",
                "namespaces",
                "namespace",
                "Namespace",
                false,
                &["ns"],
            ),
            Resource::Ingress => r(
                "networking.k8s.io",
                "v1",
                "ingresses",
                "ingress",
                "Ingress",
                true,
                &["ing"],
            ),
            Resource::Gateway => r(GW, "v1", "gateways", "gateway", "Gateway", true, &["gtw"]),
            Resource::HttpRoute => r(GW, "v1", "httproutes", "httproute", "HTTPRoute", true, &[]),
            Resource::GrpcRoute => r(GW, "v1", "grpcroutes", "grpcroute", "GRPCRoute", true, &[]),
            Resource::TlsRoute => r(GW, "v1", "tlsroutes", "tlsroute", "TLSRoute", true, &[]),
            Resource::TcpRoute => r(GW, "v1", "tcproutes", "tcproute", "TCPRoute", true, &[]),
            Resource::UdpRoute => r(GW, "v1", "udproutes", "udproute", "UDPRoute", true, &[]),
            Resource::Event => r("", "v1", "events", "event", "Event", true, &["ev"]),
            Resource::EventV1 => r(
                "events.k8s.io",
                "v1",
                "events",
                "event",
                "Event",
                true,
                &["ev"],
            ),
        }
    }

    /// `v1` or `group/version`: the objects' `apiVersion`.
    pub fn api_version(self) -> String {
        let i = self.info();
        if i.group.is_empty() {
            i.version.to_string()
        } else {
            format!("{}/{}", i.group, i.version)
        }
    }

    /// `/api/v1` or `/apis/{group}/{version}`: where the resource's paths start.
    pub fn prefix(self) -> String {
        let i = self.info();
        if i.group.is_empty() {
            format!("/api/{}", i.version)
        } else {
            format!("/apis/{}/{}", i.group, i.version)
        }
    }

    /// The resource of a path's group, version and plural (`""` for the core group).
    pub fn find(group: &str, version: &str, plural: &str) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| {
            let i = r.info();
            (i.group, i.version, i.plural) == (group, version, plural)
        })
    }

    /// The resource whose objects are stored: both Event shapes share one storage.
    pub fn storage(self) -> Resource {
        match self {
            Resource::EventV1 => Resource::Event,
            r => r,
        }
    }

    /// A kind compiled into the API server (not a CRD's): its list items come without
    /// `apiVersion` and `kind`, as a real server's do.
    pub fn is_builtin(self) -> bool {
        !matches!(
            self.info().group,
            "externaldns.k8s.io" | "gateway.networking.k8s.io"
        )
    }

    /// `services` or `ingresses.networking.k8s.io`: the name RBAC messages use.
    pub fn group_resource(self) -> String {
        let i = self.info();
        if i.group.is_empty() {
            i.plural.to_string()
        } else {
            format!("{}.{}", i.plural, i.group)
        }
    }
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.group_resource())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_find_their_resources() {
        for r in Resource::ALL {
            let i = r.info();
            assert_eq!(Resource::find(i.group, i.version, i.plural), Some(r));
        }
        assert_eq!(Resource::Service.prefix(), "/api/v1");
        assert_eq!(
            Resource::HttpRoute.prefix(),
            "/apis/gateway.networking.k8s.io/v1"
        );
        assert_eq!(
            Resource::HttpRoute.api_version(),
            "gateway.networking.k8s.io/v1"
        );
        assert_eq!(Resource::Ingress.to_string(), "ingresses.networking.k8s.io");
        assert_eq!(Resource::find("", "v1", "configmaps"), None);
    }
}
