//! How the planner is doing, as one level and its reasons, from a table of rules.
//!
//! Each [`Rule`] has an id (stable: alerts and scripts match on it), the [`Level`] it
//! raises the planner to and what an operator should do; `docs/reliability.md` shows
//! the same table. [`evaluate`] applies every rule to one [`Snapshot`]: the planner's
//! level is the worst of its reasons (or `syncing` / `healthy` when there are none).
//! Pure: unit-tested here, one test per rule.
use super::snapshot::{Level, Snapshot};
use crate::lease::Role;
use crate::state::RecordStateKind;
use crate::target::Target;

/// One rule of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// Records of a zone are in conflict (owned by another, unowned, ...).
    Conflicts,
    /// A plan waits for `dnsplane approve` (the mass-change guard, or approve mode).
    HeldPlan,
    /// A zone goes to another applier than its own (its own is unhealthy).
    Fallback,
    /// A provider account's circuit is open at an applier.
    CircuitOpen,
    /// The state directory's filesystem is below `[state] min_free_bytes`.
    DiskLow,
    /// The last write of the state directory failed.
    StateWrite,
    /// Audit events cannot be written to `[audit] file` (they are in the log only).
    AuditWrite,
    /// Desired records the sources could not accept.
    SourceErrors,
    /// A source is not ready; its last accepted records are kept.
    SourceNotReady,
    /// The lease backend does not answer: a leader cannot renew, a standby cannot
    /// take over.
    Lease,
    /// No applier is healthy.
    NoApplier,
    /// A zone's last sync failed, or its provider account refuses writes.
    ZoneSync,
    /// The tokens file cannot be used: unreadable or invalid (the tokens read before
    /// stay in force), or deleted (every token is revoked).
    TokensFile,
    /// TLS files (the planner's certificate, its client certificate towards the
    /// appliers) cannot be (re)loaded; the ones in use stay.
    TlsFiles,
    /// Records of a zone are `failed`: transient failures outlived the retries.
    RecordsFailed,
    /// An applier serves another writer of this owner id: this planner sends nothing.
    Fenced,
    /// An applier reports a provider account throttled (429) for longer than its
    /// `[accounts.pacing] degraded_after`.
    Throttled,
}

impl Rule {
    /// Every rule, in the order the docs list them.
    pub const ALL: [Rule; 17] = [
        Rule::Conflicts,
        Rule::HeldPlan,
        Rule::Fallback,
        Rule::CircuitOpen,
        Rule::DiskLow,
        Rule::StateWrite,
        Rule::AuditWrite,
        Rule::SourceErrors,
        Rule::SourceNotReady,
        Rule::Lease,
        Rule::NoApplier,
        Rule::ZoneSync,
        Rule::TokensFile,
        Rule::TlsFiles,
        Rule::RecordsFailed,
        Rule::Fenced,
        Rule::Throttled,
    ];

    /// The id status and alerts show.
    pub fn id(self) -> &'static str {
        match self {
            Rule::Conflicts => "conflicts",
            Rule::HeldPlan => "held_plan",
            Rule::Fallback => "fallback",
            Rule::CircuitOpen => "circuit_open",
            Rule::DiskLow => "disk_low",
            Rule::StateWrite => "state_write",
            Rule::AuditWrite => "audit_write",
            Rule::SourceErrors => "source_errors",
            Rule::SourceNotReady => "source_not_ready",
            Rule::Lease => "lease",
            Rule::NoApplier => "no_applier",
            Rule::ZoneSync => "zone_sync",
            Rule::TokensFile => "tokens_file",
            Rule::TlsFiles => "tls_files",
            Rule::RecordsFailed => "records_failed",
            Rule::Fenced => "fenced",
            Rule::Throttled => "throttled",
        }
    }

    /// The level the rule raises the planner to.
    pub fn level(self) -> Level {
        match self {
            Rule::DiskLow | Rule::StateWrite | Rule::NoApplier | Rule::Fenced => Level::Failing,
            _ => Level::Degraded,
        }
    }
}

/// One reason the planner is not healthy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthReason {
    pub rule: Rule,
    pub level: Level,
    /// The zone it is about, if it is about one.
    pub zone: Option<Target>,
    /// One sentence, with what to do where it is not obvious.
    pub message: String,
}

/// The planner's level and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    pub level: Level,
    /// Every reason, in rule order, then zone order.
    pub reasons: Vec<HealthReason>,
}

