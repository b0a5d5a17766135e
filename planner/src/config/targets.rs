//! The zones' part of the planner's config: the targets they make (one per zone and
//! account), and the checks on them serde cannot express (accounts, views).
use super::{PlannerConfig, SourceConfig, ZoneConfig};
use crate::target::Target;
use std::collections::{BTreeSet, HashMap};

impl PlannerConfig {
    /// `[[zones]]`: at least one; each (zone, account) once; a default TTL a record
    /// may carry; external-dns's registry as external-dns takes it; the views.
    pub(super) fn validate_zones(&self) -> Result<(), String> {
        if self.zones.is_empty() {
            return Err("no [[zones]] configured".into());
        }
        let mut seen = BTreeSet::new();
        for z in &self.zones {
            if !z.account.is_empty() && !z.accounts.is_empty() {
                return Err(format!(
                    "zone {}: account and accounts are exclusive (accounts = [{:?}, …] names every account)",
                    z.name, z.account
                ));
            }
            for account in z.account_names() {
                if account.is_empty() {
                    return Err(format!("zone {}: account is empty", z.name));
                }
                if !seen.insert((&z.name, account)) {
                    return Err(if z.accounts.iter().filter(|a| *a == account).count() > 1 {
                        format!("zone {}: accounts names {account:?} twice", z.name)
                    } else {
                        format!("zone {} at account {account:?} is configured twice", z.name)
                    });
                }
            }
            // Every record without a TTL of its own gets this one: above what a record
            // may carry, every such record would be refused at run time.
            if z.default_ttl > dnsplane_common::rrset::MAX_TTL {
                return Err(format!(
                    "zone {}: default_ttl {} is above the maximum of {} seconds (RFC 2181)",
                    z.name,
                    z.default_ttl,
                    dnsplane_common::rrset::MAX_TTL
                ));
            }
            if let Some(e) = &z.external_dns {
                e.validate()
                    .map_err(|m| format!("zone {}: external_dns.{m}", z.name))?;
            }
        }
        self.validate_views()
    }

    /// Views (split horizon): each `[[zones]] view` a name of letters, digits and `-`;
    /// each view a source feeds (`[[sources]] views`) one some target has.
    fn validate_views(&self) -> Result<(), String> {
        let mut known = BTreeSet::new();
        for z in &self.zones {
            if let Some(v) = &z.view {
                let ok = !v.is_empty()
                    && v.len() <= 63
                    && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
                if !ok {
                    return Err(format!(
                        "zone {}: view {v:?} must be 1-63 letters, digits and '-'",
                        z.name
                    ));
                }
                known.insert(v.as_str());
            }
        }
        for (i, source) in self.sources.iter().enumerate() {
            if let Some(v) = source.views().iter().find(|v| !known.contains(v.as_str())) {
                return Err(format!(
                    "[[sources]] #{}: views names {v:?}, which no [[zones]] target has (the views: {})",
                    i + 1,
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.iter().copied().collect::<Vec<_>>().join(", ")
                    }
                ));
            }
        }
        for (i, source) in self.sources.iter().enumerate() {
            let SourceConfig::Netbox(nb) = source else {
                continue;
            };
            if let Some((from, to)) = nb
                .plugin_views
                .iter()
                .find(|(_, to)| !known.contains(to.as_str()))
            {
                return Err(format!(
                    "[[sources]] #{}: plugin_views maps {from:?} to {to:?}, which no [[zones]] target has as its view",
                    i + 1
                ));
            }
        }
        // Where every source names its views, a view none of them names is fed by
        // nothing the config says (only labelled pushes could): a typo, most likely.
        let every_view = self.sources.iter().any(|s| s.views().is_empty());
        if !self.sources.is_empty() && !every_view {
            let fed: BTreeSet<&str> = self
                .sources
                .iter()
                .flat_map(SourceConfig::views)
                .map(String::as_str)
                .collect();
            if let Some(z) = self
                .zones
                .iter()
                .find(|z| z.view.as_deref().is_some_and(|v| !fed.contains(v)))
            {
                return Err(format!(
                    "zone {}: view {:?} is fed by no [[sources]] (each names its views: {})",
                    z.name,
                    z.view.as_deref().unwrap_or_default(),
                    fed.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        Ok(())
    }

    /// One zone config per target (zone, account): a zone with `accounts` gives one
    /// per account, each with `account` set and `accounts` empty. In the order
    /// configured.
    pub fn targets(&self) -> Vec<(Target, ZoneConfig)> {
        let mut per_zone: HashMap<&dnsplane_common::Name, usize> = Default::default();
        for z in &self.zones {
            *per_zone.entry(&z.name).or_default() += z.account_names().len();
        }
        self.zones
            .iter()
            .flat_map(|z| {
                let shared = per_zone[&z.name] > 1;
                z.account_names().into_iter().map(move |a| {
                    let target = Target::new(z.name.clone(), a, shared);
                    let cfg = ZoneConfig {
                        account: a.to_string(),
                        accounts: Vec::new(),
                        ..z.clone()
                    };
                    (target, cfg)
                })
            })
            .collect()
    }
}
