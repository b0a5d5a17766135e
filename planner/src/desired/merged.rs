//! `merge = "union"` record sets (issue 33): in such a zone, several sources that want
//! one A, AAAA, TXT, MX, SRV or CAA set (one [`RecordKey`]) all have it: the record in
//! force is the union of their values, at the lowest of their TTLs.
//!
//! Each source's own claim is kept as it gave it ([`Unions::claims`], by source name),
//! so that a value leaves only when the last source wanting it drops it, and what a
//! source declares reads back as it declared it. A key one source wants alone is held
//! as in any zone (no entry here): a zone whose keys each have one source, or any zone
//! with `merge = "none"`, pays nothing and behaves as before. Other types, a CNAME
//! above all, keep the shadow rule (and a CNAME beside other data its clash).
//!
//! It stays incremental: a source's update or patch re-merges only the keys it claims
//! or drops (O(claims of that key) each), and the names whose record in force changed
//! are the ones reported touched ([`DesiredIndex::settle_unions`]).
use super::{DesiredIndex, DesiredRecord, Touched, touch};
use crate::config::{Merge, ZoneConfig};
use crate::source::SourceError;
use dnsplane_common::{Name, RRSet, RecordKey, RecordType, SharedStr};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The types whose sets a `merge = "union"` zone merges: sets of independent values.
/// A CNAME holds one target (two sources wanting two are a collision), and NS, PTR,
/// SVCB, … stay with the shadow rule.
pub const UNION_TYPES: [RecordType; 6] = [
    RecordType::A,
    RecordType::Aaaa,
    RecordType::Txt,
    RecordType::Mx,
    RecordType::Srv,
    RecordType::Caa,
];

/// The merged keys of the index and what they report.
#[derive(Debug, Default)]
pub(super) struct Unions {
    /// The zones with `merge = "union"`.
    zones: HashSet<Name>,
    /// Per key that two or more sources claim: every claim, sorted by source.
    pub(super) claims: HashMap<RecordKey, Vec<DesiredRecord>>,
    /// Per merged key whose sources want different TTLs: the notice saying which was
    /// taken. Not an error: a fleet of clusters with different TTLs is a normal
    /// configuration, and errors degrade health.
    notices: BTreeMap<RecordKey, SourceError>,
    /// Per key whose claims cannot all be merged: the errors of the claims held back.
    pub(super) errors: BTreeMap<RecordKey, Vec<SourceError>>,
    /// During an update: the merged keys it changed, with their record in force before.
    before: HashMap<RecordKey, Option<DesiredRecord>>,
}

impl Unions {
    pub(super) fn of(zones: &[ZoneConfig]) -> Unions {
        Unions {
            zones: zones
                .iter()
                .filter(|z| z.merge == Merge::Union)
                .map(|z| z.name.clone())
                .collect(),
            ..Unions::default()
        }
    }

    /// Whether claims of `key` by several sources are merged.
    fn takes(&self, key: &RecordKey) -> bool {
        !self.zones.is_empty() && UNION_TYPES.contains(&key.rtype) && self.zones.contains(&key.zone)
    }

    /// The claims of `key`, when several sources claim it in a union zone (an index
    /// without merged sets answers without hashing the key).
    pub(super) fn of_key(&self, key: &RecordKey) -> Option<&[DesiredRecord]> {
        if self.claims.is_empty() {
            return None;
        }
        self.claims.get(key).map(Vec::as_slice)
    }

    /// The notices of the merged keys (TTLs that differ), in key order.
    pub(super) fn notices(&self) -> impl Iterator<Item = &SourceError> {
        self.notices.values()
    }
}

/// The record in force for `claims` (two or more, sorted by source), the notice when
/// their TTLs differ, and the errors of the claims that cannot be merged.
///
/// The record carries the first source's name and resource (by source name, not by
/// arrival): the resource goes into the ownership record, and it must not change with
/// the order the sources happened to load in (after a restart it would rewrite every
/// merged set's ownership record), only with who wants the set.
fn merged(
    key: &RecordKey,
    claims: &[DesiredRecord],
) -> (DesiredRecord, Option<SourceError>, Vec<SourceError>) {
    let first = &claims[0];
    let error = |r: &DesiredRecord, why: String| SourceError {
        source: r.source.to_string(),
        location: String::new(),
        record: key.to_string(),
        message: format!(
            "cannot be merged with {} ({}): {why}; keeping that one",
            first.resource, first.source
        ),
    };
    // Provider properties (an alias, a routing policy) hold for the whole set: only
    // claims with the first one's are merged.
    let (mergeable, apart): (Vec<&DesiredRecord>, Vec<&DesiredRecord>) = claims
        .iter()
        .partition(|r| r.data.properties().eq(first.data.properties()));
    let mut errors: Vec<SourceError> = apart
        .iter()
        .map(|r| error(r, "other provider properties".into()))
        .collect();
    let values: BTreeSet<&str> = mergeable.iter().flat_map(|r| r.data.values()).collect();
    let ttl = mergeable.iter().map(|r| r.data.ttl()).min().unwrap_or(0);
    let properties: Vec<(String, String)> = first
        .data
        .properties()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    let values = values.into_iter().map(str::to_string).collect();
    let rrset = match RRSet::from_canonical_with(key.clone(), ttl, values, properties) {
        Ok(rrset) => rrset,
        Err(e) => {
            let why = e.to_string();
            errors.extend(mergeable[1..].iter().map(|r| error(r, why.clone())));
            return (first.clone(), None, errors);
        }
    };
    let record = if first.data.same_as(&rrset) {
        first.clone() // shares its values
    } else {
        DesiredRecord::new(&rrset, first.source.clone(), first.resource.clone())
    };
    let notice = ttl_notice(key, &mergeable, rrset.ttl);
    (record, notice, errors)
}

