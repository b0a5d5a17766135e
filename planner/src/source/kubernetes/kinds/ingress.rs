//! Ingress (`networking.k8s.io/v1`) → endpoints, following external-dns v0.22's
//! `source/ingress.go`: the hosts of `spec.rules[].host` and `spec.tls[].hosts`, the
//! `hostname` annotation, the `ingress-hostname-source` annotation choosing between
//! them, `--fqdn-template` for an ingress without hosts, and as targets the `target`
//! annotation or else `status.loadBalancer.ingress` (IPs and host names).
//!
//! Differences, each because external-dns publishes something other than asked or
//! nothing without saying why: a bad TTL, target or host is a [`Problem`] (external-dns
//! logs and goes on with no TTL, or drops the host); an `ingress-hostname-source` value
//! that is neither `annotation-only` nor `defined-hosts-only` is a problem (external-dns
//! publishes nothing for the ingress).
use super::annotations::{Annotations, HOSTNAME, INGRESS_HOSTNAME_SOURCE, TARGET};
use super::for_hostname::{
    Shared, check_host, check_target, endpoints_for_hostname, merge_endpoints,
};
use super::{Cluster, Options, Problem, Translation, fqdn_template, object_filter};
use serde_json::Value;

/// The legacy class annotation, read when `spec.ingressClassName` is empty.
pub const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
/// `ingress-hostname-source` values.
pub const ANNOTATION_ONLY: &str = "annotation-only";
pub const DEFINED_HOSTS_ONLY: &str = "defined-hosts-only";

/// The options an Ingress source refuses to start with (`NewIngressSource`):
/// `ingress_classes` together with an annotation filter on `kubernetes.io/ingress.class`
/// (the two would disagree on which ingresses are in).
pub fn check_options(options: &Options) -> Result<(), String> {
    let filter = options.annotation_filter.as_deref().unwrap_or_default();
    let names_class = filter.split(',').any(|r| {
        r.trim_start_matches(['!', ' '])
            .starts_with(INGRESS_CLASS_ANNOTATION)
    });
    if !options.ingress_classes.is_empty() && names_class {
        return Err(format!(
            "ingress_classes is mutually exclusive with an annotation filter on {INGRESS_CLASS_ANNOTATION}"
        ));
    }
    Ok(())
}

/// The endpoints of one Ingress.
pub fn translate(object: &Value, _cluster: &Cluster, options: &Options) -> Translation {
    match object_filter::skip_reason(object, options) {
        Err(p) => return Translation::refused(vec![p]),
        Ok(Some(why)) => return Translation::skipped(why),
        Ok(None) => {}
    }
    if let Some(why) = class_mismatch(object, options) {
        return Translation::skipped(why);
    }
    let annotations = Annotations::of(object);
    let mut found = Vec::new();
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

    let (targets, from_annotation) = targets(object, &annotations, &mut found);
    let mut hosts = hosts(object, &annotations, options, &mut found);

    let mut endpoints = endpoints_for(&hosts, &targets, &shared, &mut found);
    // `CombineWithEndpoints`: the template names an ingress that gave no endpoint, or
    // adds to them with `combine_fqdn_annotation`.
    if let Some(template) = options.fqdn_template.as_deref()
        && (options.combine_fqdn_annotation || endpoints.is_empty())
    {
        match fqdn_template::hosts(template, object, "Ingress") {
            Ok(names) => {
                let named: Vec<(String, String)> = names
                    .into_iter()
                    .map(|n| (fqdn_template::FIELD.to_string(), n))
                    .collect();
                let more = endpoints_for(&named, &targets, &shared, &mut found);
                if !options.combine_fqdn_annotation {
                    endpoints.clear();
                    hosts.clear();
                }
                endpoints.extend(more);
                hosts.extend(named);
            }
            Err(p) => found.push(p),
        }
    }
    if !found.is_empty() {
        return Translation::refused(found);
    }
    Translation {
        endpoints: merge_endpoints(endpoints),
        waiting_for_load_balancer: !hosts.is_empty() && targets.is_empty() && !from_annotation,
        ..Translation::default()
    }
}

