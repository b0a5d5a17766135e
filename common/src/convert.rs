//! Conversions between the record model and the protobuf contract. Decoding validates:
//! a bad field becomes a [`FieldError`] naming the field path, which the gRPC layer turns
//! into `INVALID_ARGUMENT` with a `BadRequest` detail.
use crate::error::ModelError;
use crate::name::Name;
use crate::outcome::{ConflictReason, Outcome, RecordResult};
use crate::rdata::RecordType;
use crate::routing::SetId;
use crate::rrset::{Change, ChangeKind, RRSet, RRSetOp, RecordKey};
use crate::{pb, wkt};
use std::time::{Duration, SystemTime};

/// A request field that failed validation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// Path of the field, e.g. `batch.changes[3].ops[0].after.values[1]`.
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
    fn model(field: impl Into<String>, e: ModelError) -> Self {
        FieldError::new(field, e.to_string())
    }
}

pub fn name_from_pb(field: &str, s: &str) -> Result<Name, FieldError> {
    Name::parse(s).map_err(|e| FieldError::model(field, e))
}

impl From<&RecordKey> for pb::RecordKey {
    fn from(k: &RecordKey) -> Self {
        pb::RecordKey {
            zone: k.zone.to_string(),
            name: k.name.to_string(),
            r#type: k.rtype.as_str().to_string(),
            set_identifier: k.set.as_str().to_string(),
        }
    }
}

pub fn key_from_pb(field: &str, k: Option<&pb::RecordKey>) -> Result<RecordKey, FieldError> {
    let k = k.ok_or_else(|| FieldError::new(field, "missing"))?;
    let zone = name_from_pb(&format!("{field}.zone"), &k.zone)?;
    let name = name_from_pb(&format!("{field}.name"), &k.name)?;
    let rtype =
        RecordType::parse(&k.r#type).map_err(|e| FieldError::model(format!("{field}.type"), e))?;
    if !name.is_within(&zone) {
        return Err(FieldError::new(
            format!("{field}.name"),
            format!("{name} is outside zone {zone}"),
        ));
    }
    let set = SetId::new(&k.set_identifier)
        .map_err(|e| FieldError::model(format!("{field}.set_identifier"), e))?;
    Ok(RecordKey::new(zone, name, rtype).in_set(set))
}

/// Properties as `(name, value)` pairs, from their messages.
pub fn properties_from_pb(properties: &[pb::Property]) -> Vec<(&str, &str)> {
    properties
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str()))
        .collect()
}

/// Properties as messages.
pub fn properties_to_pb<'a>(
    properties: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<pb::Property> {
    properties
        .into_iter()
        .map(|(name, value)| pb::Property {
            name: name.to_string(),
            value: value.to_string(),
        })
        .collect()
}

impl From<&RRSet> for pb::RrSet {
    fn from(r: &RRSet) -> Self {
        pb::RrSet {
            key: Some((&r.key).into()),
            ttl: r.ttl,
            values: r.values_vec(),
            properties: properties_to_pb(r.properties()),
        }
    }
}

/// Decodes an RRSet; values are re-canonicalised, so a peer cannot smuggle in a
/// non-canonical spelling that would defeat equality.
pub fn rrset_from_pb(field: &str, r: &pb::RrSet) -> Result<RRSet, FieldError> {
    let key = key_from_pb(&format!("{field}.key"), r.key.as_ref())?;
    let properties = properties_from_pb(&r.properties);
    let canonical = crate::routing::canonical_properties(&properties)
        .map_err(|e| FieldError::model(format!("{field}.properties"), e))?;
    if !crate::routing::is_alias(canonical.iter().map(|(n, v)| (n.as_str(), v.as_str()))) {
        for (i, v) in r.values.iter().enumerate() {
            crate::rdata::canonicalize(key.rtype, v)
                .map_err(|e| FieldError::model(format!("{field}.values[{i}]"), e))?;
        }
    }
    RRSet::with_properties(key, r.ttl, &r.values, &properties)
        .map_err(|e| FieldError::model(field, e))
}

impl From<&RRSetOp> for pb::RrSetOp {
    fn from(op: &RRSetOp) -> Self {
        pb::RrSetOp {
            key: Some((&op.key).into()),
            before: op.before.as_ref().map(Into::into),
            after: op.after.as_ref().map(Into::into),
        }
    }
}

