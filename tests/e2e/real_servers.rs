//! The `pdns` and `rfc2136` drivers against REAL servers (PowerDNS 4.7+ with sqlite,
//! BIND 9), through the `Provider` trait only, checked with the real `dig`.
//!
//! Each test starts its own private server (`dnsplane_e2e::servers`, the harness the
//! full-stack tests share) on free loopback ports and kills it at the end. Without the
//! server binaries a test prints why and passes vacuously, unless
//! `DNSPLANE_REQUIRE_SERVERS=1` (tests/run-all.sh), under which it fails.

use dnsplane_applier::provider::pdns::PdnsProvider;
use dnsplane_applier::provider::rfc2136::Rfc2136Provider;
use dnsplane_applier::provider::{ErrorClass, Provider, ProviderError};
use dnsplane_common::{Name, RRSet, RRSetOp, RecordKey, RecordType};
use dnsplane_e2e::servers::{Bind, PowerDns, dig_binary, dig_sorted as dig};

fn rrset(zone: &Name, name: &str, rtype: RecordType, ttl: u32, values: &[&str]) -> RRSet {
    let name = Name::parse(&format!("{name}.{zone}")).expect("name");
    RRSet::new(RecordKey::new(zone.clone(), name, rtype), ttl, values).expect("rrset")
}

/// The listing as `(name type ttl values)` lines, for readable comparisons.
async fn listing(p: &dyn Provider, zone: &Name) -> Vec<String> {
    let l = p.list(zone, None).await.expect("list");
    let mut lines: Vec<String> = l.rrsets.iter().map(ToString::to_string).collect();
    lines.sort();
    lines
}

async fn get(p: &dyn Provider, k: &RecordKey) -> Option<RRSet> {
    let l = p
        .list(&k.zone, Some(std::slice::from_ref(&k.name)))
        .await
        .expect("list names");
    l.rrsets.into_iter().find(|r| &r.key == k)
}

async fn serial(p: &dyn Provider, zone: &Name) -> u64 {
    p.serial(zone)
        .await
        .expect("serial")
        .expect("this zone has a serial")
}

fn expect_err(r: Result<(), ProviderError>, class: ErrorClass) -> ProviderError {
    let e = r.expect_err("the provider call should fail");
    assert_eq!(e.class, class, "unexpected class for: {e}");
    e
}

