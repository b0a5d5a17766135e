//! The layers of an account's provider stack, each with one method
//! ([`Layer`](crate::provider::call::Layer)) and one call context passed explicitly
//! through all of them ([`CallCx`](crate::provider::call::CallCx)):
//!
//! ```text
//! Traced (the `provider.call` span) → Limited (the quota: `quota.wait`, denials,
//! throttle feedback) → Observed (metrics, circuit, serials) → FaultInjector (only
//! with `[[accounts.faults]]`) → Driver (the driver's four-method `Provider` trait)
//! ```
//!
//! Every call carries its account, its zone, the deadline it must not outlive and its
//! attempt number (0 the first time; retries count up). The batch algorithm builds the
//! context; no layer learns anything from a task-local or from the name of the current
//! span.
//!
//! Injected faults sit below the metrics and the circuit, so they look exactly like
//! the provider's own answers to everything above; a call the quota denies reaches
//! nothing below it (no metric, no circuit, no provider). [`Traced`] and [`Observed`]
//! are here; the quota's layer is [`crate::quota::Limited`], the fault injector
//! [`crate::provider::fault::FaultInjector`].
pub mod observed;
pub mod traced;

pub use crate::provider::call::{Call, CallCx, Driver, Layer, Reply, Stack};
pub use observed::Observed;
pub use traced::Traced;
