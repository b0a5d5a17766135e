//! dnsplane-planner: computes the change plan (desired vs current vs ownership) and
//! streams batches to appliers. It holds no provider credentials and makes no provider
//! calls.
//!
//! Layout, from the top (nothing imports upward):
//! - [`run`] wires it all; [`admin`]: the admin HTTP port; [`service`]: the
//!   `dnsplane.v1.Planner` gRPC service (proto ⇄ domain); [`auth`]: who may call it
//!   (bearer tokens, roles, scopes, per-caller rate limits), asked by both;
//! - [`engine`]: per-zone loops that read, plan, apply and fold results in, and the
//!   read model ([`engine::Snapshot`]) everything above reads;
//! - [`source`] → [`desired`]: desired records from files and pushes, placed in zones
//!   and checked across records;
//! - [`plan`]: the pure diff of desired vs current ([`observed`]) vs [`ownership`];
//!   [`guard`] holds a plan that would change too much of a zone until it is approved;
//!   [`batcher`] cuts it into batches;
//! - [`state`]: the per-record state machine (one fold: plan → results → lost stream);
//! - [`webhook`]: external-dns's webhook provider protocol, onto a pushed source;
//! - [`pool`], [`client`]: the appliers and the only code that speaks their protocol;
//! - [`lease`]: one writer per owner id; the engine sends batches only while it
//!   holds the lease (Redis, or a lock file in the state directory);
//! - leaves: [`audit`] (the audit trail: events, file, rotation), [`events`] (log +
//!   metric per event), [`metrics`] (the families),
//!   [`config`], [`error`], [`store`] (the durable desired state), [`redis_store`]
//!   (pushes in the lease's Redis, for replicas without a shared state directory).
pub mod admin;
pub mod audit;
pub mod auth;
pub mod batcher;
pub mod claimer;
pub mod client;
pub mod config;
pub mod desired;
pub mod engine;
pub mod error;
pub mod events;
pub mod external_dns;
pub mod guard;
pub mod lease;
pub mod metrics;
pub mod observed;
pub mod ownership;
pub mod plan;
pub mod pool;
pub mod redis_store;
pub mod service;
pub mod source;
mod source_tasks;
pub mod state;
pub mod store;
pub mod target;
pub mod webhook;

pub use error::PlannerError;

use config::{PlannerConfig, SourceConfig};
use dnsplane_common::pb::planner_server::PlannerServer;
use dnsplane_common::tls::{ALPN_GRPC, ALPN_HTTP1, Incoming, ServerTls};
use engine::Engine;
use std::sync::Arc;
use std::time::Duration;
use store::DesiredStore;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::info;

/// How long shutdown waits for the engine's work and the admin server.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Where the planner serves.
#[derive(Debug)]
pub struct Listeners {
    /// gRPC: Planner, grpc.health.v1, reflection v1 and v1alpha.
    pub grpc: TcpListener,
    /// The admin HTTP port (`/metrics`, `/healthz`, `/readyz`, `/status`), if any.
    pub admin: Option<TcpListener>,
}

/// Checks what the planner needs before it serves: every configured source path
/// exists, is readable and holds a manifest, and the state directory can be written.
/// An `Err` is a configuration problem ([`PlannerError::is_config`]): the binaries
/// exit 64 with it. [`run`] checks the same.
pub fn preflight(config: &PlannerConfig) -> Result<(), PlannerError> {
    // Two Kubernetes sources under one name would overwrite each other's records.
    let mut kube_names = std::collections::BTreeSet::new();
    for source in &config.sources {
        if let SourceConfig::Kubernetes(k) = source {
            let key = source::kubernetes::store_key(k);
            if !kube_names.insert(key.clone()) {
                return Err(PlannerError::Config(format!(
                    "[[sources]] type = \"kubernetes\": two sources read the same namespaces and kinds ({key}); give each its cluster's `name`"
                )));
            }
        }
    }
    for source in &config.sources {
        match source {
            SourceConfig::File { paths, format, .. } => source::FileSource::new(paths.clone())
                .with_format(*format)
                .preflight()
                .map_err(PlannerError::SourceNotReady)?,
            // Reached at run time: an API that does not answer yet makes the source
            // not ready, not the planner unable to start.
            SourceConfig::Kubernetes(k) => {
                if let Some(e) = source::kubernetes::settings::check(k).into_iter().next() {
                    return Err(PlannerError::Config(format!(
                        "[[sources]] type = \"kubernetes\": {e}"
                    )));
                }
            }
            // NetBox itself is reached at run time; its token, CA and secret now.
            SourceConfig::Netbox(n) => {
                source_tasks::netbox_parts(n, &config.zones)?;
            }
        }
    }
    DesiredStore::open(&config.state_dir)?;
    auth::Authenticator::new(config.auth.as_ref(), zone_names(config))?;
    open_audit_file(config)?;
    Ok(())
}

