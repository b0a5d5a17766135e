//! dnsplane-planner: computes the change plan (desired vs current vs ownership) and
//! streams batches to an applier. It holds no provider credentials and makes no
//! provider calls.
//!
//! Layout, in the order data flows:
//! - [`source`]: desired records from files (external-dns `DNSEndpoint`) and pushes;
//! - [`desired`]: the desired state, placed in zones and checked across records;
//! - [`ownership`]: the TXT ownership records; [`observed`]: what a zone holds;
//! - [`plan`]: the pure diff of desired vs current vs ownership;
//! - [`batcher`]: cuts a plan into batches;
//! - [`engine`]: per-zone loops that read, plan, apply and fold results in;
//! - [`state`]: the per-record state table;
//! - [`service`]: the `dnsplane.v1.Planner` gRPC service;
//! - [`metrics`]: Prometheus metrics and the admin HTTP port.
pub mod batcher;
pub mod config;
pub mod desired;
pub mod engine;
pub mod metrics;
pub mod plan;
pub mod pool;
pub mod observed;
pub mod ownership;
pub mod service;
pub mod source;
pub mod state;

use config::{PlannerConfig, SourceConfig};
use dnsplane_common::pb::planner_server::PlannerServer;
use engine::Engine;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::info;

/// Runs the planner until `shutdown` is cancelled: gRPC (with health and reflection)
/// answers at once; sources load and the first syncs run in the background.
pub async fn run(
    config: PlannerConfig,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    run_with_admin(config, listener, None, shutdown).await
}

/// [`run`], also serving the admin HTTP port (`/metrics`, `/healthz`, `/readyz`,
/// `/status`) on `admin`.
pub async fn run_with_admin(
    config: PlannerConfig,
    listener: TcpListener,
    admin: Option<TcpListener>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let engine = Engine::new(config.clone())?;
    // The gauges are read from the engine at scrape time; the counters and the sync
    // histogram are fed by the engine as it plans, applies and syncs.
    let metrics = engine.metrics.clone();
    let service = service::PlannerService::new(Arc::clone(&engine));
    let admin_stop = CancellationToken::new();
    let (readiness, admin_task) = match admin {
        Some(l) => {
            let server = metrics::admin_server(engine.clone(), metrics.clone(), service.clone());
            let readiness = server.readiness();
            (
                Some(readiness),
                Some(tokio::spawn(server.serve(l, admin_stop.clone()))),
            )
        }
        None => (None, None),
    };
    let addr = listener.local_addr()?;

    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter
        .set_serving::<PlannerServer<service::PlannerService>>()
        .await;
    let (reflection_v1, reflection_v1alpha) = dnsplane_common::grpc::reflection_services()?;

    let work = CancellationToken::new();
    let mut tasks = Vec::new();
    for (i, source) in config.sources.iter().enumerate() {
        match source {
            SourceConfig::File { paths } => {
                let name = format!("file:{i}");
                let mut src = source::FileSource::new(paths.clone());
                let snapshot = src.load();
                info!(source = %name, records = snapshot.entries.len(), errors = snapshot.errors.len(), "Desired state loaded.");
                engine.set_source(&name, snapshot.entries, snapshot.errors);
                let (tx, mut rx) = tokio::sync::mpsc::channel(4);
                tasks.push(src.watch(config.sync.source_poll, tx, work.clone()));
                let engine = engine.clone();
                tasks.push(tokio::spawn(async move {
                    while let Some(snapshot) = rx.recv().await {
                        info!(source = %name, records = snapshot.entries.len(), errors = snapshot.errors.len(), "Desired state changed.");
                        engine.set_source(&name, snapshot.entries, snapshot.errors);
                    }
                }));
            }
        }
    }
    tasks.extend(engine.spawn_zone_loops(work.clone()));
    tasks.push(engine.pool.spawn(work.clone()));

    let appliers: Vec<String> = engine
        .pool
        .members()
        .iter()
        .map(|m| m.addr.clone())
        .collect();
    info!(%addr, zones = config.zones.len(), appliers = ?appliers, applier_dns = ?config.applier_dns, "Planner serving gRPC.");
    if let Some(r) = &readiness {
        r.set(true);
    }
    let server = tonic::transport::Server::builder()
        .trace_fn(dnsplane_common::telemetry::grpc_server_span)
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(PlannerServer::new(service))
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            {
                let shutdown = shutdown.clone();
                let reporter = health_reporter.clone();
                async move {
                    shutdown.cancelled().await;
                    if let Some(r) = &readiness {
                        r.set(false);
                    }
                    reporter
                        .set_not_serving::<PlannerServer<service::PlannerService>>()
                        .await;
                }
            },
        );
    let result = server.await;
    // The planner keeps no state that a restart would not rebuild by reading the
    // zones again: stop the loops; a sync in progress is cut at a batch boundary and
    // its records are re-planned by the next planner.
    work.cancel();
    for t in tasks {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), t).await;
    }
    admin_stop.cancel();
    if let Some(t) = admin_task {
        match tokio::time::timeout(std::time::Duration::from_secs(5), t).await {
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "Admin HTTP server failed."),
            Ok(_) => {}
            Err(_) => tracing::warn!("Admin HTTP server did not stop within 5 s."),
        }
    }
    info!("Planner stopped.");
    result.map_err(Into::into)
}
