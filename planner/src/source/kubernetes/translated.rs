//! The objects of the kinds dnsplane translates (Services, Ingresses, Gateway API
//! routes) and the cluster objects their records depend on (Nodes, EndpointSlices,
//! Pods, Gateways): pure and synchronous, like [`super::objects`], so that every rule
//! is tested without a server.
//!
//! An object whose records depend on other objects (a route on its Gateways, a
//! NodePort Service on the Nodes: its translation read them, [`Cluster::read`]), or
//! whose load balancer is in its grace, is kept as it was last seen, reduced to what
//! its translation reads ([`kinds::kept`]) and held as compact JSON text, so that it
//! can be translated again when they change: a Gateway's addresses change every route
//! attached to it. Any other object (a LoadBalancer Service, an Ingress) changes only
//! with a new version of itself: it is not kept, its records are.
//!
//! What an object asks for ([`super::kinds::translate`]) is then accepted like a
//! DNSEndpoint's spec ([`Objects`]): names, targets and TTLs validated by the shared
//! parser, each object keeping its last accepted records when it cannot be read.
//!
//! **A load balancer that loses its address does not delete.** A controller restart
//! empties `status.loadBalancer` for a moment; external-dns deletes the records at once.
//! Here an object whose load balancer has no address keeps its last records for
//! `grace` ([`Translated::next_deadline`] says when to look again), and says so.
use super::kinds::{self, Cluster, Kind, Options, Translation};
use super::objects::{ObjectName, Objects, compact};
use crate::source::{Snapshot, SourceError};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The cluster objects translations look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dependency {
    Node,
    EndpointSlice,
    Pod,
    Gateway,
    /// A listener's `allowedRoutes.namespaces.from: Selector` reads the labels of the
    /// route's namespace.
    Namespace,
}

impl Dependency {
    pub fn as_str(self) -> &'static str {
        match self {
            Dependency::Node => "Node",
            Dependency::EndpointSlice => "EndpointSlice",
            Dependency::Pod => "Pod",
            Dependency::Gateway => "Gateway",
            Dependency::Namespace => "Namespace",
        }
    }

    /// The dependencies the translations of `kinds` need listed before they can be
    /// trusted (a Service translated before the Nodes are known would lose its
    /// NodePort records).
    pub fn needed_by(kinds: &[Kind]) -> Vec<Dependency> {
        let mut deps = BTreeSet::new();
        for k in kinds {
            match k {
                Kind::Service => {
                    deps.extend([Dependency::Node, Dependency::EndpointSlice, Dependency::Pod])
                }
                k if k.is_route() => {
                    deps.extend([Dependency::Gateway, Dependency::Namespace]);
                }
                _ => {}
            }
        }
        deps.into_iter().collect()
    }
}

/// How an object of a translated kind stands, besides its records (one per object:
/// boxed strings and slice, no spare capacity).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Standing {
    /// `metadata.uid`: events name the object by it.
    pub uid: Option<super::uid::Uid>,
    /// Why the object gives no records although it was read (a filter, another
    /// controller's).
    pub skipped: Option<Box<str>>,
    /// Since when its load balancer has had no address while its records are kept.
    pub lost_load_balancer: Option<Instant>,
    /// The problems of its latest version (it keeps its last accepted records).
    pub problems: Box<[kinds::Problem]>,
}

/// The translation function (the real one, or a test's).
pub type Translate = fn(Kind, &Value, &Cluster, &Options) -> Translation;

/// Everything the translated kinds hold.
#[derive(Debug)]
pub struct Translated {
    options: Options,
    grace: Duration,
    translate: Translate,
    cluster: Cluster,
    /// What each object asked for, accepted, per kind.
    accepted: BTreeMap<Kind, Objects>,
    /// The objects to translate again when something changes (see the module's
    /// comment), as last seen: what their translation reads, as JSON text.
    raw: BTreeMap<Kind, BTreeMap<ObjectName, Box<str>>>,
    /// Every object held, by kind and name.
    standing: BTreeMap<(Kind, ObjectName), Standing>,
    zones: Option<crate::source::zones::ZoneCheck>,
}

impl Translated {
    pub fn new(options: Options, grace: Duration) -> Translated {
        Translated::with_translate(options, grace, kinds::translate)
    }

    /// With another translation: for tests of the rules here.
    pub fn with_translate(options: Options, grace: Duration, translate: Translate) -> Translated {
        Translated {
            options,
            grace,
            translate,
            cluster: Cluster::default(),
            accepted: BTreeMap::new(),
            raw: BTreeMap::new(),
            standing: BTreeMap::new(),
            zones: None,
        }
    }

    pub fn set_zones(&mut self, zones: crate::source::zones::ZoneCheck) {
        for objects in self.accepted.values_mut() {
            objects.set_zones(zones.clone());
        }
        self.zones = Some(zones);
    }

