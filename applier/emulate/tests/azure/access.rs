//! Tokens and the subscription quota.
use super::*;

#[tokio::test]
async fn tokens_static_issued_expired_and_refused() {
    let (emu, mut c) = with_example_com().await;
    let zone = format!("{}/example.com", zones_path(false));

    c.token = None;
    let a = c.get(&zone).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::UNAUTHORIZED, "AuthenticationFailed")
    );
    assert!(a.header("www-authenticate").unwrap().starts_with("Bearer "));
    c.token = Some("made-up".into());
    assert_eq!(c.get(&zone).await.code(), "InvalidAuthenticationToken");
    c.token = Some(emu.issue_token(Duration::ZERO));
    assert_eq!(c.get(&zone).await.code(), "ExpiredAuthenticationToken");

    // The token endpoint: a client secret, then a federated assertion.
    let http = reqwest::Client::new();
    let token_url = emu.token_url("my-tenant");
    let form = |extra: &[(&'static str, &'static str)]| {
        let mut f = vec![
            ("grant_type", "client_credentials"),
            ("client_id", DEFAULT_CLIENT_ID),
            ("scope", "https://management.azure.com/.default"),
        ];
        f.extend_from_slice(extra);
        f
    };
    for extra in [
        vec![("client_secret", DEFAULT_CLIENT_SECRET)],
        vec![
            ("client_assertion", DEFAULT_CLIENT_ASSERTION),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ),
        ],
    ] {
        let r = http
            .post(&token_url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(urlencoded(&form(&extra)))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let t: Value = r.json().await.unwrap();
        assert_eq!(t["token_type"], "Bearer");
        assert_eq!(t["expires_in"], 3600);
        c.token = Some(t["access_token"].as_str().unwrap().to_string());
        assert_eq!(c.get(&zone).await.status, StatusCode::OK);
    }
    let r = http
        .post(&token_url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(urlencoded(&form(&[("client_secret", "wrong")])))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let t: Value = r.json().await.unwrap();
    assert_eq!(t["error"], "invalid_client");
    assert!(
        t["error_description"]
            .as_str()
            .unwrap()
            .starts_with("AADSTS7000215")
    );
    // Revoked tokens are refused; clients must fetch anew.
    emu.revoke_tokens();
    assert_eq!(c.get(&zone).await.code(), "InvalidAuthenticationToken");
    let s = emu.stats();
    assert_eq!(s.tokens_issued, 2);
    assert_eq!(s.auth_failures, 5);
    emu.stop().await;
}

#[tokio::test]
async fn the_subscription_quota_answers_429_with_retry_after_and_headers() {
    let emu = start(AzureOptions {
        throttle: ThrottleOptions {
            reads_per_second: 1.0,
            read_burst: 3,
            writes_per_second: 0.5,
            write_burst: 2,
            deletes_per_second: 1.0,
            delete_burst: 1,
        },
        ..AzureOptions::default()
    })
    .await;
    emu.create_zone("example.com");
    let c = Client::new(&emu);
    let zone = format!("{}/example.com", zones_path(false));
    let mut left = vec![];
    for _ in 0..3 {
        let a = c.get(&zone).await;
        assert_eq!(a.status, StatusCode::OK);
        assert!(
            a.header("x-ms-ratelimit-remaining-subscription-writes")
                .is_none()
        );
        left.push(
            a.header("x-ms-ratelimit-remaining-subscription-reads")
                .unwrap()
                .parse::<u64>()
                .unwrap(),
        );
    }
    assert_eq!(left, vec![2, 1, 0]);
    let a = c.get(&zone).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::TOO_MANY_REQUESTS, "TooManyRequests")
    );
    assert_eq!(a.header("retry-after"), Some("1"));
    assert_eq!(
        a.header("x-ms-ratelimit-remaining-subscription-reads"),
        Some("0")
    );
    // Writes have their own bucket.
    for (i, want) in [(0, StatusCode::CREATED), (1, StatusCode::OK)] {
        let a = c
            .put(
                &set_path("example.com", "A", "www"),
                a_set(60, &["192.0.2.1"]),
            )
            .await;
        assert_eq!(a.status, want, "write {i}");
        assert_eq!(
            a.header("x-ms-ratelimit-remaining-subscription-writes"),
            Some(["1", "0"][i])
        );
    }
    let www = set_path("example.com", "A", "www");
    let a = c
        .call(
            Method::PATCH,
            &www,
            Some(json!({ "properties": { "TTL": 5 } })),
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(a.header("retry-after"), Some("2"));
    assert!(
        a.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'write'")
    );
    // Deletes have their own bucket too, as ARM counts them.
    let a = c.delete(&www).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(
        a.header("x-ms-ratelimit-remaining-subscription-deletes"),
        Some("0")
    );
    assert!(
        a.header("x-ms-ratelimit-remaining-subscription-writes")
            .is_none()
    );
    let a = c.delete(&www).await;
    assert_eq!(
        (a.status, a.header("retry-after")),
        (StatusCode::TOO_MANY_REQUESTS, Some("1"))
    );
    assert_eq!(emu.stats().throttled, 3);
    emu.stop().await;
}
