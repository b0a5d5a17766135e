use super::*;
use dnsplane_common::{RRSetOp, RecordKey};
use hickory_proto::op::Query;

fn zone() -> Name {
    Name::parse("example.com").unwrap()
}

fn rrset(name: &str, t: RecordType, values: &[&str]) -> RRSet {
    RRSet::new(
        RecordKey::new(zone(), Name::parse(name).unwrap(), t),
        300,
        values,
    )
    .unwrap()
}

fn authority(dir: &std::path::Path) -> Authority {
    let store = Arc::new(MemoryStore::open(dir).unwrap());
    store.ensure_zones(&[zone()]).unwrap();
    let ops: Vec<RRSetOp> = [
        rrset("example.com", RecordType::Ns, &["ns1.example.com"]),
        rrset("example.com", RecordType::Mx, &["10 mail.example.com"]),
        rrset(
            "www.example.com",
            RecordType::A,
            &["192.0.2.1", "192.0.2.2"],
        ),
        rrset("www.example.com", RecordType::Aaaa, &["2001:db8::1"]),
        rrset("alias.example.com", RecordType::Cname, &["www.example.com"]),
        rrset(
            "out.example.com",
            RecordType::Cname,
            &["target.example.net"],
        ),
        rrset("txt.example.com", RecordType::Txt, &["\"hello\" \"world\""]),
        rrset(
            "_sip._tcp.example.com",
            RecordType::Srv,
            &["0 5 5060 sip.example.com"],
        ),
        rrset(
            "example.com",
            RecordType::Caa,
            &["0 issue \"letsencrypt.org\"", "128 tbs \"x\""],
        ),
        rrset("deep.ent.example.com", RecordType::A, &["192.0.2.3"]),
        rrset("*.apps.example.com", RecordType::A, &["192.0.2.4"]),
        rrset("sub.example.com", RecordType::Ns, &["ns.sub.example.com"]),
        rrset(
            "big.example.com",
            RecordType::Txt,
            &(0..30)
                .map(|i| format!("value number {i:03}"))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        ),
    ]
    .into_iter()
    .map(RRSetOp::create)
    .collect();
    store.apply(&zone(), &ops).unwrap();
    Authority::new(store, &[zone()])
}

fn query(name: &str, t: rr::RecordType) -> Message {
    let mut m = Message::query();
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(rr::Name::from_ascii(name).unwrap(), t));
    m
}

fn ask(a: &Authority, q: &Message, t: Transport) -> Message {
    let bytes = a.respond(&q.to_vec().unwrap(), t).unwrap();
    let m = Message::from_vec(&bytes).unwrap();
    assert_eq!(m.metadata.id, q.metadata.id);
    m
}

fn data(records: &[Record]) -> Vec<String> {
    let mut v: Vec<String> = records
        .iter()
        .map(|r| format!("{} {} {}", r.name, r.record_type(), r.data))
        .collect();
    v.sort();
    v
}

#[test]
fn answers_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let a = authority(dir.path());
    let m = ask(
        &a,
        &query("WWW.example.com.", rr::RecordType::A),
        Transport::Udp,
    );
    assert!(m.metadata.authoritative);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(
        data(&m.answers),
        vec![
            "www.example.com. A 192.0.2.1",
            "www.example.com. A 192.0.2.2"
        ]
    );
    for (name, t, want) in [
        ("www.example.com.", rr::RecordType::AAAA, "2001:db8::1"),
        ("example.com.", rr::RecordType::MX, "10 mail.example.com."),
        ("example.com.", rr::RecordType::NS, "ns1.example.com."),
        (
            "_sip._tcp.example.com.",
            rr::RecordType::SRV,
            "0 5 5060 sip.example.com.",
        ),
        ("txt.example.com.", rr::RecordType::TXT, "hello"),
        ("example.com.", rr::RecordType::CAA, "letsencrypt.org"),
        ("x.apps.example.com.", rr::RecordType::A, "192.0.2.4"),
    ] {
        let m = ask(&a, &query(name, t), Transport::Udp);
        assert_eq!(
            m.metadata.response_code,
            ResponseCode::NoError,
            "{name} {t}"
        );
        let got = data(&m.answers).join("\n");
        assert!(got.contains(want), "{name} {t}: {got}");
    }
    // The wildcard answer is owned by the query name.
    let m = ask(
        &a,
        &query("x.apps.example.com.", rr::RecordType::A),
        Transport::Udp,
    );
    assert_eq!(m.answers[0].name.to_ascii(), "x.apps.example.com.");
}

