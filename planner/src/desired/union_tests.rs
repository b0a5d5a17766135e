//! `merge = "union"`: several sources' claims of one key merged (issue 33, part 3).
use super::super::{DesiredIndex, DesiredRecord, Touched};
use crate::config::{Merge, ZoneConfig};
use crate::source::{DesiredEntry, EntryKey, Origin};
use dnsplane_common::{Name, RecordKey, RecordType};
use std::collections::{BTreeMap, BTreeSet};

/// `example.com.` merges; `example.net.` does not.
fn zones() -> Vec<ZoneConfig> {
    vec![
        ZoneConfig {
            merge: Merge::Union,
            ..ZoneConfig::new(Name::parse("example.com").unwrap(), "a")
        },
        ZoneConfig::new(Name::parse("example.net").unwrap(), "a"),
    ]
}

fn entry(name: &str, t: RecordType, values: &[&str], ttl: Option<u32>) -> DesiredEntry {
    DesiredEntry {
        name: Name::parse(name).unwrap(),
        rtype: t,
        ttl,
        values: values
            .iter()
            .map(|v| dnsplane_common::rdata::canonicalize(t, v).unwrap())
            .collect(),
        set: dnsplane_common::SetId::NONE,
        properties: Vec::new(),
        labels: Default::default(),
        origin: Origin {
            source: "test".into(),
            location: "x.yaml:1".into(),
            resource: format!("Service {name}").into(),
        },
    }
}

fn a(name: &str, values: &[&str]) -> DesiredEntry {
    entry(name, RecordType::A, values, None)
}

fn key(name: &str, t: RecordType) -> RecordKey {
    let name = Name::parse(name).unwrap();
    let zone = if name.as_str().ends_with("example.com.") {
        "example.com"
    } else {
        "example.net"
    };
    RecordKey::new(Name::parse(zone).unwrap(), name, t)
}

fn in_force<'a>(idx: &'a DesiredIndex, key: &RecordKey) -> Option<&'a DesiredRecord> {
    idx.zone(&key.zone)?.get(key)
}

fn values(idx: &DesiredIndex, key: &RecordKey) -> Vec<String> {
    in_force(idx, key).map_or_else(Vec::new, |r| r.data.values_vec())
}

fn names(touched: &Touched) -> Vec<&str> {
    touched.values().flatten().map(Name::as_str).collect()
}

const API: &str = "api.example.com";

#[test]
fn two_sources_wanting_one_name_have_the_union_of_their_values() {
    let mut idx = DesiredIndex::new(&zones());
    let k = key(API, RecordType::A);
    let t = idx.update_source("kube:b", &[a(API, &["192.0.2.2"])], vec![]);
    assert_eq!(names(&t), ["api.example.com."]);
    let t = idx.update_source("kube:a", &[a(API, &["192.0.2.1", "192.0.2.2"])], vec![]);
    assert_eq!(names(&t), ["api.example.com."], "the union changed");
    assert_eq!(values(&idx, &k), ["192.0.2.1", "192.0.2.2"]);
    assert!(idx.errors().is_empty(), "{:?}", idx.errors());
    assert!(idx.notices().is_empty());
    assert!(idx.shadowed("kube:a").is_empty() && idx.shadowed("kube:b").is_empty());
    // The set carries the first source by name, whatever came first.
    let record = in_force(&idx, &k).unwrap();
    assert_eq!(record.source.as_str(), "kube:a");
    assert_eq!(record.resource.as_str(), "Service api.example.com");
    // Each source still declares what it said, and only that.
    let own = |s: &str| idx.source_records(s)[0].0.values_vec();
    assert_eq!(own("kube:a"), ["192.0.2.1", "192.0.2.2"]);
    assert_eq!(own("kube:b"), ["192.0.2.2"]);
    let name = Name::parse(API).unwrap();
    let set = dnsplane_common::SetId::NONE;
    let (_, mine, _) = idx.in_force("kube:b", &name, RecordType::A, set).unwrap();
    assert_eq!(mine.data.values_vec(), ["192.0.2.2"]);
    assert_eq!(idx.len(), 1);
}

