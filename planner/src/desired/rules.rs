//! The rules across a source's records (one value set per key, no CNAME beside other
//! data) as the index checks them on an update, a patch or a push checked on its own,
//! and the lines their errors point at.
use super::{DesiredIndex, DesiredRecord, Touched};
use crate::config::ZoneConfig;
use crate::source::{DesiredEntry, SourceError};
use dnsplane_common::rrset::at_name;
use dnsplane_common::{Name, RecordKey, RecordType, SetId};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Where each name (and name and type) of an update was declared, indexed at most
/// once per update so that pointing an error at its line costs a lookup, not a scan
/// of the source (which made an update quadratic in the names it touched). Built on
/// the first question: an update without errors never pays for it.
pub(super) struct Lines<'a> {
    entries: &'a [DesiredEntry],
    built: std::cell::OnceCell<LineIndex<'a>>,
}

struct LineIndex<'a> {
    /// The first entry of each (name, type).
    first: HashMap<(&'a Name, RecordType), usize>,
    /// Per name: the last CNAME entry at it, else the last entry at it.
    at_name: HashMap<&'a Name, (usize, bool)>,
}

impl<'a> Lines<'a> {
    pub(super) fn of(entries: &'a [DesiredEntry]) -> Lines<'a> {
        Lines {
            entries,
            built: std::cell::OnceCell::new(),
        }
    }

    fn index(&self) -> &LineIndex<'a> {
        self.built.get_or_init(|| {
            let entries = self.entries;
            let mut first = HashMap::with_capacity(entries.len());
            let mut at_name: HashMap<&Name, (usize, bool)> = HashMap::with_capacity(entries.len());
            for (i, e) in entries.iter().enumerate() {
                first.entry((&e.name, e.rtype)).or_insert(i);
                let cname = e.rtype == RecordType::Cname;
                let slot = at_name.entry(&e.name).or_insert((i, cname));
                if cname || !slot.1 {
                    *slot = (i, cname);
                }
            }
            LineIndex { first, at_name }
        })
    }

    /// Where the first entry of (name, type) was declared.
    pub(super) fn first(&self, name: &Name, rtype: RecordType) -> String {
        self.index()
            .first
            .get(&(name, rtype))
            .map(|&i| self.entries[i].origin.location.to_string())
            .unwrap_or_default()
    }

    /// Where a CNAME clash at `name` points: the CNAME's line if this update declared
    /// one there, else its last record at that name.
    fn at_name(&self, name: &Name) -> String {
        self.index()
            .at_name
            .get(name)
            .map(|&(i, _)| self.entries[i].origin.location.to_string())
            .unwrap_or_default()
    }
}

/// A source's entries placed in their zones and checked on their own
/// ([`DesiredIndex::checked`]).
#[derive(Debug)]
pub struct Checked {
    pub(super) records: BTreeMap<RecordKey, DesiredRecord>,
    /// The labels of the records that have any.
    pub(super) labels: super::LabelsOf,
    /// The problems of single entries (zone, reserved name, duplicate): the source's
    /// errors once in the index.
    pub(super) entry_errors: Vec<SourceError>,
    /// Every problem, the CNAME rule's included: a push with any is refused.
    pub errors: Vec<SourceError>,
}

/// Why the records `at` one name break the CNAME rule (RFC 1034 §3.6.2), if they do.
fn cname_clash(at: &[&RecordKey]) -> Option<String> {
    if at.len() < 2 || !at.iter().any(|k| k.rtype == RecordType::Cname) {
        return None;
    }
    let others: Vec<&str> = at
        .iter()
        .filter(|k| k.rtype != RecordType::Cname)
        .map(|k| k.rtype.as_str())
        .collect();
    Some(format!(
        "a CNAME cannot share its name with other data (also desired here: {}); held back",
        others.join(", ")
    ))
}

impl DesiredIndex {
    /// Re-checks the CNAME rule at every touched name.
    pub(super) fn check_clashes(&mut self, touched: &Touched, lines: &Lines<'_>) {
        for (zone, names) in touched {
            for name in names {
                self.check_cname_clash(zone, name, || lines.at_name(name));
            }
        }
    }

