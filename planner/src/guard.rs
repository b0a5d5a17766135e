//! The mass-change guard: a plan that would delete or update more than a set fraction
//! of a zone's owned records, or touch the zone's apex NS, is *held* until a person
//! approves that exact plan.
//!
//! Why: a controller's worst failure is not a stuck batch but a deleted zone, and the
//! inputs that cause one only *look* valid (a source half-emptied by a bad merge, a
//! second deployment with a smaller source). octoDNS refuses such a plan without
//! `--force`; dnsplane does the same continuously: the destructive part of the plan
//! waits, creates go on (they cannot take anything off the internet).
//!
//! A held plan is named by a digest of its destructive changes (their stable ids, which
//! hash zone, key, before and after). `Approve` takes that digest, so an approval is
//! for the plan the person looked at: if the plan changed meanwhile, its digest differs
//! and it is held again. Pure: no I/O, unit-tested here.
//!
//! `[safety] mode = "approve"` widens the guard to every change: each non-empty plan
//! is held, creates included, under the same digest and `Approve` ([`weighed`],
//! [`take_weighed`]).
use crate::config::{SafetyConfig, SafetyMode};
use crate::plan::PlannedChange;
use dnsplane_common::{ChangeKind, Name, RecordKey, RecordType};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

pub mod window;

pub use window::{Tally, Window};

/// One change the guard weighs: a delete or update of an owned record, or any change
/// of the zone's apex NS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guarded {
    pub key: RecordKey,
    pub kind: ChangeKind,
    /// The change's stable id (hash of zone, key, before and after).
    pub id: String,
    pub apex_ns: bool,
}

/// What a held plan would do, as status shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldPlan {
    /// Names the approval is for (hex, 16 digits): see the module docs.
    pub digest: String,
    /// Creates among the held changes (only in approve mode: the guard lets creates
    /// through).
    pub creates: usize,
    pub deletes: usize,
    pub updates: usize,
    /// Changes to the zone's apex NS records among them (always need approval).
    pub apex_ns: usize,
    /// The zone's owned records when the plan was held.
    pub owned: usize,
    /// The held changes. A targeted sync of some names weighs its own changes together
    /// with these (at other names), so a mass deletion cannot slip through in pieces
    /// while a hold stands.
    pub items: Vec<Guarded>,
    /// Why it is held, one sentence.
    pub reason: String,
}

impl HeldPlan {
    /// The names of the held changes: what an approval re-plans.
    pub fn names(&self) -> BTreeSet<Name> {
        self.items.iter().map(|g| g.key.name.clone()).collect()
    }
}

fn is_apex_ns(zone: &Name, c: &PlannedChange) -> bool {
    let k = c.change.key();
    k.rtype == RecordType::Ns && &k.name == zone
}

/// True for the changes the guard weighs (see [`Guarded`]).
fn is_guarded(zone: &Name, c: &PlannedChange) -> bool {
    matches!(c.change.kind, ChangeKind::Delete | ChangeKind::Update) || is_apex_ns(zone, c)
}

/// The changes of `changes` the guard weighs.
pub fn guarded(zone: &Name, changes: &[PlannedChange]) -> Vec<Guarded> {
    to_items(zone, changes.iter().filter(|c| is_guarded(zone, c)))
}

/// The changes of `changes` that `cfg` weighs: in approve mode every change, else the
/// guarded ones.
pub fn weighed(cfg: &SafetyConfig, zone: &Name, changes: &[PlannedChange]) -> Vec<Guarded> {
    match cfg.mode {
        SafetyMode::Approve => to_items(zone, changes.iter()),
        _ => guarded(zone, changes),
    }
}

/// The changes [`weighed`] weighs, taken out (what a held plan does not send).
pub fn take_weighed(
    cfg: &SafetyConfig,
    zone: &Name,
    changes: &mut Vec<PlannedChange>,
) -> Vec<PlannedChange> {
    match cfg.mode {
        SafetyMode::Approve => std::mem::take(changes),
        _ => take_guarded(zone, changes),
    }
}

