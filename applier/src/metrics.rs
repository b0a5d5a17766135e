//! The applier's Prometheus metrics and its admin port (`/metrics`, `/healthz`,
//! `/readyz`, `/status`), next to gRPC; see [`dnsplane_common::metrics`].
//!
//! | metric | type | labels | source |
//! |---|---|---|---|
//! | `dnsplane_provider_requests_total` | counter | `account`, `provider`, `operation` (`zones` `serial` `list` `apply`), `class` (`success` or an error class) | every provider call ([`crate::instrument::Instrumented`]) |
//! | `dnsplane_provider_request_duration_seconds` | histogram | `provider`, `operation` | every provider call |
//! | `dnsplane_provider_retries_total` | counter | `account`, `provider`, `operation` | a transient answer retried inside a batch |
//! | `dnsplane_applier_record_outcomes_total` | counter | `account`, `provider`, `outcome` (`applied` ... `rejected_permanent`) | the account's counters (as `GetStatus`), at scrape time |
//! | `dnsplane_applier_batches_total` | counter | `account`, `provider` | the account's counters, at scrape time |
//! | `dnsplane_circuit_state` | gauge | `account`, `state` (`closed` `open` `half_open`; 1 for the current one) | the circuit breaker, at scrape time |
//! | `dnsplane_faults_injected_total` | counter | `account`, `action` | the fault-injection layer, at scrape time (only with `[[accounts.faults]]`) |
//! | `dnsplane_cache_hits_total`, `dnsplane_cache_misses_total` | counter | — | the listing cache, at scrape time |
//! | `dnsplane_quota_wait_seconds` | histogram | `account` | hook [`ApplierMetrics::observe_quota_wait`] |
//! | `dnsplane_quota_tokens` | gauge | `account` | hook [`ApplierMetrics::set_quota_tokens`] |
//! | `dnsplane_build_info`, `dnsplane_process_start_time_seconds` | | `service`, `version` | start |
//!
//! Counters that the applier already keeps for `GetStatus` (outcomes, batches, faults,
//! cache) are read at scrape time by a collector, so `/metrics` and `GetStatus` can
//! never disagree. Provider requests, their latency and retries are counted as they
//! happen, in the process-wide [`global`] families.
//!
//! Quotas: the two `dnsplane_quota_*` families are registered and documented; the quota
//! layer feeds them through [`ApplierMetrics::observe_quota_wait`] (each wait for
//! tokens, zero included) and [`ApplierMetrics::set_quota_tokens`] (tokens left after
//! each take), inside a `quota.wait` span (see [`crate::instrument`]).
use crate::account::Account;
use crate::service::ApplierService;
use dnsplane_common::convert::outcome_name;
use dnsplane_common::metrics::{AdminServer, register_build_info};
use dnsplane_common::pb;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

/// Every outcome, so that `dnsplane_applier_record_outcomes_total` shows zeros too.
const OUTCOMES: [pb::Outcome; 7] = [
    pb::Outcome::Applied,
    pb::Outcome::AlreadyApplied,
    pb::Outcome::Conflict,
    pb::Outcome::Invalid,
    pb::Outcome::Deferred,
    pb::Outcome::Failed,
    pb::Outcome::RejectedPermanent,
];

