//! Logs and traces for both services: one call at start ([`init`]), one at the end
//! ([`Guard::shutdown`]).
//!
//! Logs go to stderr as before (`DNSPLANE_LOG` filters, `DNSPLANE_LOG_FORMAT=json`).
//! Traces go out over OTLP/gRPC when, and only when, an endpoint is configured the
//! standard OpenTelemetry way:
//!
//! | variable | meaning |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT` | `http://host:4317`; unset or empty: tracing off |
//! | `OTEL_SERVICE_NAME` | overrides the service's own name (`dnsplane-planner`, ...) |
//! | `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG` | `parentbased_always_on` (default), `parentbased_traceidratio` + `0.1`, `always_off`, ... |
//! | `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none` | tracing off whatever else is set |
//! | `DNSPLANE_TRACE` | which spans are exported (an `EnvFilter`, default `info`) |
//!
//! Off costs nothing: no OpenTelemetry layer is installed, the gRPC interceptor
//! ([`InjectTraceContext`]) and server hook ([`grpc_server_span`]) return at once.
//!
//! Wiring a service (the planner does exactly this):
//!
//! ```text
//! // main: on a multi-thread runtime with >= 2 workers (RUST-STACK.md §2.2)
//! runtime.block_on(async {
//!     let telemetry = dnsplane_common::telemetry::init("dnsplane-applier");
//!     let result = serve(...).await;          // Server::builder().trace_fn(grpc_server_span)
//!     telemetry.shutdown().await;             // flushes from spawn_blocking
//!     result
//! })
//! // a gRPC client that propagates the trace: Client::new(traced_channel(channel))
//! // an HTTP call: inject_http_headers(&mut headers) before sending
//! ```
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Whether spans are exported; read by the propagation hooks so that "off" is free.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Spans of the exporter's own transport would be exported by the exporter: a loop.
const QUIET: &str = "h2=off,hyper=off,hyper_util=off,tonic=off,tower=off,opentelemetry=off,opentelemetry_sdk=off,opentelemetry_otlp=off";

/// How long shutdown waits for the last spans to leave.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// A tracing configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    #[error("{var}={value:?}: {problem}")]
    Env {
        var: &'static str,
        value: String,
        problem: String,
    },
    #[error("OTLP exporter: {0}")]
    Exporter(String),
    #[error("OTLP export needs a Tokio runtime: call telemetry::init inside one")]
    NoRuntime,
}

/// Where and how spans are exported, from the standard `OTEL_*` variables.
#[derive(Debug, Clone, PartialEq)]
pub struct OtelSettings {
    /// The OTLP/gRPC endpoint, `http://host:port`.
    pub endpoint: String,
    /// `service.name` of every span.
    pub service_name: String,
    /// The sampler, as `OTEL_TRACES_SAMPLER` names it (`parentbased_always_on`, ...).
    pub sampler: String,
    /// Its ratio, for the `*traceidratio` samplers.
    pub sampler_ratio: f64,
    /// Problems that fell back to a default (an unknown sampler), to log once logging runs.
    pub warnings: Vec<String>,
}

impl OtelSettings {
    /// Reads the process environment; `None` when tracing is off.
    pub fn from_env(default_service: &str) -> Result<Option<OtelSettings>, TelemetryError> {
        OtelSettings::from_vars(default_service, |k| std::env::var(k).ok())
    }

