//! `History`: the audit events of one record name, from the audit file, in the
//! caller's scope.
use super::PlannerService;
use super::admission::{Ticket, auth_status};
use crate::audit::AuditEvent;
use crate::auth::AuthError;
use crate::engine::{Engine, HistoryError};
use dnsplane_common::convert::FieldError;
use dnsplane_common::{Name, pb};
use tonic::{Response, Status};

/// Events answered when the request asks for none in particular, and at most.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 10_000;

impl PlannerService {
    pub(super) async fn history_admitted(
        &self,
        t: &mut Ticket,
        req: pb::HistoryRequest,
    ) -> Result<Response<pb::HistoryResponse>, Status> {
        if req.name.is_empty() {
            return Err(FieldError::new("name", "required: the record's name").into());
        }
        let name = Name::parse(&req.name)
            .map_err(|e| FieldError::new("name", format!("{:?}: {e}", req.name)))?;
        let zone = if req.zone.is_empty() {
            None
        } else {
            let z = self.engine.zone_name(&req.zone).cloned().ok_or_else(|| {
                FieldError::new("zone", format!("{:?} is not a configured zone", req.zone))
            })?;
            if !name.is_within(&z) {
                return Err(FieldError::new(
                    "name",
                    format!("{name} is not in zone {z} (the request's zone)"),
                )
                .into());
            }
            Some(z)
        };
        let home = zone.clone().or_else(|| self.zone_of(&name).cloned());
        t.zones = home.iter().map(ToString::to_string).collect();
        let scope = t.caller.scope.clone();
        if !scope.allows_record(home.as_ref(), &name) {
            return Err(auth_status(&AuthError::out_of_scope(
                &t.caller,
                format!("name {name}"),
            )));
        }
        let limit = match req.limit as usize {
            0 => DEFAULT_LIMIT,
            n => n.min(MAX_LIMIT),
        };
        // An event of a zone outside the scope (a name that was once in another
        // zone) is left out, not refused.
        // `account`: that target's events; an event without one is of a zone's
        // only target.
        let allowed = |e: &AuditEvent| {
            let zone = Name::parse(&e.zone).ok();
            let account =
                req.account.is_empty() || e.account.is_empty() || e.account == req.account;
            account && scope.allows_record(zone.as_ref(), &name)
        };
        let events = Engine::cpu(|| self.engine.history(&name, zone.as_ref(), allowed, limit))
            .map_err(|e| match e {
                HistoryError::NoFile => Status::failed_precondition(e.to_string()),
                HistoryError::File(e) => Status::internal(e.to_string()),
            })?;
        Ok(Response::new(pb::HistoryResponse {
            events: events.into_iter().map(event_to_pb).collect(),
        }))
    }
}

fn event_to_pb(e: AuditEvent) -> pb::AuditEvent {
    pb::AuditEvent {
        time: e.time,
        event: e.event,
        zone: e.zone,
        name: e.name,
        r#type: e.rtype,
        old: e.old,
        new: e.new,
        change: e.change,
        outcome: e.outcome,
        reason: e.reason,
        batch_id: e.batch_id,
        trace_id: e.trace_id,
        source: e.source,
        caller: e.caller,
        account: e.account,
    }
}
