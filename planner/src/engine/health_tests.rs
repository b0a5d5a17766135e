//! One test per rule of [`super`]: each rule raises the level it says, names its
//! zone, and goes away when its cause does.
use super::*;
use crate::config::{Policy, SafetyMode};
use crate::engine::snapshot::{ApplierSnapshot, DiskStatus, ZoneSnapshot, ZoneStatus};
use crate::guard::HeldPlan;
use crate::lease::LeaseStatus;
use crate::source::SourceError;
use dnsplane_common::Name;
use std::time::SystemTime;

fn zone(name: &str) -> ZoneSnapshot {
    ZoneSnapshot {
        target: Target::new(Name::parse(name).unwrap(), "a", false),
        name: Name::parse(name).unwrap(),
        account: "a".into(),
        policy: Policy::Sync,
        status: ZoneStatus {
            initial_sync_done: true,
            ..ZoneStatus::default()
        },
        records: Default::default(),
        desired_records: 0,
        observed_records: 0,
        next_retry: None,
        applier: Some("http://a1".into()),
        held: None,
        own_applier: Some("http://a1".into()),
    }
}

fn applier(addr: &str) -> ApplierSnapshot {
    ApplierSnapshot {
        addr: addr.into(),
        healthy: true,
        last_error: String::new(),
        open_circuits: Vec::new(),
        throttled: Vec::new(),
    }
}

/// A healthy leader with one zone and one applier.
fn healthy() -> Snapshot {
    Snapshot {
        zones: vec![zone("example.com")],
        appliers: vec![applier("http://a1")],
        source_errors: Vec::new(),
        source_notices: Vec::new(),
        sources: Vec::new(),
        source_parts: Default::default(),
        lease: LeaseStatus {
            role: Role::Leader,
            backend: "none",
            location: String::new(),
            identity: "me".into(),
            holder: Some("me".into()),
            epoch: 1,
            since: SystemTime::UNIX_EPOCH,
            last_error: String::new(),
            fenced: None,
        },
        disk: Some(DiskStatus {
            path: "/state".into(),
            free: Ok(1 << 30),
            floor: 100 << 20,
        }),
        state_write_error: None,
        mode: SafetyMode::Automatic,
        audit_error: None,
        tokens_error: None,
        tls_errors: Vec::new(),
    }
}

/// `s` has exactly one reason, of `rule`, at the rule's level, which is the
/// planner's.
fn only(s: &Snapshot, rule: Rule, zone: Option<&str>) -> HealthReason {
    let h = evaluate(s);
    assert_eq!(h.reasons.len(), 1, "{h:?}");
    let r = h.reasons[0].clone();
    assert_eq!(r.rule, rule, "{h:?}");
    assert_eq!(r.level, rule.level());
    assert_eq!(h.level, rule.level());
    assert_eq!(r.zone.as_ref().map(|t| t.zone.as_str()), zone);
    assert_eq!(h.reason(), r.message);
    r
}

/// [`only`], which must be at `level` and say `says`.
fn only_at(s: &Snapshot, rule: Rule, zone: Option<&str>, level: Level, says: &str) {
    let r = only(s, rule, zone);
    assert_eq!(r.level, level, "{r:?}");
    assert!(r.message.contains(says), "{r:?}");
}

#[test]
fn healthy_has_no_reasons() {
    let h = evaluate(&healthy());
    assert_eq!((h.level, h.reasons.len()), (Level::Healthy, 0));
}

#[test]
fn conflicts_degrade_and_name_the_zone() {
    let mut s = healthy();
    s.zones[0].records.insert(RecordStateKind::Conflict, 3);
    let r = only(&s, Rule::Conflicts, Some("example.com."));
    assert!(
        r.message.contains("3 record(s) in conflict"),
        "{}",
        r.message
    );
    assert_eq!(r.level, Level::Degraded);
}

