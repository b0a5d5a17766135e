//! The planner's side of DNS as code (issue 31), over real gRPC on loopback with the
//! embedded provider: `PlanProposed` plans a state that is not in force and keeps
//! nothing of it (refusing bad records by field, and a stream that never says it is
//! complete); `Adopt` writes only the plan reviewed and never takes a record that is
//! not desired; `ReadZone` tells each record's owner.
use crate::stack::runtime;
use crate::stack::{Stack, Tools, ZONE, endpoints, seed};
use dnsplane_common::pb;
use dnsplane_common::pb::planner_client::PlannerClient;
use std::time::Duration;
use tonic::transport::Channel;

async fn client(port: u16) -> PlannerClient<Channel> {
    PlannerClient::connect(format!("http://127.0.0.1:{port}"))
        .await
        .expect("connect")
}

fn record(name: &str, rtype: &str, value: &str) -> pb::DesiredRecord {
    pb::DesiredRecord {
        name: name.into(),
        r#type: rtype.into(),
        ttl: 60,
        values: vec![value.into()],
        ..Default::default()
    }
}

/// One chunk holding `records`, marked last.
fn whole(records: Vec<pb::DesiredRecord>) -> Vec<pb::PlanProposedChunk> {
    vec![pb::PlanProposedChunk {
        records,
        last: true,
        fresh: true,
        ..Default::default()
    }]
}

async fn propose(
    c: &mut PlannerClient<Channel>,
    chunks: Vec<pb::PlanProposedChunk>,
) -> Result<pb::PlanResponse, tonic::Status> {
    c.plan_proposed(tokio_stream::iter(chunks))
        .await
        .map(tonic::Response::into_inner)
}

