//! NetBox's DNS plugin as a source, end to end: netbox-plugin-dns's zones and records
//! beside IPAM's addresses, in a real NetBox, through a fault proxy, to a real
//! PowerDNS, with each outcome written back to NetBox.
//!
//! The plugin zone is `pl<run>.pdns.test`, inside the planner's zone `pdns.test`: its
//! SOA and apex NS (there a delegation) stay the plugin's, never written.
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use dnsplane_e2e::servers::{Kind, RealServer};
use dnsplane_testing::http_fault::{Fault, FaultProxy};
use dnsplane_testing::netbox::NetBox;
use std::time::Duration;

/// Safety net for each wait; not a performance claim.
const WAIT: Duration = Duration::from_secs(120);
/// Plugin records of their own name, beside the named ones: enough that losing them
/// all is a mass change.
const HOSTS: usize = 6;
const ADDRESSES: usize = 6;

/// The plugin's records and IPAM's addresses converge; the apex records stay the
/// plugin's; an address at a plugin name is reported on the address, in status and in
/// NetBox, and the plugin's record is served through full reads; a plugin record
/// edited in NetBox is served by webhook; a NetBox that suddenly lists nothing is held
/// by the mass-change guard, deleting nothing, until it lists them again.
#[test]
fn plugin_records_reach_powerdns_beside_addresses_with_outcomes_in_netbox() {
    let Some(nb) = NetBox::find() else { return };
    let Some(tools) = Tools::find() else { return };
    let Some(server) = RealServer::start(Kind::Pdns) else {
        return;
    };
    // The proxy's task runs on the runtime's own thread while the test waits.
    let rt = crate::stack::threaded_runtime(1);
    let run = std::process::id();
    let zone = server.zone().to_string();
    let zone = zone.trim_end_matches('.').to_string();
    let sub = format!("pl{run}.{zone}");
    let tag = format!("plug-e2e{run}");
    rt.block_on(nb.status_field());
    rt.block_on(nb.tag(&tag));
    // Every plugin zone under the planner's zone is read: none is left from an
    // interrupted earlier run in this NetBox.
    let stale = rt.block_on(nb.ok(
        "GET",
        &format!("/api/plugins/netbox-dns/zones/?name__iew=.{zone}&limit=1000"),
        None,
    ));
    for z in stale["results"].as_array().into_iter().flatten() {
        rt.block_on(nb.ok(
            "DELETE",
            &format!("/api/plugins/netbox-dns/zones/{}/", z["id"]),
            None,
        ));
    }
    let plugin_zone = rt.block_on(nb.plugin_zone(&sub, None));
    let mut wanted: Vec<(String, &str, String)> = vec![
        ("www".into(), "A", "192.0.2.5".into()),
        ("www".into(), "A", "192.0.2.6".into()),
        ("txt".into(), "TXT", "\"v=spf1 -all\"".into()),
        ("alias".into(), "CNAME", "www".into()),
        ("@".into(), "MX", "10 mail".into()),
    ];
    wanted.extend((0..HOSTS).map(|i| (format!("p{i}"), "A", format!("192.0.2.{}", 100 + i))));
    let records: Vec<(&str, &str, &str)> = wanted
        .iter()
        .map(|(n, t, v)| (n.as_str(), *t, v.as_str()))
        .collect();
    let ids = rt.block_on(nb.plugin_records(plugin_zone, &records));
    // IPAM: addresses of their own names, and one at the plugin's `www`.
    let net = format!("10.203.{}", run % 200);
    let mut addresses: Vec<serde_json::Value> = (0..ADDRESSES)
        .map(|i| {
            serde_json::json!({"address": format!("{net}.{}/32", i + 1), "dns_name": format!("a{i}.{sub}"), "tags": [{"slug": tag}]})
        })
        .collect();
    addresses.push(serde_json::json!({"address": format!("{net}.99/32"), "dns_name": format!("www.{sub}"), "tags": [{"slug": tag}]}));
    let made = rt.block_on(nb.ok(
        "POST",
        "/api/ipam/ip-addresses/",
        Some(serde_json::Value::Array(addresses)),
    ));
    let address_ids: Vec<u64> = made
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_u64().unwrap())
        .collect();
    let colliding = *address_ids.last().unwrap();

    let proxy = rt.block_on(FaultProxy::start(&nb.url));
    let files = tempfile::tempdir().unwrap();
    let end = rt.block_on(nb.planner_hook(files.path(), &format!("dnsplane-plugin-e2e-{run}")));
    let (token, secret_file, port) = (&end.token_file, &end.secret_file, end.port);
    let opts = Options {
        planner_extra: format!(
            "[[sources]]\ntype = \"netbox\"\nurl = \"{}\"\ntoken_file = \"{}\"\ntags = [\"{tag}\"]\n\
             plugin = true\nwrite_back = true\nwebhook_listen = \"127.0.0.1:{port}\"\n\
             webhook_secret_file = \"{}\"\nfull_read_interval = \"10s\"\n",
            proxy.url(),
            token.display(),
            secret_file.display()
        ),
        ..Options::default()
    };
    let s = RealStack::start(server, tools, opts);

    let owned = 5 - 1 + HOSTS + ADDRESSES; // www's two values are one set
    s.wait_until(
        "the plugin's records and the addresses converged",
        WAIT,
        |s| {
            (s.states_count().get("converged").copied().unwrap_or(0) as usize == owned)
                .then_some(())
        },
    );
    assert_eq!(
        s.dig(&format!("www.{sub}"), "A"),
        ["192.0.2.5", "192.0.2.6"]
    );
    assert_eq!(s.dig(&format!("txt.{sub}"), "TXT"), ["\"v=spf1 -all\""]);
    assert_eq!(
        s.dig(&format!("alias.{sub}"), "CNAME"),
        [format!("www.{sub}.")]
    );
    assert_eq!(s.dig(&sub, "MX"), [format!("10 mail.{sub}.")]);
    assert_eq!(s.dig(&format!("a3.{sub}"), "A"), [format!("{net}.4")]);
    // The plugin zone's SOA and NS are the plugin's: not in the planner's zone.
    assert!(s.dig(&sub, "NS").is_empty(), "{:?}", s.dig(&sub, "NS"));
    assert!(s.dig(&sub, "SOA").is_empty());

    // The address at the plugin's name: reported, in status and in NetBox.
    let errors = || {
        s.planner_status()
            .source_errors
            .iter()
            .map(|e| format!("{} {} {}", e.location, e.record, e.message))
            .collect::<Vec<_>>()
    };
    let collision = errors();
    assert!(
        collision
            .iter()
            .any(|e| e.contains(&format!("ipam/ip-addresses/{colliding}/"))
                && e.contains(&format!(
                    "collides with the plugin's netbox-dns/records/{}",
                    ids[0]
                ))),
        "{collision:?}"
    );
    let field = |path: String| {
        rt.block_on(nb.ok("GET", &path, None))["custom_fields"]["dnsplane_status"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let record_path = |id: u64| format!("/api/plugins/netbox-dns/records/{id}/");
    let address_path = |id: u64| format!("/api/ipam/ip-addresses/{id}/");
    s.wait_until("the outcomes written back to NetBox", WAIT, |_| {
        let www = field(record_path(ids[0]));
        let a0 = field(address_path(address_ids[0]));
        let bad = field(address_path(colliding));
        (www == "converged" && a0 == "converged" && bad.starts_with("invalid: ")).then_some(())
    });
    assert!(
        field(address_path(colliding)).contains("collides with the plugin's"),
        "the reason, where the network engineer looks"
    );
    // SOA and apex NS are no records of dnsplane's: nothing written to them.
    let soa = rt.block_on(nb.ok(
        "GET",
        &format!("/api/plugins/netbox-dns/records/?zone_id={plugin_zone}&type=SOA"),
        None,
    ));
    assert_eq!(
        soa["results"][0]["custom_fields"]["dnsplane_status"],
        serde_json::Value::Null
    );

    // A plugin record edited in NetBox: served once its webhook arrives.
    rt.block_on(nb.ok(
        "PATCH",
        &record_path(ids[1]),
        Some(serde_json::json!({"value": "192.0.2.7"})),
    ));
    s.wait_until("the edited plugin record served", WAIT, |s| {
        (s.dig(&format!("www.{sub}"), "A") == ["192.0.2.5", "192.0.2.7"]).then_some(())
    });

    // A change of the plugin zone (its description, here) comes as a webhook that has
    // everything read again at once: the full reads below need not wait 10 s.
    let mut pokes = 0;
    let mut poke = || {
        pokes += 1;
        rt.block_on(nb.ok(
            "PATCH",
            &format!("/api/plugins/netbox-dns/zones/{plugin_zone}/"),
            Some(serde_json::json!({"description": format!("poke {pokes}")})),
        ));
    };

    // Through a full read, nothing flaps: same answer, same one error.
    let read_at = |s: &RealStack| {
        s.planner_status()
            .sources
            .into_iter()
            .find(|src| src.name.starts_with("netbox:"))
            .map(|src| src.parts[0].detail.clone())
            .unwrap_or_default()
    };
    // "last full read <time>: … in <n> requests, <ms> ms; last webhook …"
    let full_read = |d: String| d.split(';').next().unwrap_or_default().to_string();
    let before = full_read(read_at(&s));
    poke();
    s.wait_until("a full read after the edit", WAIT, |s| {
        (full_read(read_at(s)) != before).then_some(())
    });
    assert_eq!(
        s.dig(&format!("www.{sub}"), "A"),
        ["192.0.2.5", "192.0.2.7"]
    );
    assert_eq!(
        errors()
            .iter()
            .filter(|e| e.contains("collides with"))
            .count(),
        1
    );
    let (_, text) = s.cli(&["status"]);
    assert!(
        text.contains("IP addresses and plugin records: ready")
            && text.contains(" plugin records (1 of ")
            && text.contains("write-back (dnsplane_status): ready"),
        "{text}"
    );

    // NetBox suddenly lists nothing: the deletes are held, nothing leaves PowerDNS.
    let served = s.axfr().len();
    proxy.set(Fault::EmptyLists);
    poke();
    // (A read already under way when the lists emptied may hold a part first: the
    // held plan grows with the next read.)
    let held = s.wait_until("every delete held by the mass-change guard", WAIT, |s| {
        s.zone_status()
            .0
            .held
            .filter(|h| h.deletes as usize == owned)
    });
    assert_eq!(held.updates, 0, "{held:?}");
    assert_eq!(s.axfr().len(), served, "nothing deleted");
    assert_eq!(s.dig(&format!("p3.{sub}"), "A"), ["192.0.2.103"]);
    // It lists them again: the hold has nothing left to hold.
    proxy.set(Fault::None);
    poke();
    s.wait_until("the hold gone with the full read", WAIT, |s| {
        s.zone_status().0.held.is_none().then_some(())
    });
    assert_eq!(s.axfr().len(), served);
    rt.block_on(end.hook.remove(&nb));
    rt.block_on(nb.ok(
        "DELETE",
        &format!("/api/plugins/netbox-dns/zones/{plugin_zone}/"),
        None,
    ));
}
