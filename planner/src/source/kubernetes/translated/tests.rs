//! The rules of [`super::Translated`], with a made-up translation.
use super::*;
use crate::source::kubernetes::kinds::{Endpoint, Problem};
use serde_json::json;
use std::sync::Arc;

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
    let reads_cluster = o["spec"]["gateway"].is_string();
    match ip {
        Some(ip) => Translation {
            endpoints: vec![Endpoint {
                dns_name: host.into(),
                record_type: "A".into(),
                targets: vec![ip.into()],
                ..Endpoint::default()
            }],
            reads_cluster,
            ..Translation::default()
        },
        None => Translation {
            waiting_for_load_balancer: true,
            reads_cluster,
            ..Translation::default()
        },
    }
}

/// Applies the Service `name` for `NAME.example.com` (at `ip`, when it has one) at `at`.
fn apply_svc(t: &mut Translated, name: &str, ip: Option<&str>, at: Instant) {
    let host = format!("{name}.example.com");
    t.apply(Kind::Service, svc(name, &host, ip), at);
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
    apply_svc(&mut t, "web", Some("192.0.2.1"), t0);
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
    apply_svc(
        &mut t,
        "web",
        Some("192.0.2.1"),
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
    apply_svc(&mut t, "new", None, Instant::now());
    assert_eq!(records(&t), vec![]);
    assert_eq!(t.next_deadline(), None);
}

#[test]
fn an_unreadable_object_keeps_its_records_and_its_neighbours_are_unaffected() {
    let mut t = Translated::with_translate(Options::default(), Duration::from_secs(300), fake);
    let now = Instant::now();
    apply_svc(&mut t, "a", Some("192.0.2.1"), now);
    apply_svc(&mut t, "b", Some("192.0.2.2"), now);
    let mut bad = svc("a", "a.example.com", Some("192.0.2.9"));
    bad["spec"]["ttl"] = "bad".into();
    t.apply(Kind::Service, bad, now);
    apply_svc(&mut t, "b", Some("192.0.2.3"), now);
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
    let gw =
        |ip: &str| json!({"metadata": {"name": "gw", "namespace": "infra"}, "status": {"ip": ip}});
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
fn only_objects_that_read_the_cluster_or_wait_for_their_load_balancer_are_kept() {
    let mut t = Translated::with_translate(Options::default(), Duration::from_secs(300), fake);
    let now = Instant::now();
    let gw =
        json!({"metadata": {"name": "gw", "namespace": "infra"}, "status": {"ip": "192.0.2.10"}});
    t.replace_dependency_scope(Dependency::Gateway, None, vec![gw], now);
    let route = json!({"metadata": {"name": "r", "namespace": "default"},
        "spec": {"host": "r.example.com", "gateway": "infra/gw"}});
    t.replace_scope(Kind::HttpRoute, None, vec![route], now);
    apply_svc(&mut t, "a", Some("192.0.2.1"), now);
    assert_eq!(
        (t.len(), t.kept()),
        (2, 1),
        "the route is kept, the Service not"
    );
    // The Service loses its load balancer: kept for its grace, records held.
    t.apply(Kind::Service, svc("a", "a.example.com", None), now);
    assert_eq!(t.kept(), 2);
    assert_eq!(records(&t).len(), 2);
    // It gets an address again: no longer kept; a relist without it still deletes it.
    apply_svc(&mut t, "a", Some("192.0.2.2"), now);
    assert_eq!(t.kept(), 1);
    t.replace_scope(Kind::Service, None, vec![], now);
    assert_eq!((t.len(), t.kept()), (1, 1));
    assert_eq!(records(&t).len(), 1);
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
fn the_real_translations_say_which_objects_read_the_cluster() {
    let cluster = Cluster::default();
    let options = Options::default();
    let reads = |kind: Kind, o: Value| kinds::translate(kind, &o, &cluster, &options).reads_cluster;
    let service = |kind: &str| {
        json!({"metadata": {"name": "web", "namespace": "default",
                "annotations": {"external-dns.kubernetes.io/hostname": "web.example.com"}},
               "spec": {"type": kind, "clusterIP": "10.0.0.1", "ports": [{"port": 80, "nodePort": 30080}]},
               "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}})
    };
    assert!(!reads(Kind::Service, service("LoadBalancer")));
    assert!(
        reads(Kind::Service, service("NodePort")),
        "the Nodes' addresses"
    );
    let mut headless = service("ClusterIP");
    headless["spec"]["clusterIP"] = "None".into();
    assert!(reads(Kind::Service, headless), "the EndpointSlices");
    let ingress = json!({"metadata": {"name": "web", "namespace": "default"},
        "spec": {"rules": [{"host": "web.example.com"}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}});
    assert!(!reads(Kind::Ingress, ingress));
    let parent = json!({"name": "gw", "namespace": "infra"});
    let route = json!({"metadata": {"name": "r", "namespace": "default"},
        "spec": {"hostnames": ["r.example.com"], "parentRefs": [parent]},
        "status": {"parents": [{"parentRef": parent,
            "conditions": [{"type": "Accepted", "status": "True"}]}]}});
    assert!(reads(Kind::HttpRoute, route), "its Gateways");
}

/// Every entry of a translated object points at one name for its resource and its
/// location (`Service default/web`), and the source kind is one allocation for all
/// objects: held per object, a copy each cost three allocations.
#[test]
fn a_translated_objects_entries_share_their_names() {
    let mut t = Translated::with_translate(Options::default(), Duration::ZERO, fake);
    let now = Instant::now();
    apply_svc(&mut t, "web", Some("192.0.2.1"), now);
    apply_svc(&mut t, "api", Some("192.0.2.2"), now);
    let mut s = Snapshot::default();
    t.extend_snapshot(&mut s);
    assert_eq!(s.entries.len(), 2);
    for e in &s.entries {
        assert!(e.origin.resource.starts_with("Service default/"));
        assert!(Arc::ptr_eq(&e.origin.resource, &e.origin.location));
    }
    assert!(Arc::ptr_eq(
        &s.entries[0].origin.source,
        &s.entries[1].origin.source
    ));
    let web = t.objects(Kind::Service).get("default/web").expect("web");
    assert!(Arc::ptr_eq(
        &web.accepted[0].slot.resource,
        &web.accepted[0].entry.origin.resource
    ));
}
