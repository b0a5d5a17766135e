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

/// A source's config reading `nb` through a new fault proxy, for the addresses tagged
/// `tag`, with the token in a file in `dir`.
async fn through_proxy(
    nb: &NetBox,
    dir: &std::path::Path,
    tag: &str,
) -> (FaultProxy, NetboxSourceConfig) {
    let proxy = FaultProxy::start(&nb.url).await;
    let config = NetboxSourceConfig {
        url: proxy.url().to_string(),
        token_file: nb.token_file(dir),
        tags: vec![tag.to_string()],
        ..serde_json::from_value(serde_json::json!({"url": "", "token_file": ""})).unwrap()
    };
    (proxy, config)
}

/// The source running: its status parts, where to send it events, its updates, and
/// what stops it.
fn spawn(
    source: NetboxSource,
) -> (
    crate::source::SourceParts,
    mpsc::Sender<Event>,
    mpsc::Receiver<Update>,
    tokio_util::sync::CancellationToken,
) {
    let parts = source.parts();
    let (events_tx, events_rx) = mpsc::channel(16);
    let (tx, rx) = mpsc::channel(1);
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(source.run(events_rx, tx, stop.clone()));
    (parts, events_tx, rx, stop)
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
    let dir = tempfile::tempdir().unwrap();
    let (proxy, config) = through_proxy(&nb, dir.path(), &tag).await;
    let token = config.token_file.clone();
    let zones = [ZoneConfig::new(Name::parse(&zone).unwrap(), "pdns")];
    let mut source = NetboxSource::new(&config, &zones).unwrap();
    source.interval = Duration::from_millis(300);
    let (parts, events_tx, mut rx, stop) = spawn(source);

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
            .any(|r| r.starts_with(&format!("GET /api/ipam/ip-addresses/{id}/?fields="))),
        "read alone: {:?}",
        &proxy.requests()[before..]
    );
    stop.cancel();
}

