//! The driver interface: one trait every DNS provider implements, the capabilities the
//! batch algorithm adapts to, and the error taxonomy it classifies answers by.
use async_trait::async_trait;
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey};
use std::time::Duration;

pub mod memory;
pub mod pdns;
pub mod rfc2136;

/// What a driver can do; the batch algorithm adapts to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// All ops of one `apply` call commit together or not at all.
    pub atomic_batches: bool,
    /// The provider itself enforces each op's precondition (`before`).
    pub conditional_writes: bool,
    /// Most RRSet ops one `apply` call may carry.
    pub max_changes_per_batch: usize,
    /// Most request bytes (roughly, see `Change::approx_bytes`) one `apply` call may carry.
    pub max_bytes_per_batch: usize,
    /// `serial()` is a cheap change counter, so a cached listing can be revalidated
    /// without listing the zone again.
    pub has_serial: bool,
}

/// How a provider answer is to be understood; decides what the batch algorithm does next.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub enum ErrorClass {
    /// The request may or may not have committed (timeout after sending, 502/503/504).
    Ambiguous,
    /// A precondition failed (409, 412, YXRRSET/NXRRSET, a CNAME clash).
    Conflict,
    /// The provider rejects the request itself (400/422, a bad value).
    Invalid,
    /// Known not to have committed and worth retrying (429, connect errors).
    Transient,
    /// Credentials, permissions, a missing zone: retrying will not help.
    Permanent,
}

impl ErrorClass {
    /// The lower-case name used in status counters and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Ambiguous => "ambiguous",
            ErrorClass::Conflict => "conflict",
            ErrorClass::Invalid => "invalid",
            ErrorClass::Transient => "transient",
            ErrorClass::Permanent => "permanent",
        }
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed provider call, already classified by the driver (the only place that knows
/// what the provider's status codes mean).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{class}: {message}")]
pub struct ProviderError {
    pub class: ErrorClass,
    /// The provider's own error text; ends up in `RecordResult.message`.
    pub message: String,
    /// The provider's `Retry-After`, if it sent one.
    pub retry_after: Option<Duration>,
    /// The record the provider blamed, if it named one.
    pub key: Option<RecordKey>,
}

impl ProviderError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        ProviderError {
            class,
            message: message.into(),
            retry_after: None,
            key: None,
        }
    }

    pub fn with_key(mut self, key: RecordKey) -> Self {
        self.key = Some(key);
        self
    }

    pub fn with_retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = Some(retry_after);
        self
    }

    pub fn is_retryable(&self) -> bool {
        self.class == ErrorClass::Transient
    }

    pub fn is_conflict(&self) -> bool {
        self.class == ErrorClass::Conflict
    }
}

/// A zone's RRSets as read from the provider.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    pub rrsets: Vec<RRSet>,
    /// The zone serial at the time of the read, when the provider has one.
    pub serial: Option<u64>,
}

/// A DNS provider account. Implementations classify every failure into an
/// [`ErrorClass`]; the batch algorithm does the rest.
#[async_trait]
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// The driver's name as written in the config (`memory`, `pdns`, ...).
    fn driver(&self) -> &'static str;
    fn capabilities(&self) -> Capabilities;
    /// The zones this account hosts.
    async fn zones(&self) -> Result<Vec<Name>, ProviderError>;
    /// A cheap change counter for `zone`, `None` when the provider has none.
    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError>;
    /// The zone's RRSets, or only those at `names`.
    async fn list(&self, zone: &Name, names: Option<&[Name]>) -> Result<Listing, ProviderError>;
    /// Atomic when capabilities say so: all ops commit or none; preconditions
    /// (`op.before`) enforced when `conditional_writes`.
    async fn apply(&self, zone: &Name, ops: &[RRSetOp]) -> Result<(), ProviderError>;
}
