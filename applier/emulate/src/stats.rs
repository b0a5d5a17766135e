//! The counters every emulator keeps alike, served at `GET /_emulator/stats` and read
//! by tests through `stats()`: what the emulator was asked, what it refused and what
//! it changed.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An emulator's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Requests per operation, as the emulated API names it (Route 53
    /// "ChangeResourceRecordSets", Cloud DNS "dns.changes.create", Cloudflare
    /// "BatchDnsRecords", Azure "RecordSets_CreateOrUpdate" and "Token" for its token
    /// endpoint), whatever their outcome.
    pub requests: BTreeMap<String, u64>,
    /// Throttled answers (the quota's and the `throttle` fault's): 429,
    /// `Throttling`, `rateLimitExceeded`.
    pub throttled: u64,
    /// Calls that changed state: changes or batches applied, records written, zones
    /// created or deleted.
    pub changes_committed: u64,
    /// Requests refused for their credentials (signature, token, project, and refused
    /// token requests).
    pub auth_failures: u64,
    /// Fault rules fired, per action.
    pub faults: BTreeMap<String, u64>,
    /// Writes refused for a stale precondition (Azure's 412 on an `If-Match`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub preconditions_failed: u64,
    /// Tokens the emulator's token endpoint issued (Azure).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tokens_issued: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Stats {
    /// Requests of one operation (e.g. "dns.changes.create").
    pub fn calls(&self, operation: &str) -> u64 {
        self.requests.get(operation).copied().unwrap_or(0)
    }

    /// Every request counted.
    pub fn total_requests(&self) -> u64 {
        self.requests.values().sum()
    }
}
