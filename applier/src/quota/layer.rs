//! The quota's layer in the provider stack: every call that counts takes a token first,
//! waiting at most until the call's deadline (from its [`CallCx`]; calls without one,
//! listings, wait at most `max_wait`); a call that gets none is not made and comes back
//! `quota_denied` with when the next token is expected. Every answer the driver marked
//! `throttled` is fed back into the bucket.
use super::limiter::Quota;
use crate::events;
use crate::metrics::AccountMetrics;
use crate::provider::call::{Call, CallCx, Layer, Reply};
use crate::provider::{ErrorClass, ProviderError};
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

    /// Takes a token for `call`, or says when one is expected.
    async fn gate(&self, cx: &CallCx, call: &Call<'_>) -> Result<(), ProviderError> {
        let op = call.operation();
        if !self.quota.counts(op) {
            return Ok(());
        }
        let max_wait = match cx.deadline {
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => self.quota.settings().max_wait,
        };
        let span = tracing::info_span!(
            "quota.wait",
            account = %self.quota.account(),
            operation = op.as_str(),
            waited_ms = tracing::field::Empty,
        );
        let acquired = self.quota.acquire(max_wait).instrument(span.clone()).await;
        match acquired {
            Ok(waited) => {
                span.in_scope(|| {
                    events::QuotaTaken {
                        metrics: &self.metrics,
                        waited,
                        tokens_left: self.quota.tokens_left(),
                    }
                    .emit()
                });
                Ok(())
            }
            Err(retry_after) => {
                events::QuotaDenied {
                    account: self.quota.account(),
                    operation: op,
                    retry_after,
                }
                .emit();
                let mut e = ProviderError::new(
                    ErrorClass::Transient,
                    format!(
                        "not attempted: the quota of account {:?} has no token before the deadline (next in {retry_after:?})",
                        self.quota.account()
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
        self.gate(cx, &call).await?;
        let result = self.inner.call(cx, call).await;
        if let Err(e) = &result
            && e.throttled
        {
            self.quota.throttle(e.retry_after).await;
        }
        result
    }
}
