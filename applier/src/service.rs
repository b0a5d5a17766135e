//! The `dnsplane.v1.Applier` gRPC service: listings through the cache, batches in and
//! per-record results out, status.
//!
//! Batches of one stream run concurrently across zones (bounded by
//! `max_concurrent_batches`) and strictly one at a time per (account, zone), in the
//! order the stream carries them; each batch's results are sent as soon as it
//! finishes. Nothing a batch carries can end the stream: a malformed change is
//! answered INVALID on its own.
use crate::account::Account;
use crate::batch::{self, Verdict};
use crate::cache::ListingCache;
use crate::circuit::Admission;
use crate::provider::{ErrorClass, Operation, ProviderError};
use crate::retry::RetryPolicy;
use dnsplane_common::convert::{FieldError, change_from_pb, duration, name_from_pb};
use dnsplane_common::grpc::invalid_argument;
use dnsplane_common::{Change, Name, RecordResult, pb};
use futures::Stream;
use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic::{Request, Response, Status, Streaming};
use tonic_types::{ErrorDetails, StatusExt};
use tracing::Instrument;

/// RRSets per `ListRecordsResponse` when the request does not say.
pub const DEFAULT_PAGE_SIZE: usize = 1000;
/// The most RRSets per page whatever the request asks, to bound message size.
pub const MAX_PAGE_SIZE: usize = 10_000;
/// Batches of one stream read but not finished; beyond it the stream is not read
/// (HTTP/2 flow control pushes back on the planner).
const MAX_QUEUED_PER_STREAM: usize = 256;
/// Results per `ApplyResponse` message.
const RESULTS_PER_MESSAGE: usize = 1000;

/// How the service runs; from the config.
#[derive(Clone, Debug)]
pub struct ServiceOptions {
    pub cache_ttl: Duration,
    pub max_concurrent_batches: usize,
    pub retry: RetryPolicy,
}

/// Lifecycle signals shared with `run`.
#[derive(Clone, Debug, Default)]
pub struct Lifecycle {
    /// Cancelled at shutdown: new batches are answered DEFERRED.
    pub draining: CancellationToken,
    /// Cancelled after the grace period: Apply streams stop reading and end.
    pub close_streams: CancellationToken,
    /// Tracks running batches, so shutdown can wait for them.
    pub batches: TaskTracker,
}

#[derive(Debug)]
struct Shared {
    accounts: BTreeMap<String, Arc<Account>>,
    cache: ListingCache,
    permits: Arc<Semaphore>,
    retry: RetryPolicy,
    lifecycle: Lifecycle,
    started: Instant,
}

/// The `dnsplane.v1.Applier` implementation.
#[derive(Debug, Clone)]
pub struct ApplierService {
    shared: Arc<Shared>,
}

impl ApplierService {
    pub fn new(accounts: Vec<Arc<Account>>, options: ServiceOptions, lifecycle: Lifecycle) -> Self {
        ApplierService {
            shared: Arc::new(Shared {
                accounts: accounts.into_iter().map(|a| (a.name.clone(), a)).collect(),
                cache: ListingCache::new(options.cache_ttl),
                permits: Arc::new(Semaphore::new(options.max_concurrent_batches.max(1))),
                retry: options.retry,
                lifecycle,
                started: Instant::now(),
            }),
        }
    }

    /// The listing cache, for metrics.
    pub fn cache(&self) -> &ListingCache {
        &self.shared.cache
    }

    /// The accounts, by name, for metrics.
    pub fn accounts(&self) -> Vec<Arc<Account>> {
        self.shared.accounts.values().cloned().collect()
    }

    /// Runs one batch request to its responses; never fails.
    pub async fn run_batch(&self, req: pb::ApplyRequest) -> Vec<pb::ApplyResponse> {
        self.shared.run_batch(req).await
    }
}