pub fn op_from_pb(field: &str, op: &pb::RrSetOp) -> Result<RRSetOp, FieldError> {
    let key = key_from_pb(&format!("{field}.key"), op.key.as_ref())?;
    let side = |name: &str, r: Option<&pb::RrSet>| -> Result<Option<RRSet>, FieldError> {
        let Some(r) = r else { return Ok(None) };
        let path = format!("{field}.{name}");
        let rr = rrset_from_pb(&path, r)?;
        if rr.key != key {
            return Err(FieldError::new(
                format!("{path}.key"),
                "differs from the op's key",
            ));
        }
        Ok(Some(rr))
    };
    let before = side("before", op.before.as_ref())?;
    let after = side("after", op.after.as_ref())?;
    if before.is_none() && after.is_none() {
        return Err(FieldError::new(
            field,
            "an op needs `before`, `after` or both",
        ));
    }
    Ok(RRSetOp { key, before, after })
}

impl From<ChangeKind> for pb::ChangeKind {
    fn from(k: ChangeKind) -> Self {
        match k {
            ChangeKind::Create => pb::ChangeKind::Create,
            ChangeKind::Update => pb::ChangeKind::Update,
            ChangeKind::Delete => pb::ChangeKind::Delete,
            ChangeKind::Adopt => pb::ChangeKind::Adopt,
            ChangeKind::Release => pb::ChangeKind::Release,
        }
    }
}

impl From<&Change> for pb::Change {
    fn from(c: &Change) -> Self {
        pb::Change {
            id: c.id.clone(),
            kind: pb::ChangeKind::from(c.kind) as i32,
            ops: c.ops.iter().map(Into::into).collect(),
        }
    }
}

/// Decodes a change and checks that all its ops are in `zone`. An empty id is filled in
/// with the stable id; a given id is kept (the sender's id is what results refer to).
pub fn change_from_pb(field: &str, zone: &Name, c: &pb::Change) -> Result<Change, FieldError> {
    let kind = match pb::ChangeKind::try_from(c.kind) {
        Ok(pb::ChangeKind::Create) => ChangeKind::Create,
        Ok(pb::ChangeKind::Update) => ChangeKind::Update,
        Ok(pb::ChangeKind::Delete) => ChangeKind::Delete,
        Ok(pb::ChangeKind::Adopt) => ChangeKind::Adopt,
        Ok(pb::ChangeKind::Release) => ChangeKind::Release,
        _ => {
            return Err(FieldError::new(
                format!("{field}.kind"),
                "unknown or unspecified change kind",
            ));
        }
    };
    if c.ops.is_empty() {
        return Err(FieldError::new(
            format!("{field}.ops"),
            "a change needs at least one op",
        ));
    }
    let mut ops = Vec::with_capacity(c.ops.len());
    for (i, op) in c.ops.iter().enumerate() {
        let path = format!("{field}.ops[{i}]");
        let op = op_from_pb(&path, op)?;
        if &op.key.zone != zone {
            return Err(FieldError::new(
                format!("{path}.key.zone"),
                format!("is not the batch's zone {zone}"),
            ));
        }
        ops.push(op);
    }
    let mut change = Change::new(kind, ops);
    if !c.id.is_empty() {
        change.id = c.id.clone();
    }
    Ok(change)
}

pub fn timestamp(t: SystemTime) -> wkt::Timestamp {
    wkt::Timestamp::from(t)
}

pub fn duration(d: Duration) -> wkt::Duration {
    wkt::Duration::try_from(d).unwrap_or(wkt::Duration {
        seconds: i64::MAX,
        nanos: 0,
    })
}

pub fn duration_from_pb(d: &wkt::Duration) -> Duration {
    Duration::try_from(*d).unwrap_or_default()
}

impl From<Outcome> for pb::Outcome {
    fn from(o: Outcome) -> Self {
        match o {
            Outcome::Applied => pb::Outcome::Applied,
            Outcome::AlreadyApplied => pb::Outcome::AlreadyApplied,
            Outcome::Conflict => pb::Outcome::Conflict,
            Outcome::Invalid => pb::Outcome::Invalid,
            Outcome::Deferred => pb::Outcome::Deferred,
            Outcome::Failed => pb::Outcome::Failed,
            Outcome::RejectedPermanent => pb::Outcome::RejectedPermanent,
        }
    }
}