    fn objects(&mut self, kind: Kind) -> &mut Objects {
        let zones = self.zones.clone();
        self.accepted.entry(kind).or_insert_with(|| {
            let mut o = Objects::of_kind(kind);
            if let Some(z) = zones {
                o.set_zones(z);
            }
            o
        })
    }

    /// The accepted objects of `kind`.
    pub fn accepted(&self, kind: Kind) -> Option<&Objects> {
        self.accepted.get(&kind)
    }

    pub fn standing(&self, kind: Kind, name: &str) -> Option<&Standing> {
        self.standing.get(&(kind, name.to_string()))
    }

    /// How many objects of translated kinds are held.
    pub fn len(&self) -> usize {
        self.standing.len()
    }

    /// How many objects are kept to be translated again (see the module's comment).
    pub fn kept(&self) -> usize {
        self.raw.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A new version of an object of `kind`, as the watcher reduced it
    /// ([`kinds::kept`]).
    pub fn apply(&mut self, kind: Kind, object: Value, now: Instant) {
        let name = kinds::object_key(&object);
        let keep = self.translate_object(kind, &name, &object, now);
        self.keep(kind, &name, keep.then_some(&object));
    }

    /// Keeps `object` (a version just seen) to translate it again, or (`None`) forgets
    /// what was kept of `name`.
    fn keep(&mut self, kind: Kind, name: &str, object: Option<&Value>) {
        let raw = self.raw.entry(kind).or_default();
        match object {
            Some(o) => raw.insert(name.to_string(), o.to_string().into_boxed_str()),
            None => raw.remove(name),
        };
    }

    /// An object deleted: the one way its records go at once.
    pub fn delete(&mut self, kind: Kind, name: &str) {
        if let Some(raw) = self.raw.get_mut(&kind) {
            raw.remove(name);
        }
        self.objects(kind).delete(name);
        self.standing.remove(&(kind, name.to_string()));
    }

    /// A complete list of `kind` in `scope` (a namespace; `None`: all): objects of the
    /// scope absent from it were deleted. Each object (as the watcher reduced it) is
    /// translated as it is taken from `listed`, so that the list is never held whole
    /// as values.
    pub fn replace_scope(
        &mut self,
        kind: Kind,
        scope: Option<&str>,
        listed: impl IntoIterator<Item = Value>,
        now: Instant,
    ) {
        let mut names = std::collections::HashSet::new();
        for object in listed {
            let name = kinds::object_key(&object);
            let keep = self.translate_object(kind, &name, &object, now);
            self.keep(kind, &name, keep.then_some(&object));
            names.insert(name);
        }
        let gone: Vec<ObjectName> = self
            .standing
            .keys()
            .filter(|(k, n)| *k == kind && in_scope(scope, n) && !names.contains(n))
            .map(|(_, n)| n.clone())
            .collect();
        for name in gone {
            self.delete(kind, &name);
        }
        // A list fills these maps in key order, which leaves their nodes half empty;
        // rebuilt from a sorted run they are full (a third less memory).
        compact(&mut self.standing);
        compact(self.raw.entry(kind).or_default());
        self.objects(kind).compact();
    }

    /// A dependency changed (`object`: its new version, as the watcher reduced it;
    /// `None`: deleted, by `name`):
    /// the objects that depend on it are translated again.
    pub fn dependency(&mut self, dep: Dependency, name: &str, object: Option<Value>, now: Instant) {
        self.set_dependency(dep, name, object);
        for (kind, obj) in self.dependents(dep, name) {
            self.retranslate(kind, &obj, now);
        }
    }

    /// A complete list of a dependency in `scope`: replaces what was known of it, and
    /// every dependent object is translated again.
    pub fn replace_dependency_scope(
        &mut self,
        dep: Dependency,
        scope: Option<&str>,
        listed: Vec<Value>,
        now: Instant,
    ) {
        let names: Vec<String> = self
            .dependency_names(dep)
            .into_iter()
            .filter(|n| in_scope(scope, n))
            .collect();
        for n in names {
            self.set_dependency(dep, &n, None);
        }
        for o in listed {
            let name = dependency_key(dep, &o);
            self.set_dependency(dep, &name, Some(o));
        }
        // Every object kept for translating again (an object that did not read the
        // cluster cannot depend on it).
        let all: Vec<(Kind, ObjectName)> = self
            .raw
            .iter()
            .filter(|(k, _)| Dependency::needed_by(&[**k]).contains(&dep))
            .flat_map(|(k, m)| m.keys().map(|n| (*k, n.clone())))
            .collect();
        for (kind, name) in all {
            self.retranslate(kind, &name, now);
        }
    }

    fn dependency_names(&self, dep: Dependency) -> Vec<String> {
        match dep {
            Dependency::Node => self.cluster.nodes.keys().cloned().collect(),
            Dependency::Pod => self.cluster.pods.keys().cloned().collect(),
            Dependency::Gateway => self.cluster.gateways.keys().cloned().collect(),
            Dependency::Namespace => self.cluster.namespaces.keys().cloned().collect(),
            Dependency::EndpointSlice => self
                .cluster
                .endpoint_slices
                .values()
                .flatten()
                .map(kinds::object_key)
                .collect(),
        }
    }

    fn set_dependency(&mut self, dep: Dependency, name: &str, object: Option<Value>) {
        let c = &mut self.cluster;
        let map = match dep {
            Dependency::Node => &mut c.nodes,
            Dependency::Pod => &mut c.pods,
            Dependency::Gateway => &mut c.gateways,
            Dependency::Namespace => &mut c.namespaces,
            Dependency::EndpointSlice => {
                // Slices are kept by their service; a slice may move or go.
                for slices in c.endpoint_slices.values_mut() {
                    slices.retain(|s| kinds::object_key(s) != name);
                }
                c.endpoint_slices.retain(|_, v| !v.is_empty());
                if let Some(o) = object {
                    let service = slice_service(&o);
                    c.endpoint_slices.entry(service).or_default().push(o);
                }
                return;
            }
        };
        match object {
            Some(o) => {
                map.insert(name.to_string(), o);
            }
            None => {
                map.remove(name);
            }
        }
    }

    /// The objects whose translation may change with dependency `name`.
    fn dependents(&self, dep: Dependency, name: &str) -> Vec<(Kind, ObjectName)> {
        let of_kinds = |pred: &dyn Fn(Kind, &ObjectName, &str) -> bool| -> Vec<(Kind, ObjectName)> {
            self.raw
                .iter()
                .flat_map(|(k, m)| m.iter().map(move |(n, v)| (*k, n, v)))
                .filter(|(k, n, v)| pred(*k, n, v))
                .map(|(k, n, _)| (k, n.clone()))
                .collect()
        };
        let namespace = name.split_once('/').map_or("", |(ns, _)| ns);
        match dep {
            // Nodes: every Service (NodePort, and headless with host IPs).
            Dependency::Node => of_kinds(&|k, _, _| k == Kind::Service),
            // A slice: the services of its namespace (its own is among them; the slice
            // may have left another).
            Dependency::EndpointSlice | Dependency::Pod => of_kinds(&|k, n, _| {
                k == Kind::Service && n.split_once('/').is_some_and(|(ns, _)| ns == namespace)
            }),
            Dependency::Gateway => of_kinds(&|k, _, v| {
                k.is_route() && kinds::route_parents(&parse(v)).iter().any(|p| p == name)
            }),
            // A namespace's labels: the routes in it.
            Dependency::Namespace => of_kinds(&|k, n, _| {
                k.is_route() && n.split_once('/').is_some_and(|(ns, _)| ns == name)
            }),
        }
    }

    /// Translates `name` of `kind` again and accepts the result.
    fn retranslate(&mut self, kind: Kind, name: &str, now: Instant) {
        let Some(object) = self.raw.get(&kind).and_then(|m| m.get(name)) else {
            return;
        };
        let object = parse(object);
        // Kept as it is (the same version), or no longer needed.
        if !self.translate_object(kind, name, &object, now) {
            self.keep(kind, name, None);
        }
    }

    /// Translates `object`, `name` of `kind`, and accepts the result. Returns whether
    /// the object must be kept, to translate it again when something else changes.
    fn translate_object(&mut self, kind: Kind, name: &str, object: &Value, now: Instant) -> bool {
        let t = (self.translate)(kind, object, &self.cluster, &self.options);
        let keep = t.reads_cluster || t.waiting_for_load_balancer;
        let generation = object["metadata"]["generation"].as_i64();
        let uid = object["metadata"]["uid"].as_str().map(super::uid::Uid::new);
        let key = (kind, name.to_string());
        let mut standing = self.standing.remove(&key).unwrap_or_default();
        standing.uid = uid;
        standing.skipped = t.skipped.as_deref().map(Box::from);
        standing.problems = t.problems.clone().into_boxed_slice();
        let had = self.objects(kind).get(name).map_or(0, |s| s.records());
        if !t.problems.is_empty() {
            let kept = kept_note(had);
            let errors = t
                .problems
                .iter()
                .map(|p| SourceError {
                    source: super::SOURCE_KIND.into(),
                    location: format!("{kind} {name} {}", p.field),
                    record: String::new(),
                    message: format!("{}{kept}", p.message),
                })
                .collect();
            self.objects(kind).hold(name, generation, errors);
        } else if t.waiting_for_load_balancer && had > 0 {
            let since = *standing.lost_load_balancer.get_or_insert(now);
            if now.saturating_duration_since(since) < self.grace {
                let left = self.grace - now.saturating_duration_since(since);
                let until = std::time::SystemTime::now() + round_secs(left);
                let error = SourceError {
                    source: super::SOURCE_KIND.into(),
                    location: format!("{kind} {name}"),
                    record: String::new(),
                    message: format!(
                        "its load balancer has no address; keeping its {had} last record(s) until {} (target_loss_grace {})",
                        humantime::format_rfc3339_seconds(until),
                        humantime::format_duration(self.grace)
                    ),
                };
                self.objects(kind).hold(name, generation, vec![error]);
            } else {
                standing.lost_load_balancer = None;
                let text = spec_text(name, &t);
                self.objects(kind).apply(name, generation, &text);
            }
        } else {
            standing.lost_load_balancer = None;
            let text = spec_text(name, &t);
            self.objects(kind).apply(name, generation, &text);
        }
        self.standing.insert(key, standing);
        keep
    }

    /// When the earliest grace ends (`None`: no object is in its grace).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.standing
            .values()
            .filter_map(|s| s.lost_load_balancer.map(|t| t + self.grace))
            .min()
    }

