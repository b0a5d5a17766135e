//! What the applier does, in domain terms, for the gRPC service and the admin port
//! alike: read a zone through the cache, run one batch under its zone's lock, and tell
//! its status. No proto type appears here ([`crate::service`] converts).
use crate::account::Account;
use crate::apply::{self, BatchReport, Verdict};
use crate::cache::ListingCache;
use crate::circuit::{Admission, CircuitStatus};
use crate::claims::{Claims, Passed};
use crate::events;
use crate::provider::call::CallCx;
use crate::provider::record_cache::SerialPosition;
use crate::provider::{Listing, Operation, ProviderError};
use crate::quota::{PacingStatus, QuotaStatus};
use crate::retry::RetryPolicy;
use dnsplane_common::{Change, Name, RecordResult};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

/// How the accounts are run; from the config.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub cache_ttl: Duration,
    pub max_concurrent_batches: usize,
    pub retry: RetryPolicy,
}

/// Lifecycle signals shared with `run` and the gRPC service.
#[derive(Clone, Debug, Default)]
pub struct Lifecycle {
    /// Cancelled at shutdown: new batches are answered DEFERRED.
    pub draining: CancellationToken,
    /// Cancelled after the grace period: Apply streams stop reading and end.
    pub close_streams: CancellationToken,
    /// Tracks running batches, so shutdown can wait for them.
    pub batches: TaskTracker,
}

/// Why a listing was refused.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("account {0:?} is not configured on this applier")]
    UnknownAccount(String),
    #[error("zone {zone} is not hosted by account {account:?}")]
    NotHosted { zone: Name, account: String },
    /// The account's circuit is open.
    #[error("{0}")]
    CircuitOpen(String),
    #[error("provider: {0}")]
    Provider(#[source] ProviderError),
}

/// One batch as the applier receives it, decoded: each change, or why it could not be
/// read (it is answered INVALID on its own).
#[derive(Debug)]
pub struct BatchRequest {
    pub batch_id: String,
    pub account: String,
    /// The zone, or why its name is unreadable.
    pub zone: Result<Name, String>,
    /// Per change: its id and the change, or the reason it is invalid.
    pub changes: Vec<(String, Result<Change, String>)>,
    pub deadline: Option<Instant>,
    /// The sending planner's lease, when it sends one.
    pub fence: Option<Fence>,
}

pub use crate::claims::{Fence, Fenced};

/// One batch's answer: a result per change, the provider calls it cost, and, when the
/// owner's claim refused it, who holds that claim.
#[derive(Debug, Default)]
pub struct BatchAnswer {
    pub results: Vec<RecordResult>,
    pub calls: u32,
    pub fenced: Option<Fenced>,
}

/// One account as `GetStatus` shows it.
#[derive(Debug, Clone)]
pub struct AccountStatus {
    pub name: String,
    pub driver: &'static str,
    pub zones: Vec<Name>,
    pub calls_by_class: BTreeMap<&'static str, u64>,
    pub outcomes: BTreeMap<&'static str, u64>,
    pub batches: u64,
    pub serials: BTreeMap<Name, u64>,
    pub circuit: CircuitStatus,
    pub last_error: Option<String>,
    pub faults: BTreeMap<&'static str, u64>,
    pub quota: Option<QuotaStatus>,
    /// Its pacing after the provider's 429 answers.
    pub pacing: PacingStatus,
    /// What the driver learnt of its server ([`crate::provider::Provider::notes`]).
    pub notes: Vec<String>,
    /// What the driver writes beyond plain sets: routing-policy sets, properties.
    pub routing_sets: bool,
    pub properties: &'static [&'static str],
}

/// The whole applier as `GetStatus` shows it.
#[derive(Debug, Clone)]
pub struct ApplierStatus {
    /// `healthy` or `degraded`.
    pub level: &'static str,
    pub reasons: Vec<String>,
    pub accounts: Vec<AccountStatus>,
    pub uptime: Duration,
}

