//! dnsplane-applier: owns every provider call.
pub mod batch;
pub mod provider;
pub mod retry;
pub mod store;
pub mod dns;
