use super::*;
use crate::source::Origin;
use dnsplane_common::RecordType;

fn zones() -> Vec<ZoneConfig> {
    ["example.com", "sub.example.com"]
        .iter()
        .map(|z| ZoneConfig::new(Name::parse(z).unwrap(), "a"))
        .collect()
}

fn entry(name: &str, t: RecordType, values: &[&str], line: u32) -> DesiredEntry {
    DesiredEntry {
        name: Name::parse(name).unwrap(),
        rtype: t,
        ttl: None,
        values: values
            .iter()
            .map(|v| dnsplane_common::rdata::canonicalize(t, v).unwrap())
            .collect(),
        set: dnsplane_common::SetId::NONE,
        properties: Vec::new(),
        labels: Default::default(),
        origin: Origin {
            source: "file".into(),
            location: format!("x.yaml:{line}").into(),
            resource: "DNSEndpoint default/x".into(),
        },
    }
}

fn root() -> Name {
    Name::parse("example.com").unwrap()
}

#[test]
fn places_records_in_the_longest_zone_and_reports_problems() {
    let entries = [
        entry("www.example.com", RecordType::A, &["192.0.2.1"], 1),
        entry("a.sub.example.com", RecordType::A, &["192.0.2.2"], 2),
        entry("www.other.org", RecordType::A, &["192.0.2.3"], 3),
        entry("www.example.com", RecordType::A, &["192.0.2.9"], 4),
        entry("www.example.com", RecordType::A, &["192.0.2.1"], 5),
        entry("c.example.com", RecordType::Cname, &["x.example.net"], 6),
        entry("c.example.com", RecordType::Txt, &["hello"], 7),
        entry("_dnsplane-a.www.example.com", RecordType::Txt, &["x"], 8),
    ];
    let mut idx = DesiredIndex::new(&zones());
    let touched = idx.update_source("file:0", &entries, vec![]);
    assert_eq!(touched[&root()].len(), 2);
    assert_eq!(
        idx.zone(&root()).unwrap().len(),
        3,
        "www A, c CNAME (held back by the plan), c TXT"
    );
    assert_eq!(
        idx.zone(&Name::parse("sub.example.com").unwrap())
            .unwrap()
            .len(),
        1
    );
    let errors = idx.errors();
    let locs: Vec<&str> = errors.iter().map(|e| e.location.as_str()).collect();
    assert_eq!(locs, ["x.yaml:3", "x.yaml:4", "x.yaml:8", "x.yaml:6"]);
    assert!(errors[0].message.contains("no configured zone"));
    assert!(errors[3].message.contains("CNAME") && errors[3].message.contains("TXT"));
    assert!(errors[3].record.contains("c.example.com"));
}

/// A name that leaves no room for its ownership record (`_dnsplane-a.` before it
/// would pass 255 octets) is refused at intake with the reason, not accepted and then
/// stuck in conflict (issue 35); a name with room is taken.
#[test]
fn a_name_too_long_for_its_ownership_record_is_refused_with_the_reason() {
    let label = "x".repeat(60);
    // Three labels of 60, one of 50 and `example.com.`: 247 octets on the wire, a
    // valid name; `_dnsplane-a.` adds 12, past 255.
    let long = format!("{label}.{label}.{label}.{}.example.com", "y".repeat(50));
    assert!(Name::parse(&long).is_ok());
    let short = format!("{label}.example.com");
    let entries = [
        entry(&long, RecordType::A, &["192.0.2.1"], 1),
        entry(&short, RecordType::A, &["192.0.2.2"], 2),
    ];
    let mut idx = DesiredIndex::new(&zones());
    idx.update_source("file:0", &entries, vec![]);
    assert_eq!(
        idx.zone(&root()).unwrap().len(),
        1,
        "the short one is taken"
    );
    let errors = idx.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].location, "x.yaml:1");
    assert!(
        errors[0]
            .message
            .contains("too long to carry its ownership record")
            && errors[0].message.contains("_dnsplane-a"),
        "{}",
        errors[0].message
    );
}

/// Three sources claim one key: when the one in force withdraws, the next is in
/// force and the third's error names that one, not the one that left.
#[test]
fn a_shadowed_claims_error_follows_the_claim_in_force() {
    let mut idx = DesiredIndex::new(&zones());
    let a = |v: &str, line| [entry("a.example.com", RecordType::A, &[v], line)];
    idx.update_source("s1", &a("192.0.2.1", 1), vec![]);
    idx.update_source("s2", &a("192.0.2.2", 2), vec![]);
    idx.update_source("s3", &a("192.0.2.3", 3), vec![]);
    idx.update_source("s1", &[], vec![]);
    let errors = idx.errors();
    let theirs: Vec<(&str, &str)> = errors
        .iter()
        .map(|e| (e.source.as_str(), e.message.as_str()))
        .collect();
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(theirs[0].0, "s3");
    assert!(theirs[0].1.contains("(s2)"), "{theirs:?}");
}

