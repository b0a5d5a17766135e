//! Issue 18's observe mode on a real provider: planner and applier processes in front
//! of a real PowerDNS. A zone converged in automatic mode is switched to
//! `[safety] mode = "observe"` while its desired state changes (a record removed, one
//! changed, one added): `plan` shows the three changes, a forced sync sends no batch,
//! and PowerDNS's zone transfer is byte for byte what it was. Back in automatic mode,
//! the same three changes are applied.
use crate::stack::{Tools, dnsplane_cli, endpoints, grpc_json};
use dnsplane_e2e::servers::{Kind, RealServer};
use dnsplane_e2e::{Proc, binary, free_port, grpcurl, num, wait_for};
use std::path::Path;
use std::time::Duration;

/// Safety net of every wait below; not a performance claim.
const WAIT: Duration = Duration::from_secs(60);

fn write_planner(dir: &Path, zone: &str, applier: u16, mode: &str) {
    std::fs::write(
        dir.join("planner.toml"),
        format!(
            "owner_id = \"e2e\"\napplier = \"http://127.0.0.1:{applier}\"\n\
             [sync]\ninterval = \"10m\"\nmin_interval = \"100ms\"\nsource_poll = \"200ms\"\n\
             retry_min = \"200ms\"\nretry_max = \"1s\"\n\
             [safety]\nmode = \"{mode}\"\n\
             [[zones]]\nname = \"{zone}\"\naccount = \"pdns\"\n\
             [[sources]]\ntype = \"file\"\npaths = [\"desired\"]\n"
        ),
    )
    .expect("planner.toml");
}

fn start_planner(dir: &Path, port: u16, run: &str) -> Proc {
    crate::stack::spawn_planner(&format!("planner-{run}"), dir, port, "off")
}

fn cli(port: u16, args: &[&str]) -> (i32, String) {
    dnsplane_cli(port, args, &[])
}

#[test]
fn observe_mode_leaves_a_real_powerdns_zone_untouched() {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = RealServer::start(Kind::Pdns) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let zone = server.zone().to_string();
    let base = zone.trim_end_matches('.').to_string();
    let (a, b, c, d) = (
        format!("a.{base}"),
        format!("b.{base}"),
        format!("c.{base}"),
        format!("d.{base}"),
    );
    std::fs::write(dir.path().join("applier.toml"), server.account_toml("pdns")).expect("cfg");
    let applier_port = free_port();
    let _applier = Proc::spawn(
        "applier",
        &binary("dnsplane-applier"),
        &[
            "--config",
            dir.path().join("applier.toml").to_str().expect("utf8"),
            "--listen",
            &format!("127.0.0.1:{applier_port}"),
        ],
        dir.path().join("applier.log"),
    );
    let desired = dir.path().join("desired");
    std::fs::create_dir_all(&desired).expect("dir");
    let write_desired = |eps: &[(&str, &str, &[&str])]| {
        let tmp = dir.path().join("web.yaml.tmp");
        std::fs::write(&tmp, endpoints("web", eps)).expect("desired");
        std::fs::rename(&tmp, desired.join("web.yaml")).expect("rename");
    };
    write_desired(&[
        (&a, "A", &["192.0.2.1"]),
        (&b, "A", &["192.0.2.2"]),
        (&c, "A", &["192.0.2.3"]),
    ]);
    let applied = wait_for(Duration::from_secs(20), || {
        let (ok, out) = grpcurl(
            &tools.grpcurl,
            &[&format!("127.0.0.1:{applier_port}"), "list"],
        );
        (ok && out.contains("dnsplane.v1.Applier")).then_some(())
    });
    assert!(applied.is_some(), "the applier did not start");
    let planner_port = free_port();
    let logs = || {
        [
            "planner-automatic.log",
            "planner-observe.log",
            "applier.log",
        ]
        .iter()
        .map(|f| std::fs::read_to_string(dir.path().join(f)).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n----\n")
    };

    // Automatic: the three records converge.
    write_planner(dir.path(), &zone, applier_port, "automatic");
    let planner = start_planner(dir.path(), planner_port, "automatic");
    let converged = wait_for(WAIT, || {
        let st = grpc_json(&tools, planner_port, "dnsplane.v1.Planner/GetStatus", "{}");
        (num(&st["zones"][0]["recordsByState"]["converged"]) == 3).then_some(())
    });
    assert!(converged.is_some(), "never converged; logs:\n{}", logs());
    assert_eq!(server.dig(&tools.dig, &b, "A"), ["192.0.2.2"]);
    drop(planner);
    let batches = || {
        let st = grpc_json(&tools, applier_port, "dnsplane.v1.Applier/GetStatus", "{}");
        num(&st["accounts"][0]["batches"])
    };
    let batches_before = batches();
    let before = server.axfr(&tools.dig);
    assert!(
        before.iter().any(|l| l.starts_with(&format!("{a}. "))),
        "{before:?}"
    );

    // Observe, with the desired state changed: a removed, b changed, d added.
    write_planner(dir.path(), &zone, applier_port, "observe");
    write_desired(&[
        (&b, "A", &["192.0.2.22"]),
        (&c, "A", &["192.0.2.3"]),
        (&d, "A", &["192.0.2.4"]),
    ]);
    let planner = start_planner(dir.path(), planner_port, "observe");
    let mut last = String::new();
    let planned = wait_for(WAIT, || {
        let (_, out) = cli(planner_port, &["plan"]);
        last = out;
        [&a, &b, &d]
            .iter()
            .all(|n| last.contains(&format!("{n}.")))
            .then_some(())
    });
    assert!(
        planned.is_some(),
        "the plan lacks a change: {last}; logs:\n{}",
        logs()
    );
    let st = grpc_json(&tools, planner_port, "dnsplane.v1.Planner/GetStatus", "{}");
    assert_eq!(st["safetyMode"], "observe", "{st}");
    let (_, out) = cli(planner_port, &["sync"]);
    assert!(out.contains("done"), "{out}");
    assert_eq!(batches(), batches_before, "no batch reached the applier");
    assert_eq!(server.axfr(&tools.dig), before, "PowerDNS's zone changed");
    drop(planner);

    // Automatic again: the same plan is applied.
    write_planner(dir.path(), &zone, applier_port, "automatic");
    let _planner = start_planner(dir.path(), planner_port, "automatic-again");
    let done = wait_for(WAIT, || {
        (server.dig(&tools.dig, &d, "A") == ["192.0.2.4"]
            && server.dig(&tools.dig, &b, "A") == ["192.0.2.22"]
            && server.dig(&tools.dig, &a, "A").is_empty())
        .then_some(())
    });
    assert!(
        done.is_some(),
        "the plan was not applied; logs:\n{}",
        logs()
    );
    assert!(batches() > batches_before);
}
