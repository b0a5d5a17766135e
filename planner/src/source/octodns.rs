//! octoDNS's YAML zone files (its `YamlProvider`, release 1.22): one file per zone,
//! named for it (`example.com.yaml` holds `example.com.`), read into desired
//! entries, and written back ([`write`]).
//!
//! ```yaml
//! ---
//! '':                     # the apex
//!   - type: MX
//!     values:
//!       - {exchange: mx1.example.com., preference: 10}
//!   - type: TXT
//!     value: v=spf1 -all  # a ';' is written '\;'
//! www:
//!   ttl: 300              # absent: octoDNS's default of 3600
//!   type: A
//!   values: [192.0.2.1, 192.0.2.2]
//! ```
//!
//! Every record becomes an entry with its TTL (octoDNS's default, 3600, when absent:
//! the file means exactly what it means to octoDNS) and its values in dnsplane's
//! canonical form. What dnsplane does not plan is named in a warning, never turned
//! into something else: a type dnsplane does not model (ALIAS, DNAME, LOC, SPF,
//! URLFWD, ...), the apex NS (the provider's), a record with `geo:` or `dynamic:`
//! routing, a record octoDNS itself ignores (`octodns: {ignored: true}`); other
//! `octodns:` settings (healthcheck, lenient, included, excluded) are named and
//! left out, the record itself used.
//!
//! Errors follow the DNSEndpoint parser's rules ([`super::dnsendpoint`]): a text
//! that is not a YAML mapping (syntax, duplicate key, size, NUL byte, depth) is
//! fatal, so a file source keeps the file's last accepted records; a bad record is
//! one rejected entry (its name and type, when readable), so only that RRSet keeps
//! its last good version. Every error names `file:line` and the record.
//!
//! What a file declares: a mapping, even the empty `{}`, declares its records (none
//! for `{}`: the zone is meant to be empty); a file of only comments, or an empty
//! document (`---` alone), declares nothing, which a file source reads as doubt and
//! never as "delete every record" (`endpoint_documents` is 0).
use super::dnsendpoint::text::{
    check_depth, check_text_within, describe_load_error, is_blank, split_documents,
};
use super::dnsendpoint::{
    Accepted, ParsedFile, Rejected, RejectedWhat, SOURCE_KIND, Slot, file_error,
};
use super::{DesiredEntry, Origin, SourceError};
use dnsplane_common::error::excerpt;
use dnsplane_common::rrset::{MAX_TTL, MAX_VALUES};
use dnsplane_common::{ModelError, Name, RecordType, SetId, rdata::canonicalize, wire};
use marked_yaml::types::{MarkedMappingNode, MarkedScalarNode, Node, Span};
use marked_yaml::{LoadError, LoaderOptions};
use std::collections::HashMap;
use std::sync::Arc;
use yaml::{is_null, natural_cmp, pyyaml_non_string, scalar_text};

mod values;
mod write;
mod yaml;

pub use write::write;

/// The largest octoDNS zone file read (16 MiB, about 300,000 records): octoDNS keeps
/// a zone in one file, so a large zone is a large file (a 100,000-record zone is about
/// 5 MB), where a DNSEndpoint file stays at 4 MiB.
pub const MAX_OCTODNS_BYTES: usize = 16 << 20;

/// The TTL octoDNS's YamlProvider gives a record without one (its `default_ttl`).
pub const DEFAULT_TTL: u32 = 3600;

/// Record types octoDNS 1.22 knows that dnsplane does not model: read, named in a
/// warning, skipped.
pub const UNMODELLED_TYPES: [&str; 7] = [
    "ALIAS",
    "DNAME",
    "LOC",
    "OPENPGPKEY",
    "SPF",
    "URI",
    "URLFWD",
];

/// What one octoDNS zone file declares.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Empty when the file could not be read as a whole (see `errors`).
    pub entries: Vec<DesiredEntry>,
    pub errors: Vec<SourceError>,
    /// What was read and deliberately not planned, each named.
    pub warnings: Vec<SourceError>,
}

