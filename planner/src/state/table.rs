//! The table of one target's records that are not converged, and the three folds
//! that move them (see the [state machine](super)): a plan, an applier's result, a
//! lost stream.
use super::{RecordState, RecordStateKind, RetryClock, due};
use crate::plan::ZonePlan;
use dnsplane_common::rrset::at_name;
use dnsplane_common::{ConflictReason, Name, Outcome, RRSet, RecordKey, RecordResult};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::{Duration, SystemTime};

/// How an observed (never sent) change's reason starts.
const OBSERVE_PREFIX: &str = "observe mode, not written: ";

/// How many recent convergence times are remembered (for `ListRecordStates` with
/// converged records); older ones are forgotten so the table stays small.
const RECENT_CONVERGED: usize = 10_000;

/// States of one zone's records that are *not* converged. A converged record has no
/// entry at all: at a million records, the table holds only what needs attention.
#[derive(Debug, Default, Clone)]
pub struct StateTable {
    records: BTreeMap<RecordKey, RecordState>,
    /// When recently converged records converged.
    recent: HashMap<RecordKey, SystemTime>,
    recent_order: VecDeque<RecordKey>,
}

impl StateTable {
    fn entry(&mut self, key: &RecordKey, now: SystemTime) -> &mut RecordState {
        self.records
            .entry(key.clone())
            .or_insert_with(|| RecordState::new(RecordStateKind::Pending, now))
    }

    // --- queries -------------------------------------------------------------------

    /// The state of `key`, when it is not converged.
    pub fn get(&self, key: &RecordKey) -> Option<&RecordState> {
        self.records.get(key)
    }

