//! The external-dns `DNSEndpoint` manifest parser: the text of one file (several YAML
//! documents; `List` and `DNSEndpointList` read item by item; other kinds skipped)
//! into desired entries, each with the line it came from, and errors that name the
//! file and line of every problem.
//!
//! Pure and synchronous (no file system, no runtime), so that every source of
//! DNSEndpoint objects uses the same rules: the file source ([`super::file`]) and a
//! Kubernetes source alike. It also says what each error stands for (an endpoint, a
//! whole resource, the whole text), so a source can keep the last accepted version of
//! exactly what broke.
//!
//! ```yaml
//! apiVersion: externaldns.k8s.io/v1alpha1
//! kind: DNSEndpoint
//! metadata: {name: web, namespace: default}
//! spec:
//!   endpoints:
//!     - dnsName: app.example.com
//!       recordType: A
//!       recordTTL: 300          # optional; 0 or absent: the zone's default TTL
//!       targets: [192.0.2.10]
//! ```
//!
//! `setIdentifier` (one set of a routing policy) and `providerSpecific` (`{name, value}`
//! pairs such as `aws/weight`, canonicalised by `dnsplane_common::routing`) are part of
//! the record; a driver that cannot write them refuses the record (`INVALID`). With
//! `alias: "true"` the target is a DNS name whatever the type. `labels` (a mapping of
//! strings, e.g. `resource: ingress/default/web`) are kept with the record and reported
//! back, never part of its data ([`crate::source::labels`]).
//!
//! The text is untrusted: whatever it holds, parsing ends with entries and errors, in
//! bounded time, memory and stack. A text over [`MAX_MANIFEST_BYTES`], holding a NUL
//! byte, or nested deeper than [`MAX_DEPTH`] is refused whole before it is loaded (a
//! 20 KB file of `- - - …` once overflowed the stack); every endpoint is checked
//! against what a DNS answer can carry ([`dnsplane_common::wire`]).
use super::{DesiredEntry, Origin, SourceError};
use dnsplane_common::error::excerpt;
use dnsplane_common::rrset::{MAX_TTL, MAX_VALUES};
use dnsplane_common::{ModelError, Name, RecordType, SetId, rdata::canonicalize, routing, wire};
use labels::labels;
use marked_yaml::LoaderOptions;
use marked_yaml::types::{MarkedMappingNode, MarkedScalarNode, Node, Span};
use properties::provider_specific;
use text::{check_depth, check_text, describe_load_error, is_blank, split_documents};

use std::ops::Range;

pub use text::{MAX_DEPTH, MAX_MANIFEST_BYTES};

mod labels;
mod properties;
pub(crate) mod text;
pub mod write;

/// The `source` written into every origin and error of entries read from files.
pub const SOURCE_KIND: &str = "file";

/// An accepted entry and the slot it came from.
#[derive(Debug, Clone, PartialEq, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) struct Accepted {
    pub(crate) entry: DesiredEntry,
    pub(crate) slot: Slot,
}

/// Where an endpoint sits: its resource and its index in `spec.endpoints`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) struct Slot {
    pub(crate) resource: std::sync::Arc<str>,
    pub(crate) index: usize,
}

/// Something that was in the file but could not be accepted.
#[derive(Debug)]
pub(crate) struct Rejected {
    pub(crate) what: RejectedWhat,
    /// Its errors, as indices into `ParsedFile::errors`.
    pub(crate) errors: Range<usize>,
}

#[derive(Debug)]
pub(crate) enum RejectedWhat {
    /// One endpoint; `key` when its name and type could be read.
    Endpoint {
        key: Option<(Name, RecordType, SetId)>,
        slot: Slot,
    },
    /// A whole resource.
    Resource(String),
}

/// Parses the `DNSEndpoint` manifests in `text`, without any last-good retention.
/// `label` names the input in locations (`label:line`), e.g. a path.
pub fn parse_manifests(label: &str, text: &str) -> (Vec<DesiredEntry>, Vec<SourceError>) {
    let parsed = parse_file(label, text);
    if parsed.fatal.is_empty() {
        (
            parsed.accepted.into_iter().map(|a| a.entry).collect(),
            parsed.errors,
        )
    } else {
        (Vec::new(), parsed.errors)
    }
}

