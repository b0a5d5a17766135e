//! The pacer's layer in the provider stack (under the quota's, over the metrics'):
//! every call takes its [`Unit`](super::pacer::Unit) first, so that while the account
//! is paced one call at a time goes (the precondition read and its write together),
//! and every HTTP request of the call takes a slot: through the call's
//! [`Pacer`](crate::provider::call::Pacer) for the drivers that make several requests
//! per call (after the quota's token, when there is a quota), before the call for the
//! rest. Every answer the driver marked `throttled` is fed back into the pacer.
use super::pacer::Pacer;
use crate::provider::call::{Call, CallCx, Gate, Layer, Pacer as CallPacer, Reply};
use crate::provider::{ErrorClass, Operation, ProviderError};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long a call without a deadline (a listing) waits for its turn or slot.
const MAX_WAIT: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct Paced {
    inner: Arc<dyn Layer>,
    pacer: Arc<Pacer>,
}

impl Paced {
    pub fn new(inner: Arc<dyn Layer>, pacer: Arc<Pacer>) -> Paced {
        Paced { inner, pacer }
    }
}

/// Not attempted: the pacing had no turn or slot before the deadline. Marked like a
/// quota's denial, so the batch's changes come back DEFERRED with `retry_after`.
fn denied(account: &str, retry_after: Duration) -> ProviderError {
    let mut e = ProviderError::new(
        ErrorClass::Transient,
        format!(
            "not attempted: account {account:?} is paced after its provider's 429 answers and has no slot before the deadline (next in {retry_after:?})"
        ),
    )
    .with_retry_after(retry_after);
    e.quota_denied = true;
    e
}

/// The gate of one call's requests: the quota's token first (if any), then a slot.
#[derive(Debug)]
struct SlotGate {
    outer: CallPacer,
    pacer: Arc<Pacer>,
    deadline: Instant,
}

#[async_trait]
impl Gate for SlotGate {
    async fn admit(&self, op: Operation) -> Result<(), ProviderError> {
        self.outer.request(op).await?;
        self.pacer
            .slot(self.deadline)
            .await
            .map(drop)
            .map_err(|d| denied(self.pacer.account(), d))
    }

    /// None left: paced as after a 429, before the 429 comes.
    async fn remaining(&self, op: Operation, left: u64) {
        self.outer.remaining(op, left).await;
        if left == 0 {
            self.pacer.throttle(None);
        }
    }
}

