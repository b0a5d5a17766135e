//! The `dnsplane.v1.Planner` gRPC service: decodes requests into domain values, asks
//! the [`Engine`], and encodes its answers. The only module that builds or reads the
//! planner's own proto messages (the applier's are in [`crate::client`]).
use crate::config::ZoneConfig;
use crate::desired::DesiredIndex;
use crate::engine::{
    ApproveError, Engine, Patch, RecordStatesQuery, Scope, Snapshot, SyncProgress, ZoneSnapshot,
};
use crate::guard::HeldPlan;
use crate::lease::LeaseStatus;
use crate::source::{DesiredEntry, Origin};
use crate::state::{RecordState, RecordStateKind};
use crate::store::StoreError;
use dnsplane_common::convert::{FieldError, timestamp};
use dnsplane_common::grpc::invalid_argument;
use dnsplane_common::{Name, RecordKey, RecordType, pb, rdata, wire};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

/// Page size limits for record-state listings.
const DEFAULT_PAGE: usize = 500;
const MAX_PAGE: usize = 5_000;
/// Page size limits for plans.
const DEFAULT_PLAN_PAGE: usize = 1_000;
const MAX_PLAN_PAGE: usize = 10_000;
/// How long `GetStatus` waits for each applier's own status.
const APPLIER_STATUS_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct PlannerService {
    engine: Arc<Engine>,
}

impl PlannerService {
    pub fn new(engine: Arc<Engine>) -> Self {
        PlannerService { engine }
    }

    /// A whole push (`PutDesired`, or a completed `PutDesiredStream`): validated, then
    /// persisted and indexed, all off the async runtime ([`Engine::cpu`]).
    fn push(&self, req: pb::PutDesiredRequest) -> Result<Response<pb::PutDesiredResponse>, Status> {
        let entries = Engine::cpu(|| validate_push(&self.engine.config().zones, &req))
            .map_err(|errors| invalid_argument(&errors))?;
        let accepted = entries.len() as u32;
        // Persisted before it is acknowledged: a push that cannot be stored changes
        // nothing, and one that was answered survives a restart.
        self.engine
            .put_source(&format!("push:{}", req.source), entries)
            .map_err(|e| {
                Status::unavailable(format!(
                    "cannot persist the push ({e}); nothing changed, retry later"
                ))
            })?;
        Ok(Response::new(pb::PutDesiredResponse { accepted }))
    }

    /// The zones a request names (all when empty), or INVALID_ARGUMENT for unknown ones.
    fn zones(&self, names: &[String]) -> Result<Vec<Name>, Status> {
        if names.is_empty() {
            return Ok(self.engine.zone_names().cloned().collect());
        }
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (i, n) in names.iter().enumerate() {
            match self.engine.zone_name(n) {
                Some(z) => out.push(z.clone()),
                None => errors.push(FieldError::new(
                    format!("zones[{i}]"),
                    format!("{n:?} is not a configured zone"),
                )),
            }
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(invalid_argument(&errors))
        }
    }
}

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
    let snapshot = engine.snapshot();
    let mut st = status_to_pb(&snapshot);
    for (member, accounts) in st.appliers.iter_mut().zip(accounts) {
        member.accounts = accounts
            .into_iter()
            .map(|a| pb::ApplierAccount {
                name: a.name,
                circuit: a.circuit,
                quota: a.quota,
            })
            .collect();
    }
    st
}

/// The read model in the wire form (without the appliers' accounts).
pub fn status_to_pb(s: &Snapshot) -> pb::PlannerStatus {
    let (level, reason) = s.health();
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
        level: level.as_str().into(),
        reason,
        zones,
        appliers,
        source_errors: s
            .source_errors
            .iter()
            .map(|e| pb::SourceError {
                source: e.source.clone(),
                location: e.location.clone(),
                record: e.record.clone(),
                message: e.message.clone(),
            })
            .collect(),
        sources: s
            .sources
            .iter()
            .map(|(name, why)| pb::SourceStatus {
                name: name.clone(),
                ready: why.is_empty(),
                reason: why.join("; "),
            })
            .collect(),
        lease: Some(lease_to_pb(&s.lease)),
    }
}

fn lease_to_pb(l: &LeaseStatus) -> pb::LeaseStatus {
    pb::LeaseStatus {
        role: l.role.as_str().into(),
        holder: l.holder.clone().unwrap_or_default(),
        backend: l.backend.into(),
        location: l.location.clone(),
        since: Some(timestamp(l.since)),
        identity: l.identity.clone(),
        epoch: l.epoch,
        last_error: l.last_error.clone(),
    }
}

