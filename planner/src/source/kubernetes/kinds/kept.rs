//! What of an object the translations read, and nothing else: the source keeps every
//! object of the translated kinds to translate it again when a dependency changes (a
//! Gateway's addresses), and a whole object (kubectl's last-applied copy, ports,
//! route rules, conditions…) costs several kilobytes, a JSON tree of maps. The tests of
//! every kind check that an object and what is kept of it translate alike.
//!
//! With `fqdn_template` the template may read any field (`.Spec…`, `.Status…`): then
//! only what no template can want goes (managed fields, the last-applied copy).
use super::annotations::{ALPHA_PREFIX, PREFIX};
use super::gateway::GROUP;
use super::ingress::INGRESS_CLASS_ANNOTATION;
use super::{Kind, Options};
use serde_json::{Map, Value};

/// The metadata fields translations read (`generation` and `uid` the source itself).
/// Not the object's labels: the label selector is the API server's to apply.
const METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "generation",
    "annotations",
    "deletionTimestamp",
];

/// Whether the translations read annotation `key`: external-dns's, under either
/// prefix, and the ingress-class one (any, with an annotation filter, which may name
/// any key).
fn annotation_read(key: &str, options: &Options) -> bool {
    options.annotation_filter.is_some()
        || key.starts_with(PREFIX)
        || key.starts_with(ALPHA_PREFIX)
        || key == INGRESS_CLASS_ANNOTATION
}

/// The `spec` fields a Service's translation reads.
const SERVICE_SPEC: &[&str] = &[
    "type",
    "clusterIP",
    "clusterIPs",
    "externalIPs",
    "externalName",
    "ports",
    "selector",
    "externalTrafficPolicy",
    "publishNotReadyAddresses",
];

/// `object` of `kind` with only what its translation under `options` reads.
pub fn keep_read(kind: Kind, object: Value, options: &Options) -> Value {
    let object = trim(object);
    let Value::Object(mut all) = object else {
        return object;
    };
    if options.fqdn_template.is_some() || kind == Kind::DnsEndpoint {
        return Value::Object(all);
    }
    let mut kept = Map::new();
    if let Some(Value::Object(mut meta)) = all.remove("metadata") {
        let mut meta = only(&mut meta, METADATA);
        if let Some(Value::Object(a)) = meta.get_mut("annotations") {
            a.retain(|k, _| annotation_read(k, options));
        }
        kept.insert("metadata".into(), Value::Object(meta));
    }
    let mut spec = match all.remove("spec") {
        Some(Value::Object(spec)) => spec,
        _ => Map::new(),
    };
    let mut status = match all.remove("status") {
        Some(Value::Object(status)) => status,
        _ => Map::new(),
    };
    let (spec, status) = match kind {
        Kind::Service => (
            only(&mut spec, SERVICE_SPEC),
            only(&mut status, &["loadBalancer"]),
        ),
        Kind::Ingress => (ingress_spec(spec), only(&mut status, &["loadBalancer"])),
        _ => {
            let mut spec = only(&mut spec, &["hostnames", "parentRefs"]);
            if let Some(Value::Array(refs)) = spec.get_mut("parentRefs") {
                refs.iter_mut().for_each(without_defaults);
            }
            (spec, route_status(status))
        }
    };
    kept.insert("spec".into(), Value::Object(spec));
    kept.insert("status".into(), Value::Object(status));
    Value::Object(kept)
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

/// What a headless Service's translation reads of a Pod (a Pod is several kilobytes,
/// and a cluster may have tens of thousands): its name, labels (the Service's
/// selector), external-dns annotations and deletion; its hostname and node; its phase,
/// host IP and `Ready` condition.
pub fn keep_pod(pod: Value) -> Value {
    let Value::Object(mut all) = pod else {
        return pod;
    };
    let mut kept = Map::new();
    if let Some(Value::Object(mut meta)) = all.remove("metadata") {
        let mut meta = only(
            &mut meta,
            &[
                "name",
                "namespace",
                "labels",
                "annotations",
                "deletionTimestamp",
            ],
        );
        if let Some(Value::Object(a)) = meta.get_mut("annotations") {
            a.retain(|k, _| k.starts_with(PREFIX) || k.starts_with(ALPHA_PREFIX));
        }
        kept.insert("metadata".into(), Value::Object(meta));
    }
    if let Some(Value::Object(mut spec)) = all.remove("spec") {
        kept.insert(
            "spec".into(),
            Value::Object(only(&mut spec, &["hostname", "nodeName"])),
        );
    }
    if let Some(Value::Object(mut status)) = all.remove("status") {
        let mut status = only(&mut status, &["phase", "hostIP", "conditions"]);
        if let Some(Value::Array(conditions)) = status.get_mut("conditions") {
            conditions.retain(|c| c["type"] == "Ready");
            for c in conditions.iter_mut() {
                if let Value::Object(c) = c {
                    *c = only(c, &["type", "status"]);
                }
            }
        }
        kept.insert("status".into(), Value::Object(status));
    }
    Value::Object(kept)
}

/// The fields of `map` named in `keys`, taken out of it.
fn only(map: &mut Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|k| map.remove(*k).map(|v| (k.to_string(), v)))
        .collect()
}

