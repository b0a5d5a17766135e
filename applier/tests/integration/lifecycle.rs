use crate::support::*;
use dnsplane_common::pb;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

#[tokio::test]
async fn health_reports_serving_for_the_service_and_the_server() {
    let (_dir, app) = Running::fresh().await;
    let mut health = HealthClient::new(app.channel().await);
    for service in ["dnsplane.v1.Applier", ""] {
        let resp = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(resp.status(), ServingStatus::Serving, "{service:?}");
    }
    app.stop().await;
}

#[tokio::test]
async fn records_survive_a_restart() {
    let (dir, app) = Running::fresh().await;
    let mut client = app.client().await;
    let (tx, mut responses) = apply_stream(&mut client, 1).await;
    let r = a("kept", "192.0.2.1");
    tx.send(batch("b", &zone(), &[create(&r)])).await.unwrap();
    let resp = responses.message().await.unwrap().unwrap();
    assert_eq!(resp.results[0].outcome(), pb::Outcome::Applied);
    drop(tx);
    app.stop().await;

    let app = Running::start(dir.path()).await;
    let mut client = app.client().await;
    let (rrsets, serial) = list(&mut client, &zone()).await;
    assert_eq!(rrsets, vec![(&r).into()]);
    assert_eq!(serial, 2);
    app.stop().await;
}

#[tokio::test]
async fn shutdown_ends_open_apply_streams_and_returns() {
    let (_dir, app) = Running::fresh().await;
    let mut client = app.client().await;
    let (tx, mut responses) = apply_stream(&mut client, 1).await;
    tx.send(batch("b", &zone(), &[create(&a("x", "192.0.2.1"))]))
        .await
        .unwrap();
    assert!(responses.message().await.unwrap().unwrap().done);

    // The planner keeps its side open; shutdown still completes and ends the stream.
    app.stop().await;
    match responses.message().await {
        Ok(None) | Err(_) => {}
        Ok(Some(r)) => panic!("unexpected response after shutdown: {r:?}"),
    }
    drop(tx);
}
