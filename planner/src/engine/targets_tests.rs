//! A zone served by several accounts: one target per account, each with its own
//! runtime, sharing the zone's desired state.
use super::*;
use crate::config::ZoneConfig;
use crate::lease::LeaseHandle;
use crate::metrics::PlannerMetrics;
use crate::source::{DesiredEntry, Origin};
use crate::target::TargetError;
use dnsplane_common::RecordType;

fn zone() -> Name {
    Name::parse("example.com").unwrap()
}

/// `example.com.` at accounts `a` and `b`, and `other.org.` at `a` alone.
fn engine() -> Arc<Engine> {
    let config = PlannerConfig::with_zones(vec![
        ZoneConfig {
            account: String::new(),
            accounts: vec!["b".into(), "a".into()],
            ..ZoneConfig::new(zone(), "")
        },
        ZoneConfig::new(Name::parse("other.org").unwrap(), "a"),
    ]);
    config.validate().unwrap();
    Engine::new(
        config,
        PlannerMetrics::unregistered(),
        LeaseHandle::sole_writer(),
    )
    .unwrap()
}

fn entry(name: &str) -> DesiredEntry {
    DesiredEntry {
        name: Name::parse(name).unwrap(),
        rtype: RecordType::A,
        ttl: None,
        values: vec!["192.0.2.1".into()],
        set: dnsplane_common::SetId::NONE,
        properties: Vec::new(),
        labels: Default::default(),
        origin: Origin {
            source: "push".into(),
            location: "records[0]".into(),
            resource: "test".into(),
        },
    }
}

#[tokio::test]
async fn each_account_of_a_zone_is_a_target_of_its_own() {
    let e = engine();
    let all: Vec<String> = e.targets().map(ToString::to_string).collect();
    assert_eq!(
        all,
        [
            "example.com. at account a",
            "example.com. at account b",
            "other.org."
        ]
    );
    // Each zone once, whatever its targets.
    let zones: Vec<&str> = e.zone_names().map(Name::as_str).collect();
    assert_eq!(zones, ["example.com.", "other.org."]);
    let snapshot = e.snapshot();
    let accounts: Vec<(&str, &str)> = snapshot
        .zones
        .iter()
        .map(|z| (z.name.as_str(), z.account.as_str()))
        .collect();
    assert_eq!(
        accounts,
        [
            ("example.com.", "a"),
            ("example.com.", "b"),
            ("other.org.", "a")
        ]
    );
}

#[tokio::test]
async fn a_call_naming_a_zone_of_several_targets_must_name_the_account() {
    let e = engine();
    match e.target("example.com", "") {
        Err(err @ TargetError::Ambiguous { .. }) => {
            let text = err.to_string();
            assert!(text.contains("a, b"), "{text}");
            assert!(text.contains("name one with its account"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(&*e.target("example.com.", "b").unwrap().account, "b");
    match e.target("example.com", "c") {
        Err(err @ TargetError::UnknownAccount { .. }) => {
            assert!(err.to_string().contains("\"c\""), "{err}");
            assert!(err.to_string().contains("a, b"), "{err}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        e.target("nowhere.net", ""),
        Err(TargetError::UnknownZone { .. })
    ));
    // A zone with one target needs no account, and takes its own.
    assert_eq!(&*e.target("other.org", "").unwrap().account, "a");
    assert_eq!(&*e.target("other.org", "a").unwrap().account, "a");
    // Calls that act on several take every target of the zone.
    assert_eq!(e.targets_named("example.com", "").unwrap().len(), 2);
    assert_eq!(e.targets_named("example.com", "a").unwrap().len(), 1);
}

#[tokio::test]
async fn a_desired_change_wakes_every_target_of_its_zone() {
    let e = engine();
    e.set_source("push", vec![entry("www.example.com")], Vec::new());
    for account in ["a", "b"] {
        let t = e.target("example.com", account).unwrap();
        let dirty = std::mem::take(&mut *lock(&e.runtime(&t).unwrap().dirty));
        assert_eq!(
            dirty.iter().map(Name::as_str).collect::<Vec<_>>(),
            ["www.example.com."],
            "{t}"
        );
    }
    let other = e.target("other.org", "").unwrap();
    assert!(lock(&e.runtime(&other).unwrap().dirty).is_empty());
}

#[tokio::test]
async fn approving_and_resuming_name_the_target() {
    let e = engine();
    assert!(matches!(
        e.approve("example.com", "", "d"),
        Err(ApproveError::Target(TargetError::Ambiguous { .. }))
    ));
    // Target b holds nothing: the error names the target, account included.
    let err = e.approve("example.com", "b", "d").unwrap_err();
    assert_eq!(
        err.to_string(),
        "zone example.com. at account b has no held plan"
    );
    assert!(matches!(
        e.resume("example.com", ""),
        Err(ReleaseError::Target(TargetError::Ambiguous { .. }))
    ));
}