/// `[audit] file`, opened for appending (`None` when not configured).
fn open_audit_file(config: &PlannerConfig) -> Result<Option<audit::AuditFile>, PlannerError> {
    config
        .audit
        .as_ref()
        .map(|a| audit::AuditFile::open(&a.file, a.max_bytes, a.keep))
        .transpose()
        .map_err(PlannerError::Audit)
}

/// The configured zones' names.
fn zone_names(config: &PlannerConfig) -> Vec<dnsplane_common::Name> {
    config.zones.iter().map(|z| z.name.clone()).collect()
}

/// gRPC message and stream bounds of the planner's port (docs/security.md).
pub mod limits {
    /// The largest request message decoded (tonic's default, made explicit): larger
    /// pushes go through `PutDesiredStream`, in chunks.
    pub const MAX_DECODING_MESSAGE: usize = 4 << 20;
    /// The largest answer encoded: plans and record listings are paged far below it.
    pub const MAX_ENCODING_MESSAGE: usize = 64 << 20;
    /// HTTP/2 streams (calls) one connection may have open at once.
    pub const MAX_CONCURRENT_STREAMS: u32 = 100;
    /// Calls of one connection served at once; more wait for a free slot.
    pub const CONCURRENCY_PER_CONNECTION: usize = 32;
}

