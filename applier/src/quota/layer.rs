//! The quota's layer in the provider stack: every call that counts takes a token first,
//! waiting at most until the call's deadline (from its [`CallCx`]; calls without one,
//! listings, wait at most `max_wait`); a call that gets none is not made and comes back
//! `quota_denied` with when the next token is expected. Every answer the driver marked
//! `throttled` is fed back into the bucket.
//!
//! Listings and writes are not gated here but by the driver, request by request,
//! through the call's [`Pacer`]: a driver that makes several HTTP requests for one
//! call (PowerDNS reads the serial, then PATCHes) takes a token right before each
//! request that counts, so that what the provider sees is paced, not only what the
//! stack sees. A driver with one request per call takes one token first, as before.
use super::limiter::Quota;
use crate::events;
use crate::metrics::AccountMetrics;
use crate::provider::call::{Call, CallCx, Gate, Layer, Pacer, Reply};
use crate::provider::{ErrorClass, Operation, ProviderError};
use async_trait::async_trait;
use std::sync::Arc;
use tokio::time::Instant;
use tracing::Instrument;

#[derive(Debug)]
pub struct Limited {
    inner: Arc<dyn Layer>,
    quota: Arc<Quota>,
    metrics: AccountMetrics,
}

impl Limited {
    pub fn new(inner: Arc<dyn Layer>, quota: Arc<Quota>, metrics: AccountMetrics) -> Limited {
        Limited {
            inner,
            quota,
            metrics,
        }
    }
}

/// The quota's gate for the requests of one call: they wait at most until the
/// call's deadline (calls without one: `max_wait`).
#[derive(Debug)]
struct CallGate {
    quota: Arc<Quota>,
    metrics: AccountMetrics,
    deadline: Instant,
}

#[async_trait]
impl Gate for CallGate {
    async fn admit(&self, op: Operation) -> Result<(), ProviderError> {
        take(&self.quota, &self.metrics, self.deadline, op).await
    }

    /// None left: the bucket slows down as after a 429, before the 429 comes.
    async fn remaining(&self, op: Operation, left: u64) {
        if left == 0 && self.quota.counts(op) {
            self.quota.throttle(None).await;
        }
    }
}

/// Takes a token for one request of kind `op` before `deadline`, or says when one is
/// expected.
async fn take(
    quota: &Arc<Quota>,
    metrics: &AccountMetrics,
    deadline: Instant,
    op: Operation,
) -> Result<(), ProviderError> {
    {
        if !quota.counts(op) {
            return Ok(());
        }
        let max_wait = deadline.saturating_duration_since(Instant::now());
        let span = tracing::info_span!(
            "quota.wait",
            account = %quota.account(),
            operation = op.as_str(),
            waited_ms = tracing::field::Empty,
        );
        let acquired = quota.acquire(max_wait).instrument(span.clone()).await;
        match acquired {
            Ok(waited) => {
                span.in_scope(|| {
                    events::QuotaTaken {
                        metrics,
                        waited,
                        tokens_left: quota.tokens_left(),
                    }
                    .emit()
                });
                Ok(())
            }
            Err(retry_after) => {
                events::QuotaDenied {
                    account: quota.account(),
                    operation: op,
                    retry_after,
                }
                .emit();
                let mut e = ProviderError::new(
                    ErrorClass::Transient,
                    format!(
                        "not attempted: the quota of account {:?} has no token before the deadline (next in {retry_after:?})",
                        quota.account()
                    ),
                )
                .with_retry_after(retry_after);
                e.quota_denied = true;
                Err(e)
            }
        }
    }
}

#[async_trait]
impl Layer for Limited {
    async fn call(&self, cx: &CallCx, call: Call<'_>) -> Result<Reply, ProviderError> {
        let deadline = cx
            .deadline
            .unwrap_or_else(|| Instant::now() + self.quota.settings().max_wait);
        let result = match call {
            // Paced by the driver, request by request.
            Call::List { .. } | Call::Apply { .. } => {
                let gate = CallGate {
                    quota: self.quota.clone(),
                    metrics: self.metrics.clone(),
                    deadline,
                };
                let cx = cx.clone().with_pacer(Pacer::new(Arc::new(gate)));
                self.inner.call(&cx, call).await
            }
            Call::Zones | Call::Serial => {
                take(&self.quota, &self.metrics, deadline, call.operation()).await?;
                self.inner.call(cx, call).await
            }
        };
        if let Err(e) = &result
            && e.throttled
        {
            self.quota.throttle(e.retry_after).await;
        }
        result
    }
}