#[test]
fn the_lowest_ttl_is_taken_and_a_notice_says_so() {
    let mut idx = DesiredIndex::new(&zones());
    let k = key(API, RecordType::A);
    let at = |v: &str, ttl| [entry(API, RecordType::A, &[v], Some(ttl))];
    idx.update_source("kube:a", &at("192.0.2.1", 300), vec![]);
    idx.update_source("kube:b", &at("192.0.2.2", 60), vec![]);
    assert_eq!(in_force(&idx, &k).unwrap().data.ttl(), 60);
    let notices = idx.notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    let n = &notices[0];
    assert_eq!(n.source, "kube:a", "the source whose TTL was not taken");
    assert!(n.record.contains("api.example.com"), "{n:?}");
    for says in ["kube:a TTL 300", "kube:b TTL 60", "taking the lowest, 60"] {
        assert!(
            n.message.contains(says),
            "{says:?} missing from {}",
            n.message
        );
    }
    // A notice is no error: health and readiness never see it.
    assert!(idx.errors().is_empty() && idx.error_count() == 0);
    // The same TTL again: no notice, and the TTL follows.
    let t = idx.update_source("kube:b", &at("192.0.2.2", 300), vec![]);
    assert_eq!(names(&t), ["api.example.com."]);
    assert!(idx.notices().is_empty());
    assert_eq!(in_force(&idx, &k).unwrap().data.ttl(), 300);
    // A source leaving the set takes its notice with it.
    idx.update_source("kube:b", &at("192.0.2.2", 30), vec![]);
    assert_eq!(idx.notices().len(), 1);
    idx.update_source("kube:b", &[], vec![]);
    assert!(idx.notices().is_empty());
    assert_eq!(in_force(&idx, &k).unwrap().data.ttl(), 300);
}

#[test]
fn a_value_leaves_only_with_the_last_source_wanting_it() {
    let mut idx = DesiredIndex::new(&zones());
    let k = key(API, RecordType::A);
    idx.update_source("kube:a", &[a(API, &["192.0.2.1", "192.0.2.9"])], vec![]);
    idx.update_source("kube:b", &[a(API, &["192.0.2.2", "192.0.2.9"])], vec![]);
    assert_eq!(values(&idx, &k), ["192.0.2.1", "192.0.2.2", "192.0.2.9"]);
    // B drops its own IP: only that one goes.
    let t = idx.update_source("kube:b", &[a(API, &["192.0.2.9"])], vec![]);
    assert_eq!(names(&t), ["api.example.com."]);
    assert_eq!(values(&idx, &k), ["192.0.2.1", "192.0.2.9"]);
    // A drops the IP both want: B still wants it. A's IP trade touches the name.
    idx.update_source("kube:a", &[a(API, &["192.0.2.1"])], vec![]);
    assert_eq!(values(&idx, &k), ["192.0.2.1", "192.0.2.9"]);
    // A source trading a value another source also wants touches nothing.
    idx.update_source("kube:a", &[a(API, &["192.0.2.1", "192.0.2.9"])], vec![]);
    let t = idx.update_source("kube:b", &[a(API, &["192.0.2.1"])], vec![]);
    assert!(t.is_empty(), "{t:?}");
    assert_eq!(values(&idx, &k), ["192.0.2.1", "192.0.2.9"]);
    // B goes: A's set alone, as A gave it.
    idx.update_source("kube:b", &[], vec![]);
    assert_eq!(values(&idx, &k), ["192.0.2.1", "192.0.2.9"]);
    assert!(idx.unions.claims.is_empty(), "one source: no merge kept");
    // A goes: nothing.
    let t = idx.update_source("kube:a", &[], vec![]);
    assert_eq!(names(&t), ["api.example.com."]);
    assert!(in_force(&idx, &k).is_none() && idx.is_empty());
}

#[test]
fn value_sources_name_every_source_of_each_value() {
    let mut idx = DesiredIndex::new(&zones());
    let k = key(API, RecordType::A);
    assert!(idx.value_sources(&k).is_empty());
    idx.update_source("kube:b", &[a(API, &["192.0.2.2", "192.0.2.9"])], vec![]);
    let pair = |v: &str, s: &[&str]| (v.to_string(), s.iter().map(|s| s.to_string()).collect());
    assert_eq!(
        idx.value_sources(&k),
        [
            pair("192.0.2.2", &["kube:b"]),
            pair("192.0.2.9", &["kube:b"])
        ]
    );
    idx.update_source("push:c", &[a(API, &["192.0.2.9"])], vec![]);
    idx.update_source("kube:a", &[a(API, &["192.0.2.1", "192.0.2.9"])], vec![]);
    assert_eq!(
        idx.value_sources(&k),
        [
            pair("192.0.2.1", &["kube:a"]),
            pair("192.0.2.2", &["kube:b"]),
            pair("192.0.2.9", &["kube:a", "kube:b", "push:c"]),
        ]
    );
}