#[test]
fn updates_touch_only_what_changed_and_shadows_fall_back() {
    let mut idx = DesiredIndex::new(&zones());
    let a = [
        entry("a.example.com", RecordType::A, &["192.0.2.1"], 1),
        entry("b.example.com", RecordType::A, &["192.0.2.2"], 2),
    ];
    idx.update_source("s1", &a, vec![]);
    // Same snapshot again: nothing touched.
    assert!(idx.update_source("s1", &a, vec![]).is_empty());
    // One value changes: one name touched.
    let a2 = [
        a[0].clone(),
        entry("b.example.com", RecordType::A, &["192.0.2.3"], 2),
    ];
    let t = idx.update_source("s1", &a2, vec![]);
    assert_eq!(
        t[&root()].iter().map(Name::as_str).collect::<Vec<_>>(),
        ["b.example.com."]
    );
    // A second source claims a.example.com differently: s1 keeps it, s2 is told.
    let t = idx.update_source(
        "s2",
        &[entry("a.example.com", RecordType::A, &["192.0.2.9"], 9)],
        vec![],
    );
    assert!(t.is_empty());
    assert!(
        idx.errors()
            .iter()
            .any(|e| e.source == "s2" && e.message.contains("also declared"))
    );
    // s1 drops it: s2's claim takes over, and the name is touched.
    let t = idx.update_source("s1", &a2[1..], vec![]);
    assert_eq!(
        t[&root()].iter().map(Name::as_str).collect::<Vec<_>>(),
        ["a.example.com."]
    );
    let k = RecordKey::new(root(), Name::parse("a.example.com").unwrap(), RecordType::A);
    assert_eq!(idx.zone(&root()).unwrap()[&k].data.values(), ["192.0.2.9"]);
    // Nothing clashes with s2 any more: its error went with s1's claim (issue 35: it
    // stayed, naming a record no source declared).
    assert!(
        !idx.errors()
            .iter()
            .any(|e| e.message.contains("also declared")),
        "{:?}",
        idx.errors()
    );
    // s2 goes away: gone.
    idx.update_source("s2", &[], vec![]);
    assert!(!idx.zone(&root()).unwrap().contains_key(&k));
    assert_eq!(idx.len(), 1);
}

#[test]
fn cname_clash_error_comes_and_goes() {
    let mut idx = DesiredIndex::new(&zones());
    let c = entry("c.example.com", RecordType::Cname, &["x.example.net"], 1);
    let t = entry("c.example.com", RecordType::Txt, &["hello"], 2);
    idx.update_source("s", &[c.clone(), t], vec![]);
    assert_eq!(idx.error_count(), 1);
    idx.update_source("s", &[c], vec![]);
    assert_eq!(idx.error_count(), 0);
}

#[test]
fn a_patch_ends_where_the_whole_update_would() {
    let a = entry("a.example.com", RecordType::A, &["192.0.2.1"], 1);
    let b = entry("b.example.com", RecordType::A, &["192.0.2.2"], 2);
    let c = entry("c.example.com", RecordType::Cname, &["x.example.net"], 3);
    let shadowed = entry("s.example.com", RecordType::A, &["192.0.2.5"], 4);
    let other = entry("s.example.com", RecordType::A, &["192.0.2.6"], 5);
    let mut patched = DesiredIndex::new(&zones());
    patched.update_source("s0", std::slice::from_ref(&other), vec![]);
    patched.update_source("s", &[a.clone(), b.clone(), shadowed.clone()], vec![]);
    assert_eq!(patched.error_count(), 1, "s.example.com is held by s0");

    // Change b, add a TXT beside the CNAME-to-be, drop a and the shadowed claim.
    let b2 = entry("b.example.com", RecordType::A, &["192.0.2.3"], 6);
    let t = entry("c.example.com", RecordType::Txt, &["hello"], 7);
    let touched = patched.patch_source(
        "s",
        &[b2.clone(), c.clone(), t.clone()],
        &[
            (a.name.clone(), RecordType::A).into(),
            (shadowed.name.clone(), RecordType::A).into(),
            (Name::parse("nothing.example.com").unwrap(), RecordType::A).into(),
        ],
    );
    let mut whole = DesiredIndex::new(&zones());
    whole.update_source("s0", std::slice::from_ref(&other), vec![]);
    whole.update_source("s", &[a.clone(), b.clone(), shadowed], vec![]);
    let expected = whole.update_source("s", &[b2, c.clone(), t], vec![]);
    assert_eq!(touched, expected);
    assert_eq!(patched.zone(&root()), whole.zone(&root()));
    assert_eq!(patched.errors(), whole.errors());
    assert_eq!(
        patched.error_count(),
        1,
        "the CNAME clash; the conflict went with its key"
    );

    // An unchanged upsert touches nothing; deleting the TXT clears the clash.
    assert!(patched.patch_source("s", &[c], &[]).is_empty());
    let t = patched.patch_source(
        "s",
        &[],
        &[(Name::parse("c.example.com").unwrap(), RecordType::Txt).into()],
    );
    assert_eq!(t[&root()].len(), 1);
    assert_eq!(patched.error_count(), 0);
    assert_eq!(patched.len(), 3, "b, c and s0's record");
}

