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
//!
//! - [`rules`]: the tables, compiled into rules;
//! - [`injector`]: the layer that applies them.
pub mod injector;
pub mod rules;

pub use injector::FaultInjector;
pub use rules::{
    FaultKind, FaultRule, FaultRuleConfig, LOG_TARGET, OpFilter, RecordSpec, compile_rules,
};

#[cfg(test)]
mod tests;