    /// A CNAME cannot share its name with other data (RFC 1034 §3.6.2). The plan holds
    /// such a CNAME back; this keeps the error that explains it.
    fn check_cname_clash(&mut self, zone: &Name, name: &Name, location: impl FnOnce() -> String) {
        let cname = RecordKey::new(zone.clone(), name.clone(), RecordType::Cname);
        self.clashes.remove(&cname);
        let Some(records) = self.zones.get(zone) else {
            return;
        };
        let at: Vec<&RecordKey> = at_name(records, zone, name).map(|(k, _)| k).collect();
        if let Some(message) = cname_clash(&at) {
            let record = &records[&cname];
            self.clashes.insert(
                cname.clone(),
                SourceError {
                    source: record.source.to_string(),
                    location: location(),
                    record: cname.to_string(),
                    message,
                },
            );
        }
    }

    /// The problems `entries` would have as `source`'s whole desired state, in an
    /// index of their own: what [`update_source`](Self::update_source) into an empty
    /// index would report, without building that index (a push is checked this way
    /// before it is accepted, and the real update follows).
    pub fn check_alone(
        zones: &[ZoneConfig],
        source: &str,
        entries: &[DesiredEntry],
    ) -> Vec<SourceError> {
        DesiredIndex::checked(zones, source, entries).errors
    }

    /// [`check_alone`](Self::check_alone), keeping the placed entries for
    /// [`update_source_checked`](Self::update_source_checked).
    pub fn checked(zones: &[ZoneConfig], source: &str, entries: &[DesiredEntry]) -> Checked {
        let mut check = DesiredIndex::new(zones);
        let source = check.interner.str(source);
        let (claims, labels, entry_errors) = check.claims(&source, entries);
        let mut errors = entry_errors.clone();
        let lines = Lines::of(entries);
        // Keys sort by (zone, name, type): the records at one name are adjacent.
        let keys: Vec<&RecordKey> = claims.keys().collect();
        for at in keys.chunk_by(|a, b| a.zone == b.zone && a.name == b.name) {
            if let Some(message) = cname_clash(at) {
                let cname = at.iter().find(|k| k.rtype == RecordType::Cname);
                errors.push(SourceError {
                    source: source.to_string(),
                    location: lines.at_name(&at[0].name),
                    record: cname.map(ToString::to_string).unwrap_or_default(),
                    message,
                });
            }
        }
        Checked {
            records: claims,
            labels,
            entry_errors,
            errors,
        }
    }

    /// `upserts`, after the records `source` declares at their names and keeps through
    /// them (other types than the upserts'): what the rules across records can find
    /// wrong with a patch of a source that was whole and right before it. The kept
    /// records are attributed to the first upsert at their name, so that an error
    /// names a field of the patch.
    pub fn with_kept_records(&self, source: &str, upserts: &[DesiredEntry]) -> Vec<DesiredEntry> {
        let mut out = Vec::new();
        let Some((source_name, contribution)) = self.sources.get_key_value(source) else {
            return upserts.to_vec();
        };
        let replaced: HashSet<(&Name, RecordType, SetId)> =
            upserts.iter().map(|u| (&u.name, u.rtype, u.set)).collect();
        let mut seen = BTreeSet::new();
        for u in upserts {
            let Some(zone) = self.zone_of(&u.name) else {
                continue;
            };
            if !seen.insert(u.name.clone()) {
                continue;
            }
            let kept = contribution
                .keys
                .at_name(&self.zones, &zone.name, &u.name)
                .filter(|k| !replaced.contains(&(&k.name, k.rtype, k.set)));
            for key in kept {
                let Some(record) = self.claim_of(key, source_name) else {
                    continue;
                };
                out.push(DesiredEntry {
                    name: key.name.clone(),
                    rtype: key.rtype,
                    ttl: Some(record.data.ttl()),
                    values: record.data.values_vec(),
                    set: key.set,
                    properties: record
                        .data
                        .properties()
                        .map(|(n, v)| (n.to_string(), v.to_string()))
                        .collect(),
                    labels: contribution.labels.get(key).cloned().unwrap_or_default(),
                    origin: crate::source::Origin {
                        source: record.source.as_str().into(),
                        location: u.origin.location.clone(),
                        resource: record.resource.as_str().into(),
                    },
                });
            }
        }
        out.extend(upserts.iter().cloned());
        out
    }
}
