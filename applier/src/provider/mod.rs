//! The driver interface: one trait every DNS provider implements, the capabilities the
//! batch algorithm adapts to, and the error taxonomy it classifies answers by.
use async_trait::async_trait;
use dnsplane_common::{Change, Name, RRSet, RRSetOp, RecordKey};
use std::time::Duration;

pub mod azure;
pub mod call;
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

/// What a driver can do; the batch algorithm adapts to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// All ops of one `apply` call commit together or not at all.
    pub atomic_batches: bool,
    /// The provider itself enforces each op's precondition (`before`).
    pub conditional_writes: bool,
    /// Most RRSet ops one `apply` call may carry (with [`Measure::Values`]: record
    /// values).
    pub max_changes_per_batch: usize,
    /// Most request bytes (roughly, see `Change::approx_bytes`) one `apply` call may
    /// carry (with [`Measure::Values`]: characters of record values).
    pub max_bytes_per_batch: usize,
    /// What the two limits above count.
    pub measure: Measure,
    /// `serial()` is a cheap change counter, so a cached listing can be revalidated
    /// without listing the zone again.
    pub has_serial: bool,
    /// The driver writes routing-policy sets (`RecordKey::set`, external-dns's
    /// `setIdentifier`).
    pub routing_sets: bool,
    /// The provider-specific properties ([`dnsplane_common::routing`]) the driver
    /// writes; a record with any other is refused. [`ANY_PROPERTY`] lets every one
    /// through (a driver that hands them on, as external-dns does to its webhooks).
    pub properties: &'static [&'static str],
}

/// What a driver's per-call limits count, so that a batch is packed to the limits its
/// provider documents, not to a cautious proxy of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Measure {
    /// RRSet ops, and [`Change::approx_bytes`].
    #[default]
    Ops,
    /// Record values and their characters, on both sides of every op (a provider
    /// that writes an op as the DELETE of the set as it was and the CREATE of the set
    /// as it will be, and counts the values and value characters of both: Route 53's
    /// 1,000 `ResourceRecord` elements and 32,000 value characters per request). A set
    /// without values (an alias) counts as one value of its target's length.
    Values,
}

impl Measure {
    /// `change` as this measure counts it: (units, bytes).
    pub fn weigh(self, change: &Change) -> (usize, usize) {
        match self {
            Measure::Ops => (change.ops.len(), change.approx_bytes()),
            Measure::Values => change
                .ops
                .iter()
                .flat_map(|op| op.before.iter().chain(&op.after))
                .map(|set| {
                    let (n, chars) = set.values().fold((0, 0), |(n, c), v| (n + 1, c + v.len()));
                    (n.max(1), chars.max(1))
                })
                .fold((0, 0), |(n, c), (vn, vc)| (n + vn, c + vc)),
        }
    }
}

impl Capabilities {
    /// A provider that commits each write atomically and checks each op's precondition
    /// itself, in writes of at most `changes` ops and `bytes` bytes; no serial, no
    /// routing sets, no properties until a `with_*` says so. Each driver states its
    /// capabilities as one expression of these.
    pub const fn atomic(changes: usize, bytes: usize) -> Capabilities {
        Capabilities {
            atomic_batches: true,
            conditional_writes: true,
            max_changes_per_batch: changes,
            max_bytes_per_batch: bytes,
            measure: Measure::Ops,
            has_serial: false,
            routing_sets: false,
            properties: &[],
        }
    }

    /// The limits count record values and their characters ([`Measure::Values`]).
    #[must_use]
    pub const fn measured_by_values(mut self) -> Capabilities {
        self.measure = Measure::Values;
        self
    }

    /// The provider does not commit a write's ops together.
    #[must_use]
    pub const fn not_atomic(mut self) -> Capabilities {
        self.atomic_batches = false;
        self
    }

    /// The provider's writes are not conditional: the driver checks preconditions by
    /// its own read under a zone lock.
    #[must_use]
    pub const fn checked_by_read(mut self) -> Capabilities {
        self.conditional_writes = false;
        self
    }

    /// `serial()` is a cheap change counter.
    #[must_use]
    pub const fn with_serial(mut self) -> Capabilities {
        self.has_serial = true;
        self
    }

    /// The driver writes routing-policy sets.
    #[must_use]
    pub const fn with_sets(mut self) -> Capabilities {
        self.routing_sets = true;
        self
    }

