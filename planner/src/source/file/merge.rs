//! Keep-last-good, per file: the entries of a new load, plus the last accepted entries
//! that the inputs this load rejected stand for (see the module docs of
//! [`super`]); the Kubernetes source keeps the last good version of each object
//! the same way.
use crate::source::dnsendpoint::{Accepted, ParsedFile, RejectedWhat, Slot};
use dnsplane_common::{Name, RecordType, SetId};
use std::collections::{BTreeSet, HashMap, HashSet};

/// The entries of the new load, plus the last accepted entries that rejected inputs of
/// this load stand for (see the module documentation).
pub(in crate::source) fn merge(
    parsed: &mut ParsedFile,
    old: Option<&Vec<Accepted>>,
) -> Vec<Accepted> {
    let mut result = std::mem::take(&mut parsed.accepted);
    let Some(old) = old.filter(|o| !o.is_empty()) else {
        return result;
    };
    let present: HashSet<(&Name, RecordType, SetId)> = result
        .iter()
        .map(|a| (&a.entry.name, a.entry.rtype, a.entry.set))
        .collect();
    // Indices of the old entries that no new entry replaces, by key, slot and resource.
    let mut by_key: HashMap<(&Name, RecordType, SetId), Vec<usize>> = HashMap::new();
    let mut by_slot: HashMap<&Slot, Vec<usize>> = HashMap::new();
    let mut by_resource: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, o) in old.iter().enumerate() {
        let key = (&o.entry.name, o.entry.rtype, o.entry.set);
        if !present.contains(&key) {
            by_key.entry(key).or_default().push(i);
            by_slot.entry(&o.slot).or_default().push(i);
            by_resource.entry(&*o.slot.resource).or_default().push(i);
        }
    }
    let mut keep = BTreeSet::new();
    for rejected in &parsed.rejected {
        let matching = match &rejected.what {
            RejectedWhat::Endpoint {
                key: Some((name, rtype, set)),
                ..
            } => by_key.get(&(name, *rtype, *set)),
            RejectedWhat::Endpoint { key: None, slot } => by_slot.get(slot),
            RejectedWhat::Resource(resource) => by_resource.get(resource.as_str()),
        };
        let Some(matching) = matching else { continue };
        if matching.is_empty() {
            continue;
        }
        let note = match &rejected.what {
            RejectedWhat::Endpoint { .. } => {
                "keeping the last accepted version of this record".to_string()
            }
            RejectedWhat::Resource(_) => format!(
                "keeping this resource's {} last accepted record(s)",
                matching.len()
            ),
        };
        for e in &mut parsed.errors[rejected.errors.clone()] {
            e.message = format!("{}; {note}", e.message);
        }
        keep.extend(matching.iter().copied());
    }
    result.extend(keep.into_iter().map(|i| old[i].clone()));
    result
}

/// `message`, saying how many last accepted records (`kept`) the file keeps.
pub(super) fn with_kept_note(message: String, kept: usize) -> String {
    match kept {
        0 => message,
        n => format!("{message}; keeping this file's {n} last accepted record(s)"),
    }
}