/// Parses the octoDNS zone file `text` of `zone`; `label` names it in locations
/// (`label:line`), e.g. its path.
pub fn parse(label: &str, text: &str, zone: &Name) -> Parsed {
    let parsed = parse_file(label, text, zone);
    let entries = if parsed.fatal.is_empty() {
        parsed.accepted.into_iter().map(|a| a.entry).collect()
    } else {
        Vec::new()
    };
    Parsed {
        entries,
        errors: parsed.errors,
        warnings: parsed.warnings,
    }
}

/// [`parse`] with what a keep-last-good source needs: each entry's slot, what each
/// error stands for, which errors are fatal.
pub(crate) fn parse_file(label: &str, text: &str, zone: &Name) -> ParsedFile {
    let mut out = ParsedFile::default();
    let fatal = |out: &mut ParsedFile, line: Option<usize>, message: String| {
        out.fatal.push(out.errors.len());
        out.errors.push(file_error(label, line, message));
    };
    if let Err((line, message)) = check_text_within(text, MAX_OCTODNS_BYTES) {
        fatal(&mut out, line, message);
        return out;
    }
    let last_line = text.lines().count().max(1);
    let documents: Vec<_> = split_documents(text)
        .into_iter()
        .filter(|d| !is_blank(&d.text))
        .collect();
    let doc = match documents.as_slice() {
        [] => return out,
        [doc] => doc,
        [_, second, ..] => {
            let line = (second.offset + 1).min(last_line);
            fatal(&mut out, Some(line), "a second YAML document: an octoDNS zone file holds one mapping of names to records".into());
            return out;
        }
    };
    if let Err((line, message)) = check_depth(&doc.text) {
        fatal(&mut out, Some((line + doc.offset).min(last_line)), message);
        return out;
    }
    // Without coercion a quoted scalar keeps its quotes' meaning: `''` is text.
    let options = LoaderOptions::default()
        .error_on_duplicate_keys(true)
        .prevent_coercion(true);
    let node = match marked_yaml::parse_yaml_with_options(0, &doc.text, options) {
        Ok(node) => node,
        Err(e) => {
            let (line, message) = match &e {
                LoadError::TopLevelMustBeMapping(m) | LoadError::TopLevelMustBeSequence(m) => (
                    Some(m.line()),
                    "an octoDNS zone file is a mapping of names to records".to_string(),
                ),
                _ => describe_load_error(&e),
            };
            fatal(
                &mut out,
                line.map(|l| (l + doc.offset).min(last_line)),
                message,
            );
            return out;
        }
    };
    let Some(map) = node.as_mapping() else {
        fatal(
            &mut out,
            Some(doc.offset + 1),
            "an octoDNS zone file is a mapping of names to records".into(),
        );
        return out;
    };
    out.endpoint_documents = 1;
    let cx = Cx {
        label,
        zone,
        offset: doc.offset,
        kind: SOURCE_KIND.into(),
        resource: format!("octoDNS zone {label}").into(),
        order_warned: std::cell::Cell::new(false),
        seen: Default::default(),
    };
    cx.check_order(map, &mut out);
    let mut index = 0;
    for (key, node) in map.iter() {
        let line = cx.line(key.span());
        let name = cx.name(key);
        match node {
            Node::Sequence(records) => {
                for record in records.iter() {
                    let line = cx.line(record.span()).or(line);
                    cx.record(&name, key, record, line, index, &mut out);
                    index += 1;
                }
            }
            record => {
                cx.record(&name, key, record, line, index, &mut out);
                index += 1;
            }
        }
    }
    out
}

/// What every record of one file shares.
struct Cx<'a> {
    label: &'a str,
    zone: &'a Name,
    offset: usize,
    kind: Arc<str>,
    /// `octoDNS zone <label>`: one allocation for every entry and slot of the file.
    resource: Arc<str>,
    /// The order warning is given once per file.
    order_warned: std::cell::Cell<bool>,
    /// The line of each name and type read so far, to refuse a second one.
    seen: std::cell::RefCell<HashMap<(Name, RecordType), usize>>,
}

