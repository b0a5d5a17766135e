//! The write-back: what each object is told (pure), and the writes themselves against
//! the real NetBox of `tests/run-all.sh` (skipped without one; failed without one
//! under `DNSPLANE_REQUIRE_SERVERS=1`).
use super::client::NetboxClient;
use super::write_back::{Object, Statuses, WriteBack, statuses};
use crate::source::SourceError;
use crate::source::header_file::HeaderFile;
use crate::source::outcomes::{Phase, RecordName, RecordOutcome};
use dnsplane_testing::http_fault::{Fault, FaultProxy};
use dnsplane_testing::netbox::NetBox;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

fn outcome(resource: &str, phase: Phase, record: &str, why: &str) -> RecordOutcome {
    RecordOutcome {
        resource: resource.into(),
        record: RecordName::from(record),
        phase,
        detail: why.into(),
    }
}

#[test]
fn each_object_is_told_its_worst_record_and_an_object_on_its_way_is_left_alone() {
    let records = [
        outcome(
            "ipam/ip-addresses/1",
            Phase::Converged,
            "a.example.com. A",
            "",
        ),
        outcome(
            "ipam/ip-addresses/1",
            Phase::Converged,
            "1.2.0.192.in-addr.arpa. PTR",
            "",
        ),
        outcome(
            "ipam/ip-addresses/2",
            Phase::Converged,
            "b.example.com. A",
            "",
        ),
        outcome(
            "ipam/ip-addresses/2",
            Phase::Conflict,
            "2.2.0.192.in-addr.arpa. PTR",
            "owned by \"other\"",
        ),
        outcome(
            "ipam/ip-addresses/3",
            Phase::Pending,
            "c.example.com. A",
            "",
        ),
        outcome(
            "ipam/ip-addresses/4",
            Phase::Converged,
            "d.example.com. A",
            "",
        ),
        outcome(
            "ipam/ip-addresses/4",
            Phase::Pending,
            "4.2.0.192.in-addr.arpa. PTR",
            "",
        ),
        // A merged set names each address; a plugin record alone.
        outcome(
            "ipam/ip-addresses/5, ipam/ip-addresses/6",
            Phase::Held,
            "m.example.com. A",
            "the mass-change guard holds this zone",
        ),
        outcome(
            "netbox-dns/records/9",
            Phase::Invalid,
            "x.example.com. CNAME",
            &"y".repeat(400),
        ),
    ];
    let errors = [SourceError {
        source: "netbox".into(),
        location: "https://nb/ipam/ip-addresses/7/".into(),
        record: "bad..example.com".into(),
        message: "dns_name is not a valid name: empty label".into(),
    }];
    let got = statuses(&records, &errors);
    let want: BTreeMap<Object, String> = [
        (Object::Address(1), "converged".to_string()),
        (
            Object::Address(2),
            "conflict: 2.2.0.192.in-addr.arpa. PTR: owned by \"other\"".into(),
        ),
        (
            Object::Address(5),
            "held: the mass-change guard holds this zone".into(),
        ),
        (
            Object::Address(6),
            "held: the mass-change guard holds this zone".into(),
        ),
        (
            Object::Address(7),
            "invalid: dns_name is not a valid name: empty label".into(),
        ),
        (
            Object::PluginRecord(9),
            format!("invalid: {}...", "y".repeat(255 - 3 - "invalid: ".len())),
        ),
    ]
    .into();
    assert_eq!(got, want);
    assert_eq!(got[&Object::PluginRecord(9)].len(), 255);
}

/// A client of `url` with the test NetBox's token.
fn client(url: &str, nb: &NetBox, dir: &std::path::Path) -> NetboxClient {
    let token = HeaderFile::new(&nb.token_file(dir), super::client::scheme).unwrap();
    NetboxClient::new(url, Arc::new(token), None, Duration::from_secs(30)).unwrap()
}