    /// The provider-specific properties the driver writes.
    #[must_use]
    pub const fn with_properties(mut self, properties: &'static [&'static str]) -> Capabilities {
        self.properties = properties;
        self
    }

    /// Why a driver with these capabilities cannot write `change` (`driver` names it
    /// in the message): a set or a property it does not support. Such a record is
    /// refused (INVALID) before any call, never written without them: that would be
    /// another record, planned again on every sync.
    pub fn refusal(&self, driver: &str, change: &Change) -> Option<String> {
        change
            .ops
            .iter()
            .find_map(|op| self.op_refusal(driver, op))
            .or_else(|| self.size_refusal(driver, change))
    }

    /// Why `change` cannot go in one request of a driver whose limits are exact
    /// ([`Measure::Values`]): it alone carries more values or value characters than a
    /// request takes. Refused before any call, naming it, rather than sent to be
    /// refused by the provider.
    fn size_refusal(&self, driver: &str, change: &Change) -> Option<String> {
        if self.measure != Measure::Values {
            return None;
        }
        let (values, chars) = self.measure.weigh(change);
        if values <= self.max_changes_per_batch && chars <= self.max_bytes_per_batch {
            return None;
        }
        let key = change.ops.first().map(|op| op.key.to_string())?;
        Some(format!(
            "{key} is too large for {driver}: the change carries {values} values and {chars} value characters (counting what it deletes and what it creates), and one request takes at most {} values and {} characters",
            self.max_changes_per_batch, self.max_bytes_per_batch
        ))
    }

    /// [`refusal`](Self::refusal) for one op.
    pub fn op_refusal(&self, driver: &str, op: &RRSetOp) -> Option<String> {
        if !op.key.set.is_none() && !self.routing_sets {
            return Some(format!(
                "{driver} has no routing-policy sets (setIdentifier): cannot write {}",
                op.key
            ));
        }
        op.before.iter().chain(&op.after).find_map(|set| {
            let (name, _) = set.properties().find(|(name, _)| {
                !self
                    .properties
                    .iter()
                    .any(|p| p == name || *p == ANY_PROPERTY)
            })?;
            Some(format!(
                "{driver} cannot write provider-specific property {name:?} (on {})",
                op.key
            ))
        })
    }
}

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

/// In [`Capabilities::properties`]: every property is written.
pub const ANY_PROPERTY: &str = "*";

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
    /// A cheap change counter for `zone`, `None` when the provider has none.
    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError>;
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
    /// kept by its own writes). No call. The default keeps everything: a cache that a
    /// serial validates (PowerDNS) is the provider's word already.
    fn forget(&self, _zone: &Name) {}

    /// What this driver learnt of its server's ways that an operator should see in
    /// the account's status (e.g. route53's UPSERT fallback); no call.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Where this driver's own writes put `zone`'s serial, when it keeps count (see
    /// [`record_cache::RecordCache::position`]); no provider call. `None`: it cannot
    /// vouch for any serial.
    fn serial_position(&self, _zone: &Name) -> Option<record_cache::SerialPosition> {
        None
    }

    /// The zone's RRSets, or only those at `names`, with each request the driver makes
    /// under the account's quota: it calls [`call::Pacer::request`] right before each
    /// one (a driver of one request per call: once, first).
    async fn list_paced(
        &self,
        zone: &Name,
        names: Option<&[Name]>,
        pacer: &call::Pacer,
    ) -> Result<Listing, ProviderError>;

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
mod tests {
    use super::*;

