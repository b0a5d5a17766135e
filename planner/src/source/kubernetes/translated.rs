//! The objects of the kinds dnsplane translates (Services, Ingresses, Gateway API
//! routes) and the cluster objects their records depend on (Nodes, EndpointSlices,
//! Pods, Gateways): pure and synchronous, like [`super::objects`], so that every rule
//! is tested without a server.
//!
//! Each object is kept as it was last seen, reduced to what its translation reads
//! ([`kinds::kept`]) and held as compact JSON text (a few hundred bytes instead of a
//! tree of maps of several kilobytes), so that it can be translated again when
//! something it depends on changes: a Gateway's addresses change every route attached
//! to it.
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
use super::objects::{ObjectName, Objects};
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

/// How an object of a translated kind stands, besides its records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Standing {
    /// `metadata.uid`: events name the object by it.
    pub uid: Option<String>,
    /// Why the object gives no records although it was read (a filter, another
    /// controller's).
    pub skipped: Option<String>,
    /// Since when its load balancer has had no address while its records are kept.
    pub lost_load_balancer: Option<Instant>,
    /// The problems of its latest version (it keeps its last accepted records).
    pub problems: Vec<kinds::Problem>,
}

/// The translation function (the real one, or a test's).
pub type Translate = fn(Kind, &Value, &Cluster, &Options) -> Translation;

/// What of an object is kept for that translation ([`kinds::kept::keep_read`] for the
/// real one).
pub type Keep = fn(Kind, Value, &Options) -> Value;

/// Everything the translated kinds hold.
#[derive(Debug)]
pub struct Translated {
    options: Options,
    grace: Duration,
    translate: Translate,
    keep: Keep,
    cluster: Cluster,
    /// What each object asked for, accepted, per kind.
    accepted: BTreeMap<Kind, Objects>,
    /// Each object as last seen: what its translation reads, as JSON text.
    raw: BTreeMap<Kind, BTreeMap<ObjectName, Box<str>>>,
    standing: BTreeMap<(Kind, ObjectName), Standing>,
    zones: Option<crate::source::zones::ZoneCheck>,
}

impl Translated {
    pub fn new(options: Options, grace: Duration) -> Translated {
        let mut t = Translated::with_translate(options, grace, kinds::translate);
        t.keep = kinds::kept::keep_read;
        t
    }

