//! Per-account counters for the status API, and [`Metered`], the provider decorator
//! that feeds them (and the account's circuit breaker), so that every provider call is
//! counted whichever path made it (batches, listings, cache revalidation).
use crate::circuit::Circuit;
use crate::provider::{Capabilities, Listing, Operation, Provider, ProviderError};
use async_trait::async_trait;
use dnsplane_common::{Name, RRSetOp, RecordResult};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// What the status API shows for one account.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountCounters {
    /// Provider calls by answer: "success" or an error class name.
    pub calls_by_class: BTreeMap<&'static str, u64>,
    /// Per-record outcomes by name ("APPLIED", "CONFLICT", ...).
    pub outcomes: BTreeMap<&'static str, u64>,
    pub batches: u64,
    /// Zone serials as last seen by a read.
    pub serials: BTreeMap<Name, u64>,
    pub last_error: Option<String>,
}

/// Counters of one account, shared by every task that touches it.
#[derive(Debug, Default)]
pub struct AccountStats {
    inner: Mutex<AccountCounters>,
}

impl AccountStats {
    fn with<R>(&self, f: impl FnOnce(&mut AccountCounters) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn record_call(&self, result: Result<(), &ProviderError>) {
        self.with(|c| match result {
            Ok(()) => {
                *c.calls_by_class.entry("success").or_default() += 1;
            }
            Err(e) => {
                *c.calls_by_class.entry(e.class.as_str()).or_default() += 1;
                c.last_error = Some(e.to_string());
            }
        });
    }

    pub fn record_serial(&self, zone: &Name, serial: u64) {
        self.with(|c| {
            c.serials.insert(zone.clone(), serial);
        });
    }

    /// Counts one batch and the outcome of each of its changes.
    pub fn record_batch(&self, results: &[RecordResult]) {
        self.with(|c| {
            c.batches += 1;
            for r in results {
                *c.outcomes.entry(r.outcome.as_str()).or_default() += 1;
            }
        });
    }

    pub fn snapshot(&self) -> AccountCounters {
        self.with(|c| c.clone())
    }
}

/// A provider whose every call is counted in an account's [`AccountStats`] and shown
/// to its [`Circuit`].
#[derive(Debug)]
pub struct Metered {
    inner: Arc<dyn Provider>,
    stats: Arc<AccountStats>,
    circuit: Option<Arc<Circuit>>,
}

impl Metered {
    pub fn new(inner: Arc<dyn Provider>, stats: Arc<AccountStats>) -> Self {
        Metered {
            inner,
            stats,
            circuit: None,
        }
    }

    /// Also feeds every call's answer to `circuit`.
    pub fn with_circuit(mut self, circuit: Arc<Circuit>) -> Self {
        self.circuit = Some(circuit);
        self
    }

    fn record<T>(&self, op: Operation, r: Result<T, ProviderError>) -> Result<T, ProviderError> {
        self.stats.record_call(r.as_ref().map(drop));
        if let Some(c) = &self.circuit {
            c.observe(op, r.as_ref().map(drop));
        }
        r
    }
}

#[async_trait]
impl Provider for Metered {
    fn driver(&self) -> &'static str {
        self.inner.driver()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        self.record(Operation::Zones, self.inner.zones().await)
    }

    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError> {
        let r = self.record(Operation::Serial, self.inner.serial(zone).await);
        if let Ok(Some(s)) = r {
            self.stats.record_serial(zone, s);
        }
        r
    }

    async fn list(&self, zone: &Name, names: Option<&[Name]>) -> Result<Listing, ProviderError> {
        let r = self.record(Operation::List, self.inner.list(zone, names).await);
        if let Ok(Listing {
            serial: Some(s), ..
        }) = &r
        {
            self.stats.record_serial(zone, *s);
        }
        r
    }

    async fn apply(&self, zone: &Name, ops: &[RRSetOp]) -> Result<(), ProviderError> {
        self.record(Operation::Apply, self.inner.apply(zone, ops).await)
    }
}
