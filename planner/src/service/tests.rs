//! The PutDesired validator: field-named refusals, all or nothing, and (property
//! tests) no request makes it panic or accept what the record rules refuse.
use super::*;
use crate::config::ZoneConfig;
use crate::engine::Engine;
use crate::source::DesiredEntry;
use dnsplane_common::convert::FieldError;
use dnsplane_common::pb;
use dnsplane_common::{RecordType, rdata, wire};
use proptest::prelude::*;

fn zones() -> Vec<ZoneConfig> {
    ["example.com", "xn--bcher-kva.example"]
        .into_iter()
        .map(|z| ZoneConfig::new(Name::parse(z).unwrap(), "a"))
        .collect()
}

pub(super) fn record(name: &str, rtype: &str, values: &[&str]) -> pb::DesiredRecord {
    pb::DesiredRecord {
        name: name.into(),
        r#type: rtype.into(),
        ttl: 0,
        values: values.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    }
}

fn push(records: Vec<pb::DesiredRecord>) -> Result<Vec<DesiredEntry>, Vec<FieldError>> {
    validate_push(
        &zones(),
        &pb::PutDesiredRequest {
            source: "test".into(),
            records,
        },
    )
}

fn fields(r: Result<Vec<DesiredEntry>, Vec<FieldError>>) -> Vec<String> {
    r.expect_err("refused")
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// A value no record can carry, a set no answer can carry, a name IDNA refuses: each
/// named by its field; one bad record refuses the whole push.
#[test]
fn wire_and_idna_problems_name_their_field() {
    let huge = "v".repeat(70_000);
    let many: Vec<String> = (0..40)
        .map(|i| format!("{i}{}", "w".repeat(1990)))
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let errors = fields(push(vec![
        record("ok.example.com", "A", &["192.0.2.1"]),
        record("huge.example.com", "TXT", &[&huge]),
        record("set.example.com", "TXT", &many),
        record("xn--zz.example.com", "A", &["192.0.2.1"]),
        record("i♥dns.example.com", "A", &["192.0.2.1"]),
    ]));
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(
        errors[0].starts_with("records[1].values[0]: TXT value \"vvv")
            && errors[0].contains("70275 octets of record data on the wire, above the 65535"),
        "{}",
        errors[0]
    );
    assert!(errors[0].len() < 400, "the value is not echoed whole");
    assert!(
        errors[1].starts_with("records[2].values: the set of 40 value(s) is")
            && errors[1].contains("above the 65535 one TCP message can carry"),
        "{}",
        errors[1]
    );
    assert!(errors[2].starts_with("records[3].name: ") && errors[2].contains("punycode"));
    assert!(errors[3].starts_with("records[4].name: ") && errors[3].contains("U+2665"));

    let ok = push(vec![
        record("ok.example.com", "A", &["192.0.2.1"]),
        record("Bücher.example", "TXT", &[&"t".repeat(60_000)]),
    ])
    .unwrap();
    assert_eq!(ok.len(), 2);
    assert_eq!(ok[1].name.as_str(), "xn--bcher-kva.example.");
}

#[test]
fn source_and_cross_record_problems() {
    let e = validate_push(
        &zones(),
        &pb::PutDesiredRequest {
            source: String::new(),
            records: vec![],
        },
    )
    .unwrap_err();
    assert_eq!(e[0].field, "source");
    let errors = fields(push(vec![record("a.other.org", "A", &["192.0.2.1"])]));
    assert!(errors[0].starts_with("records[0]: "), "{errors:?}");
    assert!(errors[0].contains("no configured zone"), "{errors:?}");
}

fn rtype_text() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(RecordType::ALL.to_vec()).prop_map(|t| t.to_string()),
        any::<String>(),
    ]
}

fn name_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_*-]{1,20}(\\.[a-z0-9ü-]{1,20}){0,3}\\.example\\.com",
        "[a-zà-ÿ\u{5d0}-\u{5ea}♥-]{1,20}\\.xn--bcher-kva\\.example",
        any::<String>(),
    ]
}

