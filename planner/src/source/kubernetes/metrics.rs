//! The Kubernetes source's metric families (registered beside the planner's own, only
//! when a Kubernetes source is configured; listed in `docs/observability.md`).
//!
//! | metric | type | labels | set by |
//! |---|---|---|---|
//! | `dnsplane_planner_kubernetes_objects` | gauge | `kind` (`Service` `Ingress` `HTTPRoute` …), `outcome` (`Published` `Conflict` `Invalid` `Rejected` `Held` `Pending`) | each events round: the objects now in each outcome |
//! | `dnsplane_planner_kubernetes_events` | counter | `kind`, `reason` | every Event written to an object |
use super::kinds::Kind;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Counts per (kind, verdict reason): the objects now in each, from an events round.
pub type Tally = std::collections::BTreeMap<(Kind, &'static str), usize>;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ObjectLabels {
    kind: String,
    outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabels {
    kind: String,
    reason: String,
}

/// The outcomes the gauge always has (0 when none), so that an alert on one never
/// sees it vanish.
pub const OUTCOMES: [&str; 6] = [
    "Published",
    "Conflict",
    "Invalid",
    "Rejected",
    "Held",
    "Pending",
];

#[derive(Debug, Clone, Default)]
pub struct KubeMetrics {
    objects: Family<ObjectLabels, Gauge>,
    events: Family<EventLabels, Counter>,
}

impl KubeMetrics {
    pub fn register(registry: &mut Registry) -> KubeMetrics {
        let m = KubeMetrics::default();
        registry.register(
            "dnsplane_planner_kubernetes_objects",
            "Kubernetes objects (Services, Ingresses, routes) that produce records, by kind and the outcome last told to them",
            m.objects.clone(),
        );
        registry.register(
            "dnsplane_planner_kubernetes_events",
            "Kubernetes Events written to the objects that produce records, by kind and reason",
            m.events.clone(),
        );
        m
    }

    /// The objects per kind and outcome, from an events round (`kinds`: those
    /// configured, each shown with every outcome).
    pub fn set_objects(&self, kinds: &[Kind], tally: &Tally) {
        for kind in kinds.iter().filter(|k| **k != Kind::DnsEndpoint) {
            for outcome in OUTCOMES {
                let n = tally.get(&(*kind, outcome)).copied().unwrap_or(0);
                self.objects
                    .get_or_create(&ObjectLabels {
                        kind: kind.as_str().into(),
                        outcome: outcome.into(),
                    })
                    .set(n as i64);
            }
        }
    }

    /// An event of `reason` was written to an object of `kind`.
    pub fn event(&self, kind: Kind, reason: &str) {
        self.events
            .get_or_create(&EventLabels {
                kind: kind.as_str().into(),
                reason: reason.into(),
            })
            .inc();
    }
}
