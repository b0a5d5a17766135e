use crate::support::*;
use dnsplane_common::pb;
use dnsplane_common::pb::applier_client::ApplierClient;
use tonic::transport::Channel;
use tonic::{Code, Status};
use tonic_types::StatusExt;

#[tokio::test]
async fn list_records_pages_through_seeded_records() {
    let dir = tempfile::tempdir().unwrap();
    let seeded: Vec<_> = (0..25)
        .map(|i| a(&format!("h{i:02}"), "192.0.2.1"))
        .collect();
    seed(dir.path(), &zone(), &seeded);
    let app = Running::start(dir.path()).await;
    let mut client = app.client().await;

    let req = pb::ListRecordsRequest {
        account: ACCOUNT.into(),
        zone: "Example.COM".into(),
        page_size: 10,
        ..Default::default()
    };
    let mut stream = client.list_records(req).await.unwrap().into_inner();
    let mut pages = Vec::new();
    while let Some(page) = stream.message().await.unwrap() {
        pages.push(page);
    }
    assert_eq!(
        pages.iter().map(|p| p.rrsets.len()).collect::<Vec<_>>(),
        vec![10, 10, 5]
    );
    assert_eq!(
        pages.iter().map(|p| p.last).collect::<Vec<_>>(),
        vec![false, false, true]
    );
    assert!(
        pages.iter().all(|p| p.serial == 2),
        "the seeded batch made serial 2"
    );
    let mut got: Vec<pb::RrSet> = pages.into_iter().flat_map(|p| p.rrsets).collect();
    let mut want: Vec<pb::RrSet> = seeded.iter().map(Into::into).collect();
    let name = |r: &pb::RrSet| r.key.as_ref().unwrap().name.clone();
    got.sort_by_key(name);
    want.sort_by_key(name);
    assert_eq!(got, want);

    // Only some names.
    let req = pb::ListRecordsRequest {
        account: ACCOUNT.into(),
        zone: "example.com.".into(),
        names: vec!["h03.example.com".into(), "absent.example.com.".into()],
        ..Default::default()
    };
    let mut stream = client.list_records(req).await.unwrap().into_inner();
    let page = stream.message().await.unwrap().unwrap();
    assert!(page.last);
    assert_eq!(page.rrsets, vec![(&seeded[3]).into()]);

    // An empty zone is one last, empty page.
    let (rrsets, serial) = list(&mut client, &other_zone()).await;
    assert!(rrsets.is_empty());
    assert_eq!(serial, 1);
    app.stop().await;
}

#[tokio::test]
async fn list_records_rejects_bad_requests_naming_what_is_wrong() {
    let (_dir, app) = Running::fresh().await;
    let mut client = app.client().await;
    let req = |account: &str, zone: &str, names: &[&str]| pb::ListRecordsRequest {
        account: account.into(),
        zone: zone.into(),
        names: names.iter().map(|n| n.to_string()).collect(),
        ..Default::default()
    };

    let e = refusal(&mut client, req("nobody", "example.com.", &[])).await;
    assert_eq!(e.code(), Code::NotFound);
    assert!(e.message().contains("\"nobody\""), "{}", e.message());

    let e = refusal(&mut client, req(ACCOUNT, "example.net.", &[])).await;
    assert_eq!(e.code(), Code::NotFound);
    assert!(e.message().contains("example.net."), "{}", e.message());

    let e = refusal(&mut client, req(ACCOUNT, "bad..zone", &[])).await;
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(violated_fields(&e), vec!["zone"]);

    let names = ["ok.example.com", "x.example.org", "a b"];
    let e = refusal(&mut client, req(ACCOUNT, "example.com.", &names)).await;
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(violated_fields(&e), vec!["names[1]", "names[2]"]);
    app.stop().await;
}

/// The error `ListRecords` answers `req` with (it must refuse it).
async fn refusal(client: &mut ApplierClient<Channel>, req: pb::ListRecordsRequest) -> Status {
    client.list_records(req).await.unwrap_err()
}

/// The fields a refusal's `BadRequest` details name.
fn violated_fields(e: &Status) -> Vec<String> {
    let details = e.get_details_bad_request().unwrap();
    details
        .field_violations
        .into_iter()
        .map(|v| v.field)
        .collect()
}
