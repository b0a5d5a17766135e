//! A live source's snapshots taken as patches ([`live_patch`], then
//! [`DesiredIndex::patch_live`], or the whole update where either declines) leave the
//! index where the whole updates leave it, whatever the snapshots hold: refused names,
//! CNAME clashes, duplicates, another source's claims at the same names, merged or
//! not.
use super::live::{Fingerprint, by_key, live_patch};
use crate::config::ZoneConfig;
use crate::desired::DesiredIndex;
use crate::source::{DesiredEntry, EntryKey, Origin, SourceError};
use dnsplane_common::{Name, RecordType};
use proptest::prelude::{ProptestConfig, Strategy};
use proptest::test_runner::TestRunner;
use proptest::{prop_assert, prop_assert_eq};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Name `n`: one reserved, one outside every zone, the others in `example.com.` or
/// its sub-zone.
fn name(n: usize) -> String {
    match n {
        0 => "_dnsplane-a.example.com".into(),
        1 => "x.example.org".into(),
        n if n % 2 == 0 => format!("h{n}.example.com"),
        n => format!("h{n}.sub.example.com"),
    }
}
const TYPES: [RecordType; 3] = [RecordType::A, RecordType::Cname, RecordType::Txt];

fn zones() -> Vec<ZoneConfig> {
    vec![
        ZoneConfig::new(Name::parse("example.com").unwrap(), "a"),
        ZoneConfig {
            merge: crate::config::Merge::Union,
            ..ZoneConfig::new(Name::parse("sub.example.com").unwrap(), "a")
        },
    ]
}

/// An entry from picks: (name, type, value, resource) indices.
fn entry(&(n, t, v, r): &(usize, usize, usize, usize)) -> DesiredEntry {
    let rtype = TYPES[t];
    let value = match rtype {
        RecordType::A => format!("192.0.2.{v}"),
        RecordType::Cname => format!("t{v}.example.net"),
        _ => format!("text {v}"),
    };
    DesiredEntry {
        name: Name::parse(&name(n)).unwrap(),
        rtype,
        ttl: None,
        values: vec![dnsplane_common::rdata::canonicalize(rtype, &value).unwrap()],
        set: dnsplane_common::SetId::NONE,
        properties: Vec::new(),
        // Labels on some: they follow a patch as they follow a whole update.
        labels: match r {
            2 => crate::source::Labels::of([("tenant", "t2")]).unwrap(),
            _ => Default::default(),
        },
        origin: Origin {
            source: "netbox".into(),
            location: format!("https://netbox/ipam/ip-addresses/{r}/").into(),
            resource: format!("ipam/ip-addresses/{r}").into(),
        },
    }
}

fn source_error(i: usize) -> SourceError {
    SourceError {
        source: "netbox".into(),
        location: format!("https://netbox/ipam/ip-addresses/{i}/"),
        record: format!("bad{i}.example.com"),
        message: "not a valid name".into(),
    }
}

/// What a reader of the index sees: every zone's records, the errors (sorted: their
/// order across kinds is no contract), and what each source has shadowed.
fn seen(index: &DesiredIndex) -> String {
    let mut errors: Vec<String> = index.errors().iter().map(|e| format!("{e:?}")).collect();
    errors.sort();
    let zones: Vec<String> = zones()
        .iter()
        .map(|z| format!("{:?}", index.zone(&z.name)))
        .collect();
    let labels: Vec<String> = index
        .source_records("live")
        .iter()
        .map(|(r, l)| format!("{} {l:?}", r.key))
        .collect();
    format!(
        "{zones:?}\n{errors:?}\n{labels:?}\n{:?}\n{:?}\n{:?}",
        index.shadowed("live"),
        index.shadowed("file:other"),
        index.notices()
    )
}

fn snapshot(picks: &[Pick]) -> Vec<DesiredEntry> {
    picks.iter().map(entry).collect()
}

/// A pick: (name, type, value, resource) indices.
type Pick = (usize, usize, usize, usize);

fn pick() -> impl Strategy<Value = Pick> {
    (0usize..24, 0usize..3, 0usize..2, 0usize..3)
}

/// A step: a few edits of the last snapshot (0: replace, 1: remove, 2: add the pick),
/// and how many errors of its own the source reports.
type Step = (Vec<(u8, usize, Pick)>, usize);

fn apply(picks: &mut Vec<Pick>, edits: &[(u8, usize, Pick)]) {
    for &(op, at, p) in edits {
        match op {
            0 if !picks.is_empty() => {
                let i = at % picks.len();
                picks[i] = p;
            }
            1 if !picks.is_empty() => {
                picks.remove(at % picks.len());
            }
            _ => picks.push(p),
        }
    }
}