/// Everything one file (or one object text) declares: what was accepted, what was
/// rejected (so that a keep-last-good merge knows what each error stands for), the
/// errors, and which of them make the whole text unusable.
#[derive(Debug, Default)]
pub(crate) struct ParsedFile {
    pub(crate) accepted: Vec<Accepted>,
    pub(crate) rejected: Vec<Rejected>,
    pub(crate) errors: Vec<SourceError>,
    /// Indices of errors that make the whole file unusable (YAML syntax, size, depth,
    /// NUL bytes).
    pub(crate) fatal: Vec<usize>,
    /// How many documents (or list items) are DNSEndpoints, broken ones included: a
    /// text with none declares nothing, which a source may not want to read as "no
    /// records".
    pub(crate) endpoint_documents: usize,
    /// What was read but deliberately not used, e.g. a record type dnsplane does not
    /// model in a zone file: named so nobody thinks it was planned, never an error
    /// (it keeps nothing and breaks nothing).
    pub(crate) warnings: Vec<SourceError>,
}

/// Parses every document of `text`; `label` names it in locations (`label:line`).
pub(crate) fn parse_file(label: &str, text: &str) -> ParsedFile {
    parse_file_for(label, text, None)
}

/// [`parse_file`] for the objects of one `resource` whatever their metadata says (a
/// Kubernetes object translated to a DNSEndpoint spec is `Service ns/name`): its
/// entries and slots share that one allocation instead of each holding its own name.
pub(crate) fn parse_file_for(
    label: &str,
    text: &str,
    resource: Option<&std::sync::Arc<str>>,
) -> ParsedFile {
    let mut out = ParsedFile::default();
    let fatal = |out: &mut ParsedFile, line: Option<usize>, message: String| {
        out.fatal.push(out.errors.len());
        out.errors.push(file_error(label, line, message));
    };
    if let Err((line, message)) = check_text(text) {
        fatal(&mut out, line, message);
        return out;
    }
    let kind: std::sync::Arc<str> = SOURCE_KIND.into();
    // The parser reports errors at the end of input one line past the last one.
    let last_line = text.lines().count().max(1);
    for (number, doc) in split_documents(text).into_iter().enumerate() {
        if is_blank(&doc.text) {
            continue;
        }
        if let Err((line, message)) = check_depth(&doc.text) {
            fatal(&mut out, Some((line + doc.offset).min(last_line)), message);
            continue;
        }
        let options = LoaderOptions::default().error_on_duplicate_keys(true);
        match marked_yaml::parse_yaml_with_options(0, &doc.text, options) {
            Ok(node) => {
                let cx = Doc {
                    label,
                    resource,
                    kind: &kind,
                    offset: doc.offset,
                    number: number + 1,
                };
                if let Some(map) = node.as_mapping() {
                    parse_object(&cx, map, None, &mut out);
                }
            }
            Err(e) => {
                let (line, message) = describe_load_error(&e);
                out.fatal.push(out.errors.len());
                out.errors.push(file_error(
                    label,
                    line.map(|l| (l + doc.offset).min(last_line)),
                    message,
                ));
            }
        }
    }
    out
}

/// Where a document sits in its file.
#[derive(Debug)]
struct Doc<'a> {
    label: &'a str,
    /// The resource every object of the document is, whatever its metadata says.
    resource: Option<&'a std::sync::Arc<str>>,
    /// [`SOURCE_KIND`], one allocation shared by the file's entries.
    kind: &'a std::sync::Arc<str>,
    offset: usize,
    /// 1-based document number in the file.
    number: usize,
}

impl Doc<'_> {
    /// The file line (1-based) of a node, if the parser recorded one.
    fn line(&self, span: &Span) -> Option<usize> {
        span.start().map(|m| m.line() + self.offset)
    }
}

pub(crate) fn file_error(label: &str, line: Option<usize>, message: String) -> SourceError {
    SourceError {
        source: SOURCE_KIND.into(),
        location: location(label, line),
        record: String::new(),
        message,
    }
}

fn location(label: &str, line: Option<usize>) -> String {
    match line {
        Some(l) => format!("{label}:{l}"),
        None => label.to_string(),
    }
}

fn scalar<'n>(map: &'n MarkedMappingNode, key: &str) -> Option<&'n MarkedScalarNode> {
    map.get_scalar(key).filter(|s| !is_null(s))
}

