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

/// Runs `batch` on `zone`: the `result` object, or the first error with `zone` as it
/// was (each step's undo is kept until the batch has succeeded whole, so a batch
/// costs what it touches, not a copy of the zone).
pub(crate) fn run(
    zone: &mut Zone,
    batch: &BatchInput,
    batch_limit: usize,
    limits: Limits,
    now: SystemTime,
) -> Result<Value, ApiError> {
    if batch.len() > batch_limit {
        return Err(ApiError::invalid(
            1004,
            format!(
                "Batch has {} operations; the zone's plan allows at most {batch_limit} per batch.",
                batch.len()
            ),
        ));
    }
    // (id, the record it held before the batch: `None` for one the batch created).
    let mut undo: Vec<(String, Option<Record>)> = Vec::new();
    let result = steps(zone, batch, limits, now, &mut undo);
    if result.is_err() {
        for (id, before) in undo.into_iter().rev() {
            match before {
                Some(rec) => zone.insert(rec),
                None => zone.remove(&id),
            };
        }
    }
    result
}

/// The batch's steps in Cloudflare's order (deletes, patches, puts, posts), each
/// noted in `undo` as it is made.
fn steps(
    z: &mut Zone,
    batch: &BatchInput,
    limits: Limits,
    now: SystemTime,
    undo: &mut Vec<(String, Option<Record>)>,
) -> Result<Value, ApiError> {
    let mut deleted = Vec::with_capacity(batch.deletes.len());
    for d in &batch.deletes {
        let rec = existing(z, d)?.clone();
        z.remove(&rec.id);
        deleted.push(rec.to_json());
        undo.push((rec.id.clone(), Some(rec)));
    }
    let mut patched = Vec::with_capacity(batch.patches.len());
    for p in &batch.patches {
        let base = existing(z, p)?.clone();
        let rec = build(z, p, Mode::Edit(&base), limits, now)?;
        check_rules(z, &rec)?;
        patched.push(rec.to_json());
        undo.push((rec.id.clone(), z.insert(rec)));
    }
    let mut put = Vec::with_capacity(batch.puts.len());
    for p in &batch.puts {
        let base = existing(z, p)?.clone();
        let rec = build(z, p, Mode::Overwrite(&base), limits, now)?;
        check_rules(z, &rec)?;
        put.push(rec.to_json());
        undo.push((rec.id.clone(), z.insert(rec)));
    }
    let mut posted = Vec::with_capacity(batch.posts.len());
    for p in &batch.posts {
        let rec = build(z, p, Mode::Create, limits, now)?;
        check_rules(z, &rec)?;
        posted.push(rec.to_json());
        undo.push((rec.id.clone(), z.insert(rec)));
    }
    Ok(json!({ "deletes": deleted, "patches": patched, "puts": put, "posts": posted }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits { min_ttl: 60 };

    fn zone_with(records: &[(&str, &str, &str, &str)]) -> Zone {
        let mut z = Zone::new(
            "z".into(),
            "example.com".into(),
            "a".into(),
            SystemTime::UNIX_EPOCH,
        );
        for (id, name, t, content) in records {
            let input: RecordInput =
                serde_json::from_value(json!({"name": name, "type": t, "content": content}))
                    .unwrap();
            let mut r = build(&z, &input, Mode::Create, LIMITS, SystemTime::now()).unwrap();
            r.id = id.to_string();
            z.insert(r);
        }
        z
    }

    fn batch(v: Value) -> BatchInput {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn deletes_run_before_posts_so_a_replacement_fits() {
        let mut z = zone_with(&[("r1", "www", "A", "192.0.2.1")]);
        // Delete the A and post a CNAME at the same name in one batch: the order makes it legal.
        let b = batch(json!({
            "posts": [{"name": "www", "type": "CNAME", "content": "x.example.net"}],
            "deletes": [{"id": "r1"}],
        }));
        let result = run(&mut z, &b, 10, LIMITS, SystemTime::now()).unwrap();
        assert_eq!(z.records.len(), 1);
        assert_eq!(z.named("www.example.com").len(), 1);
        assert_eq!(result["deletes"][0]["id"], "r1");
        assert_eq!(result["posts"][0]["type"], "CNAME");
    }

    #[test]
    fn the_first_error_aborts_everything() {
        let mut z = zone_with(&[
            ("r1", "www", "A", "192.0.2.1"),
            ("r2", "api", "A", "192.0.2.2"),
        ]);
        let listing = |z: &Zone| {
            z.sorted()
                .iter()
                .map(|r| r.to_json().to_string())
                .collect::<Vec<_>>()
        };
        let before = listing(&z);
        let b = batch(json!({
            "deletes": [{"id": "r2"}],
            "posts": [
                {"name": "new", "type": "A", "content": "192.0.2.9"},
                {"name": "www", "type": "A", "content": "192.0.2.1"},
                {"name": "bad", "type": "A", "content": "nope"},
            ],
        }));
        let e = run(&mut z, &b, 10, LIMITS, SystemTime::now()).unwrap_err();
        assert_eq!(e.code, 81058, "the first failure, not the later 9005");
        // The delete of r2 and the post of `new` before the failure are undone.
        assert_eq!(listing(&z), before);
        assert!(z.named("new.example.com").is_empty());
        let e = run(
            &mut z,
            &batch(json!({"deletes": [{"id": "gone"}]})),
            10,
            LIMITS,
            SystemTime::now(),
        )
        .unwrap_err();
        assert_eq!((e.status, e.code), (404, 81044));
        let big = batch(json!({"deletes": [{"id": "r1"}, {"id": "r2"}]}));
        assert_eq!(
            run(&mut z, &big, 1, LIMITS, SystemTime::now())
                .unwrap_err()
                .code,
            1004
        );
    }

    #[test]
    fn patches_by_id_overwrite_whatever_is_there() {
        let mut z = zone_with(&[("r1", "www", "A", "192.0.2.1")]);
        let b = batch(json!({"patches": [{"id": "r1", "content": "192.0.2.7"}]}));
        run(&mut z, &b, 10, LIMITS, SystemTime::now()).unwrap();
        assert_eq!(z.records["r1"].content.content(), "192.0.2.7");
    }
}
