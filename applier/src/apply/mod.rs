//! Executes one batch on one provider and returns exactly one outcome per change.
//!
//! The algorithm (ARCHITECTURE.md, "The applier's algorithm for one batch"): submit
//! everything in one call; on a conflict or an ambiguous answer read the batch's names
//! back and partition (already at target / still applicable / conflict), then resubmit
//! the applicable rest as one call; on an invalid answer (or a conflict the read cannot
//! explain) bisect down to single changes; retry transient answers a bounded number of
//! times; give up on permanent ones. A change's ops are never split. A change the
//! driver cannot write at all (a routing-policy set or a provider-specific property
//! its [`Capabilities`](crate::provider::Capabilities) do not list) is INVALID before
//! any call.
//!
//! - [`policy`]: what each kind of failure leads to, and what bisection costs;
//! - [`partition`]: deciding changes against a read-back;
//! - this module: the work (calls, retries, deadlines) and one verdict per change.
//!
//! Every provider call goes through the account's stack ([`Stack`]) with a
//! [`CallCx`] that carries the batch's deadline and the call's attempt number.
use crate::provider::call::{CallCx, Stack};
use crate::provider::{ErrorClass, ProviderError};
use crate::retry::RetryPolicy;
use dnsplane_common::{Change, ConflictReason, Name, Outcome, RRSet, RecordResult};
use futures::future::BoxFuture;
use std::time::Duration;
use tokio::time::Instant;

pub mod partition;
pub mod policy;

use partition::{Observed, partition};
pub use policy::bisection_bound;
use policy::{Mode, Step, step};

/// The decided fate of one change; becomes a [`RecordResult`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Applied,
    AlreadyApplied,
    Conflict {
        reason: ConflictReason,
        observed: Option<RRSet>,
        message: String,
    },
    Invalid(String),
    Deferred {
        retry_after: Duration,
        message: String,
    },
    Failed {
        message: String,
        retry_after: Option<Duration>,
    },
    RejectedPermanent(String),
}

impl Verdict {
    pub fn outcome(&self) -> Outcome {
        match self {
            Verdict::Applied => Outcome::Applied,
            Verdict::AlreadyApplied => Outcome::AlreadyApplied,
            Verdict::Conflict { .. } => Outcome::Conflict,
            Verdict::Invalid(_) => Outcome::Invalid,
            Verdict::Deferred { .. } => Outcome::Deferred,
            Verdict::Failed { .. } => Outcome::Failed,
            Verdict::RejectedPermanent(_) => Outcome::RejectedPermanent,
        }
    }

    /// The result of change `change_id`. `observed_owner` stays empty: the planner
    /// knows the ownership format and fills it in.
    pub fn into_result(self, change_id: impl Into<String>) -> RecordResult {
        let r = RecordResult::new(change_id, self.outcome());
        match self {
            Verdict::Applied | Verdict::AlreadyApplied => r,
            Verdict::Conflict {
                reason,
                observed,
                message,
            } => r.with_conflict(reason, observed).with_message(message),
            Verdict::Invalid(m) | Verdict::RejectedPermanent(m) => r.with_message(m),
            Verdict::Deferred {
                retry_after,
                message,
            } => r.with_message(message).with_retry_after(Some(retry_after)),
            Verdict::Failed {
                message,
                retry_after,
            } => r.with_message(message).with_retry_after(retry_after),
        }
    }
}

/// What one batch cost and produced. (Calls by answer class, retries and the last
/// error are counted by the stack itself, in the account's metrics.)
#[derive(Debug, Default)]
pub struct BatchReport {
    /// One result per change, in the order of the batch.
    pub results: Vec<RecordResult>,
    /// Provider calls made (calls the quota held back are not calls).
    pub provider_calls: u32,
    /// The zone serial seen by a read-back, if there was one.
    pub serial: Option<u64>,
}

/// Runs `changes` (all in the zone of `cx`) through `stack`. Never fails: every change
/// gets a verdict. `cx.deadline` bounds the work; past it the rest comes back
/// DEFERRED.
pub async fn execute(
    stack: &Stack,
    cx: &CallCx,
    changes: &[Change],
    policy: &RetryPolicy,
) -> BatchReport {
    let mut run = Run {
        stack,
        cx,
        changes,
        policy,
        verdicts: vec![None; changes.len()],
        report: BatchReport::default(),
        rejected: None,
    };
    // What the driver cannot write at all (a routing-policy set, a property it does
    // not know) is invalid on its own; its batch-mates go on without it.
    let caps = stack.capabilities();
    let mut writable = Vec::with_capacity(changes.len());
    for (i, change) in changes.iter().enumerate() {
        match caps.refusal(stack.driver(), change) {
            Some(why) => run.verdicts[i] = Some(Verdict::Invalid(why)),
            None => writable.push(i),
        }
    }
    for chunk in chunks(stack, changes, &writable) {
        run.submit(chunk, Mode::First).await;
    }
    let Run {
        verdicts,
        mut report,
        ..
    } = run;
    report.results = verdicts
        .into_iter()
        .zip(changes)
        .map(|(v, c)| {
            v.unwrap_or_else(|| Verdict::Failed {
                message: "internal error: the change got no outcome".into(),
                retry_after: None,
            })
            .into_result(c.id.clone())
        })
        .collect();
    report
}

