//! A provider account as the applier sees it: its provider stack, the zones it hosts
//! with one write lock per zone (a zone has one batch in flight), its metrics, circuit
//! breaker, quota and fault rules.
//!
//! The stack ([`crate::layers`]), from the top: [`Traced`] (the `provider.call` span)
//! → [`Limited`] (only with a quota) → [`Paced`] (pacing after a 429, every account)
//! → [`Observed`] (metrics, circuit, serials) →
//! [`FaultInjector`] (only with `[[accounts.faults]]`) → the driver.
use crate::circuit::{Circuit, CircuitConfig};
use crate::config::AccountConfig;
use crate::layers::observed::Seen;
use crate::layers::{Observed, Traced};
use crate::metrics::{AccountMetrics, ApplierMetrics};
use crate::provider::Provider;
use crate::provider::call::{Driver, Layer, Stack};
use crate::provider::fault::{FaultInjector, FaultRule, compile_rules};
use crate::provider::record_cache::SerialPosition;
use crate::quota::{Limited, Paced, Pacer, PacingConfig, Quota, QuotaSettings};
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
    /// The families the account records into (by default: registered nowhere).
    pub metrics: ApplierMetrics,
    /// `[accounts.pacing]` (on by default).
    pub pacing: PacingConfig,
}

impl AccountOptions {
    /// The runtime parts of an account besides its driver: compiled fault rules, the
    /// circuit's knobs, the quota (its table over the driver's default), recording
    /// into `metrics`. The config is validated first, so a problem here is
    /// unexpected; it is still reported.
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
            metrics: ApplierMetrics::default(),
            pacing: account.pacing.clone(),
        })
    }

    #[must_use]
    pub fn with_metrics(mut self, metrics: ApplierMetrics) -> AccountOptions {
        self.metrics = metrics;
        self
    }
}

#[derive(Debug)]
pub struct Account {
    pub name: String,
    /// The assembled provider stack: every call of every path (batches, listings,
    /// cache revalidation) goes through it.
    pub stack: Stack,
    pub metrics: AccountMetrics,
    /// Serials and the last error, as seen by the stack.
    pub seen: Arc<Seen>,
    pub circuit: Arc<Circuit>,
    /// The fault layer, when the account has fault rules.
    pub faults: Option<Arc<FaultInjector>>,
    /// The quota in front of the provider, when the account has one.
    pub quota: Option<Arc<Quota>>,
    /// Its pacing after the provider's 429 answers.
    pub pacer: Arc<Pacer>,
    zones: BTreeMap<Name, Arc<Mutex<()>>>,
    /// The driver itself, for what it knows without a call (every call goes through
    /// `stack`).
    provider: Arc<dyn Provider>,
}

impl Account {
    /// An account with default options: no faults, the default circuit, no quota.
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
        let (driver_name, capabilities) = (driver.driver(), driver.capabilities());
        let metrics = options.metrics.account(&name, driver_name);
        let circuit = Arc::new(Circuit::new(name.clone(), options.circuit));
        let seen = Arc::new(Seen::default());
        let provider = driver.clone();
        let mut layer: Arc<dyn Layer> = Arc::new(Driver(driver));
        let faults = if options.faults.is_empty() {
            None
        } else {
            let f = Arc::new(FaultInjector::new(name.clone(), layer, options.faults));
            tracing::warn!(account = %name, "Fault injection is on for this account.");
            layer = f.clone();
            Some(f)
        };
        layer = Arc::new(Observed::new(
            layer,
            metrics.clone(),
            circuit.clone(),
            seen.clone(),
        ));
        let pacer = Arc::new(Pacer::new(name.clone(), options.pacing));
        layer = Arc::new(Paced::new(layer, pacer.clone()));
        if let Some(q) = &options.quota {
            layer = Arc::new(Limited::new(layer, q.clone(), metrics.clone()));
        }
        let stack = Stack::new(
            Arc::new(Traced::new(layer, driver_name)),
            driver_name,
            capabilities,
        );
        Account {
            name,
            stack,
            metrics,
            seen,
            circuit,
            faults,
            quota: options.quota,
            pacer,
            zones: zones.iter().map(|z| (z.clone(), Arc::default())).collect(),
            provider,
        }
    }

    /// Where the driver's own writes put `zone`'s serial (see
    /// [`Provider::serial_position`]); asks the provider nothing.
    pub fn serial_position(&self, zone: &Name) -> Option<SerialPosition> {
        self.provider.serial_position(zone)
    }

    pub fn driver(&self) -> &'static str {
        self.stack.driver()
    }

    /// What the account's driver can do.
    pub fn capabilities(&self) -> crate::provider::Capabilities {
        self.stack.capabilities()
    }

    /// What the driver learnt of its server ([`Provider::notes`]).
    pub fn notes(&self) -> Vec<String> {
        self.provider.notes()
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
