//! The documents `-o json|yaml` prints: plain, stable shapes made from the planner's
//! answers (not the protobuf messages, whose JSON names would follow the proto), in a
//! deterministic order (zones by name; records by name, type, set). Their contract is
//! docs/cli.md, checked against the schemas in docs/cli/ by tests/e2e/cli_output.rs.
use crate::output::{age_seconds, in_seconds, rfc3339};
use dnsplane_common::pb;
use serde::Serialize;
use std::collections::BTreeMap;

/// A record set's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RrSet {
    pub ttl: u32,
    pub values: Vec<String>,
    /// Provider properties (routing policies), by name.
    pub properties: BTreeMap<String, String>,
}

impl From<&pb::RrSet> for RrSet {
    fn from(r: &pb::RrSet) -> Self {
        RrSet {
            ttl: r.ttl,
            values: r.values.clone(),
            properties: r
                .properties
                .iter()
                .map(|p| (p.name.clone(), p.value.clone()))
                .collect(),
        }
    }
}

fn rrset(r: Option<&pb::RrSet>) -> Option<RrSet> {
    r.map(RrSet::from)
}

/// A record's state (`records`, and the held-back records of `plan`).
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    /// The account of the record's target (`records`; empty in `plan`, whose zones
    /// name it).
    pub account: String,
    pub name: String,
    pub r#type: String,
    pub set_identifier: String,
    pub state: String,
    pub reason: String,
    pub desired: Option<RrSet>,
    pub observed: Option<RrSet>,
    pub observed_owner: String,
    pub attempts: u32,
    pub last_error: String,
    /// RFC 3339; null when no retry is scheduled.
    pub next_retry: Option<String>,
    pub next_retry_in_seconds: Option<u64>,
    pub updated: Option<String>,
    /// The desired record's labels (from its source: a DNSEndpoint's `labels`, a push,
    /// external-dns); metadata, never planned. Empty in `plan`.
    pub labels: BTreeMap<String, String>,
    /// Each desired value with the sources that want it (`records NAME` only; empty
    /// otherwise).
    pub sources: Vec<ValueSources>,
}

/// One desired value and the sources that want it.
#[derive(Debug, Clone, Serialize)]
pub struct ValueSources {
    pub value: String,
    pub sources: Vec<String>,
}

impl From<&pb::RecordState> for Record {
    fn from(r: &pb::RecordState) -> Self {
        let key = r.key.clone().unwrap_or_default();
        Record {
            account: r.account.clone(),
            name: key.name,
            r#type: key.r#type,
            set_identifier: key.set_identifier,
            state: dnsplane_planner::service::kind_name(r.state).to_string(),
            reason: r.reason.clone(),
            desired: rrset(r.desired.as_ref()),
            observed: rrset(r.observed.as_ref()),
            observed_owner: r.observed_owner.clone(),
            attempts: r.attempts,
            last_error: r.last_error.clone(),
            next_retry: rfc3339(r.next_retry),
            next_retry_in_seconds: in_seconds(r.next_retry),
            updated: rfc3339(r.updated),
            labels: r
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            sources: r
                .sources
                .iter()
                .map(|v| ValueSources {
                    value: v.value.clone(),
                    sources: v.sources.clone(),
                })
                .collect(),
        }
    }
}

impl Record {
    fn sort_key(&self) -> (String, String, String, String) {
        (
            self.name.clone(),
            self.r#type.clone(),
            self.set_identifier.clone(),
            self.account.clone(),
        )
    }
}

/// `dnsplane records -o json`.
#[derive(Debug, Serialize)]
pub struct Records {
    pub records: Vec<Record>,
    /// How many are not converged (the exit code is 2 when any is; `not_for_target`
    /// counts as converged).
    pub not_converged: usize,
}

impl Records {
    pub fn new(mut records: Vec<Record>) -> Records {
        records.sort_by_key(Record::sort_key);
        // A record its target cannot hold is where it should be: at the other targets.
        let not_converged = records
            .iter()
            .filter(|r| r.state != "converged" && r.state != "not_for_target")
            .count();
        Records {
            records,
            not_converged,
        }
    }
}

