//! The driver interface: one trait every DNS provider implements, the capabilities the
//! batch algorithm adapts to, and the error taxonomy it classifies answers by.
use async_trait::async_trait;
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey};
use std::time::Duration;

pub use capabilities::{ANY_PROPERTY, Capabilities, Measure};

pub mod azure;
pub mod call;
mod capabilities;
pub mod clouddns;
pub mod cloudflare;
pub mod fault;
pub(crate) mod hickory_rdata;
pub mod kit;
pub mod memory;
pub mod pdns;
pub mod precondition;
pub mod record_cache;
pub mod rfc2136;
pub mod route53;
pub mod webhook;

/// Every op of `ops` is in `zone` (a driver's first check of a batch): a key of
/// another zone is refused as invalid, naming it.
pub fn ensure_in_zone(zone: &Name, ops: &[RRSetOp]) -> Result<(), ProviderError> {
    match ops
        .iter()
        .find(|op| &op.key.zone != zone || !op.key.name.is_within(zone))
    {
        Some(op) => Err(ProviderError::new(
            ErrorClass::Invalid,
            format!("{} is not in zone {zone}", op.key),
        )
        .with_key(op.key.clone())),
        None => Ok(()),
    }
}

/// How a provider answer is to be understood; decides what the batch algorithm does next
/// (see [`crate::batch`] and `docs/reliability.md` for what each class triggers).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
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
    /// Every class, for exhaustive tests and docs.
    pub const ALL: [ErrorClass; 5] = [
        ErrorClass::Ambiguous,
        ErrorClass::Conflict,
        ErrorClass::Invalid,
        ErrorClass::Transient,
        ErrorClass::Permanent,
    ];

    /// The default reading of an HTTP error status, for drivers of HTTP APIs that have
    /// nothing more specific to go on (a driver that knows better — Cloud DNS's 503
    /// "rate limited, not processed", a 404 that names a record rather than the zone —
    /// maps those itself):
    ///
    /// | status | class | why |
    /// |---|---|---|
    /// | 400, 422, other 4xx | invalid | the request itself is refused |
    /// | 401, 403 | permanent | credentials or permissions |
    /// | 404 | permanent | zone (or account) not found |
    /// | 408 | transient | the server gave up *receiving* the request: not processed |
    /// | 409, 412 | conflict | a precondition failed |
    /// | 429 | transient | rate limited, not processed |
    /// | 500, 502, 503, 504, other 5xx | ambiguous | the write may have committed |
    pub fn for_http_status(status: u16) -> ErrorClass {
        match status {
            401 | 403 | 404 => ErrorClass::Permanent,
            408 | 429 => ErrorClass::Transient,
            409 | 412 => ErrorClass::Conflict,
            500..=599 => ErrorClass::Ambiguous,
            _ => ErrorClass::Invalid,
        }
    }

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
    /// The provider said "too many requests" (HTTP 429, Route 53 `Throttling`, …): set
    /// by the driver, fed back into the account's quota. Never inferred from text.
    pub throttled: bool,
    /// The call was not made: the account's quota had no token before the call's
    /// deadline (`retry_after`: when one is expected). Set by the quota layer only.
    pub quota_denied: bool,
}

impl ProviderError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        ProviderError {
            class,
            message: message.into(),
            retry_after: None,
            key: None,
            throttled: false,
            quota_denied: false,
        }
    }

    /// The provider's answer to `status`, classified by [`ErrorClass::for_http_status`];
    /// a 429 is marked [`throttled`](Self::throttled).
    pub fn from_http_status(status: u16, message: impl Into<String>) -> Self {
        let e = ProviderError::new(ErrorClass::for_http_status(status), message);
        if status == 429 { e.throttle() } else { e }
    }

    /// Marks the error as the provider's "too many requests".
    #[must_use]
    pub fn throttle(mut self) -> Self {
        self.throttled = true;
        self
    }

    #[must_use]
    pub fn with_key(mut self, key: RecordKey) -> Self {
        self.key = Some(key);
        self
    }

    #[must_use]
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

