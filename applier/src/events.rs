//! The applier's events and spans, each in one place: a struct per event whose `emit`
//! writes the log line, records its metric and sets its span fields, so that the three
//! never disagree (vector's `internal_events` pattern). Log messages: fields first,
//! then a capitalised sentence ending in a period.
//!
//! One sync's trace, from the planner's side down (docs/observability.md lists every
//! span and field):
//!
//! | span | where | attributes |
//! |---|---|---|
//! | `grpc.server` | every traced gRPC request, child of the caller's `traceparent` | `rpc.system`, `rpc.service`, `rpc.method` |
//! | `list` | `ListRecords` | `account`, `zone`, `fresh` |
//! | `batch` | one batch of an `Apply` stream | `account`, `zone`, `batch.id`, `batch.size`, `provider`, `provider.calls`, `outcome.<name>` (counts, non-zero ones) |
//! | `provider.call` | one provider request (each retry its own) | `provider`, `operation`, `attempt` (0 first), `items`, `account`, `zone`, `error.class` (on failure), `quota.denied` (when the quota kept it back) |
//! | `quota.wait` | waiting for a quota token, inside its `provider.call` | `account`, `operation`, `waited_ms` |
//!
//! HTTP drivers put the current span's context on their requests
//! (`dnsplane_common::telemetry::inject_http_headers`), so a provider that traces joins
//! the same trace.
use crate::metrics::AccountMetrics;
use crate::provider::call::{Call, CallCx};
use crate::provider::{Operation, ProviderError};
use dnsplane_common::{Outcome, RecordResult};
use std::collections::BTreeMap;
use std::time::Duration;
use tracing::field::Empty;

/// The span of one provider request (made by [`crate::layers::Traced`]).
pub fn provider_call_span(driver: &'static str, cx: &CallCx, call: &Call<'_>) -> tracing::Span {
    tracing::info_span!(
        "provider.call",
        provider = driver,
        operation = call.operation().as_str(),
        attempt = cx.attempt,
        items = call.items(),
        account = &*cx.account,
        zone = cx.zone.as_ref().map(|z| z.as_str()),
        error.class = Empty,
        quota.denied = Empty,
    )
}

/// The span of one batch; [`BatchFinished`] fills in its results.
pub fn batch_span(account: &str, zone: &str, batch_id: &str, size: usize) -> tracing::Span {
    tracing::info_span!(
        "batch",
        account,
        zone,
        batch.id = batch_id,
        batch.size = size,
        provider = Empty,
        provider.calls = Empty,
        outcome.applied = Empty,
        outcome.already_applied = Empty,
        outcome.conflict = Empty,
        outcome.invalid = Empty,
        outcome.deferred = Empty,
        outcome.failed = Empty,
        outcome.rejected_permanent = Empty,
    )
}

/// A call reached the provider and came back (inside its `provider.call` span).
#[derive(Debug)]
pub struct ProviderCallFinished<'a> {
    pub metrics: &'a AccountMetrics,
    pub operation: Operation,
    pub attempt: u32,
    pub result: Result<(), &'a ProviderError>,
    pub elapsed: Duration,
}

impl ProviderCallFinished<'_> {
    pub fn emit(self) {
        self.metrics.request(
            self.operation,
            self.result.map_err(|e| &e.class),
            self.attempt,
            self.elapsed,
        );
        if let Err(e) = self.result {
            tracing::Span::current().record("error.class", e.class.as_str());
            tracing::debug!(op = self.operation.as_str(), class = e.class.as_str(), attempt = self.attempt, error = %e.message, "Provider call failed.");
        }
    }
}

/// The quota gave a call its token (inside the call's `quota.wait` span).
#[derive(Debug)]
pub struct QuotaTaken<'a> {
    pub metrics: &'a AccountMetrics,
    pub waited: Duration,
    pub tokens_left: f64,
}

impl QuotaTaken<'_> {
    pub fn emit(self) {
        self.metrics.quota_taken(self.waited, self.tokens_left);
        tracing::Span::current().record("waited_ms", self.waited.as_secs_f64() * 1000.0);
    }
}

/// The quota had no token before the call's deadline: the call was not made.
#[derive(Debug)]
pub struct QuotaDenied<'a> {
    pub account: &'a str,
    pub operation: Operation,
    pub retry_after: Duration,
}

impl QuotaDenied<'_> {
    pub fn emit(self) {
        tracing::Span::current().record("quota.denied", true);
        tracing::debug!(account = %self.account, op = %self.operation, retry_after = ?self.retry_after, "No quota token before the deadline; call not made.");
    }
}

