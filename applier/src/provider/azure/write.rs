//! One change written to Azure, one conditional request per record set (see the
//! module doc of [`super`] for the rules): preconditions first, ownership records
//! written before the record and deleted after it, the change's earlier writes
//! undone when a later one fails, 412 and ambiguous answers settled by reading the
//! set again.
use super::wire::{self, Parsed, ReadSet, WireSet};
use super::{AzureProvider, Known};
use crate::provider::call::Pacer;
use crate::provider::{ErrorClass, ProviderError};
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey};
use reqwest::Method;

/// What is at a record set now, as far as this write knows.
#[derive(Clone, Debug)]
struct Current {
    set: Option<RRSet>,
    /// Present but not modelled (an alias, an empty set).
    opaque: bool,
    etag: Option<String>,
    metadata: Option<serde_json::Value>,
}

impl Current {
    fn absent() -> Current {
        Current {
            set: None,
            opaque: false,
            etag: None,
            metadata: None,
        }
    }

    fn of(read: Option<ReadSet>) -> Current {
        match read {
            None => Current::absent(),
            Some(r) => Current {
                opaque: !matches!(r.parsed, Parsed::Set(_)),
                set: match r.parsed {
                    Parsed::Set(s) => Some(s),
                    _ => None,
                },
                etag: r.etag,
                metadata: r.metadata,
            },
        }
    }

    fn from_known(k: Known) -> Current {
        Current {
            set: k.set,
            opaque: false,
            etag: Some(k.etag),
            metadata: k.metadata,
        }
    }
}

/// The values of `set` for a message: `absent`, or its values and TTL.
fn show(current: &Current) -> String {
    match (&current.set, current.opaque) {
        (_, true) => "values dnsplane cannot read (an alias or an empty set)".into(),
        (None, false) => "it absent".into(),
        (Some(s), false) => format!("[{}] (TTL {})", s.values_vec().join(", "), s.ttl),
    }
}

fn conflict(op: &RRSetOp, current: &Current) -> ProviderError {
    let expected = match &op.before {
        None => "absent".to_string(),
        Some(b) => format!("[{}]", b.values_vec().join(", ")),
    };
    ProviderError::new(
        ErrorClass::Conflict,
        format!(
            "precondition failed for {}: expected {expected}, found {} (another writer's record set)",
            op.key,
            show(current)
        ),
    )
    .with_key(op.key.clone())
}

/// One change on its way.
pub(super) struct Change<'a> {
    p: &'a AzureProvider,
    zone: &'a Name,
    ops: &'a [RRSetOp],
    pacer: &'a Pacer,
    /// Ops written so far, with the etag each write returned (`None`: deleted).
    done: Vec<(usize, Option<String>)>,
}

impl<'a> Change<'a> {
    pub(super) fn new(
        p: &'a AzureProvider,
        zone: &'a Name,
        ops: &'a [RRSetOp],
        pacer: &'a Pacer,
    ) -> Self {
        Change {
            p,
            zone,
            ops,
            pacer,
            done: Vec::new(),
        }
    }

    /// The order of the writes: ownership records set before the record (`ops[0]`),
    /// ownership records removed after it.
    fn order(&self) -> Vec<usize> {
        let marks = 1..self.ops.len();
        let set: Vec<usize> = marks
            .clone()
            .filter(|&i| self.ops[i].after.is_some())
            .collect();
        let removed: Vec<usize> = marks.filter(|&i| self.ops[i].after.is_none()).collect();
        set.into_iter()
            .chain(std::iter::once(0).filter(|_| !self.ops.is_empty()))
            .chain(removed)
            .collect()
    }

    /// GETs one record set; `None` when it does not exist.
    async fn get(&self, key: &RecordKey) -> Result<Option<ReadSet>, ProviderError> {
        let url = self.p.set_url(key);
        let what = format!("GET {}", url.path());
        let a = self.p.send(Method::GET, url, &[], None, self.pacer).await?;
        if a.status == 404 && !wire::zone_missing(&a.body) {
            self.p.learn(key, None);
            return Ok(None);
        }
        if a.status != 200 {
            let mut e = self.p.fail(&a, &what, false, Some(key));
            if a.status == 404 {
                e.class = ErrorClass::Permanent;
            }
            return Err(e);
        }
        let w: WireSet = serde_json::from_slice(&a.body).map_err(|e| {
            ProviderError::new(
                ErrorClass::Transient,
                format!("{what}: cannot decode Azure's answer: {e}"),
            )
        })?;
        let read = wire::from_wire(self.p.flavor, self.zone, &w);
        self.p.learn(key, Some(&read));
        Ok(Some(read))
    }

    /// What is at `op`'s set: the known etag when the set it was read with is the
    /// op's `before` (a create needs none), else a fresh read.
    async fn current(&self, op: &RRSetOp) -> Result<Current, ProviderError> {
        if !op.is_assert() {
            match (&op.before, self.p.known(&op.key)) {
                (None, None) => return Ok(Current::absent()),
                (Some(b), Some(k)) if k.set.as_ref().is_some_and(|s| s.same_data(b)) => {
                    return Ok(Current::from_known(k));
                }
                _ => {}
            }
        }
        Ok(Current::of(self.get(&op.key).await?))
    }