    /// Every record that is not converged, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&RecordKey, &RecordState)> {
        self.records.iter()
    }

    pub fn contains(&self, key: &RecordKey) -> bool {
        self.records.contains_key(key)
    }

    /// When `key` last converged, if that was recent.
    pub fn converged_at(&self, key: &RecordKey) -> Option<SystemTime> {
        self.recent.get(key).copied()
    }

    /// The state of a desired record without an entry, built on demand: converged, or
    /// pending while the zone has never been read or its desired state changed and has
    /// not been planned yet (`unplanned`); `rejected` with the provider's reason when
    /// the zone has never been read because its account refuses it (`refused`).
    pub fn without_entry(
        &self,
        key: &RecordKey,
        rrset: &RRSet,
        zone_read: bool,
        unplanned: bool,
        refused: Option<&str>,
    ) -> RecordState {
        if let (false, Some(why)) = (zone_read, refused) {
            return RecordState {
                desired: Some(rrset.clone()),
                reason: format!("the provider account refuses the zone: {why}"),
                last_error: why.to_string(),
                updated: None,
                ..RecordState::new(RecordStateKind::Rejected, SystemTime::UNIX_EPOCH)
            };
        }
        if !zone_read || unplanned {
            let reason = if zone_read {
                "its desired state changed; not planned yet"
            } else {
                "the zone has not been read yet"
            };
            return RecordState {
                desired: Some(rrset.clone()),
                reason: reason.into(),
                updated: None,
                ..RecordState::new(RecordStateKind::Pending, SystemTime::UNIX_EPOCH)
            };
        }
        RecordState {
            desired: Some(rrset.clone()),
            observed: Some(rrset.clone()),
            updated: self.converged_at(key),
            ..RecordState::new(RecordStateKind::Converged, SystemTime::UNIX_EPOCH)
        }
    }

    /// Records by state. Desired records without an entry are converged, except while
    /// the zone has never been read (pending, or rejected when its account `refused`
    /// the read), and at names whose desired state changed and has not been planned
    /// yet (`unplanned`): those are pending.
    pub fn counts<V>(
        &self,
        desired: &BTreeMap<RecordKey, V>,
        zone_read: bool,
        unplanned: &BTreeSet<Name>,
        refused: bool,
    ) -> BTreeMap<RecordStateKind, u32> {
        let mut out = BTreeMap::new();
        let mut desired_with_state = 0;
        for (k, s) in &self.records {
            *out.entry(s.kind).or_insert(0) += 1;
            desired_with_state += usize::from(desired.contains_key(k));
        }
        let without_state = desired.len().saturating_sub(desired_with_state);
        let not_yet_planned = if zone_read {
            // By name, not by a walk of the zone: status is asked often and the zone
            // may hold a million records, while few names wait for a plan.
            let zone = desired.keys().next().map(|k| k.zone.clone());
            zone.map_or(0, |zone| {
                unplanned
                    .iter()
                    .flat_map(|n| at_name(desired, &zone, n))
                    .filter(|(k, _)| !self.records.contains_key(*k))
                    .count()
            })
            .min(without_state)
        } else {
            without_state
        };
        let waiting = if !zone_read && refused {
            RecordStateKind::Rejected
        } else {
            RecordStateKind::Pending
        };
        for (kind, n) in [
            (RecordStateKind::Converged, without_state - not_yet_planned),
            (waiting, not_yet_planned),
        ] {
            if n > 0 {
                *out.entry(kind).or_insert(0) += n as u32;
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

    /// Whether any conflict waits on a clock (see [`Self::conflict_names`]).
    pub fn has_conflicts(&self) -> bool {
        self.records
            .values()
            .any(|s| s.kind == RecordStateKind::Conflict && s.next_retry.is_some())
    }

    /// Names of the records in conflict that wait on a clock (not the policy holds,
    /// which wait for the desired state to change): what the conflict watch reads again.
    pub fn conflict_names(&self) -> BTreeSet<Name> {
        self.records
            .iter()
            .filter(|(_, s)| s.kind == RecordStateKind::Conflict && s.next_retry.is_some())
            .map(|(k, _)| k.name.clone())
            .collect()
    }

    /// Makes every conflict that waits on a clock due at `now`: the zone changed and its
    /// cause may be gone. Attempts are kept, so a conflict that stays backs off again.
    pub fn release_conflicts(&mut self, now: SystemTime) {
        for s in self.records.values_mut() {
            if s.kind == RecordStateKind::Conflict && s.next_retry.is_some() {
                s.next_retry = Some(now);
            }
        }
    }

    /// Earliest time any record wants a retry.
    /// Records with an entry (every record but the converged ones).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn next_retry(&self) -> Option<SystemTime> {
        self.records.values().filter_map(|s| s.next_retry).min()
    }

    /// The changes of `plan` a sync would hold back now (their records are not due),
    /// with the state that holds each back. Folds nothing: the dry run's answer to
    /// "what would the next sync send".
    pub fn withheld<'a, D: DesiredLookup>(
        &'a self,
        plan: &ZonePlan,
        desired: &D,
        now: SystemTime,
    ) -> Vec<(&'a RecordKey, &'a RecordState)> {
        plan.changes
            .iter()
            .filter_map(|c| {
                let key = c.change.key();
                let (k, s) = self.records.get_key_value(key)?;
                (!due(Some(s), desired.rrset(key).as_ref(), now)).then_some((k, s))
            })
            .collect()
    }

    // --- the fold ------------------------------------------------------------------

    /// Folds a fresh plan of the names `in_scope` accepts: records with an entry that
    /// the plan neither changes nor holds back have converged; held-back records are
    /// conflicts re-planned on their own clock (policy holds wait for the desired state
    /// to change); changes whose record is not due are removed from `plan`, the rest
    /// become pending. Returns how many changes were withheld.
    pub fn fold_plan<D: DesiredLookup>(
        &mut self,
        in_scope: impl Fn(&Name) -> bool,
        desired: &D,
        observed: impl Fn(&RecordKey) -> Option<RRSet>,
        plan: &mut ZonePlan,
        now: SystemTime,
        clock: RetryClock,
    ) -> usize {
        let planned: BTreeSet<RecordKey> = plan
            .changes
            .iter()
            .map(|c| c.change.key().clone())
            .collect();
        self.records
            .retain(|k, _| !in_scope(&k.name) || desired.contains(k) || planned.contains(k));
        let blocked: BTreeSet<&RecordKey> = plan.blocked.iter().map(|b| &b.key).collect();
        let now_converged: Vec<RecordKey> = self
            .records
            .keys()
            .filter(|k| {
                in_scope(&k.name)
                    && desired.contains(k)
                    && !planned.contains(*k)
                    && !blocked.contains(k)
            })
            .cloned()
            .collect();
        for key in &now_converged {
            self.converged(key, now);
        }
        for b in &plan.blocked {
            let state = self.records.get(&b.key);
            let next = if b.reason == ConflictReason::Unspecified {
                None
            } else if due(state, b.desired.as_ref(), now) {
                let attempts = state.map_or(0, |s| s.attempts) + 1;
                if let Some(s) = self.records.get_mut(&b.key) {
                    s.attempts = attempts;
                }
                Some(now + clock.delay(attempts))
            } else {
                state.and_then(|s| s.next_retry)
            };
            let s = self.entry(&b.key, now);
            let same = s.kind == RecordStateKind::Conflict
                && s.reason == b.message
                && s.observed == b.observed;
            s.kind = RecordStateKind::Conflict;
            s.desired = b.desired.clone();
            s.observed = b.observed.clone();
            s.observed_owner = b.observed_owner.clone();
            s.conflict_reason = b.reason;
            s.reason = b.message.clone();
            s.next_retry = next;
            if !same {
                s.updated = Some(now);
            }
        }
        let before = plan.changes.len();
        plan.changes.retain(|c| {
            let key = c.change.key();
            let want = desired.rrset(key);
            if !due(self.records.get(key), want.as_ref(), now) {
                return false;
            }
            let s = self.entry(key, now);
            if s.kind == RecordStateKind::Converged {
                s.attempts = 0;
            }
            s.kind = RecordStateKind::Pending;
            s.desired = want;
            s.observed = observed(key);
            s.last_change_id = c.change.id.clone();
            s.reason = c.reason.clone();
            s.updated = Some(now);
            true
        });
        before - plan.changes.len()
    }

    /// `key`'s record is not for this target (its account cannot hold `desired`, for
    /// `reason`): reported once, planned again only when the desired record changes.
    pub fn not_for_target(
        &mut self,
        key: &RecordKey,
        desired: Option<RRSet>,
        reason: &str,
        now: SystemTime,
    ) {
        let s = self.entry(key, now);
        if s.kind != RecordStateKind::NotForTarget || s.reason != reason {
            s.updated = Some(now);
        }
        s.kind = RecordStateKind::NotForTarget;
        s.desired = desired;
        s.reason = reason.to_string();
        s.next_retry = None;
    }

    /// `key`'s record is to be planned again now, for `reason` (a `not_for_target`
    /// record its account's driver has come to write).
    pub fn replan(&mut self, key: &RecordKey, reason: &str, now: SystemTime) {
        let s = self.entry(key, now);
        s.kind = RecordStateKind::Pending;
        s.reason = reason.to_string();
        s.next_retry = None;
        s.updated = Some(now);
    }

    /// `keys`' changes are held by the mass-change guard for `reason`: they wait for an
    /// approval (or a change of the desired state), not for a clock.
    pub fn hold<'a>(
        &mut self,
        keys: impl IntoIterator<Item = &'a RecordKey>,
        reason: &str,
        now: SystemTime,
    ) {
        for key in keys {
            let s = self.entry(key, now);
            if s.kind != RecordStateKind::Held || s.reason != reason {
                s.updated = Some(now);
            }
            s.kind = RecordStateKind::Held;
            s.reason = reason.to_string();
            s.next_retry = None;
        }
    }

    /// `keys`' changes were planned in observe mode: they stay pending (never sent),
    /// and say why.
    pub fn observe<'a>(&mut self, keys: impl IntoIterator<Item = &'a RecordKey>) {
        for key in keys {
            if let Some(s) = self.records.get_mut(key)
                && !s.reason.starts_with(OBSERVE_PREFIX)
            {
                s.reason = format!("{OBSERVE_PREFIX}{}", s.reason);
            }
        }
    }

    /// `key`'s change was sent.
    pub fn in_flight(&mut self, key: &RecordKey, now: SystemTime) {
        let s = self.entry(key, now);
        s.kind = RecordStateKind::InFlight;
        s.attempts += 1;
        s.updated = Some(now);
    }

    /// Folds an applier's result for `key`. Returns the delay before this record should
    /// be re-planned, if it should be.
    pub fn fold_result(
        &mut self,
        key: &RecordKey,
        result: &RecordResult,
        observed_owner: Option<String>,
        now: SystemTime,
        clock: RetryClock,
    ) -> Option<Duration> {
        let s = self.entry(key, now);
        s.updated = Some(now);
        let backoff = clock.delay(s.attempts.max(1));
        let (kind, delay) = match result.outcome {
            Outcome::Applied | Outcome::AlreadyApplied => {
                if s.desired.is_none() {
                    // A delete that landed: forget the record.
                    self.records.remove(key);
                } else {
                    self.converged(key, now);
                }
                return None;
            }
            Outcome::Conflict => {
                s.observed = result.observed.clone();
                s.observed_owner = observed_owner;
                s.conflict_reason = result.conflict_reason;
                (RecordStateKind::Conflict, Some(backoff))
            }
            // Parked until its desired state changes.
            Outcome::Invalid => (RecordStateKind::Invalid, None),
            Outcome::Deferred => (
                RecordStateKind::Deferred,
                Some(result.retry_after.unwrap_or(clock.min)),
            ),
            Outcome::Failed => (RecordStateKind::Failed, Some(backoff)),
            Outcome::RejectedPermanent => (RecordStateKind::Rejected, Some(clock.max)),
        };
        s.kind = kind;
        s.reason = format!("{}: {}", result.outcome, result.message);
        if result.outcome != Outcome::Deferred {
            s.last_error = result.message.clone();
        }
        s.next_retry = delay.map(|d| now + d);
        delay
    }

    /// The stream that carried `keys` broke: whatever is still pending or in flight got
    /// no result and is retried on its own clock.
    pub fn fold_lost<'a>(
        &mut self,
        keys: impl IntoIterator<Item = &'a RecordKey>,
        error: &str,
        now: SystemTime,
        clock: RetryClock,
    ) {
        for key in keys {
            if let Some(s) = self.records.get_mut(key)
                && matches!(s.kind, RecordStateKind::InFlight | RecordStateKind::Pending)
            {
                s.kind = RecordStateKind::Failed;
                s.last_error = error.to_string();
                s.reason = format!("no result: {error}");
                s.next_retry = Some(now + clock.delay(s.attempts.max(1)));
                s.updated = Some(now);
            }
        }
    }

    /// Marks `key` converged: its entry goes away (a converged record needs none).
    fn converged(&mut self, key: &RecordKey, now: SystemTime) {
        if self.records.remove(key).is_none() {
            return; // was converged already: keep its original time
        }
        if self.recent.insert(key.clone(), now).is_none() {
            self.recent_order.push_back(key.clone());
        }
        while self.recent_order.len() > RECENT_CONVERGED {
            if let Some(old) = self.recent_order.pop_front() {
                self.recent.remove(&old);
            }
        }
    }
}

/// The desired records of the names being folded, as the fold reads them.
pub trait DesiredLookup {
    fn rrset(&self, key: &RecordKey) -> Option<RRSet>;
    fn contains(&self, key: &RecordKey) -> bool;
}

impl DesiredLookup for BTreeMap<RecordKey, crate::desired::DesiredRecord> {
    fn rrset(&self, key: &RecordKey) -> Option<RRSet> {
        self.get(key).map(|d| d.rrset(key))
    }

    fn contains(&self, key: &RecordKey) -> bool {
        self.contains_key(key)
    }
}