    /// Translates again the objects whose grace has ended by `now` (their records go
    /// if their load balancer still has no address) and those still in it (their
    /// message shows the time left).
    pub fn expire(&mut self, now: Instant) {
        let due: Vec<(Kind, ObjectName)> = self
            .standing
            .iter()
            .filter(|(_, s)| s.lost_load_balancer.is_some())
            .map(|(k, _)| k.clone())
            .collect();
        for (kind, name) in due {
            self.retranslate(kind, &name, now);
        }
    }

    /// Every record and error of the translated kinds.
    pub fn extend_snapshot(&self, snapshot: &mut Snapshot) {
        for objects in self.accepted.values() {
            let s = objects.snapshot(Vec::new());
            snapshot.entries.extend(s.entries);
            snapshot.errors.extend(s.errors);
        }
    }

    /// Every translated object by kind, with how it stands: for the events writer.
    pub fn iter(&self) -> impl Iterator<Item = (Kind, &ObjectName, &Standing)> {
        self.standing.iter().map(|((k, n), s)| (*k, n, s))
    }
}

/// An object as kept (JSON text this module wrote).
fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_default()
}

fn kept_note(n: usize) -> String {
    match n {
        0 => String::new(),
        n => format!("; keeping this object's {n} last accepted record(s)"),
    }
}