/// The applier's accounts, its listing cache and batch slots.
#[derive(Debug)]
pub struct Accounts {
    accounts: BTreeMap<String, Arc<Account>>,
    cache: ListingCache,
    permits: Arc<Semaphore>,
    retry: RetryPolicy,
    lifecycle: Lifecycle,
    started: Instant,
    /// Each owner's writer ([`crate::claims`]). Checked under the zone's lock, so a
    /// fenced planner's batch cannot run after (or during) the new writer's batch for
    /// the same zone on this applier.
    claims: Claims,
}

impl Accounts {
    pub fn new(accounts: Vec<Arc<Account>>, options: RunOptions, lifecycle: Lifecycle) -> Self {
        Accounts {
            accounts: accounts.into_iter().map(|a| (a.name.clone(), a)).collect(),
            cache: ListingCache::new(options.cache_ttl),
            permits: Arc::new(Semaphore::new(options.max_concurrent_batches.max(1))),
            retry: options.retry,
            lifecycle,
            started: Instant::now(),
            claims: Claims::default(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Account>> {
        self.accounts.get(name)
    }

    pub fn all(&self) -> impl Iterator<Item = &Arc<Account>> {
        self.accounts.values()
    }

    pub fn cache(&self) -> &ListingCache {
        &self.cache
    }

    pub fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }

    /// `account`, if it is configured and hosts `zone`.
    fn hosting(&self, account: &str, zone: &Name) -> Result<&Arc<Account>, ListError> {
        let account = self
            .accounts
            .get(account)
            .ok_or_else(|| ListError::UnknownAccount(account.to_string()))?;
        if !account.hosts(zone) {
            return Err(ListError::NotHosted {
                zone: zone.clone(),
                account: account.name.clone(),
            });
        }
        Ok(account)
    }

    /// The RRSets of `zone` (only at `names`, when given), through the cache.
    pub async fn list(
        &self,
        account: &str,
        zone: &Name,
        names: Option<&[Name]>,
        fresh: bool,
    ) -> Result<Arc<Listing>, ListError> {
        let account = self.hosting(account, zone)?;
        let span =
            tracing::info_span!("list", account = %account.name, zone = %zone, fresh = fresh);
        let admission = account.circuit.admit(Operation::List);
        if let Admission::Reject(why) = admission {
            return Err(ListError::CircuitOpen(why));
        }
        let cx = CallCx::new(account.name.as_str(), Some(zone.clone()));
        let listing = self
            .cache
            .get(&account.stack, &cx, names, fresh)
            .instrument(span)
            .await
            .map_err(ListError::Provider);
        drop(admission);
        listing
    }

    /// The zone's serial straight from the provider (one cheap call, through the
    /// account's stack: quota, circuit, metrics); `None` when the provider has none.
    pub async fn serial(&self, account: &str, zone: &Name) -> Result<Option<u64>, ListError> {
        let account = self.hosting(account, zone)?;
        if !account.stack.capabilities().has_serial {
            return Ok(None);
        }
        let admission = account.circuit.admit(Operation::List);
        if let Admission::Reject(why) = admission {
            return Err(ListError::CircuitOpen(why));
        }
        let cx = CallCx::new(account.name.as_str(), Some(zone.clone()));
        let serial = account.stack.serial(&cx).await.map_err(ListError::Provider);
        drop(admission);
        serial
    }

    /// Where the driver of `account` has `zone`'s serial from its own writes (no call).
    pub fn serial_position(&self, account: &str, zone: &Name) -> Option<SerialPosition> {
        self.accounts.get(account)?.serial_position(zone)
    }

    /// Runs one batch to one result per change, in order, and the provider calls it
    /// cost. Never fails: an unknown account, a zone it does not host, a draining
    /// applier, a malformed or repeated change are all answered per change.
    pub async fn apply(&self, batch: BatchRequest) -> BatchAnswer {
        let span = events::batch_span(
            &batch.account,
            batch.zone.as_ref().map_or("", |z| z.as_str()),
            &batch.batch_id,
            batch.changes.len(),
        );
        let account = self.accounts.get(&batch.account);
        let answer = self
            .apply_in(account, &batch)
            .instrument(span.clone())
            .await;
        span.in_scope(|| {
            events::BatchFinished {
                metrics: account.map(|a| &a.metrics),
                span: &span,
                changes: batch.changes.len(),
                provider_calls: answer.calls,
                results: &answer.results,
            }
            .emit()
        });
        answer
    }

    /// Takes or refreshes `f`'s claim on its owner without a batch (a leader's
    /// heartbeat, and a fenced planner asking whether it may write again).
    pub fn claim(&self, f: &Fence) -> Result<(), Fenced> {
        self.pass_fence(f, false)
    }

    async fn apply_in(&self, account: Option<&Arc<Account>>, batch: &BatchRequest) -> BatchAnswer {
        let all = |v: Verdict| -> BatchAnswer {
            BatchAnswer {
                results: batch
                    .changes
                    .iter()
                    .map(|(id, _)| v.clone().into_result(id.clone()))
                    .collect(),
                ..Default::default()
            }
        };
        match (account, &batch.zone) {
            (None, _) => all(Verdict::RejectedPermanent(format!(
                "account {:?} is not configured on this applier",
                batch.account
            ))),
            (Some(_), Err(e)) => all(Verdict::Invalid(e.clone())),
            (Some(a), Ok(z)) if !a.hosts(z) => all(Verdict::RejectedPermanent(format!(
                "zone {z} is not hosted by account {:?}",
                a.name
            ))),
            (Some(_), Ok(_)) if self.lifecycle.draining.is_cancelled() => all(Verdict::Deferred {
                retry_after: self.retry.deferred_retry_after,
                message: "not attempted: the applier is shutting down".into(),
            }),
            (Some(a), Ok(z)) => self.apply_changes(a, z, batch).await,
        }
    }

    /// A change that cannot be read, or that repeats an id, is INVALID on its own; the
    /// rest run.
    async fn apply_changes(
        &self,
        account: &Account,
        zone: &Name,
        batch: &BatchRequest,
    ) -> BatchAnswer {
        let mut results: Vec<Option<RecordResult>> = vec![None; batch.changes.len()];
        let mut valid: Vec<(usize, Change)> = Vec::new();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, (id, change)) in batch.changes.iter().enumerate() {
            match change {
                Err(e) => results[i] = Some(Verdict::Invalid(e.clone()).into_result(id.clone())),
                Ok(change) => match seen.get(change.id.as_str()) {
                    Some(j) => {
                        let e = format!("batch.changes[{i}].id: duplicates batch.changes[{j}].id");
                        results[i] = Some(Verdict::Invalid(e).into_result(change.id.clone()));
                    }
                    None => {
                        seen.insert(change.id.as_str(), i);
                        valid.push((i, change.clone()));
                    }
                },
            }
        }
        let mut calls = 0;
        let mut fenced = None;
        if !valid.is_empty() {
            let (idx, changes): (Vec<usize>, Vec<Change>) = valid.into_iter().unzip();
            // A batch without a deadline still gets one: retries are bounded in time too.
            let deadline = batch
                .deadline
                .unwrap_or_else(|| Instant::now() + self.retry.batch_deadline);
            let (report, refused) = self
                .execute(account, zone, &changes, deadline, batch.fence.as_ref())
                .await;
            calls = report.provider_calls;
            fenced = refused;
            for (i, r) in idx.into_iter().zip(report.results) {
                results[i] = Some(r);
            }
        }
        let results = results
            .into_iter()
            .zip(&batch.changes)
            .map(|(r, (id, _))| {
                r.unwrap_or_else(|| {
                    Verdict::Failed {
                        message: "internal error: the change got no outcome".into(),
                        retry_after: None,
                    }
                    .into_result(id.clone())
                })
            })
            .collect();
        BatchAnswer {
            results,
            calls,
            fenced,
        }
    }

    /// Runs the changes under the zone's lock and a global permit; a deadline that
    /// passes while waiting for either defers the batch untouched, so does a `fence`
    /// that the owner's claim refuses (and then says who holds it), and an open circuit
    /// rejects it without a provider call.
    async fn execute(
        &self,
        account: &Account,
        zone: &Name,
        changes: &[Change],
        deadline: Instant,
        fence: Option<&Fence>,
    ) -> (BatchReport, Option<Fenced>) {
        let all = |v: Verdict| BatchReport {
            results: changes
                .iter()
                .map(|c| v.clone().into_result(c.id.clone()))
                .collect(),
            ..Default::default()
        };
        let lock = account.zone_lock(zone).unwrap_or_default();
        let wait = async {
            let guard = lock.lock_owned().await;
            let permit = self.permits.clone().acquire_owned().await.ok();
            (guard, permit)
        };
        let Ok((_guard, Some(_permit))) = tokio::time::timeout_at(deadline, wait).await else {
            let v = Verdict::Deferred {
                retry_after: self.retry.deferred_retry_after,
                message: "not attempted: the deadline passed while waiting for the zone".into(),
            };
            return (all(v), None);
        };
        if let Some(f) = fence
            && let Err(fenced) = self.pass_fence(f, true)
        {
            let v = Verdict::Deferred {
                retry_after: self.retry.deferred_retry_after,
                message: format!("not attempted (fenced): {}", fenced.message),
            };
            return (all(v), Some(fenced));
        }
        let admission = account.circuit.admit(Operation::Apply);
        if let Admission::Reject(why) = &admission {
            tracing::debug!(reason = %why, "Batch rejected by the open circuit.");
            return (all(Verdict::RejectedPermanent(why.clone())), None);
        }
        let cx =
            CallCx::new(account.name.as_str(), Some(zone.clone())).with_deadline(Some(deadline));
        let report = apply::execute(&account.stack, &cx, changes, &self.retry).await;
        drop(admission);
        // Any apply may have committed, whatever it answered.
        if report.provider_calls > 0 {
            self.cache.invalidate(&account.name, zone);
        }
        (report, None)
    }

    /// Passes `f` through its owner's claim (epoch 0: a planner without a lease, not
    /// fenced); each takeover is an event, so is each refused batch (a refused claim,
    /// which a fenced planner repeats, is logged at debug).
    fn pass_fence(&self, f: &Fence, batch: bool) -> Result<(), Fenced> {
        if f.epoch == 0 {
            return Ok(());
        }
        match self.claims.pass(f, Instant::now()) {
            Ok(Passed::Kept) => Ok(()),
            Ok(Passed::TookOver { from, stale }) => {
                events::ClaimTakenOver {
                    owner: &f.owner,
                    holder: &f.holder,
                    epoch: f.epoch,
                    from: &from,
                    stale,
                }
                .emit();
                Ok(())
            }
            Err(fenced) => {
                events::BatchFenced {
                    owner: &f.owner,
                    holder: &f.holder,
                    epoch: f.epoch,
                    fenced: &fenced,
                    batch,
                }
                .emit();
                Err(fenced)
            }
        }
    }

    /// Every account's counters, circuit, faults and quota, and the applier's level.
    pub fn status(&self) -> ApplierStatus {
        let mut reasons = Vec::new();
        let mut accounts = Vec::new();
        for account in self.accounts.values() {
            let circuit = account.circuit.status();
            reasons.extend(circuit.reason.clone());
            let quota = account.quota.as_ref().map(|q| q.status());
            reasons.extend(quota.as_ref().and_then(|q| q.reason(&account.name)));
            let pacing = account.pacer.status();
            reasons.extend(pacing.reason(&account.name));
            accounts.push(AccountStatus {
                name: account.name.clone(),
                driver: account.driver(),
                zones: account.zones().cloned().collect(),
                calls_by_class: account.metrics.calls_by_class(),
                outcomes: account.metrics.outcomes(),
                batches: account.metrics.batches(),
                serials: account.seen.serials(),
                circuit,
                last_error: account.seen.last_error(),
                faults: account.faults_fired(),
                quota,
                pacing,
                notes: account.notes(),
                routing_sets: account.capabilities().routing_sets,
                properties: account.capabilities().properties,
            });
        }
        ApplierStatus {
            level: if reasons.is_empty() {
                "healthy"
            } else {
                "degraded"
            },
            reasons,
            accounts,
            uptime: self.started.elapsed(),
        }
    }
}