/// Entries a property test picked: (name, type, value) indices into a few names
/// (one in a sub-zone, one reserved, one outside every zone), A / CNAME / TXT,
/// and three values.
fn picked(picks: &[(usize, usize, usize)]) -> Vec<DesiredEntry> {
    let names = [
        "a.example.com",
        "b.sub.example.com",
        "_dnsplane-a.example.com",
        "x.example.org",
    ];
    let types = [RecordType::A, RecordType::Cname, RecordType::Txt];
    picks
        .iter()
        .enumerate()
        .map(|(i, &(n, t, v))| {
            let value = match types[t] {
                RecordType::A => format!("192.0.2.{v}"),
                RecordType::Cname => format!("t{v}.example.net"),
                _ => format!("text {v}"),
            };
            entry(names[n], types[t], &[value.as_str()], i as u32)
        })
        .collect()
}

/// The suffix lookup finds the zone the scan of the configured zones finds: the
/// longest one holding the name, none for a name outside them all.
#[test]
fn a_name_finds_its_zone_by_its_suffixes() {
    let index = DesiredIndex::new(&zones());
    for name in [
        "example.com",
        "a.example.com",
        "sub.example.com",
        "a.b.sub.example.com",
        "subexample.com",
        "a.sub.example.com.org",
        "com",
    ] {
        let name = Name::parse(name).unwrap();
        assert_eq!(
            index.zone_of(&name).map(|z| &z.name),
            zone_for(&zones(), &name).map(|z| &z.name),
            "{name}"
        );
    }
    assert_eq!(
        index
            .zone_of(&Name::parse("a.b.sub.example.com").unwrap())
            .map(|z| z.name.as_str()),
        Some("sub.example.com.")
    );
}

proptest::proptest! {
    /// Taking a push's checked placement gives the index, the errors and the
    /// touched names that placing the entries again gives, over a previous state.
    #[test]
    fn a_checked_update_is_the_update(
        before in proptest::collection::vec((0usize..4, 0usize..3, 0usize..3), 0..20),
        after in proptest::collection::vec((0usize..4, 0usize..3, 0usize..3), 0..20),
    ) {
        let (before, after) = (picked(&before), picked(&after));
        let mut placed = DesiredIndex::new(&zones());
        let mut taken = DesiredIndex::new(&zones());
        placed.update_source("other", &before, Vec::new());
        taken.update_source("other", &before, Vec::new());
        placed.update_source("push:p", &before, Vec::new());
        taken.update_source("push:p", &before, Vec::new());
        let touched = placed.update_source("push:p", &after, Vec::new());
        let checked = DesiredIndex::checked(&zones(), "p", &after);
        let touched_checked = taken.update_source_checked("push:p", checked, &after, Vec::new());
        proptest::prop_assert_eq!(touched_checked, touched);
        proptest::prop_assert_eq!(taken.errors(), placed.errors());
        proptest::prop_assert_eq!(&taken.zones, &placed.zones);
        proptest::prop_assert_eq!(taken.shadows, placed.shadows);
    }
}

proptest::proptest! {
    /// Checking a push alone finds exactly what loading it into an empty index
    /// reports: unknown zones, reserved names, duplicates with other values, CNAMEs
    /// beside other data, each at its line.
    #[test]
    fn checking_alone_reports_what_an_index_of_its_own_would(
        picks in proptest::collection::vec((0usize..4, 0usize..3, 0usize..3), 0..30)
    ) {
        let entries = picked(&picks);
        let mut index = DesiredIndex::new(&zones());
        index.update_source("push:p", &entries, Vec::new());
        proptest::prop_assert_eq!(
            DesiredIndex::check_alone(&zones(), "push:p", &entries),
            index.errors()
        );
    }
}

