//! A provider account as the service sees it: its (metered) provider, the zones it
//! hosts, one write lock per zone so that a zone has one batch in flight, and its
//! counters.
use crate::provider::Provider;
use crate::stats::{AccountStats, Metered};
use dnsplane_common::Name;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::Mutex;

#[derive(Debug)]
pub struct Account {
    pub name: String,
    /// The driver wrapped in [`Metered`], so every call shows in `stats`.
    pub provider: Arc<dyn Provider>,
    pub stats: Arc<AccountStats>,
    zones: BTreeMap<Name, Arc<Mutex<()>>>,
}

impl Account {
    pub fn new(name: impl Into<String>, provider: Arc<dyn Provider>, zones: &[Name]) -> Self {
        let stats = Arc::new(AccountStats::default());
        Account {
            name: name.into(),
            provider: Arc::new(Metered::new(provider, stats.clone())),
            stats,
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
}
