//! Pushed desired state checked before anything is accepted: `PutDesired` and its
//! streamed form into desired entries, `PatchDesired` into a [`Patch`], every problem
//! named by its field.
use crate::config::ZoneConfig;
use crate::desired::{Checked, DesiredIndex};
use crate::engine::Patch;
use crate::source::{DesiredEntry, EntryKey, Labels, Origin};
use crate::store::StoreError;
use dnsplane_common::convert::FieldError;
use dnsplane_common::{Name, RecordType, SetId, convert, pb, rdata, routing, wire};
use std::collections::HashSet;

/// Why a patch was refused.
pub(super) enum PatchFailure {
    Invalid(Vec<FieldError>),
    Store(StoreError),
}

/// The answer to a refused patch (of a `PatchDesired`, or of a push applied as one):
/// each problem at its field, or UNAVAILABLE when it could not be persisted.
pub(super) fn patch_failure(what: &'static str) -> impl Fn(PatchFailure) -> tonic::Status {
    move |e| match e {
        PatchFailure::Invalid(errors) => dnsplane_common::grpc::invalid_argument(&errors),
        PatchFailure::Store(e) => tonic::Status::unavailable(format!(
            "cannot persist the {what} ({e}); nothing changed, retry later"
        )),
    }
}

impl From<StoreError> for PatchFailure {
    fn from(e: StoreError) -> Self {
        PatchFailure::Store(e)
    }
}

/// The PutDesired validator: a request into desired entries, or every problem with
/// the field it is in (`records[1].values[0]: …`). All or nothing: cross-record checks
/// (zones, duplicates, CNAME clashes) run on this push alone, so a bad push is refused
/// whole and the previous one stays in force. The same record rules as every source:
/// normalised names, canonical values, and what one DNS answer can carry.
pub fn validate_push(
    zones: &[ZoneConfig],
    req: &pb::PutDesiredRequest,
) -> Result<Vec<DesiredEntry>, Vec<FieldError>> {
    validate_push_checked(zones, req).map(|(entries, _)| entries)
}

/// [`validate_push`], with the entries as placed by the check, so that the index
/// takes them without placing them again ([`DesiredIndex::update_source_checked`]).
pub(super) fn validate_push_checked(
    zones: &[ZoneConfig],
    req: &pb::PutDesiredRequest,
) -> Result<(Vec<DesiredEntry>, Checked), Vec<FieldError>> {
    check_source(&req.source)?;
    let mut errors = Vec::new();
    let mut entries = Vec::with_capacity(req.records.len());
    let origin = PushOrigin::of(&req.source);
    for (i, r) in req.records.iter().enumerate() {
        match push_entry(&origin, "records", i, r) {
            Ok(e) => entries.push(e),
            Err(mut e) => errors.append(&mut e),
        }
    }
    errors.extend(unknown_views(zones, "records", &entries));
    let checked = DesiredIndex::checked(zones, &req.source, &entries);
    errors.extend(field_errors(&checked.errors));
    if errors.is_empty() {
        Ok((entries, checked))
    } else {
        Err(errors)
    }
}

