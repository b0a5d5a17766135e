//! Issue 13, "never destroy a zone by accident": each input that only *looks* like
//! "fewer records" must delete nothing. Planner and applier run as processes in front
//! of a real PowerDNS; what the zone holds is read from PowerDNS itself (AXFR), the
//! deletes from the applier's counters, and what the operator sees from the real
//! `dnsplane` CLI (its output and exit code).
use dnsplane_common::Name;
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use dnsplane_e2e::servers::{Kind, RealServer};
use dnsplane_testing::binary;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Safety net of every wait below; not a performance claim.
pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// A `DNSEndpoint` manifest named `resource` with one A record per name.
pub(crate) fn manifest(zone: &Name, resource: &str, names: &[String]) -> String {
    let mut s = format!(
        "apiVersion: externaldns.k8s.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {{name: {resource}, namespace: default}}\nspec:\n  endpoints:\n"
    );
    for (i, n) in names.iter().enumerate() {
        s.push_str(&format!(
            "    - dnsName: {n}.{zone}\n      recordType: A\n      recordTTL: 300\n      targets: [192.0.2.{}]\n",
            i % 250 + 1
        ));
    }
    s
}

pub(crate) fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:03}")).collect()
}

/// A stack whose planner reads `desired` (a directory, or files) as its file source.
pub(crate) fn stack_with_files(
    server: RealServer,
    tools: Tools,
    paths: &[&Path],
    extra: &str,
) -> RealStack {
    let paths: Vec<String> = paths
        .iter()
        .map(|p| format!("{:?}", p.display().to_string()))
        .collect();
    RealStack::start(
        server,
        tools,
        Options {
            planner_extra: format!(
                "[[sources]]\ntype = \"file\"\npaths = [{}]\n\n{extra}",
                paths.join(", ")
            ),
            ..Options::default()
        },
    )
}

/// Names (first label) whose A record this planner owns in the zone, read from
/// PowerDNS by AXFR: a data record with its ownership record beside it.
pub(crate) fn owned_names(s: &RealStack) -> BTreeSet<String> {
    let zone = s.zone().to_string();
    let lines = s.axfr();
    let marks: BTreeSet<String> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("_dnsplane-a."))
        .filter_map(|l| l.split(' ').next())
        .map(str::to_string)
        .collect();
    lines
        .iter()
        .filter(|l| !l.starts_with('_') && l.split(' ').nth(2) == Some("A"))
        .filter_map(|l| l.split(' ').next())
        .filter(|n| marks.contains(*n))
        .filter_map(|n| n.strip_suffix(&format!(".{zone}")))
        .map(str::to_string)
        .collect()
}

pub(crate) fn wait_owned(s: &RealStack, want: &BTreeSet<String>) {
    s.wait_until("the zone to hold exactly the desired records", WAIT, |s| {
        (owned_names(s) == *want).then_some(())
    });
}

fn cli(s: &RealStack, args: &[&str]) -> (i32, String) {
    s.cli(args)
}

pub(crate) fn set(v: &[String]) -> BTreeSet<String> {
    v.iter().cloned().collect()
}

/// Pushes one A record per name (`PutDesired`, source `bench`).
pub(crate) fn push_a(s: &RealStack, names: &[String], value: &str) -> u32 {
    let zone = s.zone().to_string();
    s.push(
        names
            .iter()
            .map(|n| dnsplane_common::pb::DesiredRecord {
                name: format!("{n}.{zone}"),
                r#type: "A".into(),
                ttl: 300,
                values: vec![value.into()],
                ..Default::default()
            })
            .collect(),
    )
}

pub(crate) fn start_pdns() -> Option<(RealServer, Tools, tempfile::TempDir)> {
    let tools = Tools::find()?;
    let server = RealServer::start(Kind::Pdns)?;
    Some((server, tools, tempfile::tempdir().expect("temp dir")))
}

