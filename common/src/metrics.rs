//! The admin HTTP port both services serve next to gRPC (the linkerd admin-server
//! pattern): Prometheus metrics and probes for people and scrapers.
//!
//! | path | answer |
//! |---|---|
//! | `/metrics` | the registry in the Prometheus/OpenMetrics text format |
//! | `/healthz` | `200 ok` while the process runs (liveness) |
//! | `/readyz` | `200 ready` or `503 not ready` ([`Readiness`]; false while starting and draining) |
//! | `/status` | the service's own status as JSON (the planner: its `GetStatus`) |
//!
//! Metric names start with `dnsplane_`; every service registers its own families in
//! one [`Registry`] and hands it to [`AdminServer::new`]. Gauges that mirror state
//! (records by state, ...) are refreshed right before each scrape by the
//! [`AdminServer::on_scrape`] hooks, so nothing has to keep them up to date.
//!
//! ```text
//! let mut registry = Registry::default();
//! my_metrics.register(&mut registry);
//! let admin = AdminServer::new(registry)
//!     .on_scrape(move || my_metrics.refresh())
//!     .status(move || async move { serde_json::json!({"level": "healthy"}) });
//! let ready = admin.readiness();
//! let listener = dnsplane_common::metrics::bind("0.0.0.0:9452").await?;
//! tokio::spawn(admin.serve(listener, shutdown.clone()));
//! ready.set(true);
//! ```
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use prometheus_client;

/// The content type of [`prometheus_client::encoding::text::encode`]'s output.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Whether the service wants traffic; shared between the service and `/readyz`.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::Relaxed);
    }

    pub fn is_ready(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

type StatusFuture = Pin<Box<dyn Future<Output = serde_json::Value> + Send>>;
type StatusFn = Arc<dyn Fn() -> StatusFuture + Send + Sync>;
type ScrapeFn = Arc<dyn Fn() + Send + Sync>;

/// The admin HTTP server: build it, keep its [`Readiness`], then [`AdminServer::serve`].
#[derive(Clone)]
pub struct AdminServer {
    registry: Arc<Registry>,
    readiness: Readiness,
    status: Option<StatusFn>,
    on_scrape: Vec<ScrapeFn>,
    authorize: Option<AuthorizeFn>,
    tls: Option<Arc<crate::tls::PortTls>>,
    /// More routes of the service (the planner's status page), which do their own
    /// authorization.
    extra: Option<axum::Router>,
}

/// Decides whether a request for a path (`/metrics`, `/status`) with this
/// `authorization` header value may be answered.
type AuthorizeFn = Arc<dyn Fn(&str, Option<&[u8]>) -> bool + Send + Sync>;

impl std::fmt::Debug for AdminServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminServer")
            .field("ready", &self.readiness.is_ready())
            .field("status", &self.status.is_some())
            .field("on_scrape", &self.on_scrape.len())
            .field("tls", &self.tls.is_some())
            .field("extra_routes", &self.extra.is_some())
            .finish()
    }
}

impl AdminServer {
    /// Serves `registry`; not ready until [`Readiness::set`]`(true)`.
    pub fn new(registry: Registry) -> AdminServer {
        AdminServer {
            registry: Arc::new(registry),
            readiness: Readiness::default(),
            status: None,
            on_scrape: Vec::new(),
            authorize: None,
            tls: None,
            extra: None,
        }
    }

    /// Serves `routes` beside the built-in ones (their paths must differ: axum refuses
    /// overlapping routes); the
    /// [`authorize`](Self::authorize) hook is not asked for them.
    #[must_use]
    pub fn routes(mut self, routes: axum::Router) -> AdminServer {
        self.extra = Some(match self.extra.take() {
            Some(r) => r.merge(routes),
            None => routes,
        });
        self
    }