/// `filterByIngressClass`: with `ingress_classes` set, an ingress is in when its
/// `spec.ingressClassName` is one of them, or, having none, its
/// `kubernetes.io/ingress.class` annotation is.
fn class_mismatch(object: &Value, options: &Options) -> Option<String> {
    if options.ingress_classes.is_empty() {
        return None;
    }
    let classes = &options.ingress_classes;
    let class_name = object["spec"]["ingressClassName"]
        .as_str()
        .filter(|c| !c.is_empty());
    let (class, from) = match class_name {
        Some(c) => (Some(c), "spec.ingressClassName"),
        None => (
            Annotations::of(object).raw(INGRESS_CLASS_ANNOTATION),
            INGRESS_CLASS_ANNOTATION,
        ),
    };
    match class {
        Some(c) if classes.iter().any(|k| k == c) => None,
        Some(c) => Some(format!(
            "its class {c:?} ({from}) is not one of {classes:?}"
        )),
        None => Some(format!(
            "it has no ingress class and classes {classes:?} are asked for"
        )),
    }
}

/// The targets (`TargetsFromTargetAnnotation`, else `targetsFromIngressStatus`) and
/// whether they came from the annotation.
fn targets(
    object: &Value,
    annotations: &Annotations,
    found: &mut Vec<Problem>,
) -> (Vec<String>, bool) {
    let from_annotation = annotations.targets();
    if !from_annotation.is_empty() {
        let key = annotations.get(TARGET).map(|(k, _)| k).unwrap_or_default();
        for t in &from_annotation {
            if let Err(p) = check_target(&Annotations::field(&key), t) {
                found.push(p);
            }
        }
        return (from_annotation, true);
    }
    let mut out = Vec::new();
    let lbs = object["status"]["loadBalancer"]["ingress"].as_array();
    for (i, lb) in lbs.into_iter().flatten().enumerate() {
        for key in ["ip", "hostname"] {
            if let Some(t) = lb[key].as_str().filter(|t| !t.is_empty()) {
                let field = format!("status.loadBalancer.ingress[{i}].{key}");
                if let Err(p) = check_target(&field, t) {
                    found.push(p);
                }
                out.push(t.to_string());
            }
        }
    }
    (out, false)
}

/// The hosts asked for, each with the field it came from (`endpointsFromIngress`).
fn hosts(
    object: &Value,
    annotations: &Annotations,
    options: &Options,
    found: &mut Vec<Problem>,
) -> Vec<(String, String)> {
    let spec = &object["spec"];
    let mut defined = Vec::new();
    if !options.ignore_ingress_rules_spec {
        for (i, rule) in spec["rules"].as_array().into_iter().flatten().enumerate() {
            if let Some(h) = rule["host"].as_str().filter(|h| !h.is_empty()) {
                defined.push((format!("spec.rules[{i}].host"), h.to_string()));
            }
        }
    }
    if !options.ignore_ingress_tls_spec {
        for (i, tls) in spec["tls"].as_array().into_iter().flatten().enumerate() {
            for (j, h) in tls["hosts"].as_array().into_iter().flatten().enumerate() {
                if let Some(h) = h.as_str().filter(|h| !h.is_empty()) {
                    defined.push((format!("spec.tls[{i}].hosts[{j}]"), h.to_string()));
                }
            }
        }
    }
    let mut annotated = Vec::new();
    if !options.ignore_hostname_annotation
        && let (Some(names), Some((key, _))) = (annotations.hostnames(), annotations.get(HOSTNAME))
    {
        let field = Annotations::field(&key);
        annotated.extend(
            names
                .into_iter()
                .filter(|n| !n.is_empty())
                .map(|n| (field.clone(), n)),
        );
    }
    let Some((key, source)) = annotations.get(INGRESS_HOSTNAME_SOURCE) else {
        defined.extend(annotated);
        return defined;
    };
    match source.to_ascii_lowercase().as_str() {
        DEFINED_HOSTS_ONLY => defined,
        ANNOTATION_ONLY => annotated,
        _ => {
            found.push(Problem {
                field: Annotations::field(&key),
                message: format!(
                    "{source:?} is not a hostname source: {ANNOTATION_ONLY:?} or {DEFINED_HOSTS_ONLY:?}"
                ),
            });
            Vec::new()
        }
    }
}

/// The endpoints of every host, each host checked.
fn endpoints_for(
    hosts: &[(String, String)],
    targets: &[String],
    shared: &Shared,
    found: &mut Vec<Problem>,
) -> Vec<super::Endpoint> {
    let mut out = Vec::new();
    for (field, host) in hosts {
        match check_host(field, host) {
            Ok(()) => out.extend(endpoints_for_hostname(host, targets, shared)),
            Err(p) => found.push(p),
        }
    }
    out
}
