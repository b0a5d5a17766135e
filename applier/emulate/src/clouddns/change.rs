//! `changes.create`: one Change applied atomically, by the rules of INTEROP.md §2.1.
//!
//! 1. Per-change limits first (403 `quotaExceeded`, Google's texts): additions,
//!    deletions, total rrdata bytes, rrdatas per set.
//! 2. Every entry is checked on its own (400 `invalid`/`required`, naming the field:
//!    `entity.change.additions[2].rrdata[0]`); all bad entries are reported.
//! 3. Deletions are checked against the zone *before* the change and must match name,
//!    type, TTL and rrdatas exactly (absent: 404 `notFound`; different: 412
//!    `conditionNotMet`). Additions are checked against the zone with the matched
//!    deletions removed: an existing (name, type) is 409 `alreadyExists`, unless the
//!    same change deletes it (the update idiom). A CNAME beside other data at its
//!    name is 400 `cnameResourceRecordSetConflict`. Every failing entry is reported,
//!    each with its index; the answer's status is the first one's.
//! 4. The zone's rrset limit (403 `quotaExceeded`).
//! 5. All or nothing: only a change with no error touches the zone.
use super::errors::{ApiError, ErrorItem, invalid_value};
use super::model::{ChangeRec, RRSet, Zone};
use super::values::{RR_TYPES, json_int, parse_name, rrdata_ok, within};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::SystemTime;
use tokio::time::Instant;

/// Cloud DNS's per-change and per-zone limits (the "Quotas and limits" page).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Record set additions per change. Google: 1,000.
    pub additions_per_change: usize,
    /// Record set deletions per change. Google: 1,000.
    pub deletions_per_change: usize,
    /// Bytes of rrdata (additions and deletions) per change. Google: 100,000.
    pub rrdata_bytes_per_change: usize,
    /// Rrdatas per record set. Google: 100.
    pub rrdatas_per_rrset: usize,
    /// Record sets per zone (SOA and NS included). Google: 10,000.
    pub rrsets_per_zone: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            additions_per_change: 1000,
            deletions_per_change: 1000,
            rrdata_bytes_per_change: 100_000,
            rrdatas_per_rrset: 100,
            rrsets_per_zone: 10_000,
        }
    }
}

/// How a change is recorded besides its content.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChangeMeta {
    pub pending_forever: bool,
    pub client_operation_id: Option<String>,
}

fn item(reason: &str, message: String) -> ErrorItem {
    ErrorItem {
        message,
        reason: reason.to_string(),
        location: None,
    }
}

fn quota(what: &str) -> ErrorItem {
    item(
        "quotaExceeded",
        format!("The change would exceed quota for {what}."),
    )
}

const CHANGE_FIELDS: &[&str] = &[
    "kind",
    "additions",
    "deletions",
    "id",
    "startTime",
    "status",
    "isServing",
];
const RRSET_FIELDS: &[&str] = &[
    "kind",
    "name",
    "type",
    "ttl",
    "rrdatas",
    "signatureRrdatas",
    "routingPolicy",
];

fn unknown_field(name: &str, at: &str) -> ErrorItem {
    item(
        "invalid",
        format!(
            "Invalid JSON payload received. Unknown name \"{name}\" at '{at}': Cannot find field."
        ),
    )
}

