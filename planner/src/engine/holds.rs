//! Records a target's account cannot hold. A zone served by several accounts may
//! want a record only some of them can write (a Route 53 alias, a Cloudflare proxied
//! flag, a routing-policy set): it goes to the targets whose driver writes it, and at
//! the others it is `not_for_target`, reported once and never sent (the applier would
//! refuse it as invalid on every change). What each driver writes comes from the
//! appliers' status (`AccountStatus.routing_sets`, `properties`), the same rule the
//! applier refuses by ([`dnsplane_common::routing::cannot_hold`]).
use super::{Engine, ZoneRuntime, lock};
use crate::client::{ApplierAccount, Holds};
use crate::plan::ZonePlan;
use crate::state::RecordStateKind;
use dnsplane_common::{RRSet, RecordKey};
use std::time::SystemTime;

impl Engine {
    /// Notes what each of `accounts`' drivers can hold. When that is new or changed,
    /// the account's shared targets look again at what it decided: a record refused
    /// `invalid` by the applier before the planner knew (the first sync after start can
    /// send before the first health round) becomes `not_for_target`, and a
    /// `not_for_target` record the driver now writes is planned again. Either would
    /// otherwise wait for its desired record to change.
    pub(super) fn note_holds(&self, accounts: &[ApplierAccount]) {
        let changed: Vec<(String, Holds)> = {
            let mut holds = lock(&self.holds);
            accounts
                .iter()
                .filter(|a| {
                    holds.insert(a.name.clone(), a.holds.clone()).as_ref() != Some(&a.holds)
                })
                .map(|a| (a.name.clone(), a.holds.clone()))
                .collect()
        };
        for (account, holds) in changed {
            self.recheck_holds(&account, &holds, SystemTime::now());
        }
    }

    /// [`Engine::note_holds`] for one account whose driver holds `holds`.
    fn recheck_holds(&self, account: &str, holds: &Holds, now: SystemTime) {
        let zones = self.zones.values();
        for zone in zones.filter(|z| z.target.is_shared() && z.cfg.account == account) {
            let mut states = lock(&zone.states);
            let mut refused = Vec::new();
            let mut holdable = Vec::new();
            for (key, s) in states.iter() {
                let Some(desired) = &s.desired else { continue };
                match (s.kind, refusal(account, holds, desired)) {
                    (RecordStateKind::Invalid, Some(why)) => {
                        refused.push((key.clone(), desired.clone(), why));
                    }
                    (RecordStateKind::NotForTarget, None) => holdable.push(key.clone()),
                    _ => {}
                }
            }
            for (key, desired, why) in refused {
                states.not_for_target(&key, Some(desired), &why, now);
            }
            let why = format!(
                "account {account} ({}) now writes it; planned again",
                holds.driver
            );
            for key in &holdable {
                states.replan(key, &why, now);
            }
            drop(states);
            if !holdable.is_empty() {
                lock(&zone.dirty).extend(holdable.into_iter().map(|k| k.name));
                zone.trigger.notify_one();
            }
        }
    }

    /// What `account`'s driver holds, once an applier has said (`None` before).
    fn holds_of(&self, account: &str) -> Option<Holds> {
        lock(&self.holds).get(account).cloned()
    }

    /// Takes the changes of `plan` that `zone`'s account cannot hold out of it, and
    /// marks their records `not_for_target` with why. Called with the plan folded
    /// (each change's record is pending), before anything is sent.
    pub(super) fn keep_holdable(&self, zone: &ZoneRuntime, plan: &mut ZonePlan, now: SystemTime) {
        let refused = self.take_unholdable(zone, plan);
        if refused.is_empty() {
            return;
        }
        let mut states = lock(&zone.states);
        for (key, desired, why) in refused {
            states.not_for_target(&key, desired, &why, now);
        }
    }

    /// The changes of `plan` that `zone`'s account cannot hold, taken out of it: each
    /// key with the record it would write and why not ("not for this target: …").
    pub(super) fn take_unholdable(
        &self,
        zone: &ZoneRuntime,
        plan: &mut ZonePlan,
    ) -> Vec<(RecordKey, Option<RRSet>, String)> {
        // A zone's only target has no other to leave the record to: what its account
        // cannot hold is invalid there, as the applier says.
        if !zone.target.is_shared() {
            return Vec::new();
        }
        let Some(holds) = self.holds_of(&zone.cfg.account) else {
            return Vec::new();
        };
        let account = &zone.cfg.account;
        let mut refused = Vec::new();
        plan.changes.retain(|c| {
            let why = c.change.ops.iter().find_map(|op| {
                op.after
                    .as_ref()
                    .and_then(|set| refusal(account, &holds, set))
            });
            match why {
                Some(why) => {
                    let after = c.change.ops.iter().find_map(|op| op.after.clone());
                    refused.push((c.change.key().clone(), after, why));
                    false
                }
                None => true,
            }
        });
        refused
    }
}

/// Why `account`, whose driver holds `holds`, cannot write `set` ("not for this
/// target: …"), by the rule the applier refuses with; `None` when it can.
fn refusal(account: &str, holds: &Holds, set: &RRSet) -> Option<String> {
    let writer = format!("account {account} ({})", holds.driver);
    let why =
        dnsplane_common::routing::cannot_hold(&writer, holds.routing_sets, &holds.properties, set)?;
    Some(format!("not for this target: {why}"))
}