#[test]
fn cnames_are_followed_inside_the_zone() {
    let dir = tempfile::tempdir().unwrap();
    let a = authority(dir.path());
    let m = ask(
        &a,
        &query("alias.example.com.", rr::RecordType::A),
        Transport::Udp,
    );
    assert_eq!(
        data(&m.answers),
        vec![
            "alias.example.com. CNAME www.example.com.",
            "www.example.com. A 192.0.2.1",
            "www.example.com. A 192.0.2.2",
        ]
    );
    let m = ask(
        &a,
        &query("out.example.com.", rr::RecordType::A),
        Transport::Udp,
    );
    assert_eq!(
        data(&m.answers),
        vec!["out.example.com. CNAME target.example.net."]
    );
    let m = ask(
        &a,
        &query("alias.example.com.", rr::RecordType::CNAME),
        Transport::Udp,
    );
    assert_eq!(m.answers.len(), 1);
}

#[test]
fn negative_answers_carry_the_soa() {
    let dir = tempfile::tempdir().unwrap();
    let a = authority(dir.path());
    let serial = a.store.serial(&zone()).unwrap();
    let soa_serial = |m: &Message| match &m.authorities[0].data {
        rr::RData::SOA(s) => u64::from(s.serial),
        other => panic!("{other:?}"),
    };
    let m = ask(
        &a,
        &query("nope.example.com.", rr::RecordType::A),
        Transport::Udp,
    );
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    assert!(m.answers.is_empty());
    assert_eq!(soa_serial(&m), serial);
    // NODATA: the name exists, the type does not; also for an empty non-terminal.
    for name in ["www.example.com.", "ent.example.com."] {
        let m = ask(&a, &query(name, rr::RecordType::TXT), Transport::Udp);
        assert_eq!(m.metadata.response_code, ResponseCode::NoError, "{name}");
        assert!(m.answers.is_empty());
        assert_eq!(soa_serial(&m), serial);
    }
    let m = ask(
        &a,
        &query("example.com.", rr::RecordType::SOA),
        Transport::Udp,
    );
    assert!(matches!(&m.answers[0].data, rr::RData::SOA(s) if u64::from(s.serial) == serial));
}

#[test]
fn refuses_outside_and_refers_below_delegations() {
    let dir = tempfile::tempdir().unwrap();
    let a = authority(dir.path());
    let m = ask(
        &a,
        &query("example.org.", rr::RecordType::A),
        Transport::Udp,
    );
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
    assert!(!m.metadata.authoritative);
    let m = ask(
        &a,
        &query("host.sub.example.com.", rr::RecordType::A),
        Transport::Udp,
    );
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert!(!m.metadata.authoritative);
    assert_eq!(
        data(&m.authorities),
        vec!["sub.example.com. NS ns.sub.example.com."]
    );
}

#[test]
fn large_udp_answers_are_truncated_unless_edns_allows_them() {
    let dir = tempfile::tempdir().unwrap();
    let a = authority(dir.path());
    let q = query("big.example.com.", rr::RecordType::TXT);
    let m = ask(&a, &q, Transport::Udp);
    assert!(m.metadata.truncation);
    assert!(m.answers.is_empty());
    let mut q = q;
    let mut edns = Edns::new();
    edns.set_max_payload(4096);
    q.set_edns(edns);
    let m = ask(&a, &q, Transport::Udp);
    assert!(!m.metadata.truncation);
    assert_eq!(m.answers.len(), 30);
    assert!(m.edns.is_some());
    // Over TCP the whole answer fits.
    let m = ask(
        &a,
        &query("big.example.com.", rr::RecordType::TXT),
        Transport::Tcp,
    );
    assert!(!m.metadata.truncation);
}

#[test]
fn an_empty_zone_answers_its_apex() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::open(dir.path()).unwrap());
    store.ensure_zones(&[zone()]).unwrap();
    let a = Authority::new(store, &[zone()]);
    let m = ask(
        &a,
        &query("example.com.", rr::RecordType::SOA),
        Transport::Udp,
    );
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(m.answers.len(), 1);
    for t in [rr::RecordType::NS, rr::RecordType::A] {
        let m = ask(&a, &query("example.com.", t), Transport::Udp);
        assert_eq!(m.metadata.response_code, ResponseCode::NoError, "{t}");
        assert!(
            m.answers.is_empty() && m.authorities.len() == 1,
            "{t}: NODATA with the SOA"
        );
    }
    let m = ask(
        &a,
        &query("a.b.example.com.", rr::RecordType::A),
        Transport::Udp,
    );
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
}