/// The one place where a provider error becomes a gRPC status.
fn provider_status(e: ProviderError) -> Status {
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

fn unknown_account(name: &str) -> String {
    format!("account {name:?} is not configured on this applier")
}

fn not_hosted(zone: &Name, account: &str) -> String {
    format!("zone {zone} is not hosted by account {account:?}")
}

/// The deadline as a monotonic instant (a passed deadline is "now").
fn deadline(ts: Option<&prost_types::Timestamp>) -> Option<Instant> {
    let t = SystemTime::try_from(*ts?).ok()?;
    let left = t.duration_since(SystemTime::now()).unwrap_or_default();
    Some(Instant::now() + left)
}

impl Shared {
    async fn run_batch(&self, req: pb::ApplyRequest) -> Vec<pb::ApplyResponse> {
        let Some(batch) = req.batch else {
            tracing::warn!("An ApplyRequest without a batch; answering it with an empty result.");
            return vec![pb::ApplyResponse {
                done: true,
                ..Default::default()
            }];
        };
        let span = crate::instrument::batch_span(
            &batch.account,
            &batch.zone,
            &batch.batch_id,
            batch.changes.len(),
        );
        self.run_batch_inner(batch).instrument(span).await
    }

    async fn run_batch_inner(&self, batch: pb::Batch) -> Vec<pb::ApplyResponse> {
        let all = |v: Verdict| -> Vec<RecordResult> {
            batch
                .changes
                .iter()
                .map(|c| v.clone().into_result(c.id.clone()))
                .collect()
        };
        let account = self.accounts.get(&batch.account);
        let (results, calls) = match (account, name_from_pb("batch.zone", &batch.zone)) {
            (None, _) => (
                all(Verdict::RejectedPermanent(unknown_account(&batch.account))),
                0,
            ),
            (Some(_), Err(e)) => (all(Verdict::Invalid(e.to_string())), 0),
            (Some(a), Ok(z)) if !a.hosts(&z) => {
                (all(Verdict::RejectedPermanent(not_hosted(&z, &a.name))), 0)
            }
            (Some(_), Ok(_)) if self.lifecycle.draining.is_cancelled() => (
                all(Verdict::Deferred {
                    retry_after: self.retry.deferred_retry_after,
                    message: "not attempted: the applier is shutting down".into(),
                }),
                0,
            ),
            (Some(a), Ok(z)) => self.apply_changes(a, &z, &batch).await,
        };
        if let Some(a) = account {
            a.stats.record_batch(&results);
        }
        let mut summary: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &results {
            *summary.entry(r.outcome.as_str()).or_default() += 1;
        }
        crate::instrument::record_batch(
            &tracing::Span::current(),
            account.map(|a| a.provider.driver()),
            calls,
            &results,
        );
        tracing::info!(changes = batch.changes.len(), provider_calls = calls, outcomes = ?summary, "Batch done.");
        respond(batch.batch_id, results, calls)
    }

    /// Decodes each change (a bad one is INVALID on its own) and runs the rest.
    async fn apply_changes(
        &self,
        account: &Account,
        zone: &Name,
        batch: &pb::Batch,
    ) -> (Vec<RecordResult>, u32) {
        let mut results: Vec<Option<RecordResult>> = vec![None; batch.changes.len()];
        let mut valid: Vec<(usize, Change)> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, c) in batch.changes.iter().enumerate() {
            let field = format!("batch.changes[{i}]");
            match change_from_pb(&field, zone, c) {
                Err(e) => {
                    results[i] = Some(Verdict::Invalid(e.to_string()).into_result(c.id.clone()))
                }
                Ok(change) => {
                    if let Some(j) = seen.get(&change.id) {
                        let e = FieldError::new(
                            format!("{field}.id"),
                            format!("duplicates batch.changes[{j}].id"),
                        );
                        results[i] = Some(Verdict::Invalid(e.to_string()).into_result(change.id));
                    } else {
                        seen.insert(change.id.clone(), i);
                        valid.push((i, change));
                    }
                }
            }
        }
        let mut calls = 0;
        if !valid.is_empty() {
            let (idx, changes): (Vec<usize>, Vec<Change>) = valid.into_iter().unzip();
            // A batch without a deadline still gets one: retries are bounded in time too.
            let deadline = deadline(batch.deadline.as_ref())
                .unwrap_or_else(|| Instant::now() + self.retry.batch_deadline);
            let report = self.execute(account, zone, &changes, Some(deadline)).await;
            calls = report.provider_calls;
            for (i, r) in idx.into_iter().zip(report.results) {
                results[i] = Some(r);
            }
        }
        let results = results
            .into_iter()
            .zip(&batch.changes)
            .map(|(r, c)| {
                r.unwrap_or_else(|| {
                    Verdict::Failed {
                        message: "internal error: the change got no outcome".into(),
                        retry_after: None,
                    }
                    .into_result(c.id.clone())
                })
            })
            .collect();
        (results, calls)
    }

    /// Runs the changes under the zone's lock and a global permit; a deadline that
    /// passes while waiting for either defers the batch untouched, and an open circuit
    /// rejects it without a provider call.
    async fn execute(
        &self,
        account: &Account,
        zone: &Name,
        changes: &[Change],
        deadline: Option<Instant>,
    ) -> batch::BatchReport {
        let lock = account.zone_lock(zone).unwrap_or_default();
        let wait = async {
            let guard = lock.lock_owned().await;
            let permit = self.permits.clone().acquire_owned().await.ok();
            (guard, permit)
        };
        let acquired = match deadline {
            Some(d) => tokio::time::timeout_at(d, wait).await.ok(),
            None => Some(wait.await),
        };
        let Some((_guard, Some(_permit))) = acquired else {
            let v = Verdict::Deferred {
                retry_after: self.retry.deferred_retry_after,
                message: "not attempted: the deadline passed while waiting for the zone".into(),
            };
            return batch::BatchReport {
                results: changes
                    .iter()
                    .map(|c| v.clone().into_result(c.id.clone()))
                    .collect(),
                ..Default::default()
            };
        };
        let admission = account.circuit.admit(Operation::Apply);
        if let Admission::Reject(why) = &admission {
            tracing::debug!(reason = %why, "Batch rejected by the open circuit.");
            let v = Verdict::RejectedPermanent(why.clone());
            return batch::BatchReport {
                results: changes
                    .iter()
                    .map(|c| v.clone().into_result(c.id.clone()))
                    .collect(),
                ..Default::default()
            };
        }
        let report = batch::execute(&*account.provider, zone, changes, deadline, &self.retry).await;
        drop(admission);
        crate::metrics::global().retried(&account.name, account.provider.driver(), &report.retries);
        // Any apply may have committed, whatever it answered.
        if report.provider_calls > 0 {
            self.cache.invalidate(&account.name, zone);
        }
        report
    }
}

