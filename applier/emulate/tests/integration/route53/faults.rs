//! Each fault action, over HTTP.
use crate::support::{change, opts, start, summary};
use dnsplane_emulate::{FaultAction, FaultRule};
use std::time::{Duration, Instant};

#[tokio::test]
async fn ambiguous_after_commit_really_commits() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    emu.add_fault(
        FaultRule::new(FaultAction::AmbiguousAfterCommit)
            .op("change")
            .times(1),
    );
    let a = change("CREATE", "a.example.com", "A", 60, &["192.0.2.1"]);
    let r = c.change(&zone, std::slice::from_ref(&a)).await;
    assert_eq!(r.status, 502);
    assert_eq!(r.text("Type").unwrap(), "Receiver");
    assert_eq!(r.code(), "InternalFailure");
    assert!(summary(&emu, &zone).contains(&"a.example.com. A 60 192.0.2.1".to_string()));
    // The retry tells the caller it had committed.
    c.change(&zone, &[a]).await.assert_error(
        400,
        "InvalidChangeBatch",
        "[Tried to create resource record set [name='a.example.com.', type='A'] but it already exists]",
    );
    // 503 on request, with the provider's code for it.
    emu.add_fault(
        FaultRule::new(FaultAction::AmbiguousAfterCommit)
            .op("change")
            .status(503)
            .times(1),
    );
    let r = c
        .change(
            &zone,
            &[change("CREATE", "b.example.com", "A", 60, &["192.0.2.2"])],
        )
        .await;
    assert_eq!((r.status, r.code().as_str()), (503, "ServiceUnavailable"));
    assert_eq!(emu.rrsets(&zone).len(), 4);
    assert_eq!(emu.stats().faults.get("ambiguous_after_commit"), Some(&2));
    emu.stop().await;
}

#[tokio::test]
async fn timeout_drops_the_connection_committed_or_not() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    emu.add_fault(
        FaultRule::new(FaultAction::Timeout)
            .op("change")
            .delay(Duration::from_millis(200))
            .times(1),
    );
    let t = Instant::now();
    let err = c
        .execute(c.signed(
            "POST",
            &format!("/2013-04-01/hostedzone/{zone}/rrset/"),
            &crate::support::batch(&[change("CREATE", "a.example.com", "A", 60, &["192.0.2.1"])]),
            None,
        ))
        .await
        .expect_err("no answer");
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(190) && took < Duration::from_secs(5),
        "{took:?} {err}"
    );
    assert_eq!(emu.rrsets(&zone).len(), 2, "not committed");
    emu.add_fault(
        FaultRule::new(FaultAction::Timeout)
            .op("change")
            .delay(Duration::from_millis(50))
            .commit(true)
            .times(1),
    );
    let res = c
        .execute(c.signed(
            "POST",
            &format!("/2013-04-01/hostedzone/{zone}/rrset/"),
            &crate::support::batch(&[change("CREATE", "b.example.com", "A", 60, &["192.0.2.2"])]),
            None,
        ))
        .await;
    assert!(res.is_err());
    assert_eq!(emu.rrsets(&zone).len(), 3, "committed before the drop");
    // The next request is answered normally.
    assert_eq!(c.get("/2013-04-01/hostedzone").await.status, 200);
    emu.stop().await;
}

#[tokio::test]
async fn latency_throttle_prior_request_and_error() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    emu.add_fault(
        FaultRule::new(FaultAction::Latency)
            .op("list_rrsets")
            .delay(Duration::from_millis(150))
            .times(1),
    );
    let t = Instant::now();
    let r = c.get(&format!("/2013-04-01/hostedzone/{zone}/rrset")).await;
    assert_eq!(r.status, 200);
    assert!(t.elapsed() >= Duration::from_millis(140));

    emu.add_fault(FaultRule::new(FaultAction::Throttle).op("change").times(1));
    c.change(
        &zone,
        &[change("CREATE", "a.example.com", "A", 60, &["192.0.2.1"])],
    )
    .await
    .assert_error(400, "Throttling", "Rate exceeded");
    assert_eq!(emu.stats().throttled, 1);

    emu.add_fault(
        FaultRule::new(FaultAction::PriorRequestNotComplete)
            .op("change")
            .times(1),
    );
    c.change(
        &zone,
        &[change("CREATE", "a.example.com", "A", 60, &["192.0.2.1"])],
    )
    .await
    .assert_error(
        400,
        "PriorRequestNotComplete",
        "The request was rejected because Route 53 was still processing a prior request.",
    );

    let mut e = FaultRule::new(FaultAction::Error).op("zones").status(403);
    e.code = Some("AccessDenied".into());
    e.message = Some("User is not authorized to perform: route53:GetHostedZone".into());
    e.retry_after = Some(Duration::from_secs(2));
    emu.add_fault(e.times(1));
    let r = c.get(&format!("/2013-04-01/hostedzone/{zone}")).await;
    r.assert_error(
        403,
        "AccessDenied",
        "User is not authorized to perform: route53:GetHostedZone",
    );
    assert_eq!(r.headers.get("retry-after").unwrap(), "2");
    assert_eq!(
        emu.rrsets(&zone).len(),
        2,
        "no fault above committed anything"
    );
    // Spent rules no longer fire.
    let r = c
        .change(
            &zone,
            &[change("CREATE", "a.example.com", "A", 60, &["192.0.2.1"])],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    emu.stop().await;
}

#[tokio::test]
async fn pending_forever_and_scoping_by_zone_and_skip() {
    let (emu, c) = start(opts()).await;
    let z1 = emu.create_zone("one.example", false);
    let z2 = emu.create_zone("two.example", false);
    emu.add_fault(
        FaultRule::new(FaultAction::PendingForever)
            .op("change")
            .zone("one.example."),
    );
    let id1 = c
        .change(
            &z1,
            &[change("CREATE", "a.one.example", "A", 60, &["192.0.2.1"])],
        )
        .await
        .text("Id")
        .unwrap();
    let id2 = c
        .change(
            &z2,
            &[change("CREATE", "a.two.example", "A", 60, &["192.0.2.1"])],
        )
        .await
        .text("Id")
        .unwrap();
    tokio::time::sleep(Duration::from_millis(450)).await;
    let status = |id: String| {
        let c = c.clone();
        async move {
            c.get(&format!("/2013-04-01{id}"))
                .await
                .text("Status")
                .unwrap()
        }
    };
    assert_eq!(status(id1).await, "PENDING");
    assert_eq!(status(id2).await, "INSYNC");
    // skip: the first matching call passes; zone by prefixed id.
    emu.clear_faults();
    emu.add_fault(
        FaultRule::new(FaultAction::Throttle)
            .zone(&format!("/hostedzone/{z2}"))
            .skip(1)
            .times(1),
    );
    let list = |z: String| {
        let c = c.clone();
        async move {
            c.get(&format!("/2013-04-01/hostedzone/{z}/rrset"))
                .await
                .status
        }
    };
    assert_eq!(list(z2.clone()).await, 200);
    assert_eq!(list(z1.clone()).await, 200);
    assert_eq!(list(z2.clone()).await, 400);
    assert_eq!(list(z2).await, 200);
    emu.stop().await;
}
