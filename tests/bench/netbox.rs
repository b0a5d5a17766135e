//! NetBox at 50,000 IP addresses (issue 34, docs/scale.md): a full read's time and
//! NetBox requests, the planner's memory holding them, and how soon a rename made
//! through NetBox's API is served by PowerDNS through the webhook.
//!
//! Needs the tests' NetBox (`tests/tools/netbox.sh start DIR`, its `DNSPLANE_NETBOX_*`
//! variables, as tests/run-all.sh exports them), PowerDNS and dig. Run:
//! `cargo build --release --bins && cargo bench -p dnsplane-e2e --bench netbox -- 50000`
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use dnsplane_e2e::servers::{Kind, RealServer};
use dnsplane_testing::netbox::NetBox;
use std::time::{Duration, Instant};

/// Safety net for the whole load; not a performance claim.
const CONVERGE: Duration = Duration::from_secs(1800);
/// Renames timed through the webhook.
const RENAMES: usize = 10;

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(50_000);
    let nb = NetBox::find().expect("a NetBox: set DNSPLANE_NETBOX_URL, _TOKEN and _MANAGE");
    let tools = Tools::find().expect("dig and grpcurl");
    let server = RealServer::start(Kind::Pdns).expect("PowerDNS");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let run = std::process::id();
    let tag = format!("bench{run}");
    let zone = server.zone().to_string();
    let zone = zone.trim_end_matches('.').to_string();
    rt.block_on(nb.tag(&tag));
    // Another /16 for each run: NetBox refuses an address it already holds, and the
    // addresses of an earlier run on the same NetBox stay.
    let first = std::net::Ipv4Addr::new(10, 64 + (run % 32) as u8, 0, 0);
    let t = Instant::now();
    nb.seed(n, first, &format!("h{{i}}.b{run}.{zone}"), &tag);
    println!(
        "seeded {n} addresses through NetBox's ORM in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let ids: Vec<u64> = rt
        .block_on(nb.addresses(&tag))
        .into_iter()
        .map(|(id, _, _)| id)
        .collect();
    assert_eq!(ids.len(), n);

    let files = tempfile::tempdir().expect("temp dir");
    let token = files.path().join("token");
    std::fs::write(&token, &nb.token).expect("token");
    let secret_file = files.path().join("secret");
    std::fs::write(&secret_file, "bench-secret").expect("secret");
    let port = dnsplane_testing::free_port();
    let hook = rt.block_on(nb.hook(
        &format!("dnsplane-bench-{run}"),
        &format!("http://127.0.0.1:{port}/netbox"),
        "bench-secret",
    ));
    let bin_dir = std::env::current_exe()
        .expect("exe")
        .parent()
        .and_then(|d| d.parent())
        .expect("target/release")
        .to_path_buf();
    let opts = Options {
        bin_dir,
        // The source's and its task's debug lines time the planner's part of a rename.
        log_filter: "warn,dnsplane_planner=info,dnsplane_planner::source::netbox=debug,dnsplane_planner::source_tasks=debug".into(),
        planner_extra: format!(
            "[[sources]]\ntype = \"netbox\"\nurl = \"{}\"\ntoken_file = \"{}\"\ntags = [\"{tag}\"]\n\
             webhook_listen = \"127.0.0.1:{port}\"\nwebhook_secret_file = \"{}\"\n",
            nb.url,
            token.display(),
            secret_file.display()
        ),
        ..Options::default()
    };
    let t = Instant::now();
    let s = RealStack::start(server, tools, opts);
    let detail = s.wait_until("the first full read", CONVERGE, |s| {
        s.planner_status()
            .sources
            .iter()
            .find(|src| src.name.starts_with("netbox:") && src.ready)
            .map(|src| src.parts[0].detail.clone())
    });
    println!(
        "first full read done {:.1} s after the planner started: {detail}",
        t.elapsed().as_secs_f64()
    );
    s.wait_until("every record converged", CONVERGE, |s| {
        (s.states_count().get("converged").copied() == Some(n as u32)).then_some(())
    });
    println!(
        "{n} records converged in PowerDNS {:.1} s after the planner started",
        t.elapsed().as_secs_f64()
    );
    let (now, peak) = dnsplane_testing::rss(s.planner_pid());
    println!(
        "planner memory: VmRSS {} MiB, peak VmHWM {} MiB ({:.0} B an address)",
        now >> 20,
        peak >> 20,
        now as f64 / n as f64
    );

    let mut took = Vec::new();
    for (k, id) in ids.iter().take(RENAMES).enumerate() {
        let name = format!("renamed{k}.b{run}.{zone}");
        let want = std::net::Ipv4Addr::from(u32::from(first) + k as u32).to_string();
        let t = Instant::now();
        rt.block_on(nb.ok(
            "PATCH",
            &format!("/api/ipam/ip-addresses/{id}/"),
            Some(serde_json::json!({"dns_name": name})),
        ));
        let answered = t.elapsed();
        s.wait_until("the rename served", CONVERGE, |s| {
            (s.dig(&name, "A") == [want.clone()]).then_some(())
        });
        took.push((t.elapsed(), t.elapsed() - answered));
    }
    let figures = |f: fn(&(Duration, Duration)) -> Duration| {
        let mut v: Vec<Duration> = took.iter().map(f).collect();
        v.sort();
        format!(
            "median {} ms, max {} ms",
            v[RENAMES / 2].as_millis(),
            v[RENAMES - 1].as_millis()
        )
    };
    println!(
        "a rename served by PowerDNS ({RENAMES} renames): from the PATCH sent {}; from NetBox's answer to it {}",
        figures(|t| t.0),
        figures(|t| t.1)
    );
    // The planner's part of each rename, from its debug lines: NetBox's object read
    // again, the source's records built, and put in force (the patch of what changed).
    let log = s.planner_log();
    let part = |message: &str, field: &str| {
        let mut v: Vec<u64> = log
            .lines()
            .filter(|l| l.contains(message))
            .filter_map(|l| l.split(&format!(" {field}=")).nth(1))
            .filter_map(|rest| rest.split(' ').next()?.parse().ok())
            .collect();
        let mut last = v.split_off(v.len().saturating_sub(RENAMES));
        last.sort_unstable();
        match last.len() {
            0 => "not logged".to_string(),
            n => format!("median {} ms, max {} ms", last[n / 2], last[n - 1]),
        }
    };
    println!(
        "the planner's part of a rename: NetBox's address read again {}; the records built {}; put in force {}",
        part("read again", "read_ms"),
        part("records built", "took_ms"),
        part("put in force", "took_ms")
    );
    rt.block_on(hook.remove(&nb));
}