/// A CNAME takes no part in a merge: two sources wanting two targets are shadowed as
/// in any zone, and a CNAME beside a merged A set is the clash it always was, the
/// A set kept as it was.
#[test]
fn a_cname_stays_a_collision() {
    let mut idx = DesiredIndex::new(&zones());
    let c = "c.example.com";
    idx.update_source("kube:a", &[a(c, &["192.0.2.1"])], vec![]);
    idx.update_source("kube:b", &[a(c, &["192.0.2.2"])], vec![]);
    let before = values(&idx, &key(c, RecordType::A));
    let cname = |target: &str| [entry(c, RecordType::Cname, &[target], None)];
    idx.update_source("push:x", &cname("x.example.net"), vec![]);
    assert_eq!(values(&idx, &key(c, RecordType::A)), before);
    let errors = idx.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].message.contains("a CNAME cannot share its name"));
    assert_eq!(errors[0].source, "push:x");
    // A second CNAME source with another target: shadowed, a conflict, no merge.
    idx.update_source("push:y", &cname("y.example.net"), vec![]);
    assert_eq!(values(&idx, &key(c, RecordType::Cname)), ["x.example.net."]);
    assert_eq!(idx.shadowed("push:y").len(), 1);
    assert!(
        idx.errors()
            .iter()
            .any(|e| e.source == "push:y" && e.message.contains("also declared"))
    );
    // The CNAME goes: so does the clash; the A set is untouched.
    idx.update_source("push:x", &[], vec![]);
    idx.update_source("push:y", &[], vec![]);
    assert!(idx.errors().is_empty(), "{:?}", idx.errors());
    assert_eq!(values(&idx, &key(c, RecordType::A)), before);
}

/// Types outside the list (NS here) keep the shadow rule in a union zone; and a zone
/// with `merge = "none"` shadows A sets as before.
#[test]
fn other_types_and_other_zones_shadow_as_before() {
    let mut idx = DesiredIndex::new(&zones());
    let ns = |v: &str| [entry("d.example.com", RecordType::Ns, &[v], None)];
    idx.update_source("kube:a", &ns("ns1.example.org"), vec![]);
    idx.update_source("kube:b", &ns("ns2.example.org"), vec![]);
    let k = key("d.example.com", RecordType::Ns);
    assert_eq!(values(&idx, &k), ["ns1.example.org."]);
    assert_eq!(idx.shadowed("kube:b").len(), 1);
    let www = "www.example.net";
    idx.update_source("push:y", &[a(www, &["192.0.2.2"])], vec![]);
    idx.update_source("push:x", &[a(www, &["192.0.2.1"])], vec![]);
    assert_eq!(values(&idx, &key(www, RecordType::A)), ["192.0.2.2"]);
    assert_eq!(idx.shadowed("push:x").len(), 1);
    assert_eq!(idx.error_count(), 2);
    assert!(idx.unions.claims.is_empty() && idx.notices().is_empty());
}

/// Claims whose provider properties differ cannot share a set: the first source's
/// holds, the other's is held back with an error saying why.
#[test]
fn claims_with_other_properties_are_held_back() {
    let mut idx = DesiredIndex::new(&zones());
    let k = key(API, RecordType::A);
    idx.update_source("kube:a", &[a(API, &["192.0.2.1"])], vec![]);
    let proxied = DesiredEntry {
        properties: vec![("cloudflare/proxied".into(), "true".into())],
        ..a(API, &["192.0.2.2"])
    };
    idx.update_source("kube:b", &[proxied], vec![]);
    assert_eq!(values(&idx, &k), ["192.0.2.1"]);
    let errors = idx.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].source, "kube:b");
    assert!(errors[0].message.contains("other provider properties"));
    assert_eq!(idx.shadowed("kube:b").len(), 1);
    idx.update_source("kube:b", &[a(API, &["192.0.2.2"])], vec![]);
    assert_eq!(values(&idx, &k), ["192.0.2.1", "192.0.2.2"]);
    assert!(idx.errors().is_empty());
}