/// Labels are kept per source beside the records: given, changed or dropped alone they
/// touch no name (nothing is re-planned), whether by a whole update, a patch, or a
/// checked push; each source's labels are its own; a deleted record leaves none.
#[test]
fn labels_are_kept_beside_the_data_and_touch_nothing() {
    let labelled = |owner: &str| DesiredEntry {
        labels: crate::source::Labels::of([("owner", owner)]).unwrap(),
        ..entry("www.example.com", RecordType::A, &["192.0.2.1"], 1)
    };
    let key = RecordKey::new(
        root(),
        Name::parse("www.example.com").unwrap(),
        RecordType::A,
    );
    let owner = |idx: &DesiredIndex, source: &str| {
        idx.labels(source, &key).get("owner").map(str::to_string)
    };
    let mut idx = DesiredIndex::new(&zones());
    let touched = idx.update_source("push:a", &[labelled("c1")], vec![]);
    assert_eq!(touched[&root()].len(), 1);
    assert_eq!(owner(&idx, "push:a").as_deref(), Some("c1"));
    assert!(
        idx.update_source("push:a", &[labelled("c2")], vec![])
            .is_empty()
    );
    assert_eq!(owner(&idx, "push:a").as_deref(), Some("c2"));
    let plain = entry("www.example.com", RecordType::A, &["192.0.2.1"], 1);
    assert!(idx.patch_source("push:a", &[plain], &[]).is_empty());
    assert_eq!(owner(&idx, "push:a"), None, "dropped by a patch");
    assert!(
        idx.patch_source("push:a", &[labelled("c3")], &[])
            .is_empty()
    );
    assert_eq!(owner(&idx, "push:a").as_deref(), Some("c3"));
    let records = idx.source_records("push:a");
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].1.get("owner"), Some("c3"));
    // A second source's claim (shadowed) has its own labels.
    idx.update_source("push:b", &[labelled("b")], vec![]);
    assert_eq!(owner(&idx, "push:b").as_deref(), Some("b"));
    assert_eq!(owner(&idx, "push:a").as_deref(), Some("c3"));
    let checked = DesiredIndex::checked(&zones(), "push:b", &[labelled("b2")]);
    assert!(
        idx.update_source_checked("push:b", checked, &[labelled("b2")], vec![])
            .is_empty()
    );
    assert_eq!(owner(&idx, "push:b").as_deref(), Some("b2"));
    // Deleted: no labels left behind.
    idx.patch_source("push:a", &[], &[EntryKey::of(&key)]);
    assert_eq!(owner(&idx, "push:a"), None);
    assert!(idx.source_records("push:a").is_empty());
    idx.update_source("push:b", &[], vec![]);
    assert_eq!(owner(&idx, "push:b"), None);
    assert!(idx.sources.values().all(|c| c.labels.is_empty()));
}

