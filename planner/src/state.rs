//! The per-record state table: what the planner knows about every record it manages,
//! so that no record that is not converged is ever silent.
use dnsplane_common::convert::{outcome_name, timestamp};
use dnsplane_common::pb::{self, ConflictReason, Outcome, RecordStateKind};
use dnsplane_common::{Name, RRSet, RecordKey};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::{Duration, SystemTime};

/// One record's state.
#[derive(Debug, Clone)]
pub struct RecordState {
    pub kind: RecordStateKind,
    pub desired: Option<RRSet>,
    pub observed: Option<RRSet>,
    pub observed_owner: Option<String>,
    pub conflict_reason: ConflictReason,
    pub reason: String,
    /// Consecutive attempts that did not converge (reset on convergence).
    pub attempts: u32,
    pub last_error: String,
    pub next_retry: Option<SystemTime>,
    pub last_change_id: String,
    pub updated: SystemTime,
}

impl RecordState {
    fn new(kind: RecordStateKind) -> Self {
        RecordState {
            kind,
            desired: None,
            observed: None,
            observed_owner: None,
            conflict_reason: ConflictReason::Unspecified,
            reason: String::new(),
            attempts: 0,
            last_error: String::new(),
            next_retry: None,
            last_change_id: String::new(),
            updated: SystemTime::now(),
        }
    }

    pub fn to_pb(&self, key: &RecordKey) -> pb::RecordState {
        pb::RecordState {
            key: Some(key.into()),
            state: self.kind as i32,
            desired: self.desired.as_ref().map(Into::into),
            observed: self.observed.as_ref().map(Into::into),
            observed_owner: self.observed_owner.clone().unwrap_or_default(),
            conflict_reason: self.conflict_reason as i32,
            reason: self.reason.clone(),
            attempts: self.attempts,
            last_error: self.last_error.clone(),
            next_retry: self.next_retry.map(timestamp),
            last_change_id: self.last_change_id.clone(),
            updated: Some(timestamp(self.updated)),
        }
    }
}

/// User-facing state names (`converged`, `conflict`, ...).
pub fn state_name(k: RecordStateKind) -> &'static str {
    match k {
        RecordStateKind::Unspecified => "unspecified",
        RecordStateKind::Pending => "pending",
        RecordStateKind::InFlight => "in_flight",
        RecordStateKind::Converged => "converged",
        RecordStateKind::Conflict => "conflict",
        RecordStateKind::Invalid => "invalid",
        RecordStateKind::Failed => "failed",
        RecordStateKind::Deferred => "deferred",
        RecordStateKind::Rejected => "rejected",
    }
}

/// Capped exponential backoff per record: `min · 2^(attempts-1)`, at most `max`.
pub fn retry_delay(attempts: u32, min: Duration, max: Duration) -> Duration {
    let factor = 1u32
        .checked_shl(attempts.saturating_sub(1).min(20))
        .unwrap_or(u32::MAX);
    min.saturating_mul(factor).min(max)
}

/// How many recent convergence times are remembered (for `ListRecordStates` with
/// converged records); older ones are forgotten so the table stays small.
const RECENT_CONVERGED: usize = 10_000;

/// States of one zone's records that are *not* converged. A converged record has no
/// entry at all: at a million records, the table holds only what needs attention.
#[derive(Debug, Default)]
pub struct StateTable {
    pub records: BTreeMap<RecordKey, RecordState>,
    /// When recently converged records converged.
    recent: HashMap<RecordKey, SystemTime>,
    recent_order: VecDeque<RecordKey>,
}

impl StateTable {
    fn entry(&mut self, key: &RecordKey) -> &mut RecordState {
        self.records
            .entry(key.clone())
            .or_insert_with(|| RecordState::new(RecordStateKind::Pending))
    }

    /// Keeps only the keys in `keep` (desired keys plus keys with a change in flight).
    pub fn retain(&mut self, keep: impl Fn(&RecordKey) -> bool) {
        self.records.retain(|k, _| keep(k));
    }

    /// Marks `key` converged: its entry goes away (a converged record needs none).
    pub fn converged(&mut self, key: &RecordKey) {
        if self.records.remove(key).is_none() {
            return; // was converged already: keep its original time
        }
        let now = SystemTime::now();
        if self.recent.insert(key.clone(), now).is_none() {
            self.recent_order.push_back(key.clone());
        }
        while self.recent_order.len() > RECENT_CONVERGED {
            if let Some(old) = self.recent_order.pop_front() {
                self.recent.remove(&old);
            }
        }
    }

    /// When `key` last converged, if that was recent.
    pub fn converged_at(&self, key: &RecordKey) -> Option<SystemTime> {
        self.recent.get(key).copied()
    }

    /// The state of a record without an entry, built on demand: converged, or pending
    /// while the zone has never been read.
    pub fn converged_pb(
        &self,
        key: &RecordKey,
        rrset: &RRSet,
        zone_read: bool,
        unplanned: bool,
    ) -> pb::RecordState {
        if !zone_read || unplanned {
            let reason = if zone_read {
                "its desired state changed; not planned yet"
            } else {
                "the zone has not been read yet"
            };
            return pb::RecordState {
                key: Some(key.into()),
                state: RecordStateKind::Pending as i32,
                desired: Some(rrset.into()),
                reason: reason.into(),
                ..Default::default()
            };
        }
        pb::RecordState {
            key: Some(key.into()),
            state: RecordStateKind::Converged as i32,
            desired: Some(rrset.into()),
            observed: Some(rrset.into()),
            updated: self.converged_at(key).map(timestamp),
            ..Default::default()
        }
    }

