use crate::support::*;
use dnsplane_common::{Change, ChangeKind, RRSetOp, RecordType, pb};
use std::collections::HashMap;

/// Collects responses until `n` batches are done; results keyed by batch id.
async fn collect(
    stream: &mut tonic::Streaming<pb::ApplyResponse>,
    n: usize,
) -> HashMap<String, (Vec<pb::RecordResult>, u32)> {
    let mut out: HashMap<String, (Vec<pb::RecordResult>, u32)> = HashMap::new();
    let mut done = 0;
    while done < n {
        let resp = stream.message().await.unwrap().expect("stream ended early");
        let entry = out.entry(resp.batch_id.clone()).or_default();
        entry.0.extend(resp.results);
        entry.1 += resp.provider_calls;
        if resp.done {
            done += 1;
        }
    }
    out
}

#[tokio::test]
async fn apply_answers_every_change_and_survives_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = a("taken", "198.51.100.1");
    seed(dir.path(), &zone(), std::slice::from_ref(&theirs));
    let app = Running::start(dir.path()).await;
    let mut client = app.client().await;
    let (tx, mut responses) = apply_stream(&mut client, 16).await;

    let creates: Vec<Change> = (0..3)
        .map(|i| create(&a(&format!("web{i}"), "192.0.2.10")))
        .collect();
    tx.send(batch("b1", &zone(), &creates)).await.unwrap();

    let good = create(&rrset(
        &other_zone(),
        "www",
        RecordType::Aaaa,
        &["2001:db8::1"],
    ));
    let mut bad_value: pb::Change =
        (&create(&rrset(&other_zone(), "bad", RecordType::A, &["192.0.2.1"]))).into();
    bad_value.ops[0].after.as_mut().unwrap().values[0] = "300.0.0.1".into();
    let wrong_zone: pb::Change = (&create(&a("elsewhere", "192.0.2.1"))).into();
    let mut b2 = batch("b2", &other_zone(), std::slice::from_ref(&good));
    let changes = &mut b2.batch.as_mut().unwrap().changes;
    changes.push(bad_value.clone());
    changes.push(wrong_zone.clone());
    changes.push((&good).into());
    tx.send(b2).await.unwrap();

    let mut b3 = batch("b3", &zone(), &creates);
    b3.batch.as_mut().unwrap().account = "nobody".into();
    tx.send(b3).await.unwrap();

    let mine = a("taken", "192.0.2.99");
    tx.send(batch(
        "b4",
        &zone(),
        &[create(&mine), create(&a("free", "192.0.2.98"))],
    ))
    .await
    .unwrap();

    let got = collect(&mut responses, 4).await;
    let outcomes = |id: &str| got[id].0.iter().map(|r| r.outcome()).collect::<Vec<_>>();
    use pb::Outcome::*;

    assert_eq!(outcomes("b1"), vec![Applied; 3]);
    assert_eq!(got["b1"].1, 1, "one provider call");
    let ids: Vec<&str> = got["b1"].0.iter().map(|r| r.change_id.as_str()).collect();
    assert_eq!(
        ids,
        creates.iter().map(|c| c.id.as_str()).collect::<Vec<_>>()
    );

    assert_eq!(outcomes("b2"), vec![Applied, Invalid, Invalid, Invalid]);
    let r = &got["b2"].0;
    assert!(
        r[1].message
            .starts_with("batch.changes[1].ops[0].after.values[0]: "),
        "{}",
        r[1].message
    );
    assert_eq!(r[1].change_id, bad_value.id);
    assert!(
        r[2].message
            .starts_with("batch.changes[2].ops[0].key.zone: "),
        "{}",
        r[2].message
    );
    assert!(
        r[3].message
            .contains("batch.changes[3].id: duplicates batch.changes[0].id"),
        "{}",
        r[3].message
    );

    assert_eq!(outcomes("b3"), vec![RejectedPermanent; 3]);
    assert!(got["b3"].0[0].message.contains("\"nobody\""));
    assert_eq!(got["b3"].1, 0);

    assert_eq!(outcomes("b4"), vec![Conflict, Applied]);
    let conflict = &got["b4"].0[0];
    assert_eq!(conflict.conflict_reason(), pb::ConflictReason::Exists);
    assert_eq!(conflict.observed, Some((&theirs).into()));
    assert!(conflict.observed_owner.is_empty());
    assert_eq!(got["b4"].1, 3, "apply, read back, resubmit");

    // Closing the request side ends the response stream once all is answered.
    drop(tx);
    assert!(responses.message().await.unwrap().is_none());

    let (rrsets, serial) = list(&mut client, &zone()).await;
    assert_eq!(rrsets.len(), 5, "seeded + three webs + free");
    assert_eq!(serial, 4);

    let status = client
        .get_status(pb::GetApplierStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.level, "healthy");
    let acct = &status.accounts[0];
    assert_eq!(
        (
            acct.name.as_str(),
            acct.driver.as_str(),
            acct.circuit.as_str()
        ),
        (ACCOUNT, "memory", "closed")
    );
    assert_eq!(acct.zones, vec!["example.com.", "example.org."]);
    assert_eq!(acct.batches, 3);
    assert_eq!(acct.outcomes.get("APPLIED"), Some(&5));
    assert_eq!(acct.outcomes.get("INVALID"), Some(&3));
    assert_eq!(acct.outcomes.get("CONFLICT"), Some(&1));
    assert_eq!(acct.calls_by_class.get("conflict"), Some(&1));
    assert_eq!(acct.serials.get("example.com."), Some(&4));
    assert!(
        acct.last_error.contains("already exists"),
        "{}",
        acct.last_error
    );
    app.stop().await;
}