/// An entry's set, or the problems with it.
fn parse_entry(
    v: &Value,
    field: &str,
    zone_dns: &str,
    problems: &mut Vec<ErrorItem>,
) -> Option<RRSet> {
    let Some(obj) = v.as_object() else {
        problems.push(item("invalid", invalid_value(field, &v.to_string())));
        return None;
    };
    let before = problems.len();
    for k in obj.keys() {
        if !RRSET_FIELDS.contains(&k.as_str()) {
            problems.push(unknown_field(k, field));
        }
    }
    if obj.get("routingPolicy").is_some_and(|p| !p.is_null()) {
        problems.push(item(
            "invalid",
            format!(
                "{}: routing policies are not emulated",
                invalid_value(&format!("{field}.routingPolicy"), "…")
            ),
        ));
    }
    let name = match obj.get("name").and_then(Value::as_str) {
        None => {
            problems.push(item(
                "required",
                format!("Required field '{field}.name' not specified"),
            ));
            None
        }
        Some(raw) => match parse_name(raw) {
            Some(n) if within(&n, zone_dns) => Some(n),
            _ => {
                problems.push(item(
                    "invalid",
                    invalid_value(&format!("{field}.name"), raw),
                ));
                None
            }
        },
    };
    let rtype = match obj.get("type").and_then(Value::as_str) {
        None => {
            problems.push(item(
                "required",
                format!("Required field '{field}.type' not specified"),
            ));
            None
        }
        Some(t) if RR_TYPES.contains(&t) => Some(t.to_string()),
        Some(t) => {
            problems.push(item("invalid", invalid_value(&format!("{field}.type"), t)));
            None
        }
    };
    let ttl = match obj.get("ttl") {
        None | Some(Value::Null) => {
            problems.push(item(
                "required",
                format!("Required field '{field}.ttl' not specified"),
            ));
            None
        }
        Some(t) => match json_int(t)
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n <= i32::MAX as u32)
        {
            Some(n) => Some(n),
            None => {
                problems.push(item(
                    "invalid",
                    invalid_value(
                        &format!("{field}.ttl"),
                        &t.as_str().map_or_else(|| t.to_string(), str::to_string),
                    ),
                ));
                None
            }
        },
    };
    let rrdatas: Vec<String> = match obj.get("rrdatas").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => {
            let mut out = Vec::new();
            for (j, r) in a.iter().enumerate() {
                match r.as_str() {
                    Some(s) if rtype.as_deref().is_none_or(|t| rrdata_ok(t, s)) => {
                        out.push(s.to_string())
                    }
                    _ => problems.push(item(
                        "invalid",
                        invalid_value(
                            &format!("{field}.rrdata[{j}]"),
                            r.as_str().unwrap_or(&r.to_string()),
                        ),
                    )),
                }
            }
            out
        }
        _ => {
            problems.push(item(
                "required",
                format!("Required field '{field}.rrdata' not specified"),
            ));
            Vec::new()
        }
    };
    if problems.len() > before {
        return None;
    }
    Some(RRSet {
        name: name?,
        rtype: rtype?,
        ttl: ttl?,
        rrdatas,
    })
}

/// The entries of `additions` or `deletions` (absent: none).
fn entries<'a>(body: &'a Value, key: &str) -> Result<&'a [Value], ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a.as_slice()),
        Some(v) => Err(ApiError::invalid(
            &format!("entity.change.{key}"),
            &v.to_string(),
        )),
    }
}

