//! Span export end to end, in one process: a real OTLP/gRPC receiver, the telemetry
//! module's global subscriber exporting to it, a gRPC client whose channel injects
//! `traceparent` and a server whose `trace_fn` extracts it. One test per binary: the
//! subscriber is global (a thread-local one misses the server's worker threads).
use dnsplane_common::telemetry::{self, OtelSettings};
use dnsplane_testing::otlp::{OtlpReceiver, ReceivedSpan};
use std::collections::HashMap;
use tokio_stream::wrappers::TcpListenerStream;
use tracing::Instrument;

async fn serve_on_loopback(router: tonic::transport::server::Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        router
            .serve_with_incoming(TcpListenerStream::new(listener))
            .await
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_call_joins_the_callers_trace_and_reaches_the_receiver() {
    let receiver = OtlpReceiver::default();
    let collector_addr = receiver.start().await;

    let vars: HashMap<&str, String> = HashMap::from([
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://{collector_addr}"),
        ),
        ("OTEL_SERVICE_NAME", "otlp-test".to_string()),
    ]);
    let settings = OtelSettings::from_vars("unused", |k| vars.get(k).cloned()).unwrap();
    let guard = telemetry::init_with(settings);
    assert!(guard.tracing_enabled() && telemetry::enabled());

    // The "applier": a health service behind the trace_fn hook.
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_service_status("demo", tonic_health::ServingStatus::Serving)
        .await;
    let server = tonic::transport::Server::builder()
        .trace_fn(telemetry::grpc_server_span)
        .add_service(health);
    let server_addr = serve_on_loopback(server).await;

    // The "planner": a traced channel, called inside a root span.
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{server_addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client =
        tonic_health::pb::health_client::HealthClient::new(telemetry::traced_channel(channel));
    let root = tracing::info_span!("sync", zone = "example.com.");
    let (status, trace_id) = async {
        let r = client
            .check(tonic_health::pb::HealthCheckRequest {
                service: "demo".into(),
            })
            .await
            .unwrap()
            .into_inner()
            .status;
        (r, telemetry::current_trace_id())
    }
    .instrument(root.clone())
    .await;
    assert_eq!(
        status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
    let trace_id = trace_id.expect("a sampled root span has a trace id");
    drop(root);

    // A probe: a health check without trace context makes no trace of its own.
    let plain = tonic::transport::Endpoint::from_shared(format!("http://{server_addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    tonic_health::pb::health_client::HealthClient::new(plain)
        .check(tonic_health::pb::HealthCheckRequest {
            service: "demo".into(),
        })
        .await
        .unwrap();

    // Flushes from spawn_blocking; the spans must have arrived when it returns.
    guard.shutdown().await;
    let spans = receiver.spans();
    let root = spans
        .iter()
        .find(|s| s.name == "sync")
        .unwrap_or_else(|| panic!("no root span among {spans:#?}"));
    let checks: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.name == "grpc.health.v1.Health/Check")
        .collect();
    assert_eq!(
        checks.len(),
        1,
        "only the traced health check makes a span: {spans:#?}"
    );
    let server = checks[0];
    assert_eq!(root.service, "otlp-test");
    assert_eq!(
        root.attrs.get("zone").map(String::as_str),
        Some("example.com.")
    );
    assert_eq!(root.trace_id, trace_id);
    assert_eq!(server.trace_id, root.trace_id, "one trace across the call");
    assert_eq!(
        server.parent, root.span_id,
        "the server span is the caller's child"
    );
    assert_eq!(
        server.attrs.get("rpc.system").map(String::as_str),
        Some("grpc")
    );
    assert_eq!(
        server.attrs.get("rpc.service").map(String::as_str),
        Some("grpc.health.v1.Health")
    );
    assert_eq!(
        server.attrs.get("rpc.method").map(String::as_str),
        Some("Check")
    );
    assert!(!telemetry::enabled(), "shutdown turns propagation off");
}
