//! NetBox as a source, end to end: a real NetBox (tests/tools/netbox.sh, started by
//! tests/run-all.sh) with a webhook and event rule pointed at the planner, the planner
//! and applier processes, and a real PowerDNS.
//!
//! One NetBox serves the whole run: this test tags its addresses and reads that tag.
//! "NetBox down" is NetBox unreachable from the planner (its URL pointed at a closed
//! port): stopping the shared NetBox would fail the other tests using it.
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use dnsplane_e2e::servers::{Kind, RealServer};
use dnsplane_testing::netbox::NetBox;
use std::time::{Duration, Instant};

const N: usize = 1_000;
/// Safety net for each wait; not a performance claim.
const WAIT: Duration = Duration::from_secs(120);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn converged(s: &RealStack) -> u32 {
    s.states_count().get("converged").copied().unwrap_or(0)
}

/// 1,000 addresses converge; a rename and a delete through NetBox's API arrive by
/// webhook; a forged webhook changes nothing; a bad edit keeps the record; two
/// addresses at one name never flap; a planner restarted while NetBox cannot be
/// reached deletes nothing and says why.
#[test]
fn netbox_addresses_reach_powerdns_and_follow_netbox_webhooks() {
    let Some(nb) = NetBox::find() else { return };
    let Some(tools) = Tools::find() else { return };
    let Some(server) = RealServer::start(Kind::Pdns) else {
        return;
    };
    let rt = runtime();
    let run = std::process::id();
    let tag = format!("e2e{run}");
    let zone = server.zone().to_string();
    let zone = zone.trim_end_matches('.');
    let name = |i: usize| format!("h{i}.nb{run}.{zone}");
    rt.block_on(nb.tag(&tag));
    let first = std::net::Ipv4Addr::new(10, 100 + (run % 100) as u8, 0, 0);
    let ip = |i: usize| std::net::Ipv4Addr::from(u32::from(first) + i as u32).to_string();
    nb.seed(N, first, &format!("h{{i}}.nb{run}.{zone}"), &tag);
    let ids: Vec<u64> = rt
        .block_on(nb.addresses(&tag))
        .into_iter()
        .map(|(id, _, _)| id)
        .collect();
    assert_eq!(ids.len(), N);

    let files = tempfile::tempdir().unwrap();
    let end = rt.block_on(nb.planner_hook(files.path(), &format!("dnsplane-e2e-{run}")));
    let (token, secret_file, port) = (&end.token_file, &end.secret_file, end.port);
    // The addresses' reverse zone, in PowerDNS and in the planner: `ptr = true`.
    let reverse = format!("{}.10.in-addr.arpa", first.octets()[1]);
    let RealServer::Pdns(pdns) = &server else {
        unreachable!("PowerDNS")
    };
    let (status, body) = pdns.api(
        "POST",
        "/api/v1/servers/localhost/zones",
        &format!(r#"{{"name":"{reverse}.","kind":"Native","nameservers":["ns1.{zone}."]}}"#),
    );
    assert_eq!(status, 201, "{body}");
    let source = |url: &str| {
        format!(
            "[[sources]]\ntype = \"netbox\"\nurl = \"{url}\"\ntoken_file = \"{}\"\ntags = [\"{tag}\"]\nptr = true\n\
             webhook_listen = \"127.0.0.1:{port}\"\nwebhook_secret_file = \"{}\"\nfull_read_interval = \"10s\"\n",
            token.display(),
            secret_file.display()
        )
    };
    let opts = Options {
        planner_extra: format!(
            "[[zones]]\nname = \"{reverse}\"\naccount = \"pdns\"\n\n{}",
            source(&nb.url)
        ),
        extra_zones: vec![format!("{reverse}.")],
        ..Options::default()
    };
    let mut s = RealStack::start(server, tools, opts);

    // 1,000 addresses converge in PowerDNS.
    s.wait_until("1,000 records converged", WAIT, |s| {
        (converged(s) == N as u32).then_some(())
    });
    assert_eq!(s.dig(&name(0), "A"), [ip(0)]);
    assert_eq!(s.dig(&name(N - 1), "A"), [ip(N - 1)]);
    let ptr = |i: usize| {
        let o = std::net::Ipv4Addr::from(u32::from(first) + i as u32).octets();
        format!("{}.{}.{reverse}", o[3], o[2])
    };
    s.wait_until("the PTR records", WAIT, |s| {
        (s.dig(&ptr(3), "PTR") == [format!("{}.", name(3))]).then_some(())
    });

    // A rename through NetBox's API is served once its webhook arrives (full reads
    // every 10 s would take longer; the figure is printed, not asserted).
    let renamed = format!("renamed.nb{run}.{zone}");
    let t0 = Instant::now();
    rt.block_on(nb.ok(
        "PATCH",
        &format!("/api/ipam/ip-addresses/{}/", ids[5]),
        Some(serde_json::json!({"dns_name": renamed})),
    ));
    s.wait_until("the renamed address served", WAIT, |s| {
        (s.dig(&renamed, "A") == [ip(5)]).then_some(())
    });
    eprintln!(
        "netbox e2e: a rename served {:?} after its PATCH was sent to NetBox",
        t0.elapsed()
    );
    s.wait_until("the old name gone", WAIT, |s| {
        s.dig(&name(5), "A").is_empty().then_some(())
    });
    s.wait_until("the PTR renamed", WAIT, |s| {
        (s.dig(&ptr(5), "PTR") == [format!("{renamed}.")]).then_some(())
    });

    // A delete removes that record only.
    rt.block_on(nb.ok(
        "DELETE",
        &format!("/api/ipam/ip-addresses/{}/", ids[6]),
        None,
    ));
    s.wait_until("the deleted address's record gone", WAIT, |s| {
        s.dig(&name(6), "A").is_empty().then_some(())
    });
    s.wait_until("999 records converged", WAIT, |s| {
        (converged(s) == N as u32 - 1).then_some(())
    });
    assert_eq!(s.dig(&name(7), "A"), [ip(7)], "its neighbour stays");

    // A webhook with a wrong signature is refused and changes nothing.
    let body = serde_json::json!({"event": "deleted", "object_type": "ipam.ipaddress", "data": {"id": ids[7]}}).to_string();
    let status = rt.block_on(async {
        reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/netbox"))
            .header("X-Hook-Signature", "00".repeat(64))
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .expect("the planner's webhook answers")
            .status()
            .as_u16()
    });
    assert_eq!(status, 401);

    // A bad edit (a name in no zone) keeps the record and is reported.
    rt.block_on(nb.ok(
        "PATCH",
        &format!("/api/ipam/ip-addresses/{}/", ids[8]),
        Some(serde_json::json!({"dns_name": format!("h8.elsewhere{run}.test")})),
    ));
    // Two addresses at one name (the zone does not merge): the lower id keeps it.
    rt.block_on(nb.ok(
        "PATCH",
        &format!("/api/ipam/ip-addresses/{}/", ids[11]),
        Some(serde_json::json!({"dns_name": name(10)})),
    ));
    let errors = s.wait_until("both reported", WAIT, |s| {
        let errors: Vec<String> = s
            .planner_status()
            .source_errors
            .iter()
            .map(|e| format!("{} {} {}", e.location, e.record, e.message))
            .collect();
        (errors
            .iter()
            .any(|e| e.contains(&format!("elsewhere{run}")))
            && errors.iter().any(|e| e.contains("collides with")))
        .then_some(errors)
    });
    assert!(
        errors
            .iter()
            .any(|e| e.contains(&format!("{}. A {}, is kept", name(8), ip(8)))),
        "{errors:?}"
    );
    s.wait_until("h11's own name gone", WAIT, |s| {
        s.dig(&name(11), "A").is_empty().then_some(())
    });
    // Two full reads later (every 10 s), nothing flapped.
    std::thread::sleep(Duration::from_secs(21));
    assert_eq!(s.dig(&name(8), "A"), [ip(8)], "kept through the bad edit");
    assert_eq!(
        s.dig(&name(10), "A"),
        [ip(10)],
        "the lower id keeps the name"
    );
    let (_, text) = s.cli(&["status"]);
    assert!(
        text.contains("IP addresses: ready (last full read") && text.contains("last webhook"),
        "{text}"
    );

    // NetBox out of reach, the planner restarted: nothing is deleted; status says why.
    let dead = format!("http://127.0.0.1:{}", dnsplane_testing::free_port());
    let config = s.dir().join("planner.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    s.restart_planner_with(|| {
        std::fs::write(&config, text.replace(&source(&nb.url), &source(&dead))).unwrap();
    });
    let why = s.wait_until("the source not ready", WAIT, |s| {
        s.planner_status()
            .sources
            .into_iter()
            .find(|src| src.name.starts_with("netbox:") && !src.ready)
            .map(|src| src.parts[0].reason.clone())
    });
    assert!(why.contains("no complete read yet"), "{why}");
    let before = s.axfr().len();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(s.axfr().len(), before, "nothing deleted");
    assert_eq!(s.dig(&name(0), "A"), [ip(0)]);
    let (_, text) = s.cli(&["status"]);
    assert!(
        text.contains("NOT READY") && text.contains("no complete read yet"),
        "{text}"
    );
    rt.block_on(end.hook.remove(&nb));
}
