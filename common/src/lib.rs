//! dnsplane-common: the record model, the gRPC contract and the plumbing both services
//! share.
//!
//! - [`name`], [`rdata`], [`rrset`], [`routing`] (set identifiers and provider-specific
//!   properties): the record model; [`outcome`]: what became of a
//!   change. Names are absolute, lower-case,
//!   IDNA; values are canonical per type, so equality is exact. [`wire`]: what one DNS
//!   answer can carry, checked wherever records come in.
//! - [`pb`]: the generated `dnsplane.v1` contract, with serde in the proto3 JSON
//!   mapping (`/status`); [`wkt`]: its timestamps and durations; [`convert`] maps it to
//!   the model and validates on the way in.
//! - [`grpc`]: reflection, health and error mapping; [`runtime`]: logging and shutdown.
//! - [`telemetry`]: logs plus OpenTelemetry traces over OTLP (off unless configured) and
//!   W3C trace-context propagation; [`metrics`]: the admin HTTP port (`/metrics`,
//!   `/healthz`, `/readyz`, `/status`).
//! - [`tls`]: TLS on every port, mTLS between planner and applier, certificates
//!   re-read when they change (docs/security.md).
//! - [`secret`]: [`Secret`], a value whose `Debug`/`Display` print `<redacted>`, and
//!   [`secret::redact_url`].
pub mod allocator;
pub mod convert;
pub mod error;
pub mod grpc;
pub mod metrics;
pub mod name;
pub mod outcome;
#[cfg(test)]
mod pb_json;
pub mod rdata;
pub mod redis;
pub mod routing;
pub mod rrset;
pub mod runtime;
pub mod secret;
pub mod shared;
pub mod telemetry;
pub mod tls;
pub mod toml_error;
pub mod wire;
pub mod wkt;

pub use error::ModelError;
pub use name::Name;
pub use outcome::{ConflictReason, Outcome, RecordResult};
pub use rdata::{RData, RecordType};
pub use routing::SetId;
pub use rrset::{Change, ChangeKind, RRData, RRSet, RRSetOp, RecordKey};
pub use secret::Secret;
pub use shared::SharedStr;

/// The generated `dnsplane.v1` messages and services.
pub mod pb {
    #![allow(missing_docs, clippy::all, missing_debug_implementations)]
    tonic::include_proto!("dnsplane.v1");
    // serde in the proto3 JSON mapping (pbjson-build; see build.rs).
    include!(concat!(env!("OUT_DIR"), "/dnsplane.v1.serde.rs"));
    /// Encoded descriptors, for gRPC server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("dnsplane_descriptor");
}
