//! Reading a zone through its applier and planning it: the planning function every
//! sync runs ([`Engine::plan_scope`]) and the `Plan` RPC's dry run
//! ([`Engine::preview`]), which stops before folding or sending.
use super::sync::{Preview, Scope, SyncError};
use super::{Engine, ZoneRuntime, lock};
use crate::client;
use crate::config::ZoneConfig;
use crate::desired::DesiredRecord;
use crate::external_dns::{Format, Registry};
use crate::observed::{ViewBuilder, ZoneView};
use crate::ownership;
use crate::plan::{ZonePlan, plan_zone};
use crate::state::RecordState;
use crate::target::Target;
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::SystemTime;

/// The desired records of one zone a sync plans with: all of them (borrowed from the
/// index) or those at some names (copied out).
enum DesiredScope<'a> {
    Zone(&'a BTreeMap<RecordKey, DesiredRecord>),
    Names(BTreeMap<RecordKey, DesiredRecord>),
}

impl DesiredScope<'_> {
    fn records(&self) -> &BTreeMap<RecordKey, DesiredRecord> {
        match self {
            DesiredScope::Zone(d) => d,
            DesiredScope::Names(d) => d,
        }
    }
}

/// What a whole-zone plan is made against: a listing just read (placed as it arrived,
/// with the zone's serial), or the view kept from before when the serial says nothing
/// changed.
enum Basis<'c> {
    Listed(ViewBuilder<'c>, u64),
    Kept(Arc<ZoneView>),
}

/// No desired records (a zone no source has named yet).
static EMPTY: BTreeMap<RecordKey, DesiredRecord> = BTreeMap::new();

impl Engine {
    /// Reads what `scope` needs and plans it: the planning function of every sync and
    /// of the dry run. `fold` sees the desired records, the view planned against and
    /// the plan, under the desired-state read lock, and may cut the plan down (a sync
    /// folds it into the state table; the dry run only looks).
    pub(super) async fn plan_scope<R>(
        &self,
        zone: &Arc<ZoneRuntime>,
        scope: &Scope,
        fresh: bool,
        fold: impl FnOnce(&BTreeMap<RecordKey, DesiredRecord>, &ZoneView, &mut ZonePlan) -> R,
    ) -> Result<(ZonePlan, R), SyncError> {
        let name = &zone.cfg.name;
        match scope {
            Scope::Zone => {
                // A zone whose serial has not moved since it was read (own writes
                // included) is planned against the view kept here: one cheap call,
                // nothing listed. `fresh` always lists.
                let kept = lock(&zone.view).clone();
                let known = *lock(&zone.serial);
                let mut builder = ViewBuilder::new(zone.cfg.external_dns.as_ref());
                let progress = super::turns::ReadProgress::new();
                let mut sink = |page: Vec<RRSet>| {
                    progress.tick();
                    // Placed against the desired records as it arrives (sharing their
                    // storage), unless a large update holds the index: then at the end.
                    let desired = zone.desired.try_read().ok();
                    let records = desired.as_ref().map(|d| d.zone(name).unwrap_or(&EMPTY));
                    builder.add(page, records);
                };
                // `Err(view)`: the serial has not moved, the kept view stands.
                let listing = async {
                    Ok::<_, SyncError>(match (kept, known) {
                        (Some(view), Some(serial)) if !fresh => self
                            .list_zone_unless(&zone.target, serial, &mut sink)
                            .await?
                            .ok_or(view),
                        _ => Ok(self.list_zone_into(&zone.target, fresh, &mut sink).await?),
                    })
                };
                // The turn is held until the view is built, not through planning: see
                // `turns`.
                let (listed, reading) = self.in_turn(&progress, listing).await;
                let basis = match listed? {
                    Ok(serial) => Basis::Listed(builder, serial),
                    Err(view) => Basis::Kept(view),
                };
                // Another target's view of the zone, for this one to hold what they hold
                // alike once (taken before the desired index: one lock at a time).
                let sibling = match &basis {
                    Basis::Listed(..) => self.sibling_view(zone),
                    Basis::Kept(_) => None,
                };
                let (plan, r) = Engine::cpu(|| {
                    let desired = zone.desired();
                    let zone_desired = DesiredScope::Zone(desired.zone(name).unwrap_or(&EMPTY));
                    let view = match basis {
                        Basis::Listed(builder, serial) => {
                            *lock(&zone.serial) = (serial != 0).then_some(serial);
                            let view = Arc::new(
                                builder.finish(Some(zone_desired.records()), sibling.as_deref()),
                            );
                            *lock(&zone.view) = Some(view.clone());
                            view
                        }
                        Basis::Kept(view) => view,
                    };
                    drop(reading);
                    let mut plan = plan_zone(
                        &zone.cfg,
                        &self.config.owner_id,
                        zone_desired.records(),
                        &view,
                    );
                    let r = fold(zone_desired.records(), &view, &mut plan);
                    drop(desired);
                    (plan, r)
                });
                Ok((plan, r))
            }
            Scope::Names(names) => {
                let known = lock(&zone.view).as_ref().map(|v| v.subset(name, names));
                let view = match known {
                    Some(v) if !fresh => v,
                    _ => {
                        let query = with_owner_names(&zone.cfg, names);
                        // Past a few requests' worth of names, one read of the zone
                        // costs the provider less than many targeted ones.
                        let query = if query.len() > client::LIST_NAMES_PER_REQUEST {
                            Vec::new()
                        } else {
                            query
                        };
                        // Only the names in scope are planned: a whole-zone read is
                        // cut down to them (a record outside the scope must not look
                        // undesired).
                        let listed = self.list_zone(&zone.target, true, &query).await?.0;
                        let read = ZoneView::read(listed, None, zone.cfg.external_dns.as_ref())
                            .subset(name, names);
                        if let Some(v) = lock(&zone.view).as_mut() {
                            Arc::make_mut(v).replace_names(name, names, read.subset(name, names));
                        }
                        read
                    }
                };
                Ok(Engine::cpu(|| {
                    let scoped = DesiredScope::Names(zone.desired().at_names(name, names));
                    let mut plan =
                        plan_zone(&zone.cfg, &self.config.owner_id, scoped.records(), &view);
                    let r = fold(scoped.records(), &view, &mut plan);
                    (plan, r)
                }))
            }
        }
    }

