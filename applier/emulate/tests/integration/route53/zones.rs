//! Hosted zones: create, get, list, list by name, delete.
use crate::support::{NS, change, enc, opts, start};

#[tokio::test]
async fn create_hosted_zone_answers_like_aws() {
    let (emu, c) = start(opts()).await;
    let r = c.create_zone("Example.COM", "ref-1", false).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(
        r.body
            .contains(&format!("<CreateHostedZoneResponse xmlns=\"{NS}\">"))
    );
    let id = r.text("Id").unwrap();
    assert!(id.starts_with("/hostedzone/Z"), "{id}");
    let bare = id.trim_start_matches("/hostedzone/");
    assert_eq!(
        r.headers.get("location").unwrap().to_str().unwrap(),
        format!("{}/2013-04-01/hostedzone/{bare}", emu.endpoint())
    );
    assert_eq!(r.text("Name").unwrap(), "example.com.");
    assert_eq!(r.text("CallerReference").unwrap(), "ref-1");
    assert_eq!(r.text("PrivateZone").unwrap(), "false");
    assert_eq!(r.text("ResourceRecordSetCount").unwrap(), "2");
    assert_eq!(r.text("Status").unwrap(), "PENDING");
    assert!(r.all("Id")[1].starts_with("/change/C"));
    let ns = r.all("NameServer");
    assert_eq!(ns.len(), 4);
    // The apex SOA and NS exist, the NS set naming the delegation set.
    let sets = emu.rrsets(bare);
    assert_eq!(
        sets.iter().map(|s| s.rtype.as_str()).collect::<Vec<_>>(),
        vec!["NS", "SOA"]
    );
    assert_eq!(
        sets[0].values,
        ns.iter().map(|n| format!("{n}.")).collect::<Vec<_>>()
    );
    assert_eq!(sets[1].ttl, Some(900));
    // A reused CallerReference.
    c.create_zone("other.com", "ref-1", false)
        .await
        .assert_error(
            409,
            "HostedZoneAlreadyExists",
            "A hosted zone has already been created with the specified caller reference.",
        );
    // GetHostedZone, with and without the prefix.
    for path in [bare.to_string(), enc(&id)] {
        let g = c.get(&format!("/2013-04-01/hostedzone/{path}")).await;
        assert_eq!(g.status, 200, "{}", g.body);
        assert_eq!(g.text("Id").unwrap(), id);
        assert_eq!(g.all("NameServer"), ns);
    }
    emu.stop().await;
}

#[tokio::test]
async fn private_and_public_zones_share_a_name() {
    let (emu, c) = start(opts()).await;
    let public = c.create_zone("corp.example", "pub", false).await;
    let private = c.create_zone("corp.example", "priv", true).await;
    assert_eq!(
        (public.status, private.status),
        (201, 201),
        "{}",
        private.body
    );
    let (pid, qid) = (public.text("Id").unwrap(), private.text("Id").unwrap());
    assert_ne!(pid, qid);
    assert_eq!(private.text("PrivateZone").unwrap(), "true");
    assert_eq!(private.text("VPCId").unwrap(), "vpc-1a2b3c4d");
    let g = c
        .get(&format!(
            "/2013-04-01/hostedzone/{}",
            qid.trim_start_matches("/hostedzone/")
        ))
        .await;
    assert_eq!(g.text("VPCRegion").unwrap(), "eu-west-1");
    assert!(
        g.text("DelegationSet").is_none(),
        "a private zone answers VPCs"
    );
    let l = c
        .get("/2013-04-01/hostedzonesbyname?dnsname=corp.example")
        .await;
    let ids = l.all("Id");
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&pid) && ids.contains(&qid));
    // Records in one do not show in the other.
    let r = c
        .change(
            pid.trim_start_matches("/hostedzone/"),
            &[change(
                "CREATE",
                "www.corp.example",
                "A",
                60,
                &["192.0.2.1"],
            )],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(emu.rrsets(&qid).len(), 2);
    assert_eq!(emu.rrsets(&pid).len(), 3);
    emu.stop().await;
}

