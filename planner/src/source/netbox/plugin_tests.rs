//! netbox-plugin-dns's records as records, without a NetBox: what is never taken (SOA,
//! apex NS, inactive records, zones managed elsewhere), TTLs and views, last-good
//! records, and the plugin's precedence over IP addresses at the names it holds.
use super::ipam::{Addresses, IpAddress, IpamFilter};
use super::plugin::{PluginRecord, PluginRecords, PluginZone};
use crate::config::{OutsideZones, ZoneConfig};
use crate::source::labels::VIEW_LABEL;
use crate::source::testing::{entry, keys};
use crate::source::zones::ZoneCheck;
use dnsplane_common::Name;
use std::collections::BTreeMap;

/// A plugin zone as the plugin lists it (trimmed to what is read, and a few more).
fn zone(id: u64, name: &str, view: &str, status: &str) -> PluginZone {
    serde_json::from_value(serde_json::json!({
        "id": id,
        "name": name,
        "view": {"id": id, "name": view, "default_view": view == "_default_"},
        "status": status,
        "active": status == "active",
        "default_ttl": 86400,
        "soa_rname": "hostmaster.example.com",
    }))
    .unwrap()
}

/// A plugin record: `name` relative to its zone, as the plugin keeps it.
fn record(
    id: u64,
    zone: u64,
    zone_name: &str,
    name: &str,
    rtype: &str,
    value: &str,
) -> PluginRecord {
    let fqdn = if name == "@" {
        format!("{zone_name}.")
    } else {
        format!("{name}.{zone_name}.")
    };
    serde_json::from_value(serde_json::json!({
        "id": id,
        "zone": {"id": zone, "name": zone_name},
        "type": rtype,
        "name": name,
        "fqdn": fqdn,
        "value": value,
        "absolute_value": value,
        "ttl": null,
        "status": "active",
        "active": true,
        "managed": false,
    }))
    .unwrap()
}

fn configured() -> ZoneCheck {
    ZoneCheck::new(
        &[
            ZoneConfig::new(Name::parse("example.com").unwrap(), "pdns"),
            ZoneConfig::new(Name::parse("2.0.192.in-addr.arpa").unwrap(), "pdns"),
        ],
        OutsideZones::Error,
    )
}

#[test]
fn soa_apex_ns_inactive_records_and_zones_managed_elsewhere_are_never_taken() {
    let mut p = PluginRecords::default();
    let mut inactive = record(6, 1, "example.com", "old", "A", "192.0.2.6");
    inactive.active = false;
    let mut relative = record(7, 1, "example.com", "alias", "CNAME", "www");
    relative.absolute_value = Some("www.example.com.".into());
    p.replace_all(
        vec![
            zone(1, "example.com", "_default_", "active"),
            zone(2, "elsewhere.net", "_default_", "active"),
            zone(3, "sub.example.com", "_default_", "active"),
        ],
        vec![
            record(
                1,
                1,
                "example.com",
                "@",
                "SOA",
                "ns1.example.net. hostmaster.example.com. 1 2 3 4 5",
            ),
            record(2, 1, "example.com", "@", "NS", "ns1.example.net."),
            record(3, 1, "example.com", "www", "A", "192.0.2.5"),
            record(4, 1, "example.com", "www", "A", "192.0.2.4"),
            record(5, 2, "elsewhere.net", "www", "A", "198.51.100.1"),
            inactive,
            relative,
            // A sub-zone's apex NS would be a delegation: the plugin's, not taken.
            record(8, 3, "sub.example.com", "@", "NS", "ns1.example.net."),
            record(9, 3, "sub.example.com", "db", "AAAA", "2001:db8::9"),
            record(10, 1, "example.com", "mail", "NS", "ns2.example.net."),
        ],
    );
    assert_eq!(p.zones_taken(&configured()), (2, 3));
    let (entries, errors, held) = p.records(&configured(), &BTreeMap::new(), "https://nb");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        keys(&entries),
        [
            entry("alias.example.com.", "CNAME", &["www.example.com."]),
            entry("db.sub.example.com.", "AAAA", &["2001:db8::9"]),
            entry("mail.example.com.", "NS", &["ns2.example.net."]),
            entry("www.example.com.", "A", &["192.0.2.4", "192.0.2.5"]),
        ]
    );
    // The zone's default TTL, the first record's page, and every record named.
    let www = entries
        .iter()
        .find(|e| e.name.as_str() == "www.example.com.")
        .unwrap();
    assert_eq!(www.ttl, Some(86400));
    assert_eq!(
        &*www.origin.location,
        "https://nb/plugins/netbox-dns/records/3/"
    );
    assert_eq!(
        &*www.origin.resource,
        "netbox-dns/records/3, netbox-dns/records/4"
    );
    assert!(held.contains_key(&(
        Name::parse("www.example.com").unwrap(),
        dnsplane_common::RecordType::A
    )));
}

