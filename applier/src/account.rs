//! A provider account as the service sees it: its provider, the zones it hosts, one
//! write lock per zone so that a zone has one batch in flight, its counters and its
//! circuit breaker.
//!
//! The provider is layered, from the driver outwards:
//! driver → [`FaultInjector`] (only with `[[accounts.faults]]`) → [`Metered`] (counts
//! every call and feeds the [`Circuit`]) → [`Instrumented`](crate::instrument::Instrumented)
//! (Prometheus metrics, the `provider.call` span) → [`Limited`](crate::quota::Limited)
//! (only with a quota: each counted call waits for a token, throttle answers lower
//! the rate; a call denied for its deadline reaches nothing below). Injected faults
//! thus look exactly like the provider's own answers to everything above them.
use crate::circuit::{Circuit, CircuitConfig};
use crate::config::AccountConfig;
use crate::provider::Provider;
use crate::provider::fault::compile_rules;
use crate::provider::fault::{FaultInjector, FaultRule};
use crate::quota::{Quota, QuotaSettings};
use crate::stats::{AccountStats, Metered};
use dnsplane_common::Name;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::Mutex;

/// How an account is run, besides its driver.
#[derive(Debug, Default, Clone)]
pub struct AccountOptions {
    /// Fault rules; empty: no fault injection.
    pub faults: Vec<FaultRule>,
    pub circuit: CircuitConfig,
    /// The account's provider quota (`[accounts.quota]` or the driver's default);
    /// `None`: unlimited.
    pub quota: Option<Arc<Quota>>,
}

#[derive(Debug)]
pub struct Account {
    pub name: String,
    /// The driver wrapped in [`Metered`], so every call shows in `stats` and in the
    /// circuit.
    pub provider: Arc<dyn Provider>,
    pub stats: Arc<AccountStats>,
    pub circuit: Arc<Circuit>,
    /// The fault layer, when the account has fault rules.
    pub faults: Option<Arc<FaultInjector>>,
    /// The quota in front of the provider, when the account has one.
    pub quota: Option<Arc<Quota>>,
    zones: BTreeMap<Name, Arc<Mutex<()>>>,
}

impl AccountOptions {
    /// The runtime parts of an account besides its driver: compiled fault rules, the
    /// circuit's knobs, the quota (its table over the driver's default). The config is
    /// validated first, so a problem here is unexpected; it is still reported.
    pub fn build(account: &AccountConfig) -> Result<AccountOptions, String> {
        let at = |p: String| format!("account {:?}: {p}", account.name);
        let faults =
            compile_rules(&account.faults, &account.zones).map_err(|ps| at(ps.join("; ")))?;
        let quota = match QuotaSettings::resolve(account.driver.name(), account.quota.as_ref())
            .map_err(|ps| at(ps.join("; ")))?
        {
            Some(settings) => Some(Arc::new(
                Quota::new(&account.name, settings).map_err(|e| at(format!("quota.redis: {e}")))?,
            )),
            None => None,
        };
        Ok(AccountOptions {
            faults,
            circuit: account.circuit.clone(),
            quota,
        })
    }
}

impl Account {
    /// An account with default options: no faults, the default circuit.
    pub fn new(name: impl Into<String>, provider: Arc<dyn Provider>, zones: &[Name]) -> Self {
        Account::with_options(name, provider, zones, AccountOptions::default())
    }

    pub fn with_options(
        name: impl Into<String>,
        driver: Arc<dyn Provider>,
        zones: &[Name],
        options: AccountOptions,
    ) -> Self {
        let name = name.into();
        let stats = Arc::new(AccountStats::default());
        let circuit = Arc::new(Circuit::new(name.clone(), options.circuit));
        let (inner, faults): (Arc<dyn Provider>, _) = if options.faults.is_empty() {
            (driver, None)
        } else {
            let f = Arc::new(FaultInjector::new(name.clone(), driver, options.faults));
            tracing::warn!(account = %name, "Fault injection is on for this account.");
            (f.clone(), Some(f))
        };
        let metered = Metered::new(inner, stats.clone()).with_circuit(circuit.clone());
        // Outermost: per-call metrics and the `provider.call` span (crate::instrument).
        let provider = crate::instrument::Instrumented::wrap(&name, Arc::new(metered));
        // Quota last: a call it holds back or denies is no provider call.
        let provider: Arc<dyn Provider> = match &options.quota {
            Some(q) => Arc::new(crate::quota::Limited::new(provider, q.clone())),
            None => provider,
        };
        Account {
            name,
            provider,
            stats,
            circuit,
            faults,
            quota: options.quota,
            zones: zones.iter().map(|z| (z.clone(), Arc::default())).collect(),
        }
    }

    pub fn zones(&self) -> impl Iterator<Item = &Name> {
        self.zones.keys()
    }

    pub fn hosts(&self, zone: &Name) -> bool {
        self.zones.contains_key(zone)
    }

    /// The lock that serialises writes to `zone`; `None` when the zone is not hosted.
    pub fn zone_lock(&self, zone: &Name) -> Option<Arc<Mutex<()>>> {
        self.zones.get(zone).cloned()
    }

    /// Faults fired so far, by action (empty without fault injection).
    pub fn faults_fired(&self) -> BTreeMap<&'static str, u64> {
        self.faults.as_ref().map(|f| f.fired()).unwrap_or_default()
    }
}
