//! Opt-in fault rules, shaped like dnsplane's applier fault rules, shared by every
//! emulator. A rule names an `action`, the calls it applies to (`op`, `zone`), and
//! when it fires (`skip`, `probability` with a `seed`, `times`):
//!
//! ```toml
//! [[faults]]
//! action = "ambiguous_after_commit" # the change commits, then the answer is a 502
//! op = "change"                     # the emulator's operation names, or "any"
//! times = 1
//! ```
//!
//! Rules are tried in order on every call. A rule *matches* a call by `op` and, when
//! set, by `zone` (the zone's id or name, as the emulator spells them); the first
//! `skip` matching calls pass; after that it fires with `probability` (drawn from a
//! generator seeded by `seed`, default the rule's position, so a run is reproducible)
//! at most `times` times. `latency` and `pending_forever` add to the call and let the
//! next rules be tried; every other action decides the answer, and later rules are not
//! tried.
//!
//! This module decides; each emulator answers in its provider's words (its throttling
//! code, its error body). [`FaultSet::decide`] returns a [`Decision`] for one call.
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::time::Duration;

/// What a rule does when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultAction {
    /// The call is carried out (a change commits), then the answer is an error: 502 by
    /// default, or `status` (503, 504), in the provider's usual error body; `code` and
    /// `message` override the body.
    AmbiguousAfterCommit,
    /// The request is held `delay` (default 10s), then the connection is dropped
    /// without an answer. `commit` (default false) says whether the call was carried
    /// out first.
    Timeout,
    /// The answer is the provider's, `delay` later. With `commit` the call is carried
    /// out first and the answer held; without it the call waits, then runs.
    Latency,
    /// The provider's throttling answer (Route 53: HTTP 400 `Throttling` "Rate
    /// exceeded"); nothing is done. `status`, `code`, `message`, `retry_after` override.
    Throttle,
    /// Route 53's HTTP 400 `PriorRequestNotComplete`; nothing is done.
    PriorRequestNotComplete,
    /// Changes made by matching calls never leave PENDING (or the provider's pending
    /// state). The call itself is answered normally.
    PendingForever,
    /// Any error: `status` (default 500), `code`, `message`, `retry_after`; nothing is
    /// done.
    Error,
}

impl FaultAction {
    pub fn as_str(self) -> &'static str {
        match self {
            FaultAction::AmbiguousAfterCommit => "ambiguous_after_commit",
            FaultAction::Timeout => "timeout",
            FaultAction::Latency => "latency",
            FaultAction::Throttle => "throttle",
            FaultAction::PriorRequestNotComplete => "prior_request_not_complete",
            FaultAction::PendingForever => "pending_forever",
            FaultAction::Error => "error",
        }
    }

    /// Whether the action adds to the call and lets later rules be tried.
    fn is_modifier(self) -> bool {
        matches!(self, FaultAction::Latency | FaultAction::PendingForever)
    }

    /// The action-specific fields a rule of this kind may set.
    fn allowed(self) -> &'static [&'static str] {
        match self {
            FaultAction::AmbiguousAfterCommit => &["status", "code", "message"],
            FaultAction::Timeout => &["delay", "commit"],
            FaultAction::Latency => &["delay", "commit"],
            FaultAction::Throttle => &["status", "code", "message", "retry_after"],
            FaultAction::PriorRequestNotComplete => &["status", "code", "message", "retry_after"],
            FaultAction::PendingForever => &[],
            FaultAction::Error => &["status", "code", "message", "retry_after"],
        }
    }
}

fn default_op() -> String {
    "any".to_string()
}

fn default_probability() -> f64 {
    1.0
}

/// One fault rule, as written in TOML (`[[faults]]`) or JSON (the control API).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRule {
    /// What happens when the rule fires.
    pub action: FaultAction,
    /// The calls it applies to: one of the emulator's operation names (Route 53:
    /// `change`, `list_rrsets`, `get_change`, `zones`), or `any` (the default).
    #[serde(default = "default_op")]
    pub op: String,
    /// Only calls on this zone match: its id (with or without the provider's prefix)
    /// or its name (with or without the trailing dot). Default: every call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Chance that a matching call (past `skip`) fires the rule, 0.0–1.0. Default 1.
    #[serde(default = "default_probability")]
    pub probability: f64,
    /// Matching calls that pass untouched before the rule may fire. Default 0.
    #[serde(default)]
    pub skip: u64,
    /// Most times the rule fires. Default: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u64>,
    /// Seed of the rule's generator (used by `probability`). Default: the rule's
    /// position among the emulator's rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// How long `timeout` and `latency` hold the call, e.g. "3s" or "250ms".
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub delay: Option<Duration>,
    /// HTTP status of the injected answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The provider's error code in the injected answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The provider's error message in the injected answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A `Retry-After` header on the injected answer, e.g. "2s" (whole seconds).
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub retry_after: Option<Duration>,
    /// Whether the call is carried out before the fault acts (`timeout`, `latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<bool>,
}