    /// Asks `f(path, authorization)` before answering `/metrics` or `/status`; `false`
    /// answers 401 with `WWW-Authenticate: Bearer`. The probes are never asked about.
    #[must_use]
    pub fn authorize(
        mut self,
        f: impl Fn(&str, Option<&[u8]>) -> bool + Send + Sync + 'static,
    ) -> AdminServer {
        self.authorize = Some(Arc::new(f));
        self
    }

    /// The flag `/readyz` answers from.
    pub fn readiness(&self) -> Readiness {
        self.readiness.clone()
    }

    /// Runs `f` before each `/metrics` encode (refresh gauges that mirror state).
    #[must_use]
    pub fn on_scrape(mut self, f: impl Fn() + Send + Sync + 'static) -> AdminServer {
        self.on_scrape.push(Arc::new(f));
        self
    }

    /// What `/status` answers (404 without it).
    #[must_use]
    pub fn status<F, Fut>(mut self, f: F) -> AdminServer
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = serde_json::Value> + Send + 'static,
    {
        self.status = Some(Arc::new(move || Box::pin(f())));
        self
    }

    /// The `/metrics` text, after the scrape hooks ran.
    pub fn encode(&self) -> String {
        for f in &self.on_scrape {
            f();
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// The routes, for tests or to merge into another router.
    pub fn router(self) -> axum::Router {
        use axum::routing::get;
        let metrics = self.clone();
        let ready = self.readiness.clone();
        let status = self.status.clone();
        let authorize = self.authorize.clone();
        let allowed = move |path: &str, headers: &axum::http::HeaderMap| {
            authorize.as_ref().is_none_or(|f| {
                f(
                    path,
                    headers.get(header::AUTHORIZATION).map(|v| v.as_bytes()),
                )
            })
        };
        let allowed_status = allowed.clone();
        let extra = self.extra.clone().unwrap_or_default();
        extra
            .route(
                "/metrics",
                get(move |headers: axum::http::HeaderMap| {
                    let admin = metrics.clone();
                    let ok = allowed("/metrics", &headers);
                    async move {
                        if !ok {
                            return unauthorized();
                        }
                        let body = admin.encode();
                        (
                            [(header::CONTENT_TYPE, HeaderValue::from_static(OPENMETRICS))],
                            body,
                        )
                            .into_response()
                    }
                }),
            )
            .route("/healthz", get(|| async { "ok\n" }))
            .route(
                "/readyz",
                get(move || {
                    let ready = ready.is_ready();
                    async move {
                        if ready {
                            (StatusCode::OK, "ready\n")
                        } else {
                            (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
                        }
                    }
                }),
            )
            .route(
                "/status",
                get(move |headers: axum::http::HeaderMap| {
                    let status = status.clone();
                    let ok = allowed_status("/status", &headers);
                    async move {
                        if !ok {
                            return unauthorized();
                        }
                        match status {
                            Some(f) => json(f().await),
                            None => (StatusCode::NOT_FOUND, "no status on this service\n")
                                .into_response(),
                        }
                    }
                }),
            )
    }

    /// [`serve`](Self::serve) on a runtime of its own, on a thread of its own: `/healthz`
    /// then answers whatever the service's runtime is busy with (a liveness probe that
    /// waits for a free worker of a service loading a million records restarts it).
    /// The status and metrics handlers must then not need the service's runtime (plain
    /// reads of shared state). The handle resolves once the server has stopped.
    pub fn serve_apart(
        self,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> std::io::Result<tokio::task::JoinHandle<std::io::Result<()>>> {
        let listener = listener.into_std()?;
        Ok(tokio::task::spawn_blocking(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener)?;
                self.serve(listener, shutdown).await
            })
        }))
    }

    /// Serves HTTPS with `tls` (`[tls]` of the service; no client certificate asked:
    /// probes and scrapers have none).
    pub fn tls(mut self, tls: Option<Arc<crate::tls::PortTls>>) -> Self {
        self.tls = tls;
        self
    }

