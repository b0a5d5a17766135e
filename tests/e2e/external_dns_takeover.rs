//! Door 2 of docs/external-dns.md on a real PowerDNS: a zone external-dns managed,
//! with records of external-dns owner `cluster-a` (marks in both of its TXT formats,
//! with `--txt-prefix=ext-`), of owner `cluster-b`, and unowned ones. dnsplane, told
//! `[zones.external_dns] owner_id = "cluster-a"`, takes `cluster-a`'s records in one
//! sync: its marks written, external-dns's gone, not one value changed, and no data
//! RRSet ever deleted (checked on every PATCH that reached PowerDNS, through a proxy).
//! `cluster-b`'s and the unowned records are untouched and reported. Then the way
//! back: `dnsplane release --to-external-dns cluster-a` restores external-dns's
//! ownership, and `dnsplane resume` takes the records once more.
use crate::stack::{pdns_of, start_pdns};
use dnsplane_common::pb;
use dnsplane_common::pb::planner_client::PlannerClient;
use dnsplane_e2e::quota_proxy::{ProxyOptions, QuotaProxy};
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use std::collections::BTreeSet;
use std::time::Duration;

/// Records of each kind, as in the issue: 1,000 of cluster-a, 100 of cluster-b, 100
/// unowned (a second or two).
const A: usize = 1_000;
const B: usize = 100;
const UNOWNED: usize = 100;

fn mark(owner: &str, i: usize) -> String {
    format!(
        "\"heritage=external-dns,external-dns/owner={owner},external-dns/resource=ingress/default/web-{i}\""
    )
}