/// A whole push as the patch that turns what its source holds into it, when that
/// patch is small: `None` when the source holds nothing yet, when more than a quarter
/// of it changes, or when anything in the push needs the whole check (a name or type
/// that does not parse, a key named twice, a changed record that is invalid), which
/// then reports it exactly as for a first push. A record counts as unchanged when the
/// source has it in force with the same TTL, the same values in canonical order and
/// the same labels; any other record is checked as `PutDesired` checks a record, at
/// its own field (a change of labels alone is an upsert that re-plans nothing).
pub(super) fn push_as_patch(index: &DesiredIndex, req: &pb::PutDesiredRequest) -> Option<Patch> {
    check_source(&req.source).ok()?;
    let source = format!("push:{}", req.source);
    let held = index.source_len(&source);
    if held == 0 {
        return None;
    }
    let most = held / 4 + 1;
    let origin = PushOrigin::of(&req.source);
    let mut keys: HashSet<EntryKey> = HashSet::with_capacity(req.records.len());
    let mut patch = Patch::default();
    for (i, r) in req.records.iter().enumerate() {
        let name = Name::parse(&r.name).ok()?;
        let rtype = RecordType::parse(&r.r#type).ok()?;
        let set = SetId::new(&r.set_identifier).ok()?;
        // A record with properties is compared by the whole check (an upsert).
        let unchanged = r.provider_specific.is_empty()
            && index
                .in_force(&source, &name, rtype, set)
                .is_some_and(|(zone, d, labels)| {
                    let ttl = if r.ttl == 0 { zone.default_ttl } else { r.ttl };
                    same_labels(labels, &r.labels)
                        && d.data.ttl() == ttl
                        && d.data.properties().next().is_none()
                        && (d.data.values() == r.values.as_slice()
                            || canonical(rtype, &r.values).is_some_and(|v| d.data.values() == v))
                });
        if !keys.insert(EntryKey { name, rtype, set }) {
            return None;
        }
        if !unchanged {
            patch
                .upserts
                .push(push_entry(&origin, "records", i, r).ok()?);
            if patch.upserts.len() > most {
                return None;
            }
        }
    }
    for key in index.source_keys(&source) {
        let key = EntryKey::of(key);
        if !keys.contains(&key) {
            patch.deletes.push(key);
            if patch.upserts.len() + patch.deletes.len() > most {
                return None;
            }
        }
    }
    Some(patch)
}

/// Whether `given` (a pushed record's labels) are exactly `held`.
fn same_labels(held: &Labels, given: &std::collections::HashMap<String, String>) -> bool {
    held.len() == given.len() && given.iter().all(|(k, v)| held.get(k) == Some(v.as_str()))
}

/// `values` as the index holds them: each canonical, sorted, no repeats (`None` when
/// one is not valid).
fn canonical(rtype: RecordType, values: &[String]) -> Option<Vec<String>> {
    let mut out = values
        .iter()
        .map(|v| rdata::canonicalize(rtype, v).ok())
        .collect::<Option<Vec<String>>>()?;
    out.sort();
    out.dedup();
    Some(out)
}

/// A push's `shadowed`: the records of `source` that another source's holds back.
pub(super) fn shadowed(engine: &crate::engine::Engine, source: &str) -> Vec<pb::ShadowedRecord> {
    engine
        .shadowed(source)
        .into_iter()
        .map(|(key, by)| pb::ShadowedRecord {
            name: key.name.to_string(),
            r#type: key.rtype.as_str().to_string(),
            by,
        })
        .collect()
}

pub(super) fn check_source(source: &str) -> Result<(), Vec<FieldError>> {
    if source.is_empty() || source.len() > 128 {
        return Err(vec![FieldError::new(
            "source",
            "must be 1-128 characters naming the pushing program",
        )]);
    }
    Ok(())
}

/// The checks across the records of one source's whole push (zones, duplicates,
/// CNAME clashes), each error at its record's field.
pub(crate) fn cross_check(
    zones: &[ZoneConfig],
    source: &str,
    entries: &[DesiredEntry],
) -> Vec<FieldError> {
    field_errors(&DesiredIndex::check_alone(zones, source, entries))
}

/// The entries fed (by their `dnsplane.io/view` label) only to views no `[[zones]]`
/// target has: refused at their field, since they would be placed nowhere.
pub(super) fn unknown_views(
    zones: &[ZoneConfig],
    field: &str,
    entries: &[DesiredEntry],
) -> Vec<FieldError> {
    use crate::engine::VIEW_LABEL;
    let known: std::collections::BTreeSet<&str> =
        zones.iter().filter_map(|z| z.view.as_deref()).collect();
    entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let fed = e.labels.get(VIEW_LABEL)?;
            let views: Vec<&str> = fed.split(',').map(str::trim).collect();
            if views.iter().any(|v| known.contains(v)) {
                return None;
            }
            Some(FieldError::new(
                format!("{field}[{i}].labels"),
                format!(
                    "{VIEW_LABEL}={fed:?}: no [[zones]] target has that view (the views: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.iter().copied().collect::<Vec<_>>().join(", ")
                    }
                ),
            ))
        })
        .collect()
}

fn field_errors(errors: &[crate::source::SourceError]) -> Vec<FieldError> {
    errors
        .iter()
        .map(|e| FieldError::new(e.location.clone(), format!("{}: {}", e.record, e.message)))
        .collect()
}

