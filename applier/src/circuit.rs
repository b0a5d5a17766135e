//! The circuit breaker of one provider account: after a permanent answer (bad
//! credentials, missing permissions, a zone that is gone) the applier stops calling the
//! provider for that account instead of failing every batch against it.
//!
//! - **closed**: calls go through. A permanent answer opens the circuit.
//! - **open**: batches are answered REJECTED_PERMANENT without any provider call. What
//!   is refused depends on what failed: a refused *write* blocks writes only (a
//!   read-only API token still lets planners read the zone); a refused *read* blocks
//!   everything.
//! - **half open**: once the cool-down (plus jitter) has passed, exactly one request —
//!   the next batch, or the next listing when reads are blocked — goes through as a
//!   probe; everything else is still refused while it runs. A probe that gets any
//!   non-permanent answer closes the circuit; a permanent one opens it again with twice
//!   the cool-down, up to `max_cool_down`.
//!
//! Other accounts have their own circuits and are never affected. Every call result is
//! fed in by [`crate::stats::Metered`], so the circuit sees each call whichever path
//! made it. The clock is tokio's, so tests run it on paused time.
use crate::provider::{ErrorClass, Operation, ProviderError};
use rand::Rng;
use serde::Deserialize;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// `[accounts.circuit]`: the breaker's knobs.
///
/// ```toml
/// [accounts.circuit]
/// cool_down = "30s"
/// max_cool_down = "5m"
/// jitter = 0.2
/// ```
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CircuitConfig {
    /// How long the circuit stays open after a permanent answer before one probe may
    /// go through. Default 30s.
    #[serde(with = "humantime_serde")]
    pub cool_down: Duration,
    /// Each failed probe doubles the cool-down, up to this. Default 5m.
    #[serde(with = "humantime_serde")]
    pub max_cool_down: Duration,
    /// Random extra wait, as a fraction of the cool-down (0.0–1.0; 0.2 means up to 20 %
    /// more), so that appliers sharing an account do not all probe at once. Default 0.2.
    pub jitter: f64,
}

impl Default for CircuitConfig {
    fn default() -> Self {
        CircuitConfig {
            cool_down: Duration::from_secs(30),
            max_cool_down: Duration::from_secs(300),
            jitter: 0.2,
        }
    }
}

impl CircuitConfig {
    /// Problems with the knobs, for config validation; `at` names the table.
    pub fn problems(&self, at: &str) -> Vec<String> {
        let mut p = Vec::new();
        if self.cool_down.is_zero() {
            p.push(format!("{at}.cool_down must be above zero"));
        }
        if self.max_cool_down < self.cool_down {
            p.push(format!("{at}.max_cool_down must not be below cool_down"));
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            p.push(format!("{at}.jitter {} is outside 0.0–1.0", self.jitter));
        }
        p
    }
}

/// What the circuit blocks while open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Writes only: a write was refused, reads still work.
    Writes,
    /// Every call: a read was refused.
    All,
}

impl Scope {
    fn covers(self, op: Operation) -> bool {
        self == Scope::All || op.is_write()
    }
}

#[derive(Debug)]
enum State {
    Closed,
    Open {
        scope: Scope,
        /// The provider's answer that opened (or last re-opened) the circuit.
        error: String,
        op: Operation,
        /// When a probe may go through.
        until: Instant,
        cool_down: Duration,
        /// A probe is running.
        probing: bool,
    },
}

/// The state as the status API shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitStatus {
    /// "closed", "open" or "half_open".
    pub state: &'static str,
    /// Why it is not closed.
    pub reason: Option<String>,
}

/// May a request call the provider?
#[derive(Debug)]
#[must_use]
pub enum Admission<'a> {
    Pass,
    /// The request is the half-open probe; the guard ends the probe when dropped.
    Probe(ProbeGuard<'a>),
    /// Refused without a provider call; the text says why.
    Reject(String),
}

impl Admission<'_> {
    pub fn is_pass(&self) -> bool {
        matches!(self, Admission::Pass)
    }
}

/// Held by the probe request. Dropping it without a verdict (the probe made no call
/// in the circuit's scope) lets the next request probe.
#[derive(Debug)]
pub struct ProbeGuard<'a> {
    circuit: &'a Circuit,
}

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        if let State::Open { probing, .. } = &mut *self.circuit.lock() {
            *probing = false;
        }
    }
}

/// One account's circuit breaker.
#[derive(Debug)]
pub struct Circuit {
    account: String,
    config: CircuitConfig,
    state: Mutex<State>,
}

