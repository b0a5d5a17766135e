//! Results from an applier, folded in: the observed view follows them (so the next
//! plan needs no read), the state table takes each record's new state and clock
//! ([`crate::state::StateTable::fold_result`]), and each result is one event and one
//! audit event ([`crate::audit`]).
use super::audit::BatchAudit;
use super::sync::SyncSummary;
use super::{Engine, ZoneRuntime, lock};
use crate::events;
use crate::plan::PlannedChange;
use dnsplane_common::{Outcome, RecordResult};
use std::collections::HashMap;
use std::time::SystemTime;
use tracing::warn;

impl Engine {
    pub(super) fn fold_results(
        &self,
        zone: &ZoneRuntime,
        batches: &[Vec<PlannedChange>],
        by_id: &HashMap<String, (usize, usize)>,
        audit: &BatchAudit,
        results: &[RecordResult],
        summary: &mut SyncSummary,
    ) {
        let clock = self.retry_clock();
        let now = SystemTime::now();
        let mut states = lock(&zone.states);
        let mut observed = lock(&zone.view);
        let mut audited = Vec::with_capacity(results.len());
        for r in results {
            let Some(&(b, i)) = by_id.get(&r.change_id) else {
                warn!(change_id = %r.change_id, "Result for a change this sync did not send; ignored.");
                continue;
            };
            let change = &batches[b][i].change;
            audited.push(
                audit
                    .event(crate::audit::OUTCOME, &batches[b][i], b, i)
                    .outcome(r.outcome, &r.message),
            );
            let key = change.key();
            events::ResultFolded {
                zone: &zone.target,
                key,
                outcome: r.outcome,
                message: &r.message,
            }
            .emit(&self.metrics);
            if let Some(v) = observed.as_mut().map(std::sync::Arc::make_mut) {
                match r.outcome {
                    Outcome::Applied | Outcome::AlreadyApplied => {
                        for op in &change.ops {
                            v.apply_op(op, key);
                        }
                    }
                    Outcome::Conflict if r.observed.as_ref().is_none_or(|s| &s.key == key) => {
                        v.observe(key, r.observed.clone());
                    }
                    _ => {}
                }
            }
            summary.done += 1;
            *summary.outcomes.entry(r.outcome).or_insert(0) += 1;
            if r.outcome == Outcome::RejectedPermanent {
                lock(&zone.status).rejected = true;
            }
            let owner = r.observed_owner.clone().or_else(|| {
                observed
                    .as_ref()
                    .and_then(|v| v.owner_of(key))
                    .map(str::to_string)
            });
            states.fold_result(key, r, owner, now, clock);
        }
        if !results.is_empty()
            && let Some(v) = observed.as_mut().map(std::sync::Arc::make_mut)
        {
            v.compact();
        }
        if results.iter().any(|r| r.outcome == Outcome::Applied) {
            lock(&zone.status).rejected = false;
        }
        drop((states, observed));
        self.audit(&audited);
    }
}