/// The PatchDesired validator, for what can be checked on the patch alone: each
/// upsert as PutDesired checks a record, each delete's name and type, and each key
/// named once. The checks across the source's resulting records follow in the engine.
pub(super) fn validate_patch(req: &pb::PatchDesiredRequest) -> Result<Patch, Vec<FieldError>> {
    check_source(&req.source)?;
    let mut errors = Vec::new();
    let mut patch = Patch::default();
    let mut seen: std::collections::HashMap<EntryKey, String> = std::collections::HashMap::new();
    let mut once = |key: EntryKey, field: String, errors: &mut Vec<FieldError>| {
        if let Some(first) = seen.get(&key) {
            let set = match key.set.is_none() {
                true => String::new(),
                false => format!(" (set {:?})", key.set.as_str()),
            };
            errors.push(FieldError::new(
                field,
                format!(
                    "{} {}{set} is already patched by {first}; name each record once",
                    key.name, key.rtype
                ),
            ));
        } else {
            seen.insert(key, field);
        }
    };
    let origin = PushOrigin::of(&req.source);
    for (i, r) in req.upserts.iter().enumerate() {
        match push_entry(&origin, "upserts", i, r) {
            Ok(e) => {
                once(e.entry_key(), format!("upserts[{i}]"), &mut errors);
                patch.upserts.push(e);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    for (i, d) in req.deletes.iter().enumerate() {
        let name = Name::parse(&d.name)
            .map_err(|e| errors.push(FieldError::new(format!("deletes[{i}].name"), e.to_string())));
        let rtype = RecordType::parse(&d.r#type)
            .map_err(|e| errors.push(FieldError::new(format!("deletes[{i}].type"), e.to_string())));
        let set = SetId::new(&d.set_identifier).map_err(|e| {
            errors.push(FieldError::new(
                format!("deletes[{i}].set_identifier"),
                e.to_string(),
            ))
        });
        if let (Ok(name), Ok(rtype), Ok(set)) = (name, rtype, set) {
            let key = EntryKey { name, rtype, set };
            once(key.clone(), format!("deletes[{i}]"), &mut errors);
            patch.deletes.push(key);
        }
    }
    if errors.is_empty() {
        Ok(patch)
    } else {
        Err(errors)
    }
}

/// The names every entry of one push shares: its source and its resource (one
/// allocation each, whatever the number of records).
#[derive(Debug)]
pub(crate) struct PushOrigin {
    source: std::sync::Arc<str>,
    resource: std::sync::Arc<str>,
}

impl PushOrigin {
    pub(crate) fn of(source: &str) -> PushOrigin {
        PushOrigin {
            source: format!("push:{source}").into(),
            resource: format!("push/{source}").into(),
        }
    }
}

/// A pushed record as its sender wrote it, whichever edge it came through (a gRPC
/// `DesiredRecord`, an external-dns endpoint), so that both are checked alike.
#[derive(Debug)]
pub(crate) struct RecordText<'a> {
    pub(crate) name: &'a str,
    pub(crate) rtype: &'a str,
    /// 0: the zone's default.
    pub(crate) ttl: u32,
    pub(crate) values: &'a [String],
    pub(crate) set_identifier: &'a str,
    pub(crate) properties: Vec<(&'a str, &'a str)>,
    /// Kept with the record, never part of its data.
    pub(crate) labels: Vec<(&'a str, &'a str)>,
}

impl<'a> From<&'a pb::DesiredRecord> for RecordText<'a> {
    fn from(r: &'a pb::DesiredRecord) -> Self {
        RecordText {
            name: &r.name,
            rtype: &r.r#type,
            ttl: r.ttl,
            values: &r.values,
            set_identifier: &r.set_identifier,
            properties: convert::properties_from_pb(&r.provider_specific),
            labels: r
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
        }
    }
}

pub(crate) fn push_entry(
    origin: &PushOrigin,
    field: &str,
    i: usize,
    r: &pb::DesiredRecord,
) -> Result<DesiredEntry, Vec<FieldError>> {
    check_record(origin, field, i, &r.into())
}

/// One pushed record checked alone (name, type, values, set, properties), each
/// problem at its field (`{field}[{i}].values[j]`, …).
pub(crate) fn check_record(
    origin: &PushOrigin,
    field: &str,
    i: usize,
    r: &RecordText<'_>,
) -> Result<DesiredEntry, Vec<FieldError>> {
    let mut errors = Vec::new();
    let name = Name::parse(r.name)
        .map_err(|e| errors.push(FieldError::new(format!("{field}[{i}].name"), e.to_string())));
    let rtype = RecordType::parse(r.rtype)
        .map_err(|e| errors.push(FieldError::new(format!("{field}[{i}].type"), e.to_string())));
    let set = SetId::new(r.set_identifier).map_err(|e| {
        errors.push(FieldError::new(
            format!("{field}[{i}].set_identifier"),
            e.to_string(),
        ))
    });
    let properties = routing::canonical_properties(&r.properties).map_err(|e| {
        errors.push(FieldError::new(
            format!("{field}[{i}].provider_specific"),
            e.to_string(),
        ))
    });
    let labels = Labels::of(r.labels.iter().copied()).map_err(|e| {
        errors.push(FieldError::new(
            format!("{field}[{i}].labels"),
            e.to_string(),
        ))
    });
    let alias = properties
        .as_ref()
        .is_ok_and(|p| routing::is_alias(p.iter().map(|(n, v)| (n.as_str(), v.as_str()))));
    let mut values = Vec::new();
    if let Ok(t) = rtype {
        if r.values.is_empty() {
            errors.push(FieldError::new(
                format!("{field}[{i}].values"),
                "at least one value is needed",
            ));
        }
        for (j, v) in r.values.iter().enumerate() {
            let canonical = match alias {
                true => Name::parse(v).map(|n| n.to_string()),
                false => rdata::canonicalize(t, v),
            };
            match canonical {
                Ok(c) => values.push(c),
                Err(e) => errors.push(FieldError::new(
                    format!("{field}[{i}].values[{j}]"),
                    e.to_string(),
                )),
            }
        }
    }
    match (name, rtype, set, properties, labels) {
        (Ok(name), Ok(rtype), Ok(set), Ok(properties), Ok(labels)) if errors.is_empty() => {
            values.sort();
            values.dedup();
            let checked = match alias {
                true if values.len() > 1 => Err(format!(
                    "an alias holds exactly one target, not {}",
                    values.len()
                )),
                true => Ok(()),
                false => wire::check_answer(&name, rtype, &values),
            };
            if let Err(problem) = checked {
                return Err(vec![FieldError::new(
                    format!("{field}[{i}].values"),
                    problem,
                )]);
            }
            Ok(DesiredEntry {
                name,
                rtype,
                ttl: (r.ttl != 0).then_some(r.ttl),
                values,
                set,
                properties,
                labels,
                origin: Origin {
                    source: origin.source.clone(),
                    location: format!("{field}[{i}]").into(),
                    resource: origin.resource.clone(),
                },
            })
        }
        _ => Err(errors),
    }
}

#[cfg(test)]
mod tests {
    use crate::service::tests::{record, service};
    use dnsplane_common::pb;
    use dnsplane_common::pb::planner_server::Planner;
    use tonic::Request;

    fn put(source: &str, records: Vec<pb::DesiredRecord>) -> Request<pb::PutDesiredRequest> {
        Request::new(pb::PutDesiredRequest {
            source: source.into(),
            records,
        })
    }

    /// A push whose record another source declares with other values is accepted and
    /// held back: the answer says so and names the source in force (issue 35; it said
    /// only "accepted"). The same values, or none in force, shadow nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_push_held_back_by_another_source_says_by_which() {
        let dir = tempfile::tempdir().unwrap();
        let svc = service(dir.path());
        let first = vec![
            record("a.example.com", "A", &["192.0.2.1"]),
            record("b.example.com", "A", &["192.0.2.2"]),
        ];
        let answer = svc.put_desired(put("first", first)).await.unwrap();
        assert!(answer.into_inner().shadowed.is_empty());
        let second = vec![
            record("a.example.com", "A", &["192.0.2.9"]),
            record("b.example.com", "A", &["192.0.2.2"]),
            record("c.example.com", "A", &["192.0.2.3"]),
        ];
        let answer = svc.put_desired(put("second", second)).await.unwrap();
        let answer = answer.into_inner();
        assert_eq!(answer.accepted, 3);
        assert_eq!(
            answer.shadowed,
            [pb::ShadowedRecord {
                name: "a.example.com.".into(),
                r#type: "A".into(),
                by: "push:first".into(),
            }]
        );
        // A patch says the same of what it leaves held back.
        let done = svc
            .patch_desired(Request::new(pb::PatchDesiredRequest {
                source: "second".into(),
                upserts: vec![record("b.example.com", "A", &["192.0.2.8"])],
                deletes: Vec::new(),
            }))
            .await
            .unwrap()
            .into_inner();
        let names: Vec<&str> = done.shadowed.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a.example.com.", "b.example.com."]);
    }
}