impl FaultRule {
    /// A rule with every optional field at its default.
    pub fn new(action: FaultAction) -> FaultRule {
        FaultRule {
            action,
            op: default_op(),
            zone: None,
            probability: 1.0,
            skip: 0,
            times: None,
            seed: None,
            delay: None,
            status: None,
            code: None,
            message: None,
            retry_after: None,
            commit: None,
        }
    }

    /// Restricts the rule to one operation name.
    pub fn op(mut self, op: &str) -> FaultRule {
        self.op = op.to_string();
        self
    }

    /// Restricts the rule to one zone (id or name).
    pub fn zone(mut self, zone: &str) -> FaultRule {
        self.zone = Some(zone.to_string());
        self
    }

    /// Fires at most `n` times.
    pub fn times(mut self, n: u64) -> FaultRule {
        self.times = Some(n);
        self
    }

    /// Lets the first `n` matching calls pass.
    pub fn skip(mut self, n: u64) -> FaultRule {
        self.skip = n;
        self
    }

    /// Sets `delay`.
    pub fn delay(mut self, d: Duration) -> FaultRule {
        self.delay = Some(d);
        self
    }

    /// Sets `commit`.
    pub fn commit(mut self, commit: bool) -> FaultRule {
        self.commit = Some(commit);
        self
    }

    /// Sets `status`.
    pub fn status(mut self, status: u16) -> FaultRule {
        self.status = Some(status);
        self
    }

    /// [`validate`](Self::validate) for an emulator of a provider other than Route 53
    /// (`provider` names it in the message): Route 53's own answers
    /// (`prior_request_not_complete`, `pending_forever`) are refused.
    pub fn validate_off_route53(&self, ops: &[&str], provider: &str) -> Result<(), String> {
        self.validate(ops)?;
        if matches!(
            self.action,
            FaultAction::PriorRequestNotComplete | FaultAction::PendingForever
        ) {
            return Err(format!(
                "action: {} is Route 53's; {provider} has no such answer",
                self.action.as_str()
            ));
        }
        Ok(())
    }

    /// Checks the rule against an emulator's operation names.
    pub fn validate(&self, ops: &[&str]) -> Result<(), String> {
        if self.op != "any" && !ops.contains(&self.op.as_str()) {
            return Err(format!(
                "op: {:?} is not one of {}, any",
                self.op,
                ops.join(", ")
            ));
        }
        if !(0.0..=1.0).contains(&self.probability) {
            return Err(format!(
                "probability: {} is outside 0.0–1.0",
                self.probability
            ));
        }
        if self.times == Some(0) {
            return Err("times: 0 would never fire; remove the rule instead".into());
        }
        if let Some(status) = self.status
            && !(100..=599).contains(&status)
        {
            return Err(format!("status: {status} is not an HTTP status"));
        }
        if self.action == FaultAction::AmbiguousAfterCommit
            && let Some(status) = self.status
            && !(500..=599).contains(&status)
        {
            return Err(format!(
                "status: ambiguous_after_commit answers a 5xx (502, 503, 504), not {status}"
            ));
        }
        if self.action == FaultAction::Latency && self.delay.is_none() {
            return Err("delay: action latency needs a delay, e.g. delay = \"2s\"".into());
        }
        let set = [
            ("delay", self.delay.is_some()),
            ("status", self.status.is_some()),
            ("code", self.code.is_some()),
            ("message", self.message.is_some()),
            ("retry_after", self.retry_after.is_some()),
            ("commit", self.commit.is_some()),
        ];
        let stray: Vec<&str> = set
            .iter()
            .filter(|(f, on)| *on && !self.action.allowed().contains(f))
            .map(|(f, _)| *f)
            .collect();
        if !stray.is_empty() {
            let allowed = self.action.allowed();
            return Err(format!(
                "action {} does not use {} (it takes: {})",
                self.action.as_str(),
                stray.join(", "),
                if allowed.is_empty() {
                    "nothing beyond op, zone, probability, skip, times, seed".to_string()
                } else {
                    allowed.join(", ")
                }
            ));
        }
        Ok(())
    }

