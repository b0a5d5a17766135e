//! One provider call as every layer of an account's stack sees it: the call context
//! ([`CallCx`]: account, zone, deadline, attempt), the request ([`Call`]) and its
//! answer ([`Reply`]), the one-method [`Layer`] trait, the [`Driver`] adapter that puts
//! a driver's four-method [`Provider`] trait at the bottom, and the assembled [`Stack`].
//! The layers themselves are in `crate::layers` (and the quota's and the fault
//! injector's in their own modules).
//!
//! This is tower's `Layer`/`Service` shape (as linkerd uses it), with one difference: a
//! [`Call`] borrows the batch's ops instead of owning them, so that a thousand-op batch
//! and its retries are never copied; tower's `Service` would need owned, `'static`
//! requests.
use super::{Capabilities, ErrorClass, Listing, Operation, Provider, ProviderError};
use async_trait::async_trait;
use dnsplane_common::{Name, RRSetOp};
use std::sync::Arc;
use tokio::time::Instant;

/// What every layer knows about one provider call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallCx {
    pub account: Arc<str>,
    /// The zone the call is about; `None` for account-wide calls (listing zones).
    pub zone: Option<Name>,
    /// The call must not start (or wait for a quota token) past this.
    pub deadline: Option<Instant>,
    /// 0 for the first attempt of a request, then 1, 2, … for its retries.
    pub attempt: u32,
    /// Paces the HTTP requests a driver makes for this call (set by the quota layer).
    pub pacer: Pacer,
    /// A whole-zone read must ask the provider, not what a driver remembers of it
    /// (`ListRecords` with `fresh`; see [`Provider::forget`]).
    pub fresh: bool,
}

/// Takes the quota's token for one provider request of kind `op`, waiting at most
/// until the call's deadline; implemented by the quota layer.
#[async_trait]
pub trait Gate: Send + Sync + std::fmt::Debug {
    async fn admit(&self, op: Operation) -> Result<(), ProviderError>;

    /// The provider said how many requests of kind `op` its window still allows
    /// (Azure's `x-ms-ratelimit-remaining-subscription-writes`); none left is taken as
    /// a throttle answer before the 429 that would follow. Default: ignored.
    async fn remaining(&self, _op: Operation, _left: u64) {}
}

/// How a driver that makes several HTTP requests for one call (PowerDNS: a serial
/// read, then the PATCH) keeps each of them under the account's quota: it calls
/// [`request`](Self::request) right before sending each one, so that the request the
/// provider counts is the one that waited for the token (a token taken for the whole
/// call before its first request let a second request follow at once, which a
/// provider with a burst of 1 always refused). Without a quota it does nothing.
#[derive(Clone, Debug, Default)]
pub struct Pacer(Option<Arc<dyn Gate>>);

impl Pacer {
    pub fn new(gate: Arc<dyn Gate>) -> Pacer {
        Pacer(Some(gate))
    }

    /// Reports what the provider said is left of its request window (see
    /// [`Gate::remaining`]); without a gate nothing.
    pub async fn remaining(&self, op: Operation, left: u64) {
        if let Some(gate) = &self.0 {
            gate.remaining(op, left).await;
        }
    }

    /// Whether a gate is set: the driver must take the call's tokens itself.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// Waits for the token of one request of kind `op` (a write: `Apply`; a read:
    /// `List` or `Serial`); an error marked `quota_denied` when none comes in time.
    pub async fn request(&self, op: Operation) -> Result<(), ProviderError> {
        match &self.0 {
            Some(gate) => gate.admit(op).await,
            None => Ok(()),
        }
    }
}

/// Every pacer is alike for comparing call contexts: it is plumbing, not identity.
impl PartialEq for Pacer {
    fn eq(&self, _: &Pacer) -> bool {
        true
    }
}
impl Eq for Pacer {}

impl CallCx {
    /// The first attempt of a call about `zone` of `account`, without a deadline.
    pub fn new(account: impl Into<Arc<str>>, zone: Option<Name>) -> CallCx {
        CallCx {
            account: account.into(),
            zone,
            deadline: None,
            attempt: 0,
            pacer: Pacer::default(),
            fresh: false,
        }
    }

    #[must_use]
    pub fn with_fresh(mut self, fresh: bool) -> CallCx {
        self.fresh = fresh;
        self
    }

    #[must_use]
    pub fn with_deadline(mut self, deadline: Option<Instant>) -> CallCx {
        self.deadline = deadline;
        self
    }

    #[must_use]
    pub fn with_pacer(mut self, pacer: Pacer) -> CallCx {
        self.pacer = pacer;
        self
    }

    #[must_use]
    pub fn with_attempt(mut self, attempt: u32) -> CallCx {
        self.attempt = attempt;
        self
    }

    /// The zone of a zone call; an error (never a panic) for a call built without one.
    pub fn zone(&self) -> Result<&Name, ProviderError> {
        self.zone.as_ref().ok_or_else(|| {
            ProviderError::new(
                ErrorClass::Invalid,
                "internal error: a zone call without a zone",
            )
        })
    }
}