#[test]
fn every_canonical_value_converts() {
    for (t, v) in [
        (RecordType::A, "192.0.2.1"),
        (RecordType::Aaaa, "2001:db8::1"),
        (RecordType::Cname, "x.example.com."),
        (RecordType::Txt, "\"a\" \"b\\\"c\""),
        (RecordType::Mx, "10 mx.example.com."),
        (RecordType::Srv, "1 2 3 t.example.com."),
        (RecordType::Ns, "ns.example.com."),
        (RecordType::Caa, "0 issuewild \";\""),
        (RecordType::Caa, "0 iodef \"mailto:a@example.com\""),
    ] {
        let d = to_rdata(t, v).unwrap_or_else(|| panic!("{t} {v}"));
        assert_eq!(d.record_type().to_string(), t.as_str());
    }
}

#[test]
fn any_gets_one_rrset_as_rfc_8482_allows() {
    let dir = tempfile::tempdir().unwrap();
    let a = authority(dir.path());
    let any = |name: &str| {
        let m = ask(&a, &query(name, rr::RecordType::ANY), Transport::Udp);
        assert_eq!(m.metadata.response_code, ResponseCode::NoError, "{name}");
        data(&m.answers)
    };
    // www holds A and AAAA: the A (type 1) alone.
    assert_eq!(
        any("www.example.com."),
        vec![
            "www.example.com. A 192.0.2.1",
            "www.example.com. A 192.0.2.2"
        ]
    );
    // The apex holds NS (2), SOA (6), MX (15), CAA (257): the NS alone.
    assert_eq!(
        any("example.com."),
        vec!["example.com. NS ns1.example.com."]
    );
    // A CNAME is alone at its name; it is not followed.
    assert_eq!(
        any("alias.example.com."),
        vec!["alias.example.com. CNAME www.example.com."]
    );
    // Through a wildcard, owned by the query name.
    assert_eq!(
        any("x.apps.example.com."),
        vec!["x.apps.example.com. A 192.0.2.4"]
    );
    // An empty non-terminal: NODATA with the SOA.
    let m = ask(
        &a,
        &query("ent.example.com.", rr::RecordType::ANY),
        Transport::Udp,
    );
    assert!(m.answers.is_empty() && m.authorities.len() == 1);
    // A name that does not exist.
    let m = ask(
        &a,
        &query("nope.example.com.", rr::RecordType::ANY),
        Transport::Udp,
    );
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
}

#[test]
fn an_empty_apex_answers_any_with_its_soa() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::open(dir.path()).unwrap());
    store.ensure_zones(&[zone()]).unwrap();
    let a = Authority::new(store, &[zone()]);
    let m = ask(
        &a,
        &query("example.com.", rr::RecordType::ANY),
        Transport::Udp,
    );
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.answers[0].record_type(), rr::RecordType::SOA);
}

#[test]
fn a_slipped_answer_is_empty_and_truncated() {
    let q = query("www.example.com.", rr::RecordType::A);
    let bytes = Authority::truncated(&q.to_vec().unwrap()).unwrap();
    let m = Message::from_vec(&bytes).unwrap();
    assert_eq!(m.metadata.id, q.metadata.id);
    assert!(m.metadata.truncation);
    assert_eq!(m.metadata.message_type, MessageType::Response);
    assert!(m.answers.is_empty());
    assert_eq!(m.queries.len(), 1);
}

