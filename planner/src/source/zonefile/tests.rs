use super::*;
use crate::source::dnsendpoint::RejectedWhat;
use dnsplane_common::SetId;
use std::time::{Duration, Instant};

fn origin() -> Name {
    Name::parse("example.com.").unwrap()
}

/// (name, type, ttl, values) of each entry, sorted.
fn sets(entries: &[DesiredEntry]) -> Vec<(String, &'static str, u32, Vec<String>)> {
    let mut v: Vec<_> = entries
        .iter()
        .map(|e| {
            (
                e.name.to_string(),
                e.rtype.as_str(),
                e.ttl.unwrap(),
                e.values.clone(),
            )
        })
        .collect();
    v.sort();
    v
}

fn set(
    name: &str,
    t: &'static str,
    ttl: u32,
    values: &[&str],
) -> (String, &'static str, u32, Vec<String>) {
    (
        name.into(),
        t,
        ttl,
        values.iter().map(|v| v.to_string()).collect(),
    )
}

fn ok(text: &str) -> Parsed {
    let p = parse("z.zone", text, Some(&origin()));
    assert!(p.errors.is_empty(), "{:#?}", p.errors);
    p
}

const HEAD: &str = "$TTL 300\n@ IN SOA ns1 hostmaster ( 1 2 3 4 5 )\n  IN NS ns1.example.net.\n";

#[test]
fn reads_directives_relative_names_parentheses_and_escapes() {
    let text = format!(
        "{HEAD}\
www 60 IN A 192.0.2.1\n    IN 60 A 192.0.2.2 ; blank owner: www again\n\
@ MX 10 mail\n\
@ MX ( 20\n   mail2.example.net. )\n\
txt TXT \"a \\\"quoted\\\" part\" unquoted \\065\\066 \"semi;colon\"\n\
$ORIGIN sub.example.com.\n\
x 1h30m CNAME @\n\
_sip._tcp SRV 0 5 5060 x\n\
Caa CAA 0 issue \"ca.example.net\"\n"
    );
    let p = ok(&text);
    assert_eq!(p.origin, Some(origin()));
    assert_eq!(
        sets(&p.entries),
        vec![
            set(
                "_sip._tcp.sub.example.com.",
                "SRV",
                300,
                &["0 5 5060 x.sub.example.com."]
            ),
            set(
                "caa.sub.example.com.",
                "CAA",
                300,
                &["0 issue \"ca.example.net\""]
            ),
            set(
                "example.com.",
                "MX",
                300,
                &["10 mail.example.com.", "20 mail2.example.net."]
            ),
            set(
                "txt.example.com.",
                "TXT",
                300,
                &["\"a \\\"quoted\\\" part\" \"unquoted\" \"AB\" \"semi;colon\""]
            ),
            set("www.example.com.", "A", 60, &["192.0.2.1", "192.0.2.2"]),
            set("x.sub.example.com.", "CNAME", 5400, &["sub.example.com."]),
        ]
    );
    let www = p
        .entries
        .iter()
        .find(|e| e.name.as_str() == "www.example.com.")
        .unwrap();
    assert_eq!(&*www.origin.location, "z.zone:4");
    assert_eq!(&*www.origin.source, "file");
    assert_eq!(&*www.origin.resource, "zone file z.zone");
}

#[test]
fn ttls_follow_bind() {
    // No $TTL: a SOA without a TTL takes its minimum, which then is the default.
    let p = ok("@ SOA ns1 h 1 2 3 4 555\n@ 100 NS ns1.example.net.\na A 192.0.2.1\n");
    assert_eq!(
        sets(&p.entries),
        vec![set("a.example.com.", "A", 555, &["192.0.2.1"])]
    );
    // A SOA with a TTL and no $TTL: RFC 1035, the last TTL given.
    let p = ok("@ 3600 SOA ns1 h 1 2 3 4 5\n@ 100 NS ns1.example.net.\na A 192.0.2.1\n");
    assert_eq!(sets(&p.entries)[0].2, 100);
    // Lines of one owner: the first TTL; a later run of the owner: its TTL wins.
    let p = parse(
        "z",
        "$TTL 1\na 300 A 192.0.2.1\na 600 A 192.0.2.2\nb 300 TXT x\nc A 192.0.2.1\nb 600 TXT y\n",
        Some(&origin()),
    );
    assert!(p.errors.is_empty());
    let s = sets(&p.entries);
    assert_eq!(s[0].2, 300, "{s:?}");
    assert_eq!(s[1].2, 600, "{s:?}");
    assert_eq!(p.warnings.len(), 2, "{:#?}", p.warnings);
    assert!(
        p.warnings[0].message.contains("keeps 300"),
        "{}",
        p.warnings[0]
    );
    assert_eq!(p.warnings[0].location, "z:3");
    assert!(
        p.warnings[1].message.contains("takes 600"),
        "{}",
        p.warnings[1]
    );
    // Units, either order of class and TTL.
    let p = ok("a IN 1w2d A 192.0.2.1\nb 2H IN A 192.0.2.1\n");
    assert_eq!(sets(&p.entries)[0].2, 777_600);
    assert_eq!(sets(&p.entries)[1].2, 7200);
}

