//! The `dnsplane.v1.Applier` gRPC service: the only place that reads the applier's
//! requests and builds its answers. It decodes into domain values, asks
//! [`Accounts`], and encodes what comes back; a provider error becomes a gRPC status
//! here and nowhere else.
//!
//! Batches of one stream run concurrently across zones (bounded by
//! `max_concurrent_batches`) and strictly one at a time per (account, zone), in the
//! order the stream carries them; each batch's results are sent as soon as it
//! finishes. Nothing a batch carries can end the stream: a malformed change is
//! answered INVALID on its own.
use crate::accounts::{
    AccountStatus, Accounts, ApplierStatus, BatchRequest, Fence, Fenced, Lifecycle, ListError,
};
use crate::provider::record_cache::SerialPosition;
use crate::provider::{ErrorClass, ProviderError};
use crate::quota::{PacingStatus, QuotaStatus};
use dnsplane_common::convert::{FieldError, change_from_pb, duration, name_from_pb};
use dnsplane_common::grpc::invalid_argument;
use dnsplane_common::{RecordResult, pb};
use futures::Stream;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::task::TaskTracker;
use tonic::{Request, Response, Status, Streaming};
use tonic_types::{ErrorDetails, StatusExt};
use tracing::Instrument;

/// RRSets per `ListRecordsResponse` when the request does not say.
pub const DEFAULT_PAGE_SIZE: usize = 1000;
/// The most RRSets per page whatever the request asks, to bound message size.
pub const MAX_PAGE_SIZE: usize = 10_000;
/// A page also ends before its encoding passes this (unless it holds one RRSet, which
/// DNS itself bounds to 64 KiB), so that no page nears a receiver's 4 MiB default limit.
pub const MAX_PAGE_BYTES: usize = 1 << 20;
/// Batches of one stream read but not finished; beyond it the stream is not read
/// (HTTP/2 flow control pushes back on the planner).
const MAX_QUEUED_PER_STREAM: usize = 256;
/// Results per `ApplyResponse` message.
const RESULTS_PER_MESSAGE: usize = 1000;

/// The `dnsplane.v1.Applier` implementation.
#[derive(Debug, Clone)]
pub struct ApplierService {
    accounts: Arc<Accounts>,
    /// Who may send batches and claims (`[tls] writer_names`); empty: every client the
    /// connection lets in.
    writers: Arc<[String]>,
}

impl ApplierService {
    pub fn new(accounts: Arc<Accounts>) -> Self {
        ApplierService {
            accounts,
            writers: Arc::new([]),
        }
    }

    /// Only clients whose verified certificate carries one of `names` may `Apply` and
    /// `Claim`; others may only read. Empty: everyone.
    pub fn with_writers(mut self, names: Vec<String>) -> Self {
        self.writers = names.into();
        self
    }

    /// PERMISSION_DENIED, naming why, unless the client may write.
    fn may_write<T>(&self, request: &Request<T>, what: &str) -> Result<(), Status> {
        if self.writers.is_empty() {
            return Ok(());
        }
        let names = dnsplane_common::tls::client_identity(request).map(|id| id.dns_names.clone());
        match names {
            Some(n) if n.iter().any(|n| self.writers.contains(n)) => Ok(()),
            Some(n) => Err(Status::permission_denied(format!(
                "{what} is for planners: client certificate names {n:?} may read but not write (tls.writer_names {:?}); `dnsplane up` gives the planner planner.pem and operators client.pem",
                &*self.writers
            ))),
            None => Err(Status::permission_denied(format!(
                "{what} is for planners: it needs a client certificate named one of {:?} (tls.writer_names)",
                &*self.writers
            ))),
        }
    }

    /// Runs one batch request to its responses; never fails.
    pub async fn run_batch(&self, req: pb::ApplyRequest) -> Vec<pb::ApplyResponse> {
        let Some(batch) = req.batch else {
            tracing::warn!("An ApplyRequest without a batch; answering it with an empty result.");
            return vec![pb::ApplyResponse {
                done: true,
                ..Default::default()
            }];
        };
        let batch_id = batch.batch_id.clone();
        let account = batch.account.clone();
        let zone = name_from_pb("zone", &batch.zone).ok();
        let position = || {
            zone.as_ref()
                .and_then(|z| self.accounts.serial_position(&account, z))
        };
        let before = position();
        let answer = self.accounts.apply(batch_from_pb(batch)).await;
        let serials = SerialPosition::span(before, position());
        let mut out = respond(batch_id, &answer.results, answer.calls, serials);
        if let Some(last) = out.last_mut() {
            last.fenced = answer.fenced.as_ref().map(fenced_to_pb);
        }
        out
    }

    fn lifecycle(&self) -> &Lifecycle {
        self.accounts.lifecycle()
    }
}