/// Create, update, delete through the trait; each step visible to dig, in the listing
/// and in the serial. Shared by both drivers.
async fn round_trip(p: &dyn Provider, zone: &Name, dns_port: u16) {
    let dig_bin = dig_binary();
    let www = rrset(
        zone,
        "www",
        RecordType::A,
        300,
        &["192.0.2.10", "192.0.2.11"],
    );
    let txt = rrset(
        zone,
        "www",
        RecordType::Txt,
        300,
        &["\"v=1\" \"say \\\"hi\\\"\""],
    );
    let mx = rrset(
        zone,
        "mail",
        RecordType::Mx,
        600,
        &["10 mx1.example.net.", "20 mx2.example.net."],
    );
    let srv = rrset(
        zone,
        "_sip._tcp",
        RecordType::Srv,
        60,
        &["0 5 5060 sip.example.net."],
    );
    let caa = rrset(
        zone,
        "caa",
        RecordType::Caa,
        60,
        &["0 issue \"letsencrypt.org\""],
    );
    let six = rrset(zone, "v6", RecordType::Aaaa, 60, &["2001:db8::1"]);
    let alias = rrset(zone, "alias", RecordType::Cname, 60, &["www.example.net."]);

    let s0 = serial(p, zone).await;
    let created = [&www, &txt, &mx, &srv, &caa, &six, &alias];
    let ops: Vec<RRSetOp> = created
        .iter()
        .map(|r| RRSetOp::create((*r).clone()))
        .collect();
    p.apply(zone, &ops).await.expect("create batch");
    let s1 = serial(p, zone).await;
    assert_ne!(s1, s0, "the serial moves after a write");

    // Everything written is listed back exactly, and nothing dnsplane cannot model
    // (SOA) is.
    let listed = p.list(zone, None).await.expect("list");
    for r in created {
        let found = listed.rrsets.iter().find(|x| x.key == r.key);
        assert_eq!(found, Some(r), "listing of {}", r.key);
    }
    assert!(listed.rrsets.iter().all(|r| r.key.name.is_within(zone)));
    assert_eq!(
        listed.serial,
        Some(s1),
        "the listing carries the serial it was read at"
    );
    // A names filter returns only those names.
    let only = p
        .list(zone, Some(std::slice::from_ref(&www.key.name)))
        .await
        .expect("list names");
    let mut keys: Vec<RecordType> = only.rrsets.iter().map(|r| r.key.rtype).collect();
    keys.sort();
    assert_eq!(keys, [RecordType::A, RecordType::Txt]);

    if let Some(d) = &dig_bin {
        let w = www.key.name.as_str();
        assert_eq!(dig(d, dns_port, w, "A"), ["192.0.2.10", "192.0.2.11"]);
        assert_eq!(dig(d, dns_port, w, "TXT"), ["\"v=1\" \"say \\\"hi\\\"\""]);
        assert_eq!(
            dig(d, dns_port, mx.key.name.as_str(), "MX"),
            ["10 mx1.example.net.", "20 mx2.example.net."]
        );
        assert_eq!(
            dig(d, dns_port, srv.key.name.as_str(), "SRV"),
            ["0 5 5060 sip.example.net."]
        );
        assert_eq!(
            dig(d, dns_port, caa.key.name.as_str(), "CAA"),
            ["0 issue \"letsencrypt.org\""]
        );
        assert_eq!(
            dig(d, dns_port, six.key.name.as_str(), "AAAA"),
            ["2001:db8::1"]
        );
        assert_eq!(
            dig(d, dns_port, alias.key.name.as_str(), "CNAME"),
            ["www.example.net."]
        );
    }

    // Update (values and TTL) and delete in one batch.
    let www2 = rrset(zone, "www", RecordType::A, 120, &["192.0.2.12"]);
    p.apply(
        zone,
        &[
            RRSetOp::update(www.clone(), www2.clone()),
            RRSetOp::delete(txt.clone()),
        ],
    )
    .await
    .expect("update + delete batch");
    let s2 = serial(p, zone).await;
    assert_ne!(s2, s1, "the serial moves after every write");
    assert_eq!(get(p, &www.key).await, Some(www2.clone()));
    assert_eq!(get(p, &txt.key).await, None);
    if let Some(d) = &dig_bin {
        assert_eq!(dig(d, dns_port, www.key.name.as_str(), "A"), ["192.0.2.12"]);
        assert!(dig(d, dns_port, www.key.name.as_str(), "TXT").is_empty());
    }

    // An assertion that holds writes nothing and succeeds.
    p.apply(zone, &[RRSetOp::update(www2.clone(), www2.clone())])
        .await
        .expect("assert batch");

    // Delete the rest; the zone is back to what the test found.
    let rest: Vec<RRSetOp> = [&www2, &mx, &srv, &caa, &six, &alias]
        .iter()
        .map(|r| RRSetOp::delete((*r).clone()))
        .collect();
    p.apply(zone, &rest).await.expect("delete batch");
    let after = p.list(zone, None).await.expect("list");
    let before_keys: Vec<&RecordKey> = created.iter().map(|r| &r.key).collect();
    assert!(
        after.rrsets.iter().all(|r| !before_keys.contains(&&r.key)),
        "everything created was deleted: {:?}",
        after.rrsets
    );
    if let Some(d) = &dig_bin {
        assert!(dig(d, dns_port, www.key.name.as_str(), "A").is_empty());
        assert!(dig(d, dns_port, alias.key.name.as_str(), "CNAME").is_empty());
    }
}