/// The domain outcome of a wire one; `None` for `UNSPECIFIED` (and values this build
/// does not know).
pub fn outcome_from_pb(o: i32) -> Option<Outcome> {
    Some(match pb::Outcome::try_from(o).ok()? {
        pb::Outcome::Unspecified => return None,
        pb::Outcome::Applied => Outcome::Applied,
        pb::Outcome::AlreadyApplied => Outcome::AlreadyApplied,
        pb::Outcome::Conflict => Outcome::Conflict,
        pb::Outcome::Invalid => Outcome::Invalid,
        pb::Outcome::Deferred => Outcome::Deferred,
        pb::Outcome::Failed => Outcome::Failed,
        pb::Outcome::RejectedPermanent => Outcome::RejectedPermanent,
    })
}

impl From<ConflictReason> for pb::ConflictReason {
    fn from(r: ConflictReason) -> Self {
        match r {
            ConflictReason::Unspecified => pb::ConflictReason::Unspecified,
            ConflictReason::Exists => pb::ConflictReason::Exists,
            ConflictReason::NotFound => pb::ConflictReason::NotFound,
            ConflictReason::Changed => pb::ConflictReason::Changed,
            ConflictReason::OwnedByOther => pb::ConflictReason::OwnedByOther,
            ConflictReason::TypeClash => pb::ConflictReason::TypeClash,
        }
    }
}

/// The domain conflict reason of a wire one (unknown values: unspecified).
pub fn conflict_reason_from_pb(r: i32) -> ConflictReason {
    match pb::ConflictReason::try_from(r).unwrap_or_default() {
        pb::ConflictReason::Unspecified => ConflictReason::Unspecified,
        pb::ConflictReason::Exists => ConflictReason::Exists,
        pb::ConflictReason::NotFound => ConflictReason::NotFound,
        pb::ConflictReason::Changed => ConflictReason::Changed,
        pb::ConflictReason::OwnedByOther => ConflictReason::OwnedByOther,
        pb::ConflictReason::TypeClash => ConflictReason::TypeClash,
    }
}

impl From<&RecordResult> for pb::RecordResult {
    fn from(r: &RecordResult) -> Self {
        pb::RecordResult {
            change_id: r.change_id.clone(),
            outcome: pb::Outcome::from(r.outcome) as i32,
            conflict_reason: pb::ConflictReason::from(r.conflict_reason) as i32,
            observed: r.observed.as_ref().map(Into::into),
            observed_owner: r.observed_owner.clone().unwrap_or_default(),
            message: r.message.clone(),
            retry_after: r.retry_after.map(duration),
        }
    }
}

/// Reads a result an applier sent. Never fails: a result without a known outcome is
/// read as FAILED (retried on the record's clock), and an observed RRSet that cannot
/// be read is left out, so one odd result never loses the others.
pub fn result_from_pb(r: &pb::RecordResult) -> RecordResult {
    let (outcome, message) = match outcome_from_pb(r.outcome) {
        Some(o) => (o, r.message.clone()),
        None => (
            Outcome::Failed,
            format!(
                "the applier sent no known outcome ({}): {}",
                r.outcome, r.message
            ),
        ),
    };
    RecordResult {
        change_id: r.change_id.clone(),
        outcome,
        conflict_reason: conflict_reason_from_pb(r.conflict_reason),
        observed: r
            .observed
            .as_ref()
            .and_then(|o| rrset_from_pb("observed", o).ok()),
        observed_owner: (!r.observed_owner.is_empty()).then(|| r.observed_owner.clone()),
        message,
        retry_after: r.retry_after.as_ref().map(duration_from_pb),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdata::RecordType;

    #[test]
    fn round_trip_and_field_paths() {
        let zone = Name::parse("example.com").unwrap();
        let key = RecordKey::new(
            zone.clone(),
            Name::parse("a.example.com").unwrap(),
            RecordType::A,
        );
        let r = RRSet::new(key, 60, &["192.0.2.1"]).unwrap();
        let c = Change::new(ChangeKind::Create, vec![RRSetOp::create(r)]);
        let p: pb::Change = (&c).into();
        assert_eq!(change_from_pb("c", &zone, &p).unwrap(), c);

        let mut bad = p.clone();
        bad.ops[0].after.as_mut().unwrap().values[0] = "300.0.0.1".into();
        let e = change_from_pb("batch.changes[7]", &zone, &bad).unwrap_err();
        assert_eq!(e.field, "batch.changes[7].ops[0].after.values[0]");
        assert!(e.message.contains("300.0.0.1"));

        let other = Name::parse("other.com").unwrap();
        assert!(
            change_from_pb("c", &other, &p)
                .unwrap_err()
                .field
                .ends_with("key.zone")
        );
    }
}
