//! A live source's snapshots taken as patches ([`live_patch`], then
//! [`DesiredIndex::patch_live`], or the whole update where either declines) leave the
//! index where the whole updates leave it, whatever the snapshots hold: refused names,
//! CNAME clashes, duplicates, another source's claims at the same names.
use super::live::live_patch;
use crate::config::ZoneConfig;
use crate::desired::DesiredIndex;
use crate::source::{DesiredEntry, EntryKey, Origin, SourceError};
use dnsplane_common::{Name, RecordType};
use std::collections::HashMap;

const NAMES: [&str; 6] = [
    "a.example.com",
    "b.example.com",
    "c.sub.example.com",
    "_dnsplane-a.example.com",
    "x.example.org",
    "d.example.com",
];
const TYPES: [RecordType; 3] = [RecordType::A, RecordType::Cname, RecordType::Txt];

fn zones() -> Vec<ZoneConfig> {
    ["example.com", "sub.example.com"]
        .iter()
        .map(|z| ZoneConfig::new(Name::parse(z).unwrap(), "a"))
        .collect()
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
        name: Name::parse(NAMES[n]).unwrap(),
        rtype,
        ttl: None,
        values: vec![dnsplane_common::rdata::canonicalize(rtype, &value).unwrap()],
        set: dnsplane_common::SetId::NONE,
        properties: Vec::new(),
        labels: Default::default(),
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
    format!(
        "{zones:?}\n{errors:?}\n{:?}\n{:?}",
        index.shadowed("live"),
        index.shadowed("file:other")
    )
}

fn snapshot(picks: &[(usize, usize, usize, usize)]) -> Vec<DesiredEntry> {
    picks.iter().map(entry).collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
    #[test]
    fn snapshots_taken_as_patches_end_where_whole_updates_do(
        other in proptest::collection::vec((0usize..6, 0usize..3, 0usize..2, 0usize..2), 0..4),
        steps in proptest::collection::vec(
            (proptest::collection::vec((0usize..6, 0usize..3, 0usize..2, 0usize..3), 0..8), 0usize..3),
            1..10,
        ),
    ) {
        let mut whole = DesiredIndex::new(&zones());
        let mut patched = DesiredIndex::new(&zones());
        whole.update_source("file:other", &snapshot(&other), Vec::new());
        patched.update_source("file:other", &snapshot(&other), Vec::new());
        let mut last: Option<HashMap<EntryKey, DesiredEntry>> = None;
        for (picks, errors) in steps {
            let entries = snapshot(&picks);
            let errors: Vec<SourceError> = (0..errors).map(source_error).collect();
            let expected = whole.update_source("live", &entries, errors.clone());
            let by_patch = last
                .as_ref()
                .and_then(|held| live_patch(held, &entries))
                .and_then(|p| patched.patch_live("live", &p.upserts, &p.deletes, errors.clone()));
            match by_patch {
                Some(touched) => {
                    // Every name whose records changed is re-planned.
                    for (zone, names) in &expected {
                        for name in names {
                            proptest::prop_assert!(
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
            last = Some(entries.into_iter().map(|e| (e.entry_key(), e)).collect());
            proptest::prop_assert_eq!(seen(&patched), seen(&whole));
        }
    }
}

/// A one-object change of a large source goes as a patch of that object alone; a
/// duplicate key, or a change of more than a quarter of the source, goes whole.
#[test]
fn a_small_change_is_a_patch_and_a_large_one_is_not() {
    let picks: Vec<(usize, usize, usize, usize)> = (0..5).map(|n| (n, 0, 0, n)).collect();
    let entries = snapshot(&picks);
    let held: HashMap<EntryKey, DesiredEntry> =
        entries.iter().map(|e| (e.entry_key(), e.clone())).collect();
    let same = live_patch(&held, &entries).expect("a patch");
    assert!(same.upserts.is_empty() && same.deletes.is_empty());
    let mut renamed = entries.clone();
    renamed[0] = entry(&(5, 0, 0, 0));
    let p = live_patch(&held, &renamed).expect("a patch");
    assert_eq!(p.upserts, vec![renamed[0].clone()]);
    assert_eq!(p.deletes, vec![entries[0].entry_key()]);
    let mut twice = entries.clone();
    twice.push(entry(&(1, 0, 1, 9)));
    assert!(live_patch(&held, &twice).is_none(), "b.example.com A twice");
    assert!(live_patch(&held, &entries[..2]).is_none(), "3 of 5 deleted");
}