#[test]
fn a_record_without_any_ttl_is_an_error_naming_line_and_column() {
    let p = parse("z", "a A 192.0.2.1\n", Some(&origin()));
    assert!(p.entries.is_empty());
    assert_eq!(p.errors.len(), 1);
    assert_eq!(p.errors[0].location, "z:1:3");
    assert_eq!(p.errors[0].record, "a.example.com. A");
    assert!(p.errors[0].message.contains("no TTL"), "{}", p.errors[0]);
}

#[test]
fn soa_and_apex_ns_are_checked_never_entries() {
    let p = ok(&format!("{HEAD}sub NS ns1.example.net.\n@ A 192.0.2.1\n"));
    assert_eq!(
        sets(&p.entries),
        vec![
            set("example.com.", "A", 300, &["192.0.2.1"]),
            set("sub.example.com.", "NS", 300, &["ns1.example.net."]),
        ]
    );
    let p = parse("z", "$TTL 1\n@ SOA ns1 h 1 2 3\n", Some(&origin()));
    assert_eq!(p.errors.len(), 1);
    assert!(p.errors[0].message.contains("7 fields"), "{}", p.errors[0]);
    assert_eq!(p.errors[0].location, "z:2:18");
}

#[test]
fn every_modelled_type_is_read() {
    let text = format!(
        "{HEAD}\
a A 192.0.2.1\n\
a AAAA 2001:DB8::1\n\
c CNAME a\n\
t TXT \"x\"\n\
m MX 0 .\n\
_s._tcp SRV 1 2 3 a\n\
d NS ns.example.net.\n\
d DS 15288 5 2 ( CE0EB9E59EE1DE2C681A330E3A7C0837\n   6F28602CDF990EE4EC88D2A8BDB51539 )\n\
q CAA 128 tbs \"Unknown\"\n\
1 PTR a\n\
s SVCB 1 . alpn=\"h3,h2\" port=8443\n\
h HTTPS 0 a\n\
_25._tcp TLSA 3 1 1 ( 8A9A70596E869BED72C69D97A8895DFA\n 8A9A70596E869BED72C69D97A8895DFA )\n\
a SSHFP 1 1 bf6b6825d2977c511a475bbefb88aad54a92ac73\n\
n NAPTR 100 10 \"S\" \"SIP+D2U\" \"\" _sip._udp\n"
    );
    let p = parse("z.zone", &text, Some(&origin()));
    let types: std::collections::BTreeSet<&str> =
        p.entries.iter().map(|e| e.rtype.as_str()).collect();
    assert_eq!(
        types.len(),
        RecordType::ALL.len(),
        "{types:?} {:#?}",
        p.errors
    );
    let s = sets(&p.entries);
    assert!(
        s.contains(&set(
            "n.example.com.",
            "NAPTR",
            300,
            &["100 10 \"S\" \"SIP+D2U\" \"\" _sip._udp.example.com."]
        )),
        "{s:#?}"
    );
    assert!(
        s.contains(&set(
            "s.example.com.",
            "SVCB",
            300,
            &["1 . alpn=h3,h2 port=8443"]
        )),
        "{s:#?}"
    );
    assert!(
        s.contains(&set("a.example.com.", "AAAA", 300, &["2001:db8::1"])),
        "{s:#?}"
    );
}

#[test]
fn unmodelled_types_are_skipped_with_a_warning() {
    let p = ok(&format!(
        "{HEAD}loc LOC 31 58 52.1 S 115 49 11.7 E 20m\nh HINFO \"PC\" \"Linux\"\nx TYPE65534 \\# 2 abcd\nspf SPF \"v=spf1\"\nok A 192.0.2.1\n"
    ));
    assert_eq!(p.entries.len(), 1);
    assert_eq!(p.warnings.len(), 4, "{:#?}", p.warnings);
    assert_eq!(p.warnings[0].location, "z.zone:4:5");
    assert_eq!(p.warnings[0].record, "loc.example.com. LOC");
    assert!(p.warnings[0].message.contains("LOC"));
    assert_eq!(p.warnings[2].record, "x.example.com. TYPE65534");
    // The generic name of a modelled type is not dropped quietly.
    let p = parse("z", "$TTL 1\nx TYPE1 \\# 4 C0000201\n", Some(&origin()));
    assert_eq!(p.errors.len(), 1, "{:#?}", p.errors);
    assert_eq!(p.errors[0].record, "x.example.com. A");
    assert!(p.errors[0].message.contains("write A"), "{}", p.errors[0]);
}

