//! Canonical forms and refusals of the original eight types.
use super::*;

fn c(t: RecordType, v: &str) -> String {
    canonicalize(t, v).unwrap()
}

#[test]
fn canonical_forms() {
    assert_eq!(c(RecordType::A, " 192.0.2.1 "), "192.0.2.1");
    assert_eq!(c(RecordType::Aaaa, "2001:DB8:0:0::1"), "2001:db8::1");
    assert_eq!(
        c(RecordType::Cname, "Target.Example.com"),
        "target.example.com."
    );
    assert_eq!(
        c(RecordType::Mx, "10   Mail.example.com"),
        "10 mail.example.com."
    );
    assert_eq!(
        c(RecordType::Srv, "0 5 5060 sip.example.com."),
        "0 5 5060 sip.example.com."
    );
    assert_eq!(
        c(RecordType::Caa, "0 ISSUE letsencrypt.org"),
        "0 issue \"letsencrypt.org\""
    );
    assert_eq!(
        c(RecordType::Caa, "0 issue \"letsencrypt.org\""),
        "0 issue \"letsencrypt.org\""
    );
    assert_eq!(c(RecordType::Txt, "hello world"), "\"hello world\"");
    assert_eq!(c(RecordType::Txt, "\"hello world\""), "\"hello world\"");
    assert_eq!(c(RecordType::Txt, "\"a\"  \"b\""), "\"a\" \"b\"");
    assert_eq!(c(RecordType::Txt, "say \"hi\""), "\"say \\\"hi\\\"\"");
    assert_eq!(c(RecordType::Txt, "\"\\065\""), "\"A\"");
    assert_eq!(c(RecordType::Txt, "é"), "\"\\195\\169\"");
}

#[test]
fn long_txt_is_split_at_255() {
    let v = "x".repeat(300);
    let canon = c(RecordType::Txt, &v);
    assert_eq!(
        canon,
        format!("\"{}\" \"{}\"", "x".repeat(255), "x".repeat(45))
    );
    // The canonical form parses back to itself.
    assert_eq!(c(RecordType::Txt, &canon), canon);
}

#[test]
fn rejects_bad_values() {
    for (t, v) in [
        (RecordType::A, "300.1.1.1"),
        (RecordType::A, "2001:db8::1"),
        (RecordType::Aaaa, "192.0.2.1"),
        (RecordType::Cname, "bad name.example."),
        (RecordType::Mx, "mail.example.com"),
        (RecordType::Mx, "99999 mail.example.com"),
        (RecordType::Srv, "1 2 mail.example.com"),
        (RecordType::Caa, "0 is-sue x"),
        (RecordType::Txt, "\"unterminated"),
        (RecordType::Txt, "\"a\" b"),
    ] {
        let e = canonicalize(t, v).unwrap_err();
        assert!(
            e.to_string().contains(&format!("{v:?}")),
            "{e} should quote the value"
        );
    }
}

#[test]
fn types_parse_case_insensitively() {
    assert_eq!(RecordType::parse("aaaa").unwrap(), RecordType::Aaaa);
    assert!(
        RecordType::parse("HINFO")
            .unwrap_err()
            .to_string()
            .contains("HINFO")
    );
}
