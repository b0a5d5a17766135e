//! The per-account request quota: Route 53's HTTP 400 `Throttling`.
use crate::support::{opts, start};
use dnsplane_emulate::route53::{Credential, Route53Options};
use std::time::Duration;

#[tokio::test]
async fn throttles_at_the_configured_rate_per_account() {
    let o = Route53Options {
        rate: 5.0,
        burst: 5,
        credentials: vec![
            Credential::new("AKIAONE", "s1"),
            Credential::new("AKIATWO", "s2"),
        ],
        ..opts()
    };
    let (emu, c) = start(o).await;
    let one = c.with_key("AKIAONE", "s1");
    let two = c.with_key("AKIATWO", "s2");
    // Eight at once, so that almost nothing refills meanwhile.
    let statuses =
        futures::future::join_all((0..8).map(|_| one.get("/2013-04-01/hostedzone"))).await;
    let ok = statuses.iter().filter(|r| r.status == 200).count();
    assert!(
        (5..=6).contains(&ok),
        "a burst of 5 (plus what refilled meanwhile): {ok}"
    );
    let throttled: Vec<_> = statuses.iter().filter(|r| r.status != 200).collect();
    for r in &throttled {
        r.assert_error(400, "Throttling", "Rate exceeded");
        assert_eq!(r.text("Type").unwrap(), "Sender");
    }
    // Another account has its own bucket.
    assert_eq!(two.get("/2013-04-01/hostedzone").await.status, 200);
    // 5 per second: a token is back within 200 ms.
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(one.get("/2013-04-01/hostedzone").await.status, 200);
    let stats = emu.stats();
    assert_eq!(stats.throttled as usize, throttled.len());
    assert_eq!(stats.requests.get("ListHostedZones"), Some(&10));
    emu.stop().await;
}