/// The results of one batch as one or more messages, the last one `done`.
fn respond(
    batch_id: String,
    results: Vec<RecordResult>,
    provider_calls: u32,
) -> Vec<pb::ApplyResponse> {
    let mut chunks: Vec<Vec<pb::RecordResult>> = Vec::new();
    let mut it = results.iter().map(pb::RecordResult::from).peekable();
    while it.peek().is_some() {
        chunks.push(it.by_ref().take(RESULTS_PER_MESSAGE).collect());
    }
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
        })
        .collect()
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
        let shared = &self.shared;
        let account = shared
            .accounts
            .get(&req.account)
            .ok_or_else(|| Status::not_found(unknown_account(&req.account)))?;
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
        if !account.hosts(&zone) {
            return Err(Status::not_found(not_hosted(&zone, &account.name)));
        }
        let page_size = match req.page_size as usize {
            0 => DEFAULT_PAGE_SIZE,
            n => n.min(MAX_PAGE_SIZE),
        };
        let span =
            tracing::info_span!("list", account = %account.name, zone = %zone, fresh = req.fresh);
        let names = (!names.is_empty()).then_some(names);
        let admission = account.circuit.admit(Operation::List);
        if let Admission::Reject(why) = admission {
            return Err(Status::failed_precondition(why));
        }
        let listing = shared
            .cache
            .get(
                &account.name,
                &zone,
                &*account.provider,
                names.as_deref(),
                req.fresh,
            )
            .instrument(span)
            .await
            .map_err(provider_status)?;
        drop(admission);
        let total = listing.rrsets.len();
        let pages = total.div_ceil(page_size).max(1);
        let serial = listing.serial.unwrap_or(0);
        let stream = futures::stream::iter((0..pages).map(move |p| {
            let page =
                &listing.rrsets[(p * page_size).min(total)..((p + 1) * page_size).min(total)];
            Ok(pb::ListRecordsResponse {
                rrsets: page.iter().map(Into::into).collect(),
                serial,
                last: p + 1 == pages,
            })
        }));
        Ok(Response::new(Box::pin(stream)))
    }

    async fn apply(
        &self,
        request: Request<Streaming<pb::ApplyRequest>>,
    ) -> Result<Response<Self::ApplyStream>, Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(64);
        let service = self.clone();
        // The stream's tasks stay under the request's span (and so its trace).
        tokio::spawn(
            async move {
                let lifecycle = service.shared.lifecycle.clone();
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
        let shared = &self.shared;
        let mut reasons = Vec::new();
        let mut accounts = Vec::new();
        for account in shared.accounts.values() {
            let c = account.stats.snapshot();
            let circuit = account.circuit.status();
            reasons.extend(circuit.reason);
            let quota = account.quota.as_ref().map(|q| q.status());
            reasons.extend(quota.as_ref().and_then(|q| q.reason(&account.name)));
            accounts.push(pb::AccountStatus {
                name: account.name.clone(),
                driver: account.provider.driver().to_string(),
                zones: account.zones().map(ToString::to_string).collect(),
                calls_by_class: c
                    .calls_by_class
                    .iter()
                    .map(|(k, v)| (k.to_string(), *v))
                    .collect(),
                outcomes: c
                    .outcomes
                    .iter()
                    .map(|(k, v)| (k.to_string(), *v))
                    .collect(),
                batches: c.batches,
                serials: c.serials.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                circuit: circuit.state.into(),
                last_error: c.last_error.unwrap_or_default(),
                faults: account
                    .faults_fired()
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
                quota: quota.as_ref().map(crate::quota::QuotaStatus::to_pb),
            });
        }
        let level = if reasons.is_empty() {
            "healthy"
        } else {
            "degraded"
        };
        Ok(Response::new(pb::ApplierStatus {
            level: level.into(),
            reason: reasons.join("; "),
            accounts,
            uptime: Some(duration(shared.started.elapsed())),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::memory::MemoryProvider;
    use crate::provider::memory::store::MemoryStore;
    use dnsplane_common::{ChangeKind, RRSet, RRSetOp, RecordKey, RecordType};

    fn zone() -> Name {
        Name::parse("example.com").unwrap()
    }

    fn service(dir: &std::path::Path, lifecycle: Lifecycle) -> ApplierService {
        let store = Arc::new(MemoryStore::open(dir).unwrap());
        let provider = Arc::new(MemoryProvider::new(store, vec![zone()]).unwrap());
        let account = Arc::new(Account::new("acct", provider, &[zone()]));
        let options = ServiceOptions {
            cache_ttl: Duration::from_secs(30),
            max_concurrent_batches: 2,
            retry: RetryPolicy::default(),
        };
        ApplierService::new(vec![account], options, lifecycle)
    }

    fn request(deadline: Option<SystemTime>) -> pb::ApplyRequest {
        let key = RecordKey::new(zone(), Name::parse("a.example.com").unwrap(), RecordType::A);
        let change = Change::new(
            ChangeKind::Create,
            vec![RRSetOp::create(
                RRSet::new(key, 60, &["192.0.2.1"]).unwrap(),
            )],
        );
        pb::ApplyRequest {
            batch: Some(pb::Batch {
                batch_id: "b".into(),
                account: "acct".into(),
                zone: "example.com.".into(),
                changes: vec![(&change).into()],
                deadline: deadline.map(dnsplane_common::convert::timestamp),
            }),
        }
    }

    #[tokio::test]
    async fn batches_after_shutdown_are_deferred_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let lifecycle = Lifecycle::default();
        let svc = service(dir.path(), lifecycle.clone());
        lifecycle.draining.cancel();
        let resp = svc.run_batch(request(None)).await;
        let r = &resp[0].results[0];
        assert_eq!(r.outcome(), pb::Outcome::Deferred);
        assert_eq!(
            r.retry_after,
            Some(duration(RetryPolicy::default().deferred_retry_after))
        );
        assert!(resp[0].done);
        assert_eq!(resp[0].provider_calls, 0);
    }

    #[tokio::test]
    async fn a_passed_deadline_defers_and_a_missing_batch_is_answered() {
        let dir = tempfile::tempdir().unwrap();
        let svc = service(dir.path(), Lifecycle::default());
        let past = SystemTime::now() - Duration::from_secs(5);
        let resp = svc.run_batch(request(Some(past))).await;
        assert_eq!(resp[0].results[0].outcome(), pb::Outcome::Deferred);
        assert_eq!(resp[0].provider_calls, 0);
        let future = SystemTime::now() + Duration::from_secs(60);
        let resp = svc.run_batch(request(Some(future))).await;
        assert_eq!(resp[0].results[0].outcome(), pb::Outcome::Applied);

        let resp = svc.run_batch(pb::ApplyRequest { batch: None }).await;
        assert_eq!(resp.len(), 1);
        assert!(resp[0].done && resp[0].results.is_empty());
    }

    #[test]
    fn large_result_sets_are_split_over_messages() {
        let results = vec![
            RecordResult::new("c", dnsplane_common::Outcome::Applied);
            RESULTS_PER_MESSAGE * 2 + 1
        ];
        let msgs = respond("b".into(), results, 7);
        assert_eq!(
            msgs.iter().map(|m| m.results.len()).collect::<Vec<_>>(),
            vec![1000, 1000, 1]
        );
        assert_eq!(
            msgs.iter().map(|m| m.done).collect::<Vec<_>>(),
            vec![false, false, true]
        );
        assert_eq!(msgs.iter().map(|m| m.provider_calls).sum::<u32>(), 7);
    }

    /// Two accounts; `acct` refuses writes as configured by `faults`, `other` works.
    fn two_accounts(dir: &std::path::Path, faults: &str) -> ApplierService {
        use crate::account::AccountOptions;
        use crate::circuit::CircuitConfig;
        use crate::provider::fault::{FaultRuleConfig, compile_rules};
        #[derive(serde::Deserialize)]
        struct Rules {
            faults: Vec<FaultRuleConfig>,
        }
        let rules: Rules = toml::from_str(faults).unwrap();
        let mut accounts = Vec::new();
        for (name, faults) in [
            ("acct", compile_rules(&rules.faults, &[zone()]).unwrap()),
            ("other", Vec::new()),
        ] {
            let store = Arc::new(MemoryStore::open(dir.join(name)).unwrap());
            let provider = Arc::new(MemoryProvider::new(store, vec![zone()]).unwrap());
            let options = AccountOptions {
                faults,
                circuit: CircuitConfig {
                    cool_down: Duration::from_secs(10),
                    max_cool_down: Duration::from_secs(60),
                    jitter: 0.0,
                },
                ..AccountOptions::default()
            };
            accounts.push(Arc::new(Account::with_options(
                name,
                provider,
                &[zone()],
                options,
            )));
        }
        let options = ServiceOptions {
            cache_ttl: Duration::from_secs(30),
            max_concurrent_batches: 2,
            retry: RetryPolicy::default(),
        };
        ApplierService::new(accounts, options, Lifecycle::default())
    }

    fn batch_for(account: &str, label: &str) -> pb::ApplyRequest {
        let key = RecordKey::new(zone(), zone().prepend(label).unwrap(), RecordType::A);
        let change = Change::new(
            ChangeKind::Create,
            vec![RRSetOp::create(
                RRSet::new(key, 60, &["192.0.2.1"]).unwrap(),
            )],
        );
        pb::ApplyRequest {
            batch: Some(pb::Batch {
                batch_id: format!("{account}-{label}"),
                account: account.into(),
                zone: "example.com.".into(),
                changes: vec![(&change).into()],
                deadline: None,
            }),
        }
    }

    async fn status(svc: &ApplierService) -> pb::ApplierStatus {
        use pb::applier_server::Applier as _;
        svc.get_status(Request::new(pb::GetApplierStatusRequest {}))
            .await
            .unwrap()
            .into_inner()
    }

    #[tokio::test(start_paused = true)]
    async fn a_permanent_answer_opens_the_account_circuit_and_a_probe_closes_it() {
        let dir = tempfile::tempdir().unwrap();
        // Two refusals, then the credentials "work again".
        let svc = two_accounts(
            dir.path(),
            "[[faults]]\nop = \"apply\"\naction = \"error\"\nstatus = 401\nmessage = \"401 Unauthorized: bad API key\"\ntimes = 2\n",
        );
        let first = &svc.run_batch(batch_for("acct", "a")).await[0];
        assert_eq!(first.results[0].outcome(), pb::Outcome::RejectedPermanent);
        assert_eq!(first.results[0].message, "401 Unauthorized: bad API key");
        assert_eq!(first.provider_calls, 1);

        let st = status(&svc).await;
        assert_eq!(st.level, "degraded");
        assert!(
            st.reason.contains("\"acct\"") && st.reason.contains("401 Unauthorized: bad API key"),
            "{}",
            st.reason
        );
        let acct = st.accounts.iter().find(|a| a.name == "acct").unwrap();
        assert_eq!(acct.circuit, "open");
        assert_eq!(acct.faults.get("error"), Some(&1));
        let other = st.accounts.iter().find(|a| a.name == "other").unwrap();
        assert_eq!(other.circuit, "closed");

        // While open: rejected without a provider call, however many batches come.
        for i in 0..20 {
            let r = &svc.run_batch(batch_for("acct", &format!("b{i}"))).await[0];
            assert_eq!(r.results[0].outcome(), pb::Outcome::RejectedPermanent);
            assert!(
                r.results[0].message.contains("circuit open"),
                "{}",
                r.results[0].message
            );
            assert_eq!(r.provider_calls, 0);
        }
        // Other accounts are unaffected; reads of the refused account still work.
        let ok = &svc.run_batch(batch_for("other", "a")).await[0];
        assert_eq!(ok.results[0].outcome(), pb::Outcome::Applied);
        assert!(
            svc.shared.accounts["acct"]
                .circuit
                .admit(Operation::List)
                .is_pass()
        );

        // After the cool-down one probe goes through; it is refused: open for 20 s.
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(status(&svc).await.accounts[0].circuit, "half_open");
        let probe = &svc.run_batch(batch_for("acct", "c")).await[0];
        assert_eq!(probe.provider_calls, 1);
        assert_eq!(probe.results[0].message, "401 Unauthorized: bad API key");
        tokio::time::advance(Duration::from_secs(19)).await;
        assert_eq!(
            svc.run_batch(batch_for("acct", "d")).await[0].provider_calls,
            0
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        // The next probe is answered: closed, healthy, writes flow again.
        let probe = &svc.run_batch(batch_for("acct", "e")).await[0];
        assert_eq!(probe.results[0].outcome(), pb::Outcome::Applied);
        let st = status(&svc).await;
        assert_eq!((st.level.as_str(), st.reason.as_str()), ("healthy", ""));
        assert_eq!(st.accounts[0].circuit, "closed");
        let acct = &st.accounts[0];
        assert_eq!(acct.calls_by_class.get("permanent"), Some(&2));
        assert_eq!(acct.outcomes.get("REJECTED_PERMANENT"), Some(&23));
    }
}