    /// Like [`OtelSettings::from_env`], reading variables through `var` (tests pass a
    /// map; `std::env::set_var` is `unsafe` in edition 2024).
    pub fn from_vars(
        default_service: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<OtelSettings>, TelemetryError> {
        let get = |k: &str| {
            var(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        if get("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        if get("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none")) {
            return Ok(None);
        }
        let (var_name, endpoint) = match get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(e) => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", e),
            None => match get("OTEL_EXPORTER_OTLP_ENDPOINT") {
                Some(e) => ("OTEL_EXPORTER_OTLP_ENDPOINT", e),
                None => return Ok(None),
            },
        };
        let bad = |problem: &str| TelemetryError::Env {
            var: var_name,
            value: endpoint.clone(),
            problem: problem.to_string(),
        };
        let uri: http::Uri = endpoint
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&format!("not a URL ({e})")))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(bad(
                    "https is not built in; export to a collector or Jaeger on plain http (inside the cluster or on loopback)",
                ));
            }
            _ => return Err(bad("must be an http:// URL, e.g. http://jaeger:4317")),
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err(bad("has no host"));
        }
        if get("OTEL_EXPORTER_OTLP_PROTOCOL")
            .or_else(|| get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
            .is_some_and(|p| p != "grpc")
        {
            return Err(TelemetryError::Env {
                var: "OTEL_EXPORTER_OTLP_PROTOCOL",
                value: get("OTEL_EXPORTER_OTLP_PROTOCOL").unwrap_or_default(),
                problem: "only grpc is built in (port 4317)".into(),
            });
        }
        let mut warnings = Vec::new();
        let mut sampler =
            get("OTEL_TRACES_SAMPLER").unwrap_or_else(|| "parentbased_always_on".into());
        let known = [
            "always_on",
            "always_off",
            "traceidratio",
            "parentbased_always_on",
            "parentbased_always_off",
            "parentbased_traceidratio",
        ];
        if !known.contains(&sampler.as_str()) {
            warnings.push(format!(
                "OTEL_TRACES_SAMPLER={sampler:?} is not one of {}; using parentbased_always_on",
                known.join(", ")
            ));
            sampler = "parentbased_always_on".into();
        }
        let mut sampler_ratio = 1.0;
        if sampler.ends_with("traceidratio") {
            match get("OTEL_TRACES_SAMPLER_ARG").map(|a| a.parse::<f64>()) {
                Some(Ok(r)) if (0.0..=1.0).contains(&r) => sampler_ratio = r,
                None => {}
                Some(_) => warnings.push(format!(
                    "OTEL_TRACES_SAMPLER_ARG={:?} is not a number from 0 to 1; sampling everything",
                    get("OTEL_TRACES_SAMPLER_ARG").unwrap_or_default()
                )),
            }
        }
        Ok(Some(OtelSettings {
            endpoint,
            service_name: get("OTEL_SERVICE_NAME").unwrap_or_else(|| default_service.to_string()),
            sampler,
            sampler_ratio,
            warnings,
        }))
    }

    fn sdk_sampler(&self) -> Sampler {
        let ratio = Sampler::TraceIdRatioBased(self.sampler_ratio);
        match self.sampler.as_str() {
            "always_on" => Sampler::AlwaysOn,
            "always_off" => Sampler::AlwaysOff,
            "traceidratio" => ratio,
            "parentbased_always_off" => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
            "parentbased_traceidratio" => Sampler::ParentBased(Box::new(ratio)),
            _ => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
        }
    }

    /// A tracer provider exporting to [`OtelSettings::endpoint`] in batches. Must be
    /// called inside a Tokio runtime (the gRPC channel lives on it).
    pub fn tracer_provider(&self) -> Result<SdkTracerProvider, TelemetryError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(TelemetryError::NoRuntime);
        }
        use opentelemetry_otlp::WithExportConfig;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(self.endpoint.clone())
            .with_timeout(FLUSH_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(self.service_name.clone())
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        Ok(SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(self.sdk_sampler())
            .with_resource(resource)
            .build())
    }
}

/// Keeps the exporter alive; [`Guard::shutdown`] flushes the last spans.
#[derive(Debug)]
#[must_use = "dropping the guard stops span export; call `shutdown().await` at the end"]
pub struct Guard {
    provider: Option<SdkTracerProvider>,
}

impl Guard {
    /// A guard that exports nothing.
    pub fn disabled() -> Guard {
        Guard { provider: None }
    }

    /// Wraps a provider (tests build their own with [`OtelSettings::tracer_provider`]).
    pub fn from_provider(provider: SdkTracerProvider) -> Guard {
        Guard {
            provider: Some(provider),
        }
    }

    /// Whether spans are being exported.
    pub fn tracing_enabled(&self) -> bool {
        self.provider.is_some()
    }

