use super::*;
use crate::source::testing::{entry, keys};

pub(super) fn zone() -> Name {
    Name::parse("example.com.").unwrap()
}

pub(super) fn run(text: &str) -> ParsedFile {
    parse_file("z.yaml", text, &zone())
}

/// (location, record, message) of each error or warning, for compact assertions.
pub(super) fn said(list: &[SourceError]) -> Vec<(String, String, String)> {
    list.iter()
        .map(|e| (e.location.clone(), e.record.clone(), e.message.clone()))
        .collect()
}

pub(super) const ZONE: &str = "\
---
'':
  - type: MX
    values:
      - exchange: mx1.example.com.
        preference: 10
      - priority: 20
        value: mx2.example.com.
  - type: TXT
    value: v=spf1 include:_spf.example.com -all
'*':
  type: A
  value: 192.0.2.9
WWW:
  ttl: 300
  type: A
  values: [192.0.2.2, 192.0.2.1, 192.0.2.2]
_sip._tcp:
  ttl: 60
  type: SRV
  values:
    - {port: 5060, priority: 10, target: sip.example.com., weight: 5}
caa:
  type: CAA
  values:
    - {tag: issue, value: letsencrypt.org}
    - {flags: 128, tag: iodef, value: 'mailto:a@example.com'}
dkim:
  type: TXT
  value: v=DKIM1\\;k=rsa\\;p=ABC
";

#[test]
fn reads_records_values_ttls_and_origins() {
    let out = run(ZONE);
    assert_eq!(said(&out.errors), vec![]);
    assert_eq!(said(&out.warnings), vec![]);
    assert_eq!(out.endpoint_documents, 1);
    let entries: Vec<DesiredEntry> = out.accepted.iter().map(|a| a.entry.clone()).collect();
    assert_eq!(
        keys(&entries),
        vec![
            entry(
                "example.com.",
                "MX",
                &["10 mx1.example.com.", "20 mx2.example.com."]
            ),
            entry(
                "example.com.",
                "TXT",
                &["\"v=spf1 include:_spf.example.com -all\""]
            ),
            entry("*.example.com.", "A", &["192.0.2.9"]),
            entry("www.example.com.", "A", &["192.0.2.1", "192.0.2.2"]),
            entry(
                "_sip._tcp.example.com.",
                "SRV",
                &["10 5 5060 sip.example.com."]
            ),
            entry(
                "caa.example.com.",
                "CAA",
                &[
                    "0 issue \"letsencrypt.org\"",
                    "128 iodef \"mailto:a@example.com\""
                ]
            ),
            entry("dkim.example.com.", "TXT", &["\"v=DKIM1;k=rsa;p=ABC\""]),
        ]
    );
    let ttls: Vec<Option<u32>> = entries.iter().map(|e| e.ttl).collect();
    assert_eq!(
        ttls,
        [3600, 3600, 3600, 300, 60, 3600, 3600].map(Some).to_vec(),
        "an absent ttl is octoDNS's default of 3600"
    );
    let at: Vec<&str> = entries.iter().map(|e| &*e.origin.location).collect();
    assert_eq!(
        at,
        vec![
            "z.yaml:3",
            "z.yaml:9",
            "z.yaml:11",
            "z.yaml:14",
            "z.yaml:18",
            "z.yaml:23",
            "z.yaml:28"
        ]
    );
    assert!(
        entries
            .iter()
            .all(|e| &*e.origin.source == "file" && &*e.origin.resource == "octoDNS zone z.yaml")
    );
    let slots: Vec<usize> = out.accepted.iter().map(|a| a.slot.index).collect();
    assert_eq!(slots, vec![0, 1, 2, 3, 4, 5, 6]);
    assert!(
        Arc::ptr_eq(
            &out.accepted[0].slot.resource,
            &out.accepted[6].slot.resource
        ),
        "one resource allocation per file"
    );
}

#[test]
fn txt_values_mean_what_octodns_sends() {
    let long = "a".repeat(300);
    let text = format!(
        "t1: {{type: TXT, value: '\"old\" \"style\"'}}\nt2: {{type: TXT, value: {long}}}\nt3: {{type: TXT, value: 'back\\slash'}}\nt4: {{type: TXT, value: ''}}\n"
    );
    let out = run(&text);
    assert_eq!(said(&out.errors), vec![]);
    let values: Vec<String> = out
        .accepted
        .iter()
        .map(|a| a.entry.values[0].clone())
        .collect();
    assert_eq!(
        values,
        vec![
            "\"oldstyle\"".to_string(),
            format!("\"{}\" \"{}\"", "a".repeat(255), "a".repeat(45)),
            "\"back\\\\slash\"".to_string(),
            "\"\"".to_string(),
        ]
    );
}