/// One record as PowerDNS's API takes it and as AXFR shows it: (relative name, type,
/// content).
type Rec = (String, &'static str, String);

/// cluster-a's record `i` and its external-dns marks: a CNAME (new format only: an
/// old-format TXT cannot sit beside a CNAME), or an A with the old format, the new
/// one, or both.
fn cluster_a(i: usize) -> (Rec, Vec<Rec>) {
    let name = format!("a{i:04}");
    let m = mark("cluster-a", i);
    match i % 4 {
        0 => (
            (name.clone(), "CNAME", format!("t{i}.example.net.")),
            vec![(format!("ext-cname-{name}"), "TXT", m)],
        ),
        1 => (
            (name.clone(), "A", format!("192.0.2.{}", i % 250)),
            vec![(format!("ext-{name}"), "TXT", m)],
        ),
        2 => (
            (name.clone(), "A", format!("192.0.2.{}", i % 250)),
            vec![(format!("ext-a-{name}"), "TXT", m)],
        ),
        _ => (
            (name.clone(), "A", format!("192.0.2.{}", i % 250)),
            vec![
                (format!("ext-a-{name}"), "TXT", m.clone()),
                (format!("ext-{name}"), "TXT", m),
            ],
        ),
    }
}

fn rrset_json(zone: &str, (name, rtype, content): &Rec) -> serde_json::Value {
    serde_json::json!({
        "name": format!("{name}.{zone}"), "type": rtype, "ttl": 300, "changetype": "REPLACE",
        "records": [{"content": content, "disabled": false}],
    })
}

fn desired(zone: &str, (name, rtype, content): &Rec) -> pb::DesiredRecord {
    pb::DesiredRecord {
        name: format!("{name}.{zone}"),
        r#type: rtype.to_string(),
        ttl: 300,
        values: vec![content.clone()],
        ..Default::default()
    }
}

#[test]
fn takes_over_one_external_dns_owners_records_without_changing_a_value() {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = start_pdns() else { return };
    let pdns = pdns_of(&server);
    let zone = server.zone().to_string();
    let a: Vec<(Rec, Vec<Rec>)> = (0..A).map(cluster_a).collect();
    let b: Vec<(Rec, Rec)> = (0..B)
        .map(|i| {
            let name = format!("b{i:04}");
            (
                (name.clone(), "A", format!("198.51.100.{i}")),
                (format!("ext-a-{name}"), "TXT", mark("cluster-b", i)),
            )
        })
        .collect();
    let unowned: Vec<Rec> = (0..UNOWNED)
        .map(|i| (format!("u{i:04}"), "A", format!("203.0.113.{i}")))
        .collect();
    let mut all: Vec<&Rec> = Vec::new();
    for (r, marks) in &a {
        all.push(r);
        all.extend(marks);
    }
    for (r, m) in &b {
        all.extend([r, m]);
    }
    all.extend(&unowned);
    let body =
        serde_json::json!({"rrsets": all.iter().map(|r| rrset_json(&zone, r)).collect::<Vec<_>>()});
    let (status, answer) = pdns.api(
        "PATCH",
        &format!("/api/v1/servers/localhost/zones/{zone}"),
        &body.to_string(),
    );
    assert_eq!(status, 204, "{answer}");
    let proxy = QuotaProxy::start(&pdns.api_url(), ProxyOptions::default());
    let before = server.axfr(&tools.dig);
    let line = |(name, rtype, content): &Rec| format!("{name}.{zone} 300 {rtype} {content}");
    for r in &all {
        assert!(before.contains(&line(r)), "{} not in the zone", line(r));
    }

    // A push alone does not sync (min_interval 10m): the plan is looked at first.
    let opts = Options {
        api_url: Some(proxy.url()),
        min_interval: "10m".into(),
        planner_extra: "[zones.external_dns]\nowner_id = \"cluster-a\"\ntxt_prefix = \"ext-\"\n"
            .into(),
        ..Options::default()
    };
    let mut s = RealStack::start(server, tools, opts);
    let want: Vec<pb::DesiredRecord> = a
        .iter()
        .map(|(r, _)| r)
        .chain(b.iter().map(|(r, _)| r))
        .chain(&unowned)
        .map(|r| desired(&zone, r))
        .collect();
    assert_eq!(s.push(want) as usize, A + B + UNOWNED);

    // `dnsplane plan` (gRPC Plan) shows every adopt before it happens, and nothing else.
    let rt = crate::stack::runtime();
    let plan = rt
        .block_on(async {
            let mut c = PlannerClient::connect(s.planner_addr()).await?;
            c.plan(pb::PlanRequest {
                fresh: true,
                page_size: 10_000,
                ..Default::default()
            })
            .await
            .map_err(Into::into)
        })
        .map_err(|e: Box<dyn std::error::Error>| e.to_string())
        .expect("Plan")
        .into_inner();
    let zp = &plan.zones[0];
    assert_eq!(zp.error, "");
    let kinds: BTreeSet<i32> = zp
        .changes
        .iter()
        .map(|c| c.change.as_ref().expect("change").kind)
        .collect();
    assert_eq!(kinds, BTreeSet::from([pb::ChangeKind::Adopt as i32]));
    assert_eq!(zp.changes.len(), A, "one adopt per cluster-a record");
    assert!(
        zp.changes[0].reason.contains("cluster-a"),
        "{}",
        zp.changes[0].reason
    );
    assert_eq!(zp.blocked.len(), B + UNOWNED);
    assert!(proxy.patches().is_empty(), "the plan wrote nothing");

    let p = s.sync(false);
    assert_eq!(p.phase, "done", "{p:?}; logs:\n{}", s.logs());

    // The zone: every data record as before; cluster-a's marks replaced by dnsplane's;
    // cluster-b's and the unowned untouched.
    let after = s.axfr();
    let mut expect: BTreeSet<String> = before
        .iter()
        .filter(|l| {
            !a.iter()
                .any(|(_, marks)| marks.iter().any(|m| **l == line(m)))
        })
        .cloned()
        .collect();
    for ((name, rtype, _), _) in &a {
        let owner = format!(
            "_dnsplane-{}.{name}.{zone} 300 TXT",
            rtype.to_ascii_lowercase()
        );
        let got = after
            .iter()
            .find(|l| l.starts_with(&owner))
            .unwrap_or_else(|| panic!("no dnsplane mark {owner}"));
        assert!(got.contains("dnsplane/owner=e2e"), "{got}");
        expect.insert(got.clone());
    }
    let got: BTreeSet<String> = after.iter().cloned().collect();
    let missing: Vec<_> = expect.difference(&got).take(10).collect();
    let extra: Vec<_> = got.difference(&expect).take(10).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, unexpected {extra:?}"
    );
    for ((name, rtype, content), _) in a.iter().step_by(37) {
        assert_eq!(
            s.dig(&format!("{name}.{zone}"), rtype),
            std::slice::from_ref(content)
        );
    }

    // No data RRSet was ever deleted: the only DELETEs that reached PowerDNS were
    // cluster-a's marks.
    let marks: BTreeSet<String> = a
        .iter()
        .flat_map(|(_, m)| m.iter().map(|(n, _, _)| format!("{n}.{zone}")))
        .collect();
    let mut deleted = BTreeSet::new();
    for patch in proxy.patches() {
        let body: serde_json::Value = serde_json::from_str(&patch.body).expect("PATCH JSON");
        for rr in body["rrsets"].as_array().into_iter().flatten() {
            if rr["changetype"] == "DELETE" {
                let name = rr["name"].as_str().unwrap_or_default().to_string();
                assert!(
                    marks.contains(&name) && rr["type"] == "TXT",
                    "DELETE of {rr}"
                );
                deleted.insert(name);
            }
        }
    }
    assert_eq!(deleted, marks, "every cluster-a mark deleted");

    // cluster-b's records are conflicts naming their owner; the unowned ones too.
    let states = s.record_states(false);
    let conflict = |name: &str| {
        states
            .iter()
            .find(|r| {
                r.key
                    .as_ref()
                    .is_some_and(|k| k.name == format!("{name}.{zone}"))
            })
            .unwrap_or_else(|| panic!("no state for {name}"))
    };
    for ((name, _, _), _) in &b {
        let st = conflict(name);
        assert_eq!(st.state, pb::RecordStateKind::Conflict as i32, "{st:?}");
        assert_eq!(st.observed_owner, "cluster-b");
        assert_eq!(st.conflict_reason, pb::ConflictReason::OwnedByOther as i32);
    }
    for (name, _, _) in &unowned {
        let st = conflict(name);
        assert_eq!(
            st.conflict_reason,
            pb::ConflictReason::Exists as i32,
            "{st:?}"
        );
    }
    // A second sync changes nothing.
    let n = proxy.patches().len();
    let p = s.sync(true);
    assert_eq!(p.phase, "done", "{p:?}");
    assert_eq!(proxy.patches().len(), n, "nothing left to write");

    release_and_resume(&mut s, &proxy, &a, &before);
}

