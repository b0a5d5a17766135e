//! `ReadZone` and `Adopt`: a zone's records and owners as the planner sees them (for
//! `dnsplane import` and `export`), and taking the unowned ones that equal the desired
//! state.
use super::PlannerService;
use super::admission::Ticket;
use crate::engine::{AdoptError, OwnerKind, SyncError};
use crate::target::Target;
use dnsplane_common::convert::FieldError;
use dnsplane_common::pb;
use tonic::{Response, Status};

/// Records per `ReadZone` message: well under the 4 MiB a client takes by default.
const RECORDS_PER_MESSAGE: usize = 2_000;

pub(super) type ReadZoneStream =
    tokio_stream::Iter<std::vec::IntoIter<Result<pb::ReadZoneResponse, Status>>>;

impl PlannerService {
    /// The target a request names (zone and account), in the caller's scope;
    /// NOT_FOUND when the zone is not configured, INVALID_ARGUMENT when the account
    /// names no single target of it.
    fn named_zone(&self, t: &mut Ticket, zone: &str, account: &str) -> Result<Target, Status> {
        if zone.is_empty() {
            return Err(FieldError::new("zone", "required").into());
        }
        self.scoped_zone(t, zone)?;
        self.engine
            .target(zone, account)
            .map_err(|e| super::target_status(&e))
    }

    pub(super) async fn read_zone_admitted(
        &self,
        t: &mut Ticket,
        req: pb::ReadZoneRequest,
    ) -> Result<Response<ReadZoneStream>, Status> {
        let zone = self.named_zone(t, &req.zone, &req.account)?;
        let records: Vec<pb::ZoneRecord> = match pb::ReadZoneWhat::try_from(req.what) {
            Ok(pb::ReadZoneWhat::Observed) => self
                .engine
                .read_observed(&zone, req.fresh)
                .await
                .map_err(|e| sync_status(&e))?
                .into_iter()
                .map(|r| pb::ZoneRecord {
                    key: Some((&r.rrset.key).into()),
                    rrset: Some((&r.rrset).into()),
                    owner: r.owner,
                    owner_kind: match r.owner_kind {
                        OwnerKind::None => String::new(),
                        OwnerKind::Dnsplane => "dnsplane".into(),
                        OwnerKind::ExternalDns => "external-dns".into(),
                    },
                    owned_here: r.owned_here,
                    mark: r.mark,
                })
                .collect(),
            Ok(pb::ReadZoneWhat::Desired) => self
                .engine
                .read_desired(&zone)
                .map_err(|e| sync_status(&e))?
                .iter()
                .map(|r| pb::ZoneRecord {
                    key: Some((&r.key).into()),
                    rrset: Some(r.into()),
                    ..Default::default()
                })
                .collect(),
            Err(_) => {
                return Err(
                    FieldError::new("what", format!("{} is not a ReadZoneWhat", req.what)).into(),
                );
            }
        };
        let mut messages: Vec<Result<pb::ReadZoneResponse, Status>> = records
            .chunks(RECORDS_PER_MESSAGE)
            .map(|c| {
                Ok(pb::ReadZoneResponse {
                    records: c.to_vec(),
                })
            })
            .collect();
        if messages.is_empty() {
            messages.push(Ok(pb::ReadZoneResponse::default()));
        }
        Ok(Response::new(tokio_stream::iter(messages)))
    }

    pub(super) async fn adopt_admitted(
        &self,
        t: &mut Ticket,
        req: pb::AdoptRequest,
    ) -> Result<Response<pb::AdoptResponse>, Status> {
        let zone = self.named_zone(t, &req.zone, &req.account)?;
        let digest = (!req.digest.is_empty()).then_some(req.digest.as_str());
        let out = self
            .engine
            .adopt(zone.zone.as_str(), &zone.account, req.dry_run, digest)
            .await
            .map_err(|e| match &e {
                AdoptError::Target(t) => super::target_status(t),
                AdoptError::Stale { .. } => Status::failed_precondition(e.to_string()),
                AdoptError::Sync(s) => sync_status(s),
            })?;
        Ok(Response::new(pb::AdoptResponse {
            zone: zone.zone.to_string(),
            account: zone.account.to_string(),
            changes: out
                .changes
                .iter()
                .map(|c| pb::PlannedChange {
                    change: Some((&c.change).into()),
                    reason: c.reason.clone(),
                })
                .collect(),
            digest: out.digest,
            adopted: out.adopted as u32,
            left_alone: out
                .left_alone
                .iter()
                .map(|(k, why)| pb::LeftAlone {
                    key: Some(k.into()),
                    reason: why.clone(),
                })
                .collect(),
        }))
    }
}

/// The gRPC status of a zone that cannot be read or written now.
fn sync_status(e: &SyncError) -> Status {
    if e.is_lease() {
        Status::failed_precondition(e.to_string())
    } else if matches!(e, SyncError::UnknownZone { .. }) {
        Status::not_found(e.to_string())
    } else if matches!(e, SyncError::Released { .. } | SyncError::Observing { .. }) {
        Status::failed_precondition(e.to_string())
    } else {
        Status::unavailable(e.to_string())
    }
}
