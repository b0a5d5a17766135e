//! The fault injector: a layer of the provider stack that runs the rules on every
//! call below the metrics and the circuit, so injected faults look exactly like the
//! provider's own answers to everything above.
use super::rules::{Action, FaultKind, FaultRule, LOG_TARGET};
use crate::provider::call::{Call, CallCx, Layer, Reply};
use crate::provider::{ErrorClass, Operation, ProviderError};
use async_trait::async_trait;
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Attempts of the other writer's read-and-write, on transient or ambiguous answers.
const OTHER_WRITER_ATTEMPTS: u32 = 5;

/// The names a call touches, for the `names` filter.
enum Touch<'a> {
    /// Serial, zone list: no names.
    Nothing,
    /// A whole-zone read touches every name.
    Everything,
    Names(Vec<&'a Name>),
}

impl Touch<'_> {
    fn any_of(&self, names: &HashSet<Name>) -> bool {
        match self {
            Touch::Nothing => false,
            Touch::Everything => true,
            Touch::Names(ns) => ns.iter().any(|n| names.contains(*n)),
        }
    }
}

#[derive(Debug)]
struct RuleState {
    seen: u64,
    fired: u64,
    rng: StdRng,
}

#[derive(Debug)]
struct State {
    rules: Vec<RuleState>,
    calls: u64,
    fired: BTreeMap<&'static str, u64>,
}

/// What the rules decided for one call.
#[derive(Default)]
struct Plan {
    /// (rule index, kind) of every rule that fired, for the log.
    fired: Vec<(usize, FaultKind)>,
    writes: Vec<(RecordKey, Option<RRSet>)>,
    delay_before: Duration,
    delay_after: Duration,
    fail: Option<(ProviderError, Duration, bool)>,
}

/// A layer that injects faults into the calls to `inner` (see the module docs).
#[derive(Debug)]
pub struct FaultInjector {
    account: String,
    inner: Arc<dyn Layer>,
    rules: Vec<FaultRule>,
    state: Mutex<State>,
    started: Instant,
}

impl FaultInjector {
    pub fn new(account: impl Into<String>, inner: Arc<dyn Layer>, rules: Vec<FaultRule>) -> Self {
        let state = State {
            rules: rules
                .iter()
                .map(|r| RuleState {
                    seen: 0,
                    fired: 0,
                    rng: StdRng::seed_from_u64(r.seed),
                })
                .collect(),
            calls: 0,
            fired: BTreeMap::new(),
        };
        FaultInjector {
            account: account.into(),
            inner,
            rules,
            state: Mutex::new(state),
            started: Instant::now(),
        }
    }

    /// Faults fired so far, by action name.
    pub fn fired(&self) -> BTreeMap<&'static str, u64> {
        self.lock().fired.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn at_ms(&self) -> u128 {
        self.started.elapsed().as_millis()
    }

    /// Runs the rules for one call; returns the call's number and the plan.
    fn plan(&self, op: Operation, touch: &Touch<'_>, ops: &[RRSetOp]) -> (u64, Plan) {
        let mut state = self.lock();
        state.calls += 1;
        let call = state.calls;
        let mut plan = Plan::default();
        for (i, rule) in self.rules.iter().enumerate() {
            if !rule.op.matches(op) || (!rule.names.is_empty() && !touch.any_of(&rule.names)) {
                continue;
            }
            let rejected = match &rule.action {
                Action::RejectValues { values, .. } => {
                    let hit = ops.iter().find_map(|o| {
                        o.after
                            .iter()
                            .flat_map(|r| r.values())
                            .find(|v| values.contains(*v))
                            .map(|v| (o.key.clone(), v))
                    });
                    match hit {
                        Some(hit) => Some(hit),
                        None => continue,
                    }
                }
                _ => None,
            };
            let rs = &mut state.rules[i];
            rs.seen += 1;
            if rs.seen <= rule.skip || rule.times.is_some_and(|t| rs.fired >= t) {
                continue;
            }
            if rule.probability < 1.0 && !rs.rng.random_bool(rule.probability) {
                continue;
            }
            rs.fired += 1;
            *state.fired.entry(rule.kind.as_str()).or_default() += 1;
            plan.fired.push((i, rule.kind));
            match &rule.action {
                Action::Latency { delay, commit } => {
                    if *commit {
                        plan.delay_after += *delay;
                    } else {
                        plan.delay_before += *delay;
                    }
                }
                Action::OtherWriter { records } => plan.writes.extend(records.iter().cloned()),
                Action::Fail {
                    error,
                    delay,
                    commit,
                } => {
                    plan.fail = Some((error.clone(), *delay, *commit));
                    break;
                }
                Action::RejectValues {
                    status, template, ..
                } => {
                    let (key, value) = rejected.expect("matched above");
                    let message = template
                        .replace("{status}", &status.to_string())
                        .replace("{value}", value)
                        .replace("{name}", key.name.as_str())
                        .replace("{type}", key.rtype.as_str());
                    let error = ProviderError::new(ErrorClass::Invalid, message).with_key(key);
                    plan.fail = Some((error, Duration::ZERO, false));
                    break;
                }
            }
        }
        (call, plan)
    }

