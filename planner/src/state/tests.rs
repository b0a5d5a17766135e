use super::*;
use crate::desired::DesiredRecord;
use crate::plan::ZonePlan;
use crate::plan::{Blocked, PlannedChange};
use dnsplane_common::{Change, ChangeKind, RRSetOp, RecordType};
use dnsplane_common::{Name, Outcome, RecordKey, RecordResult};
use std::collections::{BTreeMap, BTreeSet};

const CLOCK: RetryClock = RetryClock {
    min: Duration::from_millis(500),
    max: Duration::from_secs(30),
};

fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)
}

fn key(label: &str) -> RecordKey {
    let zone = Name::parse("example.com").unwrap();
    RecordKey::new(zone.clone(), zone.prepend(label).unwrap(), RecordType::A)
}

fn rrset(label: &str, ip: &str) -> RRSet {
    RRSet::new(key(label), 300, &[ip]).unwrap()
}

fn desired(records: &[RRSet]) -> BTreeMap<RecordKey, DesiredRecord> {
    crate::desired::desired_map(records, "test", "test")
}

fn create(r: &RRSet) -> PlannedChange {
    PlannedChange {
        change: Change::new(ChangeKind::Create, vec![RRSetOp::create(r.clone())]),
        reason: "absent".into(),
    }
}

fn plan_of(changes: Vec<PlannedChange>, blocked: Vec<Blocked>) -> ZonePlan {
    ZonePlan {
        changes,
        blocked,
        converged: 0,
    }
}

/// The record `a` (192.0.2.1), desired, planned as a create and folded into a new
/// table at [`t0`]: the record, the desired state, the change and the table.
fn planned_a() -> (
    RRSet,
    BTreeMap<RecordKey, DesiredRecord>,
    PlannedChange,
    StateTable,
) {
    let r = rrset("a", "192.0.2.1");
    let want = desired(std::slice::from_ref(&r));
    let change = create(&r);
    let mut table = StateTable::default();
    let mut plan = plan_of(vec![change.clone()], vec![]);
    table.fold_plan(|_| true, &want, |_| None, &mut plan, t0(), CLOCK);
    (r, want, change, table)
}

/// Folds `change`'s `outcome` for `key` into `table` at `at`: the delay before the
/// record is sent again.
fn fold(
    table: &mut StateTable,
    key: &RecordKey,
    change: &PlannedChange,
    outcome: Outcome,
    at: SystemTime,
) -> Option<Duration> {
    table.fold_result(key, &result(change, outcome), None, at, CLOCK)
}

fn result(change: &PlannedChange, outcome: Outcome) -> RecordResult {
    RecordResult::new(change.change.id.clone(), outcome).with_message("m")
}