impl Cx<'_> {
    fn line(&self, span: &Span) -> Option<usize> {
        span.start().map(|m| m.line() + self.offset)
    }

    fn location(&self, line: Option<usize>) -> String {
        match line {
            Some(l) => format!("{}:{l}", self.label),
            None => self.label.to_string(),
        }
    }

    fn warn(&self, out: &mut ParsedFile, line: Option<usize>, record: String, message: String) {
        out.warnings.push(SourceError {
            source: SOURCE_KIND.into(),
            location: self.location(line),
            record,
            message,
        });
    }

    /// Warns (once per file) when keys are not in octoDNS's natural order: its
    /// YamlProvider refuses such a file unless `enforce_order: false`.
    fn check_order(&self, map: &MarkedMappingNode, out: &mut ParsedFile) {
        if self.order_warned.get() {
            return;
        }
        let keys: Vec<&MarkedScalarNode> = map.keys().collect();
        for pair in keys.windows(2) {
            if natural_cmp(pair[0].as_str(), pair[1].as_str()).is_gt() {
                self.order_warned.set(true);
                self.warn(
                    out,
                    self.line(pair[1].span()),
                    String::new(),
                    format!(
                        "key {:?} comes before {:?} in octoDNS's sort order: octoDNS's YamlProvider refuses this file unless enforce_order is false",
                        excerpt(pair[1].as_str()),
                        excerpt(pair[0].as_str())
                    ),
                );
                return;
            }
        }
    }

    /// The absolute name of a key: relative to the zone, `''` the apex.
    fn name(&self, key: &MarkedScalarNode) -> Result<Name, String> {
        let raw = key.as_str();
        if let Some(read) = pyyaml_non_string(key).filter(|r| !r.eq_ignore_ascii_case(raw)) {
            return Err(format!(
                "octoDNS's YAML loader reads the unquoted name {:?} as {read}: quote it ('{}')",
                excerpt(raw),
                excerpt(raw)
            ));
        }
        if raw == "@" {
            return Err("name \"@\": octoDNS writes the apex as ''".into());
        }
        if raw.ends_with('.') {
            return Err(format!(
                "name {:?} ends with '.': octoDNS names are relative to the zone",
                excerpt(raw)
            ));
        }
        if raw.contains([' ', '\t']) {
            return Err(format!("name {:?} holds whitespace", excerpt(raw)));
        }
        let name = if raw.is_empty() {
            Ok(self.zone.clone())
        } else {
            self.zone.prepend(raw).map_err(|e| e.to_string())
        }?;
        if !name.is_within(self.zone) {
            return Err(format!("{name} is outside the zone {}", self.zone));
        }
        Ok(name)
    }

    fn record(
        &self,
        name: &Result<Name, String>,
        key: &MarkedScalarNode,
        node: &Node,
        line: Option<usize>,
        index: usize,
        out: &mut ParsedFile,
    ) {
        let slot = Slot {
            resource: self.resource.clone(),
            index,
        };
        let shown_name = match name {
            Ok(n) => n.to_string(),
            Err(_) => excerpt(key.as_str()),
        };
        let mut problems: Vec<(Option<usize>, String)> = Vec::new();
        if let Err(e) = name {
            problems.push((self.line(key.span()), e.clone()));
        }
        let Some(map) = node.as_mapping() else {
            problems.push((
                line,
                "a record is a mapping (type, value or values, ttl)".into(),
            ));
            return self.reject(out, shown_name, None, slot, problems);
        };
        self.check_order(map, out);
        let line_of = |k: &str| map.get_node(k).and_then(|n| self.line(n.span())).or(line);
        let raw_type = map.get_node("type").and_then(scalar_text).map(str::trim);
        let Some(raw_type) = raw_type else {
            problems.push((line_of("type"), "type is missing".into()));
            return self.reject(out, shown_name, None, slot, problems);
        };
        let record = format!("{shown_name} {}", excerpt(raw_type));
        let rtype = RecordType::ALL.into_iter().find(|t| t.as_str() == raw_type);
        let Some(rtype) = rtype else {
            let upper = raw_type.to_ascii_uppercase();
            let known =
                RecordType::parse(raw_type).is_ok() || UNMODELLED_TYPES.contains(&upper.as_str());
            if known && upper != raw_type {
                let message = format!(
                    "type {:?}: octoDNS's types are upper-case ({upper:?})",
                    excerpt(raw_type)
                );
                problems.push((line_of("type"), message));
            } else if !known && !raw_type.contains('/') {
                // A provider's own type is `Provider/TYPE`; anything else is unknown
                // to octoDNS, which refuses the file.
                let message = format!("unknown record type {:?}", excerpt(raw_type));
                problems.push((line_of("type"), message));
            }
            if !problems.is_empty() {
                return self.reject(out, record, None, slot, problems);
            }
            let why = if raw_type == "SPF" {
                "; publish the policy as a TXT record"
            } else {
                ""
            };
            let message = format!(
                "type {} is not modelled by dnsplane: skipped, not planned{why}",
                excerpt(raw_type)
            );
            return self.warn(out, line, record, message);
        };
        let name = match name {
            Ok(n) => n.clone(),
            Err(_) => return self.reject(out, record, None, slot, problems),
        };
        let key = (name.clone(), rtype, SetId::NONE);
        if rtype == RecordType::Cname && name == *self.zone {
            // RFC 1034 §3.6.2; octoDNS refuses it too.
            problems.push((line, "a CNAME at the zone's apex is not allowed".into()));
            return self.reject(out, record, Some(key), slot, problems);
        }
        if rtype == RecordType::Ns && name == *self.zone {
            let message = "the apex NS records are the provider's: dnsplane never writes them; read and skipped".into();
            return self.warn(out, line, record, message);
        }
        for routing in ["geo", "dynamic"] {
            if map.get_node(routing).is_some() {
                let message = format!(
                    "{routing} routing is not modelled by dnsplane: the record is skipped, not planned as a plain {rtype}"
                );
                return self.warn(out, line_of(routing), record, message);
            }
        }
        if let Some(node) = map.get_node("octodns") {
            match node {
                Node::Mapping(extras) => {
                    let ignored = extras
                        .get_node("ignored")
                        .and_then(scalar_text)
                        .is_some_and(|v| matches!(v, "true" | "True" | "TRUE" | "yes" | "on"));
                    if ignored {
                        let message = "octodns.ignored: octoDNS loads this record but never creates, changes or deletes it: skipped, not planned".into();
                        return self.warn(out, line_of("octodns"), record, message);
                    }
                    let names: Vec<String> = extras
                        .keys()
                        .map(|k| format!("octodns.{}", k.as_str()))
                        .collect();
                    if !names.is_empty() {
                        let message = format!(
                            "{} ignored: dnsplane has no such setting; the record is planned without it",
                            names.join(", ")
                        );
                        self.warn(out, line_of("octodns"), record.clone(), message);
                    }
                }
                Node::Scalar(s) if is_null(s) => {}
                other => problems.push((
                    self.line(other.span()).or(line),
                    "octodns must be a mapping".into(),
                )),
            }
        }
        for k in map.keys() {
            if !matches!(k.as_str(), "type" | "ttl" | "value" | "values" | "octodns") {
                let message = format!(
                    "key {:?} is not part of an octoDNS record: ignored",
                    excerpt(k.as_str())
                );
                self.warn(out, self.line(k.span()), record.clone(), message);
            }
        }

        let ttl = match map.get_node("ttl") {
            None => Some(DEFAULT_TTL),
            Some(node) => match scalar_text(node).map(|t| t.trim().parse::<i64>()) {
                Some(Ok(t)) if (0..=i64::from(MAX_TTL)).contains(&t) => u32::try_from(t).ok(),
                Some(Ok(t)) => {
                    problems.push((
                        self.line(node.span()),
                        format!("ttl {t} is outside 0..{MAX_TTL}"),
                    ));
                    None
                }
                _ => {
                    problems.push((
                        self.line(node.span()),
                        "ttl is not a whole number of seconds".into(),
                    ));
                    None
                }
            },
        };

        // octoDNS reads `values` when present, else `value`; a CNAME has one `value`.
        let (field, values_node) = match (rtype, map.get_node("values"), map.get_node("value")) {
            (RecordType::Cname, _, v) => ("value", v),
            (_, Some(v), _) => ("values", Some(v)),
            (_, None, v) => ("value", v),
        };
        // A list under `value` is read as values too, except for a CNAME.
        let nodes: Vec<&Node> = match values_node {
            None => {
                problems.push((line, format!("{field} is missing")));
                Vec::new()
            }
            Some(Node::Scalar(s)) if is_null(s) => {
                problems.push((line_of(field), format!("{field} is empty")));
                Vec::new()
            }
            Some(Node::Sequence(items)) if rtype != RecordType::Cname => {
                if items.is_empty() {
                    problems.push((line_of(field), format!("{field} is an empty list")));
                }
                items.iter().collect()
            }
            Some(node) => vec![node],
        };
        let mut values = Vec::with_capacity(nodes.len());
        for node in nodes {
            if let Some(m) = node.as_mapping() {
                self.check_order(m, out);
                if let Some(params) = m.get_mapping("svcparams") {
                    self.check_order(params, out);
                }
            }
            let at = self.line(node.span()).or(line);
            let text = match values::value_text(rtype, node) {
                Ok(t) => t,
                Err(e) => {
                    problems.push((at, e));
                    continue;
                }
            };
            match canonicalize(rtype, &text) {
                Ok(v) => values.push(v),
                Err(ModelError::Value { value, problem, .. }) => {
                    problems.push((at, format!("value {value:?}: {problem}")))
                }
                Err(e) => problems.push((at, format!("value {:?}: {e}", excerpt(&text)))),
            }
        }
        values.sort();
        values.dedup();
        if values.len() > MAX_VALUES {
            problems.push((
                line_of(field),
                format!("{} values, above the limit of {MAX_VALUES}", values.len()),
            ));
        } else if problems.is_empty()
            && let Err(problem) = wire::check_answer(&name, rtype, &values)
        {
            problems.push((line_of(field), problem));
        }
        let first = self.seen.borrow().get(&(name.clone(), rtype)).copied();
        if let Some(first) = first {
            problems.push((
                line,
                format!(
                    "{record} is declared twice (first at line {first}); octoDNS refuses the file"
                ),
            ));
            // The first one is not the record either: neither is planned.
            if let Some(at) = out
                .accepted
                .iter()
                .position(|a| a.entry.name == name && a.entry.rtype == rtype)
            {
                let first = out.accepted.remove(at);
                let start = out.errors.len();
                out.errors.push(SourceError {
                    source: SOURCE_KIND.into(),
                    location: first.entry.origin.location.to_string(),
                    record: record.clone(),
                    message: format!(
                        "{record} is declared again at line {}; octoDNS refuses the file",
                        line.unwrap_or(0)
                    ),
                });
                out.rejected.push(Rejected {
                    what: RejectedWhat::Endpoint {
                        key: Some(key.clone()),
                        slot: first.slot,
                    },
                    errors: start..out.errors.len(),
                });
            }
        }
        self.seen
            .borrow_mut()
            .entry((name.clone(), rtype))
            .or_insert(line.unwrap_or(0));
        if !problems.is_empty() {
            return self.reject(out, record, Some(key), slot, problems);
        }
        out.accepted.push(Accepted {
            entry: DesiredEntry {
                name,
                rtype,
                ttl,
                values,
                set: SetId::NONE,
                properties: Vec::new(),
                labels: Default::default(),
                origin: Origin {
                    source: self.kind.clone(),
                    location: self.location(line).into(),
                    resource: self.resource.clone(),
                },
            },
            slot,
        });
    }

    fn reject(
        &self,
        out: &mut ParsedFile,
        record: String,
        key: Option<(Name, RecordType, SetId)>,
        slot: Slot,
        problems: Vec<(Option<usize>, String)>,
    ) {
        let start = out.errors.len();
        for (line, message) in problems {
            out.errors.push(SourceError {
                source: SOURCE_KIND.into(),
                location: self.location(line),
                record: record.clone(),
                message,
            });
        }
        out.rejected.push(Rejected {
            what: RejectedWhat::Endpoint { key, slot },
            errors: start..out.errors.len(),
        });
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod write_tests;