#[tokio::test]
async fn unknown_zones_and_delete_rules() {
    let (emu, c) = start(opts()).await;
    c.get("/2013-04-01/hostedzone/Z0NOSUCHZONE")
        .await
        .assert_error(
            404,
            "NoSuchHostedZone",
            "No hosted zone found with ID: Z0NOSUCHZONE",
        );
    c.change(
        "Z0NOSUCHZONE",
        &[change("CREATE", "a.example.com", "A", 60, &["192.0.2.1"])],
    )
    .await
    .assert_error(
        404,
        "NoSuchHostedZone",
        "No hosted zone found with ID: Z0NOSUCHZONE",
    );
    c.get("/2013-04-01/hostedzone/Z0NOSUCHZONE/rrset")
        .await
        .assert_error(
            404,
            "NoSuchHostedZone",
            "No hosted zone found with ID: Z0NOSUCHZONE",
        );
    let zone = emu.create_zone("example.com", false);
    let a = change("CREATE", "a.example.com", "A", 60, &["192.0.2.1"]);
    assert_eq!(c.change(&zone, std::slice::from_ref(&a)).await.status, 200);
    c.send("DELETE", &format!("/2013-04-01/hostedzone/{zone}"), "")
        .await
        .assert_error(
            400,
            "HostedZoneNotEmpty",
            "The specified hosted zone contains non-required resource record sets and so cannot be deleted.",
        );
    let del = a.replace("CREATE", "DELETE");
    assert_eq!(c.change(&zone, &[del]).await.status, 200);
    let d = c
        .send("DELETE", &format!("/2013-04-01/hostedzone/{zone}"), "")
        .await;
    assert_eq!(d.status, 200, "{}", d.body);
    assert_eq!(d.text("Status").unwrap(), "PENDING");
    assert_eq!(
        c.get(&format!("/2013-04-01/hostedzone/{zone}"))
            .await
            .status,
        404
    );
    emu.stop().await;
}

#[tokio::test]
async fn listing_zones_pages() {
    let (emu, c) = start(opts()).await;
    for name in [
        "b.example.com",
        "example.com",
        "a-b.example.com",
        "example.org",
        "a.example.com",
    ] {
        emu.create_zone(name, false);
    }
    // ListHostedZones: by id, `marker` = NextMarker.
    let mut seen = Vec::new();
    let mut q = "maxitems=2".to_string();
    loop {
        let r = c.get(&format!("/2013-04-01/hostedzone?{q}")).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.text("MaxItems").unwrap(), "2");
        seen.extend(r.all("Name"));
        if r.text("IsTruncated").unwrap() == "false" {
            assert!(r.text("NextMarker").is_none());
            break;
        }
        q = format!("maxitems=2&marker={}", r.text("NextMarker").unwrap());
    }
    assert_eq!(seen.len(), 5);
    // ListHostedZonesByName: labels reversed ("com.example.a-b." < "com.example.a.").
    let mut names = Vec::new();
    let mut q = "maxitems=2".to_string();
    loop {
        let r = c.get(&format!("/2013-04-01/hostedzonesbyname?{q}")).await;
        assert_eq!(r.status, 200, "{}", r.body);
        names.extend(r.all("Name"));
        if r.text("IsTruncated").unwrap() == "false" {
            break;
        }
        q = format!(
            "maxitems=2&dnsname={}&hostedzoneid={}",
            r.text("NextDNSName").unwrap(),
            r.text("NextHostedZoneId").unwrap()
        );
    }
    assert_eq!(
        names,
        vec![
            "example.com.",
            "a-b.example.com.",
            "a.example.com.",
            "b.example.com.",
            "example.org."
        ]
    );
    let count = c.get("/2013-04-01/hostedzonecount").await;
    assert_eq!(count.text("HostedZoneCount").unwrap(), "5");
    emu.stop().await;
}
