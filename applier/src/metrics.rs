//! The applier's Prometheus metric families. A leaf: built once with
//! [`ApplierMetrics::register`] into the registry the admin port serves, then handed
//! to each account ([`ApplierMetrics::account`]), whose layers and events record into
//! them. Counters that `GetStatus` also shows (calls by class, outcomes, batches) are
//! read back from these very families, so `/metrics` and `GetStatus` cannot disagree.
//! What mirrors state (circuits, quotas, faults, the cache) is read at scrape time by
//! the admin port ([`crate::admin`]).
//!
//! | metric | type | labels | recorded by |
//! |---|---|---|---|
//! | `dnsplane_applier_provider_requests_total` | counter | `account`, `provider`, `operation` (`zones` `serial` `list` `apply`), `class` (`success` or an error class) | every provider call ([`crate::layers::Observed`]) |
//! | `dnsplane_applier_provider_request_duration_seconds` | histogram | `provider`, `operation` | every provider call |
//! | `dnsplane_applier_provider_retries_total` | counter | `account`, `provider`, `operation` | every retried call (attempt ≥ 1) that reached the provider |
//! | `dnsplane_applier_record_outcomes_total` | counter | `account`, `provider`, `outcome` (`applied` ... `rejected_permanent`) | every batch ([`crate::events::BatchFinished`]) |
//! | `dnsplane_applier_batches_total` | counter | `account`, `provider` | every batch |
//! | `dnsplane_applier_quota_wait_seconds` | histogram | `account` | each quota token taken (zero waits included) |
//! | `dnsplane_applier_quota_tokens` | gauge | `account` | tokens left after the last take |
use crate::provider::{ErrorClass, Operation};
use dnsplane_common::{Outcome, RecordResult};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    account: String,
    provider: String,
    operation: String,
    class: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LatencyLabels {
    provider: String,
    operation: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RetryLabels {
    account: String,
    provider: String,
    operation: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AccountLabels {
    account: String,
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

/// The answer classes a call is counted under: `success` or an error class.
const CLASSES: [&str; 6] = [
    "success",
    "ambiguous",
    "conflict",
    "invalid",
    "transient",
    "permanent",
];

const OPERATIONS: [Operation; 4] = [
    Operation::Zones,
    Operation::Serial,
    Operation::List,
    Operation::Apply,
];

/// The applier's families. Cheap to clone: clones share the values.
#[derive(Debug, Clone)]
pub struct ApplierMetrics {
    provider_requests: Family<RequestLabels, Counter>,
    provider_duration: HistogramFamily<LatencyLabels>,
    retries: Family<RetryLabels, Counter>,
    outcomes: Family<OutcomeLabels, Counter>,
    batches: Family<BatchLabels, Counter>,
    quota_wait: HistogramFamily<AccountLabels>,
    quota_tokens: Family<AccountLabels, FloatGauge>,
}

impl Default for ApplierMetrics {
    /// Families registered nowhere: for accounts built without an admin port (tests).
    fn default() -> Self {
        ApplierMetrics {
            provider_requests: Family::default(),
            provider_duration: Family::new_with_constructor(request_histogram),
            retries: Family::default(),
            outcomes: Family::default(),
            batches: Family::default(),
            quota_wait: Family::new_with_constructor(wait_histogram),
            quota_tokens: Family::default(),
        }
    }
}

impl ApplierMetrics {
    /// Builds the families and adds them to `registry`.
    pub fn register(registry: &mut Registry) -> ApplierMetrics {
        let m = ApplierMetrics::default();
        registry.register(
            "dnsplane_applier_provider_requests",
            "Provider API calls, by account, driver, operation and answer class (success or the error class)",
            m.provider_requests.clone(),
        );
        registry.register(
            "dnsplane_applier_provider_request_duration_seconds",
            "Duration of provider API calls, by driver and operation",
            m.provider_duration.clone(),
        );
        registry.register(
            "dnsplane_applier_provider_retries",
            "Transient provider answers retried inside a batch, by account, driver and operation",
            m.retries.clone(),
        );
        registry.register(
            "dnsplane_applier_record_outcomes",
            "Per-record outcomes of the batches this applier ran, by account, driver and outcome",
            m.outcomes.clone(),
        );
        registry.register(
            "dnsplane_applier_batches",
            "Batches this applier ran, by account and driver",
            m.batches.clone(),
        );
        registry.register(
            "dnsplane_applier_quota_wait_seconds",
            "Time spent waiting for provider quota tokens before a call, by account",
            m.quota_wait.clone(),
        );
        registry.register(
            "dnsplane_applier_quota_tokens",
            "Provider quota tokens left after the last take, by account",
            m.quota_tokens.clone(),
        );
        m
    }

    /// The handle one account records through. Creates the account's outcome and
    /// batch series at zero, so they show before the first batch.
    pub fn account(&self, account: &str, driver: &'static str) -> AccountMetrics {
        let outcome = |o: Outcome| {
            self.outcomes
                .get_or_create(&OutcomeLabels {
                    account: account.into(),
                    provider: driver.into(),
                    outcome: o.label().into(),
                })
                .clone()
        };
        AccountMetrics {
            families: self.clone(),
            account: account.to_string(),
            driver,
            outcomes: Outcome::ALL.map(outcome),
            batches: self
                .batches
                .get_or_create(&BatchLabels {
                    account: account.into(),
                    provider: driver.into(),
                })
                .clone(),
        }
    }
}

/// One account's view of the families.
#[derive(Debug, Clone)]
pub struct AccountMetrics {
    families: ApplierMetrics,
    account: String,
    driver: &'static str,
    /// In the order of [`Outcome::ALL`].
    outcomes: [Counter; 7],
    batches: Counter,
}

fn class_name(result: Result<(), &ErrorClass>) -> &'static str {
    match result {
        Ok(()) => "success",
        Err(c) => c.as_str(),
    }
}

impl AccountMetrics {
    pub fn account(&self) -> &str {
        &self.account
    }

    pub fn driver(&self) -> &'static str {
        self.driver
    }

    fn request_labels(&self, op: Operation, class: &str) -> RequestLabels {
        RequestLabels {
            account: self.account.clone(),
            provider: self.driver.into(),
            operation: op.as_str().into(),
            class: class.into(),
        }
    }

    /// One call of `op` that reached the provider answered `result` after `elapsed`;
    /// `attempt` ≥ 1 makes it a retry.
    pub fn request(
        &self,
        op: Operation,
        result: Result<(), &ErrorClass>,
        attempt: u32,
        elapsed: Duration,
    ) {
        let f = &self.families;
        f.provider_requests
            .get_or_create(&self.request_labels(op, class_name(result)))
            .inc();
        f.provider_duration
            .get_or_create(&LatencyLabels {
                provider: self.driver.into(),
                operation: op.as_str().into(),
            })
            .observe(elapsed.as_secs_f64());
        if attempt > 0 {
            f.retries
                .get_or_create(&RetryLabels {
                    account: self.account.clone(),
                    provider: self.driver.into(),
                    operation: op.as_str().into(),
                })
                .inc();
        }
    }

    /// One batch ended with `results`.
    pub fn batch(&self, results: &[RecordResult]) {
        self.batches.inc();
        for r in results {
            if let Some(i) = Outcome::ALL.iter().position(|o| *o == r.outcome) {
                self.outcomes[i].inc();
            }
        }
    }

    /// One quota token taken after waiting `waited`, `tokens` left in the bucket.
    pub fn quota_taken(&self, waited: Duration, tokens: f64) {
        let labels = AccountLabels {
            account: self.account.clone(),
        };
        self.families
            .quota_wait
            .get_or_create(&labels)
            .observe(waited.as_secs_f64());
        self.families
            .quota_tokens
            .get_or_create(&labels)
            .set(tokens);
    }

    /// Provider calls so far, by answer class (`success` or an error class), summed
    /// over operations; only classes that occurred.
    pub fn calls_by_class(&self) -> BTreeMap<&'static str, u64> {
        let mut out = BTreeMap::new();
        for class in CLASSES {
            let n: u64 = OPERATIONS
                .iter()
                .filter_map(|op| {
                    self.families
                        .provider_requests
                        .get(&self.request_labels(*op, class))
                        .map(|c| c.get())
                })
                .sum();
            if n > 0 {
                out.insert(class, n);
            }
        }
        out
    }

    /// Per-record outcomes so far, by name (`APPLIED`, ...); only those that occurred.
    pub fn outcomes(&self) -> BTreeMap<&'static str, u64> {
        Outcome::ALL
            .iter()
            .zip(&self.outcomes)
            .filter(|(_, c)| c.get() > 0)
            .map(|(o, c)| (o.as_str(), c.get()))
            .collect()
    }

    pub fn batches(&self) -> u64 {
        self.batches.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|v| v.parse().ok())
    }

    #[test]
    fn quota_hooks_feed_their_families() {
        let mut registry = Registry::default();
        let m = ApplierMetrics::register(&mut registry).account("q", "memory");
        m.quota_taken(Duration::from_millis(3), 6.0);
        m.quota_taken(Duration::ZERO, 7.5);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert_eq!(
            value(
                &text,
                r#"dnsplane_applier_quota_wait_seconds_count{account="q"}"#
            ),
            Some(2.0),
            "{text}"
        );
        assert_eq!(
            value(
                &text,
                r#"dnsplane_applier_quota_wait_seconds_bucket{le="0.004",account="q"}"#
            ),
            Some(2.0),
            "{text}"
        );
        assert_eq!(
            value(
                &text,
                r#"dnsplane_applier_quota_wait_seconds_bucket{le="0.002",account="q"}"#
            ),
            Some(1.0),
            "{text}"
        );
        assert_eq!(
            value(&text, r#"dnsplane_applier_quota_tokens{account="q"}"#),
            Some(7.5),
            "{text}"
        );
    }

    #[test]
    fn status_counters_read_the_exported_families() {
        let mut registry = Registry::default();
        let m = ApplierMetrics::register(&mut registry).account("a", "memory");
        m.request(Operation::Apply, Ok(()), 0, Duration::ZERO);
        m.request(Operation::List, Ok(()), 0, Duration::ZERO);
        m.request(
            Operation::Apply,
            Err(&ErrorClass::Transient),
            1,
            Duration::ZERO,
        );
        m.batch(&[RecordResult::new("c", Outcome::Applied)]);
        assert_eq!(
            m.calls_by_class(),
            BTreeMap::from([("success", 2), ("transient", 1)])
        );
        assert_eq!(m.outcomes(), BTreeMap::from([("APPLIED", 1)]));
        assert_eq!(m.batches(), 1);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let acct = r#"account="a",provider="memory""#;
        assert_eq!(
            value(
                &text,
                &format!(r#"dnsplane_applier_provider_retries_total{{{acct},operation="apply"}}"#)
            ),
            Some(1.0),
            "{text}"
        );
        assert_eq!(
            value(
                &text,
                &format!(r#"dnsplane_applier_record_outcomes_total{{{acct},outcome="failed"}}"#)
            ),
            Some(0.0),
            "zeros show before they happen: {text}"
        );
    }
}