    /// Flushes and stops the exporter. Call it at the end of the runtime's work, while
    /// the runtime still runs: the export needs a worker thread, so the blocking
    /// shutdown runs on `spawn_blocking` (on the runtime thread itself it stalls for its
    /// whole timeout and loses the spans; RUST-STACK.md §2.2).
    pub async fn shutdown(mut self) {
        let Some(provider) = self.provider.take() else {
            return;
        };
        ENABLED.store(false, Ordering::Relaxed);
        let done = tokio::task::spawn_blocking(move || {
            let flushed = provider.force_flush();
            provider.shutdown().and(flushed)
        });
        match tokio::time::timeout(FLUSH_TIMEOUT * 2, done).await {
            Ok(Ok(Ok(()))) => tracing::debug!("Spans flushed."),
            Ok(Ok(Err(e))) => {
                tracing::warn!(error = %e, "Flushing spans failed; the last ones may be lost.")
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "Flushing spans failed; the last ones may be lost.")
            }
            Err(_) => tracing::warn!("Flushing spans timed out; the last ones may be lost."),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            // Not shut down properly: do it off this thread, which may be a runtime
            // worker the exporter needs.
            ENABLED.store(false, Ordering::Relaxed);
            let _ = std::thread::spawn(move || provider.shutdown()).join();
        }
    }
}

/// Whether spans are exported (and so whether trace context is propagated).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Installs the global subscriber: logs to stderr (`DNSPLANE_LOG`,
/// `DNSPLANE_LOG_FORMAT=json`) and, when an OTLP endpoint is configured, span export
/// under `service_name` (or `OTEL_SERVICE_NAME`). Call it once, inside the Tokio
/// runtime. A tracing setting that cannot be used is logged and leaves tracing off:
/// telemetry never stops a service. A second call (tests, `dnsplane up`) keeps the
/// first subscriber and returns a disabled guard.
pub fn init(service_name: &str) -> Guard {
    match OtelSettings::from_env(service_name) {
        Ok(settings) => init_with(settings),
        Err(e) => {
            let guard = init_with(None);
            tracing::error!(error = %e, "Tracing is off: the OpenTelemetry settings cannot be used.");
            guard
        }
    }
}

/// [`init`] with the tracing settings given rather than read from the environment
/// (`None`: logs only). Tests use it to export to a receiver of their own.
pub fn init_with(settings: Option<OtelSettings>) -> Guard {
    let (provider, problem) = match settings.as_ref().map(OtelSettings::tracer_provider) {
        Some(Ok(p)) => (Some(p), None),
        Some(Err(e)) => (None, Some(e)),
        None => (None, None),
    };
    let otel_layer = provider.as_ref().map(|p| {
        let filter = std::env::var("DNSPLANE_TRACE").unwrap_or_else(|_| "info".into());
        let filter = EnvFilter::try_new(format!("{filter},{QUIET}"))
            .unwrap_or_else(|_| EnvFilter::new(format!("info,{QUIET}")));
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer("dnsplane"))
            .with_filter(filter)
    });
    let installed = tracing_subscriber::registry()
        .with(log_layer())
        .with(otel_layer)
        .try_init()
        .is_ok();
    if let Some(e) = problem {
        tracing::error!(error = %e, "Tracing is off: the OpenTelemetry settings cannot be used.");
    }
    let (Some(provider), Some(s), true) = (provider, settings, installed) else {
        return Guard::disabled();
    };
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    ENABLED.store(true, Ordering::Relaxed);
    for w in &s.warnings {
        tracing::warn!("{w}.");
    }
    tracing::info!(
        endpoint = %s.endpoint,
        service = %s.service_name,
        sampler = %s.sampler,
        ratio = s.sampler_ratio,
        "Exporting traces over OTLP/gRPC."
    );
    Guard::from_provider(provider)
}

/// Logs only, through the same layer as [`init`]; a second init keeps the first
/// subscriber (tests, `dnsplane up`).
pub(crate) fn init_logs_only() {
    let _ = tracing_subscriber::registry().with(log_layer()).try_init();
}

/// Whether logs are JSON lines (`DNSPLANE_LOG_FORMAT=json`): what a program prints
/// to stderr besides its logs must then be a log event too.
pub fn json_logs() -> bool {
    std::env::var("DNSPLANE_LOG_FORMAT").is_ok_and(|v| v == "json")
}