#[test]
fn structured_types_follow_octodns_value_classes() {
    let text = "\
ds:
  type: DS
  values:
    - {algorithm: 13, digest: ABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABAB, digest_type: 2, key_tag: 12345}
    - {algorithm: 2, flags: 1, protocol: 8, public_key: abababababababababababababababababababababababababababababababab}
https:
  type: HTTPS
  value:
    svcparams: {alpn: [h2, h3], ipv4hint: [192.0.2.1], port: 8443, no-default-alpn: null}
    svcpriority: 1
    targetname: .
naptr:
  type: NAPTR
  value: {flags: u, order: 10, preference: 100, regexp: '!^.*$!sip:a@example.com!', replacement: ., service: SIP+D2U}
sshfp:
  type: SSHFP
  value: {algorithm: 4, fingerprint: 'CDCDCDCDCDCDCDCDCDCDCDCDCDCDCDCDCDCDCDCD', fingerprint_type: 1}
tlsa:
  type: TLSA
  value: {certificate_usage: 0, selector: 0, certificate_association_data: 'ABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABAB', matching_type: 1}
";
    let out = run(text);
    assert_eq!(said(&out.errors), vec![]);
    let entries: Vec<DesiredEntry> = out.accepted.iter().map(|a| a.entry.clone()).collect();
    assert_eq!(
        keys(&entries),
        vec![
            entry(
                "ds.example.com.",
                "DS",
                &[
                    "1 8 2 abababababababababababababababababababababababababababababababab",
                    "12345 13 2 abababababababababababababababababababababababababababababababab"
                ]
            ),
            entry(
                "https.example.com.",
                "HTTPS",
                &["1 . alpn=h2,h3 no-default-alpn port=8443 ipv4hint=192.0.2.1"]
            ),
            entry(
                "naptr.example.com.",
                "NAPTR",
                &["10 100 \"U\" \"SIP+D2U\" \"!^.*$!sip:a@example.com!\" ."]
            ),
            entry(
                "sshfp.example.com.",
                "SSHFP",
                &["4 1 cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"]
            ),
            entry(
                "tlsa.example.com.",
                "TLSA",
                &["0 0 1 abababababababababababababababababababababababababababababababab"]
            ),
        ]
    );
}

#[test]
fn unmodelled_types_apex_ns_routing_and_ignored_records_are_warned_not_planned() {
    let text = "\
'':
  - type: NS
    values: [ns1.example.net., ns2.example.net.]
  - type: ALIAS
    value: lb.example.net.
dyn:
  dynamic: {pools: {}, rules: []}
  type: A
  value: 192.0.2.1
geo:
  geo: {NA-US: [192.0.2.5]}
  type: A
  value: 192.0.2.1
hc:
  octodns:
    healthcheck: {protocol: HTTPS}
    lenient: true
  type: A
  value: 192.0.2.3
ign:
  octodns: {ignored: true}
  type: A
  value: 192.0.2.4
r53:
  type: Route53Provider/ALIAS
  value: {name: x}
spf:
  type: SPF
  value: v=spf1 -all
";
    let out = run(text);
    assert_eq!(said(&out.errors), vec![]);
    let entries: Vec<DesiredEntry> = out.accepted.iter().map(|a| a.entry.clone()).collect();
    assert_eq!(
        keys(&entries),
        vec![entry("hc.example.com.", "A", &["192.0.2.3"])]
    );
    let w = said(&out.warnings);
    let summary: Vec<(&str, &str)> = w.iter().map(|(l, r, _)| (l.as_str(), r.as_str())).collect();
    assert_eq!(
        summary,
        vec![
            ("z.yaml:2", "example.com. NS"),
            ("z.yaml:4", "example.com. ALIAS"),
            ("z.yaml:7", "dyn.example.com. A"),
            ("z.yaml:11", "geo.example.com. A"),
            ("z.yaml:16", "hc.example.com. A"),
            ("z.yaml:21", "ign.example.com. A"),
            ("z.yaml:24", "r53.example.com. Route53Provider/ALIAS"),
            ("z.yaml:27", "spf.example.com. SPF"),
        ]
    );
    assert!(w[0].2.contains("apex NS"), "{:?}", w[0]);
    assert!(w[1].2.contains("type ALIAS is not modelled"), "{:?}", w[1]);
    assert!(w[2].2.contains("dynamic routing"), "{:?}", w[2]);
    assert!(w[3].2.contains("geo routing"), "{:?}", w[3]);
    assert!(
        w[4].2
            .contains("octodns.healthcheck, octodns.lenient ignored"),
        "{:?}",
        w[4]
    );
    assert!(
        w[5].2.contains("octoDNS loads this record but never"),
        "{:?}",
        w[5]
    );
    assert!(w[7].2.contains("as a TXT record"), "{:?}", w[7]);
}

