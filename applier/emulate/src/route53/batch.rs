//! The atomic change-batch engine of ChangeResourceRecordSets.
//!
//! Route 53 "validates the changes in the request and then either makes all or none
//! of the changes". Here: the changes are applied in order to a working copy of the
//! zone; every failing change is reported (a change that fails is not applied, and the
//! later ones see the copy without it); if anything failed, the zone is untouched and
//! the answer is one `InvalidChangeBatch` whose message joins every failure,
//! `[msg1, msg2]`. Otherwise the copy replaces the zone.
//!
//! Per change, in this order: the name is inside the zone; the values are valid; no
//! CNAME at the apex; the change does not conflict with an earlier change to the same
//! set (only DELETE then CREATE/UPSERT is allowed); then CREATE must not find the set,
//! DELETE must find it with exactly the same data, UPSERT replaces or creates; a
//! CNAME may not share its name with other types either way, nor loop; an alias to
//! this zone must find its target. After all changes: the apex keeps exactly one SOA
//! and its NS set (so DELETE + CREATE of the apex SOA is allowed, DELETE alone is not).
use super::model::{RRSet, RrKey, Zone};
use super::names::{is_within, sort_key};
use super::values::check_value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A change's action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Create,
    Delete,
    Upsert,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "CREATE",
            Action::Delete => "DELETE",
            Action::Upsert => "UPSERT",
        }
    }
}

/// One parsed change. `problems` holds batch messages found while parsing (a name
/// that is not a valid DNS name).
#[derive(Clone, Debug)]
pub(crate) struct Change {
    pub action: Action,
    pub rrset: RRSet,
    pub problems: Vec<String>,
}

/// Most `ResourceRecord` elements in one request (UPSERT counts twice).
pub(crate) const MAX_RECORDS: usize = 1000;
/// Most characters across all `Value` elements in one request (UPSERT counts twice).
pub(crate) const MAX_VALUE_CHARS: usize = 32_000;

/// The request-wide limits, checked before any change.
pub(crate) fn check_limits(changes: &[Change]) -> Option<String> {
    let mut records = 0usize;
    let mut chars = 0usize;
    for c in changes {
        let weight = if c.action == Action::Upsert { 2 } else { 1 };
        records += c.rrset.records.len() * weight;
        chars += c
            .rrset
            .records
            .iter()
            .map(|v| v.chars().count())
            .sum::<usize>()
            * weight;
    }
    if records > MAX_RECORDS {
        return Some(format!(
            "Number of records limit of {MAX_RECORDS} exceeded."
        ));
    }
    if chars > MAX_VALUE_CHARS {
        // AWS's exact text for this limit was not found; this one follows the
        // records limit's pattern (see docs/emulators.md).
        return Some(format!(
            "Number of characters limit of {MAX_VALUE_CHARS} exceeded."
        ));
    }
    None
}

/// The zone as the batch has changed it so far: the changes made, over the zone's
/// record sets (cloning a zone of a million sets for every batch would cost more than
/// the batch).
struct WorkingCopy<'a> {
    base: &'a BTreeMap<RrKey, RRSet>,
    /// `None`: deleted by the batch.
    overlay: BTreeMap<RrKey, Option<RRSet>>,
}