fn value_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "192\\.0\\.2\\.[0-9]{1,3}",
        "[0-9]{1,5} [a-z.]{1,20}",
        "\"[ -~]{0,300}\"",
        any::<String>(),
        (1usize..80_000).prop_map(|n| "x".repeat(n)),
    ]
}

fn request() -> impl Strategy<Value = pb::PutDesiredRequest> {
    let rec = (
        name_text(),
        rtype_text(),
        any::<u32>(),
        proptest::collection::vec(value_text(), 0..6),
    )
        .prop_map(|(name, r#type, ttl, values)| pb::DesiredRecord {
            name,
            r#type,
            ttl,
            values,
            ..Default::default()
        });
    (
        prop_oneof!["[a-z-]{1,20}", any::<String>()],
        proptest::collection::vec(rec, 0..8),
    )
        .prop_map(|(source, records)| pb::PutDesiredRequest { source, records })
}

proptest! {
    /// Any request: refused with named fields, or accepted whole with entries that
    /// follow every record rule (normalised, canonical, within a zone, fit an answer).
    #[test]
    fn prop_put_desired_validator_accepts_only_valid_pushes(req in request()) {
        let zones = zones();
        match validate_push(&zones, &req) {
            Ok(entries) => {
                prop_assert_eq!(entries.len(), req.records.len());
                for e in &entries {
                    prop_assert_eq!(&Name::parse(e.name.as_str()).unwrap(), &e.name);
                    prop_assert!(!e.values.is_empty());
                    prop_assert!(wire::check_answer(&e.name, e.rtype, &e.values).is_ok());
                    prop_assert!(zones.iter().any(|z| e.name.is_within(&z.name)));
                    for v in &e.values {
                        prop_assert_eq!(&rdata::canonicalize(e.rtype, v).unwrap(), v);
                    }
                }
            }
            Err(errors) => {
                prop_assert!(!errors.is_empty());
                for e in &errors {
                    prop_assert!(
                        e.field == "source" || e.field.starts_with("records["),
                        "{}", e
                    );
                    prop_assert!(e.message.len() < 2_000, "short: {}", e.message.len());
                }
            }
        }
    }
}

/// A service over a real engine and a durable store in a temp dir (the labels tests
/// use it too).
pub(super) fn service(dir: &std::path::Path) -> PlannerService {
    let config = crate::config::PlannerConfig::with_zones(zones());
    let engine = Engine::for_tests(config);
    engine.set_store(crate::store::DesiredStore::open(dir).unwrap());
    PlannerService::new(engine)
}

fn stored(dir: &std::path::Path) -> Vec<(String, Vec<String>)> {
    let store = crate::store::DesiredStore::open(dir).unwrap();
    // The snapshot with the journal of patches replayed, as a restart reads it.
    let entries = crate::engine::stored_push(&store, "push:test").unwrap();
    entries
        .into_iter()
        .map(|e| (format!("{} {}", e.name, e.rtype), e.values))
        .collect()
}

/// The message of a refusal, which must be INVALID_ARGUMENT.
fn invalid<T: std::fmt::Debug>(answer: Result<tonic::Response<T>, tonic::Status>) -> String {
    let e = answer.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    e.message().to_string()
}

fn patch(upserts: Vec<pb::DesiredRecord>, deletes: &[(&str, &str)]) -> pb::PatchDesiredRequest {
    pb::PatchDesiredRequest {
        source: "test".into(),
        upserts,
        deletes: deletes
            .iter()
            .map(|(n, t)| pb::DesiredRecordRef {
                name: n.to_string(),
                r#type: t.to_string(),
                ..Default::default()
            })
            .collect(),
    }
}