fn to_items<'a>(zone: &Name, changes: impl Iterator<Item = &'a PlannedChange>) -> Vec<Guarded> {
    changes
        .map(|c| Guarded {
            key: c.change.key().clone(),
            kind: c.change.kind,
            id: c.change.id.clone(),
            apex_ns: is_apex_ns(zone, c),
        })
        .collect()
}

/// The guard's verdict on `items` (the guarded changes of one sync's plan of a zone,
/// plus those still held at names the sync did not plan); `owned` counts the records
/// we own in the zone, asked only when there is something to weigh; `remembered` is
/// what the window ([`window`]) let through lately at other records, weighed together
/// with `items` against the records owned before it (`owned` plus its deletes).
/// `None`: let it through. `Some`: hold.
pub fn check(
    cfg: &SafetyConfig,
    items: Vec<Guarded>,
    owned: impl FnOnce() -> usize,
    remembered: Tally,
) -> Option<HeldPlan> {
    if items.is_empty() {
        return None;
    }
    if cfg.mode == SafetyMode::Approve {
        let owned = owned();
        return Some(held_plan(
            items,
            owned,
            "approve mode ([safety] mode = \"approve\") holds every plan".into(),
        ));
    }
    if cfg.is_off() {
        return None;
    }
    let owned = owned();
    let count = |k: ChangeKind| items.iter().filter(|g| g.kind == k).count();
    let (deletes, updates) = (count(ChangeKind::Delete), count(ChangeKind::Update));
    let apex_ns = items.iter().filter(|g| g.apex_ns).count();
    // The window's deletes were owned when it began.
    let before = owned + remembered.deletes;
    let destructive = deletes + updates + remembered.total();
    let over = before >= cfg.min_zone_records
        && destructive as f64 > cfg.max_change_fraction * before as f64;
    if !over && apex_ns == 0 {
        return None;
    }
    let reason = if over && remembered.total() > 0 {
        format!(
            "the plan would delete {deletes} and update {updates} records, which with the {} deleted and {} updated in the last {} makes {destructive} of the zone's {before} owned records (more than {:.0}%)",
            remembered.deletes,
            remembered.updates,
            humantime::format_duration(cfg.window),
            cfg.max_change_fraction * 100.0
        )
    } else if over {
        format!(
            "the plan would delete {deletes} and update {updates} of the zone's {owned} owned records (more than {:.0}%)",
            cfg.max_change_fraction * 100.0
        )
    } else {
        format!("the plan changes the zone's apex NS records ({apex_ns} change(s))")
    };
    Some(held_plan(items, owned, reason))
}

fn held_plan(items: Vec<Guarded>, owned: usize, reason: String) -> HeldPlan {
    let count = |k: ChangeKind| items.iter().filter(|g| g.kind == k).count();
    HeldPlan {
        digest: digest(items.iter().map(|g| g.id.as_str())),
        creates: count(ChangeKind::Create),
        deletes: count(ChangeKind::Delete),
        updates: count(ChangeKind::Update),
        apex_ns: items.iter().filter(|g| g.apex_ns).count(),
        owned,
        items,
        reason,
    }
}

/// The guarded changes of `changes`, taken out (what a held plan does not send).
pub fn take_guarded(zone: &Name, changes: &mut Vec<PlannedChange>) -> Vec<PlannedChange> {
    let (held, rest): (Vec<_>, Vec<_>) = std::mem::take(changes)
        .into_iter()
        .partition(|c| is_guarded(zone, c));
    *changes = rest;
    held
}

