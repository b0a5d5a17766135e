//! The `dnsplane.v1.Planner` gRPC service: a thin layer over the [`Engine`].
use crate::engine::Engine;
use crate::plan::plan_zone;
use crate::observed::ZoneView;
use crate::source::{DesiredEntry, Origin};
use crate::state::state_name;
use dnsplane_common::convert::{FieldError, timestamp};
use dnsplane_common::grpc::invalid_argument;
use dnsplane_common::pb::{self, RecordStateKind};
use dnsplane_common::{Name, RecordKey, RecordType, rdata};
use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

/// Page size limits for listings.
const DEFAULT_PAGE: usize = 500;
const MAX_PAGE: usize = 5_000;

#[derive(Debug, Clone)]
pub struct PlannerService {
    engine: Arc<Engine>,
}

impl PlannerService {
    pub fn new(engine: Arc<Engine>) -> Self {
        PlannerService { engine }
    }

    /// The zones a request names (all when empty), or INVALID_ARGUMENT for unknown ones.
    fn zones(&self, names: &[String]) -> Result<Vec<Arc<crate::engine::ZoneRuntime>>, Status> {
        if names.is_empty() {
            return Ok(self.engine.zones.values().cloned().collect());
        }
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (i, n) in names.iter().enumerate() {
            match self.engine.zone(n) {
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

/// One entry of a plan page: a change, or a record held back.
enum Item<'a> {
    Change(&'a crate::plan::PlannedChange),
    Blocked(&'a crate::plan::Blocked),
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
            0 => 1_000,
            n => n.min(10_000),
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
                zone: zone.cfg.name.to_string(),
                ..Default::default()
            };
            match self.engine.list_zone(&zone.cfg, req.fresh, &[]).await {
                Err(e) => zp.error = e.to_string(),
                Ok(current) => {
                    let desired = self.engine.desired();
                    let empty = BTreeMap::new();
                    let zone_desired = desired.zone(&zone.cfg.name).unwrap_or(&empty);
                    let view = ZoneView::new(current);
                    let plan =
                        plan_zone(&zone.cfg, &self.engine.config.owner_id, zone_desired, &view);
                    let total = plan.changes.len() + plan.blocked.len();
                    let changes = plan.changes.iter().map(Item::Change);
                    let blocked = plan.blocked.iter().map(Item::Blocked);
                    let taken: Vec<Item<'_>> =
                        changes.chain(blocked).skip(skip).take(room).collect();
                    room -= taken.len();
                    for item in taken {
                        match item {
                            Item::Change(c) => zp.changes.push(pb::PlannedChange {
                                change: Some((&c.change).into()),
                                reason: c.reason.clone(),
                            }),
                            Item::Blocked(b) => zp.blocked.push(pb::RecordState {
                                key: Some((&b.key).into()),
                                state: RecordStateKind::Conflict as i32,
                                desired: b.desired.as_ref().map(Into::into),
                                observed: b.observed.as_ref().map(Into::into),
                                observed_owner: b.observed_owner.clone().unwrap_or_default(),
                                conflict_reason: b.reason as i32,
                                reason: b.message.clone(),
                                ..Default::default()
                            }),
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
            let engine = self.engine.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                // Errors are reported through the progress stream itself.
                let _ = engine
                    .sync_zone(&zone, &crate::engine::Scope::Zone, req.fresh, Some(&tx))
                    .await;
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
        let members = self.engine.pool.members();
        // Each applier's accounts (quota use, circuit), asked for in parallel and
        // bounded, so a stuck applier cannot stall the status call.
        let accounts = futures::future::join_all(members.iter().map(|m| async move {
            if !m.healthy() {
                return Vec::new();
            }
            let mut client = m.client();
            let answer = tokio::time::timeout(
                std::time::Duration::from_secs(1),
                client.get_status(pb::GetApplierStatusRequest {}),
            )
            .await;
            match answer {
                Ok(Ok(st)) => st
                    .into_inner()
                    .accounts
                    .into_iter()
                    .map(|a| pb::ApplierAccount {
                        name: a.name,
                        circuit: a.circuit,
                        quota: a.quota,
                    })
                    .collect(),
                _ => Vec::new(),
            }
        }))
        .await;
        let desired = self.engine.desired();
        let empty = BTreeMap::new();
        let mut zones = Vec::new();
        let mut degraded = Vec::new();
        let mut syncing = false;
        for zone in self.engine.zones.values() {
            let st = zone
                .status
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            let (counts, next_retry) = {
                let states = zone
                    .states
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let zone_read = zone
                    .view
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .is_some();
                (
                    states.counts(
                        desired.zone(&zone.cfg.name).unwrap_or(&empty),
                        zone_read,
                        &self.engine.unplanned(zone),
                    ),
                    states.next_retry(),
                )
            };
            if !st.last_error.is_empty() {
                degraded.push(format!("zone {}: {}", zone.cfg.name, st.last_error));
            } else if st.rejected {
                degraded.push(format!(
                    "zone {}: provider account {} refuses writes",
                    zone.cfg.name, zone.cfg.account
                ));
            }
            // Only the first sync and full syncs make the planner "syncing": the
            // per-record re-plans of a few names run all the time and would make the
            // level flap.
            syncing |= st.full_sync || !st.initial_sync_done;
            zones.push(pb::ZoneStatus {
                zone: zone.cfg.name.to_string(),
                account: zone.cfg.account.clone(),
                policy: zone.cfg.policy.as_str().into(),
                records_by_state: counts.into_iter().collect(),
                last_sync: st.last_sync.map(timestamp),
                last_success: st.last_success.map(timestamp),
                last_error: st.last_error.clone(),
                initial_sync_done: st.initial_sync_done,
                desired_records: desired.zone(&zone.cfg.name).map_or(0, |z| z.len() as u32),
                observed_records: self.engine.observed_count(zone) as u32,
                syncing: st.syncing,
                applier: self
                    .engine
                    .pool
                    .route(&zone.cfg.name)
                    .map(|m| m.addr.clone())
                    .unwrap_or_default(),
                initial_sync_started: st.sync_started.map(timestamp),
                next_retry: next_retry.map(timestamp),
            });
        }
        let source_errors = desired.errors();
        if !source_errors.is_empty() {
            degraded.push(format!(
                "{} desired record(s) rejected; see source_errors",
                source_errors.len()
            ));
        }
        let appliers: Vec<pb::ApplierMember> = members
            .iter()
            .zip(accounts)
            .map(|(m, accounts)| pb::ApplierMember {
                address: m.addr.clone(),
                healthy: m.healthy(),
                last_error: m.last_error(),
                zones: zones.iter().filter(|z| z.applier == m.addr).count() as u32,
                accounts,
            })
            .collect();
        if !members.is_empty() && !members.iter().any(|m| m.healthy()) {
            degraded.push("no applier is healthy".into());
        }
        let (level, reason) = if !degraded.is_empty() {
            ("degraded", degraded.join("; "))
        } else if syncing {
            ("syncing", String::new())
        } else {
            ("healthy", String::new())
        };
        Ok(Response::new(pb::PlannerStatus {
            level: level.into(),
            reason,
            zones,
            appliers,
            source_errors: source_errors
                .iter()
                .map(|e| pb::SourceError {
                    source: e.source.clone(),
                    location: e.location.clone(),
                    record: e.record.clone(),
                    message: e.message.clone(),
                })
                .collect(),
        }))
    }

    async fn list_record_states(
        &self,
        request: Request<pb::ListRecordStatesRequest>,
    ) -> Result<Response<pb::ListRecordStatesResponse>, Status> {
        let req = request.into_inner();
        let zones = if req.zone.is_empty() {
            self.zones(&[])?
        } else {
            self.zones(std::slice::from_ref(&req.zone)).map_err(|_| {
                FieldError::new("zone", format!("{:?} is not a configured zone", req.zone))
            })?
        };
        let mut wanted = Vec::new();
        for (i, s) in req.states.iter().enumerate() {
            match RecordStateKind::try_from(*s) {
                Ok(k) if k != RecordStateKind::Unspecified => wanted.push(k),
                _ => {
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
        let keep = |k: RecordStateKind| {
            if !wanted.is_empty() {
                wanted.contains(&k)
            } else {
                req.include_converged || k != RecordStateKind::Converged
            }
        };
        let with_converged = keep(RecordStateKind::Converged) || keep(RecordStateKind::Pending);
        let desired = self.engine.desired();
        let empty = BTreeMap::new();
        let mut records = Vec::new();
        let mut next_page_token = String::new();
        'zones: for zone in zones {
            let zone_read = zone
                .view
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_some();
            let unplanned = self.engine.unplanned(&zone);
            let states = zone
                .states
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let zone_desired = desired.zone(&zone.cfg.name).unwrap_or(&empty);
            // Walk the states and (for converged records) the desired keys together, in
            // key order, so pages are stable.
            let start = after.clone().filter(|a| a.zone == zone.cfg.name);
            let range = |k: &RecordKey| start.as_ref().is_none_or(|a| k > a);
            let mut st = states.records.iter().filter(|(k, _)| range(k)).peekable();
            let mut de = zone_desired
                .iter()
                .filter(|(k, _)| with_converged && range(k) && !states.records.contains_key(*k))
                .peekable();
            if after.as_ref().is_some_and(|a| a.zone > zone.cfg.name) {
                continue;
            }
            loop {
                let next = match (st.peek(), de.peek()) {
                    (None, None) => break,
                    (Some((k, _)), Some((d, _))) if d < k => None,
                    (Some(_), _) => st.next().map(|(k, s)| (k, Some(s))),
                    (None, Some(_)) => None,
                };
                let (key, state) = match next {
                    Some(n) => n,
                    None => match de.next() {
                        Some((k, _)) => (k, None),
                        None => break,
                    },
                };
                let item = match state {
                    Some(s) if keep(s.kind) => s.to_pb(key),
                    Some(_) => continue,
                    None => {
                        let item = states.converged_pb(
                            key,
                            &zone_desired[key].rrset,
                            zone_read,
                            unplanned.contains(&key.name),
                        );
                        if !keep(RecordStateKind::try_from(item.state).unwrap_or_default()) {
                            continue;
                        }
                        item
                    }
                };
                if records.len() == page_size {
                    next_page_token = token(&records_last_key(&records));
                    break 'zones;
                }
                records.push(item);
            }
        }
        Ok(Response::new(pb::ListRecordStatesResponse {
            records,
            next_page_token,
        }))
    }

    async fn put_desired(
        &self,
        request: Request<pb::PutDesiredRequest>,
    ) -> Result<Response<pb::PutDesiredResponse>, Status> {
        let req = request.into_inner();
        if req.source.is_empty() || req.source.len() > 128 {
            return Err(FieldError::new(
                "source",
                "must be 1-128 characters naming the pushing program",
            )
            .into());
        }
        let mut errors = Vec::new();
        let mut entries = Vec::with_capacity(req.records.len());
        for (i, r) in req.records.iter().enumerate() {
            match push_entry(&req.source, i, r) {
                Ok(e) => entries.push(e),
                Err(mut e) => errors.append(&mut e),
            }
        }
        // Cross-record checks (zones, duplicates, CNAME clashes) on this push alone, so a
        // bad push is refused whole and the previous one stays in force.
        let mut check = crate::desired::DesiredIndex::new(&self.engine.config.zones);
        check.update_source(&req.source, &entries, Vec::new());
        for e in check.errors() {
            errors.push(FieldError::new(
                e.location.clone(),
                format!("{}: {}", e.record, e.message),
            ));
        }
        if !errors.is_empty() {
            return Err(invalid_argument(&errors));
        }
        let accepted = entries.len() as u32;
        self.engine
            .set_source(&format!("push:{}", req.source), entries, Vec::new());
        Ok(Response::new(pb::PutDesiredResponse { accepted }))
    }
}

fn push_entry(
    source: &str,
    i: usize,
    r: &pb::DesiredRecord,
) -> Result<DesiredEntry, Vec<FieldError>> {
    let mut errors = Vec::new();
    let name = Name::parse(&r.name)
        .map_err(|e| errors.push(FieldError::new(format!("records[{i}].name"), e.to_string())));
    let rtype = RecordType::parse(&r.r#type)
        .map_err(|e| errors.push(FieldError::new(format!("records[{i}].type"), e.to_string())));
    let mut values = Vec::new();
    if let Ok(t) = rtype {
        if r.values.is_empty() {
            errors.push(FieldError::new(
                format!("records[{i}].values"),
                "at least one value is needed",
            ));
        }
        for (j, v) in r.values.iter().enumerate() {
            match rdata::canonicalize(t, v) {
                Ok(c) => values.push(c),
                Err(e) => errors.push(FieldError::new(
                    format!("records[{i}].values[{j}]"),
                    e.to_string(),
                )),
            }
        }
    }
    match (name, rtype) {
        (Ok(name), Ok(rtype)) if errors.is_empty() => {
            values.sort();
            values.dedup();
            Ok(DesiredEntry {
                name,
                rtype,
                ttl: (r.ttl != 0).then_some(r.ttl),
                values,
                origin: Origin {
                    source: format!("push:{source}"),
                    location: format!("records[{i}]"),
                    resource: format!("push/{source}"),
                },
            })
        }
        _ => Err(errors),
    }
}

fn records_last_key(records: &[pb::RecordState]) -> RecordKey {
    let k = records
        .last()
        .and_then(|r| r.key.clone())
        .unwrap_or_default();
    dnsplane_common::convert::key_from_pb("key", Some(&k))
        .expect("keys in the state table are valid")
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

/// State names for CLI output.
pub fn kind_name(k: i32) -> &'static str {
    state_name(RecordStateKind::try_from(k).unwrap_or_default())
}