/// The provider throttled an account and its pacing halved the rate
/// ([`crate::quota::pacer`]).
#[derive(Debug)]
pub struct PacingHalved<'a> {
    pub account: &'a str,
    /// Requests per second from now on (then climbing back).
    pub rate: f64,
    pub retry_after: Option<Duration>,
}

impl PacingHalved<'_> {
    pub fn emit(self) {
        tracing::warn!(account = %self.account, rate = self.rate, retry_after = ?self.retry_after, "The provider throttled the account (429); pacing its requests.");
    }
}

/// An account's pacing ended: no throttle for `recover`.
#[derive(Debug)]
pub struct PacingEnded<'a> {
    pub account: &'a str,
    /// How long the account was paced.
    pub lasted: Duration,
}

impl PacingEnded<'_> {
    pub fn emit(self) {
        tracing::info!(account = %self.account, lasted = ?self.lasted, "No throttle for a while; the account is not paced any more.");
    }
}

/// A batch has every result.
#[derive(Debug)]
pub struct BatchFinished<'a> {
    /// The account's metrics; `None` when the account is unknown.
    pub metrics: Option<&'a AccountMetrics>,
    pub span: &'a tracing::Span,
    pub changes: usize,
    pub provider_calls: u32,
    pub results: &'a [RecordResult],
}

impl BatchFinished<'_> {
    pub fn emit(self) {
        if let Some(m) = self.metrics {
            m.batch(self.results);
        }
        let mut counts: BTreeMap<Outcome, u64> = BTreeMap::new();
        for r in self.results {
            *counts.entry(r.outcome).or_default() += 1;
        }
        if !self.span.is_disabled() {
            if let Some(m) = self.metrics {
                self.span.record("provider", m.driver());
            }
            self.span.record("provider.calls", self.provider_calls);
            for (outcome, n) in &counts {
                let field = match outcome {
                    Outcome::Applied => "outcome.applied",
                    Outcome::AlreadyApplied => "outcome.already_applied",
                    Outcome::Conflict => "outcome.conflict",
                    Outcome::Invalid => "outcome.invalid",
                    Outcome::Deferred => "outcome.deferred",
                    Outcome::Failed => "outcome.failed",
                    Outcome::RejectedPermanent => "outcome.rejected_permanent",
                };
                self.span.record(field, *n);
            }
        }
        let summary: BTreeMap<&str, u64> = counts.iter().map(|(o, n)| (o.as_str(), *n)).collect();
        tracing::info!(changes = self.changes, provider_calls = self.provider_calls, outcomes = ?summary, "Batch done.");
    }
}

/// A batch or claim was refused by its owner's claim ([`crate::claims`]): another
/// planner writes for the owner. Answered DEFERRED (with who fenced it) without a
/// provider call.
#[derive(Debug)]
pub struct BatchFenced<'a> {
    pub owner: &'a str,
    /// The refused planner's lease holder and epoch.
    pub holder: &'a str,
    pub epoch: u64,
    pub fenced: &'a crate::claims::Fenced,
    /// A batch (else a claim, which a fenced planner repeats: debug).
    pub batch: bool,
}

impl BatchFenced<'_> {
    pub fn emit(self) {
        if !self.batch {
            tracing::debug!(owner = %self.owner, holder = %self.holder, epoch = self.epoch, claim.holder = %self.fenced.holder, "Claim refused: another planner writes for this owner.");
            return;
        }
        tracing::warn!(owner = %self.owner, holder = %self.holder, epoch = self.epoch, claim.holder = %self.fenced.holder, claim.epoch = self.fenced.epoch, shared_backend = self.fenced.shared_backend, reason = %self.fenced.message, "Fenced: another planner writes for this owner; not attempted.");
    }
}

/// A planner took its owner's claim over from another holder: that one's lease backend
/// issued a larger epoch, or it was silent for its ttl (`stale`).
#[derive(Debug)]
pub struct ClaimTakenOver<'a> {
    pub owner: &'a str,
    pub holder: &'a str,
    pub epoch: u64,
    pub from: &'a str,
    pub stale: bool,
}

impl ClaimTakenOver<'_> {
    pub fn emit(self) {
        tracing::info!(owner = %self.owner, holder = %self.holder, epoch = self.epoch, from = %self.from, stale = self.stale, "Writer of the owner changed.");
    }
}