/// A patch changes only the records it names, persisted before it answers; a bad
/// patch (a bad value, a key named twice, a CNAME clash with a record it keeps) is
/// refused whole with the field named, and changes nothing.
#[tokio::test]
async fn a_patch_changes_what_it_names_or_nothing() {
    use pb::planner_server::Planner;
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let put = pb::PutDesiredRequest {
        source: "test".into(),
        records: vec![
            record("a.example.com", "A", &["192.0.2.1"]),
            record("b.example.com", "A", &["192.0.2.2"]),
        ],
    };
    assert_eq!(
        svc.put_desired(Request::new(put))
            .await
            .unwrap()
            .into_inner()
            .accepted,
        2
    );
    let done = svc
        .patch_desired(Request::new(patch(
            vec![
                record("b.example.com", "A", &["192.0.2.3"]),
                record("c.example.com", "TXT", &["hello"]),
            ],
            &[("a.example.com", "A"), ("nothing.example.com", "A")],
        )))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((done.upserted, done.deleted, done.records), (2, 1, 2));
    let after = vec![
        (
            "b.example.com. A".to_string(),
            vec!["192.0.2.3".to_string()],
        ),
        (
            "c.example.com. TXT".to_string(),
            vec!["\"hello\"".to_string()],
        ),
    ];
    assert_eq!(stored(dir.path()), after);
    let snap = svc.engine.snapshot();
    assert_eq!(snap.zones[0].desired_records, 2);

    let refused = |req: pb::PatchDesiredRequest| {
        let svc = &svc;
        async move { invalid(svc.patch_desired(Request::new(req)).await) }
    };
    let m = refused(patch(
        vec![record("d.example.com", "A", &["192.0.2.999"])],
        &[],
    ))
    .await;
    assert!(m.starts_with("upserts[0].values[0]: "), "{m}");
    let m = refused(patch(
        vec![record("b.example.com", "A", &["192.0.2.4"])],
        &[("b.example.com", "A")],
    ))
    .await;
    assert!(
        m.starts_with("deletes[0]: ") && m.contains("upserts[0]"),
        "{m}"
    );
    let m = refused(patch(vec![], &[("b.example.com", "NOPE")])).await;
    assert!(m.starts_with("deletes[0].type: "), "{m}");
    // A CNAME beside the TXT the source keeps: only the whole source shows it.
    let m = refused(patch(
        vec![record("c.example.com", "CNAME", &["x.example.net"])],
        &[],
    ))
    .await;
    assert!(m.contains("CNAME") && m.contains("upserts[0]"), "{m}");
    let m = refused(pb::PatchDesiredRequest {
        source: String::new(),
        ..patch(vec![], &[])
    })
    .await;
    assert!(m.starts_with("source: "), "{m}");
    assert_eq!(stored(dir.path()), after, "a refused patch changes nothing");
    assert_eq!(svc.engine.snapshot().zones[0].desired_records, 2);

    // An empty patch is no change; an empty PutDesired still withdraws the source.
    let done = svc
        .patch_desired(Request::new(patch(vec![], &[])))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(done.records, 2);
    assert_eq!(svc.engine.snapshot().zones[0].desired_records, 2);
}

