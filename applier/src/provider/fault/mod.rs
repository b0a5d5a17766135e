//! Fault injection: a [`Provider`] decorator that makes any driver misbehave the way
//! real providers do, by rule, reproducibly. It is how the tests and chaos runs produce
//! 502-after-commit, rate limits, timeouts, bad credentials, provider-side validation
//! and concurrent writers — against the memory driver now, real drivers later.
//!
//! Enabled per account in the applier config, one `[[accounts.faults]]` table per rule
//! ([`FaultRuleConfig`] documents every field; `docs/reliability.md` has examples):
//!
//! ```toml
//! [[accounts.faults]]
//! op = "apply"                      # apply | list | serial | any (default any)
//! action = "ambiguous_after_commit" # the write commits, the answer is a 502
//! times = 1                         # at most once
//! ```
//!
//! Rules are tried in order on every call. A rule *matches* a call by operation, by
//! the names it touches (`names`) and, for `reject_values`, by the values it carries;
//! the first `skip` matching calls pass; after that it fires with `probability`
//! (drawn from a generator seeded by `seed`, so a run is reproducible) at most `times`
//! times. `latency` and `other_writer` add to the call and let the next rules be tried;
//! every other action decides the answer, and later rules are not tried.
//!
//! Every fault that fires is logged at INFO with target `dnsplane_applier::fault`
//! (with `at_ms`, milliseconds since the account started, so logs prove timings) and
//! counted in `Applier.GetStatus` (`AccountStatus.faults`). Every call the decorator
//! sees is logged at DEBUG with its `at_ms`.
use crate::provider::{Capabilities, ErrorClass, Listing, Operation, Provider, ProviderError};
use async_trait::async_trait;
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The log target of fired faults.
pub const LOG_TARGET: &str = "dnsplane_applier::fault";

/// Which calls a rule applies to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpFilter {
    Apply,
    List,
    Serial,
    #[default]
    Any,
}

impl OpFilter {
    fn matches(self, op: Operation) -> bool {
        match self {
            OpFilter::Any => true,
            OpFilter::Apply => op == Operation::Apply,
            OpFilter::List => op == Operation::List,
            OpFilter::Serial => op == Operation::Serial,
        }
    }
}

/// What a rule does when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The call reaches the provider and commits, then the answer is a 502 (class
    /// ambiguous). Fields: `status` (502), `message`.
    AmbiguousAfterCommit,
    /// 503 before anything is written. Cloud DNS documents its 503 as "rate limited /
    /// backend unavailable, not processed", hence class transient by default (`class`
    /// overrides, e.g. "ambiguous" for providers that promise nothing). Fields:
    /// `status` (503), `class`, `message`, `retry_after`.
    Unavailable,
    /// 429 with a `Retry-After` before anything is written (class transient). Fields:
    /// `retry_after` (1s), `status` (429), `message`.
    RateLimited,
    /// No answer for `delay`, then a timeout (class ambiguous). Fields: `delay` (10s),
    /// `commit` (false: the request never reached the provider), `message`.
    Timeout,
    /// The connection drops mid-request (class ambiguous). Fields: `commit` (false),
    /// `message`.
    Reset,
    /// The call takes `delay` longer; the answer is the provider's. Fields: `delay`
    /// (required), `commit` (false: wait, then call; true: call, then wait before
    /// answering — a batch held in flight after it committed).
    Latency,
    /// A fixed error. Fields: `status` (required), `class` (default: the status's usual
    /// class, e.g. 401 → permanent, see `ErrorClass::for_http_status`), `message`,
    /// `retry_after`, `commit` (false).
    Error,
    /// Provider-side validation: a write carrying any of `values` (canonical spelling)
    /// is refused as invalid, naming the record and the value. Fields: `values`
    /// (required), `status` (422), `message` (a template: `{value}`, `{name}`, `{type}`,
    /// `{status}` are replaced).
    RejectValues,
    /// Another writer changes records just before the call: each of `records` is set
    /// (or, with no `values`, removed) through the provider itself, then the call
    /// proceeds. Fields: `records` (required).
    OtherWriter,
}