/// A batch as the applier works on it: the zone and every change decoded, each bad
/// one with the field path of its problem.
fn batch_from_pb(batch: pb::Batch) -> BatchRequest {
    let zone = name_from_pb("batch.zone", &batch.zone).map_err(|e| e.to_string());
    let changes = batch
        .changes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let change = match &zone {
                Ok(z) => {
                    change_from_pb(&format!("batch.changes[{i}]"), z, c).map_err(|e| e.to_string())
                }
                Err(e) => Err(e.clone()),
            };
            (c.id.clone(), change)
        })
        .collect();
    BatchRequest {
        batch_id: batch.batch_id,
        account: batch.account,
        zone,
        changes,
        deadline: deadline(batch.deadline.as_ref()),
        fence: (batch.lease_epoch != 0).then(|| Fence {
            owner: batch.owner,
            epoch: batch.lease_epoch,
            holder: batch.lease_holder,
            backend: batch.lease_backend,
            ttl: claim_ttl(batch.lease_ttl.as_ref()),
        }),
    }
}

/// A claim's ttl from the wire (unset or unreadable: the default).
fn claim_ttl(ttl: Option<&dnsplane_common::wkt::Duration>) -> std::time::Duration {
    ttl.and_then(|d| std::time::Duration::try_from(*d).ok())
        .filter(|d| !d.is_zero())
        .unwrap_or(crate::claims::DEFAULT_TTL)
}

fn fenced_to_pb(f: &Fenced) -> pb::Fenced {
    pb::Fenced {
        epoch: f.epoch,
        holder: f.holder.clone(),
        backend: f.backend.clone(),
        shared_backend: f.shared_backend,
        message: f.message.clone(),
    }
}

/// The one place where a provider error becomes a gRPC status.
fn provider_status(e: &ProviderError) -> Status {
    let code = match e.class {
        ErrorClass::Transient | ErrorClass::Ambiguous => tonic::Code::Unavailable,
        ErrorClass::Permanent => tonic::Code::FailedPrecondition,
        ErrorClass::Invalid | ErrorClass::Conflict => tonic::Code::Internal,
    };
    let message = format!("provider: {e}");
    match e.retry_after {
        Some(d) => {
            Status::with_error_details(code, message, ErrorDetails::with_retry_info(Some(d)))
        }
        None => Status::new(code, message),
    }
}

fn list_status(e: ListError) -> Status {
    match e {
        ListError::UnknownAccount(_) | ListError::NotHosted { .. } => {
            Status::not_found(e.to_string())
        }
        ListError::CircuitOpen(why) => Status::failed_precondition(why),
        ListError::Provider(p) => provider_status(&p),
    }
}

/// The deadline as a monotonic instant (a passed deadline is "now").
fn deadline(ts: Option<&dnsplane_common::wkt::Timestamp>) -> Option<Instant> {
    let t = SystemTime::try_from(*ts?).ok()?;
    let left = t.duration_since(SystemTime::now()).unwrap_or_default();
    Some(Instant::now() + left)
}

/// The results of one batch as one or more messages, the last one `done`.
fn respond(
    batch_id: String,
    results: &[RecordResult],
    provider_calls: u32,
    serials: Option<(u64, u64)>,
) -> Vec<pb::ApplyResponse> {
    let (serial_before, serial_after) = serials.unwrap_or_default();
    let mut chunks: Vec<Vec<pb::RecordResult>> = results
        .chunks(RESULTS_PER_MESSAGE)
        .map(|c| c.iter().map(pb::RecordResult::from).collect())
        .collect();
    if chunks.is_empty() {
        chunks.push(Vec::new());
    }
    let last = chunks.len() - 1;
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, results)| pb::ApplyResponse {
            batch_id: batch_id.clone(),
            results,
            done: i == last,
            provider_calls: if i == last { provider_calls } else { 0 },
            serial_before: if i == last { serial_before } else { 0 },
            serial_after: if i == last { serial_after } else { 0 },
            fenced: None,
        })
        .collect()
}

/// A quota's status in the wire form (`AccountStatus.quota`).
pub(crate) fn quota_to_pb(q: &QuotaStatus) -> pb::QuotaStatus {
    pb::QuotaStatus {
        mode: q.mode.as_str().into(),
        rate: q.rate,
        current_rate: q.current_rate,
        burst: q.burst,
        replicas: q.replicas,
        ops: q.ops.as_str().into(),
        redis: q.redis.clone(),
        granted: q.granted,
        waited: q.waited,
        denied: q.denied,
        wait_total: Some(duration(q.wait_total)),
        throttled: q.throttled,
        fallbacks: q.fallbacks,
        last_redis_error: q.last_redis_error.clone(),
    }
}