/// What says that `claims` want different TTLs and which was taken, if they do.
fn ttl_notice(key: &RecordKey, claims: &[&DesiredRecord], taken: u32) -> Option<SourceError> {
    let higher = claims.iter().find(|r| r.data.ttl() != taken)?;
    let wants: Vec<String> = claims
        .iter()
        .map(|r| format!("{} TTL {}", r.source, r.data.ttl()))
        .collect();
    Some(SourceError {
        source: higher.source.to_string(),
        location: String::new(),
        record: key.to_string(),
        message: format!(
            "merged from sources that want different TTLs ({}); taking the lowest, {taken}",
            wants.join(", ")
        ),
    })
}

impl DesiredIndex {
    /// Whether a claim of `key` by a source that does not claim it yet joins a merged
    /// set: the key is merged in its zone and another source holds it.
    pub(super) fn joins(&self, key: &RecordKey) -> bool {
        self.unions.takes(key)
            && self
                .zones
                .get(&key.zone)
                .is_some_and(|z| z.contains_key(key))
    }

    /// Adds `record` (of a source that does not claim `key` yet) to the merged set.
    pub(super) fn join(&mut self, key: RecordKey, record: DesiredRecord) {
        self.note_before(&key);
        // A key with one source holds that source's claim as its record.
        let alone = if self.unions.claims.contains_key(&key) {
            None
        } else {
            self.zones.get(&key.zone).and_then(|z| z.get(&key)).cloned()
        };
        let claims = self.unions.claims.entry(key.clone()).or_default();
        claims.extend(alone);
        let at = claims.partition_point(|c| c.source < record.source);
        claims.insert(at, record);
        self.remerge(&key);
    }

    /// Removes `source`'s claim from the merged set at `key`; false when `key` is not
    /// merged (then nothing is done). Whether the record in force changed is settled
    /// at the end of the update.
    pub(super) fn leave(&mut self, key: &RecordKey, source: &SharedStr) -> bool {
        if self.unions.of_key(key).is_none() {
            return false;
        }
        self.note_before(key);
        let left = match self.unions.claims.get_mut(key) {
            Some(claims) => {
                claims.retain(|c| &c.source != source);
                claims.len()
            }
            None => 0,
        };
        if left > 1 {
            self.remerge(key);
            return true;
        }
        // One source left: its claim is the record, as in any zone.
        let last = self.unions.claims.remove(key).and_then(|mut c| c.pop());
        self.unions.notices.remove(key);
        self.unions.errors.remove(key);
        if let Some(records) = self.zones.get_mut(&key.zone) {
            match last {
                Some(last) => records.insert(key.clone(), last),
                None => records.remove(key),
            };
        }
        true
    }

    /// Keeps the record in force at `key` before the update's first change to it.
    fn note_before(&mut self, key: &RecordKey) {
        if !self.unions.before.contains_key(key) {
            let held = self.zones.get(&key.zone).and_then(|z| z.get(key)).cloned();
            self.unions.before.insert(key.clone(), held);
        }
    }

    /// Puts the merge of `key`'s claims in force, with its notice and errors.
    fn remerge(&mut self, key: &RecordKey) {
        let Some(claims) = self.unions.claims.get(key) else {
            return;
        };
        let (record, notice, errors) = merged(key, claims);
        match notice {
            Some(n) => self.unions.notices.insert(key.clone(), n),
            None => self.unions.notices.remove(key),
        };
        if errors.is_empty() {
            self.unions.errors.remove(key);
        } else {
            self.unions.errors.insert(key.clone(), errors);
        }
        self.zones
            .entry(key.zone.clone())
            .or_default()
            .insert(key.clone(), record);
    }

    /// Ends an update's changes to merged sets: each key whose record in force is not
    /// the one before is touched (a source trading a value another source also wants
    /// touches nothing).
    pub(super) fn settle_unions(&mut self, touched: &mut Touched) {
        if self.unions.before.is_empty() {
            return;
        }
        for (key, before) in std::mem::take(&mut self.unions.before) {
            let now = self.zones.get(&key.zone).and_then(|z| z.get(&key));
            if now != before.as_ref() {
                touch(touched, &key);
            }
        }
    }

    /// Claims of other sources that a merged set holds back (they cannot be merged):
    /// each key, with the source in force there.
    pub(super) fn held_back(&self, source: &str) -> Vec<(RecordKey, SharedStr)> {
        self.unions
            .errors
            .iter()
            .filter(|(_, errors)| errors.iter().any(|e| e.source == source))
            .filter_map(|(key, _)| {
                let held = self.zones.get(&key.zone)?.get(key)?;
                Some((key.clone(), held.source.clone()))
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "union_tests.rs"]
mod tests;
