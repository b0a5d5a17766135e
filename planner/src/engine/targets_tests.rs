//! A zone served by several accounts: one target per account, each with its own
//! runtime, sharing the zone's desired state.
use super::views::VIEW_LABEL;
use super::*;
use crate::config::ZoneConfig;
use crate::source::DesiredEntry;
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
    Engine::for_tests(config)
}

fn entry(name: &str) -> DesiredEntry {
    crate::source::testing::pushed(name, "192.0.2.1", None, 0)
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

/// `example.com.` public at account `pub`, internal at `priv`.
fn split_horizon() -> Arc<Engine> {
    let config = PlannerConfig::with_zones(vec![
        ZoneConfig {
            view: Some("public".into()),
            ..ZoneConfig::new(zone(), "pub")
        },
        ZoneConfig {
            view: Some("internal".into()),
            ..ZoneConfig::new(zone(), "priv")
        },
    ]);
    config.validate().unwrap();
    Engine::for_tests(config)
}

fn entry_at(name: &str, value: &str, view: Option<&str>) -> DesiredEntry {
    DesiredEntry {
        values: vec![value.into()],
        labels: match view {
            Some(v) => crate::source::Labels::of([(VIEW_LABEL, v)]).unwrap(),
            None => Default::default(),
        },
        ..entry(name)
    }
}

/// What `account`'s target plans from: `name values` per record.
fn desired_at(e: &Engine, account: &str) -> Vec<String> {
    let t = e.target("example.com", account).unwrap();
    let z = e.runtime(&t).unwrap();
    let desired = z.desired();
    desired
        .zone(&zone())
        .map(|m| {
            m.iter()
                .map(|(k, r)| format!("{} {}", k.name, r.rrset(k).values_vec().join(",")))
                .collect()
        })
        .unwrap_or_default()
}

/// One push of every view's records: `www` internal at `internal_www`.
fn push_split(e: &Engine, internal_www: &str) {
    e.set_source(
        "push",
        vec![
            entry_at("mail.example.com", "192.0.2.25", None),
            entry_at("www.example.com", "203.0.113.80", Some("public")),
            entry_at("www.example.com", internal_www, Some("internal")),
            entry_at("intra.example.com", "10.0.0.1", Some("internal")),
        ],
        Vec::new(),
    );
}

#[tokio::test]
async fn each_view_plans_its_own_records_and_every_view_ones() {
    let e = split_horizon();
    // Every view: both. Labelled: only that view, even at the same name.
    push_split(&e, "10.0.0.80");
    assert_eq!(
        desired_at(&e, "pub"),
        [
            "mail.example.com. 192.0.2.25",
            "www.example.com. 203.0.113.80"
        ]
    );
    assert_eq!(
        desired_at(&e, "priv"),
        [
            "intra.example.com. 10.0.0.1",
            "mail.example.com. 192.0.2.25",
            "www.example.com. 10.0.0.80"
        ]
    );
    // Two records of one name in two views are no collision.
    assert!(
        e.snapshot().source_errors.is_empty(),
        "{:?}",
        e.snapshot().source_errors
    );
    // Only the view that changed wakes.
    for account in ["pub", "priv"] {
        let t = e.target("example.com", account).unwrap();
        lock(&e.runtime(&t).unwrap().dirty).clear();
    }
    push_split(&e, "10.0.0.81");
    let dirty = |account: &str| {
        let t = e.target("example.com", account).unwrap();
        lock(&e.runtime(&t).unwrap().dirty).len()
    };
    assert_eq!((dirty("pub"), dirty("priv")), (0, 1));
}

#[tokio::test]
async fn a_source_feeds_its_views_and_an_unknown_view_is_an_error() {
    let e = split_horizon();
    e.set_source_views("file:internal", vec!["internal".into()]);
    e.set_source(
        "file:internal",
        vec![entry_at("db.example.com", "10.0.0.5", None)],
        Vec::new(),
    );
    assert_eq!(desired_at(&e, "pub"), Vec::<String>::new());
    assert_eq!(desired_at(&e, "priv").len(), 1);
    // A label naming no target's view places the record nowhere, and says so.
    e.set_source(
        "push",
        vec![entry_at("x.example.com", "10.0.0.9", Some("lab"))],
        Vec::new(),
    );
    let errors = e.snapshot().source_errors;
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].message.contains("view lab"), "{errors:?}");
    assert!(errors[0].message.contains("internal, public"), "{errors:?}");
    assert!(!desired_at(&e, "priv").iter().any(|r| r.starts_with("x.")));
}

#[test]
fn a_source_view_no_target_has_is_a_config_error() {
    let c: PlannerConfig = toml::from_str(
        "[[zones]]\nname = \"example.com\"\naccount = \"a\"\nview = \"public\"\n\
         [[sources]]\ntype = \"file\"\npaths = [\"d\"]\nviews = [\"internl\"]\n",
    )
    .unwrap();
    let e = c.validate().unwrap_err();
    assert!(e.contains("views names \"internl\""), "{e}");
    assert!(e.contains("the views: public"), "{e}");
    let c: PlannerConfig =
        toml::from_str("[[zones]]\nname = \"example.com\"\naccount = \"a\"\nview = \"a b\"\n")
            .unwrap();
    assert!(c.validate().unwrap_err().contains("view \"a b\""));
    // Every source names its views, and none names this target's.
    let c: PlannerConfig = toml::from_str(
        "[[zones]]\nname = \"example.com\"\naccount = \"a\"\nview = \"public\"\n\
         [[zones]]\nname = \"example.com\"\naccount = \"b\"\nview = \"internal\"\n\
         [[sources]]\ntype = \"file\"\npaths = [\"d\"]\nviews = [\"public\"]\n",
    )
    .unwrap();
    let e = c.validate().unwrap_err();
    assert!(
        e.contains("view \"internal\" is fed by no [[sources]]"),
        "{e}"
    );
}