/// A state file written before labels were kept reads; one with labels reads them
/// back; an entry without labels writes none.
#[test]
fn entries_without_labels_read_from_old_state_and_write_none() {
    let old = r#"{"name":"www.example.com.","rtype":"A","ttl":null,"values":["192.0.2.1"],
        "origin":{"source":"push:x","location":"records[0]","resource":"push/x"}}"#;
    let e: DesiredEntry = serde_json::from_str(old).unwrap();
    assert!(e.labels.is_empty());
    assert!(!serde_json::to_string(&e).unwrap().contains("labels"));
    let with = DesiredEntry {
        labels: crate::source::Labels::of([("owner", "c1")]).unwrap(),
        ..e
    };
    let text = serde_json::to_string(&with).unwrap();
    assert!(text.contains(r#""labels":{"owner":"c1"}"#), "{text}");
    assert_eq!(serde_json::from_str::<DesiredEntry>(&text).unwrap(), with);
}

/// What the index holds per record stays small: the values, the source and the
/// resource are one thin pointer each (the TTL is in the values' allocation).
#[test]
fn a_desired_record_is_four_words() {
    assert_eq!(std::mem::size_of::<DesiredRecord>(), 24);
}

/// One step of the multi-source model test: a source's whole update, or a patch.
#[derive(Debug, Clone)]
enum Step {
    Update(usize, Vec<(usize, u8)>),
    Patch(usize, Vec<(usize, u8)>, Vec<usize>),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let picks = proptest::collection::vec((0usize..5, 1u8..4), 0..6);
    prop_oneof![
        (0usize..3, picks.clone()).prop_map(|(s, p)| Step::Update(s, p)),
        (0usize..3, picks, proptest::collection::vec(0usize..5, 0..3))
            .prop_map(|(s, p, d)| Step::Patch(s, p, d)),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// Any sequence of whole updates and patches by three sources over two zones
    /// leaves each source declaring exactly what it last said (its count, its keys,
    /// `holds`), the index holding exactly the keys some source declares, each with the
    /// values of a source that declares it; and a source keeps no key set of its own
    /// only in a zone where it is the one source.
    #[test]
    fn sources_declare_what_they_last_said(steps in proptest::collection::vec(step(), 1..12)) {
        let sources = ["file:a", "push:b", "push:c"];
        let names = ["a.example.com", "b.example.com", "c.sub.example.com", "d.sub.example.com", "e.example.com"];
        let mut index = DesiredIndex::new(&zones());
        let mut model: Vec<BTreeMap<usize, u8>> = vec![BTreeMap::new(); 3];
        let entries = |picks: &[(usize, u8)]| -> Vec<DesiredEntry> {
            picks
                .iter()
                .enumerate()
                .map(|(i, &(n, v))| entry(names[n], RecordType::A, &[&format!("192.0.2.{v}")], i as u32))
                .collect()
        };
        for step in steps {
            match step {
                Step::Update(s, picks) => {
                    index.update_source(sources[s], &entries(&picks), Vec::new());
                    model[s].clear();
                    for (n, v) in picks {
                        model[s].entry(n).or_insert(v);
                    }
                }
                Step::Patch(s, picks, deletes) => {
                    // A patch names each key once.
                    let mut upserts: BTreeMap<usize, u8> = BTreeMap::new();
                    for (n, v) in picks {
                        upserts.entry(n).or_insert(v);
                    }
                    let deletes: BTreeSet<usize> =
                        deletes.into_iter().filter(|n| !upserts.contains_key(n)).collect();
                    let picks: Vec<(usize, u8)> = upserts.iter().map(|(n, v)| (*n, *v)).collect();
                    let gone: Vec<crate::source::EntryKey> = deletes
                        .iter()
                        .map(|&n| (Name::parse(names[n]).unwrap(), RecordType::A).into())
                        .collect();
                    index.patch_source(sources[s], &entries(&picks), &gone);
                    for n in deletes {
                        model[s].remove(&n);
                    }
                    model[s].extend(upserts);
                }
            }
            let key = |n: usize| {
                let name = Name::parse(names[n]).unwrap();
                let zone = index.zone_of(&name).unwrap().name.clone();
                RecordKey::new(zone, name, RecordType::A)
            };
            for (s, declared) in model.iter().enumerate() {
                proptest::prop_assert_eq!(index.source_len(sources[s]), declared.len());
                let keys: BTreeSet<RecordKey> = index.source_keys(sources[s]).cloned().collect();
                let want: BTreeSet<RecordKey> = declared.keys().map(|&n| key(n)).collect();
                proptest::prop_assert_eq!(&keys, &want, "{}", sources[s]);
                for (n, name) in names.iter().enumerate() {
                    let name = Name::parse(name).unwrap();
                    proptest::prop_assert_eq!(
                        index.holds(sources[s], &name, RecordType::A, dnsplane_common::SetId::NONE),
                        declared.contains_key(&n)
                    );
                }
            }
            let in_force: BTreeMap<RecordKey, &DesiredRecord> =
                index.zones.values().flat_map(|z| z.iter().map(|(k, r)| (k.clone(), r))).collect();
            let declared: BTreeSet<RecordKey> =
                model.iter().flat_map(|m| m.keys().map(|&n| key(n))).collect();
            proptest::prop_assert_eq!(in_force.keys().cloned().collect::<BTreeSet<_>>(), declared);
            for (n, k) in (0..names.len()).map(|n| (n, key(n))) {
                let Some(record) = in_force.get(&k) else { continue };
                let s = sources.iter().position(|s| *s == &*record.source).unwrap();
                proptest::prop_assert_eq!(
                    model[s].get(&n).map(|v| format!("192.0.2.{v}")),
                    record.data.values().next().map(str::to_string),
                    "{} in force for {}", sources[s], k
                );
            }
            for (source, c) in &index.sources {
                for zone in c.keys.zones() {
                    if c.keys.zone(zone) == Some(&keys::ZoneKeys::Sole) {
                        let others = index.sources.iter().filter(|(s, o)| *s != source && o.keys.zone(zone).is_some()).count();
                        proptest::prop_assert_eq!(others, 0, "{} alone in {}", source, zone);
                    }
                }
            }
        }
    }
}
