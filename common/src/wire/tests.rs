use super::*;
use crate::rdata::{RData, canonicalize};
use crate::rrset::{RRSet, RecordKey};
use proptest::prelude::*;

fn name(s: &str) -> Name {
    Name::parse(s).unwrap()
}

#[test]
fn answer_len_counts_header_question_each_record_and_the_opt_record() {
    // a.example. is 11 octets; each A record: pointer 2 + type/class 4 + TTL/length 6 + 4;
    // the first owner in full (a question in another case): 11 - 2 more; the OPT
    // record a server adds for an EDNS client: 11.
    let values = ["192.0.2.1".to_string(), "192.0.2.2".to_string()];
    assert_eq!(
        answer_len(&name("a.example"), RecordType::A, &values),
        12 + (11 + 4) + 9 + 2 * 16 + 11
    );
    assert_eq!(
        answer_len(&name("."), RecordType::A, &values[..1]),
        12 + 5 + 16 + 11
    );
}

/// The largest TXT set that fits passes; one octet more is refused with its size and
/// the limit.
#[test]
fn the_tcp_limit_is_exact() {
    let n = name("t.example");
    // One value of k 255-octet strings: 256·k octets of data. Fill the answer exactly,
    // the OPT record (11 octets) included: a set that fills 64 KiB without it came
    // back truncated from a server that adds one.
    let fixed = 12 + (11 + 4) + 9 + 12 + 11;
    let room = MAX_MESSAGE - fixed;
    let full = room / 256;
    let rest = room - full * 256 - 1; // the last string's length octet
    let mut value: Vec<String> = (0..full).map(|_| "x".repeat(255)).collect();
    value.push("y".repeat(rest));
    let text = value.join("");
    let canonical = canonicalize(RecordType::Txt, &text).unwrap();
    let values = vec![canonical];
    assert_eq!(answer_len(&n, RecordType::Txt, &values), MAX_MESSAGE);
    check_answer(&n, RecordType::Txt, &values).unwrap();

    let canonical = canonicalize(RecordType::Txt, &format!("{text}z")).unwrap();
    let e = check_answer(&n, RecordType::Txt, &[canonical]).unwrap_err();
    assert_eq!(
        e,
        "the set of 1 value(s) is 65536 octets as a DNS answer, above the 65535 one TCP message can carry"
    );
}

/// The reported case: a 70 KB TXT value is refused by itself (no record can carry
/// it), with its size, the limit, and only the start of the value.
#[test]
fn a_70kb_txt_value_is_refused_with_its_size() {
    let e = canonicalize(RecordType::Txt, &"v".repeat(70_000))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("70275 octets of record data on the wire, above the 65535 one record can carry"),
        "{e}"
    );
    assert!(e.contains("(70000 bytes)") && e.len() < 300, "{e}");
    // Quoted strings over 255 octets are refused, not silently cut.
    let e = canonicalize(RecordType::Txt, &format!("\"{}\"", "q".repeat(256)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("256 bytes, above the 255"), "{e}");
}

fn rtype() -> impl Strategy<Value = RecordType> {
    proptest::sample::select(RecordType::ALL.to_vec())
}

/// Text that looks like record data of any type, sometimes very long.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ -~]{0,40}",
        "[0-9]{1,6} [0-9]{1,6} [0-9]{1,6} [a-z.]{1,30}",
        "[0-9]{1,3} (issue|iodef|x) \"[ -~]{0,40}\"",
        "(\"[ -~\\\\]{0,300}\" ?){1,4}",
        ("[a-z\"\\\\ ]{1,3}", 1usize..90_000).prop_map(|(s, n)| s.repeat(n / s.len().max(1))),
    ]
}

/// Text that looks like a domain name: ASCII, Unicode, punycode, hyphens, wildcards,
/// underscores, dots in every place, and lengths around the limits.
fn name_text() -> impl Strategy<Value = String> {
    let label = prop_oneof![
        "[a-z0-9-]{0,70}",
        "_[a-z0-9-]{1,10}",
        "\\*",
        "xn--[a-z0-9-]{0,20}",
        "[a-zà-ÿα-ω\u{5d0}-\u{5ea}\u{627}-\u{64a}0-9\u{200c}\u{200d}-]{1,20}",
        any::<String>(),
    ];
    prop_oneof![
        proptest::collection::vec(label, 1..8).prop_map(|ls| ls.join(".")),
        any::<String>(),
        (1usize..200).prop_map(|n| vec!["abc"; n].join(".")),
    ]
}

proptest! {
    /// Every value of every type is accepted or refused, never a panic; what is
    /// accepted is canonical (parsing it again gives itself), its computed wire size is
    /// the size of its data, and it fits one record.
    #[test]
    fn prop_record_value_validator_accepts_only_what_fits(t in rtype(), v in value()) {
        if let Ok(canonical) = canonicalize(t, &v) {
            let data = RData::parse(t, &canonical).expect("a canonical value parses");
            prop_assert_eq!(data.to_string(), canonical.clone());
            prop_assert_eq!(wire_len(t, &canonical), data.wire_len());
            prop_assert!(data.wire_len() <= MAX_RDATA);
        }
    }

    /// Every name is accepted or refused, never a panic; an accepted name is
    /// normalised (parsing it again gives itself), at most 255 octets on the wire in
    /// labels of at most 63, ASCII only.
    #[test]
    fn prop_name_validator_accepts_only_wire_names(text in name_text()) {
        if let Ok(n) = Name::parse(&text) {
            let s = n.as_str();
            prop_assert!(s.is_ascii(), "{s}");
            prop_assert!(s.len() < crate::name::MAX_WIRE_LEN, "{s}");
            for label in s.trim_end_matches('.').split('.') {
                prop_assert!(label.len() <= crate::name::MAX_LABEL_LEN, "{s}");
            }
            prop_assert_eq!(Name::parse(s).expect("a normalised name parses"), n.clone());
        }
    }

    /// Whole RRSets: accepted sets fit one 64 KiB TCP answer; refused ones say why.
    #[test]
    fn prop_record_set_validator_accepts_only_what_fits_an_answer(
        t in rtype(),
        label in "[a-z]{1,20}",
        values in proptest::collection::vec(value(), 1..40),
    ) {
        let zone = name("example.com");
        let owner = name(&format!("{label}.example.com"));
        match RRSet::new(RecordKey::new(zone, owner.clone(), t), 300, &values) {
            Ok(set) => prop_assert!(answer_len(&owner, t, &set.values_vec()) <= MAX_MESSAGE),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
