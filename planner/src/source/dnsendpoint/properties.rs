//! An endpoint's `providerSpecific` list, read into canonical properties.
use super::{Doc, is_null, scalar};
use dnsplane_common::routing;
use marked_yaml::types::{MarkedMappingNode, Node};

/// `providerSpecific`: a list of `{name, value}`, canonicalised
/// ([`routing::canonical_properties`]); problems go to `problems`.
pub(super) fn provider_specific(
    cx: &Doc<'_>,
    ep: &MarkedMappingNode,
    ep_line: Option<usize>,
    problems: &mut Vec<(Option<usize>, String)>,
) -> Vec<(String, String)> {
    let items = match ep.get_node("providerSpecific") {
        None => return Vec::new(),
        Some(Node::Scalar(s)) if is_null(s) => return Vec::new(),
        Some(Node::Sequence(items)) => items,
        Some(other) => {
            problems.push((
                cx.line(other.span()).or(ep_line),
                "providerSpecific must be a list of {name, value}".into(),
            ));
            return Vec::new();
        }
    };
    let line = cx.line(items.span()).or(ep_line);
    let mut pairs = Vec::new();
    for item in items.iter() {
        let item_line = cx.line(item.span()).or(line);
        let Some(map) = item.as_mapping() else {
            problems.push((
                item_line,
                "a providerSpecific item must be a mapping {name, value}".into(),
            ));
            continue;
        };
        let Some(name) = scalar(map, "name") else {
            problems.push((item_line, "a providerSpecific item needs a name".into()));
            continue;
        };
        let value = scalar(map, "value")
            .map(|v| v.as_str().to_string())
            .unwrap_or_default();
        pairs.push((name.as_str().to_string(), value));
    }
    match routing::canonical_properties(&pairs) {
        Ok(p) => p,
        Err(e) => {
            problems.push((line, e.to_string()));
            Vec::new()
        }
    }
}