    /// Checks every op, then writes them in order; undoes the written ones when a
    /// later one fails.
    pub(super) async fn run(mut self) -> Result<(), ProviderError> {
        let mut plan = Vec::new();
        for i in self.order() {
            let op = &self.ops[i];
            let cur = self.current(op).await?;
            // A set already at its target still fails a precondition that says
            // otherwise: the batch algorithm's read-back calls it ALREADY_APPLIED.
            if cur.opaque || !op.precondition_holds(cur.set.as_ref()) {
                return Err(conflict(op, &cur));
            }
            if !op.is_assert() {
                plan.push((i, cur));
            }
        }
        for (i, cur) in plan {
            match self.write(&self.ops[i], cur).await {
                Ok(etag) => self.done.push((i, etag)),
                Err(e) => {
                    self.undo().await;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// One conditional write; a 412 re-reads and retries once when the set still
    /// holds the op's `before`; an ambiguous answer reads the set back. Returns the
    /// set's new etag (`None`: deleted).
    async fn write(&self, op: &RRSetOp, mut cur: Current) -> Result<Option<String>, ProviderError> {
        if op.before.is_some() && cur.etag.is_none() {
            // A write that returned no set (or an undo of one): read its etag first.
            cur = Current::of(self.get(&op.key).await?);
        }
        for attempt in 0..2 {
            let url = self.p.set_url(&op.key);
            let what_url = url.path().to_string();
            let condition = match &cur.etag {
                Some(etag) if cur.set.is_some() => ("If-Match", etag.clone()),
                _ => ("If-None-Match", "*".to_string()),
            };
            let (method, body) = match &op.after {
                Some(after) => {
                    let body = wire::to_body(self.p.flavor, after, cur.metadata.as_ref()).map_err(
                        |why| ProviderError::new(ErrorClass::Invalid, why).with_key(op.key.clone()),
                    )?;
                    (Method::PUT, Some(body))
                }
                None => (Method::DELETE, None),
            };
            let what = format!("{method} {what_url}");
            let sent = self
                .p
                .send(method.clone(), url, &[condition], body.as_ref(), self.pacer)
                .await;
            let answer = match sent {
                Ok(a) => a,
                Err(e) if e.class == ErrorClass::Ambiguous => {
                    return self.settle(op, &cur, e).await;
                }
                Err(e) => return Err(e.with_key(op.key.clone())),
            };
            match answer.status {
                200..=299 => return Ok(self.committed(op, &method, &answer.body)),
                412 => {
                    let fresh = Current::of(self.get(&op.key).await?);
                    if attempt == 0 && !fresh.opaque && op.precondition_holds(fresh.set.as_ref()) {
                        tracing::info!(key = %op.key, "Azure answered 412 but the record set still holds what dnsplane expects; retrying once with its new etag.");
                        cur = fresh;
                        continue;
                    }
                    return Err(conflict(op, &fresh));
                }
                s if s >= 500 => {
                    let e = self.p.fail(&answer, &what, true, Some(&op.key));
                    return self.settle(op, &cur, e).await;
                }
                _ => return Err(self.p.fail(&answer, &what, true, Some(&op.key))),
            }
        }
        Err(ProviderError::new(
            ErrorClass::Conflict,
            format!(
                "precondition failed for {}: the record set changed twice while dnsplane wrote it",
                op.key
            ),
        )
        .with_key(op.key.clone()))
    }

    /// The write succeeded: remember the set's new etag.
    fn committed(&self, op: &RRSetOp, method: &Method, body: &[u8]) -> Option<String> {
        if *method == Method::DELETE {
            self.p.learn(&op.key, None);
            return None;
        }
        let read = serde_json::from_slice::<WireSet>(body)
            .ok()
            .map(|w| wire::from_wire(self.p.flavor, self.zone, &w));
        // An answer without the set: the etag is unknown, the next write reads first.
        self.p.learn(&op.key, read.as_ref());
        read.and_then(|r| r.etag)
    }

    /// An ambiguous answer to a write: read the set and compare etag and values.
    async fn settle(
        &self,
        op: &RRSetOp,
        before: &Current,
        cause: ProviderError,
    ) -> Result<Option<String>, ProviderError> {
        let fresh = match self.get(&op.key).await {
            Ok(r) => Current::of(r),
            Err(e) => {
                tracing::warn!(key = %op.key, error = %e, "Reading back a record set after an ambiguous answer failed.");
                return Err(cause.with_key(op.key.clone()));
            }
        };
        let moved = fresh.etag != before.etag;
        if !fresh.opaque && op.at_target(fresh.set.as_ref()) && (moved || op.after.is_none()) {
            return Ok(fresh.etag);
        }
        if !fresh.opaque && op.precondition_holds(fresh.set.as_ref()) {
            let mut e = ProviderError::new(
                ErrorClass::Transient,
                format!(
                    "{}; a read-back shows the record set unchanged: not committed",
                    cause.message
                ),
            )
            .with_key(op.key.clone());
            e.retry_after = cause.retry_after;
            return Err(e);
        }
        Err(conflict(op, &fresh))
    }

    /// Undoes the writes of this change, newest first, each conditional on the etag
    /// its write returned. Best effort: a failure is logged and left to the next sync.
    async fn undo(&mut self) {
        while let Some((i, etag)) = self.done.pop() {
            let op = &self.ops[i];
            let inverse = RRSetOp {
                key: op.key.clone(),
                before: op.after.clone(),
                after: op.before.clone(),
            };
            let cur = Current {
                set: op.after.clone(),
                opaque: false,
                etag,
                metadata: self.p.known(&op.key).and_then(|k| k.metadata),
            };
            if let Err(e) = self.write(&inverse, cur).await {
                tracing::warn!(key = %op.key, error = %e, "Undoing a write of a change whose later write failed did not work; the next sync repairs it.");
            }
        }
    }
}