/// An account's pacing in the wire form (`AccountStatus.pacing`).
pub(crate) fn pacing_to_pb(account: &str, p: &PacingStatus) -> pb::PacingStatus {
    pb::PacingStatus {
        enabled: p.enabled,
        current_rate: p.current_rate.unwrap_or(0.0),
        throttled_since: p.throttled_since.map(dnsplane_common::convert::timestamp),
        throttles: p.throttles,
        denied: p.denied,
        reason: p.reason(account).unwrap_or_default(),
    }
}

fn account_to_pb(a: &AccountStatus) -> pb::AccountStatus {
    pb::AccountStatus {
        name: a.name.clone(),
        driver: a.driver.to_string(),
        zones: a.zones.iter().map(ToString::to_string).collect(),
        calls_by_class: a
            .calls_by_class
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        outcomes: a
            .outcomes
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        batches: a.batches,
        serials: a.serials.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        circuit: a.circuit.state.into(),
        last_error: a.last_error.clone().unwrap_or_default(),
        faults: a.faults.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        quota: a.quota.as_ref().map(quota_to_pb),
        pacing: Some(pacing_to_pb(&a.name, &a.pacing)),
        notes: a.notes.clone(),
        routing_sets: a.routing_sets,
        properties: a.properties.iter().map(ToString::to_string).collect(),
    }
}

