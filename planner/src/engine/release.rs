//! `Release` and `Resume`: the reverse door of docs/external-dns.md.
//!
//! A release reads the zone afresh, plans the hand-over ([`crate::plan::plan_release`]:
//! refused whole while any record cannot be handed over), **persists the zone as
//! released before it sends anything**, then sends the changes like a sync does
//! (batches, lease permits) and reads the zone back to say what is left. From the
//! moment it is persisted the zone is not planned: a sync would see external-dns's
//! marks and, with `[zones.external_dns]` naming that owner, take the records straight
//! back. A crash or a failed batch mid-release leaves the zone released with some
//! records still marked dnsplane's; running the release again finishes them.
//!
//! `Resume` persists the zone as managed again and wakes its loop for a full, fresh
//! sync.
use super::sync::SyncError;
use super::{Engine, ZoneRuntime, lock};
use crate::config::ExternalDnsConfig;
use crate::events;
use crate::observed::ZoneView;
use crate::plan::{PlannedChange, ReleasePlan, plan_release};
use crate::state::StateTable;
use crate::store::StoreError;
use crate::target::{Target, TargetError};
use dnsplane_common::{Name, RecordKey};
use std::sync::Arc;
use std::time::SystemTime;

/// A zone handed to external-dns, as persisted and as status shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Released {
    /// The external-dns `--txt-owner-id` the records went to.
    pub owner: String,
    pub at: SystemTime,
}

/// Why a release or resume was refused.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("external_dns_owner: {0}")]
    BadOwner(String),
    #[error(
        "zone {zone} is released to external-dns owner {owner:?}; `dnsplane resume {}` first to release it to another", zone.cli()
    )]
    OtherOwner { zone: Target, owner: String },
    #[error("zone {zone} is not released")]
    NotReleased { zone: Target },
    #[error(
        "zone {zone}: {} record(s) cannot be handed to external-dns, so nothing was written; first: {}",
        refused.len(),
        refused.first().map(|(k, why)| format!("{} {}: {why}", k.name, k.rtype)).unwrap_or_default()
    )]
    Refused {
        zone: Target,
        refused: Vec<(RecordKey, String)>,
    },
    #[error(transparent)]
    Sync(#[from] SyncError),
    #[error(
        "zone {zone}: the planner has no state store, so a release could not outlive a restart"
    )]
    NoStore { zone: Target },
    #[error("zone {zone}: persisting the release failed, so nothing was written: {source}")]
    Store {
        zone: Target,
        #[source]
        source: StoreError,
    },
}

/// What a release did (or, as a dry run, would do).
#[derive(Debug)]
pub struct ReleaseOutcome {
    /// The target released.
    pub target: Target,
    /// The changes sent (or that would be).
    pub changes: Vec<PlannedChange>,
    /// Records handed over by this call, as read back.
    pub released: usize,
    /// Changes still needed after this call, read back from the provider, each with
    /// the last outcome its record had: run the release again.
    pub left: Vec<PlannedChange>,
    /// Records already external-dns's before this call.
    pub already: usize,
}

/// Where a target's release is persisted. A zone's only target also reads the key
/// from before targets (`release:<zone>`).
fn store_key(zone: &Target) -> String {
    format!("release:{}@{}", zone.zone, zone.account)
}

fn legacy_store_key(zone: &Name) -> String {
    format!("release:{zone}")
}

impl Engine {
    /// Hands every record this planner owns in `zone` to external-dns owner `to` and
    /// stops managing the zone (see the module docs). `dry_run`: only plans.
    pub async fn release(
        &self,
        zone: &str,
        account: &str,
        to: &str,
        dry_run: bool,
    ) -> Result<ReleaseOutcome, ReleaseError> {
        check_owner(to)?;
        let z = self.runtime_named(zone, account)?;
        let name = z.target.clone();
        if let Some(r) = z.released().filter(|r| r.owner != to) {
            return Err(ReleaseError::OtherOwner {
                zone: name,
                owner: r.owner,
            });
        }
        let store = match (dry_run, self.store.get()) {
            (true, _) => None,
            (false, Some(s)) => Some(s),
            (false, None) => return Err(ReleaseError::NoStore { zone: name }),
        };
        if !dry_run {
            self.leading(&name)?;
            if self.config.safety.mode == crate::config::SafetyMode::Observe {
                return Err(SyncError::Observing { zone: name }.into());
            }
        }
        // No sync of the zone meanwhile: its plan would fight this one.
        let _sync = z.sync_lock.lock().await;
        let registry = registry_for(&z, to);
        let plan = self.plan_release_now(&z, &registry).await?;
        if !plan.refused.is_empty() {
            return Err(ReleaseError::Refused {
                zone: name,
                refused: plan.refused,
            });
        }
        let mut outcome = ReleaseOutcome {
            target: name.clone(),
            changes: plan.changes,
            released: 0,
            left: Vec::new(),
            already: plan.already,
        };
        let Some(store) = store else {
            return Ok(outcome);
        };
        let rel = Released {
            owner: to.to_string(),
            at: SystemTime::now(),
        };
        store
            .put(&store_key(&name), &Some(rel.clone()))
            .map_err(|source| ReleaseError::Store {
                zone: name.clone(),
                source,
            })?;
        lock(&z.status).released = Some(rel);
        // Only this release's outcomes from here on.
        *lock(&z.states) = StateTable::default();
        *lock(&z.held) = None;
        *lock(&z.approved) = None;
        events::ZoneReleased {
            zone: &name,
            owner: to,
            records: outcome.changes.len(),
        }
        .emit();
        let sent = if outcome.changes.is_empty() {
            Ok(())
        } else {
            let mut summary = Default::default();
            self.apply_plan(&z, outcome.changes.clone(), &mut summary, None)
                .await
                .map(|_| ())
        };
        // What is left, read back; each with its record's last outcome.
        let after = self.plan_release_now(&z, &registry).await;
        let states = std::mem::take(&mut *lock(&z.states));
        // The zone is not planned any more: nothing of the last plans stays.
        *lock(&z.view) = None;
        *lock(&z.serial) = None;
        lock(&z.dirty).clear();
        sent?;
        let mut left = after?.changes;
        for c in &mut left {
            if let Some(s) = states.get(c.change.key()).filter(|s| !s.reason.is_empty()) {
                c.reason = format!("{}; last outcome: {}", c.reason, s.reason);
            }
        }
        outcome.released = outcome
            .changes
            .iter()
            .filter(|c| !left.iter().any(|l| l.change.key() == c.change.key()))
            .count();
        outcome.left = left;
        Ok(outcome)
    }

