//! The planner's Prometheus metrics and its admin port (`/metrics`, `/healthz`,
//! `/readyz`, `/status`).
//!
//! | metric | type | labels | source |
//! |---|---|---|---|
//! | `dnsplane_plan_changes_total` | counter | `zone`, `kind` (`create` `update` `delete` `adopt`) | [`PlannerMetrics::planned`], per plan sent |
//! | `dnsplane_record_outcomes_total` | counter | `zone`, `outcome` (`applied` `already_applied` `conflict` `invalid` `deferred` `failed` `rejected_permanent`) | [`PlannerMetrics::outcome`], per applier result |
//! | `dnsplane_sync_duration_seconds` | histogram | `zone`, `scope` (`zone` `names`), `result` (`ok` `error`) | [`PlannerMetrics::observe_sync`], per sync |
//! | `dnsplane_records` | gauge | `zone`, `state` (`converged` `conflict` ...; 0 when none) | the state table, at scrape time |
//! | `dnsplane_desired_records`, `dnsplane_observed_records` | gauge | `zone` | desired state / what the provider holds as the planner knows it (last read, updated from results; ownership records included), at scrape time |
//! | `dnsplane_last_sync_timestamp_seconds`, `dnsplane_last_sync_success_timestamp_seconds` | gauge | `zone` | zone status, at scrape time (absent until the first one) |
//! | `dnsplane_zone_syncing` | gauge | `zone` | 1 while a sync of the zone runs |
//! | `dnsplane_source_errors` | gauge | — | desired records rejected by the sources |
//! | `dnsplane_build_info`, `dnsplane_process_start_time_seconds` | | `service`, `version` | start |
//!
//! The gauges mirror the engine's own state, so they need no hooks. The counters and
//! the histogram are recorded through the three hook methods, which the engine calls
//! (it holds a clone of the handle that [`crate::run_with_admin`] registers):
//! - `sync_zone`: `observe_sync(zone, scope is Scope::Zone, elapsed since the lock was
//!   taken, result.is_ok())`;
//! - `sync_zone_locked`, once the plan is final (after `record_plan`):
//!   `planned(zone, plan.changes.iter().map(|c| c.change.kind))`;
//! - `fold_results`, per result: `outcome(zone, outcome)`.
use crate::engine::Engine;
use crate::service::PlannerService;
use crate::state::state_name;
use dnsplane_common::convert::outcome_name;
use dnsplane_common::metrics::{AdminServer, register_build_info, unix_seconds};
use dnsplane_common::pb::{self, RecordStateKind};
use dnsplane_common::{ChangeKind, Name};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// Every record state the state table can hold, for `dnsplane_records`.
const STATES: [RecordStateKind; 8] = [
    RecordStateKind::Pending,
    RecordStateKind::InFlight,
    RecordStateKind::Converged,
    RecordStateKind::Conflict,
    RecordStateKind::Invalid,
    RecordStateKind::Failed,
    RecordStateKind::Deferred,
    RecordStateKind::Rejected,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ZoneLabels {
    pub zone: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ChangeLabels {
    pub zone: String,
    pub kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    pub zone: String,
    pub outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SyncLabels {
    pub zone: String,
    pub scope: String,
    pub result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    pub zone: String,
    pub state: String,
}

type SecondsGauge = Gauge<f64, AtomicU64>;

fn sync_histogram() -> Histogram {
    // 5 ms .. ~41 s.
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

/// The planner's metric families. Cheap to clone: clones share the values.
#[derive(Debug, Clone)]
pub struct PlannerMetrics {
    plan_changes: Family<ChangeLabels, Counter>,
    record_outcomes: Family<OutcomeLabels, Counter>,
    sync_duration: Family<SyncLabels, Histogram, fn() -> Histogram>,
    records: Family<StateLabels, Gauge>,
    desired_records: Family<ZoneLabels, Gauge>,
    observed_records: Family<ZoneLabels, Gauge>,
    last_sync: Family<ZoneLabels, SecondsGauge>,
    last_success: Family<ZoneLabels, SecondsGauge>,
    syncing: Family<ZoneLabels, Gauge>,
    source_errors: Gauge,
}

impl Default for PlannerMetrics {
    fn default() -> Self {
        PlannerMetrics {
            plan_changes: Family::default(),
            record_outcomes: Family::default(),
            sync_duration: Family::new_with_constructor(sync_histogram),
            records: Family::default(),
            desired_records: Family::default(),
            observed_records: Family::default(),
            last_sync: Family::default(),
            last_success: Family::default(),
            syncing: Family::default(),
            source_errors: Gauge::default(),
        }
    }
}

impl PlannerMetrics {
    /// Adds every family to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "dnsplane_plan_changes",
            "Changes planned and sent to an applier, by zone and kind",
            self.plan_changes.clone(),
        );
        registry.register(
            "dnsplane_record_outcomes",
            "Per-record results from appliers, by zone and outcome",
            self.record_outcomes.clone(),
        );
        registry.register(
            "dnsplane_sync_duration_seconds",
            "Duration of one sync (read, plan, apply), by zone, scope (whole zone or due names) and result",
            self.sync_duration.clone(),
        );
        registry.register(
            "dnsplane_records",
            "Records the planner manages, by zone and state",
            self.records.clone(),
        );
        registry.register(
            "dnsplane_desired_records",
            "Desired records placed in the zone",
            self.desired_records.clone(),
        );
        registry.register(
            "dnsplane_observed_records",
            "RRsets the zone held at its last full read",
            self.observed_records.clone(),
        );
        registry.register(
            "dnsplane_last_sync_timestamp_seconds",
            "When the last sync of the zone ended, in seconds since the Unix epoch",
            self.last_sync.clone(),
        );
        registry.register(
            "dnsplane_last_sync_success_timestamp_seconds",
            "When the last successful sync of the zone ended, in seconds since the Unix epoch",
            self.last_success.clone(),
        );
        registry.register(
            "dnsplane_zone_syncing",
            "1 while a sync of the zone runs",
            self.syncing.clone(),
        );
        registry.register(
            "dnsplane_source_errors",
            "Desired records the sources rejected (see /status or GetStatus)",
            self.source_errors.clone(),
        );
    }

    /// Hook: one sync of `zone` ended after `elapsed` (`full_zone`: the whole zone, not
    /// a targeted re-plan of due names).
    pub fn observe_sync(&self, zone: &Name, full_zone: bool, elapsed: Duration, ok: bool) {
        self.sync_duration
            .get_or_create(&SyncLabels {
                zone: zone.to_string(),
                scope: if full_zone { "zone" } else { "names" }.into(),
                result: if ok { "ok" } else { "error" }.into(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Hook: these changes of `zone` were planned and are being sent.
    pub fn planned(&self, zone: &Name, kinds: impl IntoIterator<Item = ChangeKind>) {
        let zone = zone.to_string();
        for kind in kinds {
            self.plan_changes
                .get_or_create(&ChangeLabels {
                    zone: zone.clone(),
                    kind: kind.as_str().into(),
                })
                .inc();
        }
    }

    /// Hook: an applier answered `outcome` for one record of `zone`.
    pub fn outcome(&self, zone: &Name, outcome: pb::Outcome) {
        self.record_outcomes
            .get_or_create(&OutcomeLabels {
                zone: zone.to_string(),
                outcome: outcome_name(outcome).to_ascii_lowercase(),
            })
            .inc();
    }

    /// Sets the gauges from the engine's state (run before each scrape).
    pub fn refresh(&self, engine: &Engine) {
        let desired = engine.desired();
        self.source_errors.set(desired.error_count() as i64);
        let empty = std::collections::BTreeMap::new();
        for zone in engine.zones.values() {
            let name = zone.cfg.name.to_string();
            let zone_desired = desired.zone(&zone.cfg.name).unwrap_or(&empty);
            let zone_read = zone
                .view
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_some();
            let counts = zone
                .states
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .counts(zone_desired, zone_read, &engine.unplanned(zone));
            for kind in STATES {
                let state = state_name(kind);
                self.records
                    .get_or_create(&StateLabels {
                        zone: name.clone(),
                        state: state.into(),
                    })
                    .set(i64::from(counts.get(state).copied().unwrap_or(0)));
            }
            let labels = ZoneLabels { zone: name };
            let st = zone
                .status
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            self.desired_records
                .get_or_create(&labels)
                .set(zone_desired.len() as i64);
            self.observed_records
                .get_or_create(&labels)
                .set(engine.observed_count(zone) as i64);
            self.syncing
                .get_or_create(&labels)
                .set(i64::from(st.syncing));
            if let Some(t) = st.last_sync {
                self.last_sync.get_or_create(&labels).set(unix_seconds(t));
            }
            if let Some(t) = st.last_success {
                self.last_success
                    .get_or_create(&labels)
                    .set(unix_seconds(t));
            }
        }
    }
}

/// The planner's admin server: its metrics (refreshed from `engine` per scrape) and
/// `/status` = `GetStatus` as JSON.
pub fn admin_server(
    engine: Arc<Engine>,
    metrics: PlannerMetrics,
    service: PlannerService,
) -> AdminServer {
    let mut registry = Registry::default();
    register_build_info(&mut registry, "dnsplane-planner", env!("CARGO_PKG_VERSION"));
    metrics.register(&mut registry);
    AdminServer::new(registry)
        .on_scrape(move || metrics.refresh(&engine))
        .status(move || {
            let service = service.clone();
            async move {
                use pb::planner_server::Planner;
                match service
                    .get_status(tonic::Request::new(pb::GetStatusRequest {}))
                    .await
                {
                    Ok(r) => status_json(&r.into_inner()),
                    Err(s) => serde_json::json!({"level": "error", "reason": s.message()}),
                }
            }
        })
}

fn ts(t: Option<&prost_types::Timestamp>) -> serde_json::Value {
    t.map_or(serde_json::Value::Null, |t| t.to_string().into())
}

/// `GetStatus` in the proto3 JSON mapping (camelCase names, RFC 3339 timestamps), as
/// `grpcurl` prints it, except that default values are written out too.
pub fn status_json(s: &pb::PlannerStatus) -> serde_json::Value {
    use serde_json::json;
    json!({
        "level": s.level,
        "reason": s.reason,
        "zones": s.zones.iter().map(|z| json!({
            "zone": z.zone,
            "account": z.account,
            "policy": z.policy,
            "recordsByState": z.records_by_state,
            "lastSync": ts(z.last_sync.as_ref()),
            "lastSuccess": ts(z.last_success.as_ref()),
            "lastError": z.last_error,
            "initialSyncDone": z.initial_sync_done,
            "desiredRecords": z.desired_records,
            "observedRecords": z.observed_records,
            "syncing": z.syncing,
            "initialSyncStarted": ts(z.initial_sync_started.as_ref()),
            "nextRetry": ts(z.next_retry.as_ref()),
            "applier": z.applier,
        })).collect::<Vec<_>>(),
        "appliers": s.appliers.iter().map(|a| json!({
            "address": a.address,
            "healthy": a.healthy,
            "lastError": a.last_error,
            "zones": a.zones,
            "accounts": a.accounts.iter().map(|acc| {
                let mut v = json!({"name": acc.name, "circuit": acc.circuit});
                if let Some(q) = &acc.quota {
                    v["quota"] = json!({
                        "mode": q.mode,
                        "rate": q.rate,
                        "currentRate": q.current_rate,
                        "burst": q.burst,
                        "replicas": q.replicas,
                        "ops": q.ops,
                        "redis": q.redis,
                        // proto3 JSON writes 64-bit integers as strings.
                        "granted": q.granted.to_string(),
                        "waited": q.waited.to_string(),
                        "denied": q.denied.to_string(),
                        "throttled": q.throttled.to_string(),
                        "fallbacks": q.fallbacks.to_string(),
                    });
                }
                v
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "sourceErrors": s.source_errors.iter().map(|e| json!({
            "source": e.source,
            "location": e.location,
            "record": e.record,
            "message": e.message,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(m: &PlannerMetrics) -> String {
        let mut r = Registry::default();
        m.register(&mut r);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &r).unwrap();
        out
    }

    #[test]
    fn hooks_count_by_zone_kind_and_outcome() {
        let m = PlannerMetrics::default();
        let zone = Name::parse("example.com.").unwrap();
        m.planned(
            &zone,
            [
                ChangeKind::Create,
                ChangeKind::Create,
                ChangeKind::Delete,
                ChangeKind::Adopt,
            ],
        );
        m.outcome(&zone, pb::Outcome::Applied);
        m.outcome(&zone, pb::Outcome::Conflict);
        m.outcome(&zone, pb::Outcome::Conflict);
        m.outcome(&zone, pb::Outcome::RejectedPermanent);
        m.observe_sync(&zone, true, Duration::from_millis(30), true);
        m.observe_sync(&zone, false, Duration::from_secs(100), false);
        let text = encode(&m);
        for line in [
            "dnsplane_plan_changes_total{zone=\"example.com.\",kind=\"create\"} 2",
            "dnsplane_plan_changes_total{zone=\"example.com.\",kind=\"delete\"} 1",
            "dnsplane_plan_changes_total{zone=\"example.com.\",kind=\"adopt\"} 1",
            "dnsplane_record_outcomes_total{zone=\"example.com.\",outcome=\"applied\"} 1",
            "dnsplane_record_outcomes_total{zone=\"example.com.\",outcome=\"conflict\"} 2",
            "dnsplane_record_outcomes_total{zone=\"example.com.\",outcome=\"rejected_permanent\"} 1",
            "dnsplane_sync_duration_seconds_count{zone=\"example.com.\",scope=\"zone\",result=\"ok\"} 1",
            "dnsplane_sync_duration_seconds_bucket{le=\"0.04\",zone=\"example.com.\",scope=\"zone\",result=\"ok\"} 1",
            "dnsplane_sync_duration_seconds_bucket{le=\"0.02\",zone=\"example.com.\",scope=\"zone\",result=\"ok\"} 0",
            "dnsplane_sync_duration_seconds_bucket{le=\"+Inf\",zone=\"example.com.\",scope=\"names\",result=\"error\"} 1",
            "dnsplane_sync_duration_seconds_bucket{le=\"40.96\",zone=\"example.com.\",scope=\"names\",result=\"error\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
        }
        assert!(
            text.contains("# TYPE dnsplane_sync_duration_seconds histogram"),
            "{text}"
        );
    }

    #[test]
    fn status_json_uses_the_proto3_json_names() {
        let s = pb::PlannerStatus {
            level: "degraded".into(),
            reason: "zone example.com.: boom".into(),
            zones: vec![pb::ZoneStatus {
                zone: "example.com.".into(),
                records_by_state: [("converged".to_string(), 3)].into(),
                last_sync: Some(prost_types::Timestamp {
                    seconds: 1_700_000_000,
                    nanos: 5_000_000,
                }),
                desired_records: 4,
                ..Default::default()
            }],
            appliers: vec![],
            source_errors: vec![pb::SourceError {
                location: "web.yaml:3".into(),
                ..Default::default()
            }],
        };
        let v = status_json(&s);
        assert_eq!(v["level"], "degraded");
        assert_eq!(v["zones"][0]["recordsByState"]["converged"], 3);
        assert_eq!(v["zones"][0]["lastSync"], "2023-11-14T22:13:20.005Z");
        assert_eq!(v["zones"][0]["lastSuccess"], serde_json::Value::Null);
        assert_eq!(v["zones"][0]["desiredRecords"], 4);
        assert_eq!(v["zones"][0]["initialSyncDone"], false);
        assert_eq!(v["sourceErrors"][0]["location"], "web.yaml:3");
    }
}