/// Applies the change in `body` to `zone`, or refuses it whole.
pub(crate) fn apply(
    zone: &mut Zone,
    body: &Value,
    limits: &Limits,
    meta: ChangeMeta,
) -> Result<ChangeRec, ApiError> {
    let Some(obj) = body.as_object() else {
        return Err(ApiError::parse_error(
            "the request body must be a JSON object (a Change)",
        ));
    };
    let unknown: Vec<ErrorItem> = obj
        .keys()
        .filter(|k| !CHANGE_FIELDS.contains(&k.as_str()))
        .map(|k| unknown_field(k, "change"))
        .collect();
    if !unknown.is_empty() {
        return Err(ApiError::many(400, unknown));
    }
    let adds = entries(body, "additions")?;
    let dels = entries(body, "deletions")?;
    if adds.is_empty() && dels.is_empty() {
        return Err(ApiError::required("entity.change.additions"));
    }

    // 1. Per-change limits.
    let mut over = Vec::new();
    if adds.len() > limits.additions_per_change {
        over.push(quota("additions per change"));
    }
    if dels.len() > limits.deletions_per_change {
        over.push(quota("deletions per change"));
    }
    let rrdata_bytes: usize = adds
        .iter()
        .chain(dels)
        .filter_map(|e| e.get("rrdatas").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(str::len)
        .sum();
    if rrdata_bytes > limits.rrdata_bytes_per_change {
        over.push(quota("total rrdata size per change"));
    }
    if adds.iter().chain(dels).any(|e| {
        e.get("rrdatas")
            .and_then(Value::as_array)
            .is_some_and(|a| a.len() > limits.rrdatas_per_rrset)
    }) {
        over.push(quota("resource records per rrset"));
    }
    if !over.is_empty() {
        return Err(ApiError::many(403, over));
    }

    // 2. Each entry on its own.
    let mut problems = Vec::new();
    let additions: Vec<Option<RRSet>> = adds
        .iter()
        .enumerate()
        .map(|(i, e)| {
            parse_entry(
                e,
                &format!("entity.change.additions[{i}]"),
                &zone.dns_name,
                &mut problems,
            )
        })
        .collect();
    let deletions: Vec<Option<RRSet>> = dels
        .iter()
        .enumerate()
        .map(|(i, e)| {
            parse_entry(
                e,
                &format!("entity.change.deletions[{i}]"),
                &zone.dns_name,
                &mut problems,
            )
        })
        .collect();
    let additions: Vec<RRSet> = additions.into_iter().flatten().collect();
    let deletions: Vec<RRSet> = deletions.into_iter().flatten().collect();
    // The apex SOA may be replaced, never removed (the emulator's wording).
    for (i, d) in deletions.iter().enumerate() {
        if d.rtype == "SOA" && !additions.iter().any(|a| a.key() == d.key()) {
            problems.push(item(
                "invalid",
                format!("The resource record set 'entity.change.deletions[{i}]' is invalid because a zone must keep its SOA record: delete it only together with an addition of its replacement."),
            ));
        }
    }
    if !problems.is_empty() {
        return Err(ApiError::many(400, problems));
    }

    // 3. Against the zone. The change's effect is kept apart, key by key (`None`:
    // deleted, `Some`: added), and checked against the zone as it would then be; the
    // zone itself changes only at the commit, so a refused change leaves no trace.
    // Every check reads only the keys it names: a change costs what it carries, not
    // the zone's size.
    let mut failed: Vec<(u16, ErrorItem)> = Vec::new();
    let mut effect: BTreeMap<(String, String), Option<&RRSet>> = BTreeMap::new();
    for (i, d) in deletions.iter().enumerate() {
        let key = d.key();
        match zone.rrsets.get(&key) {
            Some(cur) if cur.same_data(d) && !matches!(effect.get(&key), Some(None)) => {
                effect.insert(key, None);
            }
            Some(cur) if cur.same_data(d) => failed.push((
                404,
                item(
                    "notFound",
                    format!(
                        "The 'entity.change.deletions[{i}]' resource named '{}' does not exist.",
                        d.describe()
                    ),
                ),
            )),
            Some(_) => failed.push((
                412,
                item(
                    "conditionNotMet",
                    format!("Precondition not met for 'entity.change.deletions[{i}]'"),
                ),
            )),
            None => failed.push((
                404,
                item(
                    "notFound",
                    format!(
                        "The 'entity.change.deletions[{i}]' resource named '{}' does not exist.",
                        d.describe()
                    ),
                ),
            )),
        }
    }
    let mut added: Vec<usize> = Vec::new();
    for (i, a) in additions.iter().enumerate() {
        let key = a.key();
        let present = match effect.get(&key) {
            Some(e) => e.is_some(),
            None => zone.rrsets.contains_key(&key),
        };
        if present {
            failed.push((
                409,
                item(
                    "alreadyExists",
                    format!(
                        "The resource 'entity.change.additions[{i}]' named '{}' already exists",
                        a.describe()
                    ),
                ),
            ));
        } else {
            effect.insert(key, Some(a));
            added.push(i);
        }
    }
    for &i in &added {
        let a = &additions[i];
        let clash = types_at(&zone.rrsets, &effect, &a.name).any(|t| {
            t != a.rtype
                && (t == "CNAME" || a.rtype == "CNAME")
                // DNSSEC data may sit beside a CNAME.
                && !matches!(t, "RRSIG" | "NSEC" | "DS")
        });
        if clash {
            failed.push((
                400,
                item(
                    "cnameResourceRecordSetConflict",
                    format!("The resource record set 'entity.change.additions[{i}]' is invalid because the DNS name may have either one CNAME resource record set or resource record sets of other types, but not both."),
                ),
            ));
        }
    }
    if let Some((status, _)) = failed.first() {
        let status = *status;
        return Err(ApiError::many(
            status,
            failed.into_iter().map(|(_, i)| i).collect(),
        ));
    }

    // 4. The zone's size.
    let removed = effect.values().filter(|e| e.is_none()).count();
    if zone.rrsets.len() - removed + added.len() > limits.rrsets_per_zone {
        return Err(ApiError::many(403, vec![quota("rrsets per zone")]));
    }

    // 5. Commit.
    for (key, e) in effect {
        match e {
            Some(a) => zone.rrsets.insert(key, a.clone()),
            None => zone.rrsets.remove(&key),
        };
    }
    let rec = ChangeRec {
        id: zone.next_change_id(),
        start_time: SystemTime::now(),
        started: Instant::now(),
        additions,
        deletions,
        polls: 0,
        pending_forever: meta.pending_forever,
        client_operation_id: meta.client_operation_id,
    };
    zone.changes.push(rec.clone());
    Ok(rec)
}

/// The types of the sets at `name` once `effect` is applied to `rrsets`.
fn types_at<'a>(
    rrsets: &'a BTreeMap<(String, String), RRSet>,
    effect: &'a BTreeMap<(String, String), Option<&'a RRSet>>,
    name: &'a str,
) -> impl Iterator<Item = &'a str> {
    let at = move |(n, _): &(String, String)| n == name;
    let from = (name.to_string(), String::new());
    let kept = rrsets
        .range(from.clone()..)
        .take_while(move |(k, _)| at(k))
        .filter(|(k, _)| !effect.contains_key(*k))
        .map(|((_, t), _)| t.as_str());
    let added = effect
        .range(from..)
        .take_while(move |(k, _)| at(k))
        .filter(|(_, e)| e.is_some())
        .map(|((_, t), _)| t.as_str());
    kept.chain(added)
}

#[cfg(test)]
mod tests;