fn kinds(plan: &pb::PlanResponse) -> Vec<(String, i32)> {
    let mut out: Vec<(String, i32)> = plan.zones[0]
        .changes
        .iter()
        .map(|c| {
            let c = c.change.as_ref().expect("change");
            (c.ops[0].key.as_ref().expect("key").name.clone(), c.kind)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_proposed_state_is_planned_refused_by_field_and_never_kept() {
    let Some(tools) = Tools::find() else { return };
    let s = Stack::www_running(tools);
    let rt = runtime();
    rt.block_on(async {
        let mut c = client(s.planner_port).await;
        // A bad value, a name in no zone: each named by its field; nothing planned.
        let e = propose(
            &mut c,
            whole(vec![
                record("www.example.com", "A", "192.0.2.20"),
                record("api.example.com", "A", "300.1.1.1"),
                record("x.example.org", "A", "192.0.2.1"),
            ]),
        )
        .await
        .expect_err("refused");
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        assert!(e.message().contains("records[1]"), "{}", e.message());
        assert!(e.message().contains("x.example.org"), "{}", e.message());
        // A stream that ends without `last` (a cancelled client) plans nothing.
        let mut cut = whole(vec![record("www.example.com", "A", "192.0.2.20")]);
        cut[0].last = false;
        let e = propose(&mut c, cut).await.expect_err("incomplete");
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        assert!(
            e.message().contains("without one marked last"),
            "{}",
            e.message()
        );

        // www moved, api added, in two chunks: an update and a create.
        let mut chunks = whole(vec![record("api.example.com", "A", "192.0.2.11")]);
        chunks.insert(
            0,
            pb::PlanProposedChunk {
                zones: vec![ZONE.into()],
                records: vec![record("www.example.com", "A", "192.0.2.20")],
                ..Default::default()
            },
        );
        let plan = propose(&mut c, chunks).await.expect("planned");
        assert_eq!(plan.zones.len(), 1);
        assert_eq!(plan.zones[0].error, "");
        assert_eq!(
            kinds(&plan),
            vec![
                (
                    "api.example.com.".to_string(),
                    pb::ChangeKind::Create as i32
                ),
                (
                    "www.example.com.".to_string(),
                    pb::ChangeKind::Update as i32
                ),
            ]
        );
        // An empty proposal deletes the one owned record: under the guard's floor.
        let plan = propose(&mut c, whole(vec![])).await.expect("planned");
        assert_eq!(
            kinds(&plan),
            vec![(
                "www.example.com.".to_string(),
                pb::ChangeKind::Delete as i32
            )]
        );

        // Nothing of it was kept: the state in force plans nothing, DNS is as it was.
        let plan = c
            .plan(pb::PlanRequest {
                fresh: true,
                ..Default::default()
            })
            .await
            .expect("plan")
            .into_inner();
        assert!(plan.zones[0].changes.is_empty(), "{plan:?}");
        let status = c
            .get_status(pb::GetStatusRequest {})
            .await
            .expect("status")
            .into_inner();
        assert_eq!(status.zones[0].desired_records, 1, "{status:?}");
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(s.dig("www.example.com", "A"), vec!["192.0.2.10"]);
}

#[test]
fn adopt_writes_only_the_plan_reviewed_and_never_a_record_not_desired() {
    let Some(tools) = Tools::find() else { return };
    // `legacy` is desired with the data it has, nobody's; `stray` is nobody's and not
    // desired; `www` is desired and missing (a create, not an adopt).
    let desired = endpoints(
        "web",
        &[
            ("www.example.com", "A", &["192.0.2.10"]),
            ("legacy.example.com", "A", &["198.51.100.7"]),
        ],
    );
    let mut s = Stack::new(tools, &[("web.yaml", &desired)], "report");
    seed(
        &s.state_dir(),
        &[
            ("legacy.example.com", "A", "198.51.100.7"),
            ("stray.example.com", "A", "198.51.100.8"),
        ],
    );
    s.start_until_www();
    let rt = runtime();
    rt.block_on(async {
        let mut c = client(s.planner_port).await;
        let adopt = |dry_run: bool, digest: &str| pb::AdoptRequest {
            zone: "example.com".into(),
            dry_run,
            account: String::new(),
            digest: digest.into(),
        };
        let plan = c
            .adopt(adopt(true, ""))
            .await
            .expect("dry run")
            .into_inner();
        let names: Vec<String> = plan
            .changes
            .iter()
            .map(|c| {
                c.change.as_ref().unwrap().ops[0]
                    .key
                    .as_ref()
                    .unwrap()
                    .name
                    .clone()
            })
            .collect();
        assert_eq!(names, vec!["legacy.example.com."], "{plan:?}");
        let alone: Vec<(String, String)> = plan
            .left_alone
            .iter()
            .map(|l| (l.key.as_ref().unwrap().name.clone(), l.reason.clone()))
            .collect();
        assert_eq!(alone.len(), 1, "{alone:?}");
        assert_eq!(alone[0].0, "stray.example.com.");
        assert!(alone[0].1.contains("not desired"), "{alone:?}");

        // A digest that is not the plan's writes nothing.
        let e = c
            .adopt(adopt(false, "0000000000000000"))
            .await
            .expect_err("stale");
        assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e:?}");
        let owners = read_owners(&mut c).await;
        assert_eq!(owners["legacy.example.com."], "", "nothing was written");

        let done = c
            .adopt(adopt(false, &plan.digest))
            .await
            .expect("adopt")
            .into_inner();
        assert_eq!(done.adopted, 1, "{done:?}");
        let owners = read_owners(&mut c).await;
        assert_eq!(owners["legacy.example.com."], "e2e (here)");
        assert_eq!(owners["stray.example.com."], "", "never adopted");
        assert_eq!(owners["www.example.com."], "e2e (here)");
    });
    assert_eq!(s.dig("legacy.example.com", "A"), vec!["198.51.100.7"]);
    assert_eq!(s.dig("stray.example.com", "A"), vec!["198.51.100.8"]);
}

/// Each data record's owner as `ReadZone` tells it: `owner (here)` for this planner.
async fn read_owners(c: &mut PlannerClient<Channel>) -> std::collections::BTreeMap<String, String> {
    let mut stream = c
        .read_zone(pb::ReadZoneRequest {
            zone: ZONE.into(),
            what: pb::ReadZoneWhat::Observed as i32,
            fresh: true,
            account: String::new(),
        })
        .await
        .expect("read zone")
        .into_inner();
    let mut out = std::collections::BTreeMap::new();
    while let Some(m) = stream.message().await.expect("message") {
        for r in m.records.into_iter().filter(|r| !r.mark) {
            let owner = match (r.owner.as_str(), r.owned_here) {
                ("", _) => String::new(),
                (o, true) => format!("{o} (here)"),
                (o, false) => o.to_string(),
            };
            out.insert(r.key.expect("key").name, owner);
        }
    }
    out
}

#[test]
fn plan_desired_of_a_zone_file_names_what_it_will_not_plan() {
    let Some(tools) = Tools::find() else { return };
    let s = Stack::www_running(tools);
    let dir = s.path("proposed");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("example.com.zone"),
        "$TTL 60\n@ IN SOA ns1 hostmaster 1 7200 3600 1209600 60\n@ IN NS ns1.example.net.\n\
         www IN A 192.0.2.10\nwww IN LOC 52 22 23.000 N 4 53 32.000 E -2.00m 0.00m 10000m 10m\n\
         api IN A 192.0.2.11\n",
    )
    .expect("zone file");
    let (code, out) = crate::stack::dnsplane_cli(
        s.planner_port,
        &["plan", "--desired", dir.to_str().expect("utf8")],
        &[],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("LOC"), "the skipped record is named: {out}");
    assert!(out.contains("api.example.com. A"), "{out}");
    assert!(out.contains("1 change(s)"), "{out}");

    // A proposed state that is missing, empty or unreadable is doubt, never "no
    // records": nothing is planned (a plan of it would show every record deleted).
    let empty = s.path("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let unreadable = dir.join("broken.zone");
    std::fs::write(&unreadable, [0xffu8, 0xfe, b'\n']).expect("file");
    for (path, why) in [
        (s.path("missing"), "does not exist"),
        (empty.clone(), "matches no manifest"),
        (dir.clone(), "not valid UTF-8"),
    ] {
        let (code, out) = crate::stack::dnsplane_cli(
            s.planner_port,
            &["plan", "--desired", path.to_str().expect("utf8")],
            &[],
        );
        assert_eq!(code, 1, "{why}: {out}");
        assert!(out.contains(why) && !out.contains("delete"), "{why}: {out}");
    }
}
