//! The planner's status, record states and sync progress in their wire form.
use crate::engine::{Engine, Snapshot, SyncProgress, ZoneSnapshot};
use crate::guard::HeldPlan;
use crate::lease::LeaseStatus;
use crate::source::Labels;
use crate::state::{RecordState, RecordStateKind};
use dnsplane_common::convert::timestamp;
use dnsplane_common::{Name, RecordKey, RecordType, pb};
use std::pin::Pin;
use std::time::{Duration, SystemTime};
use tonic::Status;

/// How long `GetStatus` waits for each applier's own status.
const APPLIER_STATUS_TIMEOUT: Duration = Duration::from_secs(1);

/// The planner's status as `GetStatus` answers it (also the admin port's `/status`):
/// the engine's read model, plus each healthy applier's accounts (quota use, circuit),
/// asked in parallel and bounded so a stuck applier cannot stall it.
pub async fn status(engine: &Engine) -> pb::PlannerStatus {
    let members = engine.pool().members();
    let accounts = futures::future::join_all(members.iter().map(|m| async move {
        if !m.healthy() {
            return Vec::new();
        }
        crate::client::accounts(m, APPLIER_STATUS_TIMEOUT).await
    }))
    .await;
    let mut snapshot = engine.snapshot();
    // The circuits just asked count for this answer's level (and for the next scrape).
    for ((member, app), accounts) in members.iter().zip(&mut snapshot.appliers).zip(&accounts) {
        if member.healthy() && member.addr == app.addr {
            member.set_circuits(accounts.iter().map(|a| (&*a.name, &*a.circuit)));
            app.open_circuits = member.open_circuits();
            member.set_throttled(
                accounts
                    .iter()
                    .filter_map(|a| Some(&*a.pacing.as_ref()?.reason)),
            );
            app.throttled = member.throttled();
        }
    }
    let mut st = status_to_pb(&snapshot);
    for (member, accounts) in st.appliers.iter_mut().zip(accounts) {
        member.accounts = accounts
            .into_iter()
            .map(|a| pb::ApplierAccount {
                name: a.name,
                circuit: a.circuit,
                quota: a.quota,
                pacing: a.pacing,
            })
            .collect();
    }
    st
}

/// The read model in the wire form (without the appliers' accounts).
pub fn status_to_pb(s: &Snapshot) -> pb::PlannerStatus {
    let health = s.health();
    let zones: Vec<pb::ZoneStatus> = s.zones.iter().map(zone_to_pb).collect();
    let appliers = s
        .appliers
        .iter()
        .map(|a| pb::ApplierMember {
            address: a.addr.clone(),
            healthy: a.healthy,
            last_error: a.last_error.clone(),
            zones: zones.iter().filter(|z| z.applier == a.addr).count() as u32,
            accounts: Vec::new(),
        })
        .collect();
    pb::PlannerStatus {
        level: health.level.as_str().into(),
        reason: health.reason(),
        reasons: health
            .reasons
            .iter()
            .map(|r| pb::HealthReason {
                rule: r.rule.id().into(),
                level: r.level.as_str().into(),
                zone: r
                    .zone
                    .as_ref()
                    .map(|t| t.zone.to_string())
                    .unwrap_or_default(),
                account: r
                    .zone
                    .as_ref()
                    .filter(|t| t.is_shared())
                    .map(|t| t.account.to_string())
                    .unwrap_or_default(),
                message: r.message.clone(),
            })
            .collect(),
        safety_mode: s.mode.as_str().into(),
        zones,
        appliers,
        source_errors: s.source_errors.iter().map(source_error_to_pb).collect(),
        source_notices: s.source_notices.iter().map(source_error_to_pb).collect(),
        sources: s
            .sources
            .iter()
            .map(|(name, why)| pb::SourceStatus {
                name: name.clone(),
                ready: why.is_empty(),
                reason: why.join("; "),
                parts: s
                    .source_parts
                    .get(name)
                    .into_iter()
                    .flatten()
                    .map(|p| pb::SourcePart {
                        name: p.name.clone(),
                        ready: p.ready,
                        reason: p.reason.clone(),
                        detail: p.detail.clone(),
                    })
                    .collect(),
            })
            .collect(),
        lease: Some(lease_to_pb(&s.lease)),
    }
}