fn zone_to_pb(z: &ZoneSnapshot) -> pb::ZoneStatus {
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
        state: if z.held.is_some() { "HELD" } else { "OK" }.into(),
        held: z
            .held
            .as_ref()
            .map(|(h, since)| held_to_pb(h, Some(*since))),
    }
}

fn held_to_pb(h: &HeldPlan, since: Option<SystemTime>) -> pb::HeldPlan {
    pb::HeldPlan {
        digest: h.digest.clone(),
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
    })
}

/// State names for CLI output (`converged`, `conflict`, ...).
pub fn kind_name(k: i32) -> &'static str {
    kind_from_pb(k).map_or("unspecified", RecordStateKind::as_str)
}

fn record_state_to_pb(key: &RecordKey, s: &RecordState) -> pb::RecordState {
    pb::RecordState {
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
    }
}

fn progress_to_pb(p: &SyncProgress) -> pb::SyncProgress {
    pb::SyncProgress {
        zone: p.zone.to_string(),
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

type SyncStream = Pin<Box<dyn futures::Stream<Item = Result<pb::SyncProgress, Status>> + Send>>;

#[tonic::async_trait]
impl pb::planner_server::Planner for PlannerService {
    async fn plan(
        &self,
        request: Request<pb::PlanRequest>,
    ) -> Result<Response<pb::PlanResponse>, Status> {
        let req = request.into_inner();
        let zones = self.zones(&req.zones)?;
        let page_size = match req.page_size as usize {
            0 => DEFAULT_PLAN_PAGE,
            n => n.min(MAX_PLAN_PAGE),
        };
        // The token is "<zone index>:<items of that zone already returned>".
        let (first_zone, mut skip) = if req.page_token.is_empty() {
            (0, 0)
        } else {
            req.page_token
                .split_once(':')
                .and_then(|(z, o)| Some((z.parse::<usize>().ok()?, o.parse::<usize>().ok()?)))
                .ok_or_else(|| FieldError::new("page_token", "not a token this server issued"))?
        };
        let mut out = Vec::new();
        let mut room = page_size;
        let mut next_page_token = String::new();
        for (zi, zone) in zones.iter().enumerate().skip(first_zone) {
            let mut zp = pb::ZonePlan {
                zone: zone.to_string(),
                ..Default::default()
            };
            match self.engine.preview(zone, req.fresh).await {
                Err(e) => zp.error = e.to_string(),
                Ok(preview) => {
                    zp.held = preview.held.as_ref().map(|h| held_to_pb(h, None));
                    let plan = &preview.plan;
                    let total = plan.changes.len() + plan.blocked.len() + preview.withheld.len();
                    let changes = plan.changes.iter().map(|c| {
                        PlanItem::Change(pb::PlannedChange {
                            change: Some((&c.change).into()),
                            reason: c.reason.clone(),
                        })
                    });
                    let blocked = plan.blocked.iter().map(|b| {
                        PlanItem::Blocked(Box::new(pb::RecordState {
                            key: Some((&b.key).into()),
                            state: pb::RecordStateKind::Conflict as i32,
                            desired: b.desired.as_ref().map(Into::into),
                            observed: b.observed.as_ref().map(Into::into),
                            observed_owner: b.observed_owner.clone().unwrap_or_default(),
                            conflict_reason: pb::ConflictReason::from(b.reason) as i32,
                            reason: b.message.clone(),
                            ..Default::default()
                        }))
                    });
                    let withheld = preview
                        .withheld
                        .iter()
                        .map(|(k, s)| PlanItem::Blocked(Box::new(record_state_to_pb(k, s))));
                    let taken: Vec<PlanItem> = changes
                        .chain(blocked)
                        .chain(withheld)
                        .skip(skip)
                        .take(room)
                        .collect();
                    room -= taken.len();
                    for item in taken {
                        match item {
                            PlanItem::Change(c) => zp.changes.push(c),
                            PlanItem::Blocked(b) => zp.blocked.push(*b),
                        }
                    }
                    let returned = skip + zp.changes.len() + zp.blocked.len();
                    skip = 0;
                    if returned < total {
                        next_page_token = format!("{zi}:{returned}");
                        out.push(zp);
                        break;
                    }
                }
            }
            out.push(zp);
            if room == 0 {
                if zi + 1 < zones.len() {
                    next_page_token = format!("{}:0", zi + 1);
                }
                break;
            }
        }
        Ok(Response::new(pb::PlanResponse {
            zones: out,
            next_page_token,
        }))
    }

    type SyncStream = SyncStream;

    async fn sync(
        &self,
        request: Request<pb::SyncRequest>,
    ) -> Result<Response<SyncStream>, Status> {
        let req = request.into_inner();
        let zones = self.zones(&req.zones)?;
        let (tx, rx) = mpsc::channel(64);
        for zone in zones {
            let (engine, tx) = (self.engine.clone(), tx.clone());
            let fresh = req.fresh;
            self.engine.spawn(async move {
                let (ptx, mut prx) = mpsc::channel::<SyncProgress>(16);
                let forward = async {
                    while let Some(p) = prx.recv().await {
                        if tx.send(progress_to_pb(&p)).await.is_err() {
                            // The caller went away; the sync goes on.
                            while prx.recv().await.is_some() {}
                        }
                    }
                };
                let run = async {
                    // Errors are reported through the progress stream itself.
                    let _ = engine.sync(&zone, &Scope::Zone, fresh, Some(&ptx)).await;
                    drop(ptx);
                };
                tokio::join!(run, forward);
            });
        }
        drop(tx);
        let stream = futures::StreamExt::map(ReceiverStream::new(rx), Ok);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn get_status(
        &self,
        _request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::PlannerStatus>, Status> {
        Ok(Response::new(status(&self.engine).await))
    }

    async fn list_record_states(
        &self,
        request: Request<pb::ListRecordStatesRequest>,
    ) -> Result<Response<pb::ListRecordStatesResponse>, Status> {
        let req = request.into_inner();
        let zones = if req.zone.is_empty() {
            Vec::new()
        } else {
            self.zones(std::slice::from_ref(&req.zone)).map_err(|_| {
                FieldError::new("zone", format!("{:?} is not a configured zone", req.zone))
            })?
        };
        let mut states = Vec::new();
        for (i, s) in req.states.iter().enumerate() {
            match kind_from_pb(*s) {
                Some(k) => states.push(k),
                None => {
                    return Err(FieldError::new(
                        format!("states[{i}]"),
                        format!("unknown state {s}"),
                    )
                    .into());
                }
            }
        }
        let page_size = match req.page_size as usize {
            0 => DEFAULT_PAGE,
            n => n.min(MAX_PAGE),
        };
        let after =
            if req.page_token.is_empty() {
                None
            } else {
                Some(parse_token(&req.page_token).ok_or_else(|| {
                    FieldError::new("page_token", "not a token this server issued")
                })?)
            };
        let page = Engine::cpu(|| {
            self.engine.record_states(&RecordStatesQuery {
                zones,
                states,
                include_converged: req.include_converged,
                after,
                page_size,
            })
        });
        Ok(Response::new(pb::ListRecordStatesResponse {
            records: page
                .records
                .iter()
                .map(|(k, s)| record_state_to_pb(k, s))
                .collect(),
            next_page_token: page.next.as_ref().map(token).unwrap_or_default(),
        }))
    }

    async fn put_desired(
        &self,
        request: Request<pb::PutDesiredRequest>,
    ) -> Result<Response<pb::PutDesiredResponse>, Status> {
        self.push(request.into_inner())
    }

    async fn put_desired_stream(
        &self,
        request: Request<tonic::Streaming<pb::PutDesiredChunk>>,
    ) -> Result<Response<pb::PutDesiredResponse>, Status> {
        let mut stream = request.into_inner();
        let mut whole = pb::PutDesiredRequest::default();
        let mut last = false;
        let mut chunks = 0usize;
        // A stream that breaks (`Err`) returns here: nothing was applied. One that is
        // cancelled ends like a complete one (that is how tonic reads a cancelled
        // request stream), hence the explicit `last`.
        while let Some(chunk) = stream.message().await? {
            if last {
                return Err(FieldError::new(
                    "last",
                    format!("chunk {chunks} follows the chunk marked last; nothing changed"),
                )
                .into());
            }
            if chunks == 0 {
                whole.source = chunk.source;
            } else if !chunk.source.is_empty() && chunk.source != whole.source {
                return Err(FieldError::new(
                    "source",
                    format!(
                        "chunk {chunks} names source {:?}, the stream's first chunk {:?}; one stream pushes one source",
                        chunk.source, whole.source
                    ),
                )
                .into());
            }
            whole.records.extend(chunk.records);
            last = chunk.last;
            chunks += 1;
        }
        if chunks == 0 {
            return Err(FieldError::new(
                "source",
                "the stream ended before its first chunk; nothing changed",
            )
            .into());
        }
        if !last {
            return Err(FieldError::new(
                "last",
                format!(
                    "the stream ended after {chunks} chunk(s) without one marked last (cancelled?); nothing changed"
                ),
            )
            .into());
        }
        self.push(whole)
    }

    async fn patch_desired(
        &self,
        request: Request<pb::PatchDesiredRequest>,
    ) -> Result<Response<pb::PatchDesiredResponse>, Status> {
        let req = request.into_inner();
        let zones = &self.engine.config().zones;
        let patch = Engine::cpu(|| validate_patch(&req)).map_err(|e| invalid_argument(&e))?;
        let upserted = patch.upserts.len() as u32;
        let source = &req.source;
        let done = self
            .engine
            .patch_source(&format!("push:{source}"), patch, |merged| {
                let errors = cross_check(zones, source, merged);
                if errors.is_empty() {
                    Ok(())
                } else {
                    Err(PatchFailure::Invalid(errors))
                }
            })
            .map_err(|e| match e {
                PatchFailure::Invalid(errors) => invalid_argument(&errors),
                PatchFailure::Store(e) => Status::unavailable(format!(
                    "cannot persist the patch ({e}); nothing changed, retry later"
                )),
            })?;
        Ok(Response::new(pb::PatchDesiredResponse {
            upserted,
            deleted: done.deleted as u32,
            records: done.records as u32,
        }))
    }

    async fn approve(
        &self,
        request: Request<pb::ApproveRequest>,
    ) -> Result<Response<pb::ApproveResponse>, Status> {
        let req = request.into_inner();
        if req.zone.is_empty() {
            return Err(FieldError::new("zone", "required").into());
        }
        if req.digest.is_empty() {
            return Err(FieldError::new(
                "digest",
                "required: the held plan's digest, as GetStatus shows it (zones[].held.digest)",
            )
            .into());
        }
        match self.engine.approve(&req.zone, &req.digest) {
            Ok(plan) => Ok(Response::new(pb::ApproveResponse {
                approved: Some(held_to_pb(&plan, None)),
            })),
            Err(e @ ApproveError::UnknownZone { .. }) => Err(Status::not_found(e.to_string())),
            Err(e) => Err(Status::failed_precondition(e.to_string())),
        }
    }
}

/// One entry of a plan page: a change, or a record held back.
enum PlanItem {
    Change(pb::PlannedChange),
    Blocked(Box<pb::RecordState>),
}

/// Why a patch was refused.
enum PatchFailure {
    Invalid(Vec<FieldError>),
    Store(StoreError),
}

impl From<StoreError> for PatchFailure {
    fn from(e: StoreError) -> Self {
        PatchFailure::Store(e)
    }
}

/// The PutDesired validator: a request into desired entries, or every problem with
/// the field it is in (`records[1].values[0]: …`). All or nothing: cross-record checks
/// (zones, duplicates, CNAME clashes) run on this push alone, so a bad push is refused
/// whole and the previous one stays in force. The same record rules as every source:
/// normalised names, canonical values, and what one DNS answer can carry.
pub fn validate_push(
    zones: &[ZoneConfig],
    req: &pb::PutDesiredRequest,
) -> Result<Vec<DesiredEntry>, Vec<FieldError>> {
    check_source(&req.source)?;
    let mut errors = Vec::new();
    let mut entries = Vec::with_capacity(req.records.len());
    for (i, r) in req.records.iter().enumerate() {
        match push_entry(&req.source, "records", i, r) {
            Ok(e) => entries.push(e),
            Err(mut e) => errors.append(&mut e),
        }
    }
    errors.extend(cross_check(zones, &req.source, &entries));
    if errors.is_empty() {
        Ok(entries)
    } else {
        Err(errors)
    }
}

fn check_source(source: &str) -> Result<(), Vec<FieldError>> {
    if source.is_empty() || source.len() > 128 {
        return Err(vec![FieldError::new(
            "source",
            "must be 1-128 characters naming the pushing program",
        )]);
    }
    Ok(())
}

/// The checks across the records of one source's whole push (zones, duplicates,
/// CNAME clashes), each error at its record's field.
fn cross_check(zones: &[ZoneConfig], source: &str, entries: &[DesiredEntry]) -> Vec<FieldError> {
    let mut check = DesiredIndex::new(zones);
    check.update_source(source, entries, Vec::new());
    check
        .errors()
        .into_iter()
        .map(|e| FieldError::new(e.location.clone(), format!("{}: {}", e.record, e.message)))
        .collect()
}

/// The PatchDesired validator, for what can be checked on the patch alone: each
/// upsert as PutDesired checks a record, each delete's name and type, and each key
/// named once. The checks across the source's resulting records follow in the engine.
fn validate_patch(req: &pb::PatchDesiredRequest) -> Result<Patch, Vec<FieldError>> {
    check_source(&req.source)?;
    let mut errors = Vec::new();
    let mut patch = Patch::default();
    let mut seen: std::collections::HashMap<(Name, RecordType), String> =
        std::collections::HashMap::new();
    let mut once = |name: &Name, rtype: RecordType, field: String, errors: &mut Vec<FieldError>| {
        if let Some(first) = seen.get(&(name.clone(), rtype)) {
            errors.push(FieldError::new(
                field,
                format!("{name} {rtype} is already patched by {first}; name each record once"),
            ));
        } else {
            seen.insert((name.clone(), rtype), field);
        }
    };
    for (i, r) in req.upserts.iter().enumerate() {
        match push_entry(&req.source, "upserts", i, r) {
            Ok(e) => {
                once(&e.name, e.rtype, format!("upserts[{i}]"), &mut errors);
                patch.upserts.push(e);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    for (i, d) in req.deletes.iter().enumerate() {
        let name = Name::parse(&d.name)
            .map_err(|e| errors.push(FieldError::new(format!("deletes[{i}].name"), e.to_string())));
        let rtype = RecordType::parse(&d.r#type)
            .map_err(|e| errors.push(FieldError::new(format!("deletes[{i}].type"), e.to_string())));
        if let (Ok(name), Ok(rtype)) = (name, rtype) {
            once(&name, rtype, format!("deletes[{i}]"), &mut errors);
            patch.deletes.push((name, rtype));
        }
    }
    if errors.is_empty() {
        Ok(patch)
    } else {
        Err(errors)
    }
}

fn push_entry(
    source: &str,
    field: &str,
    i: usize,
    r: &pb::DesiredRecord,
) -> Result<DesiredEntry, Vec<FieldError>> {
    let mut errors = Vec::new();
    let name = Name::parse(&r.name)
        .map_err(|e| errors.push(FieldError::new(format!("{field}[{i}].name"), e.to_string())));
    let rtype = RecordType::parse(&r.r#type)
        .map_err(|e| errors.push(FieldError::new(format!("{field}[{i}].type"), e.to_string())));
    let mut values = Vec::new();
    if let Ok(t) = rtype {
        if r.values.is_empty() {
            errors.push(FieldError::new(
                format!("{field}[{i}].values"),
                "at least one value is needed",
            ));
        }
        for (j, v) in r.values.iter().enumerate() {
            match rdata::canonicalize(t, v) {
                Ok(c) => values.push(c),
                Err(e) => errors.push(FieldError::new(
                    format!("{field}[{i}].values[{j}]"),
                    e.to_string(),
                )),
            }
        }
    }
    match (name, rtype) {
        (Ok(name), Ok(rtype)) if errors.is_empty() => {
            values.sort();
            values.dedup();
            if let Err(problem) = wire::check_answer(&name, rtype, &values) {
                return Err(vec![FieldError::new(
                    format!("{field}[{i}].values"),
                    problem,
                )]);
            }
            Ok(DesiredEntry {
                name,
                rtype,
                ttl: (r.ttl != 0).then_some(r.ttl),
                values,
                origin: Origin {
                    source: format!("push:{source}"),
                    location: format!("{field}[{i}]"),
                    resource: format!("push/{source}"),
                },
            })
        }
        _ => Err(errors),
    }
}

/// An opaque-enough page token: the last key returned.
fn token(k: &RecordKey) -> String {
    format!("{}|{}|{}", k.zone, k.name, k.rtype)
}

fn parse_token(t: &str) -> Option<RecordKey> {
    let mut it = t.split('|');
    let zone = Name::parse(it.next()?).ok()?;
    let name = Name::parse(it.next()?).ok()?;
    let rtype = RecordType::parse(it.next()?).ok()?;
    Some(RecordKey::new(zone, name, rtype))
}

#[cfg(test)]
mod tests;