#[tokio::test]
async fn batches_for_many_zones_all_land() {
    let (_dir, app) = Running::fresh().await;
    let mut client = app.client().await;
    let (tx, mut responses) = apply_stream(&mut client, 64).await;
    for i in 0..20 {
        for z in [zone(), other_zone()] {
            let r = rrset(&z, &format!("h{i}"), RecordType::Txt, &[&format!("v{i}")]);
            tx.send(batch(&format!("{z}{i}"), &z, &[create(&r)]))
                .await
                .unwrap();
        }
    }
    let got = collect(&mut responses, 40).await;
    assert_eq!(got.len(), 40);
    assert!(
        got.values()
            .all(|(r, _)| r.len() == 1 && r[0].outcome() == pb::Outcome::Applied)
    );
    for z in [zone(), other_zone()] {
        let (rrsets, serial) = list(&mut client, &z).await;
        assert_eq!((rrsets.len(), serial), (20, 21), "{z}");
    }

    // Re-sending a batch that committed is recognised, not re-applied.
    let r = rrset(&zone(), "h0", RecordType::Txt, &["v0"]);
    tx.send(batch("again", &zone(), &[create(&r)]))
        .await
        .unwrap();
    let got = collect(&mut responses, 1).await;
    assert_eq!(got["again"].0[0].outcome(), pb::Outcome::AlreadyApplied);

    // An update and a delete through the stream.
    let v1 = rrset(&zone(), "h1", RecordType::Txt, &["v1"]);
    let v1b = rrset(&zone(), "h1", RecordType::Txt, &["v1b"]);
    let changes = vec![
        Change::new(ChangeKind::Update, vec![RRSetOp::update(v1, v1b)]),
        Change::new(ChangeKind::Delete, vec![RRSetOp::delete(r)]),
    ];
    tx.send(batch("edit", &zone(), &changes)).await.unwrap();
    let got = collect(&mut responses, 1).await;
    assert!(
        got["edit"]
            .0
            .iter()
            .all(|r| r.outcome() == pb::Outcome::Applied)
    );
    let (rrsets, _) = list(&mut client, &zone()).await;
    assert_eq!(rrsets.len(), 19);
    drop(tx);
    app.stop().await;
}

/// Batches of one zone on one stream are applied in the order they were sent: each
/// of these updates depends on the one before (out of order, they would conflict),
/// while a batch for another zone in between is not held up by them. (Several worker
/// threads, as in the real process: a single-threaded runtime would hide a race.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batches_of_one_zone_apply_in_stream_order() {
    let (_dir, app) = Running::fresh().await;
    let mut client = app.client().await;
    let (tx, mut responses) = apply_stream(&mut client, 64).await;
    let n = 40;
    tx.send(batch("u0", &zone(), &[create(&a("h", "192.0.2.0"))]))
        .await
        .unwrap();
    for i in 1..n {
        let change = Change::new(
            ChangeKind::Update,
            vec![RRSetOp::update(
                a("h", &format!("192.0.2.{}", i - 1)),
                a("h", &format!("192.0.2.{i}")),
            )],
        );
        tx.send(batch(&format!("u{i}"), &zone(), &[change]))
            .await
            .unwrap();
        if i == n / 2 {
            let other = create(&rrset(&other_zone(), "x", RecordType::A, &["192.0.2.1"]));
            tx.send(batch("other", &other_zone(), &[other]))
                .await
                .unwrap();
        }
    }
    let mut order = Vec::new();
    let mut outcomes = Vec::new();
    while order.len() < n + 1 {
        let resp = responses
            .message()
            .await
            .unwrap()
            .expect("stream ended early");
        outcomes.extend(
            resp.results
                .iter()
                .map(|r| (resp.batch_id.clone(), r.outcome())),
        );
        if resp.done {
            order.push(resp.batch_id);
        }
    }
    assert!(
        outcomes.iter().all(|(_, o)| *o == pb::Outcome::Applied),
        "{outcomes:?}"
    );
    let zone_order: Vec<String> = order.iter().filter(|b| *b != "other").cloned().collect();
    let sent: Vec<String> = (0..n).map(|i| format!("u{i}")).collect();
    assert_eq!(
        zone_order, sent,
        "results of one zone come back in the order sent"
    );
    let listing = client
        .list_records(pb::ListRecordsRequest {
            account: ACCOUNT.into(),
            zone: zone().to_string(),
            fresh: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .message()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(listing.rrsets[0].values, [format!("192.0.2.{}", n - 1)]);
    app.stop().await;
}