fn round_secs(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

fn in_scope(scope: Option<&str>, name: &str) -> bool {
    scope.is_none_or(|ns| name.split_once('/').is_some_and(|(n, _)| n == ns))
}

/// Nodes and Namespaces are cluster-scoped: named by their name alone.
fn dependency_key(dep: Dependency, object: &Value) -> String {
    match dep {
        Dependency::Node | Dependency::Namespace => object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        _ => kinds::object_key(object),
    }
}

/// `namespace/service` of an EndpointSlice (`kubernetes.io/service-name`).
fn slice_service(slice: &Value) -> String {
    let ns = slice["metadata"]["namespace"].as_str().unwrap_or("default");
    let svc = slice["metadata"]["labels"]["kubernetes.io/service-name"]
        .as_str()
        .unwrap_or_default();
    format!("{ns}/{svc}")
}

/// The DNSEndpoint spec (as JSON text the manifest parser reads) of a translation.
pub fn spec_text(name: &str, t: &Translation) -> String {
    let (ns, object) = name.split_once('/').unwrap_or(("default", name));
    let endpoints: Vec<Value> = t
        .endpoints
        .iter()
        .map(|e| {
            let mut ep = serde_json::json!({
                "dnsName": e.dns_name,
                "recordType": e.record_type,
                "targets": e.targets,
            });
            if let Some(ttl) = e.ttl {
                ep["recordTTL"] = ttl.into();
            }
            if !e.set_identifier.is_empty() {
                ep["setIdentifier"] = e.set_identifier.clone().into();
            }
            if !e.provider_specific.is_empty() {
                ep["providerSpecific"] = e
                    .provider_specific
                    .iter()
                    .map(|(n, v)| serde_json::json!({"name": n, "value": v}))
                    .collect();
            }
            ep
        })
        .collect();
    serde_json::json!({
        "apiVersion": "externaldns.k8s.io/v1alpha1",
        "kind": "DNSEndpoint",
        "metadata": {"name": object, "namespace": ns},
        "spec": {"endpoints": endpoints},
    })
    .to_string()
}

#[cfg(test)]
mod tests;
