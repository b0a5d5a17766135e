use super::wire::{from_rdata, to_rdata};
use super::*;
use dnsplane_common::{RRSet, RecordKey};
use hickory_net::proto::op::UpdateMessage;
use hickory_net::proto::rr::{DNSClass, RecordType as HRecordType};

const SECRET: &str = "DXwXgnCEizH5x1oN6SKTtUZngZh8RFA01T3oFAI0qfs=";

#[test]
fn reads_bind_key_files_and_bare_secrets() {
    let file = format!(
        "# comment\nkey \"other\" {{ algorithm hmac-sha512; secret \"{SECRET}\"; }};\n\
         key \"ddns-key\" {{\n\talgorithm hmac-sha256; // why\n\tsecret \"{SECRET}\";\n}};\n"
    );
    let k = read_key(&file, Some("ddns-key."), None).unwrap();
    assert_eq!(
        (k.name.as_str(), k.algorithm),
        ("ddns-key", TsigAlgorithm::HmacSha256)
    );
    assert_eq!(k.secret.len(), 32);
    let e = read_key(&file, None, None).err().unwrap();
    assert!(e.contains("several keys"), "{e}");
    let e = read_key(&file, Some("ddns-key"), Some(TsigAlgorithm::HmacSha512))
        .err()
        .unwrap();
    assert!(e.contains("hmac-sha256") && !e.contains(SECRET), "{e}");
    let k = read_key(
        &format!("{SECRET}\n"),
        Some("k"),
        Some(TsigAlgorithm::HmacSha384),
    )
    .unwrap();
    assert_eq!(k.algorithm, TsigAlgorithm::HmacSha384);
    assert!(read_key(SECRET, None, None).is_err());
    let e = read_key(
        "key \"k\" { algorithm hmac-sha256; secret \"%%not-base64%%\"; };",
        None,
        None,
    )
    .err()
    .unwrap();
    assert!(!e.contains("not-base64"), "{e}");
}

#[test]
fn values_round_trip_through_hickory() {
    for (t, v) in [
        (RecordType::A, "192.0.2.1"),
        (RecordType::Aaaa, "2001:db8::1"),
        (RecordType::Cname, "target.ex.test."),
        (RecordType::Ns, "ns1.ex.test."),
        (RecordType::Txt, "\"a b\" \"say \\\"hi\\\"\" \"\\195\\169\""),
        (RecordType::Mx, "10 _mail.ex.test."),
        (RecordType::Srv, "0 5 5060 sip.ex.test."),
        (RecordType::Caa, "128 issue \"ca.example.net; account=1\""),
    ] {
        let canon = dnsplane_common::rdata::canonicalize(t, v).unwrap();
        let (t2, back) = from_rdata(&to_rdata(t, &canon).unwrap()).unwrap();
        assert_eq!(t2, t);
        assert_eq!(
            dnsplane_common::rdata::canonicalize(t, &back).unwrap(),
            canon,
            "{t} {v}"
        );
    }
}

/// Names of classless reverse zones (RFC 2317) hold `/`: they go to the wire and come
/// back from it as they are.
#[test]
fn names_with_a_slash_round_trip_through_hickory() {
    let n = Name::parse("1.0/25.2.0.192.in-addr.arpa").unwrap();
    let h = hname(&n).unwrap();
    let text = crate::provider::hickory_rdata::hname_text(&h).unwrap();
    assert_eq!(Name::parse(&text).unwrap(), n);
    let (t, back) = from_rdata(&to_rdata(RecordType::Ptr, n.as_str()).unwrap()).unwrap();
    assert_eq!((t, back.as_str()), (RecordType::Ptr, n.as_str()));
}