/// Patches go to the source's journal; once it outgrows the snapshot a new snapshot
/// takes it in. Through any number of patches, what the store replays (what a restart
/// restores) is the source's state, and a planner restarted on the store holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_survive_the_journal_and_its_compaction() {
    use pb::planner_server::Planner;
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let put = pb::PutDesiredRequest {
        source: "test".into(),
        records: vec![record("a.example.com", "A", &["192.0.2.1"])],
    };
    svc.put_desired(Request::new(put)).await.unwrap();
    let journal = || {
        std::fs::read_dir(dir.path().join("desired"))
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".journal"))
            .map(|e| e.metadata().unwrap().len())
            .sum::<u64>()
    };
    let (mut longest, mut last, mut compactions) = (0, 0, 0);
    for i in 0..1_500u32 {
        let value = format!("192.0.2.{}", i % 250 + 1);
        let name = format!("r{}.example.com", i % 40);
        // Now and then the next name is withdrawn (never the one upserted).
        let next = format!("r{}.example.com", (i + 1) % 40);
        let deletes: Vec<(&str, &str)> = if i % 7 == 0 {
            vec![(next.as_str(), "A")]
        } else {
            vec![]
        };
        svc.patch_desired(Request::new(patch(
            vec![record(&name, "A", &[&value])],
            &deletes,
        )))
        .await
        .unwrap();
        let now = journal();
        if now < last {
            compactions += 1;
        }
        (longest, last) = (longest.max(now), now);
    }
    assert!(longest > 60_000, "the journal grew to {longest} bytes");
    assert!(
        compactions >= 2,
        "and was taken into a new snapshot ({compactions} times)"
    );
    // The expected state: each name as its last upsert or withdrawal left it.
    let mut want: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    want.insert("a.example.com. A".into(), "192.0.2.1".into());
    for i in 0..1_500u32 {
        let name = format!("r{}.example.com. A", i % 40);
        if i % 7 == 0 {
            want.remove(&format!("r{}.example.com. A", (i + 1) % 40));
        }
        want.insert(name, format!("192.0.2.{}", i % 250 + 1));
    }
    let got: std::collections::BTreeMap<String, String> = stored(dir.path())
        .into_iter()
        .map(|(k, v)| (k, v.concat()))
        .collect();
    assert_eq!(got, want);
    // A planner restarted on the same store restores exactly that.
    let again = service(dir.path());
    assert_eq!(again.engine.restore_pushes().unwrap(), want.len());
    assert_eq!(again.engine.snapshot().zones[0].desired_records, want.len());
}

fn put(records: Vec<pb::DesiredRecord>) -> pb::PutDesiredRequest {
    pb::PutDesiredRequest {
        source: "test".into(),
        records,
    }
}

