//! Fault rules: the `[[accounts.faults]]` tables ([`FaultRuleConfig`]), checked and
//! compiled against the account's zones into [`FaultRule`]s, and what each decides.
use crate::provider::{ErrorClass, Operation, ProviderError};
use dnsplane_common::{Name, RRSet, RecordKey, RecordType};
use serde::Deserialize;
use std::collections::HashSet;
use std::time::Duration;

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
    pub(super) fn matches(self, op: Operation) -> bool {
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
    pub(super) op: OpFilter,
    pub(super) kind: FaultKind,
    pub(super) probability: f64,
    pub(super) skip: u64,
    pub(super) times: Option<u64>,
    pub(super) names: HashSet<Name>,
    pub(super) seed: u64,
    pub(super) action: Action,
}

#[derive(Clone, Debug)]
pub(super) enum Action {
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
            // A 429, or a rule that says "rate limited": the provider's "too many".
            error.throttled = status == 429 || kind == FaultKind::RateLimited;
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