/// Written in bulk to addresses and plugin records alike, only where NetBox differs;
/// an object deleted since it was read is forgotten without failing its neighbours;
/// a NetBox that refuses says so in `problem`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statuses_are_written_where_they_differ_and_a_deleted_object_fails_nothing() {
    let Some(nb) = NetBox::find() else { return };
    nb.status_field().await;
    let run = std::process::id();
    let zone = nb.plugin_zone(&format!("wb{run}.example.com"), None).await;
    let records = nb
        .plugin_records(zone, &[("a", "A", "192.0.2.1"), ("b", "A", "192.0.2.2")])
        .await;
    let net = format!("10.202.{}", run % 200);
    let made = nb
        .ok(
            "POST",
            "/api/ipam/ip-addresses/",
            Some(serde_json::json!([
                {"address": format!("{net}.1/32"), "dns_name": format!("a.wb{run}.example.com")},
                {"address": format!("{net}.2/32"), "dns_name": format!("b.wb{run}.example.com")},
            ])),
        )
        .await;
    let addresses: Vec<u64> = made
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_u64().unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let held: Statuses = Default::default();
    // As the source's read found them: nothing written yet.
    for o in [
        Object::Address(addresses[0]),
        Object::Address(addresses[1]),
        Object::PluginRecord(records[0]),
        Object::PluginRecord(records[1]),
    ] {
        held.lock().unwrap().insert(o, String::new());
    }
    let mut writer = WriteBack::new(client(&nb.url, &nb, dir.path()), held.clone());
    let want: BTreeMap<Object, String> = [
        (Object::Address(addresses[0]), "converged".to_string()),
        (
            Object::Address(addresses[1]),
            "conflict: owned by \"other\"".into(),
        ),
        (Object::PluginRecord(records[0]), "converged".into()),
        // Not read by the source: never written.
        (
            Object::PluginRecord(records[1] + 1_000_000),
            "converged".into(),
        ),
    ]
    .into();
    assert_eq!(writer.round(&want).await, (3, 0));
    assert_eq!(writer.problem, None);
    let field = |v: serde_json::Value| v["custom_fields"]["dnsplane_status"].clone();
    let path = |o: Object| match o {
        Object::Address(id) => format!("/api/ipam/ip-addresses/{id}/"),
        Object::PluginRecord(id) => format!("/api/plugins/netbox-dns/records/{id}/"),
    };
    for (o, text) in want.iter().take(3) {
        assert_eq!(field(nb.ok("GET", &path(*o), None).await), *text, "{o:?}");
    }
    assert_eq!(
        writer.round(&want).await,
        (0, 0),
        "nothing differs: nothing written"
    );

    // An address deleted since it was read: its neighbour is still written.
    nb.ok("DELETE", &path(Object::Address(addresses[1])), None)
        .await;
    let mut want2 = want.clone();
    want2.insert(Object::Address(addresses[0]), "held: the guard".into());
    want2.insert(Object::Address(addresses[1]), "converged".into());
    assert_eq!(writer.round(&want2).await, (2, 0));
    assert_eq!(writer.problem, None);
    assert_eq!(
        field(
            nb.ok("GET", &path(Object::Address(addresses[0])), None)
                .await
        ),
        "held: the guard"
    );
    assert!(
        !held
            .lock()
            .unwrap()
            .contains_key(&Object::Address(addresses[1]))
    );

    // NetBox refuses the token: nothing is noted as written, and status says why.
    let proxy = FaultProxy::start(&nb.url).await;
    proxy.set(Fault::After { n: 0, status: 403 });
    let mut refused = WriteBack::new(client(proxy.url(), &nb, dir.path()), held.clone());
    let mut want3 = want.clone();
    want3.insert(Object::PluginRecord(records[0]), "failed: x".into());
    assert_eq!(
        refused.round(&want3).await,
        (0, 2),
        "two differ, none written"
    );
    assert!(
        refused
            .problem
            .as_deref()
            .is_some_and(|p| p.contains("403")),
        "{:?}",
        refused.problem
    );
    assert_eq!(
        held.lock().unwrap()[&Object::PluginRecord(records[0])],
        "converged"
    );
}