fn seconds(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

impl Circuit {
    pub fn new(account: impl Into<String>, config: CircuitConfig) -> Self {
        Circuit {
            account: account.into(),
            config,
            state: Mutex::new(State::Closed),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The wait before the next probe: `cool_down` plus up to `jitter` of it.
    fn jittered(&self, cool_down: Duration) -> Duration {
        let extra = if self.config.jitter > 0.0 {
            rand::rng().random_range(0.0..=self.config.jitter)
        } else {
            0.0
        };
        cool_down.mul_f64(1.0 + extra)
    }

    /// Decides whether a request doing `op` may call the provider.
    pub fn admit(&self, op: Operation) -> Admission<'_> {
        let mut state = self.lock();
        let State::Open {
            scope,
            error,
            op: failed,
            until,
            probing,
            ..
        } = &mut *state
        else {
            return Admission::Pass;
        };
        if !scope.covers(op) {
            return Admission::Pass;
        }
        let now = Instant::now();
        if *probing || now < *until {
            let next = if *probing {
                "a probe is running".to_string()
            } else {
                format!("next probe in {}", seconds(*until - now))
            };
            return Admission::Reject(format!(
                "circuit open for account {:?}: the provider refused {failed} with a permanent error ({error}); no provider call was made; {next}",
                self.account
            ));
        }
        *probing = true;
        tracing::info!(account = %self.account, op = op.as_str(), "Circuit half open: letting one probe through.");
        Admission::Probe(ProbeGuard { circuit: self })
    }

    /// Feeds one provider call's answer in.
    pub fn observe(&self, op: Operation, result: Result<(), &ProviderError>) {
        let mut state = self.lock();
        let permanent = result.err().filter(|e| e.class == ErrorClass::Permanent);
        match (&mut *state, permanent) {
            (State::Closed, None) => {}
            (State::Closed, Some(e)) => {
                let scope = if op.is_write() {
                    Scope::Writes
                } else {
                    Scope::All
                };
                let cool_down = self.config.cool_down;
                let wait = self.jittered(cool_down);
                tracing::warn!(
                    account = %self.account,
                    op = op.as_str(),
                    error = %e.message,
                    cool_down_ms = wait.as_millis() as u64,
                    "Circuit opened: the provider answered with a permanent error; calls are refused until a probe succeeds."
                );
                *state = State::Open {
                    scope,
                    error: e.message.clone(),
                    op,
                    until: Instant::now() + wait,
                    cool_down,
                    probing: false,
                };
            }
            (
                State::Open {
                    scope,
                    error,
                    op: failed,
                    until,
                    cool_down,
                    probing,
                },
                Some(e),
            ) => {
                if !op.is_write() && *scope == Scope::Writes {
                    // Reads fail too now: block them as well.
                    *scope = Scope::All;
                }
                *error = e.message.clone();
                *failed = op;
                if *probing && scope.covers(op) {
                    *cool_down = (*cool_down * 2).min(self.config.max_cool_down);
                    let wait = self.jittered(*cool_down);
                    *until = Instant::now() + wait;
                    *probing = false;
                    tracing::warn!(
                        account = %self.account,
                        op = op.as_str(),
                        error = %e.message,
                        cool_down_ms = wait.as_millis() as u64,
                        "Circuit probe failed; open again with a longer cool-down."
                    );
                }
            }
            (State::Open { scope, probing, .. }, None) => {
                if *probing && scope.covers(op) {
                    tracing::info!(account = %self.account, op = op.as_str(), "Circuit closed: the probe was answered.");
                    *state = State::Closed;
                }
            }
        }
    }

    pub fn status(&self) -> CircuitStatus {
        let state = self.lock();
        match &*state {
            State::Closed => CircuitStatus {
                state: "closed",
                reason: None,
            },
            State::Open {
                scope,
                error,
                op,
                until,
                probing,
                ..
            } => {
                let now = Instant::now();
                let half_open = *probing || now >= *until;
                let blocked = match scope {
                    Scope::Writes => "writes are",
                    Scope::All => "all calls are",
                };
                let next = if *probing {
                    "a probe is running".to_string()
                } else if half_open {
                    "the next request probes".to_string()
                } else {
                    format!("next probe in {}", seconds(*until - now))
                };
                CircuitStatus {
                    state: if half_open { "half_open" } else { "open" },
                    reason: Some(format!(
                        "account {:?}: circuit {}: the provider refused {op} with a permanent error ({error}); {blocked} refused without calling it; {next}",
                        self.account,
                        if half_open { "half open" } else { "open" },
                    )),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denied() -> ProviderError {
        ProviderError::new(ErrorClass::Permanent, "401 Unauthorized")
    }

    fn circuit() -> Circuit {
        Circuit::new(
            "acct",
            CircuitConfig {
                cool_down: Duration::from_secs(10),
                max_cool_down: Duration::from_secs(35),
                jitter: 0.0,
            },
        )
    }

    fn passes(c: &Circuit, op: Operation) -> bool {
        matches!(c.admit(op), Admission::Pass)
    }

    fn rejects(c: &Circuit, op: Operation) -> bool {
        matches!(c.admit(op), Admission::Reject(_))
    }

    #[tokio::test(start_paused = true)]
    async fn a_permanent_answer_opens_and_a_probe_closes() {
        let c = circuit();
        assert!(passes(&c, Operation::Apply));
        // Non-permanent failures never open it.
        for class in ErrorClass::ALL
            .into_iter()
            .filter(|&c| c != ErrorClass::Permanent)
        {
            c.observe(Operation::Apply, Err(&ProviderError::new(class, "x")));
        }
        assert_eq!(c.status().state, "closed");

        c.observe(Operation::Apply, Err(&denied()));
        let status = c.status();
        assert_eq!(status.state, "open");
        let reason = status.reason.unwrap();
        assert!(
            reason.contains("\"acct\"") && reason.contains("401 Unauthorized"),
            "{reason}"
        );
        let Admission::Reject(why) = c.admit(Operation::Apply) else {
            panic!("open circuit let a write through");
        };
        assert!(
            why.contains("no provider call") && why.contains("next probe in 10.0s"),
            "{why}"
        );
        // A refused write leaves reads alone (a read-only token still reads).
        assert!(passes(&c, Operation::List));
        c.observe(Operation::List, Ok(()));
        assert_eq!(
            c.status().state,
            "open",
            "a read does not close a write circuit"
        );

        tokio::time::advance(Duration::from_millis(9_999)).await;
        assert!(rejects(&c, Operation::Apply));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(c.status().state, "half_open");
        let probe = c.admit(Operation::Apply);
        assert!(matches!(probe, Admission::Probe(_)));
        // Exactly one probe at a time.
        assert!(rejects(&c, Operation::Apply));
        // Any non-permanent answer to the probe closes the circuit.
        c.observe(
            Operation::Apply,
            Err(&ProviderError::new(ErrorClass::Conflict, "409")),
        );
        drop(probe);
        assert_eq!(
            c.status(),
            CircuitStatus {
                state: "closed",
                reason: None
            }
        );
        assert!(passes(&c, Operation::Apply));
    }

    #[tokio::test(start_paused = true)]
    async fn failed_probes_double_the_cool_down_up_to_the_cap() {
        let c = circuit();
        c.observe(Operation::Apply, Err(&denied()));
        let mut waits = Vec::new();
        let mut cool_down_ms = 10_000u64;
        for _ in 0..4 {
            // Step in whole seconds until a probe is admitted.
            let mut waited = 0;
            let probe = loop {
                match c.admit(Operation::Apply) {
                    Admission::Probe(g) => break g,
                    Admission::Reject(_) => {
                        tokio::time::advance(Duration::from_millis(500)).await;
                        waited += 500;
                    }
                    Admission::Pass => panic!("open circuit passed a write"),
                }
            };
            waits.push(waited);
            assert!(
                waited >= cool_down_ms,
                "probe after {waited} ms < {cool_down_ms}"
            );
            c.observe(Operation::Apply, Err(&denied()));
            drop(probe);
            cool_down_ms = (cool_down_ms * 2).min(35_000);
        }
        assert_eq!(waits, [10_000, 20_000, 35_000, 35_000]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_without_a_verdict_lets_the_next_one_through() {
        let c = circuit();
        c.observe(Operation::Apply, Err(&denied()));
        tokio::time::advance(Duration::from_secs(10)).await;
        let probe = c.admit(Operation::Apply);
        assert!(matches!(probe, Admission::Probe(_)));
        drop(probe); // e.g. the batch was deferred before calling
        assert!(matches!(c.admit(Operation::Apply), Admission::Probe(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_read_blocks_everything_and_a_read_may_probe() {
        let c = circuit();
        c.observe(Operation::List, Err(&denied()));
        assert!(rejects(&c, Operation::List));
        assert!(rejects(&c, Operation::Apply));
        tokio::time::advance(Duration::from_secs(10)).await;
        let probe = c.admit(Operation::Serial);
        assert!(matches!(probe, Admission::Probe(_)));
        c.observe(Operation::Serial, Ok(()));
        drop(probe);
        assert_eq!(c.status().state, "closed");

        // A write circuit escalates when reads start failing too.
        c.observe(Operation::Apply, Err(&denied()));
        assert!(passes(&c, Operation::List));
        c.observe(Operation::List, Err(&denied()));
        assert!(rejects(&c, Operation::List));
    }

    #[tokio::test(start_paused = true)]
    async fn jitter_only_lengthens_the_cool_down_within_its_fraction() {
        for _ in 0..50 {
            let c = Circuit::new(
                "acct",
                CircuitConfig {
                    cool_down: Duration::from_secs(10),
                    max_cool_down: Duration::from_secs(60),
                    jitter: 0.5,
                },
            );
            c.observe(Operation::Apply, Err(&denied()));
            tokio::time::advance(Duration::from_millis(9_999)).await;
            assert!(rejects(&c, Operation::Apply), "probe before the cool-down");
            tokio::time::advance(Duration::from_millis(5_001)).await;
            assert!(
                matches!(c.admit(Operation::Apply), Admission::Probe(_)),
                "no probe after cool-down + jitter"
            );
        }
    }

    #[test]
    fn knobs_are_validated() {
        assert!(CircuitConfig::default().problems("circuit").is_empty());
        let bad = CircuitConfig {
            cool_down: Duration::ZERO,
            max_cool_down: Duration::ZERO,
            jitter: 1.5,
        };
        let p = bad.problems("accounts[0].circuit").join("; ");
        assert!(
            p.contains("accounts[0].circuit.cool_down") && p.contains("jitter"),
            "{p}"
        );
    }
}