/// Every circuit state, for `dnsplane_circuit_state`.
const CIRCUIT_STATES: [&str; 3] = ["closed", "open", "half_open"];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub account: String,
    pub provider: String,
    pub operation: String,
    pub class: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LatencyLabels {
    pub provider: String,
    pub operation: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RetryLabels {
    pub account: String,
    pub provider: String,
    pub operation: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AccountLabels {
    pub account: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    account: String,
    provider: String,
    outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BatchLabels {
    account: String,
    provider: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CircuitLabels {
    account: String,
    state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FaultLabels {
    account: String,
    action: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;
type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn request_histogram() -> Histogram {
    // 1 ms .. ~33 s: an embedded write is sub-millisecond, a slow API call seconds.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

fn wait_histogram() -> Histogram {
    // 1 ms .. ~65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The families counted as things happen. Cheap to clone: clones share the values.
#[derive(Debug, Clone)]
pub struct ApplierMetrics {
    provider_requests: Family<RequestLabels, Counter>,
    provider_duration: HistogramFamily<LatencyLabels>,
    retries: Family<RetryLabels, Counter>,
    quota_wait: HistogramFamily<AccountLabels>,
    quota_tokens: Family<AccountLabels, FloatGauge>,
}

impl Default for ApplierMetrics {
    fn default() -> Self {
        ApplierMetrics {
            provider_requests: Family::default(),
            provider_duration: Family::new_with_constructor(request_histogram),
            retries: Family::default(),
            quota_wait: Family::new_with_constructor(wait_histogram),
            quota_tokens: Family::default(),
        }
    }
}

static GLOBAL: LazyLock<ApplierMetrics> = LazyLock::new(ApplierMetrics::default);

/// The process-wide families: what the provider decorator and the batch path record
/// into, and what the admin port serves.
pub fn global() -> &'static ApplierMetrics {
    &GLOBAL
}

impl ApplierMetrics {
    /// Adds every family to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "dnsplane_provider_requests",
            "Provider API calls, by account, driver, operation and answer class (success or the error class)",
            self.provider_requests.clone(),
        );
        registry.register(
            "dnsplane_provider_request_duration_seconds",
            "Duration of provider API calls, by driver and operation",
            self.provider_duration.clone(),
        );
        registry.register(
            "dnsplane_provider_retries",
            "Transient provider answers retried inside a batch, by account, driver and operation",
            self.retries.clone(),
        );
        registry.register(
            "dnsplane_quota_wait_seconds",
            "Time spent waiting for provider quota tokens before a call, by account",
            self.quota_wait.clone(),
        );
        registry.register(
            "dnsplane_quota_tokens",
            "Provider quota tokens left after the last take, by account",
            self.quota_tokens.clone(),
        );
    }

    /// One provider call of `account` (driver `provider`) answered `class` after
    /// `elapsed`.
    pub fn request(
        &self,
        account: &str,
        provider: &str,
        operation: &str,
        class: &str,
        elapsed: Duration,
    ) {
        self.provider_requests
            .get_or_create(&RequestLabels {
                account: account.into(),
                provider: provider.into(),
                operation: operation.into(),
                class: class.into(),
            })
            .inc();
        self.provider_duration
            .get_or_create(&LatencyLabels {
                provider: provider.into(),
                operation: operation.into(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Retries one batch made, by operation.
    pub fn retried(&self, account: &str, provider: &str, by_operation: &BTreeMap<&str, u64>) {
        for (operation, n) in by_operation {
            self.retries
                .get_or_create(&RetryLabels {
                    account: account.into(),
                    provider: provider.into(),
                    operation: (*operation).into(),
                })
                .inc_by(*n);
        }
    }

    /// Hook for the quota layer: one wait for tokens before a provider call (zero
    /// when the tokens were there).
    pub fn observe_quota_wait(&self, account: &str, waited: Duration) {
        self.quota_wait
            .get_or_create(&AccountLabels {
                account: account.into(),
            })
            .observe(waited.as_secs_f64());
    }

    /// Hook for the quota layer: tokens left in the account's bucket.
    pub fn set_quota_tokens(&self, account: &str, tokens: f64) {
        self.quota_tokens
            .get_or_create(&AccountLabels {
                account: account.into(),
            })
            .set(tokens);
    }
}

/// Reads the service's own counters at each scrape (outcomes, batches, circuits,
/// faults, cache): the numbers `GetStatus` shows.
#[derive(Debug)]
struct ServiceCollector {
    service: ApplierService,
}

fn counter_family<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    values: impl IntoIterator<Item = (L, u64)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in values {
        ConstCounter::new(v).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

fn account_labels(a: &Account) -> (String, String) {
    (a.name.clone(), a.provider.driver().to_string())
}

impl Collector for ServiceCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let accounts = self.service.accounts();
        let snapshots: Vec<_> = accounts
            .iter()
            .map(|a| (account_labels(a), a.stats.snapshot()))
            .collect();
        counter_family(
            &mut encoder,
            "dnsplane_applier_record_outcomes",
            "Per-record outcomes of the batches this applier ran, by account, driver and outcome",
            snapshots.iter().flat_map(|((account, provider), c)| {
                OUTCOMES.iter().map(move |o| {
                    let name = outcome_name(*o);
                    (
                        OutcomeLabels {
                            account: account.clone(),
                            provider: provider.clone(),
                            outcome: name.to_ascii_lowercase(),
                        },
                        c.outcomes.get(name).copied().unwrap_or(0),
                    )
                })
            }),
        )?;
        counter_family(
            &mut encoder,
            "dnsplane_applier_batches",
            "Batches this applier ran, by account and driver",
            snapshots.iter().map(|((account, provider), c)| {
                (
                    BatchLabels {
                        account: account.clone(),
                        provider: provider.clone(),
                    },
                    c.batches,
                )
            }),
        )?;
        {
            let mut family = encoder.encode_descriptor(
                "dnsplane_circuit_state",
                "The account's circuit breaker: 1 for its current state (closed, open, half_open), 0 for the others",
                None,
                MetricType::Gauge,
            )?;
            for a in &accounts {
                let current = a.circuit.status().state;
                for state in CIRCUIT_STATES {
                    let labels = CircuitLabels {
                        account: a.name.clone(),
                        state: state.into(),
                    };
                    ConstGauge::new(i64::from(state == current))
                        .encode(family.encode_family(&labels)?)?;
                }
            }
        }
        counter_family(
            &mut encoder,
            "dnsplane_faults_injected",
            "Injected faults that fired, by account and action (fault-injection rules only)",
            accounts.iter().flat_map(|a| {
                a.faults_fired().into_iter().map(|(action, n)| {
                    (
                        FaultLabels {
                            account: a.name.clone(),
                            action: action.into(),
                        },
                        n,
                    )
                })
            }),
        )?;
        let cache = self.service.cache().stats();
        let mut hits = encoder.encode_descriptor(
            "dnsplane_cache_hits",
            "Listings served from the listing cache without listing the zone again",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(cache.hits).encode(hits)?;
        let misses = encoder.encode_descriptor(
            "dnsplane_cache_misses",
            "Listings that had to list the zone (or the names) at the provider",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(cache.misses).encode(misses)?;
        Ok(())
    }
}

/// The applier's admin server: [`global`] metrics, the service's counters read at
/// scrape time, and `/status` = `GetStatus` as JSON.
pub fn admin_server(service: ApplierService) -> AdminServer {
    let mut registry = Registry::default();
    register_build_info(&mut registry, "dnsplane-applier", env!("CARGO_PKG_VERSION"));
    global().register(&mut registry);
    registry.register_collector(Box::new(ServiceCollector {
        service: service.clone(),
    }));
    let service = Arc::new(service);
    AdminServer::new(registry).status(move || {
        let service = service.clone();
        async move {
            use pb::applier_server::Applier;
            match service
                .get_status(tonic::Request::new(pb::GetApplierStatusRequest {}))
                .await
            {
                Ok(r) => status_json(&r.into_inner()),
                Err(s) => serde_json::json!({"level": "error", "reason": s.message()}),
            }
        }
    })
}

/// 64-bit integers as strings, as the proto3 JSON mapping (and grpcurl) writes them.
fn u64_map(m: &std::collections::HashMap<String, u64>) -> serde_json::Value {
    let sorted: BTreeMap<&String, String> = m.iter().map(|(k, v)| (k, v.to_string())).collect();
    serde_json::json!(sorted)
}

/// `GetStatus` in the proto3 JSON mapping (camelCase names, 64-bit integers as
/// strings, durations as `"1.5s"`), as `grpcurl` prints it, except that default values
/// are written out too.
pub fn status_json(s: &pb::ApplierStatus) -> serde_json::Value {
    use serde_json::json;
    let uptime = s.uptime.map_or(serde_json::Value::Null, |d| {
        let secs = Duration::try_from(d).unwrap_or_default().as_secs_f64();
        format!("{secs}s").into()
    });
    json!({
        "level": s.level,
        "reason": s.reason,
        "accounts": s.accounts.iter().map(|a| json!({
            "name": a.name,
            "driver": a.driver,
            "zones": a.zones,
            "callsByClass": u64_map(&a.calls_by_class),
            "outcomes": u64_map(&a.outcomes),
            "batches": a.batches.to_string(),
            "serials": u64_map(&a.serials),
            "circuit": a.circuit,
            "lastError": a.last_error,
            "faults": u64_map(&a.faults),
        })).collect::<Vec<_>>(),
        "uptime": uptime,
    })
}
