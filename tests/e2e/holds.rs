//! Issue 33, records only some targets can hold: one zone at a real PowerDNS and at
//! Route 53 (moto, software dnsplane did not write), a weighted routing-policy set
//! among its records. Route 53 gets every record; PowerDNS, whose driver writes no
//! routing-policy sets, gets the plain ones and reports the weighted ones once as
//! `not_for_target`: never sent to its applier (no INVALID outcome there), not counted
//! against convergence, and the plain records converge around them.
use dnsplane_common::pb;
use dnsplane_common::pb::planner_client::PlannerClient;
use dnsplane_e2e::moto::Moto;
use dnsplane_e2e::servers::route53::aws_listing;
use dnsplane_e2e::servers::stack::{Options, Tools, spawn_proc, wait_serving};
use dnsplane_e2e::servers::{PowerDns, dig_sorted};
use dnsplane_e2e::{free_port, wait_for};
use std::time::Duration;

const ZONE: &str = "mixed.test.";
/// A safety net for each wait, not a performance claim.
const WAIT: Duration = Duration::from_secs(60);

fn weighted(set: &str, value: &str, weight: &str) -> pb::DesiredRecord {
    pb::DesiredRecord {
        name: format!("api.{ZONE}"),
        r#type: "A".into(),
        ttl: 60,
        values: vec![value.into()],
        set_identifier: set.into(),
        provider_specific: vec![pb::Property {
            name: "aws/weight".into(),
            value: weight.into(),
        }],
        ..Default::default()
    }
}

