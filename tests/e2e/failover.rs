//! Issue 6 (the planner's side): three appliers in front of one real PowerDNS. The
//! planner routes the zone to one applier; `kill -9` of that applier in the middle of
//! a 10,000-record sync moves the zone to the next applier in rendezvous order, the
//! sync completes, every record converges, the zone equals the desired state, and
//! after failover only one applier writes the zone; the planner's status is degraded
//! under the `fallback` rule meanwhile.
use crate::stack::{Tools, endpoints, grpc_json};
use dnsplane_e2e::servers::{Kind, RealServer};
use dnsplane_e2e::{Proc, binary, free_port, grpcurl, num, wait_for};
use std::time::Duration;

const RECORDS: usize = 10_000;

#[test]
fn killing_the_zones_applier_mid_sync_fails_over_to_the_next() {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = RealServer::start(Kind::Pdns) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let zone = server.zone().to_string();
    let base = zone.trim_end_matches('.');

    // Three appliers, one PowerDNS account each, all the same server.
    let applier_cfg = dir.path().join("applier.toml");
    std::fs::write(
        &applier_cfg,
        format!(
            "max_concurrent_batches = 4\n{}",
            server.account_toml("pdns")
        ),
    )
    .expect("cfg");
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut appliers: Vec<Option<Proc>> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            Some(Proc::spawn(
                &format!("applier{i}"),
                &binary("dnsplane-applier"),
                &[
                    "--config",
                    applier_cfg.to_str().expect("utf8"),
                    "--listen",
                    &format!("127.0.0.1:{p}"),
                ],
                dir.path().join(format!("applier{i}.log")),
            ))
        })
        .collect();

    let desired = dir.path().join("desired");
    std::fs::create_dir_all(&desired).expect("dir");
    let names: Vec<String> = (0..RECORDS).map(|i| format!("f{i}.{base}")).collect();
    let values: Vec<String> = (0..RECORDS)
        .map(|i| format!("10.9.{}.{}", i / 250, i % 250))
        .collect();
    let eps: Vec<(&str, &str, Vec<&str>)> = names
        .iter()
        .zip(&values)
        .map(|(n, v)| (n.as_str(), "A", vec![v.as_str()]))
        .collect();
    let eps: Vec<(&str, &str, &[&str])> =
        eps.iter().map(|(n, t, v)| (*n, *t, v.as_slice())).collect();
    std::fs::write(desired.join("bulk.yaml"), endpoints("bulk", &eps)).expect("desired");
    let planner_port = free_port();
    let appliers_toml: Vec<String> = ports
        .iter()
        .map(|p| format!("\"http://127.0.0.1:{p}\""))
        .collect();
    std::fs::write(
        dir.path().join("planner.toml"),
        format!(
            "owner_id = \"e2e\"\nappliers = [{}]\n[pool]\nhealth_interval = \"200ms\"\n\
             [sync]\ninterval = \"10m\"\nretry_min = \"200ms\"\nretry_max = \"1s\"\n\
             [batch]\nmax_changes = 250\n\
             [[zones]]\nname = \"{zone}\"\naccount = \"pdns\"\n\
             [[sources]]\ntype = \"file\"\npaths = [\"desired\"]\n",
            appliers_toml.join(", ")
        ),
    )
    .expect("planner.toml");
    for p in &ports {
        let ok = wait_for(Duration::from_secs(20), || {
            let (ok, out) = grpcurl(&tools.grpcurl, &[&format!("127.0.0.1:{p}"), "list"]);
            (ok && out.contains("dnsplane.v1.Applier")).then_some(())
        });
        assert!(ok.is_some(), "applier on {p} did not start");
    }
    let _planner = Proc::spawn(
        "planner",
        &binary("dnsplane-planner"),
        &[
            "--config",
            dir.path().join("planner.toml").to_str().expect("utf8"),
            "--listen",
            &format!("127.0.0.1:{planner_port}"),
            "--admin-listen",
            "off",
        ],
        dir.path().join("planner.log"),
    );
    let planner_log =
        || std::fs::read_to_string(dir.path().join("planner.log")).unwrap_or_default();

    // Wait until the sync is under way, then kill the zone's applier.
    let first = wait_for(Duration::from_secs(60), || {
        let st = grpc_json(&tools, planner_port, "dnsplane.v1.Planner/GetStatus", "{}");
        let conv = num(&st["zones"][0]["recordsByState"]["converged"]);
        let applier = st["zones"][0]["applier"].as_str().unwrap_or("").to_string();
        (conv >= 500 && conv < RECORDS as u64 && !applier.is_empty()).then_some(applier)
    })
    .unwrap_or_else(|| panic!("sync never got under way; planner log:\n{}", planner_log()));
    let victim = ports
        .iter()
        .position(|p| first.ends_with(&format!(":{p}")))
        .expect("routed applier is one of ours");
    appliers[victim].as_mut().expect("running").kill();
    appliers[victim] = None;

    // The sync completes on the others.
    let done = wait_for(Duration::from_secs(120), || {
        let st = grpc_json(&tools, planner_port, "dnsplane.v1.Planner/GetStatus", "{}");
        (num(&st["zones"][0]["recordsByState"]["converged"]) == RECORDS as u64).then_some(st)
    })
    .unwrap_or_else(|| {
        panic!(
            "sync did not complete after failover; planner log:\n{}",
            planner_log()
        )
    });
    let now_on = done["zones"][0]["applier"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert_ne!(now_on, first, "the zone moved off the killed applier");
    // The planner says so: the zone runs on another applier than its own, which is
    // down; status is degraded under the `fallback` rule, naming the zone.
    let fallback = wait_for(Duration::from_secs(30), || {
        let st = grpc_json(&tools, planner_port, "dnsplane.v1.Planner/GetStatus", "{}");
        let r = st["reasons"]
            .as_array()?
            .iter()
            .find(|r| r["rule"] == "fallback")?
            .clone();
        Some((st["level"].clone(), r))
    });
    let Some((level, reason)) = fallback else {
        panic!("no fallback reason; planner log:\n{}", planner_log())
    };
    assert_eq!(level, "degraded");
    assert_eq!(reason["zone"], zone.as_str(), "{reason}");
    let stuck = grpc_json(
        &tools,
        planner_port,
        "dnsplane.v1.Planner/ListRecordStates",
        "{}",
    );
    assert!(
        stuck["records"].as_array().is_none_or(Vec::is_empty),
        "non-converged records remain: {stuck}"
    );

    // The zone equals the desired state (every record, right value, owned).
    let axfr = server.axfr(&tools.dig);
    for (n, v) in names.iter().zip(&values).step_by(97) {
        // Lines are `name ttl type value`.
        let line = axfr
            .iter()
            .find(|l| l.starts_with(&format!("{n}. ")) && l.split_whitespace().nth(2) == Some("A"));
        assert!(
            line.is_some_and(|l| l.ends_with(v.as_str())),
            "{n} A {v} missing or wrong: {line:?}"
        );
    }
    let a_records = axfr
        .iter()
        .filter(|l| l.split_whitespace().nth(2) == Some("A") && l.starts_with('f'))
        .count();
    assert_eq!(a_records, RECORDS, "exactly the desired A records");

    // One writer after failover: of the two survivors, only the one the zone is
    // routed to received batches. Every outcome there is APPLIED or ALREADY_APPLIED.
    let mut writers = 0;
    for (i, p) in ports.iter().enumerate() {
        if appliers[i].is_none() {
            continue;
        }
        let st = grpc_json(&tools, *p, "dnsplane.v1.Applier/GetStatus", "{}");
        let acct = &st["accounts"][0];
        if num(&acct["batches"]) > 0 {
            writers += 1;
            assert!(
                now_on.ends_with(&format!(":{p}")),
                "applier {p} wrote although the zone is on {now_on}"
            );
            let outcomes = acct["outcomes"].as_object().cloned().unwrap_or_default();
            for (k, v) in &outcomes {
                assert!(
                    k == "APPLIED" || k == "ALREADY_APPLIED" || num(v) == 0,
                    "unexpected outcome {k}={v} on {p}"
                );
            }
        }
    }
    assert_eq!(writers, 1, "exactly one surviving applier wrote the zone");
}
