//! The writer: what it writes reads back as the same entries, and what it cannot
//! write is returned; property tests over TXT data and hostile text.
use super::tests::{run, said, zone};
use super::*;

#[test]
fn write_reads_back_to_the_same_entries() {
    let out = run(super::tests::ZONE);
    let entries: Vec<DesiredEntry> = out.accepted.iter().map(|a| a.entry.clone()).collect();
    let (text, skipped) = write(&zone(), &entries);
    assert!(skipped.is_empty(), "{skipped:?}");
    let back = parse("w.yaml", &text, &zone());
    assert_eq!(said(&back.errors), vec![], "{text}");
    assert_eq!(said(&back.warnings), vec![], "{text}");
    let strip = |es: &[DesiredEntry]| {
        let mut v: Vec<_> = es
            .iter()
            .map(|e| (e.name.clone(), e.rtype, e.ttl, e.values.clone()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(strip(&back.entries), strip(&entries), "{text}");
    let (again, _) = write(&zone(), &back.entries);
    assert_eq!(again, text, "deterministic");
    assert!(
        text.starts_with("---\n'':\n- ttl: 3600\n  type: MX\n"),
        "{text}"
    );
}

#[test]
fn write_skips_what_octodns_cannot_hold() {
    let mut plain = run("a: {type: A, value: 192.0.2.1}\n")
        .accepted
        .remove(0)
        .entry;
    let mut set = plain.clone();
    set.set = SetId::new("eu").unwrap();
    let mut props = plain.clone();
    props.properties = vec![("aws/weight".into(), "10".into())];
    let mut split_txt = plain.clone();
    split_txt.rtype = RecordType::Txt;
    split_txt.values = vec!["\"a\" \"b\"".into()];
    let mut apex_ns = plain.clone();
    apex_ns.name = zone();
    apex_ns.rtype = RecordType::Ns;
    apex_ns.values = vec!["ns1.example.net.".into()];
    let mut outside = plain.clone();
    outside.name = Name::parse("a.example.org.").unwrap();
    plain.ttl = None;
    let all = [plain, set, props, split_txt, apex_ns, outside];
    let (text, skipped) = write(&zone(), &all);
    assert_eq!(skipped.len(), 5);
    assert_eq!(
        text,
        "---\na:\n  ttl: 3600\n  type: A\n  value: '192.0.2.1'\n"
    );
    let (empty, _) = write(&zone(), &[]);
    assert_eq!(empty, "---\n{}\n");
    assert_eq!(parse("e.yaml", &empty, &zone()).errors, vec![]);
}

proptest::proptest! {
    /// Any TXT data octoDNS can hold (printable ASCII, including `;`, `\`, `"`),
    /// split as octoDNS splits it, is written and read back unchanged.
    #[test]
    fn txt_data_round_trips_through_write_and_parse(data in "[ -~]{0,600}") {
        let strings: Vec<String> = if data.is_empty() {
            vec![values::quoted(b"")]
        } else {
            data.as_bytes().chunks(255).map(values::quoted).collect()
        };
        let value = canonicalize(RecordType::Txt, &strings.join(" ")).unwrap();
        let mut e = run("t: {type: TXT, value: x}\n").accepted.remove(0).entry;
        e.values = vec![value];
        let (text, skipped) = write(&zone(), std::slice::from_ref(&e));
        // Only what octoDNS would change on reading is left out.
        let unwritable = data.contains("\\;") || data.contains("\" \"");
        proptest::prop_assert_eq!(skipped.len(), usize::from(unwritable), "{}", text);
        if !unwritable {
            let back = parse("t.yaml", &text, &zone());
            proptest::prop_assert_eq!(back.errors, vec![], "{}", text);
            proptest::prop_assert_eq!(&back.entries[0].values, &e.values, "{}", text);
        }
    }

    /// Whatever the text, parsing ends with entries, errors and warnings.
    #[test]
    fn any_text_parses_without_panicking(text in "[a-z0-9 :'\"\\[\\]{},\\n-]{0,200}") {
        let _ = parse("p.yaml", &text, &zone());
    }
}
