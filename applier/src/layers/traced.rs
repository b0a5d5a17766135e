//! The outermost layer: one `provider.call` span per request (retries get their own,
//! with their attempt number from the [`CallCx`]), so that everything below — the
//! quota's wait, the call, the driver's HTTP request and its `traceparent` — is inside
//! it.
use crate::events::provider_call_span;
use crate::provider::call::{Call, CallCx, Layer, Reply};
use crate::provider::{Capabilities, ProviderError};
use async_trait::async_trait;
use std::sync::Arc;
use tracing::Instrument;

#[derive(Debug)]
pub struct Traced {
    inner: Arc<dyn Layer>,
}

impl Traced {
    pub fn new(inner: Arc<dyn Layer>) -> Traced {
        Traced { inner }
    }
}

#[async_trait]
impl Layer for Traced {
    fn driver(&self) -> &'static str {
        self.inner.driver()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn call(&self, cx: &CallCx, call: Call<'_>) -> Result<Reply, ProviderError> {
        let span = provider_call_span(self.inner.driver(), cx, &call);
        self.inner.call(cx, call).instrument(span).await
    }
}
