//! The NetBox source against a real NetBox (`tests/tools/netbox.sh start DIR`, then
//! `DNSPLANE_NETBOX_URL` and `DNSPLANE_NETBOX_TOKEN`): skipped without one, failed
//! without one under `DNSPLANE_REQUIRE_SERVERS=1`.
use super::client::{NetboxClient, NetboxError};
use super::ipam::{self, IpAddress, IpamFilter};
use std::time::Duration;

fn netbox() -> Option<(String, String)> {
    match (
        std::env::var("DNSPLANE_NETBOX_URL"),
        std::env::var("DNSPLANE_NETBOX_TOKEN"),
    ) {
        (Ok(u), Ok(t)) => Some((u, t)),
        _ => {
            assert!(
                std::env::var_os("DNSPLANE_REQUIRE_SERVERS").is_none(),
                "no NetBox: set DNSPLANE_NETBOX_URL and DNSPLANE_NETBOX_TOKEN (tests/tools/netbox.sh start DIR)"
            );
            None
        }
    }
}

async fn call(
    url: &str,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    let resp = reqwest::Client::new()
        .request(method, format!("{url}{path}"))
        .header("Authorization", format!("Bearer {token}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    assert!(status.is_success(), "{path}: {status}: {text}");
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

/// 2,500 addresses (three pages), some filtered, one with a bad name, two naming one
/// host: read whole, by id; the records as NetBox holds them.
#[tokio::test]
async fn addresses_become_records_read_whole_by_id() {
    let Some((url, token)) = netbox() else { return };
    let run = std::process::id();
    let tag = format!("t{run}");
    call(
        &url,
        &token,
        reqwest::Method::POST,
        "/api/extras/tags/",
        serde_json::json!({"name": tag, "slug": tag}),
    )
    .await;
    let mut objects: Vec<serde_json::Value> = (0..2_500)
        .map(|i| {
            serde_json::json!({
                "address": format!("10.{}.{}.{}/16", run % 200, i / 250, i % 250 + 1),
                "dns_name": format!("h{i}.r{run}.example.com"),
                "status": if i % 100 == 7 { "reserved" } else { "active" },
                "tags": [{"slug": tag}],
            })
        })
        .collect();
    // NetBox takes a label longer than DNS allows (its check is on characters only).
    let long = format!("{}.example.com", "a".repeat(64));
    objects[3]["dns_name"] = serde_json::json!(long);
    objects[4]["dns_name"] = serde_json::json!(format!("h5.r{run}.example.com"));
    call(
        &url,
        &token,
        reqwest::Method::POST,
        "/api/ipam/ip-addresses/",
        serde_json::Value::Array(objects),
    )
    .await;

    let client = NetboxClient::new(&url, &token, Duration::from_secs(30)).unwrap();
    let query = vec![("tag".to_string(), tag.clone())];
    let all: Vec<IpAddress> = client
        .list_all("/api/ipam/ip-addresses/", &query)
        .await
        .unwrap();
    assert_eq!(all.len(), 2_500);
    assert!(all.windows(2).all(|w| w[0].id < w[1].id), "read by id");

    let (entries, errors) = ipam::entries(&all, &IpamFilter::default(), |_| false);
    // 25 reserved skipped, one bad name, and h4 collides with h5 (not merged).
    assert_eq!(entries.len(), 2_500 - 25 - 1 - 1, "{errors:?}");
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors
            .iter()
            .any(|e| e.record == long && e.message.contains("not a valid name"))
    );
    assert!(errors.iter().any(|e| e.message.contains("collides with")));
    let (merged, errors) = ipam::entries(&all, &IpamFilter::default(), |_| true);
    assert_eq!(merged.len(), 2_500 - 25 - 1 - 1);
    assert_eq!(errors.len(), 1);
    let h5 = merged
        .iter()
        .find(|e| e.name.as_str() == format!("h5.r{run}.example.com."))
        .unwrap();
    assert_eq!(h5.values.len(), 2, "{h5:?}");

    // A token NetBox refuses: an error, never an empty read.
    let bad = NetboxClient::new(&url, "nbt_nope.nope", Duration::from_secs(30)).unwrap();
    let r = bad
        .list_all::<IpAddress>("/api/ipam/ip-addresses/", &query)
        .await;
    assert!(matches!(r, Err(NetboxError::Status { .. })), "{r:?}");
}