    /// A record held back at plan time (owned by another, unowned, policy).
    #[allow(clippy::too_many_arguments)]
    pub fn blocked(
        &mut self,
        key: &RecordKey,
        desired: Option<RRSet>,
        observed: Option<RRSet>,
        owner: Option<String>,
        reason: ConflictReason,
        message: &str,
        next_retry: Option<SystemTime>,
    ) {
        let s = self.entry(key);
        let same =
            s.kind == RecordStateKind::Conflict && s.reason == message && s.observed == observed;
        s.kind = RecordStateKind::Conflict;
        s.desired = desired;
        s.observed = observed;
        s.observed_owner = owner;
        s.conflict_reason = reason;
        s.reason = message.to_string();
        s.next_retry = next_retry;
        if !same {
            s.updated = SystemTime::now();
        }
    }

    pub fn pending(
        &mut self,
        key: &RecordKey,
        desired: Option<RRSet>,
        observed: Option<RRSet>,
        change_id: &str,
        why: &str,
    ) {
        let s = self.entry(key);
        if s.kind == RecordStateKind::Converged {
            s.attempts = 0;
        }
        s.kind = RecordStateKind::Pending;
        s.desired = desired;
        s.observed = observed;
        s.last_change_id = change_id.to_string();
        s.reason = why.to_string();
        s.updated = SystemTime::now();
    }

    pub fn in_flight(&mut self, key: &RecordKey) {
        let s = self.entry(key);
        s.kind = RecordStateKind::InFlight;
        s.attempts += 1;
        s.updated = SystemTime::now();
    }

    /// Records an applier's result. Returns the delay before this record should be
    /// re-planned, if it should be.
    pub fn result(
        &mut self,
        key: &RecordKey,
        result: &pb::RecordResult,
        observed_owner: Option<String>,
        retry: (Duration, Duration),
    ) -> Option<Duration> {
        let outcome = Outcome::try_from(result.outcome).unwrap_or(Outcome::Unspecified);
        let s = self.entry(key);
        s.updated = SystemTime::now();
        let backoff = retry_delay(s.attempts.max(1), retry.0, retry.1);
        let (kind, delay) = match outcome {
            Outcome::Applied | Outcome::AlreadyApplied => {
                if s.desired.is_none() {
                    // A delete that landed: forget the record.
                    self.records.remove(key);
                } else {
                    self.converged(key);
                }
                return None;
            }
            Outcome::Conflict => {
                s.observed = result
                    .observed
                    .as_ref()
                    .and_then(|r| dnsplane_common::convert::rrset_from_pb("observed", r).ok());
                s.observed_owner = observed_owner;
                s.conflict_reason =
                    ConflictReason::try_from(result.conflict_reason).unwrap_or_default();
                (RecordStateKind::Conflict, Some(backoff))
            }
            // Parked until its desired state changes.
            Outcome::Invalid => (RecordStateKind::Invalid, None),
            Outcome::Deferred => {
                let after = result
                    .retry_after
                    .as_ref()
                    .map(dnsplane_common::convert::duration_from_pb)
                    .unwrap_or(retry.0);
                (RecordStateKind::Deferred, Some(after))
            }
            Outcome::Failed => (RecordStateKind::Failed, Some(backoff)),
            Outcome::RejectedPermanent => (RecordStateKind::Rejected, Some(retry.1)),
            Outcome::Unspecified => (RecordStateKind::Failed, Some(backoff)),
        };
        s.kind = kind;
        s.reason = format!("{}: {}", outcome_name(outcome), result.message);
        if outcome != Outcome::Deferred {
            s.last_error = result.message.clone();
        }
        s.next_retry = delay.map(|d| SystemTime::now() + d);
        delay
    }

    /// Records by state name. Desired records without an entry are converged, except
    /// while the zone has never been read, and at names whose desired state changed
    /// and has not been planned yet (`unplanned`): those are pending.
    pub fn counts<V>(
        &self,
        desired: &BTreeMap<RecordKey, V>,
        zone_read: bool,
        unplanned: &BTreeSet<Name>,
    ) -> BTreeMap<String, u32> {
        let mut out = BTreeMap::new();
        let mut desired_with_state = 0;
        for (k, s) in &self.records {
            *out.entry(state_name(s.kind).to_string()).or_insert(0) += 1;
            desired_with_state += usize::from(desired.contains_key(k));
        }
        let without_state = desired.len().saturating_sub(desired_with_state);
        let not_yet_planned = if zone_read {
            desired
                .keys()
                .filter(|k| unplanned.contains(&k.name) && !self.records.contains_key(*k))
                .count()
                .min(without_state)
        } else {
            without_state
        };
        for (kind, n) in [
            (RecordStateKind::Converged, without_state - not_yet_planned),
            (RecordStateKind::Pending, not_yet_planned),
        ] {
            if n > 0 {
                *out.entry(state_name(kind).to_string()).or_insert(0) += n as u32;
            }
        }
        out
    }

    /// Names of the records whose retry is due at `now`.
    pub fn due_names(&self, now: SystemTime) -> BTreeSet<Name> {
        self.records
            .iter()
            .filter(|(_, s)| s.next_retry.is_some_and(|t| t <= now))
            .map(|(k, _)| k.name.clone())
            .collect()
    }

    /// Earliest time any record wants a retry.
    pub fn next_retry(&self) -> Option<SystemTime> {
        self.records.values().filter_map(|s| s.next_retry).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_capped_exponential() {
        let (min, max) = (Duration::from_millis(500), Duration::from_secs(30));
        let d: Vec<u128> = (1..=9)
            .map(|a| retry_delay(a, min, max).as_millis())
            .collect();
        assert_eq!(d, [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
        assert_eq!(retry_delay(u32::MAX, min, max), max);
    }
}