/// Failed preconditions give a conflict and leave the whole batch unwritten.
///
/// `names_key`: the driver names the failing record (PowerDNS: from its read; RFC 2136
/// answers one RCODE for the whole message, so the batch algorithm reads back).
async fn conflicts_are_atomic(
    p: &dyn Provider,
    zone: &Name,
    taken: &RRSet,
    dns_port: u16,
    names_key: bool,
) {
    let fresh = rrset(zone, "fresh", RecordType::A, 60, &["192.0.2.50"]);
    let fresh_txt = rrset(zone, "fresh", RecordType::Txt, 60, &["owner=dnsplane"]);
    let mine = rrset(zone, "taken", RecordType::A, 60, &["192.0.2.99"]);
    let s0 = serial(p, zone).await;
    let before = listing(p, zone).await;

    // Create over a record someone else made.
    let e = expect_err(
        p.apply(
            zone,
            &[
                RRSetOp::create(fresh.clone()),
                RRSetOp::create(mine.clone()),
                RRSetOp::create(fresh_txt.clone()),
            ],
        )
        .await,
        ErrorClass::Conflict,
    );
    if names_key {
        assert_eq!(
            e.key.as_ref(),
            Some(&taken.key),
            "the conflict names the record: {e}"
        );
    }
    // Update and delete from a stale value.
    let stale = rrset(zone, "taken", RecordType::A, 60, &["192.0.2.98"]);
    expect_err(
        p.apply(
            zone,
            &[
                RRSetOp::create(fresh.clone()),
                RRSetOp::update(stale.clone(), mine.clone()),
            ],
        )
        .await,
        ErrorClass::Conflict,
    );
    expect_err(
        p.apply(
            zone,
            &[RRSetOp::delete(stale), RRSetOp::create(fresh.clone())],
        )
        .await,
        ErrorClass::Conflict,
    );
    // Update of something that is not there.
    let ghost = rrset(zone, "ghost", RecordType::A, 60, &["192.0.2.1"]);
    let ghost2 = rrset(zone, "ghost", RecordType::A, 60, &["192.0.2.2"]);
    expect_err(
        p.apply(
            zone,
            &[
                RRSetOp::create(fresh.clone()),
                RRSetOp::update(ghost.clone(), ghost2),
            ],
        )
        .await,
        ErrorClass::Conflict,
    );
    // An assertion that fails blocks its batch too.
    expect_err(
        p.apply(
            zone,
            &[
                RRSetOp::create(fresh.clone()),
                RRSetOp::update(ghost.clone(), ghost.clone()),
            ],
        )
        .await,
        ErrorClass::Conflict,
    );
    // A CNAME beside existing data is a conflict (and BIND would otherwise drop it
    // silently), the batch again all-or-nothing.
    let clash = RRSet::new(
        RecordKey::new(zone.clone(), taken.key.name.clone(), RecordType::Cname),
        60,
        &["x.example.net."],
    )
    .expect("rrset");
    let e = expect_err(
        p.apply(
            zone,
            &[
                RRSetOp::create(fresh.clone()),
                RRSetOp::create(clash.clone()),
            ],
        )
        .await,
        ErrorClass::Conflict,
    );
    if names_key {
        assert_eq!(e.key.as_ref(), Some(&clash.key), "{e}");
    }

    // Nothing of any of those batches was written.
    assert_eq!(
        listing(p, zone).await,
        before,
        "failed batches change nothing"
    );
    assert_eq!(serial(p, zone).await, s0, "no write happened");
    assert_eq!(get(p, &taken.key).await.as_ref(), Some(taken));
    if let Some(d) = dig_binary() {
        assert!(dig(&d, dns_port, fresh.key.name.as_str(), "A").is_empty());
        assert!(dig(&d, dns_port, taken.key.name.as_str(), "CNAME").is_empty());
        assert_eq!(
            dig(&d, dns_port, taken.key.name.as_str(), "A"),
            taken.values_vec()
        );
    }

    // With the right precondition the same change goes through.
    p.apply(
        zone,
        &[
            RRSetOp::create(fresh.clone()),
            RRSetOp::update(taken.clone(), mine.clone()),
        ],
    )
    .await
    .expect("batch with true preconditions");
    assert_eq!(get(p, &mine.key).await, Some(mine));
    assert_eq!(get(p, &fresh.key).await, Some(fresh));
}

// ---------------------------------------------------------------------------------
// PowerDNS