/// One provider request.
#[derive(Clone, Copy, Debug)]
pub enum Call<'a> {
    /// The zones the account holds.
    Zones,
    /// The zone's change counter.
    Serial,
    /// The zone's RRSets, or only those at `names`.
    List { names: Option<&'a [Name]> },
    /// One write of `ops` (atomic where the driver says so).
    Apply { ops: &'a [RRSetOp] },
}

impl Call<'_> {
    pub fn operation(&self) -> Operation {
        match self {
            Call::Zones => Operation::Zones,
            Call::Serial => Operation::Serial,
            Call::List { .. } => Operation::List,
            Call::Apply { .. } => Operation::Apply,
        }
    }

    /// How many names or ops the call carries (0 for a whole-zone read).
    pub fn items(&self) -> usize {
        match self {
            Call::Zones | Call::Serial => 0,
            Call::List { names } => names.map_or(0, <[Name]>::len),
            Call::Apply { ops } => ops.len(),
        }
    }
}

/// The provider's answer to a [`Call`] (the variant matches the call's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Zones(Vec<Name>),
    Serial(Option<u64>),
    Listing(Listing),
    Applied,
}

/// One layer of the stack (or the driver at its bottom): one method. What the driver
/// is and can do is known to the [`Stack`], not asked of every layer.
#[async_trait]
pub trait Layer: Send + Sync + std::fmt::Debug {
    async fn call(&self, cx: &CallCx, call: Call<'_>) -> Result<Reply, ProviderError>;
}

/// The bottom of the stack: a driver behind its four-method trait.
#[derive(Debug)]
pub struct Driver(pub Arc<dyn Provider>);

#[async_trait]
impl Layer for Driver {
    async fn call(&self, cx: &CallCx, call: Call<'_>) -> Result<Reply, ProviderError> {
        Ok(match call {
            Call::Zones => Reply::Zones(self.0.zones().await?),
            Call::Serial => Reply::Serial(self.0.serial(cx.zone()?).await?),
            Call::List { names } => {
                if cx.fresh && names.is_none() {
                    self.0.forget(cx.zone()?);
                }
                Reply::Listing(self.0.list_paced(cx.zone()?, names, &cx.pacer).await?)
            }
            Call::Apply { ops } => {
                self.0.apply_paced(cx.zone()?, ops, &cx.pacer).await?;
                Reply::Applied
            }
        })
    }
}

fn unexpected(call: Operation, reply: &Reply) -> ProviderError {
    ProviderError::new(
        ErrorClass::Invalid,
        format!("internal error: a {call} call answered {reply:?}"),
    )
}

/// An assembled stack: its top layer, and the driver's name and capabilities (which
/// the batch algorithm adapts to), with typed shorthands for each call.
#[derive(Clone, Debug)]
pub struct Stack {
    top: Arc<dyn Layer>,
    driver: &'static str,
    capabilities: Capabilities,
}

impl Stack {
    /// A stack whose bottom is a driver called `driver` that can do `capabilities`.
    pub fn new(top: Arc<dyn Layer>, driver: &'static str, capabilities: Capabilities) -> Stack {
        Stack {
            top,
            driver,
            capabilities,
        }
    }

    /// A stack of just the driver (tests, benchmarks).
    pub fn driver_only(provider: Arc<dyn Provider>) -> Stack {
        let (driver, capabilities) = (provider.driver(), provider.capabilities());
        Stack::new(Arc::new(Driver(provider)), driver, capabilities)
    }

    pub fn driver(&self) -> &'static str {
        self.driver
    }

    pub fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    pub async fn call(&self, cx: &CallCx, call: Call<'_>) -> Result<Reply, ProviderError> {
        self.top.call(cx, call).await
    }

    pub async fn zones(&self, cx: &CallCx) -> Result<Vec<Name>, ProviderError> {
        match self.call(cx, Call::Zones).await? {
            Reply::Zones(z) => Ok(z),
            r => Err(unexpected(Operation::Zones, &r)),
        }
    }

    pub async fn serial(&self, cx: &CallCx) -> Result<Option<u64>, ProviderError> {
        match self.call(cx, Call::Serial).await? {
            Reply::Serial(s) => Ok(s),
            r => Err(unexpected(Operation::Serial, &r)),
        }
    }

    pub async fn list(
        &self,
        cx: &CallCx,
        names: Option<&[Name]>,
    ) -> Result<Listing, ProviderError> {
        match self.call(cx, Call::List { names }).await? {
            Reply::Listing(l) => Ok(l),
            r => Err(unexpected(Operation::List, &r)),
        }
    }

    pub async fn apply(&self, cx: &CallCx, ops: &[RRSetOp]) -> Result<(), ProviderError> {
        match self.call(cx, Call::Apply { ops }).await? {
            Reply::Applied => Ok(()),
            r => Err(unexpected(Operation::Apply, &r)),
        }
    }
}
