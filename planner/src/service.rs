//! The `dnsplane.v1.Planner` gRPC service: decodes requests into domain values, asks
//! the [`Engine`], and encodes its answers. The only module that builds or reads the
//! planner's own proto messages (the applier's are in [`crate::client`]).
use crate::auth::{Authenticator, Call};
use crate::engine::{ApproveError, Engine, ReleaseError, Scope, SyncProgress};
use crate::metrics::PlannerMetrics;
use admission::Ticket;
use dnsplane_common::convert::FieldError;
use dnsplane_common::grpc::invalid_argument;
use dnsplane_common::{Name, pb};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

mod admission;
mod encode;
mod history;
mod plan;
mod proposed;
pub(crate) mod push;
mod record_states;
mod targets;
mod zone_records;

use encode::{SyncStream, held_to_pb, progress_to_pb};
pub use encode::{kind_from_pb, kind_name, kind_to_pb, status, status_to_pb};
pub use push::validate_push;
use push::{
    PatchFailure, cross_check, patch_failure, push_as_patch, validate_patch, validate_push_checked,
};
pub(crate) use targets::target_status;
use zone_records::ReadZoneStream;

#[derive(Debug, Clone)]
pub struct PlannerService {
    engine: Arc<Engine>,
    auth: Arc<Authenticator>,
    metrics: PlannerMetrics,
}

impl PlannerService {
    /// Open to every caller (no `[auth]`), counting into families registered nowhere.
    pub fn new(engine: Arc<Engine>) -> Self {
        PlannerService {
            engine,
            auth: Arc::new(Authenticator::open()),
            metrics: PlannerMetrics::register(&mut prometheus_client::registry::Registry::default()),
        }
    }

    /// Calls admitted by `auth`, counted into `metrics`.
    #[must_use]
    pub fn with_auth(mut self, auth: Arc<Authenticator>, metrics: PlannerMetrics) -> Self {
        self.auth = auth;
        self.metrics = metrics;
        self
    }

    /// A whole push (`PutDesired`, or a completed `PutDesiredStream`): validated, then
    /// persisted and indexed, all off the async runtime ([`Engine::cpu`]). Its caller
    /// is noted for the audit events first (the sync it triggers may start at once),
    /// and forgotten again when the push is refused.
    fn push(
        &self,
        t: &mut Ticket,
        req: pb::PutDesiredRequest,
    ) -> Result<Response<pb::PutDesiredResponse>, Status> {
        let source = format!("push:{}", req.source);
        let before = self.engine.note_pusher(&source, &t.caller.name);
        let result = self.push_noted(t, req);
        if result.is_err() {
            self.engine.restore_pusher(&source, before);
        }
        result
    }

    fn push_noted(
        &self,
        t: &mut Ticket,
        req: pb::PutDesiredRequest,
    ) -> Result<Response<pb::PutDesiredResponse>, Status> {
        self.check_push(t, &req)?;
        let source = format!("push:{}", req.source);
        let zones = &self.engine.config().zones;
        let patched = self.engine.put_source_by_patch(
            &source,
            |index| push_as_patch(index, &req),
            |kept| match cross_check(zones, &req.source, kept) {
                errors if errors.is_empty() => Ok(()),
                errors => Err(PatchFailure::Invalid(errors)),
            },
        );
        if let Some(done) = patched {
            done.map_err(patch_failure("push"))?;
            return Ok(Response::new(pb::PutDesiredResponse {
                accepted: req.records.len() as u32,
                shadowed: push::shadowed(&self.engine, &source),
            }));
        }
        let (entries, checked) =
            Engine::cpu(|| validate_push_checked(&self.engine.config().zones, &req))
                .map_err(|errors| invalid_argument(&errors))?;
        let accepted = entries.len() as u32;
        // Persisted before it is acknowledged: a push that cannot be stored changes
        // nothing, and one that was answered survives a restart.
        self.engine
            .put_source(&source, entries, checked)
            .map_err(|e| {
                Status::unavailable(format!(
                    "cannot persist the push ({e}); nothing changed, retry later"
                ))
            })?;
        let shadowed = push::shadowed(&self.engine, &source);
        Ok(Response::new(pb::PutDesiredResponse { accepted, shadowed }))
    }