pub(super) fn lease_to_pb(l: &LeaseStatus) -> pb::LeaseStatus {
    pb::LeaseStatus {
        role: l.role.as_str().into(),
        holder: l.holder.clone().unwrap_or_default(),
        backend: l.backend.into(),
        location: l.location.clone(),
        since: Some(timestamp(l.since)),
        identity: l.identity.clone(),
        epoch: l.epoch,
        last_error: l.last_error.clone(),
        fenced: l
            .fenced
            .as_ref()
            .map(|f| f.message.clone())
            .unwrap_or_default(),
    }
}

pub(super) fn zone_to_pb(z: &ZoneSnapshot) -> pb::ZoneStatus {
    let st = &z.status;
    pb::ZoneStatus {
        zone: z.name.to_string(),
        account: z.account.clone(),
        policy: z.policy.as_str().into(),
        records_by_state: z
            .records
            .iter()
            .map(|(k, n)| (k.as_str().to_string(), *n))
            .collect(),
        last_sync: st.last_sync.map(timestamp),
        last_success: st.last_success.map(timestamp),
        last_error: st.last_error.clone(),
        initial_sync_done: st.initial_sync_done,
        desired_records: z.desired_records as u32,
        observed_records: z.observed_records as u32,
        syncing: st.syncing,
        applier: z.applier.clone().unwrap_or_default(),
        initial_sync_started: st.sync_started.map(timestamp),
        next_retry: z.next_retry.map(timestamp),
        state: if st.released.is_some() {
            "RELEASED"
        } else if z.held.is_some() {
            "HELD"
        } else {
            "OK"
        }
        .into(),
        held: z
            .held
            .as_ref()
            .map(|(h, since)| held_to_pb(h, Some(*since))),
        released: st.released.as_ref().map(|r| pb::ZoneRelease {
            external_dns_owner: r.owner.clone(),
            at: Some(timestamp(r.at)),
        }),
        guard_window_changes: st.guard_window as u32,
    }
}

pub(super) fn held_to_pb(h: &HeldPlan, since: Option<SystemTime>) -> pb::HeldPlan {
    pb::HeldPlan {
        digest: h.digest.clone(),
        creates: h.creates as u32,
        deletes: h.deletes as u32,
        updates: h.updates as u32,
        apex_ns: h.apex_ns as u32,
        owned_records: h.owned as u32,
        reason: h.reason.clone(),
        since: since.map(timestamp),
    }
}

/// The wire form of a record state kind.
pub fn kind_to_pb(k: RecordStateKind) -> pb::RecordStateKind {
    match k {
        RecordStateKind::Pending => pb::RecordStateKind::Pending,
        RecordStateKind::InFlight => pb::RecordStateKind::InFlight,
        RecordStateKind::Converged => pb::RecordStateKind::Converged,
        RecordStateKind::Conflict => pb::RecordStateKind::Conflict,
        RecordStateKind::Invalid => pb::RecordStateKind::Invalid,
        RecordStateKind::Failed => pb::RecordStateKind::Failed,
        RecordStateKind::Deferred => pb::RecordStateKind::Deferred,
        RecordStateKind::Rejected => pb::RecordStateKind::Rejected,
        RecordStateKind::Held => pb::RecordStateKind::Held,
        RecordStateKind::NotForTarget => pb::RecordStateKind::NotForTarget,
    }
}

