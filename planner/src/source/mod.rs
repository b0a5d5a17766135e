//! Desired-state sources: where the records dnsplane must keep in the zones come from.
//!
//! A source produces [`DesiredEntry`]s (one per desired RRSet, already normalised:
//! absolute lower-case name, canonical values) and [`SourceError`]s (every input it could
//! not accept, with the file and line to fix). Neither is zone-aware: placing entries in
//! zones and cross-entry checks (duplicates, CNAME clashes) happen in the planner.
//!
//! - [`dnsendpoint`]: the external-dns `DNSEndpoint` parser, shared by every source of
//!   such objects;
//! - [`file`]: manifests in files and directories, polled, keeping the last good
//!   version of what breaks;
//! - [`kubernetes`]: DNSEndpoint objects listed and watched in the Kubernetes API,
//!   kept last-good per object, their results written to their status;
//! - [`labels`]: an endpoint's labels, metadata kept beside a record, never planned;
//! - [`header_file`]: a token file sent as an `Authorization` header, re-read as it
//!   rotates;
//! - [`netbox`]: IPAM's IP addresses in NetBox, read whole and on its webhooks, kept
//!   last-good per address;
//! - [`octodns`]: octoDNS's YAML zone files (one per zone), read and written;
//! - [`zones`]: each endpoint checked against the configured zones before its object
//!   is accepted (a name in no zone is an error, not a deletion);
//! - [`zonefile`]: RFC 1035 zone files read into entries (as BIND reads them), and
//!   entries written back as one.
use dnsplane_common::{Name, RecordType, SetId};
use std::fmt;
use std::sync::Arc;

pub mod dnsendpoint;
pub mod file;
pub mod header_file;
pub mod kubernetes;
pub mod labels;
pub mod netbox;
pub mod octodns;
pub mod outcomes;
pub mod zonefile;
pub mod zones;

pub use dnsendpoint::parse_manifests;
pub use file::{FileFormat, FileSource};
pub use labels::{LabelError, Labels};

/// One desired RRSet as a source declares it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct DesiredEntry {
    /// Normalised absolute name (`Name::parse`).
    pub name: Name,
    pub rtype: RecordType,
    /// `None`: the zone's default TTL. (external-dns's `recordTTL: 0` also means "unset".)
    pub ttl: Option<u32>,
    /// Canonical values (`canonicalize`; an alias's target name), sorted, without
    /// duplicates, never empty.
    pub values: Vec<String>,
    /// The routing-policy set (external-dns's `setIdentifier`), or none.
    #[serde(default, skip_serializing_if = "SetId::is_none_ref")]
    pub set: SetId,
    /// Canonical provider-specific properties (`routing::canonical_properties`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<(String, String)>,
    /// The endpoint's labels: kept and reported back, never part of the record's
    /// data. Absent from state files written before labels were kept.
    #[serde(default, skip_serializing_if = "Labels::is_empty")]
    pub labels: Labels,
    pub origin: Origin,
}

impl DesiredEntry {
    /// The entry's key in `zone`.
    pub fn key(&self, zone: Name) -> dnsplane_common::RecordKey {
        dnsplane_common::RecordKey::new(zone, self.name.clone(), self.rtype).in_set(self.set)
    }

    /// What identifies the entry within its source: name, type and set.
    pub fn entry_key(&self) -> EntryKey {
        EntryKey {
            name: self.name.clone(),
            rtype: self.rtype,
            set: self.set,
        }
    }
}

/// A record of a source, zone aside: (name, type, set).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(from = "EntryKeyRepr", into = "EntryKeyRepr")]
pub struct EntryKey {
    pub name: Name,
    pub rtype: RecordType,
    pub set: SetId,
}

impl From<(Name, RecordType)> for EntryKey {
    fn from((name, rtype): (Name, RecordType)) -> EntryKey {
        EntryKey {
            name,
            rtype,
            set: SetId::NONE,
        }
    }
}

impl EntryKey {
    pub fn of(key: &dnsplane_common::RecordKey) -> EntryKey {
        EntryKey {
            name: key.name.clone(),
            rtype: key.rtype,
            set: key.set,
        }
    }
}

/// A plain record is stored as `[name, type]`, as before sets existed, so a journal
/// written by either version reads in both.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum EntryKeyRepr {
    Plain(Name, RecordType),
    InSet(Name, RecordType, SetId),
}

impl From<EntryKeyRepr> for EntryKey {
    fn from(r: EntryKeyRepr) -> EntryKey {
        match r {
            EntryKeyRepr::Plain(name, rtype) => EntryKey {
                name,
                rtype,
                set: SetId::NONE,
            },
            EntryKeyRepr::InSet(name, rtype, set) => EntryKey { name, rtype, set },
        }
    }
}

