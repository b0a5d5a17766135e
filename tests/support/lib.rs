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

/// The ```toml block of `docs/<page>` whose first line is `first`: a recipe a test
/// runs as the page writes it.
pub fn doc_toml_block(page: &str, first: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs")
        .join(page);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.split("```toml\n")
        .skip(1)
        .filter_map(|b| b.split_once("```").map(|(block, _)| block))
        .find(|b| b.starts_with(first))
        .unwrap_or_else(|| panic!("no ```toml block starting {first:?} in docs/{page}"))
        .to_string()
}