impl<'a> WorkingCopy<'a> {
    fn new(base: &'a BTreeMap<RrKey, RRSet>) -> WorkingCopy<'a> {
        WorkingCopy {
            base,
            overlay: BTreeMap::new(),
        }
    }

    fn get(&self, key: &RrKey) -> Option<&RRSet> {
        match self.overlay.get(key) {
            Some(v) => v.as_ref(),
            None => self.base.get(key),
        }
    }

    fn put(&mut self, key: RrKey, value: Option<RRSet>) {
        self.overlay.insert(key, value);
    }

    /// Every set at one name (given labels reversed), in order.
    fn at_name(&self, rev_name: &str) -> Vec<(&RrKey, &RRSet)> {
        let start = RrKey {
            rev_name: rev_name.to_string(),
            rtype: String::new(),
            set_id: None,
        };
        let mut merged: BTreeMap<&RrKey, Option<&RRSet>> = self
            .base
            .range(start.clone()..)
            .take_while(|(k, _)| k.rev_name == rev_name)
            .map(|(k, v)| (k, Some(v)))
            .collect();
        for (k, v) in self
            .overlay
            .range(start..)
            .take_while(|(k, _)| k.rev_name == rev_name)
        {
            merged.insert(k, v.as_ref());
        }
        merged
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect()
    }

    /// Writes the batch into `rrsets`.
    fn into_changes(self) -> BTreeMap<RrKey, Option<RRSet>> {
        self.overlay
    }
}

/// Applies `changes` to `zone` all or nothing. On failure, every message.
pub(crate) fn apply(zone: &mut Zone, changes: &[Change]) -> Result<(), Vec<String>> {
    if let Some(m) = check_limits(changes) {
        return Err(vec![m]);
    }
    let mut work = WorkingCopy::new(&zone.rrsets);
    let mut errors = Vec::new();
    let mut history: HashMap<RrKey, Vec<Action>> = HashMap::new();
    let mut apex_touched = false;
    let apex_rev = sort_key(&zone.name);
    for change in changes {
        let rr = &change.rrset;
        let key = rr.key();
        let earlier = history.entry(key.clone()).or_default();
        let allowed_sequence = earlier.is_empty()
            || (earlier.as_slice() == [Action::Delete] && change.action != Action::Delete);
        earlier.push(change.action);
        let msgs = check_change(zone, &work, change, &key, allowed_sequence);
        if msgs.is_empty() {
            if key.rev_name == apex_rev {
                apex_touched = true;
            }
            match change.action {
                Action::Delete => work.put(key, None),
                Action::Create | Action::Upsert => work.put(key, Some(rr.clone())),
            }
        } else {
            errors.extend(msgs);
        }
    }
    if apex_touched {
        let apex = work.at_name(&apex_rev);
        let count = |t: &str| apex.iter().filter(|(k, _)| k.rtype == t).count();
        if count("SOA") != 1 {
            errors.push("A HostedZone must contain exactly one SOA record.".to_string());
        }
        if count("NS") == 0 {
            errors.push(
                "A HostedZone must contain at least one NS record for the zone itself.".to_string(),
            );
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    for (k, v) in work.into_changes() {
        match v {
            Some(v) => {
                zone.rrsets.insert(k, v);
            }
            None => {
                zone.rrsets.remove(&k);
            }
        }
    }
    Ok(())
}

/// The messages one change earns against the working copy.
fn check_change(
    zone: &Zone,
    work: &WorkingCopy<'_>,
    change: &Change,
    key: &RrKey,
    allowed_sequence: bool,
) -> Vec<String> {
    let rr = &change.rrset;
    if !change.problems.is_empty() {
        return change.problems.clone();
    }
    if !is_within(&rr.name, &zone.name) {
        return vec![format!(
            "RRSet with DNS name {} is not permitted in zone {}",
            rr.name, zone.name
        )];
    }
    let mut msgs: Vec<String> = rr
        .records
        .iter()
        .filter_map(|v| check_value(&rr.rtype, v))
        .collect();
    let mut seen = HashSet::new();
    for v in &rr.records {
        if !seen.insert(v) {
            msgs.push(format!("Duplicate Resource Record: '{v}'"));
        }
    }
    if !msgs.is_empty() {
        return msgs;
    }
    let writes = change.action != Action::Delete;
    if writes && rr.rtype == "CNAME" && rr.name == zone.name {
        return vec![format!(
            "RRSet of type CNAME with DNS name {} is not permitted at apex in zone {}",
            rr.name, zone.name
        )];
    }
    if writes && rr.rtype == "CNAME" && rr.records.len() > 1 {
        // AWS refuses this; its exact text was not found (docs/emulators.md).
        return vec![format!(
            "RRSet of type CNAME with DNS name {} has {} values, but a CNAME set holds exactly one",
            rr.name,
            rr.records.len()
        )];
    }
    if !allowed_sequence {
        return vec![format!(
            "The request contains an invalid set of changes for a resource record set '{} {}'",
            rr.rtype, rr.name
        )];
    }
    match change.action {
        Action::Create => {
            if work.get(key).is_some() {
                return vec![format!(
                    "Tried to create resource record set {} but it already exists",
                    rr.describe()
                )];
            }
        }
        Action::Delete => {
            return match work.get(key) {
                None => vec![format!(
                    "Tried to delete resource record set {} but it was not found",
                    rr.describe()
                )],
                Some(current) if !current.same_data(rr) => vec![format!(
                    "Tried to delete resource record set {} but the values provided do not match the current values",
                    rr.describe()
                )],
                Some(_) => Vec::new(),
            };
        }
        Action::Upsert => {}
    }
    // CREATE or UPSERT from here.
    let mut msgs = Vec::new();
    let at_name = work.at_name(&key.rev_name);
    if let Some(m) = policy_clash(rr, key, &at_name) {
        msgs.push(m);
    }
    let others: Vec<&RrKey> = at_name.into_iter().map(|(k, _)| k).collect();
    if rr.rtype == "CNAME" {
        if others.iter().any(|k| k.rtype != "CNAME") {
            msgs.push(format!(
                "RRSet of type CNAME with DNS name {} is not permitted as it conflicts with other records with the same DNS name in zone {}",
                rr.name, zone.name
            ));
        }
    } else if others.iter().any(|k| k.rtype == "CNAME") {
        // Two spaces before CNAME, as AWS writes it.
        msgs.push(format!(
            "RRSet of type {} with DNS name {} is not permitted because a conflicting RRSet of type  CNAME with the same DNS name already exists in zone {}",
            rr.rtype, rr.name, zone.name
        ));
    }
    if creates_loop(zone, work, rr) {
        msgs.push(format!(
            "RRSet of type {} with DNS name {} is not permitted as it creates a CNAME or alias loop in the zone.",
            rr.rtype, rr.name
        ));
    } else if let Some(alias) = &rr.alias
        && super::model::bare_zone_id(&alias.hosted_zone_id) == zone.id
    {
        let target_rev = sort_key(&alias.dns_name);
        let found = work
            .at_name(&target_rev)
            .iter()
            .any(|(k, _)| k.rtype == rr.rtype);
        if !found {
            msgs.push(format!(
                "Tried to create an alias that targets {}, type {} in zone {}, but that target was not found",
                alias.dns_name, rr.rtype, zone.id
            ));
        }
    }
    msgs
}

/// The routing policy of a set, as AWS's messages name it ("a non-weighted set").
fn policy(rr: &RRSet) -> Option<&'static str> {
    if rr.weight.is_some() {
        Some("weighted")
    } else if rr.region.is_some() {
        Some("latency")
    } else if rr.failover.is_some() {
        Some("failover")
    } else if rr.geo.is_some() {
        Some("geolocation")
    } else if rr.multi_value_answer.is_some() {
        Some("multivalue answer")
    } else {
        None
    }
}

/// One name and type holds either one plain set or sets of one routing policy. The
/// texts are AWS's for a plain set beside sets and for a weighted set beside another
/// kind; the other policies' follow the weighted one (docs/emulators.md).
fn policy_clash(rr: &RRSet, key: &RrKey, at_name: &[(&RrKey, &RRSet)]) -> Option<String> {
    let mut same_type = at_name
        .iter()
        .filter(|(k, _)| k.rtype == key.rtype && *k != key);
    match &rr.set_identifier {
        None => same_type.next().map(|_| {
            format!(
                "RRSet with DNS name {}, type {} cannot be created as other RRSets exist with the same name and type.",
                rr.name, rr.rtype
            )
        }),
        Some(id) => {
            let mine = policy(rr);
            same_type
                .any(|(k, other)| k.set_id.is_none() || policy(other) != mine)
                .then(|| {
                    format!(
                        "RRSet with DNS name {}, type {}, SetIdentifier {id} cannot be created as a non-{} set exists with the same name and type.",
                        rr.name,
                        rr.rtype,
                        mine.unwrap_or("routing-policy")
                    )
                })
        }
    }
}

/// Whether writing `rr` makes a CNAME chain (or an alias to this zone) come back to
/// its own name.
fn creates_loop(zone: &Zone, work: &WorkingCopy<'_>, rr: &RRSet) -> bool {
    let first = if rr.rtype == "CNAME" {
        rr.records
            .first()
            .and_then(|v| super::names::parse_name(v.trim()).ok())
    } else if let Some(a) = &rr.alias
        && super::model::bare_zone_id(&a.hosted_zone_id) == zone.id
    {
        Some(a.dns_name.clone())
    } else {
        None
    };
    let Some(mut current) = first else {
        return false;
    };
    let mut visited = HashSet::new();
    for _ in 0..64 {
        if current == rr.name {
            return true;
        }
        if !visited.insert(current.clone()) || !is_within(&current, &zone.name) {
            return false;
        }
        let rev = sort_key(&current);
        let next = work
            .at_name(&rev)
            .into_iter()
            .filter(|(k, _)| k.rtype == "CNAME")
            .find_map(|(_, v)| v.records.first())
            .and_then(|v| super::names::parse_name(v.trim()).ok());
        match next {
            Some(n) => current = n,
            None => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests;