fn missing_or_not_text(map: &MarkedMappingNode, key: &str) -> String {
    match map.get_node(key) {
        None | Some(Node::Scalar(_)) => format!("{key} is missing"),
        Some(_) => format!("{key} must be a string"),
    }
}

fn is_null(s: &MarkedScalarNode) -> bool {
    matches!(s.as_str().trim(), "" | "~" | "null" | "Null" | "NULL")
}

/// One Kubernetes object: a DNSEndpoint, a list of objects, or something skipped.
/// `item` is the index within a list.
fn parse_object(cx: &Doc<'_>, map: &MarkedMappingNode, item: Option<usize>, out: &mut ParsedFile) {
    let kind_node = map.get_scalar("kind");
    let kind = kind_node.map(|k| k.as_str().trim()).unwrap_or("");
    let doc_line = cx.line(map.span());
    let metadata = map.get_mapping("metadata");
    let meta = |key: &str| {
        metadata
            .and_then(|m| scalar(m, key))
            .map(|s| s.as_str().trim().to_string())
    };
    let resource = match (cx.resource, meta("name")) {
        (Some(resource), _) => resource.to_string(),
        (None, Some(name)) => format!(
            "DNSEndpoint {}/{name}",
            meta("namespace").unwrap_or_else(|| "default".into())
        ),
        (None, None) => match item {
            None => format!("DNSEndpoint {}#{}", cx.label, cx.number),
            Some(i) => format!("DNSEndpoint {}#{}.{}", cx.label, cx.number, i + 1),
        },
    };

    if item.is_none() && (kind == "List" || kind == "DNSEndpointList") {
        match map.get_node("items") {
            Some(Node::Sequence(items)) => {
                for (i, it) in items.iter().enumerate() {
                    match it.as_mapping() {
                        Some(m) => parse_object(cx, m, Some(i), out),
                        None => out.errors.push(file_error(
                            cx.label,
                            cx.line(it.span()),
                            format!("{kind} item {} is not an object", i + 1),
                        )),
                    }
                }
            }
            Some(Node::Scalar(s)) if is_null(s) => {}
            None => {}
            Some(other) => out.errors.push(file_error(
                cx.label,
                cx.line(other.span()),
                "items must be a list".into(),
            )),
        }
        return;
    }

    let spec_endpoints = map
        .get_mapping("spec")
        .and_then(|s| s.get_node("endpoints"))
        .is_some();
    if kind == "DNSEndpoint" || spec_endpoints {
        out.endpoint_documents += 1;
        // The resource goes into every ownership record: Kubernetes' own limits (a
        // 253-character name, a 63-character namespace) keep it short.
        let long = [("name", 253), ("namespace", 63)]
            .into_iter()
            .find_map(|(key, max)| meta(key).filter(|v| v.len() > max).map(|v| (key, max, v)));
        if let Some((key, max, value)) = long {
            let start = out.errors.len();
            let line = metadata.and_then(|m| cx.line(m.span())).or(doc_line);
            out.errors.push(file_error(
                cx.label,
                line,
                format!(
                    "metadata.{key} {:?} is {} characters, above Kubernetes' limit of {max}; its endpoints are not used",
                    excerpt(&value),
                    value.len()
                ),
            ));
            out.rejected.push(Rejected {
                what: RejectedWhat::Resource(resource),
                errors: start..out.errors.len(),
            });
            return;
        }
    }
    if kind != "DNSEndpoint" {
        if spec_endpoints {
            // Most likely a misspelt kind: say so, and keep what this resource had.
            let line = kind_node.and_then(|k| cx.line(k.span())).or(doc_line);
            let start = out.errors.len();
            let shown = if kind.is_empty() {
                "missing".to_string()
            } else {
                format!("{:?}", excerpt(kind))
            };
            out.errors.push(file_error(
                cx.label,
                line,
                format!("the document has spec.endpoints but its kind is {shown}, not \"DNSEndpoint\"; its endpoints are not used"),
            ));
            out.rejected.push(Rejected {
                what: RejectedWhat::Resource(resource),
                errors: start..out.errors.len(),
            });
        } else {
            tracing::debug!(
                file = cx.label,
                document = cx.number,
                kind,
                "skipping a document that is not a DNSEndpoint"
            );
        }
        return;
    }

    let broken = |out: &mut ParsedFile, line: Option<usize>, message: String| {
        let start = out.errors.len();
        out.errors.push(file_error(cx.label, line, message));
        out.rejected.push(Rejected {
            what: RejectedWhat::Resource(resource.clone()),
            errors: start..out.errors.len(),
        });
    };
    let spec = match map.get_node("spec") {
        Some(Node::Mapping(spec)) => spec,
        None => return broken(out, doc_line, format!("{resource}: spec is missing")),
        Some(other) => {
            return broken(
                out,
                cx.line(other.span()),
                format!("{resource}: spec must be a mapping"),
            );
        }
    };
    let endpoints = match spec.get_node("endpoints") {
        Some(Node::Sequence(eps)) => eps,
        Some(Node::Scalar(s)) if is_null(s) => return,
        None => {
            return broken(
                out,
                cx.line(spec.span()).or(doc_line),
                format!("{resource}: spec.endpoints is missing (write `endpoints: []` for none)"),
            );
        }
        Some(other) => {
            return broken(
                out,
                cx.line(other.span()),
                format!("{resource}: spec.endpoints must be a list"),
            );
        }
    };
    let resource: std::sync::Arc<str> = match cx.resource {
        Some(shared) => shared.clone(),
        None => resource.into(),
    };
    for (index, node) in endpoints.iter().enumerate() {
        let slot = Slot {
            resource: resource.clone(),
            index,
        };
        parse_endpoint(cx, node, slot, out);
    }
}

