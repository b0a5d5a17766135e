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
use dnsplane_common::metrics::{AdminServer, proto_json, unix_seconds};
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
            async move { proto_json(&crate::service::status(&engine).await) }
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
            &z.target,
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
                guard_window: z.status.guard_window,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dnsplane_common::pb;

    #[test]
    fn status_uses_the_proto3_json_names() {
        let s = pb::PlannerStatus {
            level: "degraded".into(),
            reason: "zone example.com.: boom".into(),
            zones: vec![pb::ZoneStatus {
                zone: "example.com.".into(),
                records_by_state: [("converged".to_string(), 3)].into(),
                last_sync: Some(dnsplane_common::wkt::Timestamp {
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
        let v = proto_json(&s);
        assert_eq!(v["level"], "degraded");
        assert_eq!(v["zones"][0]["recordsByState"]["converged"], 3);
        assert_eq!(v["zones"][0]["lastSync"], "2023-11-14T22:13:20.005Z");
        // An absent message is left out (grpcurl leaves it out too).
        assert!(v["zones"][0].get("lastSuccess").is_none(), "{v}");
        assert_eq!(v["zones"][0]["desiredRecords"], 4);
        assert_eq!(v["zones"][0]["initialSyncDone"], false);
        assert_eq!(v["sourceErrors"][0]["location"], "web.yaml:3");
        assert_eq!(v["lease"]["role"], "standby");
        assert_eq!(v["lease"]["holder"], "h/1/abcdef");
        // uint64 is a string in proto3 JSON.
        assert_eq!(v["lease"]["epoch"], "7");
    }
}
