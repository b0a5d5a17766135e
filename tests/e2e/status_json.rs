//! `/status` against the real `grpcurl`: a status message with every field set (built
//! from the contract's descriptors by [`dnsplane_e2e::proto_json`], so a field added
//! to the proto later is in it) is served over gRPC to `grpcurl -emit-defaults`, and
//! its JSON must equal what the admin ports serve for it ([`proto_json`]). An empty
//! message too, but for the message fields that grpcurl prints as `null` and `/status`
//! leaves out.
use dnsplane_common::metrics::proto_json;
use dnsplane_common::pb;
use dnsplane_e2e::{grpcurl, tool};
use serde_json::Value;
use std::convert::Infallible;
use std::marker::PhantomData;
use std::task::{Context, Poll};
use tonic::server::NamedService;

/// A gRPC service whose every method answers `message` (only `GetStatus` is called).
#[derive(Debug)]
struct Answer<M, Q> {
    message: M,
    request: PhantomData<fn() -> Q>,
}

impl<M: Clone, Q> Clone for Answer<M, Q> {
    fn clone(&self) -> Self {
        Answer {
            message: self.message.clone(),
            request: PhantomData,
        }
    }
}

impl NamedService for Answer<pb::PlannerStatus, pb::GetStatusRequest> {
    const NAME: &'static str = "dnsplane.v1.Planner";
}

impl NamedService for Answer<pb::ApplierStatus, pb::GetApplierStatusRequest> {
    const NAME: &'static str = "dnsplane.v1.Applier";
}

impl<M, Q> tonic::codegen::Service<http::Request<tonic::body::Body>> for Answer<M, Q>
where
    M: prost::Message + Clone + 'static,
    Q: prost::Message + Default + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = tonic::codegen::BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        let fixed = Fixed(self.message.clone());
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::<M, Q>::default());
            Ok(grpc.unary(fixed, req).await)
        })
    }
}

struct Fixed<M>(M);

impl<M: Clone + Send + 'static, Q> tonic::server::UnaryService<Q> for Fixed<M> {
    type Response = M;
    type Future = std::future::Ready<Result<tonic::Response<M>, tonic::Status>>;

    fn call(&mut self, _: tonic::Request<Q>) -> Self::Future {
        std::future::ready(Ok(tonic::Response::new(self.0.clone())))
    }
}

fn answer<M, Q>(message: M) -> Answer<M, Q> {
    Answer {
        message,
        request: PhantomData,
    }
}

/// Serves the two statuses (with reflection, as the services do) on a loopback port
/// for as long as the runtime lives.
fn serve(
    rt: &tokio::runtime::Runtime,
    planner: pb::PlannerStatus,
    applier: pb::ApplierStatus,
) -> String {
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("address").to_string();
    let (v1, v1alpha) = dnsplane_common::grpc::reflection_services().expect("reflection");
    let server = tonic::transport::Server::builder()
        .add_service(v1)
        .add_service(v1alpha)
        .add_service(answer::<_, pb::GetStatusRequest>(planner))
        .add_service(answer::<_, pb::GetApplierStatusRequest>(applier))
        .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
    rt.spawn(server);
    addr
}

/// What `grpcurl -emit-defaults` prints for `method`.
fn grpcurl_json(grpcurl_path: &std::path::Path, addr: &str, method: &str) -> Value {
    let (ok, out) = grpcurl(
        grpcurl_path,
        &["-emit-defaults", "-max-time", "20", addr, method],
    );
    assert!(ok, "grpcurl {method}: {out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("grpcurl {method}: not JSON ({e}): {out}"))
}

/// `v` without the object members that are `null`, at any depth.
fn without_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(without_nulls).collect()),
        v => v,
    }
}

fn decode<M: prost::Message + Default>(full: &str) -> M {
    let (wire, _) = dnsplane_e2e::proto_json::populated(pb::FILE_DESCRIPTOR_SET, full);
    M::decode(wire.as_slice()).unwrap_or_else(|e| panic!("{full}: {e}"))
}

#[test]
fn status_json_is_what_grpcurl_prints_for_the_same_message() {
    let Some(grpcurl_path) = tool("DNSPLANE_GRPCURL", "grpcurl") else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let planner: pb::PlannerStatus = decode(".dnsplane.v1.PlannerStatus");
    let applier: pb::ApplierStatus = decode(".dnsplane.v1.ApplierStatus");
    let full = serve(&rt, planner.clone(), applier.clone());
    let empty = serve(&rt, Default::default(), Default::default());

    for (addr, planner, applier, what) in [
        (&full, &planner, &applier, "every field set"),
        (&empty, &Default::default(), &Default::default(), "empty"),
    ] {
        let grpc = grpcurl_json(&grpcurl_path, addr, "dnsplane.v1.Planner/GetStatus");
        assert_eq!(
            proto_json(planner),
            without_nulls(grpc.clone()),
            "the planner's /status vs grpcurl, {what}"
        );
        let grpc = grpcurl_json(&grpcurl_path, addr, "dnsplane.v1.Applier/GetStatus");
        assert_eq!(
            proto_json(applier),
            without_nulls(grpc),
            "the applier's /status vs grpcurl, {what}"
        );
    }
    // The populated message reaches the deepest fields (or the comparison above would
    // prove little).
    let json = proto_json(&planner);
    assert_eq!(
        json["appliers"][0]["accounts"][0]["quota"]["waitTotal"],
        "1s"
    );
    assert_eq!(json["zones"][0]["released"]["at"], "1970-01-01T00:00:01Z");
}