    /// With another translation (objects kept whole but for [`trim`]): for tests of
    /// the rules here.
    pub fn with_translate(options: Options, grace: Duration, translate: Translate) -> Translated {
        Translated {
            options,
            grace,
            translate,
            keep: |_, object, _| trim(object),
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
        self.raw.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A new version of an object of `kind`.
    pub fn apply(&mut self, kind: Kind, object: Value, now: Instant) {
        let name = kinds::object_key(&object);
        let object = (self.keep)(kind, object, &self.options);
        self.raw
            .entry(kind)
            .or_default()
            .insert(name.clone(), object.to_string().into_boxed_str());
        self.translate_object(kind, &name, &object, now);
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
    /// scope absent from it were deleted. Each object is reduced as it is taken from
    /// `listed`, so that a list of tens of thousands is never held whole.
    pub fn replace_scope(
        &mut self,
        kind: Kind,
        scope: Option<&str>,
        listed: impl IntoIterator<Item = Value>,
        now: Instant,
    ) {
        let listed: BTreeMap<ObjectName, Value> = listed
            .into_iter()
            .map(|o| {
                let name = kinds::object_key(&o);
                (name, (self.keep)(kind, o, &self.options))
            })
            .collect();
        let gone: Vec<ObjectName> = self
            .raw
            .get(&kind)
            .into_iter()
            .flat_map(|m| m.keys())
            .filter(|n| in_scope(scope, n) && !listed.contains_key(*n))
            .cloned()
            .collect();
        for name in gone {
            self.delete(kind, &name);
        }
        let raw = self.raw.entry(kind).or_default();
        for (name, object) in &listed {
            raw.insert(name.clone(), object.to_string().into_boxed_str());
        }
        for (name, object) in &listed {
            self.translate_object(kind, name, object, now);
        }
    }

    /// A dependency changed (`object`: its new version; `None`: deleted, by `name`):
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
                    c.endpoint_slices.entry(service).or_default().push(trim(o));
                }
                return;
            }
        };
        match object {
            Some(o) => {
                map.insert(name.to_string(), trim(o));
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
        self.translate_object(kind, name, &object, now);
    }

    /// Translates `object`, `name` of `kind` (as kept), and accepts the result.
    fn translate_object(&mut self, kind: Kind, name: &str, object: &Value, now: Instant) {
        let t = (self.translate)(kind, object, &self.cluster, &self.options);
        let generation = object["metadata"]["generation"].as_i64();
        let uid = object["metadata"]["uid"].as_str().map(str::to_string);
        let key = (kind, name.to_string());
        let mut standing = self.standing.remove(&key).unwrap_or_default();
        standing.uid = uid;
        standing.skipped = t.skipped.clone();
        standing.problems = t.problems.clone();
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

/// An object without what no translation reads and every object carries: managed
/// fields and the last-applied annotation (often larger than the object itself).
pub fn trim(mut object: Value) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    object
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
mod tests {
    use super::*;
    use crate::source::kubernetes::kinds::{Endpoint, Problem};
    use serde_json::json;

    /// A translation for the rules here: `spec.host` → A record to the first
    /// `status.ip` or, through `spec.gateway`, to that Gateway's `status.ip`; no
    /// address with a host: waiting for the load balancer; `spec.ttl` "bad": a problem.
    fn fake(kind: Kind, o: &Value, cluster: &Cluster, _: &Options) -> Translation {
        if o["spec"]["ttl"] == "bad" {
            return Translation {
                problems: vec![Problem {
                    field: "metadata.annotations[\"ttl\"]".into(),
                    message: "\"bad\" is not a TTL".into(),
                }],
                ..Translation::default()
            };
        }
        let ip = match o["spec"]["gateway"].as_str() {
            Some(g) => cluster
                .gateways
                .get(g)
                .and_then(|g| g["status"]["ip"].as_str()),
            None => o["status"]["ip"].as_str(),
        };
        let host = o["spec"]["host"].as_str().unwrap_or_default();
        let _ = kind;
        match ip {
            Some(ip) => Translation {
                endpoints: vec![Endpoint {
                    dns_name: host.into(),
                    record_type: "A".into(),
                    targets: vec![ip.into()],
                    ..Endpoint::default()
                }],
                ..Translation::default()
            },
            None => Translation {
                waiting_for_load_balancer: true,
                ..Translation::default()
            },
        }
    }

    fn svc(name: &str, host: &str, ip: Option<&str>) -> Value {
        let mut o = json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
                           "spec": {"host": host}, "status": {}});
        if let Some(ip) = ip {
            o["status"]["ip"] = ip.into();
        }
        o
    }

    fn records(t: &Translated) -> Vec<(String, Vec<String>, String)> {
        let mut s = Snapshot::default();
        t.extend_snapshot(&mut s);
        s.entries
            .iter()
            .map(|e| {
                (
                    e.name.to_string(),
                    e.values.clone(),
                    e.origin.resource.to_string(),
                )
            })
            .collect()
    }

    fn errors(t: &Translated) -> Vec<String> {
        let mut s = Snapshot::default();
        t.extend_snapshot(&mut s);
        s.errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_lost_load_balancer_keeps_the_records_for_the_grace_then_they_go() {
        let grace = Duration::from_secs(300);
        let mut t = Translated::with_translate(Options::default(), grace, fake);
        let t0 = Instant::now();
        t.apply(
            Kind::Service,
            svc("web", "web.example.com", Some("192.0.2.1")),
            t0,
        );
        let want = vec![(
            "web.example.com.".to_string(),
            vec!["192.0.2.1".to_string()],
            "Service default/web".to_string(),
        )];
        assert_eq!(records(&t), want);
        assert_eq!(t.next_deadline(), None);

        // The controller restarts: no address. Kept, said, and a deadline set.
        t.apply(Kind::Service, svc("web", "web.example.com", None), t0);
        assert_eq!(records(&t), want);
        let e = errors(&t);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("Service default/web: its load balancer has no address; keeping its 1 last record(s) until"),
            "{e:?}"
        );
        assert!(e[0].ends_with("(target_loss_grace 5m)"), "{e:?}");
        assert_eq!(t.next_deadline(), Some(t0 + grace));

        // Still within the grace: kept.
        t.expire(t0 + grace - Duration::from_secs(1));
        assert_eq!(records(&t), want);
        // The address comes back: nothing changed, nothing said, no deadline.
        t.apply(
            Kind::Service,
            svc("web", "web.example.com", Some("192.0.2.1")),
            t0 + Duration::from_secs(10),
        );
        assert_eq!(records(&t), want);
        assert!(errors(&t).is_empty());
        assert_eq!(t.next_deadline(), None);

        // Lost again, for longer than the grace: the records go.
        let t1 = t0 + Duration::from_secs(20);
        t.apply(Kind::Service, svc("web", "web.example.com", None), t1);
        t.expire(t1 + grace);
        assert_eq!(records(&t), vec![]);
        assert!(errors(&t).is_empty(), "{:?}", errors(&t));
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn an_object_never_published_has_no_grace() {
        let mut t = Translated::with_translate(Options::default(), Duration::from_secs(300), fake);
        t.apply(
            Kind::Service,
            svc("new", "new.example.com", None),
            Instant::now(),
        );
        assert_eq!(records(&t), vec![]);
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn an_unreadable_object_keeps_its_records_and_its_neighbours_are_unaffected() {
        let mut t = Translated::with_translate(Options::default(), Duration::from_secs(300), fake);
        let now = Instant::now();
        t.apply(
            Kind::Service,
            svc("a", "a.example.com", Some("192.0.2.1")),
            now,
        );
        t.apply(
            Kind::Service,
            svc("b", "b.example.com", Some("192.0.2.2")),
            now,
        );
        let mut bad = svc("a", "a.example.com", Some("192.0.2.9"));
        bad["spec"]["ttl"] = "bad".into();
        t.apply(Kind::Service, bad, now);
        t.apply(
            Kind::Service,
            svc("b", "b.example.com", Some("192.0.2.3")),
            now,
        );
        let r = records(&t);
        assert_eq!(r[0].1, ["192.0.2.1"], "a keeps its last accepted value");
        assert_eq!(r[1].1, ["192.0.2.3"], "b moves on");
        assert_eq!(
            errors(&t),
            [
                "Service default/a metadata.annotations[\"ttl\"]: \"bad\" is not a TTL; keeping this object's 1 last accepted record(s)"
            ]
        );
        assert_eq!(
            t.standing(Kind::Service, "default/a")
                .unwrap()
                .problems
                .len(),
            1
        );
    }

    #[test]
    fn a_gateway_change_moves_the_routes_attached_to_it() {
        let mut t = Translated::with_translate(Options::default(), Duration::from_secs(300), fake);
        let now = Instant::now();
        let gw = |ip: &str| json!({"metadata": {"name": "gw", "namespace": "infra"}, "status": {"ip": ip}});
        t.replace_dependency_scope(Dependency::Gateway, None, vec![gw("192.0.2.10")], now);
        let route = json!({"metadata": {"name": "r", "namespace": "default"},
            "spec": {"host": "r.example.com", "gateway": "infra/gw",
                     "parentRefs": [{"name": "gw", "namespace": "infra"}]}});
        t.replace_scope(Kind::HttpRoute, None, vec![route], now);
        assert_eq!(records(&t)[0].1, ["192.0.2.10"]);
        t.dependency(Dependency::Gateway, "infra/gw", Some(gw("192.0.2.11")), now);
        assert_eq!(records(&t)[0].1, ["192.0.2.11"]);
        assert_eq!(records(&t)[0].2, "HTTPRoute default/r");
    }

    #[test]
    fn a_relist_deletes_only_the_absent_objects_of_its_scope() {
        let mut t = Translated::with_translate(Options::default(), Duration::from_secs(300), fake);
        let now = Instant::now();
        let mut other = svc("z", "z.example.com", Some("192.0.2.3"));
        other["metadata"]["namespace"] = "other".into();
        t.apply(Kind::Service, other, now);
        t.replace_scope(
            Kind::Service,
            Some("default"),
            vec![svc("a", "a.example.com", Some("192.0.2.1"))],
            now,
        );
        t.replace_scope(Kind::Service, Some("default"), vec![], now);
        let names: Vec<String> = records(&t).into_iter().map(|r| r.0).collect();
        assert_eq!(names, ["z.example.com."]);
    }

    #[test]
    fn managed_fields_and_last_applied_are_not_kept() {
        let o = json!({"metadata": {"name": "a", "managedFields": [{"manager": "kubectl"}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}", "keep": "me"}}});
        let t = trim(o);
        assert_eq!(
            t,
            json!({"metadata": {"name": "a", "annotations": {"keep": "me"}}})
        );
    }
}
