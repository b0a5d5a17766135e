//! `Adopt`: bringing a zone under management without changing a value.
//!
//! After `dnsplane import` wrote a zone's records as the desired state and a source
//! reads them, every record is desired and equal to what the provider holds, but
//! nobody owns it: with `conflict = "report"` a sync leaves it alone. `Adopt` takes
//! those records once, as `conflict = "adopt"` would: one atomic change per record,
//! its data asserted unchanged and this planner's mark created.
//!
//! It takes only what is safe to take: a record that nobody owns (neither dnsplane nor
//! external-dns) and that the desired state in force holds with the same data. A
//! record that is not desired is left alone and listed: owning it would make the next
//! sync delete it. The plan is shown first (a dry run) with a digest; a write with
//! that digest writes exactly the plan reviewed, or nothing.
use super::sync::SyncError;
use super::{Engine, ZoneRuntime};
use crate::config::ConflictPolicy;
use crate::guard;
use crate::observed::ZoneView;
use crate::plan::{PlannedChange, plan_zone};
use crate::target::{Target, TargetError};
use dnsplane_common::{ChangeKind, Name, RecordKey};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Why an adopt was refused.
#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(
        "zone {zone}: the adopt plan changed since it was reviewed (digest {reviewed}, now {now}); nothing was written: review it again"
    )]
    Stale {
        zone: Target,
        reviewed: String,
        now: String,
    },
    #[error(transparent)]
    Sync(#[from] SyncError),
}

/// What an adopt did (or, as a dry run, would do).
#[derive(Debug, Default)]
pub struct AdoptOutcome {
    pub changes: Vec<PlannedChange>,
    /// The digest of `changes`, to write exactly them.
    pub digest: String,
    /// Records taken by this call, as read back.
    pub adopted: usize,
    /// Unowned records left alone, with why.
    pub left_alone: Vec<(RecordKey, String)>,
}

/// The adopt plan of a zone as read now.
struct AdoptPlan {
    changes: Vec<PlannedChange>,
    left_alone: Vec<(RecordKey, String)>,
}

impl Engine {
    /// Takes `zone`'s unowned records that equal the desired ones (see the module
    /// docs). `dry_run`: only plans. `digest`: writes only if the plan is that one.
    pub async fn adopt(
        &self,
        zone: &str,
        account: &str,
        dry_run: bool,
        digest: Option<&str>,
    ) -> Result<AdoptOutcome, AdoptError> {
        let z = self.runtime_named(zone, account)?;
        let name = z.target.clone();
        z.not_released()?;
        if !dry_run {
            self.leading(&name)?;
            if self.config.safety.mode == crate::config::SafetyMode::Observe {
                return Err(SyncError::Observing { zone: name }.into());
            }
        }
        // No sync of the zone meanwhile: it would plan against marks half written.
        let _sync = z.sync_lock.lock().await;
        let plan = self.plan_adopt_now(&z).await?;
        let now = guard::digest(plan.changes.iter().map(|c| c.change.id.as_str()));
        let mut outcome = AdoptOutcome {
            changes: plan.changes,
            digest: now.clone(),
            left_alone: plan.left_alone,
            ..Default::default()
        };
        if dry_run || outcome.changes.is_empty() {
            return Ok(outcome);
        }
        if let Some(reviewed) = digest.filter(|d| *d != now) {
            return Err(AdoptError::Stale {
                zone: name,
                reviewed: reviewed.to_string(),
                now,
            });
        }
        let mut summary = Default::default();
        self.apply_plan(&z, outcome.changes.clone(), &mut summary, None)
            .await?;
        // Read back: what is still to adopt was not taken.
        let left = self.plan_adopt_now(&z).await?.changes;
        outcome.adopted = outcome
            .changes
            .iter()
            .filter(|c| !left.iter().any(|l| l.change.key() == c.change.key()))
            .count();
        Ok(outcome)
    }

    /// A fresh read of the zone and what adopting would take of it now.
    async fn plan_adopt_now(&self, z: &Arc<ZoneRuntime>) -> Result<AdoptPlan, SyncError> {
        let name = &z.cfg.name;
        let (current, _) = self.list_zone(&z.target, true, &[]).await?;
        let owner = self.config.owner_id.clone();
        let mut cfg = z.cfg.clone();
        cfg.conflict = ConflictPolicy::Adopt;
        Ok(Engine::cpu(|| {
            let desired = z.desired();
            let empty = BTreeMap::new();
            let zone_desired = desired.zone(name).unwrap_or(&empty);
            let view = ZoneView::read(current, Some(zone_desired), cfg.external_dns.as_ref());
            let plan = plan_zone(&cfg, &owner, zone_desired, &view);
            let changes: Vec<PlannedChange> = plan
                .changes
                .into_iter()
                .filter(|c| {
                    c.change.kind == ChangeKind::Adopt
                        && view.owner(c.change.key()).is_none()
                        && view.external_owner(c.change.key()).is_none()
                })
                .collect();
            let mut left_alone: Vec<(RecordKey, String)> = plan
                .blocked
                .into_iter()
                .filter(|b| b.observed.is_some() && b.observed_owner.is_none())
                .map(|b| (b.key, b.message))
                .collect();
            left_alone.extend(
                view.data()
                    .filter(|(k, _)| {
                        !zone_desired.contains_key(*k)
                            && view.owner(k).is_none()
                            && view.external_owner(k).is_none()
                            && !is_apex_ns(name, k)
                    })
                    .map(|(k, _)| {
                        (
                            k.clone(),
                            "not desired: no source declares it, and owning it would make the next sync delete it".to_string(),
                        )
                    }),
            );
            left_alone.sort();
            AdoptPlan {
                changes,
                left_alone,
            }
        }))
    }
}

/// The zone's own NS records at its apex: the provider's, never adopted.
fn is_apex_ns(zone: &Name, key: &RecordKey) -> bool {
    key.rtype == dnsplane_common::RecordType::Ns && &key.name == zone
}