/// The applier's status in the wire form (`GetStatus`, and the admin port's
/// `/status`).
pub fn status_to_pb(s: &ApplierStatus) -> pb::ApplierStatus {
    pb::ApplierStatus {
        level: s.level.into(),
        reason: s.reasons.join("; "),
        accounts: s.accounts.iter().map(account_to_pb).collect(),
        uptime: Some(duration(s.uptime)),
    }
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl pb::applier_server::Applier for ApplierService {
    type ListRecordsStream = BoxStream<pb::ListRecordsResponse>;
    type ApplyStream = ReceiverStream<Result<pb::ApplyResponse, Status>>;

    async fn list_records(
        &self,
        request: Request<pb::ListRecordsRequest>,
    ) -> Result<Response<Self::ListRecordsStream>, Status> {
        let req = request.into_inner();
        if self.accounts.get(&req.account).is_none() {
            return Err(list_status(ListError::UnknownAccount(req.account)));
        }
        let zone = name_from_pb("zone", &req.zone).map_err(|e| invalid_argument(&[e]))?;
        let mut errors = Vec::new();
        let mut names = Vec::with_capacity(req.names.len());
        for (i, n) in req.names.iter().enumerate() {
            let field = format!("names[{i}]");
            match name_from_pb(&field, n) {
                Ok(name) if name.is_within(&zone) => names.push(name),
                Ok(name) => errors.push(FieldError::new(
                    field,
                    format!("{name} is outside zone {zone}"),
                )),
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return Err(invalid_argument(&errors));
        }
        let page_size = match req.page_size as usize {
            0 => DEFAULT_PAGE_SIZE,
            n => n.min(MAX_PAGE_SIZE),
        };
        if req.serial_only {
            let serial = self
                .accounts
                .serial(&req.account, &zone)
                .await
                .map_err(list_status)?;
            let one = pb::ListRecordsResponse {
                serial: serial.unwrap_or(0),
                last: true,
                ..Default::default()
            };
            return Ok(Response::new(Box::pin(futures::stream::iter([Ok(one)]))));
        }
        if req.unless_serial != 0 && !req.fresh && names.is_empty() {
            let serial = self
                .accounts
                .serial(&req.account, &zone)
                .await
                .map_err(list_status)?;
            if serial == Some(req.unless_serial) {
                let one = pb::ListRecordsResponse {
                    serial: req.unless_serial,
                    last: true,
                    unchanged: true,
                    ..Default::default()
                };
                return Ok(Response::new(Box::pin(futures::stream::iter([Ok(one)]))));
            }
        }
        let names = (!names.is_empty()).then_some(names);
        let listing = self
            .accounts
            .list(&req.account, &zone, names.as_deref(), req.fresh)
            .await
            .map_err(list_status)?;
        let serial = listing.serial.unwrap_or(0);
        // Pages are cut as they are sent, so a million RRSets are never all encoded at
        // once.
        let stream = futures::stream::unfold(Some(0usize), move |next| {
            let listing = listing.clone();
            async move {
                let start = next?;
                let (rrsets, end) = page(&listing.rrsets, start, page_size, MAX_PAGE_BYTES);
                let last = end == listing.rrsets.len();
                let resp = pb::ListRecordsResponse {
                    rrsets,
                    serial,
                    last,
                    unchanged: false,
                };
                Some((Ok(resp), (!last).then_some(end)))
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn apply(
        &self,
        request: Request<Streaming<pb::ApplyRequest>>,
    ) -> Result<Response<Self::ApplyStream>, Status> {
        self.may_write(&request, "Apply")?;
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(64);
        let service = self.clone();
        // The stream's tasks stay under the request's span (and so its trace).
        tokio::spawn(
            async move {
                let lifecycle = service.lifecycle().clone();
                let queued = Arc::new(Semaphore::new(MAX_QUEUED_PER_STREAM));
                let running = TaskTracker::new();
                // Batches of one zone run in the order the stream carries them (a planner
                // orders deletes before the creates that depend on them): each waits for
                // its predecessor's completion signal. Other zones are not held up.
                let mut last_of_zone: HashMap<(String, String), oneshot::Receiver<()>> =
                    HashMap::new();
                loop {
                    let msg = tokio::select! {
                        _ = lifecycle.close_streams.cancelled() => break,
                        m = inbound.message() => m,
                    };
                    let req = match msg {
                        Ok(Some(req)) => req,
                        Ok(None) => break,
                        Err(status) => {
                            tracing::debug!(%status, "Apply stream broke.");
                            break;
                        }
                    };
                    let Ok(slot) = queued.clone().acquire_owned().await else {
                        break;
                    };
                    let (done, done_rx) = oneshot::channel::<()>();
                    let previous = req.batch.as_ref().and_then(|b| {
                        let zone = name_from_pb("zone", &b.zone)
                            .map_or_else(|_| b.zone.clone(), |z| z.to_string());
                        last_of_zone.insert((b.account.clone(), zone), done_rx)
                    });
                    let (service, tx) = (service.clone(), tx.clone());
                    running.spawn(
                        lifecycle.batches.track_future(
                            async move {
                                if let Some(previous) = previous {
                                    // Err only means the predecessor's task is gone: go ahead.
                                    let _ = previous.await;
                                }
                                for resp in service.run_batch(req).await {
                                    // A gone client still gets its batches finished: the provider
                                    // calls are not abandoned half-way.
                                    if tx.send(Ok(resp)).await.is_err() {
                                        break;
                                    }
                                }
                                // Results of one zone also go out in order.
                                drop(done);
                                drop(slot);
                            }
                            .in_current_span(),
                        ),
                    );
                }
                running.close();
                running.wait().await;
            }
            .in_current_span(),
        );
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn get_status(
        &self,
        _request: Request<pb::GetApplierStatusRequest>,
    ) -> Result<Response<pb::ApplierStatus>, Status> {
        Ok(Response::new(status_to_pb(&self.accounts.status())))
    }

    async fn claim(
        &self,
        request: Request<pb::ClaimRequest>,
    ) -> Result<Response<pb::ClaimResponse>, Status> {
        self.may_write(&request, "Claim")?;
        let req = request.into_inner();
        let mut errors = Vec::new();
        if req.owner.is_empty() {
            errors.push(FieldError::new(
                "owner",
                "empty: name the planner's owner_id",
            ));
        }
        if req.lease_epoch == 0 {
            errors.push(FieldError::new(
                "lease_epoch",
                "0: a claim needs the lease's epoch",
            ));
        }
        if req.lease_holder.is_empty() {
            errors.push(FieldError::new(
                "lease_holder",
                "empty: name the lease holder",
            ));
        }
        if !errors.is_empty() {
            return Err(invalid_argument(&errors));
        }
        let fence = Fence {
            owner: req.owner,
            epoch: req.lease_epoch,
            holder: req.lease_holder,
            backend: req.lease_backend,
            ttl: claim_ttl(req.lease_ttl.as_ref()),
        };
        let answer = match self.accounts.claim(&fence) {
            Ok(()) => pb::ClaimResponse {
                granted: true,
                fenced: None,
            },
            Err(f) => pb::ClaimResponse {
                granted: false,
                fenced: Some(fenced_to_pb(&f)),
            },
        };
        Ok(Response::new(answer))
    }
}

/// The page of `rrsets` from `start`: at most `max_count` RRSets and, past the first,
/// at most `max_bytes` encoded. With the index where the next page starts.
fn page(
    rrsets: &[dnsplane_common::RRSet],
    start: usize,
    max_count: usize,
    max_bytes: usize,
) -> (Vec<pb::RrSet>, usize) {
    use prost::Message;
    let mut out = Vec::new();
    let mut bytes = 0;
    let mut end = start;
    for r in rrsets[start..].iter().take(max_count) {
        let one: pb::RrSet = r.into();
        // Each repeated element costs its length prefix and tag too.
        let len = one.encoded_len() + 8;
        if !out.is_empty() && bytes + len > max_bytes {
            break;
        }
        bytes += len;
        out.push(one);
        end += 1;
    }
    (out, end)
}

#[cfg(test)]
mod tests;
