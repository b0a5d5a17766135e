//! Issue 29: a full update cycle of owned records (create; a new value and a new TTL;
//! back to the first values; delete) through the planner and applier processes, on
//! Route 53 served by dnsplane's emulator and by moto (the Route 53 LocalStack serves),
//! with the zone read back by the real AWS CLI after every step.
//!
//! moto checks each CREATE of a batch against the zone as it was before the batch (and
//! only a CREATE identical to one it took before), so the DELETE+CREATE of an
//! unchanged ownership record that an update carries as its precondition, and a value
//! changed back to one the zone held earlier, are refused there with `InvalidChangeBatch
//! … but it already exists`; AWS applies a batch in order. The driver must notice, and
//! converge anyway (docs/providers.md). moto also refuses a lone CREATE of a set it
//! held before, deleted since: records created again as they were converge too.
use dnsplane_common::pb;
use dnsplane_e2e::servers::stack::{OWNER_ID, Options, RealStack, Tools};
use dnsplane_e2e::servers::{EmulatedCloud, Kind, RealServer};
use std::collections::BTreeSet;

/// Records someone else keeps in the zone: never touched.
const UNOWNED: &[(&str, &str, u32, &str)] = &[
    ("legacy", "A", 3600, "198.51.100.1"),
    ("c01", "TXT", 3600, "\"not dnsplane's\""),
];

/// One desired record: `(label, type, ttl, value as pushed and as Route 53 holds it)`.
type Want = (&'static str, &'static str, u32, &'static str);

const CREATED: &[Want] = &[
    ("c00", "A", 300, "192.0.2.10"),
    ("c01", "A", 300, "192.0.2.11"),
    ("c02", "AAAA", 300, "2001:db8::2"),
    ("c03", "TXT", 300, "\"v=first\""),
    ("c04", "CNAME", 300, "first.example.net."),
    ("c05", "MX", 300, "10 mx1.example.net."),
    ("c06", "A", 300, "192.0.2.16"),
    ("c07", "TXT", 300, "\"ttl only\""),
];

/// Every record changed: new values (c00–c05), new TTLs alone (c06, c07).
const CHANGED: &[Want] = &[
    ("c00", "A", 300, "192.0.2.20"),
    ("c01", "A", 300, "192.0.2.21"),
    ("c02", "AAAA", 300, "2001:db8::22"),
    ("c03", "TXT", 300, "\"v=second\""),
    ("c04", "CNAME", 300, "second.example.net."),
    ("c05", "MX", 20, "20 mx2.example.net."),
    ("c06", "A", 60, "192.0.2.16"),
    ("c07", "TXT", 60, "\"ttl only\""),
];

/// What is left after the deletes.
const KEPT: &[Want] = &[("c00", "A", 300, "192.0.2.10")];

fn desired(zone: &str, want: &[Want]) -> Vec<pb::DesiredRecord> {
    want.iter()
        .map(|(label, rtype, ttl, value)| pb::DesiredRecord {
            name: format!("{label}.{zone}"),
            r#type: (*rtype).into(),
            ttl: *ttl,
            values: vec![(*value).into()],
            ..Default::default()
        })
        .collect()
}

/// The zone as the AWS CLI lists it (`name ttl type value` lines).
fn aws_axfr(s: &RealStack) -> Vec<String> {
    match &s.server {
        RealServer::Route53(r) => r.aws_axfr().expect("the AWS CLI (DNSPLANE_AWS_CLI)"),
        RealServer::Route53Moto(m) => m.axfr(),
        other => panic!("{} is no Route 53", other.kind().server()),
    }
}

/// The zone holds exactly `before` (what others keep), `want`, and one ownership
/// record of this planner per record of `want`.
fn check_zone(s: &RealStack, before: &[String], want: &[Want]) {
    let zone = s.zone().to_string();
    let after = aws_axfr(s);
    let (marks, data): (Vec<&String>, Vec<&String>) =
        after.iter().partition(|l| l.starts_with("_dnsplane-"));
    let mut expect: BTreeSet<String> = before.iter().cloned().collect();
    expect.extend(
        want.iter()
            .map(|(label, rtype, ttl, value)| format!("{label}.{zone} {ttl} {rtype} {value}")),
    );
    let got: BTreeSet<String> = data.into_iter().cloned().collect();
    assert_eq!(
        got,
        expect,
        "the zone as the AWS CLI lists it; logs:\n{}",
        s.logs()
    );
    let marks: BTreeSet<&str> = marks
        .iter()
        .filter(|l| l.contains(&format!("dnsplane/owner={OWNER_ID}")))
        .map(|l| l.split(' ').next().unwrap_or_default())
        .collect();
    let expect: BTreeSet<String> = want
        .iter()
        .map(|(label, rtype, _, _)| format!("_dnsplane-{}.{label}.{zone}", rtype.to_lowercase()))
        .collect();
    assert_eq!(
        marks,
        expect.iter().map(String::as_str).collect(),
        "one ownership record per record: {after:#?}"
    );
}

/// One step: push `want`, sync, and wait until every record converged and nothing
/// moves; the zone is then exactly that.
fn step(s: &RealStack, before: &[String], want: &[Want], what: &str) {
    let zone = s.zone().to_string();
    s.push(desired(zone.trim_end_matches('.'), want));
    let p = s.sync(false);
    assert_eq!(p.phase, "done", "{what}: {p:?}; logs:\n{}", s.logs());
    s.wait_quiet();
    s.assert_states(&[("converged", want.len())]);
    check_zone(s, before, want);
}

fn update_cycle(kind: Kind) {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = RealServer::start(kind) else {
        return;
    };
    server.add_records(UNOWNED);
    let s = RealStack::start(server, tools, Options::default());
    let before = aws_axfr(&s);
    assert!(
        before.iter().any(|l| l.contains("legacy.route53.test.")),
        "{before:#?}"
    );
    step(&s, &before, CREATED, "create");
    step(&s, &before, CHANGED, "new values and TTLs");
    // Back to values and TTLs the zone held before.
    step(&s, &before, CREATED, "back to the first values");
    step(&s, &before, KEPT, "deletes");
    // Created again as they were: moto refuses a lone CREATE of a set it held before
    // (while another set follows it); a read finds it absent, so UPSERT.
    step(&s, &before, CREATED, "created again as they were");
    // A fresh read finds nothing to do.
    let c = s.counters();
    let p = s.sync(true);
    assert_eq!((p.phase.as_str(), p.changes_planned), ("done", 0), "{p:?}");
    s.wait_quiet();
    assert_eq!(s.counters().since(&c).batches, 0, "no write");
    check_zone(&s, &before, CREATED);
    // moto's behaviour is named once in the applier's log; AWS's (the emulator's)
    // never.
    let log = std::fs::read_to_string(s.dir().join("applier.log")).expect("applier log");
    let named = log
        .matches("checks each CREATE against the zone as it was before the batch")
        .count();
    let want = usize::from(kind == Kind::Route53Moto);
    assert_eq!(named, want, "the UPSERT fallback logged {named} times");
    // … and the account's status says so (GetStatus through grpcurl).
    let status = s.applier_status_grpcurl();
    let notes = status["accounts"][0]["notes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(notes.len(), want, "{status}");
}

#[test]
fn route53_emulator_update_cycle_converges_read_back_by_the_aws_cli() {
    update_cycle(Kind::Route53);
}

#[test]
fn route53_moto_update_cycle_converges_read_back_by_the_aws_cli() {
    update_cycle(Kind::Route53Moto);
}