#[tokio::test]
async fn pdns_create_update_delete_round_trip() {
    let Some(srv) = PowerDns::start() else { return };
    let p = PdnsProvider::new(&srv.config()).expect("provider");
    assert_eq!(
        p.zones().await.expect("zones"),
        std::slice::from_ref(&srv.zone)
    );
    round_trip(&p, &srv.zone, srv.dns_port).await;

    // A zone made without the API has no SOA-EDIT-API: its serial does not count API
    // writes, so the driver offers no serial rather than one that never moves.
    srv.pdnsutil(&["create-zone", "manual.test", "ns1.manual.test"]);
    let manual = Name::parse("manual.test").expect("name");
    let mut zones = p.zones().await.expect("zones");
    zones.sort();
    assert_eq!(zones, [manual.clone(), srv.zone.clone()]);
    assert_eq!(p.serial(&manual).await.expect("serial"), None);
    assert_eq!(p.list(&manual, None).await.expect("list").serial, None);
    // What docs/providers.md tells users of such zones: give them SOA-EDIT-API.
    srv.pdnsutil(&["set-meta", "manual.test", "SOA-EDIT-API", "DEFAULT"]);
    let s0 = serial(&p, &manual).await;
    let r = RRSet::new(
        RecordKey::new(
            manual.clone(),
            manual.prepend("www").expect("name"),
            RecordType::A,
        ),
        60,
        &["192.0.2.1"],
    )
    .expect("rrset");
    p.apply(&manual, &[RRSetOp::create(r)])
        .await
        .expect("write");
    assert!(
        serial(&p, &manual).await > s0,
        "API writes now move the serial"
    );
}