/// A digest of a set of change ids, independent of their order.
pub(crate) fn digest<'a>(ids: impl Iterator<Item = &'a str>) -> String {
    let sorted: BTreeSet<&str> = ids.collect();
    let mut h = Sha256::new();
    for id in sorted {
        h.update(id.as_bytes());
        h.update(b"\n");
    }
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dnsplane_common::{Change, RRSet, RRSetOp};

    fn zone() -> Name {
        Name::parse("example.com.").unwrap()
    }

    fn change(kind: ChangeKind, name: &str, rtype: RecordType, value: &str) -> PlannedChange {
        let key = RecordKey::new(zone(), Name::parse(name).unwrap(), rtype);
        let r = RRSet::new(key, 300, &[value.to_string()]).unwrap();
        let op = match kind {
            ChangeKind::Create => RRSetOp::create(r),
            ChangeKind::Delete => RRSetOp::delete(r),
            _ => {
                let old = RRSet::new(r.key.clone(), 60, &[value.to_string()]).unwrap();
                RRSetOp::update(old, r)
            }
        };
        PlannedChange {
            change: Change::new(kind, vec![op]),
            reason: String::new(),
        }
    }

    fn deletes(n: usize) -> Vec<PlannedChange> {
        (0..n)
            .map(|i| {
                change(
                    ChangeKind::Delete,
                    &format!("h{i}.example.com"),
                    RecordType::A,
                    "192.0.2.1",
                )
            })
            .collect()
    }

    fn cfg() -> SafetyConfig {
        SafetyConfig::default()
    }

    #[test]
    fn small_changes_and_creates_pass() {
        // 3 of 10 is not more than 30%.
        assert_eq!(
            check(
                &cfg(),
                guarded(&zone(), &deletes(3)),
                || 10,
                Tally::default()
            ),
            None
        );
        // Creates are never held, however many.
        let creates: Vec<_> = (0..100)
            .map(|i| {
                change(
                    ChangeKind::Create,
                    &format!("n{i}.example.com"),
                    RecordType::A,
                    "192.0.2.1",
                )
            })
            .collect();
        assert_eq!(
            check(&cfg(), guarded(&zone(), &creates), || 10, Tally::default()),
            None
        );
        // Zones below min_zone_records are not weighed.
        assert_eq!(
            check(
                &cfg(),
                guarded(&zone(), &deletes(9)),
                || 9,
                Tally::default()
            ),
            None
        );
    }

    #[test]
    fn more_than_the_fraction_is_held_with_counts_and_names() {
        let mut plan = deletes(4);
        plan.push(change(
            ChangeKind::Update,
            "u.example.com",
            RecordType::A,
            "192.0.2.9",
        ));
        plan.push(change(
            ChangeKind::Create,
            "new.example.com",
            RecordType::A,
            "192.0.2.9",
        ));
        let held = check(&cfg(), guarded(&zone(), &plan), || 10, Tally::default()).expect("held");
        assert_eq!((held.deletes, held.updates, held.owned), (4, 1, 10));
        assert_eq!(held.names().len(), 5);
        assert!(
            held.reason.contains("delete 4 and update 1"),
            "{}",
            held.reason
        );
        assert_eq!(held.digest.len(), 16);

        // Only the guarded changes are taken out.
        let taken = take_guarded(&zone(), &mut plan);
        assert_eq!(taken.len(), 5);
        assert_eq!(plan.len(), 1);
        assert_eq!(plan[0].change.kind, ChangeKind::Create);
    }

    #[test]
    fn the_digest_names_the_exact_plan() {
        let a = check(
            &cfg(),
            guarded(&zone(), &deletes(5)),
            || 10,
            Tally::default(),
        )
        .unwrap();
        let mut reversed = deletes(5);
        reversed.reverse();
        let b = check(&cfg(), guarded(&zone(), &reversed), || 10, Tally::default()).unwrap();
        assert_eq!(a.digest, b.digest, "order does not matter");
        let c = check(
            &cfg(),
            guarded(&zone(), &deletes(6)),
            || 10,
            Tally::default(),
        )
        .unwrap();
        assert_ne!(a.digest, c.digest, "another plan, another digest");
    }

    #[test]
    fn apex_ns_always_needs_approval_unless_the_guard_is_off() {
        let ns = vec![change(
            ChangeKind::Update,
            "example.com",
            RecordType::Ns,
            "ns1.example.net.",
        )];
        let held = check(&cfg(), guarded(&zone(), &ns), || 1000, Tally::default()).expect("held");
        assert_eq!(held.apex_ns, 1);
        assert!(held.reason.contains("apex NS"), "{}", held.reason);
        // A create of apex NS too.
        let ns = vec![change(
            ChangeKind::Create,
            "example.com",
            RecordType::Ns,
            "ns1.example.net.",
        )];
        assert!(check(&cfg(), guarded(&zone(), &ns), || 0, Tally::default()).is_some());
        // NS below the apex is an ordinary record (a delegation).
        let sub = vec![change(
            ChangeKind::Update,
            "sub.example.com",
            RecordType::Ns,
            "ns1.example.net.",
        )];
        assert_eq!(
            check(&cfg(), guarded(&zone(), &sub), || 1000, Tally::default()),
            None
        );

        let off = SafetyConfig {
            max_change_fraction: 1.0,
            ..cfg()
        };
        assert_eq!(
            check(&off, guarded(&zone(), &ns), || 0, Tally::default()),
            None
        );
        assert_eq!(
            check(
                &off,
                guarded(&zone(), &deletes(10)),
                || 10,
                Tally::default()
            ),
            None
        );
    }

    /// Approve mode holds every non-empty plan, creates included, whatever its size;
    /// an empty plan is not held.
    #[test]
    fn approve_mode_holds_every_plan() {
        let approve = SafetyConfig {
            mode: SafetyMode::Approve,
            ..cfg()
        };
        let mut plan = vec![change(
            ChangeKind::Create,
            "new.example.com",
            RecordType::A,
            "192.0.2.9",
        )];
        assert_eq!(
            check(
                &cfg(),
                weighed(&cfg(), &zone(), &plan),
                || 100,
                Tally::default()
            ),
            None
        );
        let held = check(
            &approve,
            weighed(&approve, &zone(), &plan),
            || 100,
            Tally::default(),
        )
        .expect("held");
        assert_eq!((held.creates, held.deletes, held.updates), (1, 0, 0));
        assert!(held.reason.contains("approve mode"), "{}", held.reason);
        assert_eq!(
            check(
                &approve,
                weighed(&approve, &zone(), &[]),
                || 100,
                Tally::default()
            ),
            None
        );
        let taken = take_weighed(&approve, &zone(), &mut plan);
        assert_eq!((taken.len(), plan.len()), (1, 0), "nothing is left to send");
        // Even with the fraction guard off.
        let off = SafetyConfig {
            max_change_fraction: 1.0,
            ..approve
        };
        assert!(
            check(
                &off,
                weighed(&off, &zone(), &taken),
                || 100,
                Tally::default()
            )
            .is_some()
        );
    }

    /// The issue-28 slices: 42 owned, then 8 deletes (19 %) let through; 8 more are
    /// 24 % of the 34 left but, with the window's 8, 16 of the 42 owned before it
    /// (38 %): held, and the reason says why.
    #[test]
    fn slices_add_up_in_the_window() {
        let first = check(
            &cfg(),
            guarded(&zone(), &deletes(8)),
            || 42,
            Tally::default(),
        );
        assert_eq!(first, None);
        let remembered = Tally {
            deletes: 8,
            updates: 0,
        };
        assert_eq!(
            check(
                &cfg(),
                guarded(&zone(), &deletes(8)),
                || 34,
                Tally::default()
            ),
            None,
            "alone, the second slice passes"
        );
        let held = check(&cfg(), guarded(&zone(), &deletes(8)), || 34, remembered).expect("held");
        assert_eq!((held.deletes, held.owned), (8, 34));
        assert!(
            held.reason
                .contains("8 deleted and 0 updated in the last 10m")
                && held.reason.contains("16 of the zone's 42 owned records"),
            "{}",
            held.reason
        );
        // Off is off, whatever the window holds.
        let off = SafetyConfig {
            max_change_fraction: 1.0,
            ..cfg()
        };
        assert_eq!(
            check(&off, guarded(&zone(), &deletes(8)), || 34, remembered),
            None
        );
    }
}
