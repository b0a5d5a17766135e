use super::*;
use serde_json::json;

fn zone() -> Zone {
    Zone::new("z", "example.com.", "", "public", 1)
}

fn a(name: &str, ttl: u32, ips: &[&str]) -> Value {
    json!({"name": name, "type": "A", "ttl": ttl, "rrdatas": ips})
}

fn run(z: &mut Zone, body: Value) -> Result<ChangeRec, ApiError> {
    apply(z, &body, &Limits::default(), ChangeMeta::default())
}

#[test]
fn an_update_is_a_deletion_and_an_addition_in_one_change() {
    let mut z = zone();
    let c = run(
        &mut z,
        json!({"additions": [a("www.example.com.", 300, &["192.0.2.1"])]}),
    )
    .unwrap();
    assert_eq!(c.id, 1);
    let c = run(
        &mut z,
        json!({"deletions": [a("www.example.com.", 300, &["192.0.2.1"])],
               "additions": [a("www.example.com.", 60, &["192.0.2.2"])]}),
    )
    .unwrap();
    assert_eq!(c.id, 2);
    let set = &z.rrsets[&("www.example.com.".to_string(), "A".to_string())];
    assert_eq!(
        (set.ttl, set.rrdatas.clone()),
        (60, vec!["192.0.2.2".to_string()])
    );
}

#[test]
fn every_failing_entry_is_reported_and_nothing_commits() {
    let mut z = zone();
    run(&mut z, json!({"additions": [a("x.example.com.", 300, &["192.0.2.1"]), a("y.example.com.", 300, &["192.0.2.1"])]})).unwrap();
    let before = z.rrsets.clone();
    let e = run(
        &mut z,
        json!({"deletions": [a("x.example.com.", 60, &["192.0.2.1"]), a("gone.example.com.", 300, &["192.0.2.1"])],
               "additions": [a("new.example.com.", 300, &["192.0.2.9"]), a("y.example.com.", 300, &["192.0.2.7"])]}),
    )
    .unwrap_err();
    assert_eq!(e.status, 412);
    let got: Vec<(&str, &str)> = e
        .items
        .iter()
        .map(|i| (i.reason.as_str(), i.message.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "conditionNotMet",
                "Precondition not met for 'entity.change.deletions[0]'"
            ),
            (
                "notFound",
                "The 'entity.change.deletions[1]' resource named 'gone.example.com. (A)' does not exist."
            ),
            (
                "alreadyExists",
                "The resource 'entity.change.additions[1]' named 'y.example.com. (A)' already exists"
            ),
        ]
    );
    assert_eq!(z.rrsets, before);
    assert_eq!(z.changes.len(), 2);
}

#[test]
fn bad_entries_name_their_field() {
    let mut z = zone();
    let e = run(
        &mut z,
        json!({"additions": [a("no-dot.example.com", 300, &["192.0.2.1"]), a("ok.example.com.", 300, &["1.2.3"]),
                             a("x.other.org.", 300, &["192.0.2.1"])]}),
    )
    .unwrap_err();
    assert_eq!(e.status, 400);
    let msgs: Vec<&str> = e.items.iter().map(|i| i.message.as_str()).collect();
    assert_eq!(
        msgs,
        [
            "Invalid value for 'entity.change.additions[0].name': 'no-dot.example.com'",
            "Invalid value for 'entity.change.additions[1].rrdata[0]': '1.2.3'",
            "Invalid value for 'entity.change.additions[2].name': 'x.other.org.'",
        ]
    );
}

#[test]
fn limits_are_quota_errors() {
    let mut z = zone();
    let limits = Limits {
        additions_per_change: 2,
        ..Limits::default()
    };
    let body = json!({"additions": [a("a.example.com.", 1, &["192.0.2.1"]), a("b.example.com.", 1, &["192.0.2.1"]), a("c.example.com.", 1, &["192.0.2.1"])]});
    let e = apply(&mut z, &body, &limits, ChangeMeta::default()).unwrap_err();
    assert_eq!(
        (e.status, e.message.as_str()),
        (
            403,
            "The change would exceed quota for additions per change."
        )
    );
    assert_eq!(e.reason(), "quotaExceeded");
}

/// proto3 JSON lets a client send integers as strings; google-cloud-dns always does.
#[test]
fn a_ttl_sent_as_a_string_is_the_same_ttl() {
    let mut z = zone();
    let set =
        json!({"name": "s.example.com.", "type": "A", "ttl": "300", "rrdatas": ["192.0.2.1"]});
    run(&mut z, json!({"additions": [set.clone()]})).unwrap();
    // Deleting with the number matches what the string wrote.
    run(
        &mut z,
        json!({"deletions": [a("s.example.com.", 300, &["192.0.2.1"])]}),
    )
    .unwrap();
    let bad =
        json!({"name": "t.example.com.", "type": "A", "ttl": "soon", "rrdatas": ["192.0.2.1"]});
    let e = run(&mut z, json!({"additions": [bad]})).unwrap_err();
    assert_eq!((e.status, e.reason()), (400, "invalid"));
    assert_eq!(
        e.message,
        "Invalid value for 'entity.change.additions[0].ttl': 'soon'"
    );
}
