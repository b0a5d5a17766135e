//! Spans and per-call metrics of the applier, named in one place.
//!
//! One sync's trace, from the planner's side down (the planner's spans: `sync`, its
//! gRPC client calls; docs/observability.md lists them all):
//!
//! | span | where | attributes |
//! |---|---|---|
//! | `grpc.server` | every traced gRPC request (`Apply`, `ListRecords`, ...), child of the caller's `traceparent` | `rpc.system`, `rpc.service`, `rpc.method` |
//! | `list` | `ListRecords` | `account`, `zone`, `fresh` |
//! | `batch` | one batch of an `Apply` stream | `account`, `zone`, `batch.id`, `batch.size`, `provider`, `provider.calls`, `outcome.<name>` (counts, non-zero ones) |
//! | `quota.wait` | waiting for a provider quota token ([`crate::quota`], accounts with a quota): inside the write's `provider.call` in a batch, beside it for a listing | `account`, `operation`, `waited_ms` |
//! | `provider.call` | one provider request (retries are separate spans) | `provider`, `operation`, `attempt` (0 first), `items`, `account`, `zone`, `error.class` (on failure) |
//!
//! A `provider.call` span is made by the batch algorithm (which knows the attempt)
//! or, for calls outside a batch (listings, cache revalidation), by [`Instrumented`].
//! HTTP drivers put the current span's context on their requests
//! (`dnsplane_common::telemetry::inject_http_headers`), so a provider that traces
//! joins the same trace.
use crate::metrics::{ApplierMetrics, global};
use crate::provider::{Capabilities, Listing, Operation, Provider, ProviderError};
use async_trait::async_trait;
use dnsplane_common::{Name, Outcome, RRSetOp, RecordResult};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use tokio::time::Instant;
use tracing::Instrument;
use tracing::field::Empty;

/// The name of the span around one provider request.
pub const PROVIDER_CALL: &str = "provider.call";

/// The span of one provider request; `attempt` counts retries of the same request (0:
/// the first call). Record `error.class` on it when the call fails.
pub fn provider_call_span(
    provider: &'static str,
    operation: &'static str,
    attempt: u32,
    items: usize,
) -> tracing::Span {
    tracing::info_span!(
        "provider.call",
        provider,
        operation,
        attempt,
        items,
        account = Empty,
        zone = Empty,
        error.class = Empty,
    )
}

/// Whether the current span is a `provider.call` (the batch algorithm made one).
pub fn in_provider_call() -> bool {
    tracing::Span::current()
        .metadata()
        .is_some_and(|m| m.name() == PROVIDER_CALL)
}

/// The span of one batch; [`record_batch`] adds its results.
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

/// Records a finished batch on its span: the driver, the provider calls it cost and
/// how many changes ended in each outcome (only the outcomes that occurred).
pub fn record_batch(
    span: &tracing::Span,
    provider: Option<&str>,
    provider_calls: u32,
    results: &[RecordResult],
) {
    if span.is_disabled() {
        return;
    }
    if let Some(p) = provider {
        span.record("provider", p);
    }
    span.record("provider.calls", provider_calls);
    let mut counts: BTreeMap<Outcome, u64> = BTreeMap::new();
    for r in results {
        *counts.entry(r.outcome).or_default() += 1;
    }
    for (outcome, n) in counts {
        let field = match outcome {
            Outcome::Applied => "outcome.applied",
            Outcome::AlreadyApplied => "outcome.already_applied",
            Outcome::Conflict => "outcome.conflict",
            Outcome::Invalid => "outcome.invalid",
            Outcome::Deferred => "outcome.deferred",
            Outcome::Failed => "outcome.failed",
            Outcome::RejectedPermanent => "outcome.rejected_permanent",
        };
        span.record(field, n);
    }
}

/// The outermost provider decorator of an account: counts every call in
/// `dnsplane_provider_requests_total` and its latency, and runs it in a
/// `provider.call` span unless the caller already made one.
#[derive(Debug)]
pub struct Instrumented {
    inner: Arc<dyn Provider>,
    account: String,
    metrics: ApplierMetrics,
}

impl Instrumented {
    pub fn new(
        account: impl Into<String>,
        inner: Arc<dyn Provider>,
        metrics: ApplierMetrics,
    ) -> Self {
        Instrumented {
            inner,
            account: account.into(),
            metrics,
        }
    }

    /// `inner` recording into the process-wide [`global`] metrics.
    pub fn wrap(account: &str, inner: Arc<dyn Provider>) -> Arc<dyn Provider> {
        Arc::new(Instrumented::new(account, inner, global().clone()))
    }

    async fn observe<T>(
        &self,
        op: Operation,
        zone: Option<&Name>,
        call: impl Future<Output = Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        let driver = self.inner.driver();
        let start = Instant::now();
        let result = if in_provider_call() {
            let span = tracing::Span::current();
            span.record("account", self.account.as_str());
            if let Some(z) = zone {
                span.record("zone", z.as_str());
            }
            call.await
        } else {
            let span = provider_call_span(driver, op.as_str(), 0, 0);
            span.record("account", self.account.as_str());
            if let Some(z) = zone {
                span.record("zone", z.as_str());
            }
            let r = call.instrument(span.clone()).await;
            if let Err(e) = &r {
                span.record("error.class", e.class.as_str());
            }
            r
        };
        let class = match &result {
            Ok(_) => "success",
            Err(e) => e.class.as_str(),
        };
        self.metrics
            .request(&self.account, driver, op.as_str(), class, start.elapsed());
        result
    }
}

#[async_trait]
impl Provider for Instrumented {
    fn driver(&self) -> &'static str {
        self.inner.driver()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        self.observe(Operation::Zones, None, self.inner.zones())
            .await
    }

    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError> {
        self.observe(Operation::Serial, Some(zone), self.inner.serial(zone))
            .await
    }

    async fn list(&self, zone: &Name, names: Option<&[Name]>) -> Result<Listing, ProviderError> {
        self.observe(Operation::List, Some(zone), self.inner.list(zone, names))
            .await
    }

    async fn apply(&self, zone: &Name, ops: &[RRSetOp]) -> Result<(), ProviderError> {
        self.observe(Operation::Apply, Some(zone), self.inner.apply(zone, ops))
            .await
    }
}
