//! The applier's admin HTTP port: `/metrics` (the families of [`crate::metrics`] plus
//! what mirrors state, read at each scrape), `/healthz`, `/readyz`, and `/status`
//! (`GetStatus` as JSON). On top of the crate: it reads [`Accounts`] and the
//! service's status conversion; nothing reads it.
//!
//! Read at scrape time, from the same state `GetStatus` shows:
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `dnsplane_applier_circuit_state` | gauge | `account`, `state` (`closed` `open` `half_open`; 1 for the current one) |
//! | `dnsplane_applier_faults_injected_total` | counter | `account`, `action` (only with `[[accounts.faults]]`) |
//! | `dnsplane_applier_cache_hits_total`, `dnsplane_applier_cache_misses_total` | counter | — |
//! | `dnsplane_applier_quota_granted_total`, `dnsplane_applier_quota_denied_total`, `dnsplane_applier_quota_throttled_total`, `dnsplane_applier_quota_fallbacks_total` | counter | `account` |
//! | `dnsplane_applier_quota_rate` | gauge | `account`, `kind` (`configured` `current`) |
//! | `dnsplane_applier_quota_mode` | gauge | `account`, `mode` (`local` `shared` `fallback`; 1 for the current one) |
//! | `dnsplane_applier_pacing_rate`, `dnsplane_applier_pacing_throttled_seconds` | gauge | `account` |
//! | `dnsplane_applier_pacing_throttles_total` | counter | `account` |
use crate::account::Account;
use crate::accounts::Accounts;
use crate::quota::QuotaStatus;
use dnsplane_common::metrics::{AdminServer, proto_json, register_build_info};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use std::sync::Arc;