/// A parent reference without the group and kind it has when absent (the Gateway
/// API's): 5,000 routes repeat them twice each.
fn without_defaults(parent_ref: &mut Value) {
    if let Value::Object(r) = parent_ref {
        if r.get("group").and_then(Value::as_str) == Some(GROUP) {
            r.remove("group");
        }
        if r.get("kind").and_then(Value::as_str) == Some("Gateway") {
            r.remove("kind");
        }
    }
}

/// A route's `status.parents`: each parent's reference and its `Accepted` condition's
/// type and status (the only one read; not its message and times).
fn route_status(mut status: Map<String, Value>) -> Map<String, Value> {
    let mut kept = only(&mut status, &["parents"]);
    for parent in kept
        .get_mut("parents")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Value::Object(p) = parent {
            *p = only(p, &["parentRef", "conditions"]);
            if let Some(r) = p.get_mut("parentRef") {
                without_defaults(r);
            }
            if let Some(Value::Array(conditions)) = p.get_mut("conditions") {
                conditions.retain(|c| c["type"] == "Accepted");
                for c in conditions.iter_mut() {
                    if let Value::Object(c) = c {
                        *c = only(c, &["type", "status"]);
                    }
                }
            }
        }
    }
    kept
}

/// An Ingress's class, its rules' hosts (each rule kept in its place: problems name
/// `spec.rules[i].host`) and its TLS hosts.
fn ingress_spec(mut spec: Map<String, Value>) -> Map<String, Value> {
    let mut kept = only(&mut spec, &["ingressClassName"]);
    for (key, field) in [("rules", "host"), ("tls", "hosts")] {
        if let Some(Value::Array(items)) = spec.remove(key) {
            let items = items
                .into_iter()
                .map(|item| match item {
                    Value::Object(mut o) => Value::Object(only(&mut o, &[field])),
                    other => other,
                })
                .collect();
            kept.insert(key.to_string(), Value::Array(items));
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_service_keeps_what_its_translation_reads_and_loses_the_rest() {
        let svc = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {
                "name": "web", "namespace": "shop", "uid": "u1", "generation": 3,
                "resourceVersion": "99", "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"app": "web"},
                "annotations": {
                    "external-dns.kubernetes.io/hostname": "web.example.com",
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"big\": true}",
                },
                "managedFields": [{"manager": "kubectl"}],
            },
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}], "sessionAffinity": "None", "ipFamilies": ["IPv4"]},
            "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}, "conditions": []},
        });
        let kept = keep_read(Kind::Service, svc, &Options::default());
        assert_eq!(
            kept,
            json!({
                "metadata": {
                    "name": "web", "namespace": "shop", "uid": "u1", "generation": 3,
                    "annotations": {"external-dns.kubernetes.io/hostname": "web.example.com"},
                },
                "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
                "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}},
            })
        );
    }

    #[test]
    fn an_ingress_keeps_its_hosts_in_place_and_a_route_its_parents() {
        let ing = json!({
            "metadata": {"name": "web"},
            "spec": {
                "ingressClassName": "nginx",
                "rules": [{"http": {"paths": []}}, {"host": "b.example.com", "http": {"paths": []}}],
                "tls": [{"hosts": ["b.example.com"], "secretName": "s"}],
                "defaultBackend": {"service": {"name": "x"}},
            },
        });
        assert_eq!(
            keep_read(Kind::Ingress, ing, &Options::default())["spec"],
            json!({"ingressClassName": "nginx", "rules": [{}, {"host": "b.example.com"}], "tls": [{"hosts": ["b.example.com"]}]})
        );
        let route = json!({
            "metadata": {"name": "r"},
            "spec": {"hostnames": ["a.example.com"], "parentRefs": [{"name": "gw"}], "rules": [{"backendRefs": []}]},
            "status": {"parents": [{"parentRef": {"name": "gw"}}]},
        });
        let kept = keep_read(Kind::HttpRoute, route, &Options::default());
        assert_eq!(
            kept["spec"],
            json!({"hostnames": ["a.example.com"], "parentRefs": [{"name": "gw"}]})
        );
        assert_eq!(kept["status"]["parents"][0]["parentRef"]["name"], "gw");
        // The Gateway API's default group and kind, and every condition but Accepted,
        // are not kept; another group or kind is.
        let route = json!({
            "metadata": {"name": "r"},
            "spec": {"parentRefs": [
                {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"},
                {"group": "example.com", "kind": "Mesh", "name": "m"},
            ]},
            "status": {"parents": [{
                "parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"},
                "controllerName": "example.com/c",
                "conditions": [
                    {"type": "Accepted", "status": "True", "reason": "Accepted", "message": "ok"},
                    {"type": "ResolvedRefs", "status": "True"},
                ],
            }]},
        });
        let kept = keep_read(Kind::HttpRoute, route, &Options::default());
        assert_eq!(
            kept["spec"]["parentRefs"],
            json!([{"name": "gw"}, {"group": "example.com", "kind": "Mesh", "name": "m"}])
        );
        assert_eq!(
            kept["status"],
            json!({"parents": [{"parentRef": {"name": "gw"},
                                "conditions": [{"type": "Accepted", "status": "True"}]}]})
        );
    }

    #[test]
    fn with_a_template_every_field_stays_but_managed_fields_and_the_last_applied_copy() {
        let options = Options {
            fqdn_template: Some("{{.Spec.SessionAffinity}}.example.com".into()),
            ..Options::default()
        };
        let svc = json!({
            "metadata": {"name": "web", "managedFields": [], "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {"sessionAffinity": "None"},
        });
        assert_eq!(
            keep_read(Kind::Service, svc, &options),
            json!({"metadata": {"name": "web", "annotations": {}}, "spec": {"sessionAffinity": "None"}})
        );
    }

    #[test]
    fn a_pod_keeps_what_a_headless_service_reads() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "web-0", "namespace": "shop", "uid": "u", "labels": {"app": "web"},
                "annotations": {"external-dns.kubernetes.io/target": "192.0.2.7", "other": "x"},
                "ownerReferences": [{"kind": "StatefulSet"}],
            },
            "spec": {"hostname": "web-0", "nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
            "status": {
                "phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.244.0.5",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "t"},
                               {"type": "PodScheduled", "status": "True"}],
                "containerStatuses": [{"name": "c"}],
            },
        });
        assert_eq!(
            keep_pod(pod),
            json!({
                "metadata": {"name": "web-0", "namespace": "shop", "labels": {"app": "web"},
                             "annotations": {"external-dns.kubernetes.io/target": "192.0.2.7"}},
                "spec": {"hostname": "web-0", "nodeName": "n1"},
                "status": {"phase": "Running", "hostIP": "10.0.0.1",
                           "conditions": [{"type": "Ready", "status": "True"}]},
            })
        );
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