#[test]
fn snapshots_taken_as_patches_end_where_whole_updates_do() {
    let steps = proptest::collection::vec(
        (
            proptest::collection::vec((0u8..3, 0usize..64, pick()), 1..3),
            0usize..3,
        ),
        1..12,
    );
    let case = (
        proptest::collection::vec(pick(), 0..4),
        proptest::collection::vec(pick(), 0..16),
        steps,
    );
    let as_patches = AtomicUsize::new(0);
    let mut runner = TestRunner::new(ProptestConfig::with_cases(512));
    runner
        .run(&case, |(other, mut picks, steps): (Vec<Pick>, Vec<Pick>, Vec<Step>)| {
            let mut whole = DesiredIndex::new(&zones());
            let mut patched = DesiredIndex::new(&zones());
            whole.update_source("file:other", &snapshot(&other), Vec::new());
            patched.update_source("file:other", &snapshot(&other), Vec::new());
            let mut last: Option<HashMap<EntryKey, Fingerprint>> = None;
            for (i, (edits, errors)) in steps.iter().enumerate() {
                if i > 0 {
                    apply(&mut picks, edits);
                }
                let entries = snapshot(&picks);
                let errors: Vec<SourceError> = (0..*errors).map(source_error).collect();
                let expected = whole.update_source("live", &entries, errors.clone());
                let by_patch = last
                    .as_ref()
                    .and_then(|held| live_patch(held, &entries))
                    .and_then(|p| {
                        patched.patch_live(
                            "live",
                            (&p.upserts, &p.deletes),
                            &entries,
                            errors.clone(),
                        )
                    });
                match by_patch {
                    Some(touched) => {
                        as_patches.fetch_add(1, Ordering::Relaxed);
                        // Every name whose records changed is re-planned.
                        for (zone, names) in &expected {
                            for name in names {
                                prop_assert!(
                                    touched.get(zone).is_some_and(|t| t.contains(name)),
                                    "{name} changed but is not touched: {touched:?} vs {expected:?}"
                                );
                            }
                        }
                    }
                    None => {
                        patched.update_source("live", &entries, errors);
                    }
                }
                last = Some(by_key(&entries));
                prop_assert_eq!(seen(&patched), seen(&whole));
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // The patch path itself was under test, not only its fallback.
    let taken = as_patches.load(Ordering::Relaxed);
    assert!(taken > 500, "only {taken} steps went as patches");
}

/// A one-object change of a large source goes as a patch of that object alone, and
/// the index takes it as one; a duplicate key, or a change of more than a quarter of
/// the source, goes whole. Labels and origin are part of what is compared.
#[test]
fn a_small_change_is_a_patch_and_a_large_one_is_not() {
    let picks: Vec<Pick> = (2..7).map(|n| (n, 0, 0, n)).collect();
    let entries = snapshot(&picks);
    let held = by_key(&entries);
    let same = live_patch(&held, &entries).expect("a patch");
    assert!(same.upserts.is_empty() && same.deletes.is_empty());
    let mut renamed = entries.clone();
    renamed[0] = entry(&(20, 0, 0, 0));
    let p = live_patch(&held, &renamed).expect("a patch");
    assert_eq!(p.upserts, vec![renamed[0].clone()]);
    assert_eq!(p.deletes, vec![entries[0].entry_key()]);
    let mut index = DesiredIndex::new(&zones());
    index.update_source("live", &entries, Vec::new());
    let touched = index
        .patch_live("live", (&p.upserts, &p.deletes), &renamed, Vec::new())
        .expect("the index takes it as a patch");
    assert_eq!(touched.values().map(|n| n.len()).sum::<usize>(), 2);
    // The same data from another object, or with other labels: a change.
    let mut moved = entries.clone();
    moved[1] = entry(&(3, 0, 0, 1));
    moved[2] = entry(&(4, 0, 0, 2));
    assert_eq!(live_patch(&held, &moved).expect("a patch").upserts.len(), 2);
    let mut twice = entries.clone();
    twice.push(entry(&(3, 0, 1, 9)));
    assert!(
        live_patch(&held, &twice).is_none(),
        "h3.sub.example.com A twice"
    );
    assert!(live_patch(&held, &entries[..2]).is_none(), "3 of 5 deleted");
    // A source that suddenly holds nothing goes whole, before the mass-change guard,
    // as before: never as a patch of deletes.
    assert!(live_patch(&held, &[]).is_none(), "everything deleted");
}