/// Cuts the changes at `idx` to the provider's per-call limits, never splitting a
/// change.
fn chunks(stack: &Stack, changes: &[Change], idx: &[usize]) -> Vec<Vec<usize>> {
    let caps = stack.capabilities();
    let (max_ops, max_bytes) = (
        caps.max_changes_per_batch.max(1),
        caps.max_bytes_per_batch.max(1),
    );
    let mut out: Vec<Vec<usize>> = Vec::new();
    let (mut cur, mut ops, mut bytes) = (Vec::new(), 0, 0);
    for &i in idx {
        let c = &changes[i];
        let (o, b) = caps.measure.weigh(c);
        if !cur.is_empty() && (ops + o > max_ops || bytes + b > max_bytes) {
            out.push(std::mem::take(&mut cur));
            (ops, bytes) = (0, 0);
        }
        cur.push(i);
        ops += o;
        bytes += b;
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Why a provider call produced no answer to act on.
enum CallError {
    /// The deadline has passed or a retry would cross it.
    Deadline(Duration),
    /// A non-transient answer, or a transient one that outlived the retry budget.
    Provider(ProviderError),
}

struct Run<'a> {
    stack: &'a Stack,
    cx: &'a CallCx,
    changes: &'a [Change],
    policy: &'a RetryPolicy,
    verdicts: Vec<Option<Verdict>>,
    report: BatchReport,
    /// Set by a permanent answer: the rest of the batch is rejected without calls.
    rejected: Option<String>,
}

impl<'a> Run<'a> {
    fn decide(&mut self, idx: &[usize], verdict: Verdict) {
        for &i in idx {
            self.verdicts[i] = Some(verdict.clone());
        }
    }

    fn submit(&mut self, idx: Vec<usize>, mode: Mode) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if idx.is_empty() {
                return;
            }
            if let Some(m) = &self.rejected {
                let v = Verdict::RejectedPermanent(m.clone());
                self.decide(&idx, v);
                return;
            }
            let ops: Vec<_> = idx
                .iter()
                .flat_map(|&i| self.changes[i].ops.iter().cloned())
                .collect();
            let (stack, ops) = (self.stack, &ops);
            let err = match self
                .call(|cx| async move { stack.apply(&cx, ops).await })
                .await
            {
                Ok(()) => return self.decide(&idx, Verdict::Applied),
                Err(CallError::Deadline(d)) => return self.defer(&idx, d),
                Err(CallError::Provider(e)) => e,
            };
            match step(err.class, mode, idx.len() == 1) {
                Step::GiveUp => self.give_up(&idx, &err),
                Step::Invalid => self.decide(&idx, Verdict::Invalid(err.message)),
                Step::Bisect => self.split(idx).await,
                Step::ReadBackAndResubmit => {
                    let Some((rest, observed)) = self.read_back(&idx, &err).await else {
                        return;
                    };
                    if err.class == ErrorClass::Conflict && rest.len() == idx.len() {
                        // The read explains nothing: isolate by bisection.
                        if rest.len() == 1 {
                            self.unexplained(rest[0], &err, &observed);
                        } else {
                            self.split(rest).await;
                        }
                    } else {
                        self.submit(rest, Mode::Resubmit).await;
                    }
                }
                Step::ReadBackAndFail => {
                    // Ambiguous again: bisecting would not isolate anything. Settle what
                    // the read shows and let the planner retry the rest later.
                    let Some((rest, _)) = self.read_back(&idx, &err).await else {
                        return;
                    };
                    let v = Verdict::Failed {
                        message: format!(
                            "the provider's answer was ambiguous again and a read-back shows the change did not commit: {}",
                            err.message
                        ),
                        retry_after: err.retry_after,
                    };
                    self.decide(&rest, v);
                }
                Step::ReadBackAndReport => {
                    let Some((rest, observed)) = self.read_back(&idx, &err).await else {
                        return;
                    };
                    for i in rest {
                        self.unexplained(i, &err, &observed);
                    }
                }
            }
        })
    }

    async fn split(&mut self, idx: Vec<usize>) {
        let (a, b) = idx.split_at(idx.len() / 2);
        let (a, b) = (a.to_vec(), b.to_vec());
        self.submit(a, Mode::Split).await;
        self.submit(b, Mode::Split).await;
    }

    fn defer(&mut self, idx: &[usize], retry_after: Duration) {
        let v = Verdict::Deferred {
            retry_after,
            message: "not attempted: the batch deadline has passed or would pass".into(),
        };
        self.decide(idx, v);
    }

    /// A transient answer that outlived the budget, or a permanent one.
    fn give_up(&mut self, idx: &[usize], err: &ProviderError) {
        let v = if err.class == ErrorClass::Permanent {
            self.rejected = Some(err.message.clone());
            Verdict::RejectedPermanent(err.message.clone())
        } else {
            Verdict::Failed {
                message: err.message.clone(),
                retry_after: err.retry_after.or(Some(self.policy.max_delay)),
            }
        };
        self.decide(idx, v);
    }

    /// A single change the provider calls conflicting although the read shows its
    /// preconditions holding: report it as a conflict so that the planner re-plans it
    /// against a fresh read, with the provider's text.
    fn unexplained(&mut self, i: usize, err: &ProviderError, observed: &Observed) {
        let change = &self.changes[i];
        let key = err
            .key
            .as_ref()
            .filter(|k| change.ops.iter().any(|op| &op.key == *k))
            .unwrap_or(change.key());
        self.verdicts[i] = Some(Verdict::Conflict {
            reason: ConflictReason::Unspecified,
            observed: observed.get(key).cloned(),
            message: err.message.clone(),
        });
    }

    /// Reads the names of `idx` back and decides every change the read settles;
    /// returns the still-applicable ones. `None` when the read failed (the changes have
    /// their verdicts then).
    async fn read_back(
        &mut self,
        idx: &[usize],
        cause: &ProviderError,
    ) -> Option<(Vec<usize>, Observed)> {
        let mut names: Vec<Name> = idx
            .iter()
            .flat_map(|&i| self.changes[i].ops.iter().map(|op| op.key.name.clone()))
            .collect();
        names.sort();
        names.dedup();
        let stack = self.stack;
        let names = &names;
        let listing = match self
            .call(|cx| async move { stack.list(&cx, Some(names)).await })
            .await
        {
            Ok(l) => l,
            Err(CallError::Deadline(d)) => {
                self.defer(idx, d);
                return None;
            }
            Err(CallError::Provider(e)) if e.class == ErrorClass::Permanent => {
                self.give_up(idx, &e);
                return None;
            }
            Err(CallError::Provider(e)) => {
                let v = Verdict::Failed {
                    message: format!("{cause}; reading the records back failed: {}", e.message),
                    retry_after: e.retry_after.or(Some(self.policy.max_delay)),
                };
                self.decide(idx, v);
                return None;
            }
        };
        if listing.serial.is_some() {
            self.report.serial = listing.serial;
        }
        let observed = Observed::new(listing);
        let mut rest = Vec::new();
        for &i in idx {
            match partition(&self.changes[i], &observed) {
                None => rest.push(i),
                Some(v) => self.verdicts[i] = Some(v),
            }
        }
        tracing::debug!(changes = idx.len(), applicable = rest.len(), cause = %cause, "Partitioned after a read-back.");
        Some((rest, observed))
    }

    /// One provider request (`f` makes it with the attempt's call context), retried
    /// while transient within the budget and the deadline.
    async fn call<T, F, Fut>(&mut self, mut f: F) -> Result<T, CallError>
    where
        F: FnMut(CallCx) -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let deadline = self.cx.deadline;
        let mut retry = 0;
        loop {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(CallError::Deadline(self.policy.deferred_retry_after));
            }
            let e = match f(self.cx.clone().with_attempt(retry)).await {
                Ok(v) => {
                    self.report.provider_calls += 1;
                    return Ok(v);
                }
                // The account's quota has no token before the deadline: the call was
                // not made, and what it carried comes back DEFERRED until then.
                Err(e) if e.quota_denied => {
                    return Err(CallError::Deadline(
                        e.retry_after.unwrap_or(self.policy.deferred_retry_after),
                    ));
                }
                Err(e) => e,
            };
            self.report.provider_calls += 1;
            if e.class != ErrorClass::Transient || retry + 1 >= self.policy.max_attempts {
                return Err(CallError::Provider(e));
            }
            let Some(delay) = self.policy.delay(retry, e.retry_after) else {
                return Err(CallError::Provider(e));
            };
            if deadline.is_some_and(|d| Instant::now() + delay >= d) {
                return Err(CallError::Deadline(delay));
            }
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }
}

#[cfg(test)]
mod tests;
