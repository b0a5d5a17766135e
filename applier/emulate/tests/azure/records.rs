//! Record sets, zones, api-versions and the private zones' JSON.
use super::*;

#[tokio::test]
async fn etags_guard_every_write_and_a_failed_condition_is_412() {
    let (emu, c) = with_example_com().await;
    let www = set_path("example.com", "A", "www");

    let created = c
        .call(
            Method::PUT,
            &www,
            Some(a_set(300, &["192.0.2.1"])),
            &[("If-None-Match", "*")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["type"], "Microsoft.Network/dnszones/A");
    assert_eq!(created.body["name"], "www");
    assert_eq!(created.body["properties"]["fqdn"], "www.example.com.");
    assert_eq!(created.body["properties"]["provisioningState"], "Succeeded");
    assert_eq!(
        created.body["properties"]["ARecords"][0]["ipv4Address"],
        "192.0.2.1"
    );
    let first = created.etag();
    assert_eq!(c.get(&www).await.etag(), first);

    // Create-only again: 412 with ARM's body, nothing changed.
    let again = c
        .call(
            Method::PUT,
            &www,
            Some(a_set(60, &["192.0.2.9"])),
            &[("If-None-Match", "*")],
        )
        .await;
    assert_eq!(again.status, StatusCode::PRECONDITION_FAILED);
    assert_eq!(again.code(), "PreconditionFailed");
    assert!(
        again.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("If-None-Match")
    );
    assert_eq!(again.body.as_object().unwrap().len(), 1, "{}", again.body);
    assert_eq!(ttl_of(&emu, "example.com", "www"), 300);

    // If-Match with the current ETag succeeds and the ETag changes.
    let updated = c
        .call(
            Method::PUT,
            &www,
            Some(a_set(120, &["192.0.2.2"])),
            &[("If-Match", &first)],
        )
        .await;
    assert_eq!(updated.status, StatusCode::OK);
    let second = updated.etag();
    assert_ne!(first, second);
    // The stale one fails, on PUT, PATCH and DELETE alike.
    for (m, body) in [
        (Method::PUT, Some(a_set(1, &["192.0.2.3"]))),
        (Method::PATCH, Some(json!({ "properties": { "TTL": 5 } }))),
        (Method::DELETE, None),
    ] {
        let a = c.call(m.clone(), &www, body, &[("If-Match", &first)]).await;
        assert_eq!(
            (a.status, a.code()),
            (StatusCode::PRECONDITION_FAILED, "PreconditionFailed"),
            "{m}"
        );
    }
    // PATCH merges: TTL changes, records stay; the ETag changes again.
    let patched = c
        .call(
            Method::PATCH,
            &www,
            Some(json!({ "properties": { "TTL": 30 } })),
            &[("If-Match", &second)],
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(patched.body["properties"]["TTL"], 30);
    assert_eq!(
        patched.body["properties"]["ARecords"][0]["ipv4Address"],
        "192.0.2.2"
    );
    let third = patched.etag();
    assert_ne!(third, second);
    // No header: last writer wins.
    let blind = c.put(&www, a_set(40, &["192.0.2.4"])).await;
    assert_eq!(blind.status, StatusCode::OK);
    let fourth = blind.etag();
    // If-Match: * needs the set to exist; a missing one is 412, a PATCH without it 404.
    let missing = set_path("example.com", "A", "nope");
    let a = c
        .call(
            Method::PUT,
            &missing,
            Some(a_set(1, &["192.0.2.5"])),
            &[("If-Match", "*")],
        )
        .await;
    assert_eq!(a.status, StatusCode::PRECONDITION_FAILED);
    let a = c
        .call(
            Method::PATCH,
            &missing,
            Some(json!({ "properties": { "TTL": 5 } })),
            &[],
        )
        .await;
    assert_eq!((a.status, a.code()), (StatusCode::NOT_FOUND, "NotFound"));
    // Another writer's change makes our ETag stale.
    let foreign = emu.put_record_set("example.com", "A", "www", &a_set(50, &["198.51.100.1"]));
    assert_ne!(foreign, fourth);
    let a = c
        .call(Method::DELETE, &www, None, &[("If-Match", &fourth)])
        .await;
    assert_eq!(a.status, StatusCode::PRECONDITION_FAILED);
    let a = c
        .call(Method::DELETE, &www, None, &[("If-Match", &foreign)])
        .await;
    assert_eq!(a.status, StatusCode::OK);
    let a = c.delete(&www).await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    let a = c.get(&www).await;
    assert_eq!((a.status, a.code()), (StatusCode::NOT_FOUND, "NotFound"));
    let s = emu.stats();
    assert_eq!(s.preconditions_failed, 6);
    emu.stop().await;
}

#[tokio::test]
async fn zones_carry_soa_and_ns_and_unknown_things_are_arm_404s() {
    let emu = start(unthrottled()).await;
    let id = emu.create_zone("example.com");
    let c = Client::new(&emu);
    let z = c.get(&format!("{}/example.com", zones_path(false))).await;
    assert_eq!(z.status, StatusCode::OK);
    assert_eq!(z.body["id"], id.as_str());
    assert_eq!(z.body["type"], "Microsoft.Network/dnszones");
    assert_eq!(z.body["location"], "global");
    assert_eq!(z.body["properties"]["numberOfRecordSets"], 2);
    assert_eq!(z.body["properties"]["maxNumberOfRecordSets"], 10000);
    assert_eq!(
        z.body["properties"]["nameServers"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    let soa = c.get(&set_path("example.com", "SOA", "@")).await;
    assert_eq!(soa.body["properties"]["SOARecord"]["expireTime"], 2419200);
    assert_eq!(soa.body["id"], format!("{id}/SOA/@").as_str());
    let ns = c.get(&set_path("example.com", "NS", "@")).await;
    assert_eq!(
        ns.body["properties"]["NSRecords"][0]["nsdname"],
        "ns1-01.azure-dns.com."
    );
    // The apex SOA and NS cannot be deleted.
    let a = c.delete(&set_path("example.com", "NS", "@")).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, "BadRequest")
    );

    let a = c.get(&format!("{}/other.com", zones_path(false))).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::NOT_FOUND, "ResourceNotFound")
    );
    let a = c
        .put(&set_path("other.com", "A", "www"), a_set(1, &["192.0.2.1"]))
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::NOT_FOUND, "ParentResourceNotFound")
    );
    let a = c
        .get(&format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/nope/providers/Microsoft.Network/dnszones/example.com"))
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::NOT_FOUND, "ResourceGroupNotFound")
    );

    // Zones by resource group and by subscription; a zone made by PUT.
    let made = c
        .call(
            Method::PUT,
            &format!("{}/made.example", zones_path(false)),
            Some(json!({ "location": "global", "tags": { "a": "b" } })),
            &[("If-None-Match", "*")],
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let a = c
        .put(&format!("{}/x.example", zones_path(false)), json!({}))
        .await;
    assert_eq!(a.code(), "LocationRequired");
    let by_rg = c.get(&zones_path(false)).await;
    assert_eq!(by_rg.body["value"].as_array().unwrap().len(), 2);
    let by_sub = c
        .get(&format!(
            "/subscriptions/{DEFAULT_SUBSCRIPTION}/providers/Microsoft.Network/dnszones"
        ))
        .await;
    assert_eq!(by_sub.body["value"].as_array().unwrap().len(), 2);
    let gone = c
        .delete(&format!("{}/made.example", zones_path(false)))
        .await;
    assert_eq!(gone.status, StatusCode::OK);
    emu.stop().await;
}