    #[test]
    fn http_statuses_fall_into_the_documented_classes() {
        use ErrorClass::*;
        for (status, class) in [
            (400, Invalid),
            (401, Permanent),
            (403, Permanent),
            (404, Permanent),
            (405, Invalid),
            (408, Transient),
            (409, Conflict),
            (412, Conflict),
            (413, Invalid),
            (422, Invalid),
            (429, Transient),
            (500, Ambiguous),
            (502, Ambiguous),
            (503, Ambiguous),
            (504, Ambiguous),
            (599, Ambiguous),
        ] {
            assert_eq!(ErrorClass::for_http_status(status), class, "HTTP {status}");
        }
        let names: Vec<&str> = ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            names,
            ["ambiguous", "conflict", "invalid", "transient", "permanent"]
        );
        assert!(ProviderError::new(Transient, "x").is_retryable());
        assert!(ProviderError::new(Conflict, "x").is_conflict());
        assert!(!ProviderError::new(Ambiguous, "x").is_retryable());
    }

    /// Each builder sets its one field and nothing else.
    #[test]
    fn capability_builders_set_one_field_each() {
        let base = Capabilities::atomic(7, 9);
        assert_eq!(
            base,
            Capabilities {
                atomic_batches: true,
                conditional_writes: true,
                max_changes_per_batch: 7,
                max_bytes_per_batch: 9,
                measure: Measure::Ops,
                has_serial: false,
                routing_sets: false,
                properties: &[],
            }
        );
        let all = base
            .not_atomic()
            .checked_by_read()
            .with_serial()
            .with_sets()
            .with_properties(&["p"])
            .measured_by_values();
        assert_eq!(
            all,
            Capabilities {
                atomic_batches: false,
                conditional_writes: false,
                max_changes_per_batch: 7,
                max_bytes_per_batch: 9,
                measure: Measure::Values,
                has_serial: true,
                routing_sets: true,
                properties: &["p"],
            }
        );
    }

    /// Route 53's measure: every value of both sides of every op, and its characters;
    /// a set without values (never built, but an alias read back) still counts one.
    #[test]
    fn values_are_counted_on_both_sides_of_every_op() {
        use dnsplane_common::{ChangeKind, RecordType};
        let zone = Name::parse("example.com").unwrap();
        let key = RecordKey::new(zone.clone(), zone.prepend("w").unwrap(), RecordType::A);
        let one = RRSet::new(key.clone(), 60, &["192.0.2.1"]).unwrap();
        let two = RRSet::new(key, 60, &["192.0.2.1", "192.0.2.22"]).unwrap();
        let create = Change::new(ChangeKind::Create, vec![RRSetOp::create(two.clone())]);
        assert_eq!(Measure::Values.weigh(&create), (2, 9 + 10));
        let update = Change::new(ChangeKind::Update, vec![RRSetOp::update(one, two)]);
        assert_eq!(Measure::Values.weigh(&update), (3, 9 + 9 + 10));
        assert_eq!(Measure::Ops.weigh(&update).0, 1);
    }

    /// A change larger than one request of an exact-limit driver is refused before
    /// any call, naming its key; one that fits is not.
    #[test]
    fn a_change_larger_than_a_request_is_refused_by_name() {
        use dnsplane_common::{ChangeKind, RecordType};
        let zone = Name::parse("example.com").unwrap();
        let key = RecordKey::new(zone.clone(), zone.prepend("t").unwrap(), RecordType::Txt);
        // Ten values of 202 characters each (quotes included).
        let values: Vec<String> = (0..10)
            .map(|i| format!("\"{i}{}\"", "x".repeat(199)))
            .collect();
        let big = RRSet::new(key, 60, &values).unwrap();
        let change = Change::new(ChangeKind::Create, vec![RRSetOp::create(big)]);
        let caps = Capabilities::atomic(1000, 1000).measured_by_values();
        let why = caps.refusal("route53", &change).expect("refused");
        assert!(
            why.starts_with("t.example.com. TXT is too large for route53")
                && why.contains("2020 value characters"),
            "{why}"
        );
        assert_eq!(
            Capabilities::atomic(1000, 1000).refusal("x", &change),
            None,
            "Ops: an estimate, not refused"
        );
        assert_eq!(
            Capabilities::atomic(1000, 5000)
                .measured_by_values()
                .refusal("x", &change),
            None
        );
    }

    /// A set or a property the driver does not write is refused, whichever side of
    /// which op carries it; what it writes passes.
    #[test]
    fn refusals_name_the_set_or_the_property() {
        use dnsplane_common::{ChangeKind, RecordType, SetId};
        let zone = Name::parse("example.com").unwrap();
        let key = RecordKey::new(zone.clone(), zone.prepend("w").unwrap(), RecordType::A);
        let rr = |key: RecordKey, props: &[(&str, &str)]| {
            RRSet::with_properties(key, 60, &["192.0.2.1"], props).unwrap()
        };
        let plain = rr(key.clone(), &[]);
        let weighted = rr(
            key.clone().in_set(SetId::new("eu").unwrap()),
            &[("aws/weight", "1")],
        );
        let tagged = rr(key.clone(), &[("aws/region", "eu-west-1")]);
        let none = Capabilities {
            atomic_batches: true,
            conditional_writes: true,
            max_changes_per_batch: 1,
            max_bytes_per_batch: 1,
            measure: Measure::Ops,
            has_serial: false,
            routing_sets: false,
            properties: &[],
        };
        let change = |ops| Change::new(ChangeKind::Update, ops);
        assert_eq!(
            none.refusal("x", &change(vec![RRSetOp::create(plain.clone())])),
            None
        );
        let why = none
            .refusal("pdns", &change(vec![RRSetOp::create(weighted.clone())]))
            .unwrap();
        assert!(
            why.starts_with("pdns has no routing-policy sets (setIdentifier)"),
            "{why}"
        );
        let why = none
            .refusal(
                "pdns",
                &change(vec![
                    RRSetOp::create(plain.clone()),
                    RRSetOp::delete(tagged.clone()),
                ]),
            )
            .unwrap();
        assert!(
            why.starts_with("pdns cannot write provider-specific property \"aws/region\""),
            "{why}"
        );
        // Cloudflare's proxy status, on a driver that is not Cloudflare's.
        let proxied = rr(
            key.clone(),
            &[(dnsplane_common::routing::cloudflare::PROXIED, "true")],
        );
        let why = none
            .refusal("pdns", &change(vec![RRSetOp::create(proxied)]))
            .unwrap();
        assert!(
            why.starts_with(
                "pdns cannot write provider-specific property \"external-dns.alpha.kubernetes.io/cloudflare-proxied\""
            ),
            "{why}"
        );
        let some = Capabilities {
            routing_sets: true,
            properties: &["aws/weight"],
            ..none
        };
        assert_eq!(
            some.refusal("x", &change(vec![RRSetOp::create(weighted)])),
            None
        );
        assert!(
            some.refusal("x", &change(vec![RRSetOp::create(tagged)]))
                .is_some()
        );
    }
}