/// The way back (`dnsplane release --to-external-dns`): external-dns's ownership
/// restored on every record dnsplane took, in the format external-dns writes, with the
/// resource it had; dnsplane's marks gone; no value changed and no data deleted; the
/// zone not planned until `dnsplane resume`, which takes the records once more.
fn release_and_resume(
    s: &mut RealStack,
    proxy: &QuotaProxy,
    a: &[(Rec, Vec<Rec>)],
    before: &[String],
) {
    let zone = s.zone().to_string();
    let line = |(name, rtype, content): &Rec| format!("{name}.{zone} 300 {rtype} {content}");
    let n = proxy.patches().len();
    let (code, out) = s.cli(&[
        "release",
        &zone,
        "--to-external-dns",
        "cluster-a",
        "--dry-run",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "would hand {A} record(s) to external-dns owner cluster-a"
        )),
        "{out}"
    );
    assert_eq!(proxy.patches().len(), n, "a dry run writes nothing");
    // Refused: no owner, or an owner the mark cannot carry.
    let (code, out) = s.cli(&["release", &zone, "--to-external-dns", "a,b"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("external_dns_owner"), "{out}");
    assert_eq!(proxy.patches().len(), n);

    let (code, out) = s.cli(&["release", &zone, "--to-external-dns", "cluster-a"]);
    assert_eq!(code, 0, "{out}\nlogs:\n{}", s.logs());
    assert!(
        out.contains(&format!(
            "{A} record(s) handed over now, 0 already were, 0 left"
        )),
        "{out}"
    );

    // The zone: the data as it was before dnsplane came; each of cluster-a's records
    // marked once more by cluster-a, in external-dns's current format, with its
    // resource; no dnsplane mark left; cluster-b's and the unowned untouched.
    let original_marks: BTreeSet<String> = a
        .iter()
        .flat_map(|(_, marks)| marks.iter().map(line))
        .collect();
    let mut expect: BTreeSet<String> = before
        .iter()
        .filter(|l| !original_marks.contains(*l))
        .cloned()
        .collect();
    for (i, ((name, rtype, _), _)) in a.iter().enumerate() {
        let t = rtype.to_ascii_lowercase();
        expect.insert(line(&(
            format!("ext-{t}-{name}"),
            "TXT",
            mark("cluster-a", i),
        )));
    }
    let got: BTreeSet<String> = s.axfr().into_iter().collect();
    let missing: Vec<_> = expect.difference(&got).take(10).collect();
    let extra: Vec<_> = got.difference(&expect).take(10).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, unexpected {extra:?}"
    );
    // Records whose marks were in the new format have them back byte for byte.
    let restored = a
        .iter()
        .flat_map(|(_, m)| m)
        .filter(|m| got.contains(&line(m)))
        .count();
    assert!(
        restored >= A / 2,
        "{restored} of cluster-a's marks back exactly"
    );

    // Only dnsplane's marks were deleted on the way back.
    for patch in &proxy.patches()[n..] {
        let body: serde_json::Value = serde_json::from_str(&patch.body).expect("PATCH JSON");
        for rr in body["rrsets"].as_array().into_iter().flatten() {
            if rr["changetype"] == "DELETE" {
                let name = rr["name"].as_str().unwrap_or_default();
                assert!(
                    name.starts_with("_dnsplane-") && rr["type"] == "TXT",
                    "DELETE of {rr}"
                );
            }
        }
    }

    // Released: status says so, and a sync plans and writes nothing (it would
    // otherwise take cluster-a's records straight back).
    let (z, _) = s.zone_status();
    assert_eq!(z.state, "RELEASED", "{z:?}");
    assert_eq!(
        z.released.as_ref().map(|r| r.external_dns_owner.as_str()),
        Some("cluster-a")
    );
    let n = proxy.patches().len();
    let p = s.sync(true);
    assert_eq!(p.phase, "failed", "{p:?}");
    assert!(
        p.error.contains("released to external-dns owner"),
        "{}",
        p.error
    );
    assert_eq!(proxy.patches().len(), n, "a released zone is not written");
    let (_, out) = s.cli(&["status"]);
    assert!(
        out.contains("RELEASED to external-dns owner cluster-a"),
        "{out}"
    );
    // ... and stays so across a restart of the planner.
    s.restart_planner_with(|| {});
    assert_eq!(s.zone_status().0.state, "RELEASED");
    // Not "syncing" forever: a released zone is not behind.
    s.wait_until("the planner healthy", Duration::from_secs(30), |s| {
        (s.planner_status().level == "healthy").then_some(())
    });
    assert_eq!(s.sync(true).phase, "failed");
    assert_eq!(proxy.patches().len(), n, "a released zone is not written");

    // Resume: the zone is dnsplane's to plan again, and (with owner_id = cluster-a)
    // takes the records back, their marks now all in the new format.
    let (code, out) = s.cli(&["resume", &zone]);
    assert_eq!(code, 0, "{out}");
    s.wait_until(
        "the records taken back after resume",
        Duration::from_secs(60),
        |s| {
            let owned = s
                .axfr()
                .iter()
                .filter(|l| l.starts_with("_dnsplane-") && l.contains("dnsplane/owner=e2e"))
                .count();
            (owned == A).then_some(())
        },
    );
    let got = s.axfr();
    assert!(
        !got.iter()
            .any(|l| l.starts_with("ext-") && l.contains("cluster-a")),
        "cluster-a's marks gone again"
    );
    assert!(
        got.iter()
            .any(|l| l.contains("dnsplane/external-dns-resource=ingress/default/web-"))
    );
}