/// A plan the mass-change guard holds.
#[derive(Debug, Clone, Serialize)]
pub struct Held {
    pub digest: String,
    /// Creates held too (`[safety] mode = "approve"` holds every plan).
    pub creates: u32,
    pub deletes: u32,
    pub updates: u32,
    pub apex_ns: u32,
    pub owned_records: u32,
    pub reason: String,
    pub since: Option<String>,
}

impl From<&pb::HeldPlan> for Held {
    fn from(h: &pb::HeldPlan) -> Self {
        Held {
            digest: h.digest.clone(),
            creates: h.creates,
            deletes: h.deletes,
            updates: h.updates,
            apex_ns: h.apex_ns,
            owned_records: h.owned_records,
            reason: h.reason.clone(),
            since: rfc3339(h.since),
        }
    }
}

/// One change of a plan: its kind, why, and what it does to each record set.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// create, update, delete, adopt or release.
    pub kind: String,
    pub reason: String,
    pub ops: Vec<Op>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Op {
    pub name: String,
    pub r#type: String,
    pub set_identifier: String,
    pub before: Option<RrSet>,
    pub after: Option<RrSet>,
}

impl From<&pb::PlannedChange> for Change {
    fn from(c: &pb::PlannedChange) -> Self {
        let change = c.change.clone().unwrap_or_default();
        let kind = match pb::ChangeKind::try_from(change.kind).unwrap_or_default() {
            pb::ChangeKind::Create => "create",
            pb::ChangeKind::Update => "update",
            pb::ChangeKind::Delete => "delete",
            pb::ChangeKind::Adopt => "adopt",
            pb::ChangeKind::Release => "release",
            pb::ChangeKind::Unspecified => "unspecified",
        };
        Change {
            kind: kind.to_string(),
            reason: c.reason.clone(),
            ops: change
                .ops
                .iter()
                .map(|op| {
                    let key = op.key.clone().unwrap_or_default();
                    Op {
                        name: key.name,
                        r#type: key.r#type,
                        set_identifier: key.set_identifier,
                        before: rrset(op.before.as_ref()),
                        after: rrset(op.after.as_ref()),
                    }
                })
                .collect(),
        }
    }
}