#[test]
fn patches_upsert_and_delete_in_a_merged_set() {
    let mut idx = DesiredIndex::new(&zones());
    let k = key(API, RecordType::A);
    idx.update_source("kube:a", &[a(API, &["192.0.2.1"])], vec![]);
    idx.update_source("push:b", &[a(API, &["192.0.2.2"])], vec![]);
    let t = idx.patch_source("push:b", &[a(API, &["192.0.2.1", "192.0.2.3"])], &[]);
    assert_eq!(names(&t), ["api.example.com."]);
    assert_eq!(values(&idx, &k), ["192.0.2.1", "192.0.2.3"]);
    let t = idx.patch_source("push:b", &[a(API, &["192.0.2.1", "192.0.2.3"])], &[]);
    assert!(t.is_empty(), "unchanged upsert");
    let t = idx.patch_source("push:b", &[], &[EntryKey::of(&k)]);
    assert_eq!(names(&t), ["api.example.com."]);
    assert_eq!(values(&idx, &k), ["192.0.2.1"]);
    assert!(!idx.holds("push:b", &k.name, RecordType::A, k.set));
    assert_eq!(idx.source_len("push:b"), 0);
    let t = idx.patch_source("push:b", &[a(API, &["192.0.2.1"])], &[]);
    assert!(t.is_empty(), "a value A already gives: {t:?}");
    assert_eq!(idx.value_sources(&k)[0].1, ["kube:a", "push:b"]);
    let t = idx.patch_source("kube:a", &[], &[EntryKey::of(&k)]);
    assert_eq!(values(&idx, &k), ["192.0.2.1"], "push:b still wants it");
    assert_eq!(
        names(&t),
        ["api.example.com."],
        "its record is push:b's now"
    );
    assert_eq!(in_force(&idx, &k).unwrap().source.as_str(), "push:b");
}

/// One step of the model test: a source's whole update (plain or checked), or a patch.
#[derive(Debug, Clone)]
enum Step {
    Update(usize, Vec<(usize, u8)>),
    Checked(usize, Vec<(usize, u8)>),
    Patch(usize, Vec<(usize, u8)>, Vec<usize>),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let picks = proptest::collection::vec((0usize..4, 0u8..12), 0..6);
    prop_oneof![
        (0usize..3, picks.clone()).prop_map(|(s, p)| Step::Update(s, p)),
        (0usize..3, picks.clone()).prop_map(|(s, p)| Step::Checked(s, p)),
        (0usize..3, picks, proptest::collection::vec(0usize..4, 0..3))
            .prop_map(|(s, p, d)| Step::Patch(s, p, d)),
    ]
}

/// Names 0-1 are A sets of the union zone, 2 a TXT set there, 3 an A set of the
/// `none` zone. A pick's byte: low 2 bits the value, the rest a TTL choice.
const NAMES: [(&str, RecordType); 4] = [
    ("a.example.com", RecordType::A),
    ("b.example.com", RecordType::A),
    ("a.example.com", RecordType::Txt),
    ("a.example.net", RecordType::A),
];

/// A source's wish for one key: its values and TTL.
type Wish = (BTreeSet<String>, u32);

