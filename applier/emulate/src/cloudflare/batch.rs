//! The batch endpoint, `POST /zones/{id}/dns_records/batch`, as Cloudflare documents
//! it: `{"deletes":[{"id"}], "patches":[{"id",…}], "puts":[{"id",…}], "posts":[{…}]}`
//! run in the fixed order deletes → patches → puts → posts (each list in its order),
//! in one transaction: the first failing operation aborts the whole batch and is the
//! only error answered. At most the plan's limit of operations per batch. Operations
//! name records by id only: nothing detects a stale write (last write wins).
use super::errors::ApiError;
use super::model::{Record, Zone};
use super::records::{Limits, Mode, RecordInput, build, check_rules};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::SystemTime;

#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct BatchInput {
    #[serde(default)]
    pub deletes: Vec<RecordInput>,
    #[serde(default)]
    pub patches: Vec<RecordInput>,
    #[serde(default)]
    pub puts: Vec<RecordInput>,
    #[serde(default)]
    pub posts: Vec<RecordInput>,
}

impl BatchInput {
    pub fn len(&self) -> usize {
        self.deletes.len() + self.patches.len() + self.puts.len() + self.posts.len()
    }
}

fn existing<'a>(zone: &'a Zone, input: &RecordInput) -> Result<&'a Record, ApiError> {
    let id = input
        .id
        .as_deref()
        .ok_or_else(|| ApiError::invalid(1004, "Record id is required."))?;
    zone.records.get(id).ok_or_else(ApiError::no_record)
}

/// Runs `batch` on a copy of `zone`; the copy (to be stored) and the `result` object,
/// or the first error with nothing changed.
pub(crate) fn run(
    zone: &Zone,
    batch: &BatchInput,
    batch_limit: usize,
    limits: Limits,
    now: SystemTime,
) -> Result<(Zone, Value), ApiError> {
    if batch.len() > batch_limit {
        return Err(ApiError::invalid(
            1004,
            format!(
                "Batch has {} operations; the zone's plan allows at most {batch_limit} per batch.",
                batch.len()
            ),
        ));
    }
    let mut z = zone.clone();
    let mut deleted = Vec::with_capacity(batch.deletes.len());
    for d in &batch.deletes {
        let rec = existing(&z, d)?.clone();
        z.records.remove(&rec.id);
        deleted.push(rec.to_json());
    }
    let mut patched = Vec::with_capacity(batch.patches.len());
    for p in &batch.patches {
        let base = existing(&z, p)?.clone();
        let rec = build(&z, p, Mode::Edit(&base), limits, now)?;
        check_rules(&z, &rec)?;
        patched.push(rec.to_json());
        z.records.insert(rec.id.clone(), rec);
    }
    let mut put = Vec::with_capacity(batch.puts.len());
    for p in &batch.puts {
        let base = existing(&z, p)?.clone();
        let rec = build(&z, p, Mode::Overwrite(&base), limits, now)?;
        check_rules(&z, &rec)?;
        put.push(rec.to_json());
        z.records.insert(rec.id.clone(), rec);
    }
    let mut posted = Vec::with_capacity(batch.posts.len());
    for p in &batch.posts {
        let rec = build(&z, p, Mode::Create, limits, now)?;
        check_rules(&z, &rec)?;
        posted.push(rec.to_json());
        z.records.insert(rec.id.clone(), rec);
    }
    Ok((
        z,
        json!({ "deletes": deleted, "patches": patched, "puts": put, "posts": posted }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const LIMITS: Limits = Limits { min_ttl: 60 };

    fn zone_with(records: &[(&str, &str, &str, &str)]) -> Zone {
        let mut z = Zone {
            id: "z".into(),
            name: "example.com".into(),
            account_id: "a".into(),
            created_on: SystemTime::UNIX_EPOCH,
            records: BTreeMap::new(),
        };
        for (id, name, t, content) in records {
            let input: RecordInput =
                serde_json::from_value(json!({"name": name, "type": t, "content": content}))
                    .unwrap();
            let mut r = build(&z, &input, Mode::Create, LIMITS, SystemTime::now()).unwrap();
            r.id = id.to_string();
            z.records.insert(r.id.clone(), r);
        }
        z
    }

    fn batch(v: Value) -> BatchInput {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn deletes_run_before_posts_so_a_replacement_fits() {
        let z = zone_with(&[("r1", "www", "A", "192.0.2.1")]);
        // Delete the A and post a CNAME at the same name in one batch: the order makes it legal.
        let b = batch(json!({
            "posts": [{"name": "www", "type": "CNAME", "content": "x.example.net"}],
            "deletes": [{"id": "r1"}],
        }));
        let (after, result) = run(&z, &b, 10, LIMITS, SystemTime::now()).unwrap();
        assert_eq!(after.records.len(), 1);
        assert_eq!(result["deletes"][0]["id"], "r1");
        assert_eq!(result["posts"][0]["type"], "CNAME");
    }

    #[test]
    fn the_first_error_aborts_everything() {
        let z = zone_with(&[
            ("r1", "www", "A", "192.0.2.1"),
            ("r2", "api", "A", "192.0.2.2"),
        ]);
        let b = batch(json!({
            "deletes": [{"id": "r2"}],
            "posts": [
                {"name": "new", "type": "A", "content": "192.0.2.9"},
                {"name": "www", "type": "A", "content": "192.0.2.1"},
                {"name": "bad", "type": "A", "content": "nope"},
            ],
        }));
        let e = run(&z, &b, 10, LIMITS, SystemTime::now()).unwrap_err();
        assert_eq!(e.code, 81058, "the first failure, not the later 9005");
        let e = run(
            &z,
            &batch(json!({"deletes": [{"id": "gone"}]})),
            10,
            LIMITS,
            SystemTime::now(),
        )
        .unwrap_err();
        assert_eq!((e.status, e.code), (404, 81044));
        let big = batch(json!({"deletes": [{"id": "r1"}, {"id": "r2"}]}));
        assert_eq!(
            run(&z, &big, 1, LIMITS, SystemTime::now())
                .unwrap_err()
                .code,
            1004
        );
    }

    #[test]
    fn patches_by_id_overwrite_whatever_is_there() {
        let z = zone_with(&[("r1", "www", "A", "192.0.2.1")]);
        let b = batch(json!({"patches": [{"id": "r1", "content": "192.0.2.7"}]}));
        let (after, _) = run(&z, &b, 10, LIMITS, SystemTime::now()).unwrap();
        assert_eq!(after.records["r1"].content.content(), "192.0.2.7");
    }
}