/// The stderr log layer, filtered by `DNSPLANE_LOG` (or `RUST_LOG`, default `info`).
fn log_layer<S>() -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use std::io::IsTerminal;
    let filter = std::env::var("DNSPLANE_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| "info".into());
    let filter = EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let json = json_logs();
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    if json {
        layer.json().with_filter(filter).boxed()
    } else {
        layer.compact().with_filter(filter).boxed()
    }
}

// --- propagation ------------------------------------------------------------------

/// Writes W3C `traceparent`/`tracestate` into gRPC metadata.
#[derive(Debug)]
pub struct MetadataInjector<'a>(pub &'a mut tonic::metadata::MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(k), Ok(v)) = (
            tonic::metadata::MetadataKey::from_bytes(key.as_bytes()),
            tonic::metadata::MetadataValue::try_from(value.as_str()),
        ) {
            self.0.insert(k, v);
        }
    }
}

/// Writes W3C `traceparent`/`tracestate` into HTTP headers.
#[derive(Debug)]
pub struct HeaderInjector<'a>(pub &'a mut http::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(k), Ok(v)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(k, v);
        }
    }
}

/// Reads W3C trace context from HTTP headers (gRPC metadata are HTTP/2 headers).
#[derive(Debug)]
pub struct HeaderExtractor<'a>(pub &'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// Puts the current span's trace context into outgoing HTTP headers (a provider's
/// API call). Does nothing while tracing is off.
pub fn inject_http_headers(headers: &mut http::HeaderMap) {
    if !enabled() {
        return;
    }
    let cx = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&cx, &mut HeaderInjector(headers));
}

/// A tonic client interceptor that puts the current span's trace context into the
/// request's metadata (`traceparent`), so the server's spans join the caller's trace.
#[derive(Debug, Clone, Copy, Default)]
pub struct InjectTraceContext;

impl tonic::service::Interceptor for InjectTraceContext {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if enabled() {
            let cx = tracing::Span::current().context();
            TraceContextPropagator::new()
                .inject_context(&cx, &mut MetadataInjector(request.metadata_mut()));
        }
        Ok(request)
    }
}

/// A channel whose requests carry the caller's trace context.
pub type TracedChannel =
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, InjectTraceContext>;

/// Wraps a channel so that every request carries the current trace context:
/// `ApplierClient::new(traced_channel(channel))`.
pub fn traced_channel(channel: tonic::transport::Channel) -> TracedChannel {
    tonic::service::interceptor::InterceptedService::new(channel, InjectTraceContext)
}

/// The server side, for `Server::builder().trace_fn(grpc_server_span)`: one
/// `grpc.server` span per request, child of the caller's span when the request carries
/// a `traceparent`. `Span::none()` while tracing is off, and for health checks and
/// reflection calls that carry no trace context (probes).
pub fn grpc_server_span(request: &http::Request<()>) -> tracing::Span {
    if !enabled() {
        return tracing::Span::none();
    }
    let path = request.uri().path();
    let (service, method) = path
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or((path, ""));
    let parent = TraceContextPropagator::new().extract(&HeaderExtractor(request.headers()));
    // Probes and grpcurl's reflection calls would each start a trace of their own,
    // every few seconds per pod: only trace them when a caller traces them.
    let probe = service == "grpc.health.v1.Health" || service.starts_with("grpc.reflection.");
    if probe
        && !opentelemetry::trace::TraceContextExt::span(&parent)
            .span_context()
            .is_valid()
    {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        "grpc.server",
        otel.name = %path.trim_start_matches('/'),
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.service = %service,
        rpc.method = %method,
    );
    // Only fails when the span is disabled by the filter.
    let _ = span.set_parent(parent);
    span
}