#[test]
fn a_routing_set_goes_only_to_the_target_that_can_hold_it() {
    let Some(tools) = Tools::find() else { return };
    let Some(moto) = Moto::start() else { return };
    let Some(pdns) = PowerDns::start_zone(ZONE) else {
        return;
    };
    let zone = dnsplane_common::Name::parse(ZONE).expect("zone");
    let zone_id = moto.create_zone(&zone, false);
    let dir = tempfile::tempdir().expect("dir");
    let credentials = Moto::write_credentials(&dir.path().join("aws-credentials"));
    let (planner_port, applier_port) = (free_port(), free_port());
    std::fs::write(
        dir.path().join("applier.toml"),
        format!(
            "[[accounts]]\nname = \"pdns\"\ndriver = \"pdns\"\nzones = [\"{ZONE}\"]\napi_url = \"{}\"\napi_key_file = \"{}\"\n\n\
             [[accounts]]\nname = \"r53\"\ndriver = \"route53\"\nzones = [\"{ZONE}\"]\nendpoint = \"http://127.0.0.1:{}\"\nprofile = \"default\"\ncredentials_file = \"{}\"\n",
            pdns.api_url(),
            pdns.api_key_file.display(),
            moto.port,
            credentials.display()
        ),
    )
    .expect("applier.toml");
    std::fs::write(
        dir.path().join("planner.toml"),
        format!(
            "owner_id = \"e2e\"\napplier = \"http://127.0.0.1:{applier_port}\"\n\n\
             [sync]\ninterval = \"10m\"\nmin_interval = \"100ms\"\nretry_min = \"200ms\"\nretry_max = \"1s\"\n\
             [pool]\nhealth_interval = \"200ms\"\n\n\
             [[zones]]\nname = \"{ZONE}\"\naccounts = [\"pdns\", \"r53\"]\n"
        ),
    )
    .expect("planner.toml");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let opts = Options::default();
    let applier = spawn_proc(dir.path(), &opts, "applier", applier_port, None);
    wait_serving(&rt, applier_port, "dnsplane.v1.Applier", &applier);
    let planner = spawn_proc(dir.path(), &opts, "planner", planner_port, None);
    wait_serving(&rt, planner_port, "dnsplane.v1.Planner", &planner);
    let mut c = rt
        .block_on(PlannerClient::connect(format!(
            "http://127.0.0.1:{planner_port}"
        )))
        .expect("connect");
    // Let the planner learn what each account holds before the first push.
    std::thread::sleep(Duration::from_secs(1));
    rt.block_on(c.put_desired(pb::PutDesiredRequest {
        source: "ci".into(),
        records: vec![
            pb::DesiredRecord {
                name: format!("www.{ZONE}"),
                r#type: "A".into(),
                ttl: 60,
                values: vec!["192.0.2.1".into()],
                ..Default::default()
            },
            weighted("eu", "192.0.2.10", "10"),
            weighted("us", "192.0.2.20", "20"),
        ],
    }))
    .expect("PutDesired");

    // Route 53 holds all three, as the AWS CLI lists them.
    let want = [
        "api.mixed.test. 192.0.2.10",
        "api.mixed.test. 192.0.2.20",
        "www.mixed.test. 192.0.2.1",
    ];
    let mut last = Vec::new();
    let listed = wait_for(WAIT, || {
        last = aws_listing(
            &format!("http://127.0.0.1:{}", moto.port),
            &zone_id,
            Moto::ACCESS_KEY,
            Moto::SECRET,
        )
        .expect("the AWS CLI")
        .into_iter()
        .filter(|(_, _, t, _)| t == "A")
        .map(|(n, _, _, v)| format!("{n} {v}"))
        .collect::<Vec<_>>();
        last.sort();
        (last == want).then_some(())
    });
    assert!(
        listed.is_some(),
        "Route 53 lists {last:?}; planner log:\n{}",
        planner.log_text()
    );
    // PowerDNS the plain one, and no api.
    let served = wait_for(WAIT, || {
        (dig_sorted(&tools.dig, pdns.dns_port, &format!("www.{ZONE}"), "A") == ["192.0.2.1"])
            .then_some(())
    });
    assert!(served.is_some(), "PowerDNS never served www");
    assert!(dig_sorted(&tools.dig, pdns.dns_port, &format!("api.{ZONE}"), "A").is_empty());

    // At the PowerDNS target the sets are not for it, with why.
    let states = rt
        .block_on(c.list_record_states(pb::ListRecordStatesRequest {
            zone: ZONE.into(),
            account: "pdns".into(),
            include_converged: true,
            ..Default::default()
        }))
        .expect("ListRecordStates")
        .into_inner()
        .records;
    let api: Vec<&pb::RecordState> = states
        .iter()
        .filter(|r| r.key.as_ref().is_some_and(|k| k.name.starts_with("api.")))
        .collect();
    assert_eq!(api.len(), 2, "{states:?}");
    for r in &api {
        assert_eq!(r.state, pb::RecordStateKind::NotForTarget as i32, "{r:?}");
        assert!(
            r.reason.contains("not for this target") && r.reason.contains("routing-policy sets"),
            "{r:?}"
        );
    }
    // Never sent there: the applier's PowerDNS account saw no INVALID outcome.
    let mut a = rt
        .block_on(dnsplane_common::pb::applier_client::ApplierClient::connect(
            format!("http://127.0.0.1:{applier_port}"),
        ))
        .expect("applier");
    let status = rt
        .block_on(a.get_status(pb::GetApplierStatusRequest {}))
        .expect("applier status")
        .into_inner();
    let pdns_account = status
        .accounts
        .iter()
        .find(|x| x.name == "pdns")
        .expect("pdns account");
    assert!(!pdns_account.routing_sets, "{pdns_account:?}");
    assert_eq!(
        pdns_account.outcomes.get("INVALID").copied().unwrap_or(0),
        0,
        "{pdns_account:?}"
    );
    // And not counted against convergence: `records` at that target exits 0.
    let out = std::process::Command::new(dnsplane_testing::binary("dnsplane"))
        .args(["records", "--zone", ZONE, "--account", "pdns", "--addr"])
        .arg(format!("http://127.0.0.1:{planner_port}"))
        .output()
        .expect("dnsplane records");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
