//! Test support for cross-service tests: starts `dnsplane-applier` and
//! `dnsplane-planner` as real processes on loopback ports, and runs the real `dig` and
//! `grpcurl` binaries against them.
//!
//! Tools come from the environment that `tests/run-all.sh` sets up. Without
//! `DNSPLANE_REQUIRE_SERVERS=1` a test whose tool is missing prints why and skips;
//! with it, the test fails.
//! Everything below the servers (tools, processes, ports, clients) comes from
//! `dnsplane-testing` and is re-exported here.
pub use dnsplane_testing::*;

pub mod external_dns_plan;
pub mod moto;
pub mod python_sdk;
pub mod quota_proxy;
pub mod redis;
pub mod scaling;
pub mod servers;
pub mod webdriver;
pub mod webhook_reference;
