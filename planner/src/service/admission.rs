//! Who may make a call, and on what: each call is admitted (its token, rate and role),
//! scoped (the zones and records it touches are in its caller's scope), and then
//! counted and logged with its caller ([`PlannerService::finish`]).
use super::PlannerService;
use crate::auth::{AuthError, Call, Caller, Role};
use crate::engine::Engine;
use crate::events;
use dnsplane_common::{Name, pb};
use tonic::Status;

/// An admitted call: who makes it, and what it touched (for its log line).
#[derive(Debug)]
pub(super) struct Ticket {
    pub(super) call: Call,
    pub(super) caller: Caller,
    pub(super) zones: Vec<String>,
    pub(super) records: Option<usize>,
}

impl PlannerService {
    /// Lets a call in (its token, rate and role), or answers it: a refusal is
    /// counted and logged here.
    pub(super) fn admit(
        &self,
        call: Call,
        meta: &tonic::metadata::MetadataMap,
    ) -> Result<Ticket, Status> {
        let authorization = meta.get("authorization").map(|v| v.as_bytes());
        match self.auth.admit(authorization, call) {
            Ok(caller) => Ok(Ticket {
                call,
                caller,
                zones: Vec::new(),
                records: None,
            }),
            Err(e) => {
                let status = auth_status(&e);
                events::ApiCall {
                    caller: e.caller(),
                    call: call.as_str(),
                    writes: call.role() >= Role::Write,
                    code: status.code(),
                    zones: &[],
                    records: None,
                    message: status.message(),
                }
                .emit(&self.metrics);
                Err(status)
            }
        }
    }

    /// Counts and logs an admitted call's answer.
    pub(super) fn finish<T>(&self, t: Ticket, result: Result<T, Status>) -> Result<T, Status> {
        let (code, message) = match &result {
            Ok(_) => (tonic::Code::Ok, ""),
            Err(s) => (s.code(), s.message()),
        };
        events::ApiCall {
            caller: &t.caller.name,
            call: t.call.as_str(),
            writes: t.call.role() >= Role::Write,
            code,
            zones: &t.zones,
            records: t.records,
            message,
        }
        .emit(&self.metrics);
        result
    }

    /// The zones a zone-wide call names, each once (a zone named 500 times is read
    /// once), all in the caller's scope (PERMISSION_DENIED naming the first that is
    /// not). None named: every zone, or for a scoped caller every zone of its scope.
    pub(super) fn scoped_zones(
        &self,
        t: &mut Ticket,
        names: &[String],
    ) -> Result<Vec<Name>, Status> {
        let mut zones = self.zones(names)?;
        let mut seen = std::collections::HashSet::with_capacity(zones.len());
        zones.retain(|z| seen.insert(z.clone()));
        let scope = &t.caller.scope;
        if names.is_empty() {
            zones.retain(|z| scope.allows_zone(z));
        } else if let Some(z) = zones.iter().find(|z| !scope.allows_zone(z)) {
            return Err(auth_status(&AuthError::out_of_scope(
                &t.caller,
                format!("zone {z}"),
            )));
        }
        t.zones = zones.iter().map(ToString::to_string).collect();
        Ok(zones)
    }

    /// The zone an Approve, Release or Resume names must be in the caller's scope
    /// (an unknown zone is left to the call's own NOT_FOUND).
    pub(super) fn scoped_zone(&self, t: &mut Ticket, name: &str) -> Result<(), Status> {
        t.zones = vec![name.to_string()];
        if let Some(z) = self.engine.zone_name(name) {
            t.zones = vec![z.to_string()];
            if !t.caller.scope.allows_zone(z) {
                return Err(auth_status(&AuthError::out_of_scope(
                    &t.caller,
                    format!("zone {z}"),
                )));
            }
        }
        Ok(())
    }