    /// Serves until `shutdown` is cancelled. The caller binds the listener (port 0 in
    /// tests), so a port clash is reported before anything starts.
    pub async fn serve(
        mut self,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> std::io::Result<()> {
        let tls = self.tls.take();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let incoming = crate::tls::Incoming::new(listener, tls, "admin")?;
        tracing::info!(addr = %incoming.local_addr(), %scheme, "Admin HTTP serving /metrics /healthz /readyz /status (and the service's own routes).");
        axum::serve(incoming, self.router())
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await
    }
}

/// 401: a bearer token is needed (never says which ones exist).
fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))],
        "a bearer token with the read role is needed: send `Authorization: Bearer <token>`\n",
    )
        .into_response()
}

/// A message as `/status` serves it: the proto3 JSON mapping of the serde impls that
/// pbjson-build generates for [`crate::pb`] (what `grpcurl` prints: camelCase names,
/// 64-bit integers as strings, RFC 3339 timestamps), default values written out, an
/// absent message field left out.
pub fn proto_json<M: serde::Serialize>(message: &M) -> serde_json::Value {
    // Only a map with non-string keys could fail, and the contract has none; still,
    // say so rather than answer an empty object.
    serde_json::to_value(message)
        .unwrap_or_else(|e| serde_json::json!({ "error": format!("status as JSON: {e}") }))
}

fn json(value: serde_json::Value) -> Response {
    let body = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "{}".into()) + "\n";
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// Binds the admin address, naming it in the error.
pub async fn bind(addr: &str) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await.map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot listen on {addr} (admin HTTP): {e}"),
        )
    })
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    service: String,
    version: String,
}

pub mod process;

/// Registers `dnsplane_build_info{service, version} 1`,
/// `dnsplane_process_start_time_seconds` and the process's resources ([`process`]).
pub fn register_build_info(registry: &mut Registry, service: &str, version: &str) {
    registry.register_collector(Box::new(process::ProcessCollector::new(service)));
    registry.register(
        "dnsplane_build",
        "Which dnsplane service and version this is",
        Info::new(BuildLabels {
            service: service.into(),
            version: version.into(),
        }),
    );
    let start: Gauge<f64, std::sync::atomic::AtomicU64> = Gauge::default();
    start.set(unix_seconds(std::time::SystemTime::now()));
    registry.register(
        "dnsplane_process_start_time_seconds",
        "When this process started, in seconds since the Unix epoch",
        start,
    );
}