    /// The `Plan` dry run of `zone`: a fresh plan of the whole zone against a read
    /// through the applier (`fresh`: bypassing its cache), with the changes a sync
    /// would withhold now set apart. Changes nothing.
    pub async fn preview(&self, zone: &Target, fresh: bool) -> Result<Preview, SyncError> {
        self.preview_against(zone, fresh, None).await
    }

    /// [`preview`](Self::preview) of a proposed desired state of `zone` (`None`: the
    /// one in force): what a sync would do if `proposed` were the zone's desired
    /// records (`dnsplane plan --desired`). Nothing is kept of it.
    pub async fn preview_against(
        &self,
        zone: &Target,
        fresh: bool,
        proposed: Option<&BTreeMap<RecordKey, DesiredRecord>>,
    ) -> Result<Preview, SyncError> {
        let z = self.zone_or_err(zone)?;
        z.not_released()?;
        let (current, _) = self.list_zone(zone, fresh, &[]).await?;
        let desired = z.desired();
        let zone_desired = match proposed {
            Some(p) => p,
            None => desired.zone(&zone.zone).unwrap_or(&EMPTY),
        };
        let view = ZoneView::read(current, None, z.cfg.external_dns.as_ref());
        let mut plan = plan_zone(&z.cfg, &self.config.owner_id, zone_desired, &view);
        let withheld: Vec<(RecordKey, RecordState)> = {
            let states = lock(&z.states);
            states
                .withheld(&plan, zone_desired, SystemTime::now())
                .into_iter()
                .map(|(k, s)| (k.clone(), s.clone()))
                .collect()
        };
        // What this target's account cannot hold is shown as such, not as a change.
        let mut withheld = withheld;
        for (key, desired, why) in self.take_unholdable(&z, &mut plan) {
            let mut s = RecordState::new(
                crate::state::RecordStateKind::NotForTarget,
                SystemTime::now(),
            );
            s.desired = desired;
            s.reason = why;
            withheld.push((key, s));
        }
        let held: BTreeSet<&RecordKey> = withheld.iter().map(|(k, _)| k).collect();
        plan.changes.retain(|c| !held.contains(c.change.key()));
        drop(held);
        let items = crate::guard::weighed(&self.config.safety, &zone.zone, &plan.changes);
        // Weighed with what the guard let through lately, as a sync would weigh it.
        let remembered = {
            let mut w = lock(&z.window);
            w.expire(self.config.safety.window, SystemTime::now());
            w.tally(&items)
        };
        let guarded = crate::guard::check(
            &self.config.safety,
            items,
            || view.owned_by(&self.config.owner_id),
            remembered,
        )
        .filter(|h| lock(&z.approved).as_deref() != Some(h.digest.as_str()));
        Ok(Preview {
            plan,
            withheld,
            held: guarded,
        })
    }