    /// The configured zone a record called `name` belongs to (the deepest holding it).
    pub(super) fn zone_of(&self, name: &Name) -> Option<&Name> {
        self.engine
            .zone_names()
            .filter(|z| name.is_within(z))
            .max_by_key(|z| z.as_str().len())
    }

    /// Records of a write, each in the caller's scope: the first that is not makes
    /// it PERMISSION_DENIED, before anything changed. Names that do not parse are left
    /// to the request's validation. Notes the zones the records are in.
    pub(super) fn check_records<'a>(
        &self,
        t: &mut Ticket,
        field: &str,
        records: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), Status> {
        let mut zones = std::collections::BTreeSet::new();
        for (i, (name, rtype)) in records.enumerate() {
            let Ok(parsed) = Name::parse(name) else {
                continue;
            };
            let zone = self.zone_of(&parsed);
            if let Some(z) = zone {
                zones.insert(z);
            }
            if !t.caller.scope.allows_record(zone, &parsed) {
                return Err(auth_status(&AuthError::out_of_scope(
                    &t.caller,
                    format!("{field}[{i}] ({parsed} {rtype})"),
                )));
            }
        }
        t.zones = zones.iter().map(ToString::to_string).collect();
        Ok(())
    }

    /// A push replaces its whole source: every record it carries, and every record
    /// the source holds now, must be in the caller's scope.
    pub(super) fn check_push(
        &self,
        t: &mut Ticket,
        req: &pb::PutDesiredRequest,
    ) -> Result<(), Status> {
        t.records = Some(req.records.len());
        Engine::cpu(|| {
            self.check_records(
                t,
                "records",
                req.records
                    .iter()
                    .map(|r| (r.name.as_str(), r.r#type.as_str())),
            )
        })?;
        if t.caller.scope.is_unrestricted() {
            return Ok(());
        }
        let scope = &t.caller.scope;
        let source = format!("push:{}", req.source);
        if let Some(k) = self
            .engine
            .source_key_where(&source, |k| !scope.allows_record(Some(&k.zone), &k.name))
        {
            return Err(auth_status(&AuthError::out_of_scope(
                &t.caller,
                format!(
                    "source {:?} holds {} {}, which a push would replace",
                    req.source, k.name, k.rtype
                ),
            )));
        }
        Ok(())
    }

    /// A patch's upserts and deletes, each in the caller's scope.
    pub(super) fn check_patch(
        &self,
        t: &mut Ticket,
        req: &pb::PatchDesiredRequest,
    ) -> Result<(), Status> {
        t.records = Some(req.upserts.len() + req.deletes.len());
        self.check_records(
            t,
            "upserts",
            req.upserts
                .iter()
                .map(|r| (r.name.as_str(), r.r#type.as_str())),
        )?;
        let upsert_zones = std::mem::take(&mut t.zones);
        self.check_records(
            t,
            "deletes",
            req.deletes
                .iter()
                .map(|r| (r.name.as_str(), r.r#type.as_str())),
        )?;
        let mut zones: std::collections::BTreeSet<String> = upsert_zones.into_iter().collect();
        zones.extend(std::mem::take(&mut t.zones));
        t.zones = zones.into_iter().collect();
        Ok(())
    }
}

/// The gRPC status of a call refused for who makes it. The message never holds the
/// token; RESOURCE_EXHAUSTED carries a RetryInfo with the wait.
pub(super) fn auth_status(e: &AuthError) -> Status {
    match e {
        AuthError::Missing
        | AuthError::Malformed
        | AuthError::Unknown
        | AuthError::Revoked { .. } => Status::unauthenticated(e.to_string()),
        AuthError::Forbidden { .. } | AuthError::OutOfScope { .. } => {
            Status::permission_denied(e.to_string())
        }
        AuthError::Limited { retry_after, .. } => {
            use tonic_types::{ErrorDetails, StatusExt};
            Status::with_error_details(
                tonic::Code::ResourceExhausted,
                e.to_string(),
                ErrorDetails::with_retry_info(Some(*retry_after)),
            )
        }
    }
}