#[test]
fn a_record_of_a_named_view_is_fed_to_that_view_renamed_as_configured() {
    let mut p = PluginRecords::default();
    p.replace_all(
        vec![
            zone(1, "example.com", "_default_", "active"),
            zone(2, "example.com", "corp_internal", "active"),
            zone(3, "2.0.192.in-addr.arpa", "lab", "active"),
        ],
        vec![
            record(1, 1, "example.com", "www", "A", "192.0.2.1"),
            record(2, 2, "example.com", "www", "A", "10.0.0.1"),
            record(3, 3, "2.0.192.in-addr.arpa", "1", "PTR", "www.example.com."),
        ],
    );
    let views = BTreeMap::from([("corp_internal".to_string(), "internal".to_string())]);
    let (entries, errors, _) = p.records(&configured(), &views, "https://nb");
    assert!(errors.is_empty(), "{errors:?}");
    let fed: Vec<(String, Option<String>)> = entries
        .iter()
        .map(|e| {
            (
                format!("{} {}", e.name, e.values[0]),
                e.labels.get(VIEW_LABEL).map(str::to_string),
            )
        })
        .collect();
    assert_eq!(
        fed,
        [
            (
                "1.2.0.192.in-addr.arpa. www.example.com.".to_string(),
                Some("lab".to_string())
            ),
            ("www.example.com. 192.0.2.1".to_string(), None),
            (
                "www.example.com. 10.0.0.1".to_string(),
                Some("internal".to_string())
            ),
        ]
    );
}

#[test]
fn a_record_edited_into_what_dnsplane_cannot_serve_keeps_its_record_and_says_why() {
    let mut p = PluginRecords::default();
    let zones = vec![zone(1, "example.com", "_default_", "active")];
    p.replace_all(
        zones.clone(),
        vec![
            record(1, 1, "example.com", "www", "A", "192.0.2.1"),
            record(2, 1, "example.com", "geo", "A", "192.0.2.2"),
        ],
    );
    let (before, errors, _) = p.records(&configured(), &BTreeMap::new(), "https://nb");
    assert!(errors.is_empty());
    // A type dnsplane does not serve, and a CNAME at the apex: each keeps its record.
    p.put(record(
        1,
        1,
        "example.com",
        "www",
        "LOC",
        "52 22 23.000 N 4 53 32.000 E -2.00m",
    ));
    p.put(record(
        2,
        1,
        "example.com",
        "@",
        "CNAME",
        "www.example.com.",
    ));
    // A record the plugin has never seen valid is only an error.
    p.put(record(
        3,
        1,
        "example.com",
        "x",
        "HINFO",
        "\"PC\" \"Linux\"",
    ));
    let (after, errors, _) = p.records(&configured(), &BTreeMap::new(), "https://nb");
    assert_eq!(keys(&after), keys(&before), "nothing lost to a bad edit");
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(text.len(), 3, "{text:?}");
    assert!(
        text[0].starts_with(
            "https://nb/plugins/netbox-dns/records/1/: www.example.com. LOC: type LOC"
        ) && text[0].ends_with("its last accepted record, www.example.com. A 192.0.2.1, is kept"),
        "{text:?}"
    );
    assert!(text[1].contains("is kept"), "{text:?}");
    assert!(
        text[2].contains("HINFO") && !text[2].contains("kept"),
        "{text:?}"
    );
    // Deleted in the plugin: the record goes.
    p.remove(1);
    let (gone, _, _) = p.records(&configured(), &BTreeMap::new(), "https://nb");
    assert!(!gone.iter().any(|e| e.name.as_str() == "www.example.com."));
    // A zone made inactive in the plugin: its records go (its owner's choice).
    p.replace_all(
        vec![zone(1, "example.com", "_default_", "parked")],
        vec![record(4, 1, "example.com", "www", "A", "192.0.2.1")],
    );
    assert!(
        p.records(&configured(), &BTreeMap::new(), "https://nb")
            .0
            .is_empty()
    );
}

fn address(id: u64, ip: &str, name: &str) -> IpAddress {
    serde_json::from_value(serde_json::json!({
        "id": id, "address": ip, "dns_name": name, "status": {"value": "active"},
    }))
    .unwrap()
}

#[test]
fn an_address_at_a_name_the_plugin_holds_yields_to_it_and_a_different_value_is_reported() {
    let mut p = PluginRecords::default();
    p.replace_all(
        vec![zone(1, "example.com", "_default_", "active")],
        vec![record(1, 1, "example.com", "www", "A", "192.0.2.5")],
    );
    let (_, _, held) = p.records(&configured(), &BTreeMap::new(), "https://nb");
    let mut a = Addresses::default();
    a.replace_all(vec![
        // The plugin's own IPAM sync makes exactly this: the same record, no error.
        address(10, "192.0.2.5/24", "www.example.com"),
        address(11, "192.0.2.50/24", "www.example.com"),
        address(12, "192.0.2.7/24", "db.example.com"),
    ]);
    let records = |a: &mut Addresses| {
        let (entries, errors) = a.records(
            &IpamFilter::default(),
            &configured(),
            |_| true,
            true,
            &held,
            "https://nb",
        );
        (
            keys(&entries),
            errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
        )
    };
    let (entries, errors) = records(&mut a);
    assert_eq!(
        entries,
        [
            entry("5.2.0.192.in-addr.arpa.", "PTR", &["www.example.com."]),
            entry("50.2.0.192.in-addr.arpa.", "PTR", &["www.example.com."]),
            entry("7.2.0.192.in-addr.arpa.", "PTR", &["db.example.com."]),
            entry("db.example.com.", "A", &["192.0.2.7"]),
        ],
        "no A beside the plugin's: merging is the zone's policy between addresses, never \
         over the plugin's records (each address keeps its PTR)"
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("https://nb/ipam/ip-addresses/11/: www.example.com. A: 192.0.2.50 collides with the plugin's netbox-dns/records/1")
            && errors[0].contains("(192.0.2.5)"),
        "{errors:?}"
    );
    assert_eq!(records(&mut a), (entries, errors), "never flaps");
}
