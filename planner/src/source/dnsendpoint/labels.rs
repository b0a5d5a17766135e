//! An endpoint's `labels` mapping, read into [`Labels`]: kept with the record and
//! reported back, never part of its data.
use super::{Doc, is_null};
use crate::source::Labels;
use dnsplane_common::error::excerpt;
use marked_yaml::types::{MarkedMappingNode, Node};
use std::collections::BTreeMap;

/// `labels`: a mapping of strings to strings, checked against [`Labels::new`]'s
/// bounds; problems go to `problems`, at the line of the label at fault.
pub(super) fn labels(
    cx: &Doc<'_>,
    ep: &MarkedMappingNode,
    ep_line: Option<usize>,
    problems: &mut Vec<(Option<usize>, String)>,
) -> Labels {
    let map = match ep.get_node("labels") {
        None => return Labels::NONE,
        Some(Node::Scalar(s)) if is_null(s) => return Labels::NONE,
        Some(Node::Mapping(map)) => map,
        Some(other) => {
            problems.push((
                cx.line(other.span()).or(ep_line),
                "labels must be a mapping of strings to strings (`labels: {owner: web}`)".into(),
            ));
            return Labels::NONE;
        }
    };
    let line = cx.line(map.span()).or(ep_line);
    let mut pairs = BTreeMap::new();
    let mut lines = BTreeMap::new();
    let before = problems.len();
    for (key, value) in map.iter() {
        let key_line = cx.line(key.span()).or(line);
        let value = match value {
            Node::Scalar(s) if is_null(s) => "",
            Node::Scalar(s) => s.as_str(),
            _ => {
                problems.push((
                    key_line,
                    format!("labels.{}: a label value must be a string", excerpt(key)),
                ));
                continue;
            }
        };
        lines.insert(key.as_str().to_string(), key_line);
        pairs.insert(key.as_str().to_string(), value.to_string());
    }
    if problems.len() > before {
        return Labels::NONE;
    }
    match Labels::new(pairs) {
        Ok(labels) => labels,
        Err(e) => {
            let at = e
                .key()
                .and_then(|k| lines.iter().find(|(key, _)| excerpt(key) == k))
                .map_or(line, |(_, l)| *l);
            problems.push((at, format!("labels: {e}")));
            Labels::NONE
        }
    }
}