/// The kinds of provider call, as fault rules and the circuit breaker name them.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub enum Operation {
    Zones,
    Serial,
    List,
    Apply,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Zones => "zones",
            Operation::Serial => "serial",
            Operation::List => "list",
            Operation::Apply => "apply",
        }
    }

    /// Writes change the zone; everything else only reads.
    pub fn is_write(self) -> bool {
        self == Operation::Apply
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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
    /// A cheap change counter for `zone`, `None` when the provider has none. The
    /// default: the self-counted cache's count for a [`counted`](Self::counted)
    /// driver, else none.
    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError> {
        match self.counted() {
            Some(c) => kit::counted::serial(c, zone).await,
            None => Ok(None),
        }
    }

    /// A driver whose provider has no serial and whose listings come from the
    /// self-counted cache ([`kit::counted`]) returns itself here; `serial`, `forget`
    /// and `serial_position` then come from that cache. The default: none.
    fn counted(&self) -> Option<&dyn kit::counted::CountedZone> {
        None
    }
    /// The zone's RRSets, or only those at `names`, outside any quota (tests, tools):
    /// [`list_paced`](Self::list_paced) without a pacer.
    async fn list(&self, zone: &Name, names: Option<&[Name]>) -> Result<Listing, ProviderError> {
        self.list_paced(zone, names, &call::Pacer::default()).await
    }
    /// [`apply_paced`](Self::apply_paced) without a pacer: atomic when capabilities say
    /// so, all ops commit or none; preconditions (`op.before`) enforced when
    /// `conditional_writes`.
    async fn apply(&self, zone: &Name, ops: &[RRSetOp]) -> Result<(), ProviderError> {
        self.apply_paced(zone, ops, &call::Pacer::default()).await
    }

    /// A fresh read of `zone` was asked for: drop what this driver remembers of its
    /// content that the provider itself does not vouch for (Route 53's record cache,
    /// kept by its own writes). No call. The default drops a
    /// [`counted`](Self::counted) driver's cache and keeps everything else: a cache
    /// that a serial validates (PowerDNS) is the provider's word already.
    fn forget(&self, zone: &Name) {
        if let Some(c) = self.counted() {
            c.listing_cache().invalidate(zone);
        }
    }

    /// What this driver learnt of its server's ways that an operator should see in
    /// the account's status (e.g. route53's UPSERT fallback); no call.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Where this driver's own writes put `zone`'s serial, when it keeps count (see
    /// [`record_cache::RecordCache::position`]); no provider call. `None`: it cannot
    /// vouch for any serial. The default: a [`counted`](Self::counted) driver's cache's.
    fn serial_position(&self, zone: &Name) -> Option<record_cache::SerialPosition> {
        self.counted()?.listing_cache().position(zone)
    }

    /// The zone's RRSets, or only those at `names`, with each request the driver makes
    /// under the account's quota: it calls [`call::Pacer::request`] right before each
    /// one (a driver of one request per call: once, first). The default serves a
    /// [`counted`](Self::counted) driver from its listing cache ([`kit::counted::list`]);
    /// every other driver writes its own.
    async fn list_paced(
        &self,
        zone: &Name,
        names: Option<&[Name]>,
        pacer: &call::Pacer,
    ) -> Result<Listing, ProviderError> {
        match self.counted() {
            Some(counted) => kit::counted::list(counted, zone, names, pacer).await,
            None => Err(ProviderError::new(
                ErrorClass::Permanent,
                format!(
                    "the {} driver has no listing: it must write list_paced or counted",
                    self.driver()
                ),
            )),
        }
    }

    /// One write of `ops`, each request under the account's quota (see
    /// [`list_paced`](Self::list_paced)): atomic when capabilities say so;
    /// preconditions (`op.before`) enforced when `conditional_writes`.
    async fn apply_paced(
        &self,
        zone: &Name,
        ops: &[RRSetOp],
        pacer: &call::Pacer,
    ) -> Result<(), ProviderError>;
}

/// Classifies a failure below HTTP, for the drivers of HTTP APIs. Connect failures
/// never sent anything; anything else may have reached the server (ambiguous for a
/// write). The message says what happened and carries the whole error chain.
pub(crate) fn transport_error(what: &str, e: &reqwest::Error, write: bool) -> ProviderError {
    let class = if e.is_connect() || e.is_builder() || !write {
        ErrorClass::Transient
    } else {
        ErrorClass::Ambiguous
    };
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "failed"
    };
    // The error names the URL only (the key is a header, marked sensitive), and of the
    // URL not the `user:password@` a webhook URL may carry.
    let mut detail = e.to_string();
    if let Some(url) = e.url() {
        detail = detail.replace(
            url.as_str(),
            &dnsplane_common::secret::redact_url(url.as_str()),
        );
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        source = s.source();
    }
    ProviderError::new(class, format!("{what} {kind}: {detail}"))
}

#[cfg(test)]
mod tests;
