//! The NetBox source against the real NetBox of `tests/run-all.sh`, through a
//! fault-injecting proxy: reads are whole or kept, and a webhook re-reads one address.
//! Skipped without a NetBox; failed without one under `DNSPLANE_REQUIRE_SERVERS=1`.
use super::webhook::Event;
use super::{NetboxSource, Update};
use crate::config::{NetboxSourceConfig, ZoneConfig};
use dnsplane_common::Name;
use dnsplane_testing::http_fault::{Fault, FaultProxy};
use dnsplane_testing::netbox::NetBox;
use std::time::Duration;
use tokio::sync::mpsc;

/// Waits for the source's next update with records (or readiness only, `records`
/// false), up to 60 s.
async fn next(rx: &mut mpsc::Receiver<Update>, records: bool) -> Update {
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let u = rx.recv().await.expect("the source runs");
            if u.snapshot.is_some() == records {
                return u;
            }
        }
    })
    .await
    .expect("an update within 60 s")
}

/// 2,100 addresses (three pages) read whole by id; a page that fails halfway, and a
/// token NetBox refuses, keep the last complete read and make the source not ready;
/// a webhook's address is read again alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_whole_or_kept_and_a_webhook_rereads_one_address() {
    let Some(nb) = NetBox::find() else { return };
    let run = std::process::id();
    let tag = format!("unit{run}");
    nb.tag(&tag).await;
    let zone = format!("u{run}.example.com");
    nb.seed(
        2_100,
        std::net::Ipv4Addr::new(10, 200, (run % 200) as u8, 0),
        &format!("h{{i}}.{zone}"),
        &tag,
    );
    let proxy = FaultProxy::start(&nb.url).await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{}\n", nb.token)).unwrap();
    let config = NetboxSourceConfig {
        url: proxy.url().to_string(),
        token_file: token.clone(),
        tags: vec![tag.clone()],
        ..serde_json::from_value(serde_json::json!({"url": "", "token_file": ""})).unwrap()
    };
    let zones = [ZoneConfig::new(Name::parse(&zone).unwrap(), "pdns")];
    let mut source = NetboxSource::new(&config, &zones).unwrap();
    source.interval = Duration::from_millis(300);
    let parts = source.parts();
    let (events_tx, events_rx) = mpsc::channel(16);
    let (tx, mut rx) = mpsc::channel(1);
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(source.run(events_rx, tx, stop.clone()));

    let first = next(&mut rx, true).await;
    let snapshot = first.snapshot.unwrap();
    assert_eq!(snapshot.entries.len(), 2_100, "{:?}", snapshot.errors);
    assert!(first.unready.is_empty());
    let lists: Vec<String> = proxy
        .requests()
        .into_iter()
        .filter(|r| r.starts_with("GET /api/ipam/ip-addresses/?"))
        .collect();
    assert_eq!(lists.len(), 3, "three pages of 1,000: {lists:?}");
    assert!(
        lists[1].contains("id__gt=") && lists[1].contains("ordering=id"),
        "{lists:?}"
    );
    let detail = parts.lock().unwrap()[0].detail.clone();
    assert!(detail.contains("2100 addresses in 3 requests"), "{detail}");

    // The second page fails: the read is not used, the source says why.
    proxy.set(Fault::After { n: 1, status: 502 });
    let failed = next(&mut rx, false).await;
    assert_eq!(failed.unready.len(), 1);
    assert!(
        failed.unready[0].contains("last complete read is kept")
            && failed.unready[0].contains("502"),
        "{:?}",
        failed.unready
    );
    assert!(!parts.lock().unwrap()[0].ready);

    // A token NetBox refuses (403): the same.
    proxy.set(Fault::None);
    let ready = next(&mut rx, true).await;
    assert!(ready.unready.is_empty(), "{:?}", ready.unready);
    assert_eq!(ready.snapshot.unwrap().entries.len(), 2_100);
    std::fs::write(&token, "nbt_nope.nope\n").unwrap();
    // (The token file is read again at most once a minute: a new source reads it now.)
    let mut refused = NetboxSource::new(&config, &zones).unwrap();
    assert!(
        refused
            .full_read()
            .await
            .unwrap_err()
            .to_string()
            .contains("403")
    );
    std::fs::write(&token, format!("{}\n", nb.token)).unwrap();

    // A webhook names one address: it alone is read again.
    let all = nb.addresses(&tag).await;
    let (id, _, _) = &all[7];
    nb.ok(
        "PATCH",
        &format!("/api/ipam/ip-addresses/{id}/"),
        Some(serde_json::json!({"dns_name": format!("renamed.{zone}")})),
    )
    .await;
    let before = proxy.requests().len();
    events_tx
        .send(Event::Address {
            id: *id,
            deleted: false,
        })
        .await
        .unwrap();
    let renamed = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let u = next(&mut rx, true).await;
            let s = u.snapshot.unwrap();
            if s.entries
                .iter()
                .any(|e| e.name.as_str() == format!("renamed.{zone}."))
            {
                return s;
            }
        }
    })
    .await
    .expect("the renamed address");
    assert_eq!(renamed.entries.len(), 2_100);
    assert!(
        !renamed
            .entries
            .iter()
            .any(|e| e.name.as_str() == format!("h7.{zone}."))
    );
    assert!(
        proxy.requests()[before..]
            .iter()
            .any(|r| r == &format!("GET /api/ipam/ip-addresses/{id}/")),
        "read alone: {:?}",
        &proxy.requests()[before..]
    );
    stop.cancel();
}

/// The fields and filters the source reads, pinned against NetBox's own OpenAPI
/// description (`/api/schema/`), not against what this code believes.
#[tokio::test]
async fn every_field_and_filter_read_is_in_netboxs_own_api_schema() {
    let Some(nb) = NetBox::find() else { return };
    let schema = nb.ok("GET", "/api/schema/?format=json", None).await;
    let schemas = &schema["components"]["schemas"];
    let props = |name: &str| {
        schemas[name]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no schema {name}"))
            .clone()
    };
    let ip = props("IPAddress");
    for field in [
        "id", "address", "dns_name", "status", "vrf", "tenant", "tags",
    ] {
        assert!(ip.contains_key(field), "IPAddress.{field}: {:?}", ip.keys());
    }
    let statuses = &ip["status"]["properties"]["value"]["enum"];
    assert!(
        statuses.as_array().unwrap().contains(&"active".into()),
        "{statuses}"
    );
    assert_eq!(
        ip["vrf"]["allOf"][0]["$ref"],
        "#/components/schemas/BriefVRF"
    );
    assert!(props("BriefVRF").contains_key("name"));
    assert_eq!(
        ip["tenant"]["allOf"][0]["$ref"],
        "#/components/schemas/BriefTenant"
    );
    assert!(props("BriefTenant").contains_key("slug"));
    assert_eq!(
        ip["tags"]["items"]["$ref"],
        "#/components/schemas/NestedTag"
    );
    assert!(props("NestedTag").contains_key("slug"));
    let page = props("PaginatedIPAddressList");
    assert!(page.contains_key("next") && page.contains_key("results"));
    let params: Vec<&str> = schema["paths"]["/api/ipam/ip-addresses/"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for p in ["id__gt", "ordering", "limit", "status", "tenant", "tag"] {
        assert!(params.contains(&p), "filter {p} of /api/ipam/ip-addresses/");
    }
}