impl From<EntryKey> for EntryKeyRepr {
    fn from(k: EntryKey) -> EntryKeyRepr {
        if k.set.is_none() {
            EntryKeyRepr::Plain(k.name, k.rtype)
        } else {
            EntryKeyRepr::InSet(k.name, k.rtype, k.set)
        }
    }
}

/// Where a desired entry was declared.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Origin {
    /// The kind of source, e.g. `file`. Shared by every entry of a load.
    pub source: Arc<str>,
    /// `path/to/file.yaml:14`: the line of the endpoint. Shared where it is the
    /// resource itself (a Kubernetes object's entries are located by their object).
    pub location: Arc<str>,
    /// The object that asked for the record, e.g. `DNSEndpoint default/web`. Shared by
    /// the entries of one resource (a source may hold a million entries).
    pub resource: Arc<str>,
}

/// An input a source could not accept.
///
/// `Display` reads `path/web.yaml:14: app.example.com. A: target "300.1.1.1": not a valid
/// IPv4 address` (the record part is left out when `record` is empty).
///
/// `Display` and `Error` are written by hand rather than derived with `thiserror`: the
/// field is named `source` (the kind of source), and `thiserror` would take a field of that
/// name for the error's cause.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourceError {
    /// The kind of source, e.g. `file`.
    pub source: String,
    /// `path:line` (1-based), or just `path` when no line applies (I/O errors).
    pub location: String,
    /// `app.example.com. A`, or empty when the problem is not about one record.
    pub record: String,
    pub message: String,
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.location.is_empty() {
            write!(f, "{}: ", self.location)?;
        }
        if !self.record.is_empty() {
            write!(f, "{}: ", self.record)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for SourceError {}

/// One part of a source that is listed or read on its own (a Kubernetes source's
/// kinds and namespaces): status shows each, ready or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePart {
    /// `Service in all namespaces`, `Node`.
    pub name: String,
    pub ready: bool,
    /// Why it is not ready (the API's answer, with the fix), or empty.
    pub reason: String,
    /// What it last did, ready or not (`last full read 2026-11-30T13:00:00Z: 1000
    /// addresses in 1 request`), or empty.
    pub detail: String,
}

/// A source's parts as it updates them.
pub type SourceParts = Arc<std::sync::Mutex<Vec<SourcePart>>>;

/// Everything a source currently declares: what it accepted and what it could not.
///
/// A snapshot is complete: it replaces the previous snapshot of the same source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Snapshot {
    pub entries: Vec<DesiredEntry>,
    pub errors: Vec<SourceError>,
    /// Why the source is not ready (a configured path missing, unreadable or without
    /// manifests); empty when it is. Its last accepted entries are in `entries`.
    pub unready: Vec<String>,
}

/// Helpers shared by the tests of the sources.
#[cfg(test)]
pub(crate) mod testing {
    use super::DesiredEntry;

    /// (name, type, values) of each entry, for compact assertions.
    pub(crate) fn keys(entries: &[DesiredEntry]) -> Vec<(String, &'static str, Vec<String>)> {
        entries
            .iter()
            .map(|e| (e.name.to_string(), e.rtype.as_str(), e.values.clone()))
            .collect()
    }

    /// An A record at `name` with `value`, as the `i`th record of a push.
    pub(crate) fn pushed(name: &str, value: &str, ttl: Option<u32>, i: usize) -> DesiredEntry {
        DesiredEntry {
            name: dnsplane_common::Name::parse(name).unwrap(),
            rtype: dnsplane_common::RecordType::A,
            ttl,
            values: vec![value.to_string()],
            set: dnsplane_common::SetId::NONE,
            properties: Vec::new(),
            labels: Default::default(),
            origin: super::Origin {
                source: "push".into(),
                location: format!("records[{i}]").into(),
                resource: "test".into(),
            },
        }
    }

    pub(crate) fn entry(
        name: &str,
        rtype: &'static str,
        values: &[&str],
    ) -> (String, &'static str, Vec<String>) {
        (
            name.to_string(),
            rtype,
            values.iter().map(|v| v.to_string()).collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_display_names_file_line_and_record() {
        let e = SourceError {
            source: "file".into(),
            location: "deploy/examples/desired/web.yaml:14".into(),
            record: "app.example.com. A".into(),
            message: "target \"300.1.1.1\": not a valid IPv4 address".into(),
        };
        assert_eq!(
            e.to_string(),
            "deploy/examples/desired/web.yaml:14: app.example.com. A: target \"300.1.1.1\": not a valid IPv4 address"
        );
        let e = SourceError {
            record: String::new(),
            location: "x.yaml".into(),
            ..e
        };
        assert_eq!(
            e.to_string(),
            "x.yaml: target \"300.1.1.1\": not a valid IPv4 address"
        );
    }
}