/// Runs the planner until `shutdown` is cancelled: gRPC (with health and reflection)
/// answers at once; sources load and the first syncs run in the background.
pub async fn run(
    config: PlannerConfig,
    listeners: Listeners,
    shutdown: CancellationToken,
) -> Result<(), PlannerError> {
    preflight(&config)?;
    let mut registry = prometheus_client::registry::Registry::default();
    dnsplane_common::metrics::register_build_info(
        &mut registry,
        "dnsplane-planner",
        env!("CARGO_PKG_VERSION"),
    );
    let metrics = metrics::PlannerMetrics::register(&mut registry);
    let kube_metrics = config
        .sources
        .iter()
        .any(|s| matches!(s, SourceConfig::Kubernetes(_)))
        .then(|| source::kubernetes::metrics::KubeMetrics::register(&mut registry));
    let metrics_for_webhook = metrics.clone();
    let (lease, lease_handle) = lease::Lease::new(
        lease::backend(&config).map_err(PlannerError::Lease)?,
        lease::Identity::new(),
        lease::LeaseSettings::from_config(&config),
        metrics.clone(),
    );
    let engine = Engine::new(config.clone(), metrics.clone(), lease_handle)?;
    let lease = lease.with_claimer(Box::new(claimer::PoolClaimer {
        pool: engine.pool().clone(),
        owner: config.owner_id.clone(),
        timeout: config.lease.renew_interval(),
    }));
    if let Some(file) = open_audit_file(&config)? {
        engine.attach_audit_file(file);
    }
    // `[tls]`: read now (a bad file refuses the start), re-read when it changes.
    let tls = config
        .tls
        .as_ref()
        .map(|t| ServerTls::load(&t.settings()))
        .transpose()
        .map_err(PlannerError::Tls)?;
    let authenticator = Arc::new(auth::Authenticator::new(
        config.auth.as_ref(),
        zone_names(&config),
    )?);
    engine.attach_watched(engine::Watched {
        auth: Some(authenticator.clone()),
        server_tls: tls.clone(),
    });
    let service = service::PlannerService::new(Arc::clone(&engine))
        .with_auth(authenticator.clone(), metrics.clone());
    let admin_stop = CancellationToken::new();
    let (readiness, admin_task) = match listeners.admin {
        Some(l) => {
            let server = admin::admin_server(
                registry,
                engine.clone(),
                metrics,
                authenticator.clone(),
                service.clone(),
                // The audit trail's last outcomes.
                Arc::new(admin::AuditTrailChanges(engine.clone())),
            )
            .tls(
                tls.as_ref()
                    .map(|t| Arc::new(t.port_without_client_certs(ALPN_HTTP1))),
            );
            let readiness = server.readiness();
            (
                Some(readiness),
                // Apart from the engine's runtime: its status and metrics are reads of
                // the engine's read model, which never waits behind a busy lock.
                Some(
                    server
                        .serve_apart(l, admin_stop.clone())
                        .map_err(PlannerError::Listener)?,
                ),
            )
        }
        None => (None, None),
    };
    let listener = listeners.grpc;
    let addr = listener.local_addr().map_err(PlannerError::Listener)?;
    // Bound now, so that a taken address fails the start; served once the pushed
    // state is restored (a change stored before would be overwritten by it).
    let webhook_listener = match &config.webhook {
        Some(w) => Some(TcpListener::bind(w.listen).await.map_err(|source| {
            PlannerError::WebhookListen {
                addr: w.listen,
                source,
            }
        })?),
        None => None,
    };

    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter
        .set_serving::<PlannerServer<service::PlannerService>>()
        .await;
    let (reflection_v1, reflection_v1alpha) = dnsplane_common::grpc::reflection_services()?;

    let work = CancellationToken::new();
    // The durable desired state first: pushes and each file source's last accepted
    // files are back in force before the first plan, so a restart deletes nothing.
    let store = DesiredStore::open(&config.state_dir)?;
    if let Some(url) = &config.lease.redis {
        // Replicas with a state directory each: pushes live in the lease's Redis.
        engine.set_push_store(engine::PushStore::Redis(Box::new(
            redis_store::RedisStore::new(
                url,
                &config.owner_id,
                config.lease.renew_interval().max(Duration::from_secs(2)),
            )?,
        )));
    }
    engine.set_store(store.clone());
    engine.set_advert(
        lease::Advert::new(&config).map_err(PlannerError::Lease)?,
        lease::advertised(&config, addr),
    );
    let released = engine.restore_releases()?;
    if released > 0 {
        info!(
            zones = released,
            "Zones released to external-dns stay released until resumed."
        );
    }
    match engine.restore_pushes() {
        Ok(0) => {}
        Ok(restored) => info!(records = restored, "Pushed desired state restored."),
        // Redis not answering yet: this read only serves a standby's reads; the
        // leader reads the store again before it plans anything.
        Err(e) if config.lease.redis.is_some() => {
            tracing::warn!(error = %e, "Pushed desired state not read from Redis yet; it is read again before this planner plans.")
        }
        Err(e) => return Err(e.into()),
    }
    for source in &config.sources {
        match source {
            SourceConfig::File {
                paths,
                outside_zones,
                format,
                views,
            } => {
                let mut src = source::FileSource::new(paths.clone())
                    .with_format(*format)
                    .with_zones(source::zones::ZoneCheck::new(&config.zones, *outside_zones))
                    .with_shrink_settle(source::file::SHRINK_SETTLE.max(config.sync.source_poll));
                let name = src.store_key();
                engine.set_source_views(&name, views.clone());
                let restored = Engine::cpu(|| src.with_store(store.clone()))?;
                if restored > 0 {
                    info!(source = %name, records = restored, "Accepted desired state restored.");
                }
                // Parsing a large source takes seconds: off the runtime, so that the
                // admin port answers meanwhile.
                let snapshot = Engine::cpu(|| src.load())?;
                events::DesiredStateChanged {
                    source: &name,
                    records: snapshot.entries.len(),
                    errors: snapshot.errors.len(),
                    initial: true,
                }
                .emit();
                engine.set_source_readiness(&name, snapshot.unready);
                engine.set_source(&name, snapshot.entries, snapshot.errors);
                let (tx, mut rx) = tokio::sync::mpsc::channel(4);
                let watcher = src.watch(config.sync.source_poll, tx, work.clone());
                let engine_ = engine.clone();
                engine.spawn(async move {
                    while let Some(snapshot) = rx.recv().await {
                        events::DesiredStateChanged {
                            source: &name,
                            records: snapshot.entries.len(),
                            errors: snapshot.errors.len(),
                            initial: false,
                        }
                        .emit();
                        engine_.set_source_readiness(&name, snapshot.unready);
                        engine_.set_source(&name, snapshot.entries, snapshot.errors);
                    }
                    let _ = watcher.await;
                });
            }
            SourceConfig::Kubernetes(_) | SourceConfig::Netbox(_) => {}
        }
    }
    for source in &config.sources {
        if let SourceConfig::Kubernetes(k) = source {
            source_tasks::start_kubernetes_source(&engine, k, kube_metrics.clone(), work.clone())
                .await?;
        }
        if let SourceConfig::Netbox(n) = source {
            source_tasks::start_netbox_source(&engine, n, work.clone()).await?;
        }
    }
    // Until it is the leader, the engine answers reads and sends nothing.
    let lease_stop = CancellationToken::new();
    let lease_task = tokio::spawn(lease.run(lease_stop.clone()));
    engine.start(work.clone());
    // Writes are served once this planner knows its role: leader with the push store
    // read, or standby naming the holder (bounded: a lease backend that does not
    // answer leaves it standby, refusing writes with that reason).
    engine
        .settled(config.lease.retry_interval.max(Duration::from_secs(3)))
        .await;
    let webhook_task = match (&config.webhook, webhook_listener) {
        (Some(w), Some(l)) => {
            let server = webhook::Webhook::new(engine.clone(), metrics_for_webhook.clone(), w);
            let tls = tls.as_ref().map(|t| Arc::new(t.port(ALPN_HTTP1)));
            Some(tokio::spawn(server.serve(l, tls, shutdown.clone())))
        }
        _ => None,
    };

    let appliers: Vec<String> = engine
        .pool()
        .members()
        .iter()
        .map(|m| m.addr.clone())
        .collect();
    info!(%addr, tls = tls.is_some(), zones = config.zones.len(), appliers = ?appliers, applier_dns = ?config.applier_dns, "Planner serving gRPC.");
    match authenticator.tokens_file() {
        None => tracing::warn!(
            %addr,
            loopback = addr.ip().is_loopback(),
            "The planner API is unauthenticated: whoever reaches this address may push, sync, approve and release. Set [auth] tokens_file (docs/security.md)."
        ),
        Some(file) => info!(
            file = %file.display(),
            tokens = authenticator.tokens().len(),
            "The planner API needs a bearer token."
        ),
    }
    let tokens_stop = CancellationToken::new();
    let tokens_task = authenticator.clone().watch(tokens_stop.clone());
    if let Some(r) = &readiness {
        r.set(true);
    }
    let server = tonic::transport::Server::builder()
        .trace_fn(dnsplane_common::telemetry::grpc_server_span)
        .max_concurrent_streams(limits::MAX_CONCURRENT_STREAMS)
        .concurrency_limit_per_connection(limits::CONCURRENCY_PER_CONNECTION)
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(
            PlannerServer::new(service)
                .max_decoding_message_size(limits::MAX_DECODING_MESSAGE)
                .max_encoding_message_size(limits::MAX_ENCODING_MESSAGE),
        )
        .serve_with_incoming_shutdown(
            Incoming::new(
                listener,
                tls.as_ref().map(|t| Arc::new(t.port(ALPN_GRPC))),
                "planner gRPC",
            )
            .map_err(PlannerError::Listener)?,
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
    tokens_stop.cancel();
    let _ = tokens_task.await;
    // The planner keeps no state that a restart would not rebuild by reading the
    // zones again: stop the loops; a sync in progress is cut at a batch boundary and
    // its records are re-planned by the next planner.
    work.cancel();
    if !engine.shutdown(SHUTDOWN_GRACE).await {
        tracing::warn!(grace = ?SHUTDOWN_GRACE, "Syncs still running at the end of the grace period; leaving them.");
    }
    // Only now: a standby may take over (at its next try, not after the ttl) once the
    // window is closed, and nothing of ours is sent after that.
    lease_stop.cancel();
    if tokio::time::timeout(SHUTDOWN_GRACE, lease_task)
        .await
        .is_err()
    {
        tracing::warn!(grace = ?SHUTDOWN_GRACE, "The lease was not released in time; it lapses by itself.");
    }
    admin_stop.cancel();
    if let Some(t) = admin_task {
        match tokio::time::timeout(SHUTDOWN_GRACE, t).await {
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "Admin HTTP server failed."),
            Ok(_) => {}
            Err(_) => {
                tracing::warn!(grace = ?SHUTDOWN_GRACE, "Admin HTTP server did not stop in time.")
            }
        }
    }
    if let Some(t) = webhook_task {
        match tokio::time::timeout(SHUTDOWN_GRACE, t).await {
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "Webhook server failed."),
            Ok(_) => {}
            Err(_) => {
                tracing::warn!(grace = ?SHUTDOWN_GRACE, "Webhook server did not stop in time.")
            }
        }
    }
    info!("Planner stopped.");
    result.map_err(PlannerError::Serve)
}
