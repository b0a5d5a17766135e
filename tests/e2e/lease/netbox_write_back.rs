//! Issue 34's write-back with two planners (*leader only*), tested together with the
//! lease: two planner processes on one Redis lease, each with a NetBox source on the
//! same tag, each reading the real NetBox through a fault proxy of its own (so each
//! proxy is that planner's log of what it asked NetBox), each with its own webhook.
//!
//! While the first leads, the standby reads NetBox and sees the same objects, but
//! writes no custom field: its proxy sees no PATCH, although its records are pending
//! (it does not sync) where the leader's say `converged`. Then `kill -9` of the leader:
//! the standby takes the lease and writes the outcomes of what changes after.
use super::{Planner, manifest, planner_toml, role, start_applier};
use crate::stack::Tools;
use dnsplane_e2e::redis::Redis;
use dnsplane_e2e::servers::{PowerDns, dig_sorted};
use dnsplane_e2e::wait_for;
use dnsplane_testing::http_fault::FaultProxy;
use dnsplane_testing::netbox::NetBox;
use serde_json::json;
use std::time::Duration;

/// Safety net for each wait; not a performance claim.
const WAIT: Duration = Duration::from_secs(90);
const ADDRESSES: usize = 4;

#[test]
fn netbox_write_back_is_the_leaders_and_moves_with_the_lease() {
    let Some(nb) = NetBox::find() else { return };
    let Some(tools) = Tools::find() else { return };
    let Some(redis) = Redis::start() else { return };
    let Some(pdns) = PowerDns::start() else {
        return;
    };
    let rt = crate::stack::threaded_runtime(1);
    let run = std::process::id();
    let zone = pdns.zone.to_string();
    let base = zone.trim_end_matches('.').to_string();
    let tag = format!("lease-wb{run}");
    rt.block_on(nb.status_field());
    rt.block_on(nb.tag(&tag));
    let dir = tempfile::tempdir().expect("tempdir");
    let (_applier, applier_port) =
        start_applier(&tools, dir.path(), &zone, &pdns.api_url(), &pdns, &[]);

    let mut proxies = Vec::new();
    let mut hooks = Vec::new();
    let mut planners = Vec::new();
    for name in ["first", "second"] {
        let pdir = dir.path().join(name);
        std::fs::create_dir_all(pdir.join("desired")).expect("dir");
        let proxy = rt.block_on(FaultProxy::start(&nb.url));
        let hook = rt.block_on(nb.planner_hook(&pdir, &format!("dnsplane-lease-{name}-{run}")));
        let extra = format!(
            "[lease]\nredis = \"{}\"\n\
             [[sources]]\ntype = \"netbox\"\nurl = \"{}\"\ntoken_file = \"{}\"\ntags = [\"{tag}\"]\n\
             write_back = true\nwebhook_listen = \"127.0.0.1:{}\"\n\
             webhook_secret_file = \"{}\"\nfull_read_interval = \"10s\"\n",
            redis.url(),
            proxy.url(),
            hook.token_file.display(),
            hook.port,
            hook.secret_file.display()
        );
        std::fs::write(
            pdir.join("planner.toml"),
            planner_toml(applier_port, &zone, "pdns", &extra),
        )
        .expect("planner.toml");
        // The file source's record, the same in both: the file source is never empty.
        std::fs::write(
            pdir.join("desired").join("records.yaml"),
            manifest("marker", &[(format!("marker.{base}"), "10.0.0.1".into())]),
        )
        .expect("desired");
        proxies.push(proxy);
        hooks.push(hook);
        planners.push(pdir);
    }
    let patches = |i: usize| {
        proxies[i]
            .requests()
            .iter()
            .filter(|r| r.starts_with("PATCH "))
            .count()
    };

    let mut first = Planner::start("first", &planners[0]);
    first.wait_lease(&tools, "leader", |l| role(l) == "leader");
    let second = Planner::start("second", &planners[1]);
    second.wait_lease(&tools, "standby", |l| role(l) == "standby");
    // Both have read NetBox once (the tag holds nothing yet) before the addresses come.
    let netbox_ready = |p: &Planner| {
        p.status(&tools).is_some_and(|st| {
            st["sources"].as_array().into_iter().flatten().any(|s| {
                s["name"].as_str().is_some_and(|n| n.starts_with("netbox:")) && s["ready"] == true
            })
        })
    };
    for p in [&first, &second] {
        wait_for(WAIT, || netbox_ready(p).then_some(())).unwrap_or_else(|| {
            panic!(
                "{}: the NetBox source never ready: {:?}",
                p.proc.name,
                p.status(&tools)
            )
        });
    }

    // Addresses in the zone, and one whose name is in no zone of the planners'.
    let net = format!("10.204.{}", run % 200);
    let mut body: Vec<serde_json::Value> = (0..ADDRESSES)
        .map(|i| json!({"address": format!("{net}.{}/32", i + 1), "dns_name": format!("w{i}-{run}.{base}"), "tags": [{"slug": tag}]}))
        .collect();
    body.push(json!({"address": format!("{net}.99/32"), "dns_name": format!("bad-{run}.elsewhere.example"), "tags": [{"slug": tag}]}));
    let made = rt.block_on(nb.ok("POST", "/api/ipam/ip-addresses/", Some(json!(body))));
    let ids: Vec<u64> = made
        .as_array()
        .expect("a list")
        .iter()
        .map(|a| a["id"].as_u64().expect("id"))
        .collect();
    let field = |id: u64| {
        rt.block_on(nb.ok("GET", &format!("/api/ipam/ip-addresses/{id}/"), None))["custom_fields"]
            ["dnsplane_status"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    wait_for(WAIT, || {
        let all = ids[..ADDRESSES].iter().all(|id| field(*id) == "converged");
        (all && field(ids[ADDRESSES]).starts_with("invalid: ")).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the leader never wrote the outcomes: {:?}\nfirst's log:\n{}",
            ids.iter().map(|id| field(*id)).collect::<Vec<_>>(),
            first.proc.log_text()
        )
    });
    assert_eq!(
        dig_sorted(&tools.dig, pdns.dns_port, &format!("w0-{run}.{base}"), "A"),
        [format!("{net}.1")]
    );
    // The standby has read the addresses too (its webhook, or its 10 s full read): it
    // reports the one in no zone, as the source that read it ...
    let standby_read = || {
        second.status(&tools).is_some_and(|st| {
            st["sourceErrors"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|e| {
                    e["record"]
                        .as_str()
                        .is_some_and(|r| r.contains(&format!("bad-{run}.")))
                })
        })
    };
    wait_for(WAIT, || standby_read().then_some(())).unwrap_or_else(|| {
        panic!(
            "the standby never read the addresses: {:?}",
            second.status(&tools)
        )
    });
    // ... and wrote nothing in the seconds its write-back looks every second.
    std::thread::sleep(Duration::from_secs(3));
    assert!(patches(0) > 0, "the leader wrote through its proxy");
    assert_eq!(
        patches(1),
        0,
        "the standby wrote: {:?}",
        proxies[1].requests()
    );
    for id in &ids[..ADDRESSES] {
        assert_eq!(field(*id), "converged", "nothing put back by the standby");
    }

    // The leader dies; the standby takes the lease and writes what changes from then.
    first.proc.kill();
    second.wait_lease(&tools, "leader after the kill", |l| role(l) == "leader");
    let renamed = format!("r1-{run}.{base}");
    rt.block_on(nb.ok(
        "PATCH",
        &format!("/api/ipam/ip-addresses/{}/", ids[1]),
        Some(json!({"dns_name": renamed})),
    ));
    rt.block_on(nb.ok(
        "PATCH",
        &format!("/api/ipam/ip-addresses/{}/", ids[2]),
        Some(json!({"dns_name": format!("moved-{run}.elsewhere.example")})),
    ));
    wait_for(WAIT, || {
        (dig_sorted(&tools.dig, pdns.dns_port, &renamed, "A") == [format!("{net}.2")]).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the new leader never served the rename:\n{}",
            second.proc.log_text()
        )
    });
    wait_for(WAIT, || {
        field(ids[2]).starts_with("invalid: ").then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the new leader never wrote the outcome: {:?}",
            field(ids[2])
        )
    });
    assert!(patches(1) > 0, "the new leader wrote through its own proxy");
    assert_eq!(field(ids[1]), "converged");
    assert_eq!(field(ids[0]), "converged");

    for hook in hooks {
        rt.block_on(hook.hook.remove(&nb));
    }
    for id in ids {
        rt.block_on(nb.call("DELETE", &format!("/api/ipam/ip-addresses/{id}/"), None));
    }
}
