//! IP addresses as records, without a NetBox: the rules that keep a record when an
//! address is edited into something DNS cannot hold, and that never flap between two
//! addresses claiming one name.
use super::ipam::{Addresses, IpAddress, IpamFilter};
use crate::config::{OutsideZones, ZoneConfig};
use crate::source::testing::{entry, keys};
use crate::source::zones::ZoneCheck;
use dnsplane_common::Name;

fn address(id: u64, ip: &str, name: &str, status: &str) -> IpAddress {
    serde_json::from_value(serde_json::json!({
        "id": id,
        "address": ip,
        "dns_name": name,
        "status": {"value": status, "label": status},
        "vrf": null,
        "tenant": null,
        "tags": [],
    }))
    .unwrap()
}

fn zones() -> ZoneCheck {
    ZoneCheck::new(
        &[ZoneConfig::new(Name::parse("example.com").unwrap(), "pdns")],
        OutsideZones::Error,
    )
}

/// (name, type, values) of each record, and each error as status shows it.
type Records = (Vec<(String, &'static str, Vec<String>)>, Vec<String>);

fn records(a: &mut Addresses, merges: bool) -> Records {
    let (entries, errors) = a.records(
        &IpamFilter::default(),
        &zones(),
        |_| merges,
        false,
        &Default::default(),
        "https://nb",
    );
    (
        keys(&entries),
        errors.iter().map(|e| e.to_string()).collect(),
    )
}

#[test]
fn an_address_edited_into_a_bad_name_keeps_its_record_and_says_why() {
    let mut a = Addresses::default();
    a.replace_all(vec![
        address(1, "192.0.2.1/24", "web.example.com", "active"),
        address(2, "2001:db8::2/64", "web.example.com", "active"),
        address(3, "192.0.2.3/24", "db.example.com", "active"),
    ]);
    let (r, e) = records(&mut a, false);
    assert_eq!(
        r,
        [
            entry("db.example.com.", "A", &["192.0.2.3"]),
            entry("web.example.com.", "A", &["192.0.2.1"]),
            entry("web.example.com.", "AAAA", &["2001:db8::2"]),
        ]
    );
    assert!(e.is_empty(), "{e:?}");
    // A typo into another domain, and a label DNS refuses: both keep their record.
    a.put(address(3, "192.0.2.3/24", "db.exmaple.com", "active"));
    a.put(address(
        1,
        "192.0.2.1/24",
        &format!("{}.example.com", "a".repeat(64)),
        "active",
    ));
    let (r2, e) = records(&mut a, false);
    assert_eq!(r2, r, "nothing lost to a bad edit");
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(
        e.iter().any(
            |m| m.starts_with("https://nb/ipam/ip-addresses/3/: db.exmaple.com: ")
                && m.contains("did you mean example.com")
                && m.contains("db.example.com. A 192.0.2.3, is kept")
        ),
        "{e:?}"
    );
    assert!(
        e.iter().any(|m| m.contains("not a valid name")
            && m.contains("web.example.com. A 192.0.2.1, is kept")),
        "{e:?}"
    );
    // Fixed: the new name replaces the kept one.
    a.put(address(3, "192.0.2.3/24", "db2.example.com", "active"));
    let (r, _) = records(&mut a, false);
    assert!(
        r.contains(&entry("db2.example.com.", "A", &["192.0.2.3"]))
            && !r.iter().any(|x| x.0 == "db.example.com."),
        "{r:?}"
    );
}

#[test]
fn a_new_bad_address_is_reported_and_its_neighbours_taken() {
    let mut a = Addresses::default();
    a.replace_all(vec![
        address(1, "192.0.2.1/24", "bad..example.com", "active"),
        address(2, "192.0.2.2/24", "ok.example.com", "active"),
        address(3, "192.0.2.3/24", "elsewhere.test", "active"),
    ]);
    let (r, e) = records(&mut a, false);
    assert_eq!(r, [entry("ok.example.com.", "A", &["192.0.2.2"])]);
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(
        e.iter().all(|m| !m.contains("is kept")),
        "nothing was accepted before: {e:?}"
    );
}

#[test]
fn what_its_owner_removes_goes_deleted_filtered_or_unnamed() {
    let mut a = Addresses::default();
    a.replace_all(vec![
        address(1, "192.0.2.1/24", "one.example.com", "active"),
        address(2, "192.0.2.2/24", "two.example.com", "active"),
        address(3, "192.0.2.3/24", "three.example.com", "active"),
        address(4, "192.0.2.4/24", "four.example.com", "active"),
    ]);
    assert_eq!(records(&mut a, false).0.len(), 4);
    a.remove(1);
    a.put(address(2, "192.0.2.2/24", "two.example.com", "deprecated"));
    a.put(address(3, "192.0.2.3/24", "", "active"));
    let (r, e) = records(&mut a, false);
    assert_eq!(r, [entry("four.example.com.", "A", &["192.0.2.4"])]);
    assert!(e.is_empty(), "{e:?}");
    // A complete read that no longer lists an address removes it too.
    a.replace_all(vec![address(
        2,
        "192.0.2.2/24",
        "two.example.com",
        "active",
    )]);
    assert_eq!(
        records(&mut a, false).0,
        [entry("two.example.com.", "A", &["192.0.2.2"])]
    );
}

#[test]
fn two_addresses_at_one_name_merge_or_the_lowest_id_wins_whatever_the_order() {
    let both = || {
        vec![
            address(9, "192.0.2.9/24", "vip.example.com", "active"),
            address(5, "192.0.2.5/24", "vip.example.com", "active"),
        ]
    };
    let mut a = Addresses::default();
    a.replace_all(both());
    let (r, e) = records(&mut a, false);
    assert_eq!(r, [entry("vip.example.com.", "A", &["192.0.2.5"])]);
    assert_eq!(e.len(), 1);
    assert!(
        e[0].contains("ip-addresses/9/") && e[0].contains("collides with ipam/ip-addresses/5"),
        "{e:?}"
    );
    // Read again in the other order, or touched by a webhook: the same winner.
    let mut reversed = both();
    reversed.reverse();
    a.replace_all(reversed);
    a.put(address(9, "192.0.2.9/24", "vip.example.com", "active"));
    assert_eq!(records(&mut a, false).0, r, "never flaps");
    let (merged, e) = records(&mut a, true);
    assert_eq!(
        merged,
        [entry("vip.example.com.", "A", &["192.0.2.5", "192.0.2.9"])]
    );
    assert!(e.is_empty());
}

#[test]
fn filters_take_statuses_vrfs_tenants_and_any_tag() {
    let mut x: IpAddress = address(1, "192.0.2.1/24", "x.example.com", "reserved");
    let f = IpamFilter {
        statuses: vec!["active".into(), "reserved".into()],
        ..IpamFilter::default()
    };
    assert!(f.takes(&x) && !IpamFilter::default().takes(&x));
    let vrf = IpamFilter {
        vrfs: vec!["global".into()],
        statuses: vec![],
        ..IpamFilter::default()
    };
    assert!(vrf.takes(&x), "no VRF is the global table");
    x.tags = serde_json::from_value(serde_json::json!([{"slug": "dns"}])).unwrap();
    let tags = IpamFilter {
        tags: vec!["public".into(), "dns".into()],
        statuses: vec![],
        ..IpamFilter::default()
    };
    assert!(tags.takes(&x), "any one tag");
    // NetBox's tag=a&tag=b means both: two tags are not narrowed on NetBox's side.
    assert!(!tags.query().iter().any(|(k, _)| k == "tag"));
    let one = IpamFilter {
        tags: vec!["dns".into()],
        ..IpamFilter::default()
    };
    assert_eq!(
        one.query(),
        [
            ("status".into(), "active".into()),
            ("tag".into(), "dns".into())
        ]
    );
    let tenant = IpamFilter {
        tenants: vec!["acme".into()],
        statuses: vec![],
        ..IpamFilter::default()
    };
    assert!(!tenant.takes(&x), "no tenant is not tenant acme");
}

#[test]
fn with_ptr_each_address_has_its_reverse_record_where_a_reverse_zone_is_configured() {
    let zones = ZoneCheck::new(
        &[
            ZoneConfig::new(Name::parse("example.com").unwrap(), "pdns"),
            ZoneConfig::new(Name::parse("2.0.192.in-addr.arpa").unwrap(), "pdns"),
            ZoneConfig::new(Name::parse("8.b.d.0.1.0.0.2.ip6.arpa").unwrap(), "pdns"),
        ],
        OutsideZones::Error,
    );
    let mut a = Addresses::default();
    a.replace_all(vec![
        address(1, "192.0.2.1/24", "web.example.com", "active"),
        address(2, "2001:db8::2/64", "web.example.com", "active"),
        // The same address under another name: the lower id keeps the PTR.
        address(3, "192.0.2.1/24", "www.example.com", "active"),
        // No reverse zone holds 198.51.100.0/24: no PTR, and no error.
        address(4, "198.51.100.4/24", "far.example.com", "active"),
    ]);
    let (entries, errors) = a.records(
        &IpamFilter::default(),
        &zones,
        |_| true,
        true,
        &Default::default(),
        "https://nb",
    );
    let ptrs: Vec<_> = keys(&entries)
        .into_iter()
        .filter(|e| e.1 == "PTR")
        .collect();
    assert_eq!(
        ptrs,
        [
            entry("1.2.0.192.in-addr.arpa.", "PTR", &["web.example.com."]),
            entry(
                "2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.",
                "PTR",
                &["web.example.com."]
            ),
        ]
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .message
            .contains("collides with ipam/ip-addresses/1")
            && errors[0].message.contains("never merged"),
        "{errors:?}"
    );
    // Without `ptr`, none.
    let (entries, _) = a.records(
        &IpamFilter::default(),
        &zones,
        |_| true,
        false,
        &Default::default(),
        "https://nb",
    );
    assert!(
        !entries
            .iter()
            .any(|e| e.rtype == dnsplane_common::RecordType::Ptr)
    );
}