impl FaultKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::AmbiguousAfterCommit => "ambiguous_after_commit",
            FaultKind::Unavailable => "unavailable",
            FaultKind::RateLimited => "rate_limited",
            FaultKind::Timeout => "timeout",
            FaultKind::Reset => "reset",
            FaultKind::Latency => "latency",
            FaultKind::Error => "error",
            FaultKind::RejectValues => "reject_values",
            FaultKind::OtherWriter => "other_writer",
        }
    }

    /// The action-specific fields a rule of this kind may set.
    fn allowed(self) -> &'static [&'static str] {
        match self {
            FaultKind::AmbiguousAfterCommit => &["status", "message"],
            FaultKind::Unavailable => &["status", "class", "message", "retry_after"],
            FaultKind::RateLimited => &["status", "message", "retry_after"],
            FaultKind::Timeout => &["delay", "commit", "message"],
            FaultKind::Reset => &["commit", "message"],
            FaultKind::Latency => &["delay", "commit"],
            FaultKind::Error => &["status", "class", "message", "retry_after", "commit"],
            FaultKind::RejectValues => &["values", "status", "message"],
            FaultKind::OtherWriter => &["records"],
        }
    }
}

/// One RRSet another writer puts in place (`values` empty: removes it).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordSpec {
    /// Absolute name, inside one of the account's zones.
    pub name: Name,
    /// Record type, e.g. "A".
    #[serde(rename = "type")]
    pub rtype: RecordType,
    /// TTL of the written RRSet. Default 300.
    #[serde(default = "default_ttl")]
    pub ttl: u32,
    /// The values; none removes the RRSet.
    #[serde(default)]
    pub values: Vec<String>,
}

fn default_ttl() -> u32 {
    300
}

fn default_probability() -> f64 {
    1.0
}

/// One `[[accounts.faults]]` table, as written. [`FaultRuleConfig::compile`] checks it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRuleConfig {
    /// The calls this rule applies to: "apply", "list", "serial" or "any". Default any.
    #[serde(default)]
    pub op: OpFilter,
    /// What happens when the rule fires (see [`FaultKind`]).
    pub action: FaultKind,
    /// Chance that a matching call (past `skip`) fires the rule, 0.0–1.0. Default 1.0.
    #[serde(default = "default_probability")]
    pub probability: f64,
    /// Matching calls that pass untouched before the rule may fire. Default 0.
    #[serde(default)]
    pub skip: u64,
    /// Most times the rule fires. Default: no limit.
    #[serde(default)]
    pub times: Option<u64>,
    /// Only calls touching one of these names match: a write with an op at the name,
    /// a read of the name or of the whole zone. Default: every call.
    #[serde(default)]
    pub names: Vec<Name>,
    /// Seed of the rule's random generator (used by `probability`). Default: the
    /// rule's position in the list, so runs are reproducible either way.
    #[serde(default)]
    pub seed: Option<u64>,
    /// HTTP status the injected answer carries.
    #[serde(default)]
    pub status: Option<u16>,
    /// Error class of an `error` or `unavailable` answer: ambiguous, conflict, invalid,
    /// transient or permanent.
    #[serde(default)]
    pub class: Option<ErrorClass>,
    /// The provider's error text (default: the status line, e.g. "502 Bad Gateway").
    #[serde(default)]
    pub message: Option<String>,
    /// `Retry-After` sent with the answer, e.g. "2s".
    #[serde(default, with = "humantime_serde::option")]
    pub retry_after: Option<Duration>,
    /// How long `timeout` and `latency` hold the call, e.g. "3s".
    #[serde(default, with = "humantime_serde::option")]
    pub delay: Option<Duration>,
    /// Whether the call reaches the provider (and commits) before the fault acts.
    #[serde(default)]
    pub commit: Option<bool>,
    /// Values a `reject_values` rule refuses.
    #[serde(default)]
    pub values: Option<Vec<String>>,
    /// RRSets an `other_writer` rule writes.
    #[serde(default)]
    pub records: Option<Vec<RecordSpec>>,
}

/// A checked rule, ready to run.
#[derive(Clone, Debug)]
pub struct FaultRule {
    op: OpFilter,
    kind: FaultKind,
    probability: f64,
    skip: u64,
    times: Option<u64>,
    names: HashSet<Name>,
    seed: u64,
    action: Action,
}