#[test]
fn a_bad_record_is_rejected_alone_with_file_line_and_record() {
    let text = "\
a:
  type: A
  value: 300.1.1.1
b:
  type: A
  value: 192.0.2.1
c:
  ttl: soon
  type: MX
  values:
    - {exchange: mx.example.com.}
d:
  value: 192.0.2.1
e:
  type: a
  value: 192.0.2.1
f:
  type: WAT
  value: x
g: just text
h:
  type: CNAME
  values: [a.example.com.]
i:
  type: TXT
  value: v=DKIM1;k=rsa
'@':
  type: A
  value: 192.0.2.1
'':
  type: CNAME
  value: other.example.net.
";
    let out = run(text);
    assert_eq!(out.fatal, Vec::<usize>::new());
    assert_eq!(
        keys(
            &out.accepted
                .iter()
                .map(|a| a.entry.clone())
                .collect::<Vec<_>>()
        ),
        vec![entry("b.example.com.", "A", &["192.0.2.1"])]
    );
    let e = said(&out.errors);
    let summary: Vec<(&str, &str)> = e.iter().map(|(l, r, _)| (l.as_str(), r.as_str())).collect();
    assert_eq!(
        summary,
        vec![
            ("z.yaml:3", "a.example.com. A"),
            ("z.yaml:8", "c.example.com. MX"),
            ("z.yaml:11", "c.example.com. MX"),
            ("z.yaml:12", "d.example.com."),
            ("z.yaml:15", "e.example.com. a"),
            ("z.yaml:18", "f.example.com. WAT"),
            ("z.yaml:20", "g.example.com."),
            ("z.yaml:21", "h.example.com. CNAME"),
            ("z.yaml:26", "i.example.com. TXT"),
            ("z.yaml:27", "@ A"),
            ("z.yaml:30", "example.com. CNAME"),
        ],
        "{e:#?}"
    );
    assert!(e[0].2.contains("not a valid IPv4 address"), "{:?}", e[0]);
    assert!(e[1].2.contains("ttl is not a whole number"), "{:?}", e[1]);
    assert!(e[2].2.contains("preference is missing"), "{:?}", e[2]);
    assert!(e[3].2.contains("type is missing"), "{:?}", e[3]);
    assert!(e[4].2.contains("upper-case (\"A\")"), "{:?}", e[4]);
    assert!(e[5].2.contains("unknown record type \"WAT\""), "{:?}", e[5]);
    assert!(e[6].2.contains("a record is a mapping"), "{:?}", e[6]);
    assert!(e[7].2.contains("value is missing"), "{:?}", e[7]);
    assert!(e[8].2.contains("unescaped ';'"), "{:?}", e[8]);
    assert!(
        e[9].2.contains("octoDNS writes the apex as ''"),
        "{:?}",
        e[9]
    );
    // What each error stands for: the RRSet when its name and type are known.
    let rejected: Vec<Option<String>> = out
        .rejected
        .iter()
        .map(|r| match &r.what {
            RejectedWhat::Endpoint { key, .. } => key.as_ref().map(|(n, t, _)| format!("{n} {t}")),
            RejectedWhat::Resource(r) => Some(r.clone()),
        })
        .collect();
    assert_eq!(
        rejected,
        vec![
            Some("a.example.com. A".into()),
            Some("c.example.com. MX".into()),
            None,
            None,
            None,
            None,
            Some("h.example.com. CNAME".into()),
            Some("i.example.com. TXT".into()),
            None,
            Some("example.com. CNAME".into()),
        ]
    );
}

#[test]
fn a_record_declared_twice_keeps_neither() {
    let text = "a:\n  - {type: A, value: 192.0.2.1}\n  - {type: A, value: 192.0.2.2}\n";
    let out = run(text);
    assert!(out.accepted.is_empty());
    let e = said(&out.errors);
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[0].0, "z.yaml:2");
    assert!(e[0].2.contains("declared again at line 3"), "{e:?}");
    assert_eq!(e[1].0, "z.yaml:3");
    assert!(e[1].2.contains("declared twice (first at line 2)"), "{e:?}");
    assert_eq!(out.rejected.len(), 2);
}