    /// A fresh read of the zone and the release it needs now.
    async fn plan_release_now(
        &self,
        z: &ZoneRuntime,
        registry: &ExternalDnsConfig,
    ) -> Result<ReleasePlan, SyncError> {
        let name = &z.cfg.name;
        let (current, _) = self.list_zone(&z.target, true, &[]).await?;
        let owner = self.config.owner_id.as_str();
        Ok(Engine::cpu(|| {
            // external-dns's marks read as plain TXT data: the plan looks at them itself.
            let view = ZoneView::read(current, None, None);
            plan_release(name, owner, registry, &view)
        }))
    }

    /// Manages a released zone again: persisted, then a full, fresh sync at once.
    pub fn resume(&self, zone: &str, account: &str) -> Result<Released, ReleaseError> {
        let z = self.runtime_named(zone, account)?;
        let name = z.target.clone();
        let Some(was) = z.released() else {
            return Err(ReleaseError::NotReleased { zone: name });
        };
        let store = self
            .store
            .get()
            .ok_or_else(|| ReleaseError::NoStore { zone: name.clone() })?;
        store
            .put(&store_key(&name), &None::<Released>)
            .map_err(|source| ReleaseError::Store {
                zone: name.clone(),
                source,
            })?;
        {
            let mut st = lock(&z.status);
            st.released = None;
            st.initial_sync_done = false;
        }
        *lock(&z.states) = StateTable::default();
        events::ZoneResumed {
            zone: &name,
            owner: &was.owner,
        }
        .emit();
        z.wants_full
            .store(true, std::sync::atomic::Ordering::SeqCst);
        z.reschedule.notify_one();
        Ok(was)
    }

    /// Reads which zones were released before a restart (call once, after
    /// [`Engine::set_store`] and before the zone loops start). Returns how many are.
    pub fn restore_releases(&self) -> Result<usize, StoreError> {
        let Some(store) = self.store.get() else {
            return Ok(0);
        };
        let mut n = 0;
        for (target, z) in &self.zones {
            let mut found = store.get::<Option<Released>>(&store_key(target))?;
            if found.is_none() && !target.is_shared() {
                found = store.get::<Option<Released>>(&legacy_store_key(&target.zone))?;
            }
            if let Some(Some(r)) = found {
                lock(&z.status).released = Some(r);
                n += 1;
            }
        }
        Ok(n)
    }
}

/// external-dns's naming for the records going to `to`: the zone's configured affixes
/// (`[zones.external_dns]`), else external-dns's defaults.
fn registry_for(z: &Arc<ZoneRuntime>, to: &str) -> ExternalDnsConfig {
    match &z.cfg.external_dns {
        Some(c) => ExternalDnsConfig {
            owner_id: to.to_string(),
            ..c.clone()
        },
        None => ExternalDnsConfig {
            owner_id: to.to_string(),
            txt_prefix: String::new(),
            txt_suffix: String::new(),
            wildcard_replacement: String::new(),
            aes_key_file: None,
        },
    }
}

/// An owner id external-dns could have been given and that its mark can carry.
fn check_owner(to: &str) -> Result<(), ReleaseError> {
    if to.is_empty() {
        return Err(ReleaseError::BadOwner(
            "required: the external-dns --txt-owner-id to hand the records to".into(),
        ));
    }
    if let Some(c) = to
        .chars()
        .find(|c| matches!(c, ',' | '=' | '"' | '\\') || c.is_whitespace() || c.is_control())
    {
        return Err(ReleaseError::BadOwner(format!(
            "{to:?} holds {c:?}, which external-dns's TXT mark cannot carry"
        )));
    }
    Ok(())
}