impl Change {
    fn sort_key(&self) -> (String, String, String) {
        self.ops
            .first()
            .map(|o| (o.name.clone(), o.r#type.clone(), o.set_identifier.clone()))
            .unwrap_or_default()
    }
}

/// One zone of `dnsplane plan -o json`.
#[derive(Debug, Serialize)]
pub struct ZonePlan {
    pub zone: String,
    /// The account of the zone's target (a zone served by several accounts is
    /// planned once per account).
    pub account: String,
    /// Why the zone could not be planned; empty when it was.
    pub error: String,
    pub held: Option<Held>,
    pub changes: Vec<Change>,
    /// Records the plan leaves alone for now (conflicts, retries), with why.
    pub blocked: Vec<Record>,
}

/// `dnsplane plan -o json`.
#[derive(Debug, Serialize)]
pub struct Plan {
    pub zones: Vec<ZonePlan>,
    pub changes: usize,
    pub blocked: usize,
}

impl Plan {
    /// The pages' zones merged (a zone may span pages) and sorted.
    pub fn new(pages: Vec<pb::ZonePlan>) -> Plan {
        let mut zones: BTreeMap<(String, String), ZonePlan> = BTreeMap::new();
        for z in pages {
            let key = (z.zone.clone(), z.account.clone());
            let entry = zones.entry(key).or_insert_with(|| ZonePlan {
                zone: z.zone.clone(),
                account: z.account.clone(),
                error: String::new(),
                held: None,
                changes: Vec::new(),
                blocked: Vec::new(),
            });
            if !z.error.is_empty() {
                entry.error = z.error.clone();
            }
            if let Some(h) = &z.held {
                entry.held = Some(h.into());
            }
            entry.changes.extend(z.changes.iter().map(Change::from));
            entry.blocked.extend(z.blocked.iter().map(Record::from));
        }
        let mut zones: Vec<ZonePlan> = zones.into_values().collect();
        for z in &mut zones {
            z.changes.sort_by_key(Change::sort_key);
            z.blocked.sort_by_key(Record::sort_key);
        }
        Plan {
            changes: zones.iter().map(|z| z.changes.len()).sum(),
            blocked: zones.iter().map(|z| z.blocked.len()).sum(),
            zones,
        }
    }
}

/// One zone of `dnsplane status -o json`.
#[derive(Debug, Serialize)]
pub struct ZoneStatus {
    pub zone: String,
    pub account: String,
    pub policy: String,
    pub applier: String,
    pub state: String,
    pub syncing: bool,
    pub initial_sync_done: bool,
    pub desired_records: u32,
    pub observed_records: u32,
    pub records_by_state: BTreeMap<String, u32>,
    pub last_sync: Option<String>,
    pub last_sync_age_seconds: Option<u64>,
    pub last_success: Option<String>,
    pub last_error: String,
    pub next_retry: Option<String>,
    pub held: Option<Held>,
    pub released_to: Option<String>,
}

/// States that need someone: a zone holding any is not converged.
pub const STUCK: &[&str] = &["conflict", "invalid", "failed", "rejected", "held"];

impl ZoneStatus {
    /// Converged: no record stuck, no plan held, no error.
    pub fn converged(&self) -> bool {
        self.held.is_none()
            && self.last_error.is_empty()
            && STUCK
                .iter()
                .all(|s| self.records_by_state.get(*s).copied().unwrap_or(0) == 0)
    }
}

impl From<&pb::ZoneStatus> for ZoneStatus {
    fn from(z: &pb::ZoneStatus) -> Self {
        ZoneStatus {
            zone: z.zone.clone(),
            account: z.account.clone(),
            policy: z.policy.clone(),
            applier: z.applier.clone(),
            state: z.state.clone(),
            syncing: z.syncing,
            initial_sync_done: z.initial_sync_done,
            desired_records: z.desired_records,
            observed_records: z.observed_records,
            records_by_state: z
                .records_by_state
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            last_sync: rfc3339(z.last_sync),
            last_sync_age_seconds: age_seconds(z.last_sync),
            last_success: rfc3339(z.last_success),
            last_error: z.last_error.clone(),
            next_retry: rfc3339(z.next_retry),
            held: z.held.as_ref().map(Held::from),
            released_to: z.released.as_ref().map(|r| r.external_dns_owner.clone()),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Lease {
    pub role: String,
    pub holder: String,
    pub backend: String,
    pub location: String,
    pub since: Option<String>,
    pub epoch: u64,
    pub last_error: String,
    /// When `role` is `fenced`: the applier's words, with the fix.
    pub fenced: String,
}

#[derive(Debug, Serialize)]
pub struct Source {
    pub name: String,
    pub ready: bool,
    pub reason: String,
    /// A Kubernetes source's kinds (and what their records depend on), each ready or
    /// not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<SourcePart>,
}

#[derive(Debug, Serialize)]
pub struct SourcePart {
    pub name: String,
    pub ready: bool,
    pub reason: String,
    /// What the part last did (a NetBox source's last full read and webhook).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

#[derive(Debug, Serialize)]
pub struct SourceError {
    pub source: String,
    pub location: String,
    pub record: String,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct Applier {
    pub address: String,
    pub healthy: bool,
    pub last_error: String,
    pub zones: u32,
}

/// One health rule that applies (docs/reliability.md, health rules).
#[derive(Debug, Serialize)]
pub struct HealthReason {
    pub rule: String,
    pub level: String,
    pub zone: String,
    pub message: String,
}

/// `dnsplane status -o json`.
#[derive(Debug, Serialize)]
pub struct Status {
    /// The planner's own level: healthy, syncing, degraded, failing, ...
    pub level: String,
    pub reason: String,
    /// Every health rule that applies, sorted by rule then zone.
    pub reasons: Vec<HealthReason>,
    /// `[safety] mode`: automatic, observe or approve.
    pub safety_mode: String,
    /// Every zone converged (no stuck record, no held plan, no zone error).
    pub converged: bool,
    /// What `dnsplane status` exits with (docs/cli.md, "Exit codes").
    pub exit_code: u8,
    pub lease: Option<Lease>,
    pub zones: Vec<ZoneStatus>,
    pub sources: Vec<Source>,
    pub source_errors: Vec<SourceError>,
    pub appliers: Vec<Applier>,
}

impl From<&pb::PlannerStatus> for Status {
    fn from(s: &pb::PlannerStatus) -> Self {
        let mut zones: Vec<ZoneStatus> = s.zones.iter().map(ZoneStatus::from).collect();
        zones.sort_by(|a, b| a.zone.cmp(&b.zone));
        let mut sources: Vec<Source> = s
            .sources
            .iter()
            .map(|x| Source {
                name: x.name.clone(),
                ready: x.ready,
                reason: x.reason.clone(),
                parts: x
                    .parts
                    .iter()
                    .map(|p| SourcePart {
                        name: p.name.clone(),
                        ready: p.ready,
                        reason: p.reason.clone(),
                        detail: p.detail.clone(),
                    })
                    .collect(),
            })
            .collect();
        sources.sort_by(|a, b| a.name.cmp(&b.name));
        let mut source_errors: Vec<SourceError> = s
            .source_errors
            .iter()
            .map(|e| SourceError {
                source: e.source.clone(),
                location: e.location.clone(),
                record: e.record.clone(),
                message: e.message.clone(),
            })
            .collect();
        source_errors.sort_by(|a, b| (&a.location, &a.record).cmp(&(&b.location, &b.record)));
        let mut appliers: Vec<Applier> = s
            .appliers
            .iter()
            .map(|a| Applier {
                address: a.address.clone(),
                healthy: a.healthy,
                last_error: a.last_error.clone(),
                zones: a.zones,
            })
            .collect();
        appliers.sort_by(|a, b| a.address.cmp(&b.address));
        let lease = s.lease.as_ref().map(|l| Lease {
            role: l.role.clone(),
            holder: l.holder.clone(),
            backend: l.backend.clone(),
            location: l.location.clone(),
            since: rfc3339(l.since),
            epoch: l.epoch,
            last_error: l.last_error.clone(),
            fenced: l.fenced.clone(),
        });
        let converged = zones.iter().all(ZoneStatus::converged);
        let standby = lease.as_ref().is_some_and(|l| l.role == "standby");
        let exit_code = if s.level == "degraded" || s.level == "failing" || !converged {
            dnsplane_cli::EXIT_NOT_CONVERGED
        } else if standby {
            dnsplane_cli::EXIT_STANDBY
        } else {
            0
        };
        let mut reasons: Vec<HealthReason> = s
            .reasons
            .iter()
            .map(|r| HealthReason {
                rule: r.rule.clone(),
                level: r.level.clone(),
                zone: r.zone.clone(),
                message: r.message.clone(),
            })
            .collect();
        reasons.sort_by(|a, b| (&a.rule, &a.zone, &a.message).cmp(&(&b.rule, &b.zone, &b.message)));
        Status {
            level: s.level.clone(),
            reason: s.reason.clone(),
            reasons,
            safety_mode: s.safety_mode.clone(),
            converged,
            exit_code,
            lease,
            zones,
            sources,
            source_errors,
            appliers,
        }
    }
}

/// The last progress of one zone's sync (`dnsplane sync -o json`).
#[derive(Debug, Clone, Serialize)]
pub struct SyncZone {
    pub zone: String,
    /// The account of the zone's target where the zone has several (each syncs on
    /// its own); empty otherwise.
    pub account: String,
    /// The last phase seen: done or failed when the sync ended.
    pub phase: String,
    pub changes_planned: u32,
    pub changes_done: u32,
    pub outcomes: BTreeMap<String, u32>,
    pub error: String,
}

impl From<&pb::SyncProgress> for SyncZone {
    fn from(p: &pb::SyncProgress) -> Self {
        SyncZone {
            zone: p.zone.clone(),
            account: p.account.clone(),
            phase: p.phase.clone(),
            changes_planned: p.changes_planned,
            changes_done: p.changes_done,
            outcomes: p.outcomes.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            error: p.error.clone(),
        }
    }
}

/// `dnsplane sync -o json`.
#[derive(Debug, Serialize)]
pub struct Sync {
    pub zones: Vec<SyncZone>,
}