#[test]
fn broken_text_is_fatal_with_its_line() {
    let deep = "- ".repeat(70);
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "a:\n  type: A\n  value: [1\n",
            "z.yaml:3".into(),
            "invalid YAML",
        ),
        (
            "a: {type: A, value: 192.0.2.1}\na: {type: A, value: 192.0.2.2}\n",
            "z.yaml:2".into(),
            "duplicate key \"a\"",
        ),
        (
            "- a\n- b\n",
            "z.yaml:1".into(),
            "a mapping of names to records",
        ),
        (
            "a: {type: A}\n---\nb: {type: A}\n",
            "z.yaml:2".into(),
            "a second YAML document",
        ),
        ("a:\n  type: A\0\n", "z.yaml:2".into(), "NUL byte"),
        (&deep, "z.yaml:1".into(), "nested more than"),
    ];
    for (text, location, message) in cases {
        let out = run(text);
        assert_eq!(out.fatal, vec![0], "{text:?}: {:?}", out.errors);
        assert_eq!(out.errors[0].location, location, "{text:?}");
        assert!(
            out.errors[0].message.contains(message),
            "{text:?}: {:?}",
            out.errors[0]
        );
        let public = parse("z.yaml", text, &zone());
        assert!(public.entries.is_empty());
    }
    let big = format!(
        "a: {{type: TXT, value: '{}'}}\n",
        "x".repeat(super::MAX_OCTODNS_BYTES)
    );
    let out = run(&big);
    assert_eq!(out.fatal, vec![0]);
    assert_eq!(out.errors[0].location, "z.yaml");
}

#[test]
fn an_empty_mapping_declares_no_records_and_a_comment_only_file_declares_nothing() {
    let empty = run("---\n{}\n");
    assert_eq!((empty.endpoint_documents, empty.errors.len()), (1, 0));
    for nothing in ["", "# only a comment\n", "---\n", "---\n# c\n...\n"] {
        let out = run(nothing);
        assert_eq!(
            (out.endpoint_documents, out.errors.len(), out.accepted.len()),
            (0, 0, 0),
            "{nothing:?}"
        );
    }
}

#[test]
fn keys_out_of_octodns_order_are_read_with_one_warning() {
    let out = run("b: {value: 192.0.2.1, type: A}\na: {type: A, value: 192.0.2.1}\n");
    assert_eq!(out.accepted.len(), 2);
    let w = said(&out.warnings);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].0, "z.yaml:2");
    assert!(w[0].2.contains("enforce_order"), "{w:?}");
}

#[test]
fn a_list_under_value_is_values_but_not_for_a_cname() {
    let out = run(
        "a:\n  type: A\n  value: [192.0.2.1, 192.0.2.2]\nc:\n  type: CNAME\n  value: [x.example.com.]\n",
    );
    assert_eq!(
        keys(
            &out.accepted
                .iter()
                .map(|a| a.entry.clone())
                .collect::<Vec<_>>()
        ),
        vec![entry("a.example.com.", "A", &["192.0.2.1", "192.0.2.2"])]
    );
    let e = said(&out.errors);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].0, "z.yaml:6");
    assert!(e[0].2.contains("text, not a list"), "{e:?}");
}

#[test]
fn value_mappings_out_of_order_are_warned_once() {
    let out = run("m:\n  type: MX\n  value: {preference: 10, exchange: mx.example.com.}\n");
    assert_eq!(out.accepted.len(), 1);
    let w = said(&out.warnings);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].2.contains("\"exchange\" comes before \"preference\""),
        "{w:?}"
    );
}

#[test]
fn plain_names_and_txt_values_pyyaml_reads_otherwise_must_be_quoted() {
    let out = run(
        "'no': {type: A, value: 192.0.2.1}\n'2': {type: A, value: 192.0.2.2}\n1.10: {type: A, value: 192.0.2.3}\n12: {type: A, value: 192.0.2.4}\nt: {type: TXT, values: ['1.10', 1.10]}\nyes: {type: A, value: 192.0.2.5}\n",
    );
    let names: Vec<String> = out
        .accepted
        .iter()
        .map(|a| a.entry.name.to_string())
        .collect();
    assert_eq!(
        names,
        vec!["no.example.com.", "2.example.com.", "12.example.com."]
    );
    let e = said(&out.errors);
    let summary: Vec<(&str, &str)> = e.iter().map(|(l, r, _)| (l.as_str(), r.as_str())).collect();
    assert_eq!(
        summary,
        vec![
            ("z.yaml:3", "1.10 A"),
            ("z.yaml:5", "t.example.com. TXT"),
            ("z.yaml:6", "yes A"),
        ],
        "{e:#?}"
    );
    assert!(
        e[0].2
            .contains("reads the unquoted name \"1.10\" as 1.10 (a number)"),
        "{e:?}"
    );
    assert!(e[1].2.contains("quote it"), "{e:?}");
    assert!(e[2].2.contains("as True"), "{e:?}");
}