    fn matches(&self, call: &Call<'_>) -> bool {
        if self.op != "any" && self.op != call.op {
            return false;
        }
        match &self.zone {
            None => true,
            Some(z) => {
                let want = normalize_zone_ref(z);
                call.zone.iter().any(|k| normalize_zone_ref(k) == want)
            }
        }
    }
}

fn normalize_zone_ref(s: &str) -> String {
    s.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// One call as the fault rules see it.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// The emulator's operation name.
    pub op: &'a str,
    /// The spellings of the zone the call is on (id, prefixed id, name), if any.
    pub zone: &'a [&'a str],
}

/// What the rules decided for one call.
#[derive(Clone, Debug, Default)]
pub struct Decision {
    /// Held before the call is carried out.
    pub delay_before: Duration,
    /// Held after the call is carried out, before the answer.
    pub delay_after: Duration,
    /// Changes made by the call never leave the pending state.
    pub pending_forever: bool,
    /// The rule that decides the answer, if any (with defaults still unset: each
    /// emulator fills them in its provider's words).
    pub terminal: Option<FaultRule>,
    /// The actions that fired, in order (for stats and logs).
    pub fired: Vec<FaultAction>,
}

/// A rule with its counters and generator.
#[derive(Debug)]
struct Active {
    rule: FaultRule,
    matched: u64,
    fired: u64,
    rng: StdRng,
}

/// A rule and how often it matched and fired (the control API lists these).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RuleStatus {
    #[serde(flatten)]
    pub rule: FaultRule,
    pub matched: u64,
    pub fired: u64,
}

/// The rules of one emulator. Adding a rule keeps the earlier rules' counters.
#[derive(Debug, Default)]
pub struct FaultSet {
    rules: Mutex<Vec<Active>>,
    /// Rules ever added, so a rule's default seed is its position since start.
    added: Mutex<u64>,
}

impl FaultSet {
    pub fn new(rules: Vec<FaultRule>) -> FaultSet {
        let set = FaultSet::default();
        for r in rules {
            set.add(r);
        }
        set
    }