/// The current span's trace id (32 hex digits), when tracing is on and the span is
/// sampled: for log lines and error messages that should point at a trace.
pub fn current_trace_id() -> Option<String> {
    use opentelemetry::trace::TraceContextExt;
    if !enabled() {
        return None;
    }
    let cx = tracing::Span::current().context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| sc.trace_id().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<OtelSettings>, TelemetryError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        OtelSettings::from_vars("dnsplane-planner", |k| map.get(k).cloned())
    }

    #[test]
    fn off_without_an_endpoint_or_when_disabled() {
        assert_eq!(settings(&[]).unwrap(), None);
        assert_eq!(
            settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]).unwrap(),
            None
        );
        assert_eq!(settings(&[("OTEL_SERVICE_NAME", "x")]).unwrap(), None);
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4317")];
        assert!(settings(&on).unwrap().is_some());
        assert_eq!(
            settings(&[on[0], ("OTEL_SDK_DISABLED", "TRUE")]).unwrap(),
            None
        );
        assert_eq!(
            settings(&[on[0], ("OTEL_TRACES_EXPORTER", "none")]).unwrap(),
            None
        );
    }

    #[test]
    fn reads_the_standard_variables() {
        let s = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4317"),
            ("OTEL_SERVICE_NAME", "planner-eu"),
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.endpoint, "http://jaeger:4317");
        assert_eq!(s.service_name, "planner-eu");
        assert_eq!(s.sampler, "parentbased_traceidratio");
        assert_eq!(s.sampler_ratio, 0.25);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        // The traces-specific endpoint wins; the service keeps its own name.
        let s = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4317"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://collector:4317",
            ),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.endpoint, "http://collector:4317");
        assert_eq!(s.service_name, "dnsplane-planner");
        assert_eq!(s.sampler, "parentbased_always_on");
    }

    #[test]
    fn bad_settings_are_named_or_fall_back() {
        for (value, want) in [
            ("jaeger:4317", "http:// URL"),
            ("https://jaeger:4317", "https is not built in"),
            ("http://", "not a URL"),
            ("http:///x", "not a URL"),
        ] {
            let e = settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", value)])
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("OTEL_EXPORTER_OTLP_ENDPOINT="), "{e}");
            assert!(e.contains(want), "{want:?} not in {e}");
        }
        let e = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("only grpc"), "{e}");
        let s = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4317"),
            ("OTEL_TRACES_SAMPLER", "sometimes"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.5"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.sampler, "parentbased_always_on");
        assert!(s.warnings[0].contains("\"sometimes\""), "{:?}", s.warnings);
        let s = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4317"),
            ("OTEL_TRACES_SAMPLER", "traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "2"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.sampler_ratio, 1.0);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    }

    #[test]
    fn samplers_map_onto_the_sdk() {
        let mut s = settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4317")])
            .unwrap()
            .unwrap();
        for (name, want) in [
            ("always_on", "AlwaysOn"),
            ("always_off", "AlwaysOff"),
            ("traceidratio", "TraceIdRatioBased(0.5)"),
            ("parentbased_always_on", "ParentBased(AlwaysOn)"),
            ("parentbased_always_off", "ParentBased(AlwaysOff)"),
            (
                "parentbased_traceidratio",
                "ParentBased(TraceIdRatioBased(0.5))",
            ),
        ] {
            s.sampler = name.into();
            s.sampler_ratio = 0.5;
            assert_eq!(format!("{:?}", s.sdk_sampler()), want, "{name}");
        }
    }

    #[test]
    fn off_means_no_propagation_and_no_spans() {
        // Nothing in this test binary enables tracing.
        assert!(!enabled());
        let mut req = tonic::Request::new(());
        req = tonic::service::Interceptor::call(&mut InjectTraceContext, req).unwrap();
        assert!(req.metadata().is_empty());
        let mut headers = http::HeaderMap::new();
        inject_http_headers(&mut headers);
        assert!(headers.is_empty());
        let http_req = http::Request::builder()
            .uri("/dnsplane.v1.Applier/Apply")
            .body(())
            .unwrap();
        assert!(grpc_server_span(&http_req).is_none());
        assert_eq!(current_trace_id(), None);
    }

    #[test]
    fn injectors_and_extractor_round_trip() {
        let mut md = tonic::metadata::MetadataMap::new();
        MetadataInjector(&mut md).set(
            "traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
        );
        let headers = md.into_headers();
        let ex = HeaderExtractor(&headers);
        assert_eq!(
            ex.get("traceparent"),
            Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        );
        assert_eq!(ex.keys(), vec!["traceparent"]);
        let cx = TraceContextPropagator::new().extract(&ex);
        use opentelemetry::trace::TraceContextExt;
        assert_eq!(
            cx.span().span_context().trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        let mut out = http::HeaderMap::new();
        TraceContextPropagator::new().inject_context(&cx, &mut HeaderInjector(&mut out));
        assert_eq!(
            out["traceparent"],
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        );
    }
}