#[test]
fn a_source_that_empties_or_vanishes_deletes_nothing() {
    let Some((server, tools, src)) = start_pdns() else {
        return;
    };
    let zone = server.zone().clone();
    let desired = src.path().join("desired");
    std::fs::create_dir(&desired).unwrap();
    let (a, b) = (names("a", 8), names("b", 2));
    std::fs::write(desired.join("a.yaml"), manifest(&zone, "a", &a)).unwrap();
    std::fs::write(desired.join("b.yaml"), manifest(&zone, "b", &b)).unwrap();
    let s = stack_with_files(server, tools, &[&desired], "");
    let all: BTreeSet<String> = set(&a).union(&set(&b)).cloned().collect();
    wait_owned(&s, &all);

    // 1. The directory emptied (every file removed at once).
    let keep = src.path().join("keep");
    std::fs::rename(&desired, &keep).unwrap();
    std::fs::create_dir(&desired).unwrap();
    let not_ready = |s: &RealStack| {
        s.planner_status()
            .sources
            .iter()
            .find(|x| !x.ready)
            .map(|x| x.reason.clone())
    };
    let reason = s.wait_until("the source to be not ready", WAIT, not_ready);
    assert!(reason.contains("matches no manifest"), "{reason}");
    // A full fresh sync re-plans everything: still nothing is deleted.
    assert_eq!(s.sync(true).phase, "done");
    assert_eq!(owned_names(&s), all, "an emptied directory deleted records");
    let (code, out) = cli(&s, &["status"]);
    assert_eq!(
        code, 2,
        "status exits non-zero while a source is not ready: {out}"
    );
    assert!(
        out.contains("NOT READY") && out.contains("matches no manifest"),
        "{out}"
    );

    // 2. The directory removed.
    std::fs::remove_dir(&desired).unwrap();
    let reason = s.wait_until("the source to say the path is gone", WAIT, |s| {
        not_ready(s).filter(|r| r.contains("does not exist"))
    });
    assert!(reason.contains(&desired.display().to_string()), "{reason}");
    assert_eq!(s.sync(true).phase, "done");
    assert_eq!(owned_names(&s), all, "a removed directory deleted records");
    let (code, out) = cli(&s, &["status"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("does not exist"), "{out}");

    // 3. Back: ready again; then removing one file beside the other is a deliberate
    //    deletion of that file's records only.
    std::fs::rename(&keep, &desired).unwrap();
    s.wait_until("the source to be ready again", WAIT, |s| {
        not_ready(s).is_none().then_some(())
    });
    std::fs::remove_file(desired.join("b.yaml")).unwrap();
    wait_owned(&s, &set(&a));
    let (code, out) = cli(&s, &["status"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_typo_in_the_source_paths_stops_the_planner_with_exit_64() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("desired")).unwrap();
    for (paths, problem) in [
        ("desried", "does not exist"),
        // A directory without any manifest is as suspicious as a missing one.
        ("desired", "matches no manifest"),
    ] {
        let config = dir.path().join("planner.toml");
        std::fs::write(
            &config,
            format!(
                "[[zones]]\nname = \"example.com\"\naccount = \"a\"\n\n[[sources]]\ntype = \"file\"\npaths = [\"{paths}\"]\n"
            ),
        )
        .unwrap();
        let out = Command::new(binary("dnsplane-planner"))
            .args([
                "--config",
                config.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ])
            .env("DNSPLANE_PLANNER_ADMIN_LISTEN", "off")
            .output()
            .expect("run dnsplane-planner");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{err}");
        let path = dir.path().join(paths).display().to_string();
        assert!(err.contains(&path) && err.contains(problem), "{err}");
    }
}

#[test]
fn a_restart_with_broken_files_deletes_nothing() {
    let Some((server, tools, src)) = start_pdns() else {
        return;
    };
    let zone = server.zone().clone();
    let desired = src.path().join("desired");
    std::fs::create_dir(&desired).unwrap();
    let groups = [names("y", 5), names("z", 5), names("n", 5), names("k", 5)];
    let files = ["yaml-error.yaml", "zero.yaml", "nul.yaml", "kept.yaml"];
    for (f, g) in files.iter().zip(&groups) {
        std::fs::write(
            desired.join(f),
            manifest(&zone, f.trim_end_matches(".yaml"), g),
        )
        .unwrap();
    }
    let mut s = stack_with_files(server, tools, &[&desired], "");
    let all: BTreeSet<String> = groups.iter().flat_map(|g| set(g)).collect();
    wait_owned(&s, &all);

    // While the planner is down, three files break: a YAML error, zero bytes, NULs.
    s.restart_planner_with(|| {
        std::fs::write(desired.join(files[0]), "spec: [endpoints\n  - broken: {").unwrap();
        std::fs::write(desired.join(files[1]), "").unwrap();
        std::fs::write(desired.join(files[2]), vec![0u8; 4096]).unwrap();
    });
    s.wait_until("the restarted planner's first sync", WAIT, |s| {
        s.zone_status().0.initial_sync_done.then_some(())
    });
    assert_eq!(s.sync(true).phase, "done");
    assert_eq!(
        owned_names(&s),
        all,
        "a restart with broken files deleted records"
    );
    let (code, out) = cli(&s, &["status"]);
    assert_eq!(code, 2, "{out}");
    for f in &files[..3] {
        assert!(out.contains(f), "status names {f}: {out}");
    }
}

#[test]
fn a_restart_after_pushes_deletes_nothing() {
    let Some((server, tools, _src)) = start_pdns() else {
        return;
    };
    let mut s = RealStack::start(server, tools, Options::default());
    let pushed = names("p", 30);
    assert_eq!(push_a(&s, &pushed, "192.0.2.44"), 30);
    wait_owned(&s, &set(&pushed));
    s.restart_planner_with(|| {});
    s.wait_until("the restarted planner's first sync", WAIT, |s| {
        s.zone_status().0.initial_sync_done.then_some(())
    });
    assert_eq!(s.sync(true).phase, "done");
    assert_eq!(
        owned_names(&s),
        set(&pushed),
        "a restart lost pushed records"
    );
    let (z, _) = s.zone_status();
    assert_eq!(z.desired_records, 30, "the push is back in force: {z:?}");
}

#[test]
fn a_mass_deletion_is_held_until_its_exact_plan_is_approved() {
    let Some((server, tools, src)) = start_pdns() else {
        return;
    };
    let zone = server.zone().clone();
    let file: PathBuf = src.path().join("web.yaml");
    let all = names("w", 20);
    std::fs::write(&file, manifest(&zone, "web", &all)).unwrap();
    let s = stack_with_files(server, tools, &[&file], "");
    wait_owned(&s, &set(&all));

    // A valid change that drops half the zone: held, nothing deleted; a create beside
    // it goes through.
    let mut half = all[..10].to_vec();
    half.push("fresh".into());
    std::fs::write(&file, manifest(&zone, "web", &half)).unwrap();
    let held = s.wait_until("the plan to be held", WAIT, |s| s.zone_status().0.held);
    assert_eq!(
        (held.deletes, held.updates, held.owned_records),
        (10, 0, 20),
        "{held:?}"
    );
    let mut with_fresh = set(&all);
    with_fresh.insert("fresh".into());
    wait_owned(&s, &with_fresh);
    assert_eq!(s.sync(true).phase, "done");
    assert_eq!(owned_names(&s), with_fresh, "a held plan deleted records");
    let (z, level) = s.zone_status();
    assert_eq!((z.state.as_str(), level.as_str()), ("HELD", "degraded"));
    assert_eq!(z.records_by_state.get("held"), Some(&10), "{z:?}");
    let (code, out) = cli(&s, &["status"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("HELD") && out.contains("10 deletes") && out.contains(&held.digest),
        "{out}"
    );
    let (_, out) = cli(&s, &["plan"]);
    assert!(out.contains("HELD by the mass-change guard"), "{out}");

    // The plan changes between look and approve: the old digest is refused, and the
    // new plan is held under its own digest.
    std::fs::write(&file, manifest(&zone, "web", &all[..8])).unwrap();
    let changed = s.wait_until("the new plan to be held", WAIT, |s| {
        s.zone_status().0.held.filter(|h| h.digest != held.digest)
    });
    assert_eq!(changed.deletes, 13, "{changed:?}");
    let (code, out) = cli(
        &s,
        &["approve", &zone.to_string(), "--digest", &held.digest],
    );
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("changed") && out.contains(&changed.digest),
        "{out}"
    );
    assert_eq!(
        owned_names(&s),
        with_fresh,
        "a refused approval deleted records"
    );

    // Approving what is held now applies it, within seconds.
    let (code, out) = cli(&s, &["approve", &zone.to_string()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&changed.digest), "{out}");
    wait_owned(&s, &set(&all[..8]));
    let (z, _) = s.zone_status();
    assert_eq!(z.state, "OK", "{z:?}");
    assert!(z.held.is_none());
}

#[test]
fn records_deleted_by_someone_else_are_put_back_within_seconds() {
    let Some((server, tools, _src)) = start_pdns() else {
        return;
    };
    let zone = server.zone().clone();
    // The periodic full read is 10 minutes away (RealStack's planner config): only the
    // drift watch (`sync.drift_check`, default 5 s) can notice.
    let s = RealStack::start(server, tools, Options::default());
    let pushed = names("d", 12);
    push_a(&s, &pushed, "192.0.2.55");
    wait_owned(&s, &set(&pushed));
    s.wait_quiet();

    // Another writer deletes three of our records (data and ownership) through the
    // PowerDNS API, which moves the zone's serial.
    let dnsplane_e2e::servers::RealServer::Pdns(pdns) = &s.server else {
        unreachable!("started PowerDNS")
    };
    let rrsets: Vec<String> = pushed[..3]
        .iter()
        .flat_map(|n| {
            [
                format!(r#"{{"name":"{n}.{zone}","type":"A","changetype":"DELETE"}}"#),
                format!(
                    r#"{{"name":"_dnsplane-a.{n}.{zone}","type":"TXT","changetype":"DELETE"}}"#
                ),
            ]
        })
        .collect();
    let (code, body) = pdns.api(
        "PATCH",
        &format!("/api/v1/servers/localhost/zones/{zone}"),
        &format!(r#"{{"rrsets":[{}]}}"#, rrsets.join(",")),
    );
    assert_eq!(code, 204, "{body}");
    let gone: BTreeSet<String> = set(&pushed[3..]);
    assert_eq!(owned_names(&s), gone, "the other writer deleted them");
    // Back well before the next full read (a bounded wait, not a timing claim).
    wait_owned(&s, &set(&pushed));
}

/// The durable desired state under `kill -9`: a planner whose source changes many times
/// a second is killed at arbitrary moments; each time, what its state directory holds
/// is one complete version of the source (never a torn or empty one), and a planner
/// started on it serves that version before it has read anything else.
#[test]
fn the_accepted_state_survives_kill_9_at_any_moment() {
    use dnsplane_e2e::{Proc, free_port, wait_for};
    use std::sync::atomic::{AtomicBool, Ordering};
    let zone = Name::parse("example.com.").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let desired = dir.path().join("desired");
    std::fs::create_dir(&desired).unwrap();
    let file = desired.join("web.yaml");
    // Version k holds 10 + k records: the stored record count names the version.
    let version = |k: usize| manifest(&zone, "web", &names("v", 10 + k));
    std::fs::write(&file, version(0)).unwrap();
    let config = dir.path().join("planner.toml");
    std::fs::write(
        &config,
        "[[zones]]\nname = \"example.com\"\naccount = \"a\"\n\n[sync]\nsource_poll = \"10ms\"\n\n\
         [[sources]]\ntype = \"file\"\npaths = [\"desired\"]\n",
    )
    .unwrap();
    let stored = || -> Option<usize> {
        // The file source's own reader: one part per file, every part read whole.
        let store =
            dnsplane_planner::store::DesiredStore::open(&dir.path().join(".dnsplane-state"))
                .expect("the state directory opens");
        let key = format!("file:{}", desired.display());
        dnsplane_planner::source::file::stored_counts(&store, &key)
            .expect("a complete, readable state")
            .map(|files| files.values().sum())
    };
    // A planner process on `config` (no applier: what is under test is its state).
    let start = |log: &str| {
        let port = free_port();
        let planner = Proc::spawn_with_env(
            "planner",
            &binary("dnsplane-planner"),
            &[
                "--config",
                config.to_str().unwrap(),
                "--listen",
                &format!("127.0.0.1:{port}"),
            ],
            &[("DNSPLANE_PLANNER_ADMIN_LISTEN", "off")],
            dir.path().join(log),
        );
        (planner, port)
    };
    for round in 0..8 {
        let (mut planner, _) = start(&format!("planner-{round}.log"));
        // Once it has stored its first state (a slow start on a busy machine must not
        // fail the test), rewrite the source as fast as the planner can take it, and
        // kill -9 it in the middle of that.
        wait_for(WAIT, stored).expect("the planner stores its first state");
        let stop = AtomicBool::new(false);
        std::thread::scope(|t| {
            t.spawn(|| {
                let mut k = 0;
                while !stop.load(Ordering::Relaxed) {
                    k = (k + 1) % 40;
                    std::fs::write(&file, version(k)).unwrap();
                    std::thread::sleep(Duration::from_millis(7));
                }
            });
            std::thread::sleep(Duration::from_millis(300 + 97 * round as u64));
            planner.kill();
            stop.store(true, Ordering::Relaxed);
        });
        let n = stored().expect("a state was stored");
        assert!(
            (10..50).contains(&n),
            "round {round}: stored {n} records, no version has that many"
        );
    }
    // A planner started on the last state serves it at once, even with the source
    // broken in the meantime.
    let n = stored().unwrap();
    std::fs::write(&file, "").unwrap();
    let (_planner, port) = start("planner-last.log");
    let rt = crate::stack::runtime();
    let desired_now = wait_for(WAIT, || {
        rt.block_on(async {
            let mut c = dnsplane_common::pb::planner_client::PlannerClient::connect(format!(
                "http://127.0.0.1:{port}"
            ))
            .await
            .ok()?;
            let s = c
                .get_status(dnsplane_common::pb::GetStatusRequest {})
                .await
                .ok()?
                .into_inner();
            s.zones.first().map(|z| z.desired_records as usize)
        })
    });
    assert_eq!(desired_now, Some(n), "the restored state is in force");
}
