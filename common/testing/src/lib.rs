//! dnsplane-testing: the one home of what dnsplane's tests share, so that no test module
//! grows its own copy: finding tools and the workspace's binaries (and failing, not
//! skipping, under `DNSPLANE_REQUIRE_SERVERS=1`), spawning processes, loopback ports,
//! polling, the real `dig`/`grpcurl`/HTTP clients ([`tools`]), record and change
//! builders ([`records`]), fully populated messages of the contract and their proto3
//! JSON ([`proto_json`]), a real OTLP/gRPC trace receiver ([`otlp`]), a fake
//! Kubernetes API server ([`kube_api`]: DNSEndpoints, Services, Ingresses, the Gateway
//! API's routes, Events…) that prunes, defaults and validates by CRDs' structural
//! schemas as a real one does ([`crd`]), and the real `kubectl` pointed at it
//! ([`kubectl`]), the real NetBox `tests/run-all.sh` starts ([`netbox`]), and a
//! fault-injecting HTTP proxy to put in front of it ([`http_fault`]).
//!
//! It depends only on `dnsplane-common`, so every crate's integration tests and the
//! cross-service tests can use it. (A crate's own unit tests cannot depend on a crate
//! that depends on it; the applier's keep their fault-rule helpers in its
//! `#[cfg(test)]` code.)
pub mod certs;
pub mod crd;
pub mod docs;
pub mod http_fault;
pub mod kube_api;
pub mod kubectl;
pub mod netbox;
pub mod otlp;
pub mod proto_json;
pub mod records;
pub mod tokens;
pub mod tools;

pub use tools::*;