fn fatal(text: &str) -> (ParsedFile, SourceError) {
    let f = parse_file("z", text, Some(&origin()));
    assert_eq!(f.fatal.len(), 1, "{:#?}", f.errors);
    assert!(f.accepted.is_empty());
    let e = f.errors[f.fatal[0]].clone();
    (f, e)
}

#[test]
fn syntax_errors_are_fatal_and_name_line_and_column() {
    let cases: &[(&str, &str, &str)] = &[
        ("$TTL 1\na A ( 192.0.2.1\n", "z:2:5", "never closed"),
        ("$TTL 1\na A 192.0.2.1 )\n", "z:2:15", "without a matching"),
        ("$TTL 1\na TXT \"open\n", "z:2:7", "unbalanced quotes"),
        (
            "$TTL 1\n$INCLUDE other.zone\n",
            "z:2:1",
            "$INCLUDE is not supported",
        ),
        (
            "$TTL 1\n$GENERATE 1-9 x$ A 192.0.2.$\n",
            "z:2:1",
            "$GENERATE is not supported",
        ),
        ("$TTL 1\n$FOO x\n", "z:2:1", "unknown directive"),
        ("$TTL 1h30\n", "z:1:6", "not a TTL"),
        ("$TTL 1\na FOO 1\n", "z:2:3", "unknown record type \"FOO\""),
        ("$TTL 1\na 1x A 192.0.2.1\n", "z:2:3", "neither a TTL"),
        ("$TTL 1\na\n", "z:2:2", "no type"),
        ("$TTL 1\n  A 192.0.2.1\n", "z:2:3", "no owner name"),
        ("$TTL 1\nbad!name A 192.0.2.1\n", "z:2:1", "owner name"),
        ("$TTL 1\na A 1\\\n", "z:2:6", "backslash"),
    ];
    for (text, location, message) in cases {
        let (f, e) = fatal(text);
        assert_eq!(e.location, *location, "{text:?}: {e}");
        assert!(e.message.contains(message), "{text:?}: {e}");
        assert_eq!(f.endpoint_documents, 1);
    }
    // Without an origin, a relative name is fatal wherever it is.
    for (text, location) in [
        ("$TTL 1\nwww A 192.0.2.1\n", "z:2:1"),
        ("$TTL 1\nwww.example.com. CNAME www\n", "z:2:24"),
        ("$ORIGIN sub\n", "z:1:9"),
    ] {
        let f = parse_file("z", text, None);
        assert_eq!(f.fatal.len(), 1, "{text:?}");
        let e = &f.errors[f.fatal[0]];
        assert_eq!(e.location, location, "{text:?}: {e}");
        assert!(e.message.contains("relative"), "{e}");
    }
}

#[test]
fn a_bad_value_rejects_only_its_rrset() {
    let text = "$TTL 1\nok A 192.0.2.1\nbad A 192.0.2.1\nbad A 300.1.1.1\nc CNAME a\nc CNAME b\n@ DS 1 13 2 1234\nout.example.net. A 192.0.2.1\n";
    let f = parse_file("z", text, Some(&origin()));
    assert!(f.fatal.is_empty(), "{:#?}", f.errors);
    assert_eq!(f.accepted.len(), 1);
    assert_eq!(f.accepted[0].slot.index, 0);
    let keys: Vec<_> = f
        .rejected
        .iter()
        .map(|r| match &r.what {
            RejectedWhat::Endpoint {
                key: Some((n, t, _)),
                slot,
            } => (n.to_string(), *t, slot.index),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            ("bad.example.com.".into(), RecordType::A, 1),
            ("c.example.com.".into(), RecordType::Cname, 2),
            ("example.com.".into(), RecordType::Ds, 3),
            ("out.example.net.".into(), RecordType::A, 4),
        ]
    );
    let e = &f.errors[f.rejected[0].errors.clone()][0];
    assert_eq!(e.location, "z:4:7");
    assert_eq!(e.record, "bad.example.com. A");
    assert!(e.message.contains("IPv4"), "{e}");
    assert!(
        f.errors[f.rejected[1].errors.start]
            .message
            .contains("exactly one")
    );
    assert!(
        f.errors[f.rejected[2].errors.start]
            .message
            .contains("parent zone")
    );
    assert!(
        f.errors[f.rejected[3].errors.start]
            .message
            .contains("outside the zone")
    );
}