#[async_trait]
impl Layer for Paced {
    async fn call(&self, cx: &CallCx, call: Call<'_>) -> Result<Reply, ProviderError> {
        let deadline = cx.deadline.unwrap_or_else(|| Instant::now() + MAX_WAIT);
        let account = self.pacer.account();
        let _unit = self
            .pacer
            .unit(deadline)
            .await
            .map_err(|d| denied(account, d))?;
        let result = match call {
            Call::List { .. } | Call::Apply { .. } => {
                let gate = SlotGate {
                    outer: cx.pacer.clone(),
                    pacer: self.pacer.clone(),
                    deadline,
                };
                let cx = cx.clone().with_pacer(CallPacer::new(Arc::new(gate)));
                self.inner.call(&cx, call).await
            }
            Call::Zones | Call::Serial => {
                self.pacer
                    .slot(deadline)
                    .await
                    .map_err(|d| denied(account, d))?;
                self.inner.call(cx, call).await
            }
        };
        if let Err(e) = &result
            && e.throttled
        {
            self.pacer.throttle(e.retry_after);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::PacingConfig;
    use dnsplane_common::Name;
    use std::sync::Mutex;

    /// A provider behind a limit of 1 request per second, burst 1, reads included:
    /// each `Apply` is a precondition read then the write, each taking a token right
    /// before it goes (as the PowerDNS driver does through the call's pacer); a
    /// request over the limit is answered 429 with `Retry-After: 1`.
    #[derive(Debug)]
    struct Limited1PerSecond {
        bucket: Mutex<(f64, Instant)>,
        writes: Mutex<u32>,
    }

    impl Limited1PerSecond {
        fn new() -> Self {
            Limited1PerSecond {
                bucket: Mutex::new((1.0, Instant::now())),
                writes: Mutex::new(0),
            }
        }

        fn admit(&self) -> Result<(), ProviderError> {
            let mut b = self.bucket.lock().unwrap();
            let now = Instant::now();
            b.0 = (b.0 + (now - b.1).as_secs_f64()).min(1.0);
            b.1 = now;
            if b.0 >= 1.0 {
                b.0 -= 1.0;
                return Ok(());
            }
            Err(
                ProviderError::from_http_status(429, "429 Too Many Requests")
                    .with_retry_after(Duration::from_secs(1)),
            )
        }
    }

    #[async_trait]
    impl Layer for Limited1PerSecond {
        async fn call(&self, cx: &CallCx, call: Call<'_>) -> Result<Reply, ProviderError> {
            match call {
                Call::Apply { .. } => {
                    cx.pacer.request(Operation::List).await?;
                    self.admit()?;
                    cx.pacer.request(Operation::Apply).await?;
                    self.admit()?;
                    *self.writes.lock().unwrap() += 1;
                    Ok(Reply::Applied)
                }
                _ => Ok(Reply::Serial(None)),
            }
        }
    }

    /// What the batch does with a 429: wait out the `Retry-After`, try again; `tries`
    /// attempts. Returns the writes that got through.
    async fn writes(config: PacingConfig, tries: u32) -> u32 {
        let provider = Arc::new(Limited1PerSecond::new());
        let paced = Paced::new(provider.clone(), Arc::new(Pacer::new("acct", config)));
        let cx = CallCx::new("acct", Some(Name::parse("ex.test").unwrap()));
        for _ in 0..tries {
            if let Err(e) = paced.call(&cx, Call::Apply { ops: &[] }).await {
                tokio::time::sleep(e.retry_after.unwrap_or(Duration::from_secs(1))).await;
            }
        }
        *provider.writes.lock().unwrap()
    }

    /// Without pacing, every attempt's read takes the only token and its write draws
    /// the 429: nothing is ever written (the livelock of issue 28). With the default
    /// pacing, the read and the write of an attempt are a second apart, and writes go.
    #[tokio::test(start_paused = true)]
    async fn a_read_and_its_write_through_a_1_per_second_limit_livelock_without_pacing_only() {
        let off = PacingConfig {
            enabled: false,
            ..PacingConfig::default()
        };
        // Not even the first: its read takes the only token.
        assert_eq!(writes(off, 20).await, 0);
        let on = writes(PacingConfig::default(), 20).await;
        assert!(on >= 8, "{on} writes of 20 attempts");
    }

    /// A provider that says, on a successful answer, that no request is left in its
    /// window (Azure's `x-ms-ratelimit-remaining-subscription-writes: 0`).
    #[derive(Debug)]
    struct NoneLeft(u64);

    #[async_trait]
    impl Layer for NoneLeft {
        async fn call(&self, cx: &CallCx, _: Call<'_>) -> Result<Reply, ProviderError> {
            cx.pacer.request(Operation::Apply).await?;
            cx.pacer.remaining(Operation::Apply, self.0).await;
            Ok(Reply::Applied)
        }
    }

    /// "None left" paces the account as a 429 would, before the 429; some left
    /// does not.
    #[tokio::test(start_paused = true)]
    async fn a_provider_saying_none_is_left_paces_the_account() {
        let cx = CallCx::new("acct", Some(Name::parse("ex.test").unwrap()));
        for (left, paced) in [(5, false), (0, true)] {
            let pacer = Arc::new(Pacer::new("acct", PacingConfig::default()));
            let layer = Paced::new(Arc::new(NoneLeft(left)), pacer.clone());
            layer.call(&cx, Call::Apply { ops: &[] }).await.unwrap();
            assert_eq!(pacer.paced(), paced, "{left} left");
        }
    }
}
