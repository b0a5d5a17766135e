//! The planner's Prometheus metric families. A leaf: built once with
//! [`PlannerMetrics::register`] into the registry the admin port serves, then handed to
//! the engine, whose events ([`crate::events`]) record into them. Nothing here reads
//! the engine; the gauges are set from its read model ([`crate::engine::Snapshot`]) by
//! the admin port before each scrape.
//!
//! | metric | type | labels | set by |
//! |---|---|---|---|
//! | `dnsplane_planner_plan_changes_total` | counter | `zone`, `account`, `kind` (`create` `update` `delete` `adopt`) | `ZonePlanned`, per plan sent |
//! | `dnsplane_planner_record_outcomes_total` | counter | `zone`, `account`, `outcome` (`applied` `already_applied` `conflict` `invalid` `deferred` `failed` `rejected_permanent`) | `ResultFolded`, per applier result |
//! | `dnsplane_planner_sync_duration_seconds` | histogram | `zone`, `account`, `scope` (`zone` `names`), `result` (`ok` `error`) | `SyncFinished`, per sync |
//! | `dnsplane_planner_records` | gauge | `zone`, `account`, `state` (`converged` `conflict` ...; 0 when none) | the read model, at scrape time |
//! | `dnsplane_planner_desired_records`, `dnsplane_planner_observed_records` | gauge | `zone`, `account` | desired state / what the provider holds as the planner knows it (last read, updated from results; ownership records included), at scrape time |
//! | `dnsplane_planner_last_sync_timestamp_seconds`, `dnsplane_planner_last_sync_success_timestamp_seconds` | gauge | `zone`, `account` | zone status, at scrape time (absent until the first one) |
//! | `dnsplane_planner_zone_syncing` | gauge | `zone`, `account` | 1 while a sync of the zone runs |
//! | `dnsplane_planner_source_errors` | gauge | — | desired records rejected by the sources |
//! | `dnsplane_planner_health` | gauge | `level` (`healthy` `syncing` `degraded` `failing`) | 1 for the planner's current level, 0 for the others, at scrape time (rules in `docs/reliability.md`) |
//! | `dnsplane_planner_source_ready` | gauge | `source` | 1 while the source is ready, 0 while it keeps its last accepted records |
//! | `dnsplane_planner_zone_held` | gauge | `zone`, `account` | 1 while the mass-change guard holds a plan of the zone |
//! | `dnsplane_planner_held_changes` | gauge | `zone`, `account`, `kind` (`delete` `update`) | the held plan's changes, at scrape time |
//! | `dnsplane_planner_guard_window_changes` | gauge | `zone`, `account` | deletes and updates the mass-change guard let through within `[safety] window`, at scrape time |
//! | `dnsplane_planner_plans_held_total`, `dnsplane_planner_plans_released_total` | counter | `zone`, `account` (released: also `how` = `approved` or `withdrawn`) | `PlanHeld`, `PlanReleased` |
//! | `dnsplane_planner_lease_leader` | gauge | — | `LeaseChanged`: 1 while this planner holds the lease and may write, 0 on standby |
//! | `dnsplane_planner_fenced` | gauge | — | `LeaseFenced`, `LeaseTookOver`: 1 while an applier serves another writer of this owner and this planner sends nothing |
//! | `dnsplane_planner_lease_transitions_total` | counter | `to` (`leader` `standby`), `reason` (`acquired` `took_over` `lost` `expired` `released`) | `LeaseChanged`, per role change |
//! | `dnsplane_planner_api_calls_total` | counter | `caller` (a token name of the tokens file, or `anonymous`), `call` (the gRPC method), `code` (the gRPC code, e.g. `OK` `UNAUTHENTICATED` `PERMISSION_DENIED` `RESOURCE_EXHAUSTED`) | every call of the `dnsplane.v1.Planner` API ([`crate::auth`]) |
//! | `dnsplane_build_info`, `dnsplane_process_start_time_seconds` | | `service`, `version` | start |
use crate::target::Target;
use dnsplane_common::{ChangeKind, Outcome};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ZoneLabels {
    zone: String,
    account: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChangeLabels {
    zone: String,
    account: String,
    kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    zone: String,
    account: String,
    outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SyncLabels {
    zone: String,
    account: String,
    scope: String,
    result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    zone: String,
    account: String,
    state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransitionLabels {
    to: String,
    reason: String,
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
    lease_leader: Gauge,
    fenced: Gauge,
    lease_transitions: Family<TransitionLabels, Counter>,
    zone_held: Family<ZoneLabels, Gauge>,
    source_ready: Family<SourceLabels, Gauge>,
    health: Family<LevelLabels, Gauge>,
    held_changes: Family<ChangeLabels, Gauge>,
    guard_window: Family<ZoneLabels, Gauge>,
    plans_held: Family<ZoneLabels, Counter>,
    plans_released: Family<ReleaseLabels, Counter>,
    webhook_requests: Family<WebhookLabels, Counter>,
    webhook_refused: Counter,
    audit_write_errors: Counter,
    api_calls: Family<ApiCallLabels, Counter>,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiCallLabels {
    caller: String,
    call: String,
    code: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    call: String,
    code: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LevelLabels {
    level: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    source: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReleaseLabels {
    zone: String,
    account: String,
    how: String,
}

/// One zone's gauges, as the admin port sets them before a scrape.
#[derive(Debug, Clone, Default)]
pub struct ZoneGauges {
    /// Records by state name, every state present (zeros included).
    pub records: Vec<(&'static str, u32)>,
    pub desired: usize,
    pub observed: usize,
    pub syncing: bool,
    pub last_sync: Option<f64>,
    pub last_success: Option<f64>,
    /// The held plan's (deletes, updates), while there is one.
    pub held: Option<(usize, usize)>,
    /// Deletes and updates the guard let through within `[safety] window`.
    pub guard_window: usize,
}

impl PlannerMetrics {
    /// Builds the families and adds them to `registry`.
    pub fn register(registry: &mut Registry) -> PlannerMetrics {
        let m = PlannerMetrics {
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
            zone_held: Family::default(),
            source_ready: Family::default(),
            health: Family::default(),
            held_changes: Family::default(),
            guard_window: Family::default(),
            plans_held: Family::default(),
            plans_released: Family::default(),
            lease_leader: Gauge::default(),
            fenced: Gauge::default(),
            lease_transitions: Family::default(),
            webhook_requests: Family::default(),
            webhook_refused: Counter::default(),
            audit_write_errors: Counter::default(),
            api_calls: Family::default(),
        };
        registry.register(
            "dnsplane_planner_plan_changes",
            "Changes planned and sent to an applier, by zone and kind",
            m.plan_changes.clone(),
        );
        registry.register(
            "dnsplane_planner_record_outcomes",
            "Per-record results from appliers, by zone and outcome",
            m.record_outcomes.clone(),
        );
        registry.register(
            "dnsplane_planner_sync_duration_seconds",
            "Duration of one sync (read, plan, apply), by zone, scope (whole zone or due names) and result",
            m.sync_duration.clone(),
        );
        registry.register(
            "dnsplane_planner_records",
            "Records the planner manages, by zone and state",
            m.records.clone(),
        );
        registry.register(
            "dnsplane_planner_desired_records",
            "Desired records placed in the zone",
            m.desired_records.clone(),
        );
        registry.register(
            "dnsplane_planner_observed_records",
            "RRsets the zone held at its last full read",
            m.observed_records.clone(),
        );
        registry.register(
            "dnsplane_planner_last_sync_timestamp_seconds",
            "When the last sync of the zone ended, in seconds since the Unix epoch",
            m.last_sync.clone(),
        );
        registry.register(
            "dnsplane_planner_last_sync_success_timestamp_seconds",
            "When the last successful sync of the zone ended, in seconds since the Unix epoch",
            m.last_success.clone(),
        );
        registry.register(
            "dnsplane_planner_zone_syncing",
            "1 while a sync of the zone runs",
            m.syncing.clone(),
        );
        registry.register(
            "dnsplane_planner_source_errors",
            "Desired records the sources rejected (see /status or GetStatus)",
            m.source_errors.clone(),
        );
        registry.register(
            "dnsplane_planner_source_ready",
            "1 while the source can be read completely; 0 while it keeps its last accepted records (see /status)",
            m.source_ready.clone(),
        );
        registry.register(
            "dnsplane_planner_health",
            "1 for the planner's current health level (healthy, syncing, degraded, failing), 0 for the others",
            m.health.clone(),
        );
        registry.register(
            "dnsplane_planner_zone_held",
            "1 while the mass-change guard holds a plan of the zone (dnsplane approve ZONE)",
            m.zone_held.clone(),
        );
        registry.register(
            "dnsplane_planner_held_changes",
            "Deletes and updates of the zone's held plan",
            m.held_changes.clone(),
        );
        registry.register(
            "dnsplane_planner_guard_window_changes",
            "Deletes and updates the mass-change guard let through in the zone within [safety] window; each new plan is weighed together with them",
            m.guard_window.clone(),
        );
        registry.register(
            "dnsplane_planner_plans_held",
            "Plans the mass-change guard held, by zone",
            m.plans_held.clone(),
        );
        registry.register(
            "dnsplane_planner_plans_released",
            "Held plans released, by zone and how (approved, withdrawn)",
            m.plans_released.clone(),
        );
        registry.register(
            "dnsplane_planner_lease_leader",
            "1 while this planner holds the lease for its owner id and may write, 0 on standby",
            m.lease_leader.clone(),
        );
        registry.register(
            "dnsplane_planner_fenced",
            "1 while an applier serves another writer of this owner id and this planner sends nothing (fenced), else 0",
            m.fenced.clone(),
        );
        registry.register(
            "dnsplane_planner_lease_transitions",
            "Role changes of this planner, by the role it changed to and why",
            m.lease_transitions.clone(),
        );
        registry.register(
            "dnsplane_planner_webhook_requests",
            "external-dns webhook requests answered, by call (negotiate, records, adjust, apply) and HTTP status",
            m.webhook_requests.clone(),
        );
        registry.register(
            "dnsplane_planner_webhook_endpoints_refused",
            "Endpoints of external-dns's changes that were not accepted (see the source errors in /status)",
            m.webhook_refused.clone(),
        );
        registry.register(
            "dnsplane_planner_audit_write_errors",
            "Audit events that could not be written to the audit file (they are in the log)",
            m.audit_write_errors.clone(),
        );
        registry.register(
            "dnsplane_planner_api_calls",
            "Calls of the planner's gRPC API, by caller (token name or anonymous), call and gRPC code",
            m.api_calls.clone(),
        );
        m
    }

    /// `caller` called `call`, answered with `code`. Bounded: callers are the tokens
    /// file's names (or `anonymous`), calls the API's methods.
    pub(crate) fn api_call(&self, caller: &str, call: &str, code: tonic::Code) {
        self.api_calls
            .get_or_create(&ApiCallLabels {
                caller: caller.into(),
                call: call.into(),
                code: code_name(code).into(),
            })
            .inc();
    }

    /// The webhook answered `call` with `code`.
    pub(crate) fn webhook_request(&self, call: &str, code: u16) {
        self.webhook_requests
            .get_or_create(&WebhookLabels {
                call: call.into(),
                code,
            })
            .inc();
    }

    /// The webhook refused `n` endpoints of one change set.
    pub(crate) fn webhook_refused(&self, n: usize) {
        self.webhook_refused.inc_by(n as u64);
    }

    /// A write of audit events to the audit file failed.
    pub(crate) fn audit_write_error(&self) {
        self.audit_write_errors.inc();
    }

    /// The guard held a new plan of `zone`.
    pub(crate) fn plan_held(&self, target: &Target) {
        self.plans_held
            .get_or_create(&ZoneLabels {
                zone: target.zone.to_string(),
                account: target.account.to_string(),
            })
            .inc();
    }

    /// A held plan of `zone` was released.
    pub(crate) fn plan_released(&self, target: &Target, approved: bool) {
        self.plans_released
            .get_or_create(&ReleaseLabels {
                zone: target.zone.to_string(),
                account: target.account.to_string(),
                how: if approved { "approved" } else { "withdrawn" }.into(),
            })
            .inc();
    }

    /// Families registered nowhere: for engines built without an admin port.
    pub fn unregistered() -> PlannerMetrics {
        PlannerMetrics::register(&mut Registry::default())
    }

    /// One sync of `zone` ended after `elapsed` (`full_zone`: the whole zone, not a
    /// targeted re-plan of some names).
    pub(crate) fn sync(&self, target: &Target, full_zone: bool, elapsed: Duration, ok: bool) {
        self.sync_duration
            .get_or_create(&SyncLabels {
                zone: target.zone.to_string(),
                account: target.account.to_string(),
                scope: if full_zone { "zone" } else { "names" }.into(),
                result: if ok { "ok" } else { "error" }.into(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// These changes of `zone` were planned and are being sent.
    pub(crate) fn planned(&self, target: &Target, kinds: impl IntoIterator<Item = ChangeKind>) {
        let zone = target.zone.to_string();
        for kind in kinds {
            self.plan_changes
                .get_or_create(&ChangeLabels {
                    zone: zone.clone(),
                    account: target.account.to_string(),
                    kind: kind.as_str().into(),
                })
                .inc();
        }
    }

    /// An applier answered `outcome` for one record of `zone`.
    pub(crate) fn outcome(&self, target: &Target, outcome: Outcome) {
        self.record_outcomes
            .get_or_create(&OutcomeLabels {
                zone: target.zone.to_string(),
                account: target.account.to_string(),
                outcome: outcome.label().into(),
            })
            .inc();
    }

    /// An applier fenced this planner (`true`), or it leads or stands by again.
    pub(crate) fn fenced(&self, fenced: bool) {
        self.fenced.set(i64::from(fenced));
        if fenced {
            self.lease_leader.set(0);
        }
    }

    /// This planner became leader or standby, for `reason`.
    pub(crate) fn lease_changed(&self, leader: bool, reason: &str) {
        self.fenced.set(0);
        self.lease_leader.set(i64::from(leader));
        self.lease_transitions
            .get_or_create(&TransitionLabels {
                to: if leader { "leader" } else { "standby" }.into(),
                reason: reason.into(),
            })
            .inc();
    }

    /// Sets the gauges of `target`.
    pub fn set_zone(&self, target: &Target, g: &ZoneGauges) {
        let name = target.zone.to_string();
        let account = target.account.to_string();
        for (state, n) in &g.records {
            self.records
                .get_or_create(&StateLabels {
                    zone: name.clone(),
                    account: account.clone(),
                    state: (*state).into(),
                })
                .set(i64::from(*n));
        }
        let labels = ZoneLabels {
            zone: name,
            account,
        };
        self.desired_records
            .get_or_create(&labels)
            .set(g.desired as i64);
        self.observed_records
            .get_or_create(&labels)
            .set(g.observed as i64);
        self.syncing
            .get_or_create(&labels)
            .set(i64::from(g.syncing));
        if let Some(t) = g.last_sync {
            self.last_sync.get_or_create(&labels).set(t);
        }
        if let Some(t) = g.last_success {
            self.last_success.get_or_create(&labels).set(t);
        }
        let (deletes, updates) = g.held.unwrap_or_default();
        for (kind, n) in [("delete", deletes), ("update", updates)] {
            self.held_changes
                .get_or_create(&ChangeLabels {
                    zone: labels.zone.clone(),
                    account: labels.account.clone(),
                    kind: kind.into(),
                })
                .set(n as i64);
        }
        self.zone_held
            .get_or_create(&labels)
            .set(i64::from(g.held.is_some()));
        self.guard_window
            .get_or_create(&labels)
            .set(g.guard_window as i64);
    }

    /// Sets whether source `name` is ready.
    pub fn set_source_ready(&self, name: &str, ready: bool) {
        self.source_ready
            .get_or_create(&SourceLabels {
                source: name.to_string(),
            })
            .set(i64::from(ready));
    }

    /// Sets the number of rejected desired records.
    pub fn set_source_errors(&self, n: usize) {
        self.source_errors.set(n as i64);
    }

    /// `level` is the planner's level now: its series 1, every other level's 0.
    pub fn set_health(&self, level: &'static str, all: &[&'static str]) {
        for l in all {
            self.health
                .get_or_create(&LevelLabels { level: l })
                .set(i64::from(*l == level));
        }
    }
}

/// The gRPC code as the status codes spec spells it (`PERMISSION_DENIED`).
fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "CANCELLED",
        Unknown => "UNKNOWN",
        InvalidArgument => "INVALID_ARGUMENT",
        DeadlineExceeded => "DEADLINE_EXCEEDED",
        NotFound => "NOT_FOUND",
        AlreadyExists => "ALREADY_EXISTS",
        PermissionDenied => "PERMISSION_DENIED",
        ResourceExhausted => "RESOURCE_EXHAUSTED",
        FailedPrecondition => "FAILED_PRECONDITION",
        Aborted => "ABORTED",
        OutOfRange => "OUT_OF_RANGE",
        Unimplemented => "UNIMPLEMENTED",
        Internal => "INTERNAL",
        Unavailable => "UNAVAILABLE",
        DataLoss => "DATA_LOSS",
        Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_count_by_zone_kind_and_outcome() {
        let mut r = Registry::default();
        let m = PlannerMetrics::register(&mut r);
        let zone = Target::new(
            dnsplane_common::Name::parse("example.com.").unwrap(),
            "a",
            false,
        );
        m.planned(
            &zone,
            [
                ChangeKind::Create,
                ChangeKind::Create,
                ChangeKind::Delete,
                ChangeKind::Adopt,
            ],
        );
        m.outcome(&zone, Outcome::Applied);
        m.outcome(&zone, Outcome::Conflict);
        m.outcome(&zone, Outcome::Conflict);
        m.outcome(&zone, Outcome::RejectedPermanent);
        m.sync(&zone, true, Duration::from_millis(30), true);
        m.sync(&zone, false, Duration::from_secs(100), false);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &r).unwrap();
        for line in [
            "dnsplane_planner_plan_changes_total{zone=\"example.com.\",account=\"a\",kind=\"create\"} 2",
            "dnsplane_planner_plan_changes_total{zone=\"example.com.\",account=\"a\",kind=\"delete\"} 1",
            "dnsplane_planner_plan_changes_total{zone=\"example.com.\",account=\"a\",kind=\"adopt\"} 1",
            "dnsplane_planner_record_outcomes_total{zone=\"example.com.\",account=\"a\",outcome=\"applied\"} 1",
            "dnsplane_planner_record_outcomes_total{zone=\"example.com.\",account=\"a\",outcome=\"conflict\"} 2",
            "dnsplane_planner_record_outcomes_total{zone=\"example.com.\",account=\"a\",outcome=\"rejected_permanent\"} 1",
            "dnsplane_planner_sync_duration_seconds_count{zone=\"example.com.\",account=\"a\",scope=\"zone\",result=\"ok\"} 1",
            "dnsplane_planner_sync_duration_seconds_bucket{le=\"0.04\",zone=\"example.com.\",account=\"a\",scope=\"zone\",result=\"ok\"} 1",
            "dnsplane_planner_sync_duration_seconds_bucket{le=\"0.02\",zone=\"example.com.\",account=\"a\",scope=\"zone\",result=\"ok\"} 0",
            "dnsplane_planner_sync_duration_seconds_bucket{le=\"+Inf\",zone=\"example.com.\",account=\"a\",scope=\"names\",result=\"error\"} 1",
            "dnsplane_planner_sync_duration_seconds_bucket{le=\"40.96\",zone=\"example.com.\",account=\"a\",scope=\"names\",result=\"error\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
        }
        assert!(
            text.contains("# TYPE dnsplane_planner_sync_duration_seconds histogram"),
            "{text}"
        );
    }
}
