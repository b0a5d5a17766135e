//! The mass-change guard inside a sync, and `Approve`.
//!
//! Every sync's plan passes [`crate::guard::check`] after it is folded into the state
//! table: a plan over the limit keeps its creates and loses its deletes and updates,
//! whose records become `held`; the zone shows the held plan (digest, counts) until a
//! sync's plan no longer needs holding or a person approves that digest. An approval
//! marks the held names dirty, so the zone loop re-plans them within `min_interval`;
//! that plan is let through only if its digest is still the approved one.
//!
//! `[safety] mode`: in `approve` mode the guard weighs (and holds) every change; in
//! `observe` mode nothing of any plan is sent, and its records stay pending.
use super::sync::Scope;
use super::{Engine, ZoneRuntime, lock};
use crate::config::SafetyMode;
use crate::events;
use crate::guard::{self, HeldPlan};
use crate::observed::ZoneView;
use crate::plan::ZonePlan;
use crate::target::{Target, TargetError};
use std::time::SystemTime;

/// Why an approval was refused.
#[derive(Debug, thiserror::Error)]
pub enum ApproveError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("zone {zone} has no held plan")]
    NothingHeld { zone: Target },
    #[error(
        "zone {zone}: the held plan changed; it is now {current} ({reason}); look again and approve that digest"
    )]
    Changed {
        zone: Target,
        current: String,
        reason: String,
    },
}

impl Engine {
    /// Runs the guard over a sync's folded plan (see the module docs). `full_view`
    /// is the zone's whole observed view when the sync read it (a full sync); a
    /// targeted sync counts the owned records in the view the engine keeps.
    pub(super) fn guard_plan(
        &self,
        zone: &ZoneRuntime,
        scope: &Scope,
        full_view: Option<&ZoneView>,
        plan: &mut ZonePlan,
    ) {
        let name = &zone.cfg.name;
        let target = &zone.target;
        let owner = self.config.owner_id.as_str();
        let mut held = lock(&zone.held);
        // This plan's guarded changes, plus those still held at names it did not plan.
        if self.config.safety.mode == SafetyMode::Observe {
            // Plan and report, never write: the changes stay pending, with why.
            let observed = std::mem::take(&mut plan.changes);
            lock(&zone.states).observe(observed.iter().map(|c| c.change.key()));
            return;
        }
        let mut items = guard::weighed(&self.config.safety, name, &plan.changes);
        let own = items.clone();
        let carried: Vec<_> = held
            .as_ref()
            .map(|(h, _)| {
                h.items
                    .iter()
                    .filter(|g| !scope.contains(&g.key.name))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        items.extend(carried.iter().cloned());
        let now = SystemTime::now();
        let remembered = {
            let mut w = lock(&zone.window);
            w.expire(self.config.safety.window, now);
            w.tally(&items)
        };
        let verdict = guard::check(
            &self.config.safety,
            items,
            || match full_view {
                Some(v) => v.owned_by(owner),
                None => lock(&zone.view).as_ref().map_or(0, |v| v.owned_by(owner)),
            },
            remembered,
        );
        let Some(verdict) = verdict else {
            // Let through: remembered, so that the next slices are weighed with it.
            lock(&zone.window).record(&own, now);
            // Nothing to hold any more: release the hold, and re-plan the names it
            // held that this sync did not cover.
            if let Some((h, _)) = held.take() {
                events::PlanReleased {
                    zone: target,
                    digest: &h.digest,
                    approved: false,
                }
                .emit(&self.metrics);
                if !carried.is_empty() {
                    lock(&zone.dirty).extend(carried.into_iter().map(|g| g.key.name));
                    zone.trigger.notify_one();
                }
            }
            return;
        };
        let approved = {
            let mut a = lock(&zone.approved);
            let ok = a.as_deref() == Some(verdict.digest.as_str());
            if ok {
                *a = None;
            }
            ok
        };
        if approved {
            *held = None;
            // The person saw the total and agreed: the window starts afresh.
            lock(&zone.window).clear();
            events::PlanReleased {
                zone: target,
                digest: &verdict.digest,
                approved: true,
            }
            .emit(&self.metrics);
            return;
        }
        let taken = guard::take_weighed(&self.config.safety, name, &mut plan.changes);
        let by = match self.config.safety.mode {
            SafetyMode::Approve => "held for approval",
            _ => "held by the mass-change guard",
        };
        let reason = format!(
            "{by}: {}; approve with `dnsplane approve {}` (digest {})",
            verdict.reason,
            target.cli(),
            verdict.digest
        );
        lock(&zone.states).hold(taken.iter().map(|c| c.change.key()), &reason, now);
        let since = match held.as_ref() {
            Some((h, since)) if h.digest == verdict.digest => *since,
            _ => {
                events::PlanHeld {
                    zone: target,
                    plan: &verdict,
                }
                .emit(&self.metrics);
                now
            }
        };
        *held = Some((verdict, since));
    }

    /// Approves `zone`'s held plan if its digest is still `digest`; the zone re-plans
    /// the held names at once and applies them if the plan is unchanged.
    pub fn approve(
        &self,
        zone: &str,
        account: &str,
        digest: &str,
    ) -> Result<HeldPlan, ApproveError> {
        let z = self.runtime_named(zone, account)?;
        let name = &z.target;
        let plan = match lock(&z.held).as_ref() {
            None => return Err(ApproveError::NothingHeld { zone: name.clone() }),
            Some((h, _)) if h.digest != digest => {
                return Err(ApproveError::Changed {
                    zone: name.clone(),
                    current: h.digest.clone(),
                    reason: h.reason.clone(),
                });
            }
            Some((h, _)) => h.clone(),
        };
        *lock(&z.approved) = Some(plan.digest.clone());
        events::PlanApproved {
            zone: name,
            plan: &plan,
        }
        .emit();
        lock(&z.dirty).extend(plan.names());
        z.trigger.notify_one();
        Ok(plan)
    }
}