#[test]
fn backoff_is_capped_exponential() {
    let (min, max) = (Duration::from_millis(500), Duration::from_secs(30));
    let d: Vec<u128> = (1..=9)
        .map(|a| retry_delay(a, min, max).as_millis())
        .collect();
    assert_eq!(d, [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    assert_eq!(retry_delay(u32::MAX, min, max), max);
}

/// plan → in flight → result: each outcome leaves the state and the retry time its
/// row in docs/reliability.md's table of outcomes promises.
#[test]
fn each_outcome_folds_into_its_state_and_clock() {
    for (outcome, kind, retry) in [
        (Outcome::Applied, None, None),
        (Outcome::AlreadyApplied, None, None),
        (
            Outcome::Conflict,
            Some(RecordStateKind::Conflict),
            Some(CLOCK.min),
        ),
        (Outcome::Invalid, Some(RecordStateKind::Invalid), None),
        (
            Outcome::Deferred,
            Some(RecordStateKind::Deferred),
            Some(Duration::from_secs(7)),
        ),
        (
            Outcome::Failed,
            Some(RecordStateKind::Failed),
            Some(CLOCK.min),
        ),
        (
            Outcome::RejectedPermanent,
            Some(RecordStateKind::Rejected),
            Some(CLOCK.max),
        ),
    ] {
        let r = rrset("a", "192.0.2.1");
        let want = desired(std::slice::from_ref(&r));
        let change = create(&r);
        let mut plan = plan_of(vec![change.clone()], vec![]);
        let mut table = StateTable::default();
        let withheld = table.fold_plan(|_| true, &want, |_| None, &mut plan, t0(), CLOCK);
        assert_eq!(withheld, 0);
        assert_eq!(table.get(&r.key).unwrap().kind, RecordStateKind::Pending);
        table.in_flight(&r.key, t0());
        assert_eq!(table.get(&r.key).unwrap().kind, RecordStateKind::InFlight);
        let mut res = result(&change, outcome);
        if outcome == Outcome::Deferred {
            res.retry_after = Some(Duration::from_secs(7));
        }
        let delay = table.fold_result(&r.key, &res, None, t0(), CLOCK);
        assert_eq!(delay, retry, "{outcome}");
        match kind {
            None => {
                assert!(
                    table.get(&r.key).is_none(),
                    "{outcome}: converged has no entry"
                );
                assert_eq!(table.converged_at(&r.key), Some(t0()));
            }
            Some(kind) => {
                let s = table.get(&r.key).unwrap();
                assert_eq!(s.kind, kind, "{outcome}");
                assert_eq!(s.next_retry, retry.map(|d| t0() + d), "{outcome}");
                assert_eq!(s.reason, format!("{outcome}: m"));
                assert_eq!(s.attempts, 1);
            }
        }
    }
}

/// A record in conflict is withheld from plans until its clock runs out; then it is
/// sent again, and the backoff doubles.
#[test]
fn a_conflict_waits_for_its_clock_and_the_clock_doubles() {
    let (r, want, change, mut table) = planned_a();
    table.in_flight(&r.key, t0());
    fold(&mut table, &r.key, &change, Outcome::Conflict, t0());

    // Before the clock: withheld, and the dry run says so without folding.
    let early = t0() + Duration::from_millis(100);
    let plan = plan_of(vec![change.clone()], vec![]);
    let held = table.withheld(&plan, &want, early);
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].1.kind, RecordStateKind::Conflict);
    let mut plan = plan_of(vec![change.clone()], vec![]);
    assert_eq!(
        table.fold_plan(|_| true, &want, |_| None, &mut plan, early, CLOCK),
        1
    );
    assert!(plan.changes.is_empty());
    assert_eq!(table.get(&r.key).unwrap().kind, RecordStateKind::Conflict);

    // Due: sent again; a second conflict doubles the delay.
    let later = t0() + CLOCK.min;
    let mut plan = plan_of(vec![change.clone()], vec![]);
    assert!(table.withheld(&plan, &want, later).is_empty());
    assert_eq!(
        table.fold_plan(|_| true, &want, |_| None, &mut plan, later, CLOCK),
        0
    );
    table.in_flight(&r.key, later);
    let delay = fold(&mut table, &r.key, &change, Outcome::Conflict, later);
    assert_eq!(delay, Some(CLOCK.min * 2));
    assert_eq!(table.get(&r.key).unwrap().attempts, 2);
}

/// An invalid record waits for its desired state to change, however long it takes.
#[test]
fn an_invalid_record_waits_for_a_new_desired_state() {
    let (r, want, change, mut table) = planned_a();
    fold(&mut table, &r.key, &change, Outcome::Invalid, t0());
    let much_later = t0() + Duration::from_secs(86_400);
    let plan = plan_of(vec![change.clone()], vec![]);
    assert_eq!(table.withheld(&plan, &want, much_later).len(), 1);

    let fixed = rrset("a", "192.0.2.2");
    let want = desired(std::slice::from_ref(&fixed));
    let plan = plan_of(vec![create(&fixed)], vec![]);
    assert!(table.withheld(&plan, &want, t0()).is_empty());
}

/// Records held back at plan time: conflicts get a clock, policy holds do not; a record
/// the next plan neither changes nor holds back has converged.
#[test]
fn blocked_records_and_convergence_by_absence() {
    let r = rrset("a", "192.0.2.1");
    let p = rrset("p", "192.0.2.9");
    let want = desired(&[r.clone(), p.clone()]);
    let mut table = StateTable::default();
    let blocked = vec![
        Blocked {
            key: r.key.clone(),
            desired: Some(r.clone()),
            observed: Some(rrset("a", "198.51.100.1")),
            observed_owner: Some("other".into()),
            reason: ConflictReason::OwnedByOther,
            message: "owned by other".into(),
        },
        Blocked {
            key: p.key.clone(),
            desired: Some(p.clone()),
            observed: None,
            observed_owner: None,
            reason: ConflictReason::Unspecified,
            message: "policy create-only".into(),
        },
    ];
    let mut plan = plan_of(vec![], blocked);
    table.fold_plan(|_| true, &want, |_| None, &mut plan, t0(), CLOCK);
    let a = table.get(&r.key).unwrap();
    assert_eq!(a.kind, RecordStateKind::Conflict);
    assert_eq!(a.conflict_reason, ConflictReason::OwnedByOther);
    assert_eq!(a.observed_owner.as_deref(), Some("other"));
    assert_eq!(a.next_retry, Some(t0() + CLOCK.min));
    assert_eq!(table.get(&p.key).unwrap().next_retry, None);
    assert_eq!(table.next_retry(), Some(t0() + CLOCK.min));
    assert_eq!(
        table.due_names(t0() + CLOCK.min),
        BTreeSet::from([r.key.name.clone()])
    );

    // The other owner let go and the record is ours now: nothing planned, nothing held.
    let mut plan = plan_of(vec![], vec![]);
    table.fold_plan(|_| true, &want, |_| None, &mut plan, t0(), CLOCK);
    assert!(table.get(&r.key).is_none() && table.get(&p.key).is_none());
    let counts = table.counts(&want, true, &BTreeSet::new(), false);
    assert_eq!(counts.get(&RecordStateKind::Converged), Some(&2));
    // Before the first read, desired records are pending, not converged.
    let counts = table.counts(&want, false, &BTreeSet::new(), false);
    assert_eq!(counts.get(&RecordStateKind::Pending), Some(&2));
    assert_eq!(counts.get(&RecordStateKind::Converged), None);
}