/// The domain kind of a wire one (`None` for unspecified or unknown values).
pub fn kind_from_pb(k: i32) -> Option<RecordStateKind> {
    Some(match pb::RecordStateKind::try_from(k).ok()? {
        pb::RecordStateKind::Unspecified => return None,
        pb::RecordStateKind::Pending => RecordStateKind::Pending,
        pb::RecordStateKind::InFlight => RecordStateKind::InFlight,
        pb::RecordStateKind::Converged => RecordStateKind::Converged,
        pb::RecordStateKind::Conflict => RecordStateKind::Conflict,
        pb::RecordStateKind::Invalid => RecordStateKind::Invalid,
        pb::RecordStateKind::Failed => RecordStateKind::Failed,
        pb::RecordStateKind::Deferred => RecordStateKind::Deferred,
        pb::RecordStateKind::Rejected => RecordStateKind::Rejected,
        pb::RecordStateKind::Held => RecordStateKind::Held,
        pb::RecordStateKind::NotForTarget => RecordStateKind::NotForTarget,
    })
}

/// State names for CLI output (`converged`, `conflict`, ...).
pub fn kind_name(k: i32) -> &'static str {
    kind_from_pb(k).map_or("unspecified", RecordStateKind::as_str)
}

/// `labels`: those of the desired record, when it has any.
pub(super) fn record_state_to_pb(
    key: &RecordKey,
    s: &RecordState,
    labels: Option<&Labels>,
) -> pb::RecordState {
    pb::RecordState {
        labels: labels.map(|l| l.to_map()).unwrap_or_default(),
        key: Some(key.into()),
        state: kind_to_pb(s.kind) as i32,
        desired: s.desired.as_ref().map(Into::into),
        observed: s.observed.as_ref().map(Into::into),
        observed_owner: s.observed_owner.clone().unwrap_or_default(),
        conflict_reason: pb::ConflictReason::from(s.conflict_reason) as i32,
        reason: s.reason.clone(),
        attempts: s.attempts,
        last_error: s.last_error.clone(),
        next_retry: s.next_retry.map(timestamp),
        last_change_id: s.last_change_id.clone(),
        updated: s.updated.map(timestamp),
        account: String::new(),
        sources: Vec::new(),
    }
}

fn source_error_to_pb(e: &crate::source::SourceError) -> pb::SourceError {
    pb::SourceError {
        source: e.source.clone(),
        location: e.location.clone(),
        record: e.record.clone(),
        message: e.message.clone(),
    }
}

pub(super) fn progress_to_pb(p: &SyncProgress) -> pb::SyncProgress {
    pb::SyncProgress {
        zone: p.zone.zone.to_string(),
        account: if p.zone.is_shared() {
            p.zone.account.to_string()
        } else {
            String::new()
        },
        phase: p.phase.as_str().into(),
        changes_planned: p.summary.planned as u32,
        changes_done: p.summary.done as u32,
        outcomes: p
            .summary
            .outcomes
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), *v))
            .collect(),
        error: p.error.clone(),
    }
}

pub(super) type SyncStream =
    Pin<Box<dyn futures::Stream<Item = Result<pb::SyncProgress, Status>> + Send>>;

/// An opaque-enough page token: the last key returned.
/// A page token: the last key listed, and the account of its target (every token
/// names it; one without, from before targets, means the zone's only target).
pub(super) fn token(account: &str, k: &RecordKey) -> String {
    format!("@{account}|{}|{}|{}|{}", k.zone, k.name, k.rtype, k.set)
}

pub(super) fn parse_token(t: &str) -> Option<(String, RecordKey)> {
    let (account, t) = match t.strip_prefix('@') {
        Some(rest) => {
            let (account, rest) = rest.split_once('|')?;
            (account.to_string(), rest)
        }
        None => (String::new(), t),
    };
    // The set identifier last: it may hold a `|` itself.
    let mut it = t.splitn(4, '|');
    let zone = Name::parse(it.next()?).ok()?;
    let name = Name::parse(it.next()?).ok()?;
    let rtype = RecordType::parse(it.next()?).ok()?;
    let set = dnsplane_common::SetId::new(it.next().unwrap_or("")).ok()?;
    Some((account, RecordKey::new(zone, name, rtype).in_set(set)))
}