fn wish(n: usize, v: u8) -> (Vec<String>, u32) {
    let value = match NAMES[n].1 {
        RecordType::Txt => format!("\"text {}\"", v % 4),
        _ => format!("192.0.2.{}", v % 4),
    };
    (vec![value], [60, 300, 3600][usize::from(v / 4)])
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// Any run of updates, checked updates and patches by three sources: each merged
    /// key holds the union of what its sources want at their lowest TTL, each value
    /// names exactly the sources wanting it, the `none` zone shadows, and the names
    /// reported touched are exactly those whose record in force changed.
    #[test]
    fn merged_sets_follow_what_each_source_last_said(
        steps in proptest::collection::vec(step(), 1..14)
    ) {
        let sources = ["kube:a", "kube:b", "push:c"];
        let mut idx = DesiredIndex::new(&zones());
        let mut model: Vec<BTreeMap<usize, Wish>> = vec![BTreeMap::new(); 3];
        let entries = |picks: &[(usize, u8)]| -> Vec<DesiredEntry> {
            picks.iter().map(|&(n, v)| {
                let (values, ttl) = wish(n, v);
                let values: Vec<&str> = values.iter().map(String::as_str).collect();
                entry(NAMES[n].0, NAMES[n].1, &values, Some(ttl))
            }).collect()
        };
        let first_each = |picks: Vec<(usize, u8)>| -> BTreeMap<usize, u8> {
            let mut out = BTreeMap::new();
            for (n, v) in picks {
                out.entry(n).or_insert(v);
            }
            out
        };
        let as_wish = |n: usize, v: u8| -> Wish {
            let (values, ttl) = wish(n, v);
            let values = values.iter()
                .map(|x| dnsplane_common::rdata::canonicalize(NAMES[n].1, x).unwrap())
                .collect();
            (values, ttl)
        };
        for step in steps {
            let before = idx.zones.clone();
            let touched = match step {
                Step::Update(s, picks) => {
                    let picks: Vec<(usize, u8)> = first_each(picks).into_iter().collect();
                    let e = entries(&picks);
                    model[s] = picks.into_iter().map(|(n, v)| (n, as_wish(n, v))).collect();
                    idx.update_source(sources[s], &e, Vec::new())
                }
                Step::Checked(s, picks) => {
                    let picks: Vec<(usize, u8)> = first_each(picks).into_iter().collect();
                    let e = entries(&picks);
                    model[s] = picks.into_iter().map(|(n, v)| (n, as_wish(n, v))).collect();
                    let checked = DesiredIndex::checked(&zones(), sources[s], &e);
                    idx.update_source_checked(sources[s], checked, &e, Vec::new())
                }
                Step::Patch(s, picks, deletes) => {
                    let upserts = first_each(picks);
                    let deletes: BTreeSet<usize> =
                        deletes.into_iter().filter(|n| !upserts.contains_key(n)).collect();
                    let picks: Vec<(usize, u8)> = upserts.iter().map(|(n, v)| (*n, *v)).collect();
                    let gone: Vec<EntryKey> = deletes
                        .iter()
                        .map(|&n| (Name::parse(NAMES[n].0).unwrap(), NAMES[n].1).into())
                        .collect();
                    for n in &deletes {
                        model[s].remove(n);
                    }
                    model[s].extend(upserts.into_iter().map(|(n, v)| (n, as_wish(n, v))));
                    idx.patch_source(sources[s], &entries(&picks), &gone)
                }
            };
            // Touched: exactly the names whose records changed.
            let mut changed = BTreeSet::new();
            for (zone, records) in &idx.zones {
                let old = before.get(zone);
                for (k, r) in records {
                    if old.and_then(|o| o.get(k)) != Some(r) {
                        changed.insert(k.name.clone());
                    }
                }
            }
            for records in before.values() {
                for k in records.keys() {
                    if in_force(&idx, k).is_none() {
                        changed.insert(k.name.clone());
                    }
                }
            }
            let reported: BTreeSet<Name> = touched.values().flatten().cloned().collect();
            proptest::prop_assert_eq!(reported, changed);
            for (n, &(name, rtype)) in NAMES.iter().enumerate() {
                let k = key(name, rtype);
                let wanting: Vec<(usize, &Wish)> =
                    model.iter().enumerate().filter_map(|(s, m)| Some((s, m.get(&n)?))).collect();
                let Some(record) = in_force(&idx, &k) else {
                    proptest::prop_assert!(wanting.is_empty(), "{} missing", k);
                    continue;
                };
                if n == 3 {
                    // merge = "none": one source's set, as it gave it.
                    let s = sources.iter().position(|s| *s == record.source.as_str()).unwrap();
                    let (values, ttl) = &model[s][&n];
                    proptest::prop_assert_eq!(&record.data.values_vec(), &values.iter().cloned().collect::<Vec<_>>());
                    proptest::prop_assert_eq!(record.data.ttl(), *ttl);
                    continue;
                }
                let union: BTreeSet<String> = wanting.iter().flat_map(|(_, w)| w.0.iter().cloned()).collect();
                let ttl = wanting.iter().map(|(_, w)| w.1).min().unwrap();
                proptest::prop_assert_eq!(record.data.values_vec(), union.iter().cloned().collect::<Vec<_>>());
                proptest::prop_assert_eq!(record.data.ttl(), ttl);
                proptest::prop_assert_eq!(record.source.as_str(), sources[wanting[0].0]);
                let by_value: Vec<(String, Vec<String>)> = union.iter().map(|v| {
                    let who = wanting.iter().filter(|(_, w)| w.0.contains(v)).map(|(s, _)| sources[*s].to_string()).collect();
                    (v.clone(), who)
                }).collect();
                proptest::prop_assert_eq!(idx.value_sources(&k), by_value);
                let ttls: BTreeSet<u32> = wanting.iter().map(|(_, w)| w.1).collect();
                let noticed = idx.notices().iter().any(|e| e.record == k.to_string());
                proptest::prop_assert_eq!(noticed, ttls.len() > 1);
            }
            proptest::prop_assert!(idx.errors().iter().all(|e| e.record.contains("example.net")));
            for (s, declared) in model.iter().enumerate() {
                proptest::prop_assert_eq!(idx.source_len(sources[s]), declared.len());
            }
        }
    }
}