fn parse_endpoint(cx: &Doc<'_>, node: &Node, slot: Slot, out: &mut ParsedFile) {
    let start = out.errors.len();
    let ep_line = cx.line(node.span());
    let Some(ep) = node.as_mapping() else {
        out.errors.push(file_error(
            cx.label,
            ep_line,
            "an endpoint must be a mapping (dnsName, recordType, targets)".into(),
        ));
        out.rejected.push(Rejected {
            what: RejectedWhat::Endpoint { key: None, slot },
            errors: start..out.errors.len(),
        });
        return;
    };
    let line_of = |key: &str| ep.get_node(key).and_then(|n| cx.line(n.span())).or(ep_line);
    let mut problems: Vec<(Option<usize>, String)> = Vec::new();

    let raw_name = scalar(ep, "dnsName").map(|s| s.as_str().trim());
    let name = match raw_name {
        None => {
            problems.push((line_of("dnsName"), missing_or_not_text(ep, "dnsName")));
            None
        }
        Some(raw) => match Name::parse(raw) {
            Ok(n) => Some(n),
            Err(e) => {
                problems.push((line_of("dnsName"), e.to_string()));
                None
            }
        },
    };
    let raw_type = scalar(ep, "recordType").map(|s| s.as_str().trim());
    let rtype = match raw_type {
        None => {
            problems.push((line_of("recordType"), missing_or_not_text(ep, "recordType")));
            None
        }
        Some(raw) => match RecordType::parse(raw) {
            Ok(t) => Some(t),
            Err(e) => {
                problems.push((line_of("recordType"), e.to_string()));
                None
            }
        },
    };
    let record = match (&name, raw_name) {
        (Some(n), _) => n.to_string(),
        (None, Some(raw)) => excerpt(raw),
        (None, None) => String::new(),
    };
    let record = match (rtype, raw_type) {
        (Some(t), _) => format!("{record} {t}"),
        (None, Some(raw)) => format!("{record} {}", excerpt(raw)),
        (None, None) => record,
    }
    .trim()
    .to_string();

    // A bad identifier leaves the key unknown (`None`), so a keep-last-good merge
    // finds the endpoint by its slot instead.
    let set = match scalar(ep, "setIdentifier") {
        None => Some(SetId::NONE),
        Some(id) => match SetId::new(id.as_str().trim()) {
            Ok(set) => Some(set),
            Err(e) => {
                problems.push((cx.line(id.span()).or(ep_line), e.to_string()));
                None
            }
        },
    };
    let properties = provider_specific(cx, ep, ep_line, &mut problems);
    let labels = labels(cx, ep, ep_line, &mut problems);
    let alias = routing::is_alias(properties.iter().map(|(n, v)| (n.as_str(), v.as_str())));

    let ttl = match scalar(ep, "recordTTL") {
        None => None,
        Some(s) => match s.as_str().trim().parse::<i64>() {
            Ok(0) => None,
            Ok(t) if t < 0 => {
                problems.push((cx.line(s.span()), format!("recordTTL {t} is negative")));
                None
            }
            Ok(t) => match u32::try_from(t).ok().filter(|t| *t <= MAX_TTL) {
                Some(t) => Some(t),
                None => {
                    problems.push((
                        cx.line(s.span()),
                        format!("recordTTL {t} is above the maximum of {MAX_TTL} seconds"),
                    ));
                    None
                }
            },
            Err(_) => {
                problems.push((
                    cx.line(s.span()),
                    format!(
                        "recordTTL {:?} is not a whole number of seconds",
                        excerpt(s.as_str())
                    ),
                ));
                None
            }
        },
    };

    let mut values = Vec::new();
    match ep.get_node("targets") {
        None => problems.push((
            ep_line,
            "targets is missing: an endpoint needs at least one target".into(),
        )),
        Some(Node::Scalar(s)) if is_null(s) => {
            problems.push((
                cx.line(s.span()).or(ep_line),
                "targets is empty: an endpoint needs at least one target".into(),
            ));
        }
        Some(Node::Sequence(targets)) if targets.is_empty() => {
            problems.push((
                line_of("targets"),
                "targets is empty: an endpoint needs at least one target".into(),
            ));
        }
        Some(Node::Sequence(targets)) => {
            for t in targets.iter() {
                let line = cx.line(t.span()).or(ep_line);
                let Some(raw) = t.as_scalar() else {
                    problems.push((line, "a target must be a string".into()));
                    continue;
                };
                let Some(rtype) = rtype else { continue };
                let canonical = if alias {
                    Name::parse(raw.as_str()).map(|n| n.to_string())
                } else {
                    canonicalize(rtype, raw.as_str())
                };
                match canonical {
                    Ok(v) => values.push(v),
                    Err(ModelError::Value { value, problem, .. }) => {
                        problems.push((line, format!("target {value:?}: {problem}")));
                    }
                    Err(e) => {
                        problems.push((line, format!("target {:?}: {e}", excerpt(raw.as_str()))))
                    }
                }
            }
            values.sort();
            values.dedup();
            values.shrink_to_fit();
            if rtype == Some(RecordType::Cname) && values.len() > 1 {
                problems.push((
                    line_of("targets"),
                    format!("a CNAME holds exactly one target, not {}", values.len()),
                ));
            }
            if alias && values.len() > 1 {
                problems.push((
                    line_of("targets"),
                    format!("an alias holds exactly one target, not {}", values.len()),
                ));
            }
            if alias {
                // Answered with its target's records, not with a name.
            } else if values.len() > MAX_VALUES {
                problems.push((
                    line_of("targets"),
                    format!("{} targets, above the limit of {MAX_VALUES}", values.len()),
                ));
            } else if let (Some(name), Some(rtype)) = (&name, rtype)
                && let Err(problem) = wire::check_answer(name, rtype, &values)
            {
                problems.push((line_of("targets"), problem));
            }
        }
        Some(other) => problems.push((
            cx.line(other.span()).or(ep_line),
            "targets must be a list of strings".into(),
        )),
    }

    match (name, rtype, set) {
        (Some(name), Some(rtype), Some(set)) if problems.is_empty() => {
            out.accepted.push(Accepted {
                entry: DesiredEntry {
                    name,
                    rtype,
                    ttl,
                    values,
                    set,
                    properties,
                    labels,
                    origin: Origin {
                        source: cx.kind.clone(),
                        location: location(cx.label, ep_line).into(),
                        resource: slot.resource.clone(),
                    },
                },
                slot,
            })
        }
        (name, rtype, set) => {
            for (line, message) in problems {
                out.errors.push(SourceError {
                    source: SOURCE_KIND.into(),
                    location: location(cx.label, line),
                    record: record.clone(),
                    message,
                });
            }
            let key = match (name, rtype, set) {
                (Some(n), Some(t), Some(s)) => Some((n, t, s)),
                _ => None,
            };
            out.rejected.push(Rejected {
                what: RejectedWhat::Endpoint { key, slot },
                errors: start..out.errors.len(),
            });
        }
    }
}

#[cfg(test)]
mod hostile_tests;
#[cfg(test)]
mod tests;
