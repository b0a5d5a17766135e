//! A running emulator, whichever it is: the state every emulator holds alike
//! ([`Shared`]), the pipeline's fault handling ([`decide_faults`], [`terminal_fault`])
//! and what every emulator's tests call on it (`endpoint`, `local_addr`, `add_fault`,
//! `clear_faults`, `stats`, `stop`). Each emulator's public type is
//! [`RunningEmulator`] of its own state (`Route53Emulator` =
//! `RunningEmulator<route53::Inner>`, …), with its own `start` and zone helpers in an
//! `impl` of that instance, so that these are written once.
use crate::control::ControlPlane;
use crate::fault::{Call, Decision, FaultAction, FaultRule, FaultSet};
use crate::server::{self, ConnKill, ServerHandle, Stopping};
use crate::stats::Stats;
use axum::Router;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;

/// What every emulator's state holds alike: its model, its counters, its fault rules
/// and the stop signal of its held requests (reached through [`ControlPlane`]).
#[derive(Debug)]
pub struct Shared<M> {
    pub(crate) state: Mutex<M>,
    pub(crate) stats: Mutex<Stats>,
    pub(crate) faults: FaultSet,
    pub(crate) stopping: Stopping,
}

impl<M> Shared<M> {
    /// `state` with zeroed counters and the configured fault rules.
    pub(crate) fn new(state: M, faults: &[FaultRule], stopping: Stopping) -> Self {
        Shared {
            state: Mutex::new(state),
            stats: Mutex::new(Stats::default()),
            faults: FaultSet::new(faults.to_vec()),
            stopping,
        }
    }
}

/// What an emulator's state tells [`RunningEmulator`] beyond its control API: how it
/// is built and routed.
pub trait Emulator: ControlPlane + Sized {
    /// The public type's name, for `Debug`.
    const NAME: &'static str;
    /// The path of the API's base below `http://HOST:PORT` (empty for the root).
    const BASE: &'static str;
    /// What `start` takes.
    type Options;

    /// Checks `opts`, builds the state around the server's stop signal and adds the
    /// configured zones; the message names the option.
    fn build(opts: Self::Options, stopping: Stopping) -> Result<Self, String>;
    /// The routes: the control API under `/_emulator`, the emulated API.
    fn app() -> Router<Arc<Self>>;
}

/// An option or seed the emulator cannot take, as `start` reports it.
fn invalid_input(e: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, e)
}

/// Runs the fault rules for one call of `op` (`name` in the log) on the zone spelled
/// `zone` (every spelling a rule may use): every pipeline counts and logs the actions
/// that fired alike.
pub(crate) fn decide_faults<S: ControlPlane>(
    inner: &S,
    op: &str,
    name: &str,
    zone: &[&str],
) -> Decision {
    let decision = inner.faults().decide(Call { op, zone });
    if !decision.fired.is_empty() {
        {
            let mut st = inner.stats();
            for a in &decision.fired {
                *st.faults.entry(a.as_str().to_string()).or_default() += 1;
            }
        }
        tracing::info!(
            op = name,
            faults = ?decision.fired.iter().map(|a| a.as_str()).collect::<Vec<_>>(),
            "Fault rules fired."
        );
    }
    decision
}

/// How a terminal fault rule wants the call answered, in the emulator's words.
pub(crate) enum Terminal<'d> {
    /// A gateway timeout (the connection is already dropped: nobody reads it).
    Timeout,
    /// The rule's own error.
    Fault(&'d FaultRule),
}

/// Carries out `decision`'s terminal rule, if any, as every emulator does: a
/// `timeout` holds the request (running the call first if the rule commits) and drops
/// the connection; `ambiguous_after_commit` runs the call, then fails; `throttle`
/// counts as throttled. `None`: no rule decides, the call runs as usual.
pub(crate) async fn terminal_fault<'d, S: ControlPlane>(
    inner: &S,
    decision: &'d Decision,
    kill: &ConnKill,
    run: impl FnOnce(),
) -> Option<Terminal<'d>> {
    let rule = decision.terminal.as_ref()?;
    Some(match rule.action {
        FaultAction::Timeout => {
            if rule.commit.unwrap_or(false) {
                run();
            }
            inner
                .stopping()
                .sleep(rule.delay.unwrap_or(Duration::from_secs(10)))
                .await;
            kill.kill();
            Terminal::Timeout
        }
        FaultAction::AmbiguousAfterCommit => {
            run();
            inner.stopping().sleep(decision.delay_after).await;
            Terminal::Fault(rule)
        }
        FaultAction::Throttle => {
            inner.stats().throttled += 1;
            Terminal::Fault(rule)
        }
        _ => Terminal::Fault(rule),
    })
}

/// A running emulator. Dropping it without [`stop`](Self::stop) leaves the server
/// running until the runtime ends.
pub struct RunningEmulator<S> {
    pub(crate) inner: Arc<S>,
    server: ServerHandle,
}

impl<S: Emulator> std::fmt::Debug for RunningEmulator<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(S::NAME)
            .field("endpoint", &self.endpoint())
            .finish_non_exhaustive()
    }
}

impl<S: Emulator> RunningEmulator<S> {
    /// Starts serving on `listener` (bind `127.0.0.1:0` in tests). Options or seeds
    /// the emulator cannot take are an `InvalidInput` error.
    pub async fn start(listener: TcpListener, opts: S::Options) -> io::Result<Self> {
        let (stop_tx, stopping) = server::stopping();
        let inner = Arc::new(S::build(opts, stopping).map_err(invalid_input)?);
        let router = S::app().with_state(inner.clone());
        let server = server::serve(listener, router, stop_tx)?;
        Ok(RunningEmulator { inner, server })
    }

    /// `http://127.0.0.1:PORT` and the API's base, where a client points.
    pub fn endpoint(&self) -> String {
        format!("http://{}{}", self.server.local_addr(), S::BASE)
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// Adds a fault rule after the others. Panics on an invalid rule (a test bug); the
    /// control API answers 400 instead.
    pub fn add_fault(&self, rule: FaultRule) {
        if let Err(e) = self.inner.check_fault(&rule) {
            panic!("invalid fault rule: {e}");
        }
        self.inner.faults().add(rule);
    }

    /// Removes every fault rule.
    pub fn clear_faults(&self) {
        self.inner.faults().clear();
    }

    /// What the emulator has seen so far.
    pub fn stats(&self) -> Stats {
        self.inner.stats().clone()
    }

    /// Stops: ends held requests, lets answers in flight finish, closes the port.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}
