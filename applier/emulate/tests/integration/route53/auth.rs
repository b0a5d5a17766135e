//! SigV4: requests signed by `aws-sigv4` pass; every other kind is refused with AWS's
//! code and text.
use crate::support::{Client, change, enc, opts, start};
use dnsplane_emulate::route53::{Credential, Route53Options};
use std::time::{Duration, SystemTime};

#[tokio::test]
async fn signed_requests_pass_including_encoded_paths_and_queries() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    let r = c.get("/2013-04-01/hostedzone").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.headers.get("x-amzn-requestid").is_some());
    // A body, and characters the canonical query must encode (`*`, `\`).
    let r = c
        .change(
            &zone,
            &[change("CREATE", "*.example.com", "A", 60, &["192.0.2.1"])],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = c
        .get(&format!(
            "/2013-04-01/hostedzone/{zone}/rrset?name={}&type=A&maxitems=5",
            enc("\\052.example.com.")
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // The id given with its prefix, encoded into the path.
    let r = c
        .get(&format!(
            "/2013-04-01/hostedzone/{}",
            enc(&format!("/hostedzone/{zone}"))
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    emu.stop().await;
}

#[tokio::test]
async fn unknown_key_wrong_secret_and_missing_signature() {
    let (emu, c) = start(opts()).await;
    c.with_key("AKIANOBODY0000000000", "whatever")
        .get("/2013-04-01/hostedzone")
        .await
        .assert_error(
            403,
            "InvalidClientTokenId",
            "The security token included in the request is invalid.",
        );
    c.with_key(dnsplane_emulate::DEFAULT_ACCESS_KEY_ID, "not-the-secret")
        .get("/2013-04-01/hostedzone")
        .await
        .assert_error(
            403,
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
        );
    let r = c.get_unsigned("/2013-04-01/hostedzone").await;
    r.assert_error(
        403,
        "MissingAuthenticationToken",
        "Missing Authentication Token",
    );
    assert_eq!(emu.stats().auth_failures, 3);
    emu.stop().await;
}

#[tokio::test]
async fn a_tampered_body_query_or_date_fails() {
    let (emu, c) = start(opts()).await;
    let zone = emu.create_zone("example.com", false);
    let body = crate::support::batch(&[change("CREATE", "a.example.com", "A", 60, &["192.0.2.1"])]);
    let path = format!("/2013-04-01/hostedzone/{zone}/rrset/");
    // Body changed after signing.
    let mut req = c.signed("POST", &path, &body, None);
    *req.body_mut() = body.replace("192.0.2.1", "192.0.2.9").into_bytes();
    let r = c.execute(req).await.unwrap();
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "SignatureDoesNotMatch")
    );
    // Query changed after signing.
    let req = c.signed(
        "GET",
        &format!("/2013-04-01/hostedzone/{zone}/rrset?maxitems=1"),
        "",
        None,
    );
    let (mut parts, b) = req.into_parts();
    parts.uri = format!(
        "{}/2013-04-01/hostedzone/{zone}/rrset?maxitems=2",
        c.endpoint
    )
    .parse()
    .unwrap();
    let r = c
        .execute(http::Request::from_parts(parts, b))
        .await
        .unwrap();
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "SignatureDoesNotMatch")
    );
    // Signed ten minutes ago.
    let then = SystemTime::now() - Duration::from_secs(600);
    let r = c
        .execute(c.signed("GET", "/2013-04-01/hostedzone", "", Some(then)))
        .await
        .unwrap();
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "SignatureDoesNotMatch")
    );
    assert!(
        r.message().starts_with("Signature expired: "),
        "{}",
        r.message()
    );
    // Another region.
    let mut eu = c.clone();
    eu.signing.region = "eu-west-1".into();
    let r = eu.get("/2013-04-01/hostedzone").await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "SignatureDoesNotMatch")
    );
    // Nothing was written.
    assert_eq!(emu.rrsets(&zone).len(), 2);
    emu.stop().await;
}

#[tokio::test]
async fn session_tokens_configured_keys_and_verification_off() {
    let o = Route53Options {
        credentials: vec![
            Credential::new("AKIAONE", "secret-one"),
            ("AKIATWO", "secret-two").into(),
        ],
        ..opts()
    };
    let (emu, c) = start(o).await;
    let mut two = c.with_key("AKIATWO", "secret-two");
    two.signing.session_token = Some("a-session-token".into());
    assert_eq!(two.get("/2013-04-01/hostedzone").await.status, 200);
    // The default key is not accepted when keys are configured.
    assert_eq!(
        c.get("/2013-04-01/hostedzone").await.code(),
        "InvalidClientTokenId"
    );
    emu.stop().await;

    let (emu, c) = start(Route53Options {
        verify_signatures: false,
        ..opts()
    })
    .await;
    let r = c.get_unsigned("/2013-04-01/hostedzone").await;
    assert_eq!(r.status, 200);
    let _ = Client::new(&emu.endpoint(), "x", "y");
    emu.stop().await;
}