fn journal_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir.join("desired"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".journal"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

/// Every desired record the service's engine holds, per zone, and the source's errors.
fn held(svc: &PlannerService) -> Vec<String> {
    let mut out = Vec::new();
    for zone in zones() {
        svc.engine.with_zone(&zone.name, |_, desired, _| {
            out.extend(
                desired
                    .iter()
                    .map(|(k, r)| format!("{k} {:?} {}", r.data, r.source)),
            );
        });
    }
    out.extend(
        svc.engine
            .snapshot()
            .source_errors
            .iter()
            .map(|e| format!("{e:?}")),
    );
    out
}

/// A whole push that repeats the source but for a few records is applied as the
/// patch of those records (one journal line, not a new snapshot), and leaves exactly
/// what the push says: changed, added and left-out records, a record whose values
/// come in another order (no change). A bad push of that kind is refused as any bad
/// push is, each problem at its field, and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_like_the_last_goes_in_as_a_patch() {
    use pb::planner_server::Planner;
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let values = |i: usize| {
        vec![
            format!("192.0.2.{}", i + 1),
            format!("198.51.100.{}", i + 1),
        ]
    };
    let base: Vec<pb::DesiredRecord> = (0..40)
        .map(|i| {
            let v = values(i);
            record(&format!("r{i}.example.com"), "A", &[&v[0], &v[1]])
        })
        .collect();
    svc.put_desired(Request::new(put(base.clone())))
        .await
        .unwrap();
    assert_eq!(journal_bytes(dir.path()), 0);

    let mut next = base.clone();
    next[3].values = vec!["203.0.113.3".into()];
    next.remove(7);
    next.push(record("new.example.com", "TXT", &["hello"]));
    next[10].values.reverse();
    let accepted = svc
        .put_desired(Request::new(put(next.clone())))
        .await
        .unwrap()
        .into_inner()
        .accepted;
    assert_eq!(accepted, 40);
    let journal = journal_bytes(dir.path());
    assert!(
        journal > 0 && journal < 2_000,
        "one journal line ({journal} bytes)"
    );
    // The same as a planner that was pushed `next` alone.
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = service(fresh_dir.path());
    fresh
        .put_desired(Request::new(put(next.clone())))
        .await
        .unwrap();
    assert_eq!(held(&svc), held(&fresh));
    let mut want = stored(fresh_dir.path());
    let mut got = stored(dir.path());
    want.sort();
    got.sort();
    assert_eq!(got, want, "what a restart restores");
    assert!(got.iter().all(|(k, _)| k != "r7.example.com. A"));

    let refused = |req: pb::PutDesiredRequest| {
        let svc = &svc;
        async move { invalid(svc.put_desired(Request::new(req)).await) }
    };
    let mut bad = next.clone();
    bad[5].values = vec!["192.0.2.999".into()];
    let m = refused(put(bad)).await;
    assert!(m.starts_with("records[5].values[0]: "), "{m}");
    let mut twice = next.clone();
    twice.push(record("r0.example.com", "A", &["192.0.2.200"]));
    let m = refused(put(twice)).await;
    assert!(m.contains("records[40]"), "{m}");
    // A CNAME beside the TXT the push keeps.
    let mut clash = next.clone();
    clash.push(record("new.example.com", "CNAME", &["x.example.net"]));
    let m = refused(put(clash)).await;
    assert!(m.contains("CNAME") && m.contains("records[40]"), "{m}");
    assert_eq!(held(&svc), held(&fresh), "a refused push changes nothing");
    assert_eq!(journal_bytes(dir.path()), journal);

    // Most of the source changed: put in force whole.
    let whole: Vec<pb::DesiredRecord> = (0..40)
        .map(|i| record(&format!("w{i}.example.com"), "A", &["192.0.2.1"]))
        .collect();
    svc.put_desired(Request::new(put(whole.clone())))
        .await
        .unwrap();
    fresh.put_desired(Request::new(put(whole))).await.unwrap();
    assert_eq!(held(&svc), held(&fresh));
}