/// The largest set the planner's size check accepts (240 TXT records, the last one
/// sized so that the answer is exactly the check's limit) is served whole over TCP,
/// with every owner name compressed and the OPT record the check counts: the answer
/// is exactly as long as the check says (hickory alone stops compressing after 120
/// names, so the reported set came back 239 of 240 with TC set).
#[test]
fn the_largest_set_the_size_check_accepts_is_served_whole_over_tcp() {
    let name = Name::parse("t.example.com").unwrap();
    let canonical = |v: &str| dnsplane_common::rdata::canonicalize(RecordType::Txt, v).unwrap();
    let mut values: Vec<String> = (0..239)
        .map(|i| canonical(&format!("{i:03}{}", "v".repeat(254))))
        .collect();
    // The last value grows until the set no longer passes the check.
    let fits = |values: &[String], len: usize| {
        let mut all = values.to_vec();
        all.push(canonical(&"w".repeat(len)));
        dnsplane_common::wire::check_answer(&name, RecordType::Txt, &all).is_ok()
    };
    let last = (1..65_535)
        .take_while(|&len| fits(&values, len))
        .last()
        .unwrap();
    values.push(canonical(&"w".repeat(last)));
    let set = RRSet::new(
        RecordKey::new(zone(), name.clone(), RecordType::Txt),
        300,
        &values,
    )
    .expect("the size check accepts the set");
    assert_eq!(set.values().count(), 240);
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::open(dir.path()).unwrap());
    store.ensure_zones(&[zone()]).unwrap();
    store
        .apply(&zone(), &[RRSetOp::create(set.clone())])
        .unwrap();
    let a = Authority::new(store, &[zone()]);

    let mut q = query("t.example.com.", rr::RecordType::TXT);
    q.set_edns(Edns::new());
    let bytes = a.respond(&q.to_vec().unwrap(), Transport::Tcp).unwrap();
    let m = Message::from_vec(&bytes).unwrap();
    assert!(!m.metadata.truncation, "TC set: {} octets", bytes.len());
    assert_eq!(m.answers.len(), 240);
    // Every owner name a pointer to the question: the check's size less the one owner
    // it counts in full (t.example.com. is 15 octets, a pointer 2).
    let len = dnsplane_common::wire::answer_len(&name, RecordType::Txt, &set.values_vec());
    assert_eq!(bytes.len(), len - 13, "the server and the size check agree");
    // Asked in another case (as resolvers that randomise it do), the owners keep the
    // store's case: the first is written once, the others point at it; exactly the
    // check's size.
    let mut q = query("T.eXample.COM.", rr::RecordType::TXT);
    q.set_edns(Edns::new());
    let mixed = a.respond(&q.to_vec().unwrap(), Transport::Tcp).unwrap();
    assert_eq!(mixed.len(), len);
    let m = Message::from_vec(&mixed).unwrap();
    assert!(!m.metadata.truncation);
    assert_eq!(m.answers.len(), 240);
    assert_eq!(m.answers[0].name.to_ascii(), "t.example.com.");
}

/// Names are compressed wherever they repeat, owner names and names inside the data
/// alike, however many there are: 300 MX records at distinct names below one zone.
#[test]
fn every_name_is_compressed_past_hickorys_limits() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::open(dir.path()).unwrap());
    store.ensure_zones(&[zone()]).unwrap();
    let targets: Vec<String> = (0..300).map(|i| format!("10 mx{i}.example.com")).collect();
    let targets: Vec<&str> = targets.iter().map(String::as_str).collect();
    store
        .apply(
            &zone(),
            &[RRSetOp::create(rrset(
                "example.com",
                RecordType::Mx,
                &targets,
            ))],
        )
        .unwrap();
    let a = Authority::new(store, &[zone()]);
    let q = query("example.com.", rr::RecordType::MX);
    let bytes = a.respond(&q.to_vec().unwrap(), Transport::Tcp).unwrap();
    let m = Message::from_vec(&bytes).unwrap();
    assert_eq!(m.answers.len(), 300);
    // Each record: owner pointer 2, type/class/TTL/length 10, preference 2, and its
    // target as one label plus a pointer to "example.com." (1 + len + 2).
    let labels: usize = (0..300).map(|i| format!("mx{i}").len() + 3).sum();
    assert_eq!(bytes.len(), 12 + (13 + 4) + 300 * 14 + labels);
}

/// A classless reverse zone (RFC 2317 §4): its `/` goes out and comes back as an octet
/// of the label, so a query for `1.0/25.2.0.192.in-addr.arpa` finds the PTR.
#[test]
fn answers_in_a_classless_reverse_zone() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::open(dir.path()).unwrap());
    let zone = Name::parse("0/25.2.0.192.in-addr.arpa").unwrap();
    store.ensure_zones(std::slice::from_ref(&zone)).unwrap();
    let ptr = RRSet::new(
        RecordKey::new(
            zone.clone(),
            Name::parse("1.0/25.2.0.192.in-addr.arpa").unwrap(),
            RecordType::Ptr,
        ),
        300,
        &["host1.example.com."],
    )
    .unwrap();
    store.apply(&zone, &[RRSetOp::create(ptr)]).unwrap();
    let a = Authority::new(store, std::slice::from_ref(&zone));
    let qname = to_hname(&Name::parse("1.0/25.2.0.192.IN-ADDR.arpa").unwrap()).unwrap();
    let mut q = Message::query();
    q.add_query(Query::query(qname, rr::RecordType::PTR));
    let m = ask(&a, &q, Transport::Udp);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert!(m.metadata.authoritative);
    assert_eq!(m.answers.len(), 1, "{:?}", m.answers);
    assert_eq!(
        hname_text(&m.answers[0].name).as_deref(),
        Some("1.0/25.2.0.192.in-addr.arpa.")
    );
    assert_eq!(
        crate::provider::hickory_rdata::from_hickory(&m.answers[0].data),
        Some((RecordType::Ptr, "host1.example.com.".to_string()))
    );
}
