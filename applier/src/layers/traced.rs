//! The outermost layer: one `provider.call` span per request (retries get their own,
//! with their attempt number from the [`CallCx`]), so that everything below — the
//! quota's wait, the call, the driver's HTTP request and its `traceparent` — is inside
//! it.
use crate::events::provider_call_span;
use crate::provider::ProviderError;
use crate::provider::call::{Call, CallCx, Layer, Reply};
use async_trait::async_trait;
use std::sync::Arc;
use tracing::Instrument;

#[derive(Debug)]
pub struct Traced {
    inner: Arc<dyn Layer>,
    /// The driver's name, for the span.
    driver: &'static str,
}

impl Traced {
    pub fn new(inner: Arc<dyn Layer>, driver: &'static str) -> Traced {
        Traced { inner, driver }
    }
}

#[async_trait]
impl Layer for Traced {
    async fn call(&self, cx: &CallCx, call: Call<'_>) -> Result<Reply, ProviderError> {
        let span = provider_call_span(self.driver, cx, &call);
        self.inner.call(cx, call).instrument(span).await
    }
}
