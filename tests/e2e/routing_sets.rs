//! Routing-policy sets (`setIdentifier`) and provider-specific properties end to end:
//! planner and applier processes, pushed desired state, the real drivers. Route 53
//! (on dnsplane's emulator: no Route 53 can run here) writes weighted sets and aliases
//! and reads them back equal, so a fresh sync plans nothing; a driver without them
//! (PowerDNS, real) refuses exactly those records as INVALID and writes the rest.
use dnsplane_common::pb;
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use dnsplane_e2e::servers::{Kind, RealServer};
use std::collections::BTreeMap;

fn record(zone: &str, name: &str, values: &[&str]) -> pb::DesiredRecord {
    pb::DesiredRecord {
        name: format!("{name}.{zone}"),
        r#type: "A".into(),
        ttl: 60,
        values: values.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    }
}

fn with(mut r: pb::DesiredRecord, set: &str, props: &[(&str, &str)]) -> pb::DesiredRecord {
    r.set_identifier = set.into();
    r.provider_specific = props
        .iter()
        .map(|(n, v)| pb::Property {
            name: n.to_string(),
            value: v.to_string(),
        })
        .collect();
    r
}

/// Two weighted sets and a failover pair at one name, a same-zone alias and one to
/// another hosted zone, and plain records beside them.
fn workload(zone: &str) -> Vec<pb::DesiredRecord> {
    vec![
        record(zone, "plain1", &["192.0.2.1"]),
        record(zone, "plain2", &["192.0.2.2"]),
        with(
            record(zone, "api", &["192.0.2.10"]),
            "eu",
            &[("aws/weight", "80")],
        ),
        with(
            record(zone, "api", &["192.0.2.11"]),
            "us",
            &[("aws/weight", "20")],
        ),
        with(
            record(zone, "svc", &["192.0.2.20"]),
            "primary",
            &[("aws/failover", "PRIMARY")],
        ),
        with(
            record(zone, "svc", &["192.0.2.21"]),
            "secondary",
            &[("aws/failover", "SECONDARY")],
        ),
        with(
            record(zone, "www", &[&format!("plain1.{zone}")]),
            "",
            &[("alias", "true")],
        ),
        with(
            record(zone, "cdn", &["d111111abcdef8.cloudfront.net"]),
            "",
            &[
                ("alias", "true"),
                ("aws/target-hosted-zone", "Z2FDTNDATAQYW2"),
                ("aws/evaluate-target-health", "false"),
            ],
        ),
    ]
}

fn states(s: &RealStack) -> BTreeMap<String, (String, String)> {
    s.record_states(true)
        .into_iter()
        .map(|r| {
            let k = r.key.unwrap_or_default();
            let state = dnsplane_planner::service::kind_name(r.state).to_string();
            let why = format!("{} {}", r.reason, r.last_error);
            (format!("{} {}", k.name, k.set_identifier), (state, why))
        })
        .collect()
}

#[test]
fn route53_writes_weighted_failover_and_alias_sets_and_reads_them_back_equal() {
    routing_sets_round_trip(Kind::Route53);
}

#[test]
fn route53_moto_writes_weighted_failover_and_alias_sets_and_reads_them_back_equal() {
    routing_sets_round_trip(Kind::Route53Moto);
}

fn routing_sets_round_trip(kind: Kind) {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = RealServer::start(kind) else {
        return;
    };
    let s = RealStack::start(server, tools, Options::default());
    let zone = s.zone().to_string();
    let zone = zone.trim_end_matches('.');
    let c0 = s.counters();
    s.push(workload(zone));
    let p = s.sync(false);
    assert_eq!(p.phase, "done", "{p:?}");
    s.wait_quiet();
    s.assert_states(&[("converged", 8)]);
    let d = s.counters().since(&c0);
    assert_eq!(d.outcome("APPLIED"), 8, "{d:?}");
    let all = states(&s);
    assert!(all.contains_key(&format!("api.{zone}. eu")), "{all:#?}");
    assert!(all.contains_key(&format!("api.{zone}. us")), "{all:#?}");

    // What Route 53 holds reads back equal to what was written: a sync that reads the
    // zone afresh plans no change.
    let c1 = s.counters();
    let p = s.sync(true);
    assert_eq!(p.phase, "done", "{p:?}");
    s.wait_quiet();
    let d = s.counters().since(&c1);
    assert_eq!(d.outcomes.len(), 0, "a fresh sync wrote nothing: {d:?}");
    s.assert_states(&[("converged", 8)]);

    // A new weight updates that set alone.
    let mut changed = workload(zone);
    changed[2] = with(
        record(zone, "api", &["192.0.2.10"]),
        "eu",
        &[("aws/weight", "50")],
    );
    s.push(changed);
    s.sync(false);
    s.wait_quiet();
    let d = s.counters().since(&c1);
    assert_eq!(d.outcome("APPLIED"), 1, "{d:?}");
    s.assert_states(&[("converged", 8)]);
}

#[test]
fn pdns_refuses_sets_and_properties_as_invalid_and_writes_the_rest() {
    let Some(tools) = Tools::find() else { return };
    let Some(server) = RealServer::start(Kind::Pdns) else {
        return;
    };
    let s = RealStack::start(server, tools, Options::default());
    let zone = s.zone().to_string();
    let zone = zone.trim_end_matches('.');
    s.push(workload(zone));
    let p = s.sync(false);
    assert_eq!(p.phase, "done", "{p:?}");
    s.wait_quiet();
    s.assert_states(&[("converged", 2), ("invalid", 6)]);
    let all = states(&s);
    let (state, reason) = &all[&format!("api.{zone}. eu")];
    assert_eq!(state, "invalid");
    assert!(reason.contains("setIdentifier"), "{reason}");
    let (state, reason) = &all[&format!("www.{zone}. ")];
    assert_eq!(state, "invalid");
    assert!(reason.contains("\"alias\""), "{reason}");
    assert_eq!(
        s.dig(&format!("plain1.{zone}"), "A"),
        ["192.0.2.1"],
        "the plain records are served"
    );
}