/// A classless reverse zone (RFC 2317 §4: `0/25.2.0.192.in-addr.arpa`), which
/// PowerDNS serves under the id `0=2F25…`: dnsplane lists, writes and deletes a PTR in
/// it, and `dig` answers it. (octoDNS's Route 53 fixtures hold such a zone; dnsplane
/// refused the `/` until applier/tests/integration/recorded.)
#[tokio::test]
async fn pdns_classless_reverse_zone_round_trip() {
    let Some(srv) = PowerDns::start() else { return };
    let p = PdnsProvider::new(&srv.config()).expect("provider");
    // Through the API, so that the server's zone cache knows it at once.
    let (status, body) = srv.api(
        "POST",
        "/api/v1/servers/localhost/zones",
        r#"{"name":"0/25.2.0.192.in-addr.arpa.","kind":"Native","nameservers":["ns1.pdns.test."],"soa_edit_api":"DEFAULT"}"#,
    );
    assert_eq!(status, 201, "{body}");
    let zone = Name::parse("0/25.2.0.192.in-addr.arpa").expect("name");
    assert!(p.zones().await.expect("zones").contains(&zone));
    let ptr = rrset(&zone, "1", RecordType::Ptr, 300, &["host1.example.com."]);
    p.apply(&zone, &[RRSetOp::create(ptr.clone())])
        .await
        .expect("create");
    let ns = "0/25.2.0.192.in-addr.arpa. 3600 NS ns1.pdns.test.".to_string();
    // PowerDNS's id for the zone escapes the `/`.
    assert!(
        body.contains(r#""id": "0=2F25.2.0.192.in-addr.arpa.""#),
        "{body}"
    );
    assert_eq!(listing(&p, &zone).await, [ns.clone(), ptr.to_string()]);
    assert_eq!(get(&p, &ptr.key).await, Some(ptr.clone()));
    if let Some(d) = dig_binary() {
        assert_eq!(
            dig(&d, srv.dns_port, "1.0/25.2.0.192.in-addr.arpa", "PTR"),
            ["host1.example.com."]
        );
    }
    p.apply(&zone, &[RRSetOp::delete(ptr)])
        .await
        .expect("delete");
    assert_eq!(listing(&p, &zone).await, [ns]);
}

#[tokio::test]
async fn pdns_failed_precondition_is_a_conflict_and_writes_nothing() {
    let Some(srv) = PowerDns::start() else { return };
    let p = PdnsProvider::new(&srv.config()).expect("provider");
    let zone = &srv.zone;
    // Out of band, straight into the database.
    srv.pdnsutil(&["add-record", "pdns.test", "taken", "A", "60", "192.0.2.7"]);
    let taken = rrset(zone, "taken", RecordType::A, 60, &["192.0.2.7"]);
    conflicts_are_atomic(&p, zone, &taken, srv.dns_port, true).await;
}

#[tokio::test]
async fn pdns_rejected_values_are_invalid_and_roll_back() {
    let Some(srv) = PowerDns::start() else { return };
    let p = PdnsProvider::new(&srv.config()).expect("provider");
    let zone = &srv.zone;
    let s0 = serial(&p, zone).await;

    // dnsplane's model allows '_' in host names; PowerDNS refuses it as an MX target.
    let ok = rrset(zone, "ok", RecordType::A, 60, &["192.0.2.1"]);
    let mx = rrset(zone, "mx", RecordType::Mx, 60, &["10 _mail.example.net."]);
    let e = expect_err(
        p.apply(
            zone,
            &[RRSetOp::create(ok.clone()), RRSetOp::create(mx.clone())],
        )
        .await,
        ErrorClass::Invalid,
    );
    assert_eq!(
        e.key.as_ref(),
        Some(&mx.key),
        "PowerDNS names the RRSet: {e}"
    );
    assert!(
        e.message.contains("422") && e.message.contains("non-hostname"),
        "{e}"
    );
    assert_eq!(get(&p, &ok.key).await, None, "the PATCH rolled back whole");

    // A type PowerDNS has and dnsplane does not model sits at a name; a CNAME there is
    // refused by PowerDNS (422 "Conflicts with pre-existing RRset"): a conflict with
    // the zone, not a bad value. And the listing never shows that type.
    srv.pdnsutil(&[
        "add-record",
        "pdns.test",
        "host",
        "HINFO",
        "60",
        "\"pc\" \"linux\"",
    ]);
    let listed = p.list(zone, None).await.expect("list");
    assert!(
        listed
            .rrsets
            .iter()
            .all(|r| r.key.name.first_label() != "host"),
        "HINFO is not listed: {:?}",
        listed.rrsets
    );
    assert!(
        listed
            .rrsets
            .iter()
            .all(|r| r.key.name != *zone || r.key.rtype == RecordType::Ns)
    );
    let cname = rrset(zone, "host", RecordType::Cname, 60, &["ok.pdns.test."]);
    let e = expect_err(
        p.apply(
            zone,
            &[RRSetOp::create(ok.clone()), RRSetOp::create(cname.clone())],
        )
        .await,
        ErrorClass::Conflict,
    );
    assert_eq!(e.key.as_ref(), Some(&cname.key), "{e}");
    assert!(
        e.message.contains("Conflicts with pre-existing RRset"),
        "{e}"
    );
    assert_eq!(get(&p, &ok.key).await, None);
    assert_eq!(serial(&p, zone).await, s0, "nothing committed");
}

#[tokio::test]
async fn pdns_bad_credentials_and_missing_zones_are_permanent() {
    let Some(srv) = PowerDns::start() else { return };
    let zone = &srv.zone;
    let bad = PdnsProvider::new(&srv.config_with_key("not-the-key")).expect("provider");
    let a = rrset(zone, "a", RecordType::A, 60, &["192.0.2.1"]);
    for e in [
        bad.zones().await.map(drop).expect_err("zones"),
        bad.list(zone, None).await.map(drop).expect_err("list"),
        bad.serial(zone).await.map(drop).expect_err("serial"),
        bad.apply(zone, &[RRSetOp::create(a.clone())])
            .await
            .expect_err("apply"),
    ] {
        assert_eq!(e.class, ErrorClass::Permanent, "{e}");
        assert!(e.message.contains("401"), "{e}");
        assert!(
            !e.message.contains("not-the-key"),
            "the key never shows: {e}"
        );
    }
    assert!(!format!("{bad:?}").contains("not-the-key"));

    let good = PdnsProvider::new(&srv.config()).expect("provider");
    let other = Name::parse("absent.test").expect("name");
    let b = RRSet::new(
        RecordKey::new(
            other.clone(),
            other.prepend("a").expect("name"),
            RecordType::A,
        ),
        60,
        &["192.0.2.1"],
    )
    .expect("rrset");
    let e = expect_err(
        good.apply(&other, &[RRSetOp::create(b)]).await,
        ErrorClass::Permanent,
    );
    assert!(e.message.contains("absent.test."), "{e}");

    // Nothing listening: known not to have been sent, so worth retrying.
    let port = dnsplane_e2e::free_port();
    let down = PdnsProvider::new(&dnsplane_applier::provider::pdns::PdnsConfig {
        api_url: format!("http://127.0.0.1:{port}"),
        ..srv.config()
    })
    .expect("provider");
    expect_err(
        down.apply(zone, &[RRSetOp::create(a)]).await,
        ErrorClass::Transient,
    );
}

// ---------------------------------------------------------------------------------
// BIND (RFC 2136 + TSIG)

#[tokio::test]
async fn rfc2136_create_update_delete_round_trip() {
    let Some(srv) = Bind::start() else { return };
    let p = Rfc2136Provider::new(&srv.config(), &srv.zones()).expect("provider");
    assert_eq!(
        p.zones().await.expect("zones"),
        std::slice::from_ref(&srv.zone)
    );
    round_trip(&p, &srv.zone, srv.port).await;

    // A batch of a few hundred RRSets goes as one message (TCP) and lists back.
    let zone = &srv.zone;
    let many: Vec<RRSet> = (0..300)
        .map(|i| {
            rrset(
                zone,
                &format!("h{i}"),
                RecordType::A,
                60,
                &[&format!("198.51.100.{}", i % 250 + 1)],
            )
        })
        .collect();
    let ops: Vec<RRSetOp> = many.iter().cloned().map(RRSetOp::create).collect();
    p.apply(zone, &ops).await.expect("300-RRSet batch");
    let listed = p.list(zone, None).await.expect("list");
    for r in &many {
        assert!(listed.rrsets.contains(r), "{} listed", r.key);
    }

    // Without AXFR, a names-filtered listing is answered by plain queries and agrees
    // with the transfer; a full listing is refused as a configuration problem.
    let no_axfr = Rfc2136Provider::new(
        &dnsplane_applier::provider::rfc2136::Rfc2136Config {
            axfr: false,
            ..srv.config()
        },
        &srv.zones(),
    )
    .expect("provider");
    let names: Vec<Name> = many[..3].iter().map(|r| r.key.name.clone()).collect();
    let by_query = no_axfr
        .list(zone, Some(&names))
        .await
        .expect("list by query");
    let by_axfr = p.list(zone, Some(&names)).await.expect("list by AXFR");
    assert_eq!(by_query.rrsets, by_axfr.rrsets);
    assert_eq!(by_query.rrsets, many[..3].to_vec());
    let e = no_axfr
        .list(zone, None)
        .await
        .expect_err("full listing without AXFR");
    assert_eq!(e.class, ErrorClass::Permanent, "{e}");
}

#[tokio::test]
async fn rfc2136_failed_precondition_is_a_conflict_and_writes_nothing() {
    let Some(srv) = Bind::start() else { return };
    let p = Rfc2136Provider::new(&srv.config(), &srv.zones()).expect("provider");
    let zone = &srv.zone;
    // Out of band, with nsupdate.
    let taken = rrset(zone, "taken", RecordType::A, 60, &["192.0.2.7"]);
    let out = srv.nsupdate(&format!("update add {} 60 A 192.0.2.7", taken.key.name));
    assert!(
        out.status.success(),
        "nsupdate: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    conflicts_are_atomic(&p, zone, &taken, srv.port, false).await;
}

#[tokio::test]
async fn rfc2136_records_the_server_refuses_are_invalid_not_permanent() {
    let Some(srv) = Bind::start() else { return };
    let p = Rfc2136Provider::new(&srv.config(), &srv.zones()).expect("provider");
    let zone = &srv.zone;
    let s0 = serial(&p, zone).await;
    // dnsplane's model allows '_' in host names; BIND's check-names REFUSES it in an MX
    // target or an A record's owner. That concerns these records, not the account.
    let ok = rrset(zone, "ok", RecordType::A, 60, &["192.0.2.1"]);
    for bad in [
        rrset(zone, "mx", RecordType::Mx, 60, &["10 _mail.example.net."]),
        rrset(zone, "bad_host", RecordType::A, 60, &["192.0.2.2"]),
    ] {
        let e = expect_err(
            p.apply(
                zone,
                &[RRSetOp::create(ok.clone()), RRSetOp::create(bad.clone())],
            )
            .await,
            ErrorClass::Invalid,
        );
        assert!(
            e.message.contains("REFUSED") && e.message.contains("check-names"),
            "{e}"
        );
        assert_eq!(get(&p, &bad.key).await, None);
    }
    assert_eq!(
        get(&p, &ok.key).await,
        None,
        "the UPDATE was all-or-nothing"
    );
    assert_eq!(
        serial(&p, zone).await,
        s0,
        "refused UPDATEs and the no-op probe change nothing"
    );
    // The account still works.
    p.apply(zone, &[RRSetOp::create(ok.clone())])
        .await
        .expect("a good record");
    assert_eq!(get(&p, &ok.key).await, Some(ok));
}

#[tokio::test]
async fn rfc2136_wrong_tsig_key_is_permanent() {
    let Some(srv) = Bind::start() else { return };
    let zone = &srv.zone;
    let a = rrset(zone, "a", RecordType::A, 60, &["192.0.2.1"]);
    let good = Rfc2136Provider::new(&srv.config(), &srv.zones()).expect("provider");
    let s0 = serial(&good, zone).await;

    // Same key name, other secret (BADSIG); unknown key name (BADKEY).
    for cfg in [
        srv.config_with_key(&srv.key_name),
        srv.config_with_key("someone-else"),
    ] {
        let secret =
            std::fs::read_to_string(cfg.tsig_secret_file.as_ref().expect("file")).expect("key");
        let bad = Rfc2136Provider::new(&cfg, &srv.zones()).expect("provider");
        let e = expect_err(
            bad.apply(zone, &[RRSetOp::create(a.clone())]).await,
            ErrorClass::Permanent,
        );
        let listed = bad.list(zone, None).await.expect_err("AXFR with a bad key");
        assert_eq!(listed.class, ErrorClass::Permanent, "{listed}");
        for text in [e.to_string(), listed.to_string(), format!("{bad:?}")] {
            let b64 = secret.split('"').nth(3).expect("secret in key file");
            assert!(!text.contains(b64), "the secret never shows: {text}");
        }
    }
    assert_eq!(get(&good, &a.key).await, None);
    assert_eq!(serial(&good, zone).await, s0);

    // A zone the server does not serve: NOTAUTH.
    let mut zones = srv.zones();
    let other = Name::parse("elsewhere.test").expect("name");
    zones.push(other.clone());
    let p = Rfc2136Provider::new(&srv.config(), &zones).expect("provider");
    let b = RRSet::new(
        RecordKey::new(
            other.clone(),
            other.prepend("a").expect("name"),
            RecordType::A,
        ),
        60,
        &["192.0.2.1"],
    )
    .expect("rrset");
    let e = expect_err(
        p.apply(&other, &[RRSetOp::create(b)]).await,
        ErrorClass::Permanent,
    );
    assert!(
        e.message.contains("NOTAUTH")
            || e.message.contains("Not Authorized")
            || e.message.contains("TSIG"),
        "{e}"
    );

    // Nothing listening: nothing was sent.
    let port = dnsplane_e2e::free_port();
    let down = Rfc2136Provider::new(
        &dnsplane_applier::provider::rfc2136::Rfc2136Config {
            server: format!("127.0.0.1:{port}"),
            ..srv.config()
        },
        &srv.zones(),
    )
    .expect("provider");
    expect_err(
        down.apply(zone, &[RRSetOp::create(a)]).await,
        ErrorClass::Transient,
    );
}

/// A zone of 20,000 RRSets lists back complete, every time: the transfer is many
/// TCP messages, and none may be lost however fast the server sends them.
#[tokio::test]
async fn rfc2136_large_zone_transfers_are_complete() {
    let Some(srv) = Bind::start() else { return };
    let p = Rfc2136Provider::new(&srv.config(), &srv.zones()).expect("provider");
    let zone = &srv.zone;
    let before = p.list(zone, None).await.expect("list").rrsets.len();
    let many: Vec<RRSet> = (0..20_000)
        .map(|i| {
            rrset(
                zone,
                &format!("bulk{i}"),
                RecordType::Txt,
                60,
                &[&format!("\"record number {i} of a large zone\"")],
            )
        })
        .collect();
    for chunk in many.chunks(250) {
        let ops: Vec<RRSetOp> = chunk.iter().cloned().map(RRSetOp::create).collect();
        p.apply(zone, &ops).await.expect("create batch");
    }
    for _ in 0..3 {
        let listed = p.list(zone, None).await.expect("list");
        assert_eq!(
            listed.rrsets.len(),
            before + many.len(),
            "every RRSet listed"
        );
        let names: std::collections::BTreeSet<&RecordKey> =
            listed.rrsets.iter().map(|r| &r.key).collect();
        assert!(many.iter().all(|r| names.contains(&r.key)));
    }
}