#[test]
fn only_comments_declare_nothing() {
    let f = parse_file("z", "; nothing\n\n   ; here\n", Some(&origin()));
    assert_eq!(f.endpoint_documents, 0);
    assert!(f.errors.is_empty());
    let f = parse_file("z", "$TTL 300\n", Some(&origin()));
    assert_eq!(f.endpoint_documents, 1);
}

#[test]
fn hostile_texts_end_in_bounded_time() {
    let start = Instant::now();
    let deep = format!(
        "$TTL 1\na TXT {}x{}\n",
        "(".repeat(200_000),
        ")".repeat(200_000)
    );
    let p = ok(&deep);
    assert_eq!(p.entries.len(), 1);
    let (_, e) = fatal(&format!("$TTL 1\na TXT {}x\n", "(".repeat(200_000)));
    assert!(e.message.contains("never closed"));
    let long = format!("$TTL 1\na TXT {}\n", "x ".repeat(50_000));
    let f = parse_file("z", &long, Some(&origin()));
    assert!(f.fatal.is_empty());
    let words = format!("$TTL 1\na TXT {}\n", "x ".repeat(lexer::MAX_FIELDS + 1));
    let (_, e) = fatal(&words);
    assert!(e.message.contains("fields in one record"), "{e}");
    let long_name = format!("$TTL 1\n{} A 192.0.2.1\n", "a".repeat(100_000));
    let (_, e) = fatal(&long_name);
    assert!(e.message.contains("owner name"), "{e}");
    let (_, e) = fatal("$TTL 1\na A 192.0.2.1\0\n");
    assert!(e.message.contains("NUL"), "{e}");
    assert_eq!(e.location, "z:2:14");
    let big = " ".repeat(MAX_ZONE_FILE_BYTES + 1);
    let (_, e) = fatal(&big);
    assert!(e.message.contains("64 MiB"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn written_files_read_back_to_the_same_entries() {
    let text = format!(
        "{HEAD}www 60 A 192.0.2.1\nwww 60 A 192.0.2.2\n@ MX 10 mail\ntxt TXT \"a \\\"b\\\"\" \"\\228\\189\" ;c\n*.w CNAME www\nsub NS ns1.example.net.\nsub DS 15288 5 2 CE0EB9E59EE1DE2C681A330E3A7C08376F28602CDF990EE4EC88D2A8BDB51539\n"
    );
    let p = ok(&text);
    let w = write(
        &origin(),
        &p.entries,
        &["b.example.net.".into(), "a.example.net.".into()],
    );
    assert!(w.skipped.is_empty());
    assert!(
        w.text.starts_with("; example.com. as dnsplane"),
        "{}",
        w.text
    );
    assert!(
        w.text
            .contains("\n@ 3600 IN NS a.example.net.\n@ 3600 IN NS b.example.net.\n"),
        "{}",
        w.text
    );
    let again = ok(&w.text);
    assert_eq!(sets(&again.entries), sets(&p.entries));
    let mut shuffled = p.entries.clone();
    shuffled.reverse();
    assert_eq!(
        write(&origin(), &shuffled, &[]).text,
        write(&origin(), &p.entries, &[]).text
    );
    // What a zone file cannot hold is handed back.
    let mut odd = p.entries[0].clone();
    odd.set = SetId::new("eu").unwrap();
    let mut out = p.entries[0].clone();
    out.name = Name::parse("x.example.net.").unwrap();
    let both = [odd, out];
    let w = write(&origin(), &both, &[]);
    assert_eq!(w.skipped.len(), 2);
    assert!(w.text.contains("ns1.invalid."));
}

proptest::proptest! {
    /// Whatever the text (zone-file punctuation, escapes, multi-byte characters), the
    /// parse ends with entries or errors, never a panic, and every error is located.
    #[test]
    fn any_text_parses_without_panicking(text in "[ \t\r\n();\"\\\\$@.*a-zA-Z0-9é😀]{0,300}") {
        let f = parse_file("z", &text, Some(&origin()));
        for e in &f.errors {
            proptest::prop_assert!(e.location.starts_with('z'), "{e}");
        }
        let text = format!("$TTL 60\n{text}");
        let _ = parse("z", &text, None);
    }
}