    /// Reads `zone` through its applier (all pages); only `names` when not empty. With
    /// the zone's serial (0: the provider has none).
    pub async fn list_zone(
        &self,
        zone: &Target,
        fresh: bool,
        names: &[Name],
    ) -> Result<(Vec<RRSet>, u64), SyncError> {
        let z = self.zone_or_err(zone)?;
        let member = self.member_for(zone)?;
        client::list(&member, &z.cfg.account, &zone.zone, fresh, names)
            .await
            .map_err(|e| self.list_failed(zone, &member, e))
    }

    /// Reads `zone` whole, each page handed to `sink` as it arrives; the zone's serial.
    async fn list_zone_into(
        &self,
        zone: &Target,
        fresh: bool,
        sink: &mut client::PageSink<'_>,
    ) -> Result<u64, SyncError> {
        let z = self.zone_or_err(zone)?;
        let member = self.member_for(zone)?;
        client::list_into(&member, &z.cfg.account, &zone.zone, fresh, sink)
            .await
            .map_err(|e| self.list_failed(zone, &member, e))
    }

    /// [`Engine::list_zone_into`] unless the zone's serial is still `known`: then
    /// `None`, and `sink` is given nothing.
    async fn list_zone_unless(
        &self,
        zone: &Target,
        known: u64,
        sink: &mut client::PageSink<'_>,
    ) -> Result<Option<u64>, SyncError> {
        let z = self.zone_or_err(zone)?;
        let member = self.member_for(zone)?;
        client::list_unless(&member, &z.cfg.account, &zone.zone, known, sink)
            .await
            .map_err(|e| self.list_failed(zone, &member, e))
    }

    fn list_failed(
        &self,
        zone: &Target,
        member: &crate::pool::Member,
        e: client::ApplierCallError,
    ) -> SyncError {
        if e.is_transport() {
            self.pool.mark_failed(member, &e.message);
        }
        SyncError::List {
            zone: zone.clone(),
            source: e,
        }
    }
}

/// `names` plus the names of their ownership records (external-dns's too, in a zone
/// with `[zones.external_dns]`): what a targeted read fetches.
fn with_owner_names(zone: &ZoneConfig, names: &BTreeSet<Name>) -> Vec<Name> {
    let mut query: BTreeSet<Name> = names.clone();
    let registry = zone.external_dns.as_ref().map(Registry::new);
    for n in names {
        for t in RecordType::ALL {
            let key = RecordKey::new(zone.name.clone(), n.clone(), t);
            if let Some(k) = ownership::owner_record_key(&key) {
                query.insert(k.name);
            }
            for format in [Format::New, Format::Old] {
                if let Some(txt) = registry.as_ref().and_then(|r| r.txt_name(&key, format)) {
                    query.insert(txt);
                }
            }
        }
    }
    query.into_iter().collect()
}