fn small_record() -> impl Strategy<Value = pb::DesiredRecord> {
    // A name's type follows from it (mostly no CNAME clash), so that most pushes are
    // accepted and the second push of a pair has something to be compared with.
    (
        0..12usize,
        proptest::sample::select(vec![0u32, 60, 300]),
        proptest::collection::vec(1..4u8, 1..3),
    )
        .prop_map(|(n, ttl, vs)| {
            let t = ["A", "A", "TXT", "CNAME"][n % 4];
            let values = vs
                .iter()
                .map(|v| match t {
                    "A" => format!("192.0.2.{v}"),
                    "TXT" => format!("\"t{v}\""),
                    _ => format!("c{v}.example.net."),
                })
                .collect();
            pb::DesiredRecord {
                name: format!("n{n}.example.com"),
                r#type: t.into(),
                ttl,
                values,
                ..Default::default()
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Any push after any other (each accepted or refused) leaves the same desired
    /// state, errors and stored source as that push into a planner that had nothing,
    /// whether it went in whole or as a patch.
    #[test]
    fn prop_a_push_after_another_is_the_push_alone(
        first in proptest::collection::vec(small_record(), 1..12),
        edits in proptest::collection::vec((0..12usize, 0..5u8, small_record()), 0..4),
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        rt.block_on(async {
            use pb::planner_server::Planner;
            // One record per name (a name named twice with other values is refused).
            let first: Vec<pb::DesiredRecord> = first
                .into_iter()
                .map(|r| (r.name.clone(), r))
                .collect::<std::collections::BTreeMap<_, _>>()
                .into_values()
                .collect();
            let mut second = first.clone();
            for (at, kind, r) in edits {
                let at = at % second.len().max(1);
                match (kind, second.get_mut(at)) {
                    (0, Some(old)) => *old = r,
                    (1, Some(_)) => { second.remove(at); }
                    (3, Some(old)) => old.ttl = r.ttl,
                    (4, Some(old)) if old.r#type == r.r#type => old.values = r.values,
                    (4, Some(old)) => old.values.reverse(),
                    _ => second.push(r),
                }
            }
            let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let (twice, once) = (service(a.path()), service(b.path()));
            let _ = twice.put_desired(Request::new(put(first))).await;
            let got = twice.put_desired(Request::new(put(second.clone()))).await;
            let want = once.put_desired(Request::new(put(second))).await;
            match (&got, &want) {
                (Ok(g), Ok(w)) => prop_assert_eq!(g.get_ref(), w.get_ref()),
                (Err(g), Err(w)) => prop_assert_eq!(g.code(), w.code()),
                _ => prop_assert!(false, "{:?} against {:?}", got, want),
            }
            if want.is_ok() {
                prop_assert_eq!(held(&twice), held(&once));
                let (mut g, mut w) = (stored(a.path()), stored(b.path()));
                g.sort();
                w.sort();
                prop_assert_eq!(g, w);
            }
            Ok(())
        })?;
    }
}

/// A record in a routing-policy set with provider-specific properties goes in through
/// PutDesired and PatchDesired, each set on its own key, survives the journal as a
/// restart reads it, and a bad set identifier or property is refused at its field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sets_and_properties_round_trip_through_pushes_and_the_store() {
    use pb::planner_server::Planner;
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let weighted = |id: &str, v: &str, w: &str| pb::DesiredRecord {
        set_identifier: id.into(),
        provider_specific: vec![pb::Property {
            name: "aws/weight".into(),
            value: w.into(),
        }],
        ..record("www.example.com", "A", &[v])
    };
    svc.put_desired(tonic::Request::new(put(vec![
        weighted("eu", "192.0.2.1", "10"),
        weighted("us", "192.0.2.2", "20"),
    ])))
    .await
    .expect("push");
    let held_now = held(&svc);
    assert_eq!(held_now.len(), 2, "{held_now:#?}");
    assert!(
        held_now[0].contains("[set \"eu\"]") && held_now[0].contains("aws/weight"),
        "{held_now:#?}"
    );

    // A patch of one set leaves the other; a delete names its set.
    let mut req = patch(vec![weighted("eu", "192.0.2.1", "30")], &[]);
    req.deletes.push(pb::DesiredRecordRef {
        name: "www.example.com".into(),
        r#type: "A".into(),
        set_identifier: "us".into(),
    });
    svc.patch_desired(tonic::Request::new(req))
        .await
        .expect("patch");
    let after = held(&svc);
    assert_eq!(after.len(), 1, "{after:#?}");
    assert!(after[0].contains("\"30\""), "{after:#?}");
    let restored = crate::engine::stored_push(
        &crate::store::DesiredStore::open(dir.path()).unwrap(),
        "push:test",
    )
    .unwrap();
    assert_eq!(restored.len(), 1);
    assert_eq!(restored[0].set.as_str(), "eu");
    assert_eq!(
        restored[0].properties,
        [("aws/weight".to_string(), "30".to_string())]
    );

    let bad_weight = invalid(
        svc.put_desired(tonic::Request::new(put(vec![weighted(
            "eu",
            "192.0.2.1",
            "256",
        )])))
        .await,
    );
    assert!(
        bad_weight.contains("records[0].provider_specific") && bad_weight.contains("above 255"),
        "{bad_weight}"
    );
    let bad_set = invalid(
        svc.put_desired(tonic::Request::new(put(vec![weighted(
            &"x".repeat(129),
            "192.0.2.1",
            "1",
        )])))
        .await,
    );
    assert!(bad_set.contains("records[0].set_identifier"), "{bad_set}");
    assert_eq!(held(&svc), after, "a refused push changes nothing");
}
