//! The chunked entries against a plain `BTreeMap`, and sharing between two views.
use super::*;
use dnsplane_common::{RRData, RRSet, RecordType};
use dnsplane_testing::records::key;
use std::collections::BTreeMap;

fn k(i: u64) -> RecordKey {
    key(&format!("r{i:05}.example.com"), RecordType::A)
}

fn seen(i: u64, v: u64) -> Seen {
    let r = RRSet::new(k(i), 60, &[format!("192.0.2.{}", v % 250)]).unwrap();
    Seen {
        data: Some(RRData::of(&r)),
        owner: None,
    }
}

/// A small, fixed pseudo-random sequence (no dependency, same every run).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

fn assert_same(e: &Entries, model: &BTreeMap<RecordKey, Seen>) {
    assert_eq!(e.len(), model.len());
    assert!(
        e.iter().eq(model.iter()),
        "iteration differs from the model"
    );
    // Cut where a view built in one go from the same entries is cut: what lets two
    // targets' views share their chunks.
    let rebuilt = Entries::from_sorted(model.iter().map(|(k, s)| (k.clone(), s.clone())).collect());
    assert_eq!(e.cuts(), rebuilt.cuts());
}

#[test]
fn inserts_and_removes_keep_the_map_and_its_cuts() {
    let mut rng = Lcg(7);
    let mut e = Entries::default();
    let mut model = BTreeMap::new();
    for step in 0..6_000 {
        let i = rng.next(3_000);
        match rng.next(3) {
            0 | 1 => {
                let s = seen(i, step);
                assert_eq!(e.insert(k(i), s.clone()), model.insert(k(i), s));
            }
            _ => assert_eq!(e.remove(&k(i)), model.remove(&k(i))),
        }
        if step % 500 == 0 {
            assert_same(&e, &model);
        }
        assert_eq!(e.get(&k(i)), model.get(&k(i)));
    }
    assert_same(&e, &model);
    assert!(
        e.cuts().len() > 10,
        "the entries are in chunks: {}",
        e.cuts().len()
    );
    for i in [0, 1, 1_500, 2_999, 3_000] {
        let from: Vec<_> = e.starting_at(&k(i)).collect();
        let want: Vec<_> = model.range(k(i)..).collect();
        assert_eq!(from, want, "from {i}");
    }
    // Emptied, then used again.
    for i in 0..3_000 {
        e.remove(&k(i));
    }
    assert!(e.is_empty() && e.cuts().is_empty());
    e.insert(k(5), seen(5, 5));
    assert_eq!(e.get(&k(5)), Some(&seen(5, 5)));
}

/// Two targets' views with the same records share them all, whatever order they came
/// in; a change to one copies only its chunk, and never shows in the other.
#[test]
fn equal_views_share_their_chunks_and_copy_on_change() {
    let all: Vec<(RecordKey, Seen)> = (0..4_000).map(|i| (k(i), seen(i, i))).collect();
    let a = Entries::from_sorted(all.clone());
    let mut b = Entries::default();
    let mut rng = Lcg(11);
    let mut order: Vec<usize> = (0..all.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.next(i as u64 + 1) as usize);
    }
    for i in order {
        b.insert(all[i].0.clone(), all[i].1.clone());
    }
    let chunks = a.cuts().len();
    assert_eq!(b.share_with(&a), chunks);
    assert_eq!(b.chunks_shared_with(&a), chunks);
    // Sharing again finds nothing new.
    assert_eq!(b.share_with(&a), 0);

    *b.get_mut(&k(100)).unwrap() = seen(100, 7);
    b.remove(&k(2_000));
    assert_eq!(
        a.get(&k(100)),
        Some(&seen(100, 100)),
        "the other view changed"
    );
    assert!(a.get(&k(2_000)).is_some(), "the other view lost a record");
    assert!(b.chunks_shared_with(&a) >= chunks - 3);
    assert_eq!(b.get(&k(100)), Some(&seen(100, 7)));

    // Changed back, they share again.
    *b.get_mut(&k(100)).unwrap() = seen(100, 100);
    b.insert(all[2_000].0.clone(), all[2_000].1.clone());
    b.shrink();
    let before = b.chunks_shared_with(&a);
    assert!(before < chunks);
    assert_eq!(before + b.share_with(&a), chunks);
    assert_eq!(b.chunks_shared_with(&a), chunks);
}

/// Views that differ share only what is equal.
#[test]
fn different_views_share_only_equal_chunks() {
    let a = Entries::from_sorted((0..2_000).map(|i| (k(i), seen(i, i))).collect());
    let mut b = Entries::from_sorted((0..2_000).map(|i| (k(i), seen(i, i + 1))).collect());
    assert_eq!(b.share_with(&a), 0);
    let mut c = Entries::from_sorted((0..2_000).map(|i| (k(i), seen(i, i))).collect());
    *c.get_mut(&k(0)).unwrap() = seen(0, 9);
    assert_eq!(c.share_with(&a), a.cuts().len() - 1);
    assert_eq!(c.get(&k(0)), Some(&seen(0, 9)));
    assert!(c.iter().skip(1).eq(a.iter().skip(1)));
}

/// Built beside a sibling, a view takes the sibling's chunks where they are equal and
/// allocates only the others.
#[test]
fn a_view_built_beside_a_sibling_takes_its_equal_chunks() {
    let a = Entries::from_sorted((0..3_000).map(|i| (k(i), seen(i, i))).collect());
    let mut entries: Vec<_> = (0..3_000).map(|i| (k(i), seen(i, i))).collect();
    entries[1_500].1 = seen(1_500, 1);
    entries.remove(2_500);
    let b = Entries::from_sorted_sharing(entries.clone(), Some(&a));
    assert!(
        b.iter()
            .map(|(k, s)| (k.clone(), s.clone()))
            .eq(entries.iter().cloned())
    );
    assert_eq!(b.cuts(), Entries::from_sorted(entries).cuts());
    let chunks = b.cuts().len();
    let shared = b.chunks_shared_with(&a);
    assert!(
        shared + 2 <= chunks && shared + 3 >= chunks,
        "{shared} of {chunks}"
    );
    assert_eq!(b.get(&k(1_500)), Some(&seen(1_500, 1)));
    assert_eq!(a.get(&k(1_500)), Some(&seen(1_500, 1_500)));
}
