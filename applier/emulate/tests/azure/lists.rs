//! Paging, limits, faults and the control API.
use super::*;

#[tokio::test]
async fn lists_page_with_top_and_next_link() {
    let emu = start(unthrottled()).await;
    emu.create_zone("example.com");
    for i in 0..250 {
        emu.put_record_set(
            "example.com",
            "TXT",
            &format!("n{i:03}"),
            &json!({ "properties": { "TTL": 60, "TXTRecords": [{ "value": [format!("v{i}")] }] } }),
        );
    }
    let c = Client::new(&emu);
    for (path, top, want_pages, want_total) in [
        (
            format!(
                "{}/example.com/recordsets?api-version={API}&$top=100",
                zones_path(false)
            ),
            Some(100),
            3,
            252,
        ),
        (
            format!("{}/example.com/all?api-version={API}", zones_path(false)),
            None,
            3,
            252,
        ),
        (
            format!(
                "{}/example.com/TXT?api-version={API}&$top=60",
                zones_path(false)
            ),
            Some(60),
            5,
            250,
        ),
    ] {
        let mut next = Some(path);
        let (mut pages, mut names) = (0, std::collections::BTreeSet::new());
        while let Some(url) = next {
            let a = c.get(&url).await;
            assert_eq!(a.status, StatusCode::OK, "{}", a.body);
            let v = a.body["value"].as_array().unwrap();
            assert!(v.len() <= top.unwrap_or(100));
            for s in v {
                names.insert(format!("{}/{}", s["name"], s["type"]));
            }
            pages += 1;
            next = a.body["nextLink"].as_str().map(str::to_string);
            if let Some(n) = &next {
                assert!(n.starts_with(&emu.endpoint()), "{n}");
                assert!(n.contains("api-version="));
            }
        }
        assert_eq!((pages, names.len()), (want_pages, want_total));
    }
    let a = c
        .get(&format!(
            "{}/example.com/all?api-version={API}&$top=0",
            zones_path(false)
        ))
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    emu.stop().await;
}

#[tokio::test]
async fn limits_and_cname_rules_are_refused_with_arm_codes() {
    let emu = start(AzureOptions {
        max_record_sets: 5,
        ..unthrottled()
    })
    .await;
    emu.create_zone("example.com");
    let c = Client::new(&emu);
    let ips: Vec<String> = (1..=21).map(|i| format!("192.0.2.{i}")).collect();
    let refs: Vec<&str> = ips.iter().map(String::as_str).collect();
    let a = c
        .put(&set_path("example.com", "A", "big"), a_set(60, &refs))
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, "BadRequest")
    );
    assert!(a.body["error"]["message"].as_str().unwrap().contains("20"));
    let a = c
        .put(&set_path("example.com", "A", "big"), a_set(60, &refs[..20]))
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let long = "x".repeat(1025);
    let a = c
        .put(
            &set_path("example.com", "TXT", "t"),
            json!({ "properties": { "TTL": 1, "TXTRecords": [{ "value": [long] }] } }),
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    let a = c
        .put(
            &set_path("example.com", "A", "www"),
            json!({ "properties": { "ARecords": [] } }),
        )
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "TTL is required");
    // CNAME beside other data, either way round.
    let cname =
        json!({ "properties": { "TTL": 60, "CNAMERecord": { "cname": "target.example.net" } } });
    let a = c
        .put(&set_path("example.com", "CNAME", "big"), cname.clone())
        .await;
    assert_eq!((a.status, a.code()), (StatusCode::CONFLICT, "Conflict"));
    let a = c
        .put(&set_path("example.com", "CNAME", "alias"), cname)
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let a = c
        .put(
            &set_path("example.com", "TXT", "alias"),
            json!({ "properties": { "TTL": 1, "TXTRecords": [{ "value": ["x"] }] } }),
        )
        .await;
    assert_eq!(a.status, StatusCode::CONFLICT);
    // SOA, NS, big, alias: one more fits, then the zone is full.
    let a = c
        .put(
            &set_path("example.com", "A", "five"),
            a_set(60, &["192.0.2.1"]),
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let a = c
        .put(
            &set_path("example.com", "A", "six"),
            a_set(60, &["192.0.2.1"]),
        )
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, "QuotaExceeded")
    );
    // Records of another type in the body.
    let a = c.put(&set_path("example.com", "A", "five"), json!({ "properties": { "TTL": 1, "MXRecords": [{ "preference": 1, "exchange": "m" }] } })).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    emu.stop().await;
}

