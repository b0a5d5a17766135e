//! Labels through the gRPC edge: pushed and patched with a record, refused at their
//! field when out of bounds, persisted with the desired state, read back by
//! ListRecordStates, and never a change of data.
use super::tests::service;
use super::*;
use pb::planner_server::Planner;

fn labelled(name: &str, labels: &[(&str, &str)]) -> pb::DesiredRecord {
    pb::DesiredRecord {
        name: name.into(),
        r#type: "A".into(),
        values: vec!["192.0.2.1".into()],
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    }
}

fn put(records: Vec<pb::DesiredRecord>) -> tonic::Request<pb::PutDesiredRequest> {
    tonic::Request::new(pb::PutDesiredRequest {
        source: "test".into(),
        records,
    })
}

/// (name, labels) of every record ListRecordStates lists, converged ones included.
async fn listed(svc: &PlannerService) -> Vec<(String, Vec<(String, String)>)> {
    let page = svc
        .list_record_states(tonic::Request::new(pb::ListRecordStatesRequest {
            include_converged: true,
            page_size: 100,
            ..Default::default()
        }))
        .await
        .expect("list")
        .into_inner();
    page.records
        .into_iter()
        .map(|r| {
            let mut labels: Vec<(String, String)> = r.labels.into_iter().collect();
            labels.sort();
            (r.key.unwrap_or_default().name, labels)
        })
        .collect()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_are_pushed_listed_persisted_and_no_data() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    let web = [("owner", "c1"), ("resource", "ingress/default/web")];
    svc.put_desired(put(vec![
        labelled("www.example.com", &web),
        labelled("plain.example.com", &[]),
    ]))
    .await
    .expect("push");
    let zone = Name::parse("example.com").unwrap();
    assert_eq!(svc.engine.take_dirty(&zone).len(), 2);
    assert_eq!(
        listed(&svc).await,
        [
            ("plain.example.com.".to_string(), vec![]),
            ("www.example.com.".to_string(), pairs(&web)),
        ]
    );

    // The same push with other labels: stored and listed, nothing to re-plan.
    let moved = [("owner", "c2")];
    svc.put_desired(put(vec![
        labelled("www.example.com", &moved),
        labelled("plain.example.com", &[]),
    ]))
    .await
    .expect("push");
    assert!(
        svc.engine.take_dirty(&zone).is_empty(),
        "labels are no data"
    );
    assert_eq!(listed(&svc).await[1].1, pairs(&moved));

    // A patch changes labels alone too.
    svc.patch_desired(tonic::Request::new(pb::PatchDesiredRequest {
        source: "test".into(),
        upserts: vec![labelled("plain.example.com", &[("owner", "p")])],
        deletes: vec![],
    }))
    .await
    .expect("patch");
    assert!(
        svc.engine.take_dirty(&zone).is_empty(),
        "labels are no data"
    );

    // A restart reads them back from the store (snapshot and journal), as the planner
    // restores pushes at start.
    let again = service(dir.path());
    again.engine.restore_pushes().unwrap();
    assert_eq!(
        listed(&again).await,
        [
            ("plain.example.com.".to_string(), pairs(&[("owner", "p")])),
            ("www.example.com.".to_string(), pairs(&moved)),
        ]
    );

    // Out of bounds: refused at the field, naming the label; nothing changes.
    let long = "v".repeat(crate::source::labels::MAX_LABEL_VALUE + 1);
    let e = svc
        .put_desired(put(vec![labelled("www.example.com", &[("owner", &long)])]))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(
        e.message()
            .contains("records[0].labels: label \"owner\": the value is above 1024 bytes"),
        "{}",
        e.message()
    );
    let many: Vec<(String, String)> = (0..=crate::source::labels::MAX_LABELS)
        .map(|i| (format!("k{i}"), String::new()))
        .collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let e = svc
        .patch_desired(tonic::Request::new(pb::PatchDesiredRequest {
            source: "test".into(),
            upserts: vec![labelled("www.example.com", &many)],
            deletes: vec![],
        }))
        .await
        .unwrap_err();
    assert!(
        e.message()
            .contains("upserts[0].labels: 33 labels, above the limit of 32"),
        "{}",
        e.message()
    );
    assert_eq!(listed(&svc).await[1].1, pairs(&moved));
}