#[tokio::test]
async fn api_versions_are_checked_per_resource_type() {
    let emu = start(unthrottled()).await;
    emu.create_zone("example.com");
    emu.create_private_zone("corp.internal");
    let c = Client::new(&emu);
    let a = c
        .get(&format!("{}/example.com/A/www", zones_path(false)).replace("/A/www", "?x=1"))
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, "MissingApiVersionParameter")
    );
    let a = c
        .get(&format!(
            "{}/example.com?api-version=2099-01-01",
            zones_path(false)
        ))
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, "NoRegisteredProviderFound")
    );
    let private = format!("{}/corp.internal", zones_path(true));
    let a = c.get(&format!("{private}?api-version={API}")).await;
    assert_eq!(a.code(), "NoRegisteredProviderFound");
    let a = c.get(&format!("{private}?api-version={PRIVATE_API}")).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body["type"], "Microsoft.Network/privateDnsZones");
    emu.stop().await;
}

#[tokio::test]
async fn private_zones_use_their_own_record_json() {
    let emu = start(unthrottled()).await;
    emu.create_private_zone("corp.internal");
    let c = Client::new(&emu);
    let p = format!(
        "{}/corp.internal/A/db?api-version={PRIVATE_API}",
        zones_path(true)
    );
    let body = json!({ "properties": { "ttl": 10, "aRecords": [{ "ipv4Address": "10.0.0.4" }] } });
    let a = c
        .call(Method::PUT, &p, Some(body), &[("If-None-Match", "*")])
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    assert_eq!(a.body["type"], "Microsoft.Network/privateDnsZones/A");
    assert_eq!(a.body["properties"]["ttl"], 10);
    assert_eq!(
        a.body["properties"]["aRecords"][0]["ipv4Address"],
        "10.0.0.4"
    );
    assert_eq!(a.body["properties"]["isAutoRegistered"], false);
    assert!(a.body["properties"].get("TTL").is_none());
    let all = c.get_private("corp.internal/ALL").await;
    assert_eq!(
        all.body["value"].as_array().unwrap().len(),
        2,
        "SOA and db: {}",
        all.body
    );
    assert_eq!(
        all.body["value"][0]["properties"]["soaRecord"]["host"],
        "azureprivatedns.net"
    );
    // NS and CAA are public-zone types.
    let a = c.get_private("corp.internal/NS/x").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    emu.stop().await;
}