#[derive(Clone, Debug)]
enum Action {
    /// Answer `error`, after `delay`; with `commit` the inner call runs first.
    Fail {
        error: ProviderError,
        delay: Duration,
        commit: bool,
    },
    Latency {
        delay: Duration,
        commit: bool,
    },
    RejectValues {
        values: HashSet<String>,
        status: u16,
        template: String,
    },
    OtherWriter {
        records: Vec<(RecordKey, Option<RRSet>)>,
    },
}

/// The reason phrase of a status, for default messages.
fn reason_phrase(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        412 => "Precondition Failed",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Error",
    }
}

impl FaultRuleConfig {
    /// Checks the rule against the account's zones and builds it. `index` is the
    /// rule's position (the default seed).
    pub fn compile(&self, index: usize, zones: &[Name]) -> Result<FaultRule, String> {
        let kind = self.kind_checked()?;
        if !(0.0..=1.0).contains(&self.probability) {
            return Err(format!(
                "probability {} is outside 0.0–1.0",
                self.probability
            ));
        }
        if self.times == Some(0) {
            return Err("times = 0 would never fire; remove the rule instead".into());
        }
        for n in &self.names {
            if !zones.iter().any(|z| n.is_within(z)) {
                return Err(format!("names: {n} is in none of the account's zones"));
            }
        }
        let status_line = |status: u16| format!("{status} {}", reason_phrase(status));
        let message = |default: String| self.message.clone().unwrap_or(default);
        let fail = |class: ErrorClass, status: u16, delay: Duration, commit: bool| {
            let mut error = ProviderError::new(class, message(status_line(status)));
            error.retry_after = self.retry_after;
            Action::Fail {
                error,
                delay,
                commit,
            }
        };
        let action = match kind {
            FaultKind::AmbiguousAfterCommit => fail(
                ErrorClass::Ambiguous,
                self.status.unwrap_or(502),
                Duration::ZERO,
                true,
            ),
            FaultKind::Unavailable => fail(
                self.class.unwrap_or(ErrorClass::Transient),
                self.status.unwrap_or(503),
                Duration::ZERO,
                false,
            ),
            FaultKind::RateLimited => {
                let mut a = fail(
                    ErrorClass::Transient,
                    self.status.unwrap_or(429),
                    Duration::ZERO,
                    false,
                );
                if let Action::Fail { error, .. } = &mut a {
                    error.retry_after = Some(self.retry_after.unwrap_or(Duration::from_secs(1)));
                }
                a
            }
            FaultKind::Timeout => {
                let delay = self.delay.unwrap_or(Duration::from_secs(10));
                Action::Fail {
                    error: ProviderError::new(
                        ErrorClass::Ambiguous,
                        message(format!(
                            "timed out after {} waiting for the provider's answer",
                            humantime::format_duration(delay)
                        )),
                    ),
                    delay,
                    commit: self.commit.unwrap_or(false),
                }
            }
            FaultKind::Reset => Action::Fail {
                error: ProviderError::new(
                    ErrorClass::Ambiguous,
                    message("connection reset by peer".into()),
                ),
                delay: Duration::ZERO,
                commit: self.commit.unwrap_or(false),
            },
            FaultKind::Latency => Action::Latency {
                delay: self
                    .delay
                    .ok_or("action latency needs `delay`, e.g. delay = \"2s\"")?,
                commit: self.commit.unwrap_or(false),
            },
            FaultKind::Error => {
                let status = self
                    .status
                    .ok_or("action error needs `status`, e.g. status = 401")?;
                let class = self
                    .class
                    .unwrap_or_else(|| ErrorClass::for_http_status(status));
                fail(class, status, Duration::ZERO, self.commit.unwrap_or(false))
            }
            FaultKind::RejectValues => {
                if self.op != OpFilter::Apply && self.op != OpFilter::Any {
                    return Err("action reject_values only acts on op = \"apply\"".into());
                }
                let values: HashSet<String> = self
                    .values
                    .iter()
                    .flatten()
                    .map(|v| v.to_string())
                    .collect();
                if values.is_empty() {
                    return Err("action reject_values needs a non-empty `values` list".into());
                }
                Action::RejectValues {
                    values,
                    status: self.status.unwrap_or(422),
                    template: self.message.clone().unwrap_or_else(|| {
                        "{status} Unprocessable Entity: {name} {type}: value {value} is not accepted"
                            .into()
                    }),
                }
            }
            FaultKind::OtherWriter => {
                let specs = self.records.as_deref().unwrap_or_default();
                if specs.is_empty() {
                    return Err("action other_writer needs a non-empty `records` list".into());
                }
                let mut records = Vec::new();
                for (i, r) in specs.iter().enumerate() {
                    let at = format!("records[{i}]");
                    let zone = zones
                        .iter()
                        .filter(|z| r.name.is_within(z))
                        .max_by_key(|z| z.as_str().len())
                        .ok_or_else(|| {
                            format!("{at}: {} is in none of the account's zones", r.name)
                        })?;
                    let key = RecordKey::new(zone.clone(), r.name.clone(), r.rtype);
                    let rrset = if r.values.is_empty() {
                        None
                    } else {
                        Some(
                            RRSet::new(key.clone(), r.ttl, &r.values)
                                .map_err(|e| format!("{at}: {e}"))?,
                        )
                    };
                    records.push((key, rrset));
                }
                Action::OtherWriter { records }
            }
        };
        Ok(FaultRule {
            op: self.op,
            kind,
            probability: self.probability,
            skip: self.skip,
            times: self.times,
            names: self.names.iter().cloned().collect(),
            seed: self.seed.unwrap_or(index as u64),
            action,
        })
    }

