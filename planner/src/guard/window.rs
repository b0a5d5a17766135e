//! The guard's memory: the deletes and updates it let through in a zone over the last
//! `[safety] window`, so that each new plan is weighed together with them.
//!
//! Why: a guard that weighs each plan alone lets a source shrink in slices, each under
//! the threshold (30 → 22 → 14 → 7 endpoints, a few seconds apart, deleted 55 % of a
//! zone without anyone asked). With the window the slices add up, and the one that
//! takes the total past the threshold is held.
//!
//! Counted per record (its key), so a record updated twice counts once, and a record
//! whose change failed and is planned again is not counted twice. An approval starts
//! the window afresh: the person saw the total and agreed to it. Pure: the caller
//! passes the time.
use super::Guarded;
use dnsplane_common::{ChangeKind, RecordKey};
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

/// What the window holds now: deletes and updates, counted per record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub deletes: usize,
    pub updates: usize,
}

impl Tally {
    pub fn total(&self) -> usize {
        self.deletes + self.updates
    }
}

/// One zone's window.
#[derive(Debug, Default)]
pub struct Window {
    /// Per record, the last destructive change let through and when.
    changes: HashMap<RecordKey, (ChangeKind, SystemTime)>,
}

impl Window {
    /// Remembers the deletes and updates of `items` (the changes a sync let through),
    /// at `now`. Creates and apex NS creates are not destructive and are left out.
    pub fn record<'a>(&mut self, items: impl IntoIterator<Item = &'a Guarded>, now: SystemTime) {
        for g in items {
            if matches!(g.kind, ChangeKind::Delete | ChangeKind::Update) {
                self.changes.insert(g.key.clone(), (g.kind, now));
            }
        }
    }

    /// Forgets what is older than `span` at `now`.
    pub fn expire(&mut self, span: Duration, now: SystemTime) {
        self.changes
            .retain(|_, (_, at)| match now.duration_since(*at) {
                Ok(age) => !span.is_zero() && age <= span,
                // A clock stepped back: kept until it passes again.
                Err(_) => !span.is_zero(),
            });
    }

    /// What the window holds, leaving out the records of `except` (a new plan's own
    /// changes, which it weighs itself).
    pub fn tally<'a>(&self, except: impl IntoIterator<Item = &'a Guarded>) -> Tally {
        let mut skip: Vec<&RecordKey> = except.into_iter().map(|g| &g.key).collect();
        skip.sort();
        let mut t = Tally::default();
        for (key, (kind, _)) in &self.changes {
            if skip.binary_search(&key).is_ok() {
                continue;
            }
            match kind {
                ChangeKind::Delete => t.deletes += 1,
                _ => t.updates += 1,
            }
        }
        t
    }

    /// Deletes and updates in the window.
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Starts the window afresh (an approval).
    pub fn clear(&mut self) {
        self.changes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dnsplane_common::{Name, RecordType};

    fn item(kind: ChangeKind, name: &str) -> Guarded {
        let zone = Name::parse("example.com.").unwrap();
        Guarded {
            key: RecordKey::new(
                zone,
                Name::parse(&format!("{name}.example.com")).unwrap(),
                RecordType::A,
            ),
            kind,
            id: name.into(),
            apex_ns: false,
        }
    }

    #[test]
    fn deletes_and_updates_are_remembered_per_record_until_they_expire() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut w = Window::default();
        w.record(
            &[
                item(ChangeKind::Delete, "a"),
                item(ChangeKind::Update, "b"),
                item(ChangeKind::Create, "c"),
            ],
            t0,
        );
        assert_eq!(
            w.tally([]),
            Tally {
                deletes: 1,
                updates: 1
            }
        );
        // The same record again counts once.
        w.record(
            &[item(ChangeKind::Update, "b")],
            t0 + Duration::from_secs(60),
        );
        assert_eq!(w.len(), 2);
        // A new plan's own records are weighed by the plan, not twice.
        let plan = [item(ChangeKind::Delete, "b")];
        assert_eq!(
            w.tally(&plan),
            Tally {
                deletes: 1,
                updates: 0
            }
        );
        // Ten minutes on, only `b` (renewed a minute later) is left.
        let span = Duration::from_secs(600);
        w.expire(span, t0 + Duration::from_secs(630));
        assert_eq!(
            w.tally([]),
            Tally {
                deletes: 0,
                updates: 1
            }
        );
        w.expire(span, t0 + Duration::from_secs(700));
        assert!(w.is_empty());
    }

    #[test]
    fn a_zero_window_remembers_nothing_and_an_approval_starts_afresh() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut w = Window::default();
        w.record(&[item(ChangeKind::Delete, "a")], t0);
        w.expire(Duration::ZERO, t0);
        assert!(w.is_empty());
        w.record(&[item(ChangeKind::Delete, "a")], t0);
        w.clear();
        assert_eq!(w.tally([]).total(), 0);
    }
}
