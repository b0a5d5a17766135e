//! dnsplane-applier: owns every provider call. Planners stream batches in; the applier
//! applies them under per-zone locks and streams one outcome per change back.
//!
//! Layout, from the top (nothing imports upward):
//! - [`run`] / [`Applier`] wire it all; [`admin`]: the admin HTTP port; [`service`]:
//!   the `dnsplane.v1.Applier` gRPC service (proto ⇄ domain, the one place a provider
//!   error becomes a gRPC status);
//! - [`accounts`]: what the applier does in domain terms (list through the [`cache`],
//!   run a batch under its zone's lock, status); [`account`]: one account's stack,
//!   zone locks, circuit ([`circuit`]) and quota;
//! - [`apply`]: one batch on one provider — partition on conflict, bisection on
//!   invalid, bounded retry ([`retry`]) on transient answers;
//! - [`layers`]: the provider stack, one call context through every layer (span,
//!   [`quota`], metrics and circuit, faults, driver);
//! - [`provider`]: the driver trait, the error taxonomy and one folder per driver
//!   (`memory`, `pdns`, `rfc2136`) plus `fault`, the fault-injection layer;
//! - leaves: [`events`] (log + metric + span fields per event), [`metrics`] (the
//!   families), [`config`].
use crate::account::{Account, AccountOptions};
use crate::accounts::{Accounts, Lifecycle, RunOptions};
use crate::config::DriverConfig;
use crate::metrics::ApplierMetrics;
use crate::provider::Provider;
use crate::provider::azure::AzureProvider;
use crate::provider::clouddns::CloudDnsProvider;
use crate::provider::cloudflare::CloudflareProvider;
use crate::provider::memory::MemoryProvider;
use crate::provider::memory::dns::{Authority, DnsServer};
use crate::provider::memory::store::StoreError;
use crate::provider::pdns::PdnsProvider;
use crate::provider::rfc2136::Rfc2136Provider;
use crate::provider::route53::Route53Provider;
use crate::provider::webhook::WebhookProvider;
use crate::service::ApplierService;
use dnsplane_common::pb::applier_server::ApplierServer;
use dnsplane_common::tls::{self, ServerTls};
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic_health::ServingStatus;

pub mod account;
pub mod accounts;
pub mod admin;
pub mod apply;
pub mod cache;
pub mod circuit;
pub mod claims;
pub mod config;
pub mod events;
pub mod layers;
pub mod metrics;
pub mod provider;
pub mod quota;
pub mod retry;
pub mod service;
#[cfg(test)]
mod testing;

pub use config::{ApplierConfig, ConfigError, EMBEDDED_ACCOUNT, load_config};
pub use provider::memory::store::MemoryStore;

