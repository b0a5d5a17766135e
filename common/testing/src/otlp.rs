//! A real OTLP/gRPC trace receiver: services (or the telemetry module in-process)
//! export to it over loopback, and a test reads back every span it was sent, with its
//! service, ids (hex) and attributes (as text).
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio_stream::wrappers::TcpListenerStream;

/// One span as received.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    /// The exporting resource's `service.name`.
    pub service: String,
    pub name: String,
    /// Ids in lower-case hex (what `traceparent` carries); empty `parent` for a root.
    pub trace_id: String,
    pub span_id: String,
    pub parent: String,
    pub attrs: HashMap<String, String>,
    /// The whole span as received (events, status, links included), for tests that
    /// search everything a service exported.
    pub raw: String,
}

/// The receiver: keeps every span it is sent. Cheap to clone (clones share spans).
#[derive(Debug, Default, Clone)]
pub struct OtlpReceiver(Arc<Mutex<Vec<ReceivedSpan>>>);

/// Ids as `traceparent` writes them.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

impl OtlpReceiver {
    /// Serves the receiver on a loopback port (on the current tokio runtime) and
    /// returns where: export to `http://{addr}`.
    pub async fn start(&self) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the OTLP receiver");
        let addr = listener.local_addr().expect("receiver address");
        let router =
            tonic::transport::Server::builder().add_service(TraceServiceServer::new(self.clone()));
        tokio::spawn(router.serve_with_incoming(TcpListenerStream::new(listener)));
        addr
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[tonic::async_trait]
impl TraceService for OtlpReceiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut out = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for rs in request.into_inner().resource_spans {
            let service = rs
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .map(|kv| text(kv.value.as_ref().and_then(|v| v.value.as_ref())))
                .unwrap_or_default();
            for s in rs.scope_spans.into_iter().flat_map(|ss| ss.spans) {
                let raw = format!("{s:?}");
                out.push(ReceivedSpan {
                    service: service.clone(),
                    name: s.name,
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent: hex(&s.parent_span_id),
                    attrs: s
                        .attributes
                        .iter()
                        .map(|kv| {
                            (
                                kv.key.clone(),
                                text(kv.value.as_ref().and_then(|v| v.value.as_ref())),
                            )
                        })
                        .collect(),
                    raw,
                });
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}