#[tokio::test]
async fn faults_answer_in_arm_words() {
    let (emu, c) = with_example_com().await;
    let www = set_path("example.com", "A", "www");

    emu.add_fault(
        FaultRule::new(FaultAction::Error)
            .op("put_record_set")
            .status(503)
            .times(2),
    );
    for _ in 0..2 {
        let a = c.put(&www, a_set(60, &["192.0.2.1"])).await;
        assert_eq!(
            (a.status, a.code()),
            (StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable")
        );
    }
    assert!(
        emu.record_sets("example.com")
            .iter()
            .all(|s| s.name != "www")
    );
    assert_eq!(
        c.put(&www, a_set(60, &["192.0.2.1"])).await.status,
        StatusCode::CREATED
    );

    // Commit, then 502: the set changed although the answer says it failed.
    emu.add_fault(
        FaultRule::new(FaultAction::AmbiguousAfterCommit)
            .op("put_record_set")
            .zone("example.com")
            .times(1),
    );
    let a = c.put(&www, a_set(99, &["192.0.2.7"])).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_GATEWAY, "BadGateway")
    );
    assert_eq!(ttl_of(&emu, "example.com", "www"), 99);

    // Throttle: 429 with Retry-After.
    let mut rule = FaultRule::new(FaultAction::Throttle)
        .op("get_record_set")
        .times(1);
    rule.retry_after = Some(Duration::from_secs(7));
    emu.add_fault(rule);
    let a = c.get(&www).await;
    assert_eq!(
        (a.status, a.header("retry-after")),
        (StatusCode::TOO_MANY_REQUESTS, Some("7"))
    );

    // Timeout: the connection drops without an answer.
    emu.add_fault(
        FaultRule::new(FaultAction::Timeout)
            .op("delete_record_set")
            .delay(Duration::from_millis(50))
            .times(1),
    );
    assert!(c.send(Method::DELETE, &www, None, &[]).await.is_err());
    assert_eq!(
        emu.record_sets("example.com").len(),
        3,
        "a timeout without commit changes nothing"
    );
    let s = emu.stats();
    assert_eq!(s.faults.get("error"), Some(&2));
    assert_eq!(s.faults.get("timeout"), Some(&1));
    emu.clear_faults();
    assert_eq!(c.delete(&www).await.status, StatusCode::OK);
    emu.stop().await;
}

#[tokio::test]
async fn the_control_api_makes_zones_seeds_sets_and_issues_tokens() {
    let emu = start(unthrottled()).await;
    let http = reqwest::Client::new();
    let ctl = |p: &str| format!("{}/_emulator{p}", emu.endpoint());
    let r = http
        .post(ctl("/zones"))
        .json(&json!({ "name": "corp.internal", "private": true }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = http
        .post(ctl("/zones/corp.internal/recordsets"))
        .json(&json!([{ "type": "A", "name": "db", "properties": { "ttl": 5, "aRecords": [{ "ipv4Address": "10.1.1.1" }] } }]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    let sets: Value = http
        .get(ctl("/zones/corp.internal/recordsets"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sets.as_array().unwrap().len(), 2);
    let db = sets
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "db")
        .unwrap();
    assert_eq!(db["records"][0], "10.1.1.1");
    let t: Value = http
        .post(ctl("/tokens"))
        .json(&json!({ "lifetime": "1h" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut c = Client::new(&emu);
    c.token = t["access_token"].as_str().map(str::to_string);
    let a = c.get_private("corp.internal/A/db").await;
    assert_eq!(a.status, StatusCode::OK);
    let r = http
        .post(ctl("/faults"))
        .json(&json!({ "action": "pending_forever" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let stats: Value = http
        .get(ctl("/stats"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["requests"]["RecordSets_Get"], 1);
    emu.stop().await;
}