/// The plugin's records read beside IPAM's addresses, through the real
/// netbox-plugin-dns: SOA and apex NS left out, zones no configured zone holds left
/// out, a plugin view fed to its view, an address at a name the plugin holds reported
/// (and the same on every read), and a webhook naming a plugin record re-reads it alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_records_are_read_beside_addresses_and_hold_their_names() {
    let Some(nb) = NetBox::find() else { return };
    let run = std::process::id();
    let tag = format!("plug{run}");
    nb.tag(&tag).await;
    let zone = format!("p{run}.example.com");
    let public = nb.plugin_zone(&zone, None).await;
    let internal = nb.plugin_zone(&zone, Some(&format!("v{run}"))).await;
    let elsewhere = nb.plugin_zone(&format!("p{run}.example.net"), None).await;
    let ids = nb
        .plugin_records(
            public,
            &[
                ("www", "A", "192.0.2.5"),
                ("www", "A", "192.0.2.6"),
                ("txt", "TXT", "\"hello world\""),
                ("alias", "CNAME", "www"),
            ],
        )
        .await;
    nb.plugin_records(internal, &[("www", "A", "10.1.2.3")])
        .await;
    nb.plugin_records(elsewhere, &[("www", "A", "198.51.100.1")])
        .await;
    let net = format!("10.201.{}", run % 200);
    let tags = serde_json::json!([{ "slug": tag }]);
    nb.ok(
        "POST",
        "/api/ipam/ip-addresses/",
        Some(serde_json::json!([
            {"address": format!("{net}.77/32"), "dns_name": format!("www.{zone}"), "tags": tags},
            {"address": format!("{net}.78/32"), "dns_name": format!("db.{zone}"), "tags": tags},
        ])),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (proxy, config) = through_proxy(&nb, dir.path(), &tag).await;
    let config = NetboxSourceConfig {
        plugin: true,
        plugin_views: [(format!("v{run}"), "internal".to_string())].into(),
        ..config
    };
    let zones = [ZoneConfig::new(Name::parse(&zone).unwrap(), "pdns")];
    let (parts, events_tx, mut rx, stop) = spawn(NetboxSource::new(&config, &zones).unwrap());

    let seen = |s: &crate::source::Snapshot| {
        let mut v: Vec<String> = s
            .entries
            .iter()
            .map(|e| {
                let view = e
                    .labels
                    .get(crate::source::labels::VIEW_LABEL)
                    .unwrap_or("every view");
                format!("{} {} {} ({view})", e.name, e.rtype, e.values.join(","))
            })
            .collect();
        v.sort();
        v
    };
    let first = next(&mut rx, true).await.snapshot.unwrap();
    assert_eq!(
        seen(&first),
        [
            format!("alias.{zone}. CNAME www.{zone}. (every view)"),
            format!("db.{zone}. A {net}.78 (every view)"),
            format!("txt.{zone}. TXT \"hello world\" (every view)"),
            format!("www.{zone}. A 10.1.2.3 (internal)"),
            format!("www.{zone}. A 192.0.2.5,192.0.2.6 (every view)"),
        ]
    );
    let errors: Vec<String> = first.errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains(&format!(
            "{net}.77 collides with the plugin's netbox-dns/records/{}",
            ids[0]
        )),
        "{errors:?}"
    );
    let detail = parts.lock().unwrap()[0].clone();
    assert_eq!(detail.name, "IP addresses and plugin records");
    assert!(
        detail.detail.contains("plugin records (2 of "),
        "{detail:?}"
    );

    // A plugin record's value changes, and a webhook names it: it alone is read again.
    nb.ok(
        "PATCH",
        &format!("/api/plugins/netbox-dns/records/{}/", ids[0]),
        Some(serde_json::json!({"value": "192.0.2.9"})),
    )
    .await;
    let before = proxy.requests().len();
    events_tx
        .send(Event::PluginRecord {
            id: ids[0],
            deleted: false,
        })
        .await
        .unwrap();
    let changed = next(&mut rx, true).await.snapshot.unwrap();
    assert!(
        seen(&changed).contains(&format!("www.{zone}. A 192.0.2.6,192.0.2.9 (every view)")),
        "{:?}",
        seen(&changed)
    );
    let after = proxy.requests()[before..].to_vec();
    assert!(
        after.len() == 1
            && after[0].starts_with(&format!(
                "GET /api/plugins/netbox-dns/records/{}/?fields=id,zone,",
                ids[0]
            )),
        "read alone, only the fields read: {after:?}"
    );
    // The collision stays the same address's, read after read.
    assert_eq!(changed.errors.len(), 1);
    assert!(changed.errors[0].to_string().contains(&format!("{net}.77")));

    // A full read whose addresses and plugin zones come back but whose plugin records
    // fail (502): nothing of it is used, not even the addresses, and the source is not
    // ready. The plugin's records are not "none".
    proxy.set(Fault::After { n: 2, status: 502 });
    events_tx.send(Event::PluginZone).await.unwrap();
    let failed = next(&mut rx, false).await;
    assert!(
        failed.unready.len() == 1
            && failed.unready[0].contains("last complete read is kept")
            && failed.unready[0].contains("/api/plugins/netbox-dns/records/"),
        "{:?}",
        failed.unready
    );
    // Back: the next read (a retry, 1 s later) holds everything it held before.
    proxy.set(Fault::None);
    let back = next(&mut rx, true).await;
    assert!(back.unready.is_empty(), "{:?}", back.unready);
    assert_eq!(seen(&back.snapshot.unwrap()), seen(&changed));
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
    let record = props("Record");
    for field in [
        "id",
        "zone",
        "type",
        "name",
        "fqdn",
        "value",
        "absolute_value",
        "ttl",
        "active",
    ] {
        assert!(
            record.contains_key(field),
            "Record.{field}: {:?}",
            record.keys()
        );
    }
    assert_eq!(
        record["zone"]["allOf"][0]["$ref"],
        "#/components/schemas/NestedZone"
    );
    assert!(props("NestedZone").contains_key("id"));
    let zone = props("Zone");
    for field in ["id", "name", "view", "default_ttl", "active", "status"] {
        assert!(zone.contains_key(field), "Zone.{field}: {:?}", zone.keys());
    }
    assert_eq!(
        zone["view"]["allOf"][0]["$ref"],
        "#/components/schemas/BriefView"
    );
    let view = props("BriefView");
    assert!(view.contains_key("name") && view.contains_key("default_view"));
    // What `?fields=` asks for is what the schema has (a name it lacks would come back
    // missing, and the struct would not read).
    for (schema_name, list) in [
        ("IPAddress", super::ipam::FIELDS),
        ("Zone", super::plugin::ZONE_FIELDS),
        ("Record", super::plugin::RECORD_FIELDS),
    ] {
        let p = props(schema_name);
        for f in list.split(',') {
            assert!(
                p.contains_key(f),
                "{schema_name}.{f} (asked for with ?fields=)"
            );
        }
    }
    let page = props("PaginatedIPAddressList");
    assert!(page.contains_key("next") && page.contains_key("results"));
    let params: Vec<&str> = schema["paths"]["/api/ipam/ip-addresses/"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for p in [
        "id__gt", "ordering", "limit", "fields", "status", "tenant", "tag",
    ] {
        assert!(params.contains(&p), "filter {p} of /api/ipam/ip-addresses/");
    }
    for path in [
        "/api/plugins/netbox-dns/zones/",
        "/api/plugins/netbox-dns/records/",
    ] {
        let params: Vec<&str> = schema["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{path} in the schema"))
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        for p in ["id__gt", "ordering", "limit", "fields"] {
            assert!(params.contains(&p), "filter {p} of {path}");
        }
    }
}