#[test]
fn a_held_plan_degrades() {
    let mut s = healthy();
    let plan = HeldPlan {
        digest: "d".into(),
        creates: 0,
        deletes: 5,
        updates: 0,
        apex_ns: 0,
        owned: 10,
        items: Vec::new(),
        reason: "too many deletes".into(),
    };
    s.zones[0].held = Some((plan, SystemTime::UNIX_EPOCH));
    let r = only(&s, Rule::HeldPlan, Some("example.com."));
    assert!(
        r.message.contains("dnsplane approve example.com."),
        "{}",
        r.message
    );
}

#[test]
fn a_fallback_applier_degrades() {
    let mut s = healthy();
    s.zones[0].applier = Some("http://a2".into());
    let r = only(&s, Rule::Fallback, Some("example.com."));
    assert!(r.message.contains("http://a2") && r.message.contains("http://a1"));
}

#[test]
fn an_open_circuit_degrades_unless_its_applier_is_down() {
    let mut s = healthy();
    s.appliers[0].open_circuits = vec!["pdns (open)".into()];
    let r = only(&s, Rule::CircuitOpen, None);
    assert!(r.message.contains("pdns (open)"), "{}", r.message);
    // An unhealthy applier's circuits are stale: no_applier speaks instead.
    s.appliers[0].healthy = false;
    only(&s, Rule::NoApplier, None);
}

#[test]
fn a_throttled_account_degrades_unless_its_applier_is_down() {
    let mut s = healthy();
    s.appliers[0].throttled = vec!["account pdns: throttled by its provider (429) for 75s".into()];
    let r = only(&s, Rule::Throttled, None);
    assert_eq!(r.level, Level::Degraded);
    assert!(
        r.message.contains("http://a1") && r.message.contains("account pdns: throttled"),
        "{}",
        r.message
    );
    s.appliers[0].healthy = false;
    only(&s, Rule::NoApplier, None);
}

#[test]
fn a_disk_below_the_floor_fails() {
    let mut s = healthy();
    s.disk.as_mut().unwrap().free = Ok(1 << 20);
    only_at(&s, Rule::DiskLow, None, Level::Failing, "min_free_bytes");
    s.disk.as_mut().unwrap().free = Err("no such directory".into());
    let r = only(&s, Rule::DiskLow, None);
    assert!(r.message.contains("no such directory"), "{}", r.message);
    // Without a state directory there is nothing to measure.
    s.disk = None;
    assert_eq!(evaluate(&s).level, Level::Healthy);
}

#[test]
fn a_failed_state_write_fails() {
    let mut s = healthy();
    s.state_write_error = Some("/state/desired/x.json: no space left".into());
    let r = only(&s, Rule::StateWrite, None);
    assert_eq!(r.level, Level::Failing);
}

#[test]
fn a_failed_audit_write_degrades() {
    let mut s = healthy();
    s.audit_error = Some("audit file /var/log/dnsplane/audit.jsonl: permission denied".into());
    only_at(
        &s,
        Rule::AuditWrite,
        None,
        Level::Degraded,
        "in the log only",
    );
}

#[test]
fn source_errors_and_unready_sources_degrade() {
    let mut s = healthy();
    s.source_errors = vec![SourceError {
        source: "file:x".into(),
        location: "x.yaml:3".into(),
        record: "a".into(),
        message: "bad".into(),
    }];
    only(&s, Rule::SourceErrors, None);
    s.source_errors.clear();
    s.sources = vec![("file:x".into(), vec!["gone".into()])];
    let r = only(&s, Rule::SourceNotReady, None);
    assert!(r.message.contains("gone"), "{}", r.message);
}

#[test]
fn a_lease_backend_error_degrades() {
    let mut s = healthy();
    s.lease.last_error = "redis: connection refused".into();
    only(&s, Rule::Lease, None);
}

#[test]
fn no_healthy_applier_fails() {
    let mut s = healthy();
    s.appliers[0].healthy = false;
    let r = only(&s, Rule::NoApplier, None);
    assert_eq!(r.level, Level::Failing);
}