    /// The action, after checking that no field of another action is set.
    fn kind_checked(&self) -> Result<FaultKind, String> {
        let kind = self.action;
        let set = [
            ("status", self.status.is_some()),
            ("class", self.class.is_some()),
            ("message", self.message.is_some()),
            ("retry_after", self.retry_after.is_some()),
            ("delay", self.delay.is_some()),
            ("commit", self.commit.is_some()),
            ("values", self.values.is_some()),
            ("records", self.records.is_some()),
        ];
        let stray: Vec<&str> = set
            .iter()
            .filter(|(f, on)| *on && !kind.allowed().contains(f))
            .map(|(f, _)| *f)
            .collect();
        if stray.is_empty() {
            Ok(kind)
        } else {
            Err(format!(
                "action {} does not use {} (it takes: {})",
                kind.as_str(),
                stray.join(", "),
                kind.allowed().join(", ")
            ))
        }
    }
}

/// Compiles an account's rules; problems name the rule (`faults[i]`).
pub fn compile_rules(
    rules: &[FaultRuleConfig],
    zones: &[Name],
) -> Result<Vec<FaultRule>, Vec<String>> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (i, r) in rules.iter().enumerate() {
        match r.compile(i, zones) {
            Ok(rule) => out.push(rule),
            Err(p) => problems.push(format!("faults[{i}]: {p}")),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

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

/// A provider that injects faults into the calls to `inner` (see the module docs).
#[derive(Debug)]
pub struct FaultInjector {
    account: String,
    inner: Arc<dyn Provider>,
    rules: Vec<FaultRule>,
    state: Mutex<State>,
    started: Instant,
}

impl FaultInjector {
    pub fn new(
        account: impl Into<String>,
        inner: Arc<dyn Provider>,
        rules: Vec<FaultRule>,
    ) -> Self {
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
                            .map(|v| (o.key.clone(), v.clone()))
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
                        .replace("{value}", &value)
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
    /// what was read as the precondition), straight through the inner provider.
    async fn other_writer(&self, zone: &Name, records: &[(RecordKey, Option<RRSet>)]) {
        let names: Vec<Name> = records.iter().map(|(k, _)| k.name.clone()).collect();
        let current = match self.inner.list(zone, Some(&names)).await {
            Ok(l) => l.rrsets,
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
            return;
        }
        if let Err(e) = self.inner.apply(zone, &ops).await {
            tracing::warn!(target: LOG_TARGET, account = %self.account, error = %e, "The other writer's write failed.");
        }
    }

    /// One call through the rules. `inner` makes the real call.
    async fn call<T, F, Fut>(
        &self,
        op: Operation,
        zone: &Name,
        touch: Touch<'_>,
        ops: &[RRSetOp],
        inner: F,
    ) -> Result<T, ProviderError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let (call, plan) = self.plan(op, &touch, ops);
        tracing::debug!(target: LOG_TARGET, account = %self.account, op = op.as_str(), zone = %zone, call, at_ms = self.at_ms() as u64, "Provider call.");
        for (rule, kind) in &plan.fired {
            tracing::info!(
                target: LOG_TARGET,
                account = %self.account,
                rule,
                action = kind.as_str(),
                op = op.as_str(),
                zone = %zone,
                call,
                at_ms = self.at_ms() as u64,
                "Fault injected."
            );
        }
        if !plan.writes.is_empty() {
            self.other_writer(zone, &plan.writes).await;
        }
        if !plan.delay_before.is_zero() {
            tokio::time::sleep(plan.delay_before).await;
        }
        let fired = !plan.fired.is_empty();
        let result = match plan.fail {
            Some((error, delay, commit)) => {
                if commit {
                    // The provider does the work; the answer is lost on the way back.
                    let _ = inner().await;
                }
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Err(error)
            }
            None => inner().await,
        };
        if !plan.delay_after.is_zero() {
            tokio::time::sleep(plan.delay_after).await;
        }
        if fired {
            tracing::debug!(target: LOG_TARGET, account = %self.account, call, at_ms = self.at_ms() as u64, ok = result.is_ok(), "Faulty call answered.");
        }
        result
    }
}

#[async_trait]
impl Provider for FaultInjector {
    fn driver(&self) -> &'static str {
        self.inner.driver()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    async fn zones(&self) -> Result<Vec<Name>, ProviderError> {
        // Not a zone call: only `any` rules without names apply, as to serial.
        let root = Name::parse(".").expect("the root name");
        self.call(Operation::Zones, &root, Touch::Nothing, &[], || {
            self.inner.zones()
        })
        .await
    }

    async fn serial(&self, zone: &Name) -> Result<Option<u64>, ProviderError> {
        self.call(Operation::Serial, zone, Touch::Nothing, &[], || {
            self.inner.serial(zone)
        })
        .await
    }

    async fn list(&self, zone: &Name, names: Option<&[Name]>) -> Result<Listing, ProviderError> {
        let touch = match names {
            None => Touch::Everything,
            Some(ns) => Touch::Names(ns.iter().collect()),
        };
        self.call(Operation::List, zone, touch, &[], || {
            self.inner.list(zone, names)
        })
        .await
    }

    async fn apply(&self, zone: &Name, ops: &[RRSetOp]) -> Result<(), ProviderError> {
        let touch = Touch::Names(ops.iter().map(|o| &o.key.name).collect());
        self.call(Operation::Apply, zone, touch, ops, || {
            self.inner.apply(zone, ops)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::memory::MemoryProvider;
    use crate::provider::memory::store::MemoryStore;

    fn zone() -> Name {
        Name::parse("example.com").unwrap()
    }

    fn a(label: &str, ip: &str) -> RRSet {
        let key = RecordKey::new(zone(), zone().prepend(label).unwrap(), RecordType::A);
        RRSet::new(key, 60, &[ip]).unwrap()
    }

    #[derive(Deserialize)]
    struct Rules {
        faults: Vec<FaultRuleConfig>,
    }

    fn rules(text: &str) -> Result<Vec<FaultRule>, Vec<String>> {
        let r: Rules = toml::from_str(text).unwrap();
        compile_rules(&r.faults, &[zone()])
    }

    struct Setup {
        faults: FaultInjector,
        memory: MemoryProvider,
        _dir: tempfile::TempDir,
    }

    fn setup(text: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(MemoryStore::open(dir.path()).unwrap());
        let memory = MemoryProvider::new(store, vec![zone()]).unwrap();
        let faults = FaultInjector::new("acct", Arc::new(memory.clone()), rules(text).unwrap());
        Setup {
            faults,
            memory,
            _dir: dir,
        }
    }

    fn count(s: &Setup) -> usize {
        s.memory.store().list(&zone(), None).unwrap().0.len()
    }

    #[test]
    fn rules_are_checked_and_problems_name_the_rule() {
        for (text, want) in [
            ("action = \"latency\"", "needs `delay`"),
            ("action = \"error\"", "needs `status`"),
            ("action = \"reject_values\"", "non-empty `values`"),
            ("action = \"other_writer\"", "non-empty `records`"),
            (
                "action = \"latency\"\ndelay = \"1s\"\nstatus = 500",
                "does not use status",
            ),
            (
                "action = \"rate_limited\"\ncommit = true",
                "does not use commit",
            ),
            ("action = \"reset\"\nprobability = 1.5", "probability 1.5"),
            ("action = \"reset\"\ntimes = 0", "never fire"),
            (
                "action = \"reset\"\nnames = [\"www.example.org.\"]",
                "none of the account's zones",
            ),
            (
                "action = \"reject_values\"\nop = \"list\"\nvalues = [\"x\"]",
                "only acts on op",
            ),
            (
                "action = \"other_writer\"\nrecords = [{ name = \"a.example.com.\", type = \"A\", values = [\"300.1.1.1\"] }]",
                "records[0]",
            ),
        ] {
            // The second rule is the bad one.
            let problems = match rules(&format!(
                "[[faults]]\naction = \"reset\"\n[[faults]]\n{text}"
            )) {
                Ok(_) => panic!("{text}: accepted"),
                Err(p) => p.join("; "),
            };
            assert!(problems.starts_with("faults[1]: "), "{text}: {problems}");
            assert!(
                problems.contains(want),
                "{text}: {want:?} not in {problems}"
            );
        }
        // Unknown fields and actions are refused by the parser itself.
        for text in ["action = \"reset\"\nretry = 2", "action = \"explode\""] {
            let r: Result<Rules, _> = toml::from_str(&format!("[[faults]]\n{text}"));
            assert!(r.is_err(), "{text}");
        }
    }

    #[tokio::test]
    async fn ambiguous_after_commit_commits_then_answers_502() {
        let s =
            setup("[[faults]]\nop = \"apply\"\naction = \"ambiguous_after_commit\"\ntimes = 1\n");
        let e = s
            .faults
            .apply(&zone(), &[RRSetOp::create(a("h", "192.0.2.1"))])
            .await
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::Ambiguous);
        assert_eq!(e.message, "502 Bad Gateway");
        assert_eq!(count(&s), 1, "the write committed");
        // At most once.
        s.faults
            .apply(&zone(), &[RRSetOp::create(a("i", "192.0.2.1"))])
            .await
            .unwrap();
        assert_eq!(
            s.faults.fired(),
            BTreeMap::from([("ambiguous_after_commit", 1)])
        );
    }

    #[tokio::test]
    async fn errors_before_commit_write_nothing_and_carry_their_class() {
        let s = setup(
            "[[faults]]\nop = \"apply\"\naction = \"unavailable\"\ntimes = 1\n\
             [[faults]]\nop = \"apply\"\naction = \"rate_limited\"\nretry_after = \"2s\"\ntimes = 1\n\
             [[faults]]\nop = \"apply\"\naction = \"error\"\nstatus = 401\nmessage = \"401 Unauthorized: bad key\"\ntimes = 1\n\
             [[faults]]\nop = \"apply\"\naction = \"reset\"\ntimes = 1\n",
        );
        let op = [RRSetOp::create(a("h", "192.0.2.1"))];
        let mut seen = Vec::new();
        for _ in 0..4 {
            let e = s.faults.apply(&zone(), &op).await.unwrap_err();
            seen.push((e.class, e.message, e.retry_after));
        }
        assert_eq!(
            seen,
            vec![
                (
                    ErrorClass::Transient,
                    "503 Service Unavailable".to_string(),
                    None
                ),
                (
                    ErrorClass::Transient,
                    "429 Too Many Requests".to_string(),
                    Some(Duration::from_secs(2))
                ),
                (
                    ErrorClass::Permanent,
                    "401 Unauthorized: bad key".to_string(),
                    None
                ),
                (
                    ErrorClass::Ambiguous,
                    "connection reset by peer".to_string(),
                    None
                ),
            ]
        );
        assert_eq!(count(&s), 0, "nothing was written");
        s.faults.apply(&zone(), &op).await.unwrap();
        assert_eq!(count(&s), 1);
        assert_eq!(s.faults.fired().values().sum::<u64>(), 4);
    }

    #[tokio::test]
    async fn ops_names_and_skip_choose_the_calls() {
        let s = setup(
            "[[faults]]\nop = \"list\"\naction = \"reset\"\nnames = [\"www.example.com.\"]\nskip = 1\n",
        );
        let www = [Name::parse("www.example.com").unwrap()];
        let other = [Name::parse("other.example.com").unwrap()];
        // Writes and serials never match a list rule.
        s.faults
            .apply(&zone(), &[RRSetOp::create(a("www", "192.0.2.1"))])
            .await
            .unwrap();
        s.faults.serial(&zone()).await.unwrap();
        // Reads of other names do not match; the first matching read is skipped.
        s.faults.list(&zone(), Some(&other)).await.unwrap();
        s.faults.list(&zone(), Some(&www)).await.unwrap();
        assert!(s.faults.list(&zone(), Some(&www)).await.is_err());
        // A whole-zone read touches every name.
        assert!(s.faults.list(&zone(), None).await.is_err());
        assert_eq!(s.faults.fired().get("reset"), Some(&2));
    }

    #[tokio::test]
    async fn probability_is_reproducible_from_the_seed() {
        let pattern = |seed: u64| async move {
            let s = setup(&format!(
                "[[faults]]\nop = \"serial\"\naction = \"reset\"\nprobability = 0.3\nseed = {seed}\n"
            ));
            let mut fired = Vec::new();
            for _ in 0..200 {
                fired.push(s.faults.serial(&zone()).await.is_err());
            }
            fired
        };
        let a = pattern(11).await;
        assert_eq!(a, pattern(11).await, "same seed, same faults");
        assert_ne!(a, pattern(12).await, "another seed, other faults");
        let n = a.iter().filter(|f| **f).count();
        assert!((30..=90).contains(&n), "about 30 % of 200 fired: {n}");
    }

    #[tokio::test]
    async fn reject_values_names_the_record_and_the_value() {
        let s = setup("[[faults]]\naction = \"reject_values\"\nvalues = [\"203.0.113.66\"]\n");
        let good = RRSetOp::create(a("ok", "192.0.2.1"));
        let bad = RRSetOp::create(a("bad", "203.0.113.66"));
        let e = s
            .faults
            .apply(&zone(), &[good.clone(), bad.clone()])
            .await
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::Invalid);
        assert_eq!(
            e.message,
            "422 Unprocessable Entity: bad.example.com. A: value 203.0.113.66 is not accepted"
        );
        assert_eq!(e.key, Some(bad.key.clone()));
        assert_eq!(count(&s), 0);
        s.faults.apply(&zone(), &[good]).await.unwrap();
        assert_eq!(count(&s), 1, "calls without the value pass");
    }

    #[tokio::test]
    async fn another_writer_writes_first_then_the_call_proceeds() {
        let s = setup(
            "[[faults]]\nop = \"apply\"\naction = \"other_writer\"\ntimes = 1\n\
             records = [{ name = \"taken.example.com.\", type = \"A\", values = [\"198.51.100.7\"] },\n\
                        { name = \"gone.example.com.\", type = \"A\" }]\n",
        );
        s.memory
            .store()
            .apply(&zone(), &[RRSetOp::create(a("gone", "192.0.2.9"))])
            .unwrap();
        let e = s
            .faults
            .apply(&zone(), &[RRSetOp::create(a("taken", "192.0.2.1"))])
            .await
            .unwrap_err();
        assert_eq!(
            e.class,
            ErrorClass::Conflict,
            "the write found the other writer's record"
        );
        let all = s.memory.store().list(&zone(), None).unwrap().0;
        let key = a("taken", "198.51.100.7").key;
        assert_eq!(all, vec![RRSet::new(key, 300, &["198.51.100.7"]).unwrap()]);
    }

    #[tokio::test(start_paused = true)]
    async fn latency_and_timeout_hold_the_call() {
        let s = setup(
            "[[faults]]\nop = \"apply\"\naction = \"latency\"\ndelay = \"3s\"\ncommit = true\ntimes = 1\n\
             [[faults]]\nop = \"serial\"\naction = \"timeout\"\ndelay = \"5s\"\n",
        );
        let start = Instant::now();
        s.faults
            .apply(&zone(), &[RRSetOp::create(a("h", "192.0.2.1"))])
            .await
            .unwrap();
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        let start = Instant::now();
        let e = s.faults.serial(&zone()).await.unwrap_err();
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        assert_eq!(e.class, ErrorClass::Ambiguous);
        assert_eq!(
            e.message,
            "timed out after 5s waiting for the provider's answer"
        );
    }
}