/// Every circuit state, for `dnsplane_applier_circuit_state`.
const CIRCUIT_STATES: [&str; 3] = ["closed", "open", "half_open"];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AccountLabels {
    account: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CircuitLabels {
    account: String,
    state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QuotaRateLabels {
    account: String,
    kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QuotaModeLabels {
    account: String,
    mode: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FaultLabels {
    account: String,
    action: String,
}

#[derive(Debug)]
struct StateCollector {
    accounts: Arc<Accounts>,
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

impl Collector for StateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let accounts: Vec<Arc<Account>> = self.accounts.all().cloned().collect();
        {
            let mut family = encoder.encode_descriptor(
                "dnsplane_applier_circuit_state",
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
            "dnsplane_applier_faults_injected",
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
        encode_quotas(&mut encoder, &accounts)?;
        encode_pacing(&mut encoder, &accounts)?;
        let cache = self.accounts.cache().stats();
        let hits = encoder.encode_descriptor(
            "dnsplane_applier_cache_hits",
            "Listings served from the listing cache without listing the zone again",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(cache.hits).encode(hits)?;
        let misses = encoder.encode_descriptor(
            "dnsplane_applier_cache_misses",
            "Listings that had to list the zone (or the names) at the provider",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(cache.misses).encode(misses)?;
        Ok(())
    }
}

/// The quota counters `GetStatus` shows, for the accounts that have a quota.
fn encode_quotas(
    encoder: &mut DescriptorEncoder,
    accounts: &[Arc<Account>],
) -> Result<(), std::fmt::Error> {
    let quotas: Vec<(String, QuotaStatus)> = accounts
        .iter()
        .filter_map(|a| Some((a.name.clone(), a.quota.as_ref()?.status())))
        .collect();
    let by_account = |f: fn(&QuotaStatus) -> u64| {
        quotas
            .iter()
            .map(move |(account, q)| {
                (
                    AccountLabels {
                        account: account.clone(),
                    },
                    f(q),
                )
            })
            .collect::<Vec<_>>()
    };
    counter_family(
        encoder,
        "dnsplane_applier_quota_granted",
        "Quota tokens taken (with or without a wait), by account",
        by_account(|q| q.granted),
    )?;
    counter_family(
        encoder,
        "dnsplane_applier_quota_denied",
        "Provider calls not made because no quota token came before the deadline (their changes: DEFERRED), by account",
        by_account(|q| q.denied),
    )?;
    counter_family(
        encoder,
        "dnsplane_applier_quota_throttled",
        "Throttle answers (429, Retry-After) fed back into the quota, by account",
        by_account(|q| q.throttled),
    )?;
    counter_family(
        encoder,
        "dnsplane_applier_quota_fallbacks",
        "Times the shared quota's Redis became unreachable and this replica fell back to its local share, by account",
        by_account(|q| q.fallbacks),
    )?;
    let mut rate = encoder.encode_descriptor(
        "dnsplane_applier_quota_rate",
        "The account's quota in calls per second: the configured rate (kind=configured) and the one this replica works under now (kind=current: lowered after a throttle, a local share in fallback)",
        None,
        MetricType::Gauge,
    )?;
    for (account, q) in &quotas {
        for (kind, v) in [("configured", q.rate), ("current", q.current_rate)] {
            let labels = QuotaRateLabels {
                account: account.clone(),
                kind: kind.into(),
            };
            ConstGauge::new(v).encode(rate.encode_family(&labels)?)?;
        }
    }
    let mut mode = encoder.encode_descriptor(
        "dnsplane_applier_quota_mode",
        "Where the account's quota bucket lives: 1 for the current mode (local, shared, fallback), 0 for the others",
        None,
        MetricType::Gauge,
    )?;
    for (account, q) in &quotas {
        for m in ["local", "shared", "fallback"] {
            let labels = QuotaModeLabels {
                account: account.clone(),
                mode: m.into(),
            };
            ConstGauge::new(i64::from(q.mode.as_str() == m))
                .encode(mode.encode_family(&labels)?)?;
        }
    }
    Ok(())
}

/// Every account's pacing after its provider's 429 answers.
fn encode_pacing(
    encoder: &mut DescriptorEncoder,
    accounts: &[Arc<Account>],
) -> Result<(), std::fmt::Error> {
    let all: Vec<(AccountLabels, crate::quota::PacingStatus)> = accounts
        .iter()
        .map(|a| {
            let labels = AccountLabels {
                account: a.name.clone(),
            };
            (labels, a.pacer.status())
        })
        .collect();
    counter_family(
        encoder,
        "dnsplane_applier_pacing_throttles",
        "Throttle answers (429) from the provider, each of which halves the account's request rate, by account",
        all.iter().map(|(l, p)| (l.clone(), p.throttles)),
    )?;
    let mut rate = encoder.encode_descriptor(
        "dnsplane_applier_pacing_rate",
        "Requests per second the account is paced at after its provider's 429 answers; 0 while it is not paced",
        None,
        MetricType::Gauge,
    )?;
    for (labels, p) in &all {
        ConstGauge::new(p.current_rate.unwrap_or(0.0)).encode(rate.encode_family(labels)?)?;
    }
    let mut since = encoder.encode_descriptor(
        "dnsplane_applier_pacing_throttled_seconds",
        "How long the provider has kept throttling the account (429s within [accounts.pacing] recover of each other); 0 while it is not paced",
        None,
        MetricType::Gauge,
    )?;
    for (labels, p) in &all {
        ConstGauge::new(p.throttled_for.as_secs_f64()).encode(since.encode_family(labels)?)?;
    }
    Ok(())
}

/// A registry holding the process's build info, for the metric families to register
/// into ([`crate::metrics::ApplierMetrics::register`]) and the admin server to serve.
pub fn registry() -> Registry {
    let mut registry = Registry::default();
    register_build_info(&mut registry, "dnsplane-applier", env!("CARGO_PKG_VERSION"));
    registry
}

/// The applier's admin server over `registry` (which holds the metric families): the
/// state read at each scrape, and `/status` = `GetStatus` as JSON.
pub fn admin_server(mut registry: Registry, accounts: Arc<Accounts>) -> AdminServer {
    registry.register_collector(Box::new(StateCollector {
        accounts: accounts.clone(),
    }));
    AdminServer::new(registry).status(move || {
        let accounts = accounts.clone();
        async move { proto_json(&crate::service::status_to_pb(&accounts.status())) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::{Account, AccountOptions};
    use crate::accounts::{Lifecycle, RunOptions};
    use crate::metrics::ApplierMetrics;
    use crate::provider::memory::MemoryProvider;
    use crate::provider::memory::store::MemoryStore;
    use crate::retry::RetryPolicy;
    use crate::service::ApplierService;
    use dnsplane_common::pb;
    use dnsplane_common::{Change, ChangeKind, Outcome, RRSet, RRSetOp, RecordKey, RecordType};
    use std::time::Duration;

    use crate::testing::zone;

    fn create(label: &str) -> pb::Change {
        let key = RecordKey::new(zone(), zone().prepend(label).unwrap(), RecordType::A);
        let change = Change::new(
            ChangeKind::Create,
            vec![RRSetOp::create(
                RRSet::new(key, 60, &["192.0.2.1"]).unwrap(),
            )],
        );
        (&change).into()
    }

    /// One account whose first write meets another writer and a 429, recording into
    /// the families of the returned admin server.
    fn service(dir: &std::path::Path, account: &str) -> (ApplierService, AdminServer) {
        let rules = crate::testing::rules(
            r#"
            [[faults]]
            op = "apply"
            action = "other_writer"
            times = 1
            records = [{ name = "b.example.com.", type = "A", values = ["198.51.100.9"] }]
            [[faults]]
            op = "apply"
            action = "rate_limited"
            retry_after = "1ms"
            times = 1
            "#,
        );
        let store = Arc::new(MemoryStore::open(dir).unwrap());
        let provider = Arc::new(MemoryProvider::new(store, vec![zone()]).unwrap());
        let quota: crate::quota::QuotaConfig =
            toml::from_str("rate = 1000.0\nburst = 100").unwrap();
        let settings = crate::quota::QuotaSettings::resolve("memory", Some(&quota))
            .unwrap()
            .unwrap();
        let mut registry = registry();
        let metrics = ApplierMetrics::register(&mut registry);
        let options = AccountOptions {
            faults: rules,
            quota: Some(Arc::new(
                crate::quota::Quota::new(account, settings).unwrap(),
            )),
            metrics,
            ..AccountOptions::default()
        };
        let account = Arc::new(Account::with_options(account, provider, &[zone()], options));
        let accounts = Arc::new(Accounts::new(
            vec![account],
            RunOptions {
                cache_ttl: Duration::from_secs(30),
                max_concurrent_batches: 2,
                retry: RetryPolicy::default(),
            },
            Lifecycle::default(),
        ));
        (
            ApplierService::new(accounts.clone()),
            admin_server(registry, accounts),
        )
    }

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .and_then(|v| v.parse().ok())
    }

    #[tokio::test]
    async fn a_batch_with_a_conflict_and_a_retry_shows_in_metrics_and_status() {
        let dir = tempfile::tempdir().unwrap();
        let (svc, admin) = service(dir.path(), "metrics-unit");
        let resp = svc
            .run_batch(pb::ApplyRequest {
                batch: Some(pb::Batch {
                    batch_id: "b1".into(),
                    account: "metrics-unit".into(),
                    zone: "example.com.".into(),
                    changes: vec![create("a"), create("b"), create("c")],
                    deadline: None,
                    ..Default::default()
                }),
            })
            .await;
        let outcomes: Vec<Option<Outcome>> = resp[0]
            .results
            .iter()
            .map(|r| dnsplane_common::convert::outcome_from_pb(r.outcome))
            .collect();
        assert_eq!(
            outcomes,
            [
                Some(Outcome::Applied),
                Some(Outcome::Conflict),
                Some(Outcome::Applied)
            ]
        );
        // 429, retried: conflict; read back; the rest applied.
        assert_eq!(resp[0].provider_calls, 4);

        let text = admin.encode();
        let acct = r#"account="metrics-unit",provider="memory""#;
        for (series, want) in [
            (
                format!(
                    r#"dnsplane_applier_provider_requests_total{{{acct},operation="apply",class="transient"}}"#
                ),
                1.0,
            ),
            (
                format!(
                    r#"dnsplane_applier_provider_requests_total{{{acct},operation="apply",class="conflict"}}"#
                ),
                1.0,
            ),
            (
                format!(
                    r#"dnsplane_applier_provider_requests_total{{{acct},operation="apply",class="success"}}"#
                ),
                1.0,
            ),
            (
                format!(
                    r#"dnsplane_applier_provider_requests_total{{{acct},operation="list",class="success"}}"#
                ),
                1.0,
            ),
            (
                format!(r#"dnsplane_applier_provider_retries_total{{{acct},operation="apply"}}"#),
                1.0,
            ),
            (
                format!(r#"dnsplane_applier_record_outcomes_total{{{acct},outcome="applied"}}"#),
                2.0,
            ),
            (
                format!(r#"dnsplane_applier_record_outcomes_total{{{acct},outcome="conflict"}}"#),
                1.0,
            ),
            (
                format!(r#"dnsplane_applier_record_outcomes_total{{{acct},outcome="failed"}}"#),
                0.0,
            ),
            (format!(r#"dnsplane_applier_batches_total{{{acct}}}"#), 1.0),
            (
                r#"dnsplane_applier_circuit_state{account="metrics-unit",state="closed"}"#.into(),
                1.0,
            ),
            (
                r#"dnsplane_applier_circuit_state{account="metrics-unit",state="open"}"#.into(),
                0.0,
            ),
            (
                r#"dnsplane_applier_faults_injected_total{account="metrics-unit",action="other_writer"}"#
                    .into(),
                1.0,
            ),
            (
                r#"dnsplane_applier_faults_injected_total{account="metrics-unit",action="rate_limited"}"#
                    .into(),
                1.0,
            ),
            ("dnsplane_applier_cache_hits_total".into(), 0.0),
            ("dnsplane_applier_cache_misses_total".into(), 0.0),
            // The three writes took a token each (reads do not count: `ops = "writes"`);
            // the 429 was fed back.
            (
                r#"dnsplane_applier_quota_wait_seconds_count{account="metrics-unit"}"#.into(),
                3.0,
            ),
            (
                r#"dnsplane_applier_quota_granted_total{account="metrics-unit"}"#.into(),
                3.0,
            ),
            (
                r#"dnsplane_applier_quota_throttled_total{account="metrics-unit"}"#.into(),
                1.0,
            ),
            (
                r#"dnsplane_applier_quota_denied_total{account="metrics-unit"}"#.into(),
                0.0,
            ),
            (
                r#"dnsplane_applier_quota_rate{account="metrics-unit",kind="configured"}"#.into(),
                1000.0,
            ),
            (
                r#"dnsplane_applier_quota_mode{account="metrics-unit",mode="local"}"#.into(),
                1.0,
            ),
        ] {
            assert_eq!(value(&text, &series), Some(want), "{series} in:\n{text}");
        }
        assert!(
            text.contains("# TYPE dnsplane_applier_provider_request_duration_seconds histogram"),
            "{text}"
        );
        assert!(
            text.contains("dnsplane_build_info{service=\"dnsplane-applier\","),
            "{text}"
        );

        // /status is GetStatus in the proto3 JSON mapping.
        use pb::applier_server::Applier as _;
        let grpc = svc
            .get_status(tonic::Request::new(pb::GetApplierStatusRequest {}))
            .await
            .unwrap()
            .into_inner();
        let json = proto_json(&grpc);
        assert_eq!(json["level"], "healthy");
        let a = &json["accounts"][0];
        assert_eq!(a["name"], "metrics-unit");
        assert_eq!(a["driver"], "memory");
        assert_eq!(a["batches"], "1");
        assert_eq!(a["outcomes"]["APPLIED"], "2");
        assert_eq!(a["callsByClass"]["transient"], "1");
        assert_eq!(a["faults"]["rate_limited"], "1");
        assert_eq!(a["circuit"], "closed");
        assert_eq!(a["quota"]["mode"], "local");
        assert_eq!(a["quota"]["granted"], "3");
        assert_eq!(a["quota"]["throttled"], "1");
        assert_eq!(a["quota"]["rate"], 1000.0);
        assert!(
            json["uptime"].as_str().is_some_and(|u| u.ends_with('s')),
            "{json}"
        );
    }
}