    /// Appends a rule (checked by the caller with [`FaultRule::validate`]).
    pub fn add(&self, rule: FaultRule) {
        let mut added = self.added.lock().unwrap_or_else(|e| e.into_inner());
        let seed = rule.seed.unwrap_or(*added);
        *added += 1;
        self.rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Active {
                rule,
                matched: 0,
                fired: 0,
                rng: StdRng::seed_from_u64(seed),
            });
    }

    /// Removes every rule.
    pub fn clear(&self) {
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The rules with their counters.
    pub fn status(&self) -> Vec<RuleStatus> {
        self.rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|a| RuleStatus {
                rule: a.rule.clone(),
                matched: a.matched,
                fired: a.fired,
            })
            .collect()
    }

    /// Runs the rules for one call.
    pub fn decide(&self, call: Call<'_>) -> Decision {
        let mut d = Decision::default();
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        for a in rules.iter_mut() {
            if !a.rule.matches(&call) {
                continue;
            }
            a.matched += 1;
            if a.matched <= a.rule.skip {
                continue;
            }
            if a.rule.times.is_some_and(|t| a.fired >= t) {
                continue;
            }
            if a.rule.probability < 1.0 && a.rng.random::<f64>() >= a.rule.probability {
                continue;
            }
            a.fired += 1;
            d.fired.push(a.rule.action);
            match a.rule.action {
                FaultAction::Latency => {
                    let delay = a.rule.delay.unwrap_or_default();
                    if a.rule.commit.unwrap_or(false) {
                        d.delay_after += delay;
                    } else {
                        d.delay_before += delay;
                    }
                }
                FaultAction::PendingForever => d.pending_forever = true,
                action => {
                    debug_assert!(!action.is_modifier());
                    d.terminal = Some(a.rule.clone());
                    break;
                }
            }
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPS: &[&str] = &["change", "list_rrsets"];

    fn call<'a>(op: &'a str, zone: &'a [&'a str]) -> Call<'a> {
        Call { op, zone }
    }

    #[test]
    fn parses_toml_and_json_with_defaults() {
        #[derive(Deserialize)]
        struct File {
            faults: Vec<FaultRule>,
        }
        let f: File = toml::from_str(
            "[[faults]]\naction = \"timeout\"\nop = \"change\"\ndelay = \"250ms\"\ncommit = true\ntimes = 2\n\
             [[faults]]\naction = \"throttle\"\nprobability = 0.5\nseed = 7\nretry_after = \"2s\"\n",
        )
        .unwrap();
        assert_eq!(f.faults[0].delay, Some(Duration::from_millis(250)));
        assert_eq!(f.faults[0].commit, Some(true));
        assert_eq!(f.faults[1].op, "any");
        assert_eq!(f.faults[1].retry_after, Some(Duration::from_secs(2)));
        let j: FaultRule =
            serde_json::from_str(r#"{"action":"error","status":503,"code":"X","skip":1}"#).unwrap();
        assert_eq!(j.status, Some(503));
        assert_eq!(j.probability, 1.0);
        assert!(serde_json::from_str::<FaultRule>(r#"{"action":"error","statsu":1}"#).is_err());
        // A rule survives a JSON round trip (the control API lists rules as JSON).
        let back: FaultRule =
            serde_json::from_str(&serde_json::to_string(&f.faults[0]).unwrap()).unwrap();
        assert_eq!(back, f.faults[0]);
    }

    #[test]
    fn validation_names_the_field() {
        let bad = FaultRule::new(FaultAction::Throttle).op("chnage");
        assert!(bad.validate(OPS).unwrap_err().starts_with("op:"));
        let mut p = FaultRule::new(FaultAction::Error);
        p.probability = 1.5;
        assert!(p.validate(OPS).unwrap_err().starts_with("probability:"));
        let stray = FaultRule::new(FaultAction::PendingForever).delay(Duration::from_secs(1));
        assert!(
            stray
                .validate(OPS)
                .unwrap_err()
                .contains("does not use delay")
        );
        assert!(
            FaultRule::new(FaultAction::Latency)
                .validate(OPS)
                .unwrap_err()
                .starts_with("delay:")
        );
        assert!(
            FaultRule::new(FaultAction::AmbiguousAfterCommit)
                .status(400)
                .validate(OPS)
                .is_err()
        );
        assert!(FaultRule::new(FaultAction::Timeout).validate(OPS).is_ok());
    }

    #[test]
    fn skip_times_op_and_zone() {
        let set = FaultSet::new(vec![
            FaultRule::new(FaultAction::Throttle)
                .op("change")
                .zone("example.com.")
                .skip(1)
                .times(2),
        ]);
        let z: &[&str] = &["Z1", "example.com"];
        let other: &[&str] = &["Z2", "other.com"];
        assert!(set.decide(call("list_rrsets", z)).terminal.is_none());
        assert!(set.decide(call("change", other)).terminal.is_none());
        assert!(set.decide(call("change", z)).terminal.is_none(), "skipped");
        assert!(set.decide(call("change", z)).terminal.is_some());
        assert!(set.decide(call("change", z)).terminal.is_some());
        assert!(
            set.decide(call("change", z)).terminal.is_none(),
            "times spent"
        );
        let st = set.status();
        assert_eq!((st[0].matched, st[0].fired), (4, 2));
    }

    #[test]
    fn modifiers_add_up_and_later_rules_still_run() {
        let set = FaultSet::new(vec![
            FaultRule::new(FaultAction::Latency).delay(Duration::from_millis(100)),
            FaultRule::new(FaultAction::Latency)
                .delay(Duration::from_millis(50))
                .commit(true),
            FaultRule::new(FaultAction::PendingForever),
            FaultRule::new(FaultAction::Error),
            FaultRule::new(FaultAction::Throttle),
        ]);
        let d = set.decide(call("change", &[]));
        assert_eq!(d.delay_before, Duration::from_millis(100));
        assert_eq!(d.delay_after, Duration::from_millis(50));
        assert!(d.pending_forever);
        assert_eq!(d.terminal.unwrap().action, FaultAction::Error);
        assert_eq!(
            d.fired.len(),
            4,
            "the throttle after the error is not tried"
        );
    }

    #[test]
    fn probability_is_reproducible_with_a_seed() {
        let run = |seed| {
            let mut r = FaultRule::new(FaultAction::Error);
            r.probability = 0.3;
            r.seed = Some(seed);
            let set = FaultSet::new(vec![r]);
            (0..200)
                .map(|_| set.decide(call("change", &[])).terminal.is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(42), run(42));
        assert_ne!(run(42), run(43));
        let fired = run(42).iter().filter(|f| **f).count();
        assert!((30..=90).contains(&fired), "about 30% of 200: {fired}");
    }
}