    /// Another writer's changes: each record set unconditionally (read, then write with
    /// what was read as the precondition), straight through the inner layer. A real
    /// provider answers concurrent writes with transient errors (PowerDNS on sqlite:
    /// "database is locked"); the other writer retries those, as a real one would, so
    /// that a rule that fired did write.
    async fn other_writer(&self, cx: &CallCx, zone: &Name, records: &[(RecordKey, Option<RRSet>)]) {
        for attempt in 1..=OTHER_WRITER_ATTEMPTS {
            match self.other_writer_once(cx, zone, records).await {
                Ok(()) => return,
                Err(e)
                    if attempt < OTHER_WRITER_ATTEMPTS
                        && matches!(e.class, ErrorClass::Transient | ErrorClass::Ambiguous) =>
                {
                    tracing::debug!(target: LOG_TARGET, account = %self.account, error = %e, attempt, "The other writer's write failed; it tries again.");
                    tokio::time::sleep(Duration::from_millis(25 << attempt)).await;
                }
                Err(e) => {
                    tracing::warn!(target: LOG_TARGET, account = %self.account, error = %e, attempt, "The other writer's write failed.");
                    return;
                }
            }
        }
    }

    /// One read-then-write of the other writer (a read that fails: it writes blind).
    async fn other_writer_once(
        &self,
        cx: &CallCx,
        zone: &Name,
        records: &[(RecordKey, Option<RRSet>)],
    ) -> Result<(), ProviderError> {
        let names: Vec<Name> = records.iter().map(|(k, _)| k.name.clone()).collect();
        let read = self
            .inner
            .call(
                cx,
                Call::List {
                    names: Some(&names),
                },
            )
            .await;
        let current = match read {
            Ok(Reply::Listing(l)) => l.rrsets,
            Ok(other) => {
                tracing::warn!(target: LOG_TARGET, account = %self.account, reply = ?other, "The other writer's read got no listing; it writes blind.");
                Vec::new()
            }
            Err(e) => {
                tracing::warn!(target: LOG_TARGET, account = %self.account, error = %e, "The other writer could not read; it writes blind.");
                Vec::new()
            }
        };
        let ops: Vec<RRSetOp> = records
            .iter()
            .filter(|(k, _)| &k.zone == zone)
            .filter_map(|(key, want)| {
                let before = current.iter().find(|r| &r.key == key).cloned();
                (before != *want).then(|| RRSetOp {
                    key: key.clone(),
                    before,
                    after: want.clone(),
                })
            })
            .collect();
        if ops.is_empty() {
            return Ok(());
        }
        self.inner
            .call(cx, Call::Apply { ops: &ops })
            .await
            .map(drop)
    }
}

#[async_trait]
impl Layer for FaultInjector {
    /// One call through the rules; the inner layer makes the real call.
    async fn call(&self, cx: &CallCx, call: Call<'_>) -> Result<Reply, ProviderError> {
        let op = call.operation();
        // Account-wide calls (the zone list) name the root: only `any` rules without
        // names apply to them, as to serial.
        let root;
        let zone = match &cx.zone {
            Some(z) => z,
            None => {
                root = Name::parse(".")
                    .map_err(|e| ProviderError::new(ErrorClass::Invalid, e.to_string()))?;
                &root
            }
        };
        let (touch, ops): (Touch<'_>, &[RRSetOp]) = match &call {
            Call::Zones | Call::Serial => (Touch::Nothing, &[]),
            Call::List { names: None } => (Touch::Everything, &[]),
            Call::List { names: Some(ns) } => (Touch::Names(ns.iter().collect()), &[]),
            Call::Apply { ops } => (Touch::Names(ops.iter().map(|o| &o.key.name).collect()), ops),
        };
        let (n, plan) = self.plan(op, &touch, ops);
        tracing::debug!(target: LOG_TARGET, account = %self.account, op = op.as_str(), zone = %zone, call = n, at_ms = self.at_ms() as u64, "Provider call.");
        for (rule, kind) in &plan.fired {
            tracing::info!(
                target: LOG_TARGET,
                account = %self.account,
                rule,
                action = kind.as_str(),
                op = op.as_str(),
                zone = %zone,
                call = n,
                at_ms = self.at_ms() as u64,
                "Fault injected."
            );
        }
        if !plan.writes.is_empty() {
            self.other_writer(cx, zone, &plan.writes).await;
        }
        if !plan.delay_before.is_zero() {
            tokio::time::sleep(plan.delay_before).await;
        }
        let fired = !plan.fired.is_empty();
        let result = match plan.fail {
            Some((error, delay, commit)) => {
                if commit {
                    // The provider does the work; the answer is lost on the way back.
                    let _ = self.inner.call(cx, call).await;
                }
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Err(error)
            }
            None => self.inner.call(cx, call).await,
        };
        if !plan.delay_after.is_zero() {
            tokio::time::sleep(plan.delay_after).await;
        }
        if fired {
            tracing::debug!(target: LOG_TARGET, account = %self.account, call = n, at_ms = self.at_ms() as u64, ok = result.is_ok(), "Faulty call answered.");
        }
        result
    }
}