/// A source's records are told their state where every target has a view: the
/// every-view ones and each view's own (the Kubernetes status writer reads this).
#[tokio::test]
async fn a_source_is_told_the_state_of_its_records_in_every_view() {
    let e = split_horizon();
    e.set_source(
        "kubernetes:",
        vec![
            entry_at("mail.example.com", "192.0.2.25", None),
            entry_at("db.example.com", "10.0.0.5", Some("internal")),
        ],
        Vec::new(),
    );
    let told: Vec<(String, String)> = e.source_record_states("kubernetes:", |_, key, state| {
        (key.name.to_string(), state.kind.as_str().to_string())
    });
    assert_eq!(
        told,
        [
            ("db.example.com.".to_string(), "pending".to_string()),
            ("mail.example.com.".to_string(), "pending".to_string()),
        ]
    );
    // And it reads all of them back (what the webhook answers external-dns with).
    let mut back: Vec<String> = e
        .source_records("kubernetes:")
        .into_iter()
        .map(|(r, _)| r.key.name.to_string())
        .collect();
    back.sort();
    assert_eq!(back, ["db.example.com.", "mail.example.com."]);
}

/// A view's source errors stay in status while that view's index is busy (a large
/// update holds it): status shows what it last read, never a list without them.
#[tokio::test]
async fn a_busy_view_keeps_its_errors_in_status() {
    let e = split_horizon();
    e.set_source(
        "push:a",
        vec![entry_at("db.example.com", "10.0.0.5", Some("internal"))],
        Vec::new(),
    );
    e.set_source(
        "push:b",
        vec![entry_at("db.example.com", "10.0.0.6", Some("internal"))],
        Vec::new(),
    );
    let errors = e.snapshot().source_errors;
    assert_eq!(errors.len(), 1, "{errors:?}");
    let t = e.target("example.com", "priv").unwrap();
    let z = e.runtime(&t).unwrap();
    let busy = z.desired.write().unwrap();
    assert_eq!(e.snapshot().source_errors, errors);
    drop(busy);
    assert_eq!(e.snapshot().source_errors, errors);
}

/// What a driver holds reaches records already decided: one the applier refused
/// `invalid` before the planner knew becomes `not_for_target`, and one
/// `not_for_target` is planned again once the driver writes it. The zone's other
/// target, at another account, is left alone.
#[tokio::test]
async fn what_a_driver_holds_reaches_records_already_decided() {
    use crate::client::{ApplierAccount, Holds};
    use crate::state::{RecordStateKind, RetryClock};
    use dnsplane_common::{Outcome, RRSet, RecordKey, RecordResult};
    let e = engine();
    let key = RecordKey::new(
        zone(),
        Name::parse("www.example.com").unwrap(),
        RecordType::A,
    );
    let rrset = RRSet::with_properties(
        key.clone(),
        300,
        &["192.0.2.1"],
        &[("cloudflare.proxied", "true")],
    )
    .unwrap();
    let now = SystemTime::now();
    let clock = RetryClock {
        min: Duration::from_secs(1),
        max: Duration::from_secs(60),
    };
    for account in ["a", "b"] {
        let z = e
            .runtime(&e.target("example.com", account).unwrap())
            .unwrap();
        let mut states = lock(&z.states);
        states.not_for_target(&key, Some(rrset.clone()), "not yet", now);
        states.fold_result(
            &key,
            &RecordResult::new("c1", Outcome::Invalid),
            None,
            now,
            clock,
        );
        assert_eq!(states.get(&key).unwrap().kind, RecordStateKind::Invalid);
    }
    let kind = |account: &str| {
        let z = e
            .runtime(&e.target("example.com", account).unwrap())
            .unwrap();
        let states = lock(&z.states);
        let s = states.get(&key).unwrap();
        (s.kind, s.reason.clone())
    };
    let account = |properties: &[&str]| ApplierAccount {
        name: "a".into(),
        circuit: "closed".into(),
        quota: None,
        pacing: None,
        holds: Holds {
            driver: "pdns".into(),
            routing_sets: false,
            properties: properties.iter().map(|p| p.to_string()).collect(),
        },
    };
    e.note_holds(&[account(&[])]);
    let (k, why) = kind("a");
    assert_eq!(k, RecordStateKind::NotForTarget, "{why}");
    assert!(why.contains("cloudflare.proxied"), "{why}");
    assert_eq!(kind("b").0, RecordStateKind::Invalid);

    let a = e.runtime(&e.target("example.com", "a").unwrap()).unwrap();
    lock(&a.dirty).clear();
    e.note_holds(&[account(&["cloudflare.proxied"])]);
    let (k, why) = kind("a");
    assert_eq!(k, RecordStateKind::Pending, "{why}");
    assert!(lock(&a.dirty).contains(&key.name));
    // Told the same again, nothing moves.
    lock(&a.dirty).clear();
    e.note_holds(&[account(&["cloudflare.proxied"])]);
    assert!(lock(&a.dirty).is_empty());
}