/// A zone whose account refuses the read (a wrong API key) never read: its records are
/// rejected with the provider's reason, not pending forever.
#[test]
fn a_refused_zone_shows_its_records_rejected_with_the_reason() {
    let r = rrset("a", "192.0.2.1");
    let want = desired(std::slice::from_ref(&r));
    let table = StateTable::default();
    let counts = table.counts(&want, false, &BTreeSet::new(), true);
    assert_eq!(counts.get(&RecordStateKind::Rejected), Some(&1));
    assert_eq!(counts.get(&RecordStateKind::Pending), None);
    let why = "provider: 401 Unauthorized";
    let s = table.without_entry(&r.key, &r, false, false, Some(why));
    assert_eq!(s.kind, RecordStateKind::Rejected);
    assert!(s.reason.contains(why) && s.last_error == why, "{s:?}");
    // Once the zone has been read, the refusal of a later read does not hide what is
    // known: the record is converged.
    let s = table.without_entry(&r.key, &r, true, false, Some(why));
    assert_eq!(s.kind, RecordStateKind::Converged);
}

/// A plan scoped to some names leaves the other names' states alone.
#[test]
fn a_scoped_plan_folds_only_its_names() {
    let (r, s) = (rrset("a", "192.0.2.1"), rrset("b", "192.0.2.2"));
    let want = desired(&[r.clone(), s.clone()]);
    let mut table = StateTable::default();
    let mut plan = plan_of(vec![create(&r), create(&s)], vec![]);
    table.fold_plan(|_| true, &want, |_| None, &mut plan, t0(), CLOCK);
    let only_a = |n: &Name| n == &r.key.name;
    let mut plan = plan_of(vec![], vec![]);
    table.fold_plan(only_a, &want, |_| None, &mut plan, t0(), CLOCK);
    assert!(table.get(&r.key).is_none(), "a converged");
    assert_eq!(table.get(&s.key).unwrap().kind, RecordStateKind::Pending);
}

/// A stream that broke: what was sent and did not come back is FAILED with a retry.
#[test]
fn a_lost_stream_fails_what_got_no_result() {
    let r = rrset("a", "192.0.2.1");
    let s = rrset("b", "192.0.2.2");
    let want = desired(&[r.clone(), s.clone()]);
    let (cr, cs) = (create(&r), create(&s));
    let mut table = StateTable::default();
    let mut plan = plan_of(vec![cr.clone(), cs.clone()], vec![]);
    table.fold_plan(|_| true, &want, |_| None, &mut plan, t0(), CLOCK);
    table.in_flight(&r.key, t0());
    table.in_flight(&s.key, t0());
    table.fold_result(&r.key, &result(&cr, Outcome::Applied), None, t0(), CLOCK);
    table.fold_lost([&r.key, &s.key], "stream ended", t0(), CLOCK);
    assert!(
        table.get(&r.key).is_none(),
        "its result came: stays converged"
    );
    let b = table.get(&s.key).unwrap();
    assert_eq!(b.kind, RecordStateKind::Failed);
    assert_eq!(b.reason, "no result: stream ended");
    assert_eq!(b.next_retry, Some(t0() + CLOCK.min));
}

/// Counts by state with few or many records in flight, including states of keys that
/// are not desired (deletes in flight).
#[test]
fn counts_agree_whether_few_or_many_records_have_a_state() {
    let records: Vec<RRSet> = (0..200)
        .map(|i| rrset(&format!("h{i:03}"), "192.0.2.1"))
        .collect();
    let want = desired(&records);
    for with_state in [3usize, 150] {
        let mut table = StateTable::default();
        // States for some desired keys, and for as many undesired ones.
        for i in (0..with_state).map(|i| i * 200 / with_state.max(1)) {
            table.in_flight(&records[i].key, t0());
            table.in_flight(&key(&format!("gone{i:03}")), t0());
        }
        let counts = table.counts(&want, true, &BTreeSet::new(), false);
        assert_eq!(
            counts.get(&RecordStateKind::InFlight),
            Some(&(2 * with_state as u32)),
            "{with_state} states"
        );
        assert_eq!(
            counts.get(&RecordStateKind::Converged),
            Some(&(200 - with_state as u32)),
            "{with_state} states"
        );
    }
}