/// How long the gRPC server may take to close its connections once the streams have
/// ended (a grpc.health Watch never ends on its own).
const SERVER_CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the applier could not start or stopped early.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplierError {
    #[error("invalid config: {0}")]
    Config(String),
    #[error("account {account:?}: cannot open the store in {dir}: {source}")]
    Store {
        account: String,
        dir: PathBuf,
        #[source]
        source: StoreError,
    },
    #[error("account {account:?}: cannot listen for DNS on {addr}: {source}")]
    DnsBind {
        account: String,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// A `pdns` or `rfc2136` account that cannot be set up (an unreadable key file,
    /// a server address that does not resolve). Never carries a secret.
    #[error("account {account:?}: {source}")]
    Driver {
        account: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("gRPC reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("gRPC server: {0}")]
    Serve(#[from] tonic::transport::Error),
    /// `[tls]` files that cannot be used (named in the message).
    #[error("tls: {0}")]
    Tls(#[from] dnsplane_common::tls::TlsError),
    #[error("gRPC listener: {0}")]
    Listener(#[source] std::io::Error),
}

/// An applier with its stores open and DNS sockets bound, ready to serve. Split from
/// [`run`] so that callers can learn the DNS addresses (port 0 in tests) first.
#[derive(Debug)]
pub struct Applier {
    config: ApplierConfig,
    accounts: Vec<Arc<Account>>,
    dns: Vec<(String, DnsServer)>,
    /// The registry the accounts' metric families are in; the admin port serves it.
    registry: Registry,
    /// `[tls]`, read and re-read when its files change.
    tls: Option<Arc<ServerTls>>,
}

/// Where the applier serves.
#[derive(Debug)]
pub struct Listeners {
    /// gRPC: Applier, grpc.health.v1, reflection v1 and v1alpha.
    pub grpc: TcpListener,
    /// The admin HTTP port (`/metrics`, `/healthz`, `/readyz`, `/status`), if any.
    pub admin: Option<TcpListener>,
}

impl Applier {
    /// Validates the config, opens every account's store and binds its DNS sockets,
    /// and builds each account's provider stack (driver, fault rules, quota).
    pub async fn new(config: ApplierConfig) -> Result<Self, ApplierError> {
        config.validate().map_err(ApplierError::Config)?;
        let mut registry = admin::registry();
        let metrics = ApplierMetrics::register(&mut registry);
        let mut accounts = Vec::new();
        let mut dns = Vec::new();
        for account in &config.accounts {
            let name = account.name.clone();
            let driver_err =
                |source: Box<dyn std::error::Error + Send + Sync>| ApplierError::Driver {
                    account: name.clone(),
                    source,
                };
            let provider: Arc<dyn Provider> = match &account.driver {
                DriverConfig::Memory(m) => {
                    let store_err = |source| ApplierError::Store {
                        account: name.clone(),
                        dir: m.state_dir.clone(),
                        source,
                    };
                    // Startup: a blocking read of the snapshot and journal is fine here.
                    let store = Arc::new(MemoryStore::open(&m.state_dir).map_err(store_err)?);
                    let provider = MemoryProvider::new(store.clone(), account.zones.clone())
                        .map_err(store_err)?;
                    if let Some(addr) = m.dns_listen {
                        let authority =
                            Authority::new(store, &account.zones).with_transfer(m.dns_transfer);
                        let server = DnsServer::bind(addr, authority)
                            .await
                            .map_err(|source| ApplierError::DnsBind {
                                account: name.clone(),
                                addr,
                                source,
                            })?
                            .with_rate_limit(m.dns_rate_limit);
                        dns.push((name.clone(), server));
                    }
                    Arc::new(provider)
                }
                DriverConfig::Pdns(p) => Arc::new(
                    PdnsProvider::new(p)
                        .map_err(|e| driver_err(e.into()))?
                        .with_drift_check(config.record_cache_drift_check),
                ),
                DriverConfig::Rfc2136(r) => Arc::new(
                    Rfc2136Provider::new(r, &account.zones).map_err(|e| driver_err(e.into()))?,
                ),
                DriverConfig::Route53(r) => Arc::new(
                    Route53Provider::new(r)
                        .map_err(|e| driver_err(e.into()))?
                        .with_drift_check(config.record_cache_drift_check),
                ),
                DriverConfig::CloudDns(c) => {
                    Arc::new(CloudDnsProvider::new(c).map_err(|e| driver_err(e.into()))?)
                }
                DriverConfig::Cloudflare(c) => Arc::new(
                    CloudflareProvider::new(c)
                        .map_err(|e| driver_err(e.into()))?
                        .with_drift_check(config.record_cache_drift_check),
                ),
                DriverConfig::Webhook(w) => Arc::new(
                    WebhookProvider::new(w, &account.zones)
                        .map_err(|e| driver_err(e.into()))?
                        .with_drift_check(config.record_cache_drift_check),
                ),
                DriverConfig::Azure(a) => Arc::new(
                    AzureProvider::new(a)
                        .map_err(|e| driver_err(e.into()))?
                        .with_drift_check(config.record_cache_drift_check),
                ),
            };
            let options = AccountOptions::build(account)
                .map_err(ApplierError::Config)?
                .with_metrics(metrics.clone());
            accounts.push(Arc::new(Account::with_options(
                &name,
                provider,
                &account.zones,
                options,
            )));
        }
        let tls = config
            .tls
            .as_ref()
            .map(|t| ServerTls::load(&t.settings()))
            .transpose()?;
        Ok(Applier {
            config,
            accounts,
            dns,
            registry,
            tls,
        })
    }

    /// Where each account with `dns_listen` answers DNS (UDP and TCP).
    pub fn dns_addrs(&self) -> Vec<(String, SocketAddr)> {
        self.dns
            .iter()
            .map(|(a, s)| (a.clone(), s.local_addr()))
            .collect()
    }

    /// Serves gRPC (Applier, grpc.health.v1, reflection v1 and v1alpha), the admin port
    /// (ready while serving, not ready once draining) and DNS until `shutdown` is
    /// cancelled; then reports NOT_SERVING, answers new batches DEFERRED, waits up to
    /// `shutdown_grace` for in-flight batches, ends the streams and returns.
    pub async fn serve(
        self,
        listeners: Listeners,
        shutdown: CancellationToken,
    ) -> Result<(), ApplierError> {
        let Applier {
            config,
            accounts,
            dns,
            registry,
            tls,
        } = self;
        let Listeners { grpc, admin } = listeners;
        let lifecycle = Lifecycle {
            draining: shutdown.clone(),
            ..Lifecycle::default()
        };
        let accounts = Arc::new(Accounts::new(
            accounts,
            RunOptions {
                cache_ttl: config.cache_ttl,
                max_concurrent_batches: config.max_concurrent_batches,
                retry: config.retry.clone(),
            },
            lifecycle.clone(),
        ));
        let service = ApplierService::new(accounts.clone()).with_writers(
            config
                .tls
                .as_ref()
                .map(|t| t.writer_names.clone())
                .unwrap_or_default(),
        );
        let admin = admin.map(|l| {
            let server = admin::admin_server(registry, accounts.clone()).tls(
                tls.as_ref()
                    .map(|t| Arc::new(t.port_without_client_certs(tls::ALPN_HTTP1))),
            );
            let readiness = server.readiness();
            let stop = CancellationToken::new();
            let task = tokio::spawn(server.serve(l, stop.clone()));
            (readiness, stop, task)
        });
        let (health, health_service) = tonic_health::server::health_reporter();
        health.set_serving::<ApplierServer<ApplierService>>().await;
        health.set_service_status("", ServingStatus::Serving).await;
        let (reflection_v1, reflection_v1alpha) = dnsplane_common::grpc::reflection_services()?;

        let dns_stop = CancellationToken::new();
        let mut dns_tasks = Vec::new();
        for (account, server) in dns {
            tracing::info!(account = %account, addr = %server.local_addr(), "Answering DNS.");
            dns_tasks.push(tokio::spawn(server.run(dns_stop.clone())));
        }

        let addr = grpc.local_addr().ok();
        let close = lifecycle.close_streams.clone();
        // Handshakes (and, with `client_ca`, client certificates) before anything;
        // `allowed_names` per request, so that a refused client is told which name
        // it presented.
        let incoming = tls::Incoming::new(
            grpc,
            tls.as_ref().map(|t| Arc::new(t.port(tls::ALPN_GRPC))),
            "applier gRPC",
        )
        .map_err(ApplierError::Listener)?;
        let allowed = config
            .tls
            .as_ref()
            .map(|t| t.allowed_names.clone())
            .unwrap_or_default();
        let server = tonic::transport::Server::builder()
            .trace_fn(dnsplane_common::telemetry::grpc_server_span)
            .layer(tonic::service::InterceptorLayer::new(tls::allowed_names(
                allowed,
            )))
            .add_service(health_service)
            .add_service(ApplierServer::new(service))
            .add_service(reflection_v1)
            .add_service(reflection_v1alpha)
            .serve_with_incoming_shutdown(incoming, close.cancelled_owned());
        let mut server = tokio::spawn(server);
        tracing::info!(addr = ?addr, tls = tls.is_some(), mtls = config.tls.as_ref().is_some_and(|t| t.client_ca.is_some()), "Applier serving gRPC.");
        if let Some((ready, _, _)) = &admin {
            ready.set(true);
        }

        let early = tokio::select! {
            r = &mut server => Some(r),
            _ = shutdown.cancelled() => None,
        };
        let result = match early {
            Some(r) => {
                // The server stopped by itself: an error (the token was not cancelled).
                lifecycle.close_streams.cancel();
                r.unwrap_or_else(|e| {
                    tracing::error!(error = %e, "gRPC server task failed.");
                    Ok(())
                })
                .map_err(ApplierError::Serve)
            }
            None => {
                tracing::info!("Draining: new batches are deferred.");
                if let Some((ready, _, _)) = &admin {
                    ready.set(false);
                }
                health
                    .set_not_serving::<ApplierServer<ApplierService>>()
                    .await;
                health
                    .set_service_status("", ServingStatus::NotServing)
                    .await;
                lifecycle.batches.close();
                if tokio::time::timeout(config.shutdown_grace, lifecycle.batches.wait())
                    .await
                    .is_err()
                {
                    tracing::warn!(
                        running = lifecycle.batches.len(),
                        "Grace period over with batches still running; ending the streams."
                    );
                }
                lifecycle.close_streams.cancel();
                match tokio::time::timeout(SERVER_CLOSE_TIMEOUT, &mut server).await {
                    Ok(Ok(r)) => r.map_err(ApplierError::Serve),
                    Ok(Err(e)) => {
                        tracing::error!(error = %e, "gRPC server task failed.");
                        Ok(())
                    }
                    Err(_) => {
                        tracing::warn!("Connections still open after shutdown; closing them.");
                        server.abort();
                        Ok(())
                    }
                }
            }
        };
        dns_stop.cancel();
        for t in dns_tasks {
            let _ = t.await;
        }
        if let Some((_, stop, task)) = admin {
            stop.cancel();
            match tokio::time::timeout(SERVER_CLOSE_TIMEOUT, task).await {
                Ok(Ok(Err(e))) => tracing::warn!(error = %e, "Admin HTTP server failed."),
                Ok(_) => {}
                Err(_) => tracing::warn!("Admin HTTP server did not stop in time."),
            }
        }
        tracing::info!("Applier stopped.");
        result
    }
}

/// Starts the applier described by `config` on `listeners` until `shutdown` is
/// cancelled, then drains (see [`Applier::serve`]).
pub async fn run(
    config: ApplierConfig,
    listeners: Listeners,
    shutdown: CancellationToken,
) -> Result<(), ApplierError> {
    Applier::new(config).await?.serve(listeners, shutdown).await
}
