//! The planner's admin HTTP port: `/metrics` (its families, with the gauges set from
//! the engine's read model before each scrape), `/healthz`, `/readyz`, `/status`
//! (`GetStatus` as JSON) and the status page (`/`, [`page`]). Under `[auth]`,
//! `/status` and the page's data need a `read` token, and `/metrics` too unless
//! `metrics_open`. On top of the crate: it reads the engine and the service, nothing
//! reads it.
pub mod changes;
pub mod page;
pub mod view;

pub use changes::{AuditTrailChanges, ChangeRow, NoTrail, Recent, RecentChanges};

use crate::auth::Authenticator;
use crate::engine::{Engine, Level, Snapshot};
use crate::metrics::{PlannerMetrics, ZoneGauges};
use crate::service::PlannerService;
use crate::state::RecordStateKind;
use dnsplane_common::metrics::{AdminServer, unix_seconds};
use dnsplane_common::{json, pb};
use prometheus_client::registry::Registry;
use std::sync::Arc;

/// The admin server over `registry` (which holds `metrics`' families); the status
/// page approves through `service` and shows `changes` as its recent changes.
pub fn admin_server(
    registry: Registry,
    engine: Arc<Engine>,
    metrics: PlannerMetrics,
    auth: Arc<Authenticator>,
    service: PlannerService,
    changes: Arc<dyn RecentChanges>,
) -> AdminServer {
    let scraped = engine.clone();
    let page = page::routes(page::Page {
        engine: engine.clone(),
        auth: auth.clone(),
        service,
        changes,
    });
    AdminServer::new(registry)
        .routes(page)
        .authorize(move |path, authorization| auth.admits_admin(path, authorization))
        .on_scrape(move || refresh(&metrics, &scraped.snapshot()))
        .status(move || {
            let engine = engine.clone();
            async move { status_json(&crate::service::status(&engine).await) }
        })
}

/// Sets the gauges from the read model.
fn refresh(metrics: &PlannerMetrics, snapshot: &Snapshot) {
    metrics.set_source_errors(snapshot.source_errors.len());
    metrics.set_health(
        snapshot.health().level.as_str(),
        &Level::ALL.map(Level::as_str),
    );
    for (name, why) in &snapshot.sources {
        metrics.set_source_ready(name, why.is_empty());
    }
    for z in &snapshot.zones {
        metrics.set_zone(
            &z.name,
            &ZoneGauges {
                records: RecordStateKind::ALL
                    .iter()
                    .map(|k| (k.as_str(), z.records.get(k).copied().unwrap_or(0)))
                    .collect(),
                desired: z.desired_records,
                observed: z.observed_records,
                syncing: z.status.syncing,
                last_sync: z.status.last_sync.map(unix_seconds),
                last_success: z.status.last_success.map(unix_seconds),
                held: z.held.as_ref().map(|(h, _)| (h.deletes, h.updates)),
            },
        );
    }
}

/// `GetStatus` in the proto3 JSON mapping (camelCase names, RFC 3339 timestamps), as
/// `grpcurl` prints it, except that default values are written out too.
pub fn status_json(s: &pb::PlannerStatus) -> serde_json::Value {
    use serde_json::json;
    json!({
        "level": s.level,
        "reason": s.reason,
        "reasons": s.reasons.iter().map(|r| json!({
            "rule": r.rule,
            "level": r.level,
            "zone": r.zone,
            "message": r.message,
        })).collect::<Vec<_>>(),
        "safetyMode": s.safety_mode,
        "zones": s.zones.iter().map(|z| json!({
            "zone": z.zone,
            "account": z.account,
            "policy": z.policy,
            "recordsByState": z.records_by_state,
            "lastSync": json::timestamp(z.last_sync.as_ref()),
            "lastSuccess": json::timestamp(z.last_success.as_ref()),
            "lastError": z.last_error,
            "initialSyncDone": z.initial_sync_done,
            "desiredRecords": z.desired_records,
            "observedRecords": z.observed_records,
            "syncing": z.syncing,
            "initialSyncStarted": json::timestamp(z.initial_sync_started.as_ref()),
            "nextRetry": json::timestamp(z.next_retry.as_ref()),
            "applier": z.applier,
            "state": z.state,
            "held": z.held.as_ref().map(|h| json!({
                "digest": h.digest,
                "deletes": h.deletes,
                "updates": h.updates,
                "apexNs": h.apex_ns,
                "ownedRecords": h.owned_records,
                "reason": h.reason,
                "since": json::timestamp(h.since.as_ref()),
            })),
        })).collect::<Vec<_>>(),
        "appliers": s.appliers.iter().map(|a| json!({
            "address": a.address,
            "healthy": a.healthy,
            "lastError": a.last_error,
            "zones": a.zones,
            "accounts": a.accounts.iter().map(|acc| {
                let mut v = json!({"name": acc.name, "circuit": acc.circuit});
                if let Some(q) = &acc.quota {
                    v["quota"] = json::quota_status(q);
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
        "sources": s.sources.iter().map(|x| json!({
            "name": x.name,
            "ready": x.ready,
            "reason": x.reason,
        })).collect::<Vec<_>>(),
        "lease": s.lease.as_ref().map(|l| json!({
            "role": l.role,
            "holder": l.holder,
            "backend": l.backend,
            "location": l.location,
            "since": json::timestamp(l.since.as_ref()),
            "identity": l.identity,
            "epoch": l.epoch.to_string(),
            "lastError": l.last_error,
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            lease: Some(pb::LeaseStatus {
                role: "standby".into(),
                holder: "h/1/abcdef".into(),
                backend: "redis".into(),
                epoch: 7,
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = status_json(&s);
        assert_eq!(v["level"], "degraded");
        assert_eq!(v["zones"][0]["recordsByState"]["converged"], 3);
        assert_eq!(v["zones"][0]["lastSync"], "2023-11-14T22:13:20.005Z");
        assert_eq!(v["zones"][0]["lastSuccess"], serde_json::Value::Null);
        assert_eq!(v["zones"][0]["desiredRecords"], 4);
        assert_eq!(v["zones"][0]["initialSyncDone"], false);
        assert_eq!(v["sourceErrors"][0]["location"], "web.yaml:3");
        assert_eq!(v["lease"]["role"], "standby");
        assert_eq!(v["lease"]["holder"], "h/1/abcdef");
        // uint64 is a string in proto3 JSON.
        assert_eq!(v["lease"]["epoch"], "7");
    }
}