/// Seconds since the Unix epoch, for timestamp gauges.
pub fn unix_seconds(t: std::time::SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct Labels {
        zone: String,
    }

    async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String, String) {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut buf = String::new();
        s.read_to_string(&mut buf).await.unwrap();
        let (head, body) = buf.split_once("\r\n\r\n").unwrap();
        let code = head.split(' ').nth(1).unwrap().parse().unwrap();
        (code, head.to_ascii_lowercase(), body.to_string())
    }

    /// A service's own routes are served beside the built-in ones, which stay, and
    /// are not asked about by `authorize` (they do their own checks).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn routes_are_served_beside_the_built_in_ones() {
        let page = axum::Router::new().route("/", axum::routing::get(|| async { "page\n" }));
        let admin = AdminServer::new(Registry::default())
            .authorize(|_, _| false)
            .routes(page);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let server = tokio::spawn(admin.serve(listener, stop.clone()));
        let (code, _, body) = get(addr, "/").await;
        assert_eq!((code, body.as_str()), (200, "page\n"));
        assert_eq!(get(addr, "/metrics").await.0, 401);
        assert_eq!(get(addr, "/healthz").await.0, 200);
        assert_eq!(get(addr, "/nothing").await.0, 404);
        stop.cancel();
        server.await.unwrap().unwrap();
    }

    /// `authorize` guards `/metrics` and `/status` only: 401 with a Bearer challenge
    /// when it says no, the probes whatever it says.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn authorize_guards_metrics_and_status_not_the_probes() {
        let admin = AdminServer::new(Registry::default())
            .status(|| async { serde_json::json!({"level": "healthy"}) })
            .authorize(|path, authorization| {
                path == "/metrics" || authorization == Some(b"Bearer good".as_slice())
            });
        admin.readiness().set(true);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let server = tokio::spawn(admin.serve(listener, stop.clone()));
        let (code, head, _) = get(addr, "/status").await;
        assert_eq!(code, 401);
        assert!(head.contains("www-authenticate: bearer"), "{head}");
        assert_eq!(get(addr, "/metrics").await.0, 200);
        assert_eq!(get(addr, "/healthz").await.0, 200);
        assert_eq!(get(addr, "/readyz").await.0, 200);
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(
            b"GET /status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
        let mut buf = String::new();
        s.read_to_string(&mut buf).await.unwrap();
        assert!(buf.starts_with("HTTP/1.1 200"), "{buf}");
        stop.cancel();
        server.await.unwrap().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_metrics_probes_and_status() {
        let mut registry = Registry::default();
        register_build_info(&mut registry, "dnsplane-test", "1.2.3");
        let family = Family::<Labels, Counter>::default();
        registry.register("dnsplane_things", "Things", family.clone());
        let scrapes = Family::<Labels, Counter>::default();
        registry.register("dnsplane_scrapes", "Scrapes", scrapes.clone());
        family
            .get_or_create(&Labels {
                zone: "example.com.".into(),
            })
            .inc_by(3);
        let admin = AdminServer::new(registry)
            .on_scrape(move || {
                scrapes.get_or_create(&Labels { zone: "x".into() }).inc();
            })
            .status(|| async { serde_json::json!({"level": "healthy", "zones": [1, 2]}) });
        let ready = admin.readiness();
        let listener = bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let server = tokio::spawn(admin.serve(listener, stop.clone()));

        let (code, head, body) = get(addr, "/metrics").await;
        assert_eq!(code, 200);
        assert!(
            head.contains("content-type: application/openmetrics-text"),
            "{head}"
        );
        assert!(
            body.contains("dnsplane_things_total{zone=\"example.com.\"} 3\n"),
            "{body}"
        );
        assert!(
            body.contains("dnsplane_scrapes_total{zone=\"x\"} 1\n"),
            "{body}"
        );
        assert!(
            body.contains("dnsplane_build_info{service=\"dnsplane-test\",version=\"1.2.3\"} 1\n"),
            "{body}"
        );
        assert!(body.ends_with("# EOF\n"), "{body}");
        let (_, _, body) = get(addr, "/metrics").await;
        assert!(
            body.contains("dnsplane_scrapes_total{zone=\"x\"} 2\n"),
            "hooks run per scrape: {body}"
        );

        assert_eq!(get(addr, "/healthz").await.0, 200);
        assert_eq!(get(addr, "/readyz").await.0, 503);
        ready.set(true);
        let (code, _, body) = get(addr, "/readyz").await;
        assert_eq!((code, body.as_str()), (200, "ready\n"));
        let (code, head, body) = get(addr, "/status").await;
        assert_eq!(code, 200);
        assert!(head.contains("content-type: application/json"), "{head}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v, serde_json::json!({"level": "healthy", "zones": [1, 2]}));
        assert_eq!(get(addr, "/nope").await.0, 404);

        stop.cancel();
        server.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn status_is_404_without_a_source_and_bind_names_the_address() {
        let router_admin = AdminServer::new(Registry::default());
        let listener = bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let server = tokio::spawn(router_admin.serve(listener, stop.clone()));
        assert_eq!(get(addr, "/status").await.0, 404);
        stop.cancel();
        server.await.unwrap().unwrap();
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = taken.local_addr().unwrap().to_string();
        let e = bind(&at).await.unwrap_err().to_string();
        assert!(e.contains(&at) && e.contains("admin HTTP"), "{e}");
    }
}