#[test]
fn update_carries_one_prerequisite_per_precondition() {
    let zone = Name::parse("ex.test").unwrap();
    let rr = |n: &str, t, v: &[&str]| {
        RRSet::new(
            RecordKey::new(zone.clone(), Name::parse(n).unwrap(), t),
            60,
            v,
        )
        .unwrap()
    };
    let a1 = rr("a.ex.test", RecordType::A, &["192.0.2.1", "192.0.2.2"]);
    let a2 = rr("a.ex.test", RecordType::A, &["192.0.2.3"]);
    let c = rr("c.ex.test", RecordType::Cname, &["a.ex.test."]);
    let t = rr("t.ex.test", RecordType::Txt, &["x"]);
    let ops = [
        RRSetOp::update(a1.clone(), a2.clone()),
        RRSetOp::create(c),
        RRSetOp::delete(t.clone()),
        RRSetOp {
            key: t.key.clone(),
            before: Some(t.clone()),
            after: Some(t),
        },
    ];
    let m = build_update(&zone, &ops).unwrap();
    let pre: Vec<(String, DNSClass, HRecordType)> = m
        .prerequisites()
        .iter()
        .map(|r| (r.name.to_ascii(), r.dns_class, r.record_type()))
        .collect();
    // a: value-dependent (2 RRs); c: absent + name unused; t: value-dependent twice.
    assert_eq!(
        pre.iter()
            .filter(|p| p.0 == "a.ex.test." && p.1 == DNSClass::IN)
            .count(),
        2
    );
    assert!(pre.contains(&("c.ex.test.".into(), DNSClass::NONE, HRecordType::CNAME)));
    assert!(pre.contains(&("c.ex.test.".into(), DNSClass::NONE, HRecordType::ANY)));
    assert_eq!(pre.iter().filter(|p| p.0 == "t.ex.test.").count(), 2);
    // Updates: delete a and t (ANY), then add a2 and c; the assert adds nothing.
    let upd: Vec<(String, DNSClass)> = m
        .updates()
        .iter()
        .map(|r| (r.name.to_ascii(), r.dns_class))
        .collect();
    assert_eq!(
        upd,
        vec![
            ("a.ex.test.".into(), DNSClass::ANY),
            ("t.ex.test.".into(), DNSClass::ANY),
            ("a.ex.test.".into(), DNSClass::IN),
            ("c.ex.test.".into(), DNSClass::IN),
        ]
    );
}

/// The batch limit keeps the worst common shape (creates of small records, each
/// with its ownership TXT) inside one DNS message.
#[test]
fn a_full_batch_fits_one_message() {
    use dnsplane_common::{Change, ChangeKind};
    let zone = Name::parse("ex.test").unwrap();
    for (t, v) in [
        (RecordType::A, "192.0.2.1"),
        (RecordType::Cname, "a.example.net."),
        (RecordType::Txt, "\"x\""),
    ] {
        let (mut ops, mut approx, mut i) = (Vec::new(), 0, 0);
        loop {
            let name = Name::parse(&format!("h{i}.ex.test")).unwrap();
            let r = RRSet::new(RecordKey::new(zone.clone(), name.clone(), t), 60, &[v]).unwrap();
            let mark = RRSet::new(
                RecordKey::new(
                    zone.clone(),
                    name.prepend("_dnsplane-a").unwrap(),
                    RecordType::Txt,
                ),
                60,
                &["\"heritage=dnsplane,dnsplane/owner=o\""],
            )
            .unwrap();
            let c = Change::new(
                ChangeKind::Create,
                vec![RRSetOp::create(r), RRSetOp::create(mark)],
            );
            if approx + c.approx_bytes() > MAX_BYTES_PER_BATCH {
                break;
            }
            approx += c.approx_bytes();
            ops.extend(c.ops);
            i += 1;
        }
        let size = build_update(&zone, &ops).unwrap().to_vec().unwrap().len();
        assert!(
            size <= MAX_MESSAGE_BYTES,
            "{t}: {} ops, {size} bytes",
            ops.len()
        );
    }
}

#[test]
fn classifies_response_codes() {
    assert_eq!(classify_rcode(ResponseCode::YXRRSet), ErrorClass::Conflict);
    assert_eq!(classify_rcode(ResponseCode::NXRRSet), ErrorClass::Conflict);
    assert_eq!(classify_rcode(ResponseCode::YXDomain), ErrorClass::Conflict);
    assert_eq!(classify_rcode(ResponseCode::NotAuth), ErrorClass::Permanent);
    assert_eq!(classify_rcode(ResponseCode::Refused), ErrorClass::Permanent);
    assert_eq!(classify_rcode(ResponseCode::FormErr), ErrorClass::Invalid);
    assert_eq!(
        classify_rcode(ResponseCode::ServFail),
        ErrorClass::Transient
    );
}