impl Health {
    /// The reasons as one line (the `reason` field of `GetStatus`).
    pub fn reason(&self) -> String {
        self.reasons
            .iter()
            .map(|r| r.message.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl Snapshot {
    /// The level and every reason for it.
    pub fn health(&self) -> Health {
        evaluate(self)
    }
}

/// Applies every rule to `s`. Standing by is not degraded by itself (nor "syncing": a
/// standby's zones wait for the lease, they are not behind).
pub fn evaluate(s: &Snapshot) -> Health {
    let mut reasons = Vec::new();
    let mut add = |rule: Rule, zone: Option<&Target>, message: String| {
        reasons.push(HealthReason {
            rule,
            level: rule.level(),
            zone: zone.cloned(),
            message,
        });
    };
    for z in &s.zones {
        let conflicts = z
            .records
            .get(&RecordStateKind::Conflict)
            .copied()
            .unwrap_or(0);
        if conflicts > 0 {
            add(
                Rule::Conflicts,
                Some(&z.target),
                format!(
                    "zone {}: {conflicts} record(s) in conflict; see `dnsplane records --state conflict`",
                    z.target
                ),
            );
        }
        if let Some((h, _)) = &z.held {
            add(
                Rule::HeldPlan,
                Some(&z.target),
                format!(
                    "zone {}: plan HELD ({}); approve with `dnsplane approve {}`",
                    z.target,
                    h.reason,
                    z.target.cli()
                ),
            );
        }
        if let (Some(now), Some(own)) = (&z.applier, &z.own_applier)
            && now != own
        {
            add(
                Rule::Fallback,
                Some(&z.target),
                format!(
                    "zone {}: sent to applier {now}, not its own {own} (unhealthy)",
                    z.target
                ),
            );
        }
        if !z.status.last_error.is_empty() {
            add(
                Rule::ZoneSync,
                Some(&z.target),
                format!("zone {}: {}", z.target, z.status.last_error),
            );
        } else if z.status.rejected {
            add(
                Rule::ZoneSync,
                Some(&z.target),
                format!(
                    "zone {}: provider account {} refuses writes",
                    z.target, z.account
                ),
            );
        }
    }
    for a in s.appliers.iter().filter(|a| a.healthy) {
        for c in &a.open_circuits {
            add(
                Rule::CircuitOpen,
                None,
                format!(
                    "applier {}: account {c} circuit is not closed; its provider calls fail fast",
                    a.addr
                ),
            );
        }
    }
    for a in s.appliers.iter().filter(|a| a.healthy) {
        for why in &a.throttled {
            add(Rule::Throttled, None, format!("applier {}: {why}", a.addr));
        }
    }
    if let Some(d) = &s.disk {
        match &d.free {
            Ok(free) if *free < d.floor => add(
                Rule::DiskLow,
                None,
                format!(
                    "state directory {}: {free} bytes free, below [state] min_free_bytes = {}",
                    d.path, d.floor
                ),
            ),
            Ok(_) => {}
            Err(e) => add(
                Rule::DiskLow,
                None,
                format!("state directory {}: free space cannot be read: {e}", d.path),
            ),
        }
    }
    if let Some(e) = &s.state_write_error {
        add(
            Rule::StateWrite,
            None,
            format!("state directory: the last write failed: {e}"),
        );
    }
    if let Some(e) = &s.audit_error {
        add(
            Rule::AuditWrite,
            None,
            format!("{e}; audit events are in the log only"),
        );
    }
    if !s.source_errors.is_empty() {
        add(
            Rule::SourceErrors,
            None,
            format!(
                "{} source error(s); see source_errors",
                s.source_errors.len()
            ),
        );
    }
    for (name, why) in &s.sources {
        if !why.is_empty() {
            add(
                Rule::SourceNotReady,
                None,
                format!(
                    "source {name} not ready ({}); keeping its last accepted records",
                    why.join("; ")
                ),
            );
        }
    }
    if !s.lease.last_error.is_empty() {
        add(
            Rule::Lease,
            None,
            format!(
                "lease ({} {}): {}",
                s.lease.backend, s.lease.location, s.lease.last_error
            ),
        );
    }
    if let Some(f) = s
        .lease
        .fenced
        .as_ref()
        .filter(|_| s.lease.role == Role::Fenced)
    {
        add(
            Rule::Fenced,
            None,
            format!(
                "lease: fenced by epoch {} (holder {}): {}",
                f.epoch, f.holder, f.message
            ),
        );
    }
    if !s.appliers.is_empty() && !s.appliers.iter().any(|a| a.healthy) {
        add(Rule::NoApplier, None, "no applier is healthy".into());
    }
    if let Some(e) = &s.tokens_error {
        add(Rule::TokensFile, None, e.clone());
    }
    for e in &s.tls_errors {
        add(Rule::TlsFiles, None, e.clone());
    }
    for z in &s.zones {
        let failed = z
            .records
            .get(&RecordStateKind::Failed)
            .copied()
            .unwrap_or(0);
        if failed > 0 {
            add(
                Rule::RecordsFailed,
                Some(&z.target),
                format!(
                    "zone {}: {failed} record(s) failed (transient provider errors outlived the retries; retried on their own clock); see `dnsplane records --state failed`",
                    z.target
                ),
            );
        }
    }
    reasons.sort_by(|a, b| (a.rule, &a.zone).cmp(&(b.rule, &b.zone)));
    let leader = s.lease.role == Role::Leader;
    // Only the first sync and full syncs make the planner "syncing": the per-record
    // re-plans of a few names run all the time and would make the level flap. A zone
    // released to external-dns does not sync, and is not behind.
    let syncing = s.zones.iter().any(|z| {
        z.status.released.is_none()
            && (z.status.full_sync || (leader && !z.status.initial_sync_done))
    });
    let level = reasons.iter().map(|r| r.level).max().unwrap_or(if syncing {
        Level::Syncing
    } else {
        Level::Healthy
    });
    Health { level, reasons }
}

#[cfg(test)]
#[path = "health_tests.rs"]
mod tests;