    /// `UNAVAILABLE` unless this planner takes writes now: a standby names the
    /// leader's address, where the client retries ([`crate::engine::NotWritable`]).
    async fn writable(&self) -> Result<(), Status> {
        self.engine
            .writable()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))
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

/// The calls' bodies, after [`PlannerService::admit`]: each checks its request
/// against the caller's scope before it changes anything.
impl PlannerService {
    async fn sync_admitted(
        &self,
        t: &mut Ticket,
        req: pb::SyncRequest,
    ) -> Result<Response<SyncStream>, Status> {
        // Each zone once, however often it is named: one read each (per target).
        let zones = self.scoped_zones(t, &req.zones)?;
        let targets = self.targets_of(&zones, &req.account)?;
        let (tx, rx) = mpsc::channel(64);
        for zone in targets {
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

    async fn put_desired_stream_admitted(
        &self,
        t: &mut Ticket,
        mut stream: tonic::Streaming<pb::PutDesiredChunk>,
    ) -> Result<Response<pb::PutDesiredResponse>, Status> {
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
        self.push(t, whole)
    }

    /// A patch, its caller noted for the audit events as for [`Self::push`].
    async fn patch_desired_admitted(
        &self,
        t: &mut Ticket,
        req: pb::PatchDesiredRequest,
    ) -> Result<Response<pb::PatchDesiredResponse>, Status> {
        let source = format!("push:{}", req.source);
        let before = self.engine.note_pusher(&source, &t.caller.name);
        let result = self.patch_noted(t, req);
        if result.is_err() {
            self.engine.restore_pusher(&source, before);
        }
        result
    }

    fn patch_noted(
        &self,
        t: &mut Ticket,
        req: pb::PatchDesiredRequest,
    ) -> Result<Response<pb::PatchDesiredResponse>, Status> {
        self.check_patch(t, &req)?;
        let zones = &self.engine.config().zones;
        let patch = Engine::cpu(|| validate_patch(&req)).map_err(|e| invalid_argument(&e))?;
        let unknown = push::unknown_views(&self.engine.config().zones, "upserts", &patch.upserts);
        if !unknown.is_empty() {
            return Err(invalid_argument(&unknown));
        }
        let upserted = patch.upserts.len() as u32;
        let source = &req.source;
        let done = self
            .engine
            .patch_source(
                &format!("push:{source}"),
                patch,
                |merged| match cross_check(zones, source, merged) {
                    errors if errors.is_empty() => Ok(()),
                    errors => Err(PatchFailure::Invalid(errors)),
                },
            )
            .map_err(patch_failure("patch"))?;
        Ok(Response::new(pb::PatchDesiredResponse {
            upserted,
            deleted: done.deleted as u32,
            records: done.records as u32,
            shadowed: push::shadowed(&self.engine, &format!("push:{source}")),
        }))
    }

    async fn approve_admitted(
        &self,
        t: &mut Ticket,
        req: pb::ApproveRequest,
    ) -> Result<Response<pb::ApproveResponse>, Status> {
        if req.zone.is_empty() {
            return Err(FieldError::new("zone", "required").into());
        }
        self.scoped_zone(t, &req.zone)?;
        if req.digest.is_empty() {
            return Err(FieldError::new(
                "digest",
                "required: the held plan's digest, as GetStatus shows it (zones[].held.digest)",
            )
            .into());
        }
        match self.engine.approve(&req.zone, &req.account, &req.digest) {
            Ok(plan) => Ok(Response::new(pb::ApproveResponse {
                approved: Some(held_to_pb(&plan, None)),
            })),
            Err(ApproveError::Target(e)) => Err(target_status(&e)),
            Err(e) => Err(Status::failed_precondition(e.to_string())),
        }
    }

    async fn release_admitted(
        &self,
        t: &mut Ticket,
        req: pb::ReleaseRequest,
    ) -> Result<Response<pb::ReleaseResponse>, Status> {
        if req.zone.is_empty() {
            return Err(FieldError::new("zone", "required").into());
        }
        self.scoped_zone(t, &req.zone)?;
        let out = self
            .engine
            .release(
                &req.zone,
                &req.account,
                &req.external_dns_owner,
                req.dry_run,
            )
            .await
            .map_err(release_status)?;
        let planned = |c: &crate::plan::PlannedChange| pb::PlannedChange {
            change: Some((&c.change).into()),
            reason: c.reason.clone(),
        };
        Ok(Response::new(pb::ReleaseResponse {
            zone: self
                .engine
                .zone_name(&req.zone)
                .map(ToString::to_string)
                .unwrap_or(req.zone),
            changes: out.changes.iter().map(planned).collect(),
            released: out.released as u32,
            left: out.left.iter().map(planned).collect(),
            already: out.already as u32,
            account: out.target.account.to_string(),
        }))
    }

    async fn resume_admitted(
        &self,
        t: &mut Ticket,
        req: pb::ResumeRequest,
    ) -> Result<Response<pb::ResumeResponse>, Status> {
        if req.zone.is_empty() {
            return Err(FieldError::new("zone", "required").into());
        }
        self.scoped_zone(t, &req.zone)?;
        let was = self
            .engine
            .resume(&req.zone, &req.account)
            .map_err(release_status)?;
        Ok(Response::new(pb::ResumeResponse {
            was_released_to: was.owner,
        }))
    }
}

/// Each call: admitted (token, rate, role), then its body, then counted and logged.
#[tonic::async_trait]
impl pb::planner_server::Planner for PlannerService {
    async fn plan(
        &self,
        request: Request<pb::PlanRequest>,
    ) -> Result<Response<pb::PlanResponse>, Status> {
        let (meta, _, req) = request.into_parts();
        let mut t = self.admit(Call::Plan, &meta)?;
        let result = self.plan_admitted(&mut t, req).await;
        self.finish(t, result)
    }

    type SyncStream = SyncStream;

    async fn sync(
        &self,
        request: Request<pb::SyncRequest>,
    ) -> Result<Response<SyncStream>, Status> {
        let (meta, _, req) = request.into_parts();
        let mut t = self.admit(Call::Sync, &meta)?;
        let result = self.sync_admitted(&mut t, req).await;
        self.finish(t, result)
    }

    async fn get_status(
        &self,
        request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::PlannerStatus>, Status> {
        let t = self.admit(Call::GetStatus, request.metadata())?;
        let result = Ok(Response::new(status(&self.engine).await));
        self.finish(t, result)
    }

    async fn list_record_states(
        &self,
        request: Request<pb::ListRecordStatesRequest>,
    ) -> Result<Response<pb::ListRecordStatesResponse>, Status> {
        let (meta, _, req) = request.into_parts();
        let t = self.admit(Call::ListRecordStates, &meta)?;
        let result = self.list_record_states_admitted(req).await;
        self.finish(t, result)
    }

    async fn put_desired(
        &self,
        request: Request<pb::PutDesiredRequest>,
    ) -> Result<Response<pb::PutDesiredResponse>, Status> {
        let (meta, _, req) = request.into_parts();
        let mut t = self.admit(Call::PutDesired, &meta)?;
        let result = match self.writable().await {
            Ok(()) => self.push(&mut t, req),
            Err(e) => Err(e),
        };
        self.finish(t, result)
    }

    async fn put_desired_stream(
        &self,
        request: Request<tonic::Streaming<pb::PutDesiredChunk>>,
    ) -> Result<Response<pb::PutDesiredResponse>, Status> {
        // Admitted before the first chunk is read: an unknown caller streams nothing.
        let (meta, _, stream) = request.into_parts();
        let mut t = self.admit(Call::PutDesiredStream, &meta)?;
        let result = match self.writable().await {
            Ok(()) => self.put_desired_stream_admitted(&mut t, stream).await,
            Err(e) => Err(e),
        };
        self.finish(t, result)
    }

    async fn patch_desired(
        &self,
        request: Request<pb::PatchDesiredRequest>,
    ) -> Result<Response<pb::PatchDesiredResponse>, Status> {
        let (meta, _, req) = request.into_parts();
        let mut t = self.admit(Call::PatchDesired, &meta)?;
        let result = match self.writable().await {
            Ok(()) => self.patch_desired_admitted(&mut t, req).await,
            Err(e) => Err(e),
        };
        self.finish(t, result)
    }

    async fn approve(
        &self,
        request: Request<pb::ApproveRequest>,
    ) -> Result<Response<pb::ApproveResponse>, Status> {
        let (meta, _, req) = request.into_parts();
        let mut t = self.admit(Call::Approve, &meta)?;
        let result = match self.writable().await {
            Ok(()) => self.approve_admitted(&mut t, req).await,
            Err(e) => Err(e),
        };
        self.finish(t, result)
    }

    async fn release(
        &self,
        request: Request<pb::ReleaseRequest>,
    ) -> Result<Response<pb::ReleaseResponse>, Status> {
        let (meta, _, req) = request.into_parts();
        let mut t = self.admit(Call::Release, &meta)?;
        // A dry run writes nothing: a standby answers it too.
        let result = match (req.dry_run, self.writable().await) {
            (false, Err(e)) => Err(e),
            _ => self.release_admitted(&mut t, req).await,
        };
        self.finish(t, result)
    }

    async fn resume(
        &self,
        request: Request<pb::ResumeRequest>,
    ) -> Result<Response<pb::ResumeResponse>, Status> {
        let (meta, _, req) = request.into_parts();
        let mut t = self.admit(Call::Resume, &meta)?;
        let result = match self.writable().await {
            Ok(()) => self.resume_admitted(&mut t, req).await,
            Err(e) => Err(e),
        };
        self.finish(t, result)
    }

    async fn history(
        &self,
        request: Request<pb::HistoryRequest>,
    ) -> Result<Response<pb::HistoryResponse>, Status> {
        let (meta, _, req) = request.into_parts();
        let mut t = self.admit(Call::History, &meta)?;
        let result = self.history_admitted(&mut t, req).await;
        self.finish(t, result)
    }

    async fn plan_proposed(
        &self,
        request: Request<tonic::Streaming<pb::PlanProposedChunk>>,
    ) -> Result<Response<pb::PlanResponse>, Status> {
        // Admitted before the first chunk is read: an unknown caller streams nothing.
        let (meta, _, stream) = request.into_parts();
        let mut t = self.admit(Call::PlanProposed, &meta)?;
        let result = self.plan_proposed_admitted(&mut t, stream).await;
        self.finish(t, result)
    }

    type ReadZoneStream = ReadZoneStream;

    async fn read_zone(
        &self,
        request: Request<pb::ReadZoneRequest>,
    ) -> Result<Response<ReadZoneStream>, Status> {
        let (meta, _, req) = request.into_parts();
        let mut t = self.admit(Call::ReadZone, &meta)?;
        let result = self.read_zone_admitted(&mut t, req).await;
        self.finish(t, result)
    }

    async fn adopt(
        &self,
        request: Request<pb::AdoptRequest>,
    ) -> Result<Response<pb::AdoptResponse>, Status> {
        let (meta, _, req) = request.into_parts();
        let mut t = self.admit(Call::Adopt, &meta)?;
        // A dry run writes nothing: a standby answers it too.
        let result = match (req.dry_run, self.writable().await) {
            (false, Err(e)) => Err(e),
            _ => self.adopt_admitted(&mut t, req).await,
        };
        self.finish(t, result)
    }
}

/// The gRPC status of a refused release or resume.
fn release_status(e: ReleaseError) -> Status {
    match &e {
        ReleaseError::Target(t) => target_status(t),
        ReleaseError::BadOwner(why) => FieldError::new("external_dns_owner", why.clone()).into(),
        ReleaseError::Sync(s) if s.is_lease() => Status::failed_precondition(e.to_string()),
        ReleaseError::Sync(_) | ReleaseError::Store { .. } => Status::unavailable(e.to_string()),
        _ => Status::failed_precondition(e.to_string()),
    }
}

#[cfg(test)]
mod labels_tests;
#[cfg(test)]
mod tests;