#[test]
fn a_failing_zone_sync_degrades() {
    let mut s = healthy();
    s.zones[0].status.last_error = "reading zone: unavailable".into();
    only(&s, Rule::ZoneSync, Some("example.com."));
    s.zones[0].status.last_error.clear();
    s.zones[0].status.rejected = true;
    only(&s, Rule::ZoneSync, Some("example.com."));
}

/// The level is the worst reason's; reasons come in rule order; without reasons a
/// first sync is "syncing".
#[test]
fn the_worst_reason_sets_the_level() {
    let mut s = healthy();
    s.zones[0].records.insert(RecordStateKind::Conflict, 1);
    s.state_write_error = Some("disk full".into());
    let h = evaluate(&s);
    assert_eq!(h.level, Level::Failing);
    let rules: Vec<_> = h.reasons.iter().map(|r| r.rule).collect();
    assert_eq!(rules, [Rule::Conflicts, Rule::StateWrite]);

    let mut s = healthy();
    s.zones[0].status.initial_sync_done = false;
    assert_eq!(evaluate(&s).level, Level::Syncing);
    s.lease.role = Role::Standby;
    assert_eq!(
        evaluate(&s).level,
        Level::Healthy,
        "a standby is not behind"
    );
}

#[test]
fn a_tokens_file_problem_degrades_with_its_reason() {
    let mut s = healthy();
    s.tokens_error = Some(
        "tokens file /etc/dnsplane/tokens.toml is missing: every token is revoked until it is back"
            .into(),
    );
    only_at(
        &s,
        Rule::TokensFile,
        None,
        Level::Degraded,
        "every token is revoked",
    );
}

#[test]
fn tls_files_that_cannot_be_loaded_degrade() {
    let mut s = healthy();
    s.tls_errors = vec!["server certificate: /tls/cert.pem: no certificate in the file".into()];
    only_at(&s, Rule::TlsFiles, None, Level::Degraded, "/tls/cert.pem");
}

#[test]
fn failed_records_degrade_with_their_count() {
    let mut s = healthy();
    s.zones[0].records.insert(RecordStateKind::Failed, 500);
    only_at(
        &s,
        Rule::RecordsFailed,
        Some("example.com."),
        Level::Degraded,
        "500 record(s) failed",
    );
}

#[test]
fn rule_ids_are_unique() {
    let ids: std::collections::BTreeSet<_> = Rule::ALL.iter().map(|r| r.id()).collect();
    assert_eq!(ids.len(), Rule::ALL.len());
}

/// docs/reliability.md's table lists every rule, with its level, and no other.
#[test]
fn the_docs_table_lists_every_rule_with_its_level() {
    let doc = include_str!("../../../docs/reliability.md");
    let section = dnsplane_testing::docs::section(doc, "Health rules");
    let rows: std::collections::BTreeSet<(String, String)> = section
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let id = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((id.to_string(), cells.get(2)?.to_string()))
        })
        .collect();
    let want: std::collections::BTreeSet<(String, String)> = Rule::ALL
        .iter()
        .map(|r| (r.id().to_string(), r.level().as_str().to_string()))
        .collect();
    assert_eq!(rows, want);
}

#[test]
fn fenced_is_failing_and_names_the_holder() {
    let mut s = healthy();
    s.lease.role = Role::Fenced;
    s.lease.fenced = Some(crate::lease::FencedBy {
        epoch: 7,
        holder: "h/1/abc".into(),
        shared_backend: false,
        message: "configure [lease] redis".into(),
    });
    let h = evaluate(&s);
    assert_eq!(h.level, Level::Failing);
    assert_eq!(h.reasons[0].rule, Rule::Fenced);
    assert_eq!(
        h.reasons[0].message,
        "lease: fenced by epoch 7 (holder h/1/abc): configure [lease] redis"
    );
}
