//! The layer that sees every call that reaches the provider (after the quota, before
//! injected faults and the driver): it counts it and its latency
//! ([`events::ProviderCallFinished`]), shows its answer to the account's circuit
//! breaker, and remembers the zone serials reads saw and the last error, for
//! `GetStatus`.
use crate::circuit::Circuit;
use crate::events;
use crate::metrics::AccountMetrics;
use crate::provider::call::{Call, CallCx, Layer, Reply};
use crate::provider::{Listing, ProviderError};
use async_trait::async_trait;
use dnsplane_common::Name;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

/// What `GetStatus` shows of an account besides its counters.
#[derive(Debug, Default)]
pub struct Seen {
    inner: Mutex<SeenData>,
}

#[derive(Debug, Default, Clone)]
struct SeenData {
    serials: BTreeMap<Name, u64>,
    last_error: Option<String>,
}

impl Seen {
    fn with<R>(&self, f: impl FnOnce(&mut SeenData) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Zone serials as last seen by a read.
    pub fn serials(&self) -> BTreeMap<Name, u64> {
        self.with(|d| d.serials.clone())
    }

    /// The last provider error (kept after recovery).
    pub fn last_error(&self) -> Option<String> {
        self.with(|d| d.last_error.clone())
    }
}

#[derive(Debug)]
pub struct Observed {
    inner: Arc<dyn Layer>,
    metrics: AccountMetrics,
    circuit: Arc<Circuit>,
    seen: Arc<Seen>,
}

impl Observed {
    pub fn new(
        inner: Arc<dyn Layer>,
        metrics: AccountMetrics,
        circuit: Arc<Circuit>,
        seen: Arc<Seen>,
    ) -> Observed {
        Observed {
            inner,
            metrics,
            circuit,
            seen,
        }
    }
}

#[async_trait]
impl Layer for Observed {
    async fn call(&self, cx: &CallCx, call: Call<'_>) -> Result<Reply, ProviderError> {
        let op = call.operation();
        let start = Instant::now();
        let result = self.inner.call(cx, call).await;
        if result.as_ref().is_err_and(|e| e.quota_denied) {
            // The driver's request waited for a quota token in vain: nothing was sent.
            return result;
        }
        events::ProviderCallFinished {
            metrics: &self.metrics,
            operation: op,
            attempt: cx.attempt,
            result: result.as_ref().map(drop),
            elapsed: start.elapsed(),
        }
        .emit();
        self.circuit.observe(op, result.as_ref().map(drop));
        let serial = match &result {
            Ok(Reply::Serial(Some(s))) => Some(*s),
            Ok(Reply::Listing(Listing {
                serial: Some(s), ..
            })) => Some(*s),
            _ => None,
        };
        match (&result, serial, &cx.zone) {
            (Err(e), _, _) => self.seen.with(|d| d.last_error = Some(e.to_string())),
            (Ok(_), Some(s), Some(zone)) => self.seen.with(|d| {
                d.serials.insert(zone.clone(), s);
            }),
            _ => {}
        }
        result
    }
}
