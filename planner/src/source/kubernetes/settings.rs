//! What a Kubernetes source's config keys mean to it: the kinds, the translation
//! options, and the checks that refuse a config at start (each naming its key). Here
//! and not in `config`, which the source imports: config stays a leaf.
use crate::config::KubernetesSourceConfig;
use std::time::Duration;

/// The kinds configured, parsed (the config loader has refused unknown ones).
pub fn kinds(config: &KubernetesSourceConfig) -> Vec<super::kinds::Kind> {
    use super::kinds::Kind;
    let mut kinds: Vec<Kind> = config.kinds.iter().filter_map(|k| Kind::parse(k)).collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The translation options these keys give.
pub fn options(config: &KubernetesSourceConfig) -> super::kinds::Options {
    super::kinds::Options {
        annotation_filter: config.annotation_filter.clone(),
        fqdn_template: config.fqdn_template.clone(),
        combine_fqdn_annotation: config.combine_fqdn_annotation,
        ignore_hostname_annotation: config.ignore_hostname_annotation,
        publish_internal_services: config.publish_internal_services,
        publish_host_ip: config.publish_host_ip,
        always_publish_not_ready_addresses: config.always_publish_not_ready_addresses,
        service_types: config.service_types.clone(),
        expose_internal_ipv6: config.expose_internal_ipv6,
        exclude_unschedulable: config.exclude_unschedulable,
        ingress_classes: config.ingress_classes.clone(),
        ignore_ingress_tls_spec: config.ignore_ingress_tls_spec,
        ignore_ingress_rules_spec: config.ignore_ingress_rules_spec,
        gateway_name: config.gateway_name.clone(),
        gateway_namespace: config.gateway_namespace.clone(),
        gateway_label_filter: config.gateway_label_filter.clone(),
    }
}

/// What is wrong with the keys, each naming the key: an unknown kind, a selector
/// or service type that cannot be read.
pub fn check(config: &KubernetesSourceConfig) -> Vec<String> {
    use super::kinds::{Kind, annotations::Selector};
    let mut errors = Vec::new();
    if config.kinds.is_empty() {
        errors.push(
            "kinds is empty: name at least one kind (the default is [\"DNSEndpoint\"])".to_string(),
        );
    }
    for k in &config.kinds {
        if Kind::parse(k).is_none() {
            let known: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
            errors.push(format!(
                "kinds: {k:?} is not a kind this source reads (one of {})",
                known.join(", ")
            ));
        }
    }
    for (key, sel) in [
        ("annotation_filter", &config.annotation_filter),
        ("gateway_label_filter", &config.gateway_label_filter),
    ] {
        if let Some(Err(e)) = sel.as_deref().map(Selector::parse) {
            errors.push(format!("{key}: {e}"));
        }
    }
    use super::kinds::service;
    if let Err(e) = service::check_service_types(&config.service_types) {
        errors.push(format!("service_types: {e}"));
    }
    if let Some(Err(e)) = config.fqdn_template.as_deref().map(service::check_template) {
        errors.push(format!("fqdn_template: {e}"));
    }
    if let Err(e) = super::kinds::ingress::check_options(&options(config)) {
        errors.push(e);
    }
    if config.target_loss_grace > Duration::from_secs(24 * 3600) {
        errors.push("target_loss_grace: at most 24h".to_string());
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(toml_text: &str) -> KubernetesSourceConfig {
        toml::from_str(toml_text).expect("parses")
    }

    #[test]
    fn bad_keys_are_refused_naming_the_key() {
        assert!(check(&config("")).is_empty(), "the defaults are fine");
        assert_eq!(kinds(&config("")), [super::super::kinds::Kind::DnsEndpoint]);
        for (text, want) in [
            (
                "kinds = [\"Services\"]",
                "kinds: \"Services\" is not a kind this source reads",
            ),
            ("kinds = []", "kinds is empty"),
            (
                "annotation_filter = \"team in front\"",
                "annotation_filter:",
            ),
            ("service_types = [\"Balancer\"]", "service_types:"),
            ("fqdn_template = \"{{.Nope\"", "fqdn_template:"),
            (
                "ingress_classes = [\"nginx\"]\nannotation_filter = \"kubernetes.io/ingress.class=nginx\"",
                "ingress_classes",
            ),
            (
                "target_loss_grace = \"2d\"",
                "target_loss_grace: at most 24h",
            ),
        ] {
            let errors = check(&config(text));
            assert!(
                errors.iter().any(|e| e.contains(want)),
                "{text}: {errors:?}"
            );
        }
    }
}
